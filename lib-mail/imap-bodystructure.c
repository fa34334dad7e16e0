/* imap-bodystructure.c — ENVELOPE, BODY and BODYSTRUCTURE from a scanned
 * MIME tree, the structure record that keeps them, and part lookup by
 * section number (see imap-bodystructure.h).
 *
 * Trust boundary: header values from any sender (written only through
 * imap-write, so none breaks the response syntax); records from the store,
 * checked before use. RFCs: 9051 6.4.5, 7.5.2; 2045 6.1; 2046 5.1.5. */
#include "imap-bodystructure.h"

#include <string.h>
#include <strings.h>

#include "imap-write.h"
#include "mime-address.h"

#define RECORD_VERSION 1
#define RECORD_ENTITY_SIZE 32
#define FLAG_OPAQUE 0x1u

static const char empty_text_part[] = "(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 0 0";
static const char empty_envelope[] = "(NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL)";

static const struct mt_mime_value *field(const struct mt_mime_entity *e, enum mt_mime_field f)
{
	return e->fields[f].data != NULL ? &e->fields[f] : NULL;
}

static void write_nstring_field(struct mt_buf *out, const struct mt_mime_entity *e,
				enum mt_mime_field f)
{
	const struct mt_mime_value *v = field(e, f);
	if (v == NULL)
		mt_buf_append_str(out, "NIL");
	else
		mt_imap_write_string(out, v->data, v->len, 0);
}

/* An entity written as a leaf although declared otherwise. */
static bool opaque(const struct mt_mime_entity *e)
{
	return e->kind == MT_MIME_LEAF &&
	       (strcmp(e->type, "multipart") == 0 ||
		(strcmp(e->type, "message") == 0 &&
		 (strcmp(e->subtype, "rfc822") == 0 || strcmp(e->subtype, "global") == 0)));
}

static enum mt_mime_encoding encoding_of(const struct mt_mime_entity *e)
{
	const struct mt_mime_value *v = field(e, MT_MIME_CONTENT_TRANSFER_ENCODING);
	if (v == NULL)
		return MT_MIME_ENC_IDENTITY;
	const char *t, *sub;
	size_t t_len, sub_len;
	mt_mime_type_token(v->data, v->len, &t, &t_len, &sub, &sub_len);
	static const struct { const char *name; enum mt_mime_encoding enc; } names[] = {
		{ "7bit", MT_MIME_ENC_IDENTITY }, { "8bit", MT_MIME_ENC_IDENTITY },
		{ "binary", MT_MIME_ENC_IDENTITY }, { "base64", MT_MIME_ENC_BASE64 },
		{ "quoted-printable", MT_MIME_ENC_QUOTED_PRINTABLE },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == t_len && strncasecmp(names[i].name, t, t_len) == 0)
			return names[i].enc;
	return MT_MIME_ENC_UNKNOWN;
}

struct param_writer {
	struct mt_buf *out;
	unsigned int count;
};

static void write_param(void *context, const char *name, size_t name_len,
			const char *value, size_t value_len)
{
	struct param_writer *w = context;
	mt_buf_append_str(w->out, w->count++ == 0 ? "(" : " ");
	mt_imap_write_string(w->out, name, name_len, 0);
	mt_buf_append_char(w->out, ' ');
	mt_imap_write_string(w->out, value, value_len, 0);
}

/* body-fld-param of a Content-Type or Content-Disposition value. */
static void write_params(struct mt_buf *out, const struct mt_mime_value *v)
{
	struct param_writer w = { out, 0 };
	if (v != NULL)
		mt_mime_params(v->data, v->len, write_param, &w);
	mt_buf_append_str(out, w.count == 0 ? "NIL" : ")");
}

/* body-fld-dsp SP body-fld-lang SP body-fld-loc */
static void write_disposition_language_location(struct mt_buf *out,
						const struct mt_mime_entity *e)
{
	const struct mt_mime_value *d = field(e, MT_MIME_CONTENT_DISPOSITION);
	const char *t = NULL, *sub;
	size_t t_len = 0, sub_len;
	if (d != NULL)
		mt_mime_type_token(d->data, d->len, &t, &t_len, &sub, &sub_len);
	if (t_len == 0) {
		mt_buf_append_str(out, "NIL");
	} else {
		mt_buf_append_char(out, '(');
		mt_imap_write_string(out, t, t_len, 0);
		mt_buf_append_char(out, ' ');
		write_params(out, d);
		mt_buf_append_char(out, ')');
	}
	mt_buf_append_char(out, ' ');

	/* Content-Language: "en, de" (RFC 3282), comments skipped */
	const struct mt_mime_value *l = field(e, MT_MIME_CONTENT_LANGUAGE);
	struct mt_buf tags = MT_BUF_INIT;
	unsigned int n = 0;
	for (size_t i = 0; l != NULL && i < l->len;) {
		while (i < l->len && (l->data[i] == ',' || l->data[i] == ' ' || l->data[i] == '\t'))
			i++;
		if (i < l->len && l->data[i] == '(') {
			while (i < l->len && l->data[i] != ')')
				i++;
			i++;
			continue;
		}
		size_t start = i;
		while (i < l->len && l->data[i] != ',' && l->data[i] != ' ' &&
		       l->data[i] != '\t' && l->data[i] != '(')
			i++;
		if (i > start) {
			if (n++ > 0)
				mt_buf_append_char(&tags, ' ');
			mt_imap_write_string(&tags, l->data + start, i - start, 0);
		}
	}
	if (n == 0)
		mt_buf_append_str(out, "NIL");
	else if (n == 1)
		mt_buf_append(out, tags.data, tags.len);
	else {
		mt_buf_append_char(out, '(');
		mt_buf_append(out, tags.data, tags.len);
		mt_buf_append_char(out, ')');
	}
	mt_buf_free(&tags);
	mt_buf_append_char(out, ' ');
	write_nstring_field(out, e, MT_MIME_CONTENT_LOCATION);
}

/* An address-list field as ENVELOPE has it: NIL when absent or empty. */
static void write_address_field(struct mt_buf *out, const struct mt_mime_entity *e,
				enum mt_mime_field f)
{
	const struct mt_mime_value *v = field(e, f);
	if (v == NULL)
		mt_buf_append_str(out, "NIL");
	else
		mt_mime_write_addresses(out, v->data, v->len, 0);
}

void mt_imap_write_envelope(struct mt_buf *out, const struct mt_mime_entity *e)
{
	mt_buf_append_char(out, '(');
	write_nstring_field(out, e, MT_MIME_DATE);
	mt_buf_append_char(out, ' ');
	write_nstring_field(out, e, MT_MIME_SUBJECT);
	struct mt_buf from = MT_BUF_INIT;
	write_address_field(&from, e, MT_MIME_FROM);
	mt_buf_append_char(out, ' ');
	mt_buf_append(out, from.data, from.len);
	/* RFC 9051 7.5.2: an absent or empty Sender or Reply-To is the From. */
	static const enum mt_mime_field defaulted[] = { MT_MIME_SENDER, MT_MIME_REPLY_TO };
	for (size_t i = 0; i < sizeof(defaulted) / sizeof(defaulted[0]); i++) {
		mt_buf_append_char(out, ' ');
		size_t at = out->len;
		write_address_field(out, e, defaulted[i]);
		if (out->len - at == 3 && memcmp(out->data + at, "NIL", 3) == 0) {
			out->len = at;
			mt_buf_append(out, from.data, from.len);
		}
	}
	mt_buf_free(&from);
	static const enum mt_mime_field lists[] = { MT_MIME_TO, MT_MIME_CC, MT_MIME_BCC };
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		mt_buf_append_char(out, ' ');
		write_address_field(out, e, lists[i]);
	}
	mt_buf_append_char(out, ' ');
	write_nstring_field(out, e, MT_MIME_IN_REPLY_TO);
	mt_buf_append_char(out, ' ');
	write_nstring_field(out, e, MT_MIME_MESSAGE_ID);
	mt_buf_append_char(out, ')');
}

/* The next child of parent after index after (or the first for after =
 * parent): children follow their parent in document order, before the
 * parent's next sibling. */
static int next_child(const struct mt_mime_entity *entities, unsigned int count,
		      unsigned int parent, unsigned int after)
{
	for (unsigned int i = after + 1; i < count && entities[i].depth > entities[parent].depth; i++)
		if (entities[i].parent == (int)parent)
			return (int)i;
	return -1;
}

static void write_leaf(struct mt_buf *out, const struct mt_mime_entity *entities,
		       unsigned int count, unsigned int index, bool extended)
{
	const struct mt_mime_entity *e = &entities[index];
	bool as_octets = opaque(e);
	mt_buf_append_char(out, '(');
	if (as_octets) {
		mt_buf_append_str(out, "\"application\" \"octet-stream\" NIL");
	} else {
		mt_imap_write_string(out, e->type, strlen(e->type), 0);
		mt_buf_append_char(out, ' ');
		mt_imap_write_string(out, e->subtype, strlen(e->subtype), 0);
		mt_buf_append_char(out, ' ');
		const struct mt_mime_value *ct = field(e, MT_MIME_CONTENT_TYPE);
		if (e->default_type && strcmp(e->type, "text") == 0)
			mt_buf_append_str(out, "(\"charset\" \"us-ascii\")");
		else
			write_params(out, e->default_type ? NULL : ct);
	}
	mt_buf_append_char(out, ' ');
	write_nstring_field(out, e, MT_MIME_CONTENT_ID);
	mt_buf_append_char(out, ' ');
	write_nstring_field(out, e, MT_MIME_CONTENT_DESCRIPTION);
	mt_buf_append_char(out, ' ');
	const struct mt_mime_value *enc = field(e, MT_MIME_CONTENT_TRANSFER_ENCODING);
	if (enc == NULL || enc->len == 0)
		mt_buf_append_str(out, "\"7bit\"");
	else
		mt_imap_write_string(out, enc->data, enc->len, 0);
	mt_buf_appendf(out, " %llu", (unsigned long long)(e->end_offset - e->body_offset));
	if (!as_octets && e->kind == MT_MIME_MESSAGE) {
		int child = next_child(entities, count, index, index);
		mt_buf_append_char(out, ' ');
		if (child < 0) {
			mt_buf_append_str(out, empty_envelope);
			mt_buf_append_str(out, " ");
			mt_buf_append_str(out, empty_text_part);
			mt_buf_append_str(out, extended ? " NIL NIL NIL NIL)" : ")");
		} else {
			mt_imap_write_envelope(out, &entities[child]);
			mt_buf_append_char(out, ' ');
			mt_imap_write_body(out, entities, count, (unsigned int)child, extended);
		}
		mt_buf_appendf(out, " %llu", (unsigned long long)e->body_lines);
	} else if (!as_octets && strcmp(e->type, "text") == 0) {
		mt_buf_appendf(out, " %llu", (unsigned long long)e->body_lines);
	}
	if (extended) {
		mt_buf_append_char(out, ' ');
		write_nstring_field(out, e, MT_MIME_CONTENT_MD5);
		mt_buf_append_char(out, ' ');
		write_disposition_language_location(out, e);
	}
	mt_buf_append_char(out, ')');
}

void mt_imap_write_body(struct mt_buf *out, const struct mt_mime_entity *entities,
			unsigned int count, unsigned int index, bool extended)
{
	const struct mt_mime_entity *e = &entities[index];
	if (e->kind != MT_MIME_MULTIPART) {
		write_leaf(out, entities, count, index, extended);
		return;
	}
	mt_buf_append_char(out, '(');
	int child = next_child(entities, count, index, index);
	if (child < 0) {
		mt_buf_append_str(out, empty_text_part);
		mt_buf_append_str(out, extended ? " NIL NIL NIL NIL)" : ")");
	}
	for (; child >= 0; child = next_child(entities, count, index, (unsigned int)child))
		mt_imap_write_body(out, entities, count, (unsigned int)child, extended);
	mt_buf_append_char(out, ' ');
	mt_imap_write_string(out, e->subtype, strlen(e->subtype), 0);
	if (extended) {
		mt_buf_append_char(out, ' ');
		write_params(out, field(e, MT_MIME_CONTENT_TYPE));
		mt_buf_append_char(out, ' ');
		write_disposition_language_location(out, e);
	}
	mt_buf_append_char(out, ')');
}

/* The record */

static void put_be32(struct mt_buf *out, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)(v >> 24), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 8), (unsigned char)v };
	mt_buf_append(out, b, sizeof(b));
}

static void put_be64(struct mt_buf *out, uint64_t v)
{
	put_be32(out, (uint32_t)(v >> 32));
	put_be32(out, (uint32_t)v);
}

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const unsigned char *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static void put_string(struct mt_buf *out, size_t len_at)
{
	uint32_t len = (uint32_t)(out->len - len_at - 4);
	unsigned char *p = (unsigned char *)out->data + len_at;
	p[0] = (unsigned char)(len >> 24);
	p[1] = (unsigned char)(len >> 16);
	p[2] = (unsigned char)(len >> 8);
	p[3] = (unsigned char)len;
}

void mt_mime_record_write(struct mt_buf *out, const struct mt_mime_entity *entities,
			  unsigned int count)
{
	mt_buf_append_char(out, 'M');
	mt_buf_append_char(out, RECORD_VERSION);
	put_be32(out, count);
	for (unsigned int i = 0; i < count; i++) {
		const struct mt_mime_entity *e = &entities[i];
		unsigned char head[4] = { (unsigned char)e->kind, (unsigned char)encoding_of(e),
					  opaque(e) ? FLAG_OPAQUE : 0, 0 };
		mt_buf_append(out, head, sizeof(head));
		put_be32(out, (uint32_t)(e->parent + 1));
		put_be64(out, e->header_offset);
		put_be64(out, e->body_offset);
		put_be64(out, e->end_offset);
	}
	for (int which = 0; which < 3; which++) {
		size_t len_at = out->len;
		put_be32(out, 0);
		if (which < 2)
			mt_imap_write_body(out, entities, count, 0, which == 0);
		else
			mt_imap_write_envelope(out, &entities[0]);
		put_string(out, len_at);
	}
}

bool mt_mime_record_read(struct mt_mime_record *record, const void *data, size_t len)
{
	const unsigned char *p = data;
	memset(record, 0, sizeof(*record));
	if (len < 6 || p[0] != 'M' || p[1] != RECORD_VERSION)
		return false;
	uint32_t count = get_be32(p + 2);
	if (count == 0 || count > MT_MIME_PARTS_MAX || (len - 6) / RECORD_ENTITY_SIZE < count)
		return false;
	record->table = p + 6;
	record->count = count;
	size_t at = 6 + (size_t)count * RECORD_ENTITY_SIZE;
	const char **strings[3] = { &record->bodystructure, &record->body, &record->envelope };
	size_t *lens[3] = { &record->bodystructure_len, &record->body_len, &record->envelope_len };
	for (int i = 0; i < 3; i++) {
		if (len - at < 4)
			return false;
		uint32_t n = get_be32(p + at);
		at += 4;
		if (len - at < n)
			return false;
		*strings[i] = (const char *)p + at;
		*lens[i] = n;
		at += n;
	}
	/* Parents come before their children; offsets are ordered. */
	for (unsigned int i = 0; i < count; i++) {
		struct mt_mime_part part;
		mt_mime_record_part(record, i, &part);
		if ((i == 0) != (part.parent < 0) || part.parent >= (int)i ||
		    part.header_offset > part.body_offset || part.body_offset > part.end_offset ||
		    part.kind > MT_MIME_MESSAGE || part.encoding > MT_MIME_ENC_UNKNOWN)
			return false;
	}
	return true;
}

void mt_mime_record_part(const struct mt_mime_record *record, unsigned int index,
			 struct mt_mime_part *part_r)
{
	const unsigned char *p = record->table + (size_t)index * RECORD_ENTITY_SIZE;
	part_r->kind = (enum mt_mime_kind)p[0];
	part_r->encoding = (enum mt_mime_encoding)p[1];
	if (p[2] & FLAG_OPAQUE)
		part_r->kind = MT_MIME_LEAF;
	part_r->index = index;
	part_r->parent = (int)get_be32(p + 4) - 1;
	part_r->header_offset = get_be64(p + 8);
	part_r->body_offset = get_be64(p + 16);
	part_r->end_offset = get_be64(p + 24);
}

/* The n-th (1-based) child of parent, or false. */
static bool nth_child(const struct mt_mime_record *record, unsigned int parent, uint32_t n,
		      struct mt_mime_part *part_r)
{
	for (unsigned int i = parent + 1; i < record->count; i++) {
		mt_mime_record_part(record, i, part_r);
		if (part_r->parent == (int)parent && --n == 0)
			return true;
		if (part_r->parent < (int)parent)
			break;		/* past parent's descendants */
	}
	return false;
}

bool mt_mime_record_message(const struct mt_mime_record *record,
			    const struct mt_mime_part *part, struct mt_mime_part *message_r)
{
	return part->kind == MT_MIME_MESSAGE && nth_child(record, part->index, 1, message_r);
}

/* The n-th part numbered under an entity (RFC 9051 6.4.5): a multipart's
 * children; a message part's, its message's parts; a message's (the top,
 * or encapsulated) parts: its children if multipart, else just itself. */
static bool numbered_part(const struct mt_mime_record *record, const struct mt_mime_part *in,
			  bool is_message, uint32_t n, struct mt_mime_part *part_r)
{
	if (in->kind == MT_MIME_MULTIPART)
		return nth_child(record, in->index, n, part_r);
	if (is_message) {
		if (n != 1)
			return false;
		*part_r = *in;
		return true;
	}
	struct mt_mime_part message;
	if (!mt_mime_record_message(record, in, &message))
		return false;
	return numbered_part(record, &message, true, n, part_r);
}

bool mt_mime_record_find(const struct mt_mime_record *record, const uint32_t *path,
			 unsigned int depth, struct mt_mime_part *part_r)
{
	struct mt_mime_part at;
	mt_mime_record_part(record, 0, &at);
	bool is_message = true;
	for (unsigned int i = 0; i < depth; i++) {
		struct mt_mime_part next;
		if (path[i] == 0)
			return false;
		if (!numbered_part(record, &at, is_message, path[i], &next))
			return false;
		/* "1" of a non-multipart message is the message itself: its
		 * further numbers are those of its body's message, if any. */
		is_message = false;
		at = next;
	}
	*part_r = at;
	return true;
}
