/* test-milter-headers.c — unit tests for mta/milter-headers.c, the header
 * section as the MTA's mail filters see and edit it:
 *  - milter_head_scan() over a table of sections (CRLF and LF-only line
 *    ends, the empty line or a non-field line ending the section, a
 *    continuation line first, obsolete "Name :" with WSP before the
 *    colon, names that are not field names, final and not final, a last
 *    line without CRLF), each also fed growing an octet at a time: MORE
 *    until the end is whole, then the very result of the whole input;
 *  - milter_headers_parse(): folded fields kept byte-exact, a last field
 *    without CRLF given one, the name's length with the obsolete form;
 *  - milter_field_value() with and without HDR_LEADSPC (one leading
 *    space stripped and no more, fold CRLFs as LF, no final CRLF);
 *  - ADDHEADER / INSHEADER (at 0, in the middle, past the end) and
 *    CHGHEADER (the n-th field of a name, case-insensitively, index 0 as
 *    1, an empty value deleting, a missing n-th added at the end, a
 *    deleted field no longer counted), with filter values folded with LF
 *    written as CRLF and an existing CRLF kept;
 *  - the rendered section byte-exact after a sequence of edits, and
 *    milter_headers_size() equal to its length after each one.
 *
 * Every scan and parse reads a heap copy of exactly its input, so a read
 * past the end is an ASan error in the sanitizer build.
 * Trust boundary: none (test code). RFC 5322 2.2, 2.2.3, 4.5. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "mta/milter-headers.h"

#define S(literal) literal, sizeof(literal) - 1

/* A heap copy of exactly data[0..len) (a valid pointer even when empty). */
static char *copy_of(const char *data, size_t len)
{
	char *p = malloc(len > 0 ? len : 1);

	assert_non_null(p);
	if (len > 0)
		memcpy(p, data, len);
	return p;
}

static enum milter_head_scan scan(const char *data, size_t len, bool final,
				  size_t *head_len_r, size_t *sep_len_r)
{
	char *copy = copy_of(data, len);
	enum milter_head_scan r = milter_head_scan(copy, len, final, head_len_r,
						   sep_len_r);

	free(copy);
	return r;
}

static void parse(struct milter_headers *h, const char *data, size_t len)
{
	char *copy = copy_of(data, len);

	milter_headers_parse(h, copy, len);
	free(copy);
}

/* The section renders as exactly want, and its size says so. */
static void expect_render(const struct milter_headers *h, const char *want,
			  size_t want_len)
{
	struct mt_buf out = MT_BUF_INIT;

	milter_headers_render(h, &out);
	/* mt_buf_cstr(): never NULL, even for an empty render. */
	if (out.len != want_len || memcmp(mt_buf_cstr(&out), want, want_len) != 0)
		fail_msg("rendered \"%s\", want \"%s\"", mt_buf_cstr(&out), want);
	assert_int_equal(milter_headers_size(h), out.len);
	mt_buf_free(&out);
}

#define EXPECT_RENDER(h, literal) expect_render(h, S(literal))

static void expect_raw(const struct milter_field *f, const char *want,
		       size_t want_len)
{
	assert_int_equal(f->len, want_len);
	assert_memory_equal(f->raw, want, want_len);
	assert_int_equal(f->raw[f->len], '\0');
}

#define EXPECT_RAW(f, literal) expect_raw(f, S(literal))

/* ---- milter_head_scan ---- */

struct scan_case {
	const char *name;
	const char *data;
	size_t len;
	bool final;
	enum milter_head_scan want;
	size_t head_len, sep_len;
	/* The shortest prefix that gives the same END when not final (0: the
	 * case is not fed a byte at a time). */
	size_t need;
};

#define CASE(name, literal, final, want, head, sep, need) \
	{ name, S(literal), final, want, head, sep, need }

static const struct scan_case scan_cases[] = {
	CASE("empty, more to come", "", false, MILTER_HEAD_MORE, 0, 0, 0),
	CASE("empty message", "", true, MILTER_HEAD_END, 0, 0, 0),
	CASE("empty line", "Subject: hi\r\n\r\nbody\r\n", false,
	     MILTER_HEAD_END, 13, 2, 15),
	CASE("empty line, final", "Subject: hi\r\n\r\nbody\r\n", true,
	     MILTER_HEAD_END, 13, 2, 0),
	CASE("two fields", "Subject: hi\r\nTo: <a@example.org>\r\n\r\n", false,
	     MILTER_HEAD_END, 34, 2, 36),
	CASE("LF-only line ends", "Subject: hi\nTo: x\n\nbody\n", false,
	     MILTER_HEAD_END, 18, 1, 19),
	CASE("CRLF fields, LF empty line", "Subject: hi\r\n\nbody", false,
	     MILTER_HEAD_END, 13, 1, 14),
	CASE("folded fields", "Subject: a\r\n b\r\n\tc\r\nTo: x\r\n\r\nbody", false,
	     MILTER_HEAD_END, 27, 2, 29),
	CASE("whitespace-only continuation", "Subject: a\r\n \r\n\r\n", false,
	     MILTER_HEAD_END, 15, 2, 17),
	CASE("body starts with a non-field line",
	     "Subject: hi\r\nThis is the body\r\n", false,
	     MILTER_HEAD_END, 13, 0, 31),
	CASE("mbox From line first", "From a@example.org Mon Jan 1\r\nSubject: x\r\n\r\n",
	     false, MILTER_HEAD_END, 0, 0, 30),
	CASE("continuation line first", " folded\r\nSubject: x\r\n\r\n", false,
	     MILTER_HEAD_END, 0, 0, 9),
	CASE("tab continuation first", "\tx\r\n\r\n", true, MILTER_HEAD_END, 0, 0, 0),
	CASE("empty line first", "\r\nbody\r\n", false, MILTER_HEAD_END, 0, 2, 2),
	CASE("LF empty line first", "\nbody", false, MILTER_HEAD_END, 0, 1, 1),
	CASE("obsolete WSP before the colon", "Subject : hi\r\nTo\t:x\r\n\r\n", false,
	     MILTER_HEAD_END, 21, 2, 23),
	CASE("WSP then no colon", "Subject hi: x\r\n\r\n", false,
	     MILTER_HEAD_END, 0, 0, 15),
	CASE("no name before the colon", ": x\r\n\r\n", false, MILTER_HEAD_END, 0, 0, 5),
	CASE("no colon at all", "Subject\r\n\r\n", false, MILTER_HEAD_END, 0, 0, 9),
	CASE("control octet in a name", "Sub\x01ject: x\r\n\r\n", false,
	     MILTER_HEAD_END, 0, 0, 13),
	CASE("8-bit octet in a name", "Sub\xc3\xa9ject: x\r\nA: b\r\n\r\n", false,
	     MILTER_HEAD_END, 0, 0, 14),
	CASE("field after a non-field line", "A: 1\r\nbody\r\nB: 2\r\n\r\n", false,
	     MILTER_HEAD_END, 6, 0, 12),
	CASE("no end yet", "Subject: hi\r\nTo: x\r\n", false, MILTER_HEAD_MORE, 0, 0, 0),
	CASE("no end, final: all fields", "Subject: hi\r\nTo: x\r\n", true,
	     MILTER_HEAD_END, 20, 0, 0),
	CASE("last line without CRLF", "Subject: hi\r\nTo: x", false,
	     MILTER_HEAD_MORE, 0, 0, 0),
	CASE("last line without CRLF, final", "Subject: hi\r\nTo: x", true,
	     MILTER_HEAD_END, 18, 0, 0),
	CASE("last non-field line without CRLF, final", "Subject: hi\r\nbody", true,
	     MILTER_HEAD_END, 13, 0, 0),
	CASE("last folded line without CRLF, final", "Subject: hi\r\n there", true,
	     MILTER_HEAD_END, 19, 0, 0),
	CASE("a CR of the empty line only", "Subject: hi\r\n\r", false,
	     MILTER_HEAD_MORE, 0, 0, 0),
};

static void expect_scan(const struct scan_case *c, enum milter_head_scan r,
			size_t head_len, size_t sep_len, size_t fed)
{
	if (r != c->want)
		fail_msg("%s (%zu octets fed): %s, want %s", c->name, fed,
			 r == MILTER_HEAD_END ? "END" : "MORE",
			 c->want == MILTER_HEAD_END ? "END" : "MORE");
	if (r != MILTER_HEAD_END)
		return;
	if (head_len != c->head_len || sep_len != c->sep_len)
		fail_msg("%s (%zu octets fed): head %zu sep %zu, want %zu %zu",
			 c->name, fed, head_len, sep_len, c->head_len, c->sep_len);
}

static void test_scan_whole(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(scan_cases) / sizeof(scan_cases[0]); i++) {
		const struct scan_case *c = &scan_cases[i];
		size_t head_len = 999, sep_len = 999;
		enum milter_head_scan r = scan(c->data, c->len, c->final,
					       &head_len, &sep_len);

		expect_scan(c, r, head_len, sep_len, c->len);
	}
}

/* Data growing a byte at a time, never final: MORE while the end is not
 * whole, then the same END as the whole input, and it stays so. */
static void test_scan_bytewise(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(scan_cases) / sizeof(scan_cases[0]); i++) {
		const struct scan_case *c = &scan_cases[i];

		if (c->need == 0)
			continue;
		assert_true(c->need <= c->len);
		for (size_t fed = 0; fed <= c->len; fed++) {
			size_t head_len = 999, sep_len = 999;
			enum milter_head_scan r = scan(c->data, fed, false,
						       &head_len, &sep_len);

			if (fed < c->need) {
				if (r != MILTER_HEAD_MORE)
					fail_msg("%s: END after %zu of %zu octets",
						 c->name, fed, c->need);
				continue;
			}
			expect_scan(c, r, head_len, sep_len, fed);
		}
	}
}

/* Every prefix, when final, ends within itself and gives fields that
 * parse back to exactly those octets. */
static void test_scan_final_prefixes(void **state)
{
	static const char message[] = "Subject: a\r\n b\r\nTo : x\nX: y\r\n\r\nbody\r\n";

	(void)state;
	for (size_t fed = 0; fed < sizeof(message) - 1; fed++) {
		size_t head_len = 999, sep_len = 999;

		assert_int_equal(scan(message, fed, true, &head_len, &sep_len),
				 MILTER_HEAD_END);
		assert_true(head_len + sep_len <= fed);
	}
}

/* ---- milter_headers_parse ---- */

static void test_parse_folded(void **state)
{
	struct milter_headers h = { 0 };
	struct mt_buf name = MT_BUF_INIT;

	(void)state;
	parse(&h, S("Subject: a\r\n b\r\n\tc\r\nTo: <x@example.org>\r\n"
		    "X-Obs \t: y\r\nX-Lf: 1\n 2\n"));
	assert_int_equal(h.count, 4);
	EXPECT_RAW(&h.fields[0], "Subject: a\r\n b\r\n\tc\r\n");
	EXPECT_RAW(&h.fields[1], "To: <x@example.org>\r\n");
	EXPECT_RAW(&h.fields[2], "X-Obs \t: y\r\n");
	EXPECT_RAW(&h.fields[3], "X-Lf: 1\n 2\n");
	assert_int_equal(h.fields[0].name_len, 7);
	assert_int_equal(h.fields[1].name_len, 2);
	assert_int_equal(h.fields[2].name_len, 5);	/* without the WSP */
	assert_int_equal(h.fields[3].name_len, 4);
	milter_field_name(&h.fields[2], &name);
	assert_string_equal(mt_buf_cstr(&name), "X-Obs");
	/* Parsing again appends. */
	parse(&h, S("Date: now\r\n"));
	assert_int_equal(h.count, 5);
	EXPECT_RAW(&h.fields[4], "Date: now\r\n");
	EXPECT_RENDER(&h, "Subject: a\r\n b\r\n\tc\r\nTo: <x@example.org>\r\n"
		      "X-Obs \t: y\r\nX-Lf: 1\n 2\nDate: now\r\n");
	mt_buf_free(&name);
	milter_headers_free(&h);
	assert_int_equal(h.count, 0);
	assert_null(h.fields);
}

static void test_parse_last_without_crlf(void **state)
{
	static const struct {
		const char *data;
		size_t len;
		size_t count;
		const char *last;	/* the last field's raw octets */
	} cases[] = {
		{ S("A: 1\r\nB: 2"), 2, "B: 2\r\n" },
		{ S("A: 1"), 1, "A: 1\r\n" },
		{ S("A: 1\r\n 2"), 1, "A: 1\r\n 2\r\n" },
		{ S("A: 1\r\n"), 1, "A: 1\r\n" },
		{ S("A: 1\n"), 1, "A: 1\n" },
		{ S("A:"), 1, "A:\r\n" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct milter_headers h = { 0 };

		parse(&h, cases[i].data, cases[i].len);
		assert_int_equal(h.count, cases[i].count);
		assert_string_equal(h.fields[h.count - 1].raw, cases[i].last);
		assert_int_equal(h.fields[h.count - 1].len, strlen(cases[i].last));
		milter_headers_free(&h);
	}
	/* Nothing at all: no field. */
	struct milter_headers h = { 0 };
	parse(&h, "", 0);
	assert_int_equal(h.count, 0);
	EXPECT_RENDER(&h, "");
	milter_headers_free(&h);
}

/* What milter_head_scan() finds is what milter_headers_parse() splits:
 * the render of the parsed fields is the section's octets. */
static void test_scan_then_parse(void **state)
{
	static const char message[] =
		"Received: from a\r\n\tby b\r\nSubject : x\r\nTo: y\r\n\r\nbody\r\n";
	size_t head_len, sep_len;
	struct milter_headers h = { 0 };

	(void)state;
	assert_int_equal(scan(S(message), false, &head_len, &sep_len),
			 MILTER_HEAD_END);
	parse(&h, message, head_len);
	assert_int_equal(h.count, 3);
	expect_render(&h, message, head_len);
	assert_int_equal(sep_len, 2);
	milter_headers_free(&h);
}

/* ---- milter_field_value ---- */

static void test_field_value(void **state)
{
	static const struct {
		const char *raw;
		const char *plain;	/* without HDR_LEADSPC */
		const char *leadspc;	/* with it */
	} cases[] = {
		{ "Subject: hello\r\n", "hello", " hello" },
		{ "Subject:  two spaces\r\n", " two spaces", "  two spaces" },
		{ "Subject:\ttab\r\n", "\ttab", "\ttab" },
		{ "Subject:none\r\n", "none", "none" },
		{ "Subject: re: colon\r\n", "re: colon", " re: colon" },
		{ "Subject :obsolete\r\n", "obsolete", "obsolete" },
		{ "Subject \t: obsolete\r\n", "obsolete", " obsolete" },
		{ "Subject: a\r\n b\r\n\tc\r\n", "a\n b\n\tc", " a\n b\n\tc" },
		{ "Subject:\r\n folded\r\n", "\n folded", "\n folded" },
		{ "Subject: a\n b\n", "a\n b", " a\n b" },
		{ "Subject:\r\n", "", "" },
		{ "Subject: \r\n", "", " " },
		{ "Subject: trailing \r\n", "trailing ", " trailing " },
		/* A last field that had no CRLF got one, dropped again. */
		{ "Subject: last", "last", " last" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct milter_headers h = { 0 };
		struct mt_buf value = MT_BUF_INIT;

		parse(&h, cases[i].raw, strlen(cases[i].raw));
		assert_int_equal(h.count, 1);
		milter_field_value(&h.fields[0], false, &value);
		assert_string_equal(mt_buf_cstr(&value), cases[i].plain);
		mt_buf_reset(&value);
		milter_field_value(&h.fields[0], true, &value);
		assert_string_equal(mt_buf_cstr(&value), cases[i].leadspc);
		/* Appends to what out holds. */
		mt_buf_reset(&value);
		mt_buf_append_str(&value, "<");
		milter_field_value(&h.fields[0], false, &value);
		assert_int_equal(value.len, 1 + strlen(cases[i].plain));
		mt_buf_free(&value);
		milter_headers_free(&h);
	}
}

/* ---- ADDHEADER, INSHEADER ---- */

static void test_add_insert(void **state)
{
	struct milter_headers h = { 0 };

	(void)state;
	parse(&h, S("A: 1\r\nB: 2\r\nC: 3\r\n"));
	milter_headers_insert(&h, 0, "X-First", "f", false);
	EXPECT_RENDER(&h, "X-First: f\r\nA: 1\r\nB: 2\r\nC: 3\r\n");
	milter_headers_insert(&h, 2, "X-Mid", "m", false);
	EXPECT_RENDER(&h, "X-First: f\r\nA: 1\r\nX-Mid: m\r\nB: 2\r\nC: 3\r\n");
	/* At the count: after the last; far past it: likewise. */
	milter_headers_insert(&h, 5, "X-End", "e", false);
	milter_headers_insert(&h, UINT32_MAX, "X-Past", "p", false);
	milter_headers_add(&h, "X-Add", "a", false);
	EXPECT_RENDER(&h, "X-First: f\r\nA: 1\r\nX-Mid: m\r\nB: 2\r\nC: 3\r\n"
		      "X-End: e\r\nX-Past: p\r\nX-Add: a\r\n");
	assert_int_equal(h.count, 8);
	assert_int_equal(h.fields[2].name_len, 5);
	milter_headers_free(&h);

	/* Into an empty section. */
	milter_headers_insert(&h, 3, "X-Only", "o", false);
	EXPECT_RENDER(&h, "X-Only: o\r\n");
	milter_headers_free(&h);
}

static void test_add_values(void **state)
{
	static const struct {
		const char *value;
		bool leadspc;
		const char *raw;
	} cases[] = {
		{ "v", false, "X-T: v\r\n" },
		{ " v", true, "X-T: v\r\n" },
		{ "v", true, "X-T:v\r\n" },
		{ " v", false, "X-T:  v\r\n" },
		{ "", false, "X-T: \r\n" },
		{ "", true, "X-T:\r\n" },
		/* LF folds from libmilter become CRLF folds. */
		{ "a\n b\n\tc", false, "X-T: a\r\n b\r\n\tc\r\n" },
		/* A CRLF fold is kept as it is, not doubled. */
		{ "a\r\n b", false, "X-T: a\r\n b\r\n" },
		{ "a\r\n b\n c", true, "X-T:a\r\n b\r\n c\r\n" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct milter_headers h = { 0 };
		struct mt_buf value = MT_BUF_INIT;

		milter_headers_add(&h, "X-T", cases[i].value, cases[i].leadspc);
		assert_int_equal(h.count, 1);
		assert_string_equal(h.fields[0].raw, cases[i].raw);
		assert_int_equal(h.fields[0].len, strlen(cases[i].raw));
		assert_int_equal(h.fields[0].name_len, 3);
		assert_int_equal(milter_headers_size(&h), strlen(cases[i].raw));
		/* The value reads back as the filter wrote it (folds as LF). */
		milter_field_value(&h.fields[0], cases[i].leadspc, &value);
		if (strstr(cases[i].value, "\r\n") == NULL)
			assert_string_equal(mt_buf_cstr(&value), cases[i].value);
		mt_buf_free(&value);
		milter_headers_free(&h);
	}
}

/* ---- CHGHEADER ---- */

static void test_change(void **state)
{
	struct milter_headers h = { 0 };

	(void)state;
	parse(&h, S("Received: r1\r\nSubject: s\r\nreceived: r2\r\n"
		    "X-AB: not X-A\r\nRECEIVED \t: r3\r\n"));
	/* The 2nd of the name, case-insensitively. */
	assert_int_equal(milter_headers_change(&h, 2, "Received", "new2", false),
			 MILTER_CHANGED);
	EXPECT_RENDER(&h, "Received: r1\r\nSubject: s\r\nReceived: new2\r\n"
		      "X-AB: not X-A\r\nRECEIVED \t: r3\r\n");
	/* The obsolete form counts as one of the name. */
	assert_int_equal(milter_headers_change(&h, 3, "RECEIVED", "new3", false),
			 MILTER_CHANGED);
	EXPECT_RENDER(&h, "Received: r1\r\nSubject: s\r\nReceived: new2\r\n"
		      "X-AB: not X-A\r\nRECEIVED: new3\r\n");
	/* Index 0 is taken as 1. */
	assert_int_equal(milter_headers_change(&h, 0, "received", " new1", true),
			 MILTER_CHANGED);
	EXPECT_RENDER(&h, "received: new1\r\nSubject: s\r\nReceived: new2\r\n"
		      "X-AB: not X-A\r\nRECEIVED: new3\r\n");
	/* A name is matched whole: X-A is not X-AB; a missing one is added. */
	assert_int_equal(milter_headers_change(&h, 1, "X-A", "added", false),
			 MILTER_ADDED);
	EXPECT_RENDER(&h, "received: new1\r\nSubject: s\r\nReceived: new2\r\n"
		      "X-AB: not X-A\r\nRECEIVED: new3\r\nX-A: added\r\n");
	/* A missing n-th of a name that exists: added at the end. */
	assert_int_equal(milter_headers_change(&h, 4, "Received", "r4", false),
			 MILTER_ADDED);
	assert_int_equal(h.count, 7);
	assert_string_equal(h.fields[6].raw, "Received: r4\r\n");
	milter_headers_free(&h);
}

static void test_change_delete(void **state)
{
	struct milter_headers h = { 0 };

	(void)state;
	parse(&h, S("X-S: 1\r\nA: a\r\nx-s: 2\r\n 2b\r\nX-S: 3\r\n"));
	/* An empty value deletes the n-th. */
	assert_int_equal(milter_headers_change(&h, 1, "X-S", "", false),
			 MILTER_DELETED);
	EXPECT_RENDER(&h, "A: a\r\nx-s: 2\r\n 2b\r\nX-S: 3\r\n");
	assert_int_equal(h.count, 3);
	/* The deleted field is no longer counted: the 2nd is now "3". */
	assert_int_equal(milter_headers_change(&h, 2, "X-S", "three", false),
			 MILTER_CHANGED);
	EXPECT_RENDER(&h, "A: a\r\nx-s: 2\r\n 2b\r\nX-S: three\r\n");
	/* Deleting one that does not exist does nothing. */
	assert_int_equal(milter_headers_change(&h, 3, "X-S", "", false),
			 MILTER_NOTHING);
	assert_int_equal(milter_headers_change(&h, 1, "X-None", "", true),
			 MILTER_NOTHING);
	assert_int_equal(h.count, 3);
	/* Delete the last, then the first, then all. */
	assert_int_equal(milter_headers_change(&h, 2, "x-S", "", false),
			 MILTER_DELETED);
	EXPECT_RENDER(&h, "A: a\r\nx-s: 2\r\n 2b\r\n");
	assert_int_equal(milter_headers_change(&h, 0, "a", "", false),
			 MILTER_DELETED);
	assert_int_equal(milter_headers_change(&h, 1, "X-S", "", false),
			 MILTER_DELETED);
	assert_int_equal(h.count, 0);
	EXPECT_RENDER(&h, "");
	/* The list is still usable. */
	assert_int_equal(milter_headers_change(&h, 1, "X-S", "again", false),
			 MILTER_ADDED);
	EXPECT_RENDER(&h, "X-S: again\r\n");
	milter_headers_free(&h);
}

/* A whole filter's work on a section: the fields nobody touched keep
 * their octets (LF-only folds too), the new ones are CRLF throughout. */
static void test_edit_sequence_render(void **state)
{
	static const char section[] =
		"Received: from client.example\r\n\tby mx.example\r\n"
		"From: <a@example.org>\r\nSubject: old\r\nX-Spam: maybe\r\n"
		"X-Lf: kept\n as is\n";
	struct milter_headers h = { 0 };
	struct mt_buf value = MT_BUF_INIT;

	(void)state;
	parse(&h, S(section));
	EXPECT_RENDER(&h, "Received: from client.example\r\n\tby mx.example\r\n"
		      "From: <a@example.org>\r\nSubject: old\r\nX-Spam: maybe\r\n"
		      "X-Lf: kept\n as is\n");
	milter_headers_insert(&h, 0, "Authentication-Results",
			      "mx.example;\n\tspf=pass", false);
	milter_headers_add(&h, "X-Filter", "a\r\n b", false);
	assert_int_equal(milter_headers_change(&h, 1, "subject", "new\n subject",
					       false), MILTER_CHANGED);
	assert_int_equal(milter_headers_change(&h, 1, "X-Spam", "", false),
			 MILTER_DELETED);
	milter_headers_insert(&h, 2, "X-Second", " two", true);
	EXPECT_RENDER(&h, "Authentication-Results: mx.example;\r\n\tspf=pass\r\n"
		      "Received: from client.example\r\n\tby mx.example\r\n"
		      "X-Second: two\r\n"
		      "From: <a@example.org>\r\nsubject: new\r\n subject\r\n"
		      "X-Lf: kept\n as is\n"
		      "X-Filter: a\r\n b\r\n");
	/* A filter reading it back gets LF folds. */
	milter_field_value(&h.fields[0], false, &value);
	assert_string_equal(mt_buf_cstr(&value), "mx.example;\n\tspf=pass");
	mt_buf_free(&value);
	milter_headers_free(&h);
}

/* Many fields: the list grows past its first allocation. */
static void test_many_fields(void **state)
{
	struct milter_headers h = { 0 };
	struct mt_buf want = MT_BUF_INIT;
	char name[32];

	(void)state;
	for (unsigned int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "X-%u", i);
		milter_headers_insert(&h, 0, name, "v", false);
	}
	for (unsigned int i = 100; i-- > 0;)
		mt_buf_appendf(&want, "X-%u: v\r\n", i);
	expect_render(&h, want.data, want.len);
	mt_buf_free(&want);
	milter_headers_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_whole),
		cmocka_unit_test(test_scan_bytewise),
		cmocka_unit_test(test_scan_final_prefixes),
		cmocka_unit_test(test_parse_folded),
		cmocka_unit_test(test_parse_last_without_crlf),
		cmocka_unit_test(test_scan_then_parse),
		cmocka_unit_test(test_field_value),
		cmocka_unit_test(test_add_insert),
		cmocka_unit_test(test_add_values),
		cmocka_unit_test(test_change),
		cmocka_unit_test(test_change_delete),
		cmocka_unit_test(test_edit_sequence_render),
		cmocka_unit_test(test_many_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
