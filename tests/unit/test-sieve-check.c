/* test-sieve-check.c — lib-mail/sieve-check.c over parsed scripts: what
 * users' scripts do (filing, vacation, flags, variables, body, relational,
 * subaddress, copy, include, mailbox, reject/ereject) passes with the
 * extensions required, and each refusal names its line and the construct:
 * an unknown command, test or tag, an extension used without `require`
 * or not offered, `require` after another command, `elsif`/`else` out of
 * place, a block missing or extra, two match types, an unknown
 * comparator or relational operator, wrong argument counts and types, a
 * tag after a positional argument, `size` without :over/:under.
 * Trust boundary: test code only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sieve-check.h"

#include <stdio.h>
#include <string.h>

static bool check(const char *text, uint32_t offered, uint32_t *required, char *error,
		  size_t size)
{
	struct mt_sieve_script *s = NULL;
	if (!mt_sieve_parse(text, strlen(text), NULL, &s, error, size))
		fail_msg("parse: %s", error);
	bool ok = mt_sieve_check(s, offered, required, error, size);
	mt_sieve_script_free(&s);
	return ok;
}

static void passes(const char *text, uint32_t want_required)
{
	char error[256];
	uint32_t required = 0;
	if (!check(text, MT_SIEVE_EXT_ALL, &required, error, sizeof(error)))
		fail_msg("refused: %s\n%s", error, text);
	assert_int_equal(required, want_required);
}

static void refused(const char *text, uint32_t offered, unsigned int line, const char *says)
{
	char error[256], want[32];
	uint32_t required = 1;
	assert_false(check(text, offered, &required, error, sizeof(error)));
	assert_int_equal(required, 0);
	snprintf(want, sizeof(want), "line %u: ", line);
	if (strncmp(error, want, strlen(want)) != 0 || strstr(error, says) == NULL)
		fail_msg("got \"%s\", want \"%s...%s\"", error, want, says);
}

static void test_scripts_pass(void **state)
{
	(void)state;
	passes("keep;", 0);
	passes("if header :contains \"subject\" \"x\" { discard; stop; } else { keep; }", 0);
	passes("require [\"fileinto\", \"envelope\", \"copy\", \"mailbox\"];\n"
	       "if envelope :domain :is \"from\" \"example.com\" {\n"
	       "  fileinto :copy :create \"Work\";\n"
	       "} elsif address :all :comparator \"i;ascii-casemap\" :is \"to\" \"a@b\" {\n"
	       "  redirect :copy \"c@d\";\n"
	       "} elsif anyof (size :over 1M, not exists [\"X-A\", \"X-B\"]) { discard; }\n",
	       MT_SIEVE_EXT_FILEINTO | MT_SIEVE_EXT_ENVELOPE | MT_SIEVE_EXT_COPY |
	       MT_SIEVE_EXT_MAILBOX);
	passes("require [\"vacation\"];\n"
	       "vacation :days 7 :subject \"Away\" :from \"me@example.com\"\n"
	       "  :addresses [\"me@example.com\", \"alias@example.com\"] :handle \"h\" "
	       ":mime \"I am away.\";", MT_SIEVE_EXT_VACATION);
	passes("require [\"imap4flags\", \"fileinto\"];\n"
	       "setflag \"\\\\Seen\"; addflag \"flags\" [\"$Label1\"]; removeflag \"\\\\Seen\";\n"
	       "if hasflag :contains \"flags\" \"Label\" { fileinto :flags \"\\\\Flagged\" \"F\"; }\n"
	       "keep :flags [\"\\\\Seen\"];", MT_SIEVE_EXT_IMAP4FLAGS | MT_SIEVE_EXT_FILEINTO);
	passes("require [\"variables\", \"relational\", \"comparator-i;ascii-numeric\", "
	       "\"subaddress\", \"body\"];\n"
	       "set :lower :upperfirst \"name\" \"${1}\";\n"
	       "if string :value \"gt\" :comparator \"i;ascii-numeric\" \"${n}\" \"3\" { stop; }\n"
	       "if header :count \"ge\" :comparator \"i;ascii-numeric\" \"received\" \"5\" "
	       "{ discard; }\n"
	       "if address :detail \"to\" \"lists\" { stop; }\n"
	       "if body :content \"text\" :contains \"unsubscribe\" { stop; }\n",
	       MT_SIEVE_EXT_VARIABLES | MT_SIEVE_EXT_RELATIONAL | MT_SIEVE_EXT_NUMERIC |
	       MT_SIEVE_EXT_SUBADDRESS | MT_SIEVE_EXT_BODY);
	passes("require [\"include\", \"variables\"];\n"
	       "global \"x\"; include :personal :once \"common\"; return;",
	       MT_SIEVE_EXT_INCLUDE | MT_SIEVE_EXT_VARIABLES);
	passes("require [\"reject\", \"ereject\"]; if true { reject \"no\"; } ereject \"no\";",
	       MT_SIEVE_EXT_REJECT | MT_SIEVE_EXT_EREJECT);
	/* Names and tags in any case. */
	passes("REQUIRE \"FileInto\"; FileInto \"x\"; IF Header :IS \"a\" \"b\" { Stop; }",
	       MT_SIEVE_EXT_FILEINTO);
}

static void test_refusals(void **state)
{
	(void)state;
	uint32_t all = MT_SIEVE_EXT_ALL;
	refused("keep;\nfrobnicate;", all, 2, "unknown command \"frobnicate\"");
	refused("if\nwibble { keep; }", all, 2, "unknown test \"wibble\"");
	refused("keep;\nfileinto \"x\";", all, 2, "needs require \"fileinto\"");
	refused("require \"fileinto\";\nfileinto :copy \"x\";", all, 2,
		"the tag \"copy\" needs require \"copy\"");
	refused("require \"vacation\";", MT_SIEVE_EXT_FILEINTO, 1,
		"unsupported extension \"vacation\" (this server has: fileinto)");
	refused("require \"regex\";", all, 1, "unsupported extension \"regex\"");
	refused("keep;\nrequire \"fileinto\";", all, 2, "comes before every other");
	refused("keep;\nelse { stop; }", all, 2, "must follow \"if\" or \"elsif\"");
	refused("if true { keep; }\nkeep;\nelsif true { keep; }", all, 3, "must follow");
	refused("if true;", all, 1, "needs a block");
	refused("keep { stop; }", all, 1, "takes no block");
	refused("if header :is :contains \"a\" \"b\" { keep; }", all, 1,
		"more than one match type");
	refused("if address :domain :localpart \"to\" \"b\" { keep; }", all, 1,
		"more than one address part");
	refused("if header :comparator \"i;bogus\" \"a\" \"b\" { keep; }", all, 1,
		"unknown comparator \"i;bogus\"");
	refused("if header :comparator \"i;ascii-numeric\" \"a\" \"b\" { keep; }", all, 1,
		"needs require \"comparator-i;ascii-numeric\"");
	refused("require \"relational\";\nif header :count \"more\" \"a\" \"1\" { keep; }", all,
		2, "unknown relational operator");
	refused("if header \"a\" { keep; }", all, 1, "takes 2 arguments, not 1");
	refused("redirect [\"a\", \"b\"];", all, 1, "argument 1 must be a string");
	refused("if size 10 { keep; }", all, 1, "needs :over or :under");
	refused("if size :over \"10\" { keep; }", all, 1, "argument 1 must be a number");
	refused("if header \"a\" \"b\" :is { keep; }", all, 1, "tags come before");
	refused("keep :flags \"x\";", all, 1, "the tag \"flags\" needs require \"imap4flags\"");
	refused("require \"vacation\";\nvacation :days 0 \"x\";", all, 2, "at least 1");
	refused("require \"vacation\";\nvacation :days \"x\";", all, 2, ":days takes a number");
	refused("keep true;", all, 1, "takes no test");
	refused("if allof true { keep; }", all, 1, "takes a test list");
	refused("if not (true) { keep; }", all, 1, "takes one test");
	refused("require [\"include\"];\nglobal \"x\";", all, 2, "needs require \"variables\"");
	refused("redirect :bogus \"a\";", all, 1, "takes no tag :bogus");
	refused("require \"vacation\";\nvacation :mime :mime \"x\";", all, 2, ":mime twice");
	refused("require \"comparator-i;ascii-numeric\";\nif header :contains "
		":comparator \"i;ascii-numeric\" \"x\" \"1\" { keep; }", all, 2,
		"cannot do :contains");
}

static void test_ext_list(void **state)
{
	(void)state;
	char buf[512];
	size_t n = mt_sieve_ext_list(MT_SIEVE_EXT_ALL, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_string_equal(buf, "fileinto envelope reject ereject vacation imap4flags "
			    "variables body relational subaddress copy include mailbox "
			    "comparator-i;ascii-numeric");
	assert_string_equal(mt_sieve_ext_name(MT_SIEVE_EXT_VACATION), "vacation");
	assert_null(mt_sieve_ext_name(3));
	n = mt_sieve_ext_list(MT_SIEVE_EXT_FILEINTO | MT_SIEVE_EXT_COPY, buf, 8);
	assert_int_equal(n, strlen("fileinto copy"));
	assert_string_equal(buf, "fileint");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scripts_pass),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_ext_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
