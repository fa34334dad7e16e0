/* dirsvc-metrics.c — the directory client's counters as metrics: the
 * same numbers as its "dirsvc stats:" log line (requests, authentication
 * results, LDAP operations, errors, connects, timeouts, temporary
 * failures) and its cache's, copied at each scrape; failovers (connections
 * opened on a URI after the first); and each LDAP operation's latency, a
 * histogram the workers observe into.
 *
 * Trust boundary: none (counters this process kept). No RFC. */
#include "dirsvc-private.h"
#include "dircache.h"
#include "metrics.h"

#include <stdatomic.h>

enum {
	S_LOOKUPS, S_AUTHS, S_AUTH_OK, S_AUTH_BAD, S_SEARCHES, S_BINDS, S_ERRORS,
	S_CONNECTS, S_CONNECT_FAILURES, S_FAILOVERS, S_TIMEOUTS, S_TEMPFAILS,
	S_CACHE_HITS, S_CACHE_NEGATIVE_HITS, S_CACHE_MISSES, S_CACHE_EVICTIONS,
	S_CACHE_ENTRIES, S_COUNT
};

struct dirsvc_metrics {
	struct mt_dirsvc *dirsvc;
	struct mt_series *series[S_COUNT];
};

static struct dirsvc_metrics exported;	/* one directory client per daemon */

#define LOAD(name) atomic_load_explicit(&st->name, memory_order_relaxed)

static void collect(void *context)
{
	struct dirsvc_metrics *dm = context;
	const struct dirsvc_stats *st = &dm->dirsvc->stats;
	struct mt_series **s = dm->series;
	mt_series_store(s[S_LOOKUPS], LOAD(lookups));
	mt_series_store(s[S_AUTHS], LOAD(auths));
	mt_series_store(s[S_AUTH_OK], LOAD(auth_ok));
	mt_series_store(s[S_AUTH_BAD], LOAD(auth_bad));
	mt_series_store(s[S_SEARCHES], LOAD(ldap_searches));
	mt_series_store(s[S_BINDS], LOAD(ldap_binds));
	mt_series_store(s[S_ERRORS], LOAD(ldap_errors));
	mt_series_store(s[S_CONNECTS], LOAD(connects));
	mt_series_store(s[S_CONNECT_FAILURES], LOAD(connect_failures));
	mt_series_store(s[S_FAILOVERS], LOAD(failovers));
	mt_series_store(s[S_TIMEOUTS], LOAD(timeouts));
	mt_series_store(s[S_TEMPFAILS], LOAD(tempfails));
	if (dm->dirsvc->cache != NULL) {
		struct mt_dircache_stats cs;
		mt_dircache_get_stats(dm->dirsvc->cache, &cs);
		mt_series_store(s[S_CACHE_HITS], cs.hits);
		mt_series_store(s[S_CACHE_NEGATIVE_HITS], cs.negative_hits);
		mt_series_store(s[S_CACHE_MISSES], cs.misses);
		mt_series_store(s[S_CACHE_EVICTIONS], cs.evictions);
		mt_series_set(s[S_CACHE_ENTRIES], (double)cs.entries);
	}
}

void mt_dirsvc_metrics(struct mt_dirsvc *dirsvc, struct mt_metrics *m)
{
	struct dirsvc_metrics *dm = &exported;
	struct mt_series **s = dm->series;
	dm->dirsvc = dirsvc;
	struct mt_metric_family *f = mt_metrics_counter(m, "mailtier_dirsvc_requests_total",
		"Directory requests asked, by kind.", "kind");
	s[S_LOOKUPS] = mt_metric_series1(f, "lookup");
	s[S_AUTHS] = mt_metric_series1(f, "auth");
	f = mt_metrics_counter(m, "mailtier_dirsvc_auth_results_total",
		"Password checks answered, by result.", "result");
	s[S_AUTH_OK] = mt_metric_series1(f, "ok");
	s[S_AUTH_BAD] = mt_metric_series1(f, "bad");
	f = mt_metrics_counter(m, "mailtier_dirsvc_ldap_operations_total",
		"LDAP operations sent to slapd, by operation.", "operation");
	s[S_SEARCHES] = mt_metric_series1(f, "search");
	s[S_BINDS] = mt_metric_series1(f, "bind");
	s[S_ERRORS] = mt_metrics_counter_series(m, "mailtier_dirsvc_ldap_errors_total",
		"LDAP operations that failed.");
	s[S_CONNECTS] = mt_metrics_counter_series(m,
		"mailtier_dirsvc_ldap_connects_total", "LDAP connections opened.");
	s[S_CONNECT_FAILURES] = mt_metrics_counter_series(m,
		"mailtier_dirsvc_ldap_connect_failures_total",
		"LDAP connection attempts that failed (the next URI is tried).");
	s[S_FAILOVERS] = mt_metrics_counter_series(m, "mailtier_dirsvc_failovers_total",
		"LDAP connections opened on a directory server after the first of "
		"[directory] uri (those before it were down or failed).");
	static const double bounds[] = {
		0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5,
	};
	f = mt_metrics_histogram(m, "mailtier_dirsvc_ldap_latency_seconds",
		"Seconds each LDAP operation took (search: a lookup on the service "
		"connection; bind: a password check).", "operation", bounds,
		sizeof(bounds) / sizeof(bounds[0]));
	atomic_store(&dirsvc->stats.latency[DIRSVC_CONN_SERVICE], mt_metric_series1(f, "search"));
	atomic_store(&dirsvc->stats.latency[DIRSVC_CONN_AUTH], mt_metric_series1(f, "bind"));
	s[S_TIMEOUTS] = mt_metrics_counter_series(m, "mailtier_dirsvc_timeouts_total",
		"Directory requests past their deadline.");
	s[S_TEMPFAILS] = mt_metrics_counter_series(m, "mailtier_dirsvc_tempfails_total",
		"Directory requests answered with a temporary failure.");
	f = mt_metrics_counter(m, "mailtier_dirsvc_cache_hits_total",
		"Directory cache hits, by kind (negative: a cached 'no such user').", "kind");
	s[S_CACHE_HITS] = mt_metric_series1(f, "positive");
	s[S_CACHE_NEGATIVE_HITS] = mt_metric_series1(f, "negative");
	s[S_CACHE_MISSES] = mt_metrics_counter_series(m,
		"mailtier_dirsvc_cache_misses_total",
		"Directory cache misses (expired entries included).");
	s[S_CACHE_EVICTIONS] = mt_metrics_counter_series(m,
		"mailtier_dirsvc_cache_evictions_total",
		"Cache entries dropped to stay within the bound.");
	s[S_CACHE_ENTRIES] = mt_metrics_gauge_series(m,
		"mailtier_dirsvc_cache_entries", "Entries in the directory cache now.");
	mt_metrics_add_collector(m, collect, dm);
}
