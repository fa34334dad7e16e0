/* fuzz-imap-write.c — libFuzzer target for lib-mail/imap-write.c (strings
 * in IMAP responses) and lib-mail/imap-utf7.c (modified UTF-7 mailbox
 * names), both fed untrusted octets: header fields, client-chosen names.
 *
 * Properties, beyond "no crash, no over-read, no leak":
 *  - whatever a value's octets, each of string / nstring / astring under
 *    every flag combination is read back by the server's own command
 *    reader (imap-parse.c) as exactly one argument with the value's
 *    octets (NUL as 0x80 outside a literal8), followed by the next one;
 *  - the form is the one the rules allow: quoted only when 7-bit or
 *    (UTF8 flag) well-formed UTF-8, with no CR, LF or NUL, and at most
 *    MT_IMAP_QUOTED_MAX octets; a literal8 only with the BINARY flag and
 *    a NUL in the value;
 *  - modified UTF-7 decoding is strict, so one name has one spelling:
 *    what decodes re-encodes to the very input, and its UTF-8 is well
 *    formed; what encodes (well-formed UTF-8 without controls) decodes
 *    back to the input and is 7-bit printable; a refusal leaves the
 *    output untouched.
 *
 * Input: [flags] then the value. flags bits 0-1: MT_IMAP_WRITE_UTF8 and
 * MT_IMAP_WRITE_BINARY for the round trip (every combination is also
 * checked against the form rules).
 * Trust boundary: arbitrary octets (RFC 9051 4 and 9, RFC 3501 5.1.3). */
#include "fuzz.h"

#include "buf.h"
#include "imap-parse.h"
#include "imap-utf7.h"
#include "imap-write.h"
#include "utf8.h"

static const struct mt_imap_limits limits = {
	.line_max = 8192, .literal_max = 1 << 20, .command_max = 1 << 21,
	.depth_max = 2, .args_max = 8, .literal_plus = true,
};

static void read_back(const struct mt_buf *written, const uint8_t *v, size_t len)
{
	struct mt_buf cmd = MT_BUF_INIT;
	mt_buf_append_str(&cmd, "t X ");
	mt_buf_append(&cmd, written->data, written->len);
	mt_buf_append_str(&cmd, " END\r\n");
	struct mt_imap_parser p;
	mt_imap_parser_init(&p, &limits);
	size_t off = 0, used;
	enum mt_imap_parse r;
	while ((r = mt_imap_parser_feed(&p, cmd.data + off, cmd.len - off, &used)) ==
	       MT_IMAP_PARSE_LITERAL)
		off += used;
	FUZZ_CHECK(r == MT_IMAP_PARSE_DONE, "not read back: %d %s", (int)r,
		   p.error != NULL ? p.error : "");
	FUZZ_CHECK(off + used == cmd.len, "read back short");
	FUZZ_CHECK(p.command.count == 2, "%zu arguments", p.command.count);
	const struct mt_imap_arg *a = &p.command.args[0];
	FUZZ_CHECK(a->type != MT_IMAP_ARG_LIST && a->len == len, "length changed");
	for (size_t i = 0; i < len; i++) {
		uint8_t want = v[i] == 0 && !a->binary ? 0x80 : v[i];
		FUZZ_CHECK((uint8_t)a->str[i] == want, "octet %zu changed", i);
	}
	FUZZ_CHECK(strcmp(p.command.args[1].str, "END") == 0, "next argument lost");
	mt_imap_parser_free(&p);
	mt_buf_free(&cmd);
}

static void check_form(const struct mt_buf *w, const uint8_t *v, size_t len,
		       unsigned int flags, bool astring)
{
	const bool has_nul = memchr(v, 0, len) != NULL;
	if (w->len > 0 && w->data[0] == '"') {
		FUZZ_CHECK(len <= MT_IMAP_QUOTED_MAX, "long quoted");
		FUZZ_CHECK(memchr(v, '\r', len) == NULL && memchr(v, '\n', len) == NULL &&
			   !has_nul, "quoted CR, LF or NUL");
		bool eight = false;
		for (size_t i = 0; i < len; i++)
			eight |= v[i] >= 0x80;
		FUZZ_CHECK(!eight || ((flags & MT_IMAP_WRITE_UTF8) != 0 &&
				      mt_utf8_valid(v, len)), "8-bit quoted");
	} else if (w->len > 1 && w->data[0] == '~' && w->data[1] == '{') {
		FUZZ_CHECK((flags & MT_IMAP_WRITE_BINARY) != 0 && has_nul,
			   "literal8 without need or permission");
	} else if (w->len > 0 && w->data[0] == '{') {
		FUZZ_CHECK(memchr(w->data, 0, w->len) == NULL, "NUL in a literal");
	} else {
		FUZZ_CHECK(astring && len > 0 && w->len == len &&
			   memcmp(w->data, v, len) == 0, "bare value");
		for (size_t i = 0; i < len; i++)
			FUZZ_CHECK(v[i] == ']' || mt_imap_is_atom_char(v[i]),
				   "atom octet %02x", v[i]);
	}
}

/* buf holds exactly the len octets at v (memcmp wants no NULL). */
static bool same(const struct mt_buf *buf, const uint8_t *v, size_t len)
{
	return buf->len == len && (len == 0 || memcmp(buf->data, v, len) == 0);
}

static void check_utf7(const uint8_t *v, size_t len)
{
	struct mt_buf out = MT_BUF_INIT, back = MT_BUF_INIT;
	const char *error = NULL;
	mt_buf_append_str(&out, "p");
	if (mt_imap_utf7_decode(&out, (const char *)v, len, &error)) {
		FUZZ_CHECK(mt_utf8_valid((const unsigned char *)out.data + 1, out.len - 1),
			   "decoded to bad UTF-8");
		FUZZ_CHECK(mt_imap_utf7_encode(&back, out.data + 1, out.len - 1),
			   "decoded name does not encode");
		FUZZ_CHECK(same(&back, v, len),
			   "two spellings of one name");
	} else {
		FUZZ_CHECK(error != NULL && out.len == 1 && strcmp(out.data, "p") == 0,
			   "refusal changed the output");
	}
	mt_buf_reset(&out);
	mt_buf_reset(&back);
	if (mt_imap_utf7_encode(&out, (const char *)v, len)) {
		FUZZ_CHECK(mt_utf8_valid(v, len), "encoded bad UTF-8");
		for (size_t i = 0; i < out.len; i++)
			FUZZ_CHECK(out.data[i] >= 0x20 && out.data[i] <= 0x7e,
				   "not printable 7-bit");
		FUZZ_CHECK(mt_imap_utf7_decode(&back, out.data, out.len, &error),
			   "own spelling refused: %s", error);
		FUZZ_CHECK(same(&back, v, len),
			   "round trip changed the name");
	} else {
		FUZZ_CHECK(out.len == 0, "refusal changed the output");
	}
	mt_buf_free(&out);
	mt_buf_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };
	const unsigned int trip = fuzz_byte(&in) & 3u;
	const uint8_t *v = in.data;
	const size_t len = in.len;
	for (unsigned int flags = 0; flags < 4; flags++) {
		for (int kind = 0; kind < 3; kind++) {
			struct mt_buf w = MT_BUF_INIT;
			if (kind == 0)
				mt_imap_write_string(&w, v, len, flags);
			else if (kind == 1)
				mt_imap_write_nstring(&w, v, len, flags);
			else
				mt_imap_write_astring(&w, v, len, flags);
			check_form(&w, v, len, flags, kind == 2);
			if (flags == trip)
				read_back(&w, v, len);
			mt_buf_free(&w);
		}
	}
	check_utf7(v, len);
	return 0;
}
