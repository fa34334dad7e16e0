/* ctl-cluster-metrics.c — the cluster's daemons as their /metrics
 * endpoints describe them: the counters line under each daemon in
 * `mailtierctl cluster status`, and `mailtierctl cluster top`, a compact
 * per-daemon view refreshed in the terminal with rates over the interval
 * (like top(1); ANSI clear-screen only when stdout is a terminal).
 *
 * Every figure is a metric the daemon exports (README "Metrics and
 * monitoring" lists them); nothing is read from log lines.
 *
 * Trust boundary: the metrics come from the cluster's daemons over
 * loopback, parsed as untrusted text (ctl-metrics-parse.c); the operator
 * gives the interval and the frame count. */
#include "ctl-cluster.h"
#include "ctl-metrics.h"
#include "ctl.h"
#include "buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SCRAPE_TIMEOUT_MS 3000u

static double sum(const struct ctl_metrics *m, const char *name, const char *match)
{
	return ctl_metrics_sum(m, name, match, NULL);
}

static void sum_found(const struct ctl_metrics *m, const char *name, bool *found_r)
{
	ctl_metrics_sum(m, name, NULL, found_r);
}

static void append_bytes(struct mt_buf *out, double bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	size_t u = 0;
	while (bytes >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		mt_buf_appendf(out, "%.0f B", bytes);
	else
		mt_buf_appendf(out, "%.1f %s", bytes, units[u]);
}

/* "name=N" for each value of one label of a family, in exposition order. */
static void append_by_label(struct mt_buf *out, const struct ctl_metrics *m, const char *name,
			    const char *label)
{
	bool first = true;
	for (size_t i = 0; i < m->n_samples; i++) {
		const struct ctl_metric_sample *s = &m->samples[i];
		if (strcmp(s->name, name) != 0)
			continue;
		for (size_t l = 0; l < s->n_labels; l++) {
			if (strcmp(s->labels[l].name, label) == 0) {
				mt_buf_appendf(out, "%s%s=%.0f", first ? "" : " ", s->labels[l].value,
					       s->value);
				first = false;
			}
		}
	}
}

static void append_process(struct mt_buf *out, const struct ctl_metrics *m)
{
	mt_buf_appendf(out, "; cpu %.2f s, rss ", sum(m, "process_cpu_seconds_total", NULL));
	append_bytes(out, sum(m, "process_resident_memory_bytes", NULL));
	mt_buf_appendf(out, ", fds %.0f", sum(m, "process_open_fds", NULL));
}

/* Shards the MMP sees up, and all it routes to (series shard × protocol). */
static void shards_up(const struct ctl_metrics *m, unsigned int *up_r, unsigned int *all_r)
{
	*up_r = *all_r = 0;
	for (size_t i = 0; i < m->n_samples; i++) {
		if (strcmp(m->samples[i].name, "mailtier_mmp_shard_up") == 0) {
			(*all_r)++;
			if (m->samples[i].value >= 1)
				(*up_r)++;
		}
	}
}

void cluster_metrics_summary(struct mt_buf *out, const struct cluster_daemon *d,
			     const struct ctl_metrics *m)
{
	if (d->kind == DAEMON_MMP) {
		/* The MMP counts connections, not sessions per listener. */
		mt_buf_appendf(out, "connections %.0f", sum(m, "mailtier_mmp_connections_total", NULL));
	} else {
		mt_buf_append_str(out, "sessions ");
		append_by_label(out, m, "mailtier_sessions_total", "listener");
	}
	mt_buf_appendf(out, ", open %.0f", sum(m, "mailtier_connections_open", NULL));
	switch (d->kind) {
	case DAEMON_MTA:
		mt_buf_appendf(out, "; accepted %.0f, refused %.0f, recipients refused %.0f",
			       sum(m, "mailtier_mta_messages_accepted_total", NULL),
			       sum(m, "mailtier_mta_messages_refused_total", NULL),
			       sum(m, "mailtier_mta_recipients_refused_total", NULL));
		mt_buf_appendf(out, "; queue %.0f, oldest %.0f s",
			       sum(m, "mailtier_mta_queue_messages", NULL),
			       sum(m, "mailtier_mta_queue_oldest_message_age_seconds", NULL));
		mt_buf_appendf(out, "; delivered %.0f, deferred %.0f, bounced %.0f",
			       sum(m, "mailtier_mta_deliveries_total", "result=delivered"),
			       sum(m, "mailtier_mta_deliveries_total", "result=deferred"),
			       sum(m, "mailtier_mta_deliveries_total", "result=bounced"));
		break;
	case DAEMON_MMP: {
		unsigned int up, all;
		shards_up(m, &up, &all);
		mt_buf_appendf(out, ", relaying %.0f; logins ",
			       sum(m, "mailtier_mmp_sessions_relaying", NULL));
		append_by_label(out, m, "mailtier_mmp_logins_total", "result");
		mt_buf_appendf(out, "; shards up %u/%u; relayed ", up, all);
		append_bytes(out, sum(m, "mailtier_mmp_relay_bytes_total", "direction=from_client"));
		mt_buf_append_str(out, " from clients, ");
		append_bytes(out, sum(m, "mailtier_mmp_relay_bytes_total", "direction=to_client"));
		mt_buf_append_str(out, " to clients");
		break;
	}
	case DAEMON_STORE:
		mt_buf_appendf(out, "; deliveries %.0f, duplicates %.0f, stored ",
			       sum(m, "mailtier_popstore_deliveries_total", NULL),
			       sum(m, "mailtier_popstore_duplicates_total", NULL));
		append_bytes(out, sum(m, "mailtier_popstore_stored_bytes_total", NULL));
		mt_buf_append_str(out, "; logins ");
		append_by_label(out, m, "mailtier_popstore_logins_total", "result");
		mt_buf_appendf(out, "; mailboxes open %.0f; disk full %s",
			       sum(m, "mailtier_popstore_mailboxes_open", NULL),
			       sum(m, "mailtier_popstore_disk_full", NULL) >= 1 ? "YES" : "no");
		break;
	case DAEMON_SLAPD:
		break;
	}
	append_process(out, m);
}

/* The value of label `label` of the first sample of name whose value is
 * at least 1 (a gauge set to 1 among zeros); NULL if none. */
static const char *label_of_set(const struct ctl_metrics *m, const char *name, const char *label)
{
	for (size_t i = 0; i < m->n_samples; i++) {
		const struct ctl_metric_sample *s = &m->samples[i];
		if (strcmp(s->name, name) != 0 || !(s->value >= 1))
			continue;
		for (size_t l = 0; l < s->n_labels; l++) {
			if (strcmp(s->labels[l].name, label) == 0)
				return s->labels[l].value;
		}
	}
	return NULL;
}

void cluster_metrics_repl(const struct ctl_metrics *m, struct cluster_repl *out)
{
	*out = (struct cluster_repl){ .role = "none" };
	sum_found(m, "mailtier_store_replication_role", &out->known);
	if (!out->known)
		return;
	const char *role = label_of_set(m, "mailtier_store_replication_role", "role");
	if (role != NULL && strcmp(role, "master") == 0)
		out->role = "master";
	else if (role != NULL && (strcmp(role, "replica") == 0 || strcmp(role, "client") == 0))
		out->role = "replica";
	const char *master = label_of_set(m, "mailtier_store_replication_master_info", "master");
	if (master != NULL)
		snprintf(out->master, sizeof(out->master), "%s", master);
	out->sites = (unsigned int)sum(m, "mailtier_store_replication_sites", NULL);
	out->connected = (unsigned int)sum(m, "mailtier_store_replication_connected_sites", NULL);
	out->generation = sum(m, "mailtier_store_replication_generation", NULL);
	out->startup_done = sum(m, "mailtier_store_replication_startup_done", NULL) >= 1;
	out->elections = sum(m, "mailtier_store_replication_elections_total", NULL);
	out->master_changes = sum(m, "mailtier_store_replication_master_changes_total", NULL);
	out->perm_failed = sum(m, "mailtier_store_replication_perm_failed_total", NULL);
	out->internal_inits = sum(m, "mailtier_store_replication_internal_inits_total", NULL);
	out->log_position = sum(m, "mailtier_store_replication_log_position_bytes", NULL);
}

void cluster_metrics_scrape(const struct cluster_daemon *d, size_t n,
			    struct ctl_metrics_target *targets)
{
	struct ctl_metrics_target *scraped[CLUSTER_MAX_DAEMONS];
	struct ctl_metrics_target list[CLUSTER_MAX_DAEMONS];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		targets[i] = (struct ctl_metrics_target){ .host = "127.0.0.1",
							  .port = d[i].metrics_port };
		if (d[i].metrics_port != 0) {
			scraped[k] = &targets[i];
			list[k++] = targets[i];
		}
	}
	ctl_metrics_scrape(list, k, SCRAPE_TIMEOUT_MS);
	for (size_t i = 0; i < k; i++)
		*scraped[i] = list[i];
}

/* top */

struct top_daemon {
	const struct cluster_daemon *d;
	struct ctl_metrics_target now, before;
};

/* A counter's rate over dt, or NAN when it has no earlier value. */
static double rate(const struct top_daemon *t, const char *name, const char *match, double dt)
{
	if (!t->now.ok || !t->before.ok || dt <= 0)
		return NAN;
	double r = (sum(&t->now.metrics, name, match) - sum(&t->before.metrics, name, match)) / dt;
	return r < 0 ? 0 : r;	/* a restart resets the counter */
}

static void append_rate(struct mt_buf *out, const char *label, double r)
{
	if (isnan(r))
		mt_buf_appendf(out, " %s -", label);
	else
		mt_buf_appendf(out, " %s %.1f", label, r);
}

static void top_row(struct mt_buf *out, const struct top_daemon *t, double dt)
{
	const struct ctl_metrics *m = &t->now.metrics;
	if (!t->now.ok) {
		mt_buf_appendf(out, "%-8s %-4s %s\n", t->d->name, "no", t->now.error);
		return;
	}
	double cpu = rate(t, "process_cpu_seconds_total", NULL, dt);
	struct mt_buf rss = MT_BUF_INIT;
	append_bytes(&rss, sum(m, "process_resident_memory_bytes", NULL));
	mt_buf_appendf(out, "%-8s %-4s ", t->d->name, "yes");
	if (isnan(cpu))
		mt_buf_appendf(out, "%5s", "-");
	else
		mt_buf_appendf(out, "%5.1f", cpu * 100);
	mt_buf_appendf(out, " %10s %5.0f %5.0f", mt_buf_cstr(&rss), sum(m, "process_open_fds", NULL),
		       sum(m, "mailtier_connections_open", NULL));
	mt_buf_free(&rss);
	const char *sessions = t->d->kind == DAEMON_MMP ? "mailtier_mmp_connections_total"
						       : "mailtier_sessions_total";
	double sess = rate(t, sessions, NULL, dt);
	if (isnan(sess))
		mt_buf_appendf(out, " %7s ", "-");
	else
		mt_buf_appendf(out, " %7.1f ", sess);
	switch (t->d->kind) {
	case DAEMON_MTA:
		append_rate(out, "accepted/s", rate(t, "mailtier_mta_messages_accepted_total", NULL, dt));
		append_rate(out, "delivered/s",
			    rate(t, "mailtier_mta_deliveries_total", "result=delivered", dt));
		append_rate(out, "deferred/s",
			    rate(t, "mailtier_mta_deliveries_total", "result=deferred", dt));
		mt_buf_appendf(out, " queue %.0f oldest %.0fs", sum(m, "mailtier_mta_queue_messages", NULL),
			       sum(m, "mailtier_mta_queue_oldest_message_age_seconds", NULL));
		break;
	case DAEMON_MMP: {
		unsigned int up, all;
		shards_up(m, &up, &all);
		append_rate(out, "logins/s", rate(t, "mailtier_mmp_logins_total", "result=ok", dt));
		append_rate(out, "failed/s", rate(t, "mailtier_mmp_logins_total", "result=failed", dt));
		mt_buf_appendf(out, " relaying %.0f shards up %u/%u",
			       sum(m, "mailtier_mmp_sessions_relaying", NULL), up, all);
		double bytes = rate(t, "mailtier_mmp_relay_bytes_total", NULL, dt);
		append_rate(out, "relay KiB/s", isnan(bytes) ? bytes : bytes / 1024);
		break;
	}
	case DAEMON_STORE:
		append_rate(out, "deliveries/s", rate(t, "mailtier_popstore_deliveries_total", NULL, dt));
		append_rate(out, "logins/s", rate(t, "mailtier_popstore_logins_total", "result=ok", dt));
		mt_buf_appendf(out, " mailboxes %.0f%s", sum(m, "mailtier_popstore_mailboxes_open", NULL),
			       sum(m, "mailtier_popstore_disk_full", NULL) >= 1 ? " DISK FULL" : "");
		struct cluster_repl repl;
		cluster_metrics_repl(m, &repl);
		if (repl.known)
			mt_buf_appendf(out, " role %s, %u/%u connected", repl.role, repl.connected,
				       repl.sites > 0 ? repl.sites - 1 : 0);
		break;
	case DAEMON_SLAPD:
		break;
	}
	mt_buf_append_char(out, '\n');
}

/* The daemons' metrics now; the previous scrape kept as before. */
static void scrape_all(const struct cluster_daemon *d, struct top_daemon *t, size_t n)
{
	struct ctl_metrics_target targets[CLUSTER_MAX_DAEMONS];
	cluster_metrics_scrape(d, n, targets);
	for (size_t i = 0; i < n; i++) {
		ctl_metrics_target_clear(&t[i].before);
		t[i].before = t[i].now;
		t[i].now = targets[i];
	}
}

static void sleep_seconds(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - floor(s)) * 1e9) };
	while (nanosleep(&ts, &ts) != 0)
		;
}

int cluster_top(const struct cluster *c, double interval_s, unsigned long count)
{
	struct cluster_daemon d[CLUSTER_MAX_DAEMONS];
	size_t n = cluster_daemons(c, d);
	struct top_daemon t[CLUSTER_MAX_DAEMONS];
	for (size_t i = 0; i < n; i++)
		t[i] = (struct top_daemon){ .d = &d[i] };
	bool tty = isatty(STDOUT_FILENO) == 1;
	scrape_all(d, t, n);
	struct timespec then, now;
	clock_gettime(CLOCK_MONOTONIC, &then);
	bool all_up = true;
	for (unsigned long frame = 0; count == 0 || frame < count; frame++) {
		sleep_seconds(interval_s);
		scrape_all(d, t, n);
		clock_gettime(CLOCK_MONOTONIC, &now);
		double dt = (double)(now.tv_sec - then.tv_sec) +
			    (double)(now.tv_nsec - then.tv_nsec) / 1e9;
		then = now;

		struct mt_buf out = MT_BUF_INIT;
		char when[32];
		time_t wall = time(NULL);
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&wall, &tm));
		if (tty)
			mt_buf_append_str(&out, "\033[H\033[2J");
		else if (frame > 0)
			mt_buf_append_char(&out, '\n');
		mt_buf_appendf(&out, "cluster %s  %s  rates over %.1f s, from each daemon's /metrics\n",
			       c->dir, when, dt);
		mt_buf_appendf(&out, "%-8s %-4s %5s %10s %5s %5s %7s  %s\n", "NAME", "UP", "CPU%",
			       "RSS", "FDS", "CONN", "SESS/s", "DETAIL");
		all_up = true;
		for (size_t i = 0; i < n; i++) {
			if (d[i].metrics_port == 0)
				continue;	/* slapd */
			top_row(&out, &t[i], dt);
			all_up = all_up && t[i].now.ok;
		}
		fputs(mt_buf_cstr(&out), stdout);
		fflush(stdout);
		mt_buf_free(&out);
	}
	for (size_t i = 0; i < n; i++) {
		ctl_metrics_target_clear(&t[i].now);
		ctl_metrics_target_clear(&t[i].before);
	}
	return all_up ? CTL_EXIT_OK : CTL_EXIT_FAIL;
}
