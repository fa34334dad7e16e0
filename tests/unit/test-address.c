/* test-address.c — unit tests for lib/address.c: valid paths and their
 * normal forms, every class of bad address with its reason, length limits
 * at the boundary, UTF-8 under SMTPUTF8, ESMTP parameters, every prefix of
 * every case parsed from an exact-size heap copy (so ASan sees any read past
 * the end), and a random round trip: a parsed address re-parses to itself. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "buf.h"

#define NUL_ MT_ADDR_ALLOW_NULL
#define PM MT_ADDR_ALLOW_POSTMASTER
#define LEN MT_ADDR_LENIENT
#define U8 MT_ADDR_SMTPUTF8

struct addr_case {
	const char *input;
	size_t len;		/* 0: strlen(input) */
	unsigned int flags;
	const char *addr;	/* expected normal form, NULL if rejected */
	const char *local, *domain;
	const char *error;	/* expected reason when rejected */
};

#define OK(in, fl, a, l, d) { in, 0, fl, a, l, d, NULL }
#define BAD(in, fl, e) { in, 0, fl, NULL, NULL, NULL, e }

static const struct addr_case cases[] = {
	OK("<user@example.com>", 0, "user@example.com", "user",
	   "example.com"),
	OK("<User.Name@Example.COM>", 0, "User.Name@example.com", "User.Name",
	   "example.com"),
	OK("<>", NUL_, "", "", ""),
	OK("<a.b+tag@x>", 0, "a.b+tag@x", "a.b+tag", "x"),
	OK("<!#$%&'*+-/=?^_`{|}~@x>", 0, "!#$%&'*+-/=?^_`{|}~@x",
	   "!#$%&'*+-/=?^_`{|}~", "x"),
	OK("<@a.example,@b.example:user@d.example>", 0, "user@d.example",
	   "user", "d.example"),
	OK("<@a:u@d>", 0, "u@d", "u", "d"),
	OK("<\"john.doe\"@x>", 0, "john.doe@x", "john.doe", "x"),
	OK("<\"john doe\"@x>", 0, "\"john doe\"@x", "\"john doe\"", "x"),
	OK("<\"a\\\"b\"@x>", 0, "\"a\\\"b\"@x", "\"a\\\"b\"", "x"),
	OK("<\"\\a\\b\"@x>", 0, "ab@x", "ab", "x"),
	OK("<\"a\\\\b\"@x>", 0, "\"a\\\\b\"@x", "\"a\\\\b\"", "x"),
	OK("<\"\"@x>", 0, "\"\"@x", "\"\"", "x"),
	OK("<\"a..b\"@x>", 0, "\"a..b\"@x", "\"a..b\"", "x"),
	OK("<\"a@b\"@x>", 0, "\"a@b\"@x", "\"a@b\"", "x"),
	OK("<a@1.2.3.4>", 0, "a@1.2.3.4", "a", "1.2.3.4"),
	OK("<a@[1.2.3.4]>", 0, "a@[1.2.3.4]", "a", "[1.2.3.4]"),
	OK("<a@[IPv6:2001:DB8::1]>", 0, "a@[IPv6:2001:db8::1]", "a",
	   "[IPv6:2001:db8::1]"),
	OK("<a@[ipv6:::ffff:1.2.3.4]>", 0, "a@[IPv6:::ffff:1.2.3.4]", "a",
	   "[IPv6:::ffff:1.2.3.4]"),
	OK("<a@x-y.z0>", 0, "a@x-y.z0", "a", "x-y.z0"),
	OK("<Postmaster>", PM, "postmaster", "postmaster", ""),
	OK("<POSTMASTER>", PM, "postmaster", "postmaster", ""),
	OK("<postmaster@X>", PM, "postmaster@x", "postmaster", "x"),
	OK("a@B", LEN, "a@b", "a", "b"),
	OK("  <a@b>", LEN, "a@b", "a", "b"),
	OK("<a@b>  ", 0, "a@b", "a", "b"),
	OK("<\xe7\x94\xa8\xe6\x88\xb7@\xe4\xbe\x8b.\xe5\xb9\xbf>", U8,
	   "\xe7\x94\xa8\xe6\x88\xb7@\xe4\xbe\x8b.\xe5\xb9\xbf",
	   "\xe7\x94\xa8\xe6\x88\xb7", "\xe4\xbe\x8b.\xe5\xb9\xbf"),
	OK("<J\xc3\xb6rg@B\xc3\xbc" "cher.DE>", U8, "J\xc3\xb6rg@b\xc3\xbc"
	   "cher.de", "J\xc3\xb6rg", "b\xc3\xbc" "cher.de"),
	OK("<\"\xc3\xa9 x\"@b>", U8, "\"\xc3\xa9 x\"@b", "\"\xc3\xa9 x\"",
	   "b"),

	BAD("<>", 0, "null address <> not allowed here"),
	BAD("", 0, "empty address"),
	BAD("<", 0, "unexpected end of address"),
	BAD("a@b", 0, "address must be enclosed in <>"),
	BAD(" <a@b>", 0, "address must be enclosed in <>"),
	BAD("<a@b", 0, "missing > after address"),
	BAD("<a@b>x", 0, "unexpected text after address"),
	BAD("<a@b>>", 0, "unexpected text after address"),
	BAD("<ab>", 0, "missing @ in address"),
	BAD("<Postmaster>", 0, "missing @ in address"),
	BAD("<a@>", 0, "empty domain"),
	BAD("<@b>", 0, "empty local part"),
	BAD("@b", LEN, "empty local part"),
	BAD("<@a;b@c>", 0, "invalid source route"),
	BAD("<@a,b@c>", 0, "invalid source route"),
	BAD("<.a@b>", 0, "local part starts with a dot"),
	BAD("<a.@b>", 0, "local part ends with a dot"),
	BAD("<a..b@c>", 0, "consecutive dots in local part"),
	BAD("<a@.b>", 0, "domain starts with a dot"),
	BAD("<a@b.>", 0, "domain ends with a dot"),
	BAD("<a@b..c>", 0, "consecutive dots in domain"),
	BAD("<a@-b.c>", 0, "domain label starts with a hyphen"),
	BAD("<a@b-.c>", 0, "domain label ends with a hyphen"),
	BAD("<a@b->", 0, "domain label ends with a hyphen"),
	BAD("<a@b_c>", 0, "invalid character in domain"),
	BAD("<a(b)@c>", 0, "invalid character in local part"),
	BAD("<a b@c>", 0, "space in address"),
	BAD("<a@b c>", 0, "space in address"),
	BAD("< a@b>", 0, "space in address"),
	BAD("<a\r@b>", 0, "CR or LF in address"),
	BAD("<a@b\n>", 0, "CR or LF in address"),
	{ "<a\0@b>", 6, 0, NULL, NULL, NULL, "NUL in address" },
	{ "<\"a\0\"@b>", 8, 0, NULL, NULL, NULL, "NUL in address" },
	BAD("<a\x01@b>", 0, "control character in address"),
	BAD("<a\x7f@b>", 0, "control character in address"),
	BAD("<\"a\tb\"@c>", 0, "control character in address"),
	BAD("<\"a@b>", 0, "unterminated quoted local part"),
	BAD("<\"a\\", 0, "unterminated quoted local part"),
	BAD("<a@[1.2.3]>", 0, "invalid IPv4 address literal"),
	BAD("<a@[1.2.3.256]>", 0, "invalid IPv4 address literal"),
	BAD("<a@[01.2.3.4]>", 0, "invalid IPv4 address literal"),
	BAD("<a@[IPv6:1::2::3]>", 0, "invalid IPv6 address literal"),
	BAD("<a@[IPv6:fe80::1%eth0]>", 0, "invalid IPv6 address literal"),
	BAD("<a@[x:y]>", 0, "unsupported address literal (IPv4 or IPv6 only)"),
	BAD("<a@[1.2.3.4>", 0, "unterminated address literal"),
	BAD("<a@[1.2 .3.4]>", 0, "space in address"),
	BAD("<a@[11111111112222222222333333333344444444445555555555"
	    "66666666667777777777]>", 0, "address literal too long"),
	BAD("<a@b\xff>", 0, "8-bit character without SMTPUTF8"),
	BAD("<a\xc3\xa9@b>", 0, "8-bit character without SMTPUTF8"),
	BAD("<\"\xc3\xa9\"@b>", 0, "8-bit character without SMTPUTF8"),
	BAD("<a\xc3\x28@b>", U8, "invalid or misplaced UTF-8"),
	BAD("<a\xc0\xaf@b>", U8, "invalid or misplaced UTF-8"),
	BAD("<a\xed\xa0\x80@b>", U8, "invalid or misplaced UTF-8"),
	BAD("<a\xf4\x90\x80\x80@b>", U8, "invalid or misplaced UTF-8"),
	BAD("<a@b\xe4\xbd", U8, "invalid or misplaced UTF-8"),
	BAD("<a@b> SIZE=1", 0, "unexpected text after address"),
};

static void check_case(const struct addr_case *c)
{
	size_t len = c->len ? c->len : strlen(c->input);
	struct mt_address a;
	const char *error = NULL;
	bool ok = mt_address_parse(c->input, len, c->flags, &a, NULL, &error);

	if (c->addr != NULL) {
		if (!ok)
			fail_msg("'%s': rejected: %s", c->input, error);
		assert_string_equal(a.addr, c->addr);
		assert_string_equal(a.local, c->local);
		assert_string_equal(a.domain, c->domain);
		assert_int_equal(a.is_null, c->addr[0] == '\0');
		assert_int_equal(a.is_literal, c->domain[0] == '[');
	} else {
		if (ok)
			fail_msg("'%s': accepted as '%s'", c->input, a.addr);
		assert_non_null(error);
		if (strcmp(error, c->error) != 0)
			fail_msg("'%s': reason '%s', want '%s'", c->input,
				 error, c->error);
		assert_string_equal(a.addr, "");
	}
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(&cases[i]);
}

/* "<" + local + "@" + domain + ">" built from repeated characters. */
static bool parse_sized(size_t local_len, bool quoted, const char *labels,
			const char **error_r, struct mt_address *a)
{
	struct mt_buf b = MT_BUF_INIT;
	bool ok;

	mt_buf_append_char(&b, '<');
	if (quoted)
		mt_buf_append_char(&b, '"');
	for (size_t i = 0; i < local_len; i++)
		mt_buf_append_char(&b, quoted && i % 2 ? ' ' : 'l');
	if (quoted)
		mt_buf_append_char(&b, '"');
	mt_buf_appendf(&b, "@%s>", labels);
	ok = mt_address_parse(b.data, b.len, 0, a, NULL, error_r);
	mt_buf_free(&b);
	return ok;
}

/* n octets of domain: labels of 63 'd's joined by dots, then the rest. */
static char *domain_of(size_t n, size_t label)
{
	char *d = malloc(n + 1);

	for (size_t i = 0; i < n; i++)
		d[i] = (i + 1) % (label + 1) == 0 ? '.' : 'd';
	if (n > 0 && d[n - 1] == '.')
		d[n - 1] = 'e';
	d[n] = '\0';
	return d;
}

static void test_limits(void **state)
{
	struct mt_address a;
	const char *error = NULL;
	char *d;

	(void)state;
	assert_true(parse_sized(64, false, "x", &error, &a));
	assert_int_equal(strlen(a.local), 64);
	assert_false(parse_sized(65, false, "x", &error, &a));
	assert_string_equal(error, "local part longer than 64 octets");
	/* The limit counts the quotes as sent. */
	assert_true(parse_sized(62, true, "x", &error, &a));
	assert_int_equal(strlen(a.local), 64);
	assert_false(parse_sized(63, true, "x", &error, &a));
	assert_string_equal(error, "local part longer than 64 octets");

	d = domain_of(63, 63);
	assert_true(parse_sized(1, false, d, &error, &a));
	free(d);
	d = domain_of(64, 64);
	assert_false(parse_sized(1, false, d, &error, &a));
	assert_string_equal(error, "domain label longer than 63 octets");
	free(d);
	d = domain_of(256, 63);
	assert_false(parse_sized(1, false, d, &error, &a));
	assert_string_equal(error, "domain longer than 255 octets");
	free(d);

	/* "<" 1 "@" 252 ">" is 256 octets: allowed; one more is not. */
	d = domain_of(252, 63);
	assert_true(parse_sized(1, false, d, &error, &a));
	free(d);
	d = domain_of(253, 63);
	assert_false(parse_sized(1, false, d, &error, &a));
	assert_string_equal(error, "path longer than 256 octets");
	free(d);

	/* Without brackets (lenient) the same 254-octet mailbox is the most. */
	d = domain_of(254, 63);
	d[0] = 'l';
	d[1] = '@';
	assert_true(mt_address_parse(d, 254, MT_ADDR_LENIENT, &a, NULL,
				     &error));
	assert_int_equal(strlen(a.addr), 254);
	free(d);
	d = domain_of(255, 63);
	d[0] = 'l';
	d[1] = '@';
	assert_false(mt_address_parse(d, 255, MT_ADDR_LENIENT, &a, NULL,
				      &error));
	assert_string_equal(error, "path longer than 256 octets");
	free(d);
}

struct param_case {
	const char *input;
	unsigned int flags;
	const char *want;	/* "KEY=value KEY ..." or NULL if rejected */
	const char *error;
};

static const struct param_case param_cases[] = {
	{ "<a@b>", 0, "", NULL },
	{ "<a@b> SIZE=123 BODY=8BITMIME", 0, "SIZE=123 BODY=8BITMIME", NULL },
	{ "<> size=1 smtputf8", NUL_, "SIZE=1 SMTPUTF8", NULL },
	{ "<a@b>  SIZE=1   RET=HDRS  ", 0, "SIZE=1 RET=HDRS", NULL },
	{ "<a@b> ORCPT=rfc822;x+40y ENVID=Q-1", 0,
	  "ORCPT=rfc822;x+40y ENVID=Q-1", NULL },
	{ "<a@b> X-1=caf\xc3\xa9", U8, "X-1=caf\xc3\xa9", NULL },
	{ "<a@b> X=caf\xc3\xa9", 0, NULL, "8-bit character without SMTPUTF8" },
	{ "<a@b> SIZE=1 size=2", 0, NULL, "duplicate ESMTP parameter" },
	{ "<a@b> SIZE=", 0, NULL, "empty ESMTP parameter value" },
	{ "<a@b> SIZE= X", 0, NULL, "empty ESMTP parameter value" },
	{ "<a@b> =1", 0, NULL, "invalid character in ESMTP parameter" },
	{ "<a@b> -X=1", 0, NULL, "invalid character in ESMTP parameter" },
	{ "<a@b> A=B=C", 0, NULL, "invalid character in ESMTP parameter" },
	{ "<a@b> A_B", 0, NULL, "invalid character in ESMTP parameter" },
	{ "<a@b> X=\x01", 0, NULL, "control character in ESMTP parameter" },
	{ "<a@b> X=y\r\n", 0, NULL, "CR or LF in ESMTP parameter" },
	{ "<a@b>SIZE=1", 0, NULL, "unexpected text after address" },
	{ "<a@b> 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16", 0,
	  "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16", NULL },
	{ "<a@b> 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17", 0, NULL,
	  "too many ESMTP parameters" },
};

static void test_params(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(param_cases) / sizeof(param_cases[0]);
	     i++) {
		const struct param_case *c = &param_cases[i];
		struct mt_esmtp_params p;
		struct mt_address a;
		struct mt_buf got = MT_BUF_INIT;
		const char *error = NULL;
		bool ok = mt_address_parse(c->input, strlen(c->input), c->flags,
					   &a, &p, &error);

		if (c->want == NULL) {
			if (ok || strcmp(error, c->error) != 0)
				fail_msg("'%s': ok=%d reason '%s'", c->input,
					 ok, ok ? "" : error);
			assert_int_equal(p.count, 0);
			continue;
		}
		if (!ok)
			fail_msg("'%s': rejected: %s", c->input, error);
		for (size_t k = 0; k < p.count; k++)
			mt_buf_appendf(&got, "%s%s%s%s", k ? " " : "",
				       p.param[k].key, p.param[k].value ?
				       "=" : "", p.param[k].value ?
				       p.param[k].value : "");
		assert_string_equal(mt_buf_cstr(&got), c->want);
		mt_buf_free(&got);
	}
}

/* A repeated keyword is named in params->duplicate (for the callers'
 * 555 5.5.4); other failures and successes leave it NULL. */
static void test_param_duplicate(void **state)
{
	static const struct { const char *input; const char *duplicate; } dups[] = {
		{ "<a@b> SIZE=1 size=2", "SIZE" },
		{ "<a@b> NOTIFY=NEVER ORCPT=rfc822;a@b notify=NEVER", "NOTIFY" },
		{ "<a@b> SMTPUTF8 SMTPUTF8", "SMTPUTF8" },
		{ "<a@b> SIZE=1 BODY=7BIT", NULL },
		{ "<a@b> SIZE=", NULL },
		{ "<a@@b> SIZE=1 SIZE=1", NULL },	/* the path fails first */
	};
	struct mt_esmtp_params p;
	struct mt_address a;
	const char *error = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(dups) / sizeof(dups[0]); i++) {
		memset(&p, 0x55, sizeof(p));
		bool ok = mt_address_parse(dups[i].input, strlen(dups[i].input),
					   0, &a, &p, &error);
		if (dups[i].duplicate == NULL) {
			if (p.duplicate != NULL)
				fail_msg("'%s': duplicate '%s'", dups[i].input, p.duplicate);
			continue;
		}
		assert_false(ok);
		assert_string_equal(error, "duplicate ESMTP parameter");
		assert_non_null(p.duplicate);
		assert_string_equal(p.duplicate, dups[i].duplicate);
	}
}

static void test_param_find_and_store(void **state)
{
	static const char big[] = "<a@b> A=%0300d B=%0300d C=%0300d D=%0300d";
	struct mt_esmtp_params p;
	struct mt_address a;
	const char *error = NULL;
	char *line;

	(void)state;
	assert_true(mt_address_parse("<a@b> size=10 Smtputf8", 22, 0, &a, &p,
				     &error));
	assert_string_equal(mt_esmtp_param_find(&p, "SIZE")->value, "10");
	assert_null(mt_esmtp_param_find(&p, "smtpUTF8")->value);
	assert_null(mt_esmtp_param_find(&p, "BODY"));

	line = malloc(sizeof(big) + 1300);
	snprintf(line, sizeof(big) + 1300, big, 1, 2, 3, 4);
	assert_false(mt_address_parse(line, strlen(line), 0, &a, &p, &error));
	assert_string_equal(error, "ESMTP parameters too long");
	free(line);
}

/* Parse s[0..len) from a heap block of exactly len octets. */
static bool parse_exact(const char *s, size_t len, unsigned int flags,
			struct mt_address *a, const char **error_r)
{
	struct mt_esmtp_params p;
	char *copy = malloc(len ? len : 1);
	bool ok;

	memcpy(copy, s, len);
	ok = mt_address_parse(copy, len, flags, a, &p, error_r);
	free(copy);
	return ok;
}

static void test_prefixes_in_bounds(void **state)
{
	struct mt_address a;
	const char *error;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = cases[i].len ? cases[i].len :
			strlen(cases[i].input);

		for (size_t k = 0; k <= len; k++) {
			error = NULL;
			if (!parse_exact(cases[i].input, k, cases[i].flags |
					 NUL_ | PM | LEN, &a, &error))
				assert_non_null(error);
		}
	}
}

/* Append a random pick of tokens to b (some of them invalid). */
static void add_tokens(struct mt_buf *b, const char *const *tok, size_t n_tok,
		       size_t max)
{
	size_t n = 1 + (size_t)rand() % max;

	for (size_t i = 0; i < n; i++)
		mt_buf_append_str(b, tok[(size_t)rand() % n_tok]);
}

static const char *const local_tok[] = {
	"a", "Zz9", "+", ".", "\"a b\"", "\"\\\"\"", "\"x\"", "\"\\\\\"", "\"\"",
	"\xc3\xa9", "!", "_", "\"\xc3\xa9.\"", "a", "b", "\r", " ", "\"",
};
static const char *const domain_tok[] = {
	"x", "Ab", "-", ".", "x.y", "9", "\xc3\x89", "[1.2.3.4]", "[IPv6:::1]",
	"[IPv6:A::b]", "a", "b", "_", "[",
};

/* Random paths: no crash, limits hold, the normal form is a fixed point. */
static void test_random_roundtrip(void **state)
{
	size_t accepted = 0;

	(void)state;
	srand(5321);
	for (int iter = 0; iter < 100000; iter++) {
		unsigned int flags = (unsigned int)rand() % 16;
		struct mt_buf in = MT_BUF_INIT;
		struct mt_address a, b;
		const char *error = NULL;
		char path[sizeof(a.addr) + 2];

		mt_buf_append_str(&in, rand() % 8 ? "<" : "");
		if (rand() % 8 == 0) {
			mt_buf_append_char(&in, '@');
			add_tokens(&in, domain_tok, 14, 3);
			mt_buf_append_str(&in, rand() % 2 ? ",@x:" : ":");
		}
		add_tokens(&in, local_tok, 18, 4);
		mt_buf_append_str(&in, rand() % 8 ? "@" : "");
		add_tokens(&in, domain_tok, 14, 4);
		mt_buf_append_str(&in, rand() % 8 ? ">" : "");
		mt_buf_append_str(&in, rand() % 4 ? "" : " SIZE=1");

		if (!parse_exact(in.data, in.len, flags, &a, &error)) {
			assert_non_null(error);
			mt_buf_free(&in);
			continue;
		}
		accepted++;
		assert_true(strlen(a.local) <= MT_ADDR_LOCAL_MAX);
		assert_true(strlen(a.domain) <= MT_ADDR_DOMAIN_MAX);
		snprintf(path, sizeof(path), "<%s>", a.addr);
		if (!parse_exact(path, strlen(path), flags, &b, &error))
			fail_msg("'%s' from '%s' does not re-parse: %s",
				 path, in.data, error);
		assert_string_equal(b.addr, a.addr);
		assert_string_equal(b.local, a.local);
		assert_string_equal(b.domain, a.domain);
		mt_buf_free(&in);
	}
	print_message("%zu of 100000 random paths accepted\n", accepted);
	assert_true(accepted > 2000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_param_duplicate),
		cmocka_unit_test(test_param_find_and_store),
		cmocka_unit_test(test_prefixes_in_bounds),
		cmocka_unit_test(test_random_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
