/* ctl-cluster-files.c — the files of a local cluster (see ctl-cluster.h):
 * its directory tree, the self-signed certificate, the proxy secret, the
 * generated mailtier.conf, endpoints.env (written and read back) and
 * prometheus.yml.
 *
 * Trust boundary: the operator's command line and files this tool wrote;
 * endpoints.env is parsed strictly (KEY=value lines with values we write:
 * no quoting, no expansion). */
#include "ctl-cluster.h"
#include "alloc.h"
#include "buf.h"
#include "ctl-util.h"
#include "slapd-config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *cluster_path(const struct cluster *c, const char *name)
{
	return mt_xasprintf("%s/%s", c->dir, name);
}

char *cluster_directory_path(const struct cluster *c, unsigned int k)
{
	if (k <= 1)
		return cluster_path(c, "directory");
	return mt_xasprintf("%s/directory%u", c->dir, k);
}

void cluster_append_ldap_uris(struct mt_buf *out, const struct cluster *c)
{
	for (unsigned int k = 1; k <= c->directory_providers || k == 1; k++)
		mt_buf_appendf(out, "%sldap://127.0.0.1:%u/", k > 1 ? " " : "",
			       cluster_ldap_port(c, k));
}

/* The first port after provider 3's (the extra sites' block). */
static unsigned int sites_base(const struct cluster *c)
{
	return cluster_ldap_port(c, CLUSTER_MAX_PROVIDERS) + 1;
}

unsigned int cluster_site_port(const struct cluster *c, unsigned int n, unsigned int r,
			       enum cluster_site_port which)
{
	unsigned int q = sites_base(c);
	if (which == CLUSTER_SITE_REPLICATION)
		return q + CLUSTER_MAX_SITES * (n - 1) + r;
	if (r == 0) {
		switch (which) {
		case CLUSTER_SITE_LMTP: return cluster_shard_lmtp(c, n);
		case CLUSTER_SITE_POP3: return cluster_shard_pop3(c, n);
		case CLUSTER_SITE_IMAP: return cluster_shard_imap(c, n);
		case CLUSTER_SITE_METRICS:
			return cluster_metrics_port(c, CLUSTER_METRICS_MMP + n);
		case CLUSTER_SITE_REPLICATION: break;
		}
	}
	/* Four ports (LMTP, POP3, IMAP, metrics) for each site after the first. */
	unsigned int extra = (CLUSTER_MAX_SITES - 1) * (n - 1) + (r - 1);
	return q + CLUSTER_MAX_SITES * c->shards + 4 * extra + (unsigned int)which;
}

unsigned int cluster_last_port(const struct cluster *c)
{
	if (c->replicas <= 1) {
		unsigned int metrics = cluster_metrics_port(c, CLUSTER_METRICS_MMP + c->shards);
		unsigned int ldap = cluster_ldap_port(c, c->directory_providers);
		return ldap > metrics ? ldap : metrics;
	}
	return cluster_site_port(c, c->shards, CLUSTER_MAX_SITES - 1, CLUSTER_SITE_METRICS);
}

void cluster_site_name(unsigned int n, unsigned int r, char *out, size_t size)
{
	if (r == 0)
		snprintf(out, size, "shard%u", n);
	else
		snprintf(out, size, "shard%u-%c", n, 'a' + (int)r);
}

char *cluster_site_home(const struct cluster *c, unsigned int n, unsigned int r)
{
	char name[32];
	cluster_site_name(n, r, name, sizeof(name));
	return mt_xasprintf("%s/store-%s", c->dir, name);
}

static bool make_dir(const struct cluster *c, const char *name, char **error_r)
{
	char *path = name[0] == '\0' ? mt_xstrdup(c->dir) : cluster_path(c, name);
	bool ok = mkdir(path, 0700) == 0 || errno == EEXIST;
	if (!ok)
		*error_r = mt_xasprintf("%s: cannot create: %s", path, strerror(errno));
	free(path);
	return ok;
}

static bool exists(const struct cluster *c, const char *name)
{
	char *path = cluster_path(c, name);
	bool found = access(path, F_OK) == 0;
	free(path);
	return found;
}

static bool make_certificate(const struct cluster *c, char **error_r)
{
	if (exists(c, "tls/cert.pem") && exists(c, "tls/key.pem"))
		return true;
	char *cert = cluster_path(c, "tls/cert.pem");
	char *key = cluster_path(c, "tls/key.pem");
	char *const argv[] = { "openssl", "req", "-x509", "-newkey", "ec",
		"-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "3650",
		"-subj", "/CN=localhost", "-addext",
		"subjectAltName=DNS:localhost,IP:127.0.0.1",
		"-keyout", key, "-out", cert, NULL };
	char *log = cluster_path(c, "log/openssl.log");
	bool ok = ctl_run_logged(argv, log) == 0;
	if (!ok)
		*error_r = mt_xasprintf("openssl req could not make %s (see %s)", cert, log);
	free(log);
	free(cert);
	free(key);
	return ok;
}

bool cluster_prepare_dir(const struct cluster *c, char **error_r)
{
	static const char *const dirs[] = { "", "log", "run", "tls", "queue", "directory" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!make_dir(c, dirs[i], error_r))
			return false;
	}
	for (unsigned int n = 1; n <= c->shards; n++) {
		for (unsigned int r = 0; r < c->replicas; r++) {
			char site[32], name[40];
			cluster_site_name(n, r, site, sizeof(site));
			snprintf(name, sizeof(name), "store-%s", site);
			if (!make_dir(c, name, error_r))
				return false;
		}
	}
	for (unsigned int k = 2; k <= c->directory_providers; k++) {
		char name[32];
		snprintf(name, sizeof(name), "directory%u", k);
		if (!make_dir(c, name, error_r))
			return false;
	}
	if (!exists(c, "proxy.secret")) {
		char *path = cluster_path(c, "proxy.secret");
		char *secret = ctl_random_password();
		const char *error;
		bool ok = ctl_write_private(path, secret, &error);
		if (!ok)
			*error_r = mt_xasprintf("%s: %s", path, error);
		free(secret);
		free(path);
		if (!ok)
			return false;
	}
	return make_certificate(c, error_r);
}

static void append_directory(struct mt_buf *conf, const struct cluster *c,
			     const char *suffix, const char *service_dn)
{
	struct mt_buf uris = MT_BUF_INIT;
	cluster_append_ldap_uris(&uris, c);
	mt_buf_appendf(conf, "[directory]\n");
	if (c->directory_providers > 1)
		mt_buf_appendf(conf,
			"# %u slapd providers in multi-provider replication, in\n"
			"# %s/directory, directory2...: reads fail over between them,\n"
			"# changes go to the first that is up (dirsvc/README.md).\n",
			c->directory_providers, c->dir);
	else
		mt_buf_appendf(conf,
			"# The local slapd in %s/directory (mailtierctl directory up).\n",
			c->dir);
	mt_buf_appendf(conf,
		"uris = %s\nbase_dn = ou=people,%s\nbind_dn = %s\n"
		"bind_password_file = %s/directory/service.secret\nauth_method = hash\n"
		"admin_dn = cn=admin,%s\nadmin_password_file = %s/directory/admin.secret\n"
		"local_slapd_dir = %s/directory\n\n",
		mt_buf_cstr(&uris), suffix, service_dn, c->dir, suffix, c->dir, c->dir);
	mt_buf_free(&uris);
}

static void append_mta(struct mt_buf *conf, const struct cluster *c)
{
	mt_buf_appendf(conf,
		"[mta]\nsmtp_listen = 127.0.0.1:%u\nsubmission_listen = 127.0.0.1:%u\n"
		"submissions_listen = 127.0.0.1:%u\nhostname = mta.%s\nlocal_domains = %s\n"
		"mynetworks = 127.0.0.0/8 ::1/128\n"
		"# A local cluster never sends mail off this machine: every remote\n"
		"# domain goes to the sink (mailtier-load --sink-listen %s).\n"
		"relayhost = %s\ntransport_map = %s=%s\nqueue_dir = %s/queue\n"
		"retry_schedule = 30s 1m 5m 15m\nmax_queue_lifetime = 1d\n"
		"# The load generator is one client address (127.0.0.1): room for\n"
		"# its sessions (default 50 an address).\n"
		"max_sessions_per_client = 1000\n"
		"metrics_listen = 127.0.0.1:%u\n",
		cluster_port(c, CLUSTER_PORT_SMTP), cluster_port(c, CLUSTER_PORT_SUBMISSION),
		cluster_port(c, CLUSTER_PORT_SUBMISSIONS), c->domain, c->domain,
		c->sink, c->sink, c->remote_domain, c->sink, c->dir,
		cluster_metrics_port(c, CLUSTER_METRICS_MTA));
	if (c->milter == CLUSTER_MILTER_RSPAMD)
		mt_buf_appendf(conf,
			"# rspamd (`cluster up --milter rspamd`: its files in %s/rspamd/,\n"
			"# its log in log/rspamd.log) checks every message on the SMTP and\n"
			"# submission listeners: spam, SPF, DKIM, DMARC.\n"
			"smtpd_milters = rspamd\nsubmission_milters = rspamd\n\n"
			"[milter.rspamd]\n"
			"# rspamd's proxy worker in milter mode, started by `cluster up`.\n"
			"address = inet:127.0.0.1:%u\n",
			c->dir, cluster_port(c, CLUSTER_PORT_MILTER));
	mt_buf_append_char(conf, '\n');
}

static void append_mmp(struct mt_buf *conf, const struct cluster *c)
{
	mt_buf_appendf(conf,
		"[mmp]\npop3_listen = 127.0.0.1:%u\npop3s_listen = 127.0.0.1:%u\n"
		"imap_listen = 127.0.0.1:%u\nimaps_listen = 127.0.0.1:%u\n"
		"threads = 2\n"
		"# The load generator is one client address: room for its sessions\n"
		"# (default 100 an address; IMAP sessions stay logged in, some 38 per\n"
		"# msgs/min of the IMAP workload).\n"
		"conn_limit_per_client = 9000\n"
		"# Everything listens on 127.0.0.1 only, and the load generator logs\n"
		"# in with USER/PASS (LOGIN) without TLS. Say no on anything reachable.\n"
		"allow_plaintext_auth = yes\n"
		"proxy_password_file = %s/proxy.secret\nstats_interval = 10s\n"
		"metrics_listen = 127.0.0.1:%u\n\n",
		cluster_port(c, CLUSTER_PORT_POP3), cluster_port(c, CLUSTER_PORT_POP3S),
		cluster_port(c, CLUSTER_PORT_IMAP), cluster_port(c, CLUSTER_PORT_IMAPS), c->dir,
		cluster_metrics_port(c, CLUSTER_METRICS_MMP));
}

/* "127.0.0.1:L, 127.0.0.1:P, 127.0.0.1:I" of site r of shard n: its
 * [shards] entry. */
static void append_site_route(struct mt_buf *out, const struct cluster *c, unsigned int n,
			      unsigned int r)
{
	mt_buf_appendf(out, "127.0.0.1:%u, 127.0.0.1:%u, 127.0.0.1:%u",
		       cluster_site_port(c, n, r, CLUSTER_SITE_LMTP),
		       cluster_site_port(c, n, r, CLUSTER_SITE_POP3),
		       cluster_site_port(c, n, r, CLUSTER_SITE_IMAP));
}

static void append_shards(struct mt_buf *conf, const struct cluster *c)
{
	mt_buf_appendf(conf, "[shards]\n");
	if (c->replicas > 1)
		mt_buf_appendf(conf,
			"# Each shard is a replication group of %u store sites, separated\n"
			"# by '|': the MTA and the MMP try them in turn and follow the master.\n",
			c->replicas);
	for (unsigned int n = 1; n <= c->shards; n++) {
		mt_buf_appendf(conf, "shard%u = ", n);
		for (unsigned int r = 0; r < c->replicas; r++) {
			if (r > 0)
				mt_buf_append_str(conf, " | ");
			append_site_route(conf, c, n, r);
		}
		mt_buf_append_char(conf, '\n');
	}
	mt_buf_append_char(conf, '\n');
}

/* [popstore.NAME] of site r of shard n; with replicas, its replication
 * keys (every site of the group in replication_sites, the same list on
 * each). */
static void append_site(struct mt_buf *conf, const struct cluster *c, unsigned int n,
			unsigned int r)
{
	char name[32];
	cluster_site_name(n, r, name, sizeof(name));
	char *home = cluster_site_home(c, n, r);
	mt_buf_appendf(conf, "[popstore.%s]\n", name);
	if (c->replicas > 1)
		mt_buf_appendf(conf, "shard = shard%u\n", n);
	mt_buf_appendf(conf,
		"db_home = %s\nlmtp_listen = 127.0.0.1:%u\npop3_listen = 127.0.0.1:%u\n"
		"imap_listen = 127.0.0.1:%u\nmetrics_listen = 127.0.0.1:%u\n",
		home, cluster_site_port(c, n, r, CLUSTER_SITE_LMTP),
		cluster_site_port(c, n, r, CLUSTER_SITE_POP3),
		cluster_site_port(c, n, r, CLUSTER_SITE_IMAP),
		cluster_site_port(c, n, r, CLUSTER_SITE_METRICS));
	if (c->replicas > 1) {
		mt_buf_appendf(conf, "replication_listen = 127.0.0.1:%u\nreplication_sites =",
			       cluster_site_port(c, n, r, CLUSTER_SITE_REPLICATION));
		for (unsigned int k = 0; k < c->replicas; k++)
			mt_buf_appendf(conf, " 127.0.0.1:%u",
				       cluster_site_port(c, n, k, CLUSTER_SITE_REPLICATION));
		mt_buf_append_char(conf, '\n');
	}
	mt_buf_append_char(conf, '\n');
	free(home);
}

static void append_stores(struct mt_buf *conf, const struct cluster *c)
{
	mt_buf_appendf(conf,
		"[popstore]\n# Shared by every shard; [popstore.NAME] adds each one's own.\n"
		"db_cache_size = 64M\nlmtp_clients = 127.0.0.0/8 ::1/128\n"
		"proxy_addresses = 127.0.0.0/8 ::1/128\n"
		"proxy_password_file = %s/proxy.secret\nallow_plaintext_auth = yes\n"
		"# Room for the IMAP workload's logged-in sessions (default 1000).\n"
		"max_sessions = 10000\n"
		"stats_interval = 10s\n\n", c->dir);
	if (c->replicas > 1)
		mt_buf_appendf(conf,
			"# shardN, shardN-b and shardN-c are the %u sites of shard N, each\n"
			"# its own Berkeley DB environment, joined by Berkeley DB replication\n"
			"# on their replication_listen ports (plaintext: loopback here, a\n"
			"# private network between hosts). One is master, the others replicas.\n\n",
			c->replicas);
	for (unsigned int n = 1; n <= c->shards; n++) {
		for (unsigned int r = 0; r < c->replicas; r++)
			append_site(conf, c, n, r);
	}
}

bool cluster_write_config(const struct cluster *c, char **error_r)
{
	if (exists(c, "mailtier.conf"))
		return true;
	char *suffix = NULL, *admin_dn = NULL, *service_dn = NULL;
	const char *error;
	if (!mt_slapd_default_dns(c->domain, &suffix, &admin_dn, &service_dn, &error)) {
		*error_r = mt_xasprintf("--domain %s: %s", c->domain, error);
		return false;
	}
	struct mt_buf conf = MT_BUF_INIT;
	mt_buf_appendf(&conf,
		"# %s/mailtier.conf — written by `mailtierctl cluster up`: a local\n"
		"# cluster on 127.0.0.1. Edit it and run `cluster down` and `cluster up`\n"
		"# to apply; `mailtierctl -c %s/mailtier.conf config check` checks it.\n\n"
		"[global]\n# Run as whoever started the cluster.\nuser =\ngroup =\n"
		"log_level = info\ndrain_timeout = 10s\n\n",
		c->dir, c->dir);
	append_directory(&conf, c, suffix, service_dn);
	append_shards(&conf, c);
	mt_buf_appendf(&conf, "[tls]\ncert_file = %s/tls/cert.pem\nkey_file = %s/tls/key.pem\n\n",
		       c->dir, c->dir);
	append_mta(&conf, c);
	append_mmp(&conf, c);
	append_stores(&conf, c);
	mt_buf_appendf(&conf,
		"[loadgen]\n# mailtier-load run --config %s/mailtier.conf aims at this cluster.\n"
		"smtp = 127.0.0.1:%u\npop = 127.0.0.1:%u\n"
		"# --protocol imap|mixed: IMAP through the MMP.\nimap = 127.0.0.1:%u\n"
		"submission = 127.0.0.1:%u\n"
		"sink_listen = %s\nusers = %lu\ndomain = %s\nremote_domain = %s\n",
		c->dir, cluster_port(c, CLUSTER_PORT_SMTP), cluster_port(c, CLUSTER_PORT_POP3),
		cluster_port(c, CLUSTER_PORT_IMAP), cluster_port(c, CLUSTER_PORT_SUBMISSION),
		c->sink, c->users, c->domain, c->remote_domain);
	char *path = cluster_path(c, "mailtier.conf");
	bool ok = ctl_write_private(path, mt_buf_cstr(&conf), &error);
	if (!ok)
		*error_r = mt_xasprintf("%s: cannot write: %s", path, error);
	free(path);
	mt_buf_free(&conf);
	free(suffix);
	free(admin_dn);
	free(service_dn);
	return ok;
}

/* The shipped alert rules: installed as $(pkgdatadir)/prometheus/, in a
 * source tree under packaging/. NULL if neither is there. */
static char *alert_rules_path(void)
{
	static const char *const names[] = {
		"prometheus/mailtier-alerts.yml", "packaging/prometheus/mailtier-alerts.yml",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *path = ctl_data_path(names[i]);
		if (access(path, R_OK) == 0)
			return path;
		free(path);
	}
	return NULL;
}

/* text as a YAML single-quoted scalar (a quote doubled, nothing else
 * escaped). */
static void append_yaml_quoted(struct mt_buf *out, const char *text)
{
	mt_buf_append_char(out, '\'');
	for (; *text != '\0'; text++) {
		if (*text == '\'')
			mt_buf_append_char(out, '\'');
		mt_buf_append_char(out, *text);
	}
	mt_buf_append_char(out, '\'');
}

static void append_scrape_job(struct mt_buf *out, const char *job, unsigned int port)
{
	mt_buf_appendf(out, "  - job_name: %s\n    static_configs:\n"
		       "      - targets: ['127.0.0.1:%u']\n", job, port);
}

/* DIR/prometheus.yml: a Prometheus scraping every daemon of the cluster
 * (job mta, mmp, shardN) with mailtier's alert rules loaded. */
static bool write_prometheus_config(const struct cluster *c, char **error_r)
{
	struct mt_buf yml = MT_BUF_INIT;
	mt_buf_appendf(&yml,
		"# Written by `mailtierctl cluster up`: scrapes every daemon of the\n"
		"# cluster in %s.\n"
		"# Use with:  prometheus --config.file %s/prometheus.yml\n"
		"global:\n  scrape_interval: 5s\n  scrape_timeout: 4s\n"
		"  evaluation_interval: 5s\n",
		c->dir, c->dir);
	char *rules = alert_rules_path();
	if (rules != NULL) {
		mt_buf_appendf(&yml, "rule_files:\n  - ");
		append_yaml_quoted(&yml, rules);
		mt_buf_appendf(&yml, "\n");
	} else {
		mt_buf_appendf(&yml, "# prometheus/mailtier-alerts.yml was not found.\n"
			       "rule_files: []\n");
	}
	mt_buf_appendf(&yml, "scrape_configs:\n");
	append_scrape_job(&yml, "mta", cluster_metrics_port(c, CLUSTER_METRICS_MTA));
	append_scrape_job(&yml, "mmp", cluster_metrics_port(c, CLUSTER_METRICS_MMP));
	for (unsigned int n = 1; n <= c->shards; n++) {
		char job[32];
		snprintf(job, sizeof(job), "shard%u", n);
		if (c->replicas <= 1) {
			append_scrape_job(&yml, job, cluster_metrics_port(c, CLUSTER_METRICS_MMP + n));
			continue;
		}
		/* One job a shard, one target a site, labelled with its name:
		 * the replication alerts count a shard's masters by job. */
		mt_buf_appendf(&yml, "  - job_name: %s\n    static_configs:\n", job);
		for (unsigned int r = 0; r < c->replicas; r++) {
			char site[32];
			cluster_site_name(n, r, site, sizeof(site));
			mt_buf_appendf(&yml, "      - targets: ['127.0.0.1:%u']\n"
				       "        labels: {site: '%s'}\n",
				       cluster_site_port(c, n, r, CLUSTER_SITE_METRICS), site);
		}
	}
	char *path = cluster_path(c, "prometheus.yml");
	const char *error;
	bool ok = ctl_write_private(path, mt_buf_cstr(&yml), &error);
	if (!ok)
		*error_r = mt_xasprintf("%s: cannot write: %s", path, error);
	free(path);
	free(rules);
	mt_buf_free(&yml);
	return ok;
}

/* SHARDn_SITES (the names) and, for each site, SITE_LMTP_PORT,
 * SITE_POP3_PORT, SITE_IMAP_PORT, SITE_METRICS_PORT and
 * SITE_REPLICATION_PORT with SITE its name in capitals, '-' as '_'
 * (SHARD1_B_LMTP_PORT). */
static void append_site_env(struct mt_buf *env, const struct cluster *c, unsigned int n)
{
	static const char *const keys[] = { "LMTP", "POP3", "IMAP", "METRICS", "REPLICATION" };
	mt_buf_appendf(env, "SHARD%u_SITES=", n);
	for (unsigned int r = 0; r < c->replicas; r++) {
		char name[32];
		cluster_site_name(n, r, name, sizeof(name));
		mt_buf_appendf(env, "%s%s", r > 0 ? "," : "", name);
	}
	mt_buf_append_char(env, '\n');
	for (unsigned int r = 0; r < c->replicas; r++) {
		char name[32];
		cluster_site_name(n, r, name, sizeof(name));
		for (char *p = name; *p != '\0'; p++)
			*p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
		for (unsigned int k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			if (r == 0 && k < CLUSTER_SITE_REPLICATION)
				continue;	/* SHARDn_LMTP_PORT ... are there */
			mt_buf_appendf(env, "%s_%s_PORT=%u\n", name, keys[k],
				       cluster_site_port(c, n, r, (enum cluster_site_port)k));
		}
	}
}

bool cluster_write_endpoints(const struct cluster *c, char **error_r)
{
	struct mt_buf env = MT_BUF_INIT;
	mt_buf_appendf(&env,
		"# Written by `mailtierctl cluster up`: the cluster in %s.\n"
		"# Use with:  . %s/endpoints.env\n"
		"CONF=%s/mailtier.conf\nDOMAIN=%s\nREMOTE_DOMAIN=%s\nSINK=%s\n"
		"SMTP_PORT=%u\nSUBMISSION_PORT=%u\nSUBMISSIONS_PORT=%u\n"
		"POP3_PORT=%u\nPOP3S_PORT=%u\nIMAP_PORT=%u\nIMAPS_PORT=%u\n"
		"LDAP_URI=ldap://127.0.0.1:%u/\n"
		"SHARDS=%u\nUSERS=%lu\nBASE_PORT=%u\n"
		"MTA_METRICS_PORT=%u\nMMP_METRICS_PORT=%u\n",
		c->dir, c->dir, c->dir, c->domain, c->remote_domain, c->sink,
		cluster_port(c, CLUSTER_PORT_SMTP), cluster_port(c, CLUSTER_PORT_SUBMISSION),
		cluster_port(c, CLUSTER_PORT_SUBMISSIONS), cluster_port(c, CLUSTER_PORT_POP3),
		cluster_port(c, CLUSTER_PORT_POP3S), cluster_port(c, CLUSTER_PORT_IMAP),
		cluster_port(c, CLUSTER_PORT_IMAPS), cluster_port(c, CLUSTER_PORT_LDAP),
		c->shards, c->users, c->base_port,
		cluster_metrics_port(c, CLUSTER_METRICS_MTA),
		cluster_metrics_port(c, CLUSTER_METRICS_MMP));
	if (c->directory_providers > 1) {
		mt_buf_appendf(&env, "DIRECTORY_PROVIDERS=%u\n", c->directory_providers);
		for (unsigned int k = 2; k <= c->directory_providers; k++)
			mt_buf_appendf(&env, "LDAP%u_URI=ldap://127.0.0.1:%u/\n", k,
				       cluster_ldap_port(c, k));
	}
	if (c->replicas > 1) {
		/* SHARDn_* above are the first site's; each site's own here. */
		mt_buf_appendf(&env, "REPLICAS=%u\n", c->replicas);
		for (unsigned int n = 1; n <= c->shards; n++)
			append_site_env(&env, c, n);
	}
	mt_buf_appendf(&env, "MILTER=%s\n", cluster_milter_names[c->milter]);
	if (c->milter == CLUSTER_MILTER_RSPAMD)
		mt_buf_appendf(&env, "MILTER_PORT=%u\nDNS=%s\n", cluster_port(c, CLUSTER_PORT_MILTER),
			       c->dns != NULL ? c->dns : "");
	for (unsigned int n = 1; n <= c->shards; n++)
		mt_buf_appendf(&env, "SHARD%u_LMTP_PORT=%u\nSHARD%u_POP3_PORT=%u\n"
			       "SHARD%u_IMAP_PORT=%u\nSHARD%u_METRICS_PORT=%u\n",
			       n, cluster_shard_lmtp(c, n), n, cluster_shard_pop3(c, n),
			       n, cluster_shard_imap(c, n),
			       n, cluster_metrics_port(c, CLUSTER_METRICS_MMP + n));
	char *path = cluster_path(c, "endpoints.env");
	const char *error;
	bool ok = ctl_write_private(path, mt_buf_cstr(&env), &error);
	if (!ok)
		*error_r = mt_xasprintf("%s: cannot write: %s", path, error);
	free(path);
	mt_buf_free(&env);
	return ok && write_prometheus_config(c, error_r);
}

static void replace(char **field, const char *value)
{
	free(*field);
	*field = mt_xstrdup(value);
}

static bool parse_uint(const char *text, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v > max || text[0] == '-')
		return false;
	*out = v;
	return true;
}

const char *const cluster_milter_names[] = { "none", "rspamd", NULL };

bool cluster_milter_parse(const char *text, enum cluster_milter *out)
{
	for (unsigned int i = 0; cluster_milter_names[i] != NULL; i++) {
		if (strcmp(text, cluster_milter_names[i]) == 0) {
			*out = (enum cluster_milter)i;
			return true;
		}
	}
	return false;
}

bool cluster_load_endpoints(struct cluster *c, char **error_r)
{
	char *path = cluster_path(c, "endpoints.env");
	const char *error;
	char *text = ctl_read_file(path, &error);
	if (text == NULL) {
		free(path);
		return false;
	}
	unsigned long shards = 0, users = 0, base = 0, providers = 1, replicas = 1;
	bool ok = true;
	unsigned int lineno = 0;
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line != NULL && ok;
	     line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		char *eq = strchr(line, '=');
		if (line[0] == '#' || eq == NULL)
			continue;
		*eq = '\0';
		const char *key = line, *value = eq + 1;
		if (strcmp(key, "SHARDS") == 0)
			ok = parse_uint(value, CLUSTER_MAX_SHARDS, &shards);
		else if (strcmp(key, "USERS") == 0)
			ok = parse_uint(value, 100000000, &users);
		else if (strcmp(key, "BASE_PORT") == 0)
			ok = parse_uint(value, 65535, &base);
		else if (strcmp(key, "DOMAIN") == 0)
			replace(&c->domain, value);
		else if (strcmp(key, "REMOTE_DOMAIN") == 0)
			replace(&c->remote_domain, value);
		else if (strcmp(key, "SINK") == 0)
			replace(&c->sink, value);
		else if (strcmp(key, "MILTER") == 0)
			ok = cluster_milter_parse(value, &c->milter);
		else if (strcmp(key, "DIRECTORY_PROVIDERS") == 0)
			ok = parse_uint(value, CLUSTER_MAX_PROVIDERS, &providers) &&
				providers >= 1;
		else if (strcmp(key, "REPLICAS") == 0)
			ok = parse_uint(value, CLUSTER_MAX_SITES, &replicas) &&
				(replicas == 1 || replicas == CLUSTER_MAX_SITES);
		else if (strcmp(key, "DNS") == 0 && value[0] != '\0')
			replace(&c->dns, value);
		if (!ok)
			*error_r = mt_xasprintf("%s:%u: bad value for %s", path, lineno, key);
	}
	if (ok && (shards == 0 || base == 0 || c->domain == NULL ||
		   c->remote_domain == NULL || c->sink == NULL)) {
		*error_r = mt_xasprintf("%s: incomplete (SHARDS, BASE_PORT, DOMAIN, "
					"REMOTE_DOMAIN and SINK are needed)", path);
		ok = false;
	}
	c->shards = (unsigned int)shards;
	c->users = users;
	c->base_port = (unsigned int)base;
	c->directory_providers = (unsigned int)providers;
	c->replicas = (unsigned int)replicas;
	free(text);
	free(path);
	return ok;
}

void cluster_free(struct cluster *c)
{
	free(c->dir);
	free(c->domain);
	free(c->remote_domain);
	free(c->sink);
	free(c->dns);
	*c = (struct cluster){ 0 };
}
