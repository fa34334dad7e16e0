/* dotcodec.c — streaming dot-stuffing codec (see dotcodec.h).
 *
 * Trust boundary: decoder input is raw peer data of any size and shape; the
 * state machine looks at each octet once, keeps O(1) state and finds the end
 * only at CRLF "." CRLF. A NUL octet anywhere flags the message (the
 * caller refuses it), whatever the bare-newline policy. Encoder input is
 * message content we hold.
 *
 * RFC 5321 4.5.2: "When a line of mail text is received by the SMTP server,
 * it checks the line. If the line is composed of a single period, it is
 * treated as the end of mail indicator. If the first character is a period
 * and there are other characters on the line, the first character is
 * deleted." RFC 1939 3 applies the same rule to POP3. */
#include "dotcodec.h"
#include "log.h"

#include <event2/buffer.h>
#include <stdint.h>
#include <string.h>

enum dec_state {
	DEC_BOL,	/* at the start of a line */
	DEC_MID,	/* inside a line */
	DEC_CR,		/* a CR seen; is it CRLF or a bare CR? */
	DEC_DOT,	/* "." at the start of a line */
	DEC_DOT_CR,	/* "." CR at the start of a line */
	DEC_END,	/* CRLF "." CRLF seen */
};

void mt_dot_decoder_init(struct mt_dot_decoder *dec,
			 enum mt_dot_bare_policy policy, uint64_t max_size,
			 size_t max_line)
{
	memset(dec, 0, sizeof(*dec));
	dec->policy = policy;
	dec->max_size = max_size;
	dec->max_line = max_line;
	dec->state = DEC_BOL;
	/* The DATA command's own CRLF precedes the first line, so "." CRLF
	 * straight away is an empty message. */
	dec->after_crlf = true;
}

/* Append message octets, counting all of them but keeping at most max_size. */
static void put(struct mt_dot_decoder *dec, struct mt_buf *out,
		const void *data, size_t len)
{
	dec->size += len;
	if (dec->too_big)
		return;
	if (dec->max_size != 0 && dec->size > dec->max_size) {
		dec->too_big = true;
		return;
	}
	mt_buf_append(out, data, len);
}

static void put_text(struct mt_dot_decoder *dec, struct mt_buf *out,
		     const void *data, size_t len)
{
	put(dec, out, data, len);
	dec->line_len += len;
	if (dec->line_len > dec->longest_line)
		dec->longest_line = dec->line_len;
}

static void end_line_crlf(struct mt_dot_decoder *dec, struct mt_buf *out)
{
	put(dec, out, "\r\n", 2);
	dec->line_len = 0;
	dec->after_crlf = true;
	dec->state = DEC_BOL;
}

/* A bare LF or bare CR: a line break for un-stuffing, never for the end. */
static void end_line_bare(struct mt_dot_decoder *dec, struct mt_buf *out,
			  char c)
{
	dec->bare_newline = true;
	if (dec->policy == MT_DOT_BARE_NORMALIZE)
		put(dec, out, "\r\n", 2);
	else
		put(dec, out, &c, 1);
	dec->line_len = 0;
	dec->after_crlf = false;
	dec->state = DEC_BOL;
}

/* Length of the run of octets at p[0..len) holding no CR or LF. */
static size_t text_run(const unsigned char *p, size_t len)
{
	size_t n = 0;

	while (n < len && p[n] != '\r' && p[n] != '\n')
		n++;
	return n;
}

size_t mt_dot_decode(struct mt_dot_decoder *dec, const void *data, size_t len,
		     struct mt_buf *out)
{
	const unsigned char *p = data;
	size_t i = 0, n;

	/* Each case either consumes p[i] or changes state so that the next
	 * round looks at p[i] again; no state loops without consuming. */
	while (i < len && dec->state != DEC_END) {
		unsigned char c = p[i];

		switch (dec->state) {
		case DEC_BOL:
			if (c == '.') {
				dec->state = DEC_DOT;
				i++;
			} else {
				dec->state = DEC_MID;
			}
			break;
		case DEC_MID:
			if (c == '\r') {
				dec->state = DEC_CR;
				i++;
			} else if (c == '\n') {
				end_line_bare(dec, out, '\n');
				i++;
			} else {
				n = text_run(p + i, len - i);
				/* Every octet but CR, LF and a line's first
				 * dot passes here. */
				if (memchr(p + i, '\0', n) != NULL)
					dec->nul = true;
				put_text(dec, out, p + i, n);
				i += n;
			}
			break;
		case DEC_CR:
			if (c == '\n') {
				end_line_crlf(dec, out);
				i++;
			} else {
				end_line_bare(dec, out, '\r');
			}
			break;
		case DEC_DOT:
			if (c == '\r') {
				dec->state = DEC_DOT_CR;
				i++;
			} else if (c == '\n') {
				/* "." alone on a line ended by a bare LF: not
				 * the end, and no other characters, so the dot
				 * is not a stuffed one: keep it. */
				put_text(dec, out, ".", 1);
				end_line_bare(dec, out, '\n');
				i++;
			} else {
				/* A stuffed dot: drop it. */
				dec->state = DEC_MID;
			}
			break;
		case DEC_DOT_CR:
			if (c == '\n' && dec->after_crlf) {
				dec->state = DEC_END;
				dec->end = true;
				i++;
			} else if (c == '\n') {
				/* CRLF "." CRLF only: after a bare line break
				 * this is an ordinary line holding a dot. */
				put_text(dec, out, ".", 1);
				end_line_crlf(dec, out);
				i++;
			} else {
				put_text(dec, out, ".", 1);
				end_line_bare(dec, out, '\r');
			}
			break;
		default:
			mt_panic("dot decoder in bad state %d", dec->state);
		}
	}
	return i;
}

bool mt_dot_decode_evbuffer(struct mt_dot_decoder *dec, struct evbuffer *in,
			    struct mt_buf *out)
{
	return mt_dot_decode_evbuffer_max(dec, in, out, SIZE_MAX);
}

bool mt_dot_decode_evbuffer_max(struct mt_dot_decoder *dec, struct evbuffer *in,
				struct mt_buf *out, size_t out_max)
{
	while (!dec->end && evbuffer_get_length(in) > 0 && out->len < out_max) {
		struct evbuffer_iovec vec[8];
		int n = evbuffer_peek(in, -1, NULL, vec, 8);
		size_t used = 0;

		for (int k = 0; k < n && k < 8 && !dec->end && out->len < out_max; k++)
			used += mt_dot_decode(dec, vec[k].iov_base,
					      vec[k].iov_len, out);
		if (evbuffer_drain(in, used) < 0)
			mt_panic("evbuffer_drain(%zu) failed", used);
	}
	return dec->end;
}

enum mt_dot_result mt_dot_decoder_result(const struct mt_dot_decoder *dec,
					 const char **error_r)
{
	if (dec->too_big) {
		*error_r = "message exceeds the size limit";
		return MT_DOT_RESULT_TOO_BIG;
	}
	if (dec->bare_newline && dec->policy == MT_DOT_BARE_REJECT) {
		*error_r = "message contains a bare LF or bare CR";
		return MT_DOT_RESULT_BARE_NEWLINE;
	}
	if (dec->nul) {
		*error_r = "message contains a NUL octet";
		return MT_DOT_RESULT_NUL;
	}
	if (dec->max_line != 0 && dec->longest_line > dec->max_line) {
		*error_r = "message contains a line that is too long";
		return MT_DOT_RESULT_LINE_TOO_LONG;
	}
	return MT_DOT_RESULT_OK;
}

void mt_dot_encoder_init(struct mt_dot_encoder *enc)
{
	enc->bol = true;
	enc->cr_pending = false;
}

void mt_dot_encode(struct mt_dot_encoder *enc, const void *data, size_t len,
		   struct mt_buf *out)
{
	const unsigned char *p = data;
	size_t i = 0, n;

	while (i < len) {
		if (enc->cr_pending) {
			/* CR LF, or a bare CR that becomes CRLF: either way
			 * one CRLF goes out. */
			enc->cr_pending = false;
			mt_buf_append(out, "\r\n", 2);
			enc->bol = true;
			if (p[i] == '\n') {
				i++;
				continue;
			}
		}
		if (p[i] == '\r') {
			enc->cr_pending = true;
			i++;
		} else if (p[i] == '\n') {
			mt_buf_append(out, "\r\n", 2);
			enc->bol = true;
			i++;
		} else {
			if (enc->bol && p[i] == '.')
				mt_buf_append_char(out, '.');
			n = text_run(p + i, len - i);
			mt_buf_append(out, p + i, n);
			enc->bol = false;
			i += n;
		}
	}
}

void mt_dot_encode_finish(struct mt_dot_encoder *enc, struct mt_buf *out)
{
	if (enc->cr_pending || !enc->bol)
		mt_buf_append(out, "\r\n", 2);
	mt_buf_append(out, ".\r\n", 3);
	mt_dot_encoder_init(enc);
}
