/* metrics.h — a process's metrics registry and its rendering in the
 * Prometheus text exposition format (version 0.0.4), which every
 * Prometheus, `promtool check metrics` and OpenMetrics parsers read.
 *
 * A family is a metric name with its help text, its type and up to
 * MT_METRIC_LABELS_MAX label names; a series is one combination of label
 * values, created on first use and kept for the registry's life, so the
 * code that counts holds a pointer and pays one atomic add:
 *
 *	struct mt_metric_family *f = mt_metrics_counter(m,
 *		"mailtier_mta_messages_accepted_total", "Messages accepted.", NULL);
 *	struct mt_series *accepted = mt_metric_series(f, NULL);
 *	...
 *	mt_series_add(accepted, 1);
 *
 * Values that already live elsewhere (a queue's size, a stats struct a
 * daemon keeps for its log line) are read by a collector that the
 * registry calls just before it renders, on the rendering thread: it sets
 * gauges and stores counters' current totals (mt_series_store).
 *
 * Names and label values are the daemons' own constants, never a user
 * name or an address (the cardinality stays bounded); a label value is
 * still escaped as the format asks (\\, \", \n).
 *
 * Threading: series are updated with atomics from any thread; families
 * and series are created under the registry's mutex; rendering and the
 * collectors run on one thread (the daemon's main loop).
 *
 * Trust boundary: none; everything here comes from the daemon's code.
 * Format: https://prometheus.io/docs/instrumenting/exposition_formats/ */
#ifndef MT_METRICS_H
#define MT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_buf;
struct mt_metrics;
struct mt_metric_family;
struct mt_series;

#define MT_METRIC_LABELS_MAX 3
#define MT_METRIC_BUCKETS_MAX 16

/* The Content-Type of what mt_metrics_render() writes. */
#define MT_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef void mt_metrics_collect_cb_t(void *context);

struct mt_metrics *mt_metrics_new(void);
void mt_metrics_free(struct mt_metrics **metrics_p);

/* Families. labels is a comma-separated list of label names ("listener,
 * outcome") or NULL. Registering a name twice returns the first family
 * (so two parts of a daemon may share one); a name must match
 * [a-zA-Z_:][a-zA-Z0-9_:]* (a panic otherwise: it is the code's). */
struct mt_metric_family *mt_metrics_counter(struct mt_metrics *m, const char *name,
					    const char *help, const char *labels);
struct mt_metric_family *mt_metrics_gauge(struct mt_metrics *m, const char *name,
					  const char *help, const char *labels);
/* upper_bounds: ascending, at most MT_METRIC_BUCKETS_MAX (+Inf is added). */
struct mt_metric_family *mt_metrics_histogram(struct mt_metrics *m, const char *name,
					      const char *help, const char *labels,
					      const double *upper_bounds,
					      unsigned int n_bounds);

/* The series for these label values (as many as the family has label
 * names; NULL for none), created on first use. Thread-safe. */
struct mt_series *mt_metric_series(struct mt_metric_family *f,
				   const char *const *label_values);
/* A family without labels and its one series. */
struct mt_series *mt_metrics_counter_series(struct mt_metrics *m, const char *name,
					    const char *help);
struct mt_series *mt_metrics_gauge_series(struct mt_metrics *m, const char *name,
					  const char *help);
/* Shorthands for one and two labels. */
struct mt_series *mt_metric_series1(struct mt_metric_family *f, const char *v1);
struct mt_series *mt_metric_series2(struct mt_metric_family *f, const char *v1,
				    const char *v2);

/* Counters. */
void mt_series_add(struct mt_series *s, uint64_t n);
/* A collector's copy of a total kept elsewhere (it only grows). */
void mt_series_store(struct mt_series *s, uint64_t total);
/* The same for a fractional total (CPU seconds). */
void mt_series_store_float(struct mt_series *s, double total);
/* Gauges. */
void mt_series_set(struct mt_series *s, double value);
/* Histograms: one observation (seconds, bytes: the unit the name says). */
void mt_series_observe(struct mt_series *s, double value);

/* The current value of a counter or gauge (tests, `cluster status`). */
double mt_series_value(const struct mt_series *s);

/* Called in registration order before each render. */
void mt_metrics_add_collector(struct mt_metrics *m, mt_metrics_collect_cb_t *cb,
			      void *context);
void mt_metrics_remove_collector(struct mt_metrics *m, mt_metrics_collect_cb_t *cb,
				 void *context);

/* Run the collectors, then append every family to out. */
void mt_metrics_render(struct mt_metrics *m, struct mt_buf *out);

/* The standard process_* metrics (CPU seconds, resident and virtual
 * memory, open and maximum fds, start time), read from /proc at each
 * render (lib/metrics-process.c). Once per process. */
void mt_metrics_add_process(struct mt_metrics *m);

#endif
