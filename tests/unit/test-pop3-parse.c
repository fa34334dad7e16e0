/* test-pop3-parse.c — unit tests for popstore/pop3-parse.c: which command
 * a POP3 line names (case-insensitive verb, one space, the argument kept
 * as sent), message numbers (digits only, 1..10 of them, within the
 * mailbox) and TOP's "msg n" (syntax checked before the message number),
 * table-driven (RFC 1939 3, 5, 7). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "pop3-parse.h"

#define UNKNOWN POP3_VERB_COUNT

struct command_case {
	const char *line;
	enum pop3_verb verb;	/* UNKNOWN: no such command */
	const char *arg;
};

static const struct command_case command_cases[] = {
	{ "CAPA", POP3_VERB_CAPA, "" },
	{ "capa", POP3_VERB_CAPA, "" },
	{ "cApA", POP3_VERB_CAPA, "" },
	{ "USER alice@example.test", POP3_VERB_USER, "alice@example.test" },
	{ "PASS  two spaces ", POP3_VERB_PASS, " two spaces " },	/* RFC 1939 7 */
	{ "AUTH PLAIN AGFsaWNlAHNlY3JldA==", POP3_VERB_AUTH, "PLAIN AGFsaWNlAHNlY3JldA==" },
	{ "STLS", POP3_VERB_STLS, "" },
	{ "STAT", POP3_VERB_STAT, "" },
	{ "LIST 1", POP3_VERB_LIST, "1" },
	{ "UIDL", POP3_VERB_UIDL, "" },
	{ "top 1 10", POP3_VERB_TOP, "1 10" },
	{ "RETR 2", POP3_VERB_RETR, "2" },
	{ "DELE 3", POP3_VERB_DELE, "3" },
	{ "NOOP", POP3_VERB_NOOP, "" },
	{ "RSET", POP3_VERB_RSET, "" },
	{ "QUIT", POP3_VERB_QUIT, "" },
	{ "QUIT ", POP3_VERB_QUIT, "" },
	{ "LIST ", POP3_VERB_LIST, "" },
	{ "", UNKNOWN, "" },
	{ " QUIT", UNKNOWN, "QUIT" },		/* the verb is empty */
	{ "QUITX", UNKNOWN, "" },
	{ "QUI", UNKNOWN, "" },
	{ "TO", UNKNOWN, "" },
	{ "TOPS 1 1", UNKNOWN, "1 1" },
	{ "QUIT\tnow", UNKNOWN, "" },		/* only a space ends the verb */
	{ "APOP alice 0123", UNKNOWN, "alice 0123" },
	{ "XTND XMIT", UNKNOWN, "XMIT" },
	{ "\xc3\x84UIT", UNKNOWN, "" },
};

static void test_command(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(command_cases) / sizeof(command_cases[0]); i++) {
		const struct command_case *c = &command_cases[i];
		enum pop3_verb verb = UNKNOWN;
		const char *arg = NULL;
		bool ok = pop3_parse_command(c->line, &verb, &arg);
		if (ok != (c->verb != UNKNOWN) || (ok && verb != c->verb))
			fail_msg("'%s': %d %d, want %d", c->line, ok, verb, c->verb);
		assert_non_null(arg);
		assert_string_equal(arg, c->arg);
		/* The argument is the line's own tail, never a copy. */
		if (arg[0] != '\0')
			assert_ptr_equal(arg, c->line + strlen(c->line) - strlen(arg));
	}
}

static void test_verb_names(void **state)
{
	(void)state;
	for (unsigned int v = 0; v < POP3_VERB_COUNT; v++) {
		enum pop3_verb verb;
		const char *arg;
		const char *name = pop3_verb_name((enum pop3_verb)v);
		assert_true(pop3_parse_command(name, &verb, &arg));
		assert_int_equal(verb, v);
	}
	assert_string_equal(pop3_verb_name(POP3_VERB_CAPA), "CAPA");
	assert_string_equal(pop3_verb_name(POP3_VERB_TOP), "TOP");
	assert_string_equal(pop3_verb_name(POP3_VERB_QUIT), "QUIT");
	assert_string_equal(pop3_verb_name(POP3_VERB_COUNT), "?");
}

struct msg_case {
	const char *arg;
	unsigned int count;
	bool ok;
	unsigned int index;
};

static const struct msg_case msg_cases[] = {
	{ "1", 1, true, 0 },
	{ "1", 0, false, 0 },
	{ "2", 1, false, 0 },
	{ "0", 5, false, 0 },
	{ "5", 5, true, 4 },
	{ "6", 5, false, 0 },
	{ "007", 9, true, 6 },			/* leading zeros are digits */
	{ "0000000001", 1, true, 0 },		/* 10 digits */
	{ "00000000001", 1, false, 0 },		/* 11 digits */
	{ "4294967295", 4294967295u, true, 4294967294u },
	{ "4294967296", 4294967295u, false, 0 },
	{ "9999999999", 4294967295u, false, 0 },
	{ "", 5, false, 0 },
	{ "+1", 5, false, 0 },
	{ "-1", 5, false, 0 },
	{ " 1", 5, false, 0 },
	{ "1 ", 5, false, 0 },
	{ "1a", 5, false, 0 },
	{ "0x1", 5, false, 0 },
	{ "\xd9\xa1", 5, false, 0 },		/* ARABIC-INDIC DIGIT ONE */
};

static void test_msg(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(msg_cases) / sizeof(msg_cases[0]); i++) {
		const struct msg_case *c = &msg_cases[i];
		unsigned int index = 12345;
		bool ok = pop3_parse_msg(c->arg, strlen(c->arg), c->count, &index);
		if (ok != c->ok)
			fail_msg("'%s' of %u: %d, want %d", c->arg, c->count, ok, c->ok);
		if (ok)
			assert_int_equal(index, c->index);
		else
			assert_int_equal(index, 12345);	/* untouched */
	}
}

/* Only arg[0..len) counts: TOP hands in the first word of "msg n". */
static void test_msg_len(void **state)
{
	unsigned int index;
	(void)state;
	assert_true(pop3_parse_msg("12 34", 2, 20, &index));
	assert_int_equal(index, 11);
	assert_true(pop3_parse_msg("1234", 1, 20, &index));
	assert_int_equal(index, 0);
	assert_false(pop3_parse_msg("1234", 0, 20, &index));
}

static void test_number(void **state)
{
	uint64_t v = 0;
	(void)state;
	assert_true(pop3_parse_number("0", 1, &v));
	assert_int_equal(v, 0);
	assert_true(pop3_parse_number("9999999999", 10, &v));
	assert_true(v == 9999999999ull);
	assert_false(pop3_parse_number("10000000000", 11, &v));
	assert_false(pop3_parse_number("", 0, &v));
	assert_false(pop3_parse_number("1/", 2, &v));
	assert_false(pop3_parse_number("1:", 2, &v));
}

struct top_case {
	const char *arg;
	unsigned int count;
	enum pop3_arg_status status;
	unsigned int index;
	uint64_t lines;
};

static const struct top_case top_cases[] = {
	{ "1 0", 3, POP3_ARG_OK, 0, 0 },
	{ "3 10", 3, POP3_ARG_OK, 2, 10 },
	{ "1 9999999999", 1, POP3_ARG_OK, 0, 9999999999ull },
	{ "01 007", 1, POP3_ARG_OK, 0, 7 },
	{ "4 10", 3, POP3_ARG_NO_SUCH, 0, 0 },
	{ "0 10", 3, POP3_ARG_NO_SUCH, 0, 0 },
	{ "x 10", 3, POP3_ARG_NO_SUCH, 0, 0 },	/* n is fine: msg is the problem */
	{ " 10", 3, POP3_ARG_NO_SUCH, 0, 0 },	/* empty msg */
	{ "1", 3, POP3_ARG_SYNTAX, 0, 0 },
	{ "", 3, POP3_ARG_SYNTAX, 0, 0 },
	{ "1 ", 3, POP3_ARG_SYNTAX, 0, 0 },
	{ "1  2", 3, POP3_ARG_SYNTAX, 0, 0 },
	{ "1 2 ", 3, POP3_ARG_SYNTAX, 0, 0 },
	{ "1 2 3", 3, POP3_ARG_SYNTAX, 0, 0 },
	{ "1 -1", 3, POP3_ARG_SYNTAX, 0, 0 },
	{ "1 10000000000", 3, POP3_ARG_SYNTAX, 0, 0 },
	{ "9 x", 3, POP3_ARG_SYNTAX, 0, 0 },	/* syntax first, then msg */
};

static void test_top(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(top_cases) / sizeof(top_cases[0]); i++) {
		const struct top_case *c = &top_cases[i];
		unsigned int index = 0;
		uint64_t lines = 0;
		enum pop3_arg_status st = pop3_parse_top(c->arg, c->count, &index, &lines);
		if (st != c->status)
			fail_msg("TOP '%s' of %u: %d, want %d", c->arg, c->count, st, c->status);
		if (st == POP3_ARG_OK) {
			assert_int_equal(index, c->index);
			assert_true(lines == c->lines);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_verb_names),
		cmocka_unit_test(test_msg),
		cmocka_unit_test(test_msg_len),
		cmocka_unit_test(test_number),
		cmocka_unit_test(test_top),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
