/* reply.h — parsers for what a server answers a client: SMTP replies
 * (RFC 5321 4.2: "NNN text" / "NNN-text" continuation lines, one code per
 * reply) and POP3 status lines (RFC 1939 3: "+OK" / "-ERR"), plus STAT's
 * "+OK count size" (RFC 1939 5). Pure functions, tested byte by byte.
 * Trust boundary: the lines come from the system under test (untrusted):
 * anything not of the expected shape is reported, never guessed at. */
#ifndef LG_REPLY_H
#define LG_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Our bound on the lines of one SMTP reply (EHLO has about a dozen). */
#define LG_SMTP_REPLY_MAX_LINES 100

struct lg_smtp_reply {
	int code;		/* 200..599 once the first line is in */
	unsigned int lines;
};

enum lg_reply_status {
	LG_REPLY_MORE,		/* a continuation line: read the next one */
	LG_REPLY_DONE,		/* the last line: code is the reply's */
	LG_REPLY_BAD,		/* not an SMTP reply (error_r says why) */
};

void lg_smtp_reply_reset(struct lg_smtp_reply *reply);
enum lg_reply_status lg_smtp_reply_feed(struct lg_smtp_reply *reply,
					const char *line, size_t len,
					const char **error_r);

enum lg_pop_status {
	LG_POP_OK,
	LG_POP_ERR,
	LG_POP_BAD,		/* neither +OK nor -ERR */
};

enum lg_pop_status lg_pop_status(const char *line, size_t len);
/* "+OK count size" with decimal numbers; false on anything else. */
bool lg_pop_parse_stat(const char *line, uint64_t *count_r, uint64_t *size_r);

#endif
