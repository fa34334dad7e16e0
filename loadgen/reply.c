/* reply.c — SMTP reply and POP3 status parsing (see reply.h).
 * RFC 5321 4.2 and 4.2.1; RFC 1939 3 and 5 (STAT).
 * Trust boundary: untrusted server lines; bounded, strict parsing. */
#include "reply.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void lg_smtp_reply_reset(struct lg_smtp_reply *reply)
{
	reply->code = 0;
	reply->lines = 0;
}

enum lg_reply_status lg_smtp_reply_feed(struct lg_smtp_reply *reply,
					const char *line, size_t len,
					const char **error_r)
{
	/* RFC 5321 4.2: Reply-code = %x32-35 %x30-35 %x30-39, then SP or
	 * "-" (or, leniently, nothing) before the text. */
	if (len < 3 || line[0] < '2' || line[0] > '5' ||
	    line[1] < '0' || line[1] > '5' || line[2] < '0' || line[2] > '9') {
		*error_r = "reply does not start with a reply code";
		return LG_REPLY_BAD;
	}
	if (len > 3 && line[3] != ' ' && line[3] != '-') {
		*error_r = "reply code not followed by space or hyphen";
		return LG_REPLY_BAD;
	}
	int code = (line[0] - '0') * 100 + (line[1] - '0') * 10 + (line[2] - '0');
	/* RFC 5321 4.2.1: every line of a multiline reply has the same code. */
	if (reply->lines > 0 && code != reply->code) {
		*error_r = "reply code changes within a multiline reply";
		return LG_REPLY_BAD;
	}
	reply->code = code;
	if (++reply->lines > LG_SMTP_REPLY_MAX_LINES) {
		*error_r = "too many lines in one reply";
		return LG_REPLY_BAD;
	}
	return len > 3 && line[3] == '-' ? LG_REPLY_MORE : LG_REPLY_DONE;
}

enum lg_pop_status lg_pop_status(const char *line, size_t len)
{
	if (len >= 3 && memcmp(line, "+OK", 3) == 0 && (len == 3 || line[3] == ' '))
		return LG_POP_OK;
	if (len >= 4 && memcmp(line, "-ERR", 4) == 0 && (len == 4 || line[4] == ' '))
		return LG_POP_ERR;
	return LG_POP_BAD;
}

/* A decimal number of at most 19 digits; advances *p. */
static bool parse_number(const char **p, uint64_t *value_r)
{
	uint64_t value = 0;
	const char *s = *p;
	size_t digits = 0;

	while (*s >= '0' && *s <= '9') {
		if (++digits > 19)
			return false;
		value = value * 10 + (uint64_t)(*s++ - '0');
	}
	if (digits == 0)
		return false;
	*p = s;
	*value_r = value;
	return true;
}

bool lg_pop_parse_stat(const char *line, uint64_t *count_r, uint64_t *size_r)
{
	const char *p = line;

	if (strncmp(p, "+OK ", 4) != 0)
		return false;
	p += 4;
	if (!parse_number(&p, count_r) || *p++ != ' ' || !parse_number(&p, size_r))
		return false;
	/* RFC 1939 5: servers should not add anything, but may. */
	return *p == '\0' || *p == ' ';
}
