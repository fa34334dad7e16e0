/* test-buf.c — unit tests for the growable buffer (lib/buf.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "buf.h"

static void test_append_and_cstr(void **state)
{
	struct mt_buf buf = MT_BUF_INIT;
	assert_string_equal(mt_buf_cstr(&buf), "");
	mt_buf_append_str(&buf, "hello");
	mt_buf_append_char(&buf, ' ');
	mt_buf_appendf(&buf, "%s %d", "world", 42);
	assert_int_equal(buf.len, 14);
	assert_string_equal(mt_buf_cstr(&buf), "hello world 42");
	mt_buf_free(&buf);
	assert_null(buf.data);
}

static void test_binary_and_growth(void **state)
{
	struct mt_buf buf = MT_BUF_INIT;
	char block[1000];
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (char)(i % 251);
	for (int i = 0; i < 100; i++)
		mt_buf_append(&buf, block, sizeof(block));
	assert_int_equal(buf.len, 100000);
	assert_true(buf.cap > buf.len);
	assert_int_equal(buf.data[buf.len], '\0');
	for (int i = 0; i < 100; i++)
		assert_memory_equal(buf.data + i * 1000, block, sizeof(block));
	mt_buf_free(&buf);
}

static void test_consume_reset_steal(void **state)
{
	struct mt_buf buf = MT_BUF_INIT;
	mt_buf_append_str(&buf, "abcdef");
	mt_buf_consume(&buf, 2);
	assert_string_equal(mt_buf_cstr(&buf), "cdef");
	mt_buf_consume(&buf, 4);
	assert_int_equal(buf.len, 0);
	assert_string_equal(mt_buf_cstr(&buf), "");
	mt_buf_append_str(&buf, "xyz");
	mt_buf_reset(&buf);
	assert_string_equal(mt_buf_cstr(&buf), "");
	mt_buf_append_str(&buf, "kept");
	char *s = mt_buf_steal(&buf);
	assert_string_equal(s, "kept");
	assert_null(buf.data);
	assert_int_equal(buf.len, 0);
	free(s);
	s = mt_buf_steal(&buf);	/* an empty buffer gives "" */
	assert_string_equal(s, "");
	free(s);
}

static void test_insert(void **state)
{
	struct mt_buf b = MT_BUF_INIT;
	(void)state;
	mt_buf_insert(&b, 0, "", 0);
	assert_int_equal(b.len, 0);
	mt_buf_insert(&b, 0, "ad", 2);
	mt_buf_insert(&b, 1, "bc", 2);
	mt_buf_insert(&b, 4, "ef", 2);
	mt_buf_insert(&b, 0, "_", 1);
	assert_string_equal(mt_buf_cstr(&b), "_abcdef");
	assert_int_equal(b.len, 7);
	/* Growth across an insert keeps every octet. */
	for (int i = 0; i < 100; i++)
		mt_buf_insert(&b, 1, "0123456789", 10);
	assert_int_equal(b.len, 1007);
	assert_memory_equal(b.data + 991, "0123456789abcdef", 16);
	mt_buf_free(&b);
}

static void test_appendf_long(void **state)
{
	struct mt_buf buf = MT_BUF_INIT;
	char big[5000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	mt_buf_appendf(&buf, "[%s]", big);
	assert_int_equal(buf.len, sizeof(big) + 1);
	assert_int_equal(buf.data[0], '[');
	assert_int_equal(buf.data[buf.len - 1], ']');
	mt_buf_free(&buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_and_cstr),
		cmocka_unit_test(test_binary_and_growth),
		cmocka_unit_test(test_consume_reset_steal),
		cmocka_unit_test(test_appendf_long),
		cmocka_unit_test(test_insert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
