/* pop3-status.h — the one reader of POP3 server status lines, for every
 * tier that is a POP3 client: the MMP logging in to a store shard (and
 * probing it), and mailtier-load. "+OK" / "-ERR" (RFC 1939 3, case
 * sensitive per RFC 2449 3), the SASL continuation "+ " (RFC 5034 4), and
 * STAT's "+OK count size" (RFC 1939 5).
 *
 * Trust boundary: the lines come from the server (untrusted); anything not
 * of the expected shape is reported, never guessed at. Pure functions
 * (tests/fuzz/fuzz-reply.c, tests/unit/test-smtp-reply.c). */
#ifndef MT_POP3_STATUS_H
#define MT_POP3_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mt_pop3_status {
	MT_POP3_OK,
	MT_POP3_ERR,
	MT_POP3_CONTINUE,	/* "+ " [base64], or a bare "+" */
	MT_POP3_BAD,		/* none of those */
};

/* What line[0..len) (without CRLF) says. */
enum mt_pop3_status mt_pop3_status(const char *line, size_t len);
/* "+OK count size" with decimal numbers (NUL-terminated line); false on
 * anything else. */
bool mt_pop3_parse_stat(const char *line, uint64_t *count_r, uint64_t *size_r);

#endif
