/* test-lmtp-headers.c — unit tests for popstore/lmtp-headers.c: the exact
 * Return-Path:/Received: lines for IPv4 and IPv6 clients and the null
 * sender, the RFC 5322 date form, and that client-supplied values with CR,
 * LF, NUL-free controls or spaces can never add a header line. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lmtp-headers.h"

static void test_headers(void **state)
{
	char date[64];
	lmtp_rfc5322_date(date, sizeof(date), 0);
	struct lmtp_trace t = {
		.sender = "alice@example.test", .helo = "mta.example.test",
		.peer_ip = "127.0.0.1", .hostname = "store1.example.test",
		.id = "Q1234", .rcpt = "bob@example.test", .when = 0,
	};
	struct mt_buf out = MT_BUF_INIT;
	lmtp_trace_headers(&out, &t);
	struct mt_buf want = MT_BUF_INIT;
	mt_buf_appendf(&want,
		"Return-Path: <alice@example.test>\r\n"
		"Received: from mta.example.test ([127.0.0.1])\r\n"
		"\tby store1.example.test (mailtier-popstore) with LMTP id Q1234\r\n"
		"\tfor <bob@example.test>; %s\r\n", date);
	assert_string_equal(mt_buf_cstr(&out), mt_buf_cstr(&want));
	mt_buf_free(&out);
	mt_buf_free(&want);

	t.sender = "";
	t.peer_ip = "IPv6:::1";
	lmtp_trace_headers(&out, &t);
	assert_non_null(strstr(mt_buf_cstr(&out), "Return-Path: <>\r\n"));
	assert_non_null(strstr(mt_buf_cstr(&out), "([IPv6:::1])"));
	mt_buf_free(&out);
}

static void test_injection(void **state)
{
	struct lmtp_trace t = {
		.sender = "a@b\r\nX-Evil: 1", .helo = "h\nX-Evil: 2",
		.peer_ip = "127.0.0.1", .hostname = "store",
		.id = "id\rX", .rcpt = "c@d>\r\nBcc: e", .when = 1,
	};
	struct mt_buf out = MT_BUF_INIT;
	lmtp_trace_headers(&out, &t);
	const char *s = mt_buf_cstr(&out);
	assert_null(strstr(s, "\nX-Evil"));
	assert_null(strstr(s, "\nBcc"));
	/* Exactly the 4 line ends the format has, all CRLF. */
	size_t lf = 0;
	for (const char *p = s; *p != '\0'; p++) {
		if (*p == '\n') {
			lf++;
			assert_true(p > s && p[-1] == '\r');
		}
		if (*p == '\r')
			assert_int_equal(p[1], '\n');
	}
	assert_int_equal(lf, 4);
	mt_buf_free(&out);
}

static void test_date(void **state)
{
	char buf[64];
	setenv("TZ", "UTC", 1);
	tzset();
	lmtp_rfc5322_date(buf, sizeof(buf), 0);
	assert_string_equal(buf, "Thu, 1 Jan 1970 00:00:00 +0000");
	lmtp_rfc5322_date(buf, sizeof(buf), 1751360700);
	assert_string_equal(buf, "Tue, 1 Jul 2025 09:05:00 +0000");
	setenv("TZ", "Europe/Berlin", 1);	/* no tzdata: stays UTC, still valid */
	tzset();
	lmtp_rfc5322_date(buf, sizeof(buf), 1751360700);
	assert_true(strstr(buf, "+0200") != NULL || strstr(buf, "+0000") != NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_injection),
		cmocka_unit_test(test_date),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
