/* smtp-content.h — the pure parts of reading message content: the BDAT
 * chunk decoder (bare CR/LF policy, NUL, line lengths, the size limit), the
 * Received: count for loop detection, the Date:/Message-ID: check of the
 * header section (RFC 6409 8.2-8.3), and the reply refusing content.
 * DATA content itself is decoded by lib/dotcodec. No session, no I/O:
 * the server engine (smtpd-content.c) and the MTA's content policy
 * (mta/smtp-data.c) feed them from the socket, tests/fuzz/fuzz-smtp-data.c
 * with arbitrary chunks.
 *
 * Trust boundary: message content is the client's, any octets at all, cut
 * into chunks anywhere; results never depend on where the cuts fall.
 * RFCs: 3030 2 (BDAT: counted octets, no end marker), 5321 2.3.8 (bare CR
 * and LF), 6.3 (loop detection by counting Received:), 5322 2.1.1 (998
 * octets a line), 3.5 (no NUL in text; also 6152 with 2045 2.7-2.8), 2.2
 * (field names, unfolding), 3.6 (Date: required, Message-ID: should be),
 * 3.6.7 (trace fields). */
#ifndef MT_SMTP_CONTENT_H
#define MT_SMTP_CONTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "dotcodec.h"

#define MT_SMTP_LINE_MAX_OCTETS 998	/* RFC 5322 2.1.1, CRLF not counted */

/* BDAT content across all chunks of one message. */
struct mt_smtp_chunk_decoder {
	bool normalize;		/* bare CR/LF become CRLF (else kept, flagged) */
	uint64_t max_size;	/* octets of output at most */
	bool cr;		/* the last octet so far was a CR: held back */
	bool bare_newline;	/* a bare CR or LF was seen */
	bool nul;		/* a NUL octet was seen (refused under both policies) */
	bool too_big;		/* output stopped at max_size */
	uint64_t size;		/* octets appended */
	size_t line_len, longest_line;
};

void mt_smtp_chunk_init(struct mt_smtp_chunk_decoder *d, bool normalize,
		     uint64_t max_size);
/* Append p[0..len) to out under the policy (a CR is held back until the
 * next octet shows whether it ends a line). */
void mt_smtp_chunk_decode(struct mt_smtp_chunk_decoder *d, const char *p, size_t len,
		       struct mt_buf *out);
/* The last chunk has been read: a CR still held back is a bare CR. */
void mt_smtp_chunk_finish(struct mt_smtp_chunk_decoder *d, struct mt_buf *out);
/* The verdict after mt_smtp_chunk_finish(), in the order DATA gives them:
 * too big, then bare newline (under reject), then NUL, then a line over
 * max_line. */
enum mt_dot_result mt_smtp_chunk_result(const struct mt_smtp_chunk_decoder *d,
				     size_t max_line);

/* Received: fields in the header section of p[0..len) (up to the first
 * empty line, LF or CRLF), by name, case-insensitively. */
unsigned int mt_smtp_count_received(const char *p, size_t len);

/* Which of Date: and Message-ID: the header section of p[0..len) holds
 * (field names case-insensitively, optional white space before the colon
 * as RFC 5322 4.5 allows; continuation lines are not fields). */
enum mt_smtp_header_field {
	MT_SMTP_HEADER_DATE = 0x1,
	MT_SMTP_HEADER_MESSAGE_ID = 0x2,
};
unsigned int mt_smtp_header_fields(const char *p, size_t len);

/* The reply refusing content with verdict r (not MT_DOT_RESULT_OK). */
void mt_smtp_content_refusal(enum mt_dot_result r, int *code_r, const char **text_r);

#endif
