/* test-config.c — unit tests for the config loader (lib/config.c) and value
 * parsers (lib/config-values.c): every type, defaults, family inheritance,
 * map sections, check functions, and every error class with its line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "alloc.h"

struct test_settings {
	char *name;
	bool flag;
	uint64_t count;
	uint64_t size;
	uint64_t wait;
	struct mt_duration_list schedule;
	struct mt_hostport listen;
	struct mt_strlist items;
	unsigned int mode;
	char *needed;
};

#define F(field) offsetof(struct test_settings, field)
static const char *const modes[] = { "fast", "safe", NULL };

static const struct mt_setting_def test_defs[] = {
	{ .name = "name", .type = MT_SETTING_STRING, .offset = F(name), .default_value = "anon" },
	{ .name = "flag", .type = MT_SETTING_BOOL, .offset = F(flag), .default_value = "no" },
	{ .name = "count", .type = MT_SETTING_UINT, .offset = F(count), .default_value = "4",
	  .min = 1, .max = 100 },
	{ .name = "size", .type = MT_SETTING_SIZE, .offset = F(size), .default_value = "1M" },
	{ .name = "wait", .type = MT_SETTING_DURATION, .offset = F(wait), .default_value = "30s" },
	{ .name = "schedule", .type = MT_SETTING_DURATION_LIST, .offset = F(schedule),
	  .default_value = "1m, 5m" },
	{ .name = "listen", .type = MT_SETTING_HOSTPORT, .offset = F(listen),
	  .default_value = "*:25" },
	{ .name = "items", .type = MT_SETTING_LIST, .offset = F(items) },
	{ .name = "mode", .type = MT_SETTING_ENUM, .offset = F(mode), .default_value = "safe",
	  .enum_values = modes },
	{ .name = "needed", .type = MT_SETTING_STRING, .offset = F(needed) },
	MT_SETTINGS_END,
};

static void test_check(struct mt_config_checker *checker,
		       const struct mt_config *config,
		       const struct mt_section *section)
{
	const struct test_settings *set = section->settings;
	if (set->flag && set->count > 50)
		mt_config_check_error(checker, section, "count",
				      "must be at most 50 when flag is set");
}

static const struct mt_section_def single_def = {
	.name = "main", .kind = MT_SECTION_SINGLE,
	.struct_size = sizeof(struct test_settings), .settings = test_defs,
	.check = test_check,
};

static const struct mt_setting_def family_defs[] = {
	{ .name = "home", .type = MT_SETTING_STRING, .offset = F(name),
	  .flags = MT_SETTING_REQUIRED },
	{ .name = "count", .type = MT_SETTING_UINT, .offset = F(count), .default_value = "1" },
	MT_SETTINGS_END,
};

static const struct mt_section_def family_def = {
	.name = "store", .kind = MT_SECTION_FAMILY,
	.struct_size = sizeof(struct test_settings), .settings = family_defs,
};

static void *parse_port_entry(const char *key, const char *value, const char **error_r)
{
	struct mt_hostport hp = { NULL, 0 };
	if (!mt_parse_hostport(value, &hp, error_r))
		return NULL;
	struct mt_hostport *out = mt_xmalloc(sizeof(*out));
	*out = hp;
	return out;
}

static void free_port_entry(void *entry)
{
	mt_hostport_clear(entry);
	free(entry);
}

static const struct mt_section_def map_def = {
	.name = "hosts", .kind = MT_SECTION_MAP,
	.parse_entry = parse_port_entry, .free_entry = free_port_entry,
};

static const struct mt_section_def *const defs[] = {
	&single_def, &family_def, &map_def, NULL,
};

static char path[64];

/* Write TEXT to a temp file and load it. */
static struct mt_config *load(const char *text, char **errors_r)
{
	strcpy(path, "/tmp/test-config-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct mt_config *config = mt_config_load(path, defs, errors_r);
	unlink(path);
	return config;
}

/* Load TEXT expecting failure with exactly these error lines (no path). */
static void expect_errors(const char *text, const char *expected)
{
	char *errors = NULL;
	struct mt_config *config = load(text, &errors);
	assert_null(config);
	assert_non_null(errors);
	/* Strip the temp path from each line so expectations are fixed. */
	char stripped[4096] = "";
	size_t plen = strlen(path);
	for (char *line = errors; *line != '\0';) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl);
		assert_memory_equal(line, path, plen);
		strncat(stripped, line + plen, (size_t)(nl - line - (long)plen) + 1);
		line = nl + 1;
	}
	assert_string_equal(stripped, expected);
	free(errors);
}

static void test_defaults(void **state)
{
	char *errors = NULL;
	struct mt_config *config = load("# nothing set\n[store.a]\nhome = /x\n", &errors);
	assert_null(errors);
	assert_non_null(config);
	const struct test_settings *set = mt_config_get(config, "main", NULL);
	assert_non_null(set);
	assert_string_equal(set->name, "anon");
	assert_false(set->flag);
	assert_int_equal(set->count, 4);
	assert_int_equal(set->size, 1 << 20);
	assert_int_equal(set->wait, 30000);
	assert_int_equal(set->schedule.count, 2);
	assert_int_equal(set->schedule.ms[1], 300000);
	assert_string_equal(set->listen.host, "*");
	assert_int_equal(set->listen.port, 25);
	assert_int_equal(set->items.count, 0);
	assert_int_equal(set->mode, 1);
	assert_string_equal(set->needed, "");
	mt_config_free(&config);
	assert_null(config);
}

static void test_all_types(void **state)
{
	char *errors = NULL;
	struct mt_config *config = load(
		"[main]\n"
		"  name = mail one   ; inline comment\n"
		"flag = Yes\n"
		"count = 17\n"
		"size = 640M\n"
		"wait = 250ms\n"
		"schedule = 1m 5m,15m, 1h\n"
		"listen = [::1]:2525\n"
		"items = a, b c\n"
		"mode = FAST\n"
		"\n[hosts]\nalpha = 127.0.0.1:24\nbeta = 10.0.0.2:2424\n", &errors);
	assert_null(errors);
	const struct test_settings *set = mt_config_get(config, "main", NULL);
	assert_string_equal(set->name, "mail one");
	assert_true(set->flag);
	assert_int_equal(set->count, 17);
	assert_int_equal(set->size, 640ull << 20);
	assert_int_equal(set->wait, 250);
	assert_int_equal(set->schedule.count, 4);
	assert_int_equal(set->schedule.ms[3], 3600000);
	assert_string_equal(set->listen.host, "::1");
	assert_int_equal(set->listen.port, 2525);
	assert_int_equal(set->items.count, 3);
	assert_string_equal(set->items.items[2], "c");
	assert_null(set->items.items[3]);
	assert_int_equal(set->mode, 0);
	const struct mt_hostport *beta = mt_config_map_get(config, "hosts", "beta");
	assert_non_null(beta);
	assert_string_equal(beta->host, "10.0.0.2");
	assert_null(mt_config_map_get(config, "hosts", "gamma"));
	mt_config_free(&config);
}

static void test_family_inheritance(void **state)
{
	char *errors = NULL;
	struct mt_config *config = load(
		"[store]\ncount = 7\n"
		"[store.s1]\nhome = /one\n"
		"[store.s2]\nhome = /two\ncount = 9\n", &errors);
	assert_null(errors);
	const struct test_settings *s1 = mt_config_get(config, "store", "s1");
	const struct test_settings *s2 = mt_config_get(config, "store", "s2");
	assert_non_null(s1);
	assert_non_null(s2);
	assert_string_equal(s1->name, "/one");
	assert_int_equal(s1->count, 7);
	assert_int_equal(s2->count, 9);
	assert_null(mt_config_get(config, "store", "s3"));
	const struct mt_section *sec = mt_config_section(config, "store", "s2");
	assert_int_equal(sec->line, 5);
	mt_config_free(&config);
}

static void test_error_classes(void **state)
{
	expect_errors("[main]\nbogus = 1\n",
		      ":2: unknown key 'bogus' in [main]\n");
	expect_errors("[nope]\nx = 1\n[main]\n",
		      ":1: unknown section [nope]\n");
	expect_errors("[main]\ncount = 5\n\ncount = 6\n",
		      ":4: duplicate key 'count' in [main] (first set at line 2)\n");
	expect_errors("[main]\nsize = 10Q\n",
		      ":2: [main] size: bad size unit (use B, K, M, G or T; binary multiples) (got '10Q')\n");
	expect_errors("[main]\nsize = 99999999999999999999\n",
		      ":2: [main] size: number too large (got '99999999999999999999')\n");
	expect_errors("[main]\nwait = soon\n",
		      ":2: [main] wait: expected a number (got 'soon')\n");
	expect_errors("[main]\ncount = 101\n",
		      ":2: [main] count: out of range (1..100) (got '101')\n");
	expect_errors("[main]\ncount = -3\n",
		      ":2: [main] count: expected a non-negative integer (got '-3')\n");
	expect_errors("[main]\nflag = maybe\n",
		      ":2: [main] flag: expected yes or no (got 'maybe')\n");
	expect_errors("[main]\nmode = slow\n",
		      ":2: [main] mode: 'slow' is not one of: fast, safe\n");
	expect_errors("[main]\nlisten = localhost\n",
		      ":2: [main] listen: bad address: expected host:port (got 'localhost')\n");
	expect_errors("[main]\nlisten = h:0\n",
		      ":2: [main] listen: bad address: port out of range 1-65535 (got 'h:0')\n");
	expect_errors("[main]\nlisten = ::1:25\n",
		      ":2: [main] listen: bad address: write IPv6 addresses as [addr]:port (got '::1:25')\n");
	expect_errors("x = 1\n",
		      ":1: 'x' is outside any [section]\n");
	expect_errors("[main]\njust words\n",
		      ":2: expected 'key = value' or '[section]'\n");
	expect_errors("[main\n",
		      ":1: section header lacks ']'\n");
	expect_errors("[store.s1]\ncount = 2\n",
		      ":1: [store.s1] missing required key 'home'\n");
	expect_errors("[main.x]\n",
		      ":1: section [main] cannot have named instances\n");
	expect_errors("[hosts]\na = nowhere\n",
		      ":2: [hosts] a: bad address: expected host:port (got 'nowhere')\n");
	/* Check functions run when everything parsed, and point at the key. */
	expect_errors("[main]\nflag = yes\n\ncount = 60\n",
		      ":4: [main] count: must be at most 50 when flag is set\n");
	/* Several problems: all are reported, in file order. */
	expect_errors("[main]\nbogus = 1\nsize = 1X\ncount = 1\ncount = 2\n",
		      ":2: unknown key 'bogus' in [main]\n"
		      ":5: duplicate key 'count' in [main] (first set at line 4)\n"
		      ":3: [main] size: bad size unit (use B, K, M, G or T; binary multiples) (got '1X')\n");
}

static void test_overlong_and_nul_lines(void **state)
{
	char text[600];
	strcpy(text, "[main]\nname = ");
	size_t len = strlen(text);
	memset(text + len, 'a', 400);
	strcpy(text + len + 400, "\ncount = 3\n");
	expect_errors(text, ":2: line too long (at most 198 characters)\n");

	char nul[] = "[main]\nname = a\0b\n";
	strcpy(path, "/tmp/test-config-XXXXXX");
	int fd = mkstemp(path);
	assert_int_equal(write(fd, nul, sizeof(nul) - 1), (ssize_t)sizeof(nul) - 1);
	close(fd);
	char *errors = NULL;
	assert_null(mt_config_load(path, defs, &errors));
	unlink(path);
	assert_non_null(strstr(errors, ":2: NUL byte in line\n"));
	free(errors);
}

static void test_missing_file(void **state)
{
	char *errors = NULL;
	assert_null(mt_config_load("/nonexistent/mailtier.conf", defs, &errors));
	assert_string_equal(errors,
		"/nonexistent/mailtier.conf: cannot open: No such file or directory\n");
	free(errors);
}

static void test_value_parsers(void **state)
{
	uint64_t v;
	const char *error;
	assert_true(mt_parse_size("16KiB", &v, &error));
	assert_int_equal(v, 16384);
	assert_true(mt_parse_size("2 G", &v, &error));
	assert_int_equal(v, 2ull << 30);
	assert_true(mt_parse_size("512", &v, &error));
	assert_int_equal(v, 512);
	assert_false(mt_parse_size("", &v, &error));
	assert_false(mt_parse_size("20000000T", &v, &error));
	assert_string_equal(error, "value too large");
	assert_true(mt_parse_duration("5d", &v, &error));
	assert_int_equal(v, 5ull * 86400000);
	assert_true(mt_parse_duration("10", &v, &error));
	assert_int_equal(v, 10000);
	assert_false(mt_parse_duration("1w", &v, &error));

	struct mt_hostport hp = { NULL, 0 };
	assert_true(mt_parse_hostport("127.0.0.1:110", &hp, &error));
	assert_string_equal(hp.host, "127.0.0.1");
	assert_int_equal(hp.port, 110);
	char *str = mt_hostport_string(&hp);
	assert_string_equal(str, "127.0.0.1:110");
	free(str);
	mt_hostport_clear(&hp);
	assert_null(hp.host);
	/* IPv6 in brackets, and the string parses back to the same. */
	assert_true(mt_parse_hostport("[::1]:25", &hp, &error));
	str = mt_hostport_string(&hp);
	assert_string_equal(str, "[::1]:25");
	mt_hostport_clear(&hp);
	assert_true(mt_parse_hostport(str, &hp, &error));
	assert_string_equal(hp.host, "::1");
	assert_int_equal(hp.port, 25);
	free(str);
	mt_hostport_clear(&hp);
	assert_false(mt_parse_hostport(":25", &hp, &error));
	assert_false(mt_parse_hostport("[::1]25", &hp, &error));
	assert_false(mt_parse_hostport("a b:25", &hp, &error));
	assert_false(mt_parse_hostport("host:65536", &hp, &error));
	assert_false(mt_parse_hostport("host:25x", &hp, &error));
	assert_null(hp.host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_all_types),
		cmocka_unit_test(test_family_inheritance),
		cmocka_unit_test(test_error_classes),
		cmocka_unit_test(test_overlong_and_nul_lines),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_value_parsers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
