/* milter-headers.c — the header section as the filters edit it (see
 * milter-headers.h). Pure code, unit-tested by tests/unit/test-milter-headers.c.
 *
 * Trust boundary: the client's header section and the filters' checked
 * values. RFC 5322 2.2 (field = name ":" body, folding by CRLF WSP), 3.6;
 * RFC 5322 4.5 (obsolete WSP before the colon is still a field). */
#include "milter-headers.h"
#include "alloc.h"
#include "buf.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* RFC 5322 2.2: ftext is printable ASCII but ':'. */
static bool ftext(unsigned char c)
{
	return c >= 33 && c <= 126 && c != ':';
}

/* Does line[0..len) (no CRLF) start a field? Its name length if so. */
static size_t field_name_len(const char *line, size_t len)
{
	size_t n = 0;
	while (n < len && ftext((unsigned char)line[n]))
		n++;
	if (n == 0)
		return 0;
	size_t i = n;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;		/* RFC 5322 4.5: obs-optional WSP before ':' */
	return i < len && line[i] == ':' ? n : 0;
}

static bool wsp(char c)
{
	return c == ' ' || c == '\t';
}

enum milter_head_scan milter_head_scan(const char *data, size_t len, bool final,
				       size_t *head_len_r, size_t *sep_len_r)
{
	size_t pos = 0;
	bool in_field = false;
	while (pos < len) {
		const char *eol = memchr(data + pos, '\n', len - pos);
		size_t line_end = eol != NULL ? (size_t)(eol - data) + 1 : len;
		size_t text_len = line_end - pos;
		if (eol != NULL)
			text_len -= (text_len >= 2 && data[line_end - 2] == '\r') ? 2 : 1;
		else if (!final)
			return MILTER_HEAD_MORE;	/* a line not yet whole */
		const char *line = data + pos;
		if (eol != NULL && text_len == 0) {
			*head_len_r = pos;
			*sep_len_r = line_end - pos;
			return MILTER_HEAD_END;
		}
		bool field = field_name_len(line, text_len) > 0 ||
			(in_field && text_len > 0 && wsp(line[0]));
		if (!field) {
			*head_len_r = pos;
			*sep_len_r = 0;
			return MILTER_HEAD_END;
		}
		in_field = true;
		pos = line_end;
	}
	if (!final)
		return MILTER_HEAD_MORE;
	*head_len_r = len;
	*sep_len_r = 0;
	return MILTER_HEAD_END;
}

void milter_headers_free(struct milter_headers *h)
{
	for (size_t i = 0; i < h->count; i++)
		free(h->fields[i].raw);
	free(h->fields);
	memset(h, 0, sizeof(*h));
}

/* Make room at index (<= count) and return the slot. */
static struct milter_field *slot_at(struct milter_headers *h, size_t index)
{
	if (h->count == h->cap) {
		h->cap = h->cap == 0 ? 32 : h->cap * 2;
		h->fields = mt_xrealloc(h->fields, h->cap * sizeof(*h->fields));
	}
	memmove(&h->fields[index + 1], &h->fields[index],
		(h->count - index) * sizeof(*h->fields));
	h->count++;
	return &h->fields[index];
}

static void field_set_raw(struct milter_field *f, const char *raw, size_t len,
			  bool add_crlf)
{
	f->raw = mt_xmalloc(len + 3);
	memcpy(f->raw, raw, len);
	if (add_crlf) {
		memcpy(f->raw + len, "\r\n", 2);
		len += 2;
	}
	f->raw[len] = '\0';
	f->len = len;
	f->name_len = field_name_len(f->raw, len);
}

void milter_headers_parse(struct milter_headers *h, const char *data, size_t len)
{
	size_t pos = 0;
	while (pos < len) {
		/* A field: its first line and the folded ones after it. */
		size_t end = pos;
		do {
			const char *eol = memchr(data + end, '\n', len - end);
			end = eol != NULL ? (size_t)(eol - data) + 1 : len;
		} while (end < len && wsp(data[end]));
		bool whole = end > pos && data[end - 1] == '\n';
		struct milter_field *f = slot_at(h, h->count);
		field_set_raw(f, data + pos, end - pos, !whole);
		pos = end;
	}
}

void milter_field_name(const struct milter_field *f, struct mt_buf *out)
{
	mt_buf_append(out, f->raw, f->name_len);
}

void milter_field_value(const struct milter_field *f, bool leadspc,
			struct mt_buf *out)
{
	const char *colon = memchr(f->raw, ':', f->len);
	size_t pos = colon != NULL ? (size_t)(colon - f->raw) + 1 : f->len;
	size_t end = f->len;
	if (end >= 2 && f->raw[end - 2] == '\r' && f->raw[end - 1] == '\n')
		end -= 2;
	else if (end >= 1 && f->raw[end - 1] == '\n')
		end -= 1;
	if (!leadspc && pos < end && f->raw[pos] == ' ')
		pos++;
	for (; pos < end; pos++) {
		if (f->raw[pos] == '\r' && pos + 1 < end && f->raw[pos + 1] == '\n')
			continue;	/* CRLF of a fold: LF */
		mt_buf_append_char(out, f->raw[pos]);
	}
}

/* "Name: value" with CRLF line ends from a filter's name and value. */
static void field_from_filter(struct milter_field *f, const char *name,
			      const char *value, bool leadspc)
{
	struct mt_buf raw = MT_BUF_INIT;
	mt_buf_append_str(&raw, name);
	mt_buf_append_str(&raw, leadspc ? ":" : ": ");
	for (const char *p = value; *p != '\0'; p++) {
		if (*p == '\n' && (p == value || p[-1] != '\r'))
			mt_buf_append_char(&raw, '\r');
		mt_buf_append_char(&raw, *p);
	}
	mt_buf_append(&raw, "\r\n", 2);
	f->len = raw.len;
	f->name_len = strlen(name);
	f->raw = mt_buf_steal(&raw);
}

void milter_headers_add(struct milter_headers *h, const char *name,
			const char *value, bool leadspc)
{
	field_from_filter(slot_at(h, h->count), name, value, leadspc);
}

void milter_headers_insert(struct milter_headers *h, uint32_t index,
			   const char *name, const char *value, bool leadspc)
{
	size_t at = index < h->count ? index : h->count;
	field_from_filter(slot_at(h, at), name, value, leadspc);
}

static bool named(const struct milter_field *f, const char *name)
{
	return f->name_len == strlen(name) && strncasecmp(f->raw, name, f->name_len) == 0;
}

enum milter_change milter_headers_change(struct milter_headers *h, uint32_t index,
					 const char *name, const char *value,
					 bool leadspc)
{
	uint32_t seen = 0;
	if (index == 0)
		index = 1;	/* libmilter counts from 1; Postfix takes 0 as 1 */
	for (size_t i = 0; i < h->count; i++) {
		if (!named(&h->fields[i], name) || ++seen != index)
			continue;
		free(h->fields[i].raw);
		if (value[0] == '\0') {
			memmove(&h->fields[i], &h->fields[i + 1],
				(h->count - i - 1) * sizeof(*h->fields));
			h->count--;
			return MILTER_DELETED;
		}
		field_from_filter(&h->fields[i], name, value, leadspc);
		return MILTER_CHANGED;
	}
	if (value[0] == '\0')
		return MILTER_NOTHING;
	milter_headers_add(h, name, value, leadspc);
	return MILTER_ADDED;
}

void milter_headers_render(const struct milter_headers *h, struct mt_buf *out)
{
	for (size_t i = 0; i < h->count; i++)
		mt_buf_append(out, h->fields[i].raw, h->fields[i].len);
}

size_t milter_headers_size(const struct milter_headers *h)
{
	size_t n = 0;
	for (size_t i = 0; i < h->count; i++)
		n += h->fields[i].len;
	return n;
}
