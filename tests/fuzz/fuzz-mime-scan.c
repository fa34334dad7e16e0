/* fuzz-mime-scan.c — libFuzzer target for lib-mail/mime-scan.c and
 * imap-bodystructure.c: the streaming MIME scanner, the ENVELOPE / BODY /
 * BODYSTRUCTURE it renders and the structure record.
 *
 * Properties, beyond "no crash, no over-read, no UB, no unbounded
 * recursion or memory":
 *  - the record of the message fed whole equals the record of it fed in
 *    pieces (cut where the input's first octet says);
 *  - the record reads back; every entity's offsets lie within the message
 *    and in order, each inside its parent;
 *  - BODYSTRUCTURE, BODY and ENVELOPE are each one IMAP list, as a strict
 *    reader of RFC 9051 response values reads it;
 *  - every section number found names an entity of the record.
 *
 * Input: the first octet (the piece size), then the message.
 * Trust boundary: message octets from any sender. */
#include "fuzz.h"

#include "buf.h"
#include "imap-bodystructure.h"
#include "mime-scan.h"

#include <string.h>

static void record_of(struct mt_buf *out, const uint8_t *msg, size_t len, size_t step)
{
	struct mt_mime_scan *scan = mt_mime_scan_new();
	for (size_t i = 0; i < len; i += step)
		mt_mime_scan_feed(scan, msg + i, len - i < step ? len - i : step);
	mt_mime_scan_finish(scan);
	unsigned int count;
	const struct mt_mime_entity *e = mt_mime_scan_entities(scan, &count);
	mt_mime_record_write(out, e, count);
	mt_mime_scan_free(&scan);
}

/* A reader of response values as RFC 9051 9 writes them: NIL, numbers,
 * quoted strings (7-bit, '\\' escapes only of '"' and '\\'), literals
 * "{n}" CRLF n octets (no NUL), and lists of them separated by one SP,
 * where a list may follow a list at once ("1*body" of body-type-mpart,
 * "1*address" of an address list). */
static bool read_value(const char **p, const char *end, unsigned int depth);

static bool read_list(const char **p, const char *end, unsigned int depth)
{
	if (depth > 64 || *p >= end || **p != '(')
		return false;
	(*p)++;
	bool first = true;
	while (*p < end && **p != ')') {
		if (!first) {
			if (**p == ' ')
				(*p)++;
			else if (**p != '(' || (*p)[-1] != ')')
				return false;
		}
		if (!read_value(p, end, depth + 1))
			return false;
		first = false;
	}
	if (*p >= end)
		return false;
	(*p)++;
	return true;
}

static bool read_value(const char **p, const char *end, unsigned int depth)
{
	const char *s = *p;
	if (s >= end)
		return false;
	if (*s == '(')
		return read_list(p, end, depth);
	if (*s == '"') {
		for (s++; s < end && *s != '"'; s++) {
			unsigned char c = (unsigned char)*s;
			if (c == '\\') {
				if (++s >= end || (*s != '"' && *s != '\\'))
					return false;
			} else if (c == 0 || c == '\r' || c == '\n' || c >= 0x80) {
				return false;
			}
		}
		if (s >= end)
			return false;
		*p = s + 1;
		return true;
	}
	if (*s == '{') {
		uint64_t n = 0;
		for (s++; s < end && *s >= '0' && *s <= '9'; s++)
			n = n * 10 + (uint64_t)(*s - '0');
		if (end - s < 3 || s[0] != '}' || s[1] != '\r' || s[2] != '\n')
			return false;
		s += 3;
		if ((uint64_t)(end - s) < n || memchr(s, '\0', (size_t)n) != NULL)
			return false;
		*p = s + n;
		return true;
	}
	if (end - s >= 3 && memcmp(s, "NIL", 3) == 0) {
		*p = s + 3;
		return true;
	}
	if (*s < '0' || *s > '9')
		return false;
	while (s < end && *s >= '0' && *s <= '9')
		s++;
	*p = s;
	return true;
}

static bool one_list(const char *value, size_t len)
{
	const char *p = value;
	return read_list(&p, value + len, 0) && p == value + len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	size_t step = (size_t)data[0] % 64 + 1;
	const uint8_t *msg = data + 1;
	size_t len = size - 1;

	struct mt_buf whole = MT_BUF_INIT, pieces = MT_BUF_INIT;
	record_of(&whole, msg, len, len == 0 ? 1 : len);
	record_of(&pieces, msg, len, step);
	FUZZ_CHECK(whole.len == pieces.len && memcmp(whole.data, pieces.data, whole.len) == 0,
		   "the record depends on how the message was cut");

	struct mt_mime_record record;
	FUZZ_CHECK(mt_mime_record_read(&record, whole.data, whole.len), "the record does not read");
	for (unsigned int i = 0; i < record.count; i++) {
		struct mt_mime_part part, parent;
		mt_mime_record_part(&record, i, &part);
		FUZZ_CHECK(part.end_offset <= len, "an entity past the message");
		if (part.parent >= 0) {
			mt_mime_record_part(&record, (unsigned int)part.parent, &parent);
			FUZZ_CHECK(part.header_offset >= parent.body_offset &&
				   part.end_offset <= parent.end_offset, "an entity outside its parent");
		}
	}
	FUZZ_CHECK(one_list(record.bodystructure, record.bodystructure_len), "BODYSTRUCTURE syntax");
	FUZZ_CHECK(one_list(record.body, record.body_len), "BODY syntax");
	FUZZ_CHECK(one_list(record.envelope, record.envelope_len), "ENVELOPE syntax");

	uint32_t path[4];
	for (unsigned int n = 0; n < 4 && n < len; n++) {
		path[n] = (uint32_t)msg[len - 1 - n] % 5;
		struct mt_mime_part part;
		if (mt_mime_record_find(&record, path, n + 1, &part))
			FUZZ_CHECK(part.index < record.count, "a section outside the record");
	}
	mt_buf_free(&whole);
	mt_buf_free(&pieces);
	return 0;
}
