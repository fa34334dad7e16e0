/* store-body.c — streamed bodies: the handle an LMTP session writes a
 * message into as it arrives (store.h, mt_store_body_*), its chunk writes,
 * the delivery or abort that ends it, and mt_store_deliver and
 * mt_store_deliver_wait, which are a body written in one go.
 *
 *   owner (port thread): append ─► full chunk ─► CHUNK request ─commit─►
 *     executor: chunk transaction, committed DB_TXN_NOSYNC, completed at
 *     once (no log flush) ─► the owner's callback: one write fewer in flight
 *   owner: deliver/abort ─► a DELIVER/ABORT request, parked on the body
 *     until every chunk write has run, then queued by the executor that ran
 *     the last one
 *
 * Why a chunk needs no flush of its own: the Berkeley DB log is one
 * sequential file, and a log_flush() writes and syncs it up to its end. The
 * delivery's transactions commit after every chunk transaction of its body
 * (it is parked until they have run), and the delivery completes only
 * after a group-commit flush that began after its commit (store-commit.c),
 * so that flush made every chunk durable too. If the process dies first,
 * recovery keeps whatever prefix of the log reached the disk: chunks
 * without their delivery are then a half-written body, whose partial.db
 * record (written with each chunk) the next open's sweep finds
 * (store-chunks.c). An abort queues the written chunks for the purger.
 *
 * Memory: the chunk being filled, plus one per write in flight; the LMTP
 * session stops reading while two are in flight.
 *
 * Trust boundary: the bytes are the LMTP client's, stored as given;
 * recipients are checked as for every delivery (store-async.c). */
#include "store-req.h"
#include "alloc.h"
#include "buf.h"
#include "imap-bodystructure.h"
#include "log.h"
#include "mime-scan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct mt_store_body *body_new(struct mt_store *store,
				      struct mt_store_port *port,
				      mt_store_body_cb_t *cb, void *context)
{
	struct mt_store_body *body = mt_xcalloc(1, sizeof(*body));
	body->store = store;
	body->port = port;
	body->id = atomic_fetch_add(&store->next_body_id, 1);
	atomic_init(&body->refs, 1);
	body->cb = cb;
	body->context = context;
	pthread_mutex_init(&body->lock, NULL);
	body->mime = mt_mime_scan_new();
	if (store->set.mode != MT_STORE_MODE_SERVE) {
		body->status = MT_STORE_INVALID;
		snprintf(body->error, sizeof(body->error),
			 "store opened for administration only");
	}
	return body;
}

static struct mt_store_body *body_ref(struct mt_store_body *body)
{
	atomic_fetch_add(&body->refs, 1);
	return body;
}

void store_body_unref(struct mt_store_body *body)
{
	if (atomic_fetch_sub(&body->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&body->lock);
	free(body->buf);
	mt_mime_scan_free(&body->mime);
	mt_buf_free(&body->structure);
	free(body);
}

struct mt_store_body *mt_store_body_begin(struct mt_store_port *port,
					  mt_store_body_cb_t *cb, void *context)
{
	return body_new(port->store, port, cb, context);
}

/* A chunk write finished (port thread): one fewer in flight. */
static void chunk_written(struct mt_store_req *req, void *context)
{
	struct mt_store_body *body = context;
	body->writes--;
	if (!body->finished && body->cb != NULL)
		body->cb(body, body->context);
}

/* The failure of a chunk write is the body's (under lock). */
static bool body_failed(struct mt_store_body *body)
{
	pthread_mutex_lock(&body->lock);
	bool failed = body->status != MT_STORE_OK;
	pthread_mutex_unlock(&body->lock);
	return failed;
}

/* On an executor: one full chunk of the body, in its own NOSYNC
 * transaction; the last write of a body still executing submits the
 * delivery or abort parked for it. */
static void chunk_run(struct mt_store *store, struct mt_store_req *req)
{
	struct store_body_req *c = (struct store_body_req *)req;
	struct mt_store_body *body = c->sbody;
	int ret;
	if (atomic_load(&store->failed))
		ret = DB_RUNRECOVERY;
	else if (body_failed(body))
		ret = 0;	/* doomed by an earlier chunk: not written */
	else if (!store_space_writable(store))
		ret = ENOSPC;
	else {
		pthread_rwlock_rdlock(&store->io_lock);
		(void)store_space_ensure(store, c->body_size);
		ret = store_space_full(store) ? ENOSPC :
			store_chunks_write(store, body->id, c->chunk, c->body,
					   c->body_size);
		pthread_rwlock_unlock(&store->io_lock);
		(void)store_space_failed(store, ret, "chunk write");
		store_counter_add(&store->n_chunk_writes, ret == 0);
	}
	MT_FREE(&c->body_owned);
	pthread_mutex_lock(&body->lock);
	if (ret != 0 && body->status == MT_STORE_OK) {
		body->status = store_status_from_db(store, ret);
		if (body->status == MT_STORE_TEMPFAIL && store_space_full(store))
			body->status = MT_STORE_NO_SPACE;
		snprintf(body->error, sizeof(body->error), "writing a chunk of the "
			 "message failed: %s", store_strerror(ret));
	}
	struct mt_store_req *parked = NULL;
	if (--body->executing == 0) {
		parked = body->parked;
		body->parked = NULL;
	}
	pthread_mutex_unlock(&body->lock);
	if (parked != NULL)
		store_commit_submit(store, parked);
}

/* On an executor: no message will hold the body. */
static void abort_run(struct mt_store *store, struct mt_store_req *req)
{
	store_body_drop(store, ((struct store_body_req *)req)->sbody);
}

/* A chunk write's or an abort's: its chunk (if not written yet) and its
 * reference to the body. */
static void body_req_free(struct mt_store_req *req)
{
	struct store_body_req *b = (struct store_body_req *)req;
	free(b->body_owned);
	store_body_unref(b->sbody);
}

/* Neither is flushed: see the header. */
static const struct store_req_ops chunk_ops = {
	.name = "chunk", .size = sizeof(struct store_body_req),
	.path = STORE_PATH_COMMIT, .unflushed = true,
	.run = chunk_run, .free = body_req_free,
};

static const struct store_req_ops abort_ops = {
	.name = "abort", .size = sizeof(struct store_body_req),
	.path = STORE_PATH_COMMIT, .unflushed = true,
	.run = abort_run, .free = body_req_free,
};

/* Hand the full chunk buffer to the store as its own write. */
static void chunk_submit(struct mt_store_body *body)
{
	struct mt_store *store = body->store;
	struct store_body_req *c = (struct store_body_req *)
		store_req_new(store, &chunk_ops, body->port, chunk_written, body);
	struct mt_store_req *req = &c->req;
	c->sbody = body_ref(body);
	c->chunk = body->chunks++;
	c->body_owned = body->buf;
	c->body = body->buf;
	c->body_size = body->len;
	body->buf = NULL;
	body->len = 0;
	pthread_mutex_lock(&body->lock);
	body->executing++;
	pthread_mutex_unlock(&body->lock);
	if (body->port == NULL) {
		store_req_wait(req);
		store_req_free(req);
		return;
	}
	body->writes++;
	store_commit_submit(store, req);
}

void mt_store_body_append(struct mt_store_body *body, const void *data,
			  size_t size)
{
	const size_t chunk = body->store->chunk_size;
	const char *p = data;
	body->size += size;
	if (body->mime != NULL)
		mt_mime_scan_feed(body->mime, data, size);
	if (body->stopped || body_failed(body)) {
		/* Nothing more is written; deliver reports the failure. */
		body->stopped = true;
		return;
	}
	while (size > 0) {
		if (body->buf == NULL)
			body->buf = mt_xmalloc(chunk);
		size_t n = chunk - body->len < size ? chunk - body->len : size;
		memcpy(body->buf + body->len, p, n);
		body->len += n;
		p += n;
		size -= n;
		if (body->len == chunk)
			chunk_submit(body);
	}
}

unsigned int mt_store_body_writes(const struct mt_store_body *body)
{
	return body->writes;
}

uint64_t mt_store_body_size(const struct mt_store_body *body)
{
	return body->size;
}

/* Queue req (the body's DELIVER or ABORT) now, or park it until the body's
 * chunk writes have run (then the executor of the last one queues it). */
static void final_submit(struct mt_store_body *body, struct mt_store_req *req)
{
	pthread_mutex_lock(&body->lock);
	bool park = body->executing > 0;
	if (park)
		body->parked = req;
	pthread_mutex_unlock(&body->lock);
	if (!park)
		store_req_submit(req);
}

/* Nothing more will be written into body: the appends' buffer is freed. */
static void body_finish(struct mt_store_body *body)
{
	body->finished = true;
	MT_FREE(&body->buf);
	body->len = 0;
	mt_mime_scan_free(&body->mime);
}

/* The body is complete: its MIME structure becomes the record its first
 * delivery transaction writes (IMAP's ENVELOPE, BODYSTRUCTURE and part
 * sections are answered from it, the body never parsed again). */
static void body_structure(struct mt_store_body *body)
{
	if (body->mime == NULL)
		return;
	mt_mime_scan_finish(body->mime);
	unsigned int count;
	const struct mt_mime_entity *entities = mt_mime_scan_entities(body->mime, &count);
	mt_mime_record_write(&body->structure, entities, count);
	mt_mime_scan_free(&body->mime);
}

void mt_store_body_abort(struct mt_store_body **body_p)
{
	struct mt_store_body *body = *body_p;
	if (body == NULL)
		return;
	*body_p = NULL;
	body_finish(body);
	if (body->chunks == 0) {
		store_body_unref(body);	/* nothing was written */
		return;
	}
	struct store_body_req *a = (struct store_body_req *)
		store_req_new(body->store, &abort_ops, NULL, NULL, NULL);
	a->sbody = body;	/* the owner's reference */
	final_submit(body, &a->req);
}

/* The delivery of body: its last partial chunk moves into the request. A
 * request refused at once (no valid recipient) aborts the body. */
static struct store_body_req *deliver_new(struct mt_store_body *body,
					const struct mt_store_rcpt *rcpts,
					unsigned int count, mt_store_cb_t *cb,
					void *context)
{
	body_structure(body);
	struct store_body_req *d = store_deliver_new(body->store, body->port,
						     rcpts, count, cb, context);
	d->body_size = body->len;
	d->body_owned = body->buf;
	d->body = body->buf != NULL ? body->buf : "";
	body->buf = NULL;
	body->len = 0;
	if (d->req.refused)
		mt_store_body_abort(&body);
	else {
		body_finish(body);
		d->sbody = body;	/* the owner's reference */
	}
	return d;
}

struct mt_store_req *mt_store_body_deliver(struct mt_store_body **body_p,
					   const struct mt_store_rcpt *rcpts,
					   unsigned int count, mt_store_cb_t *cb,
					   void *context)
{
	struct mt_store_body *body = *body_p;
	*body_p = NULL;
	struct store_body_req *d = deliver_new(body, rcpts, count, cb, context);
	if (d->sbody != NULL)
		final_submit(body, &d->req);
	else
		store_req_submit(&d->req);	/* refused */
	return &d->req;
}

void store_body_drop(struct mt_store *store, struct mt_store_body *body)
{
	if (body->chunks == 0 || atomic_load(&store->failed))
		return;	/* failed: the next open's sweep queues it */
	if (store_space_full(store)) {
		/* No write may take the space reserve (store-space.c); nor
		 * does a drop probe for space (that is the writes' to do). */
		store_purge_drop_retry(store, body->id, body->chunks);
		return;
	}
	pthread_rwlock_rdlock(&store->io_lock);
	int ret = store_chunks_abort(store, body->id, body->chunks);
	pthread_rwlock_unlock(&store->io_lock);
	(void)store_space_failed(store, ret, "abort");
	if (ret == 0) {
		store_counter_add(&store->n_aborted, 1);
		store_purge_kick(store);
	} else
		store_purge_drop_retry(store, body->id, body->chunks);
}

struct mt_store_req *mt_store_deliver(struct mt_store_port *port,
				      const struct mt_store_rcpt *rcpts,
				      unsigned int count, struct mt_buf *body,
				      mt_store_cb_t *cb, void *context)
{
	struct mt_store_body *sbody = mt_store_body_begin(port, NULL, NULL);
	mt_store_body_append(sbody, body->data, body->len);
	mt_buf_free(body);
	return mt_store_body_deliver(&sbody, rcpts, count, cb, context);
}

enum mt_store_status mt_store_deliver_wait(struct mt_store *store,
					   struct mt_store_rcpt *rcpts,
					   unsigned int count, const void *data,
					   size_t size, const char **error_r)
{
	/* Without a port, each chunk write is waited for as it is appended,
	 * so the delivery never needs parking. */
	struct mt_store_body *body = body_new(store, NULL, NULL, NULL);
	mt_store_body_append(body, data, size);
	struct store_body_req *d = deliver_new(body, rcpts, count, NULL, NULL);
	store_req_wait(&d->req);
	for (unsigned int i = 0; i < count; i++) {
		rcpts[i].status = d->rcpts[i].status;
		rcpts[i].uid = d->rcpts[i].uid;
		rcpts[i].uidvalidity = d->rcpts[i].uidvalidity;
		rcpts[i].duplicate = d->rcpts[i].duplicate;
	}
	enum mt_store_status status = d->req.status;
	*error_r = store_error("%s", d->req.error);
	store_req_free(&d->req);
	return status;
}
