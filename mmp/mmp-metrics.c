/* mmp-metrics.c — what mailtier-mmp exports on its metrics_listen: client
 * connections open and admitted, sessions by listener and how they ended
 * (listener and outcome, lib-mail/conn-metrics: counted by the workers
 * and main's refusals with atomics), refused by reason, logins by result,
 * shards that refused a backend login, the bytes relayed each way, the
 * sessions relaying now and of those the ones idle (no byte either way for
 * idle_session_threshold: lib-mail/conn's quiet notice counts them as
 * they change, no scan of the workers' sessions) — the counters of its
 * "stats" log line, read at
 * each scrape (the workers count them with atomics) — and per shard and
 * protocol: whether the MMP sees it up (its down mark, cleared by the
 * probe) and its backend logins by result. Shard names are the
 * operator's [shards] keys, so the labels stay bounded. The directory's
 * come from dirsvc.
 *
 * Trust boundary: none (counts). No RFC. */
#include "mmp.h"
#include "metrics.h"
#include "alloc.h"
#include "conn-metrics.h"

#include <stdlib.h>

#include <stdatomic.h>

enum {
	M_OPEN, M_CONNECTIONS, M_REFUSED_LIMIT, M_REFUSED_CLIENT, M_REFUSED_BLOCKED,
	M_LOGIN_OK, M_LOGIN_FAILED, M_LOGIN_TEMPFAIL, M_BACKEND_REFUSED,
	M_BYTES_IN, M_BYTES_OUT, M_RELAYS, M_IDLE, M_COUNT
};

static struct mt_series *series[M_COUNT];
/* Set before the workers start, cleared after they stopped. */
static struct mt_series *sessions[MMP_LISTENER_COUNT];
static struct mt_conn_metrics *closed;

static const char *const backend_results[MMP_BACKEND_STATUS_COUNT] = {
	[MMP_BACKEND_OK] = "ok", [MMP_BACKEND_REFUSED] = "refused",
	[MMP_BACKEND_FAILED] = "failed",
};

/* Per shard and protocol (only the protocols it has an address for). */
struct shard_series {
	struct mmp_shard *shard;
	enum mmp_protocol protocol;
	struct mt_series *up;
	struct mt_series *logins[MMP_BACKEND_STATUS_COUNT];
};

static struct shard_series *shard_series;
static size_t n_shard_series;

static void collect_shards(void)
{
	for (size_t i = 0; i < n_shard_series; i++) {
		struct shard_series *ss = &shard_series[i];
		mt_series_set(ss->up, mmp_shard_is_down(ss->shard, ss->protocol) ? 0 : 1);
		for (unsigned int r = 0; r < MMP_BACKEND_STATUS_COUNT; r++)
			mt_series_store(ss->logins[r], mmp_shard_logins(ss->shard, ss->protocol,
									 (enum mmp_backend_status)r));
	}
}

static void init_shards(struct mmp_server *server, struct mt_metrics *m)
{
	struct mt_metric_family *up = mt_metrics_gauge(m, "mailtier_mmp_shard_up",
		"1 while the MMP sends logins to the shard's listener for the protocol (for a "
		"shard of several sites: to one of its sites), 0 while it is (every site is) "
		"marked down (until a probe answers).", "shard,protocol");
	struct mt_metric_family *logins = mt_metrics_counter(m,
		"mailtier_mmp_backend_logins_total",
		"Backend logins on users' behalf, by shard, protocol and result (ok; "
		"refused: the store's -ERR or NO; failed: unreachable, timeout, protocol "
		"error).", "shard,protocol,result");
	size_t n = mmp_shards_count(server->shards);
	shard_series = mt_xcalloc(n * MMP_PROTO_COUNT + 1, sizeof(*shard_series));
	for (size_t i = 0; i < n; i++) {
		struct mmp_shard *shard = mmp_shards_get(server->shards, i);
		for (unsigned int p = 0; p < MMP_PROTO_COUNT; p++) {
			if (!mmp_shard_has(shard, (enum mmp_protocol)p))
				continue;
			struct shard_series *ss = &shard_series[n_shard_series++];
			ss->shard = shard;
			ss->protocol = (enum mmp_protocol)p;
			const char *name = mmp_shard_name(shard);
			const char *proto = mmp_protocol_names[p];
			ss->up = mt_metric_series2(up, name, proto);
			for (unsigned int r = 0; r < MMP_BACKEND_STATUS_COUNT; r++) {
				const char *values[] = { name, proto, backend_results[r] };
				ss->logins[r] = mt_metric_series(logins, values);
			}
		}
	}
}

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
	mt_series_set(series[M_RELAYS], (double)atomic_load(&st->relays_open));
	mt_series_set(series[M_IDLE], (double)atomic_load(&st->relays_idle));
	collect_shards();
}

void mmp_metrics_init(struct mmp_server *server, struct mt_metrics *m)
{
	series[M_OPEN] = mt_metrics_gauge_series(m, "mailtier_connections_open",
		"Client connections open now.");
	series[M_CONNECTIONS] = mt_metrics_counter_series(m,
		"mailtier_mmp_connections_total",
		"Client connections admitted (within the limits).");
	struct mt_metric_family *f = mt_metrics_counter(m, "mailtier_sessions_total",
		"Client sessions accepted (admitted within the limits), by listener.",
		"listener");
	for (unsigned int k = 0; k < MMP_LISTENER_COUNT; k++)
		sessions[k] = mt_metric_series1(f, mmp_listener_names[k]);
	closed = mt_conn_metrics_new(m, mmp_listener_names, MMP_LISTENER_COUNT);
	f = mt_metrics_counter(m,
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
	series[M_RELAYS] = mt_metrics_gauge_series(m, "mailtier_mmp_sessions_relaying",
		"Sessions logged in and relayed to a shard now (IMAP clients in IDLE or "
		"between commands count here: the relay does not read the stream).");
	series[M_IDLE] = mt_metrics_gauge_series(m, "mailtier_mmp_sessions_idle",
		"Of the sessions relaying, those that have moved no byte either way (client "
		"to store or store to client) for at least idle_session_threshold (60 s by "
		"default): IMAP clients in IDLE with no news, mail clients left open. A "
		"session counts from the moment the threshold passes until its next byte or "
		"its end; kept as sessions change, not by a scan.");
	init_shards(server, m);
	mmp_clients_export_metrics(server->clients, m);
	mt_metrics_add_collector(m, collect, server);
}

void mmp_metrics_free(struct mmp_server *server, struct mt_metrics *m)
{
	mt_metrics_remove_collector(m, collect, server);
	mt_conn_metrics_free(&closed);
	for (unsigned int k = 0; k < MMP_LISTENER_COUNT; k++)
		sessions[k] = NULL;
	free(shard_series);
	shard_series = NULL;
	n_shard_series = 0;
}

void mmp_metrics_session(enum mmp_listener_kind kind)
{
	if (sessions[kind] != NULL)
		mt_series_add(sessions[kind], 1);
}

void mmp_metrics_session_closed(enum mmp_listener_kind kind, enum mt_conn_outcome outcome)
{
	mt_conn_metrics_closed(closed, kind, outcome);
}
