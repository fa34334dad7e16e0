/* authfail-metrics.c — a per-address table's counts as metrics (see
 * authfail-metrics.h).
 *
 * Trust boundary: none. No RFC; the Prometheus text format through
 * lib/metrics. */
#include "authfail-metrics.h"
#include "alloc.h"
#include "authfail.h"
#include "metrics.h"

#include <stdlib.h>

struct mt_authfail_metrics {
	struct mt_metrics *registry;
	struct mt_authfail *const *table_p;
	struct mt_series *failures, *blocks, *refused_blocked, *refused_sessions;
	struct mt_series *tracked;
};

static void collect(void *context)
{
	struct mt_authfail_metrics *am = context;
	if (*am->table_p == NULL)
		return;
	struct mt_authfail_stats st;
	mt_authfail_get_stats(*am->table_p, &st);
	mt_series_store(am->failures, st.failures);
	mt_series_store(am->blocks, st.blocks);
	mt_series_store(am->refused_blocked, st.refused_blocked);
	mt_series_store(am->refused_sessions, st.refused_sessions);
	mt_series_set(am->tracked, (double)st.addresses);
}

struct mt_authfail_metrics *mt_authfail_metrics_new(struct mt_metrics *m, const char *table,
						    struct mt_authfail *const *table_p)
{
	struct mt_authfail_metrics *am = mt_xcalloc(1, sizeof(*am));
	am->registry = m;
	am->table_p = table_p;
	am->failures = mt_metric_series1(mt_metrics_counter(m,
		"mailtier_address_failures_total",
		"Failures counted against a client address (failed logins; at the MTA's "
		"rcpt table, unknown recipients), by table.", "table"), table);
	am->blocks = mt_metric_series1(mt_metrics_counter(m,
		"mailtier_address_blocks_total",
		"Times an address reached its table's failure limit and was blocked.",
		"table"), table);
	struct mt_metric_family *f = mt_metrics_counter(m, "mailtier_address_refusals_total",
		"Sessions or requests refused by a per-address limit (blocked: over the "
		"failure limit; sessions: the per-address session limit).", "table,limit");
	am->refused_blocked = mt_metric_series2(f, table, "blocked");
	am->refused_sessions = mt_metric_series2(f, table, "sessions");
	am->tracked = mt_metric_series1(mt_metrics_gauge(m, "mailtier_addresses_tracked",
		"Client addresses a per-address table remembers now.", "table"), table);
	mt_metrics_add_collector(m, collect, am);
	return am;
}

void mt_authfail_metrics_free(struct mt_authfail_metrics **am_p)
{
	struct mt_authfail_metrics *am = *am_p;
	if (am == NULL)
		return;
	mt_metrics_remove_collector(am->registry, collect, am);
	free(am);
	*am_p = NULL;
}
