/* popstore-metrics.c — what mailtier-popstore exports on its
 * metrics_listen: deliveries made durable, sessions by protocol, logins
 * by result, refused connections, sessions open, the store's group
 * commits (log flushes and the requests they completed), expunges,
 * purged bytes, reads and deadlock retries — its "stats" line's counters,
 * read at each scrape. The directory's come from dirsvc.
 *
 * Trust boundary: none (counts). No RFC. */
#include "popstore.h"
#include "metrics.h"
#include "store/store.h"

enum {
	P_OPEN, P_DELIVERIES, P_DELIVERY_REQUESTS, P_FLUSHES, P_FLUSHED, P_EXPUNGES,
	P_EXPUNGED, P_PURGED, P_READS, P_RETRIES, P_CHECKPOINTS,
	P_LMTP, P_POP3, P_IMAP, P_REFUSED, P_LOGIN_OK, P_LOGIN_FAILED, P_COUNT
};

static struct mt_series *series[P_COUNT];

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
	mt_series_store(series[P_READS], c.reads);
	mt_series_store(series[P_RETRIES], c.retries);
	mt_series_store(series[P_CHECKPOINTS], c.checkpoints);
	mt_series_store(series[P_LMTP], ps->lmtp_connections);
	mt_series_store(series[P_POP3], ps->pop3_connections);
	mt_series_store(series[P_IMAP], ps->imap_connections);
	mt_series_store(series[P_REFUSED], ps->refused_connections);
	mt_series_store(series[P_LOGIN_OK], ps->logins);
	mt_series_store(series[P_LOGIN_FAILED], ps->logins_failed);
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
	series[P_READS] = mt_metrics_counter_series(m, "mailtier_popstore_reads_total",
		"Mailbox opens and body reads.");
	series[P_RETRIES] = mt_metrics_counter_series(m, "mailtier_popstore_deadlock_retries_total",
		"Transactions retried after a Berkeley DB deadlock.");
	series[P_CHECKPOINTS] = mt_metrics_counter_series(m, "mailtier_popstore_checkpoints_total",
		"Berkeley DB checkpoints.");
	struct mt_metric_family *f = mt_metrics_counter(m, "mailtier_sessions_total",
		"Client sessions accepted, by listener.", "listener");
	series[P_LMTP] = mt_metric_series1(f, "lmtp");
	series[P_POP3] = mt_metric_series1(f, "pop3");
	series[P_IMAP] = mt_metric_series1(f, "imap");
	series[P_REFUSED] = mt_metrics_counter_series(m, "mailtier_popstore_connections_refused_total",
		"Connections refused (limits, clients not in lmtp_clients).");
	f = mt_metrics_counter(m, "mailtier_popstore_logins_total",
		"POP3 and IMAP logins, by result.", "result");
	series[P_LOGIN_OK] = mt_metric_series1(f, "ok");
	series[P_LOGIN_FAILED] = mt_metric_series1(f, "failed");
	mt_metrics_add_collector(m, collect, ps);
}
