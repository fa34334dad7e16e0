/* smtp-reply.c — SMTP/LMTP reply parsing for every client (see
 * smtp-reply.h).
 *
 * Trust boundary: server reply lines (any peer); bounded as described in
 * the header, never used as format strings, control characters replaced
 * before they reach logs or stored errors.
 * RFC 5321 4.2: Reply-line = *( Reply-code "-" [ textstring ] CRLF )
 * Reply-code [ SP textstring ] CRLF. */
#include "smtp-reply.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void mt_smtp_reply_reset(struct mt_smtp_reply *reply)
{
	reply->code = 0;
	reply->lines = 0;
	reply->done = false;
	reply->text_len = 0;
	reply->text[0] = '\0';
}

static void append_text(struct mt_smtp_reply *reply, char c)
{
	if (reply->text_len < MT_SMTP_REPLY_TEXT_MAX) {
		reply->text[reply->text_len++] = c;
		reply->text[reply->text_len] = '\0';
	}
}

enum mt_smtp_reply_status mt_smtp_reply_feed(struct mt_smtp_reply *reply,
					     const char *line, size_t len,
					     const char **error_r)
{
	if (reply->done)
		mt_smtp_reply_reset(reply);
	/* RFC 5321 4.2: Reply-code = %x32-35 %x30-35 %x30-39, then SP or "-"
	 * (or, leniently, nothing) before the text. */
	if (len < 3 || line[0] < '2' || line[0] > '5' ||
	    line[1] < '0' || line[1] > '5' || line[2] < '0' || line[2] > '9') {
		*error_r = "reply does not start with a reply code";
		return MT_SMTP_REPLY_BAD;
	}
	if (len > 3 && line[3] != ' ' && line[3] != '-') {
		*error_r = "reply code not followed by space or hyphen";
		return MT_SMTP_REPLY_BAD;
	}
	int code = (line[0] - '0') * 100 + (line[1] - '0') * 10 + (line[2] - '0');
	/* RFC 5321 4.2.1: every line of a multi-line reply has the same code. */
	if (reply->lines > 0 && code != reply->code) {
		*error_r = "reply code changes within a multi-line reply";
		return MT_SMTP_REPLY_BAD;
	}
	if (++reply->lines > MT_SMTP_REPLY_MAX_LINES) {
		*error_r = "too many lines in one reply";
		return MT_SMTP_REPLY_BAD;
	}
	reply->code = code;
	if (reply->lines > 1)
		append_text(reply, '\n');
	for (size_t i = 4; i < len && reply->text_len < MT_SMTP_REPLY_TEXT_MAX; i++) {
		unsigned char c = (unsigned char)line[i];
		append_text(reply, c < 0x20 || c == 0x7f ? '?' : (char)c);
	}
	if (len > 3 && line[3] == '-')
		return MT_SMTP_REPLY_MORE;
	reply->done = true;
	return MT_SMTP_REPLY_DONE;
}

const char *mt_smtp_reply_summary(const struct mt_smtp_reply *reply, struct mt_buf *out)
{
	mt_buf_reset(out);
	mt_buf_appendf(out, "%d ", reply->code);
	for (size_t i = 0; i < reply->text_len; i++)
		mt_buf_append_char(out, reply->text[i] == '\n' ? ' ' : reply->text[i]);
	return mt_buf_cstr(out);
}

/* 1-3 digits at s[0..len): how many, or 0. */
static size_t digits_1_3(const char *s, size_t len)
{
	size_t n = 0;
	while (n < len && n < 4 && isdigit((unsigned char)s[n]))
		n++;
	return n <= 3 ? n : 0;
}

size_t mt_smtp_enhanced_code_len(const char *t, size_t len)
{
	if (len < 5 || !isdigit((unsigned char)t[0]) || t[1] != '.')
		return 0;
	size_t at = 2, n = digits_1_3(t + at, len - at);
	if (n == 0 || at + n >= len || t[at + n] != '.')
		return 0;
	at += n + 1;
	n = digits_1_3(t + at, len - at);
	if (n == 0)
		return 0;
	at += n;
	return at == len || t[at] == ' ' || t[at] == '\t' ? at : 0;
}

void mt_smtp_status_code(const char *text, int code, char out[16])
{
	size_t n = mt_smtp_enhanced_code_len(text, strlen(text));
	if (n > 0 && (text[0] == '2' || text[0] == '4' || text[0] == '5') &&
	    text[0] - '0' == code / 100) {
		snprintf(out, 16, "%.*s", (int)n, text);
		return;
	}
	snprintf(out, 16, "%d.0.0", code / 100);
}

/* "AUTH PLAIN LOGIN ..." (RFC 4954 3): the mechanisms we know, any case,
 * space-separated from p to end. */
static void auth_mechanisms(const char *p, const char *end, struct mt_smtp_caps *caps)
{
	while (p < end) {
		while (p < end && *p == ' ')
			p++;
		size_t word = 0;
		while (p + word < end && p[word] != ' ')
			word++;
		if (word == 5 && strncasecmp(p, "PLAIN", 5) == 0)
			caps->auth_plain = true;
		else if (word == 5 && strncasecmp(p, "LOGIN", 5) == 0)
			caps->auth_login = true;
		p += word;
	}
}

void mt_smtp_caps_parse(const struct mt_smtp_reply *reply, struct mt_smtp_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	/* The first line is the server's name; keywords follow, one a line. */
	const char *nl = strchr(reply->text, '\n');
	while (nl != NULL) {
		const char *kw = nl + 1;
		nl = strchr(kw, '\n');
		size_t len = nl != NULL ? (size_t)(nl - kw) : strlen(kw);
		size_t word = strcspn(kw, " \n");
		if (word > len)
			word = len;
#define KW(name) (word == sizeof(name) - 1 && strncasecmp(kw, name, word) == 0)
		if (KW("PIPELINING"))
			caps->pipelining = true;
		else if (KW("STARTTLS"))
			caps->starttls = true;
		else if (KW("8BITMIME"))
			caps->eightbit = true;
		else if (KW("SMTPUTF8"))
			caps->smtputf8 = true;
		else if (KW("DSN"))
			caps->dsn = true;
		else if (KW("CHUNKING"))
			caps->chunking = true;
		else if (KW("XQUEUEID"))
			caps->xqueueid = true;
		else if (KW("SIZE") && kw[word] == ' ')
			caps->size = strtoull(kw + word + 1, NULL, 10);
		else if (KW("AUTH"))
			auth_mechanisms(kw + word, kw + len, caps);
#undef KW
	}
}
