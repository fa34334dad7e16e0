/* test-imap-write.c — unit tests for lib-mail/imap-write.c (IMAP strings
 * in responses) and lib-mail/imap-utf7.c (modified UTF-7 mailbox names):
 * which form each value takes (atom, quoted, literal, literal8, NIL) with
 * and without UTF8=ACCEPT; escaping; NUL in literals (a FETCH's literal
 * and literal8, whole or streamed in pieces); every value read
 * back by the server's own command reader (imap-parse.c) as the octets
 * written; RFC 3501's modified UTF-7 example both ways, and the spellings
 * a strict decoder refuses. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "imap-parse.h"
#include "imap-utf7.h"
#include "imap-write.h"

static const struct mt_imap_limits limits = {
	.line_max = 8192, .literal_max = 100000, .command_max = 200000,
	.depth_max = 4, .args_max = 40, .literal_plus = true,
};

enum kind { STRING, NSTRING, ASTRING };

static void write_kind(struct mt_buf *out, enum kind kind, const char *v,
		       size_t len, unsigned int flags)
{
	if (kind == STRING)
		mt_imap_write_string(out, v, len, flags);
	else if (kind == NSTRING)
		mt_imap_write_nstring(out, v, len, flags);
	else
		mt_imap_write_astring(out, v, len, flags);
}

static void expect(enum kind kind, const char *v, size_t len, unsigned int flags,
		   const char *want, size_t want_len)
{
	struct mt_buf out = MT_BUF_INIT;
	write_kind(&out, kind, v, len, flags);
	if (out.len != want_len || memcmp(out.data, want, want_len) != 0)
		fail_msg("wrote [%.*s], want [%.*s]", (int)out.len, out.data,
			 (int)want_len, want);
	mt_buf_free(&out);
}
#define EXPECT(kind, v, flags, want) \
	expect(kind, v, sizeof(v) - 1, flags, want, sizeof(want) - 1)

static void test_forms(void **state)
{
	(void)state;
	EXPECT(ASTRING, "INBOX", 0, "INBOX");
	EXPECT(ASTRING, "a]b", 0, "a]b");
	EXPECT(ASTRING, "", 0, "\"\"");
	EXPECT(ASTRING, "two words", 0, "\"two words\"");
	EXPECT(ASTRING, "a%b", 0, "\"a%b\"");
	EXPECT(ASTRING, "a*", 0, "\"a*\"");
	EXPECT(ASTRING, "(x)", 0, "\"(x)\"");
	EXPECT(ASTRING, "{3}", 0, "\"{3}\"");
	EXPECT(STRING, "INBOX", 0, "\"INBOX\"");
	EXPECT(STRING, "say \"hi\" \\o/", 0, "\"say \\\"hi\\\" \\\\o/\"");
	EXPECT(STRING, "tab\there", 0, "\"tab\there\"");
	EXPECT(STRING, "line\r\nnext", 0, "{10}\r\nline\r\nnext");
	EXPECT(STRING, "bare\nLF", 0, "{7}\r\nbare\nLF");
	/* 8-bit: a literal for IMAP4rev1, quoted UTF-8 once enabled; not
	 * UTF-8 at all: a literal either way. */
	EXPECT(STRING, "caf\xc3\xa9", 0, "{5}\r\ncaf\xc3\xa9");
	EXPECT(STRING, "caf\xc3\xa9", MT_IMAP_WRITE_UTF8, "\"caf\xc3\xa9\"");
	EXPECT(ASTRING, "caf\xc3\xa9", MT_IMAP_WRITE_UTF8, "\"caf\xc3\xa9\"");
	EXPECT(STRING, "caf\xe9", MT_IMAP_WRITE_UTF8, "{4}\r\ncaf\xe9");
	EXPECT(STRING, "\xed\xa0\x80", MT_IMAP_WRITE_UTF8, "{3}\r\n\xed\xa0\x80");
	/* NUL: 0x80 in a literal, a literal8 only where binary is allowed. */
	EXPECT(STRING, "a\0b", 0, "{3}\r\na\x80" "b");
	EXPECT(STRING, "a\0b", MT_IMAP_WRITE_BINARY, "~{3}\r\na\0b");
	EXPECT(STRING, "a\r\nb", MT_IMAP_WRITE_BINARY, "{4}\r\na\r\nb");
	/* NIL */
	expect(NSTRING, NULL, 0, 0, "NIL", 3);
	EXPECT(NSTRING, "NIL", 0, "\"NIL\"");
	EXPECT(NSTRING, "", 0, "\"\"");
}

static void test_long(void **state)
{
	(void)state;
	char v[MT_IMAP_QUOTED_MAX + 1];
	memset(v, 'x', sizeof(v));
	struct mt_buf out = MT_BUF_INIT;
	mt_imap_write_string(&out, v, MT_IMAP_QUOTED_MAX, 0);
	assert_int_equal(out.len, MT_IMAP_QUOTED_MAX + 2);
	assert_int_equal(out.data[0], '"');
	mt_buf_reset(&out);
	mt_imap_write_astring(&out, v, sizeof(v), 0);
	char want[32];
	snprintf(want, sizeof(want), "{%zu}\r\n", sizeof(v));
	assert_int_equal(out.len, strlen(want) + sizeof(v));
	assert_memory_equal(out.data, want, strlen(want));
	mt_buf_reset(&out);
	mt_imap_write_literal_prefix(&out, UINT64_C(5000000000), true);
	assert_string_equal(mt_buf_cstr(&out), "~{5000000000}\r\n");
	mt_buf_free(&out);
}

/* A FETCH's literal: literal8 only for BINARY octets with a NUL, else NULs
 * as 0x80 (RFC 9051 4.3.1, RFC 3516 4.3); streamed in pieces through
 * mt_imap_write_literal_data, the same octets. */
static void test_literal(void **state)
{
	(void)state;
	static const struct {
		const char *data;
		size_t len;
		bool binary;
		const char *want;
		size_t want_len;
	} cases[] = {
		{ "a\0b\0cde", 7, false, "{7}\r\na\x80" "b\x80" "cde", 12 },
		{ "a\0b\0cde", 7, true, "~{7}\r\na\0b\0cde", 13 },
		{ "plain", 5, true, "{5}\r\nplain", 10 },
		{ "\0", 1, false, "{1}\r\n\x80", 6 },
		{ "", 0, true, "{0}\r\n", 5 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_buf out = MT_BUF_INIT;
		mt_imap_write_literal(&out, cases[i].data, cases[i].len, cases[i].binary);
		assert_int_equal(out.len, cases[i].want_len);
		assert_memory_equal(out.data != NULL ? out.data : "", cases[i].want,
				    cases[i].want_len);
		mt_buf_free(&out);
	}
	/* Piece by piece (a 64 KiB read at a time in the store): the same. */
	const char whole[] = "\0x\0\0y\0";
	struct mt_buf once = MT_BUF_INIT, pieces = MT_BUF_INIT;
	mt_imap_write_literal_data(&once, whole, sizeof(whole) - 1);
	for (size_t i = 0; i < sizeof(whole) - 1; i++)
		mt_imap_write_literal_data(&pieces, whole + i, 1);
	assert_int_equal(once.len, sizeof(whole) - 1);
	assert_null(memchr(once.data, 0, once.len));
	assert_int_equal(pieces.len, once.len);
	assert_memory_equal(pieces.data, once.data, once.len);
	mt_buf_free(&once);
	mt_buf_free(&pieces);
}

/* Whatever is written, the command reader gets back the octets written
 * (NUL as 0x80 outside a literal8). */
static void read_back(enum kind kind, const char *v, size_t len,
		      unsigned int flags)
{
	struct mt_buf cmd = MT_BUF_INIT;
	mt_buf_append_str(&cmd, "t1 X ");
	write_kind(&cmd, kind, v, len, flags);
	mt_buf_append_str(&cmd, " END\r\n");
	struct mt_imap_parser p;
	mt_imap_parser_init(&p, &limits);
	size_t off = 0, used;
	enum mt_imap_parse r;
	while ((r = mt_imap_parser_feed(&p, cmd.data + off, cmd.len - off, &used)) ==
	       MT_IMAP_PARSE_LITERAL)
		off += used;
	if (r != MT_IMAP_PARSE_DONE)
		fail_msg("not read back (%d: %s): [%s]", (int)r,
			 p.error != NULL ? p.error : "", mt_buf_cstr(&cmd));
	assert_int_equal(p.command.count, 2);
	const struct mt_imap_arg *a = &p.command.args[0];
	assert_int_equal(a->len, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char want = (unsigned char)v[i];
		if (want == 0 && !a->binary)
			want = 0x80;
		assert_int_equal((unsigned char)a->str[i], want);
	}
	assert_string_equal(p.command.args[1].str, "END");
	mt_imap_parser_free(&p);
	mt_buf_free(&cmd);
}

static void test_read_back(void **state)
{
	(void)state;
	static const struct { const char *v; size_t len; } values[] = {
		{ "INBOX", 5 }, { "", 0 }, { "a b", 3 }, { "\"\\", 2 },
		{ "x\r\ny", 4 }, { "caf\xc3\xa9", 5 }, { "\xff\xfe", 2 },
		{ "a\0b", 3 }, { "NIL", 3 }, { "]", 1 }, { "(", 1 }, { "{1}", 3 },
	};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		for (unsigned int flags = 0; flags < 4; flags++)
			for (int kind = STRING; kind <= ASTRING; kind++)
				read_back((enum kind)kind, values[i].v,
					  values[i].len, flags);
	/* Every single octet, alone and between letters. */
	for (unsigned int c = 0; c < 256; c++) {
		char v[3] = { 'a', (char)c, 'b' };
		for (unsigned int flags = 0; flags < 4; flags++) {
			read_back(ASTRING, v + 1, 1, flags);
			read_back(STRING, v, 3, flags);
		}
	}
}

static void utf7_both(const char *utf8, const char *utf7)
{
	struct mt_buf out = MT_BUF_INIT;
	const char *error = NULL;
	assert_true(mt_imap_utf7_encode(&out, utf8, strlen(utf8)));
	assert_string_equal(mt_buf_cstr(&out), utf7);
	mt_buf_reset(&out);
	if (!mt_imap_utf7_decode(&out, utf7, strlen(utf7), &error))
		fail_msg("decode %s: %s", utf7, error);
	assert_string_equal(mt_buf_cstr(&out), utf8);
	mt_buf_free(&out);
}

static void test_utf7(void **state)
{
	(void)state;
	/* RFC 3501 5.1.3's example. */
	utf7_both("~peter/mail/\xe5\x8f\xb0\xe5\x8c\x97/\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
		  "~peter/mail/&U,BTFw-/&ZeVnLIqe-");
	utf7_both("INBOX", "INBOX");
	utf7_both("", "");
	utf7_both("Tom & Jerry", "Tom &- Jerry");
	utf7_both("&", "&-");
	utf7_both("Entw\xc3\xbc" "rfe", "Entw&APw-rfe");
	utf7_both("\xc3\xa9t\xc3\xa9", "&AOk-t&AOk-");
	/* Outside the BMP: a surrogate pair (U+1F600). */
	utf7_both("\xf0\x9f\x98\x80", "&2D3eAA-");
	/* Every bit length left over at a shift's end (1, 2, 3 units). */
	utf7_both("\xc3\xa9", "&AOk-");
	utf7_both("\xc3\xa9\xc3\xa9", "&AOkA6Q-");
	utf7_both("\xc3\xa9\xc3\xa9\xc3\xa9", "&AOkA6QDp-");
}

static void utf7_refused(const char *utf7)
{
	struct mt_buf out = MT_BUF_INIT;
	mt_buf_append_str(&out, "kept");
	const char *error = NULL;
	if (mt_imap_utf7_decode(&out, utf7, strlen(utf7), &error))
		fail_msg("decoded %s as [%s]", utf7, mt_buf_cstr(&out));
	assert_non_null(error);
	assert_string_equal(mt_buf_cstr(&out), "kept");
	mt_buf_free(&out);
}

static void test_utf7_strict(void **state)
{
	(void)state;
	utf7_refused("&AOk");		/* unterminated */
	utf7_refused("&AOk-&AOk-");	/* back to back: "&AOkA6Q-" is the one */
	utf7_refused("&-&");		/* unterminated after a good one */
	utf7_refused("&AEE-");		/* "A" encoded: printable ASCII */
	utf7_refused("&AOl-");		/* bits left over */
	utf7_refused("&AO-");		/* ends mid-character */
	utf7_refused("&2D0-");		/* ends mid-character */
	utf7_refused("&2D3YPQ-");	/* high surrogate then high */
	utf7_refused("&3gA-");		/* low surrogate alone */
	utf7_refused("&2D0-x");		/* high surrogate cut off */
	utf7_refused("&A/k-");		/* '/' is ',' in modified BASE64 */
	utf7_refused("&AAA-");		/* NUL */
	utf7_refused("&AIA-");		/* C1 control */
	utf7_refused("caf\xc3\xa9");	/* 8-bit */
	utf7_refused("a\tb");		/* control */

	struct mt_buf out = MT_BUF_INIT;
	assert_false(mt_imap_utf7_encode(&out, "caf\xe9", 4));
	assert_false(mt_imap_utf7_encode(&out, "a\nb", 3));
	assert_false(mt_imap_utf7_encode(&out, "a\x7f", 2));
	assert_false(mt_imap_utf7_encode(&out, "\xc2\x85", 2));
	assert_false(mt_imap_utf7_encode(&out, "\xe9\xc3\xa9", 3));
	assert_int_equal(out.len, 0);
	mt_buf_free(&out);
}

/* Every UTF-8 character of the BMP and some beyond: encode, decode, same. */
static void test_utf7_every_char(void **state)
{
	(void)state;
	struct mt_buf in = MT_BUF_INIT, enc = MT_BUF_INIT, dec = MT_BUF_INIT;
	for (uint32_t cp = 0xa0; cp < 0x110000; cp += cp < 0x10000 ? 1 : 97) {
		if (cp >= 0xd800 && cp <= 0xdfff)
			continue;
		char b[4];
		size_t n;
		if (cp < 0x800) {
			b[0] = (char)(0xc0 | cp >> 6); b[1] = (char)(0x80 | (cp & 0x3f)); n = 2;
		} else if (cp < 0x10000) {
			b[0] = (char)(0xe0 | cp >> 12); b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
			b[2] = (char)(0x80 | (cp & 0x3f)); n = 3;
		} else {
			b[0] = (char)(0xf0 | cp >> 18); b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
			b[2] = (char)(0x80 | (cp >> 6 & 0x3f)); b[3] = (char)(0x80 | (cp & 0x3f));
			n = 4;
		}
		mt_buf_reset(&in);
		mt_buf_append_str(&in, "x");
		mt_buf_append(&in, b, n);
		mt_buf_append(&in, b, n);
		mt_buf_append_str(&in, "&y");
		mt_buf_reset(&enc);
		mt_buf_reset(&dec);
		const char *error = NULL;
		if (!mt_imap_utf7_encode(&enc, in.data, in.len))
			fail_msg("U+%04X not encoded", (unsigned int)cp);
		if (!mt_imap_utf7_decode(&dec, enc.data, enc.len, &error))
			fail_msg("U+%04X: %s: %s", (unsigned int)cp, enc.data, error);
		if (dec.len != in.len || memcmp(dec.data, in.data, in.len) != 0)
			fail_msg("U+%04X came back different", (unsigned int)cp);
	}
	mt_buf_free(&in);
	mt_buf_free(&enc);
	mt_buf_free(&dec);
}

static void test_seqset(void **state)
{
	(void)state;
	const uint32_t n[] = { 1, 2, 3, 7, 9, 10, 4294967294u, 4294967295u };
	struct mt_buf out = MT_BUF_INIT;
	mt_imap_write_seqset(&out, n, 0);
	assert_int_equal(out.len, 0);
	mt_imap_write_seqset(&out, n, 1);
	assert_string_equal(mt_buf_cstr(&out), "1");
	mt_buf_reset(&out);
	mt_imap_write_seqset(&out, n, 8);
	assert_string_equal(mt_buf_cstr(&out), "1:3,7,9:10,4294967294:4294967295");
	/* It reads back as the same numbers. */
	struct mt_imap_seq_range ranges[8];
	struct mt_imap_seqset set;
	assert_true(mt_imap_seqset_parse(mt_buf_cstr(&out), &set, ranges, 8));
	for (uint32_t k = 1; k < 12; k++) {
		bool in = k <= 3 || k == 7 || k == 9 || k == 10;
		assert_int_equal(mt_imap_seqset_contains(&set, k, 4294967295u), in);
	}
	mt_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_seqset),
		cmocka_unit_test(test_long),
		cmocka_unit_test(test_literal),
		cmocka_unit_test(test_read_back),
		cmocka_unit_test(test_utf7),
		cmocka_unit_test(test_utf7_strict),
		cmocka_unit_test(test_utf7_every_char),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
