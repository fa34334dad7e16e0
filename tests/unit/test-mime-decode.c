/* test-mime-decode.c — unit tests for lib-mail/mime-decode.c: base64 and
 * quoted-printable as real mail carries them (wrapped lines, LF-only line
 * ends, missing padding, junk octets, soft breaks, trailing white space,
 * lower-case and invalid escapes) decoded to the exact octets, and
 * output bounded for any input. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "mime-decode.h"

static void b64_is(const char *in, const char *expected, size_t expected_len)
{
	struct mt_buf out = MT_BUF_INIT;
	mt_mime_decode_base64(&out, in, strlen(in));
	assert_int_equal(out.len, expected_len);
	if (expected_len > 0)
		assert_memory_equal(out.data, expected, expected_len);
	mt_buf_free(&out);
}

static void qp_is(const char *in, const char *expected)
{
	struct mt_buf out = MT_BUF_INIT;
	mt_mime_decode_qp(&out, in, strlen(in));
	assert_string_equal(mt_buf_cstr(&out), expected);
	mt_buf_free(&out);
}

static void test_base64(void **state)
{
	(void)state;
	b64_is("", "", 0);
	b64_is("aGVsbG8=", "hello", 5);
	b64_is("aGVs\r\nbG8gd29y\r\nbGQ=\r\n", "hello world", 11);
	b64_is("aGVsbG8", "hello", 5);		/* no padding */
	b64_is("aG Vs*bG8=junk", "hello", 5);	/* junk skipped, '=' ends */
	b64_is("AAEC/w==", "\x00\x01\x02\xff", 4);
	b64_is("====", "", 0);
	b64_is("Q", "", 0);
}

static void test_qp(void **state)
{
	(void)state;
	qp_is("", "");
	qp_is("caf=C3=A9\r\n", "caf\xc3\xa9\r\n");
	qp_is("caf=c3=a9", "caf\xc3\xa9");
	qp_is("long line =\r\ncontinued\r\n", "long line continued\r\n");
	qp_is("soft after space =  \r\nx", "soft after space x");
	qp_is("trailing   \r\nnext\n", "trailing\r\nnext\r\n");
	qp_is("a=3Db =ZZ =4", "a=b =ZZ =4");
	qp_is("=\r\n", "");
	qp_is("=", "");
}

static void test_bounded(void **state)
{
	(void)state;
	srand(7);
	const char alphabet[] = "=\r\n \tAZaz09+/\x00\xe9";
	for (int round = 0; round < 20000; round++) {
		char in[64];
		size_t len = (size_t)rand() % sizeof(in);
		for (size_t i = 0; i < len; i++)
			in[i] = alphabet[rand() % (int)(sizeof(alphabet) - 1)];
		size_t lfs = 0;
		for (size_t i = 0; i < len; i++)
			lfs += in[i] == '\n';
		struct mt_buf out = MT_BUF_INIT;
		mt_mime_decode_base64(&out, in, len);
		assert_true(out.len <= len);
		mt_buf_reset(&out);
		mt_mime_decode_qp(&out, in, len);
		assert_true(out.len <= len + lfs);
		mt_buf_free(&out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_qp),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
