/* live-metrics.h — `--metrics-listen HOST:PORT`: the run's figures while it
 * runs, in the Prometheus text format on GET /metrics (lib/metrics-http),
 * so a ramp can be watched live next to the daemons it loads: where the
 * run is (level, phase, target rate), the current phase's figures (the
 * progress line's: messages, sessions, failures, errors by kind, DATA /
 * RETR / delivery steps and those within their QoS limit, the achieved
 * msgs/min), sessions open, deliveries awaited, and the whole run's
 * messages and failed sessions. Updated once a second from the same
 * figures as the progress line (one generator's, or a manager's sum of
 * its workers'). The phase figures start again at each phase, so they are
 * gauges; the run's are counters.
 *
 * Trust boundary: the scrape endpoint's (lib/metrics-http.h). */
#ifndef LG_LIVE_METRICS_H
#define LG_LIVE_METRICS_H

struct lg_live_metrics;
struct lg_progress;
struct mt_loop;

/* NULL and a reason for a bad address; a port that cannot be bound ends
 * the process with "metrics-listen listener on ADDR: reason". */
struct lg_live_metrics *lg_live_metrics_start(struct mt_loop *loop, const char *listen,
					      const char **error_r);
void lg_live_metrics_update(struct lg_live_metrics *lm, const struct lg_progress *p);
void lg_live_metrics_free(struct lg_live_metrics **lm_p);

#endif
