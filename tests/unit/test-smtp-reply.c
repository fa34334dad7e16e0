/* test-smtp-reply.c — unit tests for lib-mail's client-side readers, the
 * one copy the MTA, the MMP and mailtier-load share: SMTP/LMTP replies
 * (lib-mail/smtp-reply.c: single and multi-line, malformed lines — no
 * code, code out of range, a code that changes mid-reply, too many lines —
 * text bounded and cleaned of control characters, enhanced status codes
 * found or defaulted, EHLO/LHLO capabilities) and POP3 status lines
 * (lib-mail/pop3-status.c: +OK, -ERR, the SASL continuation, STAT). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pop3-status.h"
#include "smtp-reply.h"

/* Feed lines; the status of the last one. */
static enum mt_smtp_reply_status feed(struct mt_smtp_reply *r, const char *const *lines,
				     const char **error_r)
{
	enum mt_smtp_reply_status st = MT_SMTP_REPLY_BAD;
	for (; *lines != NULL; lines++) {
		st = mt_smtp_reply_feed(r, *lines, strlen(*lines), error_r);
		if (st == MT_SMTP_REPLY_BAD)
			return st;
	}
	return st;
}

static void test_replies(void **state)
{
	struct mt_smtp_reply r;
	struct mt_buf sum = MT_BUF_INIT;
	const char *error;
	mt_smtp_reply_reset(&r);

	const char *one[] = { "250 2.0.0 Ok", NULL };
	assert_int_equal(feed(&r, one, &error), MT_SMTP_REPLY_DONE);
	assert_int_equal(r.code, 250);
	assert_string_equal(r.text, "2.0.0 Ok");

	const char *multi[] = { "250-mx.example", "250-PIPELINING", "250 SIZE 1000", NULL };
	assert_int_equal(mt_smtp_reply_feed(&r, multi[0], strlen(multi[0]), &error), MT_SMTP_REPLY_MORE);
	assert_int_equal(mt_smtp_reply_feed(&r, multi[1], strlen(multi[1]), &error), MT_SMTP_REPLY_MORE);
	assert_int_equal(mt_smtp_reply_feed(&r, multi[2], strlen(multi[2]), &error), MT_SMTP_REPLY_DONE);
	assert_int_equal(r.lines, 3);
	assert_string_equal(mt_smtp_reply_summary(&r, &sum),
			    "250 mx.example PIPELINING SIZE 1000");

	const char *bare[] = { "354", NULL };
	assert_int_equal(feed(&r, bare, &error), MT_SMTP_REPLY_DONE);
	assert_int_equal(r.code, 354);

	const char *bad[][3] = {
		{ "25 short", NULL }, { "abc text", NULL }, { "2500 x", NULL },
		{ "199 too low", NULL }, { "600 too high", NULL },
		{ "250-first", "251 other code", NULL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mt_smtp_reply_reset(&r);
		assert_int_equal(feed(&r, bad[i], &error), MT_SMTP_REPLY_BAD);
	}
	mt_smtp_reply_reset(&r);
	for (int i = 0; i < MT_SMTP_REPLY_MAX_LINES; i++)
		assert_int_equal(mt_smtp_reply_feed(&r, "250-x", strlen("250-x"), &error), MT_SMTP_REPLY_MORE);
	assert_int_equal(mt_smtp_reply_feed(&r, "250-x", strlen("250-x"), &error), MT_SMTP_REPLY_BAD);
	assert_string_equal(error, "too many lines in one reply");

	/* Bounded text, control characters replaced. */
	mt_smtp_reply_reset(&r);
	char long_line[3000];
	memset(long_line, 'a', sizeof(long_line));
	memcpy(long_line, "550 \x01\x7f", 6);
	long_line[sizeof(long_line) - 1] = '\0';
	assert_int_equal(mt_smtp_reply_feed(&r, long_line, strlen(long_line), &error), MT_SMTP_REPLY_DONE);
	assert_int_equal(r.text_len, MT_SMTP_REPLY_TEXT_MAX);
	assert_int_equal(strlen(r.text), MT_SMTP_REPLY_TEXT_MAX);
	assert_memory_equal(r.text, "??aa", 4);
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
		mt_smtp_status_code(cases[i].text, cases[i].code, out);
		assert_string_equal(out, cases[i].want);
	}
}

static void test_caps(void **state)
{
	struct mt_smtp_reply r;
	struct mt_smtp_caps caps;
	const char *error;
	mt_smtp_reply_reset(&r);
	const char *lines[] = { "250-mx.example.net Hello", "250-PIPELINING",
				"250-SIZE 35882577", "250-starttls", "250-8BITMIME",
				"250-SMTPUTF8", "250-DSN", "250-PIPELININGX", "250-XQUEUEID",
				"250 CHUNKING", NULL };
	assert_int_equal(feed(&r, lines, &error), MT_SMTP_REPLY_DONE);
	mt_smtp_caps_parse(&r, &caps);
	assert_true(caps.pipelining && caps.starttls && caps.eightbit &&
		    caps.smtputf8 && caps.dsn && caps.chunking && caps.xqueueid);
	assert_int_equal(caps.size, 35882577);
	/* The greeting line itself is not a keyword. */
	mt_smtp_reply_reset(&r);
	const char *plain[] = { "250 PIPELINING", NULL };
	assert_int_equal(feed(&r, plain, &error), MT_SMTP_REPLY_DONE);
	mt_smtp_caps_parse(&r, &caps);
	assert_false(caps.pipelining);
	assert_false(caps.auth_plain || caps.auth_login);
	/* AUTH and its mechanisms (RFC 4954 3), any case, any order; a
	 * mechanism only as a whole word. */
	const char *const auths[][3] = {
		{ "250-AUTH PLAIN LOGIN", "yes", "yes" },
		{ "250-auth login", "no", "yes" },
		{ "250-AUTH CRAM-MD5 PLAINX XLOGIN", "no", "no" },
		{ "250-AUTH  SCRAM-SHA-256 plain", "yes", "no" },
		{ "250-AUTH", "no", "no" },
		{ "250-AUTHPLAIN", "no", "no" },
	};
	for (size_t i = 0; i < sizeof(auths) / sizeof(auths[0]); i++) {
		mt_smtp_reply_reset(&r);
		const char *with[] = { "250-mx", auths[i][0], "250 SIZE 1000", NULL };
		assert_int_equal(feed(&r, with, &error), MT_SMTP_REPLY_DONE);
		mt_smtp_caps_parse(&r, &caps);
		assert_int_equal(caps.auth_plain, strcmp(auths[i][1], "yes") == 0);
		assert_int_equal(caps.auth_login, strcmp(auths[i][2], "yes") == 0);
		assert_int_equal(caps.size, 1000);
	}
}

/* mailtier-load's use: lengths, not C strings; POP3 status and STAT. */
static void test_reply_parsers(void **state)
{
	struct mt_smtp_reply r;
	const char *error;
	uint64_t count, size;

	mt_smtp_reply_reset(&r);
	assert_int_equal(mt_smtp_reply_feed(&r, "250-a", 5, &error), MT_SMTP_REPLY_MORE);
	assert_int_equal(mt_smtp_reply_feed(&r, "250", 3, &error), MT_SMTP_REPLY_DONE);
	assert_int_equal(r.code, 250);
	mt_smtp_reply_reset(&r);
	assert_int_equal(mt_smtp_reply_feed(&r, "354 go", 6, &error), MT_SMTP_REPLY_DONE);
	const char *bad[] = { "", "25", "2500", "199 x", "600 x", "2x0 x", "250x", "+OK" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mt_smtp_reply_reset(&r);
		assert_int_equal(mt_smtp_reply_feed(&r, bad[i], strlen(bad[i]), &error),
				 MT_SMTP_REPLY_BAD);
	}
	mt_smtp_reply_reset(&r);
	for (int i = 0; i < MT_SMTP_REPLY_MAX_LINES; i++)
		assert_int_equal(mt_smtp_reply_feed(&r, "250-x", 5, &error), MT_SMTP_REPLY_MORE);
	assert_int_equal(mt_smtp_reply_feed(&r, "250-x", 5, &error), MT_SMTP_REPLY_BAD);

	assert_int_equal(mt_pop3_status("+OK", 3), MT_POP3_OK);
	assert_int_equal(mt_pop3_status("+OK fine", 8), MT_POP3_OK);
	assert_int_equal(mt_pop3_status("-ERR", 4), MT_POP3_ERR);
	assert_int_equal(mt_pop3_status("-ERR [IN-USE] x", 15), MT_POP3_ERR);
	assert_int_equal(mt_pop3_status("+OKAY", 5), MT_POP3_BAD);
	assert_int_equal(mt_pop3_status("OK", 2), MT_POP3_BAD);
	assert_int_equal(mt_pop3_status("", 0), MT_POP3_BAD);

	assert_true(mt_pop3_parse_stat("+OK 2 320", &count, &size));
	assert_true(count == 2 && size == 320);
	assert_true(mt_pop3_parse_stat("+OK 0 0 extra", &count, &size));
	assert_false(mt_pop3_parse_stat("+OK 2", &count, &size));
	assert_false(mt_pop3_parse_stat("+OK -2 3", &count, &size));
	assert_false(mt_pop3_parse_stat("+OK 2 3x", &count, &size));
	assert_false(mt_pop3_parse_stat("+OK 99999999999999999999 1", &count, &size));
	assert_false(mt_pop3_parse_stat("-ERR 2 3", &count, &size));
}

static void test_pop3_status(void **state)
{
	static const struct { const char *line; enum mt_pop3_status kind; } cases[] = {
		{ "+OK", MT_POP3_OK },
		{ "+OK logged in", MT_POP3_OK },
		{ "-ERR", MT_POP3_ERR },
		{ "-ERR [IN-USE] locked", MT_POP3_ERR },
		{ "+ ", MT_POP3_CONTINUE },
		{ "+", MT_POP3_CONTINUE },
		{ "+ Zm9v", MT_POP3_CONTINUE },
		{ "+OKAY", MT_POP3_BAD },
		{ "+ok", MT_POP3_BAD },	/* RFC 2449: case sensitive */
		{ "-ERRor", MT_POP3_BAD },
		{ "", MT_POP3_BAD },
		{ "hello", MT_POP3_BAD },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (mt_pop3_status(cases[i].line, strlen(cases[i].line)) != cases[i].kind)
			fail_msg("'%s': %d", cases[i].line,
				 (int)mt_pop3_status(cases[i].line, strlen(cases[i].line)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replies),
		cmocka_unit_test(test_status_codes),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_reply_parsers),
		cmocka_unit_test(test_pop3_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
