/* client-reply.h — reading SMTP/LMTP server replies on the MTA's client
 * side: multi-line replies assembled from lines, the code checked, the text
 * bounded; EHLO/LHLO capabilities picked out of a reply.
 *
 * Trust boundary: reply lines come from the server we connected to (a store
 * shard, or any host on the Internet for remote mail): nothing in them is
 * trusted. A reply has at most CLIENT_REPLY_MAX_LINES lines and keeps at
 * most CLIENT_REPLY_TEXT_MAX octets of text; a line that does not start
 * with three digits, or changes code in the middle of a reply, is a
 * protocol error.
 * RFCs: 5321 4.2 (reply syntax, multi-line replies), 4.2.1 (codes),
 * 2034 (enhanced status codes), 1870/2920/3207/6152/6531/3461 (EHLO
 * keywords), 2033 4.1 (LHLO). */
#ifndef MT_MTA_CLIENT_REPLY_H
#define MT_MTA_CLIENT_REPLY_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

#define CLIENT_REPLY_MAX_LINES 100
#define CLIENT_REPLY_TEXT_MAX 1024

struct client_reply {
	int code;		/* 0 until the first line */
	unsigned int lines;
	bool done;
	struct mt_buf text;	/* lines' texts joined with "\n", bounded */
};

enum client_reply_status {
	CLIENT_REPLY_MORE,	/* a continuation line: feed the next */
	CLIENT_REPLY_DONE,	/* the last line: reply complete */
	CLIENT_REPLY_ERROR,	/* not a reply line: protocol error */
};

void client_reply_init(struct client_reply *reply);
void client_reply_free(struct client_reply *reply);
/* Start over for the next reply (keeps memory). */
void client_reply_reset(struct client_reply *reply);
/* Feed one line (without its CRLF). */
enum client_reply_status client_reply_feed(struct client_reply *reply,
					   const char *line,
					   const char **error_r);
/* "550 5.1.1 text" on one line, for logs and stored errors. */
const char *client_reply_summary(const struct client_reply *reply,
				 struct mt_buf *out);
/* The enhanced status code at the start of the text ("5.1.1"), or the
 * class default ("5.0.0"/"4.0.0"/"2.0.0") when there is none. */
void client_reply_status_code(const char *text, int code, char out[16]);

/* Capabilities from an EHLO/LHLO reply. */
struct client_caps {
	bool pipelining, starttls, eightbit, smtputf8, dsn, chunking;
	bool xqueueid;		/* mailtier-popstore: MAIL ... XQUEUEID=<id> */
	uint64_t size;		/* SIZE limit, 0: none given */
};
void client_caps_parse(const struct client_reply *reply, struct client_caps *caps_r);

#endif
