/* dotcodec.h — streaming dot-stuffing codec for SMTP/LMTP DATA and POP3
 * multi-line responses. Neither direction buffers a whole message; chunk
 * boundaries anywhere (down to single octets) give identical results.
 *
 * Trust boundary: the decoder reads message data straight from a network
 * peer (SMTP/LMTP client, or a POP3/SMTP server when we are the client); it
 * alone decides where the data ends, so it must agree with every strict
 * receiver: the data ends at CRLF "." CRLF and nowhere else (SMTP smuggling:
 * LF.LF, CR.CR, LF.CRLF, CRLF.LF, CR.CRLF ... never end it). The encoder
 * reads stored or queued messages and must produce output that no lenient
 * receiver could end early: only CRLF line ends, every leading dot stuffed.
 *
 * A NUL octet is content no current RFC allows (RFC 5322 3.5: text is
 * %d1-127 without CR and LF, NUL only in 4.1's obsolete syntax; RFC 6152
 * with RFC 2045 2.7-2.8: neither 7bit nor 8bit data holds NUL): it passes
 * through like any octet but flags the message, which the caller refuses,
 * so no next hop that drops NULs is ever shown CRLF NUL "." CRLF, an end
 * of data once the NUL is gone.
 *
 * RFC 5321 4.5.2 (transparency), 4.1.1.4 (end of mail data), 2.3.8 (bare CR
 * and LF), 4.5.3.1.6 (1000-octet text lines, the stuffed dot not counted);
 * RFC 2033 4.2 (LMTP DATA); RFC 1939 3 (POP3 multi-line responses). */
#ifndef MT_DOTCODEC_H
#define MT_DOTCODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct evbuffer;

/* What the decoder does with a bare LF (LF not after CR) or a bare CR (CR
 * not before LF). Either way it counts as a line break for un-stuffing, but
 * the line after it can never be the end-of-data line. */
enum mt_dot_bare_policy {
	MT_DOT_BARE_REJECT,	/* default: pass through, flag the message;
				 * the caller answers 5xx after the end */
	MT_DOT_BARE_NORMALIZE,	/* write CRLF instead of the bare octet */
};

/* Verdict on a message once the decoder has seen its end. */
enum mt_dot_result {
	MT_DOT_RESULT_OK,
	MT_DOT_RESULT_BARE_NEWLINE,	/* bare LF/CR under BARE_REJECT */
	MT_DOT_RESULT_TOO_BIG,		/* more than max_size octets */
	MT_DOT_RESULT_LINE_TOO_LONG,	/* a line over max_line octets */
	MT_DOT_RESULT_NUL,		/* a NUL octet in the content */
};

struct mt_dot_decoder {
	/* settings (from mt_dot_decoder_init) */
	enum mt_dot_bare_policy policy;
	uint64_t max_size;		/* 0: no limit */
	size_t max_line;		/* 0: no limit */
	/* read-only results, valid at any time */
	bool end;			/* CRLF.CRLF seen; input after it untouched */
	bool bare_newline;		/* a bare LF or bare CR was seen */
	bool nul;			/* a NUL octet was seen (either policy) */
	bool too_big;			/* output stopped at max_size */
	uint64_t size;			/* message octets (un-stuffed), all of them */
	size_t longest_line;		/* un-stuffed, line terminator excluded */
	/* private */
	int state;
	bool after_crlf;		/* this line began after a real CRLF */
	size_t line_len;
};

/* Start decoding right after the DATA command's CRLF (or after a POP3 "+OK"
 * status line). Output at most max_size octets (0: unlimited); lines longer
 * than max_line octets (0: unlimited, 998 for RFC 5321) flag the message. */
void mt_dot_decoder_init(struct mt_dot_decoder *dec,
			 enum mt_dot_bare_policy policy, uint64_t max_size,
			 size_t max_line);

/* Decode data[0..len): append message octets to out (CRLF line ends kept,
 * stuffed dots removed, "." CRLF not included; nothing appended once too
 * big). Returns the octets consumed: all of len unless the end was reached,
 * in which case the terminating LF is the last octet consumed and what
 * follows (pipelined commands) belongs to the caller. */
size_t mt_dot_decode(struct mt_dot_decoder *dec, const void *data, size_t len,
		     struct mt_buf *out);

/* Same, reading from and draining an evbuffer; true once the end is seen. */
bool mt_dot_decode_evbuffer(struct mt_dot_decoder *dec, struct evbuffer *in,
			    struct mt_buf *out);
/* The same, stopping once out holds out_max octets or more (so a caller
 * that writes content away in pieces holds about one piece): what is
 * left stays in the evbuffer for the next call. */
bool mt_dot_decode_evbuffer_max(struct mt_dot_decoder *dec, struct evbuffer *in,
				struct mt_buf *out, size_t out_max);

/* After the end: the verdict and, if not OK, why (for the 5xx reply). The
 * first that applies: too big, bare newline (under BARE_REJECT), NUL, a
 * line over max_line. */
enum mt_dot_result mt_dot_decoder_result(const struct mt_dot_decoder *dec,
					 const char **error_r);

struct mt_dot_encoder {
	bool bol;		/* at the start of a line */
	bool cr_pending;	/* last input octet was a CR */
};

void mt_dot_encoder_init(struct mt_dot_encoder *enc);
/* Append data[0..len) to out, dot-stuffed, with bare LF and bare CR turned
 * into CRLF. */
void mt_dot_encode(struct mt_dot_encoder *enc, const void *data, size_t len,
		   struct mt_buf *out);
/* Append the end: CRLF if the message did not end with one, then "." CRLF.
 * The encoder is ready for a new message afterwards. */
void mt_dot_encode_finish(struct mt_dot_encoder *enc, struct mt_buf *out);

#endif
