/* test-xtext.c — unit tests for lib/xtext.c (RFC 3461 4): the strict
 * checker (upper-case hex only, no raw '+' or '=', printable ASCII, the
 * length bound), decoding (lower-case hex tolerated, NUL and CR LF
 * decoded), encoding of every octet, the round trip, and the
 * printable-ASCII test the DSN writer uses. Table-driven. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "buf.h"
#include "xtext.h"

struct valid_case {
	const char *in;
	size_t max;
	bool ok;
};

static const struct valid_case valid_cases[] = {
	{ "QQ+2B123+3Dx", 100, true },
	{ "user4+2Borig@example.test", 100, true },
	{ "+00+0D+0A+FF", 100, true },
	{ "!~\"*,<>", 100, true },
	{ "abc", 3, true },
	{ "abcd", 3, false },		/* over max */
	{ "", 100, false },		/* 1*xchar... at least one */
	{ "a+2b", 100, false },		/* lower-case hex */
	{ "a+2", 100, false },		/* one digit, then the end */
	{ "a+", 100, false },
	{ "+", 100, false },
	{ "a+ZZ", 100, false },
	{ "a+G0", 100, false },
	{ "a+b", 100, false },		/* raw '+' */
	{ "a=b", 100, false },		/* raw '=' */
	{ "a b", 100, false },		/* SP is 32 */
	{ "a\x7f", 100, false },
	{ "caf\xc3\xa9", 100, false },	/* 8-bit */
	{ "a\tb", 100, false },
};

static void test_valid(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++) {
		const struct valid_case *c = &valid_cases[i];
		if (mt_xtext_valid(c->in, c->max) != c->ok)
			fail_msg("'%s' max %zu: want %d", c->in, c->max, c->ok);
	}
}

struct decode_case {
	const char *in;
	const char *out;
	size_t out_len;
};

static const struct decode_case decode_cases[] = {
	{ "QQ+2B123+3Dx", "QQ+123=x", 8 },
	{ "user4+2Borig@example.test", "user4+orig@example.test", 23 },
	{ "a+0D+0AX-Injected:+201", "a\r\nX-Injected: 1", 16 },
	{ "x+00y", "x\0y", 3 },
	{ "x+2by", "x+y", 3 },		/* lower case, as older releases queued */
	{ "x+2", "x+2", 3 },		/* no escape: copied */
	{ "x+", "x+", 2 },
	{ "plain", "plain", 5 },
};

static void test_decode(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(decode_cases) / sizeof(decode_cases[0]); i++) {
		const struct decode_case *c = &decode_cases[i];
		struct mt_buf out = MT_BUF_INIT;
		mt_xtext_decode(c->in, &out);
		if (out.len != c->out_len || memcmp(out.data, c->out, out.len) != 0)
			fail_msg("'%s': %zu octets '%s'", c->in, out.len, mt_buf_cstr(&out));
		mt_buf_free(&out);
	}
}

/* Every octet encodes to valid xtext that decodes back to it. */
static void test_encode_roundtrip(void **state)
{
	unsigned char all[256];
	struct mt_buf enc = MT_BUF_INIT, dec = MT_BUF_INIT;

	(void)state;
	for (unsigned int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	mt_xtext_encode(all, sizeof(all), &enc);
	assert_true(mt_xtext_valid(mt_buf_cstr(&enc), 1000));
	mt_xtext_decode(mt_buf_cstr(&enc), &dec);
	assert_int_equal(dec.len, sizeof(all));
	assert_memory_equal(dec.data, all, sizeof(all));
	mt_buf_reset(&enc);
	mt_xtext_encode("QQ+123=x", 8, &enc);
	assert_string_equal(mt_buf_cstr(&enc), "QQ+2B123+3Dx");
	mt_buf_reset(&enc);
	mt_xtext_encode("a b\r\n", 5, &enc);
	assert_string_equal(mt_buf_cstr(&enc), "a+20b+0D+0A");
	mt_buf_free(&enc);
	mt_buf_free(&dec);
}

static void test_printable(void **state)
{
	(void)state;
	assert_true(mt_xtext_printable("QQ+123=x y~", 11));
	assert_true(mt_xtext_printable("", 0));
	assert_false(mt_xtext_printable("a\r\nb", 4));
	assert_false(mt_xtext_printable("a\0b", 3));
	assert_false(mt_xtext_printable("a\x7f", 2));
	assert_false(mt_xtext_printable("caf\xc3\xa9", 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_printable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
