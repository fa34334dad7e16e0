/* test-authfail.c — unit tests for lib/authfail.c, the per-address table
 * the MTA, the MMP and popstore share: the delay that doubles per failure
 * up to its cap (table-driven), per-address independence, the window after
 * which failures are forgotten, the optional block, session counting
 * against a per-address limit, sweeping (explicit and the one a failure
 * runs once a window), the key made from a sockaddr, the wait counted from
 * the command's arrival, and several threads sharing one table (as the
 * MMP's workers do). Time is passed in, so no test sleeps. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "authfail.h"
#include "authfail-metrics.h"
#include "buf.h"
#include "metrics.h"
#include "clock.h"

static const struct mt_authfail_limits mmp_like = {
	.delay = 200, .window = 60000, .block_after = 5, .sessions = 3,
};

struct delay_case {
	uint64_t first, n, want;
};

static const struct delay_case delay_cases[] = {
	{ 2000, 1, 2000 },
	{ 2000, 2, 4000 },
	{ 2000, 3, 8000 },
	{ 2000, 5, 32000 },
	{ 2000, 6, MT_AUTHFAIL_DELAY_MAX },		/* 64 s: capped */
	{ 2000, UINT64_MAX, MT_AUTHFAIL_DELAY_MAX },
	{ 300, 1, 300 },
	{ 300, 3, 1200 },
	{ 1, 16, 32768 },
	{ 1, 17, MT_AUTHFAIL_DELAY_MAX },
	{ 60000, 1, 60000 },
	{ 90000, 1, MT_AUTHFAIL_DELAY_MAX },		/* the cap holds from the start */
	{ 0, 1, 0 },					/* auth_fail_delay = 0: off */
	{ 0, UINT64_MAX, 0 },
};

static void test_delay_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(delay_cases) / sizeof(delay_cases[0]); i++) {
		const struct delay_case *c = &delay_cases[i];
		uint64_t got = mt_authfail_delay(c->first, c->n);
		if (got != c->want)
			fail_msg("case %zu: delay(%llu, %llu) = %llu, want %llu", i,
				 (unsigned long long)c->first, (unsigned long long)c->n,
				 (unsigned long long)got, (unsigned long long)c->want);
	}
}

static void test_doubling_per_address(void **state)
{
	struct mt_authfail *af = mt_authfail_new();
	bool blocked = true;
	(void)state;

	assert_int_equal(mt_authfail_failed(af, "198.51.100.7", &mmp_like, 1000, &blocked), 200);
	assert_false(blocked);
	assert_int_equal(mt_authfail_failed(af, "198.51.100.7", &mmp_like, 2000, &blocked), 400);
	assert_int_equal(mt_authfail_failed(af, "198.51.100.7", &mmp_like, 3000, &blocked), 800);
	/* Another address starts at the first delay; v6 text is a key too. */
	assert_int_equal(mt_authfail_failed(af, "198.51.100.8", &mmp_like, 3000, NULL), 200);
	assert_int_equal(mt_authfail_failed(af, "2001:db8::1", &mmp_like, 3000, NULL), 200);
	assert_int_equal(mt_authfail_failed(af, "198.51.100.7", &mmp_like, 4000, NULL), 1600);
	assert_int_equal(mt_authfail_count(af), 3);
	mt_authfail_free(&af);
	assert_null(af);
	mt_authfail_free(&af);		/* a second free is harmless */
}

/* What the table counts (mt_authfail_get_stats) and how
 * lib/authfail-metrics renders it. */
static void test_stats_and_metrics(void **state)
{
	struct mt_authfail *af = mt_authfail_new();
	struct mt_metrics *m = mt_metrics_new();
	struct mt_authfail_metrics *am = mt_authfail_metrics_new(m, "client", &af);
	const char *ip = "198.51.100.20";
	(void)state;

	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(mt_authfail_session_open(af, ip, &mmp_like, 1000),
				 MT_AUTHFAIL_ADMIT_OK);
	assert_int_equal(mt_authfail_session_open(af, ip, &mmp_like, 1000),
			 MT_AUTHFAIL_ADMIT_SESSIONS);
	for (unsigned int i = 0; i < 6; i++)	/* the 5th blocks; the 6th is no new block */
		(void)mt_authfail_failed(af, ip, &mmp_like, 2000 + i, NULL);
	assert_int_equal(mt_authfail_session_open(af, ip, &mmp_like, 3000),
			 MT_AUTHFAIL_ADMIT_BLOCKED);
	assert_true(mt_authfail_blocked(af, ip, &mmp_like, 3000));
	assert_false(mt_authfail_blocked(af, "198.51.100.21", &mmp_like, 3000));
	struct mt_authfail_stats st;
	mt_authfail_get_stats(af, &st);
	assert_int_equal(st.failures, 6);
	assert_int_equal(st.blocks, 1);
	assert_int_equal(st.refused_blocked, 2);
	assert_int_equal(st.refused_sessions, 1);
	assert_int_equal(st.addresses, 1);

	struct mt_buf out = MT_BUF_INIT;
	mt_metrics_render(m, &out);
	const char *text = mt_buf_cstr(&out);
	assert_non_null(strstr(text, "mailtier_address_failures_total{table=\"client\"} 6\n"));
	assert_non_null(strstr(text, "mailtier_address_blocks_total{table=\"client\"} 1\n"));
	assert_non_null(strstr(text,
		"mailtier_address_refusals_total{table=\"client\",limit=\"blocked\"} 2\n"));
	assert_non_null(strstr(text,
		"mailtier_address_refusals_total{table=\"client\",limit=\"sessions\"} 1\n"));
	assert_non_null(strstr(text, "mailtier_addresses_tracked{table=\"client\"} 1\n"));
	assert_null(strstr(text, ip));	/* never an address */
	mt_buf_free(&out);
	mt_authfail_metrics_free(&am);
	assert_null(am);
	mt_authfail_free(&af);
	mt_metrics_free(&m);
}

static void test_cap(void **state)
{
	struct mt_authfail_limits limits = { .delay = 20000, .window = 60000 };
	struct mt_authfail *af = mt_authfail_new();
	uint64_t d = 0;
	bool blocked;
	(void)state;

	for (uint64_t i = 0; i < 40; i++) {
		d = mt_authfail_failed(af, "203.0.113.9", &limits, i, &blocked);
		assert_false(blocked);		/* block_after = 0: never */
		assert_true(d <= MT_AUTHFAIL_DELAY_MAX);
	}
	assert_int_equal(d, MT_AUTHFAIL_DELAY_MAX);
	mt_authfail_free(&af);
}

static void test_window_expiry(void **state)
{
	struct mt_authfail *af = mt_authfail_new();
	(void)state;

	assert_int_equal(mt_authfail_failed(af, "192.0.2.1", &mmp_like, 1000, NULL), 200);
	/* Just inside the window of the previous failure: it grows. */
	assert_int_equal(mt_authfail_failed(af, "192.0.2.1", &mmp_like, 60999, NULL), 400);
	/* The window counts from the last failure, not the first. */
	assert_int_equal(mt_authfail_failed(af, "192.0.2.1", &mmp_like, 120998, NULL), 800);
	/* A whole window after the last: forgotten, the first delay again. */
	assert_int_equal(mt_authfail_failed(af, "192.0.2.1", &mmp_like, 180998, NULL), 200);
	/* A clock read before a later failure was recorded (another thread)
	 * does not expire it. */
	assert_int_equal(mt_authfail_failed(af, "192.0.2.1", &mmp_like, 180000, NULL), 400);
	mt_authfail_free(&af);
}

static void test_block(void **state)
{
	struct mt_authfail *af = mt_authfail_new();
	bool blocked = true;
	(void)state;

	for (uint64_t i = 1; i <= 4; i++) {
		mt_authfail_failed(af, "198.51.100.7", &mmp_like, i * 1000, &blocked);
		assert_false(blocked);
	}
	assert_int_equal(mt_authfail_session_open(af, "198.51.100.7", &mmp_like, 4500),
			 MT_AUTHFAIL_ADMIT_OK);
	mt_authfail_session_close(af, "198.51.100.7");
	/* The fifth failure reaches block_after. */
	assert_int_equal(mt_authfail_failed(af, "198.51.100.7", &mmp_like, 5000, &blocked), 3200);
	assert_true(blocked);
	assert_int_equal(mt_authfail_session_open(af, "198.51.100.7", &mmp_like, 5001),
			 MT_AUTHFAIL_ADMIT_BLOCKED);
	assert_int_equal(mt_authfail_session_open(af, "198.51.100.7", &mmp_like, 64999),
			 MT_AUTHFAIL_ADMIT_BLOCKED);
	/* Others are not blocked. */
	assert_int_equal(mt_authfail_session_open(af, "198.51.100.8", &mmp_like, 5001),
			 MT_AUTHFAIL_ADMIT_OK);
	mt_authfail_session_close(af, "198.51.100.8");
	/* auth_fail_window after the last failure, it is forgotten. */
	assert_int_equal(mt_authfail_session_open(af, "198.51.100.7", &mmp_like, 65000),
			 MT_AUTHFAIL_ADMIT_OK);
	mt_authfail_session_close(af, "198.51.100.7");
	assert_int_equal(mt_authfail_failed(af, "198.51.100.7", &mmp_like, 66000, &blocked), 200);
	assert_false(blocked);
	mt_authfail_free(&af);
}

/* mt_authfail_blocked: a query that counts nothing (the MTA's RCPT). */
static void test_blocked_query(void **state)
{
	static const struct mt_authfail_limits rcpt_like = {
		.delay = 1000, .window = 300000, .block_after = 3,
	};
	static const struct mt_authfail_limits no_limit = {
		.delay = 1000, .window = 300000,
	};
	struct mt_authfail *af = mt_authfail_new();
	bool blocked = true;
	(void)state;

	assert_false(mt_authfail_blocked(af, "192.0.2.9", &rcpt_like, 1000));
	assert_int_equal(mt_authfail_count(af), 0);	/* a query adds nothing */
	for (uint64_t i = 1; i <= 2; i++) {
		mt_authfail_failed(af, "192.0.2.9", &rcpt_like, i * 1000, &blocked);
		assert_false(blocked);
		assert_false(mt_authfail_blocked(af, "192.0.2.9", &rcpt_like, i * 1000 + 1));
	}
	assert_int_equal(mt_authfail_failed(af, "192.0.2.9", &rcpt_like, 3000, &blocked), 4000);
	assert_true(blocked);
	/* Asking again and again neither counts nor extends the window. */
	for (uint64_t t = 3001; t < 303000; t += 10000)
		assert_true(mt_authfail_blocked(af, "192.0.2.9", &rcpt_like, t));
	assert_false(mt_authfail_blocked(af, "192.0.2.9", &no_limit, 3001));
	assert_false(mt_authfail_blocked(af, "192.0.2.10", &rcpt_like, 3001));
	/* rcpt_fail_window after the last failure: forgotten, entry gone. */
	assert_false(mt_authfail_blocked(af, "192.0.2.9", &rcpt_like, 303000));
	assert_int_equal(mt_authfail_count(af), 0);
	assert_int_equal(mt_authfail_failed(af, "192.0.2.9", &rcpt_like, 304000, &blocked), 1000);
	assert_false(blocked);
	mt_authfail_free(&af);
}

static void test_sessions(void **state)
{
	struct mt_authfail *af = mt_authfail_new();
	struct mt_authfail_limits unlimited = { .delay = 200, .window = 60000 };
	(void)state;

	for (int i = 0; i < 3; i++)
		assert_int_equal(mt_authfail_session_open(af, "192.0.2.1", &mmp_like, 0),
				 MT_AUTHFAIL_ADMIT_OK);
	assert_int_equal(mt_authfail_session_open(af, "192.0.2.1", &mmp_like, 0),
			 MT_AUTHFAIL_ADMIT_SESSIONS);
	assert_int_equal(mt_authfail_session_open(af, "192.0.2.2", &mmp_like, 0),
			 MT_AUTHFAIL_ADMIT_OK);
	assert_int_equal(mt_authfail_count(af), 2);
	mt_authfail_session_close(af, "192.0.2.1");
	assert_int_equal(mt_authfail_session_open(af, "192.0.2.1", &mmp_like, 0),
			 MT_AUTHFAIL_ADMIT_OK);
	for (int i = 0; i < 3; i++)
		mt_authfail_session_close(af, "192.0.2.1");
	mt_authfail_session_close(af, "192.0.2.2");
	/* Nothing left to remember: the entries are gone. */
	assert_int_equal(mt_authfail_count(af), 0);
	/* A close too many, or for an unknown address, is harmless. */
	mt_authfail_session_close(af, "192.0.2.2");
	mt_authfail_session_close(af, "192.0.2.99");
	assert_int_equal(mt_authfail_count(af), 0);
	/* sessions = 0: no per-address limit. */
	for (int i = 0; i < 1000; i++)
		assert_int_equal(mt_authfail_session_open(af, "192.0.2.3", &unlimited, 0),
				 MT_AUTHFAIL_ADMIT_OK);
	for (int i = 0; i < 1000; i++)
		mt_authfail_session_close(af, "192.0.2.3");
	assert_int_equal(mt_authfail_count(af), 0);
	mt_authfail_free(&af);
}

static void test_sweep(void **state)
{
	struct mt_authfail *af = mt_authfail_new();
	char ip[32];
	(void)state;

	/* Enough addresses to make the table grow a few times. */
	for (int i = 0; i < 3000; i++) {
		snprintf(ip, sizeof(ip), "10.0.%d.%d", i / 250, i % 250 + 1);
		mt_authfail_failed(af, ip, &mmp_like, 1000, NULL);
	}
	assert_int_equal(mt_authfail_count(af), 3000);
	/* Failures outlive their sessions until the window has passed. */
	assert_int_equal(mt_authfail_session_open(af, "10.0.0.1", &mmp_like, 2000),
			 MT_AUTHFAIL_ADMIT_OK);
	mt_authfail_session_close(af, "10.0.0.1");
	mt_authfail_sweep(af, &mmp_like, 30000);
	assert_int_equal(mt_authfail_count(af), 3000);
	assert_int_equal(mt_authfail_session_open(af, "10.0.0.1", &mmp_like, 30000),
			 MT_AUTHFAIL_ADMIT_OK);
	mt_authfail_sweep(af, &mmp_like, 61000);
	/* Only the address with an open session is still there. */
	assert_int_equal(mt_authfail_count(af), 1);
	mt_authfail_session_close(af, "10.0.0.1");
	assert_int_equal(mt_authfail_count(af), 0);
	mt_authfail_free(&af);
}

/* A daemon without a sweep timer (popstore) still forgets: a failure
 * sweeps at most once a window. */
static void test_failure_sweeps(void **state)
{
	struct mt_authfail *af = mt_authfail_new();
	char ip[32];
	(void)state;

	for (int i = 0; i < 100; i++) {
		snprintf(ip, sizeof(ip), "10.1.0.%d", i + 1);
		mt_authfail_failed(af, ip, &mmp_like, 70000, NULL);
	}
	assert_int_equal(mt_authfail_count(af), 100);
	mt_authfail_failed(af, "10.2.0.1", &mmp_like, 100000, NULL);
	assert_int_equal(mt_authfail_count(af), 101);	/* within the window */
	mt_authfail_failed(af, "10.2.0.2", &mmp_like, 130000, NULL);
	/* The 100 are a window old; 10.2.0.1 is not yet. */
	assert_int_equal(mt_authfail_count(af), 2);
	mt_authfail_free(&af);
}

static void test_long_key(void **state)
{
	struct mt_authfail *af = mt_authfail_new();
	char a[200], b[200];
	(void)state;

	/* Longer than an entry holds: cut the same way on every call. */
	memset(a, 'a', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(b));
	b[150] = 'b';		/* differs only past the cut: the same key */
	assert_int_equal(mt_authfail_session_open(af, a, &mmp_like, 0), MT_AUTHFAIL_ADMIT_OK);
	assert_int_equal(mt_authfail_failed(af, b, &mmp_like, 0, NULL), 200);
	assert_int_equal(mt_authfail_failed(af, a, &mmp_like, 0, NULL), 400);
	assert_int_equal(mt_authfail_count(af), 1);
	mt_authfail_session_close(af, b);
	mt_authfail_sweep(af, &mmp_like, 60000);
	assert_int_equal(mt_authfail_count(af), 0);
	mt_authfail_free(&af);
}

static void test_key(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(110) };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(995) };
	struct sockaddr_un local = { .sun_family = AF_UNIX };
	char key[MT_AUTHFAIL_KEY_MAX];
	(void)state;

	assert_int_equal(inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr), 1);
	assert_true(mt_authfail_key((struct sockaddr *)&sin, key, sizeof(key)));
	assert_string_equal(key, "192.0.2.1");
	/* A v4-mapped address is the IPv4 client it is. */
	assert_int_equal(inet_pton(AF_INET6, "::ffff:192.0.2.1", &sin6.sin6_addr), 1);
	assert_true(mt_authfail_key((struct sockaddr *)&sin6, key, sizeof(key)));
	assert_string_equal(key, "192.0.2.1");
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", &sin6.sin6_addr), 1);
	assert_true(mt_authfail_key((struct sockaddr *)&sin6, key, sizeof(key)));
	assert_string_equal(key, "2001:db8::1");
	/* The longest IPv6 text fits. */
	assert_int_equal(inet_pton(AF_INET6, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
				   &sin6.sin6_addr), 1);
	assert_true(mt_authfail_key((struct sockaddr *)&sin6, key, sizeof(key)));
	assert_int_equal(strlen(key), strlen("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
	assert_false(mt_authfail_key((struct sockaddr *)&local, key, sizeof(key)));
}

static void test_wait(void **state)
{
	(void)state;
	/* Counted from the command: the directory's time is inside it. */
	assert_int_equal(mt_authfail_wait_ms(1000, 2000, 1000), 2000);
	assert_int_equal(mt_authfail_wait_ms(1000, 2000, 1500), 1500);
	assert_int_equal(mt_authfail_wait_ms(1000, 2000, 2999), 1);
	assert_int_equal(mt_authfail_wait_ms(1000, 2000, 3000), 0);
	assert_int_equal(mt_authfail_wait_ms(1000, 2000, 9000), 0);
	assert_int_equal(mt_authfail_wait_ms(1000, 0, 1000), 0);
	uint64_t a = mt_clock_ms(), b = mt_clock_ms();
	assert_true(a > 0 && b >= a);
}

#define THREADS 4
#define ROUNDS 20000

static struct mt_authfail *shared;

static void *hammer(void *arg)
{
	const struct mt_authfail_limits limits = { .delay = 1, .window = 1000000 };
	char ip[32];
	snprintf(ip, sizeof(ip), "10.9.0.%d", (int)(intptr_t)arg % 2);
	for (int i = 0; i < ROUNDS; i++) {
		if (mt_authfail_session_open(shared, ip, &limits, 1) != MT_AUTHFAIL_ADMIT_OK)
			return (void *)1;
		mt_authfail_failed(shared, ip, &limits, 1, NULL);
		mt_authfail_session_close(shared, ip);
	}
	return NULL;
}

/* The MMP's workers and its main loop share one table. */
static void test_threads(void **state)
{
	const struct mt_authfail_limits limits = { .delay = 1, .window = 1000000 };
	pthread_t t[THREADS];
	(void)state;

	shared = mt_authfail_new();
	for (intptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, (void *)i), 0);
	for (int i = 0; i < THREADS; i++) {
		void *ret;
		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	/* Every open was closed; every failure counted (2 x ROUNDS each). */
	assert_int_equal(mt_authfail_count(shared), 2);
	mt_authfail_session_open(shared, "10.9.0.0", &limits, 1);
	mt_authfail_sweep(shared, &limits, 1000001);
	assert_int_equal(mt_authfail_count(shared), 1);
	mt_authfail_session_close(shared, "10.9.0.0");
	assert_int_equal(mt_authfail_count(shared), 0);
	mt_authfail_free(&shared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delay_table),
		cmocka_unit_test(test_doubling_per_address),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_stats_and_metrics),
		cmocka_unit_test(test_window_expiry),
		cmocka_unit_test(test_block),
		cmocka_unit_test(test_blocked_query),
		cmocka_unit_test(test_sessions),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_failure_sweeps),
		cmocka_unit_test(test_long_key),
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_wait),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
