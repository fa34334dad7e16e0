/* test-loglimit.c — unit tests for lib/loglimit.c: one line per interval
 * per address with the held-back ones counted on the next, addresses
 * independent, and the oldest address forgotten when the table is full.
 * Time is passed in, so no test sleeps. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "loglimit.h"

static void test_one_line_per_interval(void **state)
{
	(void)state;
	struct mt_loglimit limit;
	uint64_t suppressed = 99;
	mt_loglimit_init(&limit, 1000);
	assert_true(mt_loglimit_allow(&limit, "192.0.2.1", 5000, &suppressed));
	assert_int_equal(suppressed, 0);
	for (uint64_t t = 5001; t < 6000; t += 100)
		assert_false(mt_loglimit_allow(&limit, "192.0.2.1", t, &suppressed));
	assert_true(mt_loglimit_allow(&limit, "192.0.2.1", 6000, &suppressed));
	assert_int_equal(suppressed, 10);
	assert_false(mt_loglimit_allow(&limit, "192.0.2.1", 6500, &suppressed));
	assert_true(mt_loglimit_allow(&limit, "192.0.2.1", 7000, &suppressed));
	assert_int_equal(suppressed, 1);
}

static void test_addresses_independent(void **state)
{
	(void)state;
	struct mt_loglimit limit;
	uint64_t suppressed;
	mt_loglimit_init(&limit, 1000);
	assert_true(mt_loglimit_allow(&limit, "192.0.2.1", 100, &suppressed));
	assert_true(mt_loglimit_allow(&limit, "192.0.2.2", 100, &suppressed));
	assert_false(mt_loglimit_allow(&limit, "192.0.2.1", 200, &suppressed));
	assert_true(mt_loglimit_allow(&limit, "2001:db8::1", 200, &suppressed));
	assert_int_equal(suppressed, 0);
}

static void test_oldest_forgotten(void **state)
{
	(void)state;
	struct mt_loglimit limit;
	uint64_t suppressed;
	char key[32];
	mt_loglimit_init(&limit, 1000);
	assert_true(mt_loglimit_allow(&limit, "198.51.100.1", 10, &suppressed));
	assert_false(mt_loglimit_allow(&limit, "198.51.100.1", 11, &suppressed));
	for (int i = 0; i < MT_LOGLIMIT_SLOTS; i++) {
		snprintf(key, sizeof(key), "192.0.2.%d", i + 1);
		assert_true(mt_loglimit_allow(&limit, key, 20 + (uint64_t)i, &suppressed));
	}
	/* 198.51.100.1's slot was the oldest: it went to the last address,
	 * so it starts again (taking 192.0.2.1's, the oldest now), its
	 * held-back line forgotten with it. */
	assert_true(mt_loglimit_allow(&limit, "198.51.100.1", 100, &suppressed));
	assert_int_equal(suppressed, 0);
	/* 192.0.2.1 starts again too; 192.0.2.32 is still remembered. */
	assert_true(mt_loglimit_allow(&limit, "192.0.2.1", 101, &suppressed));
	assert_false(mt_loglimit_allow(&limit, "192.0.2.32", 102, &suppressed));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_line_per_interval),
		cmocka_unit_test(test_addresses_independent),
		cmocka_unit_test(test_oldest_forgotten),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
