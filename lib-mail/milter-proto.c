/* milter-proto.c — the Sendmail milter protocol (version 6), MTA side:
 * the packets written for a filter, and the filter's packets taken from a
 * stream and decoded (see milter-proto.h for the wire format and the
 * rules each answer must follow).
 *
 * Trust boundary: the writers take the MTA's own strings. Everything read
 * comes from the filter and is untrusted: the length field is checked
 * against the caller's bound as soon as its 4 octets are in, before the
 * caller buffers the packet; every string must end with NUL inside its
 * packet and nothing may follow the last one; each field is checked
 * against its rule before the MTA sees it (header field names RFC 5322
 * 2.2, folds RFC 5322 2.2.3, reply lines RFC 5321 4.2 and 4.2.1, enhanced
 * status codes RFC 3463 2; addresses and reasons without control octets).
 * Pure: no allocation but the caller's buffer, no I/O
 * (tests/unit/test-milter-proto.c, tests/fuzz/fuzz-milter-reply.c).
 *
 * References: Sendmail 8.14+ libmilter: include/libmilter/mfdef.h (the
 * codes), libmilter/engine.c (st_optionneg: OPTNEG and its macro lists),
 * libmilter/smfi.c (smfi_setmlreply: 4xx/5xx, at most 32 lines);
 * Postfix src/milter/milter8.c (the other MTA side). */
#include "milter-proto.h"
#include "smtp-reply.h"

#include <string.h>

#include "buf.h"
#include "log.h"

/* ---- Writing ---- */

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void append_be32(struct mt_buf *out, uint32_t v)
{
	unsigned char be[4];

	put_be32(be, v);
	mt_buf_append(out, be, sizeof(be));
}

/* A string with its NUL, as every string goes on the wire. */
static void append_string(struct mt_buf *out, const char *s)
{
	mt_buf_append(out, s, strlen(s) + 1);
}

/* Start a packet: room for the length, then the command octet. Returns
 * where the length goes, for packet_end(). */
static size_t packet_begin(struct mt_buf *out, char cmd)
{
	static const unsigned char no_length[4];
	size_t start = out->len;

	mt_buf_append(out, no_length, sizeof(no_length));
	mt_buf_append_char(out, cmd);
	return start;
}

/* Fill in the length: the command octet and everything after it. */
static void packet_end(struct mt_buf *out, size_t start)
{
	uint64_t len = out->len - start - 4;

	if (len > UINT32_MAX)
		mt_panic("milter packet of %llu octets", (unsigned long long)len);
	put_be32((unsigned char *)out->data + start, (uint32_t)len);
}

void mt_milter_put_optneg(struct mt_buf *out, uint32_t version,
			  uint32_t actions, uint32_t protocol)
{
	size_t start = packet_begin(out, MT_MILTER_CMD_OPTNEG);

	append_be32(out, version);
	append_be32(out, actions);
	append_be32(out, protocol);
	packet_end(out, start);
}

void mt_milter_put_macros(struct mt_buf *out, enum mt_milter_cmd cmd,
			  const char *const *names, const char *const *values,
			  size_t n)
{
	size_t start = packet_begin(out, MT_MILTER_CMD_MACRO);

	mt_buf_append_char(out, (char)cmd);
	for (size_t i = 0; i < n; i++) {
		if (values[i] == NULL)
			continue;
		append_string(out, names[i]);
		append_string(out, values[i]);
	}
	packet_end(out, start);
}

void mt_milter_put_connect(struct mt_buf *out, const char *hostname,
			   char family, uint16_t port, const char *address)
{
	size_t start = packet_begin(out, MT_MILTER_CMD_CONNECT);

	append_string(out, hostname);
	mt_buf_append_char(out, family);
	/* libmilter's st_connectinfo: SMFIA_UNKNOWN ends the packet. */
	if (family != 'U') {
		unsigned char be[2] = { (unsigned char)(port >> 8), (unsigned char)port };

		mt_buf_append(out, be, sizeof(be));
		append_string(out, address);
	}
	packet_end(out, start);
}

void mt_milter_put_strings(struct mt_buf *out, enum mt_milter_cmd cmd,
			   const char *const *strings, size_t n)
{
	size_t start = packet_begin(out, (char)cmd);

	for (size_t i = 0; i < n; i++)
		append_string(out, strings[i]);
	packet_end(out, start);
}

void mt_milter_put_header(struct mt_buf *out, const char *name,
			  const char *value)
{
	size_t start = packet_begin(out, MT_MILTER_CMD_HEADER);

	append_string(out, name);
	append_string(out, value);
	packet_end(out, start);
}

void mt_milter_put_body(struct mt_buf *out, const void *data, size_t len)
{
	if (len > MT_MILTER_CHUNK_SIZE)
		mt_panic("milter BODY chunk of %zu octets", len);
	size_t start = packet_begin(out, MT_MILTER_CMD_BODY);

	if (len > 0)
		mt_buf_append(out, data, len);
	packet_end(out, start);
}

void mt_milter_put_command(struct mt_buf *out, enum mt_milter_cmd cmd)
{
	packet_end(out, packet_begin(out, (char)cmd));
}

/* ---- Reading ---- */

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		(uint32_t)p[2] << 8 | (uint32_t)p[3];
}

enum mt_milter_take mt_milter_take(const void *buf, size_t len, size_t max,
				   struct mt_milter_packet *packet_r,
				   size_t *used_r)
{
	const unsigned char *p = buf;

	if (len < 4)
		return MT_MILTER_TAKE_MORE;
	uint32_t plen = get_be32(p);

	/* Judge the length before waiting for the packet: a filter cannot
	 * make the caller buffer more than max. */
	if (plen == 0 || plen > max)
		return MT_MILTER_TAKE_BAD;
	if (plen > len - 4)
		return MT_MILTER_TAKE_MORE;
	packet_r->code = (char)p[4];
	packet_r->data = p + 5;
	packet_r->len = plen - 1;
	*used_r = 4 + (size_t)plen;
	return MT_MILTER_TAKE_PACKET;
}

/* The unread rest of a packet's data. */
struct cursor {
	const unsigned char *p;
	size_t left;
};

static bool take_u32(struct cursor *c, uint32_t *v_r)
{
	if (c->left < 4)
		return false;
	*v_r = get_be32(c->p);
	c->p += 4;
	c->left -= 4;
	return true;
}

/* The next string: it must end with NUL before the packet does. */
static bool take_string(struct cursor *c, const char **s_r, size_t *len_r)
{
	const unsigned char *nul = c->left > 0 ? memchr(c->p, '\0', c->left) : NULL;

	if (nul == NULL)
		return false;
	*s_r = (const char *)c->p;
	*len_r = (size_t)(nul - c->p);
	c->left -= *len_r + 1;
	c->p = nul + 1;
	return true;
}

/* Nothing may follow the last field. */
static bool at_end(const struct cursor *c, const char **error_r)
{
	if (c->left == 0)
		return true;
	*error_r = "data after the last field of a milter reply";
	return false;
}

/* RFC 5322 2.2: a field name is printable US-ASCII (33..126) but ':'. */
static bool header_name_valid(const char *name, size_t len)
{
	if (len == 0 || len > MT_MILTER_HEADER_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch < 33 || ch > 126 || ch == ':')
			return false;
	}
	return true;
}

/* A value may be folded (RFC 5322 2.2.3: a line break before WSP), with
 * CRLF or libmilter's LF; a line break anywhere else would start a header
 * line of the filter's making, so a CR must precede LF and a LF must
 * precede SP or HTAB. */
static bool header_value_valid(const char *value, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char next = i + 1 < len ? value[i + 1] : '\0';

		if (value[i] == '\r' && next != '\n')
			return false;
		if (value[i] == '\n' && next != ' ' && next != '\t')
			return false;
	}
	return true;
}

/* No control octet at all (< 0x20, 0x7f): it goes to logs and envelopes. */
static bool text_clean(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch < 0x20 || ch == 0x7f)
			return false;
	}
	return true;
}

/* A string field that is non-empty (unless may_be_empty), within max and
 * without control octets. */
static bool take_clean_string(struct cursor *c, size_t max, bool may_be_empty,
			      const char **s_r)
{
	size_t len;

	return take_string(c, s_r, &len) && (len > 0 || may_be_empty) &&
		len <= max && text_clean(*s_r, len);
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* One reply line (without its CRLF): the code, which must be the first
 * line's, its separator and text. */
static bool reply_line_valid(const char *line, size_t len, const char *first,
			     bool last)
{
	if (len < 3 || (line[0] != '4' && line[0] != '5') ||
	    !is_digit(line[1]) || !is_digit(line[2]) ||
	    memcmp(line, first, 3) != 0)
		return false;
	if (len == 3)
		return last;
	if (line[3] != (last ? ' ' : '-'))
		return false;
	const char *t = line + 4;
	size_t tlen = len - 4;

	for (size_t i = 0; i < tlen; i++) {
		unsigned char ch = (unsigned char)t[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return false;
	}
	return mt_smtp_enhanced_code_len(t, tlen) == 0 || t[0] == line[0];
}

bool mt_milter_reply_text_valid(const char *text)
{
	size_t len = strnlen(text, MT_MILTER_REPLY_TEXT_MAX + 1);

	if (len == 0 || len > MT_MILTER_REPLY_TEXT_MAX)
		return false;
	const char *line = text, *end = text + len;

	for (unsigned int lines = 1; lines <= MT_MILTER_REPLY_LINES_MAX; lines++) {
		const char *crlf = strstr(line, "\r\n");
		bool last = crlf == NULL;

		if (!reply_line_valid(line, (size_t)((last ? end : crlf) - line), text, last))
			return false;
		if (last)
			return true;
		line = crlf + 2;
	}
	return false;
}

/* The decoders, one per shape; each fills reply from the packet's data. */
typedef bool reply_decode_fn(struct cursor *c, struct mt_milter_reply *reply,
			     const char **error_r);

static bool decode_empty(struct cursor *c, struct mt_milter_reply *reply,
			 const char **error_r)
{
	if (c->left == 0)
		return true;
	*error_r = "data in a milter reply that takes none";
	return false;
}

/* ADDHEADER: name, value. */
static bool decode_header(struct cursor *c, struct mt_milter_reply *reply,
			  const char **error_r)
{
	size_t name_len, value_len;

	if (!take_string(c, &reply->name, &name_len) ||
	    !take_string(c, &reply->value, &value_len)) {
		*error_r = "milter header name or value not NUL-terminated";
		return false;
	}
	if (!header_name_valid(reply->name, name_len)) {
		*error_r = "invalid header field name from milter";
		return false;
	}
	if (!header_value_valid(reply->value, value_len)) {
		*error_r = "milter header value with a bare CR or an unfolded line break";
		return false;
	}
	return at_end(c, error_r);
}

/* INSHEADER, CHGHEADER: the index, then as ADDHEADER. */
static bool decode_indexed_header(struct cursor *c, struct mt_milter_reply *reply,
				  const char **error_r)
{
	if (!take_u32(c, &reply->index)) {
		*error_r = "milter header change without its index";
		return false;
	}
	return decode_header(c, reply, error_r);
}

/* ADDRCPT, DELRCPT: the address. */
static bool decode_address(struct cursor *c, struct mt_milter_reply *reply,
			   const char **error_r)
{
	if (!take_clean_string(c, MT_MILTER_ADDRESS_MAX, false, &reply->name)) {
		*error_r = "invalid address from milter";
		return false;
	}
	return at_end(c, error_r);
}

/* ADDRCPT_PAR, CHGFROM: the address, then the ESMTP parameters if any. */
static bool decode_address_args(struct cursor *c, struct mt_milter_reply *reply,
				const char **error_r)
{
	if (!take_clean_string(c, MT_MILTER_ADDRESS_MAX, false, &reply->name)) {
		*error_r = "invalid address from milter";
		return false;
	}
	if (c->left > 0 &&
	    !take_clean_string(c, MT_MILTER_ARGS_MAX, true, &reply->value)) {
		*error_r = "invalid ESMTP parameters from milter";
		return false;
	}
	return at_end(c, error_r);
}

static bool decode_quarantine(struct cursor *c, struct mt_milter_reply *reply,
			      const char **error_r)
{
	if (!take_clean_string(c, MT_MILTER_REASON_MAX, false, &reply->name)) {
		*error_r = "invalid quarantine reason from milter";
		return false;
	}
	return at_end(c, error_r);
}

static bool decode_replycode(struct cursor *c, struct mt_milter_reply *reply,
			     const char **error_r)
{
	const char *text;
	size_t len;

	if (!take_string(c, &text, &len) || !mt_milter_reply_text_valid(text)) {
		*error_r = "invalid reply text from milter";
		return false;
	}
	reply->name = text;
	reply->reply_code = (text[0] - '0') * 100 + (text[1] - '0') * 10 + (text[2] - '0');
	return at_end(c, error_r);
}

static bool decode_replbody(struct cursor *c, struct mt_milter_reply *reply,
			    const char **error_r)
{
	reply->body = c->p;
	reply->body_len = c->left;
	c->left = 0;
	return true;
}

/* One (stage, macro list) pair of an OPTNEG answer. */
static bool take_symlist(struct cursor *c, struct mt_milter_optneg *optneg,
			 const char **error_r)
{
	uint32_t stage;
	const char *list;
	size_t len;

	if (!take_u32(c, &stage)) {
		*error_r = "milter OPTNEG macro list without its stage";
		return false;
	}
	if (stage >= MT_MILTER_STAGE_COUNT) {
		*error_r = "milter OPTNEG macro list for an unknown stage";
		return false;
	}
	if (optneg->symlist[stage] != NULL) {
		*error_r = "milter OPTNEG macro list for one stage twice";
		return false;
	}
	if (!take_string(c, &list, &len)) {
		*error_r = "milter OPTNEG macro list not NUL-terminated";
		return false;
	}
	optneg->symlist[stage] = list;
	return true;
}

static bool decode_optneg(struct cursor *c, struct mt_milter_reply *reply,
			  const char **error_r)
{
	struct mt_milter_optneg *optneg = &reply->optneg;

	if (!take_u32(c, &optneg->version) || !take_u32(c, &optneg->actions) ||
	    !take_u32(c, &optneg->protocol)) {
		*error_r = "milter OPTNEG shorter than 12 octets";
		return false;
	}
	while (c->left > 0)
		if (!take_symlist(c, optneg, error_r))
			return false;
	return true;
}

/* libmilter sends the macro lists inside its OPTNEG answer, never alone. */
static bool decode_setsymlist(struct cursor *c, struct mt_milter_reply *reply,
			      const char **error_r)
{
	*error_r = "milter SETSYMLIST outside OPTNEG";
	return false;
}

/* Every reply code: its name for logs and its decoder. */
static const struct reply_kind {
	enum mt_milter_reply_code code;
	const char *name;
	reply_decode_fn *decode;
} reply_kinds[] = {
	{ MT_MILTER_R_CONTINUE, "continue", decode_empty },
	{ MT_MILTER_R_ACCEPT, "accept", decode_empty },
	{ MT_MILTER_R_REJECT, "reject", decode_empty },
	{ MT_MILTER_R_TEMPFAIL, "tempfail", decode_empty },
	{ MT_MILTER_R_DISCARD, "discard", decode_empty },
	{ MT_MILTER_R_REPLYCODE, "replycode", decode_replycode },
	{ MT_MILTER_R_SKIP, "skip", decode_empty },
	{ MT_MILTER_R_PROGRESS, "progress", decode_empty },
	{ MT_MILTER_R_ADDHEADER, "addheader", decode_header },
	{ MT_MILTER_R_INSHEADER, "insheader", decode_indexed_header },
	{ MT_MILTER_R_CHGHEADER, "chgheader", decode_indexed_header },
	{ MT_MILTER_R_ADDRCPT, "addrcpt", decode_address },
	{ MT_MILTER_R_ADDRCPT_PAR, "addrcpt_par", decode_address_args },
	{ MT_MILTER_R_DELRCPT, "delrcpt", decode_address },
	{ MT_MILTER_R_CHGFROM, "chgfrom", decode_address_args },
	{ MT_MILTER_R_REPLBODY, "replbody", decode_replbody },
	{ MT_MILTER_R_QUARANTINE, "quarantine", decode_quarantine },
	{ MT_MILTER_R_OPTNEG, "optneg", decode_optneg },
	{ MT_MILTER_R_SHUTDOWN, "shutdown", decode_empty },
	{ MT_MILTER_R_CONN_FAIL, "conn_fail", decode_empty },
	{ MT_MILTER_R_SETSYMLIST, "setsymlist", decode_setsymlist },
};

static const struct reply_kind *reply_kind_find(char code)
{
	for (size_t i = 0; i < sizeof(reply_kinds) / sizeof(reply_kinds[0]); i++)
		if ((char)reply_kinds[i].code == code)
			return &reply_kinds[i];
	return NULL;
}

const char *mt_milter_reply_name(char code)
{
	const struct reply_kind *kind = reply_kind_find(code);

	return kind != NULL ? kind->name : "unknown";
}

bool mt_milter_reply_decode(const struct mt_milter_packet *packet,
			    struct mt_milter_reply *reply_r, const char **error_r)
{
	const struct reply_kind *kind = reply_kind_find(packet->code);
	struct cursor c = { packet->data, packet->len };

	/* The code even when unknown, for the caller's log line. */
	*reply_r = (struct mt_milter_reply){
		.code = (enum mt_milter_reply_code)(unsigned char)packet->code,
	};
	if (kind == NULL) {
		*error_r = "unknown milter reply code";
		return false;
	}
	return kind->decode(&c, reply_r, error_r);
}
