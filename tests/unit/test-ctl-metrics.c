/* test-ctl-metrics.c — unit tests for ctl/ctl-metrics-parse.c, the
 * Prometheus text format reader of `mailtierctl cluster status` and
 * `cluster top`: what lib/metrics.c renders (counters, gauges, a histogram,
 * label values with every escape, the process_* family) read back with
 * the same values; sums by name and label matchers; the format's spellings
 * (+Inf, NaN, timestamps, CRLF, a trailing comma in labels); and every
 * malformed line refused with its line number, never read past its end. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ctl-metrics.h"
#include "metrics.h"

static bool parse(const char *text, struct ctl_metrics *m, char **error_r)
{
	memset(m, 0, sizeof(*m));
	*error_r = NULL;
	return ctl_metrics_parse(m, text, strlen(text), error_r);
}

static void test_reads_what_the_daemons_render(void **state)
{
	(void)state;
	struct mt_metrics *reg = mt_metrics_new();
	struct mt_metric_family *sessions = mt_metrics_counter(reg, "mailtier_sessions_total",
							       "Sessions.", "listener,outcome");
	mt_series_add(mt_metric_series2(sessions, "smtp", "ok"), 7);
	mt_series_add(mt_metric_series2(sessions, "smtp", "failed"), 2);
	mt_series_add(mt_metric_series2(sessions, "submission", "ok"), 5);
	mt_series_add(mt_metric_series2(sessions, "odd \"quoted\" \\ back\nslash", "ok"), 1);
	mt_series_set(mt_metrics_gauge_series(reg, "mailtier_mta_queue_messages", "Queue."), 42);
	static const double bounds[] = { 0.01, 0.1, 1 };
	struct mt_metric_family *latency = mt_metrics_histogram(
		reg, "mailtier_mta_delivery_latency_seconds", "Latency.", "destination", bounds, 3);
	struct mt_series *lmtp = mt_metric_series1(latency, "lmtp");
	mt_series_observe(lmtp, 0.005);
	mt_series_observe(lmtp, 0.5);
	mt_series_observe(lmtp, 5);
	mt_metrics_add_process(reg);
	struct mt_buf text = MT_BUF_INIT;
	mt_metrics_render(reg, &text);

	struct ctl_metrics m;
	char *error;
	assert_true(parse(mt_buf_cstr(&text), &m, &error));
	assert_null(error);
	bool found;
	assert_true(ctl_metrics_sum(&m, "mailtier_sessions_total", NULL, &found) == 15);
	assert_true(found);
	assert_true(ctl_metrics_sum(&m, "mailtier_sessions_total", "listener=smtp", NULL) == 9);
	assert_true(ctl_metrics_sum(&m, "mailtier_sessions_total", "listener=smtp,outcome=ok",
				    NULL) == 7);
	assert_true(ctl_metrics_sum(&m, "mailtier_sessions_total", "outcome=ok", NULL) == 13);
	assert_true(ctl_metrics_sum(&m, "mailtier_sessions_total", "listener=lmtp", &found) == 0);
	assert_false(found);
	assert_true(ctl_metrics_sum(&m, "mailtier_sessions_total",
				    "listener=odd \"quoted\" \\ back\nslash", NULL) == 1);
	assert_true(ctl_metrics_sum(&m, "mailtier_mta_queue_messages", NULL, NULL) == 42);
	assert_true(ctl_metrics_sum(&m, "mailtier_mta_delivery_latency_seconds_count",
				    "destination=lmtp", NULL) == 3);
	assert_true(ctl_metrics_sum(&m, "mailtier_mta_delivery_latency_seconds_bucket",
				    "destination=lmtp,le=0.1", NULL) == 1);
	assert_true(ctl_metrics_sum(&m, "mailtier_mta_delivery_latency_seconds_bucket",
				    "destination=lmtp,le=+Inf", NULL) == 3);
	assert_true(fabs(ctl_metrics_sum(&m, "mailtier_mta_delivery_latency_seconds_sum", NULL,
					 NULL) - 5.505) < 1e-9);
	assert_true(ctl_metrics_sum(&m, "process_resident_memory_bytes", NULL, &found) > 0);
	assert_true(found);
	assert_true(ctl_metrics_sum(&m, "no_such_metric", NULL, &found) == 0);
	assert_false(found);
	ctl_metrics_free(&m);
	mt_buf_free(&text);
	mt_metrics_free(&reg);
}

static void test_format_spellings(void **state)
{
	(void)state;
	struct ctl_metrics m;
	char *error;
	assert_true(parse("# HELP a_total A.\r\n# TYPE a_total counter\r\n"
			  "a_total{x=\"1\",} 3 1700000000000\r\n"
			  "\n"
			  "b +Inf\n"
			  "c -Inf\n"
			  "d NaN\n"
			  "e{} 1.5e3\n"
			  "f:g\t-2\n"
			  "# any other comment\n"
			  "h 7", &m, &error));
	assert_int_equal(m.n_samples, 7);
	assert_true(ctl_metrics_sum(&m, "a_total", "x=1", NULL) == 3);
	assert_true(isinf(ctl_metrics_sum(&m, "b", NULL, NULL)));
	assert_true(ctl_metrics_sum(&m, "c", NULL, NULL) < 0);
	assert_true(isnan(ctl_metrics_sum(&m, "d", NULL, NULL)));
	assert_true(ctl_metrics_sum(&m, "e", NULL, NULL) == 1500);
	assert_true(ctl_metrics_sum(&m, "f:g", NULL, NULL) == -2);
	assert_true(ctl_metrics_sum(&m, "h", NULL, NULL) == 7);
	ctl_metrics_free(&m);
}

static void test_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		const char *error;
	} cases[] = {
		{ "ok 1\n9bad 1\n", "line 2: not a metric name" },
		{ "a{x=\"1\" 2\n", "line 1: labels not separated by ','" },
		{ "a{x=\"1\"", "line 1: labels without their closing '}'" },
		{ "a{x=\"1} 2\n", "line 1: label value without its closing quote" },
		{ "a{x=\"\\t\"} 2\n", "line 1: unknown escape in a label value (only \\\\, \\\" and \\n)" },
		{ "a{x} 2\n", "line 1: a label name without =\"value\"" },
		{ "a{1x=\"1\"} 2\n", "line 1: bad label name" },
		{ "a{:x=\"1\"} 2\n", "line 1: bad label name" },
		{ "a\n", "line 1: no space before the value" },
		{ "a 1x\n", "line 1: the value is not a number" },
		{ "a inf\n", "line 1: the value is not a number" },
		{ "a 0x10\n", "line 1: the value is not a number" },
		{ "a 1 2 3\n", "line 1: something after the value that is not a timestamp" },
		{ "a 1 12z\n", "line 1: something after the value that is not a timestamp" },
		{ "a 1 -\n", "line 1: something after the value that is not a timestamp" },
		{ "a{a=\"\",b=\"\",c=\"\",d=\"\",e=\"\",f=\"\",g=\"\",h=\"\",i=\"\"} 1\n",
		  "line 1: more labels than this reader keeps (8)" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ctl_metrics m;
		char *error;
		assert_false(parse(cases[i].text, &m, &error));
		assert_non_null(error);
		assert_string_equal(error, cases[i].error);
		free(error);
		ctl_metrics_free(&m);
	}
	/* A NUL inside the text is refused, not taken for its end. */
	struct ctl_metrics m = { 0 };
	char *error = NULL;
	assert_false(ctl_metrics_parse(&m, "a 1\nb\0 2\n", 9, &error));
	assert_string_equal(error, "line 2: a NUL byte");
	free(error);
	ctl_metrics_free(&m);
}

/* The parser stops at len: a sample cut at the buffer's end is read as
 * what is there (a value cut short is still a number, a name alone is an
 * error), and nothing past len is touched (ASan's build checks). */
static void test_bounded_by_len(void **state)
{
	(void)state;
	const char full[] = "abc{x=\"1\"} 123";
	for (size_t len = 1; len < sizeof(full) - 1; len++) {
		char *cut = malloc(len);
		memcpy(cut, full, len);
		struct ctl_metrics m = { 0 };
		char *error = NULL;
		bool ok = ctl_metrics_parse(&m, cut, len, &error);
		if (len >= strlen("abc{x=\"1\"} 1")) {
			assert_true(ok);
			assert_int_equal(m.n_samples, 1);
		} else {
			assert_false(ok);
			assert_non_null(error);
		}
		free(error);
		ctl_metrics_free(&m);
		free(cut);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_what_the_daemons_render),
		cmocka_unit_test(test_format_spellings),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_bounded_by_len),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
