/* smtp-content.c — the BDAT chunk decoder, the Received: count and the
 * content refusals (see smtp-content.h).
 *
 * Trust boundary: message content from the client, any octets, any chunk
 * boundaries; output never exceeds max_size and the verdict never depends
 * on the chunking.
 * RFCs: 3030 2, 5321 2.3.8 and 6.3, 5322 2.1.1, 2.2, 3.5 (NUL), 3.6. */
#include "smtp-content.h"

#include <string.h>
#include <strings.h>

void mt_smtp_chunk_init(struct mt_smtp_chunk_decoder *d, bool normalize,
		     uint64_t max_size)
{
	memset(d, 0, sizeof(*d));
	d->normalize = normalize;
	d->max_size = max_size;
}

static void put(struct mt_smtp_chunk_decoder *d, struct mt_buf *out,
		const char *data, size_t len)
{
	if (d->too_big)
		return;
	if (d->size + len > d->max_size) {
		d->too_big = true;
		return;
	}
	mt_buf_append(out, data, len);
	d->size += len;
}

/* A bare CR or LF: CRLF under normalize, else the octet itself. */
static void put_bare(struct mt_smtp_chunk_decoder *d, struct mt_buf *out,
		     const char *octet)
{
	d->bare_newline = true;
	put(d, out, d->normalize ? "\r\n" : octet, d->normalize ? 2 : 1);
	d->line_len = 0;
}

void mt_smtp_chunk_decode(struct mt_smtp_chunk_decoder *d, const char *p, size_t len,
		       struct mt_buf *out)
{
	size_t i = 0;
	while (i < len) {
		if (d->cr) {
			d->cr = false;
			if (p[i] == '\n') {
				put(d, out, "\r\n", 2);
				d->line_len = 0;
				i++;
				continue;
			}
			put_bare(d, out, "\r");
		}
		size_t run = 0;
		while (i + run < len && p[i + run] != '\r' && p[i + run] != '\n')
			run++;
		if (memchr(p + i, '\0', run) != NULL)
			d->nul = true;
		put(d, out, p + i, run);
		d->line_len += run;
		if (d->line_len > d->longest_line)
			d->longest_line = d->line_len;
		i += run;
		if (i == len)
			break;
		if (p[i] == '\r')
			d->cr = true;
		else
			put_bare(d, out, "\n");
		i++;
	}
}

void mt_smtp_chunk_finish(struct mt_smtp_chunk_decoder *d, struct mt_buf *out)
{
	if (d->cr) {
		d->cr = false;
		put_bare(d, out, "\r");
	}
}

enum mt_dot_result mt_smtp_chunk_result(const struct mt_smtp_chunk_decoder *d,
				     size_t max_line)
{
	if (d->too_big)
		return MT_DOT_RESULT_TOO_BIG;
	if (d->bare_newline && !d->normalize)
		return MT_DOT_RESULT_BARE_NEWLINE;
	if (d->nul)
		return MT_DOT_RESULT_NUL;
	if (max_line > 0 && d->longest_line > max_line)
		return MT_DOT_RESULT_LINE_TOO_LONG;
	return MT_DOT_RESULT_OK;
}

/* The next line of the header section of p[0..len) at *pos (without its
 * LF), advancing *pos; false at the empty line that ends the section or at
 * the end of p. */
static bool next_header_line(const char *p, size_t len, size_t *pos,
			     const char **line_r, size_t *line_len_r)
{
	size_t i = *pos;
	if (i >= len)
		return false;
	const char *eol = memchr(p + i, '\n', len - i);
	size_t line_len = eol != NULL ? (size_t)(eol - (p + i)) : len - i;
	if (line_len == 0 || (line_len == 1 && p[i] == '\r'))
		return false;
	*line_r = p + i;
	*line_len_r = line_len;
	*pos = i + line_len + 1;
	return true;
}

unsigned int mt_smtp_count_received(const char *p, size_t len)
{
	unsigned int count = 0;
	size_t pos = 0, line_len;
	const char *line;
	while (next_header_line(p, len, &pos, &line, &line_len))
		if (line_len >= 9 && strncasecmp(line, "Received:", 9) == 0)
			count++;
	return count;
}

/* Is line[0..len) a field named name (then optional WSP, then ':')? */
static bool field_is(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);
	if (len <= n || strncasecmp(line, name, n) != 0)
		return false;
	while (n < len && (line[n] == ' ' || line[n] == '\t'))
		n++;
	return n < len && line[n] == ':';
}

unsigned int mt_smtp_header_fields(const char *p, size_t len)
{
	unsigned int found = 0;
	size_t pos = 0, line_len;
	const char *line;
	while (next_header_line(p, len, &pos, &line, &line_len)) {
		if (field_is(line, line_len, "Date"))
			found |= MT_SMTP_HEADER_DATE;
		else if (field_is(line, line_len, "Message-ID"))
			found |= MT_SMTP_HEADER_MESSAGE_ID;
	}
	return found;
}

void mt_smtp_content_refusal(enum mt_dot_result r, int *code_r, const char **text_r)
{
	switch (r) {
	case MT_DOT_RESULT_TOO_BIG:
		*code_r = 552;
		*text_r = "5.3.4 Message size exceeds fixed maximum message size";
		return;
	case MT_DOT_RESULT_BARE_NEWLINE:
		*code_r = 550;
		*text_r = "5.6.0 Message contains a bare CR or LF; lines must end "
			"with CRLF (RFC 5321 2.3.8)";
		return;
	case MT_DOT_RESULT_NUL:
		*code_r = 550;
		*text_r = "5.6.0 Message contains a NUL octet (RFC 5322 3.5)";
		return;
	case MT_DOT_RESULT_LINE_TOO_LONG:
	default:
		*code_r = 550;
		*text_r = "5.6.0 Message contains a line longer than 998 octets "
			"(RFC 5322 2.1.1)";
		return;
	}
}
