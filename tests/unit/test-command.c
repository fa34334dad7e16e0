/* test-command.c — unit tests for lib-mail/command.c, the command-table
 * engine: lookup through a tier-shaped table (the element's first member
 * is the definition), counting (unknown verbs in their own slot), the
 * gates in their order (junk, TLS, auth, state), the final reply closing a
 * command once (also after it waited), and the summary line in the Postfix shape. Lines
 * are fed a byte at a time through lib/lineio, as a session reads them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "buf.h"
#include "command.h"
#include "lineio.h"

#include <event2/buffer.h>

#define S_NEW MT_CMD_STATE(0)
#define S_READY MT_CMD_STATE(1)

struct toy_command {
	struct mt_command_def def;
	int handler_id;
};

static const struct toy_command toy_commands[] = {
	{ { "EHLO", MT_CMD_PRE_TLS | MT_CMD_PRE_AUTH | MT_CMD_GROUP_END | S_NEW | S_READY }, 1 },
	{ { "STARTTLS", MT_CMD_PRE_TLS | MT_CMD_PRE_AUTH }, 2 },
	{ { "AUTH", MT_CMD_PRE_AUTH | MT_CMD_SECRET }, 3 },
	{ { "MAIL", S_READY }, 4 },
	{ { "NOOP", MT_CMD_PRE_TLS | MT_CMD_PRE_AUTH | MT_CMD_JUNK }, 5 },
	{ { "QUIT", MT_CMD_PRE_TLS | MT_CMD_PRE_AUTH }, 6 },
};
static const struct mt_command_table toy_table = MT_COMMAND_TABLE(toy_commands);

static enum mt_command_verdict check(struct mt_commands *c, const struct mt_command_gate *g,
				     const char *line, struct mt_command_call *call)
{
	return mt_command_check(&toy_table, c, g, line, call);
}

static void test_lookup(void **state)
{
	(void)state;
	struct mt_commands c;
	struct mt_command_call call;
	const struct mt_command_gate open = { 0 };
	mt_commands_init(&c, &toy_table);

	assert_int_equal(check(&c, &open, "mail FROM:<a@b.test>", &call), MT_COMMAND_RUN);
	assert_int_equal(call.index, 3);
	assert_int_equal(toy_commands[call.index].handler_id, 4);
	assert_ptr_equal(call.def, &toy_commands[3].def);
	assert_string_equal(call.arg, "FROM:<a@b.test>");
	assert_string_equal(mt_commands_current_name(&toy_table, &c), "MAIL");
	assert_int_equal(check(&c, &open, "StartTLS", &call), MT_COMMAND_RUN);
	assert_int_equal(call.index, 1);
	assert_string_equal(call.arg, "");

	/* Unknown: no def, the argument still split, counted apart. */
	assert_int_equal(check(&c, &open, "BDAT 10 LAST", &call), MT_COMMAND_UNKNOWN);
	assert_null(call.def);
	assert_string_equal(call.arg, "10 LAST");
	assert_string_equal(mt_commands_current_name(&toy_table, &c), "unknown");
	assert_int_equal(check(&c, &open, "", &call), MT_COMMAND_UNKNOWN);
	assert_int_equal(check(&c, &open, " QUIT", &call), MT_COMMAND_UNKNOWN);
	assert_int_equal(check(&c, &open, "QUIT\tnow", &call), MT_COMMAND_UNKNOWN);
	assert_int_equal(mt_commands_total(&c), 6);
	mt_commands_free(&c);
}

static void test_gates(void **state)
{
	(void)state;
	struct mt_commands c;
	struct mt_command_call call;
	mt_commands_init(&c, &toy_table);

	struct mt_command_gate g = { .tls_required = true, .auth_required = true };
	assert_int_equal(check(&c, &g, "EHLO x", &call), MT_COMMAND_RUN);
	assert_int_equal(check(&c, &g, "AUTH PLAIN", &call), MT_COMMAND_NEEDS_TLS);
	assert_int_equal(check(&c, &g, "MAIL FROM:<>", &call), MT_COMMAND_NEEDS_TLS);
	g.tls_required = false;
	assert_int_equal(check(&c, &g, "AUTH PLAIN", &call), MT_COMMAND_RUN);
	assert_true((c.flags & MT_CMD_SECRET) != 0);	/* the tier wipes this line */
	assert_int_equal(check(&c, &g, "MAIL FROM:<>", &call), MT_COMMAND_NEEDS_AUTH);
	assert_int_equal(c.flags & MT_CMD_SECRET, 0);
	g.auth_required = false;

	/* States: MAIL only when ready; commands without state bits always. */
	g.state = S_NEW;
	assert_int_equal(check(&c, &g, "MAIL FROM:<>", &call), MT_COMMAND_BAD_STATE);
	assert_int_equal(check(&c, &g, "EHLO x", &call), MT_COMMAND_RUN);
	assert_int_equal(check(&c, &g, "QUIT", &call), MT_COMMAND_RUN);
	g.state = S_READY;
	assert_int_equal(check(&c, &g, "MAIL FROM:<>", &call), MT_COMMAND_RUN);

	/* Junk: the third NOOP is one too many; without a limit, never. */
	g.max_junk = 2;
	assert_int_equal(check(&c, &g, "NOOP", &call), MT_COMMAND_RUN);
	assert_int_equal(check(&c, &g, "NOOP", &call), MT_COMMAND_RUN);
	assert_int_equal(check(&c, &g, "NOOP", &call), MT_COMMAND_TOO_MUCH_JUNK);
	g.max_junk = 0;
	for (int i = 0; i < 100; i++)
		assert_int_equal(check(&c, &g, "NOOP", &call), MT_COMMAND_RUN);
	/* Junk comes before the TLS gate (a flood ends either way). */
	g.max_junk = 1;
	g.tls_required = true;
	assert_int_equal(check(&c, &g, "NOOP", &call), MT_COMMAND_TOO_MUCH_JUNK);
	mt_commands_free(&c);
}

static void test_replies_and_summary(void **state)
{
	(void)state;
	struct mt_commands c;
	struct mt_command_call call;
	const struct mt_command_gate open = { 0 };
	struct mt_buf out = MT_BUF_INIT;
	mt_commands_init(&c, &toy_table);

	check(&c, &open, "EHLO x", &call);
	mt_commands_reply(&c, true);
	mt_commands_reply(&c, false);	/* a second reply counts nothing */
	/* A command that waits stays current until its proceed half's
	 * final reply. */
	check(&c, &open, "MAIL FROM:<>", &call);
	assert_string_equal(mt_commands_current_name(&toy_table, &c), "MAIL");
	mt_commands_reply(&c, false);
	assert_string_equal(mt_commands_current_name(&toy_table, &c), "-");
	check(&c, &open, "MAIL FROM:<>", &call);
	mt_commands_reply(&c, true);
	check(&c, &open, "HELO x", &call);
	mt_commands_reply(&c, false);
	mt_commands_unknown(&c);	/* a line too long */
	mt_commands_reply(&c, false);
	mt_commands_forget(&c);		/* nothing current: no-op */
	mt_commands_reply(&c, true);
	check(&c, &open, "QUIT", &call);
	mt_commands_reply(&c, true);

	mt_commands_summary(&toy_table, &c, "", &out);
	assert_string_equal(mt_buf_cstr(&out),
			    " ehlo=1 mail=1/2 quit=1 unknown=0/2 commands=3/6");
	/* Final replies by class: the answered ones only. */
	assert_int_equal(c.replies[MT_REPLY_SUCCESS], 3);
	assert_int_equal(c.replies[MT_REPLY_FAILURE], 3);
	assert_int_equal(c.replies[MT_REPLY_TEMPFAIL], 0);
	check(&c, &open, "QUIT", &call);
	mt_commands_reply_class(&c, mt_reply_class_smtp(451));
	check(&c, &open, "QUIT", &call);
	mt_commands_reply_class(&c, mt_reply_class_imap("BAD [CLIENTBUG] x", 17));
	mt_commands_reply_class(&c, MT_REPLY_SUCCESS);	/* nothing current */
	assert_int_equal(c.replies[MT_REPLY_TEMPFAIL], 1);
	assert_int_equal(c.replies[MT_REPLY_BAD], 1);
	assert_int_equal(c.replies[MT_REPLY_SUCCESS], 3);
	mt_commands_free(&c);

	assert_int_equal(mt_reply_class_smtp(250), MT_REPLY_SUCCESS);
	assert_int_equal(mt_reply_class_smtp(354), MT_REPLY_SUCCESS);
	assert_int_equal(mt_reply_class_smtp(421), MT_REPLY_TEMPFAIL);
	assert_int_equal(mt_reply_class_smtp(550), MT_REPLY_FAILURE);
	assert_int_equal(mt_reply_class_imap("OK done", 7), MT_REPLY_SUCCESS);
	assert_int_equal(mt_reply_class_imap("OK", 2), MT_REPLY_SUCCESS);
	assert_int_equal(mt_reply_class_imap("NO [TRYCREATE] x", 16), MT_REPLY_FAILURE);
	assert_int_equal(mt_reply_class_imap("BAD x", 5), MT_REPLY_BAD);
	assert_int_equal(mt_reply_class_imap("OKAY", 4), MT_REPLY_BAD);
	assert_int_equal(mt_reply_class_imap("", 0), MT_REPLY_BAD);

	/* Nothing at all; a prefix. */
	mt_buf_free(&out);
	mt_commands_init(&c, &toy_table);
	mt_commands_summary(&toy_table, &c, "", &out);
	assert_string_equal(mt_buf_cstr(&out), " commands=0");
	mt_buf_free(&out);
	check(&c, &open, "quit", &call);
	mt_commands_summary(&toy_table, &c, "cmd_", &out);
	assert_string_equal(mt_buf_cstr(&out), " cmd_quit=0/1 commands=0/1");
	mt_buf_free(&out);
	mt_commands_free(&c);
}

/* A session's input arriving a byte at a time: each complete line is one
 * check, nothing is counted before its line ends. */
static void test_byte_at_a_time(void **state)
{
	(void)state;
	static const char input[] = "EHLO client.test\r\nmail FROM:<a@b.test>\r\n"
		"NOOP\r\nwhat\r\nQUIT\r\n";
	static const enum mt_command_verdict want[] = {
		MT_COMMAND_RUN, MT_COMMAND_RUN, MT_COMMAND_RUN, MT_COMMAND_UNKNOWN,
		MT_COMMAND_RUN,
	};
	struct mt_commands c;
	struct mt_command_call call;
	const struct mt_command_gate g = { .state = S_READY, .max_junk = 5 };
	struct mt_line_reader reader;
	struct mt_buf line = MT_BUF_INIT;
	struct evbuffer *in = evbuffer_new();
	const char *error;
	size_t lines = 0;

	mt_commands_init(&c, &toy_table);
	mt_line_reader_init(&reader, 512, MT_LINE_STRICT_CRLF);
	for (size_t i = 0; i < sizeof(input) - 1; i++) {
		evbuffer_add(in, &input[i], 1);
		enum mt_line_status st;
		while ((st = mt_line_read(&reader, in, &line, &error)) == MT_LINE_OK) {
			assert_true(lines < sizeof(want) / sizeof(want[0]));
			assert_int_equal(check(&c, &g, mt_buf_cstr(&line), &call), want[lines]);
			mt_commands_reply(&c, want[lines] == MT_COMMAND_RUN);
			lines++;
		}
		assert_int_equal(st, MT_LINE_NEED_MORE);
		assert_int_equal(mt_commands_total(&c), lines);
	}
	assert_int_equal(lines, 5);
	struct mt_buf out = MT_BUF_INIT;
	mt_commands_summary(&toy_table, &c, "", &out);
	assert_string_equal(mt_buf_cstr(&out),
			    " ehlo=1 mail=1 noop=1 quit=1 unknown=0/1 commands=4/5");
	mt_buf_free(&out);
	mt_buf_free(&line);
	evbuffer_free(in);
	mt_commands_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_gates),
		cmocka_unit_test(test_replies_and_summary),
		cmocka_unit_test(test_byte_at_a_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
