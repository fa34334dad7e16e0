/* imap-bodystructure.h — a message's MIME structure (mime-scan) as IMAP
 * reports it: the ENVELOPE, BODY and BODYSTRUCTURE strings, rendered once
 * and kept with the part table in a structure record (the store keeps the
 * record beside the body, written at delivery and shared by every copy),
 * so that FETCH ENVELOPE / BODY / BODYSTRUCTURE / BODY[part] / BINARY[part]
 * read a few hundred octets instead of parsing the message.
 *
 * The record (big-endian, version 1):
 *   'M' 1, u32 entity count, per entity 32 octets (kind, transfer
 *   encoding, flags, pad, u32 parent + 1, u64 header, body and end
 *   offsets), then three u32-length-prefixed strings: BODYSTRUCTURE, BODY,
 *   ENVELOPE of the top entity.
 * Offsets are the scanned octets' (the shared body's); the reader adds
 * what is stored before them (a per-recipient prefix belongs to the top
 * header).
 *
 * Rendering (RFC 9051 7.5.2): types and subtypes lower case as scanned,
 * parameters as written (RFC 2231 forms not joined), the Content-* values
 * unfolded; a missing Content-Type is ("text" "plain" ("charset"
 * "us-ascii")) or in a multipart/digest ("message" "rfc822" NIL); a
 * multipart without a part gets one empty text/plain part, a
 * message/rfc822 without a message an empty envelope and body; an entity
 * kept a leaf for the limits (a multipart without a boundary, too deep,
 * too many parts) is application/octet-stream. Strings are written as
 * imap-write writes them without the session's UTF-8 flag: a quoted string
 * of 7-bit text, else a literal, which every client may be sent.
 *
 * Trust boundary: the entities hold untrusted header values (any sender);
 * a record read back from the store is checked before use (a damaged one
 * is refused, never followed out of bounds).
 * RFCs: 9051 6.4.5 (section part numbers, HEADER, TEXT, MIME), 7.5.2
 * (ENVELOPE, BODY, BODYSTRUCTURE and their grammar), 2045 6.1 (the
 * encodings BINARY decodes), 2046 5.1.5, 3516. */
#ifndef MT_IMAP_BODYSTRUCTURE_H
#define MT_IMAP_BODYSTRUCTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "mime-scan.h"

enum mt_mime_encoding {
	MT_MIME_ENC_IDENTITY,		/* none, 7bit, 8bit, binary */
	MT_MIME_ENC_BASE64,
	MT_MIME_ENC_QUOTED_PRINTABLE,
	MT_MIME_ENC_UNKNOWN,		/* BINARY answers NO [UNKNOWN-CTE] */
};

/* The entity's structure as BODYSTRUCTURE (extended) or BODY writes it. */
void mt_imap_write_body(struct mt_buf *out, const struct mt_mime_entity *entities,
			unsigned int count, unsigned int index, bool extended);
/* The ENVELOPE of a message header's entity (the top, or an encapsulated
 * message). */
void mt_imap_write_envelope(struct mt_buf *out, const struct mt_mime_entity *entity);

/* Append the structure record of a finished scan to out. */
void mt_mime_record_write(struct mt_buf *out, const struct mt_mime_entity *entities,
			  unsigned int count);

struct mt_mime_record {
	const unsigned char *table;
	unsigned int count;
	const char *bodystructure, *body, *envelope;
	size_t bodystructure_len, body_len, envelope_len;
};

struct mt_mime_part {
	enum mt_mime_kind kind;
	enum mt_mime_encoding encoding;
	unsigned int index;
	int parent;
	uint64_t header_offset, body_offset, end_offset;
};

/* Read a record (pointers into data, which must stay); false if damaged. */
bool mt_mime_record_read(struct mt_mime_record *record, const void *data, size_t len);
/* Entity index of the record (index < count). */
void mt_mime_record_part(const struct mt_mime_record *record, unsigned int index,
			 struct mt_mime_part *part_r);
/* The entity a section's part numbers (RFC 9051 6.4.5: "1", "3.1", ...)
 * name, depth numbers in path; false if there is none. depth 0 is the top
 * entity (the message). */
bool mt_mime_record_find(const struct mt_mime_record *record, const uint32_t *path,
			 unsigned int depth, struct mt_mime_part *part_r);
/* The encapsulated message of a message part (for part.HEADER / TEXT):
 * false if part is not a message part or holds none. */
bool mt_mime_record_message(const struct mt_mime_record *record,
			    const struct mt_mime_part *part, struct mt_mime_part *message_r);

#endif
