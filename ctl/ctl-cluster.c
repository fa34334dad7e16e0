/* ctl-cluster.c — `mailtierctl cluster up|status|down|logs`: a whole
 * mailtier cluster on 127.0.0.1 in one directory, for a newcomer's first
 * run, the demo, the benchmarks and the fault tests (files and ports:
 * ctl-cluster.h).
 *
 *   up      write the config once, start slapd, provision users once,
 *           start every daemon that is not running and wait until each
 *           is ready (sd_notify READY=1), write endpoints.env; with
 *           --milter rspamd, rspamd before the MTA (ctl-cluster-rspamd.c);
 *           with --directory-providers 2 or 3, that many slapd providers
 *           in multi-provider replication (the others after the users
 *           are in the first, from its copy; dirsvc/README.md); with
 *           --replicas 3, each shard three store sites in a Berkeley DB
 *           replication group (shard_sites_up: --create-group on the
 *           group's very first start only; a lost site restarts and
 *           rejoins, by a full copy when its data is gone), and the
 *           MTA and the MMP only once every shard has a master
 *   status  each daemon: pid, state (stopped / running / ready: its
 *           listeners answer), listeners, and its counters read from
 *           its /metrics (ctl-cluster-metrics.c); a store site's
 *           replication role, master and connected sites; --json: the
 *           same as {"daemons": [{"name", "pid", "role", "shard",
 *           "data_dir", ...}]} for scripts
 *   top     the daemons' metrics every few seconds, with rates
 *   down    SIGTERM each by its pid file (MMP, MTA, rspamd, shards,
 *           slapd) and wait
 *   logs    tail the daemons' logs (-F unless --no-follow)
 *
 * Trust boundary: the operator's command line and the files `up` wrote. */
#include "ctl.h"
#include "ctl-cluster.h"
#include "ctl-metrics.h"
#include "ctl-spawn.h"
#include "ctl-util.h"
#include "alloc.h"
#include "buf.h"
#include "mailtier-settings.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define READY_TIMEOUT_MS 120000u
#define STOP_TIMEOUT_MS 30000u

size_t cluster_daemons(const struct cluster *c, struct cluster_daemon *out)
{
	size_t n = 0;
	out[n++] = (struct cluster_daemon){ .name = "slapd", .kind = DAEMON_SLAPD,
		.shard = 1,
		.ports = { { "ldap", cluster_port(c, CLUSTER_PORT_LDAP) } }, .n_ports = 1 };
	for (unsigned int k = 2; k <= c->directory_providers; k++) {
		struct cluster_daemon *d = &out[n++];
		*d = (struct cluster_daemon){ .kind = DAEMON_SLAPD, .shard = k,
			.ports = { { "ldap", cluster_ldap_port(c, k) } }, .n_ports = 1 };
		snprintf(d->name, sizeof(d->name), "slapd%u", k);
	}
	for (unsigned int s = 1; s <= c->shards; s++) {
		for (unsigned int r = 0; r < c->replicas || r == 0; r++) {
			struct cluster_daemon *d = &out[n++];
			*d = (struct cluster_daemon){ .kind = DAEMON_STORE, .shard = s, .site = r,
				.ports = { { "lmtp", cluster_site_port(c, s, r, CLUSTER_SITE_LMTP) },
					   { "pop3", cluster_site_port(c, s, r, CLUSTER_SITE_POP3) },
					   { "imap", cluster_site_port(c, s, r, CLUSTER_SITE_IMAP) } },
				.n_ports = 3,
				.metrics_port = cluster_site_port(c, s, r, CLUSTER_SITE_METRICS) };
			if (c->replicas > 1) {
				d->repl_port = cluster_site_port(c, s, r, CLUSTER_SITE_REPLICATION);
				d->ports[d->n_ports++] = (struct daemon_port){ "repl", d->repl_port };
			}
			cluster_site_name(s, r, d->name, sizeof(d->name));
		}
	}
	out[n++] = (struct cluster_daemon){ .name = "mta", .kind = DAEMON_MTA,
		.ports = { { "smtp", cluster_port(c, CLUSTER_PORT_SMTP) },
			   { "submission", cluster_port(c, CLUSTER_PORT_SUBMISSION) },
			   { "submissions", cluster_port(c, CLUSTER_PORT_SUBMISSIONS) } },
		.n_ports = 3, .metrics_port = cluster_metrics_port(c, CLUSTER_METRICS_MTA) };
	out[n++] = (struct cluster_daemon){ .name = "mmp", .kind = DAEMON_MMP,
		.ports = { { "pop3", cluster_port(c, CLUSTER_PORT_POP3) },
			   { "pop3s", cluster_port(c, CLUSTER_PORT_POP3S) },
			   { "imap", cluster_port(c, CLUSTER_PORT_IMAP) },
			   { "imaps", cluster_port(c, CLUSTER_PORT_IMAPS) } }, .n_ports = 4,
		.metrics_port = cluster_metrics_port(c, CLUSTER_METRICS_MMP) };
	return n;
}

static char *pid_path(const struct cluster *c, const struct cluster_daemon *d)
{
	if (d->kind == DAEMON_SLAPD) {
		char *dir = cluster_directory_path(c, d->shard);
		char *path = mt_xasprintf("%s/slapd.pid", dir);
		free(dir);
		return path;
	}
	return mt_xasprintf("%s/run/%s.pid", c->dir, d->name);
}

static pid_t daemon_pid(const struct cluster *c, const struct cluster_daemon *d)
{
	char *path = pid_path(c, d);
	pid_t pid = ctl_pidfile_alive(path);
	free(path);
	return pid;
}

/* 1: something accepts on 127.0.0.1:port; 0: refused; -1: error. */
static int port_answers(unsigned int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	close(fd);
	return rc == 0 ? 1 : 0;
}

/* Options */

struct cluster_opts {
	struct cluster c;
	bool given_shards, given_users, given_base, given_domain, given_remote, given_sink;
	bool given_milter, given_dns, given_providers, given_replicas;
	bool follow;
	bool json;	/* status --json */
	unsigned int lines;
	const char *only;	/* logs NAME */
	double interval_s;	/* top */
	unsigned long count;	/* top: frames, 0 until interrupted */
};

static int cluster_usage(const char *progname)
{
	fprintf(stderr,
		"usage: %s cluster up --dir DIR [--shards N] [--users U] [--base-port P]\n"
		"                         [--domain D] [--remote-domain R] [--sink HOST:PORT]\n"
		"                         [--milter none|rspamd] [--dns HOST:PORT]\n"
		"                         [--directory-providers 1|2|3] [--replicas 1|3]\n"
		"       %s cluster status --dir DIR [--json]\n"
		"       %s cluster top --dir DIR [--interval SECONDS] [--count N]\n"
		"       %s cluster down --dir DIR\n"
		"       %s cluster logs --dir DIR [--no-follow] [--lines N] [NAME]\n",
		progname, progname, progname, progname, progname);
	return CTL_EXIT_USAGE;
}

static bool parse_number(const char *opt, const char *text, unsigned long min,
			 unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v < min || v > max) {
		fprintf(stderr, "--%s: '%s' is not a number from %lu to %lu\n", opt, text, min, max);
		return false;
	}
	*out = v;
	return true;
}

static bool parse_cluster_opts(int argc, char **argv, struct cluster_opts *o)
{
	static const struct option options[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "shards", required_argument, NULL, 'n' },
		{ "users", required_argument, NULL, 'u' },
		{ "base-port", required_argument, NULL, 'p' },
		{ "domain", required_argument, NULL, 'D' },
		{ "remote-domain", required_argument, NULL, 'R' },
		{ "sink", required_argument, NULL, 's' },
		{ "milter", required_argument, NULL, 'm' },
		{ "dns", required_argument, NULL, 'N' },
		{ "no-follow", no_argument, NULL, 'F' },
		{ "lines", required_argument, NULL, 'l' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		{ "directory-providers", required_argument, NULL, 'P' },
		{ "replicas", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct cluster_opts){ .c = { .shards = 2, .users = 1000, .base_port = 20000,
					   .directory_providers = 1, .replicas = 1 },
				    .follow = true, .lines = 20, .interval_s = 2.0 };
	const char *dir = NULL, *domain = "example.test", *remote = "remote.test", *sink = NULL;
	unsigned long v;
	optind = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'n':
			if (!parse_number("shards", optarg, 1, CLUSTER_MAX_SHARDS, &v))
				return false;
			o->c.shards = (unsigned int)v;
			o->given_shards = true;
			break;
		case 'u':
			if (!parse_number("users", optarg, 1, 100000000, &v))
				return false;
			o->c.users = v;
			o->given_users = true;
			break;
		case 'p':
			if (!parse_number("base-port", optarg, 1024, 65535 - 12 - 4 * CLUSTER_MAX_SHARDS, &v))
				return false;
			o->c.base_port = (unsigned int)v;
			o->given_base = true;
			break;
		case 'D': domain = optarg; o->given_domain = true; break;
		case 'R': remote = optarg; o->given_remote = true; break;
		case 's': sink = optarg; o->given_sink = true; break;
		case 'm':
			if (!cluster_milter_parse(optarg, &o->c.milter)) {
				fprintf(stderr, "--milter: '%s' is not one of: none, rspamd\n", optarg);
				return false;
			}
			o->given_milter = true;
			break;
		case 'N':
			if (!cluster_dns_valid(optarg)) {
				fprintf(stderr, "--dns: '%s' is not IPV4:PORT or [IPV6]:PORT\n", optarg);
				return false;
			}
			free(o->c.dns);
			o->c.dns = mt_xstrdup(optarg);
			o->given_dns = true;
			break;
		case 'P':
			if (!parse_number("directory-providers", optarg, 1,
					  CLUSTER_MAX_PROVIDERS, &v))
				return false;
			o->c.directory_providers = (unsigned int)v;
			o->given_providers = true;
			break;
		case 'r':
			if (!parse_number("replicas", optarg, 1, CLUSTER_MAX_SITES, &v))
				return false;
			if (v == 2) {
				/* HA.md §2.4, §5.1: with two electable sites, losing
				 * one leaves no majority: Berkeley DB 5.3 either takes
				 * no writes or lets both become master (rollback). */
				fprintf(stderr, "--replicas 2: two sites cannot keep a quorum: with "
					"one lost, the other can neither win an election nor get a "
					"commit acknowledged (or both become master); use --replicas 3\n");
				return false;
			}
			o->c.replicas = (unsigned int)v;
			o->given_replicas = true;
			break;
		case 'j': o->json = true; break;
		case 'F': o->follow = false; break;
		case 'l':
			if (!parse_number("lines", optarg, 1, 1000000, &v))
				return false;
			o->lines = (unsigned int)v;
			break;
		case 'i': {
			char *end;
			errno = 0;
			double seconds = strtod(optarg, &end);
			if (errno != 0 || end == optarg || *end != '\0' || !(seconds >= 0.1) ||
			    seconds > 3600) {
				fprintf(stderr, "--interval: '%s' is not a number of seconds from 0.1 to 3600\n",
					optarg);
				return false;
			}
			o->interval_s = seconds;
			break;
		}
		case 'c':
			if (!parse_number("count", optarg, 1, 100000000, &v))
				return false;
			o->count = v;
			break;
		default:
			return false;
		}
	}
	if (optind < argc)
		o->only = argv[optind++];
	if (dir == NULL || optind != argc)
		return false;
	if (strspn(domain, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(domain) ||
	    strspn(remote, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(remote) ||
	    domain[0] == '\0' || remote[0] == '\0') {
		fprintf(stderr, "--domain/--remote-domain: lower-case letters, digits, '.' and '-'\n");
		return false;
	}
	if (cluster_ldap_port(&o->c, o->c.directory_providers) > 65535) {
		fprintf(stderr, "--directory-providers: provider %u's port would be above "
			"65535; choose a lower --base-port\n", o->c.directory_providers);
		return false;
	}
	if (cluster_last_port(&o->c) > 65535) {
		fprintf(stderr, "--base-port: the cluster's ports would go past 65535 (up to "
			"%u); choose a lower --base-port\n", cluster_last_port(&o->c));
		return false;
	}
	char abs_dir[PATH_MAX];
	if (dir[0] != '/' && getcwd(abs_dir, sizeof(abs_dir)) != NULL)
		o->c.dir = mt_xasprintf("%s/%s", abs_dir, dir);
	else
		o->c.dir = mt_xstrdup(dir);
	o->c.domain = mt_xstrdup(domain);
	o->c.remote_domain = mt_xstrdup(remote);
	o->c.sink = sink != NULL ? mt_xstrdup(sink) :
		mt_xasprintf("127.0.0.1:%u", cluster_port(&o->c, CLUSTER_PORT_SINK));
	return true;
}

/* The cluster as `up` wrote it; explicit options must agree with it. */
static bool load_existing(struct cluster_opts *o, bool *found_r)
{
	struct cluster old = { .dir = mt_xstrdup(o->c.dir) };
	char *error = NULL;
	*found_r = cluster_load_endpoints(&old, &error);
	if (!*found_r) {
		cluster_free(&old);
		if (error != NULL) {
			fprintf(stderr, "%s\n", error);
			free(error);
			return false;
		}
		return true;
	}
	const char *differs = NULL;
	if (o->given_shards && old.shards != o->c.shards) differs = "--shards";
	else if (o->given_users && old.users != o->c.users) differs = "--users";
	else if (o->given_base && old.base_port != o->c.base_port) differs = "--base-port";
	else if (o->given_domain && strcmp(old.domain, o->c.domain) != 0) differs = "--domain";
	else if (o->given_remote && strcmp(old.remote_domain, o->c.remote_domain) != 0)
		differs = "--remote-domain";
	else if (o->given_sink && strcmp(old.sink, o->c.sink) != 0) differs = "--sink";
	else if (o->given_milter && old.milter != o->c.milter) differs = "--milter";
	else if (o->given_dns && (old.dns == NULL || strcmp(old.dns, o->c.dns) != 0))
		differs = "--dns";
	else if (o->given_providers && old.directory_providers != o->c.directory_providers)
		differs = "--directory-providers";
	else if (o->given_replicas && old.replicas != o->c.replicas)
		differs = "--replicas";
	if (differs != NULL) {
		fprintf(stderr, "%s: the cluster in %s was made with another %s; "
			"`cluster down` and remove the directory to change it\n",
			differs, o->c.dir, differs);
		cluster_free(&old);
		return false;
	}
	cluster_free(&o->c);
	o->c = old;
	return true;
}

/* up */

static int run_self(const struct cluster *c, char *const args[])
{
	char *self = ctl_self_path();
	char *conf = cluster_path(c, "mailtier.conf");
	char *argv[32] = { self, "-c", conf };
	size_t n = 3;
	for (size_t i = 0; args[i] != NULL && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	int status = ctl_run(argv);
	free(self);
	free(conf);
	return status;
}

/* Provider k (1-based) with `directory up`: alone when the cluster has
 * one; else --server-id k and every other provider as a --peer, and the
 * providers after the first start from a copy of the first one
 * (--copy-from, with its secrets: directory_secrets_copy). */
static bool directory_provider_up(const struct cluster *c, unsigned int k)
{
	char *dir = cluster_directory_path(c, k);
	char port[16], sid[16];
	snprintf(port, sizeof(port), "%u", cluster_ldap_port(c, k));
	snprintf(sid, sizeof(sid), "%u", k);
	char *peers[CLUSTER_MAX_PROVIDERS] = { NULL }, *first = NULL;
	char *args[16 + 2 * CLUSTER_MAX_PROVIDERS] = { "directory", "up", "--dir", dir,
		"--port", port, "--domain", c->domain };
	size_t n = 8;
	if (c->directory_providers > 1) {
		args[n++] = "--server-id";
		args[n++] = sid;
		for (unsigned int p = 1; p <= c->directory_providers; p++) {
			if (p == k)
				continue;
			peers[p - 1] = mt_xasprintf("ldap://127.0.0.1:%u/", cluster_ldap_port(c, p));
			args[n++] = "--peer";
			args[n++] = peers[p - 1];
		}
		if (k > 1) {
			first = cluster_directory_path(c, 1);
			args[n++] = "--copy-from";
			args[n++] = first;
		}
	}
	args[n] = NULL;
	bool ok = run_self(c, args) == 0;
	free(first);
	for (unsigned int p = 0; p < CLUSTER_MAX_PROVIDERS; p++)
		free(peers[p]);
	free(dir);
	return ok;
}

static bool directory_up(const struct cluster *c)
{
	return directory_provider_up(c, 1);
}

/* Provider k gets provider 1's admin and service secrets (mode 0600), once:
 * the data they replicate and the consumers' bind need the same ones. */
static bool directory_secrets_copy(const struct cluster *c, unsigned int k)
{
	static const char *const names[] = { "admin.secret", "service.secret" };
	char *from_dir = cluster_directory_path(c, 1), *to_dir = cluster_directory_path(c, k);
	bool ok = true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && ok; i++) {
		char *from = mt_xasprintf("%s/%s", from_dir, names[i]);
		char *to = mt_xasprintf("%s/%s", to_dir, names[i]);
		const char *error;
		if (access(to, F_OK) != 0) {
			char *secret = ctl_read_file(from, &error);
			ok = secret != NULL && ctl_write_private(to, secret, &error);
			if (!ok)
				fprintf(stderr, "%s: %s\n", secret == NULL ? from : to, error);
			free(secret);
		}
		free(from);
		free(to);
	}
	free(from_dir);
	free(to_dir);
	return ok;
}

static bool directory_down(const struct cluster *c)
{
	char *dir = cluster_path(c, "directory");
	char *const down[] = { "directory", "down", "--dir", dir, NULL };
	bool ok = run_self(c, down) == 0;
	free(dir);
	return ok;
}

/* postmaster@D, the [mta] postmaster default (RFC 5321 4.5.1: mail to it
 * and the postmaster copies of undeliverable bounces), on shard1, with a
 * random password in DIR/postmaster.secret. */
static bool add_postmaster(const struct cluster *c)
{
	char *secret_path = cluster_path(c, "postmaster.secret");
	char *secret = ctl_random_password();
	char *address = mt_xasprintf("postmaster@%s", c->domain);
	const char *error;
	bool ok = ctl_write_private(secret_path, secret, &error);
	if (!ok) {
		fprintf(stderr, "%s: %s\n", secret_path, error);
	} else {
		char *const add[] = { "users", "add", address, "--shard", "shard1",
				      "--password-file", secret_path, NULL };
		ok = run_self(c, add) == 0;
	}
	free(address);
	free(secret);
	free(secret_path);
	return ok;
}

/* userK@D / secretK over the shards, once (DIR/users.provisioned),
 * offline with slapadd (slapd stopped meanwhile): 10,000 accounts load in
 * about a second that way against half a minute of online LDAP adds; then
 * the postmaster. */
static bool provision_users(const struct cluster *c)
{
	char *marker = cluster_path(c, "users.provisioned");
	bool ok = access(marker, F_OK) == 0;
	if (ok) {
		free(marker);
		return true;
	}
	char count[24];
	snprintf(count, sizeof(count), "%lu", c->users);
	struct mt_buf shards = MT_BUF_INIT;
	for (unsigned int n = 1; n <= c->shards; n++)
		mt_buf_appendf(&shards, "%sshard%u", n > 1 ? "," : "", n);
	char *const bulk[] = { "users", "bulk", "--count", count, "--domain", c->domain,
			       "--shards", (char *)mt_buf_cstr(&shards), NULL };
	printf("provisioning %lu users user1..user%lu@%s (password secretK) and "
	       "postmaster@%s (password in postmaster.secret)\n",
	       c->users, c->users, c->domain, c->domain);
	ok = directory_down(c) && run_self(c, bulk) == 0 && directory_up(c) &&
		add_postmaster(c);
	const char *error;
	if (ok && !ctl_write_private(marker, count, &error)) {
		fprintf(stderr, "%s: %s\n", marker, error);
		ok = false;
	}
	mt_buf_free(&shards);
	free(marker);
	return ok;
}

static bool check_config(const struct cluster *c)
{
	char *path = cluster_path(c, "mailtier.conf");
	char *errors = NULL;
	struct mt_config *config = mt_mailtier_config_load(path, &errors);
	free(path);
	if (config == NULL) {
		fputs(errors, stderr);
		free(errors);
		return false;
	}
	mt_config_free(&config);
	return true;
}

/* Is a port of daemon name, about to start, free (not held by something
 * else)? */
static bool port_free(const char *name, const struct daemon_port *port)
{
	if (port_answers(port->port) != 1)
		return true;
	fprintf(stderr, "%s: 127.0.0.1:%u (%s) is already in use by another "
		"program; choose another --base-port\n", name, port->port, port->label);
	return false;
}

static bool ports_free(const struct cluster_daemon *d)
{
	for (size_t i = 0; i < d->n_ports; i++) {
		if (!port_free(d->name, &d->ports[i]))
			return false;
	}
	return true;
}

static const struct daemon_port *rspamd_port(const struct cluster *c, struct daemon_port *port)
{
	*port = (struct daemon_port){ "milter", cluster_port(c, CLUSTER_PORT_MILTER) };
	return port;
}

/* rspamd in front of the MTA: started unless it runs. */
static bool rspamd_up(const struct cluster *c)
{
	pid_t pid = cluster_rspamd_pid(c);
	if (pid != 0) {
		printf("%-8s already running (pid %ld)\n", "rspamd", (long)pid);
		return true;
	}
	struct daemon_port port;
	if (!port_free("rspamd", rspamd_port(c, &port)))
		return false;
	pid = cluster_rspamd_start(c, READY_TIMEOUT_MS);
	if (pid == 0)
		return false;
	printf("%-8s ready (pid %ld)\n", "rspamd", (long)pid);
	fflush(stdout);
	return true;
}

/* One daemon being started: its command line and files, and the spawn. */
struct daemon_start {
	const struct cluster_daemon *d;
	char *program, *conf, *log, *pidfile;
	char *argv[10];
	struct ctl_spawn spawn;
	struct ctl_spawned h;
	bool started;
};

/* Fill st for d; create_group adds --create-group (a store site: the
 * replication group's very first start, HA.md §5.3). */
static void start_prepare(const struct cluster *c, const struct cluster_daemon *d,
			  bool create_group, struct daemon_start *st)
{
	*st = (struct daemon_start){ .d = d, .conf = cluster_path(c, "mailtier.conf"),
		.log = mt_xasprintf("%s/log/%s.log", c->dir, d->name),
		.pidfile = pid_path(c, d) };
	size_t n = 0;
	switch (d->kind) {
	case DAEMON_STORE:
		st->program = ctl_program_path("popstore", "mailtier-popstore");
		st->argv[n++] = st->program;
		st->argv[n++] = "-c"; st->argv[n++] = st->conf;
		st->argv[n++] = "-s"; st->argv[n++] = (char *)d->name;
		st->argv[n++] = "-f";
		if (create_group)
			st->argv[n++] = "--create-group";
		break;
	case DAEMON_MTA:
	case DAEMON_MMP:
		st->program = d->kind == DAEMON_MTA ? ctl_program_path("mta", "mailtier-mta") :
			ctl_program_path("mmp", "mailtier-mmp");
		st->argv[n++] = st->program;
		st->argv[n++] = "-c"; st->argv[n++] = st->conf;
		st->argv[n++] = "-f";
		break;
	case DAEMON_SLAPD:
		abort();
	}
	st->argv[n] = NULL;
	st->spawn = (struct ctl_spawn){ .name = d->name, .argv = st->argv, .log_path = st->log,
					.pid_path = st->pidfile,
					.ready_timeout_ms = READY_TIMEOUT_MS };
}

static void start_free(struct daemon_start *st)
{
	free(st->program);
	free(st->conf);
	free(st->log);
	free(st->pidfile);
}

static void start_failed(const struct daemon_start *st, char *error)
{
	fprintf(stderr, "%s\n", error);
	free(error);
	char *const tail[] = { "tail", "-n", "5", st->log, NULL };
	ctl_run(tail);
}

/* Start st's daemon without waiting; false after a message. */
static bool start_begin(struct daemon_start *st)
{
	char *error = NULL;
	st->started = ctl_spawn_start(&st->spawn, &st->h, &error);
	if (!st->started)
		start_failed(st, error);
	return st->started;
}

/* Wait until st's daemon (started) is ready; its pid, or 0 after a message. */
static pid_t start_end(struct daemon_start *st)
{
	char *error = NULL;
	st->started = false;
	pid_t pid = ctl_spawn_wait(&st->h, &error);
	if (pid == 0)
		start_failed(st, error);
	return pid;
}

static pid_t start_daemon(const struct cluster *c, const struct cluster_daemon *d)
{
	struct daemon_start st;
	start_prepare(c, d, false, &st);
	pid_t pid = start_begin(&st) ? start_end(&st) : 0;
	start_free(&st);
	return pid;
}

/* No entry in dir (or no dir): a site that never ran or lost its data. */
static bool dir_empty(const char *path)
{
	DIR *dir = opendir(path);
	if (dir == NULL)
		return errno == ENOENT;
	bool empty = true;
	const struct dirent *e;
	while (empty && (e = readdir(dir)) != NULL)
		empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
	closedir(dir);
	return empty;
}

/* The sites of one shard's replication group, sites[0..c->replicas),
 * started unless they run (HA.md §5.3). The group's very first start
 * (none runs, every site's environment is empty) starts the first site
 * with --create-group and waits until it is ready (master of a group of
 * one), then the others, which join it. Any other start passes no
 * --create-group — a site whose data was lost must join the existing
 * group and get a full copy, never found a second one — and starts every
 * missing site at once: after a whole-group stop, no site can win an
 * election before a majority of them runs. */
static bool shard_sites_up(const struct cluster *c, const struct cluster_daemon *sites)
{
	pid_t pids[CLUSTER_MAX_SITES];
	bool fresh = true;
	for (unsigned int r = 0; r < c->replicas; r++) {
		pids[r] = daemon_pid(c, &sites[r]);
		char *home = cluster_site_home(c, sites[r].shard, r);
		fresh = fresh && pids[r] == 0 && dir_empty(home);
		free(home);
		if (pids[r] != 0)
			printf("%-8s already running (pid %ld)\n", sites[r].name, (long)pids[r]);
		else if (!ports_free(&sites[r]))
			return false;
	}
	struct daemon_start st[CLUSTER_MAX_SITES];
	unsigned int first = 0;
	bool ok = true;
	if (fresh) {
		start_prepare(c, &sites[0], true, &st[0]);
		pids[0] = start_begin(&st[0]) ? start_end(&st[0]) : 0;
		start_free(&st[0]);
		if (pids[0] == 0)
			return false;
		printf("%-8s ready (pid %ld): created %s's replication group\n", sites[0].name,
		       (long)pids[0], sites[0].name);
		fflush(stdout);
		first = 1;
	}
	unsigned int n = 0;
	for (unsigned int r = first; r < c->replicas && ok; r++) {
		if (pids[r] != 0)
			continue;
		start_prepare(c, &sites[r], false, &st[n]);
		ok = start_begin(&st[n]);
		n++;
	}
	for (unsigned int k = 0; k < n; k++) {
		if (st[k].started) {
			pid_t pid = start_end(&st[k]);
			ok = ok && pid != 0;
			if (pid != 0) {
				printf("%-8s ready (pid %ld)\n", st[k].d->name, (long)pid);
				fflush(stdout);
			}
		}
		start_free(&st[k]);
	}
	return ok;
}

static void print_endpoints(const struct cluster *c)
{
	struct mt_buf uris = MT_BUF_INIT;
	cluster_append_ldap_uris(&uris, c);
	if (c->replicas > 1)
		printf("cluster %s: each shard is a replication group of %u store sites "
		       "(shardN, shardN-b, shardN-c);\n  roles: mailtierctl cluster status "
		       "--dir %s\n", c->dir, c->replicas, c->dir);
	printf("cluster %s is up: %u shards, %lu users @%s\n"
	       "  SMTP        127.0.0.1:%u   submission 127.0.0.1:%u   submissions 127.0.0.1:%u\n"
	       "  POP3 (MMP)  127.0.0.1:%u   POP3S 127.0.0.1:%u\n"
	       "  IMAP (MMP)  127.0.0.1:%u   IMAPS 127.0.0.1:%u\n"
	       "  LDAP        %s\n"
	       "  remote mail for @%s and every other domain goes to the sink at %s\n",
	       c->dir, c->shards, c->users, c->domain, cluster_port(c, CLUSTER_PORT_SMTP),
	       cluster_port(c, CLUSTER_PORT_SUBMISSION), cluster_port(c, CLUSTER_PORT_SUBMISSIONS),
	       cluster_port(c, CLUSTER_PORT_POP3), cluster_port(c, CLUSTER_PORT_POP3S),
	       cluster_port(c, CLUSTER_PORT_IMAP), cluster_port(c, CLUSTER_PORT_IMAPS),
	       mt_buf_cstr(&uris), c->remote_domain, c->sink);
	mt_buf_free(&uris);
	if (c->milter == CLUSTER_MILTER_RSPAMD)
		printf("  milter      rspamd 127.0.0.1:%u on SMTP and submission (%s/rspamd/, DNS %s)\n",
		       cluster_port(c, CLUSTER_PORT_MILTER), c->dir,
		       c->dns != NULL ? c->dns : "from /etc/resolv.conf");
	printf("  endpoints:  . %s/endpoints.env\n"
	       "  stop with:  mailtierctl cluster down --dir %s\n", c->dir, c->dir);
}

/* The site of shard n that says it is master (scraped now); NULL if none. */
static const char *shard_master(const struct cluster_daemon *sites, unsigned int count)
{
	struct ctl_metrics_target targets[CLUSTER_MAX_SITES];
	cluster_metrics_scrape(sites, count, targets);
	const char *master = NULL;
	for (unsigned int r = 0; r < count; r++) {
		struct cluster_repl repl = { .known = false };
		if (targets[r].ok)
			cluster_metrics_repl(&targets[r].metrics, &repl);
		if (repl.known && strcmp(repl.role, "master") == 0)
			master = sites[r].name;
		ctl_metrics_target_clear(&targets[r]);
	}
	return master;
}

/* Every replicated shard has a master before the MTA and the MMP start:
 * a site is ready once it has joined, and after a whole-group stop the
 * election can wait for all sites (up to a minute, HA.md §5.3). */
static bool wait_masters(const struct cluster *c, const struct cluster_daemon *daemons, size_t n)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (size_t i = 0; i < n; i++) {
		if (daemons[i].kind != DAEMON_STORE || daemons[i].site != 0)
			continue;
		const char *master;
		double waited;
		for (;;) {
			master = shard_master(&daemons[i], c->replicas);
			clock_gettime(CLOCK_MONOTONIC, &now);
			waited = (double)(now.tv_sec - start.tv_sec) +
				 (double)(now.tv_nsec - start.tv_nsec) / 1e9;
			if (master != NULL || waited * 1000 > READY_TIMEOUT_MS)
				break;
			struct timespec pause = { .tv_nsec = 200 * 1000000L };
			nanosleep(&pause, NULL);
		}
		if (master == NULL) {
			fprintf(stderr, "shard%u: no site became master within %u s (see "
				"`cluster status` and the sites' logs)\n", daemons[i].shard,
				READY_TIMEOUT_MS / 1000);
			return false;
		}
		printf("shard%-3u master is %s (%.1f s)\n", daemons[i].shard, master, waited);
		fflush(stdout);
	}
	return true;
}

static int cluster_up(const struct cluster *c)
{
	struct cluster_daemon daemons[CLUSTER_MAX_DAEMONS];
	size_t n = cluster_daemons(c, daemons);
	char *error = NULL;
	bool rspamd = c->milter == CLUSTER_MILTER_RSPAMD;
	/* Whether rspamd can run here, before anything is written or started. */
	if ((rspamd && !cluster_rspamd_check(c, &error)) ||
	    !cluster_prepare_dir(c, &error) || !cluster_write_config(c, &error)) {
		fprintf(stderr, "%s\n", error);
		free(error);
		return CTL_EXIT_FAIL;
	}
	if (!check_config(c) || !cluster_write_endpoints(c, &error) ||
	    (rspamd && !cluster_rspamd_write(c, &error))) {
		if (error != NULL)
			fprintf(stderr, "%s\n", error);
		free(error);
		return CTL_EXIT_FAIL;
	}
	for (unsigned int k = 0; k < c->directory_providers; k++) {
		if (daemon_pid(c, &daemons[k]) == 0 && !ports_free(&daemons[k]))
			return CTL_EXIT_FAIL;
	}
	if (!directory_up(c) || !provision_users(c))
		return CTL_EXIT_FAIL;
	/* The other providers after the users are in provider 1: they start
	 * from its copy (offline loads are not in its accesslog). */
	for (unsigned int k = 2; k <= c->directory_providers; k++) {
		if (!directory_secrets_copy(c, k) || !directory_provider_up(c, k))
			return CTL_EXIT_FAIL;
	}
	for (size_t i = 1; i < n; i++) {
		if (daemons[i].kind == DAEMON_SLAPD)
			continue;
		if (daemons[i].kind == DAEMON_MTA && c->replicas > 1 &&
		    !wait_masters(c, daemons, n))
			return CTL_EXIT_FAIL;
		if (rspamd && daemons[i].kind == DAEMON_MTA && !rspamd_up(c))
			return CTL_EXIT_FAIL;
		if (daemons[i].kind == DAEMON_STORE && c->replicas > 1) {
			if (!shard_sites_up(c, &daemons[i]))
				return CTL_EXIT_FAIL;
			i += c->replicas - 1;
			continue;
		}
		pid_t pid = daemon_pid(c, &daemons[i]);
		if (pid != 0) {
			printf("%-8s already running (pid %ld)\n", daemons[i].name, (long)pid);
			continue;
		}
		if (!ports_free(&daemons[i]))
			return CTL_EXIT_FAIL;
		pid = start_daemon(c, &daemons[i]);
		if (pid == 0)
			return CTL_EXIT_FAIL;
		printf("%-8s ready (pid %ld)\n", daemons[i].name, (long)pid);
		fflush(stdout);
	}
	print_endpoints(c);
	return CTL_EXIT_OK;
}

/* status */

enum daemon_state { STATE_STOPPED, STATE_RUNNING, STATE_READY };
static const char *const daemon_state_names[] = { "stopped", "running", "ready" };
static const char *const daemon_kind_names[] = {
	[DAEMON_SLAPD] = "slapd", [DAEMON_STORE] = "store", [DAEMON_MTA] = "mta",
	[DAEMON_MMP] = "mmp",
};

/* A daemon as status sees it now. */
struct daemon_view {
	const struct cluster_daemon *d;
	pid_t pid;
	enum daemon_state state;
	bool port_down[4];
	const struct ctl_metrics_target *metrics;	/* its scrape */
	struct cluster_repl repl;	/* a store site's replication (repl.known) */
	const char *master_site;	/* the site whose replication port repl.master is */
	/* A replica's lag: its master's log position less its own, in bytes
	 * (-1: not known, as when the master does not answer). */
	double lag;
};

static void view_daemon(const struct cluster *c, const struct cluster_daemon *d,
			const struct ctl_metrics_target *t, struct daemon_view *v)
{
	*v = (struct daemon_view){ .d = d, .pid = daemon_pid(c, d), .metrics = t, .lag = -1 };
	bool ready = v->pid != 0;
	for (size_t p = 0; p < d->n_ports; p++) {
		int answers = v->pid != 0 ? port_answers(d->ports[p].port) : 0;
		ready = ready && answers == 1;
		v->port_down[p] = v->pid != 0 && answers != 1;
	}
	v->state = v->pid == 0 ? STATE_STOPPED : ready ? STATE_READY : STATE_RUNNING;
	if (d->kind == DAEMON_STORE && v->pid != 0 && t->ok)
		cluster_metrics_repl(&t->metrics, &v->repl);
}

/* The site whose replication address is addr ("127.0.0.1:PORT"), or NULL. */
static const char *site_by_address(const struct cluster_daemon *d, size_t n, const char *addr)
{
	const char *colon = strrchr(addr, ':');
	if (colon == NULL)
		return NULL;
	unsigned long port = strtoul(colon + 1, NULL, 10);
	for (size_t i = 0; i < n; i++) {
		if (d[i].kind == DAEMON_STORE && d[i].repl_port != 0 && d[i].repl_port == port)
			return d[i].name;
	}
	return NULL;
}

/* The role of a store site for status: its replication role, or for a
 * shard of one site "master" while it runs; NULL when not known. Other
 * daemons: their kind. */
static const char *view_role(const struct cluster *c, const struct daemon_view *v)
{
	if (v->d->kind != DAEMON_STORE)
		return v->d->kind == DAEMON_SLAPD ? "directory" : daemon_kind_names[v->d->kind];
	if (c->replicas <= 1)
		return v->state == STATE_READY ? "master" : NULL;
	return v->repl.known ? v->repl.role : NULL;
}

static void print_metrics(const struct cluster_daemon *d, const struct ctl_metrics_target *t)
{
	if (!t->ok) {
		printf("           metrics %s:%u: %s\n", t->host, t->port, t->error);
		return;
	}
	struct mt_buf line = MT_BUF_INIT;
	cluster_metrics_summary(&line, d, &t->metrics);
	printf("           metrics %s:%u: %s\n", t->host, t->port, mt_buf_cstr(&line));
	mt_buf_free(&line);
}

/* "replication: role ..., master ..., connected N of M sites, ..." */
static void print_replication(const struct daemon_view *v)
{
	const struct cluster_repl *r = &v->repl;
	if (!r->known) {
		printf("           replication: no role reported (replication_listen set?)\n");
		return;
	}
	char lag[48] = "";
	if (strcmp(r->role, "replica") == 0 && v->lag >= 0)
		snprintf(lag, sizeof(lag), ", %.0f bytes of log behind", v->lag);
	printf("           replication: role %s, master %s%s%s%s, connected %u of %u other "
	       "sites%s%s, generation %.0f, elections %.0f, master changes %.0f, "
	       "PERM_FAILED %.0f, full copies %.0f\n",
	       r->role, v->master_site != NULL ? v->master_site : r->master[0] != '\0' ?
	       r->master : "none", v->master_site != NULL ? " (" : "",
	       v->master_site != NULL ? r->master : "", v->master_site != NULL ? ")" : "",
	       r->connected, r->sites > 0 ? r->sites - 1 : 0,
	       strcmp(r->role, "replica") == 0 && !r->startup_done ? ", still syncing" : "",
	       lag, r->generation, r->elections, r->master_changes, r->perm_failed,
	       r->internal_inits);
}

/* One row of the table: name, pid, state, listeners. */
static void status_row(const char *name, pid_t pid, enum daemon_state state,
		       const struct daemon_port *ports, size_t n_ports, const bool *down)
{
	struct mt_buf listeners = MT_BUF_INIT;
	for (size_t p = 0; p < n_ports; p++)
		mt_buf_appendf(&listeners, "%s%s=127.0.0.1:%u%s", p > 0 ? " " : "",
			       ports[p].label, ports[p].port, down[p] ? "(down)" : "");
	char pidtext[16] = "-";
	if (pid != 0)
		snprintf(pidtext, sizeof(pidtext), "%ld", (long)pid);
	printf("%-8s %-8s %-8s %s\n", name, pidtext, daemon_state_names[state],
	       mt_buf_cstr(&listeners));
	mt_buf_free(&listeners);
}

/* rspamd's row; true if it is ready. */
static bool rspamd_row(const struct cluster *c)
{
	struct daemon_port port;
	rspamd_port(c, &port);
	pid_t pid = cluster_rspamd_pid(c);
	int answers = pid != 0 ? port_answers(port.port) : 0;
	bool down = pid != 0 && answers != 1;
	status_row("rspamd", pid, pid == 0 ? STATE_STOPPED : answers == 1 ? STATE_READY :
		   STATE_RUNNING, &port, 1, &down);
	return pid != 0 && answers == 1;
}

static void print_status_text(const struct cluster *c, const struct daemon_view *v, size_t n,
			      bool *all_ready)
{
	printf("cluster %s: %u shards", c->dir, c->shards);
	if (c->replicas > 1)
		printf(" of %u sites each", c->replicas);
	printf(", %lu users @%s, sink %s, milter %s\n", c->users, c->domain, c->sink,
	       cluster_milter_names[c->milter]);
	printf("counters: each daemon's /metrics (metrics_listen), read now\n");
	printf("%-8s %-8s %-8s %s\n", "NAME", "PID", "STATE", "LISTENERS");
	for (size_t i = 0; i < n; i++) {
		const struct cluster_daemon *d = v[i].d;
		status_row(d->name, v[i].pid, v[i].state, d->ports, d->n_ports, v[i].port_down);
		if (v[i].pid != 0 && d->metrics_port != 0)
			print_metrics(d, v[i].metrics);
		if (d->kind == DAEMON_STORE && c->replicas > 1 && v[i].pid != 0 &&
		    v[i].metrics->ok)
			print_replication(&v[i]);
		if (d->kind == DAEMON_MTA && c->milter == CLUSTER_MILTER_RSPAMD)
			*all_ready = rspamd_row(c) && *all_ready;
	}
}

/* text as a JSON string (RFC 8259 7: quote, backslash and controls escaped). */
static void json_string(struct mt_buf *out, const char *text)
{
	if (text == NULL) {
		mt_buf_append_str(out, "null");
		return;
	}
	mt_buf_append_char(out, '"');
	for (; *text != '\0'; text++) {
		unsigned char ch = (unsigned char)*text;
		if (ch == '"' || ch == '\\')
			mt_buf_appendf(out, "\\%c", ch);
		else if (ch < 0x20)
			mt_buf_appendf(out, "\\u%04x", ch);
		else
			mt_buf_append_char(out, (char)ch);
	}
	mt_buf_append_char(out, '"');
}

/* The daemon's data directory: a store site's environment, the MTA's
 * queue, a provider's slapd directory; NULL for the MMP. Caller frees. */
static char *data_dir(const struct cluster *c, const struct cluster_daemon *d)
{
	switch (d->kind) {
	case DAEMON_STORE: return cluster_site_home(c, d->shard, d->site);
	case DAEMON_SLAPD: return cluster_directory_path(c, d->shard);
	case DAEMON_MTA: return cluster_path(c, "queue");
	case DAEMON_MMP: break;
	}
	return NULL;
}

static void json_daemon(struct mt_buf *out, const struct cluster *c, const struct daemon_view *v)
{
	const struct cluster_daemon *d = v->d;
	mt_buf_append_str(out, "{\"name\": ");
	json_string(out, d->name);
	mt_buf_append_str(out, ", \"kind\": ");
	json_string(out, daemon_kind_names[d->kind]);
	if (v->pid != 0)
		mt_buf_appendf(out, ", \"pid\": %ld", (long)v->pid);
	else
		mt_buf_append_str(out, ", \"pid\": null");
	mt_buf_append_str(out, ", \"state\": ");
	json_string(out, daemon_state_names[v->state]);
	mt_buf_append_str(out, ", \"role\": ");
	json_string(out, view_role(c, v));
	char *dir = data_dir(c, d);
	mt_buf_append_str(out, ", \"data_dir\": ");
	json_string(out, dir);
	free(dir);
	mt_buf_append_str(out, ", \"ports\": {");
	for (size_t p = 0; p < d->n_ports; p++) {
		mt_buf_append_str(out, p > 0 ? ", " : "");
		json_string(out, d->ports[p].label);
		mt_buf_appendf(out, ": %u", d->ports[p].port);
	}
	if (d->metrics_port != 0)
		mt_buf_appendf(out, "%s\"metrics\": %u", d->n_ports > 0 ? ", " : "",
			       d->metrics_port);
	mt_buf_append_char(out, '}');
	if (d->kind == DAEMON_STORE) {
		char shard[32];
		snprintf(shard, sizeof(shard), "shard%u", d->shard);
		mt_buf_append_str(out, ", \"shard\": ");
		json_string(out, shard);
	}
	if (d->kind == DAEMON_STORE && c->replicas > 1 && v->repl.known) {
		const struct cluster_repl *r = &v->repl;
		mt_buf_append_str(out, ", \"master\": ");
		json_string(out, v->master_site);
		mt_buf_append_str(out, ", \"master_address\": ");
		json_string(out, r->master[0] != '\0' ? r->master : NULL);
		mt_buf_appendf(out, ", \"sites\": %u, \"connected_sites\": %u, "
			       "\"startup_done\": %s, \"generation\": %.0f, \"elections\": %.0f, "
			       "\"master_changes\": %.0f, \"perm_failed\": %.0f, "
			       "\"internal_inits\": %.0f, \"log_position\": %.0f",
			       r->sites, r->connected, r->startup_done ? "true" : "false",
			       r->generation, r->elections, r->master_changes, r->perm_failed,
			       r->internal_inits, r->log_position);
		if (strcmp(r->role, "replica") == 0 && v->lag >= 0)
			mt_buf_appendf(out, ", \"lag_bytes\": %.0f", v->lag);
	}
	if (v->pid != 0 && d->metrics_port != 0 && !v->metrics->ok) {
		mt_buf_append_str(out, ", \"metrics_error\": ");
		json_string(out, v->metrics->error);
	}
	mt_buf_append_char(out, '}');
}

/* {"daemons": [...]}: one object per daemon (and rspamd's with --milter
 * rspamd), for scripts and checks. */
static void print_status_json(const struct cluster *c, const struct daemon_view *v, size_t n,
			      bool *all_ready)
{
	struct mt_buf out = MT_BUF_INIT;
	mt_buf_append_str(&out, "{\"cluster\": ");
	json_string(&out, c->dir);
	mt_buf_appendf(&out, ", \"shards\": %u, \"replicas\": %u, \"daemons\": [",
		       c->shards, c->replicas);
	for (size_t i = 0; i < n; i++) {
		mt_buf_append_str(&out, i > 0 ? ",\n  " : "\n  ");
		json_daemon(&out, c, &v[i]);
	}
	if (c->milter == CLUSTER_MILTER_RSPAMD) {
		pid_t pid = cluster_rspamd_pid(c);
		struct daemon_port port;
		rspamd_port(c, &port);
		bool ready = pid != 0 && port_answers(port.port) == 1;
		*all_ready = *all_ready && ready;
		mt_buf_append_str(&out, ",\n  {\"name\": \"rspamd\", \"kind\": \"milter\", ");
		if (pid != 0)
			mt_buf_appendf(&out, "\"pid\": %ld", (long)pid);
		else
			mt_buf_append_str(&out, "\"pid\": null");
		mt_buf_appendf(&out, ", \"state\": \"%s\", \"role\": \"milter\", "
			       "\"ports\": {\"milter\": %u}}",
			       pid == 0 ? "stopped" : ready ? "ready" : "running", port.port);
	}
	mt_buf_append_str(&out, "\n]}\n");
	fputs(mt_buf_cstr(&out), stdout);
	mt_buf_free(&out);
}

static int cluster_status(const struct cluster *c, bool json)
{
	struct cluster_daemon daemons[CLUSTER_MAX_DAEMONS];
	size_t n = cluster_daemons(c, daemons);
	/* Every daemon's metrics at once, before the probes. */
	struct ctl_metrics_target targets[CLUSTER_MAX_DAEMONS];
	cluster_metrics_scrape(daemons, n, targets);
	struct daemon_view views[CLUSTER_MAX_DAEMONS];
	bool all_ready = true;
	for (size_t i = 0; i < n; i++) {
		view_daemon(c, &daemons[i], &targets[i], &views[i]);
		if (views[i].repl.master[0] != '\0')
			views[i].master_site = site_by_address(daemons, n, views[i].repl.master);
		all_ready = all_ready && views[i].state == STATE_READY;
	}
	/* A replica's lag, from its master's log position (scraped at the
	 * same moment). */
	for (size_t i = 0; i < n; i++) {
		struct daemon_view *v = &views[i];
		if (!v->repl.known || strcmp(v->repl.role, "replica") != 0 || v->master_site == NULL)
			continue;
		for (size_t k = 0; k < n; k++) {
			const struct daemon_view *m = &views[k];
			if (k != i && m->repl.known && strcmp(m->d->name, v->master_site) == 0 &&
			    strcmp(m->repl.role, "master") == 0) {
				double lag = m->repl.log_position - v->repl.log_position;
				v->lag = lag > 0 ? lag : 0;
			}
		}
	}
	if (json)
		print_status_json(c, views, n, &all_ready);
	else
		print_status_text(c, views, n, &all_ready);
	for (size_t i = 0; i < n; i++)
		ctl_metrics_target_clear(&targets[i]);
	return all_ready ? CTL_EXIT_OK : CTL_EXIT_FAIL;
}

/* down */

/* Print how a stop went; false if it had to be killed. */
static bool report_stop(const char *name, pid_t pid, bool clean)
{
	printf("%-8s pid %ld %s\n", name, (long)pid,
	       clean ? "stopped" : "killed: it did not stop within 30 s");
	return clean;
}

static bool rspamd_down(const struct cluster *c)
{
	pid_t pid = cluster_rspamd_pid(c);
	if (pid == 0) {
		printf("%-8s not running\n", "rspamd");
		return true;
	}
	return report_stop("rspamd", pid, cluster_rspamd_stop(c, pid, STOP_TIMEOUT_MS));
}

static bool daemon_down(const struct cluster *c, const struct cluster_daemon *d)
{
	pid_t pid = daemon_pid(c, d);
	if (pid == 0) {
		printf("%-8s not running\n", d->name);
		return true;
	}
	bool clean = report_stop(d->name, pid, ctl_stop_pid(pid, STOP_TIMEOUT_MS));
	if (d->kind != DAEMON_SLAPD) {
		char *path = pid_path(c, d);
		unlink(path);
		free(path);
	}
	return clean;
}

static int cluster_down(const struct cluster *c)
{
	struct cluster_daemon daemons[CLUSTER_MAX_DAEMONS];
	size_t n = cluster_daemons(c, daemons);
	bool ok = true;
	for (size_t i = n; i-- > 0; ) {
		ok = daemon_down(c, &daemons[i]) && ok;
		/* The filter after the MTA: no mail in its hands finds it gone. */
		if (daemons[i].kind == DAEMON_MTA && c->milter == CLUSTER_MILTER_RSPAMD)
			ok = rspamd_down(c) && ok;
	}
	return ok ? CTL_EXIT_OK : CTL_EXIT_FAIL;
}

/* logs */

static int cluster_logs(const struct cluster *c, const struct cluster_opts *o)
{
	struct cluster_daemon daemons[CLUSTER_MAX_DAEMONS];
	size_t n = cluster_daemons(c, daemons);
	char lines[16];
	snprintf(lines, sizeof(lines), "%u", o->lines);
	char *argv[CLUSTER_MAX_DAEMONS + 10];
	size_t argc = 0;
	argv[argc++] = "tail";
	argv[argc++] = "-n";
	argv[argc++] = lines;
	if (o->follow)
		argv[argc++] = "-F";
	size_t first_log = argc;
	bool rspamd = c->milter == CLUSTER_MILTER_RSPAMD;
	for (size_t i = 0; i < n; i++) {
		if (daemons[i].kind == DAEMON_SLAPD)
			continue;	/* slapd logs to syslog */
		if (o->only == NULL || strcmp(o->only, daemons[i].name) == 0)
			argv[argc++] = mt_xasprintf("%s/log/%s.log", c->dir, daemons[i].name);
		if (rspamd && daemons[i].kind == DAEMON_MTA &&
		    (o->only == NULL || strcmp(o->only, "rspamd") == 0))
			argv[argc++] = mt_xasprintf("%s/log/rspamd.log", c->dir);
	}
	argv[argc] = NULL;
	if (argc == first_log) {
		fprintf(stderr, "%s: no such daemon in %s (shard1..shard%u%s, mta, %smmp)\n",
			o->only, c->dir, c->shards, c->replicas > 1 ? " with -b and -c" : "",
			rspamd ? "rspamd, " : "");
		return CTL_EXIT_USAGE;
	}
	fflush(NULL);
	execvp("tail", argv);
	fprintf(stderr, "tail: %s\n", strerror(errno));
	return CTL_EXIT_FAIL;
}

int ctl_cluster(struct ctl_context *ctx, int argc, char **argv)
{
	const char *cmd = argv[0];
	struct cluster_opts o;
	if (!parse_cluster_opts(argc, argv, &o)) {
		cluster_free(&o.c);
		return cluster_usage(ctx->progname);
	}
	bool is_up = strcmp(cmd, "up") == 0;
	bool found;
	int status;
	if (!load_existing(&o, &found)) {
		status = CTL_EXIT_FAIL;
	} else if (o.c.dns != NULL && o.c.milter != CLUSTER_MILTER_RSPAMD) {
		fprintf(stderr, "--dns names rspamd's nameserver: it goes with --milter rspamd\n");
		status = CTL_EXIT_USAGE;
	} else if (is_up) {
		status = cluster_up(&o.c);
	} else if (!found) {
		fprintf(stderr, "%s: no cluster here (no endpoints.env); start one with "
			"`%s cluster up --dir %s`\n", o.c.dir, ctx->progname, o.c.dir);
		status = CTL_EXIT_FAIL;
	} else if (strcmp(cmd, "status") == 0) {
		status = cluster_status(&o.c, o.json);
	} else if (strcmp(cmd, "top") == 0) {
		status = cluster_top(&o.c, o.interval_s, o.count);
	} else if (strcmp(cmd, "down") == 0) {
		status = cluster_down(&o.c);
	} else {
		status = cluster_logs(&o.c, &o);
	}
	cluster_free(&o.c);
	return status;
}
