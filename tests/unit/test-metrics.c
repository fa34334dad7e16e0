/* test-metrics.c — unit tests for lib/metrics.c: the text a registry
 * renders (HELP/TYPE lines, labels in order, integer and fractional
 * values, +Inf/NaN), label values and help text escaped as the Prometheus
 * text format asks, cumulative histogram buckets with _sum and _count,
 * counters stored by collectors, gauges, a family registered twice, and
 * series updated from several threads adding up. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "metrics.h"

static char *render(struct mt_metrics *m)
{
	struct mt_buf out = MT_BUF_INIT;
	mt_metrics_render(m, &out);
	return mt_buf_steal(&out);
}

static void assert_has_line(const char *text, const char *line)
{
	size_t len = strlen(line);
	for (const char *at = text; (at = strstr(at, line)) != NULL; at++)
		if ((at == text || at[-1] == '\n') && at[len] == '\n')
			return;
	fail_msg("line \"%s\" not in:\n%s", line, text);
}

static void test_counter_and_gauge(void **state)
{
	(void)state;
	struct mt_metrics *m = mt_metrics_new();
	struct mt_series *accepted = mt_metrics_counter_series(m,
		"mailtier_test_messages_total", "Messages seen.");
	mt_series_add(accepted, 3);
	mt_series_add(accepted, 7);
	struct mt_series *queue = mt_metrics_gauge_series(m, "mailtier_test_queue",
							  "Queue size.");
	mt_series_set(queue, 2.5);
	char *text = render(m);
	assert_string_equal(text,
		"# HELP mailtier_test_messages_total Messages seen.\n"
		"# TYPE mailtier_test_messages_total counter\n"
		"mailtier_test_messages_total 10\n"
		"# HELP mailtier_test_queue Queue size.\n"
		"# TYPE mailtier_test_queue gauge\n"
		"mailtier_test_queue 2.5\n");
	free(text);
	assert_true(mt_series_value(accepted) == 10);
	mt_series_set(queue, INFINITY);
	text = render(m);
	assert_has_line(text, "mailtier_test_queue +Inf");
	free(text);
	mt_series_set(queue, NAN);
	text = render(m);
	assert_has_line(text, "mailtier_test_queue NaN");
	free(text);
	mt_metrics_free(&m);
	assert_null(m);
}

static void test_labels_and_escaping(void **state)
{
	(void)state;
	struct mt_metrics *m = mt_metrics_new();
	struct mt_metric_family *f = mt_metrics_counter(m, "mailtier_test_refused_total",
		"Refused \\ by \"reason\"\nsecond line.", "listener,reason");
	mt_series_add(mt_metric_series2(f, "smtp", "relay"), 1);
	mt_series_add(mt_metric_series2(f, "smtp", "quo\"te\\back\nnl"), 2);
	/* The same label values: the same series. */
	mt_series_add(mt_metric_series2(f, "smtp", "relay"), 4);
	/* Registered again: the same family. */
	assert_ptr_equal(mt_metrics_counter(m, "mailtier_test_refused_total", "other",
					    "listener,reason"), f);
	char *text = render(m);
	assert_has_line(text, "# HELP mailtier_test_refused_total Refused \\\\ by \"reason\"\\nsecond line.");
	assert_has_line(text, "# TYPE mailtier_test_refused_total counter");
	assert_has_line(text, "mailtier_test_refused_total{listener=\"smtp\",reason=\"relay\"} 5");
	assert_has_line(text, "mailtier_test_refused_total{listener=\"smtp\","
			"reason=\"quo\\\"te\\\\back\\nnl\"} 2");
	/* One HELP and one TYPE line per family. */
	assert_ptr_equal(strstr(strstr(text, "# TYPE") + 1, "# TYPE"), NULL);
	free(text);
	mt_metrics_free(&m);
}

static void test_histogram(void **state)
{
	(void)state;
	struct mt_metrics *m = mt_metrics_new();
	static const double bounds[] = { 0.1, 1, 10 };
	struct mt_metric_family *f = mt_metrics_histogram(m, "mailtier_test_latency_seconds",
		"Latency.", "result", bounds, 3);
	struct mt_series *s = mt_metric_series1(f, "ok");
	mt_series_observe(s, 0.05);
	mt_series_observe(s, 0.1);	/* le is inclusive */
	mt_series_observe(s, 0.5);
	mt_series_observe(s, 20);	/* only in +Inf */
	char *text = render(m);
	assert_has_line(text, "# TYPE mailtier_test_latency_seconds histogram");
	assert_has_line(text, "mailtier_test_latency_seconds_bucket{result=\"ok\",le=\"0.1\"} 2");
	assert_has_line(text, "mailtier_test_latency_seconds_bucket{result=\"ok\",le=\"1\"} 3");
	assert_has_line(text, "mailtier_test_latency_seconds_bucket{result=\"ok\",le=\"10\"} 3");
	assert_has_line(text, "mailtier_test_latency_seconds_bucket{result=\"ok\",le=\"+Inf\"} 4");
	assert_has_line(text, "mailtier_test_latency_seconds_sum{result=\"ok\"} 20.65");
	assert_has_line(text, "mailtier_test_latency_seconds_count{result=\"ok\"} 4");
	free(text);
	mt_metrics_free(&m);
}

struct collected {
	struct mt_series *total;
	struct mt_series *seconds;
	uint64_t source;
	int calls;
};

static void collect(void *context)
{
	struct collected *c = context;
	c->calls++;
	mt_series_store(c->total, c->source);
	mt_series_store_float(c->seconds, (double)c->source / 4);
}

static void test_collector(void **state)
{
	(void)state;
	struct mt_metrics *m = mt_metrics_new();
	struct collected c = {
		mt_metrics_counter_series(m, "mailtier_test_kept_total", "Kept elsewhere."),
		mt_metrics_counter_series(m, "mailtier_test_kept_seconds_total", "Seconds."),
		41, 0,
	};
	mt_metrics_add_collector(m, collect, &c);
	char *text = render(m);
	assert_int_equal(c.calls, 1);
	assert_has_line(text, "mailtier_test_kept_total 41");
	assert_has_line(text, "mailtier_test_kept_seconds_total 10.25");
	free(text);
	c.source = 42;
	text = render(m);
	assert_has_line(text, "mailtier_test_kept_total 42");
	free(text);
	mt_metrics_remove_collector(m, collect, &c);
	c.source = 50;
	text = render(m);
	assert_int_equal(c.calls, 2);
	assert_has_line(text, "mailtier_test_kept_total 42");
	free(text);
	mt_metrics_free(&m);
}

#define THREADS 4
#define ADDS 100000

static void *histogram_adder(void *context)
{
	struct mt_series *s = context;
	for (int i = 0; i < ADDS; i++)
		mt_series_observe(s, 0.5);
	return NULL;
}

static void *counter_adder(void *context)
{
	struct mt_metric_family *f = context;
	for (int i = 0; i < ADDS; i++)
		mt_series_add(mt_metric_series1(f, "shared"), 1);
	return NULL;
}

static void test_threads(void **state)
{
	(void)state;
	struct mt_metrics *m = mt_metrics_new();
	struct mt_metric_family *f = mt_metrics_counter(m, "mailtier_test_adds_total",
							"Adds.", "kind");
	static const double bounds[] = { 1 };
	struct mt_series *h = mt_metric_series(mt_metrics_histogram(m,
		"mailtier_test_observed_seconds", "Observed.", NULL, bounds, 1), NULL);
	pthread_t threads[2 * THREADS];
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_create(&threads[i], NULL, counter_adder, f), 0);
		assert_int_equal(pthread_create(&threads[THREADS + i], NULL, histogram_adder, h), 0);
	}
	for (int i = 0; i < 2 * THREADS; i++)
		pthread_join(threads[i], NULL);
	char *text = render(m);
	assert_has_line(text, "mailtier_test_adds_total{kind=\"shared\"} 400000");
	assert_has_line(text, "mailtier_test_observed_seconds_bucket{le=\"1\"} 400000");
	assert_has_line(text, "mailtier_test_observed_seconds_sum 200000");
	assert_has_line(text, "mailtier_test_observed_seconds_count 400000");
	free(text);
	mt_metrics_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_and_gauge),
		cmocka_unit_test(test_labels_and_escaping),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_collector),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
