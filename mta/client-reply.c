/* client-reply.c — SMTP/LMTP reply parsing for the MTA's clients (see
 * client-reply.h).
 *
 * Trust boundary: server reply lines (any peer); bounded as described in
 * the header, never used as format strings, control characters dropped
 * before they reach logs or stored errors.
 * RFC 5321 4.2: Reply-line = *( Reply-code "-" [ textstring ] CRLF )
 * Reply-code [ SP textstring ] CRLF. */
#include "client-reply.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void client_reply_init(struct client_reply *reply)
{
	memset(reply, 0, sizeof(*reply));
	mt_buf_init(&reply->text);
}

void client_reply_free(struct client_reply *reply)
{
	mt_buf_free(&reply->text);
}

void client_reply_reset(struct client_reply *reply)
{
	reply->code = 0;
	reply->lines = 0;
	reply->done = false;
	mt_buf_reset(&reply->text);
}

enum client_reply_status client_reply_feed(struct client_reply *reply,
					   const char *line,
					   const char **error_r)
{
	if (reply->done)
		client_reply_reset(reply);
	if (!isdigit((unsigned char)line[0]) || !isdigit((unsigned char)line[1]) ||
	    !isdigit((unsigned char)line[2]) ||
	    (line[3] != '\0' && line[3] != ' ' && line[3] != '-')) {
		*error_r = "malformed reply line";
		return CLIENT_REPLY_ERROR;
	}
	int code = (line[0] - '0') * 100 + (line[1] - '0') * 10 + (line[2] - '0');
	if (code < 200 || code > 599) {
		*error_r = "reply code out of range";
		return CLIENT_REPLY_ERROR;
	}
	if (reply->lines > 0 && code != reply->code) {
		*error_r = "reply code changes within a multi-line reply";
		return CLIENT_REPLY_ERROR;
	}
	if (++reply->lines > CLIENT_REPLY_MAX_LINES) {
		*error_r = "too many lines in one reply";
		return CLIENT_REPLY_ERROR;
	}
	reply->code = code;
	const char *text = line[3] == '\0' ? "" : line + 4;
	if (reply->lines > 1 && reply->text.len < CLIENT_REPLY_TEXT_MAX)
		mt_buf_append_char(&reply->text, '\n');
	for (const char *p = text; *p != '\0' && reply->text.len < CLIENT_REPLY_TEXT_MAX; p++) {
		unsigned char c = (unsigned char)*p;
		mt_buf_append_char(&reply->text, c < 0x20 || c == 0x7f ? '?' : (char)c);
	}
	if (line[3] == '-')
		return CLIENT_REPLY_MORE;
	reply->done = true;
	return CLIENT_REPLY_DONE;
}

const char *client_reply_summary(const struct client_reply *reply, struct mt_buf *out)
{
	mt_buf_reset(out);
	mt_buf_appendf(out, "%d ", reply->code);
	for (size_t i = 0; i < reply->text.len; i++)
		mt_buf_append_char(out, reply->text.data[i] == '\n' ? ' ' :
				   reply->text.data[i]);
	return mt_buf_cstr(out);
}

void client_reply_status_code(const char *text, int code, char out[16])
{
	/* class "." subject "." detail, RFC 3463 2: 1 digit, 1-3, 1-3. */
	const char *p = text;
	size_t a = 0, b = 0, c = 0;
	if ((p[0] == '2' || p[0] == '4' || p[0] == '5') && p[0] - '0' == code / 100 &&
	    p[1] == '.') {
		p += 2;
		while (isdigit((unsigned char)p[a]) && a < 4)
			a++;
		if (a >= 1 && a <= 3 && p[a] == '.') {
			const char *q = p + a + 1;
			while (isdigit((unsigned char)q[b]) && b < 4)
				b++;
			c = b;
			if (b >= 1 && b <= 3 && (q[b] == '\0' || q[b] == ' ')) {
				snprintf(out, 16, "%.*s", (int)(q + c - text), text);
				return;
			}
		}
	}
	snprintf(out, 16, "%d.0.0", code / 100);
}

void client_caps_parse(const struct client_reply *reply, struct client_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	const char *p = mt_buf_cstr(&reply->text);
	/* The first line is the server's name; keywords follow, one a line. */
	const char *nl = strchr(p, '\n');
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
#undef KW
	}
}
