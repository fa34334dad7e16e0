/* test-sieve-parse.c — lib-mail/sieve-parse.c: the RFC 5228 grammar over
 * real scripts (the kinds users upload: filing by header and envelope,
 * vacation with a multi-line reason, nested if/elsif/else, allof/anyof/not,
 * numbers with quantifiers, both comment forms, CRLF and bare-LF line
 * ends), the lexical rules (escapes, dot-stuffing), and every refusal with
 * the line it names: unclosed strings, comments and blocks, a missing ";",
 * stray tokens, a number too large, bad UTF-8 and NUL, nesting, node and
 * list limits.
 * Trust boundary: test code only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sieve-parse.h"

#include <stdio.h>
#include <string.h>

static struct mt_sieve_script *parse_ok(const char *text)
{
	struct mt_sieve_script *s = NULL;
	char error[256];
	bool ok = mt_sieve_parse(text, strlen(text), NULL, &s, error, sizeof(error));
	if (!ok)
		fail_msg("refused: %s\n%s", error, text);
	return s;
}

/* The refusal's message, which must begin with "line N: ". */
static void parse_fails(const char *text, size_t len, const struct mt_sieve_limits *limits,
			unsigned int line, const char *says)
{
	struct mt_sieve_script *s = NULL;
	char error[256], want[32];
	assert_false(mt_sieve_parse(text, len, limits, &s, error, sizeof(error)));
	assert_null(s);
	snprintf(want, sizeof(want), "line %u: ", line);
	if (strncmp(error, want, strlen(want)) != 0 || strstr(error, says) == NULL)
		fail_msg("got \"%s\", want \"%s...%s\"", error, want, says);
}

static void test_filing_script(void **state)
{
	(void)state;
	const char *text =
		"# a user's filters\r\n"
		"require [\"fileinto\", \"envelope\"];\r\n"
		"if header :contains \"List-Id\" \"<dev.lists.example.org>\" {\r\n"
		"    fileinto \"Lists/dev\";\r\n"
		"} elsif allof (envelope :domain :is \"from\" \"example.com\",\r\n"
		"               not exists \"X-Spam\") {\r\n"
		"    fileinto \"Work\"; /* bracket\r\n comment */\r\n"
		"} else {\r\n"
		"    keep;\r\n"
		"}\r\n";
	struct mt_sieve_script *s = parse_ok(text);
	assert_int_equal(s->n_commands, 4);
	const struct mt_sieve_command *req = &s->commands[0];
	assert_string_equal(req->name, "require");
	assert_int_equal(req->line, 2);
	assert_int_equal(req->n_args, 1);
	assert_true(req->args[0].list);
	assert_int_equal(req->args[0].n_strings, 2);
	assert_string_equal(req->args[0].strings[1], "envelope");

	const struct mt_sieve_command *c_if = &s->commands[1];
	assert_string_equal(c_if->name, "if");
	assert_int_equal(c_if->n_tests, 1);
	assert_false(c_if->test_list);
	const struct mt_sieve_test *h = &c_if->tests[0];
	assert_string_equal(h->name, "header");
	assert_int_equal(h->n_args, 3);
	assert_int_equal(h->args[0].type, MT_SIEVE_ARG_TAG);
	assert_string_equal(h->args[0].tag, "contains");
	assert_string_equal(h->args[2].strings[0], "<dev.lists.example.org>");
	assert_true(c_if->has_block);
	assert_int_equal(c_if->n_block, 1);
	assert_string_equal(c_if->block[0].name, "fileinto");
	assert_int_equal(c_if->block[0].line, 4);

	const struct mt_sieve_command *c_elsif = &s->commands[2];
	assert_string_equal(c_elsif->name, "elsif");
	const struct mt_sieve_test *all = &c_elsif->tests[0];
	assert_string_equal(all->name, "allof");
	assert_true(all->test_list);
	assert_int_equal(all->n_tests, 2);
	assert_string_equal(all->tests[0].name, "envelope");
	assert_int_equal(all->tests[0].n_args, 4);
	assert_string_equal(all->tests[1].name, "not");
	assert_int_equal(all->tests[1].n_tests, 1);
	assert_false(all->tests[1].test_list);
	assert_string_equal(all->tests[1].tests[0].name, "exists");
	assert_int_equal(all->tests[1].tests[0].line, 6);
	assert_string_equal(s->commands[3].name, "else");
	assert_int_equal(s->commands[3].block[0].line, 10);
	assert_int_equal(s->nodes, 7 + 5 + 11);	/* commands, tests, arguments */
	mt_sieve_script_free(&s);
	assert_null(s);
}

static void test_vacation_multiline(void **state)
{
	(void)state;
	/* Bare LF line ends; a multi-line reason with dot-stuffing and a
	 * comment after "text:"; numbers with quantifiers. */
	const char *text =
		"require [\"vacation\"];\n"
		"if size :over 100K { discard; }\n"
		"vacation :days 7 :subject \"Away \\\"till\\\" May\\\\June\"\n"
		"  text: # the reason\n"
		"I am away.\n"
		"..a line starting with a dot\n"
		"\n"
		".\n"
		";\n"
		"if size :under 2g { stop; }\n";
	struct mt_sieve_script *s = parse_ok(text);
	assert_int_equal(s->n_commands, 4);
	const struct mt_sieve_test *size = &s->commands[1].tests[0];
	assert_int_equal(size->args[1].type, MT_SIEVE_ARG_NUMBER);
	assert_int_equal(size->args[1].number, 100 * 1024);
	const struct mt_sieve_command *v = &s->commands[2];
	assert_string_equal(v->name, "vacation");
	assert_int_equal(v->n_args, 5);
	assert_int_equal(v->args[1].number, 7);
	assert_string_equal(v->args[3].strings[0], "Away \"till\" May\\June");
	assert_string_equal(v->args[4].strings[0],
			    "I am away.\r\n.a line starting with a dot\r\n\r\n");
	assert_int_equal(s->commands[3].line, 10);
	assert_int_equal(s->commands[3].tests[0].args[1].number, UINT64_C(2) << 30);
	mt_sieve_script_free(&s);
}

static void test_escapes_and_empty(void **state)
{
	(void)state;
	/* An undefined escape drops its backslash; an empty script and one
	 * of comments only are scripts with no commands. */
	struct mt_sieve_script *s = parse_ok("redirect \"a\\b@\\x.example\";");
	assert_string_equal(s->commands[0].args[0].strings[0], "ab@x.example");
	mt_sieve_script_free(&s);
	s = parse_ok("");
	assert_int_equal(s->n_commands, 0);
	mt_sieve_script_free(&s);
	s = parse_ok("# nothing\n/* at all */\n");
	assert_int_equal(s->n_commands, 0);
	mt_sieve_script_free(&s);
	s = parse_ok("keep;stop;");
	assert_int_equal(s->n_commands, 2);
	mt_sieve_script_free(&s);
}

static void test_refusals(void **state)
{
	(void)state;
	const char *t;
	t = "keep;\nfileinto \"x\"\n";
	parse_fails(t, strlen(t), NULL, 3, "expected \";\" or a block");
	t = "if true {\n keep;\n";
	parse_fails(t, strlen(t), NULL, 1, "block opened here is not closed");
	t = "keep;\n}\n";
	parse_fails(t, strlen(t), NULL, 2, "without a block");
	t = "fileinto \"abc\n\ndef;";
	parse_fails(t, strlen(t), NULL, 1, "string opened here is not closed");
	t = "keep;\n/* never closed\n";
	parse_fails(t, strlen(t), NULL, 2, "comment opened here is not closed");
	t = "vacation text:\nno end\n";
	parse_fails(t, strlen(t), NULL, 1, "no closing line");
	t = "vacation text: x\nbody\n.\n;";
	parse_fails(t, strlen(t), NULL, 1, "must end its line");
	t = "if size :over 99999999999999999999 { keep; }";
	parse_fails(t, strlen(t), NULL, 1, "too large");
	t = "if size :over 9000000000G { keep; }";
	parse_fails(t, strlen(t), NULL, 1, "too large");
	t = "if size :over 10X { keep; }";
	parse_fails(t, strlen(t), NULL, 1, "only K, M or G");
	t = "keep;\nfileinto [\"a\", 3];";
	parse_fails(t, strlen(t), NULL, 2, "holds strings");
	t = "fileinto [\"a\" \"b\"];";
	parse_fails(t, strlen(t), NULL, 1, "expected \",\" or \"]\"");
	t = "if anyof (true; false) { keep; }";
	parse_fails(t, strlen(t), NULL, 1, "expected \",\" or \")\"");
	t = "if anyof (\"x\") { keep; }";
	parse_fails(t, strlen(t), NULL, 1, "holds tests");
	t = "\n\n: keep;";
	parse_fails(t, strlen(t), NULL, 3, "must begin a tag");
	t = "keep;\n@";
	parse_fails(t, strlen(t), NULL, 2, "unexpected \"@\"");
	t = "\"a string\";";
	parse_fails(t, strlen(t), NULL, 1, "expected a command");
	static const char nul[] = "keep;\nstop;\0\n";
	parse_fails(nul, sizeof(nul) - 1, NULL, 2, "NUL");
	t = "keep;\nfileinto \"\xc3\x28\";";
	parse_fails(t, strlen(t), NULL, 2, "not UTF-8");
}

static void test_limits(void **state)
{
	(void)state;
	struct mt_sieve_limits lim = mt_sieve_limits_default;
	char text[4096];
	/* Depth: blocks, and tests in tests. */
	lim.depth_max = 3;
	const char *ok3 = "if true { if true { if true { keep; } } }";
	struct mt_sieve_script *s = NULL;
	char error[256];
	assert_true(mt_sieve_parse(ok3, strlen(ok3), &lim, &s, error, sizeof(error)));
	mt_sieve_script_free(&s);
	const char *deep = "if true {\n if true {\n  if true {\n   if true { keep; } } } }";
	parse_fails(deep, strlen(deep), &lim, 4, "nested too deeply");
	const char *nots = "if not not not not true { keep; }";
	parse_fails(nots, strlen(nots), &lim, 1, "nested too deeply");
	/* A deep script under the default limit fails cleanly too. */
	size_t n = 0;
	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "if true {");
	parse_fails(text, n, NULL, 1, "nested too deeply");
	/* Nodes. */
	lim = mt_sieve_limits_default;
	lim.nodes_max = 5;
	const char *five = "keep; keep; keep; keep; keep;";
	assert_true(mt_sieve_parse(five, strlen(five), &lim, &s, error, sizeof(error)));
	assert_int_equal(s->nodes, 5);
	mt_sieve_script_free(&s);
	const char *six = "keep; keep; keep;\nkeep; keep; keep;";
	parse_fails(six, strlen(six), &lim, 2, "too large");
	/* Strings in one list. */
	lim = mt_sieve_limits_default;
	lim.list_max = 2;
	const char *three = "fileinto [\"a\", \"b\",\n \"c\"];";
	parse_fails(three, strlen(three), &lim, 2, "more than 2 strings");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filing_script),
		cmocka_unit_test(test_vacation_multiline),
		cmocka_unit_test(test_escapes_and_empty),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
