/* ctl-directory.c — `mailtierctl directory up|down|status`: a local OpenLDAP
 * slapd for development, tests, the demo and small installs.
 *
 *   directory up --dir DIR --port PORT [--address ADDR] [--domain D]
 *                [--auth-method hash|bind] [--server-id N --peer URI... [--copy-from D]]
 *     first time: random admin and service passwords (DIR/admin.secret,
 *     DIR/service.secret), slapd.conf and base entries (dirsvc/slapd-config.c),
 *     the base loaded with slapadd; every time: start slapd bound to ADDR
 *     only (an IPv4 or IPv6 address; default 127.0.0.1), wait until the
 *     service DN can bind there, and write DIR/directory.conf — a
 *     mailtier.conf [directory] section whose uris name ldap://ADDR:PORT/.
 *     A slapd already running from DIR is left alone.
 *     With --server-id N --peer URI...: a provider of a multi-provider
 *     group (dirsvc/README.md "Two providers"): the base loaded with
 *     slapadd -S N -w; with --copy-from D, instead of the base, a copy of
 *     the provider whose state directory is D (slapcat, same host): its
 *     entries with their CSNs and entryUUIDs, so that this provider's
 *     consumers start from that provider's contextCSN (DIR/admin.secret
 *     and service.secret must then be D's, copied in beforehand).
 *   directory down --dir DIR     stop it by its pid (SIGTERM, then SIGKILL)
 *
 * Trust boundary: operator's command line. */
#include "ctl.h"
#include "dirsvc-admin.h"
#include "ctl-util.h"
#include "alloc.h"
#include "buf.h"
#include "pwhash.h"
#include "slapd-config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct directory_opts {
	const char *dir;
	const char *domain;
	const char *address;	/* numeric IPv4/IPv6 slapd listens on */
	unsigned int port;
	bool hash_auth;
	/* Multi-provider (dirsvc/README.md, "Two providers"): this
	 * provider's id (0: a lone slapd), the other providers' URIs, and
	 * the state directory of a provider whose copy an empty database
	 * loads instead of the base entries. */
	unsigned int server_id;
	const char *peers[MT_SLAPD_PEERS_MAX];
	size_t n_peers;
	const char *copy_from;
};

static int directory_usage(const char *progname)
{
	fprintf(stderr, "usage: %s directory up --dir DIR --port PORT [--address ADDR] "
		"[--domain DOMAIN] [--auth-method hash|bind]\n"
		"           [--server-id N --peer URI... [--copy-from DIR]]\n"
		"       %s directory down --dir DIR\n", progname, progname);
	return CTL_EXIT_USAGE;
}

static bool parse_directory_opts(int argc, char **argv, struct directory_opts *o)
{
	static const struct option options[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "port", required_argument, NULL, 'p' },
		{ "address", required_argument, NULL, 'A' },
		{ "domain", required_argument, NULL, 'D' },
		{ "auth-method", required_argument, NULL, 'a' },
		{ "server-id", required_argument, NULL, 'S' },
		{ "peer", required_argument, NULL, 'P' },
		{ "copy-from", required_argument, NULL, 'J' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct directory_opts){ .domain = "example.test",
				      .address = "127.0.0.1", .hash_auth = true };
	optind = 0;	/* 0: GNU getopt re-initialises (permutation back on) */
	int opt;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 'd':
			o->dir = optarg;
			break;
		case 'p': {
			unsigned long port = strtoul(optarg, &end, 10);
			if (*end != '\0' || port == 0 || port > 65535) {
				fprintf(stderr, "--port: '%s' is not a port number\n", optarg);
				return false;
			}
			o->port = (unsigned int)port;
			break;
		}
		case 'A': {
			/* A numeric address only: it goes into slapd's -h URL
			 * and directory.conf as it is. */
			unsigned char addr[sizeof(struct in6_addr)];
			if (inet_pton(AF_INET, optarg, addr) != 1 &&
			    inet_pton(AF_INET6, optarg, addr) != 1) {
				fprintf(stderr, "--address: '%s' is not an IPv4 or "
					"IPv6 address\n", optarg);
				return false;
			}
			o->address = optarg;
			break;
		}
		case 'D':
			o->domain = optarg;
			break;
		case 'a':
			if (strcmp(optarg, "hash") != 0 && strcmp(optarg, "bind") != 0) {
				fprintf(stderr, "--auth-method: use hash or bind\n");
				return false;
			}
			o->hash_auth = strcmp(optarg, "hash") == 0;
			break;
		case 'S': {
			unsigned long id = strtoul(optarg, &end, 10);
			if (*end != '\0' || id == 0 || id > MT_SLAPD_SERVER_ID_MAX) {
				fprintf(stderr, "--server-id: '%s' is not 1..%u\n", optarg,
					MT_SLAPD_SERVER_ID_MAX);
				return false;
			}
			o->server_id = (unsigned int)id;
			break;
		}
		case 'P':
			if (o->n_peers == MT_SLAPD_PEERS_MAX ||
			    strncmp(optarg, "ldap://", 7) != 0) {
				fprintf(stderr, "--peer: '%s' is not an ldap:// URI, or "
					"more than %u peers\n", optarg, MT_SLAPD_PEERS_MAX);
				return false;
			}
			o->peers[o->n_peers++] = optarg;
			break;
		case 'J':
			o->copy_from = optarg;
			break;
		default:
			return false;
		}
	}
	if ((o->server_id != 0) != (o->n_peers != 0) ||
	    (o->copy_from != NULL && o->server_id == 0)) {
		fprintf(stderr, "--server-id and --peer go together (--copy-from needs them)\n");
		return false;
	}
	return o->dir != NULL && optind == argc;
}

/* The secret in DIR/NAME, created with a random password when missing. */
static char *load_or_create_secret(const char *dir, const char *name)
{
	char *path = mt_xasprintf("%s/%s", dir, name);
	const char *error;
	char *secret = ctl_read_file(path, &error);
	if (secret == NULL) {
		secret = ctl_random_password();
		if (!ctl_write_private(path, secret, &error)) {
			fprintf(stderr, "%s: cannot write: %s\n", path, error);
			MT_FREE(&secret);
		}
	}
	free(path);
	return secret;
}

static bool db_is_empty(const char *dir)
{
	char *path = mt_xasprintf("%s/db/data.mdb", dir);
	struct stat st;
	bool empty = stat(path, &st) != 0;
	free(path);
	return empty;
}

static bool write_directory_conf(const struct directory_opts *o,
				 const struct mt_slapd_params *p)
{
	struct mt_buf conf = MT_BUF_INIT, uri = MT_BUF_INIT;
	mt_slapd_ldap_uri(&uri, o->address, o->port);
	mt_buf_appendf(&conf,
		"# Written by mailtierctl directory up: the [directory] section for\n"
		"# the local slapd in %s. Copy it into mailtier.conf.\n"
		"[directory]\nuris = %s\nbase_dn = ou=people,%s\n"
		"bind_dn = %s\nbind_password_file = %s/service.secret\n"
		"auth_method = %s\nadmin_dn = %s\nadmin_password_file = %s/admin.secret\n"
		"local_slapd_dir = %s\n\n[mta]\nlocal_domains = %s\n",
		o->dir, mt_buf_cstr(&uri), p->suffix, p->service_dn, o->dir,
		o->hash_auth ? "hash" : "bind", p->admin_dn, o->dir, o->dir, o->domain);
	char *path = mt_xasprintf("%s/directory.conf", o->dir);
	const char *error;
	bool ok = ctl_write_private(path, mt_buf_cstr(&conf), &error);
	if (!ok)
		fprintf(stderr, "%s: cannot write: %s\n", path, error);
	free(path);
	mt_buf_free(&conf);
	mt_buf_free(&uri);
	return ok;
}

/* Load the empty database of o->dir with a copy of the provider in
 * o->copy_from (slapcat, which may run beside its slapd: MDB readers do
 * not block it). The entries keep their entryCSN and entryUUID; -w makes
 * the contextCSN theirs, so this provider's consumers ask the peers only
 * for what came after. (A consumer that starts empty takes a full
 * refresh only while the peer's accesslog is empty; with changes logged
 * it replays the log alone: seen with slapd 2.5.13.) */
static bool copy_provider(const struct directory_opts *o, const char *suffix,
			  const char *conffile)
{
	char *from_conf = mt_xasprintf("%s/slapd.conf", o->copy_from);
	char *ldif = mt_xasprintf("%s/copy.ldif", o->dir);
	char sid[16];
	snprintf(sid, sizeof(sid), "%u", o->server_id);
	char *const slapcat[] = { "slapcat", "-f", from_conf, "-b", (char *)suffix,
				  "-l", ldif, NULL };
	char *const slapadd[] = { "slapadd", "-q", "-S", sid, "-w", "-b", (char *)suffix,
				  "-f", (char *)conffile, "-l", ldif, NULL };
	(void)unlink(ldif);
	bool ok = ctl_run(slapcat) == 0;
	if (!ok)
		fprintf(stderr, "slapcat of the provider in %s failed\n", o->copy_from);
	ok = ok && ctl_run(slapadd) == 0;
	if (!ok)
		fprintf(stderr, "loading the copy of %s failed\n", o->copy_from);
	(void)unlink(ldif);	/* it holds every password hash */
	free(from_conf);
	free(ldif);
	return ok;
}

static int directory_up(struct ctl_context *ctx, const struct directory_opts *o)
{
	if (o->port == 0)
		return directory_usage(ctx->progname);
	if (mkdir(o->dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "%s: cannot create: %s\n", o->dir, strerror(errno));
		return CTL_EXIT_FAIL;
	}
	int status = CTL_EXIT_FAIL;
	char *suffix = NULL, *admin_dn = NULL, *service_dn = NULL;
	char *admin_pw = load_or_create_secret(o->dir, "admin.secret");
	char *service_pw = load_or_create_secret(o->dir, "service.secret");
	char *schema = ctl_data_path("dirsvc/mailtier.schema");
	char *pidfile = mt_xasprintf("%s/slapd.pid", o->dir);
	char *conffile = mt_xasprintf("%s/slapd.conf", o->dir);
	char *baseldif = mt_xasprintf("%s/base.ldif", o->dir);
	struct mt_buf admin_hash = MT_BUF_INIT, service_hash = MT_BUF_INIT;
	struct mt_buf urls = MT_BUF_INIT, uri = MT_BUF_INIT;
	const char *error = NULL;
	if (admin_pw == NULL || service_pw == NULL)
		goto out;
	if (!mt_slapd_default_dns(o->domain, &suffix, &admin_dn, &service_dn, &error)) {
		fprintf(stderr, "--domain %s: %s\n", o->domain, error);
		goto out;
	}
	struct mt_slapd_params p = {
		.dir = o->dir, .listen_host = o->address, .port = o->port,
		.suffix = suffix,
		.admin_dn = admin_dn, .service_dn = service_dn,
		.service_reads_password = o->hash_auth, .mailtier_schema = schema,
		.server_id = o->server_id, .peer_uris = o->peers, .n_peers = o->n_peers,
		.repl_password = admin_pw,
	};
	mt_slapd_listen_urls(&urls, &p);
	mt_slapd_ldap_uri(&uri, o->address, o->port);
	pid_t running = ctl_pidfile_alive(pidfile);
	if (running == 0) {
		/* Service accounts need no slow hash: their passwords are random. */
		if (!mt_pw_hash(MT_PW_SSHA512, 0, admin_pw, &admin_hash, &error) ||
		    !mt_pw_hash(MT_PW_SSHA512, 0, service_pw, &service_hash, &error)) {
			fprintf(stderr, "password hash: %s\n", error);
			goto out;
		}
		p.admin_pw_hash = mt_buf_cstr(&admin_hash);
		p.service_pw_hash = mt_buf_cstr(&service_hash);
		if (!mt_slapd_write_config(&p, &error)) {
			fprintf(stderr, "%s: %s\n", conffile, error);
			goto out;
		}
		if (db_is_empty(o->dir) && o->copy_from != NULL) {
			if (!copy_provider(o, suffix, conffile))
				goto out;
		} else if (db_is_empty(o->dir)) {
			if (!mt_slapd_write_base_ldif(&p, &error)) {
				fprintf(stderr, "%s: %s\n", baseldif, error);
				goto out;
			}
			/* A provider's CSNs carry its server id (-S) and the
			 * contextCSN is written (-w): slapadd's default SID 0
			 * is invalid in a multi-provider group. -b: the
			 * accesslog database comes first. */
			char sid[16];
			snprintf(sid, sizeof(sid), "%u", o->server_id);
			char *const slapadd[] = { "slapadd", "-q", "-f", conffile,
						  "-l", baseldif, NULL };
			char *const slapadd_sid[] = { "slapadd", "-q", "-S", sid, "-w",
						      "-b", suffix, "-f", conffile,
						      "-l", baseldif, NULL };
			if (ctl_run(o->server_id != 0 ? slapadd_sid : slapadd) != 0) {
				fprintf(stderr, "slapadd of the base entries failed\n");
				goto out;
			}
		}
		char *const slapd[] = { "slapd", "-f", conffile, "-h",
					(char *)mt_buf_cstr(&urls), NULL };
		if (ctl_run(slapd) != 0) {
			fprintf(stderr, "slapd did not start (try: slapd -d 1 -f %s -h '%s')\n",
				conffile, mt_buf_cstr(&urls));
			goto out;
		}
	}
	bool ready = mt_dirsvc_admin_wait_bind(mt_buf_cstr(&uri), service_dn, service_pw,
				   15000, &error);
	if (!ready) {
		fprintf(stderr, "slapd in %s does not answer a bind as %s: %s\n",
			o->dir, service_dn, error);
		goto out;
	}
	if (!write_directory_conf(o, &p))
		goto out;
	printf("directory %s: slapd pid %d on %s suffix %s\n"
	       "config section: %s/directory.conf\n",
	       running ? "already running" : "started",
	       (int)ctl_pidfile_alive(pidfile), mt_buf_cstr(&uri), suffix, o->dir);
	status = CTL_EXIT_OK;
out:
	mt_buf_free(&admin_hash);
	mt_buf_free(&service_hash);
	mt_buf_free(&urls);
	mt_buf_free(&uri);
	free(suffix);
	free(admin_dn);
	free(service_dn);
	free(admin_pw);
	free(service_pw);
	free(schema);
	free(pidfile);
	free(conffile);
	free(baseldif);
	return status;
}

static int directory_down(const struct directory_opts *o)
{
	char *pidfile = mt_xasprintf("%s/slapd.pid", o->dir);
	pid_t pid = ctl_pidfile_alive(pidfile);
	free(pidfile);
	if (pid == 0) {
		printf("directory: no slapd running in %s\n", o->dir);
		return CTL_EXIT_OK;
	}
	bool clean = ctl_stop_pid(pid, 30000);
	printf("directory: slapd pid %d %s\n", (int)pid,
	       clean ? "stopped" : "killed after 30 s");
	return clean ? CTL_EXIT_OK : CTL_EXIT_FAIL;
}

int ctl_directory_up(struct ctl_context *ctx, int argc, char **argv)
{
	struct directory_opts o;
	if (!parse_directory_opts(argc, argv, &o))
		return directory_usage(ctx->progname);
	return directory_up(ctx, &o);
}

int ctl_directory_down(struct ctl_context *ctx, int argc, char **argv)
{
	struct directory_opts o;
	if (!parse_directory_opts(argc, argv, &o))
		return directory_usage(ctx->progname);
	return directory_down(&o);
}
