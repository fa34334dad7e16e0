/* test-sieve-run.c — lib-mail/sieve-run.c: scripts run over messages
 * (header fields, an envelope, a size): filing by header and address,
 * if/elsif/else and stop, :copy, the implicit keep and what cancels it,
 * envelope with subaddress, relational :count, imap4flags and the flags
 * of keep, fileinto and the implicit keep, duplicate actions once,
 * exists/allof/anyof/not; and every failure leaving the implicit keep
 * alone: reject combined with fileinto, limits on redirects, actions and
 * steps, a construct not run yet.
 * Trust boundary: test code only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sieve-check.h"
#include "sieve-run.h"

#include <string.h>
#include <strings.h>

struct fake {
	const char *const *fields;	/* "name", "value", ..., NULL */
};

static bool fake_header_each(void *context, const char *name,
			     bool (*visit)(const char *value, size_t len, void *arg), void *arg)
{
	const struct fake *f = context;
	for (size_t i = 0; f->fields[i] != NULL; i += 2)
		if (strcasecmp(f->fields[i], name) == 0 &&
		    visit(f->fields[i + 1], strlen(f->fields[i + 1]), arg))
			return true;
	return false;
}

static bool run(const char *script, const char *const *fields, const char *from,
		const char *to, uint64_t size, const struct mt_sieve_run_limits *lim,
		struct mt_sieve_result *r)
{
	struct mt_sieve_script *s = NULL;
	char error[256];
	uint32_t required;
	if (!mt_sieve_parse(script, strlen(script), NULL, &s, error, sizeof(error)) ||
	    !mt_sieve_check(s, MT_SIEVE_EXT_ALL, &required, error, sizeof(error)))
		fail_msg("%s\n%s", error, script);
	struct fake f = { .fields = fields };
	struct mt_sieve_message msg = {
		.header_each = fake_header_each, .context = &f,
		.envelope_from = from, .envelope_to = to, .size = size,
	};
	bool ok = mt_sieve_run(s, &msg, lim, r);
	mt_sieve_script_free(&s);
	return ok;
}

static const char *const mail[] = {
	"From", "\"Ann Example\" <ann@Example.COM>",
	"To", "Bob <bob@x.org>, undisclosed:;, c@y.org",
	"Subject", "Your Invoice 42",
	"Received", "from a", "Received", "from b", "Received", "from c",
	NULL,
};

static void test_filing(void **state)
{
	(void)state;
	const char *script =
		"require [\"fileinto\", \"copy\"];\n"
		"if header :contains \"subject\" \"invoice\" { fileinto \"Bills\"; }\n"
		"elsif address :domain :is \"from\" \"example.com\" { fileinto :copy \"Work\"; }\n";
	struct mt_sieve_result r;
	assert_true(run(script, mail, "ann@example.com", "bob@x.org", 500, NULL, &r));
	assert_int_equal(r.n_actions, 1);
	assert_int_equal(r.actions[0].type, MT_SIEVE_ACTION_FILEINTO);
	assert_string_equal(r.actions[0].target, "Bills");
	assert_int_equal(r.actions[0].line, 2);
	assert_false(r.implicit_keep);
	mt_sieve_result_free(&r);

	static const char *const other[] = {
		"From", "ann@example.com", "Subject", "hello", NULL,
	};
	assert_true(run(script, other, "", "bob@x.org", 500, NULL, &r));
	assert_int_equal(r.n_actions, 1);
	assert_string_equal(r.actions[0].target, "Work");
	assert_true(r.actions[0].copy);
	assert_true(r.implicit_keep);		/* :copy keeps it */
	mt_sieve_result_free(&r);

	static const char *const none[] = { "From", "z@z.org", NULL };
	assert_true(run(script, none, "", "bob@x.org", 500, NULL, &r));
	assert_int_equal(r.n_actions, 0);
	assert_true(r.implicit_keep);
	mt_sieve_result_free(&r);
}

static void test_control_and_tests(void **state)
{
	(void)state;
	struct mt_sieve_result r;
	const char *script = "if size :over 1K { discard; stop; }\nkeep;";
	assert_true(run(script, mail, "", "", 2000, NULL, &r));
	assert_int_equal(r.n_actions, 1);
	assert_int_equal(r.actions[0].type, MT_SIEVE_ACTION_DISCARD);
	assert_false(r.implicit_keep);
	mt_sieve_result_free(&r);
	assert_true(run(script, mail, "", "", 10, NULL, &r));
	assert_int_equal(r.n_actions, 1);
	assert_int_equal(r.actions[0].type, MT_SIEVE_ACTION_KEEP);
	assert_false(r.implicit_keep);
	mt_sieve_result_free(&r);

	/* address :all over a list with a group and display names. */
	script = "if allof (address :all :is \"to\" \"C@Y.ORG\", exists \"From\",\n"
		 "          not exists [\"From\", \"X-Nope\"],\n"
		 "          anyof (false, header :matches \"subject\" \"*invoice ??\"))\n"
		 "{ discard; }";
	assert_true(run(script, mail, "", "", 10, NULL, &r));
	assert_int_equal(r.n_actions, 1);
	mt_sieve_result_free(&r);

	/* envelope with subaddress; relational :count. */
	script = "require [\"envelope\", \"subaddress\", \"relational\", "
		 "\"comparator-i;ascii-numeric\"];\n"
		 "if envelope :detail \"to\" \"lists\" { discard; }\n"
		 "if header :count \"ge\" :comparator \"i;ascii-numeric\" \"received\" \"3\" "
		 "{ keep; }";
	assert_true(run(script, mail, "", "alice+lists@x.org", 10, NULL, &r));
	assert_int_equal(r.n_actions, 2);
	assert_int_equal(r.actions[0].type, MT_SIEVE_ACTION_DISCARD);
	assert_int_equal(r.actions[1].type, MT_SIEVE_ACTION_KEEP);
	mt_sieve_result_free(&r);
	static const char *const two[] = { "Received", "a", "Received", "b", NULL };
	assert_true(run(script, two, "", "alice@x.org", 10, NULL, &r));
	assert_int_equal(r.n_actions, 0);	/* no "+": :detail fails; 2 < 3 */
	assert_true(r.implicit_keep);
	mt_sieve_result_free(&r);
}

static void test_flags_and_duplicates(void **state)
{
	(void)state;
	struct mt_sieve_result r;
	const char *script =
		"require [\"imap4flags\", \"fileinto\"];\n"
		"addflag \"\\\\Seen $Work\"; addflag \"$work\";\n"
		"if hasflag :contains \"work\" { fileinto \"F\"; }\n"
		"removeflag \"\\\\seen\"; fileinto :flags \"\\\\Flagged\" \"G\";\n"
		"fileinto \"F\"; redirect \"x@y.org\"; redirect \"X@Y.ORG\";";
	assert_true(run(script, mail, "", "", 10, NULL, &r));
	assert_int_equal(r.n_actions, 3);
	assert_string_equal(r.actions[0].target, "F");
	assert_int_equal(r.actions[0].n_flags, 2);
	assert_string_equal(r.actions[0].flags[0], "\\Seen");
	assert_string_equal(r.actions[0].flags[1], "$Work");
	assert_string_equal(r.actions[1].target, "G");
	assert_int_equal(r.actions[1].n_flags, 1);
	assert_string_equal(r.actions[1].flags[0], "\\Flagged");
	assert_int_equal(r.actions[2].type, MT_SIEVE_ACTION_REDIRECT);
	assert_false(r.implicit_keep);
	mt_sieve_result_free(&r);
	/* Flags alone: the implicit keep carries them. */
	assert_true(run("require \"imap4flags\"; setflag \"$A\"; addflag \"$B\";", mail, "", "",
			10, NULL, &r));
	assert_true(r.implicit_keep);
	assert_int_equal(r.n_keep_flags, 2);
	assert_string_equal(r.keep_flags[1], "$B");
	mt_sieve_result_free(&r);
}

static void fails_keeping(const char *script, const struct mt_sieve_run_limits *lim,
			  const char *says)
{
	struct mt_sieve_result r;
	assert_false(run(script, mail, "", "", 10, lim, &r));
	assert_true(r.failed && r.implicit_keep);
	assert_int_equal(r.n_actions, 0);
	if (strstr(r.error, says) == NULL || strncmp(r.error, "line ", 5) != 0)
		fail_msg("got \"%s\", want \"%s\"", r.error, says);
	mt_sieve_result_free(&r);
}

static void test_failures_keep(void **state)
{
	(void)state;
	fails_keeping("require [\"fileinto\", \"reject\"];\nfileinto \"A\";\nreject \"no\";",
		      NULL, "cannot be combined");
	fails_keeping("redirect \"a@x\"; redirect \"b@x\"; redirect \"c@x\";\n"
		      "redirect \"d@x\"; redirect \"e@x\";", NULL, "more than 4 redirects");
	struct mt_sieve_run_limits lim = mt_sieve_run_limits_default;
	lim.actions_max = 2;
	fails_keeping("require \"fileinto\"; fileinto \"a\"; fileinto \"b\"; fileinto \"c\";",
		      &lim, "more than 2 actions");
	lim = mt_sieve_run_limits_default;
	lim.steps_max = 3;
	fails_keeping("keep; keep; keep; keep;", &lim, "more than 3 steps");
	fails_keeping("require \"vacation\";\nvacation \"away\";", NULL,
		      "line 2: the command \"vacation\" is not run yet");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filing),
		cmocka_unit_test(test_control_and_tests),
		cmocka_unit_test(test_flags_and_duplicates),
		cmocka_unit_test(test_failures_keep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
