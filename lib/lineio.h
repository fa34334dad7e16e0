/* lineio.h — line-oriented protocol reader and reply writer over libevent
 * evbuffers, for SMTP, LMTP and POP3 command and reply lines.
 *
 * Trust boundary: mt_line_read() sees raw bytes from the network peer (a
 * client's commands, or a server's replies when we are the client); nothing
 * in them is trusted. mt_line_write() formats text that may include peer data
 * (an address, an argument) and guarantees it cannot split the reply.
 *
 * RFC 5321 2.3.8 (lines end in CRLF; bare CR and bare LF are not line ends),
 * 4.1.1.4 and 4.2.1 (multi-line replies), 4.5.3.1.4/4.5.3.1.5 (line length
 * limits count the CRLF); RFC 1939 3 and RFC 2449 4 (POP3 lines).
 *
 * Length limit: max_len counts the CRLF, as the RFCs do: a line is accepted
 * when its content is at most max_len - 2 octets, whatever terminator arrived
 * (so SMTP's 512 allows 510 octets of command text).
 *
 * Line ends: a line ends at LF. "CR LF" is a proper line end. A LF without a
 * CR before it is a bare LF: MT_LINE_STRICT_CRLF reports it (after consuming
 * the line up to and including the LF), MT_LINE_ACCEPT_LF accepts it as a line
 * end. A CR anywhere else in the line is a bare CR: always reported, after
 * consuming the line. A CR never ends a line on its own. */
#ifndef MT_LINEIO_H
#define MT_LINEIO_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

struct evbuffer;

enum mt_line_policy {
	MT_LINE_STRICT_CRLF,	/* bare LF or bare CR in a line -> error */
	MT_LINE_ACCEPT_LF,	/* bare LF also ends a line; bare CR is an error */
};

enum mt_line_status {
	MT_LINE_OK,		/* one line (without its terminator) in `line` */
	MT_LINE_NEED_MORE,	/* no complete line yet; wait for more input */
	MT_LINE_TOO_LONG,	/* an overlong line was discarded up to its end */
	MT_LINE_BARE_LF,	/* line ended by a bare LF (strict policy) */
	MT_LINE_BARE_CR,	/* line contained a CR not followed by LF */
	MT_LINE_NUL,		/* line contained a NUL octet */
};

/* Reader state: one per connection direction. Plain data, no allocation. */
struct mt_line_reader {
	size_t max_len;			/* octets per line, CRLF included */
	enum mt_line_policy policy;
	size_t scanned;			/* input octets known to hold no LF */
	bool discarding;		/* inside an overlong line */
};

/* Set up a reader; 3 <= max_len <= INT_MAX (one octet plus CRLF at least). */
void mt_line_reader_init(struct mt_line_reader *reader, size_t max_len,
			 enum mt_line_policy policy);
/* Forget scan state; call after taking input out of the evbuffer by other
 * means while the reader last said NEED_MORE (e.g. handing it to DATA). */
void mt_line_reader_reset(struct mt_line_reader *reader);

/* Remove one line from `in`. On MT_LINE_OK, `line` holds the line without
 * its terminator (NUL-terminated, no NUL, CR or LF inside). On NEED_MORE the
 * input is left in place (an overlong line's start is already dropped). On
 * BARE_LF, BARE_CR and NUL the offending line has been consumed and `line`
 * holds its raw bytes for logging only; on TOO_LONG `line` is empty. An
 * overlong line is dropped as it arrives (NEED_MORE meanwhile) and TOO_LONG
 * comes once, when its terminating LF has been consumed, so one error reply
 * answers one line and the next line is read normally. Every status except
 * OK and NEED_MORE sets *error_r. Cost is linear in the input however it is
 * split into reads. */
enum mt_line_status mt_line_read(struct mt_line_reader *reader,
				 struct evbuffer *in, struct mt_buf *line,
				 const char **error_r);

/* Append one reply line plus CRLF. CR, LF, NUL and other control octets
 * (except TAB) in the formatted text are replaced by '?', so one call can
 * never produce more than one line. */
void mt_line_write(struct evbuffer *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void mt_line_vwrite(struct evbuffer *out, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Append one line of an SMTP/LMTP reply: "250-text" when more lines follow,
 * "250 text" for the last (RFC 5321 4.2.1). code must be 200..599. */
void mt_line_reply(struct evbuffer *out, int code, bool more,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
