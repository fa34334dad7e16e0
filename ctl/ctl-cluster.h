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
 * DIR/store-shardN/   each shard's Berkeley DB environment
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
 * 2 and 3 (cluster_ldap_port; provider 1 is P). */
#ifndef MT_CTL_CLUSTER_H
#define MT_CTL_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct mt_buf;

#define CLUSTER_MAX_SHARDS 40
/* slapd providers of the directory (multi-provider delta-syncrepl). */
#define CLUSTER_MAX_PROVIDERS 3
/* Every daemon: the providers, the shards, the MTA and the MMP. */
#define CLUSTER_MAX_DAEMONS (CLUSTER_MAX_PROVIDERS + CLUSTER_MAX_SHARDS + 2)

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

enum daemon_kind { DAEMON_SLAPD, DAEMON_STORE, DAEMON_MTA, DAEMON_MMP };

struct daemon_port {
	const char *label;
	unsigned int port;
};

struct cluster_daemon {
	char name[24];
	enum daemon_kind kind;
	unsigned int shard;	/* DAEMON_STORE: the shard; DAEMON_SLAPD: the provider */
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
