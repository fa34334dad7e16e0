/* smtpd-content.c — message content in the SMTP/LMTP server engine
 * (smtpd.h): DATA decoded by lib/dotcodec up to CRLF.CRLF, BDAT chunks of
 * counted octets through the chunk decoder (lib-mail/smtp-content), both
 * handed to the tier in pieces (settings.piece_size) as they arrive.
 *
 * Trust boundary: content is the client's, any octets at all. DATA ends at
 * CRLF.CRLF and nowhere else (SMTP smuggling: LF.LF, CR.CR, LF.CRLF ...
 * are content); BDAT has no end marker to smuggle. Content the decoder
 * has flagged (too big, a bare CR/LF under reject, a NUL) is read to its
 * end but no longer handed over: the tier refuses it at the end.
 * Memory: while the tier has not taken a piece, nothing more is decoded
 * (the socket's input stops at its watermark), so a session holds about
 * one piece plus its input watermark, whatever the message's size.
 * RFCs: 5321 4.1.1.4 (DATA), 4.5.2 (transparency), 2.3.8 (bare CR/LF);
 * 3030 (BDAT); 5322 3.5 (NUL). */
#include "smtpd.h"

#include <string.h>

#include <event2/buffer.h>

void mt_smtpd_content_reset(struct mt_smtpd *d)
{
	mt_buf_free(&d->content.body);
	memset(&d->content, 0, sizeof(d->content));
}

uint64_t mt_smtpd_content_size(const struct mt_smtpd *d)
{
	return d->content.bdat_used ? d->content.chunk.size : d->content.dec.size;
}

/* Has the decoder flagged the content (it is refused at its end)? */
static bool content_refused(const struct mt_smtpd *d)
{
	const struct mt_smtpd_content *c = &d->content;
	const char *error;
	if (c->bdat_used)	/* (line lengths are judged at the end only) */
		return mt_smtp_chunk_result(&c->chunk, 0) != MT_DOT_RESULT_OK;
	return mt_dot_decoder_result(&c->dec, &error) != MT_DOT_RESULT_OK;
}

/* Hand a full piece to the tier. False when it cannot take it yet: read
 * nothing more until mt_smtpd_resume(). */
static bool hand_over(struct mt_smtpd *d)
{
	struct mt_smtpd_content *c = &d->content;
	if (c->body.len < d->set->piece_size)
		return true;
	if (content_refused(d)) {
		mt_buf_reset(&c->body);
		return true;
	}
	if (!d->def->hooks->content(d)) {
		c->paused = true;
		return false;
	}
	return true;
}

/* DATA */

void mt_smtpd_data_begin(struct mt_smtpd *d, uint64_t max_size, size_t max_line)
{
	mt_buf_reset(&d->content.body);
	mt_dot_decoder_init(&d->content.dec, d->set->bare_newlines, max_size, max_line);
	mt_smtpd_enter_state(d, MT_SMTPD_DATA);
}

bool mt_smtpd_data_input(struct mt_smtpd *d)
{
	struct mt_smtpd_content *c = &d->content;
	struct evbuffer *in = mt_conn_input(&d->conn);
	const char *error;
	for (;;) {
		if (c->paused || !hand_over(d))
			return false;
		if (mt_dot_decode_evbuffer_max(&c->dec, in, &c->body, d->set->piece_size))
			break;
		if (c->body.len < d->set->piece_size)
			return false;	/* wants more input */
	}
	enum mt_dot_result verdict = mt_dot_decoder_result(&c->dec, &error);
	if (verdict != MT_DOT_RESULT_OK)
		mt_buf_reset(&c->body);
	mt_smtpd_enter_state(d, MT_SMTPD_COMMAND);
	d->def->hooks->data_end(d, verdict, error);
	return true;
}

/* BDAT (RFC 3030) */

#define BDAT_SLICE (64u * 1024u)

void mt_smtpd_bdat_chunk(struct mt_smtpd *d, uint64_t size, bool last,
			 bool discard, uint64_t max_size)
{
	struct mt_smtpd_content *c = &d->content;
	if (!discard && !c->bdat_used) {
		c->bdat_used = true;
		mt_buf_reset(&c->body);
		mt_smtp_chunk_init(&c->chunk, d->set->bare_newlines == MT_DOT_BARE_NORMALIZE,
				   max_size);
	}
	c->bdat_last = last;
	c->bdat_size = size;
	c->bdat_left = size;
	c->bdat_discard = discard;
	if (size == 0) {
		mt_smtpd_enter_state(d, MT_SMTPD_COMMAND);
		if (d->def->hooks->bdat_end != NULL)
			d->def->hooks->bdat_end(d);
		return;
	}
	mt_smtpd_enter_state(d, MT_SMTPD_BDAT);
}

enum mt_dot_result mt_smtpd_bdat_finish(struct mt_smtpd *d, size_t max_line)
{
	struct mt_smtpd_content *c = &d->content;
	mt_smtp_chunk_finish(&c->chunk, &c->body);
	enum mt_dot_result verdict = mt_smtp_chunk_result(&c->chunk, max_line);
	if (verdict != MT_DOT_RESULT_OK)
		mt_buf_reset(&c->body);
	return verdict;
}

/* Decode up to n octets of in (all there, n > 0) into the content. */
static void bdat_decode(struct mt_smtpd *d, struct evbuffer *in, size_t n)
{
	struct mt_smtpd_content *c = &d->content;
	struct evbuffer_iovec vec[16];
	size_t done = 0;
	while (done < n) {
		int k = evbuffer_peek(in, (ev_ssize_t)(n - done), NULL, vec, 16);
		size_t taken = 0;
		for (int i = 0; i < k && i < 16 && done + taken < n; i++) {
			size_t len = vec[i].iov_len;
			if (len > n - done - taken)
				len = n - done - taken;
			mt_smtp_chunk_decode(&c->chunk, vec[i].iov_base, len, &c->body);
			taken += len;
		}
		evbuffer_drain(in, taken);
		done += taken;
	}
}

bool mt_smtpd_bdat_input(struct mt_smtpd *d)
{
	struct mt_smtpd_content *c = &d->content;
	struct evbuffer *in = mt_conn_input(&d->conn);
	/* Read in slices, so the content held stays near one piece
	 * whatever the chunk size. */
	size_t slice = d->set->piece_size < BDAT_SLICE ? d->set->piece_size : BDAT_SLICE;
	while (c->bdat_left > 0) {
		if (!c->bdat_discard && (c->paused || !hand_over(d)))
			return false;
		size_t avail = evbuffer_get_length(in);
		if (avail == 0)
			return false;
		size_t n = avail < c->bdat_left ? avail : (size_t)c->bdat_left;
		if (n > slice)
			n = slice;
		if (!c->bdat_discard)
			bdat_decode(d, in, n);
		else
			evbuffer_drain(in, n);
		c->bdat_left -= n;
	}
	mt_smtpd_enter_state(d, MT_SMTPD_COMMAND);
	if (d->def->hooks->bdat_end != NULL)
		d->def->hooks->bdat_end(d);
	return true;
}
