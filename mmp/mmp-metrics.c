/* mmp-metrics.c — what mailtier-mmp exports on its metrics_listen: client
 * connections open and admitted, refused by reason, logins by result,
 * shards that refused a backend login, and the bytes relayed each way —
 * the counters of its "stats" log line, read at each scrape (the workers
 * count them with atomics). The directory's come from dirsvc.
 *
 * Trust boundary: none (counts). No RFC. */
#include "mmp.h"
#include "metrics.h"

#include <stdatomic.h>

enum {
	M_OPEN, M_CONNECTIONS, M_REFUSED_LIMIT, M_REFUSED_CLIENT, M_REFUSED_BLOCKED,
	M_LOGIN_OK, M_LOGIN_FAILED, M_LOGIN_TEMPFAIL, M_BACKEND_REFUSED,
	M_BYTES_IN, M_BYTES_OUT, M_COUNT
};

static struct mt_series *series[M_COUNT];

static void collect(void *context)
{
	struct mmp_server *server = context;
	struct mmp_counters *st = &server->stats;
	mt_series_set(series[M_OPEN], (double)atomic_load(&server->conns));
	mt_series_store(series[M_CONNECTIONS], atomic_load(&st->connections));
	mt_series_store(series[M_REFUSED_LIMIT], atomic_load(&st->refused_limit));
	mt_series_store(series[M_REFUSED_CLIENT], atomic_load(&st->refused_client));
	mt_series_store(series[M_REFUSED_BLOCKED], atomic_load(&st->refused_blocked));
	mt_series_store(series[M_LOGIN_OK], atomic_load(&st->logins));
	mt_series_store(series[M_LOGIN_FAILED], atomic_load(&st->auth_failed));
	mt_series_store(series[M_LOGIN_TEMPFAIL], atomic_load(&st->tempfail));
	mt_series_store(series[M_BACKEND_REFUSED], atomic_load(&st->backend_refused));
	mt_series_store(series[M_BYTES_IN], atomic_load(&st->bytes_in));
	mt_series_store(series[M_BYTES_OUT], atomic_load(&st->bytes_out));
}

void mmp_metrics_init(struct mmp_server *server, struct mt_metrics *m)
{
	series[M_OPEN] = mt_metrics_gauge_series(m, "mailtier_connections_open",
		"Client connections open now.");
	series[M_CONNECTIONS] = mt_metrics_counter_series(m,
		"mailtier_mmp_connections_total",
		"Client connections admitted (within the limits).");
	struct mt_metric_family *f = mt_metrics_counter(m,
		"mailtier_mmp_connections_refused_total",
		"Client connections refused, by reason (limit: conn_limit; client: "
		"conn_limit_per_client; blocked: an address over auth_fail_limit).", "reason");
	series[M_REFUSED_LIMIT] = mt_metric_series1(f, "limit");
	series[M_REFUSED_CLIENT] = mt_metric_series1(f, "client");
	series[M_REFUSED_BLOCKED] = mt_metric_series1(f, "blocked");
	f = mt_metrics_counter(m, "mailtier_mmp_logins_total",
		"Logins, by result (ok: relayed to the user's shard; tempfail: the "
		"directory or the shard was unavailable).", "result");
	series[M_LOGIN_OK] = mt_metric_series1(f, "ok");
	series[M_LOGIN_FAILED] = mt_metric_series1(f, "failed");
	series[M_LOGIN_TEMPFAIL] = mt_metric_series1(f, "tempfail");
	series[M_BACKEND_REFUSED] = mt_metrics_counter_series(m,
		"mailtier_mmp_backend_refused_total",
		"Backend logins the shard refused (its -ERR or NO).");
	f = mt_metrics_counter(m, "mailtier_mmp_relay_bytes_total",
		"Bytes relayed between clients and shards, by direction.", "direction");
	series[M_BYTES_IN] = mt_metric_series1(f, "from_client");
	series[M_BYTES_OUT] = mt_metric_series1(f, "to_client");
	mt_metrics_add_collector(m, collect, server);
}
