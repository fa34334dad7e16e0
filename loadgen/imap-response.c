/* imap-response.c — reading IMAP server responses (see imap-response.h).
 * Trust boundary: server octets, bounded per line, literal and response.
 * RFC 9051 2.2.2 (server responses), 4.3 (literal "{" number "}" CRLF
 * *OCTET, literal8 "~{" number "}"), 7.5.2 (ENVELOPE), 9 (response-tagged,
 * response-data, continue-req, envelope, address, nstring). */
#include "imap-response.h"

#include "errors.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

/* A literal's size has at most this many digits (RFC 9051 9: number is
 * 32-bit; ours stops far below at LG_IMAP_LITERAL_MAX anyway). */
#define LITERAL_DIGITS_MAX 10

void lg_imap_reader_init(struct lg_imap_reader *r)
{
	memset(r, 0, sizeof(*r));
	mt_line_reader_init(&r->lines, LG_IMAP_LINE_MAX, MT_LINE_ACCEPT_LF);
	mt_buf_init(&r->line);
	mt_buf_init(&r->text);
}

void lg_imap_reader_free(struct lg_imap_reader *r)
{
	mt_buf_free(&r->line);
	mt_buf_free(&r->text);
}

static void begin_response(struct lg_imap_reader *r)
{
	mt_buf_reset(&r->text);
	r->literal_left = 0;
	r->n_literals = 0;
	r->literal_octets = 0;
	r->complete = false;
	r->tag = NULL;
	r->rest = NULL;
}

/* Skip (and tap) up to literal_left octets of input. */
static void skip_literal(struct lg_imap_reader *r, struct evbuffer *in)
{
	char chunk[16384];
	size_t avail = evbuffer_get_length(in);
	size_t n = avail < r->literal_left ? avail : (size_t)r->literal_left;

	if (r->tap == NULL) {
		evbuffer_drain(in, n);
	} else {
		for (size_t done = 0; done < n;) {
			size_t part = n - done < sizeof(chunk) ? n - done : sizeof(chunk);
			evbuffer_remove(in, chunk, part);
			r->tap(r->tap_context, chunk, part);
			done += part;
		}
	}
	r->literal_left -= n;
	r->literal_octets += n;
	/* The line reader's scan position was for bytes now gone. */
	mt_line_reader_reset(&r->lines);
}

/* If the segment ends with "{n}" or "~{n}" (RFC 9051 4.3), its size.
 * 1: a literal follows; 0: none; -1: one too large to follow. */
static int trailing_literal(const struct mt_buf *line, uint64_t *size_r)
{
	const char *s = line->data;
	size_t len = line->len, open, digits;
	uint64_t n = 0;

	if (len < 3 || s[len - 1] != '}')
		return 0;
	open = len - 2;
	while (open > 0 && isdigit((unsigned char)s[open]))
		open--;
	digits = len - 2 - open;
	if (s[open] != '{' || digits == 0)
		return 0;
	if (digits > LITERAL_DIGITS_MAX)
		return -1;
	for (size_t i = open + 1; i < len - 1; i++)
		n = n * 10 + (uint64_t)(s[i] - '0');
	if (n > LG_IMAP_LITERAL_MAX)
		return -1;
	*size_r = n;
	return 1;
}

/* Tag characters: RFC 9051 9, tag = 1*<any ASTRING-CHAR except "+">. */
static bool tag_char(unsigned char c)
{
	return c > 0x20 && c < 0x7f && strchr("(){%*\"\\+", c) == NULL;
}

/* Classify the whole response in r->text. */
static bool classify(struct lg_imap_reader *r, const char **error_r)
{
	char *t = r->text.data;
	size_t i = 0;

	if (t[0] == '+' && (t[1] == '\0' || t[1] == ' ')) {
		r->kind = LG_IMAP_CONTINUE;
		r->rest = t[1] == ' ' ? t + 2 : t + 1;
		return true;
	}
	if (t[0] == '*' && t[1] == ' ') {
		r->kind = LG_IMAP_UNTAGGED;
		r->rest = t + 2;
		return true;
	}
	while (tag_char((unsigned char)t[i]) && i + 1 < sizeof(r->tag_buf))
		i++;
	if (i == 0 || t[i] != ' ') {
		*error_r = "not an IMAP response (no tag, \"*\" or \"+\")";
		return false;
	}
	memcpy(r->tag_buf, t, i);
	r->tag_buf[i] = '\0';
	r->tag = r->tag_buf;
	const char *status = t + i + 1;
	static const struct { const char *word; enum lg_imap_status status; } words[] = {
		{ "OK", LG_IMAP_STATUS_OK }, { "NO", LG_IMAP_STATUS_NO },
		{ "BAD", LG_IMAP_STATUS_BAD },
	};
	for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
		size_t wl = strlen(words[w].word);
		if (strncasecmp(status, words[w].word, wl) == 0 &&
		    (status[wl] == ' ' || status[wl] == '\0')) {
			r->kind = LG_IMAP_TAGGED;
			r->status = words[w].status;
			r->rest = status[wl] == ' ' ? status + wl + 1 : status + wl;
			return true;
		}
	}
	*error_r = "tagged response is not OK, NO or BAD";
	return false;
}

enum lg_imap_read lg_imap_read(struct lg_imap_reader *r, struct evbuffer *in,
			       const char **error_r)
{
	if (r->complete)
		begin_response(r);
	/* Each pass takes a literal's octets or one line: bounded by input. */
	for (;;) {
		if (r->literal_left > 0) {
			skip_literal(r, in);
			if (r->literal_left > 0)
				return LG_IMAP_READ_MORE;
		}
		switch (mt_line_read(&r->lines, in, &r->line, error_r)) {
		case MT_LINE_OK:
			break;
		case MT_LINE_NEED_MORE:
			return LG_IMAP_READ_MORE;
		default:
			lg_error_kept(error_r);	/* lib's message: errors.h */
			return LG_IMAP_READ_ERROR;
		}
		if (r->text.len + r->line.len > LG_IMAP_TEXT_MAX) {
			*error_r = "response longer than our limit";
			return LG_IMAP_READ_ERROR;
		}
		mt_buf_append(&r->text, r->line.data, r->line.len);
		uint64_t size;
		switch (trailing_literal(&r->line, &size)) {
		case -1:
			*error_r = "literal larger than our limit";
			return LG_IMAP_READ_ERROR;
		case 1:
			if (++r->n_literals > LG_IMAP_LITERALS_MAX) {
				*error_r = "more literals in one response than our limit";
				return LG_IMAP_READ_ERROR;
			}
			r->literal_left = size;
			continue;
		default:
			break;
		}
		r->complete = true;
		if (r->text.len == 0) {
			*error_r = "empty response line";
			return LG_IMAP_READ_ERROR;
		}
		return classify(r, error_r) ? LG_IMAP_READ_DONE : LG_IMAP_READ_ERROR;
	}
}

/* Whether the word at p (length len) stands alone in text: the character
 * before it starts text or is one of " ([", the one after ends it or is
 * one of " )]". */
static const char *find_word(const char *text, const char *word)
{
	size_t len = strlen(word);

	for (const char *p = text; (p = strcasestr(p, word)) != NULL; p++) {
		bool start = p == text || strchr(" ([", p[-1]) != NULL;
		bool end = p[len] == '\0' || strchr(" )]", p[len]) != NULL;
		if (start && end)
			return p;
	}
	return NULL;
}

bool lg_imap_has_word(const char *text, const char *atom)
{
	return find_word(text, atom) != NULL;
}

bool lg_imap_starts_with(const char *rest, const char *word)
{
	size_t len = strlen(word);

	return strncasecmp(rest, word, len) == 0 &&
	       (rest[len] == '\0' || rest[len] == ' ' || rest[len] == ']');
}

static bool read_number(const char *p, uint64_t *n_r, const char **end_r)
{
	uint64_t n = 0;
	int digits = 0;

	while (isdigit((unsigned char)*p) && digits < 19) {
		n = n * 10 + (uint64_t)(*p++ - '0');
		digits++;
	}
	if (digits == 0 || isdigit((unsigned char)*p))
		return false;
	*n_r = n;
	*end_r = p;
	return true;
}

bool lg_imap_number_then(const char *rest, const char *word, uint32_t *n_r)
{
	uint64_t n;
	const char *end;

	if (!read_number(rest, &n, &end) || *end != ' ' || n > UINT32_MAX ||
	    !lg_imap_starts_with(end + 1, word))
		return false;
	*n_r = (uint32_t)n;
	return true;
}

bool lg_imap_find_number(const char *text, const char *word, uint64_t *n_r)
{
	size_t len = strlen(word);
	const char *end;

	for (const char *p = text; (p = strcasestr(p, word)) != NULL; p++) {
		bool start = p == text || strchr(" ([", p[-1]) != NULL;
		if (start && p[len] == ' ' && read_number(p + len + 1, n_r, &end))
			return true;
	}
	return false;
}

/* One nstring at *p_io (RFC 9051 9): NIL, a quoted string (unquoted into
 * out when out is given) or a literal (its marker only: the contents were
 * not kept, so it cannot be read into out). Then past the spaces after it.
 * *nil_r: it was NIL. */
static bool read_nstring(const char **p_io, char *out, size_t size, bool *nil_r)
{
	const char *p = *p_io;
	size_t len = 0;

	*nil_r = false;
	if (strncasecmp(p, "NIL", 3) == 0 && !isalnum((unsigned char)p[3])) {
		*nil_r = true;
		p += 3;
	} else if (*p == '"') {
		for (p++; *p != '"'; p++) {
			if (*p == '\\')
				p++;
			if (*p == '\0')
				return false;
			if (out != NULL) {
				if (len + 1 >= size)
					return false;
				out[len++] = *p;
			}
		}
		p++;
	} else if (out == NULL && (*p == '{' || (p[0] == '~' && p[1] == '{'))) {
		if ((p = strchr(p, '}')) == NULL)
			return false;
		p++;
	} else {
		return false;
	}
	if (out != NULL)
		out[len] = '\0';
	while (*p == ' ')
		p++;
	*p_io = p;
	return true;
}

bool lg_imap_envelope_from(const char *text, char *mailbox, size_t mailbox_size,
			   char *host, size_t host_size)
{
	const char *p = find_word(text, "ENVELOPE");
	bool nil;

	if (p == NULL || strncmp(p + 8, " (", 2) != 0)
		return false;
	p += 10;
	/* date, subject */
	if (!read_nstring(&p, NULL, 0, &nil) || !read_nstring(&p, NULL, 0, &nil))
		return false;
	/* from: "(" address ... ")", the first address "(" name adl mailbox host ")" */
	if (strncmp(p, "((", 2) != 0)
		return false;
	p += 2;
	if (!read_nstring(&p, NULL, 0, &nil) || !read_nstring(&p, NULL, 0, &nil) ||
	    !read_nstring(&p, mailbox, mailbox_size, &nil) || nil ||
	    !read_nstring(&p, host, host_size, &nil) || nil)
		return false;	/* NIL host: a group's start (RFC 9051 9) */
	return *p == ')';
}
