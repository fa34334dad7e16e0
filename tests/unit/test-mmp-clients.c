/* test-mmp-clients.c — unit tests for mmp/mmp-clients.c: per-address
 * connection counts against conn_limit_per_client (IPv4, IPv6, and
 * v4-mapped IPv6 counted as IPv4), the failed-login delay that doubles per
 * recent failure up to its cap, the auth_fail_limit block and its expiry
 * after auth_fail_window, the password checks an address may have under
 * way at once (auth_fail_limit - failures: the rest wait, none slips past
 * the block), and that the table forgets what it no longer needs. Time is
 * passed in, so no test sleeps. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "mmp.h"

static struct sockaddr_storage addr(const char *text)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	if (strchr(text, ':') != NULL) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
		sin6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, text, &sin6->sin6_addr), 1);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		sin->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, text, &sin->sin_addr), 1);
	}
	return ss;
}

#define SA(ss) ((struct sockaddr *)&(ss))

static const struct mmp_clients_settings set = {
	.conn_limit_per_client = 3,
	.auth_fail_delay = 200,
	.auth_fail_limit = 5,
	.auth_fail_window = 60000,
};

static void test_per_client_limit(void **state)
{
	struct mmp_clients *c = mmp_clients_new(&set);
	struct sockaddr_storage a = addr("192.0.2.1"), b = addr("192.0.2.2");
	struct sockaddr_storage mapped = addr("::ffff:192.0.2.1");
	struct sockaddr_storage v6 = addr("2001:db8::1");
	(void)state;

	for (int i = 0; i < 3; i++)
		assert_int_equal(mmp_clients_admit(c, SA(a), 0), MMP_ADMIT_OK);
	assert_int_equal(mmp_clients_admit(c, SA(a), 0), MMP_ADMIT_PER_CLIENT);
	/* The same address through a v6 socket counts the same. */
	assert_int_equal(mmp_clients_admit(c, SA(mapped), 0), MMP_ADMIT_PER_CLIENT);
	assert_int_equal(mmp_clients_admit(c, SA(b), 0), MMP_ADMIT_OK);
	assert_int_equal(mmp_clients_admit(c, SA(v6), 0), MMP_ADMIT_OK);
	assert_int_equal(mmp_clients_count(c), 3);
	mmp_clients_release(c, SA(mapped));
	assert_int_equal(mmp_clients_admit(c, SA(a), 0), MMP_ADMIT_OK);
	for (int i = 0; i < 3; i++)
		mmp_clients_release(c, SA(a));
	mmp_clients_release(c, SA(b));
	mmp_clients_release(c, SA(v6));
	/* Nothing left to remember: the entries are gone. */
	assert_int_equal(mmp_clients_count(c), 0);
	/* A release too many is harmless. */
	mmp_clients_release(c, SA(b));
	mmp_clients_free(&c);
	assert_null(c);
}

static void test_penalty_grows(void **state)
{
	struct mmp_clients *c = mmp_clients_new(&set);
	struct sockaddr_storage a = addr("198.51.100.7"), b = addr("198.51.100.8");
	bool blocked = true;
	(void)state;

	assert_int_equal(mmp_clients_auth_failed(c, SA(a), 1000, &blocked), 200);
	assert_false(blocked);
	assert_int_equal(mmp_clients_auth_failed(c, SA(a), 2000, &blocked), 400);
	assert_int_equal(mmp_clients_auth_failed(c, SA(a), 3000, &blocked), 800);
	assert_int_equal(mmp_clients_auth_failed(c, SA(a), 4000, &blocked), 1600);
	assert_false(blocked);
	/* Other addresses are not affected. */
	assert_int_equal(mmp_clients_auth_failed(c, SA(b), 4000, &blocked), 200);
	assert_int_equal(mmp_clients_admit(c, SA(a), 4500), MMP_ADMIT_OK);
	mmp_clients_release(c, SA(a));
	/* The fifth failure reaches auth_fail_limit: blocked. */
	assert_int_equal(mmp_clients_auth_failed(c, SA(a), 5000, &blocked), 3200);
	assert_true(blocked);
	assert_int_equal(mmp_clients_admit(c, SA(a), 5001), MMP_ADMIT_BLOCKED);
	assert_int_equal(mmp_clients_admit(c, SA(a), 64999), MMP_ADMIT_BLOCKED);
	/* auth_fail_window after the last failure, it is forgotten. */
	assert_int_equal(mmp_clients_admit(c, SA(a), 65000), MMP_ADMIT_OK);
	mmp_clients_release(c, SA(a));
	assert_int_equal(mmp_clients_auth_failed(c, SA(a), 66000, &blocked), 200);
	assert_false(blocked);
	mmp_clients_free(&c);
}

static void test_penalty_cap(void **state)
{
	struct mmp_clients_settings s = set;
	s.auth_fail_limit = 1000;
	s.auth_fail_delay = 20000;
	struct mmp_clients *c = mmp_clients_new(&s);
	struct sockaddr_storage a = addr("203.0.113.9");
	bool blocked;
	uint64_t d = 0;
	(void)state;

	for (int i = 0; i < 40; i++)
		d = mmp_clients_auth_failed(c, SA(a), (uint64_t)i, &blocked);
	assert_int_equal(d, MMP_AUTH_FAIL_DELAY_MAX);
	mmp_clients_free(&c);
}

/* Logins sent at once on many connections: no more than auth_fail_limit
 * of them reach the directory before the block. */
static void test_attempts(void **state)
{
	struct mmp_clients *c = mmp_clients_new(&set);
	struct sockaddr_storage a = addr("192.0.2.77"), b = addr("192.0.2.78");
	bool blocked;
	(void)state;

	/* auth_fail_limit = 5: five checks may run, the sixth waits. */
	for (int i = 0; i < 5; i++)
		assert_int_equal(mmp_clients_attempt_start(c, SA(a), 1000), MMP_ATTEMPT_OK);
	assert_int_equal(mmp_clients_attempt_start(c, SA(a), 1000), MMP_ATTEMPT_WAIT);
	/* Another address has its own turns. */
	assert_int_equal(mmp_clients_attempt_start(c, SA(b), 1000), MMP_ATTEMPT_OK);
	mmp_clients_attempt_done(c, SA(b));
	/* A right password ends: a turn is free again. */
	mmp_clients_attempt_done(c, SA(a));
	assert_int_equal(mmp_clients_attempt_start(c, SA(a), 1001), MMP_ATTEMPT_OK);
	assert_int_equal(mmp_clients_attempt_start(c, SA(a), 1001), MMP_ATTEMPT_WAIT);
	/* A failure is recorded before its check ends: the turn it frees
	 * counts against the limit, so the waiting login still waits. */
	mmp_clients_auth_failed(c, SA(a), 1002, &blocked);
	mmp_clients_attempt_done(c, SA(a));
	assert_int_equal(mmp_clients_attempt_start(c, SA(a), 1002), MMP_ATTEMPT_WAIT);
	/* The other four fail: blocked, and every login is refused. */
	for (int i = 0; i < 4; i++) {
		mmp_clients_auth_failed(c, SA(a), 1003, &blocked);
		mmp_clients_attempt_done(c, SA(a));
	}
	assert_true(blocked);
	assert_int_equal(mmp_clients_attempt_start(c, SA(a), 1004), MMP_ATTEMPT_BLOCKED);
	assert_int_equal(mmp_clients_attempt_start(c, SA(a), 61002), MMP_ATTEMPT_BLOCKED);
	/* auth_fail_window after the last failure: turns again. */
	assert_int_equal(mmp_clients_attempt_start(c, SA(a), 61003), MMP_ATTEMPT_OK);
	mmp_clients_attempt_done(c, SA(a));
	/* A done too many is harmless; nothing is left to remember. */
	mmp_clients_attempt_done(c, SA(a));
	mmp_clients_sweep(c, 200000);
	assert_int_equal(mmp_clients_count(c), 0);

	/* auth_fail_limit = 0: never blocked, never waits. */
	struct mmp_clients_settings s = set;
	s.auth_fail_limit = 0;
	struct mmp_clients *open = mmp_clients_new(&s);
	for (int i = 0; i < 50; i++)
		assert_int_equal(mmp_clients_attempt_start(open, SA(a), 0), MMP_ATTEMPT_OK);
	mmp_clients_free(&open);
	mmp_clients_free(&c);
}

static void test_sweep(void **state)
{
	struct mmp_clients *c = mmp_clients_new(&set);
	bool blocked;
	char text[32];
	(void)state;

	/* Enough addresses to make the table grow a few times. */
	for (int i = 0; i < 3000; i++) {
		snprintf(text, sizeof(text), "10.0.%d.%d", i / 250, i % 250 + 1);
		struct sockaddr_storage a = addr(text);
		mmp_clients_auth_failed(c, SA(a), 1000, &blocked);
	}
	assert_int_equal(mmp_clients_count(c), 3000);
	mmp_clients_sweep(c, 30000);
	assert_int_equal(mmp_clients_count(c), 3000);
	struct sockaddr_storage held = addr("10.0.0.1");
	assert_int_equal(mmp_clients_admit(c, SA(held), 30000), MMP_ADMIT_OK);
	mmp_clients_sweep(c, 61000);
	/* Only the address with an open connection is still there. */
	assert_int_equal(mmp_clients_count(c), 1);
	mmp_clients_release(c, SA(held));
	assert_int_equal(mmp_clients_count(c), 0);
	mmp_clients_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_client_limit),
		cmocka_unit_test(test_penalty_grows),
		cmocka_unit_test(test_penalty_cap),
		cmocka_unit_test(test_attempts),
		cmocka_unit_test(test_sweep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
