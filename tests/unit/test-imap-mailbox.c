/* test-imap-mailbox.c — unit tests for lib-mail/imap-mailbox.c: which
 * mailbox names a client may use and their normal form (INBOX in any
 * case), the limits, LIST's reference joined to its pattern, and the
 * wildcards '*' and '%' (RFC 9051 5.1, 6.3.9 and its examples), including
 * a pattern that would make a backtracking matcher take exponential time. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "imap-mailbox.h"

static const struct mt_imap_name_limits limits = { .length_max = 40, .depth_max = 3 };

static void name_ok(const char *name, const char *normal)
{
	struct mt_buf out = MT_BUF_INIT;
	const char *error = NULL;
	if (!mt_imap_name_check(&out, name, strlen(name), &limits, &error))
		fail_msg("%s refused: %s", name, error);
	assert_string_equal(mt_buf_cstr(&out), normal);
	mt_buf_free(&out);
}

static void name_refused(const char *name, size_t len, const char *why)
{
	struct mt_buf out = MT_BUF_INIT;
	const char *error = NULL;
	if (mt_imap_name_check(&out, name, len, &limits, &error))
		fail_msg("%s accepted as %s", name, mt_buf_cstr(&out));
	assert_non_null(strstr(error, why));
	assert_int_equal(out.len, 0);
	mt_buf_free(&out);
}
#define REFUSED(name, why) name_refused(name, sizeof(name) - 1, why)

static void test_names(void **state)
{
	(void)state;
	name_ok("INBOX", "INBOX");
	name_ok("inbox", "INBOX");
	name_ok("InBoX/Sub", "INBOX/Sub");
	name_ok("Inboxes", "Inboxes");
	name_ok("Sent", "Sent");
	name_ok("a/b/c", "a/b/c");
	name_ok("Entw\xc3\xbc" "rfe", "Entw\xc3\xbc" "rfe");
	name_ok("[Gmail]/All Mail", "[Gmail]/All Mail");
	name_ok("Tom & Jerry", "Tom & Jerry");
	assert_true(mt_imap_name_is_inbox("iNbOx", 5));
	assert_false(mt_imap_name_is_inbox("INBOX/a", 7));
	assert_false(mt_imap_name_is_inbox("INBOXa", 6));

	REFUSED("", "empty");
	REFUSED("/a", "empty level");
	REFUSED("a/", "empty level");
	REFUSED("a//b", "empty level");
	REFUSED("a/b/c/d", "too deep");
	REFUSED("0123456789012345678901234567890123456789x", "too long");
	REFUSED("a%", "wildcard");
	REFUSED("*", "wildcard");
	REFUSED("a\tb", "control");
	REFUSED("a\rb", "control");
	REFUSED("a\0b", "control");
	REFUSED("a\x7f", "control");
	REFUSED("caf\xe9", "UTF-8");
	REFUSED("\xed\xa0\x80", "UTF-8");
	REFUSED("\xc0\xaf", "UTF-8");
}

static void join_is(const char *ref, const char *pattern, const char *want)
{
	struct mt_buf out = MT_BUF_INIT;
	assert_true(mt_imap_pattern_join(&out, ref, strlen(ref), pattern,
					 strlen(pattern)));
	assert_string_equal(mt_buf_cstr(&out), want);
	mt_buf_free(&out);
}

static void test_join(void **state)
{
	(void)state;
	join_is("", "*", "*");
	join_is("Archive/", "%", "Archive/%");
	join_is("Archive", "/x", "/x");
	join_is("", "inbox", "INBOX");
	join_is("inBox/", "%", "INBOX/%");
	join_is("", "inboxes", "inboxes");
	char big[MT_IMAP_PATTERN_MAX + 1];
	memset(big, '%', sizeof(big));
	struct mt_buf out = MT_BUF_INIT;
	assert_false(mt_imap_pattern_join(&out, "a", 1, big, MT_IMAP_PATTERN_MAX));
	assert_true(mt_imap_pattern_join(&out, "", 0, big, MT_IMAP_PATTERN_MAX));
	assert_false(mt_imap_pattern_match(big, sizeof(big), "a", 1));
	mt_buf_free(&out);
}

static bool match(const char *pattern, const char *name)
{
	return mt_imap_pattern_match(pattern, strlen(pattern), name, strlen(name));
}

static void test_match(void **state)
{
	(void)state;
	assert_true(match("*", "INBOX"));
	assert_true(match("*", "a/b/c"));
	assert_true(match("%", "Sent"));
	assert_false(match("%", "a/b"));
	assert_true(match("%/%", "a/b"));
	assert_false(match("%/%", "a/b/c"));
	assert_true(match("a/*", "a/b/c"));
	assert_false(match("a/*", "a"));
	assert_true(match("a*", "a"));
	assert_true(match("a%", "abc"));
	assert_false(match("a%", "ab/c"));
	assert_true(match("INBOX", "INBOX"));
	assert_false(match("INBOX", "INBOX/x"));
	assert_true(match("", ""));
	assert_false(match("", "a"));
	assert_true(match("%%", "x"));
	assert_true(match("*b*", "aaabaaa"));
	assert_false(match("*b*", "aaaaaaa"));
	/* RFC 9051 6.3.9: "foo*" matches "foo", "foobar" and "foo/bar";
	 * "foo%" matches "foo" and "foobar" but not "foo/bar". */
	assert_true(match("foo*", "foo"));
	assert_true(match("foo*", "foobar"));
	assert_true(match("foo*", "foo/bar"));
	assert_true(match("foo%", "foobar"));
	assert_false(match("foo%", "foo/bar"));
	/* Case matters outside INBOX (the joined pattern's INBOX is upper). */
	assert_false(match("sent", "Sent"));
	/* "*a*a*a...*b" against "aaaa...": exponential for a backtracking
	 * matcher, linear in each here. */
	char pattern[2 * 200 + 2], name[256];
	for (int i = 0; i < 200; i++) {
		pattern[2 * i] = i % 2 ? '%' : '*';
		pattern[2 * i + 1] = 'a';
	}
	pattern[400] = 'b';
	pattern[401] = '\0';
	memset(name, 'a', sizeof(name) - 1);
	name[255] = '\0';
	assert_false(match(pattern, name));	/* no b */
	name[199] = 'b';
	name[200] = '\0';
	assert_false(match(pattern, name));	/* 200 a's wanted, 199 there */
	name[199] = 'a';
	name[200] = 'b';
	name[201] = '\0';
	assert_true(match(pattern, name));	/* 200 */
	memset(name, 'a', sizeof(name) - 1);
	name[254] = 'b';
	assert_true(match(pattern, name));	/* 254 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_match),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
