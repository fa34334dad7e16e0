/* test-ldap-escape.c — unit tests for dirsvc/ldap-escape.c: RFC 4515 filter
 * escaping (injection attempts stay one assertion value) and the checks on
 * client values (length, UTF-8 per RFC 3629, control characters). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ldap-escape.h"
#include "utf8.h"

static void test_escape_table(void **state)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "user@example.test", "user@example.test" },
		{ "a*)(uid=*", "a\\2a\\29\\28uid=\\2a" },
		{ "*", "\\2a" },
		{ "(", "\\28" },
		{ ")", "\\29" },
		{ "\\", "\\5c" },
		{ "x\\2a", "x\\5c2a" },
		{ "*)(|(objectClass=*)", "\\2a\\29\\28|\\28objectClass=\\2a\\29" },
		{ "a\tb", "a\\09b" },
		{ "del\x7f", "del\\7f" },
		{ "j\xc3\xbcrgen@example.test", "j\xc3\xbcrgen@example.test" },
		{ "", "" },
		{ "a)(&", "a\\29\\28&" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_buf out = MT_BUF_INIT;
		mt_ldap_filter_escape(&out, cases[i].in);
		assert_string_equal(mt_buf_cstr(&out), cases[i].out);
		mt_buf_free(&out);
	}
}

/* After escaping, a value holds no byte that could end or start an
 * assertion: no unescaped '(', ')', '*' and every '\\' starts \XX. */
static void test_escape_structure(void **state)
{
	struct mt_buf out = MT_BUF_INIT;
	char in[256];

	for (int c = 1; c < 256; c++) {
		in[c - 1] = (char)c;
	}
	in[255] = '\0';
	mt_ldap_filter_escape(&out, in);
	for (size_t i = 0; i < out.len; i++) {
		char c = out.data[i];
		assert_true(c != '(' && c != ')' && c != '*');
		if (c == '\\') {
			assert_true(i + 2 < out.len);
			assert_non_null(strchr("0123456789abcdef", out.data[i + 1]));
			assert_non_null(strchr("0123456789abcdef", out.data[i + 2]));
			i += 2;
		}
	}
	mt_buf_free(&out);
}

static void test_check_table(void **state)
{
	static const struct { const char *in; bool ok; const char *why; } cases[] = {
		{ "user@example.test", true, NULL },
		{ "", false, "empty value" },
		{ "a\r\nb", false, "value contains a control character" },
		{ "a\x7f", false, "value contains a control character" },
		{ "j\xc3\xbcrgen", true, NULL },		/* U+00FC */
		{ "\xe2\x82\xac", true, NULL },			/* U+20AC */
		{ "\xf0\x9f\x93\xa7", true, NULL },		/* U+1F4E7 */
		{ "\xf4\x8f\xbf\xbf", true, NULL },		/* U+10FFFF */
		{ "\xc0\xaf", false, "value is not valid UTF-8" },	/* overlong '/' */
		{ "\xc1\xbf", false, "value is not valid UTF-8" },
		{ "\xe0\x80\xaf", false, "value is not valid UTF-8" },	/* overlong */
		{ "\xf0\x80\x80\xaf", false, "value is not valid UTF-8" },
		{ "\xed\xa0\x80", false, "value is not valid UTF-8" },	/* surrogate */
		{ "\xf4\x90\x80\x80", false, "value is not valid UTF-8" }, /* > U+10FFFF */
		{ "\xf5\x80\x80\x80", false, "value is not valid UTF-8" },
		{ "\xff", false, "value is not valid UTF-8" },
		{ "\x80", false, "value is not valid UTF-8" },	/* lone continuation */
		{ "ab\xc3", false, "value is not valid UTF-8" },	/* truncated */
		{ "ab\xe2\x82", false, "value is not valid UTF-8" },
		{ "\xc3\x28", false, "value is not valid UTF-8" },	/* bad continuation */
		{ "a*)(uid=*", true, NULL },	/* legal; escaping makes it harmless */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *error = NULL;
		bool ok = mt_ldap_value_check(cases[i].in, MT_LDAP_VALUE_MAX, &error);
		if (ok != cases[i].ok)
			fail_msg("case %zu: got %d", i, ok);
		if (!ok)
			assert_string_equal(error, cases[i].why);
	}
}

static void test_check_length(void **state)
{
	char v[300];
	const char *error;

	memset(v, 'a', sizeof(v));
	v[254] = '\0';
	assert_true(mt_ldap_value_check(v, MT_LDAP_VALUE_MAX, &error));
	v[254] = 'a';
	v[255] = '\0';
	assert_false(mt_ldap_value_check(v, MT_LDAP_VALUE_MAX, &error));
	assert_string_equal(error, "value too long");
	/* 254 octets is the bound, not 254 characters. */
	memset(v, 0, sizeof(v));
	for (size_t i = 0; i < 128; i++)
		memcpy(v + 2 * i, "\xc3\xbc", 2);
	assert_false(mt_ldap_value_check(v, MT_LDAP_VALUE_MAX, &error));
	v[254] = '\0';
	assert_true(mt_ldap_value_check(v, MT_LDAP_VALUE_MAX, &error));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_table),
		cmocka_unit_test(test_escape_structure),
		cmocka_unit_test(test_check_table),
		cmocka_unit_test(test_check_length),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
