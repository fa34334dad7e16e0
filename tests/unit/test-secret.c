/* test-secret.c — unit tests for lib/secret.c, the one reader of secret
 * files: the first line without CR/LF; a missing file, an empty file and
 * an empty first line are errors naming the path; the free wipes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "secret.h"

static char path[64];

static void write_file(const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_read(void **state)
{
	const char *error = NULL;
	(void)state;
	snprintf(path, sizeof(path), "/tmp/mt-test-secret.%d", (int)getpid());
	static const struct { const char *text, *want; } ok[] = {
		{ "s3cret\n", "s3cret" }, { "s3cret", "s3cret" },
		{ "s3cret\r\nsecond line\n", "s3cret" }, { " spaced \n", " spaced " },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		write_file(ok[i].text);
		char *s = mt_secret_read(path, &error);
		assert_non_null(s);
		assert_string_equal(s, ok[i].want);
		mt_secret_free(&s);
		assert_null(s);
	}
	static const struct { const char *text, *reason; } bad[] = {
		{ "", "empty" }, { "\n", "the first line is empty" },
		{ "\r\nx\n", "the first line is empty" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(bad[i].text);
		assert_null(mt_secret_read(path, &error));
		assert_non_null(strstr(error, path));
		assert_non_null(strstr(error, bad[i].reason));
	}
	unlink(path);
	assert_null(mt_secret_read(path, &error));
	assert_non_null(strstr(error, "No such file"));
	char *none = NULL;
	mt_secret_free(&none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
