/* test-daemon-args.c — unit tests for daemon/daemon-args.c, the one
 * command line of the three daemons: defaults, -c/--config, -f and -F and
 * --foreground alike, -s/--shard only where the daemon takes it, --help
 * (status 0), a bad option or an operand (status 2), and parsing twice in
 * one process (getopt state starts afresh). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "daemon-args.h"
#include "mailtier-settings.h"

static int parse(bool takes_shard, struct mt_daemon_args *args, ...)
{
	char *argv[16];
	int argc = 0;
	va_list ap;
	va_start(ap, args);
	argv[argc++] = (char *)"mailtier-test";
	for (char *a; (a = va_arg(ap, char *)) != NULL;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return mt_daemon_args_parse(argc, argv, "mailtier-test", takes_shard, args);
}

static void test_args(void **state)
{
	(void)state;
	struct mt_daemon_args a;
	assert_int_equal(parse(false, &a, NULL), -1);
	assert_string_equal(a.config_path, MT_DEFAULT_CONFIG_FILE);
	assert_false(a.foreground);
	assert_null(a.shard);
	assert_int_equal(parse(false, &a, "-c", "/tmp/x.conf", "-f", NULL), -1);
	assert_string_equal(a.config_path, "/tmp/x.conf");
	assert_true(a.foreground);
	assert_int_equal(parse(false, &a, "-F", NULL), -1);
	assert_true(a.foreground);
	assert_int_equal(parse(false, &a, "--config=/tmp/y.conf", "--foreground", NULL), -1);
	assert_string_equal(a.config_path, "/tmp/y.conf");
	assert_true(a.foreground);
	assert_int_equal(parse(true, &a, "-c", "c", "-s", "s2", "-F", NULL), -1);
	assert_string_equal(a.shard, "s2");
	assert_int_equal(parse(true, &a, "--shard", "s1", NULL), -1);
	assert_string_equal(a.shard, "s1");
	/* Refused: -s where no shard is served, unknown options, operands,
	 * a missing value. */
	assert_int_equal(parse(false, &a, "-s", "s1", NULL), 2);
	assert_int_equal(parse(false, &a, "--shard=s1", NULL), 2);
	assert_int_equal(parse(false, &a, "-x", NULL), 2);
	assert_int_equal(parse(false, &a, "extra", NULL), 2);
	assert_int_equal(parse(false, &a, "-c", NULL), 2);
	assert_int_equal(parse(true, &a, "--help", NULL), 0);
	assert_int_equal(parse(false, &a, "-h", NULL), 0);
	assert_int_equal(parse(false, &a, "-f", NULL), -1);	/* afresh after all that */
	assert_true(a.foreground);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
