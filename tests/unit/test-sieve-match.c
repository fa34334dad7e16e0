/* test-sieve-match.c — lib-mail/sieve-match.c: RFC 5228 2.7's match types
 * under each comparator (RFC 4790 9.1-9.3), :matches wildcards and
 * escapes, i;ascii-numeric's numbers and infinity, relational operators
 * (RFC 5231).
 * Trust boundary: test code only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sieve-match.h"

#include <string.h>

static bool m(enum mt_sieve_comparator cmp, enum mt_sieve_match_type type, const char *v,
	      const char *k)
{
	return mt_sieve_match(cmp, type, MT_SIEVE_REL_EQ, v, strlen(v), k, strlen(k));
}

#define CASE MT_SIEVE_CMP_ASCII_CASEMAP
#define OCTET MT_SIEVE_CMP_OCTET
#define NUM MT_SIEVE_CMP_ASCII_NUMERIC

static void test_is_contains(void **state)
{
	(void)state;
	assert_true(m(CASE, MT_SIEVE_MATCH_IS, "Hello", "hELLO"));
	assert_false(m(OCTET, MT_SIEVE_MATCH_IS, "Hello", "hello"));
	assert_false(m(CASE, MT_SIEVE_MATCH_IS, "Hello", "Hell"));
	assert_true(m(CASE, MT_SIEVE_MATCH_CONTAINS, "Your ORDER shipped", "order"));
	assert_false(m(OCTET, MT_SIEVE_MATCH_CONTAINS, "Your ORDER shipped", "order"));
	assert_true(m(CASE, MT_SIEVE_MATCH_CONTAINS, "anything", ""));
	assert_false(m(CASE, MT_SIEVE_MATCH_CONTAINS, "ab", "abc"));
	/* Non-ASCII octets are compared as they are under casemap. */
	assert_true(m(CASE, MT_SIEVE_MATCH_IS, "\xc3\xa9t\xc3\xa9", "\xc3\xa9T\xc3\xa9"));
	assert_false(m(CASE, MT_SIEVE_MATCH_IS, "\xc3\xa9", "\xc3\x89"));
}

static void test_matches(void **state)
{
	(void)state;
	assert_true(m(CASE, MT_SIEVE_MATCH_MATCHES, "anything at all", "*"));
	assert_true(m(CASE, MT_SIEVE_MATCH_MATCHES, "", "*"));
	assert_false(m(CASE, MT_SIEVE_MATCH_MATCHES, "", "?"));
	assert_true(m(CASE, MT_SIEVE_MATCH_MATCHES, "[list-a] Hello", "[LIST-*] *"));
	assert_true(m(CASE, MT_SIEVE_MATCH_MATCHES, "abc", "a?c"));
	assert_false(m(CASE, MT_SIEVE_MATCH_MATCHES, "ac", "a?c"));
	assert_true(m(CASE, MT_SIEVE_MATCH_MATCHES, "axxbyyb", "a*b"));
	assert_false(m(CASE, MT_SIEVE_MATCH_MATCHES, "axxbyyc", "a*b"));
	assert_true(m(CASE, MT_SIEVE_MATCH_MATCHES, "aaab", "*a?"));
	assert_true(m(CASE, MT_SIEVE_MATCH_MATCHES, "mississippi", "*sip*"));
	assert_false(m(CASE, MT_SIEVE_MATCH_MATCHES, "mississippi", "*sipx*"));
	/* Escapes: \* and \? are themselves, \\ a backslash. */
	assert_true(m(CASE, MT_SIEVE_MATCH_MATCHES, "a*b", "a\\*b"));
	assert_false(m(CASE, MT_SIEVE_MATCH_MATCHES, "axb", "a\\*b"));
	assert_true(m(CASE, MT_SIEVE_MATCH_MATCHES, "why?", "*\\?"));
	assert_false(m(CASE, MT_SIEVE_MATCH_MATCHES, "why!", "*\\?"));
	assert_true(m(CASE, MT_SIEVE_MATCH_MATCHES, "c:\\dir", "c:\\\\*"));
	assert_true(m(OCTET, MT_SIEVE_MATCH_MATCHES, "ABC", "A*C"));
	assert_false(m(OCTET, MT_SIEVE_MATCH_MATCHES, "ABC", "a*c"));
	/* Many stars over a long value stay bounded. */
	char value[4001];
	memset(value, 'a', 4000);
	value[4000] = '\0';
	assert_false(m(CASE, MT_SIEVE_MATCH_MATCHES, value, "*a*a*a*a*a*a*a*a*b"));
}

static void test_numeric(void **state)
{
	(void)state;
	assert_int_equal(mt_sieve_compare(NUM, "10", 2, "9", 1), 1);
	assert_int_equal(mt_sieve_compare(NUM, "007", 3, "7", 1), 0);
	assert_int_equal(mt_sieve_compare(NUM, "12abc", 5, "12", 2), 0);
	assert_int_equal(mt_sieve_compare(NUM, "abc", 3, "xyz", 3), 0);	/* both infinity */
	assert_int_equal(mt_sieve_compare(NUM, "5", 1, "abc", 3), -1);
	assert_int_equal(mt_sieve_compare(NUM, "", 0, "99999999999999999999", 20), 1);
	assert_true(m(NUM, MT_SIEVE_MATCH_IS, "0042", "42"));
	assert_false(m(NUM, MT_SIEVE_MATCH_CONTAINS, "42", "4"));
	assert_false(m(NUM, MT_SIEVE_MATCH_MATCHES, "42", "*"));
}

static void test_relational(void **state)
{
	(void)state;
	enum mt_sieve_relation rel;
	assert_true(mt_sieve_relation_parse("GE", &rel));
	assert_int_equal(rel, MT_SIEVE_REL_GE);
	assert_false(mt_sieve_relation_parse("gte", &rel));
	assert_true(mt_sieve_match(NUM, MT_SIEVE_MATCH_VALUE, MT_SIEVE_REL_GT, "10", 2, "9", 1));
	assert_false(mt_sieve_match(OCTET, MT_SIEVE_MATCH_VALUE, MT_SIEVE_REL_GT, "10", 2, "9",
				    1));
	assert_true(mt_sieve_match(CASE, MT_SIEVE_MATCH_VALUE, MT_SIEVE_REL_LE, "abc", 3, "ABD",
				   3));
	assert_true(mt_sieve_match(CASE, MT_SIEVE_MATCH_VALUE, MT_SIEVE_REL_NE, "a", 1, "b", 1));
	enum mt_sieve_comparator cmp;
	assert_true(mt_sieve_comparator_parse("I;ASCII-CASEMAP", &cmp));
	assert_int_equal(cmp, CASE);
	assert_false(mt_sieve_comparator_parse("i;unicode-casemap", &cmp));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_contains),
		cmocka_unit_test(test_matches),
		cmocka_unit_test(test_numeric),
		cmocka_unit_test(test_relational),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
