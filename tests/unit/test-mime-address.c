/* test-mime-address.c — unit tests for lib-mail/mime-address.c (RFC 5322
 * address lists as IMAP ENVELOPE address lists): the exact output for
 * names, comments, quoted strings, source routes, domain literals,
 * groups, missing parts, 8-bit and NUL octets and malformed input; the
 * 1000-address bound; and, for every one- and two-octet value and 20000
 * pseudo-random ones, that the output is NIL or a well-formed list with
 * balanced groups (read by a small checker of RFC 9051's address
 * grammar). Each input is copied to a buffer of exactly its length, so
 * that ASan sees any read past it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "imap-write.h"
#include "mime-address.h"

/* Write value (in a buffer of exactly len octets) after a prefix that
 * must be kept; the output without the prefix into out. */
static void write_exact(struct mt_buf *out, const void *value, size_t len,
			unsigned int flags)
{
	char *copy = malloc(len > 0 ? len : 1);
	assert_non_null(copy);
	if (len > 0)
		memcpy(copy, value, len);
	struct mt_buf buf = MT_BUF_INIT;
	mt_buf_append_str(&buf, "* ");
	mt_mime_write_addresses(&buf, copy, len, flags);
	free(copy);
	assert_true(buf.len >= 2);
	assert_memory_equal(buf.data, "* ", 2);
	mt_buf_reset(out);
	mt_buf_append(out, buf.data + 2, buf.len - 2);
	mt_buf_free(&buf);
}

static void expect(const char *v, size_t len, unsigned int flags,
		   const char *want, size_t want_len)
{
	struct mt_buf out = MT_BUF_INIT;
	write_exact(&out, v, len, flags);
	if (out.len != want_len || memcmp(out.data, want, want_len) != 0)
		fail_msg("[%.*s]: wrote [%.*s], want [%.*s]", (int)len, v,
			 (int)out.len, out.data, (int)want_len, want);
	mt_buf_free(&out);
}
#define EXPECT_FLAGS(v, flags, want) \
	expect(v, sizeof(v) - 1, flags, want, sizeof(want) - 1)
#define EXPECT(v, want) EXPECT_FLAGS(v, 0, want)

/* --- a checker of the output's grammar --- */

struct checker {
	const unsigned char *p, *end;
	unsigned int flags;
};

static bool take(struct checker *c, const char *s)
{
	size_t n = strlen(s);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
		return false;
	c->p += n;
	return true;
}

/* quoted = DQUOTE *QUOTED-CHAR DQUOTE (8-bit only with UTF8). */
static bool check_quoted(struct checker *c)
{
	if (!take(c, "\""))
		return false;
	while (c->p < c->end) {
		unsigned char ch = *c->p++;
		if (ch == '"')
			return true;
		if (ch == '\\') {
			if (c->p == c->end || (*c->p != '"' && *c->p != '\\'))
				return false;
			c->p++;
		} else if (ch == 0 || ch == '\r' || ch == '\n' ||
			   (ch >= 0x80 && (c->flags & MT_IMAP_WRITE_UTF8) == 0)) {
			return false;
		}
	}
	return false;
}

/* literal = "{" number "}" CRLF *CHAR8, or literal8 with "~". */
static bool check_literal(struct checker *c)
{
	bool binary = take(c, "~");
	if (binary && (c->flags & MT_IMAP_WRITE_BINARY) == 0)
		return false;
	if (!take(c, "{"))
		return false;
	size_t n = 0;
	const unsigned char *digits = c->p;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		n = n * 10 + (size_t)(*c->p++ - '0');
		if (n > 10000000)
			return false;
	}
	if (c->p == digits || !take(c, "}\r\n") || (size_t)(c->end - c->p) < n)
		return false;
	if (!binary && memchr(c->p, 0, n) != NULL)
		return false;
	c->p += n;
	return true;
}

/* nstring; *nil_r whether it was NIL. */
static bool check_nstring(struct checker *c, bool *nil_r)
{
	*nil_r = take(c, "NIL");
	if (*nil_r)
		return true;
	if (c->p < c->end && *c->p == '"')
		return check_quoted(c);
	return check_literal(c);
}

/* The whole output: NIL, or "(" 1*address ")" with address = "(" nstring
 * SP nstring SP nstring SP nstring ")", group markers balanced and never
 * nested, every other address with a non-NIL mailbox and host. Returns
 * the number of address structures, -1 when malformed. */
static int check_output(const struct mt_buf *out, unsigned int flags)
{
	struct checker c = { (const unsigned char *)out->data,
			     (const unsigned char *)out->data + out->len, flags };
	if (take(&c, "NIL"))
		return c.p == c.end ? 0 : -1;
	if (!take(&c, "("))
		return -1;
	int count = 0;
	bool in_group = false;
	while (take(&c, "(")) {
		bool nil[4];
		for (int i = 0; i < 4; i++) {
			if ((i > 0 && !take(&c, " ")) || !check_nstring(&c, &nil[i]))
				return -1;
		}
		if (!take(&c, ")"))
			return -1;
		if (nil[3]) {
			/* A group marker: start (mailbox = name) or end. */
			if (!nil[0] || !nil[1] || nil[2] == !in_group)
				return -1;
			in_group = !in_group;
		} else if (nil[2]) {
			return -1;
		}
		count++;
	}
	if (count == 0 || in_group || !take(&c, ")") || c.p != c.end)
		return -1;
	return count;
}

static int check_value(const void *v, size_t len, unsigned int flags)
{
	struct mt_buf out = MT_BUF_INIT;
	write_exact(&out, v, len, flags);
	int count = check_output(&out, flags);
	if (count < 0 || count > MT_MIME_ADDRESSES_MAX) {
		struct mt_buf hex = MT_BUF_INIT;
		for (size_t i = 0; i < len; i++)
			mt_buf_appendf(&hex, "%02x", ((const unsigned char *)v)[i]);
		fail_msg("input %s (flags %u): malformed output [%s]",
			 mt_buf_cstr(&hex), flags, mt_buf_cstr(&out));
	}
	mt_buf_free(&out);
	return count;
}

static int check_text(const char *text, size_t len, unsigned int flags)
{
	struct mt_buf out = MT_BUF_INIT;
	mt_buf_append(&out, text, len);
	int count = check_output(&out, flags);
	mt_buf_free(&out);
	return count;
}
#define CHECK(text, flags) check_text(text, sizeof(text) - 1, flags)

/* The checker itself: it must tell broken output from good. */
static void test_checker(void **state)
{
	(void)state;
	assert_int_equal(CHECK("NIL", 0), 0);
	assert_int_equal(CHECK("((NIL NIL \"a\" \"b\"))", 0), 1);
	assert_int_equal(CHECK("((NIL NIL \"G\" NIL)(NIL NIL NIL NIL))", 0), 2);
	assert_int_equal(CHECK("(({1}\r\n\" NIL \"a\\\"\" \"\"))", 0), 1);
	assert_int_equal(CHECK("((NIL NIL ~{1}\r\n\0 \"b\"))", 2), 1);
	static const char *const bad[] = {
		"", "()", "NIL ", "(NIL)", "((NIL NIL \"a\" \"b\")",
		"((NIL NIL \"a\" \"b\") )", "((NIL NIL \"a\"  \"b\"))",
		"((NIL NIL \"a\" \"b\" NIL))", "((NIL NIL \"a\\\" \"b\"))",
		"((NIL NIL \"a\" \"b))", "((NIL NIL {2}\r\na \"b\"))",
		"((NIL NIL {1}\r\n\"b\"))", "((NIL NIL a \"b\"))",
		"((NIL NIL \"\xe9\" \"b\"))", "((NIL NIL NIL \"b\"))",
		"((NIL NIL NIL NIL))", "((NIL NIL \"G\" NIL))",
		"((NIL NIL \"G\" NIL)(NIL NIL \"H\" NIL)(NIL NIL NIL NIL))",
		"((\"x\" NIL \"G\" NIL)(NIL NIL NIL NIL))",
		"((NIL NIL ~{1}\r\nx \"b\"))",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (check_text(bad[i], strlen(bad[i]), 0) >= 0)
			fail_msg("checker took [%s]", bad[i]);
	assert_true(CHECK("((NIL NIL {1}\r\n\0 \"b\"))", 0) < 0);
}

/* --- exact output --- */

static void test_simple(void **state)
{
	(void)state;
	EXPECT("john@example.com", "((NIL NIL \"john\" \"example.com\"))");
	EXPECT("  john@example.com  ", "((NIL NIL \"john\" \"example.com\"))");
	EXPECT("Joe Q. Public <john.q.public@example.com>",
	       "((\"Joe Q. Public\" NIL \"john.q.public\" \"example.com\"))");
	EXPECT("<j@x>", "((NIL NIL \"j\" \"x\"))");
	EXPECT("\"\" <j@x>", "((NIL NIL \"j\" \"x\"))");
	/* obs-local-part and obs-domain: CFWS around the dots. */
	EXPECT("john . q @ example . com",
	       "((NIL NIL \"john.q\" \"example.com\"))");
}

static void test_quoted_names(void **state)
{
	(void)state;
	EXPECT("\"Joe Q. Public\" <john.q.public@example.com>",
	       "((\"Joe Q. Public\" NIL \"john.q.public\" \"example.com\"))");
	EXPECT("\"Joe \\\"Q\\\" Public\" <j@x>",
	       "((\"Joe \\\"Q\\\" Public\" NIL \"j\" \"x\"))");
	EXPECT("\"a\\\\b\\c\" <j@x>", "((\"a\\\\bc\" NIL \"j\" \"x\"))");
	EXPECT("\"Public,\"   Joe <j@x>", "((\"Public, Joe\" NIL \"j\" \"x\"))");
	EXPECT("\"Joe\"Public <j@x>", "((\"JoePublic\" NIL \"j\" \"x\"))");
	/* Whitespace runs (stray CR/LF too) between words are one space;
	 * inside a quoted string they are kept. */
	EXPECT("Joe \t  Q \r\n Public <j@x>", "((\"Joe Q Public\" NIL \"j\" \"x\"))");
	EXPECT("\"Joe  Q\" <j@x>", "((\"Joe  Q\" NIL \"j\" \"x\"))");
}

static void test_comments(void **state)
{
	(void)state;
	/* Without a phrase, a comment in or after an addr-spec names it. */
	EXPECT("user@host (Joe)", "((\"Joe\" NIL \"user\" \"host\"))");
	EXPECT("user@host ( Joe \t Public )",
	       "((\"Joe Public\" NIL \"user\" \"host\"))");
	EXPECT("user@host (Joe \\(x\\) (nested \\) one) )",
	       "((\"Joe (x) (nested ) one)\" NIL \"user\" \"host\"))");
	EXPECT("user@host (first) (second)", "((\"second\" NIL \"user\" \"host\"))");
	EXPECT("user@host ()", "((NIL NIL \"user\" \"host\"))");
	EXPECT("user (Joe)", "((\"Joe\" NIL \"user\" \"\"))");
	/* Elsewhere they are dropped. */
	EXPECT("(lead) user@host", "((NIL NIL \"user\" \"host\"))");
	EXPECT("Joe (comment) <j@x> (after)", "((\"Joe\" NIL \"j\" \"x\"))");
	EXPECT("Joe(c)Public <j(c)@(c)x>", "((\"Joe Public\" NIL \"j\" \"x\"))");
	EXPECT("<j@x> (not a name)", "((NIL NIL \"j\" \"x\"))");
	EXPECT("Joe (a, b; c: <d@e>) <j@x>", "((\"Joe\" NIL \"j\" \"x\"))");
	/* RFC 5322 A.5 */
	EXPECT("Pete(A nice \\) chap) <pete(his account)@silly.test(his host)>",
	       "((\"Pete\" NIL \"pete\" \"silly.test\"))");
	EXPECT("A Group(Some people):Chris Jones <c@(Chris's host.)public.example>,"
	       " joe@example.org, John <jdoe@one.test> (my dear friend);"
	       " (the end of the group)",
	       "((NIL NIL \"A Group\" NIL)(\"Chris Jones\" NIL \"c\" \"public.example\")"
	       "(NIL NIL \"joe\" \"example.org\")(\"John\" NIL \"jdoe\" \"one.test\")"
	       "(NIL NIL NIL NIL))");
	EXPECT("(Empty list)(start)Hidden recipients  :(nobody(that I know))  ;",
	       "((NIL NIL \"Hidden recipients\" NIL)(NIL NIL NIL NIL))");
}

static void test_several(void **state)
{
	(void)state;
	EXPECT("\"Joe Q. Public\" <john.q.public@example.com>, Mary <mary@x.test>",
	       "((\"Joe Q. Public\" NIL \"john.q.public\" \"example.com\")"
	       "(\"Mary\" NIL \"mary\" \"x.test\"))");
	EXPECT("a@b,c@d , e@f", "((NIL NIL \"a\" \"b\")(NIL NIL \"c\" \"d\")"
	       "(NIL NIL \"e\" \"f\"))");
	/* Empty items are skipped. */
	EXPECT(",a@b,, ,c@d,", "((NIL NIL \"a\" \"b\")(NIL NIL \"c\" \"d\"))");
	/* The output is appended to what the buffer holds (write_exact
	 * checks the prefix on every call). */
}

static void test_groups(void **state)
{
	(void)state;
	/* RFC 5322 A.1.3 */
	EXPECT("A Group:Ed Jones <c@a.test>,joe@where.test,John <jdoe@one.test>;",
	       "((NIL NIL \"A Group\" NIL)(\"Ed Jones\" NIL \"c\" \"a.test\")"
	       "(NIL NIL \"joe\" \"where.test\")(\"John\" NIL \"jdoe\" \"one.test\")"
	       "(NIL NIL NIL NIL))");
	EXPECT("undisclosed-recipients:;",
	       "((NIL NIL \"undisclosed-recipients\" NIL)(NIL NIL NIL NIL))");
	EXPECT("Undisclosed recipients: ;",
	       "((NIL NIL \"Undisclosed recipients\" NIL)(NIL NIL NIL NIL))");
	EXPECT("Friends: a@x, b@y;",
	       "((NIL NIL \"Friends\" NIL)(NIL NIL \"a\" \"x\")(NIL NIL \"b\" \"y\")"
	       "(NIL NIL NIL NIL))");
	EXPECT("A: a@x;, B: b@y;",
	       "((NIL NIL \"A\" NIL)(NIL NIL \"a\" \"x\")(NIL NIL NIL NIL)"
	       "(NIL NIL \"B\" NIL)(NIL NIL \"b\" \"y\")(NIL NIL NIL NIL))");
	EXPECT("G:;c@z", "((NIL NIL \"G\" NIL)(NIL NIL NIL NIL)(NIL NIL \"c\" \"z\"))");
	EXPECT("a@b, G: c@d", "((NIL NIL \"a\" \"b\")(NIL NIL \"G\" NIL)"
	       "(NIL NIL \"c\" \"d\")(NIL NIL NIL NIL))");
	/* Unterminated, and no nested groups. */
	EXPECT("Friends: a@x, b@y",
	       "((NIL NIL \"Friends\" NIL)(NIL NIL \"a\" \"x\")(NIL NIL \"b\" \"y\")"
	       "(NIL NIL NIL NIL))");
	EXPECT("G: H: a@b;", "((NIL NIL \"G\" NIL)(NIL NIL \"H\" \"\")"
	       "(NIL NIL \"a\" \"b\")(NIL NIL NIL NIL))");
	EXPECT("\"Q G\": a@b;", "((NIL NIL \"Q G\" NIL)(NIL NIL \"a\" \"b\")"
	       "(NIL NIL NIL NIL))");
	/* A stray ';' outside a group is a separator. */
	EXPECT("a@b; c@d", "((NIL NIL \"a\" \"b\")(NIL NIL \"c\" \"d\"))");
}

static void test_route_literal_local(void **state)
{
	(void)state;
	EXPECT("Joe <@a,@b:user@host>", "((\"Joe\" \"@a,@b\" \"user\" \"host\"))");
	EXPECT("< @a , ,@b.c : user@host >",
	       "((NIL \"@a,@b.c\" \"user\" \"host\"))");
	/* Not a route without its ':'. */
	EXPECT("<@host>", "((NIL NIL \"\" \"host\"))");
	EXPECT("user@[1.2.3.4]", "((NIL NIL \"user\" \"[1.2.3.4]\"))");
	EXPECT("Joe <user@[IPv6:2001:db8::1]>",
	       "((\"Joe\" NIL \"user\" \"[IPv6:2001:db8::1]\"))");
	EXPECT("\"a b\"@x", "((NIL NIL \"\\\"a b\\\"\" \"x\"))");
	EXPECT("<\"a\\\"b\"@x>", "((NIL NIL \"\\\"a\\\\\\\"b\\\"\" \"x\"))");
	/* Encoded-words are kept raw. */
	EXPECT("=?utf-8?q?J=C3=B6rg?= <j@x>",
	       "((\"=?utf-8?q?J=C3=B6rg?=\" NIL \"j\" \"x\"))");
	EXPECT("=?ISO-8859-1?Q?a?= =?ISO-8859-1?Q?b?= <j@x>",
	       "((\"=?ISO-8859-1?Q?a?= =?ISO-8859-1?Q?b?=\" NIL \"j\" \"x\"))");
}

static void test_missing_parts(void **state)
{
	(void)state;
	/* "" rather than NIL: a NIL host would be a group marker. */
	EXPECT("undisclosed-recipients", "((NIL NIL \"undisclosed-recipients\" \"\"))");
	EXPECT("<user>", "((NIL NIL \"user\" \"\"))");
	EXPECT("Joe <user>", "((\"Joe\" NIL \"user\" \"\"))");
	EXPECT("user@", "((NIL NIL \"user\" \"\"))");
	EXPECT("@x", "((NIL NIL \"\" \"x\"))");
	EXPECT("@", "((NIL NIL \"\" \"\"))");
	EXPECT("<>", "((NIL NIL \"\" \"\"))");
}

static void test_no_address(void **state)
{
	(void)state;
	EXPECT("", "NIL");
	EXPECT(" \t\r\n ", "NIL");
	EXPECT(",,, ,", "NIL");
	EXPECT(";", "NIL");
	EXPECT("(only a comment)", "NIL");
	EXPECT("(unclosed, comment", "NIL");
	EXPECT(")]\\>", "NIL");
}

static void test_8bit_nul(void **state)
{
	(void)state;
	EXPECT("J\xe9r\xf4me <j@x>", "(({6}\r\nJ\xe9r\xf4me NIL \"j\" \"x\"))");
	EXPECT("J\xc3\xa9r\xc3\xb4me <j@x>",
	       "(({8}\r\nJ\xc3\xa9r\xc3\xb4me NIL \"j\" \"x\"))");
	EXPECT_FLAGS("J\xc3\xa9r\xc3\xb4me <j@x>", MT_IMAP_WRITE_UTF8,
		     "((\"J\xc3\xa9r\xc3\xb4me\" NIL \"j\" \"x\"))");
	EXPECT("a\0b@x", "((NIL NIL {3}\r\na\x80" "b \"x\"))");
	EXPECT_FLAGS("a\0b@x", MT_IMAP_WRITE_BINARY,
		     "((NIL NIL ~{3}\r\na\0b \"x\"))");
	/* CR/LF kept in a quoted string: a literal. */
	EXPECT("\"a\r\nb\" <j@x>", "(({4}\r\na\r\nb NIL \"j\" \"x\"))");
}

static void test_malformed(void **state)
{
	(void)state;
	/* An unclosed quoted string runs to the end. */
	EXPECT("\"Joe <j@x>", "((NIL NIL \"\\\"Joe <j@x>\" \"\"))");
	EXPECT("\"Joe\\", "((NIL NIL \"\\\"Joe\\\\\" \"\"))");
	/* An unclosed comment too. */
	EXPECT("j@x (Joe", "((\"Joe\" NIL \"j\" \"x\"))");
	EXPECT("j@x (Joe (deeper", "((\"Joe (deeper\" NIL \"j\" \"x\"))");
	/* An unclosed angle-addr ends with its item. */
	EXPECT("Joe <j@x", "((\"Joe\" NIL \"j\" \"x\"))");
	EXPECT("Joe <j@x, m@y", "((\"Joe\" NIL \"j\" \"x\")(NIL NIL \"m\" \"y\"))");
	EXPECT("<<j@x>>", "((NIL NIL \"\" \"\"))");
	/* Stray closers are dropped; junk after an address is skipped. */
	EXPECT("j@x>", "((NIL NIL \"j\" \"x\"))");
	EXPECT("> j@x", "((NIL NIL \"j\" \"x\"))");
	EXPECT("j@x junk <k@y>, m@z",
	       "((NIL NIL \"j\" \"x\")(NIL NIL \"m\" \"z\"))");
	EXPECT("user@[1.2.3", "((NIL NIL \"user\" \"[1.2.3\"))");
	EXPECT("<@a,@b>", "((NIL NIL \"\" \"a\")(NIL NIL \"\" \"b\"))");
}

/* 100 KB of "a@b,": bounded to MT_MIME_ADDRESSES_MAX, still valid. */
static void test_long_input(void **state)
{
	(void)state;
	size_t len = 100 * 1024;
	char *v = malloc(len);
	assert_non_null(v);
	for (size_t i = 0; i < len; i++)
		v[i] = "a@b,"[i % 4];
	assert_int_equal(check_value(v, len, 0), MT_MIME_ADDRESSES_MAX);
	/* A group left open at the limit still ends. */
	memcpy(v, "G:", 2);
	assert_int_equal(check_value(v, len, 0), MT_MIME_ADDRESSES_MAX);
	/* Groups only: "G:;" repeated. */
	for (size_t i = 0; i < len; i++)
		v[i] = "G:;"[i % 3];
	assert_int_equal(check_value(v, len, 0), MT_MIME_ADDRESSES_MAX);
	/* One huge name and nested comments, unclosed. */
	memset(v, 'x', len);
	v[0] = '"';
	assert_int_equal(check_value(v, len, 0), 1);
	memset(v, '(', len);
	assert_int_equal(check_value(v, len, 0), 0);
	/* An angle-addr left open takes the rest. */
	memset(v, '<', len);
	assert_int_equal(check_value(v, len, 0), 1);
	free(v);
}

/* --- well-formed whatever the input --- */

static void test_every_short_value(void **state)
{
	(void)state;
	for (unsigned int a = 0; a < 256; a++) {
		unsigned char v[2] = { (unsigned char)a, 0 };
		for (unsigned int flags = 0; flags < 4; flags++)
			(void)check_value(v, 1, flags);
		for (unsigned int b = 0; b < 256; b++) {
			v[1] = (unsigned char)b;
			(void)check_value(v, 2, 0);
		}
	}
}

static uint32_t next_random(uint32_t *s)
{
	/* xorshift32: deterministic, so a failure is reproducible. */
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void test_random_values(void **state)
{
	(void)state;
	static const unsigned char alphabet[] = "\"<>@,;:()\\ .[]a\0\xe9\r\n\tb=?";
	uint32_t seed = 0x5eed1234u;
	unsigned char v[64];
	for (int n = 0; n < 20000; n++) {
		size_t len = next_random(&seed) % (sizeof(v) + 1);
		for (size_t i = 0; i < len; i++)
			v[i] = alphabet[next_random(&seed) % (sizeof(alphabet) - 1)];
		(void)check_value(v, len, (unsigned int)n & 3u);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checker),
		cmocka_unit_test(test_simple),
		cmocka_unit_test(test_quoted_names),
		cmocka_unit_test(test_comments),
		cmocka_unit_test(test_several),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_route_literal_local),
		cmocka_unit_test(test_missing_parts),
		cmocka_unit_test(test_no_address),
		cmocka_unit_test(test_8bit_nul),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_long_input),
		cmocka_unit_test(test_every_short_value),
		cmocka_unit_test(test_random_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
