/* mime-scan.c — the streaming MIME structure scanner (see mime-scan.h for
 * the model, the limits and what malformed input becomes).
 *
 * The scan sees the message line by line without holding lines: each
 * piece fed is cut at LF; of a line only its first LINE_HEAD_MAX octets are
 * kept (a delimiter line is "--" boundary ["--"] transport-padding, at most
 * BOUNDARY_MAX + 4 octets before its padding), and, while the innermost
 * open entity is in its header, the header octets (up to
 * MT_MIME_HEADER_MAX). The open entities are the innermost one and its
 * ancestors; a delimiter line of any open multipart ends every entity
 * inside it.
 *
 * Trust boundary: untrusted message octets, bounded as mime-scan.h says.
 * RFCs: 2045 5.2 and 6.1 (defaults), 2046 5.1.1 (delimiters: "--" boundary,
 * the CRLF before it belongs to it, "--" after it closes the multipart,
 * trailing LWSP allowed), 2046 5.1.5, 5.2.1, 6532 3.7, 5322 2.2.3
 * (unfolding). */
#include "mime-scan.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "alloc.h"

#define BOUNDARY_MAX 200	/* RFC 2046 says 70; longer are seen, far longer are not */
#define LINE_HEAD_MAX 512

enum body_state {
	STATE_HEADER,		/* its header is being read */
	STATE_BODY,		/* a leaf's or message's body, a multipart's preamble */
	STATE_PARTS,		/* a multipart after its first delimiter */
	STATE_EPILOGUE,		/* a multipart after its close delimiter */
};

/* What the scanner keeps of each entity besides the public record. */
struct entity_scan {
	enum body_state state;
	uint64_t lf_before_body;	/* LFs before its body_offset */
};

struct mt_mime_scan {
	struct mt_mime_entity *entities;
	struct entity_scan *scans;
	unsigned int count, alloc;
	int current;			/* the innermost open entity */
	struct mt_buf header;		/* the current entity's header so far */
	uint64_t lf_count;		/* LFs fed */
	uint64_t line_start;		/* offset of the current line */
	uint64_t line_len;		/* its octets so far */
	char line_head[LINE_HEAD_MAX];
	size_t line_head_len;
	char line_last;			/* its last octet so far */
	/* the previous complete line */
	size_t prev_term_len;		/* 2 CRLF, 1 LF, 0 none (start or EOF) */
	uint64_t prev_content_len;
	bool finished;
};

/* Fields by name; the ENVELOPE ones only in a message header. */
static const struct {
	const char *name;
	enum mt_mime_field field;
	bool envelope;
} field_names[] = {
	{ "content-type", MT_MIME_CONTENT_TYPE, false },
	{ "content-transfer-encoding", MT_MIME_CONTENT_TRANSFER_ENCODING, false },
	{ "content-id", MT_MIME_CONTENT_ID, false },
	{ "content-description", MT_MIME_CONTENT_DESCRIPTION, false },
	{ "content-md5", MT_MIME_CONTENT_MD5, false },
	{ "content-disposition", MT_MIME_CONTENT_DISPOSITION, false },
	{ "content-language", MT_MIME_CONTENT_LANGUAGE, false },
	{ "content-location", MT_MIME_CONTENT_LOCATION, false },
	{ "date", MT_MIME_DATE, true },
	{ "subject", MT_MIME_SUBJECT, true },
	{ "from", MT_MIME_FROM, true },
	{ "sender", MT_MIME_SENDER, true },
	{ "reply-to", MT_MIME_REPLY_TO, true },
	{ "to", MT_MIME_TO, true },
	{ "cc", MT_MIME_CC, true },
	{ "bcc", MT_MIME_BCC, true },
	{ "in-reply-to", MT_MIME_IN_REPLY_TO, true },
	{ "message-id", MT_MIME_MESSAGE_ID, true },
};

static bool is_wsp(char c)
{
	return c == ' ' || c == '\t';
}

/* Skip spaces and RFC 822 comments (nested, with quoted-pairs). */
static size_t skip_cfws(const char *v, size_t len, size_t i)
{
	while (i < len) {
		if (is_wsp(v[i]) || v[i] == '\r' || v[i] == '\n') {
			i++;
		} else if (v[i] == '(') {
			unsigned int depth = 0;
			for (; i < len; i++) {
				if (v[i] == '\\' && i + 1 < len)
					i++;
				else if (v[i] == '(')
					depth++;
				else if (v[i] == ')' && --depth == 0) {
					i++;
					break;
				}
			}
		} else
			break;
	}
	return i;
}

/* RFC 2045 token octets: not SPACE, CTLs or tspecials. */
static bool is_token_char(char c)
{
	unsigned char u = (unsigned char)c;
	return u > 0x20 && u != 0x7f && strchr("()<>@,;:\\\"/[]?=", c) == NULL;
}

static size_t token_end(const char *v, size_t len, size_t i)
{
	while (i < len && is_token_char(v[i]))
		i++;
	return i;
}

void mt_mime_type_token(const char *value, size_t len, const char **type_r, size_t *type_len_r,
			const char **subtype_r, size_t *subtype_len_r)
{
	size_t i = skip_cfws(value, len, 0);
	size_t end = token_end(value, len, i);
	*type_r = value + i;
	*type_len_r = end - i;
	*subtype_r = value + end;
	*subtype_len_r = 0;
	i = skip_cfws(value, len, end);
	if (i < len && value[i] == '/') {
		i = skip_cfws(value, len, i + 1);
		end = token_end(value, len, i);
		*subtype_r = value + i;
		*subtype_len_r = end - i;
	}
}

void mt_mime_params(const char *value, size_t len, mt_mime_param_cb_t *fn, void *context)
{
	struct mt_buf unquoted = MT_BUF_INIT;
	size_t i = 0;
	/* Past the type (and any quoted string in garbage before the ';'). */
	while (i < len && value[i] != ';') {
		if (value[i] == '"') {
			for (i++; i < len && value[i] != '"'; i++)
				if (value[i] == '\\')
					i++;
		}
		i++;
	}
	while (i < len) {
		i = skip_cfws(value, len, i + 1);	/* past ';' */
		size_t name = i, name_end = token_end(value, len, i);
		i = skip_cfws(value, len, name_end);
		if (name_end == name || i >= len || value[i] != '=') {
			while (i < len && value[i] != ';')
				i++;
			continue;
		}
		i = skip_cfws(value, len, i + 1);
		mt_buf_reset(&unquoted);
		if (i < len && value[i] == '"') {
			for (i++; i < len && value[i] != '"'; i++) {
				if (value[i] == '\\' && i + 1 < len)
					i++;
				if (value[i] != '\r' && value[i] != '\n')
					mt_buf_append_char(&unquoted, value[i]);
			}
			if (i < len)
				i++;
		} else {
			size_t end = token_end(value, len, i);
			mt_buf_append(&unquoted, value + i, end - i);
			i = end;
		}
		fn(context, value + name, name_end - name, unquoted.data == NULL ? "" :
		   unquoted.data, unquoted.len);
		while (i < len && value[i] != ';')
			i++;
	}
	mt_buf_free(&unquoted);
}

static void copy_lower(char *dst, size_t dst_size, const char *src, size_t len)
{
	if (len >= dst_size)
		len = 0;	/* no real type is that long: the default applies */
	for (size_t i = 0; i < len; i++) {
		char c = src[i];
		dst[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	dst[len] = '\0';
}

static void boundary_param(void *context, const char *name, size_t name_len,
			   const char *value, size_t value_len)
{
	struct mt_mime_entity *e = context;
	if (name_len == 8 && strncasecmp(name, "boundary", 8) == 0 && e->boundary == NULL &&
	    value_len > 0 && value_len <= BOUNDARY_MAX) {
		e->boundary = mt_xmalloc(value_len + 1);
		memcpy(e->boundary, value, value_len);
		e->boundary[value_len] = '\0';
		e->boundary_len = value_len;
	}
}

/* Keep the unfolded value of a field (first occurrence only). */
static void keep_field(struct mt_mime_entity *e, enum mt_mime_field field,
		       const char *v, size_t len)
{
	struct mt_mime_value *value = &e->fields[field];
	if (value->data != NULL)
		return;
	struct mt_buf out = MT_BUF_INIT;
	size_t i = 0;
	while (i < len && (is_wsp(v[i]) || v[i] == '\r' || v[i] == '\n'))
		i++;
	for (; i < len && out.len < MT_MIME_FIELD_MAX; i++)
		if (v[i] != '\r' && v[i] != '\n')
			mt_buf_append_char(&out, v[i]);
	while (out.len > 0 && is_wsp(out.data[out.len - 1]))
		out.len--;
	mt_buf_append_char(&out, '\0');
	value->len = out.len - 1;
	value->data = mt_buf_steal(&out);
}

/* One field "name: value" of len octets (folding lines included). */
static void header_field(struct mt_mime_entity *e, const char *f, size_t len)
{
	const char *colon = memchr(f, ':', len);
	if (colon == NULL)
		return;		/* not a field: skipped */
	size_t name_len = (size_t)(colon - f);
	while (name_len > 0 && is_wsp(f[name_len - 1]))
		name_len--;
	for (size_t i = 0; i < sizeof(field_names) / sizeof(field_names[0]); i++) {
		if (strlen(field_names[i].name) == name_len &&
		    strncasecmp(field_names[i].name, f, name_len) == 0) {
			if (!field_names[i].envelope || e->is_message_header)
				keep_field(e, field_names[i].field, colon + 1,
					   len - (size_t)(colon - f) - 1);
			return;
		}
	}
}

/* Split the header block into fields: a field goes on over lines that
 * begin with white space (RFC 5322 2.2.3). */
static void header_fields(struct mt_mime_entity *e, const char *h, size_t len)
{
	size_t start = 0;
	while (start < len) {
		size_t end = start;
		for (;;) {
			const char *lf = memchr(h + end, '\n', len - end);
			end = lf == NULL ? len : (size_t)(lf - h) + 1;
			if (end >= len || !is_wsp(h[end]))
				break;
		}
		header_field(e, h + start, end - start);
		start = end;
	}
}

static bool type_is(const struct mt_mime_entity *e, const char *type, const char *subtype)
{
	return strcmp(e->type, type) == 0 && (subtype == NULL || strcmp(e->subtype, subtype) == 0);
}

static int new_entity(struct mt_mime_scan *scan, int parent, uint64_t header_offset)
{
	if (scan->count == scan->alloc) {
		scan->alloc = scan->alloc == 0 ? 8 : scan->alloc * 2;
		scan->entities = mt_xrealloc(scan->entities, scan->alloc * sizeof(*scan->entities));
		scan->scans = mt_xrealloc(scan->scans, scan->alloc * sizeof(*scan->scans));
	}
	int index = (int)scan->count++;
	struct mt_mime_entity *e = &scan->entities[index];
	memset(e, 0, sizeof(*e));
	e->parent = parent;
	e->header_offset = e->body_offset = e->end_offset = header_offset;
	if (parent >= 0) {
		const struct mt_mime_entity *p = &scan->entities[parent];
		e->depth = p->depth + 1;
		e->is_message_header = p->kind == MT_MIME_MESSAGE;
		e->default_message = p->kind == MT_MIME_MULTIPART && strcmp(p->subtype, "digest") == 0;
	} else
		e->is_message_header = true;
	scan->scans[index].state = STATE_HEADER;
	scan->scans[index].lf_before_body = scan->lf_count;
	scan->current = index;
	mt_buf_reset(&scan->header);
	return index;
}

/* The current entity's header ended; its body starts at body_offset. */
static void end_header(struct mt_mime_scan *scan, uint64_t body_offset)
{
	int index = scan->current;
	struct mt_mime_entity *e = &scan->entities[index];
	e->body_offset = e->end_offset = body_offset;
	scan->scans[index].state = STATE_BODY;
	scan->scans[index].lf_before_body = scan->lf_count;
	if (scan->header.len > 0)
		header_fields(e, scan->header.data, scan->header.len);
	mt_buf_reset(&scan->header);

	const struct mt_mime_value *ct = &e->fields[MT_MIME_CONTENT_TYPE];
	const char *type = "", *subtype = "";
	size_t type_len = 0, subtype_len = 0;
	if (ct->data != NULL)
		mt_mime_type_token(ct->data, ct->len, &type, &type_len, &subtype, &subtype_len);
	copy_lower(e->type, sizeof(e->type), type, type_len);
	copy_lower(e->subtype, sizeof(e->subtype), subtype, subtype_len);
	if (e->type[0] == '\0' || e->subtype[0] == '\0') {
		/* RFC 2045 5.2: none or an invalid one is the default */
		e->default_type = true;
		strcpy(e->type, e->default_message ? "message" : "text");
		strcpy(e->subtype, e->default_message ? "rfc822" : "plain");
	} else if (type_is(e, "multipart", NULL))
		mt_mime_params(ct->data, ct->len, boundary_param, e);

	bool room = e->depth + 1 < MT_MIME_DEPTH_MAX && scan->count < MT_MIME_PARTS_MAX;
	if (type_is(e, "multipart", NULL)) {
		if (e->boundary != NULL && room)
			e->kind = MT_MIME_MULTIPART;
	} else if (type_is(e, "message", "rfc822") || type_is(e, "message", "global")) {
		if (room) {
			e->kind = MT_MIME_MESSAGE;
			new_entity(scan, index, body_offset);
		}
	}
}

/* End the entity at end (the offset its body stops at) with lfs LFs before
 * end; partial: the octet before end is not a LF. */
static void close_entity(struct mt_mime_scan *scan, int index, uint64_t end, uint64_t lfs,
			 bool partial)
{
	struct mt_mime_entity *e = &scan->entities[index];
	struct entity_scan *s = &scan->scans[index];
	if (s->state == STATE_HEADER) {
		int saved = scan->current;
		scan->current = index;
		end_header(scan, end < e->header_offset ? e->header_offset : end);
		/* (end_header may add an entity: e is re-read.) A message
		 * part opened just now has nothing in it. */
		e = &scan->entities[index];
		s = &scan->scans[index];
		if (scan->current != index)
			close_entity(scan, scan->current, e->body_offset, lfs, false);
		e = &scan->entities[index];
		s = &scan->scans[index];
		scan->current = saved;
	}
	if (end <= e->body_offset) {
		e->end_offset = e->body_offset;
		e->body_lines = 0;
	} else {
		e->end_offset = end;
		e->body_lines = lfs - s->lf_before_body + (partial ? 1 : 0);
	}
	s->state = STATE_EPILOGUE;
}

/* Close the open entities inside ancestor (not ancestor itself), the
 * innermost first; none ends before an entity inside it (an empty body
 * ends at its start, after the CRLF its parent gives the delimiter). */
static void close_inside(struct mt_mime_scan *scan, int ancestor, uint64_t end, uint64_t lfs,
			 bool partial)
{
	uint64_t floor = 0;
	for (int i = scan->current; i != ancestor && i >= 0; i = scan->entities[i].parent) {
		close_entity(scan, i, end < floor ? floor : end, lfs, partial);
		floor = scan->entities[i].end_offset;
	}
	scan->current = ancestor;
}

/* The open multipart whose delimiter the line is, or -1; *close_r for a
 * close delimiter. */
static int delimiter_of(struct mt_mime_scan *scan, const char *line, size_t content_len,
			bool *close_r)
{
	if (content_len < 3 || line[0] != '-' || line[1] != '-')
		return -1;
	for (int i = scan->current; i >= 0; i = scan->entities[i].parent) {
		const struct mt_mime_entity *e = &scan->entities[i];
		if (e->kind != MT_MIME_MULTIPART || scan->scans[i].state == STATE_EPILOGUE ||
		    scan->scans[i].state == STATE_HEADER)
			continue;
		if (content_len < 2 + e->boundary_len || memcmp(line + 2, e->boundary, e->boundary_len) != 0)
			continue;
		size_t j = 2 + e->boundary_len;
		bool close = content_len >= j + 2 && line[j] == '-' && line[j + 1] == '-';
		if (close)
			j += 2;
		while (j < content_len && is_wsp(line[j]))
			j++;
		if (j != content_len)
			continue;
		*close_r = close;
		return i;
	}
	return -1;
}

/* A complete line at offset start of total octets (content_len before its
 * terminator); lfs_before: LFs before it. */
static void scan_line(struct mt_mime_scan *scan, uint64_t start, uint64_t total,
		      uint64_t content_len, uint64_t lfs_before)
{
	bool close = false;
	int multipart = -1;
	if (content_len <= scan->line_head_len)
		multipart = delimiter_of(scan, scan->line_head, (size_t)content_len, &close);
	if (multipart >= 0) {
		uint64_t end = start - scan->prev_term_len;
		uint64_t lfs = lfs_before - (scan->prev_term_len > 0 ? 1 : 0);
		bool partial = scan->prev_content_len > 0;
		if (close) {
			close_inside(scan, multipart, end, lfs, partial);
			scan->scans[multipart].state = STATE_EPILOGUE;
			return;
		}
		if (scan->count < MT_MIME_PARTS_MAX) {
			close_inside(scan, multipart, end, lfs, partial);
			scan->scans[multipart].state = STATE_PARTS;
			new_entity(scan, multipart, start + total);
			return;
		}
		/* beyond the entity limit: body text */
	}
	if (scan->scans[scan->current].state == STATE_HEADER && content_len == 0)
		end_header(scan, start + total);
}

struct mt_mime_scan *mt_mime_scan_new(void)
{
	struct mt_mime_scan *scan = mt_xcalloc(1, sizeof(*scan));
	mt_buf_init(&scan->header);
	new_entity(scan, -1, 0);
	return scan;
}

void mt_mime_scan_free(struct mt_mime_scan **scan_p)
{
	struct mt_mime_scan *scan = *scan_p;
	if (scan == NULL)
		return;
	*scan_p = NULL;
	for (unsigned int i = 0; i < scan->count; i++) {
		for (unsigned int f = 0; f < MT_MIME_FIELD_COUNT; f++)
			free(scan->entities[i].fields[f].data);
		free(scan->entities[i].boundary);
	}
	free(scan->entities);
	free(scan->scans);
	mt_buf_free(&scan->header);
	free(scan);
}

/* Octets of the current line (no LF among them but maybe the last). */
static void line_octets(struct mt_mime_scan *scan, const char *data, size_t len)
{
	size_t room = LINE_HEAD_MAX - scan->line_head_len;
	size_t n = len < room ? len : room;
	memcpy(scan->line_head + scan->line_head_len, data, n);
	scan->line_head_len += n;
	if (scan->scans[scan->current].state == STATE_HEADER &&
	    scan->header.len < MT_MIME_HEADER_MAX) {
		size_t keep = MT_MIME_HEADER_MAX - scan->header.len;
		mt_buf_append(&scan->header, data, len < keep ? len : keep);
	}
	scan->line_len += len;
	scan->line_last = data[len - 1];
}

static void next_line(struct mt_mime_scan *scan, size_t term_len)
{
	scan->prev_term_len = term_len;
	scan->prev_content_len = scan->line_len - term_len;
	scan->line_start += scan->line_len;
	scan->line_len = 0;
	scan->line_head_len = 0;
}

void mt_mime_scan_feed(struct mt_mime_scan *scan, const void *data, size_t len)
{
	const char *p = data;
	if (scan->finished)
		return;
	while (len > 0) {
		const char *lf = memchr(p, '\n', len);
		size_t n = lf == NULL ? len : (size_t)(lf - p) + 1;
		char before_lf = scan->line_len > 0 ? scan->line_last : '\0';
		if (n >= 2)
			before_lf = p[n - 2];
		line_octets(scan, p, n);
		p += n;
		len -= n;
		if (lf == NULL)
			break;
		size_t term_len = before_lf == '\r' && scan->line_len >= 2 ? 2 : 1;
		scan->lf_count++;
		scan_line(scan, scan->line_start, scan->line_len, scan->line_len - term_len,
			  scan->lf_count - 1);
		next_line(scan, term_len);
	}
}

void mt_mime_scan_finish(struct mt_mime_scan *scan)
{
	if (scan->finished)
		return;
	if (scan->line_len > 0) {
		scan_line(scan, scan->line_start, scan->line_len, scan->line_len, scan->lf_count);
		next_line(scan, 0);
	}
	uint64_t end = scan->line_start;
	bool partial = scan->prev_term_len == 0 && scan->prev_content_len > 0;
	close_inside(scan, -1, end, scan->lf_count, partial);
	scan->finished = true;
}

const struct mt_mime_entity *mt_mime_scan_entities(const struct mt_mime_scan *scan,
						   unsigned int *count_r)
{
	*count_r = scan->count;
	return scan->entities;
}
