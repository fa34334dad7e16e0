/* live-metrics.c — the run's figures on --metrics-listen (see
 * live-metrics.h): a registry of gauges and counters set from each
 * second's progress figures, served by lib/metrics-http on the run's loop.
 *
 * Trust boundary: lib/metrics-http.h's (the scraper's requests). */
#include "live-metrics.h"
#include "errors.h"
#include "progress.h"
#include "stats.h"

#include "alloc.h"
#include "config.h"
#include "metrics.h"
#include "metrics-http.h"

#include <stdlib.h>

enum {
	G_LEVEL_PCT, G_PHASE, G_PHASE_SECONDS, G_TARGET, G_ACHIEVED, G_OPEN, G_AWAITED,
	G_MSGS, G_SESSIONS, G_FAILED,
	G_DATA, G_DATA_PASS, G_RETR, G_RETR_PASS, G_DELIVERY, G_DELIVERY_PASS,
	G_COUNT
};

struct lg_live_metrics {
	struct mt_metrics *metrics;
	struct mt_metrics_http *http;
	struct mt_series *g[G_COUNT];
	struct mt_series *errors[LG_ERR_COUNT];
	struct mt_series *run_msgs, *run_failed;
};

static struct mt_series *gauge(struct mt_metrics *m, const char *name, const char *help)
{
	return mt_metrics_gauge_series(m, name, help);
}

static void register_all(struct lg_live_metrics *lm)
{
	struct mt_metrics *m = lm->metrics;
	struct mt_series **g = lm->g;
	g[G_LEVEL_PCT] = gauge(m, "mailtier_load_level_percent",
		"The load level running now, in percent of the base rate.");
	g[G_PHASE] = gauge(m, "mailtier_load_phase",
		"The level's phase: 0 warm-up, 1 measure, 2 cool-down.");
	g[G_PHASE_SECONDS] = gauge(m, "mailtier_load_phase_elapsed_seconds",
		"Seconds into the phase.");
	g[G_TARGET] = gauge(m, "mailtier_load_target_messages_per_minute",
		"The level's target rate of local users' messages.");
	g[G_ACHIEVED] = gauge(m, "mailtier_load_phase_messages_per_minute",
		"Local users' messages accepted per minute so far in the phase.");
	g[G_OPEN] = gauge(m, "mailtier_load_sessions_open", "Sessions open now.");
	g[G_AWAITED] = gauge(m, "mailtier_load_deliveries_awaited",
		"Timed messages accepted and not yet seen delivered.");
	g[G_MSGS] = gauge(m, "mailtier_load_phase_messages",
		"Local users' messages accepted (250) so far in the phase.");
	g[G_SESSIONS] = gauge(m, "mailtier_load_phase_sessions", "Sessions so far in the phase.");
	g[G_FAILED] = gauge(m, "mailtier_load_phase_sessions_failed",
		"Sessions that failed so far in the phase.");
	struct mt_metric_family *steps = mt_metrics_gauge(m, "mailtier_load_phase_steps",
		"Steps begun so far in the phase, by function (the QoS rows of the "
		"progress line).", "function");
	struct mt_metric_family *pass = mt_metrics_gauge(m, "mailtier_load_phase_steps_within_limit",
		"Of those, answered correctly within the function's QoS limit.", "function");
	g[G_DATA] = mt_metric_series1(steps, "smtp_data");
	g[G_DATA_PASS] = mt_metric_series1(pass, "smtp_data");
	g[G_RETR] = mt_metric_series1(steps, "pop_retr");
	g[G_RETR_PASS] = mt_metric_series1(pass, "pop_retr");
	g[G_DELIVERY] = mt_metric_series1(steps, "delivery");
	g[G_DELIVERY_PASS] = mt_metric_series1(pass, "delivery");
	struct mt_metric_family *errors = mt_metrics_gauge(m, "mailtier_load_phase_errors",
		"Errors so far in the phase, by kind.", "kind");
	for (unsigned int i = 0; i < LG_ERR_COUNT; i++)
		lm->errors[i] = mt_metric_series1(errors, lg_error_names[i]);
	lm->run_msgs = mt_metrics_counter_series(m, "mailtier_load_messages_total",
		"Local users' messages accepted in the whole run so far.");
	lm->run_failed = mt_metrics_counter_series(m, "mailtier_load_sessions_failed_total",
		"Sessions failed in the whole run so far.");
}

struct lg_live_metrics *lg_live_metrics_start(struct mt_loop *loop, const char *listen,
					      const char **error_r)
{
	struct mt_hostport hp = { 0 };
	if (!mt_parse_hostport(listen, &hp, error_r)) {
		lg_error_kept(error_r);
		return NULL;
	}
	if (hp.host == NULL) {
		*error_r = "--metrics-listen needs HOST:PORT";
		return NULL;
	}
	struct lg_live_metrics *lm = mt_xcalloc(1, sizeof(*lm));
	lm->metrics = mt_metrics_new();
	mt_metrics_add_process(lm->metrics);
	register_all(lm);
	lm->http = mt_metrics_http_start(loop, "metrics-listen", &hp, lm->metrics);
	mt_hostport_clear(&hp);
	return lm;
}

void lg_live_metrics_update(struct lg_live_metrics *lm, const struct lg_progress *p)
{
	if (lm == NULL)
		return;
	struct mt_series **g = lm->g;
	double s = (double)p->phase_ms / 1000;
	mt_series_set(g[G_LEVEL_PCT], (double)p->pct);
	mt_series_set(g[G_PHASE], (double)p->phase);
	mt_series_set(g[G_PHASE_SECONDS], s);
	mt_series_set(g[G_TARGET], (double)p->target_msgs_per_min_x100 / 100);
	mt_series_set(g[G_ACHIEVED], s > 0 ? (double)p->msgs_local * 60.0 / s : 0);
	mt_series_set(g[G_OPEN], (double)p->open);
	mt_series_set(g[G_AWAITED], (double)p->awaited);
	mt_series_set(g[G_MSGS], (double)p->msgs_local);
	mt_series_set(g[G_SESSIONS], (double)p->sessions);
	mt_series_set(g[G_FAILED], (double)p->failed);
	mt_series_set(g[G_DATA], (double)p->data_attempts);
	mt_series_set(g[G_DATA_PASS], (double)p->data_pass);
	mt_series_set(g[G_RETR], (double)p->retr_attempts);
	mt_series_set(g[G_RETR_PASS], (double)p->retr_pass);
	mt_series_set(g[G_DELIVERY], (double)p->delivery_attempts);
	mt_series_set(g[G_DELIVERY_PASS], (double)p->delivery_pass);
	for (unsigned int i = 0; i < LG_ERR_COUNT; i++)
		mt_series_set(lm->errors[i], (double)p->errors[i]);
	mt_series_store(lm->run_msgs, p->run_msgs_local);
	mt_series_store(lm->run_failed, p->run_failed);
}

void lg_live_metrics_free(struct lg_live_metrics **lm_p)
{
	struct lg_live_metrics *lm = *lm_p;
	if (lm == NULL)
		return;
	*lm_p = NULL;
	mt_metrics_http_free(&lm->http);
	mt_metrics_free(&lm->metrics);
	free(lm);
}
