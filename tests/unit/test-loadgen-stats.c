/* test-loadgen-stats.c — unit tests for mailtier-load's measurement and
 * report arithmetic (loadgen/histogram.c, stats.c, tracker.c, report.c):
 * histogram buckets and percentiles against exact sorted samples, pass/fail
 * counting at the QoS limits, error rates and the QoS verdict, delivery
 * tracking (timed, late, lost, duplicate, sibling and foreign ids, and
 * what is still awaited when the run ends: unresolved, not lost), the
 * verdict on levels with too few attempts to judge, the run's validity
 * rule and the report's words for it, and JSON output; and the manager/agent protocol
 * (loadgen/wire.c, run-options.c): stats blocks, heartbeats and settings
 * round-trip exactly, and bad lines are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "histogram.h"
#include "report.h"
#include "rng.h"
#include "run-options.h"
#include "stats.h"
#include "tracker.h"
#include "wire.h"

static void test_hist_buckets(void **state)
{
	/* Every bucket's bounds map back to it, and buckets tile the line. */
	for (size_t i = 0; i + 1 < LG_HIST_BUCKETS - 64; i++) {
		uint64_t low = lg_hist_bucket_low(i), high = lg_hist_bucket_high(i);
		assert_int_equal(lg_hist_index(low), i);
		assert_int_equal(lg_hist_index(high), i);
		assert_true(lg_hist_bucket_low(i + 1) == high + 1);
		/* Relative width at most 1/64. */
		if (low >= 64)
			assert_true((double)(high - low + 1) / (double)low <= 1.0 / 64 + 1e-12);
	}
	for (uint64_t v = 0; v < 200; v++)
		assert_true(lg_hist_bucket_low(lg_hist_index(v)) <= v);
	assert_int_equal(lg_hist_index(UINT64_MAX), LG_HIST_BUCKETS - 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_hist_quantiles(void **state)
{
	enum { N = 100000 };
	static uint64_t samples[N];
	static struct lg_hist hist;
	struct lg_rng rng;
	const double qs[] = { 0.01, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0 };
	double sum = 0;

	lg_hist_init(&hist);
	assert_int_equal(lg_hist_quantile(&hist, 0.5), 0);
	lg_rng_seed(&rng, 3, 0);
	for (int i = 0; i < N; i++) {
		/* Log-normal-ish latencies from 20 us to ~20 s. */
		samples[i] = (uint64_t)(20 * exp(lg_rng_uniform(&rng) * 13.8));
		lg_hist_record(&hist, samples[i]);
		sum += (double)samples[i];
	}
	qsort(samples, N, sizeof(samples[0]), cmp_u64);
	assert_true(hist.count == N);
	assert_true(hist.min == samples[0]);
	assert_true(hist.max == samples[N - 1]);
	assert_true(fabs(lg_hist_mean(&hist) - sum / N) < 1e-6 * sum / N);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		size_t rank = (size_t)ceil(qs[i] * N);
		uint64_t exact = samples[rank - 1];
		uint64_t got = lg_hist_quantile(&hist, qs[i]);
		/* Never below the true value, at most one bucket above it. */
		assert_true(got >= exact);
		assert_true((double)got <= (double)exact * (1 + 1.0 / 64) + 1);
	}
	assert_true(lg_hist_quantile(&hist, 1.0) == samples[N - 1]);
}

static void test_hist_small(void **state)
{
	struct lg_hist *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));

	lg_hist_init(a);
	lg_hist_init(b);
	/* 1..100 ms in us: p50 = 50 ms, p95 = 95 ms, p99 = 99 ms (+1/64). */
	for (uint64_t ms = 1; ms <= 100; ms++)
		lg_hist_record(ms <= 50 ? a : b, ms * 1000);
	lg_hist_merge(a, b);
	assert_true(a->count == 100);
	assert_true(a->min == 1000 && a->max == 100000);
	assert_true(fabs(lg_hist_mean(a) - 50500) < 1e-9);
	uint64_t p50 = lg_hist_quantile(a, 0.50), p95 = lg_hist_quantile(a, 0.95),
		 p99 = lg_hist_quantile(a, 0.99);
	assert_true(p50 >= 50000 && p50 <= 50000 * 65 / 64);
	assert_true(p95 >= 95000 && p95 <= 95000 * 65 / 64);
	assert_true(p99 >= 99000 && p99 <= 100000);
	assert_true(lg_hist_count_at_most(a, 10000 - 1) <= 9);
	free(a);
	free(b);
}

static void test_pass_fail(void **state)
{
	struct lg_stats *st = malloc(sizeof(*st));

	lg_stats_init(st);
	assert_true(lg_stats_pass_pct(st, LG_FN_SMTP_CONNECT) < 0);
	assert_true(lg_stats_error_rate_pct(st) < 0);
	assert_false(lg_stats_qos_met(st));	/* no evidence */

	/* 4 connects: fast, exactly at the limit, late, and unanswered. */
	for (int i = 0; i < 4; i++)
		lg_stats_attempt(st, LG_FN_SMTP_CONNECT);
	lg_stats_answered(st, LG_FN_SMTP_CONNECT, 1000, true);
	lg_stats_answered(st, LG_FN_SMTP_CONNECT, 5000000, true);
	lg_stats_answered(st, LG_FN_SMTP_CONNECT, 5000001, true);
	/* A fast but wrong answer is no pass either. */
	lg_stats_attempt(st, LG_FN_SMTP_DATA);
	lg_stats_answered(st, LG_FN_SMTP_DATA, 10, false);
	const struct lg_fn_stats *c = &st->fn[LG_FN_SMTP_CONNECT];
	assert_true(c->attempts == 4 && c->pass == 2 && c->hist.count == 3);
	assert_true(fabs(lg_stats_pass_pct(st, LG_FN_SMTP_CONNECT) - 50) < 1e-9);
	assert_true(st->fn[LG_FN_SMTP_DATA].pass == 0);

	/* Delivery's limit is 60 s. */
	lg_stats_attempt(st, LG_FN_DELIVERY);
	lg_stats_answered(st, LG_FN_DELIVERY, 59000000, true);
	assert_true(st->fn[LG_FN_DELIVERY].pass == 1);

	/* Error rate: failed sessions over attempted ones. */
	st->sessions[LG_KIND_SMTP_LOCAL] = 150;
	st->sessions[LG_KIND_POP_FIRST] = 50;
	st->sessions_failed[LG_KIND_POP_FIRST] = 1;
	assert_true(fabs(lg_stats_error_rate_pct(st) - 0.5) < 1e-9);
	free(st);
}

static void test_qos_verdict(void **state)
{
	struct lg_stats *st = malloc(sizeof(*st));

	lg_stats_init(st);
	st->sessions[LG_KIND_SMTP_LOCAL] = 1000;
	/* 96% within the limit: met; 95% exactly: not (">95%"). */
	st->fn[LG_FN_POP_RETR].attempts = 100;
	st->fn[LG_FN_POP_RETR].pass = 96;
	assert_true(lg_stats_qos_met(st));
	st->fn[LG_FN_POP_RETR].pass = 95;
	assert_false(lg_stats_qos_met(st));
	st->fn[LG_FN_POP_RETR].pass = 100;
	/* Non-summary steps don't decide it. */
	st->fn[LG_FN_SMTP_MAIL].attempts = 100;
	assert_true(lg_stats_qos_met(st));
	/* Error rate below 1%. */
	st->sessions_failed[LG_KIND_SMTP_LOCAL] = 9;
	assert_true(lg_stats_qos_met(st));
	st->sessions_failed[LG_KIND_SMTP_LOCAL] = 10;
	assert_false(lg_stats_qos_met(st));

	/* Merging adds everything. */
	struct lg_stats *sum = malloc(sizeof(*sum));
	lg_stats_init(sum);
	st->counters.bytes_down = 7;
	st->counters.probe_session_errors = 3;
	lg_stats_merge(sum, st);
	lg_stats_merge(sum, st);
	assert_true(sum->sessions[LG_KIND_SMTP_LOCAL] == 2000);
	assert_true(sum->fn[LG_FN_POP_RETR].attempts == 200);
	assert_true(sum->counters.bytes_down == 14);
	assert_true(sum->counters.probe_session_errors == 6);
	free(sum);
	free(st);
}

static void test_tracker(void **state)
{
	struct lg_tracker *t = lg_tracker_new(0x0123456789abcdefULL, 120000000);
	struct lg_stats *st = malloc(sizeof(*st));
	char id[LG_ID_MAX];

	lg_stats_init(st);
	uint64_t s1 = lg_tracker_next_seq(t), s2 = lg_tracker_next_seq(t),
		 s3 = lg_tracker_next_seq(t);
	lg_tracker_expect(t, s1, 3, st, 1000000);
	lg_tracker_expect(t, s2, 1, st, 2000000);
	lg_tracker_expect(t, s3, 2, st, 3000000);
	assert_true(lg_tracker_outstanding(t) == 6);
	assert_true(st->fn[LG_FN_DELIVERY].attempts == 6);

	lg_tracker_format_id(t, s1, id);
	assert_string_equal(id, "0123456789abcdef.1");
	/* Two copies in one transaction, then the third; then a duplicate. */
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 2, 1500000), LG_SEEN_TRACKED);
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 62000000), LG_SEEN_TRACKED);
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 63000000), LG_SEEN_UNTRACKED);
	assert_true(st->fn[LG_FN_DELIVERY].pass == 2);	/* 0.5 s twice; 61 s late */
	assert_true(st->counters.deliveries_late == 1);
	assert_true(st->fn[LG_FN_DELIVERY].hist.count == 3);

	/* Upper-case hex is the same id; other runs and junk are foreign. */
	assert_int_equal(lg_tracker_seen(t, "0123456789ABCDEF.2", 18, 1, 2500000), LG_SEEN_TRACKED);
	assert_int_equal(lg_tracker_seen(t, "1123456789abcdef.3", 18, 1, 0), LG_SEEN_FOREIGN);
	assert_int_equal(lg_tracker_seen(t, "0123456789abcdef.", 17, 1, 0), LG_SEEN_FOREIGN);
	assert_int_equal(lg_tracker_seen(t, "0123456789abcdef.3x", 19, 1, 0), LG_SEEN_FOREIGN);
	assert_int_equal(lg_tracker_seen(t, "zz", 2, 1, 0), LG_SEEN_FOREIGN);
	assert_int_equal(lg_tracker_seen(t, "0123456789abcdef.99", 19, 1, 0), LG_SEEN_UNTRACKED);

	/* What a ramp point is judged on at its end: the awaited deliveries
	 * per phase (s3's two, none for another phase's stats). */
	struct lg_stats *other = malloc(sizeof(*other));
	lg_stats_init(other);
	assert_true(lg_tracker_outstanding_for(t, st) == 2);
	assert_true(lg_tracker_outstanding_for(t, other) == 0);
	uint64_t s4 = lg_tracker_next_seq(t);
	lg_tracker_expect(t, s4, 1, other, 3500000);
	assert_true(lg_tracker_outstanding_for(t, other) == 1);
	assert_true(lg_tracker_outstanding_for(t, st) == 2);
	lg_tracker_format_id(t, s4, id);
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 4000000), LG_SEEN_TRACKED);
	assert_true(lg_tracker_outstanding_for(t, other) == 0);
	free(other);

	/* s3 never arrives: lost after the expiry, not before. */
	lg_tracker_expire(t, 100000000);
	assert_true(lg_tracker_outstanding(t) == 2);
	lg_tracker_expire(t, 124000000);
	assert_true(lg_tracker_outstanding(t) == 0);
	assert_true(st->counters.deliveries_lost == 2);
	assert_true(st->fn[LG_FN_DELIVERY].attempts == 6);
	assert_true(st->fn[LG_FN_DELIVERY].pass == 3);
	const struct lg_tracker_counts *counts = lg_tracker_counts(t);
	assert_true(counts->tracked == 5 && counts->foreign == 4);
	lg_tracker_free(&t);
	assert_null(t);
	free(st);
}

/* Issue #16: what is still awaited when the run ends is unresolved, not
 * lost. Within its 60 s its outcome is unknown: it leaves the Delivery
 * Time attempts; past them it missed the limit: an attempt without a pass.
 * Only the expiry (120 s not seen while the run went on) makes a loss. */
static void test_tracker_end(void **state)
{
	struct lg_tracker *t = lg_tracker_new(0x0123456789abcdefULL, 120000000);
	struct lg_stats *st = malloc(sizeof(*st));
	const uint64_t sec = 1000000;
	char id[LG_ID_MAX];

	lg_stats_init(st);
	uint64_t lost = lg_tracker_next_seq(t), overdue = lg_tracker_next_seq(t),
		 recent = lg_tracker_next_seq(t), seen = lg_tracker_next_seq(t);
	lg_tracker_expect(t, lost, 1, st, 0);
	lg_tracker_expect(t, overdue, 2, st, 100 * sec);
	lg_tracker_expect(t, recent, 1, st, 150 * sec);
	lg_tracker_expect(t, seen, 1, st, 150 * sec);
	lg_tracker_format_id(t, seen, id);
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 151 * sec), LG_SEEN_TRACKED);
	assert_true(st->fn[LG_FN_DELIVERY].attempts == 5);

	/* At 165 s the first is 165 s old: lost; the rest are not expired. */
	lg_tracker_expire(t, 165 * sec);
	assert_true(st->counters.deliveries_lost == 1);
	assert_true(lg_tracker_outstanding(t) == 3);
	/* The run ends at 165 s: "overdue" waited 65 s, "recent" 15 s. */
	lg_tracker_end(t, 165 * sec);
	assert_true(lg_tracker_outstanding(t) == 0);
	assert_true(st->counters.deliveries_lost == 1);
	assert_true(st->counters.deliveries_unresolved == 3);
	assert_true(st->counters.deliveries_unresolved_late == 2);
	/* lost (1) and overdue (2) fail, seen passes, recent is left out. */
	assert_true(st->fn[LG_FN_DELIVERY].attempts == 4);
	assert_true(st->fn[LG_FN_DELIVERY].pass == 1);
	/* Nothing is left to give up on. */
	lg_tracker_end(t, 1000 * sec);
	assert_true(st->counters.deliveries_unresolved == 3);
	lg_tracker_free(&t);
	free(st);
}

/* Issue #16 (the demo's "lost 1" while the MTA delivered every message):
 * a message can arrive (at the sink, or in a mailbox) before the generator
 * has read the 250 that accepted it. Seen while pending it is kept, timed
 * when the 250 comes (from the data's end: an upper bound), and never then
 * awaited until it expires as lost. A pending message that is refused, or
 * whose session ends without a reply, is forgotten: its early arrivals are
 * untracked. */
static void test_tracker_early_arrival(void **state)
{
	struct lg_tracker *t = lg_tracker_new(0x0123456789abcdefULL, 120000000);
	struct lg_stats *st = malloc(sizeof(*st));
	const uint64_t sec = 1000000;
	char id[LG_ID_MAX];

	lg_stats_init(st);
	uint64_t early = lg_tracker_next_seq(t), refused = lg_tracker_next_seq(t),
		 both = lg_tracker_next_seq(t);
	lg_tracker_sending(t, early, 10 * sec);
	lg_tracker_format_id(t, early, id);
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 10 * sec + 300000), LG_SEEN_TRACKED);
	assert_true(lg_tracker_outstanding(t) == 0);
	assert_true(st->fn[LG_FN_DELIVERY].attempts == 0);
	/* The 250 is read 0.5 s after the data's end: one attempt, passed,
	 * timed 0.3 s; nothing left to await. */
	lg_tracker_expect(t, early, 1, st, 10 * sec + 500000);
	assert_true(st->fn[LG_FN_DELIVERY].attempts == 1);
	assert_true(st->fn[LG_FN_DELIVERY].pass == 1);
	assert_true(st->fn[LG_FN_DELIVERY].hist.max == 300000);
	assert_true(lg_tracker_outstanding(t) == 0);
	/* A later copy of it is a duplicate. */
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 11 * sec), LG_SEEN_UNTRACKED);

	/* Refused after it was seen: untracked, never expected. */
	lg_tracker_sending(t, refused, 20 * sec);
	lg_tracker_format_id(t, refused, id);
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 20 * sec + 1000), LG_SEEN_TRACKED);
	lg_tracker_abandon(t, refused);
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 21 * sec), LG_SEEN_UNTRACKED);

	/* Two recipients, one seen early: the other is still awaited, and
	 * expires as lost if it never comes. */
	lg_tracker_sending(t, both, 30 * sec);
	lg_tracker_format_id(t, both, id);
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 30 * sec + 1000), LG_SEEN_TRACKED);
	lg_tracker_expect(t, both, 2, st, 30 * sec + 2000);
	assert_true(lg_tracker_outstanding(t) == 1);
	assert_true(lg_tracker_outstanding_for(t, st) == 1);
	/* abandon after the reply is a no-op (the session ends normally). */
	lg_tracker_abandon(t, both);
	assert_true(lg_tracker_outstanding(t) == 1);
	lg_tracker_expire(t, 200 * sec);
	assert_true(st->counters.deliveries_lost == 1);
	assert_true(st->fn[LG_FN_DELIVERY].attempts == 3);
	assert_true(st->fn[LG_FN_DELIVERY].pass == 2);
	const struct lg_tracker_counts *counts = lg_tracker_counts(t);
	assert_true(counts->tracked == 2 && counts->untracked == 3);
	lg_tracker_free(&t);
	free(st);
}

/* Issue #16: a level with too few attempts is not judged (stats.h's rule:
 * 20 per Summary row, 20 sessions for the error rate), unless what it has
 * already fails it; rows with no attempts do not count. */
static void test_qos_small_levels(void **state)
{
	struct lg_stats *st = malloc(sizeof(*st));

	lg_stats_init(st);
	/* No session at all: not judged (it was "not met"). */
	assert_int_equal(lg_stats_error_qos(st), LG_QOS_NOT_JUDGED);
	assert_int_equal(lg_stats_fn_qos(st, LG_FN_SMTP_CONNECT), LG_QOS_UNUSED);
	assert_int_equal(lg_stats_qos(st), LG_QOS_NOT_JUDGED);
	assert_false(lg_stats_qos_met(st));

	/* 19 clean sessions and connects: too few; 20: judged, met. */
	st->sessions[LG_KIND_SMTP_LOCAL] = 19;
	st->fn[LG_FN_SMTP_CONNECT].attempts = st->fn[LG_FN_SMTP_CONNECT].pass = 19;
	assert_int_equal(lg_stats_fn_qos(st, LG_FN_SMTP_CONNECT), LG_QOS_NOT_JUDGED);
	assert_int_equal(lg_stats_error_qos(st), LG_QOS_NOT_JUDGED);
	assert_int_equal(lg_stats_qos(st), LG_QOS_NOT_JUDGED);
	st->sessions[LG_KIND_SMTP_LOCAL] = 20;
	assert_int_equal(lg_stats_error_qos(st), LG_QOS_MET);
	assert_int_equal(lg_stats_qos(st), LG_QOS_NOT_JUDGED);	/* the row */
	st->fn[LG_FN_SMTP_CONNECT].attempts = st->fn[LG_FN_SMTP_CONNECT].pass = 20;
	assert_int_equal(lg_stats_fn_qos(st, LG_FN_SMTP_CONNECT), LG_QOS_MET);
	assert_int_equal(lg_stats_qos(st), LG_QOS_MET);

	/* A small row that already fails (one failure among up to 20 is 5%)
	 * fails the level: more attempts could not save it. */
	st->fn[LG_FN_POP_STAT].attempts = 3;
	st->fn[LG_FN_POP_STAT].pass = 3;
	assert_int_equal(lg_stats_qos(st), LG_QOS_NOT_JUDGED);
	st->fn[LG_FN_POP_STAT].pass = 2;
	assert_int_equal(lg_stats_fn_qos(st, LG_FN_POP_STAT), LG_QOS_NOT_MET);
	assert_int_equal(lg_stats_qos(st), LG_QOS_NOT_MET);
	st->fn[LG_FN_POP_STAT].attempts = st->fn[LG_FN_POP_STAT].pass = 0;
	/* Likewise a failed session among fewer than 20 (>= 1% in any case). */
	st->sessions[LG_KIND_SMTP_LOCAL] = 5;
	st->sessions_failed[LG_KIND_SMTP_LOCAL] = 1;
	assert_int_equal(lg_stats_error_qos(st), LG_QOS_NOT_MET);
	assert_int_equal(lg_stats_qos(st), LG_QOS_NOT_MET);
	/* Beyond the minimum the thresholds are WORKLOAD.md's. */
	st->sessions[LG_KIND_SMTP_LOCAL] = 100;
	assert_int_equal(lg_stats_error_qos(st), LG_QOS_NOT_MET);	/* 1% */
	st->sessions[LG_KIND_SMTP_LOCAL] = 101;
	assert_int_equal(lg_stats_error_qos(st), LG_QOS_MET);
	st->fn[LG_FN_SMTP_CONNECT].pass = 19;	/* of 20: 95%, not > 95% */
	assert_int_equal(lg_stats_fn_qos(st, LG_FN_SMTP_CONNECT), LG_QOS_NOT_MET);
	st->fn[LG_FN_SMTP_CONNECT].attempts = 21;
	st->fn[LG_FN_SMTP_CONNECT].pass = 20;	/* 95.2% */
	assert_int_equal(lg_stats_fn_qos(st, LG_FN_SMTP_CONNECT), LG_QOS_MET);
	assert_int_equal(lg_stats_qos(st), LG_QOS_MET);

	/* A ramp's misses in a row: not judged neither ends nor extends them. */
	assert_int_equal(lg_qos_misses_in_a_row(1, LG_QOS_NOT_MET), 2);
	assert_int_equal(lg_qos_misses_in_a_row(2, LG_QOS_NOT_JUDGED), 2);
	assert_int_equal(lg_qos_misses_in_a_row(2, LG_QOS_MET), 0);
	free(st);
}

static void test_tracker_many(void **state)
{
	/* Growth of the table and the queue, deletes in any order. */
	struct lg_tracker *t = lg_tracker_new(1, 1000);
	struct lg_stats *st = malloc(sizeof(*st));
	char id[LG_ID_MAX];
	enum { N = 20000 };

	lg_stats_init(st);
	for (uint64_t i = 0; i < N; i++)
		lg_tracker_expect(t, lg_tracker_next_seq(t), 1, st, 10);
	for (uint64_t seq = 1; seq <= N; seq += 2) {
		lg_tracker_format_id(t, seq, id);
		assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 20), LG_SEEN_TRACKED);
	}
	for (uint64_t seq = N; seq >= 2; seq -= 2) {
		lg_tracker_format_id(t, seq, id);
		assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 20), LG_SEEN_TRACKED);
	}
	assert_true(lg_tracker_outstanding(t) == 0);
	assert_true(st->fn[LG_FN_DELIVERY].pass == N);
	lg_tracker_end(t, 20);
	assert_true(st->counters.deliveries_lost == 0);
	assert_true(st->counters.deliveries_unresolved == 0);
	lg_tracker_free(&t);
	free(st);
}

static void test_id_header(void **state)
{
	size_t len;
	const char *v;
	const char *line = "X-Mailtier-Load-Id:  0123456789abcdef.42 \t";

	v = lg_id_header_value(line, strlen(line), &len);
	assert_non_null(v);
	assert_int_equal(len, 19);
	assert_memory_equal(v, "0123456789abcdef.42", 19);
	line = "x-mailtier-load-id:a";
	v = lg_id_header_value(line, strlen(line), &len);
	assert_non_null(v);
	assert_int_equal(len, 1);
	line = "X-Mailtier-Load-Idx: 1";
	assert_null(lg_id_header_value(line, strlen(line), &len));
	line = "X-Mailtier-Load-Id";
	assert_null(lg_id_header_value(line, strlen(line), &len));
}

static struct lg_run_result *make_result(void)
{
	struct lg_run_result *r = calloc(1, sizeof(*r));
	static const unsigned int pcts[] = { 80, 100, 120 };

	r->n_levels = 3;
	r->levels = calloc(3, sizeof(*r->levels));
	for (size_t i = 0; i < 3; i++) {
		struct lg_level_result *level = &r->levels[i];
		level->pct = pcts[i];
		level->complete = true;
		level->measure_us = 60000000;
		lg_stats_init(&level->measure);
		lg_stats_init(&level->warmup);
		level->measure.sessions[LG_KIND_SMTP_LOCAL] = 100;
		level->measure.counters.msgs_local_sent = 100;
		level->measure.fn[LG_FN_SMTP_DATA].attempts = 100;
		level->measure.fn[LG_FN_SMTP_DATA].pass = 100;
	}
	lg_stats_init(&r->probes);
	return r;
}

static void test_validity(void **state)
{
	struct lg_run_settings set = { .n_levels = 3 };
	struct lg_run_result *r = make_result();

	assert_true(lg_report_valid(&set, r));
	/* 120% is reported, not required. */
	r->levels[2].measure.sessions_failed[LG_KIND_SMTP_LOCAL] = 50;
	assert_true(lg_report_valid(&set, r));
	/* 100% failing its QoS makes the run invalid. */
	r->levels[1].measure.fn[LG_FN_SMTP_DATA].pass = 90;
	assert_false(lg_report_valid(&set, r));
	r->levels[1].measure.fn[LG_FN_SMTP_DATA].pass = 100;
	/* So does an incomplete required level, or an interruption. */
	r->levels[0].complete = false;
	assert_false(lg_report_valid(&set, r));
	r->levels[0].complete = true;
	r->interrupted = true;
	assert_false(lg_report_valid(&set, r));
	r->interrupted = false;
	/* A run of 120% alone has no required level: not valid. */
	r->levels[0].pct = 120;
	r->levels[1].pct = 130;
	assert_false(lg_report_valid(&set, r));

	/* Totals add every phase and the probes. */
	struct lg_stats *totals = malloc(sizeof(*totals));
	r->probes.sessions[LG_KIND_SMTP_REMOTE] = 7;
	lg_report_totals(r, totals);
	assert_true(totals->sessions[LG_KIND_SMTP_LOCAL] == 300);
	assert_true(totals->sessions[LG_KIND_SMTP_REMOTE] == 7);
	free(totals);
	free(r->levels);
	free(r);
}

static void read_report(const struct lg_run_settings *set,
			const struct lg_run_result *r, char *text, size_t size)
{
	FILE *f = tmpfile();

	assert_non_null(f);
	lg_report_print(f, set, r);
	rewind(f);
	size_t n = fread(text, 1, size - 1, f);
	text[n] = '\0';
	fclose(f);
}

static void read_file(const char *path, char *text, size_t size)
{
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	size_t n = fread(text, 1, size - 1, f);
	text[n] = '\0';
	fclose(f);
	unlink(path);
}

/* Issue #16: `--users 300 --levels 80,100 --duration 30` had no session
 * at 100% and was judged "QoS not met". Now the report says the level is
 * not judged, why, and what to do, in the text, HTML and JSON. */
static void test_report_too_few(void **state)
{
	struct lg_run_settings set = {
		.wl = { .users = 300, .domain = "example.test", .remote_domain = "remote.test" },
		.smtp = "127.0.0.1:25", .pop = "127.0.0.1:110", .n_levels = 3,
		.warmup_ms = 1000, .duration_ms = 30000,
	};
	struct lg_run_result *r = make_result();
	char dir[] = "/tmp/test-loadgen-stats.XXXXXX";
	char path[160];
	static char text[200000];
	const char *error;
	static const char too_few[] = "Not judged at 100%: too few attempts to judge: "
		"raise --users or --duration (sessions 0; 20 needed each)";

	/* 100%: nothing at all; 120% (reported only): 3 clean connects. */
	lg_stats_init(&r->levels[1].measure);
	r->levels[2].measure.fn[LG_FN_SMTP_CONNECT].attempts = 3;
	r->levels[2].measure.fn[LG_FN_SMTP_CONNECT].pass = 3;
	r->levels[2].measure.counters.deliveries_unresolved = 2;
	r->levels[2].measure.counters.deliveries_unresolved_late = 1;
	assert_int_equal(lg_report_level_verdict(&r->levels[0]), LG_LEVEL_MET);
	assert_int_equal(lg_report_level_verdict(&r->levels[1]), LG_LEVEL_NOT_JUDGED);
	assert_false(lg_report_valid(&set, r));

	read_report(&set, r, text, sizeof(text));
	assert_non_null(strstr(text, "\nQoS met                                       yes   too few   too few\n"));
	assert_non_null(strstr(text, too_few));
	assert_non_null(strstr(text, "Not judged at 120%: too few attempts to judge: "
			       "raise --users or --duration (SMTP Connect 3; 20 needed each)"));
	assert_non_null(strstr(text, "\nResult: NOT VALID: QoS not judged at 100% (too few "
			       "attempts to judge: raise --users or --duration); met at 80%\n"));
	assert_null(strstr(text, "not met"));
	assert_non_null(strstr(text, "lost 0, unresolved at end 2 (1 past the 60 s limit)"));

	/* A failing level is "not met", whatever else is too small. */
	r->levels[0].measure.fn[LG_FN_SMTP_DATA].pass = 90;
	read_report(&set, r, text, sizeof(text));
	assert_non_null(strstr(text, "\nResult: NOT VALID: QoS not met at 80%; not judged at 100% (too few "
			       "attempts to judge: raise --users or --duration)\n"));
	r->levels[0].measure.fn[LG_FN_SMTP_DATA].pass = 100;

	assert_non_null(mkdtemp(dir));
	assert_true(lg_report_write_html(dir, &set, r, &error));
	snprintf(path, sizeof(path), "%s/report.html", dir);
	read_file(path, text, sizeof(text));
	assert_non_null(strstr(text, too_few));
	assert_non_null(strstr(text, "<td class=note>too few</td>"));
	assert_non_null(strstr(text, "<b>NOT VALID: QoS not judged at 100% (too few attempts "
			       "to judge: raise --users or --duration); met at 80%.</b>"));
	assert_true(lg_report_write_json(dir, &set, r, &error));
	snprintf(path, sizeof(path), "%s/results.json", dir);
	read_file(path, text, sizeof(text));
	assert_non_null(strstr(text, "\"pct\":100,\"required\":true,\"complete\":true,"
			       "\"qos_met\":false,\"qos\":\"not judged\""));
	assert_non_null(strstr(text, "\"deliveries_unresolved\":2,\"deliveries_unresolved_late\":1"));
	rmdir(dir);
	free(r->levels);
	free(r);
}

static void test_report_output(void **state)
{
	struct lg_run_settings set = {
		.wl = { .users = 20, .domain = "ex\"ample.test", .remote_domain = "remote.test" },
		.smtp = "127.0.0.1:25", .pop = "127.0.0.1:110", .n_levels = 3,
		.warmup_ms = 1000, .duration_ms = 60000,
	};
	struct lg_run_result *r = make_result();
	char dir[] = "/tmp/test-loadgen-stats.XXXXXX";
	char path[160];
	static char text[200000];
	const char *error;
	FILE *f;

	/* The text report: the Summary and a Detailed table per level. */
	f = tmpfile();
	assert_non_null(f);
	lg_report_print(f, &set, r);
	rewind(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	assert_non_null(strstr(text, "Summary Results"));
	assert_non_null(strstr(text, "Detailed Results 80% load"));
	assert_non_null(strstr(text, "Detailed Results 120% load"));
	assert_non_null(strstr(text, "Result: VALID"));
	assert_non_null(strstr(text, "100.00 msgs/min"));

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sub/dir", dir);
	assert_true(lg_report_write_json(path, &set, r, &error));
	snprintf(path, sizeof(path), "%s/sub/dir/results.json", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	assert_non_null(strstr(text, "\"valid\":true"));
	assert_non_null(strstr(text, "\"domain\":\"ex\\\"ample.test\""));
	assert_non_null(strstr(text, "\"smtp_data\":{\"label\":\"SMTP Data\",\"limit_ms\":5000,"
			       "\"attempts\":100,\"pass\":100,\"fail\":0"));
	assert_non_null(strstr(text, "\"achieved_msgs_per_min\":100.0000"));
	assert_non_null(strstr(text, "\"sink\":null"));
	unlink(path);

	/* The HTML page (escaped, with its charts) and the CSV files. */
	r->levels[0].measure.fn[LG_FN_SMTP_DATA].hist.count = 0;
	lg_hist_record(&r->levels[0].measure.fn[LG_FN_SMTP_DATA].hist, 1500);
	snprintf(path, sizeof(path), "%s/sub/dir", dir);
	assert_true(lg_report_write_html(path, &set, r, &error));
	assert_true(lg_report_write_csv(path, &set, r, &error));
	const char *files[] = { "report.html", "functions.csv", "timeline.csv" };
	const char *needles[] = { "ex&quot;ample.test", "level_pct,phase,function,limit_ms,attempts,pass,fail",
				  "t_s,level_pct,phase" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/sub/dir/%s", dir, files[i]);
		f = fopen(path, "r");
		assert_non_null(f);
		n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = '\0';
		fclose(f);
		assert_non_null(strstr(text, needles[i]));
		if (i == 0) {
			assert_non_null(strstr(text, "<svg"));
			assert_non_null(strstr(text, "Summary Results"));
			assert_null(strstr(text, "ex\"ample"));
		}
		if (i == 1)
			assert_non_null(strstr(text, "\n80,measure,smtp_data,5000,100,100,0,100.0000,1.500,"));
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/sub/dir", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	rmdir(dir);
	free(r->levels);
	free(r);
}

/* Ids of the other generators of the same run (another slot in the low
 * bits) are ours but not to be timed here: untracked, not foreign. */
static void test_tracker_siblings(void **state)
{
	struct lg_tracker *t = lg_tracker_new(0x0123456789ab0002ULL, 120000000);
	struct lg_stats *st = malloc(sizeof(*st));
	uint64_t run, seq;
	char id[LG_ID_MAX];

	lg_stats_init(st);
	lg_tracker_expect(t, lg_tracker_next_seq(t), 1, st, 0);
	lg_tracker_format_id(t, 1, id);
	assert_string_equal(id, "0123456789ab0002.1");
	assert_true(lg_id_parse(id, strlen(id), &run, &seq));
	assert_true(run == 0x0123456789ab0002ULL && seq == 1);
	assert_false(lg_id_parse("0123456789ab0002-1", 18, &run, &seq));
	/* slot 3's message 1: not ours to time */
	assert_int_equal(lg_tracker_seen(t, "0123456789ab0003.1", 18, 1, 5), LG_SEEN_UNTRACKED);
	assert_int_equal(lg_tracker_seen(t, "0123456789ac0002.1", 18, 1, 5), LG_SEEN_FOREIGN);
	assert_true(lg_tracker_outstanding(t) == 1);
	assert_int_equal(lg_tracker_seen(t, id, strlen(id), 1, 5), LG_SEEN_TRACKED);
	assert_true(lg_tracker_outstanding(t) == 0);
	lg_tracker_free(&t);
	free(st);
}

static void random_stats(struct lg_stats *st, uint64_t seed)
{
	struct lg_rng rng;

	lg_stats_init(st);
	lg_rng_seed(&rng, seed, 0);
	for (int i = 0; i < 5000; i++) {
		enum lg_function fn = (enum lg_function)lg_rng_below(&rng, LG_FN_COUNT);
		lg_stats_attempt(st, fn);
		if (lg_rng_below(&rng, 10) > 0)
			lg_stats_answered(st, fn, lg_rng_below(&rng, 1ull << lg_rng_below(&rng, 36)),
					  lg_rng_below(&rng, 20) > 0);
	}
	for (int k = 0; k < LG_KIND_COUNT; k++) {
		st->sessions[k] = lg_rng_below(&rng, 1000) + 1;
		st->sessions_failed[k] = lg_rng_below(&rng, st->sessions[k]);
	}
	for (int i = 0; i < LG_ERR_COUNT; i++)
		st->errors[i] = lg_rng_below(&rng, 100);
	uint64_t *c = (uint64_t *)&st->counters;
	for (size_t i = 0; i < sizeof(st->counters) / sizeof(uint64_t); i++)
		c[i] = lg_rng_next(&rng);
}

/* Feed a block's lines (after its "stats" line) into target. */
static void read_block(struct lg_stats *target, const char *text)
{
	char *copy = strdup(text), *save = NULL;
	const char *error;
	int rc = 1, lines = 0;

	char *line = strtok_r(copy, "\n", &save);
	assert_non_null(line);
	assert_memory_equal(line, "stats ", 6);
	while (rc == 1 && (line = strtok_r(NULL, "\n", &save)) != NULL) {
		rc = lg_wire_stats_line(target, line, &error);
		if (rc < 0)
			fail_msg("%s: %s", line, error);
		lines++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(lines, LG_FN_COUNT + 4);
	free(copy);
}

static void test_wire_stats(void **state)
{
	struct lg_stats *st = malloc(sizeof(*st)), *back = malloc(sizeof(*back));
	struct mt_buf b = MT_BUF_INIT;

	/* One block reads back into exactly the same figures. */
	random_stats(st, 3);
	lg_wire_stats(&b, "measure 2", st);
	lg_stats_init(back);
	read_block(back, b.data);
	assert_memory_equal(back, st, sizeof(*st));
	/* Two blocks add up as lg_stats_merge() does. */
	read_block(back, b.data);
	lg_stats_merge(st, st);
	assert_memory_equal(back, st, sizeof(*st));
	/* And an empty one is empty. */
	lg_stats_init(st);
	mt_buf_reset(&b);
	lg_wire_stats(&b, "probes", st);
	lg_stats_init(back);
	read_block(back, b.data);
	assert_memory_equal(back, st, sizeof(*st));

	/* Bad lines are refused, not half-read into nonsense. */
	static const char *const bad[] = {
		/* no such function: after the loop (LG_FN_COUNT grows) */
		"fn 0 1 2 0 0 0 0",			/* more passes than attempts */
		"fn 0 1 1 1 5 5 5 99999:1",		/* no such bucket */
		"fn 0 1 1 2 5 5 5 5:1",			/* buckets != count */
		"fn 0 1 1 1 5 5 5 5:",			/* no count */
		"fn 0 1 1 1 5 5 5 5:1 x",
		"fn x",
		"fn 0 1 1 0 0 0 99999999999999999999",	/* over 2^64 */
		"sessions 1 2 3",
		"errors 1 2 3 4 5 6 7",
		"counters",
		"stats probes",
		"bogus",
	};
	lg_stats_init(back);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *error = NULL;
		if (lg_wire_stats_line(back, bad[i], &error) != -1)
			fail_msg("accepted '%s'", bad[i]);
		assert_non_null(error);
	}
	/* No such function: the first number past the table (it grows). */
	char no_such_fn[64];
	const char *error = NULL;
	snprintf(no_such_fn, sizeof(no_such_fn), "fn %d 1 1 0 0 0 0", LG_FN_COUNT);
	assert_int_equal(lg_wire_stats_line(back, no_such_fn, &error), -1);
	assert_non_null(error);
	mt_buf_free(&b);
	free(st);
	free(back);
}

static void test_wire_beat_hello(void **state)
{
	struct lg_progress p, q;
	struct mt_buf b = MT_BUF_INIT;
	const char *args, *error;
	uint64_t *v = (uint64_t *)&p;

	for (size_t i = 0; i < sizeof(p) / sizeof(uint64_t); i++)
		v[i] = i * 1000003 + 7;
	p.phase = 1;
	lg_wire_beat(&b, &p);
	b.data[--b.len] = '\0';
	lg_wire_word(b.data, &args);
	assert_true(lg_wire_beat_parse(args, &q));
	assert_memory_equal(&p, &q, sizeof(p));
	assert_false(lg_wire_beat_parse("1 2 3", &q));
	p.phase = 3;
	mt_buf_reset(&b);
	lg_wire_beat(&b, &p);
	b.data[--b.len] = '\0';
	lg_wire_word(b.data, &args);
	assert_false(lg_wire_beat_parse(args, &q));

	mt_buf_reset(&b);
	lg_wire_hello(&b);
	assert_true(b.len > 0 && b.data[b.len - 1] == '\n');
	b.data[--b.len] = '\0';
	assert_true(lg_wire_hello_check(b.data, &error));
	b.data[b.len - 1] ^= 1;	/* another enum size or version */
	assert_false(lg_wire_hello_check(b.data, &error));
	assert_false(lg_wire_hello_check("SSH-2.0-OpenSSH", &error));
	mt_buf_free(&b);
}

/* The settings an agent gets are the manager's, option for option. */
static void test_wire_settings(void **state)
{
	struct lg_run_settings a, b;
	struct mt_buf out = MT_BUF_INIT, again = MT_BUF_INIT;
	const char *error;

	lg_run_settings_defaults(&a, true);
	a.smtp = "127.0.0.1:25";
	a.pop = "[::1]:110";
	a.wl.users = 1234;
	a.wl.load_users = 99999;
	a.wl.local_template = "u%06K";
	a.levels[0] = 7;
	a.n_levels = 2;
	a.warmup_ms = 1500;
	a.probe_user = 17;
	a.seed = UINT64_MAX;
	lg_wire_settings(&out, &a);
	assert_non_null(strstr(out.data, "set smtp 127.0.0.1:25\n"));
	assert_non_null(strstr(out.data, "set levels 7,100\n"));
	assert_null(strstr(out.data, "sink-listen"));	/* the manager's own */
	assert_null(strstr(out.data, "set progress"));

	lg_run_settings_defaults(&b, false);
	char *copy = strdup(out.data), *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *rest, *value;
		lg_wire_word(line, &rest);
		size_t len = lg_wire_word(rest, &value);
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)len, rest);
		const struct lg_run_option *opt = lg_run_option_find(name);
		assert_non_null(opt);
		if (!lg_run_option_set(&b, opt, value, &error))
			fail_msg("%s: %s", line, error);
	}
	lg_wire_settings(&again, &b);
	assert_string_equal(out.data, again.data);
	assert_true(b.ramp && b.wl.load_users == 99999 && b.warmup_ms == 1500);
	free(copy);

	/* Bounds and joint rules. */
	static const char *const bad[][2] = {
		{ "users", "0" }, { "users", "-5" }, { "users", "12x" },
		{ "levels", "80,0" }, { "levels", "" }, { "levels", "1,2,3,4,5,6,7,8,9,10,11,12,"
		  "13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33" },
		{ "duration", "soon" }, { "step-timeout", "2h" }, { "ramp", "maybe" },
		{ "max-sessions", "0" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (lg_run_option_set(&b, lg_run_option_find(bad[i][0]), bad[i][1], &error))
			fail_msg("accepted %s=%s", bad[i][0], bad[i][1]);
	assert_non_null(lg_run_option_find("sink_listen"));
	assert_null(lg_run_option_find("sink"));
	lg_run_settings_defaults(&b, false);
	assert_false(lg_run_settings_check(&b, &error));	/* no users */
	b.wl.users = 10;
	assert_false(lg_run_settings_check(&b, &error));	/* no servers */
	b.smtp = b.pop = "127.0.0.1:1";
	assert_true(lg_run_settings_check(&b, &error));
	assert_true(b.probe_user == 10);
	b.probe_user = 11;
	assert_false(lg_run_settings_check(&b, &error));
	b.probe_user = 1;
	b.wl.domain = "a\r\nRCPT TO:<x>";
	assert_false(lg_run_settings_check(&b, &error));
	b.wl.domain = "example.test";
	b.wl.password_template = "%Q";
	assert_false(lg_run_settings_check(&b, &error));
	mt_buf_free(&out);
	mt_buf_free(&again);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hist_buckets),
		cmocka_unit_test(test_hist_quantiles),
		cmocka_unit_test(test_hist_small),
		cmocka_unit_test(test_pass_fail),
		cmocka_unit_test(test_qos_verdict),
		cmocka_unit_test(test_tracker),
		cmocka_unit_test(test_tracker_end),
		cmocka_unit_test(test_tracker_early_arrival),
		cmocka_unit_test(test_qos_small_levels),
		cmocka_unit_test(test_tracker_many),
		cmocka_unit_test(test_id_header),
		cmocka_unit_test(test_validity),
		cmocka_unit_test(test_report_output),
		cmocka_unit_test(test_report_too_few),
		cmocka_unit_test(test_tracker_siblings),
		cmocka_unit_test(test_wire_stats),
		cmocka_unit_test(test_wire_beat_hello),
		cmocka_unit_test(test_wire_settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
