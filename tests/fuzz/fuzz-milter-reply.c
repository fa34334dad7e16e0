/* fuzz-milter-reply.c — libFuzzer target for the MTA's reader of what a
 * mail filter (milter) sends back (lib-mail/milter-proto.c): the packet
 * framing, mt_milter_take(), and the decoder of every reply and
 * modification, mt_milter_reply_decode().
 *
 * Properties, beyond "no crash, no over-read, no leak":
 *  - framing: the stream taken whole and fed in chunks (whole, octet by
 *    octet, 1..7, random) gives the same packets at the same offsets and
 *    ends the same way (BAD at the same offset, or MORE with the same
 *    unread rest); every step equals a reference reading of the 4-octet
 *    length (BAD exactly for 0 or over max, before the data is in);
 *  - decode accepts exactly what a reference written from the rules in
 *    milter-proto.h accepts (it splits the data at its NULs rather than
 *    walking a cursor), and a refusal has a reason; the reply's code is
 *    the packet's; mt_milter_reply_name() names exactly the 21 codes;
 *  - every accepted reply: each string starts inside the packet and ends
 *    with its NUL inside it; header names are 1..255 octets of 33..126
 *    but ':', values have no bare CR and a line break only before SP or
 *    HTAB; addresses, parameters and reasons have no control octet and
 *    keep their bounds; a REPLYCODE's text is valid for a reference
 *    reply-text checker, its code is 400..599 and its first 3 digits;
 *    OPTNEG's numbers are the packet's first 12 octets, its stages in
 *    range, and the macro lists account for every other octet;
 *  - round trip: ADDHEADER, INSHEADER, CHGHEADER, ADDRCPT, ADDRCPT_PAR,
 *    DELRCPT, CHGFROM, QUARANTINE, REPLYCODE, REPLBODY and the codes
 *    without data, re-encoded here by hand from the decoded reply, are
 *    the very packet read; an ADDHEADER written back with
 *    mt_milter_put_header() carries the same data;
 *  - mt_milter_reply_text_valid() equals the reference checker on the
 *    text of every REPLYCODE packet, accepted or not.
 *
 * Input: [mode][chunk seed] then the filter's stream. mode bits 0-1:
 * chunking (whole, octet by octet, 1..7, random); bits 2-3: the length
 * bound given to mt_milter_take(): MT_MILTER_PACKET_MAX, 64, 16, 1.
 * Trust boundary: the bytes a filter writes on its socket, untrusted
 * (Sendmail libmilter mfdef.h; RFC 5322 2.2, 5321 4.2, 3463 2). */
#include "fuzz.h"

#include <string.h>

#include "buf.h"
#include "milter-proto.h"

/* Every reply code, as mfdef.h lists them. */
static const char known_codes[] = "+-24abcdefhilmpqrstyO";

struct step {
	size_t offset, used;
	char code;
};

/* What a pass over the stream found: its packets and how it ended. */
struct pass {
	struct step *steps;
	size_t count;
	enum mt_milter_take end;	/* MORE or BAD */
	size_t end_offset;		/* where the unread rest or the bad length starts */
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- Reference rules (milter-proto.h) ---- */

static bool is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

static bool ref_name(const uint8_t *s, size_t len)
{
	if (len < 1 || len > 255)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f || s[i] == ':')
			return false;
	return true;
}

/* CRLF counts as LF; then no CR may be left and every LF must be
 * followed by SP or HTAB. */
static bool ref_value(const uint8_t *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\r' && i + 1 < len && s[i + 1] == '\n')
			i++;
		else if (s[i] == '\r')
			return false;
		if (s[i] == '\n' && (i + 1 == len || (s[i + 1] != ' ' && s[i + 1] != '\t')))
			return false;
	}
	return true;
}

static bool ref_clean(const uint8_t *s, size_t len, size_t max, bool empty_ok)
{
	if ((len == 0 && !empty_ok) || len > max)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* RFC 3463 2 at the start of t: 1 digit "." 1*3 digits "." 1*3 digits,
 * then SP, HTAB or the end. */
static bool ref_enhanced(const uint8_t *t, size_t len)
{
	size_t i = 0, n[3];

	for (int k = 0; k < 3; k++) {
		size_t from = i;

		while (i < len && is_digit(t[i]))
			i++;
		n[k] = i - from;
		if (k < 2 && (i >= len || t[i++] != '.'))
			return false;
	}
	return n[0] == 1 && n[1] >= 1 && n[1] <= 3 && n[2] >= 1 && n[2] <= 3 &&
		(i == len || t[i] == ' ' || t[i] == '\t');
}

/* One line of a reply text (its CR, if any, still on the end). */
static bool ref_text_line(const uint8_t *l, size_t len, const uint8_t *first, bool last)
{
	if (!last) {
		if (len == 0 || l[len - 1] != '\r')
			return false;
		len--;
	}
	if (len < 3 || memcmp(l, first, 3) != 0 || (l[0] != '4' && l[0] != '5') ||
	    !is_digit(l[1]) || !is_digit(l[2]))
		return false;
	if (len == 3)
		return last;
	if (l[3] != (last ? ' ' : '-'))
		return false;
	for (size_t i = 4; i < len; i++)
		if ((l[i] < 0x20 && l[i] != '\t') || l[i] == 0x7f)
			return false;
	return !ref_enhanced(l + 4, len - 4) || l[4] == l[0];
}

/* The text split at LF; every line but the last must end with CR. */
static bool ref_text(const uint8_t *s, size_t len)
{
	size_t lines = 0, from = 0;

	if (len == 0 || len > MT_MILTER_REPLY_TEXT_MAX)
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '\n')
			continue;
		if (++lines > MT_MILTER_REPLY_LINES_MAX ||
		    !ref_text_line(s + from, i - from, s, i == len))
			return false;
		from = i + 1;
	}
	return true;
}

/* The data as exactly n NUL-terminated fields (pointers and lengths). */
static bool ref_fields(const uint8_t *d, size_t len, size_t n,
		       const uint8_t **f, size_t *fl)
{
	size_t k = 0, from = 0;

	if (len == 0 || d[len - 1] != '\0')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (d[i] != '\0')
			continue;
		if (k == n)
			return false;
		f[k] = d + from;
		fl[k++] = i - from;
		from = i + 1;
	}
	return k == n;
}

static bool ref_optneg(const uint8_t *d, size_t len)
{
	bool seen[MT_MILTER_STAGE_COUNT] = { false };
	size_t at = 12;

	if (len < 12)
		return false;
	while (at < len) {
		if (len - at < 4)
			return false;
		uint32_t stage = be32(d + at);

		at += 4;
		if (stage >= MT_MILTER_STAGE_COUNT || seen[stage])
			return false;
		seen[stage] = true;
		const uint8_t *nul = memchr(d + at, '\0', len - at);

		if (nul == NULL)
			return false;
		at = (size_t)(nul - d) + 1;
	}
	return true;
}

/* Should code + d[0..len) decode? */
static bool ref_decode(char code, const uint8_t *d, size_t len)
{
	const uint8_t *f[2];
	size_t fl[2];

	switch (code) {
	case 'a': case 'c': case 'd': case 'r': case 't': case 's': case 'p':
	case '4': case 'f':
		return len == 0;
	case 'b':
		return true;
	case 'i': case 'm':
		if (len < 4)
			return false;
		d += 4;
		len -= 4;
		/* fall through */
	case 'h':
		return ref_fields(d, len, 2, f, fl) && ref_name(f[0], fl[0]) &&
			ref_value(f[1], fl[1]);
	case '+': case '-':
		return ref_fields(d, len, 1, f, fl) &&
			ref_clean(f[0], fl[0], MT_MILTER_ADDRESS_MAX, false);
	case '2': case 'e':
		if (ref_fields(d, len, 1, f, fl))
			return ref_clean(f[0], fl[0], MT_MILTER_ADDRESS_MAX, false);
		return ref_fields(d, len, 2, f, fl) &&
			ref_clean(f[0], fl[0], MT_MILTER_ADDRESS_MAX, false) &&
			ref_clean(f[1], fl[1], MT_MILTER_ARGS_MAX, true);
	case 'q':
		return ref_fields(d, len, 1, f, fl) &&
			ref_clean(f[0], fl[0], MT_MILTER_REASON_MAX, false);
	case 'y':
		return ref_fields(d, len, 1, f, fl) && ref_text(f[0], fl[0]);
	case 'O':
		return ref_optneg(d, len);
	default:
		return false;	/* unknown, and SETSYMLIST outside OPTNEG */
	}
}

/* ---- Checks of one decoded reply ---- */

/* s is a string inside d[0..len) whose NUL is inside too; its length. */
static size_t inside(const char *s, const uint8_t *d, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;

	FUZZ_CHECK(s != NULL && p >= d && p < d + len, "string outside the packet");
	const uint8_t *nul = memchr(p, '\0', (size_t)(d + len - p));

	FUZZ_CHECK(nul != NULL, "string not NUL-terminated inside the packet");
	return (size_t)(nul - p);
}

static void append_be32(struct mt_buf *b, uint32_t v)
{
	uint8_t o[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };

	mt_buf_append(b, o, 4);
}

static void append_field(struct mt_buf *b, const char *s)
{
	mt_buf_append(b, s, strlen(s) + 1);
}

/* The fields' invariants; the data re-encoded by hand into back (false
 * for OPTNEG, whose macro lists' order the reply does not keep). */
static bool check_fields(const struct mt_milter_reply *r, const uint8_t *d,
			 size_t len, struct mt_buf *back)
{
	size_t n;

	switch ((char)r->code) {
	case 'i': case 'm':
		append_be32(back, r->index);
		FUZZ_CHECK(r->index == be32(d), "index is not the first 4 octets");
		/* fall through */
	case 'h':
		n = inside(r->name, d, len);
		FUZZ_CHECK(ref_name((const uint8_t *)r->name, n), "bad header name");
		n = inside(r->value, d, len);
		FUZZ_CHECK(ref_value((const uint8_t *)r->value, n), "bad header value");
		append_field(back, r->name);
		append_field(back, r->value);
		return true;
	case '+': case '-': case '2': case 'e': case 'q':
		n = inside(r->name, d, len);
		FUZZ_CHECK(ref_clean((const uint8_t *)r->name, n, r->code == 'q' ?
				     MT_MILTER_REASON_MAX : MT_MILTER_ADDRESS_MAX, false),
			   "bad address or reason");
		append_field(back, r->name);
		if (r->value != NULL) {
			FUZZ_CHECK(r->code == '2' || r->code == 'e', "value for '%c'", r->code);
			n = inside(r->value, d, len);
			FUZZ_CHECK(ref_clean((const uint8_t *)r->value, n, MT_MILTER_ARGS_MAX, true),
				   "bad ESMTP parameters");
			append_field(back, r->value);
		}
		return true;
	case 'y':
		n = inside(r->name, d, len);
		FUZZ_CHECK(ref_text((const uint8_t *)r->name, n), "bad reply text");
		FUZZ_CHECK(r->reply_code >= 400 && r->reply_code <= 599 &&
			   r->reply_code == (r->name[0] - '0') * 100 + (r->name[1] - '0') * 10 +
			   (r->name[2] - '0'), "reply code %d for '%s'", r->reply_code, r->name);
		append_field(back, r->name);
		return true;
	case 'b':
		FUZZ_CHECK(r->body_len == len && (len == 0 || r->body == d), "REPLBODY is not the data");
		mt_buf_append(back, d, len);
		return true;
	case 'O':
		return false;
	default:
		FUZZ_CHECK(strchr("acdrtsp4f", r->code) != NULL, "decoded '%c'", r->code);
		FUZZ_CHECK(len == 0, "data in a reply without data");
		return true;
	}
}

/* OPTNEG: the numbers are the first 12 octets; the lists cover the rest. */
static void check_optneg(const struct mt_milter_optneg *o, const uint8_t *d, size_t len)
{
	size_t covered = 12;

	FUZZ_CHECK(o->version == be32(d) && o->actions == be32(d + 4) &&
		   o->protocol == be32(d + 8), "OPTNEG numbers");
	for (int s = 0; s < MT_MILTER_STAGE_COUNT; s++) {
		if (o->symlist[s] == NULL)
			continue;
		size_t n = inside(o->symlist[s], d, len);
		const uint8_t *p = (const uint8_t *)o->symlist[s];

		FUZZ_CHECK(p >= d + 16 && be32(p - 4) == (uint32_t)s, "list without its stage");
		covered += 4 + n + 1;
	}
	FUZZ_CHECK(covered == len, "OPTNEG lists cover %zu of %zu octets", covered, len);
}

/* Re-encoded by hand, the reply is the packet read. */
static void check_round_trip(const struct mt_milter_reply *r, const struct mt_buf *back,
			     const uint8_t *wire, size_t used)
{
	struct mt_buf pkt = MT_BUF_INIT;

	append_be32(&pkt, (uint32_t)(back->len + 1));
	mt_buf_append_char(&pkt, (char)r->code);
	if (back->len > 0)
		mt_buf_append(&pkt, back->data, back->len);
	FUZZ_CHECK(pkt.len == used && memcmp(pkt.data, wire, used) == 0,
		   "'%c' re-encoded differs", r->code);
	if (r->code == MT_MILTER_R_ADDHEADER) {
		/* The MTA's HEADER writer: the same data behind 'L'. */
		mt_buf_reset(&pkt);
		mt_milter_put_header(&pkt, r->name, r->value);
		FUZZ_CHECK(pkt.len == used && memcmp(pkt.data, wire, 4) == 0 &&
			   pkt.data[4] == 'L' && memcmp(pkt.data + 5, wire + 5, used - 5) == 0,
			   "put_header differs");
	}
	mt_buf_free(&pkt);
}

/* Decode one packet (from a copy of exactly its size) and check it. */
static void check_packet(const uint8_t *wire, size_t used)
{
	size_t len = used - 5;
	char code = (char)wire[4];
	uint8_t *d = malloc(len > 0 ? len : 1);

	FUZZ_CHECK(d != NULL, "malloc");
	if (len > 0)
		memcpy(d, wire + 5, len);
	struct mt_milter_packet packet = { code, d, len };
	struct mt_milter_reply reply;
	const char *error = NULL;
	bool ok = mt_milter_reply_decode(&packet, &reply, &error);
	bool want = ref_decode(code, d, len);

	FUZZ_CHECK(ok == want, "'%c' (%zu octets): decoded %d, reference %d (%s)",
		   code, len, ok, want, error != NULL ? error : "");
	FUZZ_CHECK(ok || (error != NULL && *error != '\0'), "refused without a reason");
	FUZZ_CHECK((strcmp(mt_milter_reply_name(code), "unknown") != 0) ==
		   (code != '\0' && strchr(known_codes, code) != NULL), "name of '%c'", code);
	if (code == 'y' && len > 0 && memchr(d, '\0', len) != NULL)
		FUZZ_CHECK(mt_milter_reply_text_valid((const char *)d) ==
			   ref_text(d, strlen((const char *)d)), "reply text rule");
	if (ok) {
		struct mt_buf back = MT_BUF_INIT;

		FUZZ_CHECK((char)reply.code == code, "code");
		if (check_fields(&reply, d, len, &back))
			check_round_trip(&reply, &back, wire, used);
		else
			check_optneg(&reply.optneg, d, len);
		mt_buf_free(&back);
	}
	free(d);
}

/* ---- Framing ---- */

/* The whole stream at once, each step against a reading of the length. */
static void take_whole(const uint8_t *s, size_t size, size_t max, struct pass *p)
{
	size_t at = 0;

	for (;;) {
		struct mt_milter_packet packet;
		size_t used = 0, rest = size - at;
		enum mt_milter_take t = mt_milter_take(s + at, rest, max, &packet, &used);
		uint32_t plen = rest >= 4 ? be32(s + at) : 0;
		enum mt_milter_take want = rest < 4 ? MT_MILTER_TAKE_MORE :
			plen == 0 || plen > max ? MT_MILTER_TAKE_BAD :
			plen > rest - 4 ? MT_MILTER_TAKE_MORE : MT_MILTER_TAKE_PACKET;

		FUZZ_CHECK(t == want, "take %d, reference %d at %zu", t, want, at);
		if (t != MT_MILTER_TAKE_PACKET) {
			p->end = t;
			p->end_offset = at;
			return;
		}
		FUZZ_CHECK(used == 4 + (size_t)plen && packet.len == plen - 1 &&
			   packet.data == s + at + 5 && packet.code == (char)s[at + 4],
			   "packet at %zu", at);
		p->steps[p->count++] = (struct step){ at, used, packet.code };
		at += used;
	}
}

/* The stream fed in chunks into a buffer the way a connection reads. */
static void take_chunked(const uint8_t *s, size_t size, size_t max,
			 unsigned int strategy, uint32_t seed, struct pass *p)
{
	struct mt_buf pending = MT_BUF_INIT;
	size_t fed = 0, base = 0;

	p->end = MT_MILTER_TAKE_MORE;
	while (fed < size && p->end != MT_MILTER_TAKE_BAD) {
		size_t n = fuzz_chunk(strategy, &seed, size - fed, 64);
		enum mt_milter_take t;
		struct mt_milter_packet packet;
		size_t used;

		mt_buf_append(&pending, s + fed, n);
		fed += n;
		while ((t = mt_milter_take(pending.data, pending.len, max, &packet,
					   &used)) == MT_MILTER_TAKE_PACKET) {
			p->steps[p->count++] = (struct step){ base, used, packet.code };
			mt_buf_consume(&pending, used);
			base += used;
		}
		p->end = t;
	}
	p->end_offset = base;
	mt_buf_free(&pending);
}

static const size_t max_choice[4] = { MT_MILTER_PACKET_MAX, 64, 16, 1 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };
	uint8_t mode = fuzz_byte(&in);
	uint32_t seed = fuzz_byte(&in);
	size_t max = max_choice[(mode >> 2) & 3];
	/* Every packet takes at least 5 octets. */
	size_t cap = in.len / 5 + 1;
	struct pass whole = { calloc(cap, sizeof(struct step)), 0, MT_MILTER_TAKE_MORE, 0 };
	struct pass chunked = { calloc(cap, sizeof(struct step)), 0, MT_MILTER_TAKE_MORE, 0 };

	FUZZ_CHECK(whole.steps != NULL && chunked.steps != NULL, "calloc");
	take_whole(in.data, in.len, max, &whole);
	take_chunked(in.data, in.len, max, mode & 3, seed, &chunked);
	FUZZ_CHECK(whole.count == chunked.count, "%zu packets whole, %zu chunked",
		   whole.count, chunked.count);
	for (size_t i = 0; i < whole.count; i++)
		FUZZ_CHECK(whole.steps[i].offset == chunked.steps[i].offset &&
			   whole.steps[i].used == chunked.steps[i].used &&
			   whole.steps[i].code == chunked.steps[i].code, "packet %zu differs", i);
	FUZZ_CHECK(whole.end == chunked.end && whole.end_offset == chunked.end_offset,
		   "end %d at %zu whole, %d at %zu chunked", whole.end, whole.end_offset,
		   chunked.end, chunked.end_offset);
	for (size_t i = 0; i < whole.count; i++)
		check_packet(in.data + whole.steps[i].offset, whole.steps[i].used);
	free(whole.steps);
	free(chunked.steps);
	return 0;
}
