/* ctl-metrics.h — what `mailtierctl cluster status` and `cluster top`
 * read from the daemons: their /metrics endpoints (metrics_listen),
 * scraped over HTTP with libevent's evhttp client and parsed from the
 * Prometheus text exposition format (version 0.0.4) into samples that can
 * be summed by name and labels.
 *
 * Trust boundary: the reply comes from a daemon of the operator's own
 * cluster, but it is read as untrusted bytes: the body is bounded
 * (CTL_METRICS_BODY_MAX), every line is checked, a line that is not a
 * comment or a sample is an error naming its line number, and nothing is
 * kept beyond the parsed samples.
 * Format: https://prometheus.io/docs/instrumenting/exposition_formats/ */
#ifndef MT_CTL_METRICS_H
#define MT_CTL_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#define CTL_METRICS_BODY_MAX (4u * 1024 * 1024)
#define CTL_METRICS_LABELS_MAX 8

struct ctl_metric_label {
	char *name;
	char *value;	/* unescaped */
};

struct ctl_metric_sample {
	char *name;
	struct ctl_metric_label labels[CTL_METRICS_LABELS_MAX];
	size_t n_labels;
	double value;
};

struct ctl_metrics {
	struct ctl_metric_sample *samples;
	size_t n_samples, alloc;
};

/* Parse a whole exposition. false and *error_r ("line N: what") on the
 * first line that is neither a comment, blank nor a valid sample; what was
 * parsed before stays in m (ctl_metrics_free it either way). */
bool ctl_metrics_parse(struct ctl_metrics *m, const char *text, size_t len,
		       char **error_r);
void ctl_metrics_free(struct ctl_metrics *m);

/* The sum of NAME's samples whose labels include every pair of match
 * ("k=v,k2=v2"; NULL or "" matches all). *found_r (if not NULL) says
 * whether any sample matched. */
double ctl_metrics_sum(const struct ctl_metrics *m, const char *name,
		       const char *match, bool *found_r);

/* One endpoint to scrape. */
struct ctl_metrics_target {
	const char *host;	/* numeric address */
	unsigned int port;
	/* Results: ok with the parsed metrics, or error set (caller frees
	 * with ctl_metrics_target_clear). */
	bool ok;
	struct ctl_metrics metrics;
	char *error;
	double elapsed_s;	/* how long the scrape took */
};

/* GET /metrics from every target at once, each within timeout_ms. */
void ctl_metrics_scrape(struct ctl_metrics_target *targets, size_t n,
			unsigned int timeout_ms);
void ctl_metrics_target_clear(struct ctl_metrics_target *t);

#endif
