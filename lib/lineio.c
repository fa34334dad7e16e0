/* lineio.c — line reader and reply writer over evbuffers (see lineio.h).
 *
 * Trust boundary: every byte read comes from the network peer. The reader
 * never copies more than max_len octets of one line, drops overlong lines as
 * they arrive (bounded memory), and resumes its LF search where the previous
 * call stopped, so a peer trickling one byte per packet costs linear time.
 *
 * RFC 5321 2.3.8, 4.2.1, 4.5.3.1.4-5; RFC 1939 3; RFC 2449 4. */
#include "lineio.h"
#include "log.h"

#include <event2/buffer.h>
#include <limits.h>
#include <string.h>
#include <sys/types.h>

void mt_line_reader_init(struct mt_line_reader *reader, size_t max_len,
			 enum mt_line_policy policy)
{
	if (max_len < 3 || max_len > INT_MAX)
		mt_panic("mt_line_reader_init: bad max_len %zu", max_len);
	reader->max_len = max_len;
	reader->policy = policy;
	mt_line_reader_reset(reader);
}

void mt_line_reader_reset(struct mt_line_reader *reader)
{
	reader->scanned = 0;
	reader->discarding = false;
}

static void drain(struct evbuffer *in, size_t n)
{
	if (evbuffer_drain(in, n) < 0)
		mt_panic("evbuffer_drain(%zu) failed", n);
}

/* Offset of the first LF in in[from, to), or -1. */
static ssize_t find_lf(struct evbuffer *in, size_t from, size_t to)
{
	struct evbuffer_ptr start, end, found;

	if (from >= to)
		return -1;
	if (evbuffer_ptr_set(in, &start, from, EVBUFFER_PTR_SET) < 0 ||
	    evbuffer_ptr_set(in, &end, to, EVBUFFER_PTR_SET) < 0)
		mt_panic("evbuffer_ptr_set(%zu, %zu) failed", from, to);
	found = evbuffer_search_range(in, "\n", 1, &start, &end);
	return found.pos;
}

/* Drop input of an overlong line; TOO_LONG once its LF has gone too. */
static enum mt_line_status discard(struct mt_line_reader *reader,
				   struct evbuffer *in, const char **error_r)
{
	size_t avail = evbuffer_get_length(in);
	ssize_t lf = find_lf(in, 0, avail);

	if (lf < 0) {
		drain(in, avail);
		return MT_LINE_NEED_MORE;
	}
	drain(in, (size_t)lf + 1);
	mt_line_reader_reset(reader);
	*error_r = "line too long";
	return MT_LINE_TOO_LONG;
}

/* Check one removed line (terminator stripped) against the policy. */
static enum mt_line_status check_line(const struct mt_line_reader *reader,
				      struct mt_buf *line, bool crlf,
				      const char **error_r)
{
	if (line->len > reader->max_len - 2) {
		mt_buf_reset(line);
		*error_r = "line too long";
		return MT_LINE_TOO_LONG;
	}
	if (!crlf && reader->policy == MT_LINE_STRICT_CRLF) {
		*error_r = "bare LF received (lines must end in CRLF)";
		return MT_LINE_BARE_LF;
	}
	if (memchr(line->data, '\r', line->len) != NULL) {
		*error_r = "bare CR received (CR is only allowed before LF)";
		return MT_LINE_BARE_CR;
	}
	if (memchr(line->data, '\0', line->len) != NULL) {
		*error_r = "NUL octet in line";
		return MT_LINE_NUL;
	}
	return MT_LINE_OK;
}

enum mt_line_status mt_line_read(struct mt_line_reader *reader,
				 struct evbuffer *in, struct mt_buf *line,
				 const char **error_r)
{
	size_t avail = evbuffer_get_length(in);
	size_t limit, n;
	ssize_t lf;
	bool crlf;

	mt_buf_reset(line);
	if (reader->discarding)
		return discard(reader, in, error_r);
	/* The caller took input behind our back: rescan from the start. */
	if (reader->scanned > avail)
		reader->scanned = 0;

	limit = avail < reader->max_len ? avail : reader->max_len;
	lf = find_lf(in, reader->scanned, limit);
	if (lf < 0) {
		if (avail < reader->max_len) {
			reader->scanned = avail;
			return MT_LINE_NEED_MORE;
		}
		reader->discarding = true;
		return discard(reader, in, error_r);
	}
	reader->scanned = 0;

	n = (size_t)lf + 1;
	mt_buf_reserve(line, n);
	if (evbuffer_remove(in, line->data, n) != (int)n)
		mt_panic("evbuffer_remove(%zu) came up short", n);
	crlf = n >= 2 && line->data[n - 2] == '\r';
	line->len = n - 1 - (crlf ? 1 : 0);
	line->data[line->len] = '\0';
	return check_line(reader, line, crlf, error_r);
}

void mt_line_vwrite(struct evbuffer *out, const char *fmt, va_list ap)
{
	struct mt_buf text = MT_BUF_INIT;

	mt_buf_vappendf(&text, fmt, ap);
	for (size_t i = 0; i < text.len; i++) {
		unsigned char c = (unsigned char)text.data[i];

		/* Never let formatted (possibly peer-supplied) text end the
		 * line early or smuggle a second reply line. */
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			text.data[i] = '?';
	}
	mt_buf_append(&text, "\r\n", 2);
	if (evbuffer_add(out, text.data, text.len) < 0)
		mt_panic("out of memory adding %zu bytes to an evbuffer",
			 text.len);
	mt_buf_free(&text);
}

void mt_line_write(struct evbuffer *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_line_vwrite(out, fmt, ap);
	va_end(ap);
}

void mt_line_reply(struct evbuffer *out, int code, bool more,
		   const char *fmt, ...)
{
	struct mt_buf text = MT_BUF_INIT;
	va_list ap;

	if (code < 200 || code > 599)
		mt_panic("mt_line_reply: bad reply code %d", code);
	va_start(ap, fmt);
	mt_buf_vappendf(&text, fmt, ap);
	va_end(ap);
	/* The text goes through "%s" so it is sanitised like any other. */
	mt_line_write(out, "%d%c%s", code, more ? '-' : ' ',
		      mt_buf_cstr(&text));
	mt_buf_free(&text);
}
