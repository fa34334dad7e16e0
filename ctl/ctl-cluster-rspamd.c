/* ctl-cluster-rspamd.c — `mailtierctl cluster up --milter rspamd`: Debian's
 * rspamd in front of a local cluster's MTA (issue #17), its config and
 * state in DIR/rspamd/, its log in DIR/log/rspamd.log, its pid in
 * DIR/run/rspamd.pid (see ctl-cluster.h).
 *
 * DIR/rspamd/rspamd.conf  includes Debian's /etc/rspamd/common.conf (read
 *                         only, through --var CONFDIR) and defines one
 *                         worker: the proxy in milter mode, scanning
 *                         itself, on 127.0.0.1:P+8
 * DIR/rspamd/local/       $LOCAL_CONFDIR: local.d/ (options.inc,
 *                         dmarc.conf, milter_headers.conf), override.d/
 *                         (the modules turned off), tlds.dat
 * DIR/rspamd/db, run, log $DBDIR, $RUNDIR, $LOGDIR
 *
 * What the config says, and why (the same settings that proved necessary
 * in tests/integration/filters.py's Rspamd):
 *  - check_local = true, local_addrs = []: every cluster client is on
 *    127.0.0.1 and stands for an Internet client; rspamd counts loopback
 *    as local whatever local_addrs says, and skips SPF, DKIM and DMARC
 *    for local clients unless check_local is set;
 *  - the modules that would reach outside the machine (HTTP maps, public
 *    RBLs and fuzzy servers, MX checks, ...) or need redis are off; no
 *    redis, no controller, no normal worker;
 *  - DMARC p=reject failures are refused; milter_headers adds
 *    Authentication-Results and X-Spamd-Result, for local clients too;
 *  - disable_hyperscan and a short url_tld list: a start takes about 3 s
 *    instead of about 19 s;
 *  - DNS: /etc/resolv.conf, or `--dns HOST:PORT` (a test's own server).
 * Run as root, rspamd (which refuses root) runs as _rspamd, as Debian's
 * unit runs it (User=): it can read its config (root:_rspamd 0640, its
 * directories 0750) and write only DIR/rspamd/db, run and log, which it
 * owns; DIR gets search permission for others (o+x; everything else in it
 * is private to its owner) so that _rspamd can reach DIR/rspamd.
 *
 * Trust boundary: the operator's command line (DIR, --dns, checked for
 * what rspamd's config language would misread) and Debian's files under
 * /etc/rspamd. What rspamd answers on its milter port is only checked for
 * being an OPTNEG reply (readiness); the MTA speaks to it, not this code. */
#include "ctl-cluster.h"
#include "ctl-spawn.h"
#include "ctl-util.h"
#include "alloc.h"
#include "buf.h"
#include "milter-proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RSPAMD_CONFDIR "/etc/rspamd"
#define RSPAMD_USER "_rspamd"
#define PROBE_TIMEOUT_MS 2000

/* Modules off: each reaches outside the machine (HTTP maps of
 * maps.rspamd.com, public RBLs and fuzzy servers, the ASN zone, MX
 * hosts, URL redirectors) or needs redis, which the cluster does not run. */
static const char *const disabled_modules[] = {
	"fuzzy_check", "rbl", "multimap", "phishing", "asn", "whitelist",
	"rspamd_update", "url_redirector", "dkim_signing", "arc", "neural",
	"ratelimit", "greylist", "reputation", "history_redis", "replies",
	"metadata_exporter", "clickhouse", "elastic", "metric_exporter", "emails",
	"spamtrap", "mx_check", "dcc", "antivirus", "external_services", "p0f",
	"bimi", "mid", "mime_types", "maillist", "trie", "once_received", "hfilter",
};

/* The public suffixes rspamd knows here (url_tld): the public suffix
 * list's 9,600 would cost 15-20 s at every start. */
static const char *const tlds[] = {
	"test", "example", "invalid", "localhost", "com", "net", "org", "info",
	"biz", "io", "de", "uk", "co.uk", "fr", "nl", "ru", "cn", "jp", "us", "eu",
	"edu", "gov",
};

#define N_ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

bool cluster_dns_valid(const char *text)
{
	const char *colon = strrchr(text, ':');
	if (colon == NULL || colon[1] == '\0' || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return false;
	unsigned long port = strtoul(colon + 1, NULL, 10);
	if (port == 0 || port > 65535)
		return false;
	char host[INET6_ADDRSTRLEN + 2];
	size_t len = (size_t)(colon - text);
	if (len == 0 || len >= sizeof(host))
		return false;
	memcpy(host, text, len);
	host[len] = '\0';
	unsigned char addr[sizeof(struct in6_addr)];
	if (host[0] == '[' && host[len - 1] == ']') {
		host[len - 1] = '\0';
		return inet_pton(AF_INET6, host + 1, addr) == 1;
	}
	return inet_pton(AF_INET, host, addr) == 1;
}

/* Whom rspamd runs as: _rspamd when we are root, else ourselves. */
struct rspamd_user {
	bool drop;
	uid_t uid;
	gid_t gid;
};

static bool rspamd_user(struct rspamd_user *u, char **error_r)
{
	*u = (struct rspamd_user){ .drop = geteuid() == 0 };
	if (!u->drop)
		return true;
	struct passwd *pw = getpwnam(RSPAMD_USER);
	if (pw == NULL || pw->pw_uid == 0) {
		*error_r = mt_xasprintf("--milter rspamd: there is no user %s (Debian's rspamd "
					"package makes it: apt-get install rspamd)", RSPAMD_USER);
		return false;
	}
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	return true;
}

/* rspamd on PATH or in the usual places; caller frees, NULL if none. */
static char *rspamd_program(void)
{
	const char *env = getenv("PATH");
	char *path = mt_xasprintf("%s:/usr/bin:/usr/sbin:/bin:/sbin", env != NULL ? env : "");
	char *found = NULL;
	for (char *save = NULL, *dir = strtok_r(path, ":", &save); dir != NULL && found == NULL;
	     dir = strtok_r(NULL, ":", &save)) {
		char *candidate = mt_xasprintf("%s/rspamd", dir);
		if (access(candidate, X_OK) == 0)
			found = candidate;
		else
			free(candidate);
	}
	free(path);
	return found;
}

bool cluster_rspamd_check(const struct cluster *c, char **error_r)
{
	char *program = rspamd_program();
	if (program == NULL || access(RSPAMD_CONFDIR "/common.conf", R_OK) != 0) {
		*error_r = mt_xasprintf("--milter rspamd: rspamd is not installed (%s is "
					"missing): apt-get install rspamd",
					program == NULL ? "the program rspamd" :
					RSPAMD_CONFDIR "/common.conf");
		free(program);
		return false;
	}
	free(program);
	/* DIR is spelled into rspamd's config by --var: keep UCL from
	 * reading anything in it as a variable, a quote or an escape. */
	for (const char *p = c->dir; *p != '\0'; p++) {
		if (strchr("$\"'\\{}", *p) != NULL || (unsigned char)*p < 0x20) {
			*error_r = mt_xasprintf("--milter rspamd: %s: a directory name with $, "
						"quotes, braces, backslashes or control "
						"characters would be misread in rspamd's config",
						c->dir);
			return false;
		}
	}
	struct rspamd_user u;
	return rspamd_user(&u, error_r);
}

/* Files */

static char *rspamd_path(const struct cluster *c, const char *name)
{
	return mt_xasprintf("%s/rspamd%s%s", c->dir, name[0] != '\0' ? "/" : "", name);
}

/* DIR/rspamd/NAME as a directory of mode, owned by uid:gid when we are
 * root (-1: unchanged). */
static bool make_dir(const struct cluster *c, const char *name, mode_t mode,
		     uid_t uid, gid_t gid, char **error_r)
{
	char *path = rspamd_path(c, name);
	bool ok = (mkdir(path, mode) == 0 || errno == EEXIST) &&
		(geteuid() != 0 || chown(path, uid, gid) == 0) && chmod(path, mode) == 0;
	if (!ok)
		*error_r = mt_xasprintf("%s: %s", path, strerror(errno));
	free(path);
	return ok;
}

/* DIR/rspamd/NAME holding text: root:_rspamd 0640 when we are root (rspamd
 * reads it, cannot change it), else ours 0600. */
static bool write_file(const struct cluster *c, const struct rspamd_user *u,
		       const char *name, const char *text, char **error_r)
{
	char *path = rspamd_path(c, name);
	const char *error = NULL;
	bool ok = ctl_write_private(path, text, &error);
	if (ok && u->drop && (chown(path, 0, u->gid) != 0 || chmod(path, 0640) != 0)) {
		error = strerror(errno);
		ok = false;
	}
	if (!ok)
		*error_r = mt_xasprintf("%s: cannot write: %s", path, error);
	free(path);
	return ok;
}

static void append_main_config(struct mt_buf *out, const struct cluster *c)
{
	mt_buf_appendf(out,
		"# %s/rspamd/rspamd.conf — written by `mailtierctl cluster up --milter\n"
		"# rspamd` (rewritten by every `up`, as are the files it names in local/):\n"
		"# Debian's rspamd in front of the cluster's MTA on the SMTP and submission\n"
		"# listeners. $CONFDIR is Debian's %s (read only); $LOCAL_CONFDIR is\n"
		"# local/, $DBDIR, $RUNDIR and $LOGDIR are db/, run/ and log/ here. Settings\n"
		"# of your own go in other local/local.d/ files (e.g. actions.conf).\n"
		".include \"$CONFDIR/common.conf\"\n\n"
		"options {\n"
		"    pidfile = \"$RUNDIR/rspamd.pid\";\n"
		"    .include \"$CONFDIR/options.inc\"\n"
		"    .include(try=true; priority=1,duplicate=merge) \"$LOCAL_CONFDIR/local.d/options.inc\"\n"
		"    .include(try=true; priority=10) \"$LOCAL_CONFDIR/override.d/options.inc\"\n"
		"}\n\n"
		"logging {\n"
		"    # To stderr, which `cluster up` appends to %s/log/rspamd.log.\n"
		"    type = \"console\";\n"
		"    .include \"$CONFDIR/logging.inc\"\n"
		"    .include(try=true; priority=1,duplicate=merge) \"$LOCAL_CONFDIR/local.d/logging.inc\"\n"
		"}\n\n"
		"# The only worker: the proxy in milter mode, scanning mail itself (no\n"
		"# normal worker behind it), on loopback. No controller, no fuzzy storage.\n"
		"worker \"rspamd_proxy\" {\n"
		"    bind_socket = \"127.0.0.1:%u\";\n"
		"    milter = yes;\n"
		"    timeout = 120s;\n"
		"    upstream \"local\" {\n"
		"        default = yes;\n"
		"        self_scan = yes;\n"
		"    }\n"
		"    count = 1;\n"
		"    max_retries = 5;\n"
		"    discard_on_reject = false;\n"
		"    quarantine_on_reject = false;\n"
		"    spam_header = \"X-Spam\";\n"
		"    reject_message = \"Spam message rejected\";\n"
		"}\n",
		c->dir, RSPAMD_CONFDIR, c->dir, cluster_port(c, CLUSTER_PORT_MILTER));
}

static void append_options(struct mt_buf *out, const struct cluster *c)
{
	mt_buf_appendf(out,
		"# Every client of the cluster connects from 127.0.0.1 and stands for an\n"
		"# Internet client: rspamd counts loopback as local whatever local_addrs\n"
		"# says, and skips SPF, DKIM and DMARC for local clients unless\n"
		"# check_local. Authenticated senders (AUTH on submission) skip them.\n"
		"local_addrs = [];\n"
		"check_local = true;\n"
		"check_authed = false;\n"
		"# Start in about 3 s instead of about 19: no hyperscan compilation, and a\n"
		"# short list of top-level domains instead of the public suffix list (URLs\n"
		"# under other TLDs are not recognised as URLs).\n"
		"disable_hyperscan = true;\n"
		"url_tld = \"$LOCAL_CONFDIR/tlds.dat\";\n");
	if (c->dns != NULL)
		mt_buf_appendf(out,
			"# `cluster up --dns`: this nameserver, not /etc/resolv.conf's.\n"
			"dns {\n"
			"    nameserver = [\"%s\"];\n"
			"    timeout = 1s;\n"
			"    retransmits = 2;\n"
			"}\n", c->dns);
	else
		mt_buf_append_str(out, "# DNS: the nameservers of /etc/resolv.conf "
				  "(`cluster up --dns HOST:PORT` names one).\n");
}

static const char dmarc_conf[] =
	"# A message failing DMARC of a domain with p=reject is refused (550\n"
	"# 5.7.1 through the milter); p=quarantine gets the spam header.\n"
	"actions {\n"
	"    reject = \"reject\";\n"
	"    quarantine = \"add header\";\n"
	"}\n";

static const char milter_headers_conf[] =
	"# Added to every message the MTA accepts; cluster clients are local\n"
	"# (loopback) but stand for the Internet.\n"
	"use = [\"authentication-results\", \"x-spamd-result\"];\n"
	"skip_local = false;\n"
	"skip_authenticated = false;\n";

static bool write_local(const struct cluster *c, const struct rspamd_user *u, char **error_r)
{
	struct mt_buf text = MT_BUF_INIT;
	append_options(&text, c);
	bool ok = write_file(c, u, "local/local.d/options.inc", mt_buf_cstr(&text), error_r) &&
		write_file(c, u, "local/local.d/dmarc.conf", dmarc_conf, error_r) &&
		write_file(c, u, "local/local.d/milter_headers.conf", milter_headers_conf, error_r);
	mt_buf_reset(&text);
	for (size_t i = 0; i < N_ELEMENTS(tlds); i++)
		mt_buf_appendf(&text, "%s\n", tlds[i]);
	ok = ok && write_file(c, u, "local/tlds.dat", mt_buf_cstr(&text), error_r);
	for (size_t i = 0; i < N_ELEMENTS(disabled_modules) && ok; i++) {
		char *name = mt_xasprintf("local/override.d/%s.conf", disabled_modules[i]);
		ok = write_file(c, u, name, "# Off in a local cluster: it reaches outside "
				"the machine or needs redis.\nenabled = false;\n", error_r);
		free(name);
	}
	mt_buf_free(&text);
	return ok;
}

/* Can u read DIR/rspamd/rspamd.conf and write DIR/rspamd/db? Asked as u
 * in a child, so every directory above DIR counts. */
static bool reachable(const struct cluster *c, const struct rspamd_user *u, char **error_r)
{
	if (!u->drop)
		return true;
	char *conf = rspamd_path(c, "rspamd.conf");
	char *db = rspamd_path(c, "db");
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		bool ok = setgroups(0, NULL) == 0 && setgid(u->gid) == 0 && setuid(u->uid) == 0 &&
			access(conf, R_OK) == 0 && access(db, W_OK | X_OK) == 0;
		_exit(ok ? 0 : 1);
	}
	int status = -1;
	bool ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0;
	if (!ok)
		*error_r = mt_xasprintf("rspamd runs as %s, which cannot read %s: every "
					"directory above %s needs search permission for it "
					"(chmod o+x)", RSPAMD_USER, conf, c->dir);
	free(conf);
	free(db);
	return ok;
}

bool cluster_rspamd_write(const struct cluster *c, char **error_r)
{
	struct rspamd_user u;
	if (!rspamd_user(&u, error_r))
		return false;
	uid_t root = u.drop ? 0 : (uid_t)-1;
	gid_t group = u.drop ? u.gid : (gid_t)-1;
	struct stat st;
	if (u.drop && (stat(c->dir, &st) != 0 || chmod(c->dir, (st.st_mode & 07777) | S_IXOTH) != 0)) {
		*error_r = mt_xasprintf("%s: %s", c->dir, strerror(errno));
		return false;
	}
	if (!make_dir(c, "", 0750, root, group, error_r) ||
	    !make_dir(c, "local", 0750, root, group, error_r) ||
	    !make_dir(c, "local/local.d", 0750, root, group, error_r) ||
	    !make_dir(c, "local/override.d", 0750, root, group, error_r))
		return false;
	static const char *const state[] = { "db", "run", "log" };
	for (size_t i = 0; i < N_ELEMENTS(state); i++) {
		if (!make_dir(c, state[i], 0700, u.drop ? u.uid : (uid_t)-1, group, error_r))
			return false;
	}
	struct mt_buf conf = MT_BUF_INIT;
	append_main_config(&conf, c);
	bool ok = write_file(c, &u, "rspamd.conf", mt_buf_cstr(&conf), error_r) &&
		write_local(c, &u, error_r) && reachable(c, &u, error_r);
	mt_buf_free(&conf);
	return ok;
}

/* Running it */

static char *pid_path(const struct cluster *c)
{
	return mt_xasprintf("%s/run/rspamd.pid", c->dir);
}

pid_t cluster_rspamd_pid(const struct cluster *c)
{
	char *path = pid_path(c);
	pid_t pid = ctl_pidfile_alive(path);
	free(path);
	return pid;
}

/* Does 127.0.0.1:port answer a milter OPTNEG with one? rspamd's main
 * process listens before its proxy worker has loaded the rules; the
 * worker answers only once it can scan. A QUIT follows, so rspamd logs
 * the probe as a finished connection, not a broken one. */
static bool milter_answers(void *context)
{
	unsigned int port = *(const unsigned int *)context;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct timeval tv = { .tv_sec = PROBE_TIMEOUT_MS / 1000,
			      .tv_usec = (PROBE_TIMEOUT_MS % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct mt_buf out = MT_BUF_INIT;
	mt_milter_put_optneg(&out, MT_MILTER_VERSION, MT_MILTER_ACT_ALL, 0);
	bool ok = connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
		send(fd, out.data, out.len, MSG_NOSIGNAL) == (ssize_t)out.len;
	unsigned char reply[4096];
	size_t have = 0;
	struct mt_milter_packet packet;
	size_t used;
	enum mt_milter_take take = MT_MILTER_TAKE_MORE;
	while (ok && take == MT_MILTER_TAKE_MORE && have < sizeof(reply)) {
		ssize_t n = recv(fd, reply + have, sizeof(reply) - have, 0);
		ok = n > 0;
		if (ok) {
			have += (size_t)n;
			take = mt_milter_take(reply, have, sizeof(reply), &packet, &used);
		}
	}
	ok = ok && take == MT_MILTER_TAKE_PACKET && packet.code == 'O';
	if (ok) {
		mt_buf_reset(&out);
		mt_milter_put_command(&out, MT_MILTER_CMD_QUIT);
		(void)send(fd, out.data, out.len, MSG_NOSIGNAL);
	}
	close(fd);
	mt_buf_free(&out);
	return ok;
}

/* SIGKILL what is left of the process group pgid (rspamd's workers, when
 * the main process is gone), and wait a little for it to go. A group id
 * is not reused while a member lives, so these are rspamd's. */
static void kill_group(pid_t pgid)
{
	if (kill(-pgid, SIGKILL) != 0)
		return;
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	for (int i = 0; i < 250 && kill(-pgid, 0) == 0; i++)
		nanosleep(&tick, NULL);
}

pid_t cluster_rspamd_start(const struct cluster *c, unsigned int timeout_ms)
{
	struct rspamd_user u;
	char *error = NULL;
	char *program = rspamd_program();
	if (program == NULL || !rspamd_user(&u, &error)) {
		fprintf(stderr, "%s\n", error != NULL ? error : "rspamd is not installed "
			"(apt-get install rspamd)");
		free(error);
		free(program);
		return 0;
	}
	char *conf = rspamd_path(c, "rspamd.conf");
	char *vars[5] = {
		mt_xasprintf("CONFDIR=%s", RSPAMD_CONFDIR),
		mt_xasprintf("LOCAL_CONFDIR=%s/rspamd/local", c->dir),
		mt_xasprintf("DBDIR=%s/rspamd/db", c->dir),
		mt_xasprintf("RUNDIR=%s/rspamd/run", c->dir),
		mt_xasprintf("LOGDIR=%s/rspamd/log", c->dir),
	};
	char *argv[] = { program, "-f", "-c", conf, "--var", vars[0], "--var", vars[1],
			 "--var", vars[2], "--var", vars[3], "--var", vars[4], NULL };
	char *log = mt_xasprintf("%s/log/rspamd.log", c->dir);
	char *pidfile = pid_path(c);
	unsigned int port = cluster_port(c, CLUSTER_PORT_MILTER);
	struct ctl_spawn spawn = { .name = "rspamd", .argv = argv, .log_path = log,
				   .pid_path = pidfile, .ready_timeout_ms = timeout_ms,
				   .probe = milter_answers, .probe_context = &port,
				   .uid = u.drop ? u.uid : 0, .gid = u.gid };
	pid_t pid = ctl_spawn_daemon(&spawn, &error);
	if (pid == 0) {
		fprintf(stderr, "%s\n", error);
		free(error);
		char *const tail[] = { "tail", "-n", "5", log, NULL };
		ctl_run(tail);
	}
	for (size_t i = 0; i < N_ELEMENTS(vars); i++)
		free(vars[i]);
	free(program);
	free(conf);
	free(log);
	free(pidfile);
	return pid;
}

bool cluster_rspamd_stop(const struct cluster *c, pid_t pid, unsigned int timeout_ms)
{
	/* rspamd's main process stops its workers on SIGTERM and exits. */
	bool clean = ctl_stop_pid(pid, timeout_ms);
	kill_group(pid);
	char *path = pid_path(c);
	unlink(path);
	free(path);
	return clean;
}
