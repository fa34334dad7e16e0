/* pop3-top.h — the pure part of streaming a POP3 TOP reply: deciding,
 * chunk by chunk, where "the headers, the blank line and n body lines"
 * end, without ever holding the message (RFC 1939 7, TOP).
 *
 * Trust boundary: the bytes are a stored message (delivered by an LMTP
 * client, so of any shape: lines without CR, no blank line at all); the
 * scan never reads past len and keeps O(1) state. */
#ifndef MT_POP3_TOP_H
#define MT_POP3_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pop3_top_limit {
	uint64_t lines_left;	/* body lines still to send */
	bool in_body;		/* the blank line has been seen */
	bool line_empty;	/* nothing but CR so far on this line */
	bool done;		/* everything TOP sends has been passed */
};

void pop3_top_init(struct pop3_top_limit *t, uint64_t lines);
/* How many octets of data[0..len) belong to the TOP reply; sets done once
 * the limit is reached (what follows is not sent). A message without a
 * blank line is all header and is sent whole. */
size_t pop3_top_scan(struct pop3_top_limit *t, const void *data, size_t len);

#endif
