/* milter-headers.h — a message's header section as the MTA's mail filters
 * see and edit it: found in the content as it arrives, split into fields
 * (each kept as its own octets, folding and all, so a field nobody
 * changes is stored exactly as it came), handed to a filter as name and
 * value, changed by the filter's ADDHEADER, INSHEADER and CHGHEADER, and
 * written back in order.
 *
 * Indexes follow Sendmail's libmilter (smfi_insheader, smfi_chgheader)
 * as Postfix applies them: INSHEADER's index is a position among all
 * fields (0: before the first; past the end: after the last); CHGHEADER's
 * is the n-th field of that name, counted from 1, case-insensitively; an
 * empty value deletes it, and one of an n-th field that does not exist is
 * added at the end (libmilter: "if the header does not exist, it is
 * added"). The MTA's own trace fields (its Received:, an added Date: or
 * Message-ID:) are fields of the list like the client's.
 *
 * Trust boundary: the section is the client's (any octets within the
 * session's line and size limits); values from a filter were checked by
 * lib-mail/milter-proto.c (a LF only before SP or HTAB, no bare CR), and
 * are written with CRLF line ends, so neither side can start a new field
 * or end the section early. RFC 5322 2.2 (fields, folding), 3.6. */
#ifndef MT_MTA_MILTER_HEADERS_H
#define MT_MTA_MILTER_HEADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_buf;

struct milter_field {
	char *raw;		/* "Name: value\r\n" with its folded lines */
	size_t len;
	size_t name_len;	/* the name's octets at raw[0..name_len) */
};

struct milter_headers {
	struct milter_field *fields;
	size_t count, cap;
};

/* Where the header section of data[0..len) ends. */
enum milter_head_scan {
	MILTER_HEAD_MORE,	/* no end yet: more content is needed */
	MILTER_HEAD_END,	/* *head_len_r octets of fields, then *sep_len_r
				 * of the empty line (2) or none (0: the body
				 * starts with a line that is no field) */
};
/* final: data is the whole message (no end found means: all fields; a
 * last line without CRLF counts as one). */
enum milter_head_scan milter_head_scan(const char *data, size_t len, bool final,
				       size_t *head_len_r, size_t *sep_len_r);

void milter_headers_free(struct milter_headers *h);
/* Append the fields of data[0..len) (a header section without the empty
 * line, as milter_head_scan() found it). A last field without CRLF gets
 * one. */
void milter_headers_parse(struct milter_headers *h, const char *data, size_t len);

/* The value a filter gets: after the colon, CRLF of folds as LF, without
 * the final CRLF, and without one leading space unless leadspc. */
void milter_field_value(const struct milter_field *f, bool leadspc,
			struct mt_buf *out);
/* The name, NUL-terminated, into out. */
void milter_field_name(const struct milter_field *f, struct mt_buf *out);

/* Modifications (the value as a filter sent it: LF folds; leadspc: it
 * already holds its leading space). */
void milter_headers_add(struct milter_headers *h, const char *name,
			const char *value, bool leadspc);
void milter_headers_insert(struct milter_headers *h, uint32_t index,
			   const char *name, const char *value, bool leadspc);
/* What it did: for logs. */
enum milter_change { MILTER_CHANGED, MILTER_DELETED, MILTER_ADDED, MILTER_NOTHING };
enum milter_change milter_headers_change(struct milter_headers *h, uint32_t index,
					 const char *name, const char *value,
					 bool leadspc);

/* Append every field, in order, to out. */
void milter_headers_render(const struct milter_headers *h, struct mt_buf *out);
/* Octets milter_headers_render() writes. */
size_t milter_headers_size(const struct milter_headers *h);

#endif
