/* pop3-fetch.c — POP3 multi-line replies streamed with output flow
 * control: LIST and UIDL of a whole mailbox, RETR and TOP of a message.
 *
 * A message is read from the store in POP3_READ_CHUNK pieces, one read in
 * flight at a time, and the next read is asked for only when the socket's
 * output has drained below POP3_OUTPUT_LOW (the bufferevent's write low
 * watermark calls pop3_fetch_continue()). So a 2.6 MB RETR holds at most
 * about one chunk plus POPSTORE_OUTPUT_HIGH per session, never the
 * message (as Dovecot's pop3 RETR does). Clients RETR
 * 1..n in order, so after login and after each RETR the next message, if
 * it fits in one chunk, is read ahead (struct pop3_prefetch) and the next
 * RETR needs no round trip to the store's readers.
 *
 * Trust boundary: the message bytes were delivered by an LMTP client and
 * are sent as stored; lib/dotcodec's encoder stuffs leading dots and turns
 * any bare CR/LF into CRLF, so the client cannot see the reply end early.
 * RFC 1939 3 (multi-line responses, byte-stuffing), 5 (LIST, RETR),
 * 7 (TOP, UIDL). */
#include "pop3-session.h"
#include "pop3-top.h"
#include "alloc.h"
#include "dotcodec.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

struct pop3_fetch {
	bool body;		/* RETR/TOP; else LIST/UIDL */
	bool uidl;
	unsigned int next;	/* LIST/UIDL: next message index */
	unsigned int index;	/* RETR/TOP */
	uint64_t offset, size;
	bool top;
	struct pop3_top_limit limit;
	struct mt_dot_encoder enc;
	struct mt_store_req *req;	/* the read in flight */
	bool on_prefetch;		/* waiting for the prefetch of index */
};

/* The first (and only) chunk of the message a client is expected to RETR
 * next, read ahead while the previous reply drains (clients RETR 1..n in
 * order, with or without a DELE between); only for messages of at most one
 * chunk, so a session holds at most one chunk more. Dropped when another
 * message is retrieved, the message is deleted, or the session ends. Saves
 * a round trip to the store's readers per message. */
struct pop3_prefetch {
	unsigned int index;
	struct mt_store_req *req;	/* in flight, or NULL once done */
	enum mt_store_status status;
	char *error;
	void *data;
	size_t size;
};

static void chunk_free(const void *data, size_t len, void *extra)
{
	free((void *)data);
}

/* Hand buf's bytes to the output without copying them again. */
static void output_buf(struct pop3_session *s, struct mt_buf *buf)
{
	if (buf->len == 0) {
		mt_buf_free(buf);
		return;
	}
	size_t len = buf->len;
	char *data = mt_buf_steal(buf);
	if (evbuffer_add_reference(pop3_output(s), data, len, chunk_free, NULL) < 0)
		mt_panic("evbuffer_add_reference failed");
}

/* The reply is complete: back to reading commands. resume: we are not
 * inside the command that started it, so the input must be looked at. */
static void fetch_finish(struct pop3_session *s, bool resume)
{
	MT_FREE(&s->fetch);
	if (resume)
		pop3_resume(s);
}

static void fetch_step(struct pop3_session *s, bool resume);

static void prefetch_next(struct pop3_session *s, unsigned int after);

/* A chunk of the message (or the store's failure) for the reply in
 * progress. resume: see fetch_finish(). */
static void fetch_data(struct pop3_session *s, enum mt_store_status status,
		       const char *error, const void *data, size_t size, bool resume)
{
	struct pop3_fetch *f = s->fetch;
	if (status != MT_STORE_OK) {
		/* The +OK is out: all we can do is end the session, and the
		 * client sees a reply without its final ".". */
		mt_slog(MT_LOG_ERROR, &s->log, "pop3 read of message %u failed: %s: %s",
			f->index + 1, mt_store_status_name(status), error);
		pop3_close_after(s, MT_OUTCOME_ERROR, "store-error");
		if (status == MT_STORE_FATAL)
			popstore_store_fatal(s->ps, error);
		return;
	}
	size_t n = f->top ? pop3_top_scan(&f->limit, data, size) : size;
	struct mt_buf buf = MT_BUF_INIT;
	mt_dot_encode(&f->enc, data, n, &buf);
	f->offset += size;
	bool end = size == 0 || f->offset >= f->size || (f->top && f->limit.done);
	if (end)
		mt_dot_encode_finish(&f->enc, &buf);
	output_buf(s, &buf);
	if (!end) {
		fetch_step(s, resume);
		return;
	}
	unsigned int index = f->index;
	bool retr = !f->top;
	fetch_finish(s, false);
	if (retr)
		prefetch_next(s, index + 1);
	if (resume)
		pop3_resume(s);
}

static void read_done(struct mt_store_req *req, void *context)
{
	struct pop3_session *s = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);

	if (s->fetch == NULL || s->fetch->req != req)
		mt_panic("pop3: a store read completed for no reply in progress");
	s->fetch->req = NULL;
	if (s->state == POP3_STATE_CLOSING) {
		pop3_fetch_free(s);
		return;
	}
	size_t size;
	const void *data = mt_store_req_data(req, &size);
	fetch_data(s, status, error, data, size, true);
}

/* Prefetch */

static void prefetch_free(struct pop3_session *s)
{
	struct pop3_prefetch *p = s->prefetch;
	if (p == NULL)
		return;
	if (p->req != NULL)
		mt_store_req_cancel(p->req);
	free(p->data);
	free(p->error);
	MT_FREE(&s->prefetch);
}

/* Hand the prefetched chunk to the RETR that waits for it. */
static void prefetch_use(struct pop3_session *s, bool resume)
{
	struct pop3_prefetch *p = s->prefetch;
	s->prefetch = NULL;
	s->fetch->on_prefetch = false;
	fetch_data(s, p->status, p->error != NULL ? p->error : "", p->data, p->size,
		   resume);
	free(p->data);
	free(p->error);
	free(p);
}

static void prefetch_done(struct mt_store_req *req, void *context)
{
	struct pop3_session *s = context;
	struct pop3_prefetch *p = s->prefetch;
	const char *error;
	size_t size;

	p->req = NULL;
	p->status = mt_store_req_status(req, &error);
	if (p->status != MT_STORE_OK)
		p->error = mt_xstrdup(error);
	else {
		const void *data = mt_store_req_data(req, &size);
		p->data = mt_xmalloc(size == 0 ? 1 : size);
		memcpy(p->data, data, size);
		p->size = size;
	}
	if (s->fetch != NULL && s->fetch->on_prefetch && s->state != POP3_STATE_CLOSING)
		prefetch_use(s, true);
}

/* Read ahead the first message from index on that is not deleted, if it
 * fits in one chunk. */
static void prefetch_next(struct pop3_session *s, unsigned int index)
{
	const struct pop3_maildrop *d = &s->drop;
	prefetch_free(s);
	while (index < d->count && d->deleted[index])
		index++;
	if (index >= d->count || s->state != POP3_STATE_TRANSACTION)
		return;
	uint64_t size = mt_store_mailbox_msg(d->mbox, index)->size;
	if (size == 0 || size > POP3_READ_CHUNK)
		return;
	struct pop3_prefetch *p = mt_xcalloc(1, sizeof(*p));
	p->index = index;
	s->prefetch = p;
	p->req = mt_store_read(s->ps->port, d->mbox, index, 0, (size_t)size,
			       prefetch_done, s);
}

void pop3_prefetch_start(struct pop3_session *s)
{
	prefetch_next(s, 0);
}

void pop3_prefetch_forget(struct pop3_session *s, unsigned int index)
{
	if (s->prefetch != NULL && s->prefetch->index == index)
		prefetch_free(s);
}

static void fetch_step(struct pop3_session *s, bool resume)
{
	struct pop3_fetch *f = s->fetch;
	struct evbuffer *out = pop3_output(s);

	if (!f->body) {
		const struct pop3_maildrop *d = &s->drop;
		while (f->next < d->count && evbuffer_get_length(out) < POPSTORE_OUTPUT_HIGH) {
			unsigned int i = f->next++;
			if (d->deleted[i])
				continue;
			const struct mt_store_msg *m = mt_store_mailbox_msg(d->mbox, i);
			if (f->uidl)
				evbuffer_add_printf(out, "%u %s\r\n", i + 1, m->uidl);
			else
				evbuffer_add_printf(out, "%u %" PRIu64 "\r\n", i + 1, m->size);
		}
		if (f->next == d->count) {
			mt_line_write(out, ".");
			fetch_finish(s, resume);
		}
		return;
	}
	if (f->req != NULL || f->on_prefetch)
		return;		/* its completion goes on */
	if (evbuffer_get_length(out) > POP3_OUTPUT_LOW)
		return;		/* the write callback calls again */
	uint64_t left = f->size - f->offset;
	size_t want = left < POP3_READ_CHUNK ? (size_t)left : POP3_READ_CHUNK;
	f->req = mt_store_read(s->ps->port, s->drop.mbox, f->index, f->offset,
			       want == 0 ? 1 : want, read_done, s);
}

bool pop3_fetch_busy(const struct pop3_session *s)
{
	return s->fetch != NULL && (s->fetch->req != NULL || s->fetch->on_prefetch);
}

void pop3_fetch_continue(struct pop3_session *s)
{
	if (s->fetch != NULL && s->state != POP3_STATE_CLOSING)
		fetch_step(s, true);
}

void pop3_fetch_list(struct pop3_session *s, bool uidl)
{
	struct pop3_fetch *f = mt_xcalloc(1, sizeof(*f));
	f->uidl = uidl;
	s->fetch = f;
	fetch_step(s, false);
}

void pop3_fetch_message(struct pop3_session *s, unsigned int index, bool top,
			uint64_t lines)
{
	struct pop3_fetch *f = mt_xcalloc(1, sizeof(*f));
	f->body = true;
	f->index = index;
	f->size = mt_store_mailbox_msg(s->drop.mbox, index)->size;
	f->top = top;
	pop3_top_init(&f->limit, lines);
	mt_dot_encoder_init(&f->enc);
	s->fetch = f;
	struct pop3_prefetch *p = s->prefetch;
	if (p != NULL && p->index == index && !top) {
		if (p->req == NULL)
			prefetch_use(s, false);		/* read already */
		else
			f->on_prefetch = true;		/* prefetch_done goes on */
		return;
	}
	prefetch_free(s);
	fetch_step(s, false);
}

void pop3_fetch_free(struct pop3_session *s)
{
	prefetch_free(s);
	if (s->fetch == NULL)
		return;
	if (s->fetch->req != NULL)
		mt_store_req_cancel(s->fetch->req);
	MT_FREE(&s->fetch);
}
