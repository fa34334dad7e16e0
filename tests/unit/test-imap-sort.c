/* test-imap-sort.c — lib-mail's SORT pieces: RFC 5256 2.1's base subject
 * (each step of the algorithm and their repetition, odd inputs: only a
 * prefix, only blobs, nested "[fwd: ...]", encoded words, folding), the
 * i;unicode-casemap forms (RFC 5051: ASCII case, Latin accents decomposed,
 * invalid UTF-8), RFC 5322 dates with zones, the ENVELOPE reader (quoted
 * strings with escapes, literals, NIL, groups, damaged input), the sort
 * program's syntax and the order it gives (REVERSE per key, ties in
 * sequence order, DATE falling back to the arrival), and the SORT and
 * ESORT answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "imap-parse.h"
#include "imap-search.h"
#include "imap-sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_base_subject(void **state)
{
	(void)state;
	static const struct {
		const char *in, *base;
		bool reply;
	} cases[] = {
		{ "Hello", "Hello", false },
		{ "Re: Hello", "Hello", true },
		{ "RE: re: Re:Hello", "Hello", true },
		{ "Fwd: Hello", "Hello", true },
		{ "Fw: Hello", "Hello", true },
		{ "fwd : Hello", "Hello", true },		/* *WSP before ":" */
		{ "Re[2]: Hello", "Hello", true },		/* blob in subj-refwd */
		{ "[list] Re: Hello", "Hello", true },	/* blob before refwd */
		{ "[list] Hello", "Hello", false },		/* step 4 */
		{ "[list]", "[list]", false },		/* step 4: would leave nothing */
		{ "[a] [b]", "[b]", false },
		{ "Re: [list] Re: Hello", "Hello", true },	/* step 5 repeats */
		{ "Hello (fwd)", "Hello", true },		/* step 2 */
		{ "Hello (fwd) (FWD)  ", "Hello", true },
		{ "[Fwd: Hello]", "Hello", true },		/* step 6 */
		{ "[fwd: Re: Hello (fwd)]", "Hello", true },
		{ "Re: [Fwd: [fwd: Hello]]", "Hello", true },
		{ "  Hello\t\tworld  ", "Hello world", false },	/* step 1 */
		{ "Hello\r\n world", "Hello world", false },
		{ "Re:", "", true },
		{ "Re: ", "", true },
		{ "", "", false },
		{ "Reply: Hello", "Reply: Hello", false },	/* not a subj-refwd */
		{ "Fwdx: Hello", "Fwdx: Hello", false },
		{ "[unclosed Re: Hello", "[unclosed Re: Hello", false },
		{ "=?utf-8?q?Re=3A_Caf=C3=A9?=", "Caf\xc3\xa9", true },
		{ "=?ISO-8859-1?Q?Caf=E9?= =?utf-8?b?IGNyw6htZQ==?=", "Caf\xc3\xa9 cr\xc3\xa8me", false },
		{ "=?koi8-r?b?8NLJ18XU?=", "=?koi8-r?b?8NLJ18XU?=", false },	/* kept */
		{ "=?utf-8?q?broken", "=?utf-8?q?broken", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_buf out = MT_BUF_INIT;
		bool reply = !cases[i].reply;
		mt_imap_base_subject(&out, cases[i].in, strlen(cases[i].in), &reply);
		if (strcmp(mt_buf_cstr(&out), cases[i].base) != 0 || reply != cases[i].reply)
			fail_msg("case %zu \"%s\": \"%s\" reply=%d", i, cases[i].in,
				 mt_buf_cstr(&out), reply);
		mt_buf_free(&out);
	}
}

static void test_casemap(void **state)
{
	(void)state;
	static const struct {
		const char *a, *b;
		int order;	/* sign of a vs b */
	} cases[] = {
		{ "hello", "HELLO", 0 },
		{ "Caf\xc3\xa9", "CAF\xc3\x89", 0 },		/* é = É */
		{ "Caf\xc3\xa9", "Cafe\xcc\x81", 0 },	/* = E + U+0301 */
		{ "\xc5\xbe", "Z\xcc\x8c", 0 },		/* ž = Z + caron */
		{ "\xc3\xbf", "\xc5\xb8", 0 },		/* ÿ = Ÿ */
		{ "\xc4\xb1", "i", 0 },			/* ı titlecase is I */
		{ "\xc5\xbf", "s", 0 },			/* ſ titlecase is S */
		{ "\xc3\x9f", "ss", 1 },			/* ß stays ß */
		{ "\xc3\xa6", "\xc3\x86", 0 },		/* æ = Æ */
		{ "a", "b", -1 },
		{ "B", "a", 1 },
		{ "\xc3\xa9", "f", -1 },			/* é sorts as E */
		{ "abc", "ab", 1 },
		{ "\xff", "\xff", 0 },			/* not UTF-8: as is */
		{ "\xce\xb1", "\xce\x91", 1 },		/* Greek: not folded here */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT;
		mt_imap_casemap(&a, cases[i].a, strlen(cases[i].a));
		mt_imap_casemap(&b, cases[i].b, strlen(cases[i].b));
		int r = strcmp(mt_buf_cstr(&a), mt_buf_cstr(&b));
		r = r < 0 ? -1 : r > 0;
		if (r != cases[i].order)
			fail_msg("case %zu: %d, want %d", i, r, cases[i].order);
		mt_buf_free(&a);
		mt_buf_free(&b);
	}
}

static void test_dates(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		bool ok;
		int64_t t;
	} cases[] = {
		{ "Thu, 1 Jan 1970 00:00:00 +0000", true, 0 },
		{ "1 Jan 1970 01:00 +0100", true, 0 },
		{ "Mon, 7 Feb 1994 21:52:25 -0800", true, 760686745 },
		{ "Mon, 7 Feb 94 21:52:25 PST", true, 760686745 },
		{ " Mon , 7 Feb 1994 21:52:25 -0800 (PST)", true, 760686745 },
		{ "Fri, 13 Mar 2026 10:00:00 GMT", true, 1773396000 },
		{ "Fri, 13 Mar 2026 10:00:00 XYZ", true, 1773396000 },
		{ "13 Foo 2026 10:00:00 +0000", false, 0 },
		{ "yesterday", false, 0 },
		{ "", false, 0 },
		{ "13 Mar 2026 25:00:00 +0000", false, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t t = -1;
		bool ok = mt_imap_sort_date_parse(cases[i].in, strlen(cases[i].in), &t);
		if (ok != cases[i].ok || (ok && t != cases[i].t))
			fail_msg("case %zu \"%s\": ok=%d t=%lld", i, cases[i].in, ok, (long long)t);
	}
}

static const char ENVELOPE[] =
	"(\"Mon, 7 Feb 1994 21:52:25 -0800\" \"Re: \\\"quoted\\\" \\\\ x\" "
	"((\"Fred Foobar\" NIL \"foobar\" \"Blurdybloop.COM\")) "
	"((NIL NIL \"sender\" \"x\")) NIL "
	"((NIL NIL \"mooch\" \"owatagu.siam.edu\")(\"B\" NIL \"b\" \"y\")) "
	"(({3}\r\nC\"C NIL \"cc\" \"z\")) NIL \"<parent@x>\" \"<B27397-0100000@cac.washington.edu>\")";

static const char *get(const struct mt_imap_envelope *e, const struct mt_imap_envelope_str *s)
{
	size_t len;
	static char copy[256];
	const char *p = mt_imap_envelope_get(e, s, &len);
	snprintf(copy, sizeof(copy), "%.*s", (int)len, p);
	return copy;
}

static void test_envelope(void **state)
{
	(void)state;
	struct mt_imap_envelope e = { 0 };
	assert_true(mt_imap_envelope_read(&e, ENVELOPE, strlen(ENVELOPE)));
	assert_string_equal(get(&e, &e.date), "Mon, 7 Feb 1994 21:52:25 -0800");
	assert_string_equal(get(&e, &e.subject), "Re: \"quoted\" \\ x");
	assert_string_equal(get(&e, &e.from.name), "Fred Foobar");
	assert_string_equal(get(&e, &e.from.mailbox), "foobar");
	assert_string_equal(get(&e, &e.to.mailbox), "mooch");
	assert_true(e.to.name.nil);
	assert_string_equal(get(&e, &e.cc.name), "C\"C");
	assert_string_equal(get(&e, &e.in_reply_to), "<parent@x>");
	assert_string_equal(get(&e, &e.message_id), "<B27397-0100000@cac.washington.edu>");
	static const char empty[] = "(NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL)";
	assert_true(mt_imap_envelope_read(&e, empty, strlen(empty)));
	assert_true(e.subject.nil && e.from.mailbox.nil);
	/* Damaged: cut anywhere, the reader refuses and stays inside. */
	for (size_t n = 0; n < strlen(ENVELOPE); n++) {
		char *cut = malloc(n > 0 ? n : 1);
		memcpy(cut, ENVELOPE, n);
		assert_false(mt_imap_envelope_read(&e, cut, n));
		free(cut);
	}
	static const char *const bad[] = {
		"(\"a\")", "NIL", "(NIL NIL ((NIL NIL)) NIL NIL NIL NIL NIL NIL NIL)",
		"(NIL NIL NIL NIL NIL NIL NIL NIL NIL {99}\r\nx)",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(mt_imap_envelope_read(&e, bad[i], strlen(bad[i])));
	mt_imap_envelope_free(&e);
}

static struct mt_imap_parser parser;

/* "a SORT <program>" read, its first argument parsed as the program. */
static bool program(const char *text, struct mt_imap_sort_program *p, const char **error)
{
	const struct mt_imap_limits l = {
		.line_max = 8192, .literal_max = 65536, .command_max = 1 << 20,
		.depth_max = 32, .args_max = 1024, .literal_plus = true,
	};
	char line[512];
	snprintf(line, sizeof(line), "a SORT %s UTF-8 ALL\r\n", text);
	mt_imap_parser_free(&parser);
	mt_imap_parser_init(&parser, &l);
	size_t used;
	assert_int_equal(mt_imap_parser_feed(&parser, line, strlen(line), &used),
			 MT_IMAP_PARSE_DONE);
	return mt_imap_sort_parse(p, &parser.command.args[0], error);
}

static void test_program(void **state)
{
	(void)state;
	struct mt_imap_sort_program p;
	const char *error;
	assert_true(program("(REVERSE date subject)", &p, &error));
	assert_int_equal(p.count, 2);
	assert_int_equal(p.criteria[0].key, MT_IMAP_SORT_DATE);
	assert_true(p.criteria[0].reverse);
	assert_int_equal(p.criteria[1].key, MT_IMAP_SORT_SUBJECT);
	assert_false(p.criteria[1].reverse);
	assert_true(program("(DISPLAYFROM DISPLAYTO ARRIVAL CC FROM SIZE TO)", &p, &error));
	assert_int_equal(p.count, 7);
	static const char *const bad[] = {
		"()", "DATE", "(REVERSE)", "(REVERSE REVERSE DATE)", "(DATE BOGUS)",
		"(DATE DATE DATE DATE DATE DATE DATE DATE DATE DATE DATE DATE DATE DATE DATE DATE DATE)",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (program(bad[i], &p, &error))
			fail_msg("accepted %s", bad[i]);
}

/* RFC 5256-style mailbox: seq, arrival, size, envelope's date, subject, from, to. */
static const struct {
	const char *date, *subject, *from_name, *from, *to;
	int64_t arrival;
	uint64_t size;
} MSGS[] = {
	{ "Mon, 7 Feb 1994 21:52:25 -0800", "Re: Zebra", "Zed", "zed", "amy", 300, 500 },
	{ "Mon, 7 Feb 1994 20:00:00 -0800", "apple", NULL, "bob", "Carl", 100, 900 },
	{ "garbage", "[list] Apple", "\xc3\x89mile", "emile", "bea", 50, 100 },
	{ NULL, "Fwd: zebra (fwd)", "alice", "Alice", NULL, 200, 500 },
};

static void fill(struct mt_imap_sort_msg *m, const struct mt_imap_sort_program *p)
{
	for (size_t i = 0; i < sizeof(MSGS) / sizeof(MSGS[0]); i++) {
		char env[1024];
		char date[64], from[128], to[128];
		snprintf(date, sizeof(date), MSGS[i].date ? "\"%s\"" : "NIL", MSGS[i].date);
		snprintf(from, sizeof(from), "((%s%s%s NIL \"%s\" \"x.org\"))",
			 MSGS[i].from_name ? "\"" : "", MSGS[i].from_name ? MSGS[i].from_name : "NIL",
			 MSGS[i].from_name ? "\"" : "", MSGS[i].from);
		if (MSGS[i].to)
			snprintf(to, sizeof(to), "((NIL NIL \"%s\" \"y.org\"))", MSGS[i].to);
		else
			snprintf(to, sizeof(to), "NIL");
		snprintf(env, sizeof(env), "(%s \"%s\" %s %s %s %s NIL NIL NIL NIL)", date,
			 MSGS[i].subject, from, from, from, to);
		struct mt_imap_envelope e = { 0 };
		assert_true(mt_imap_envelope_read(&e, env, strlen(env)));
		m[i] = (struct mt_imap_sort_msg){ .id = (uint32_t)i + 1, .order = (uint32_t)i,
						  .arrival = MSGS[i].arrival, .size = MSGS[i].size };
		mt_imap_sort_msg_fill(&m[i], p, &e);
		mt_imap_envelope_free(&e);
	}
}

static void test_order(void **state)
{
	(void)state;
	static const struct {
		const char *program;
		uint32_t ids[4];
	} cases[] = {
		{ "(ARRIVAL)", { 3, 2, 4, 1 } },
		{ "(REVERSE ARRIVAL)", { 1, 4, 2, 3 } },
		/* 3 has no readable date: its arrival (50) is earliest. */
		{ "(DATE)", { 3, 4, 2, 1 } },
		{ "(REVERSE DATE)", { 1, 2, 4, 3 } },
		{ "(SIZE)", { 3, 1, 4, 2 } },
		{ "(SIZE REVERSE ARRIVAL)", { 3, 1, 4, 2 } },
		{ "(REVERSE SIZE)", { 2, 1, 4, 3 } },
		/* apple = Apple, zebra = Zebra: ties in sequence order. */
		{ "(SUBJECT)", { 2, 3, 1, 4 } },
		{ "(SUBJECT REVERSE ARRIVAL)", { 2, 3, 1, 4 } },
		{ "(SUBJECT ARRIVAL)", { 3, 2, 4, 1 } },
		{ "(FROM)", { 4, 2, 3, 1 } },
		{ "(TO)", { 4, 1, 3, 2 } },			/* none first */
		{ "(DISPLAYFROM)", { 4, 2, 3, 1 } },	/* alice, bob@x.org, Émile, Zed */
		{ "(REVERSE DISPLAYFROM)", { 1, 3, 2, 4 } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_imap_sort_program p;
		const char *error;
		assert_true(program(cases[i].program, &p, &error));
		struct mt_imap_sort_msg m[4];
		fill(m, &p);
		mt_imap_sort(&p, m, 4);
		for (size_t k = 0; k < 4; k++)
			if (m[k].id != cases[i].ids[k])
				fail_msg("%s: position %zu is %u, want %u", cases[i].program, k,
					 m[k].id, cases[i].ids[k]);
		for (size_t k = 0; k < 4; k++)
			mt_imap_sort_msg_free(&m[k]);
	}
	/* No envelope: keys empty, DATE is the arrival. */
	struct mt_imap_sort_program p;
	const char *error;
	assert_true(program("(SUBJECT DATE)", &p, &error));
	struct mt_imap_sort_msg m = { .arrival = 7 };
	mt_imap_sort_msg_fill(&m, &p, NULL);
	assert_string_equal(m.str[MT_IMAP_SORT_SUBJECT], "");
	assert_int_equal(m.date, 7);
	mt_imap_sort_msg_free(&m);
}

static void test_answers(void **state)
{
	(void)state;
	static const uint32_t ids[] = { 5, 6, 7, 2, 9, 10 };
	struct mt_buf out = MT_BUF_INIT;
	mt_imap_sort_write(&out, ids, 6);
	assert_string_equal(mt_buf_cstr(&out), "* SORT 5 6 7 2 9 10");
	mt_buf_reset(&out);
	mt_imap_sort_write(&out, ids, 0);
	assert_string_equal(mt_buf_cstr(&out), "* SORT");
	mt_buf_reset(&out);
	mt_imap_esort_write(&out, MT_IMAP_SEARCH_RETURN_MIN | MT_IMAP_SEARCH_RETURN_MAX |
			    MT_IMAP_SEARCH_RETURN_COUNT | MT_IMAP_SEARCH_RETURN_ALL, ids, 6);
	assert_string_equal(mt_buf_cstr(&out), " MIN 5 MAX 10 COUNT 6 ALL 5:7,2,9:10");
	mt_buf_reset(&out);
	mt_imap_esort_write(&out, MT_IMAP_SEARCH_RETURN_MIN | MT_IMAP_SEARCH_RETURN_COUNT |
			    MT_IMAP_SEARCH_RETURN_ALL, ids, 0);
	assert_string_equal(mt_buf_cstr(&out), " COUNT 0");
	mt_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base_subject),
		cmocka_unit_test(test_casemap),
		cmocka_unit_test(test_dates),
		cmocka_unit_test(test_envelope),
		cmocka_unit_test(test_program),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_answers),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	mt_imap_parser_free(&parser);
	return r;
}
