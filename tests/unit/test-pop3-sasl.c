/* test-pop3-sasl.c — unit tests for popstore/pop3-sasl.c: strict base64
 * (RFC 4648: alphabet, padding, non-canonical padding bits, whitespace,
 * output bounds) and the SASL PLAIN message (RFC 4616: field count, empty
 * and overlong fields, UTF-8), table-driven. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "pop3-sasl.h"

struct b64_case {
	const char *in;
	bool ok;
	const char *out;
	size_t out_len;
};

static const struct b64_case b64_cases[] = {
	{ "", true, "", 0 },
	{ "Zg==", true, "f", 1 },
	{ "Zm8=", true, "fo", 2 },
	{ "Zm9v", true, "foo", 3 },
	{ "Zm9vYg==", true, "foob", 4 },
	{ "AGFsaWNlAHNlY3JldA==", true, "\0alice\0secret", 13 },
	{ "Zm9", false, NULL, 0 },		/* not a multiple of 4 */
	{ "Zm9v\r\n", false, NULL, 0 },		/* whitespace */
	{ "Zm 9v", false, NULL, 0 },
	{ "Zh==", false, NULL, 0 },		/* non-zero padding bits */
	{ "Zm9=", false, NULL, 0 },
	{ "Z===", false, NULL, 0 },
	{ "====", false, NULL, 0 },
	{ "Zg==Zm9v", false, NULL, 0 },		/* padding in the middle */
	{ "Zm9v!A==", false, NULL, 0 },
	{ "Zm-v", false, NULL, 0 },		/* base64url is not base64 */
	{ "*", false, NULL, 0 },
};

static void test_base64(void **state)
{
	for (size_t i = 0; i < sizeof(b64_cases) / sizeof(b64_cases[0]); i++) {
		const struct b64_case *c = &b64_cases[i];
		unsigned char out[64];
		size_t len = 99;
		bool ok = pop3_base64_decode(c->in, strlen(c->in), out, sizeof(out), &len);
		if (ok != c->ok)
			fail_msg("case %zu '%s': got %d", i, c->in, ok);
		if (ok) {
			assert_int_equal(len, c->out_len);
			assert_memory_equal(out, c->out, len);
		}
	}
	/* Output bounds are checked. */
	unsigned char small[2];
	size_t len;
	assert_false(pop3_base64_decode("Zm9v", 4, small, sizeof(small), &len));
	assert_true(pop3_base64_decode("Zm8=", 4, small, sizeof(small), &len));
	assert_int_equal(len, 2);
}

struct plain_case {
	const char *msg;
	size_t len;
	bool ok;
	const char *authzid, *authcid, *passwd;
};

#define P(s) s, sizeof(s) - 1

static const struct plain_case plain_cases[] = {
	{ P("\0alice\0secret"), true, "", "alice", "secret" },
	{ P("bob\0mmp\0proxypw"), true, "bob", "mmp", "proxypw" },
	{ P("\0al ice\0pass word"), true, "", "al ice", "pass word" },
	{ P("\0j\xc3\xb6rg\0p\xc3\xa4ss"), true, "", "j\xc3\xb6rg", "p\xc3\xa4ss" },
	{ P("alice\0secret"), false, NULL, NULL, NULL },	/* two fields */
	{ P("alice"), false, NULL, NULL, NULL },
	{ P(""), false, NULL, NULL, NULL },
	{ P("\0\0secret"), false, NULL, NULL, NULL },		/* empty authcid */
	{ P("\0alice\0"), false, NULL, NULL, NULL },		/* empty password */
	{ P("\0alice\0se\0cret"), false, NULL, NULL, NULL },	/* four fields */
	{ P("\0\xff\xfe\0secret"), false, NULL, NULL, NULL },	/* not UTF-8 */
	{ P("\0\xc0\xaf\0secret"), false, NULL, NULL, NULL },	/* overlong */
	{ P("\0\xed\xa0\x80\0secret"), false, NULL, NULL, NULL },	/* surrogate */
	{ P("\0a\xc3\0secret"), false, NULL, NULL, NULL },	/* truncated */
};

static void test_plain(void **state)
{
	for (size_t i = 0; i < sizeof(plain_cases) / sizeof(plain_cases[0]); i++) {
		const struct plain_case *c = &plain_cases[i];
		struct pop3_sasl_plain p;
		const char *error = NULL;
		bool ok = pop3_sasl_plain_parse((const unsigned char *)c->msg, c->len,
						&p, &error);
		if (ok != c->ok)
			fail_msg("case %zu: got %d (%s)", i, ok, error ? error : "");
		if (ok) {
			assert_string_equal(p.authzid, c->authzid);
			assert_string_equal(p.authcid, c->authcid);
			assert_string_equal(p.passwd, c->passwd);
		} else {
			assert_non_null(error);
			/* The reason never quotes the input (a password). */
			assert_null(strstr(error, "secret"));
		}
	}
}

static void test_plain_limits(void **state)
{
	unsigned char msg[2000];
	struct pop3_sasl_plain p;
	const char *error;
	size_t n = 0;

	/* authcid of 255 octets is fine, 256 is not. */
	for (size_t len = 255; len <= 256; len++) {
		n = 0;
		msg[n++] = '\0';
		memset(msg + n, 'u', len);
		n += len;
		msg[n++] = '\0';
		msg[n++] = 'p';
		assert_int_equal(pop3_sasl_plain_parse(msg, n, &p, &error), len == 255);
	}
	/* Passwords up to 1024 octets. */
	for (size_t len = 1024; len <= 1025; len++) {
		n = 0;
		msg[n++] = '\0';
		msg[n++] = 'u';
		msg[n++] = '\0';
		memset(msg + n, 'p', len);
		n += len;
		assert_int_equal(pop3_sasl_plain_parse(msg, n, &p, &error), len == 1024);
	}
}

static void test_decode(void **state)
{
	struct pop3_sasl_plain p;
	const char *error;
	assert_true(pop3_sasl_plain_decode("AGFsaWNlAHNlY3JldA==", &p, &error));
	assert_string_equal(p.authcid, "alice");
	assert_string_equal(p.passwd, "secret");
	assert_false(pop3_sasl_plain_decode("AGFsaWNlAHNlY3JldA=", &p, &error));
	assert_string_equal(error, "invalid base64");
	assert_false(pop3_sasl_plain_decode("YWxpY2U=", &p, &error));	/* "alice" */
	assert_false(pop3_sasl_plain_decode("", &p, &error));
	/* Longer than any valid PLAIN message decodes to. */
	char big[4000];
	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_false(pop3_sasl_plain_decode(big, &p, &error));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_plain_limits),
		cmocka_unit_test(test_decode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
