/* lmtp-data.c — the DATA phase of an LMTP session of mailtier-popstore:
 * the message is dot-decoded as it arrives into a small buffer that goes to
 * the store whenever it fills (a streamed body, store.h mt_store_body_*),
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

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

/* Hand the decoded octets to the store once this many are buffered (a
 * store chunk is ~64 KiB); the decoder stops there (lib/dotcodec). */
#define LMTP_DATA_BUFFER (64u * 1024)
/* Chunk writes in flight at which the session stops reading. */
#define LMTP_DATA_WRITES 2u

static void data_written(struct mt_store_body *body, void *context);

void lmtp_data_begin(struct lmtp_session *s)
{
	const struct mt_popstore_settings *set = s->ps->set;
	struct lmtp_tx *tx = &s->tx;
	mt_dot_decoder_init(&tx->dec,
			    set->bare_newline_policy == MT_POPSTORE_BARE_NORMALIZE ?
			    MT_DOT_BARE_NORMALIZE : MT_DOT_BARE_REJECT,
			    set->max_message_size, 0);
	mt_buf_reset(&tx->body);
	mt_store_body_abort(&tx->store_body);
	tx->store_body = mt_store_body_begin(s->ps->port, data_written, s);
	tx->paused = false;
	mt_line_reader_reset(&s->reader);
	lmtp_enter_state(s, LMTP_STATE_DATA);
}

/* The decoded octets go to the store, unless the message is refused
 * already (then nothing more of it is written). */
static void data_flush(struct lmtp_tx *tx)
{
	const char *error;
	if (tx->body.len > 0 && tx->store_body != NULL &&
	    mt_dot_decoder_result(&tx->dec, &error) == MT_DOT_RESULT_OK)
		mt_store_body_append(tx->store_body, tx->body.data, tx->body.len);
	mt_buf_reset(&tx->body);
}

bool lmtp_data_read(struct lmtp_session *s)
{
	struct lmtp_tx *tx = &s->tx;
	struct evbuffer *in = mt_conn_input(&s->conn);
	while (!tx->dec.end) {
		if (mt_store_body_writes(tx->store_body) >= LMTP_DATA_WRITES) {
			/* Back-pressure: data_written() reads on. */
			tx->paused = true;
			bufferevent_disable(s->conn.bev, EV_READ);
			return false;
		}
		if (evbuffer_get_length(in) == 0)
			return false;
		(void)mt_dot_decode_evbuffer_max(&tx->dec, in, &tx->body,
						 LMTP_DATA_BUFFER);
		if (tx->body.len >= LMTP_DATA_BUFFER || tx->dec.end)
			data_flush(tx);
	}
	return true;
}

/* A chunk write is done: read on if the session waited for it. */
static void data_written(struct mt_store_body *body, void *context)
{
	struct lmtp_session *s = context;
	if (!s->tx.paused || s->state != LMTP_STATE_DATA ||
	    mt_store_body_writes(body) >= LMTP_DATA_WRITES)
		return;
	s->tx.paused = false;
	bufferevent_enable(s->conn.bev, EV_READ);
	lmtp_resume(s);
}
