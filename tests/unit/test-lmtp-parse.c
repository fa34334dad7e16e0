/* test-lmtp-parse.c — unit tests for popstore/lmtp-parse.c: which command
 * an LMTP line names, the LHLO name, MAIL FROM with SIZE (501 when bad,
 * 552 as a rejection when over the limit, a value beyond 64 bits is only
 * "too big"), BODY and XQUEUEID, RCPT TO without parameters; each refusal
 * with its exact reply, table-driven (RFC 2033 4.1, RFC 5321 4.1.1,
 * RFC 1870, RFC 6152). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lmtp-parse.h"

#define UNKNOWN LMTP_VERB_COUNT

struct command_case {
	const char *line;
	enum lmtp_verb verb;	/* UNKNOWN: no such command */
	const char *arg;
};

static const struct command_case command_cases[] = {
	{ "LHLO mta.example.test", LMTP_VERB_LHLO, "mta.example.test" },
	{ "lhlo x", LMTP_VERB_LHLO, "x" },
	{ "MAIL FROM:<a@b.test>", LMTP_VERB_MAIL, "FROM:<a@b.test>" },
	{ "rcpt TO:<a@b.test>", LMTP_VERB_RCPT, "TO:<a@b.test>" },
	{ "DATA", LMTP_VERB_DATA, "" },
	{ "DATA x", LMTP_VERB_DATA, "x" },
	{ "RSET", LMTP_VERB_RSET, "" },
	{ "NOOP", LMTP_VERB_NOOP, "" },
	{ "QUIT", LMTP_VERB_QUIT, "" },
	{ "HELO x", LMTP_VERB_HELO, "x" },
	{ "EHLO x", LMTP_VERB_EHLO, "x" },
	{ "MAIL  FROM:<>", LMTP_VERB_MAIL, " FROM:<>" },
	{ "", UNKNOWN, "" },
	{ "BDAT 10 LAST", UNKNOWN, "10 LAST" },
	{ "MAIL:FROM:<>", UNKNOWN, "" },
	{ "STARTTLS", UNKNOWN, "" },
	{ " LHLO x", UNKNOWN, "LHLO x" },
};

static void test_command(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(command_cases) / sizeof(command_cases[0]); i++) {
		const struct command_case *c = &command_cases[i];
		enum lmtp_verb verb = UNKNOWN;
		const char *arg = NULL;
		bool ok = lmtp_parse_command(c->line, &verb, &arg);
		if (ok != (c->verb != UNKNOWN) || (ok && verb != c->verb))
			fail_msg("'%s': %d %d, want %d", c->line, ok, verb, c->verb);
		assert_string_equal(arg, c->arg);
	}
	for (unsigned int v = 0; v < LMTP_VERB_COUNT; v++) {
		enum lmtp_verb verb;
		const char *arg;
		assert_true(lmtp_parse_command(lmtp_verb_name((enum lmtp_verb)v), &verb, &arg));
		assert_int_equal(verb, v);
	}
	assert_string_equal(lmtp_verb_name(LMTP_VERB_EHLO), "EHLO");
	assert_string_equal(lmtp_verb_name(LMTP_VERB_COUNT), "?");
}

static void test_lhlo(void **state)
{
	char name[LMTP_LHLO_MAX + 2];
	(void)state;
	assert_true(lmtp_parse_lhlo("mta.example.test"));
	assert_true(lmtp_parse_lhlo("[192.0.2.1]"));
	assert_true(lmtp_parse_lhlo("[IPv6:2001:db8::1]"));
	assert_true(lmtp_parse_lhlo("under_score-host"));
	assert_false(lmtp_parse_lhlo(""));
	assert_false(lmtp_parse_lhlo("two words"));
	assert_false(lmtp_parse_lhlo("semi;colon"));
	assert_false(lmtp_parse_lhlo("tab\there"));
	assert_false(lmtp_parse_lhlo("bad(comment)"));
	assert_false(lmtp_parse_lhlo("h\xc3\xa9llo"));	/* 8-bit */
	memset(name, 'a', sizeof(name));
	name[LMTP_LHLO_MAX] = '\0';
	assert_true(lmtp_parse_lhlo(name));
	name[LMTP_LHLO_MAX] = 'a';
	name[LMTP_LHLO_MAX + 1] = '\0';
	assert_false(lmtp_parse_lhlo(name));
}

static void test_queue_id(void **state)
{
	(void)state;
	assert_true(mt_smtp_queue_id_ok("0123456789abcdef.1"));
	assert_true(mt_smtp_queue_id_ok("A-b_c.d"));
	assert_true(mt_smtp_queue_id_ok("1234567890123456789012345678901"));	/* 31 */
	assert_false(mt_smtp_queue_id_ok("12345678901234567890123456789012"));	/* 32 */
	assert_false(mt_smtp_queue_id_ok(""));
	assert_false(mt_smtp_queue_id_ok("a/b"));
	assert_false(mt_smtp_queue_id_ok("a:b"));
	assert_false(mt_smtp_queue_id_ok("a\x7f"));
}

struct mail_case {
	const char *arg;
	uint64_t max_size;
	const char *want;	/* "OK sender size queue-id" or the reply */
};

static const struct mail_case mail_cases[] = {
	{ "FROM:<alice@Example.TEST>", 1000, "OK alice@example.test 0 -" },
	{ "from:<>", 1000, "OK  0 -" },
	{ "FROM:<a@b.test> SIZE=1000", 1000, "OK a@b.test 1000 -" },
	{ "FROM:<a@b.test> size=0", 0, "OK a@b.test 0 -" },
	{ "FROM:<a@b.test> BODY=8bitmime", 1000, "OK a@b.test 0 -" },
	{ "FROM:<a@b.test> BODY=7BIT", 1000, "OK a@b.test 0 -" },
	{ "FROM:<a@b.test> XQUEUEID=0001.2 SIZE=5", 1000, "OK a@b.test 5 0001.2" },
	{ "FROM:<a@b.test>   ", 1000, "OK a@b.test 0 -" },
	{ "FROM:<a@b.test> SIZE=1001", 1000,
	  "552! 5.3.4 Message size exceeds fixed maximum message size" },
	/* RFC 1870: 1*20DIGIT; 20 digits beyond 64 bits are only too big. */
	{ "FROM:<a@b.test> SIZE=99999999999999999999", UINT64_MAX - 1,
	  "552! 5.3.4 Message size exceeds fixed maximum message size" },
	{ "FROM:<a@b.test> SIZE=99999999999999999999", UINT64_MAX, "OK a@b.test "
	  "18446744073709551615 -" },
	{ "FROM:<a@b.test> SIZE=999999999999999999999", UINT64_MAX,
	  "501 5.5.4 Bad SIZE parameter" },
	{ "FROM:<a@b.test> SIZE=", 1000, "501 5.1.7 Bad sender address syntax: " },
	{ "FROM:<a@b.test> SIZE", 1000, "501 5.5.4 Bad SIZE parameter" },
	{ "FROM:<a@b.test> SIZE=+1", 1000, "501 5.5.4 Bad SIZE parameter" },
	{ "FROM:<a@b.test> SIZE=1k", 1000, "501 5.5.4 Bad SIZE parameter" },
	{ "FROM:<a@b.test> BODY=BINARYMIME", 1000, "501 5.5.4 BODY must be 7BIT or 8BITMIME" },
	{ "FROM:<a@b.test> BODY", 1000, "501 5.5.4 BODY must be 7BIT or 8BITMIME" },
	{ "FROM:<a@b.test> XQUEUEID", 1000, "501 5.5.4 Bad XQUEUEID parameter" },
	{ "FROM:<a@b.test> XQUEUEID=a/b", 1000, "501 5.5.4 Bad XQUEUEID parameter" },
	{ "FROM:<a@b.test> XQUEUEID=12345678901234567890123456789012", 1000,
	  "501 5.5.4 Bad XQUEUEID parameter" },
	{ "FROM:<a@b.test> SMTPUTF8", 1000, "OK a@b.test 0 -" },
	{ "FROM:<j\xc3\xb6rg@b.test> SMTPUTF8", 1000, "OK j\xc3\xb6rg@b.test 0 -" },
	{ "FROM:<j\xc3\xb6rg@b.test>", 1000, "553! 5.6.7 Non-ASCII address needs SMTPUTF8" },
	{ "FROM:<j\xc3\xb6rg@b.test> SMTPUTF8=1", 1000,
	  "555 5.5.4 Unsupported parameter SMTPUTF8" },
	{ "FROM:<j\xc3rg@b.test> SMTPUTF8", 1000, "501 5.1.7 Bad sender address syntax: " },
	{ "FROM:<a@b.test> ret=FULL", 1000, "555 5.5.4 Unsupported parameter RET" },
	/* The first bad parameter decides. */
	{ "FROM:<a@b.test> FOO=1 SIZE=2000", 1000, "555 5.5.4 Unsupported parameter FOO" },
	{ "FROM:<a@b.test> SIZE=2000 FOO=1", 1000,
	  "552! 5.3.4 Message size exceeds fixed maximum message size" },
	{ "FROM:<a@b.test> SIZE=1 SIZE=2", 1000, "555 5.5.4 Duplicate parameter SIZE" },
	{ "FROM:<a@b.test> SIZE=1 size=1", 1000, "555 5.5.4 Duplicate parameter SIZE" },
	{ "FROM: <a@b.test>", 1000, "501 5.1.7 Bad sender address syntax: address must be "
	  "enclosed in <>" },	/* no MT_ADDR_LENIENT: not as the MTA */
	{ "FROM:a@b.test", 1000, "501 5.1.7 Bad sender address syntax: " },
	{ "FROM:<a..b@c.test>", 1000, "501 5.1.7 Bad sender address syntax: consecutive dots "
	  "in local part" },
	{ "TO:<a@b.test>", 1000, "501 5.5.4 Syntax: MAIL FROM:<address>" },
	{ "FROM<a@b.test>", 1000, "501 5.5.4 Syntax: MAIL FROM:<address>" },
	{ "", 1000, "501 5.5.4 Syntax: MAIL FROM:<address>" },
};

/* "OK sender size queue-id" or "code[!] text+detail" (! when rejected). */
static void describe_mail(const char *arg, uint64_t max_size, char *out, size_t size)
{
	static struct mt_smtp_mail_args m;
	struct mt_smtp_param_error e;

	if (lmtp_parse_mail(arg, max_size, &m, &e))
		snprintf(out, size, "OK %s %llu %s", m.addr.addr, (unsigned long long)m.size,
			 m.queue_id != NULL ? m.queue_id : "-");
	else
		snprintf(out, size, "%d%s %s%s", e.code, e.rejected ? "!" : "", e.text,
			 e.detail);
}

static void test_mail(void **state)
{
	char got[512];
	(void)state;
	for (size_t i = 0; i < sizeof(mail_cases) / sizeof(mail_cases[0]); i++) {
		const struct mail_case *c = &mail_cases[i];
		describe_mail(c->arg, c->max_size, got, sizeof(got));
		/* Reasons from lib/address are its own: match up to the ": ". */
		size_t n = strlen(c->want);
		if (n > 0 && c->want[n - 1] == ' ' && strncmp(got, c->want, n) == 0)
			continue;
		if (strcmp(got, c->want) != 0)
			fail_msg("MAIL '%s': '%s', want '%s'", c->arg, got, c->want);
	}
}

struct rcpt_case {
	const char *arg;
	const char *want;	/* "OK address" or the reply ("code!" if rejected) */
	bool smtputf8;		/* the transaction asked for SMTPUTF8 */
};

static const struct rcpt_case rcpt_cases[] = {
	{ "TO:<bob@Example.TEST>", "OK bob@example.test", false },
	{ "to:<bob@b.test>  ", "OK bob@b.test", false },
	{ "TO:<\"b b\"@b.test>", "OK \"b b\"@b.test", false },
	{ "TO:<@relay.test:bob@b.test>", "OK bob@b.test", false },
	{ "TO:<>", "501 5.1.3 Bad recipient address syntax: null address <> not allowed here", false },
	{ "TO:<Postmaster>", "501 5.1.3 Bad recipient address syntax: ", false },
	{ "TO:<bob@b.test> NOTIFY=NEVER", "555 5.5.4 Unsupported parameter NOTIFY", false },
	{ "TO:<bob@b.test> X-Y", "555 5.5.4 Unsupported parameter X-Y", false },
	{ "TO: <bob@b.test>", "501 5.1.3 Bad recipient address syntax: ", false },
	{ "FROM:<bob@b.test>", "501 5.5.4 Syntax: RCPT TO:<address>", false },
	{ "", "501 5.5.4 Syntax: RCPT TO:<address>", false },
	{ "TO:<j\xc3\xb6rg@b.test>", "OK j\xc3\xb6rg@b.test", true },
	{ "TO:<j\xc3\xb6rg@b.test>", "553! 5.6.7 Non-ASCII address needs SMTPUTF8", false },
	{ "TO:<j\xc3\xb6rg@b.test> SMTPUTF8", "555 5.5.4 Unsupported parameter SMTPUTF8",
	  true },
};

static void test_rcpt(void **state)
{
	static struct mt_smtp_rcpt_args r;
	struct mt_smtp_param_error e;
	char got[512];
	(void)state;
	for (size_t i = 0; i < sizeof(rcpt_cases) / sizeof(rcpt_cases[0]); i++) {
		const struct rcpt_case *c = &rcpt_cases[i];
		if (lmtp_parse_rcpt(c->arg, c->smtputf8, &r, &e)) {
			snprintf(got, sizeof(got), "OK %s", r.addr.addr);
			assert_int_equal(r.params.count, 0);
		} else {
			snprintf(got, sizeof(got), "%d%s %s%s", e.code, e.rejected ? "!" : "",
				 e.text, e.detail);
		}
		size_t n = strlen(c->want);
		if (c->want[n - 1] == ' ' && strncmp(got, c->want, n) == 0)
			continue;
		if (strcmp(got, c->want) != 0)
			fail_msg("RCPT '%s': '%s', want '%s'", c->arg, got, c->want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_lhlo),
		cmocka_unit_test(test_queue_id),
		cmocka_unit_test(test_mail),
		cmocka_unit_test(test_rcpt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
