/* test-sasl.c — unit tests for lib/sasl.c: strict base64 (RFC 4648: the
 * alphabet, padding, non-canonical padding bits, whitespace, the text and
 * output bounds), encoding (RFC 4648 10 test vectors, round trips at every
 * length), RFC 4616 PLAIN messages (every rejection: separators, empty and
 * overlong fields at their boundaries, UTF-8) and LOGIN steps.
 * Table-driven. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "sasl.h"

struct b64_case {
	const char *in;
	const char *out;	/* NULL: must be refused */
	size_t out_len;
};

static const struct b64_case b64_cases[] = {
	/* RFC 4648 10 */
	{ "", "", 0 },
	{ "Zg==", "f", 1 },
	{ "Zm8=", "fo", 2 },
	{ "Zm9v", "foo", 3 },
	{ "Zm9vYg==", "foob", 4 },
	{ "Zm9vYmE=", "fooba", 5 },
	{ "Zm9vYmFy", "foobar", 6 },
	{ "AGFsaWNlAHNlY3JldA==", "\0alice\0secret", 13 },
	{ "+/+/", "\xfb\xff\xbf", 3 },
	{ "////", "\xff\xff\xff", 3 },
	/* length */
	{ "Zm9", NULL, 0 },
	{ "Zg=", NULL, 0 },
	{ "Z", NULL, 0 },
	{ "Zm9vY", NULL, 0 },
	/* characters */
	{ "Zm9v\r\n", NULL, 0 },
	{ " Zm9v", NULL, 0 },
	{ "Zm9v    ", NULL, 0 },
	{ "Zm 9", NULL, 0 },
	{ "Zm-v", NULL, 0 },		/* base64url is not base64 */
	{ "Zm_v", NULL, 0 },
	{ "Zm9v!A==", NULL, 0 },
	{ "Zm\x80v", NULL, 0 },
	{ "****", NULL, 0 },
	/* padding */
	{ "Zh==", NULL, 0 },		/* non-zero padding bits */
	{ "Zm9=", NULL, 0 },
	{ "Z===", NULL, 0 },
	{ "====", NULL, 0 },
	{ "=Zg=", NULL, 0 },
	{ "Zg=a", NULL, 0 },
	{ "Zg==Zm9v", NULL, 0 },	/* padding in the middle */
	{ "Zm8=Zm8=", NULL, 0 },
};

static void test_base64_decode(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(b64_cases) / sizeof(b64_cases[0]); i++) {
		const struct b64_case *c = &b64_cases[i];
		unsigned char out[64];
		size_t len = 99;
		const char *error = NULL;
		bool ok = mt_base64_decode(c->in, strlen(c->in), out, sizeof(out),
					   &len, &error);
		if (ok != (c->out != NULL))
			fail_msg("case %zu '%s': got %d (%s)", i, c->in, ok,
				 error != NULL ? error : "");
		if (ok) {
			assert_int_equal(len, c->out_len);
			assert_memory_equal(out, c->out, len);
		} else {
			assert_non_null(error);
		}
	}
}

static void test_base64_bounds(void **state)
{
	unsigned char small[2], big[MT_SASL_MESSAGE_MAX + 3];
	size_t len;
	const char *error;
	(void)state;

	/* The output bound is exact. */
	assert_false(mt_base64_decode("Zm9v", 4, small, sizeof(small), &len, &error));
	assert_true(mt_base64_decode("Zm8=", 4, small, sizeof(small), &len, &error));
	assert_int_equal(len, 2);
	assert_true(mt_base64_decode("", 0, NULL, 0, &len, &error));
	assert_int_equal(len, 0);

	/* The text bound: MT_BASE64_TEXT_MAX is accepted, 4 more are not. */
	char *text = malloc(MT_BASE64_TEXT_MAX + 5);
	assert_non_null(text);
	memset(text, 'A', MT_BASE64_TEXT_MAX + 4);
	text[MT_BASE64_TEXT_MAX + 4] = '\0';
	assert_true(mt_base64_decode(text, MT_BASE64_TEXT_MAX, big, sizeof(big),
				     &len, &error));
	assert_int_equal(len, MT_SASL_MESSAGE_MAX);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(big[i], 0);
	assert_false(mt_base64_decode(text, MT_BASE64_TEXT_MAX + 4, big,
				      sizeof(big), &len, &error));
	free(text);
}

static void test_base64_encode(void **state)
{
	unsigned char data[600];
	(void)state;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 37 + 11);
	for (size_t len = 0; len <= sizeof(data); len++) {
		struct mt_buf enc = MT_BUF_INIT;
		unsigned char dec[sizeof(data)];
		size_t dec_len;
		const char *error;
		mt_base64_encode(data, len, &enc);
		assert_int_equal(enc.len, mt_base64_encoded_len(len));
		assert_true(mt_base64_decode(mt_buf_cstr(&enc), enc.len, dec,
					     sizeof(dec), &dec_len, &error));
		assert_int_equal(dec_len, len);
		assert_memory_equal(dec, data, len);
		mt_buf_free(&enc);
	}
	struct mt_buf enc = MT_BUF_INIT;
	mt_base64_encode("foobar", 6, &enc);
	assert_string_equal(mt_buf_cstr(&enc), "Zm9vYmFy");
	mt_buf_free(&enc);
}

struct plain_case {
	const char *msg;
	size_t len;
	enum mt_sasl_status status;
	const char *authzid, *authcid, *passwd;
};

#define P(s) s, sizeof(s) - 1

static const struct plain_case plain_cases[] = {
	{ P("\0alice\0secret"), MT_SASL_OK, "", "alice", "secret" },
	{ P("bob\0mmp\0proxypw"), MT_SASL_OK, "bob", "mmp", "proxypw" },
	{ P("\0al ice\0pass word"), MT_SASL_OK, "", "al ice", "pass word" },
	{ P("\0j\xc3\xb6rg\0p\xc3\xa4ss"), MT_SASL_OK, "", "j\xc3\xb6rg", "p\xc3\xa4ss" },
	{ P("\0u\0\xf0\x9f\x93\xa7"), MT_SASL_OK, "", "u", "\xf0\x9f\x93\xa7" },
	/* separators */
	{ P(""), MT_SASL_BAD_MESSAGE, NULL, NULL, NULL },
	{ P("alice"), MT_SASL_BAD_MESSAGE, NULL, NULL, NULL },
	{ P("alice\0secret"), MT_SASL_BAD_MESSAGE, NULL, NULL, NULL },
	{ P("\0"), MT_SASL_BAD_MESSAGE, NULL, NULL, NULL },
	{ P("\0alice\0se\0cret"), MT_SASL_BAD_MESSAGE, NULL, NULL, NULL },
	{ P("\0alice\0secret\0"), MT_SASL_BAD_MESSAGE, NULL, NULL, NULL },
	{ P("\0\0\0"), MT_SASL_BAD_MESSAGE, NULL, NULL, NULL },
	/* empty fields */
	{ P("\0\0"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },
	{ P("\0\0secret"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },
	{ P("\0alice\0"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },
	{ P("bob\0\0secret"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },
	/* UTF-8 */
	{ P("\0\xff\xfe\0secret"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },
	{ P("\0\xc0\xaf\0secret"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },	/* overlong */
	{ P("\0\xe0\x80\xaf\0secret"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },
	{ P("\0\xed\xa0\x80\0secret"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },	/* surrogate */
	{ P("\0\xf4\x90\x80\x80\0secret"), MT_SASL_BAD_FIELD, NULL, NULL, NULL }, /* > U+10FFFF */
	{ P("\0a\xc3\0secret"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },	/* truncated */
	{ P("\x80\0alice\0secret"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },	/* authzid */
	{ P("\0alice\0sec\xc3"), MT_SASL_BAD_FIELD, NULL, NULL, NULL },	/* passwd */
};

static void test_plain_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(plain_cases) / sizeof(plain_cases[0]); i++) {
		const struct plain_case *c = &plain_cases[i];
		struct mt_sasl_plain p;
		const char *error = NULL;
		enum mt_sasl_status status = mt_sasl_plain_parse(
			(const unsigned char *)c->msg, c->len, &p, &error);
		if (status != c->status)
			fail_msg("case %zu: got %d (%s)", i, (int)status,
				 error != NULL ? error : "");
		if (status == MT_SASL_OK) {
			assert_string_equal(p.authzid, c->authzid);
			assert_string_equal(p.authcid, c->authcid);
			assert_string_equal(p.passwd, c->passwd);
		} else {
			assert_non_null(error);
			/* The reason never quotes the input (a password). */
			assert_null(strstr(error, "secret"));
			/* Nothing is left in the fields. */
			assert_string_equal(p.authcid, "");
			assert_string_equal(p.passwd, "");
		}
		mt_sasl_plain_wipe(&p);
	}
}

/* "\0" authcid "\0" passwd, or authzid "\0u\0p", with fields of n octets. */
static size_t build(unsigned char *msg, size_t zlen, size_t clen, size_t plen)
{
	size_t n = 0;
	memset(msg + n, 'z', zlen);
	n += zlen;
	msg[n++] = '\0';
	memset(msg + n, 'u', clen);
	n += clen;
	msg[n++] = '\0';
	memset(msg + n, 'p', plen);
	return n + plen;
}

static void test_plain_limits(void **state)
{
	unsigned char msg[3000];
	struct mt_sasl_plain p;
	const char *error;
	(void)state;

	for (size_t len = MT_SASL_ID_MAX - 1; len <= MT_SASL_ID_MAX + 1; len++) {
		enum mt_sasl_status want = len <= MT_SASL_ID_MAX ? MT_SASL_OK :
			MT_SASL_BAD_FIELD;
		assert_int_equal(mt_sasl_plain_parse(msg, build(msg, 0, len, 1), &p,
						     &error), want);
		assert_int_equal(mt_sasl_plain_parse(msg, build(msg, len, 1, 1), &p,
						     &error), want);
		if (want == MT_SASL_OK)
			assert_int_equal(strlen(p.authzid), len);
	}
	for (size_t len = MT_SASL_PASSWD_MAX - 1; len <= MT_SASL_PASSWD_MAX + 1; len++) {
		enum mt_sasl_status want = len <= MT_SASL_PASSWD_MAX ? MT_SASL_OK :
			MT_SASL_BAD_FIELD;
		assert_int_equal(mt_sasl_plain_parse(msg, build(msg, 0, 1, len), &p,
						     &error), want);
		if (want == MT_SASL_OK)
			assert_int_equal(strlen(p.passwd), len);
	}
	/* The longest message: every field at its limit, through base64. */
	size_t n = build(msg, MT_SASL_ID_MAX, MT_SASL_ID_MAX, MT_SASL_PASSWD_MAX);
	assert_int_equal(n, MT_SASL_MESSAGE_MAX);
	struct mt_buf b64 = MT_BUF_INIT;
	mt_base64_encode(msg, n, &b64);
	assert_int_equal(b64.len, MT_BASE64_TEXT_MAX);
	assert_int_equal(mt_sasl_plain_decode(mt_buf_cstr(&b64), &p, &error), MT_SASL_OK);
	assert_int_equal(strlen(p.passwd), MT_SASL_PASSWD_MAX);
	mt_buf_free(&b64);
	/* One octet more does not decode. */
	n = build(msg, MT_SASL_ID_MAX, MT_SASL_ID_MAX, MT_SASL_PASSWD_MAX + 1);
	mt_base64_encode(msg, n, &b64);
	assert_int_equal(mt_sasl_plain_decode(mt_buf_cstr(&b64), &p, &error),
			 MT_SASL_BAD_BASE64);
	mt_buf_free(&b64);
	mt_sasl_plain_wipe(&p);
}

static void test_plain_decode(void **state)
{
	struct mt_sasl_plain p;
	const char *error;
	(void)state;

	assert_int_equal(mt_sasl_plain_decode("AGFsaWNlAHNlY3JldA==", &p, &error),
			 MT_SASL_OK);
	assert_string_equal(p.authzid, "");
	assert_string_equal(p.authcid, "alice");
	assert_string_equal(p.passwd, "secret");
	assert_int_equal(mt_sasl_plain_decode("AGFsaWNlAHNlY3JldA=", &p, &error),
			 MT_SASL_BAD_BASE64);
	assert_int_equal(mt_sasl_plain_decode("=", &p, &error), MT_SASL_BAD_BASE64);
	assert_int_equal(mt_sasl_plain_decode("*", &p, &error), MT_SASL_BAD_BASE64);
	assert_int_equal(mt_sasl_plain_decode("YWxpY2U=", &p, &error),	/* "alice" */
			 MT_SASL_BAD_MESSAGE);
	assert_int_equal(mt_sasl_plain_decode("", &p, &error), MT_SASL_BAD_MESSAGE);
	assert_int_equal(mt_sasl_plain_decode("AGFsaWNlAA==", &p, &error),	/* \0alice\0 */
			 MT_SASL_BAD_FIELD);
	char big[4000];
	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(mt_sasl_plain_decode(big, &p, &error), MT_SASL_BAD_BASE64);
	mt_sasl_plain_wipe(&p);
}

static void test_plain_encode(void **state)
{
	struct mt_buf out = MT_BUF_INIT;
	struct mt_sasl_plain p;
	const char *error;
	(void)state;

	/* RFC 4616 4's example: "\0tim\0tanstaaftanstaaf". */
	mt_sasl_plain_encode(&out, "", "tim", "tanstaaftanstaaf");
	assert_string_equal(mt_buf_cstr(&out), "AHRpbQB0YW5zdGFhZnRhbnN0YWFm");
	mt_buf_reset(&out);
	mt_sasl_plain_encode(&out, "alice@example.test", "mmp", "proxy secret");
	assert_int_equal(mt_sasl_plain_decode(mt_buf_cstr(&out), &p, &error), MT_SASL_OK);
	assert_string_equal(p.authzid, "alice@example.test");
	assert_string_equal(p.authcid, "mmp");
	assert_string_equal(p.passwd, "proxy secret");
	mt_sasl_plain_wipe(&p);
	mt_buf_free(&out);
}

struct login_case {
	const char *in;
	size_t out_size;
	enum mt_sasl_status status;
	const char *out;
};

static const struct login_case login_cases[] = {
	{ "dXNlcg==", 64, MT_SASL_OK, "user" },
	{ "", 64, MT_SASL_OK, "" },			/* empty: the caller judges */
	{ "UGFzc3dvcmQ6", 64, MT_SASL_OK, "Password:" },
	{ "dXNlcg==", 5, MT_SASL_OK, "user" },		/* exactly fits */
	{ "dXNlcg==", 4, MT_SASL_BAD_BASE64, NULL },	/* one octet short */
	{ "dXNlcg==", 0, MT_SASL_BAD_FIELD, NULL },
	{ "dXNlcg=", 64, MT_SASL_BAD_BASE64, NULL },
	{ "=", 64, MT_SASL_BAD_BASE64, NULL },
	{ "*", 64, MT_SASL_BAD_BASE64, NULL },
	{ "dQB4", 64, MT_SASL_BAD_FIELD, NULL },	/* "u\0x" */
	{ "AA==", 64, MT_SASL_BAD_FIELD, NULL },	/* "\0" */
};

static void test_login(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(login_cases) / sizeof(login_cases[0]); i++) {
		const struct login_case *c = &login_cases[i];
		char out[64];
		const char *error = NULL;
		memset(out, 'x', sizeof(out));
		enum mt_sasl_status status = mt_sasl_login_decode(c->in, out,
								  c->out_size, &error);
		if (status != c->status)
			fail_msg("case %zu '%s': got %d", i, c->in, (int)status);
		if (status == MT_SASL_OK)
			assert_string_equal(out, c->out);
		else
			assert_non_null(error);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64_decode),
		cmocka_unit_test(test_base64_bounds),
		cmocka_unit_test(test_base64_encode),
		cmocka_unit_test(test_plain_parse),
		cmocka_unit_test(test_plain_limits),
		cmocka_unit_test(test_plain_decode),
		cmocka_unit_test(test_plain_encode),
		cmocka_unit_test(test_login),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
