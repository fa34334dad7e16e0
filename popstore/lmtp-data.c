/* lmtp-data.c — the DATA phase of an LMTP session of mailtier-popstore:
 * the engine (lib-mail/smtpd) dot-decodes the message as it arrives into a
 * small buffer that goes to the store whenever it fills (a streamed body,
 * store.h mt_store_body_*),
 * so a session holds a bounded amount of the message whatever its size:
 * the socket's input (up to POPSTORE_INPUT_HIGH), the decode buffer (about
 * LMTP_DATA_BUFFER) and the store's chunk buffer with at most
 * LMTP_DATA_WRITES chunk writes in flight; with that many in flight the
 * session stops reading the socket until one is done (back-pressure on the
 * client through TCP). The final CRLF.CRLF delivers what was written
 * (lmtp-commands.c); a refused message aborts it.
 *
 * Trust boundary: every byte is the LMTP client's. The decoder
 * (lib/dotcodec) alone decides where the data ends (CRLF "." CRLF, RFC 5321
 * 4.1.1.4, RFC 2033 4.2); content it flags — more than max_message_size
 * (RFC 1870), a bare CR or LF under bare_newline_policy=reject (RFC 5321
 * 2.3.8), a NUL octet (RFC 5322 3.5) — is not written on from the moment it
 * is flagged, and the whole message is refused after its end, with the
 * replies of lmtp-commands.c. Nothing here reads the header section: the
 * per-recipient trace lines (lmtp-headers.c) are made from the envelope. */
#include "lmtp-session.h"
#include "store/store.h"

/* Chunk writes in flight at which the session stops reading. */
#define LMTP_DATA_WRITES 2u

static void data_written(struct mt_store_body *body, void *context);

void lmtp_data_begin(struct lmtp_session *s)
{
	struct lmtp_tx *tx = &s->tx;
	mt_store_body_abort(&tx->store_body);
	tx->store_body = mt_store_body_begin(s->ps->port, data_written, s);
	mt_smtpd_data_begin(&s->smtpd, s->ps->set->max_message_size, 0);
}

/* Decoded octets to the store (the engine hands over acceptable content
 * only: once the decoder flagged it, nothing more of it is written). */
static void data_flush(struct lmtp_session *s)
{
	struct mt_buf *body = &s->smtpd.content.body;
	if (body->len > 0 && s->tx.store_body != NULL)
		mt_store_body_append(s->tx.store_body, body->data, body->len);
	mt_buf_reset(body);
}

bool lmtp_data_piece(struct mt_smtpd *d)
{
	struct lmtp_session *s = LMTP_SESSION(d);
	/* Back-pressure: data_written() reads on. */
	if (mt_store_body_writes(s->tx.store_body) >= LMTP_DATA_WRITES)
		return false;
	data_flush(s);
	return true;
}

void lmtp_data_done(struct mt_smtpd *d, enum mt_dot_result verdict, const char *error)
{
	struct lmtp_session *s = LMTP_SESSION(d);
	if (verdict == MT_DOT_RESULT_OK)
		data_flush(s);
	lmtp_data_end(s, verdict, error);
}

/* A chunk write is done: read on if the session waited for it. */
static void data_written(struct mt_store_body *body, void *context)
{
	struct lmtp_session *s = context;
	if (!s->smtpd.content.paused || s->smtpd.state != MT_SMTPD_DATA ||
	    mt_store_body_writes(body) >= LMTP_DATA_WRITES)
		return;
	mt_smtpd_resume(&s->smtpd);
}
