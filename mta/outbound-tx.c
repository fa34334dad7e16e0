/* outbound-tx.c — a job on an outbound connection: MAIL, RCPT for each
 * recipient and DATA — pipelined when the server offers PIPELINING (RFC
 * 2920) — the body dot-stuffed and streamed (paused while the socket buffer
 * is full), and the replies after the final dot: one per accepted
 * recipient for LMTP (RFC 2033 4.2), one for all for SMTP. Each reply
 * becomes its recipient's result; a transaction that fails before the body
 * is reset with RSET and the connection carries on.
 *
 * Trust boundary: replies are the server's (bounded by lib-mail/smtp-reply.c). The
 * body we send is encoded by lib/dotcodec (CRLF only, every leading dot
 * doubled), so no receiver can see an early end of data.
 * RFCs: 5321 3.3, 4.1.1.2-4, 4.5.2, 4.5.3.2.6 (10 minutes for the final
 * reply); 2033 4.2; 2920; 1870 (SIZE); 6152 (BODY=8BITMIME); 6531
 * (SMTPUTF8 only when the envelope or header section needs it, 5.6.7 when
 * it does and the next hop lacks it); 3461 (DSN parameters passed on,
 * ENVID and ORCPT as xtext re-encoded from the queue's copy). XQUEUEID=<queue id> on MAIL is mailtier-popstore's private
 * LMTP extension, sent only when its LHLO reply offers it. */
#include "outbound.h"
#include "address.h"
#include "alloc.h"
#include "mta.h"
#include "xtext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

/* The job */

static void start_transaction(struct conn *c);

/* Finish the job from the loop: never inside conn_run(). */
static void job_done_soon(struct conn *c)
{
	static const struct timeval zero = { 0, 0 };
	c->soon_job_done = true;
	evtimer_add(c->soon, &zero);
}

/* RFC 6531 3.4: SMTPUTF8 goes on MAIL only when this job's envelope or the
 * message's header section holds UTF-8; a message that asked for it but
 * needs none (plain ASCII sent with the parameter, a report about such a
 * message) goes as ordinary mail, also to a next hop without SMTPUTF8. */
static bool job_needs_smtputf8(const struct job *job, const struct queue_msg *msg)
{
	if ((msg->flags & QUEUE_MSG_SMTPUTF8) == 0)
		return false;
	if (mt_has_8bit(msg->sender, strlen(msg->sender)))
		return true;
	for (unsigned int i = 0; i < job->count; i++) {
		const struct queue_rcpt *r = &msg->rcpts[job->msg_index[i]];
		if (mt_has_8bit(job->rcpt_address[i], strlen(job->rcpt_address[i])) ||
		    (r->orcpt != NULL && mt_has_8bit(r->orcpt, strlen(r->orcpt))))
			return true;
	}
	const char *data = msg->body->data;
	const char *end = memmem(data, msg->body->size, "\r\n\r\n", 4);
	return mt_has_8bit(data, end != NULL ? (size_t)(end - data) : msg->body->size);
}

void conn_run(struct conn *c, struct job *job)
{
	struct queue_msg *msg = job_msg(job);
	c->job = job;
	job->site = c->site;
	conn_enter(c, CS_TRANSACTION);
	snprintf(c->log.queue_id, sizeof(c->log.queue_id), "%s", msg->id);
	evtimer_del(c->timer);
	if (c->transactions > 0)
		c->d->stats.reused++;
	if (c->caps.size > 0 && msg->size > c->caps.size) {
		char text[600];
		snprintf(text, sizeof(text), "552 5.3.4 message of %llu octets is "
			 "larger than %s accepts (%llu)", (unsigned long long)msg->size,
			 c->peer, (unsigned long long)c->caps.size);
		for (unsigned int i = 0; i < job->count; i++)
			job_set_result(job, i, 552, text);
		job_done_soon(c);
		return;
	}
	if (msg->body == NULL) {
		for (unsigned int i = 0; i < job->count; i++)
			job_set_result(job, i, 451, "451 4.3.0 message body not loaded");
		job_done_soon(c);
		return;
	}
	c->smtputf8 = job_needs_smtputf8(job, msg);
	if (c->smtputf8 && !c->caps.smtputf8) {
		for (unsigned int i = 0; i < job->count; i++)
			job_set_result(job, i, 550, "550 5.6.7 the next hop does not "
				       "support SMTPUTF8 (RFC 6531 3.4)");
		job_done_soon(c);
		return;
	}
	c->body = msg->body;
	queue_body_ref(c->body);
	start_transaction(c);
}

/* A queued DSN value (xtext as the client sent it) for the next hop:
 * decoded and encoded again (RFC 3461 4), so what goes out is valid
 * xtext with upper-case hex even from a record queued by a release that
 * took lower case. */
static void append_xtext(struct mt_buf *out, const char *queued)
{
	struct mt_buf decoded = MT_BUF_INIT;
	mt_xtext_decode(queued, &decoded);
	mt_xtext_encode(decoded.data, decoded.len, out);
	mt_buf_free(&decoded);
}

static void send_mail(struct conn *c)
{
	const struct queue_msg *msg = job_msg(c->job);
	struct mt_buf *out = &c->out;
	mt_buf_reset(out);
	mt_buf_appendf(out, "MAIL FROM:<%s>", msg->sender);
	if (c->caps.size > 0)
		mt_buf_appendf(out, " SIZE=%llu", (unsigned long long)msg->size);
	if ((msg->flags & QUEUE_MSG_8BIT) != 0 && c->caps.eightbit)
		mt_buf_append_str(out, " BODY=8BITMIME");
	if (c->smtputf8)
		mt_buf_append_str(out, " SMTPUTF8");
	if (c->caps.dsn && msg->ret != QUEUE_RET_DEFAULT)
		mt_buf_append_str(out, msg->ret == QUEUE_RET_FULL ? " RET=FULL" : " RET=HDRS");
	if (c->caps.dsn && msg->envid != NULL) {
		mt_buf_append_str(out, " ENVID=");
		append_xtext(out, msg->envid);
	}
	/* The store logs our queue id with its own lines: one grep follows
	 * the message across tiers. */
	if (c->caps.xqueueid && c->dest->proto == DEST_LMTP)
		mt_buf_appendf(out, " XQUEUEID=%s", msg->id);
	conn_send(c, "%s", mt_buf_cstr(out));
}

static void send_rcpt(struct conn *c, unsigned int i)
{
	const struct queue_msg *msg = job_msg(c->job);
	const struct queue_rcpt *r = &msg->rcpts[c->job->msg_index[i]];
	struct mt_buf *out = &c->out;
	mt_buf_reset(out);
	mt_buf_appendf(out, "RCPT TO:<%s>", c->job->rcpt_address[i]);
	if (c->caps.dsn && r->notify != 0) {
		if ((r->notify & QUEUE_NOTIFY_NEVER) != 0) {
			mt_buf_append_str(out, " NOTIFY=NEVER");
		} else {
			const char *sep = " NOTIFY=";
			if ((r->notify & QUEUE_NOTIFY_SUCCESS) != 0) {
				mt_buf_appendf(out, "%sSUCCESS", sep);
				sep = ",";
			}
			if ((r->notify & QUEUE_NOTIFY_FAILURE) != 0) {
				mt_buf_appendf(out, "%sFAILURE", sep);
				sep = ",";
			}
			if ((r->notify & QUEUE_NOTIFY_DELAY) != 0)
				mt_buf_appendf(out, "%sDELAY", sep);
		}
	}
	if (c->caps.dsn && r->orcpt != NULL) {
		/* "addr-type;xtext": the type is an atom, passed on as is. */
		const char *semi = strchr(r->orcpt, ';');
		size_t type_len = semi != NULL ? (size_t)(semi - r->orcpt) + 1 : 0;
		mt_buf_appendf(out, " ORCPT=%.*s", (int)type_len, r->orcpt);
		append_xtext(out, r->orcpt + type_len);
	}
	conn_send(c, "%s", mt_buf_cstr(out));
}

static void start_transaction(struct conn *c)
{
	struct job *job = c->job;
	conn_enter(c, CS_TRANSACTION);
	c->phase = 0;
	c->mail_failed = false;
	c->accepted = 0;
	c->discard_dot = false;
	free(c->rcpt_ok);
	c->rcpt_ok = mt_xcalloc(job->count, sizeof(bool));
	c->pipelined = c->caps.pipelining;
	send_mail(c);
	if (c->pipelined) {
		for (unsigned int i = 0; i < job->count; i++)
			send_rcpt(c, i);
		conn_send(c, "DATA");
	}
	conn_set_timer(c, c->d->mta->set->client_timeout);
}

/* Body */

static void piece_read(struct queue_body *piece, void *context)
{
	struct conn *c = context;
	c->piece_read = NULL;
	if (piece == NULL) {
		/* Without the rest, the data cannot end: the next hop drops
		 * it when the connection closes without the final dot. */
		conn_close(c, "the message could not be read from the queue");
		return;
	}
	queue_body_unref(&c->body);
	queue_body_ref(piece);
	c->body = piece;
	c->body_off = 0;
	conn_fill_body(c);
}

/* Queue body octets, dot-stuffed, until the output is full or the body is
 * all out; then the final dot. The body is read from the queue one piece
 * at a time as the output drains, so a delivery of any size holds about
 * one piece and the socket's output buffer. */
void conn_fill_body(struct conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct mt_buf chunk = MT_BUF_INIT;
	while (c->state == CS_BODY && c->piece_read == NULL &&
	       evbuffer_get_length(out) < OUTPUT_HIGH) {
		if (c->body_off == c->body->size && !c->body->complete) {
			c->piece_read = queue_read_next(c->d->mta->queue,
							job_msg(c->job), c->body,
							piece_read, c);
			break;
		}
		size_t left = c->body->size - c->body_off;
		size_t n = left < BODY_CHUNK ? left : BODY_CHUNK;
		mt_buf_reset(&chunk);
		mt_dot_encode(&c->enc, c->body->data + c->body_off, n, &chunk);
		c->body_off += n;
		if (c->body_off == c->body->size && c->body->complete) {
			mt_dot_encode_finish(&c->enc, &chunk);
			conn_enter(c, CS_DOT);
			c->dot_left = c->dest->proto == DEST_LMTP ? c->accepted : 1;
			c->dot_next = 0;
			/* RFC 5321 4.5.3.2.6: 10 minutes for the final reply. */
			conn_set_timer(c, 2 * c->d->mta->set->client_timeout);
		}
		if (evbuffer_add(out, chunk.data, chunk.len) < 0)
			mt_panic("evbuffer_add failed");
	}
	mt_buf_free(&chunk);
}

static void start_body(struct conn *c)
{
	conn_enter(c, CS_BODY);
	c->body_off = 0;
	mt_dot_encoder_init(&c->enc);
	bufferevent_setwatermark(c->bev, EV_WRITE, OUTPUT_LOW, 0);
	conn_set_timer(c, c->d->mta->set->client_timeout);
	conn_fill_body(c);
}

/* Replies */

const char *conn_reply_text(struct conn *c)
{
	return mt_smtp_reply_summary(&c->reply, &c->summary);
}

void conn_after_transaction(struct conn *c)
{
	c->transactions++;
	c->d->stats.transactions++;
	conn_job_finish(c);
	conn_ready(c);
}

/* The transaction failed before the body: reset, then carry on. */
static void send_rset(struct conn *c)
{
	conn_enter(c, CS_RSET);
	conn_send(c, "RSET");
	conn_set_timer(c, c->d->mta->set->client_timeout);
}

void conn_tx_reply(struct conn *c)
{
	struct job *job = c->job;
	int code = c->reply.code;
	unsigned int n = job->count;
	unsigned int phase = c->phase++;

	if (phase == 0) {
		if (code < 200 || code >= 300) {
			c->mail_failed = true;
			for (unsigned int i = 0; i < n; i++)
				job_set_result(job, i, code, conn_reply_text(c));
		}
		if (!c->pipelined) {
			if (c->mail_failed) {
				send_rset(c);
				return;
			}
			send_rcpt(c, 0);
		}
	} else if (phase <= n) {
		unsigned int i = phase - 1;
		if (code >= 200 && code < 300 && !c->mail_failed) {
			c->rcpt_ok[i] = true;
			c->accepted++;
		} else {
			job_set_result(job, i, code, conn_reply_text(c));
		}
		if (!c->pipelined) {
			if (i + 1 < n)
				send_rcpt(c, i + 1);
			else if (c->accepted > 0)
				conn_send(c, "DATA");
			else {
				send_rset(c);
				return;
			}
		}
	} else {
		/* DATA */
		if (code == 354) {
			if (c->mail_failed || c->accepted == 0) {
				/* A server that says 354 with nobody to deliver
				 * to: end the empty message, ignore its reply. */
				c->discard_dot = true;
				conn_enter(c, CS_DOT);
				c->dot_left = 1;
				conn_send(c, ".");
			} else {
				start_body(c);
			}
			return;
		}
		for (unsigned int i = 0; i < n; i++)
			if (c->rcpt_ok[i])
				job_set_result(job, i, code, conn_reply_text(c));
		send_rset(c);
		return;
	}
	conn_set_timer(c, c->d->mta->set->client_timeout);
}

/* After the final dot: one reply per accepted recipient (LMTP) or one. */
void conn_dot_reply(struct conn *c)
{
	struct job *job = c->job;
	if (c->discard_dot) {
		send_rset(c);
		return;
	}
	if (c->dest->proto == DEST_LMTP) {
		while (c->dot_next < job->count && !c->rcpt_ok[c->dot_next])
			c->dot_next++;
		if (c->dot_next < job->count)
			job_set_result(job, c->dot_next++, c->reply.code, conn_reply_text(c));
	} else {
		for (unsigned int i = 0; i < job->count; i++)
			if (c->rcpt_ok[i])
				job_set_result(job, i, c->reply.code, conn_reply_text(c));
	}
	if (--c->dot_left == 0) {
		bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
		conn_after_transaction(c);
	}
}

