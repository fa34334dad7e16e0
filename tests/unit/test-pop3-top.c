/* test-pop3-top.c — unit tests for popstore/pop3-top.c: the TOP limiter
 * finds the end of "headers, blank line, n body lines" the same however
 * the message is cut into chunks (down to one octet), including messages
 * without a body, without a blank line, with bare LF lines and n larger
 * than the body (RFC 1939 7). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "pop3-top.h"

struct top_case {
	const char *msg;
	uint64_t lines;
	const char *want;	/* what TOP sends (before dot-stuffing) */
};

#define H "From: a\r\nSubject: s\r\n"

static const struct top_case top_cases[] = {
	{ H "\r\nl1\r\nl2\r\nl3\r\n", 0, H "\r\n" },
	{ H "\r\nl1\r\nl2\r\nl3\r\n", 1, H "\r\nl1\r\n" },
	{ H "\r\nl1\r\nl2\r\nl3\r\n", 2, H "\r\nl1\r\nl2\r\n" },
	{ H "\r\nl1\r\nl2\r\nl3\r\n", 3, H "\r\nl1\r\nl2\r\nl3\r\n" },
	{ H "\r\nl1\r\nl2\r\nl3\r\n", 99, H "\r\nl1\r\nl2\r\nl3\r\n" },
	{ H "\r\n\r\n\r\nx\r\n", 2, H "\r\n\r\n\r\n" },	/* empty body lines count */
	{ H, 5, H },						/* no blank line */
	{ H "\r\n", 0, H "\r\n" },
	{ H "\r\nno final newline", 1, H "\r\nno final newline" },
	{ "From: a\nSubject: s\n\nl1\nl2\n", 1, "From: a\nSubject: s\n\nl1\n" },
	{ "\r\nbody only\r\nmore\r\n", 1, "\r\nbody only\r\n" },
	{ "", 3, "" },
	{ H "\r\n.dot\r\n..\r\n", 2, H "\r\n.dot\r\n..\r\n" },
};

/* Run the limiter over msg cut into chunks of chunk octets. */
static size_t run(const struct top_case *c, size_t chunk, bool *done_r)
{
	struct pop3_top_limit t;
	size_t len = strlen(c->msg), sent = 0;
	pop3_top_init(&t, c->lines);
	for (size_t off = 0; off < len && !t.done; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		size_t take = pop3_top_scan(&t, c->msg + off, n);
		assert_true(take <= n);
		if (take < n)
			assert_true(t.done);
		sent += take;
	}
	*done_r = t.done;
	return sent;
}

static void test_top(void **state)
{
	for (size_t i = 0; i < sizeof(top_cases) / sizeof(top_cases[0]); i++) {
		const struct top_case *c = &top_cases[i];
		for (size_t chunk = 1; chunk <= strlen(c->msg) + 1; chunk++) {
			bool done;
			size_t sent = run(c, chunk, &done);
			if (sent != strlen(c->want) ||
			    memcmp(c->msg, c->want, sent) != 0)
				fail_msg("case %zu chunk %zu: sent %zu, want %zu", i,
					 chunk, sent, strlen(c->want));
		}
	}
}

static void test_done_stays_done(void **state)
{
	struct pop3_top_limit t;
	pop3_top_init(&t, 0);
	assert_int_equal(pop3_top_scan(&t, "a: b\r\n\r\nbody\r\n", 14), 8);
	assert_true(t.done);
	assert_int_equal(pop3_top_scan(&t, "more\r\n", 6), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top),
		cmocka_unit_test(test_done_stays_done),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
