/* popstore-metrics.c — what mailtier-popstore exports on its
 * metrics_listen: deliveries made durable, sessions by protocol and how
 * they ended (listener and outcome, lib-mail/conn-metrics), logins
 * by result, refused connections, sessions open, the store's group
 * commits (log flushes and the requests they completed), expunges,
 * purged bytes, the purge backlog (a gauge the store keeps, no scan),
 * reads and deadlock retries — its "stats" line's counters,
 * read at each scrape — and: each write request's commit latency
 * (submitted → durable, a histogram), the Berkeley DB cache's hits and
 * misses and the log bytes written (read from the environment at each
 * scrape), whether the store is in no-space mode, and the LMTP, POP3 and
 * IMAP commands by verb and result (lib-mail/command-metrics, added when
 * a session ends); the per-address tables' counts (lib/authfail-metrics:
 * "client", the sessions per address; "auth", failed logins and blocks);
 * for a replicated shard, the site's role, its master, connected sites,
 * elections, PERM_FAILEDs and full copies (store-repl.c's status, read
 * without a Berkeley DB call). The directory's come from dirsvc.
 *
 * Trust boundary: none (counts). No RFC. */
#include "popstore.h"
#include "metrics.h"
#include "store/store.h"
#include "alloc.h"
#include "authfail-metrics.h"
#include "bdb-commit.h"
#include "command-metrics.h"
#include "conn-metrics.h"
#include "lmtp-parse.h"
#include "log.h"
#include "pop3-parse.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

extern const struct mt_command_table imap_command_table;

/* A replicated store's plain series: name, help, gauge or counter, and
 * where its value is in struct mt_store_repl_info. */
struct repl_series {
	const char *name, *help;
	bool gauge;
	size_t offset;		/* of a uint64_t, unsigned int or bool */
	size_t size;
};
#define RI(field) offsetof(struct mt_store_repl_info, field), \
	sizeof(((struct mt_store_repl_info *)0)->field)
static const struct repl_series repl_series[] = {
	{ "mailtier_store_replication_sites", "Sites in this shard's replication group.",
	  true, RI(sites) },
	{ "mailtier_store_replication_connected_sites",
	  "Other sites of the group connected to this one now.", true, RI(connected) },
	{ "mailtier_store_replication_generation",
	  "The group's replication generation (one more at each new master).", true,
	  RI(generation) },
	{ "mailtier_store_replication_startup_done",
	  "1 once a replica has caught up with its master and applies live records.", true,
	  RI(startup_done) },
	{ "mailtier_store_replication_log_retention_seconds",
	  "Age of the oldest log file kept: a site away for less catches up from the log, "
	  "one away longer needs a full copy (checked every minute).", true,
	  RI(log_oldest_age_secs) },
	{ "mailtier_store_replication_log_position_bytes",
	  "The end of this site's log as a byte position ((file - 1) x log_file_size + "
	  "offset; the same numbering on every site): a replica's lag is its master's "
	  "position less its own.", true, RI(log_position) },
	{ "mailtier_store_replication_elections_total", "Elections this site took part in.",
	  false, RI(elections) },
	{ "mailtier_store_replication_master_changes_total", "Times another site became master.",
	  false, RI(master_changes) },
	{ "mailtier_store_replication_perm_failed_total",
	  "Commits (group-commit batches) whose replicas' acknowledgements did not come "
	  "within replication_ack_timeout: every request of them was answered as a "
	  "temporary failure.", false, RI(perm_failed) },
	{ "mailtier_store_replication_internal_inits_total",
	  "Full copies of the store this site received (a new or wiped site).", false,
	  RI(internal_inits) },
	{ "mailtier_store_replication_log_files_removed_total",
	  "Log files removed once past replication_log_retention.", false,
	  RI(log_files_removed) },
};
#define REPL_COUNT (sizeof(repl_series) / sizeof(repl_series[0]))

static uint64_t repl_value(const struct mt_store_repl_info *info, const struct repl_series *r)
{
	const char *p = (const char *)info + r->offset;
	if (r->size == sizeof(uint64_t)) {
		uint64_t v;
		memcpy(&v, p, sizeof(v));
		return v;
	}
	if (r->size == sizeof(uint32_t)) {
		uint32_t v;
		memcpy(&v, p, sizeof(v));
		return v;
	}
	return *(const bool *)p ? 1 : 0;
}

static const char *const role_names[3] = { "master", "replica", "none" };

struct popstore_metrics {
	struct mt_metrics *registry;
	struct mt_command_metrics *commands[POPSTORE_PROTOCOL_COUNT];
	struct mt_conn_metrics *closed;
	struct mt_series *cache_hits, *cache_misses, *cache_bytes, *log_bytes, *no_space;
	struct mt_series *mailboxes_open;
	struct mt_authfail_metrics *address_sessions, *auth_failures;
	bool env_error_logged;
	/* Replication (a replicated store only): the role's three series,
	 * one per configured site for the master, and the rest. */
	struct mt_series *role[3];
	struct mt_series **master;	/* per replication_sites entry */
	struct mt_series *repl[REPL_COUNT];
};

enum {
	P_OPEN, P_DELIVERIES, P_DELIVERY_REQUESTS, P_FLUSHES, P_FLUSHED, P_EXPUNGES,
	P_EXPUNGED, P_PURGED, P_PURGE_BACKLOG, P_READS, P_RETRIES, P_CHECKPOINTS,
	P_LMTP, P_POP3, P_IMAP, P_REFUSED, P_LOGIN_OK, P_LOGIN_FAILED, P_DUPLICATES, P_BYTES,
	P_COUNT
};

static struct mt_series *series[P_COUNT];

static void collect_replication(struct popstore *ps, struct popstore_metrics *pm)
{
	if (pm->master == NULL)
		return;
	struct mt_store_repl_info info;
	mt_store_repl_info_get(ps->store, &info);
	for (unsigned int i = 0; i < 3; i++)
		mt_series_set(pm->role[i], strcmp(info.role, role_names[i]) == 0 ? 1 : 0);
	const struct mt_strlist *sites = &ps->set->replication_sites;
	for (size_t i = 0; i < sites->count; i++)
		mt_series_set(pm->master[i], strcmp(info.master, sites->items[i]) == 0 ? 1 : 0);
	for (size_t i = 0; i < REPL_COUNT; i++) {
		uint64_t v = repl_value(&info, &repl_series[i]);
		if (repl_series[i].gauge)
			mt_series_set(pm->repl[i], (double)v);
		else
			mt_series_store(pm->repl[i], v);
	}
}

/* A replicated store's series (the names mailtierctl cluster status and
 * the alert rules read). Site addresses as label values: the operator's
 * configured list, so the cardinality stays bounded. */
static void replication_init(struct popstore *ps, struct popstore_metrics *pm,
			     struct mt_metrics *m)
{
	if (ps->set->replication_listen[0] == '\0')
		return;
	struct mt_metric_family *f = mt_metrics_gauge(m, "mailtier_store_replication_role",
		"1 for this store site's replication role now (master: serves; replica: "
		"refuses sessions, applies the master's log; none: no role yet).", "role");
	for (unsigned int i = 0; i < 3; i++)
		pm->role[i] = mt_metric_series1(f, role_names[i]);
	f = mt_metrics_gauge(m, "mailtier_store_replication_master_info",
		"1 for the site this one knows as its group's master, 0 for the others.",
		"master");
	const struct mt_strlist *sites = &ps->set->replication_sites;
	pm->master = mt_xcalloc(sites->count, sizeof(*pm->master));
	for (size_t i = 0; i < sites->count; i++)
		pm->master[i] = mt_metric_series1(f, sites->items[i]);
	for (size_t i = 0; i < REPL_COUNT; i++)
		pm->repl[i] = repl_series[i].gauge ?
			mt_metrics_gauge_series(m, repl_series[i].name, repl_series[i].help) :
			mt_metrics_counter_series(m, repl_series[i].name, repl_series[i].help);
	mt_store_observe_ack_latency(ps->store, mt_bdb_commit_latency_histogram(m,
		"mailtier_store_replication_ack_latency_seconds",
		"Seconds each group-commit batch waited, after its own log flush, for a "
		"replica to have flushed it too."));
}

static void collect(void *context)
{
	struct popstore *ps = context;
	struct mt_store_counters c;
	mt_store_counters_get(ps->store, &c);
	mt_series_set(series[P_OPEN], ps->sessions);
	mt_series_store(series[P_DELIVERIES], c.deliveries);
	mt_series_store(series[P_DELIVERY_REQUESTS], c.delivery_requests);
	mt_series_store(series[P_FLUSHES], c.flushes);
	mt_series_store(series[P_FLUSHED], c.flushed_requests);
	mt_series_store(series[P_EXPUNGES], c.expunges);
	mt_series_store(series[P_EXPUNGED], c.expunged);
	mt_series_store(series[P_PURGED], c.purged);
	mt_series_set(series[P_PURGE_BACKLOG], (double)c.purge_backlog);
	mt_series_store(series[P_READS], c.reads);
	mt_series_store(series[P_RETRIES], c.retries);
	mt_series_store(series[P_CHECKPOINTS], c.checkpoints);
	mt_series_store(series[P_LMTP], ps->lmtp_connections);
	mt_series_store(series[P_POP3], ps->pop3_connections);
	mt_series_store(series[P_IMAP], ps->imap_connections);
	mt_series_store(series[P_REFUSED], ps->refused_connections);
	mt_series_store(series[P_LOGIN_OK], ps->logins);
	mt_series_store(series[P_LOGIN_FAILED], ps->logins_failed);
	mt_series_store(series[P_DUPLICATES], c.duplicates);
	mt_series_store(series[P_BYTES], c.bytes_stored);

	struct popstore_metrics *pm = ps->metrics;
	collect_replication(ps, pm);
	struct mt_store_env_counters env;
	const char *error;
	if (!mt_store_env_counters_get(ps->store, &env, &error)) {
		if (!pm->env_error_logged)
			mt_warning("metrics: %s", error);
		pm->env_error_logged = true;
		return;
	}
	mt_series_store(pm->cache_hits, env.cache_hits);
	mt_series_store(pm->cache_misses, env.cache_misses);
	mt_series_set(pm->cache_bytes, (double)env.cache_bytes);
	mt_series_store(pm->log_bytes, env.log_bytes);
	mt_series_set(pm->no_space, env.no_space ? 1 : 0);
	mt_series_set(pm->mailboxes_open, env.mailboxes_open);
}

void popstore_metrics_init(struct popstore *ps, struct mt_metrics *m)
{
	series[P_OPEN] = mt_metrics_gauge_series(m, "mailtier_connections_open",
		"Client connections open now (LMTP, POP3 and IMAP).");
	series[P_DELIVERIES] = mt_metrics_counter_series(m, "mailtier_popstore_deliveries_total",
		"Messages made durable in a mailbox.");
	series[P_DELIVERY_REQUESTS] = mt_metrics_counter_series(m, "mailtier_popstore_delivery_requests_total",
		"Delivery requests (LMTP DATA, IMAP APPEND) made to the store.");
	series[P_FLUSHES] = mt_metrics_counter_series(m, "mailtier_popstore_log_flushes_total",
		"Berkeley DB log flushes (group commits).");
	series[P_FLUSHED] = mt_metrics_counter_series(m, "mailtier_popstore_log_flushed_requests_total",
		"Requests made durable by those flushes (per flush: the ratio).");
	series[P_EXPUNGES] = mt_metrics_counter_series(m, "mailtier_popstore_expunge_requests_total",
		"Expunge requests made durable.");
	series[P_EXPUNGED] = mt_metrics_counter_series(m, "mailtier_popstore_expunged_messages_total",
		"Messages removed by them.");
	series[P_PURGED] = mt_metrics_counter_series(m, "mailtier_popstore_purged_bytes_total",
		"Expunged messages' bytes deleted by the purger.");
	series[P_PURGE_BACKLOG] = mt_metrics_gauge_series(m,
		"mailtier_popstore_purge_backlog_messages",
		"Expunged messages whose bytes wait for the background purger now (the lazy "
		"expunge: counted when the expunge commits, before its +OK or OK, until the "
		"purger has deleted their chunks, purge_delay or more later; at start, what "
		"purge.db held). Kept by the store, read without a scan; store stat's "
		"purge_messages.");
	series[P_READS] = mt_metrics_counter_series(m, "mailtier_popstore_reads_total",
		"Mailbox opens and body reads.");
	series[P_RETRIES] = mt_metrics_counter_series(m, "mailtier_popstore_deadlock_retries_total",
		"Transactions retried after a Berkeley DB deadlock.");
	series[P_CHECKPOINTS] = mt_metrics_counter_series(m, "mailtier_popstore_checkpoints_total",
		"Berkeley DB checkpoints.");
	struct mt_metric_family *f = mt_metrics_counter(m, "mailtier_sessions_total",
		"Client sessions accepted, by listener.", "listener");
	series[P_LMTP] = mt_metric_series1(f, popstore_protocol_names[POPSTORE_LMTP]);
	series[P_POP3] = mt_metric_series1(f, popstore_protocol_names[POPSTORE_POP3]);
	series[P_IMAP] = mt_metric_series1(f, popstore_protocol_names[POPSTORE_IMAP]);
	series[P_REFUSED] = mt_metrics_counter_series(m, "mailtier_popstore_connections_refused_total",
		"Connections refused (limits, clients not in lmtp_clients).");
	f = mt_metrics_counter(m, "mailtier_popstore_logins_total",
		"POP3 and IMAP logins, by result.", "result");
	series[P_LOGIN_OK] = mt_metric_series1(f, "ok");
	series[P_LOGIN_FAILED] = mt_metric_series1(f, "failed");
	series[P_DUPLICATES] = mt_metrics_counter_series(m, "mailtier_popstore_duplicates_total",
		"Redeliveries recognised (the same delivery id within redelivery_window): "
		"answered with the first copy, not stored again.");
	series[P_BYTES] = mt_metrics_counter_series(m, "mailtier_popstore_stored_bytes_total",
		"Message bytes stored (once per recipient; duplicates not counted).");

	struct popstore_metrics *pm = mt_xcalloc(1, sizeof(*pm));
	pm->registry = m;
	pm->commands[POPSTORE_LMTP] = mt_command_metrics_new(m, "lmtp", &lmtp_command_table);
	pm->commands[POPSTORE_POP3] = mt_command_metrics_new(m, "pop3", &pop3_command_table);
	pm->commands[POPSTORE_IMAP] = mt_command_metrics_new(m, "imap", &imap_command_table);
	pm->closed = mt_conn_metrics_new(m, popstore_protocol_names, POPSTORE_PROTOCOL_COUNT);
	pm->cache_hits = mt_metrics_counter_series(m, "mailtier_popstore_bdb_cache_hits_total",
		"Berkeley DB cache pages found in the cache (since the environment was "
		"created; the hit ratio: hits / (hits + misses)).");
	pm->cache_misses = mt_metrics_counter_series(m, "mailtier_popstore_bdb_cache_misses_total",
		"Berkeley DB cache pages read from disk.");
	pm->cache_bytes = mt_metrics_gauge_series(m, "mailtier_popstore_bdb_cache_bytes",
		"The Berkeley DB cache's size.");
	pm->log_bytes = mt_metrics_counter_series(m, "mailtier_popstore_bdb_log_written_bytes_total",
		"Bytes written to the Berkeley DB log (since the environment was created).");
	pm->mailboxes_open = mt_metrics_gauge_series(m, "mailtier_popstore_mailboxes_open",
		"Mailboxes (and IMAP folders) open now by this shard's sessions.");
	pm->no_space = mt_metrics_gauge_series(m, "mailtier_popstore_disk_full",
		"1 while the store is in no-space mode (deliveries and expunges refused "
		"with 452 4.3.1 / -ERR [SYS/TEMP] until space is back), else 0.");
	mt_store_observe_commit_latency(ps->store, mt_bdb_commit_latency_histogram(m,
		"mailtier_popstore_commit_latency_seconds",
		"Seconds from a store write's submission (a delivery, an expunge, flags) "
		"until the log flush that made it durable."));
	replication_init(ps, pm, m);
	pm->address_sessions = mt_authfail_metrics_new(m, "client", &ps->address_sessions);
	pm->auth_failures = mt_authfail_metrics_new(m, "auth", &ps->auth_failures);
	ps->metrics = pm;
	mt_metrics_add_collector(m, collect, ps);
}

void popstore_metrics_session_end(struct popstore *ps, enum popstore_protocol protocol,
				  enum mt_conn_outcome outcome,
				  const struct mt_commands *commands)
{
	if (ps->metrics == NULL)
		return;
	mt_conn_metrics_closed(ps->metrics->closed, protocol, outcome);
	if (commands != NULL)
		mt_command_metrics_add(ps->metrics->commands[protocol], commands);
}

void popstore_metrics_free(struct popstore *ps)
{
	struct popstore_metrics *pm = ps->metrics;
	if (pm == NULL)
		return;
	mt_metrics_remove_collector(pm->registry, collect, ps);
	mt_store_observe_commit_latency(ps->store, NULL);
	mt_store_observe_ack_latency(ps->store, NULL);
	mt_authfail_metrics_free(&pm->address_sessions);
	mt_authfail_metrics_free(&pm->auth_failures);
	for (unsigned int i = 0; i < POPSTORE_PROTOCOL_COUNT; i++)
		mt_command_metrics_free(&pm->commands[i]);
	mt_conn_metrics_free(&pm->closed);
	free(pm->master);
	free(pm);
	ps->metrics = NULL;
}
