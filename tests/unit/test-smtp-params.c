/* test-smtp-params.c — unit tests for lib-mail/smtp-params.c, the one
 * MAIL FROM / RCPT TO parser of the SMTP and LMTP servers: the refusal
 * rule (not offered or unknown 555, bad value 501, too big 552, UTF-8 path
 * without SMTPUTF8 553 5.6.7, repeated 555), what an offer set allows, and
 * the values parsed (SIZE saturating past 64 bits within 20 digits, BODY,
 * RET, ENVID, NOTIFY, ORCPT, XQUEUEID). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "smtp-params.h"

#define ALL (MT_SMTP_OFFER_ESMTP | MT_SMTP_OFFER_SIZE | MT_SMTP_OFFER_8BITMIME | \
	     MT_SMTP_OFFER_SMTPUTF8 | MT_SMTP_OFFER_DSN | MT_SMTP_OFFER_AUTH)
#define LMTP (MT_SMTP_OFFER_ESMTP | MT_SMTP_OFFER_SIZE | MT_SMTP_OFFER_8BITMIME | \
	      MT_SMTP_OFFER_SMTPUTF8 | MT_SMTP_OFFER_XQUEUEID)

struct mail_case {
	const char *args;
	unsigned int offered;
	const char *want;	/* "OK" or "code text+detail" */
};

static const struct mail_case mail_cases[] = {
	{ "FROM:<a@b.test> SIZE=10 BODY=8BITMIME RET=HDRS ENVID=x+2By AUTH=<>", ALL, "OK" },
	{ "FROM:<> SMTPUTF8", ALL, "OK" },
	{ "FROM:<a@b.test> SIZE=1000001", ALL,
	  "552 5.3.4 Message size exceeds fixed maximum message size" },
	{ "FROM:<a@b.test> SIZE=99999999999999999999", ALL,
	  "552 5.3.4 Message size exceeds fixed maximum message size" },
	{ "FROM:<a@b.test> SIZE=999999999999999999999", ALL, "501 5.5.4 Bad SIZE parameter" },
	{ "FROM:<a@b.test> BODY=BINARYMIME", ALL, "501 5.5.4 BODY must be 7BIT or 8BITMIME" },
	{ "FROM:<a@b.test> RET=ALL", ALL, "501 5.5.4 Malformed RET parameter" },
	{ "FROM:<a@b.test> ENVID=a+2b", ALL, "501 5.5.4 Malformed ENVID parameter" },
	{ "FROM:<a@b.test> AUTH", ALL, "501 5.5.4 Malformed AUTH parameter" },
	{ "FROM:<a@b.test> RET=FULL", LMTP, "555 5.5.4 Unsupported parameter RET" },
	{ "FROM:<a@b.test> XQUEUEID=0001.A", LMTP, "OK" },
	{ "FROM:<a@b.test> XQUEUEID=a;b", LMTP, "501 5.5.4 Bad XQUEUEID parameter" },
	{ "FROM:<a@b.test> XQUEUEID=1", ALL, "555 5.5.4 Unsupported parameter XQUEUEID" },
	{ "FROM:<a@b.test> FOO", ALL, "555 5.5.4 Unsupported parameter FOO" },
	{ "FROM:<a@b.test> SIZE=1", 0, "555 5.5.4 Error: parameters need EHLO" },
	{ "FROM:<a@b.test> SIZE=1 size=2", ALL, "555 5.5.4 Duplicate parameter SIZE" },
	{ "FROM:<j\xc3\xb6rg@b.test>", ALL, "553 5.6.7 Non-ASCII address needs SMTPUTF8" },
	{ "FROM:<j\xc3\xb6rg@b.test> SMTPUTF8", 0, "501 5.1.7 Bad sender address syntax: " },
	{ "TO:<a@b.test>", ALL, "501 5.5.4 Syntax: MAIL FROM:<address>" },
};

static void format(char *buf, size_t size, bool ok, const struct mt_smtp_param_error *e)
{
	if (ok)
		snprintf(buf, size, "OK");
	else
		snprintf(buf, size, "%d %s%s", e->code, e->text, e->detail);
}

static void test_mail(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(mail_cases) / sizeof(mail_cases[0]); i++) {
		const struct mail_case *c = &mail_cases[i];
		struct mt_smtp_mail_args m;
		struct mt_smtp_param_error e;
		char got[400];
		bool ok = mt_smtp_parse_mail(c->args, c->offered, MT_ADDR_ALLOW_NULL,
					     1000000, &m, &e);
		format(got, sizeof(got), ok, &e);
		if (strncmp(got, c->want, strlen(c->want)) != 0)
			fail_msg("MAIL '%s': '%s', want '%s'", c->args, got, c->want);
		if (!ok)
			assert_int_equal(e.rejected, e.code == 552 || e.code == 553);
	}
	struct mt_smtp_mail_args m;
	struct mt_smtp_param_error e;
	assert_true(mt_smtp_parse_mail(mail_cases[0].args, ALL, 0, 1000000, &m, &e));
	assert_int_equal(m.size, 10);
	assert_true(m.body_8bit);
	assert_int_equal(m.ret, MT_SMTP_RET_HDRS);
	assert_string_equal(m.envid, "x+2By");
	assert_null(m.queue_id);
	assert_true(mt_smtp_parse_mail("FROM:<a@b.test> SIZE=99999999999999999999",
				       ALL, 0, UINT64_MAX, &m, &e));
	assert_true(m.size == UINT64_MAX);
}

static void test_rcpt(void **state)
{
	(void)state;
	struct mt_smtp_rcpt_args r;
	struct mt_smtp_param_error e;
	assert_true(mt_smtp_parse_rcpt("TO:<a@b.test> NOTIFY=success,DELAY ORCPT=rfc822;a@b.test",
				       ALL, 0, false, &r, &e));
	assert_int_equal(r.notify, MT_SMTP_NOTIFY_SUCCESS | MT_SMTP_NOTIFY_DELAY);
	assert_string_equal(r.orcpt, "rfc822;a@b.test");
	assert_true(mt_smtp_parse_rcpt("TO:<a@b.test> NOTIFY=NEVER", ALL, 0, false, &r, &e));
	assert_int_equal(r.notify, MT_SMTP_NOTIFY_NEVER);
	static const struct { const char *args; unsigned int offered; const char *want; } bad[] = {
		{ "TO:<a@b.test> NOTIFY=NEVER,DELAY", ALL, "501 5.5.4 Malformed NOTIFY parameter" },
		{ "TO:<a@b.test> NOTIFY", ALL, "501 5.5.4 Malformed NOTIFY parameter" },
		{ "TO:<a@b.test> ORCPT=a@b.test", ALL, "501 5.5.4 Malformed ORCPT parameter" },
		{ "TO:<a@b.test> NOTIFY=NEVER", LMTP, "555 5.5.4 Unsupported parameter NOTIFY" },
		{ "TO:<a@b.test> SIZE=1", ALL, "555 5.5.4 Unsupported parameter SIZE" },
		{ "TO:<j\xc3\xb6rg@b.test>", ALL, "553 5.6.7 Non-ASCII address needs SMTPUTF8" },
		{ "TO:<>", ALL, "501 5.1.3 Bad recipient address syntax: " },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char got[400];
		bool ok = mt_smtp_parse_rcpt(bad[i].args, bad[i].offered, 0, false, &r, &e);
		format(got, sizeof(got), ok, &e);
		if (strncmp(got, bad[i].want, strlen(bad[i].want)) != 0)
			fail_msg("RCPT '%s': '%s', want '%s'", bad[i].args, got, bad[i].want);
	}
	assert_true(mt_smtp_parse_rcpt("TO:<j\xc3\xb6rg@b.test>", ALL, 0, true, &r, &e));
	assert_true(mt_smtp_parse_rcpt("TO:<Postmaster>", ALL, MT_ADDR_ALLOW_POSTMASTER,
				       false, &r, &e));
	assert_true(mt_smtp_queue_id_ok("0006619AFC52099B"));
	assert_false(mt_smtp_queue_id_ok(""));
	assert_false(mt_smtp_queue_id_ok("12345678901234567890123456789012"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mail),
		cmocka_unit_test(test_rcpt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
