/* test-mta-reply.c — unit tests for mta/client-reply.c, the MTA client's
 * reading of SMTP/LMTP replies: single and multi-line replies, malformed
 * lines (no code, code out of range, a code that changes mid-reply, too many
 * lines), text bounded and cleaned of control characters, enhanced status
 * codes found or defaulted, and EHLO/LHLO capabilities. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mta/client-reply.h"

/* Feed lines; the status of the last one. */
static enum client_reply_status feed(struct client_reply *r, const char *const *lines,
				     const char **error_r)
{
	enum client_reply_status st = CLIENT_REPLY_ERROR;
	for (; *lines != NULL; lines++) {
		st = client_reply_feed(r, *lines, error_r);
		if (st == CLIENT_REPLY_ERROR)
			return st;
	}
	return st;
}

static void test_replies(void **state)
{
	struct client_reply r;
	struct mt_buf sum = MT_BUF_INIT;
	const char *error;
	client_reply_init(&r);

	const char *one[] = { "250 2.0.0 Ok", NULL };
	assert_int_equal(feed(&r, one, &error), CLIENT_REPLY_DONE);
	assert_int_equal(r.code, 250);
	assert_string_equal(mt_buf_cstr(&r.text), "2.0.0 Ok");

	const char *multi[] = { "250-mx.example", "250-PIPELINING", "250 SIZE 1000", NULL };
	assert_int_equal(client_reply_feed(&r, multi[0], &error), CLIENT_REPLY_MORE);
	assert_int_equal(client_reply_feed(&r, multi[1], &error), CLIENT_REPLY_MORE);
	assert_int_equal(client_reply_feed(&r, multi[2], &error), CLIENT_REPLY_DONE);
	assert_int_equal(r.lines, 3);
	assert_string_equal(client_reply_summary(&r, &sum),
			    "250 mx.example PIPELINING SIZE 1000");

	const char *bare[] = { "354", NULL };
	assert_int_equal(feed(&r, bare, &error), CLIENT_REPLY_DONE);
	assert_int_equal(r.code, 354);

	const char *bad[][3] = {
		{ "25 short", NULL }, { "abc text", NULL }, { "2500 x", NULL },
		{ "199 too low", NULL }, { "600 too high", NULL },
		{ "250-first", "251 other code", NULL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		client_reply_reset(&r);
		assert_int_equal(feed(&r, bad[i], &error), CLIENT_REPLY_ERROR);
	}
	client_reply_reset(&r);
	for (int i = 0; i < CLIENT_REPLY_MAX_LINES; i++)
		assert_int_equal(client_reply_feed(&r, "250-x", &error), CLIENT_REPLY_MORE);
	assert_int_equal(client_reply_feed(&r, "250-x", &error), CLIENT_REPLY_ERROR);
	assert_string_equal(error, "too many lines in one reply");

	/* Bounded text, control characters replaced. */
	client_reply_reset(&r);
	char long_line[3000];
	memset(long_line, 'a', sizeof(long_line));
	memcpy(long_line, "550 \x01\x7f", 6);
	long_line[sizeof(long_line) - 1] = '\0';
	assert_int_equal(client_reply_feed(&r, long_line, &error), CLIENT_REPLY_DONE);
	assert_int_equal(r.text.len, CLIENT_REPLY_TEXT_MAX);
	assert_memory_equal(r.text.data, "??aa", 4);
	client_reply_free(&r);
	mt_buf_free(&sum);
}

static void test_status_codes(void **state)
{
	static const struct { const char *text; int code; const char *want; } cases[] = {
		{ "5.1.1 user unknown", 550, "5.1.1" },
		{ "4.2.2 mailbox full", 452, "4.2.2" },
		{ "2.0.0", 250, "2.0.0" },
		{ "5.7.123 policy", 554, "5.7.123" },
		{ "user unknown", 550, "5.0.0" },
		{ "4.1.1 class mismatch", 550, "5.0.0" },
		{ "5.1234.1 too long", 550, "5.0.0" },
		{ "5.1.1x glued", 550, "5.0.0" },
		{ "", 421, "4.0.0" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[16];
		client_reply_status_code(cases[i].text, cases[i].code, out);
		assert_string_equal(out, cases[i].want);
	}
}

static void test_caps(void **state)
{
	struct client_reply r;
	struct client_caps caps;
	const char *error;
	client_reply_init(&r);
	const char *lines[] = { "250-mx.example.net Hello", "250-PIPELINING",
				"250-SIZE 35882577", "250-starttls", "250-8BITMIME",
				"250-SMTPUTF8", "250-DSN", "250-PIPELININGX", "250-XQUEUEID",
				"250 CHUNKING", NULL };
	assert_int_equal(feed(&r, lines, &error), CLIENT_REPLY_DONE);
	client_caps_parse(&r, &caps);
	assert_true(caps.pipelining && caps.starttls && caps.eightbit &&
		    caps.smtputf8 && caps.dsn && caps.chunking && caps.xqueueid);
	assert_int_equal(caps.size, 35882577);
	/* The greeting line itself is not a keyword. */
	client_reply_reset(&r);
	const char *plain[] = { "250 PIPELINING", NULL };
	assert_int_equal(feed(&r, plain, &error), CLIENT_REPLY_DONE);
	client_caps_parse(&r, &caps);
	assert_false(caps.pipelining);
	client_reply_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replies),
		cmocka_unit_test(test_status_codes),
		cmocka_unit_test(test_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
