/* ctl-cluster.h — a local mailtier cluster in one directory, shared by the
 * `mailtierctl cluster` commands (ctl-cluster.c) and the files they write
 * (ctl-cluster-files.c).
 *
 * DIR/mailtier.conf   the cluster's config (written once; edit and re-run up)
 * DIR/endpoints.env   shell assignments: ports, domains, the sink
 * DIR/prometheus.yml  a Prometheus config scraping every daemon
 * DIR/directory/      the local slapd (`mailtierctl directory up`); with
 *                     --directory-providers N (2 or 3) provider 1 of a
 *                     multi-provider group, DIR/directoryK/ provider K
 *                     (dirsvc/README.md, "Two providers")
 * DIR/store-shardN/   each shard's Berkeley DB environment; with --replicas 3
 *                     that of the shard's first site (shardN), and
 *                     DIR/store-shardN-b/, -c/ those of its other two sites
 * DIR/queue/          the MTA's queue
 * DIR/tls/            a self-signed certificate for 127.0.0.1 / localhost
 * DIR/log/NAME.log    each daemon's log; DIR/run/NAME.pid its pid
 * DIR/rspamd/         with --milter rspamd: rspamd's config and state
 *                     (ctl-cluster-rspamd.c)
 *
 * Ports from the base port P: P slapd, P+1 SMTP, P+2 submission, P+3
 * submissions, P+4 POP3, P+5 POP3S, P+6 IMAP and P+7 IMAPS (the MMP), P+8
 * rspamd's milter (with --milter rspamd), P+9 the default sink, shard n
 * (1-based) LMTP P+10+2(n-1) and POP3 P+11+2(n-1), then the shards' IMAP
 * ports (cluster_shard_imap), then the metrics endpoints: the MTA's, the
 * MMP's, each shard's (cluster_metrics_port), then directory providers
 * 2 and 3 (cluster_ldap_port; provider 1 is P).
 *
 * With --replicas 3 (each shard a Berkeley DB replication group of three
 * store sites, HA.md §5.1), the first site of shard n is named
 * shardN and keeps the ports above; the other two, shardN-b and shardN-c,
 * and every site's replication port come after provider 3's port
 * (cluster_site_port): Q = P+10+4S+4 (S shards), the replication ports
 * Q+3(n-1)+r for site r (0..2) of shard n, then from Q+3S four ports a
 * site — LMTP, POP3, IMAP, metrics — for sites 1 and 2 of each shard.
 * One replica uses P..P+10+4S+3; three, P..P+14+15S-1. */
#ifndef MT_CTL_CLUSTER_H
#define MT_CTL_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct mt_buf;

#define CLUSTER_MAX_SHARDS 40
/* slapd providers of the directory (multi-provider delta-syncrepl). */
#define CLUSTER_MAX_PROVIDERS 3
/* Store sites of a shard (--replicas): 1, or 3 in a replication group. */
#define CLUSTER_MAX_SITES 3
/* Every daemon: the providers, the shards' sites, the MTA and the MMP. */
#define CLUSTER_MAX_DAEMONS (CLUSTER_MAX_PROVIDERS + CLUSTER_MAX_SHARDS * CLUSTER_MAX_SITES + 2)

/* The mail filter in front of the MTA's SMTP and submission listeners. */
enum cluster_milter { CLUSTER_MILTER_NONE = 0, CLUSTER_MILTER_RSPAMD };

struct cluster {
	char *dir;		/* absolute */
	unsigned int shards;
	unsigned long users;
	unsigned int base_port;
	char *domain;
	char *remote_domain;
	char *sink;		/* HOST:PORT the MTA relays remote mail to */
	enum cluster_milter milter;
	char *dns;		/* rspamd's nameserver HOST:PORT; NULL: resolv.conf */
	unsigned int directory_providers;	/* 1 (one slapd) .. CLUSTER_MAX_PROVIDERS */
	unsigned int replicas;	/* store sites a shard: 1 or CLUSTER_MAX_SITES */
};

enum cluster_port {
	CLUSTER_PORT_LDAP = 0,
	CLUSTER_PORT_SMTP = 1,
	CLUSTER_PORT_SUBMISSION = 2,
	CLUSTER_PORT_SUBMISSIONS = 3,
	CLUSTER_PORT_POP3 = 4,
	CLUSTER_PORT_POP3S = 5,
	CLUSTER_PORT_IMAP = 6,
	CLUSTER_PORT_IMAPS = 7,
	CLUSTER_PORT_MILTER = 8,
	CLUSTER_PORT_SINK = 9,
};
static inline unsigned int cluster_port(const struct cluster *c, enum cluster_port p)
{
	return c->base_port + (unsigned int)p;
}
static inline unsigned int cluster_shard_lmtp(const struct cluster *c, unsigned int n)
{
	return c->base_port + 10 + 2 * (n - 1);
}
static inline unsigned int cluster_shard_pop3(const struct cluster *c, unsigned int n)
{
	return c->base_port + 11 + 2 * (n - 1);
}
/* After every shard's LMTP and POP3 ports (the shard count of a cluster
 * does not change: `cluster up` refuses another). */
static inline unsigned int cluster_shard_imap(const struct cluster *c, unsigned int n)
{
	return c->base_port + 10 + 2 * c->shards + (n - 1);
}

/* The metrics_listen ports after the shards' IMAP ports: 0 the MTA, 1 the
 * MMP, 1 + n shard n. */
#define CLUSTER_METRICS_MTA 0u
#define CLUSTER_METRICS_MMP 1u
static inline unsigned int cluster_metrics_port(const struct cluster *c, unsigned int which)
{
	return c->base_port + 10 + 3 * c->shards + which;
}

/* Provider k's (1-based) ldap:// port: P for the first, after the metrics
 * ports for the others. */
static inline unsigned int cluster_ldap_port(const struct cluster *c, unsigned int k)
{
	if (k <= 1)
		return cluster_port(c, CLUSTER_PORT_LDAP);
	return cluster_metrics_port(c, CLUSTER_METRICS_MMP + c->shards) + 1 + (k - 2);
}

/* A store site's ports (cluster_site_port). */
enum cluster_site_port {
	CLUSTER_SITE_LMTP = 0,
	CLUSTER_SITE_POP3 = 1,
	CLUSTER_SITE_IMAP = 2,
	CLUSTER_SITE_METRICS = 3,
	CLUSTER_SITE_REPLICATION = 4,
};
/* Port `which` of site r (0-based: 0 is shardN, 1 shardN-b, 2 shardN-c)
 * of shard n (1-based); see the top of this file. */
unsigned int cluster_site_port(const struct cluster *c, unsigned int n, unsigned int r,
			       enum cluster_site_port which);
/* The highest port the cluster uses. */
unsigned int cluster_last_port(const struct cluster *c);
/* Site r of shard n's name: "shardN", "shardN-b", "shardN-c" (its
 * [popstore.NAME] section, its log and pid file). */
void cluster_site_name(unsigned int n, unsigned int r, char *out, size_t size);
/* Site r of shard n's Berkeley DB environment: DIR/store-NAME; caller frees. */
char *cluster_site_home(const struct cluster *c, unsigned int n, unsigned int r);

enum daemon_kind { DAEMON_SLAPD, DAEMON_STORE, DAEMON_MTA, DAEMON_MMP };

struct daemon_port {
	const char *label;
	unsigned int port;
};

struct cluster_daemon {
	char name[24];
	enum daemon_kind kind;
	unsigned int shard;	/* DAEMON_STORE: the shard; DAEMON_SLAPD: the provider */
	unsigned int site;	/* DAEMON_STORE: the site of the shard (0-based) */
	unsigned int repl_port;	/* DAEMON_STORE with replicas: replication_listen */
	struct daemon_port ports[4];
	size_t n_ports;
	unsigned int metrics_port;	/* 0: it has none (slapd) */
};

/* Every daemon of the cluster, in start order (at most
 * CLUSTER_MAX_DAEMONS); returns how many. ctl-cluster.c. */
size_t cluster_daemons(const struct cluster *c, struct cluster_daemon *out);

/* What the daemons' /metrics say (ctl-cluster-metrics.c): one line of
 * d's counters for `cluster status` (appended to out), and `cluster top`,
 * a per-daemon view every interval_s seconds, count frames (0: until
 * interrupted). */
struct ctl_metrics;
struct ctl_metrics_target;
void cluster_metrics_summary(struct mt_buf *out, const struct cluster_daemon *d,
			     const struct ctl_metrics *m);
int cluster_top(const struct cluster *c, double interval_s, unsigned long count);
/* A store site's replication as its metrics say (the
 * mailtier_store_replication_* families). */
struct cluster_repl {
	bool known;		/* the role gauge is there: replication is on */
	const char *role;	/* "master", "replica" or "none" */
	char master[280];	/* the master's replication HOST:PORT; "" if none known */
	unsigned int sites, connected;	/* in the group; remote sites connected */
	double generation, elections, master_changes, perm_failed, internal_inits;
	double log_position;	/* the end of its log, bytes (see popstore-metrics.c) */
	bool startup_done;
};
void cluster_metrics_repl(const struct ctl_metrics *m, struct cluster_repl *out);
/* Scrape every one of d[0..n) that has a metrics port, at once, into
 * targets[i] (ctl_metrics_target_clear each after; one without a port is
 * left empty: neither ok nor an error). */
void cluster_metrics_scrape(const struct cluster_daemon *d, size_t n,
			    struct ctl_metrics_target *targets);

/* DIR/NAME; caller frees. */
char *cluster_path(const struct cluster *c, const char *name);
/* Provider k's state directory: DIR/directory for 1, DIR/directoryK for
 * the others; caller frees. */
char *cluster_directory_path(const struct cluster *c, unsigned int k);
/* "ldap://127.0.0.1:PORT/" of every provider, space-separated, in order
 * (the [directory] uris: writes go to the first that is up). */
void cluster_append_ldap_uris(struct mt_buf *out, const struct cluster *c);

/* Create DIR and its subdirectories, the TLS certificate and the proxy
 * secret when missing. */
bool cluster_prepare_dir(const struct cluster *c, char **error_r);
/* Write DIR/mailtier.conf unless it exists; true if it is there after. */
bool cluster_write_config(const struct cluster *c, char **error_r);
/* Write DIR/endpoints.env and DIR/prometheus.yml (always: they are
 * derived, never edited). */
bool cluster_write_endpoints(const struct cluster *c, char **error_r);
/* Read DIR/endpoints.env back into c (dir set by the caller). false if
 * there is none; *error_r set if it is there but unreadable. */
bool cluster_load_endpoints(struct cluster *c, char **error_r);
/* "none", "rspamd" (by enum cluster_milter; NULL-terminated), and a
 * name's value. */
extern const char *const cluster_milter_names[];
bool cluster_milter_parse(const char *text, enum cluster_milter *out);
void cluster_free(struct cluster *c);

/* The rspamd milter (ctl-cluster-rspamd.c): Debian's rspamd with its own
 * config and state in DIR/rspamd/, its proxy worker in milter mode on
 * 127.0.0.1:P+8, run as _rspamd when we are root. It is not one of
 * cluster_daemons() (it has no /metrics of ours and does not notify):
 * `cluster up` starts it before the MTA, `down` stops it after. */

/* A --dns value: IPv4:PORT or [IPv6]:PORT. */
bool cluster_dns_valid(const char *text);
/* Before anything starts: rspamd, its config and (as root) its user are
 * there, and DIR suits it. */
bool cluster_rspamd_check(const struct cluster *c, char **error_r);
/* Write DIR/rspamd/ (every `up`: derived, like endpoints.env). */
bool cluster_rspamd_write(const struct cluster *c, char **error_r);
/* The running rspamd's pid (DIR/run/rspamd.pid), or 0. */
pid_t cluster_rspamd_pid(const struct cluster *c);
/* Start rspamd and wait until its milter answers; its pid, or 0 after a
 * message on stderr. */
pid_t cluster_rspamd_start(const struct cluster *c, unsigned int timeout_ms);
/* Stop rspamd (SIGTERM, then what is left of its process group);
 * false if it had to be killed. */
bool cluster_rspamd_stop(const struct cluster *c, pid_t pid, unsigned int timeout_ms);

#endif
