/* test-command-find.c — unit tests for lib-mail/command-find.c, the verb
 * lookup every line protocol shares: a plain array of names and a table of
 * structs (the name at the same place in each element), verbs in any
 * case, the argument after exactly one space, unknown and empty verbs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "command-find.h"

struct command {
	int flags;
	const char *name;
	void (*handler)(void);
};

static const struct command table[] = {
	{ 1, "EHLO", NULL }, { 2, "MAIL", NULL }, { 3, "STARTTLS", NULL },
	{ 4, "QUIT", NULL },
};
static const char *const names[] = { "USER", "PASS", "TOP", "UIDL" };

static void test_struct_table(void **state)
{
	unsigned int i = 99;
	const char *arg = NULL;
	(void)state;
	assert_true(mt_command_find("mail FROM:<a@b>", &table[0].name, 4, sizeof(table[0]),
				    &i, &arg));
	assert_int_equal(i, 1);
	assert_string_equal(arg, "FROM:<a@b>");
	assert_true(mt_command_find("StartTLS", &table[0].name, 4, sizeof(table[0]), &i, &arg));
	assert_int_equal(i, 2);
	assert_string_equal(arg, "");
	assert_true(mt_command_find("QUIT  x", &table[0].name, 4, sizeof(table[0]), &i, &arg));
	assert_int_equal(i, 3);
	assert_string_equal(arg, " x");	/* one space is the separator */
	assert_false(mt_command_find("MAILX a", &table[0].name, 4, sizeof(table[0]), &i, &arg));
	assert_string_equal(arg, "a");
	assert_false(mt_command_find("MAI", &table[0].name, 4, sizeof(table[0]), &i, &arg));
	assert_false(mt_command_find("", &table[0].name, 4, sizeof(table[0]), &i, &arg));
	assert_false(mt_command_find(" EHLO x", &table[0].name, 4, sizeof(table[0]), &i, &arg));
	assert_string_equal(arg, "EHLO x");
}

static void test_name_array(void **state)
{
	unsigned int i = 99;
	const char *arg = NULL;
	(void)state;
	assert_true(mt_command_find("top 1 10", names, 4, sizeof(names[0]), &i, &arg));
	assert_int_equal(i, 2);
	assert_string_equal(arg, "1 10");
	assert_true(mt_command_find("UIDL", names, 4, sizeof(names[0]), &i, &arg));
	assert_int_equal(i, 3);
	assert_false(mt_command_find("RETR 1", names, 4, sizeof(names[0]), &i, &arg));
	assert_false(mt_command_find("USER", names, 0, sizeof(names[0]), &i, &arg));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_struct_table),
		cmocka_unit_test(test_name_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
