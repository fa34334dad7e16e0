/* mime-scan.h — the MIME structure of a message, found in one streaming
 * pass as its octets arrive (at delivery: LMTP DATA, IMAP APPEND), so that
 * the message is never read again to answer FETCH ENVELOPE, BODYSTRUCTURE
 * or a part section.
 *
 * The scan is push-driven: mt_mime_scan_feed() takes the message in pieces
 * of any size, as the delivery streams them to the store (a 50 MB message
 * is never held whole); only each entity's header block (up to
 * MT_MIME_HEADER_MAX octets) and the first octets of each line (enough to
 * tell a boundary delimiter) are kept. The result is a tree of entities in
 * document order:
 *
 *   leaf       a single part (text/plain, an image, ...): header + body
 *   multipart  a multipart entity with a boundary: its children are the
 *              parts between its delimiter lines (RFC 2046 5.1.1)
 *   message    a message/rfc822 or message/global part: its one child is
 *              the encapsulated message (RFC 2046 5.2.1)
 *
 * each with the offsets of its header, its body and its end (the CRLF
 * before a delimiter line belongs to the delimiter), its body's line count
 * and the unfolded values of the header fields IMAP reports (the
 * Content-* fields; and for the top entity and every encapsulated message
 * the ENVELOPE fields).
 *
 * Malformed input has a defined structure, never a failure: a header that
 * never ends makes the rest of the message header; a multipart without a
 * boundary, or deeper than MT_MIME_DEPTH_MAX, is a leaf (rendered as
 * application/octet-stream); a boundary never closed ends at the end of its
 * parent; a multipart without a part gets an empty one when rendered;
 * beyond MT_MIME_PARTS_MAX entities, delimiter lines are body text; a
 * header line without a colon is skipped; 8-bit octets and NULs are kept as
 * they are for the writer (imap-write) to quote or literal. Lines end with
 * LF or CRLF; a bare CR is an ordinary octet.
 *
 * Trust boundary: the message octets are untrusted (any sender); memory is
 * bounded by MT_MIME_PARTS_MAX entities, MT_MIME_HEADER_MAX octets of each
 * header and MT_MIME_FIELD_MAX octets of each kept field value.
 * RFCs: 2045 5-6 (Content-Type, Content-Transfer-Encoding and their
 * defaults), 2046 5.1 (multipart, boundary delimiters, preamble and
 * epilogue, transport padding), 2046 5.1.5 (multipart/digest's default
 * message/rfc822), 2046 5.2.1 and 6532 3.7 (message/rfc822, message/global),
 * 5322 2.2 (header fields, unfolding), 9051 7.5.2 (the fields ENVELOPE and
 * BODYSTRUCTURE report). */
#ifndef MT_MIME_SCAN_H
#define MT_MIME_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_MIME_DEPTH_MAX 16		/* nested multipart / message levels */
#define MT_MIME_PARTS_MAX 1000		/* entities in one message */
#define MT_MIME_HEADER_MAX 65536	/* octets of one header kept for its fields */
#define MT_MIME_FIELD_MAX 16384		/* octets of one field value kept */

enum mt_mime_kind {
	MT_MIME_LEAF,
	MT_MIME_MULTIPART,
	MT_MIME_MESSAGE,
};

/* The header fields kept: the Content-* ones of every entity, the
 * ENVELOPE ones of a message's (top or encapsulated) header. */
enum mt_mime_field {
	MT_MIME_CONTENT_TYPE,
	MT_MIME_CONTENT_TRANSFER_ENCODING,
	MT_MIME_CONTENT_ID,
	MT_MIME_CONTENT_DESCRIPTION,
	MT_MIME_CONTENT_MD5,
	MT_MIME_CONTENT_DISPOSITION,
	MT_MIME_CONTENT_LANGUAGE,
	MT_MIME_CONTENT_LOCATION,
	MT_MIME_DATE,
	MT_MIME_SUBJECT,
	MT_MIME_FROM,
	MT_MIME_SENDER,
	MT_MIME_REPLY_TO,
	MT_MIME_TO,
	MT_MIME_CC,
	MT_MIME_BCC,
	MT_MIME_IN_REPLY_TO,
	MT_MIME_MESSAGE_ID,
	MT_MIME_FIELD_COUNT
};

struct mt_mime_value {
	char *data;		/* NULL: the field is absent */
	size_t len;
};

struct mt_mime_entity {
	enum mt_mime_kind kind;
	int parent;			/* index, -1 for the top entity */
	unsigned int depth;		/* 0 for the top entity */
	bool default_message;		/* in multipart/digest: no type is message/rfc822 */
	bool is_message_header;		/* top or encapsulated: ENVELOPE fields kept */
	bool default_type;		/* no valid Content-Type: the default applies */
	uint64_t header_offset, body_offset, end_offset;
	uint64_t body_lines;		/* lines of the body (LF-ended, and a last partial one) */
	struct mt_mime_value fields[MT_MIME_FIELD_COUNT];
	/* The parsed Content-Type (lower case) and, for a multipart, its
	 * boundary; "" when absent. */
	char type[64], subtype[64];
	char *boundary;
	size_t boundary_len;
};

struct mt_mime_scan;

struct mt_mime_scan *mt_mime_scan_new(void);
void mt_mime_scan_free(struct mt_mime_scan **scan_p);
/* The next len octets of the message. */
void mt_mime_scan_feed(struct mt_mime_scan *scan, const void *data, size_t len);
/* The message is complete: every open entity ends here. Further feeds are
 * ignored. Idempotent. */
void mt_mime_scan_finish(struct mt_mime_scan *scan);
/* The entities, in document order (the top one first); valid until the
 * scan is freed, complete after mt_mime_scan_finish(). */
const struct mt_mime_entity *mt_mime_scan_entities(const struct mt_mime_scan *scan,
						   unsigned int *count_r);

/* A Content-Type or Content-Disposition value's parameters: calls fn for
 * each "attribute=value" after the first ';' (value unquoted, attribute as
 * written, RFC 2231 "name*0*" forms as they are). Comments (RFC 822 "(...)")
 * are skipped. value need not be NUL-terminated. */
typedef void mt_mime_param_cb_t(void *context, const char *name, size_t name_len,
				const char *value, size_t value_len);
void mt_mime_params(const char *value, size_t len, mt_mime_param_cb_t *fn, void *context);
/* The first token of such a value (before '/' or ';', comments and spaces
 * skipped), and for Content-Type the subtype after '/': pointers into value. */
void mt_mime_type_token(const char *value, size_t len, const char **type_r, size_t *type_len_r,
			const char **subtype_r, size_t *subtype_len_r);

#endif
