/* smtp-reply.h — the one reader of SMTP/LMTP server replies, for every
 * tier that is a client: the MTA's outbound connections (to the store
 * shards and to any host on the Internet) and mailtier-load. Multi-line
 * replies assembled from lines, the code checked, the text kept bounded;
 * the enhanced status code of a reply; EHLO/LHLO capabilities.
 *
 * Trust boundary: reply lines come from the server we connected to, so
 * nothing in them is trusted. A reply has at most MT_SMTP_REPLY_MAX_LINES
 * lines and keeps at most MT_SMTP_REPLY_TEXT_MAX octets of text, control
 * octets replaced by '?'; a line that does not start with a reply code,
 * or changes code in the middle of a reply, is a protocol error. Pure: no
 * allocation, no I/O (tests/fuzz/fuzz-reply.c, tests/unit/test-smtp-reply.c).
 * RFCs: 5321 4.2 (Reply-line, Reply-code = %x32-35 %x30-35 %x30-39),
 * 4.2.1 (one code per reply); 3463 (enhanced status codes); 1870, 2920,
 * 3207, 6152, 6531, 3461, 3030 (EHLO keywords); 2033 4.1 (LHLO). */
#ifndef MT_SMTP_REPLY_H
#define MT_SMTP_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define MT_SMTP_REPLY_MAX_LINES 100
#define MT_SMTP_REPLY_TEXT_MAX 1024

struct mt_smtp_reply {
	int code;		/* 200..559 once the first line is in */
	unsigned int lines;
	bool done;		/* the last line was fed: the next starts over */
	size_t text_len;
	/* The lines' texts joined with "\n", bounded, NUL-terminated. */
	char text[MT_SMTP_REPLY_TEXT_MAX + 1];
};

enum mt_smtp_reply_status {
	MT_SMTP_REPLY_MORE,	/* a continuation line: feed the next */
	MT_SMTP_REPLY_DONE,	/* the last line: the reply is complete */
	MT_SMTP_REPLY_BAD,	/* not a reply line: protocol error (error_r) */
};

/* Start over for the next reply. */
void mt_smtp_reply_reset(struct mt_smtp_reply *reply);
/* Feed one line line[0..len) without its CRLF (it need not be
 * NUL-terminated; a NUL inside is text). After DONE the next line starts
 * a new reply. *error_r is a static string. */
enum mt_smtp_reply_status mt_smtp_reply_feed(struct mt_smtp_reply *reply,
					     const char *line, size_t len,
					     const char **error_r);
/* "550 5.1.1 text" on one line, for logs and stored errors (in out). */
const char *mt_smtp_reply_summary(const struct mt_smtp_reply *reply,
				  struct mt_buf *out);
/* The length of the enhanced status code at the start of t[0..len)
 * (RFC 3463 2: class "." subject "." detail, a digit, 1-3 digits, 1-3
 * digits) when one is there and ends at SP, HTAB or the text's end;
 * else 0. The class digit is t[0], not checked here. */
size_t mt_smtp_enhanced_code_len(const char *t, size_t len);
/* The enhanced status code at the start of text ("5.1.1") when it has the
 * reply code's class, else the class default ("5.0.0", "4.0.0", "2.0.0"). */
void mt_smtp_status_code(const char *text, int code, char out[16]);

/* Capabilities from an EHLO/LHLO reply. */
struct mt_smtp_caps {
	bool pipelining, starttls, eightbit, smtputf8, dsn, chunking;
	bool xqueueid;		/* mailtier-popstore: MAIL ... XQUEUEID=<id> */
	bool auth_plain, auth_login;	/* RFC 4954 3: AUTH and its mechanisms */
	uint64_t size;		/* SIZE limit, 0: none given */
};
void mt_smtp_caps_parse(const struct mt_smtp_reply *reply, struct mt_smtp_caps *caps_r);

#endif
