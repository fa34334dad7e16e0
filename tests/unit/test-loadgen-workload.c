/* test-loadgen-workload.c — unit tests for mailtier-load's workload model
 * (loadgen/rng.c, workload.c, schedule.c): the published distributions'
 * sampled means (24.5 KiB, 2.00 recipients), seeded repeatability, distinct
 * recipients and the remote share, account templates, and the schedule's
 * session rates in steady state, including primed repeat checks; the
 * partition of a run's users among N generators (the same sessions for any
 * N); the initial fill's per-user streams; and the rendezvous shard hash,
 * pinned to the values of dirsvc's own test (test-provision.c). */
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

#include "fill.h"
#include "rng.h"
#include "schedule.h"
#include "shard.h"
#include "workload.h"

#define SAMPLES 1000000

static const struct lg_workload test_wl = {
	.users = 100000, .first_user = 1,
	.domain = "example.test", .remote_domain = "remote.test",
	.local_template = LG_DEFAULT_LOCAL_TEMPLATE,
	.login_template = LG_DEFAULT_LOGIN_TEMPLATE,
	.password_template = LG_DEFAULT_PASSWORD_TEMPLATE,
};

static void assert_plan_equal(const struct lg_message_plan *a,
			      const struct lg_message_plan *b)
{
	assert_int_equal(a->from_remote, b->from_remote);
	assert_true(a->sender == b->sender);
	assert_true(a->size == b->size);
	assert_int_equal(a->n_rcpts, b->n_rcpts);
	assert_int_equal(a->n_local, b->n_local);
	assert_int_equal(a->n_remote, b->n_remote);
	for (unsigned int i = 0; i < a->n_rcpts; i++) {
		assert_int_equal(a->rcpts[i].remote, b->rcpts[i].remote);
		assert_true(a->rcpts[i].user == b->rcpts[i].user);
	}
}

static void test_tables(void **state)
{
	uint32_t total = 0;

	for (size_t i = 0; i < lg_size_table_len; i++)
		total += lg_size_table[i].weight_bp;
	assert_int_equal(total, 10000);
	total = 0;
	for (size_t i = 0; i < lg_rcpt_table_len; i++) {
		total += lg_rcpt_table[i].weight_bp;
		/* The published shape: falling from 2 recipients on. */
		if (i >= 2)
			assert_true(lg_rcpt_table[i].weight_bp <= lg_rcpt_table[i - 1].weight_bp);
	}
	assert_int_equal(total, 10000);
	assert_int_equal(lg_rcpt_table[0].weight_bp, 8573);
	assert_int_equal(lg_rcpt_table[1].weight_bp, 166);
	assert_int_equal(lg_rcpt_table[lg_rcpt_table_len - 1].value, 20);
	assert_int_equal(lg_rcpt_table[lg_rcpt_table_len - 1].weight_bp, 21);
	total = 0;
	for (size_t i = 0; i < lg_mailbox_table_len; i++) {
		total += lg_mailbox_table[i].weight_bp;
		assert_int_equal(lg_mailbox_table[i].value, i);
		if (i >= 1)
			assert_true(lg_mailbox_table[i].weight_bp <= lg_mailbox_table[i - 1].weight_bp);
	}
	assert_int_equal(total, 10000);
	assert_int_equal(lg_mailbox_table[0].weight_bp, 2650);
	assert_int_equal(lg_mailbox_table[2].weight_bp, 1225);
	assert_int_equal(lg_mailbox_table[28].weight_bp, 2);
	assert_true(fabs(lg_weighted_mean(lg_mailbox_table, lg_mailbox_table_len) - 3.34) < 0.01);
	/* Exact means of the tables. */
	assert_true(fabs(lg_weighted_mean(lg_size_table, lg_size_table_len) - 24.53) < 0.005);
	assert_true(fabs(lg_weighted_mean(lg_rcpt_table, lg_rcpt_table_len) - 2.00) < 0.00001);
}

static void test_size_mean(void **state)
{
	struct lg_rng rng;
	double sum = 0;
	uint64_t max = 0;

	lg_rng_seed(&rng, 42, 0);
	for (int i = 0; i < SAMPLES; i++) {
		uint64_t size = lg_workload_message_size(&rng);
		sum += (double)size;
		if (size > max)
			max = size;
	}
	double mean_kib = sum / SAMPLES / 1024;
	/* sd ~142 KiB, so the standard error of 10^6 samples is ~0.14. */
	printf("sampled mean size %.2f KiB (max %.0f KiB)\n", mean_kib, (double)max / 1024);
	assert_true(fabs(mean_kib - 24.5) < 0.7);
	assert_int_equal(max, 2675 * 1024);
}

static void test_rcpt_mean(void **state)
{
	struct lg_rng rng;
	double sum = 0;
	unsigned int ones = 0;

	lg_rng_seed(&rng, 43, 0);
	for (int i = 0; i < SAMPLES; i++) {
		unsigned int n = lg_workload_rcpt_count(&rng);
		assert_true(n >= 1 && n <= LG_MAX_RCPTS);
		sum += n;
		ones += n == 1;
	}
	printf("sampled mean recipients %.3f, one recipient %.2f%%\n",
	       sum / SAMPLES, 100.0 * ones / SAMPLES);
	assert_true(fabs(sum / SAMPLES - 2.00) < 0.02);
	assert_true(fabs(100.0 * ones / SAMPLES - 85.73) < 0.2);
}

static void test_seeded_repeatability(void **state)
{
	struct lg_rng a, b, c;

	lg_rng_seed(&a, 7, 3);
	lg_rng_seed(&b, 7, 3);
	lg_rng_seed(&c, 7, 4);
	bool differs = false;
	for (int i = 0; i < 1000; i++) {
		uint64_t x = lg_rng_next(&a);
		assert_true(x == lg_rng_next(&b));
		differs |= x != lg_rng_next(&c);
	}
	assert_true(differs);

	/* A known value, so a change of generator (and with it of every
	 * seeded run) is noticed. */
	lg_rng_seed(&a, 1, 0);
	assert_true(lg_rng_next(&a) == 0xef75d62a19ba94edULL);

	/* Message plans from the same seed are identical. */
	struct lg_message_plan p1, p2;
	lg_rng_seed(&a, 99, 0);
	lg_rng_seed(&b, 99, 0);
	for (int i = 0; i < 1000; i++) {
		lg_workload_plan_message(&test_wl, &a, i % 2, &p1);
		lg_workload_plan_message(&test_wl, &b, i % 2, &p2);
		assert_plan_equal(&p1, &p2);
	}
}

static void test_uniform_and_exponential(void **state)
{
	struct lg_rng rng;
	double sum = 0;
	uint64_t buckets[10] = { 0 };

	lg_rng_seed(&rng, 5, 0);
	for (int i = 0; i < SAMPLES; i++) {
		double u = lg_rng_uniform(&rng);
		assert_true(u >= 0 && u < 1);
		buckets[(int)(u * 10)]++;
		sum += lg_rng_exponential(&rng, 2.5);
	}
	for (int i = 0; i < 10; i++)
		assert_true(llabs((long long)buckets[i] - SAMPLES / 10) < SAMPLES / 200);
	assert_true(fabs(sum / SAMPLES - 2.5) < 0.02);
	for (int i = 0; i < 10000; i++)
		assert_true(lg_rng_below(&rng, 7) < 7);
}

static void test_plan(void **state)
{
	struct lg_rng rng;
	struct lg_message_plan plan;
	uint64_t local = 0, remote = 0;
	struct lg_workload tiny = test_wl;

	lg_rng_seed(&rng, 11, 0);
	for (int i = 0; i < 200000; i++) {
		bool from_remote = i % 2;
		lg_workload_plan_message(&test_wl, &rng, from_remote, &plan);
		assert_true(plan.n_rcpts >= 1 && plan.n_rcpts <= LG_MAX_RCPTS);
		assert_int_equal(plan.n_local + plan.n_remote, plan.n_rcpts);
		if (from_remote)
			assert_int_equal(plan.n_remote, 0);
		else {
			local += plan.n_local;
			remote += plan.n_remote;
		}
		for (unsigned int a = 0; a < plan.n_rcpts; a++)
			for (unsigned int b = a + 1; b < plan.n_rcpts; b++)
				assert_false(plan.rcpts[a].remote == plan.rcpts[b].remote &&
					     plan.rcpts[a].user == plan.rcpts[b].user);
	}
	double share = (double)remote / (double)(local + remote);
	assert_true(fabs(share - LG_REMOTE_RCPT_SHARE) < 0.01);

	/* Fewer users than recipients: local ones are capped, still distinct. */
	tiny.users = 3;
	for (int i = 0; i < 20000; i++) {
		lg_workload_plan_message(&tiny, &rng, true, &plan);
		assert_true(plan.n_local >= 1 && plan.n_local <= 3);
		for (unsigned int a = 0; a < plan.n_rcpts; a++) {
			assert_true(plan.rcpts[a].user >= 1 && plan.rcpts[a].user <= 3);
			for (unsigned int b = a + 1; b < plan.n_rcpts; b++)
				assert_true(plan.rcpts[a].user != plan.rcpts[b].user);
		}
	}
}

static void test_templates(void **state)
{
	struct lg_workload wl = test_wl;
	const char *error;
	char out[128];

	lg_format_address(out, sizeof(out), &wl, false, 42);
	assert_string_equal(out, "user42@example.test");
	lg_format_address(out, sizeof(out), &wl, true, 7);
	assert_string_equal(out, "user7@remote.test");
	lg_format_login(out, sizeof(out), &wl, 42);
	assert_string_equal(out, "user42@example.test");
	lg_format_password(out, sizeof(out), &wl, 42);
	assert_string_equal(out, "secret42");

	/* The peer set-up's naming: user0000.., pw0000.. */
	wl.first_user = 0;
	wl.login_template = "user%04K";
	wl.password_template = "pw%04K";
	lg_format_login(out, sizeof(out), &wl, 1);
	assert_string_equal(out, "user0000");
	lg_format_password(out, sizeof(out), &wl, 43);
	assert_string_equal(out, "pw0042");

	assert_true(lg_template_check("a%%b%D%K%012K", &error));
	assert_false(lg_template_check("user%x", &error));
	assert_false(lg_template_check("user%05", &error));
	assert_false(lg_template_check("user%099K", &error));
	assert_false(lg_template_check("user%", &error));
}

/* The inverse of the address templates (a reply goes back to the sender
 * of what it answers): ours or a remote correspondent's, which one; any
 * other address, or a number out of range, is not. */
static void test_parse_address(void **state)
{
	struct lg_workload wl = test_wl;
	bool remote;
	uint64_t user;

	assert_true(lg_parse_address(&wl, "user42", "example.test", &remote, &user));
	assert_false(remote);
	assert_true(user == 42);
	assert_true(lg_parse_address(&wl, "USER7", "Remote.TEST", &remote, &user));
	assert_true(remote && user == 7);
	assert_true(lg_parse_address(&wl, "user999999", "remote.test", &remote, &user));
	assert_true(remote && user == 999999);
	static const char *const not_ours[][2] = {
		{ "user0", "example.test" }, { "someone", "example.test" },
		{ "user5x", "example.test" }, { "user5", "elsewhere.test" },
		{ "user1000001", "remote.test" }, { "user99999999999999999999", "example.test" },
		{ "", "example.test" },
	};
	for (size_t i = 0; i < sizeof(not_ours) / sizeof(not_ours[0]); i++)
		if (lg_parse_address(&wl, not_ours[i][0], not_ours[i][1], &remote, &user))
			fail_msg("%s@%s taken as user %llu", not_ours[i][0], not_ours[i][1],
				 (unsigned long long)user);
	wl.users = 10;
	assert_false(lg_parse_address(&wl, "user11", "example.test", &remote, &user));
	assert_true(lg_parse_address(&wl, "user10", "example.test", &remote, &user));
	/* Zero-padded, from account 0 (the peer set-up's naming); digits
	 * elsewhere in the template. */
	wl.first_user = 0;
	wl.local_template = "u2x%06K";
	assert_true(lg_parse_address(&wl, "u2x000004", "example.test", &remote, &user));
	assert_true(user == 5);
	assert_false(lg_parse_address(&wl, "u2x4", "example.test", &remote, &user));
}

static void test_rates(void **state)
{
	struct lg_workload wl = test_wl;

	wl.users = 1500000;
	assert_true(fabs(lg_workload_rate(&wl, LG_KIND_SMTP_LOCAL, 100) - 124.95) < 0.01);
	assert_true(fabs(lg_workload_rate(&wl, LG_KIND_POP_REPEAT, 100) - 187.5) < 0.01);
	assert_true(fabs(lg_workload_msgs_per_min(&wl, 100) - 7500) < 0.01);
	assert_true(fabs(lg_workload_msgs_per_min(&wl, 80) - 6000) < 0.01);
	wl.users = 20;
	wl.load_users = 24000;
	assert_true(fabs(lg_workload_msgs_per_min(&wl, 100) - 120) < 0.01);
}

/* Arrivals of a simulated hour at 100,000 users: every kind at its
 * published rate, repeats included from the first minute on (primed). */
static void test_schedule_rates(void **state)
{
	struct lg_schedule sched;
	struct lg_arrival a;
	uint64_t count[LG_KIND_COUNT] = { 0 }, first_minute_repeats = 0;
	const double horizon = 3600;
	double last = 0;

	lg_schedule_init(&sched, &test_wl, 100, 1, 0);
	assert_true(sched.primed > 0);
	while (lg_schedule_pop(&sched, horizon, &a)) {
		assert_true(a.at_s >= last);	/* time order */
		last = a.at_s;
		count[a.kind]++;
		if (a.kind == LG_KIND_POP_REPEAT && a.at_s < 60)
			first_minute_repeats++;
		if (a.kind >= LG_KIND_POP_FIRST)
			assert_true(a.user >= 1 && a.user <= test_wl.users);
	}
	for (int k = 0; k < LG_KIND_COUNT; k++) {
		double rate = (double)count[k] / horizon;
		/* The default protocol is POP: no IMAP sessions. */
		double want = k >= LG_KIND_IMAP_DESKTOP ? 0 : lg_kind_rate_per_100k[k];
		printf("%-12s %.2f/s (published %.2f/s)\n", lg_kind_names[k], rate, want);
		assert_true(fabs(rate - want) <= 0.04 * want);
	}
	/* Steady state from the start: ~750 repeats in the first minute. */
	assert_true(fabs((double)first_minute_repeats - 750) < 120);
	lg_schedule_free(&sched);
}

/* --protocol imap: 4.8 IMAP sessions per user per hour (80% desktop),
 * no POP checks; mixed: both at half their rates. The SMTP kinds stay. */
static void test_schedule_imap_rates(void **state)
{
	const double horizon = 600;
	for (int protocol = LG_PROTOCOL_IMAP; protocol <= LG_PROTOCOL_MIXED; protocol++) {
		struct lg_workload wl = test_wl;
		struct lg_schedule sched;
		struct lg_arrival a;
		uint64_t count[LG_KIND_COUNT] = { 0 }, desktop_ms = 0, visits = 0;
		double share = protocol == LG_PROTOCOL_MIXED ? 0.5 : 1;

		wl.protocol = protocol;
		lg_schedule_init(&sched, &wl, 100, 3, 0);
		while (lg_schedule_pop(&sched, horizon, &a)) {
			count[a.kind]++;
			if (a.kind == LG_KIND_IMAP_DESKTOP) {
				desktop_ms += a.imap.length_ms;
				visits += a.imap.visit_folder;
				assert_true(a.user >= 1 && a.user <= wl.users);
			}
		}
		double imap = (count[LG_KIND_IMAP_DESKTOP] + count[LG_KIND_IMAP_WEBMAIL]) / horizon;
		printf("%s: imap %.2f/s, pop-first %.2f/s\n", lg_protocol_names[protocol],
		       imap, count[LG_KIND_POP_FIRST] / horizon);
		assert_true(fabs(imap - share * 133.33) < 0.04 * share * 133.33);
		assert_true(fabs((double)count[LG_KIND_IMAP_DESKTOP] /
				 (count[LG_KIND_IMAP_DESKTOP] + count[LG_KIND_IMAP_WEBMAIL]) - 0.8) < 0.02);
		assert_true(fabs(count[LG_KIND_POP_FIRST] / horizon - (protocol == LG_PROTOCOL_MIXED ? 0.5 : 0) * 4.17) <
			    0.1 + 0.04 * 4.17);
		assert_true(fabs(count[LG_KIND_SMTP_LOCAL] / horizon - 8.33) < 0.04 * 8.33);
		/* Desktop sessions: exponential, mean 3 min; half visit a folder. */
		double mean_s = desktop_ms / 1000.0 / count[LG_KIND_IMAP_DESKTOP];
		assert_true(fabs(mean_s - 180) < 10);
		assert_true(fabs((double)visits / count[LG_KIND_IMAP_DESKTOP] - 0.5) < 0.03);
		lg_schedule_free(&sched);
	}
	enum lg_protocol p;
	assert_true(lg_protocol_parse("mixed", &p) && p == LG_PROTOCOL_MIXED);
	assert_false(lg_protocol_parse("smtp", &p));
}

static void test_schedule_repeatable(void **state)
{
	struct lg_schedule s1, s2, s3;
	struct lg_arrival a, b;
	bool differs = false;

	lg_schedule_init(&s1, &test_wl, 100, 9, 1);
	lg_schedule_init(&s2, &test_wl, 100, 9, 1);
	lg_schedule_init(&s3, &test_wl, 100, 9, 2);
	/* Popping in different slices gives the same sequence. */
	for (int i = 0; i < 5000; i++) {
		bool got_a = lg_schedule_pop(&s1, 1e9, &a);
		bool got_b = false;
		for (double t = 0; !got_b; t += 0.37)
			got_b = lg_schedule_pop(&s2, t, &b);
		assert_true(got_a);
		assert_int_equal(a.kind, b.kind);
		assert_true(a.at_s == b.at_s);
		assert_true(a.user == b.user);
		if (a.kind <= LG_KIND_SMTP_REMOTE)
			assert_plan_equal(&a.plan, &b.plan);
		struct lg_arrival c;
		assert_true(lg_schedule_pop(&s3, 1e9, &c));
		differs |= c.at_s != a.at_s;
	}
	assert_true(differs);	/* another level, another sequence */
	lg_schedule_free(&s1);
	lg_schedule_free(&s2);
	lg_schedule_free(&s3);
}

/* One arrival, as comparable numbers. */
struct seen_arrival {
	int kind;
	double at_s;
	uint64_t owner, size;
	unsigned int n_rcpts;
};

/* The arrivals of share (index of count) over [0, horizon). */
static size_t collect(unsigned int index, unsigned int count, double horizon,
		      struct seen_arrival *out, size_t max, uint64_t per_kind[])
{
	struct lg_schedule sched;
	struct lg_share share = { index, count };
	struct lg_arrival a;
	size_t n = 0;

	lg_schedule_init(&sched, &test_wl, 120, 42, 2);
	while (lg_schedule_pop_before(&sched, horizon, horizon, &a)) {
		uint64_t owner = lg_arrival_owner(&a);
		assert_true(owner >= 1 && owner <= test_wl.users);
		if (!lg_share_owns(&share, owner))
			continue;
		assert_true(n < max);
		out[n++] = (struct seen_arrival){ a.kind, a.at_s, owner,
			a.kind <= LG_KIND_SMTP_REMOTE ? a.plan.size : 0,
			a.kind <= LG_KIND_SMTP_REMOTE ? a.plan.n_rcpts : 0 };
		per_kind[a.kind]++;
	}
	assert_false(lg_schedule_pop_before(&sched, horizon * 2, horizon, &a));
	lg_schedule_free(&sched);
	return n;
}

static int by_time(const void *pa, const void *pb)
{
	const struct seen_arrival *a = pa, *b = pb;

	if (a->at_s != b->at_s)
		return a->at_s < b->at_s ? -1 : 1;
	return a->kind - b->kind;
}

/* Split among N generators (user K in share K mod N), the sessions of all
 * shares together are exactly those of one generator, for any N: the
 * working set does not depend on the number of processes. */
static void test_partition(void **state)
{
	const double horizon = 300;
	const size_t max = 20000;
	struct seen_arrival *all = calloc(max, sizeof(*all));
	struct seen_arrival *parts = calloc(max, sizeof(*parts));
	uint64_t kinds_all[LG_KIND_COUNT] = { 0 };
	size_t n_all = collect(0, 1, horizon, all, max, kinds_all);
	const unsigned int counts[] = { 2, 3, 7 };

	assert_true(n_all > 5000);
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		uint64_t kinds[LG_KIND_COUNT] = { 0 };
		size_t n = 0;
		for (unsigned int i = 0; i < counts[c]; i++) {
			uint64_t mine[LG_KIND_COUNT] = { 0 };
			size_t got = collect(i, counts[c], horizon, parts + n, max - n, mine);
			/* each share has its users' sessions, and some of each kind */
			for (size_t k = n; k < n + got; k++)
				assert_true(parts[k].owner % counts[c] == i);
			for (int k = 0; k < LG_KIND_COUNT; k++) {
				assert_true(mine[k] > 0 || k >= LG_KIND_IMAP_DESKTOP);
				kinds[k] += mine[k];
			}
			n += got;
		}
		assert_int_equal(n, n_all);
		for (int k = 0; k < LG_KIND_COUNT; k++)
			assert_true(kinds[k] == kinds_all[k]);
		qsort(parts, n, sizeof(*parts), by_time);
		for (size_t k = 0; k < n; k++) {
			assert_int_equal(parts[k].kind, all[k].kind);
			assert_true(parts[k].at_s == all[k].at_s);
			assert_true(parts[k].owner == all[k].owner);
			assert_true(parts[k].size == all[k].size);
			assert_int_equal(parts[k].n_rcpts, all[k].n_rcpts);
		}
	}
	free(all);
	free(parts);
}

/* A fill's user gets the same messages whatever the order users are
 * filled in (by SMTP all users in order; by LMTP each shard its own). */
static void test_fill_user_streams(void **state)
{
	struct lg_fill_user a, b;
	struct lg_message_plan pa, pb;
	uint64_t total = 0;

	for (uint64_t user = 1; user <= 20000; user++) {
		lg_fill_user_begin(&a, 5, user);
		total += a.left;
		assert_true(a.left <= 28);
	}
	/* The published mean, 3.34 messages a mailbox. */
	assert_true(fabs((double)total / 20000 - 3.34) < 0.1);
	for (uint64_t user = 300; user >= 1; user--) {
		lg_fill_user_begin(&a, 5, user);
		lg_fill_user_begin(&b, 5, user);
		assert_int_equal(a.left, b.left);
		while (lg_fill_user_next(&a, &pa)) {
			assert_true(lg_fill_user_next(&b, &pb));
			assert_plan_equal(&pa, &pb);
			assert_true(pa.rcpts[0].user == user && pa.from_remote);
		}
		assert_false(lg_fill_user_next(&b, &pb));
	}
	/* Another seed, other mailboxes. */
	bool differs = false;
	for (uint64_t user = 1; user <= 50; user++) {
		lg_fill_user_begin(&a, 5, user);
		lg_fill_user_begin(&b, 6, user);
		differs |= a.left != b.left;
	}
	assert_true(differs);
}

/* The same values as dirsvc's test (tests/unit/test-provision.c): the
 * generator's copy of the hash must put users where dirsvc does. */
static void test_shard_hash(void **state)
{
	static const char *const shards3[] = { "store1", "store2", "store3" };
	static const char *const reversed[] = { "store3", "store2", "store1" };
	static const struct {
		const char *addr;
		uint64_t score_store1;
		const char *of2, *of3;
	} cases[] = {
		{ "user1@example.test", UINT64_C(0xa28b0825b42fe453), "store2", "store2" },
		{ "user2@example.test", UINT64_C(0xad35e4e9ce8adfdb), "store2", "store2" },
		{ "user3@example.test", UINT64_C(0xf7c0307180464516), "store1", "store1" },
		{ "postmaster@example.test", UINT64_C(0x7f992007462dfb6f), "store2", "store3" },
		{ "alice@other.test", UINT64_C(0xcac1d8b2d1c017a6), "store1", "store1" },
		{ "user1500000@example.test", UINT64_C(0x0ea569e1d3f7119b), "store2", "store3" },
	};
	char addr[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_true(lg_shard_score(cases[i].addr, "store1") == cases[i].score_store1);
		assert_string_equal(shards3[lg_shard_pick(cases[i].addr, shards3, 2)],
				    cases[i].of2);
		assert_string_equal(shards3[lg_shard_pick(cases[i].addr, shards3, 3)],
				    cases[i].of3);
	}
	/* Case-blind, order-blind, and balanced within 2%. */
	assert_int_equal(lg_shard_pick("USER1@Example.TEST", shards3, 3),
			 lg_shard_pick("user1@example.test", shards3, 3));
	assert_int_equal(lg_shard_pick("a@b", shards3, 0), -1);
	size_t count[3] = { 0 };
	for (int k = 1; k <= 30000; k++) {
		snprintf(addr, sizeof(addr), "user%d@example.test", k);
		int i = lg_shard_pick(addr, shards3, 3);
		assert_string_equal(shards3[i], reversed[lg_shard_pick(addr, reversed, 3)]);
		count[i]++;
	}
	for (int i = 0; i < 3; i++)
		assert_true(count[i] > 9800 && count[i] < 10200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_size_mean),
		cmocka_unit_test(test_rcpt_mean),
		cmocka_unit_test(test_seeded_repeatability),
		cmocka_unit_test(test_uniform_and_exponential),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_templates),
		cmocka_unit_test(test_parse_address),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_schedule_rates),
		cmocka_unit_test(test_schedule_imap_rates),
		cmocka_unit_test(test_schedule_repeatable),
		cmocka_unit_test(test_partition),
		cmocka_unit_test(test_fill_user_streams),
		cmocka_unit_test(test_shard_hash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
