/* queue.c — the MTA queue's in-memory side (see queue.h): messages and
 * bodies (read in pieces: the head, then piece by piece), queue ids, the index of queued messages in arrival order, and the
 * writes that keep queue-store.c's records in step with it.
 *
 * Trust boundary: envelope strings are client data, kept as opaque strings;
 * records loaded at start-up went through queue-records.c's checks.
 * Ids: the time in microseconds as 16 hex digits, forced to increase (also
 * across restarts: the largest loaded id is the floor), so ids sort in
 * arrival order and never repeat. */
#include "queue-private.h"
#include "clock.h"
#include "queue-records.h"
#include "alloc.h"
#include "log.h"
#include "loop.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INITIAL_BUCKETS 1024

struct save_ctx {
	struct queue *queue;
	struct queue_msg *msg, *extra;
	unsigned int tries;
};

/* A message refused with 451 whose records are being deleted. */
struct refused_ctx {
	struct queue *queue;
	char id[QUEUE_ID_LEN + 1];
	unsigned int tries;
};

struct load_ctx {
	struct queue *queue;
	struct queue_msg *msg;
	queue_done_cb_t *cb;
	void *context;
	bool ok;
};

const char *queue_rcpt_state_name(enum queue_rcpt_state state)
{
	static const char *const names[] = {
		[QUEUE_RCPT_PENDING] = "pending",
		[QUEUE_RCPT_DEFERRED] = "deferred",
		[QUEUE_RCPT_DELIVERED] = "delivered",
		[QUEUE_RCPT_BOUNCED] = "bounced",
	};
	return (unsigned int)state < 4 ? names[state] : "unknown";
}

/* Bodies and messages */

struct queue_body *queue_body_new(char *data, size_t size)
{
	struct queue_body *body = mt_xcalloc(1, sizeof(*body));
	body->refs = 1;
	body->data = data;
	body->size = size;
	body->complete = true;
	return body;
}

void queue_body_ref(struct queue_body *body) { body->refs++; }

void queue_body_unref(struct queue_body **body_p)
{
	struct queue_body *body = *body_p;
	if (body == NULL)
		return;
	*body_p = NULL;
	if (--body->refs > 0)
		return;
	free(body->data);
	free(body);
}

struct queue_msg *queue_msg_new(void)
{
	struct queue_msg *msg = mt_xcalloc(1, sizeof(*msg));
	msg->refs = 1;
	return msg;
}

struct queue_rcpt *queue_msg_add_rcpt(struct queue_msg *msg, const char *address)
{
	/* Grow in powers of two: count is the capacity's only record. */
	unsigned int n = msg->rcpt_count;
	if (n == 0 || (n & (n - 1)) == 0)
		msg->rcpts = mt_xrealloc(msg->rcpts,
					 (n == 0 ? 1 : 2 * (size_t)n) *
					 sizeof(*msg->rcpts));
	struct queue_rcpt *r = &msg->rcpts[msg->rcpt_count++];
	memset(r, 0, sizeof(*r));
	r->address = mt_xstrdup(address);
	return r;
}

void queue_msg_ref(struct queue_msg *msg) { msg->refs++; }

void queue_msg_unref(struct queue_msg **msg_p)
{
	struct queue_msg *msg = *msg_p;
	if (msg == NULL)
		return;
	*msg_p = NULL;
	if (--msg->refs > 0)
		return;
	for (unsigned int i = 0; i < msg->rcpt_count; i++) {
		free(msg->rcpts[i].address);
		free(msg->rcpts[i].orcpt);
		free(msg->rcpts[i].last_error);
	}
	free(msg->rcpts);
	free(msg->sender);
	free(msg->envid);
	free(msg->client);
	queue_body_unref(&msg->body);
	free(msg);
}

bool queue_msg_done(const struct queue_msg *msg)
{
	for (unsigned int i = 0; i < msg->rcpt_count; i++)
		if (msg->rcpts[i].state == QUEUE_RCPT_PENDING ||
		    msg->rcpts[i].state == QUEUE_RCPT_DEFERRED)
			return false;
	return true;
}

/* Index */

static size_t id_hash(const char *id, size_t n_buckets)
{
	/* FNV-1a; ids differ mostly in their last digits. */
	uint64_t h = 1469598103934665603ull;
	for (const char *p = id; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return (size_t)(h % n_buckets);
}

static void index_grow(struct queue *q)
{
	size_t n = q->n_buckets * 2;
	struct queue_msg **buckets = mt_xcalloc(n, sizeof(*buckets));
	for (size_t i = 0; i < q->n_buckets; i++) {
		for (struct queue_msg *m = q->buckets[i], *next; m != NULL; m = next) {
			next = m->hash_next;
			size_t b = id_hash(m->id, n);
			m->hash_next = buckets[b];
			buckets[b] = m;
		}
	}
	free(q->buckets);
	q->buckets = buckets;
	q->n_buckets = n;
}

/* Add msg (taking a reference) at the end of the arrival list. */
static void index_add(struct queue *q, struct queue_msg *msg)
{
	if (q->count >= q->n_buckets)
		index_grow(q);
	size_t b = id_hash(msg->id, q->n_buckets);
	msg->hash_next = q->buckets[b];
	q->buckets[b] = msg;
	msg->list_next = NULL;
	msg->list_prev = q->tail;
	if (q->tail != NULL)
		q->tail->list_next = msg;
	else
		q->head = msg;
	q->tail = msg;
	q->count++;
	msg->indexed = true;
	queue_msg_ref(msg);
}

static void index_remove(struct queue *q, struct queue_msg *msg)
{
	if (!msg->indexed)
		return;
	for (struct queue_msg **pp = &q->buckets[id_hash(msg->id, q->n_buckets)];
	     *pp != NULL; pp = &(*pp)->hash_next) {
		if (*pp == msg) {
			*pp = msg->hash_next;
			break;
		}
	}
	if (msg->list_prev != NULL)
		msg->list_prev->list_next = msg->list_next;
	else
		q->head = msg->list_next;
	if (msg->list_next != NULL)
		msg->list_next->list_prev = msg->list_prev;
	else
		q->tail = msg->list_prev;
	msg->list_prev = msg->list_next = msg->hash_next = NULL;
	msg->indexed = false;
	q->count--;
	queue_msg_unref(&msg);
}

unsigned int queue_count(const struct queue *q) { return q->count; }

struct queue_msg *queue_find(struct queue *q, const char *id)
{
	if (strlen(id) != QUEUE_ID_LEN)
		return NULL;
	for (struct queue_msg *m = q->buckets[id_hash(id, q->n_buckets)];
	     m != NULL; m = m->hash_next)
		if (strcmp(m->id, id) == 0)
			return m;
	return NULL;
}

struct queue_msg *queue_first(struct queue *q) { return q->head; }
struct queue_msg *queue_next(struct queue_msg *msg) { return msg->list_next; }

void queue_new_id(struct queue *q, char id_r[QUEUE_ID_LEN + 1])
{
	uint64_t id = mt_wall_us();
	if (id <= q->last_id)
		id = q->last_id + 1;
	q->last_id = id;
	snprintf(id_r, QUEUE_ID_LEN + 1, "%016" PRIX64, id);
}

/* Open and close */

static void load_one(const char *id, size_t id_len, const void *record,
		     size_t size, void *context)
{
	struct queue *q = context;
	char idbuf[QUEUE_ID_LEN + 1];
	const char *error;
	/* Keys are not NUL-terminated: copy before looking. */
	if (id_len == QUEUE_ID_LEN)
		memcpy(idbuf, id, QUEUE_ID_LEN);
	idbuf[id_len == QUEUE_ID_LEN ? QUEUE_ID_LEN : 0] = '\0';
	if (id_len != QUEUE_ID_LEN || strspn(idbuf, "0123456789ABCDEF") != QUEUE_ID_LEN) {
		mt_error("queue: skipping a record with a malformed key");
		return;
	}
	struct queue_msg *msg = queue_msg_new();
	memcpy(msg->id, idbuf, sizeof(msg->id));
	if (!queue_record_decode(record, size, msg, &error)) {
		mt_error("queue=%s skipping it at start-up: %s", idbuf, error);
		queue_msg_unref(&msg);
		return;
	}
	uint64_t n = strtoull(idbuf, NULL, 16);
	if (n > q->last_id)
		q->last_id = n;
	index_add(q, msg);
	queue_msg_unref(&msg);
}

static bool id_known(const char *id, void *context)
{
	return queue_find(context, id) != NULL;
}

struct queue *queue_open(const char *dir, struct mt_loop *loop,
			 const char **error_r)
{
	struct queue_store *store = queue_store_open(dir, loop, error_r);
	if (store == NULL)
		return NULL;
	struct queue *q = mt_xcalloc(1, sizeof(*q));
	q->store = store;
	q->loop = loop;
	q->n_buckets = INITIAL_BUCKETS;
	q->buckets = mt_xcalloc(q->n_buckets, sizeof(*q->buckets));
	if (!queue_store_scan(store, load_one, q, error_r)) {
		queue_close(&q);
		return NULL;
	}
	q->orphans = queue_store_sweep_orphans(store, id_known, q);
	mt_info("queue: dir=%s opened messages=%u", dir, q->count);
	return q;
}

void queue_close(struct queue **queue_p)
{
	struct queue *q = *queue_p;
	if (q == NULL)
		return;
	*queue_p = NULL;
	queue_store_close(&q->store);
	/* Completions of the last writes were posted to the loop: run them
	 * while the index still exists. */
	mt_loop_exit(q->loop);
	(void)mt_loop_run(q->loop);
	while (q->head != NULL)
		index_remove(q, q->head);
	free(q->buckets);
	free(q);
}

void queue_set_arrival_cb(struct queue *q, queue_arrival_cb_t *cb, void *context)
{
	q->arrival_cb = cb;
	q->arrival_context = context;
}

void queue_announce_all(struct queue *q)
{
	if (q->arrival_cb == NULL)
		return;
	for (struct queue_msg *m = q->head, *next; m != NULL; m = next) {
		next = m->list_next;
		q->arrival_cb(m, q->arrival_context);
	}
}

static void announce(struct queue *q, struct queue_msg *msg)
{
	index_add(q, msg);
	if (q->arrival_cb != NULL)
		q->arrival_cb(msg, q->arrival_context);
}

/* Writes */

static void put_envelope(struct queue_store_write *w, const struct queue_msg *msg)
{
	struct mt_buf record = MT_BUF_INIT;
	queue_record_encode(msg, &record);
	queue_store_write_envelope(w, msg->id, &record);
}

/* A lazy write that failed for lack of space (a full disk) is written
 * again until it is durable: a delivery's bookkeeping that never became
 * durable makes the next start deliver the message again, and a message
 * refused with 451 that was stored after all is delivered at the next
 * start (tests/faults, disk-full-mta, showed both). The store's flush
 * tries for about 2 s before it fails, which paces the retries; they stop
 * after WRITE_RETRIES, and when the queue closes. */
#define WRITE_RETRIES 3600

static bool write_retry(const struct queue *q, int status, unsigned int tries)
{
	return (status == ENOSPC || status == EDQUOT) && q->store != NULL &&
		tries < WRITE_RETRIES;
}

static void refused_delete_done(int status, void *context);

static void refused_delete(struct refused_ctx *ctx)
{
	struct queue_store_write *w = queue_store_write_new();
	queue_store_write_delete(w, ctx->id);
	queue_store_write_submit(ctx->queue->store, w, QUEUE_STORE_LAZY,
				 refused_delete_done, ctx);
}

static void refused_delete_done(int status, void *context)
{
	struct refused_ctx *ctx = context;
	if (status != 0 && write_retry(ctx->queue, status, ctx->tries)) {
		ctx->tries++;
		refused_delete(ctx);
		return;
	}
	if (status != 0)
		mt_error("queue=%s deleting the message refused with 451 failed: %s",
			 ctx->id, status > 0 ? strerror(status) : db_strerror(status));
	free(ctx);
}

static void submit_done(int status, void *context)
{
	struct queue_op *op = context;
	struct queue *q = op->queue;
	struct queue_msg *msg = op->msg;
	if (status == 0) {
		q->submitted++;
		announce(q, msg);
	} else {
		/* The transaction may have committed and only the flush that
		 * would make it durable failed (a full disk): a later flush
		 * would store the message after all, though the client was
		 * told 451, and the next start would deliver it -- a second
		 * copy once the client retries (tests/faults, disk-full-mta).
		 * Its deletion follows it in the log: the flush that makes the
		 * message durable makes the deletion durable too, or the next
		 * one does (lazily, within about 10 ms). */
		struct refused_ctx *ctx = mt_xcalloc(1, sizeof(*ctx));
		ctx->queue = q;
		memcpy(ctx->id, msg->id, sizeof(ctx->id));
		refused_delete(ctx);
	}
	if (op->cb != NULL)
		op->cb(status == 0, status == 0 ? NULL : "the queue could not "
		       "store the message", op->context);
	queue_msg_unref(&op->msg);
	mt_buf_free(&op->tail);
	free(op);
}

/* The queue closed while op waited for its pieces: nothing is written. */
static bool op_closed(struct queue_op *op)
{
	if (op->queue->store != NULL)
		return false;
	if (op->cb != NULL)
		op->cb(false, "the queue is closing", op->context);
	queue_msg_unref(&op->msg);
	mt_buf_free(&op->tail);
	free(op);
	return true;
}

void queue_op_write(struct queue_op *op, uint32_t tail_index)
{
	if (op_closed(op))
		return;
	struct queue_msg *msg = op->msg;
	struct queue_store_write *w = queue_store_write_new();
	put_envelope(w, msg);
	if (tail_index == 1 && op->tail.len > 0) {
		/* It all arrived before a piece filled: one record, and the
		 * body stays in memory for the delivery that follows. */
		struct mt_buf whole = MT_BUF_INIT;
		mt_buf_append(&whole, msg->body->data, msg->body->size);
		mt_buf_append(&whole, op->tail.data, op->tail.len);
		size_t size = whole.len;
		queue_body_unref(&msg->body);
		msg->body = queue_body_new(mt_buf_steal(&whole), size);
		mt_buf_free(&op->tail);
	}
	queue_store_write_body(w, msg->id, msg->body);
	if (op->tail.len > 0)
		queue_store_write_piece(w, msg->id, tail_index, &op->tail);
	if (tail_index > 1)
		queue_body_unref(&msg->body);	/* the delivery reads the head */
	queue_store_write_submit(op->queue->store, w, op->company ?
				 QUEUE_STORE_COMPANY : QUEUE_STORE_WAITED,
				 submit_done, op);
}

static void failed_delete_done(int status, void *context)
{
	struct queue_op *op = context;
	(void)status;	/* what is left is deleted at the next start */
	submit_done(ENOSPC, op);
}

void queue_op_fail(struct queue_op *op)
{
	if (op_closed(op))
		return;
	/* Through the store, so the callback runs from the loop and only
	 * after the pieces are gone. */
	struct queue_store_write *w = queue_store_write_new();
	queue_store_write_delete(w, op->msg->id);
	queue_store_write_submit(op->queue->store, w, QUEUE_STORE_LAZY,
				 failed_delete_done, op);
}

struct queue_op *queue_submit(struct queue *q, struct queue_msg *msg,
			      struct queue_spool **spool_p, struct mt_buf *tail,
			      bool company, queue_done_cb_t *cb, void *context)
{
	struct queue_op *op = mt_xcalloc(1, sizeof(*op));
	op->queue = q;
	op->msg = msg;		/* the caller's reference */
	op->company = company;
	op->cb = cb;
	op->context = context;
	if (tail != NULL) {
		op->tail = *tail;
		mt_buf_init(tail);
	}
	struct queue_spool *spool = spool_p != NULL ? *spool_p : NULL;
	if (spool_p != NULL)
		*spool_p = NULL;
	if (spool != NULL)
		queue_spool_then(spool, op);
	else
		queue_op_write(op, 1);
	return op;
}

void queue_op_forget(struct queue_op **op_p)
{
	if (*op_p != NULL)
		(*op_p)->cb = NULL;
	*op_p = NULL;
}

static void save_submit(struct queue *q, struct queue_msg *msg,
			struct queue_msg *extra, unsigned int tries);

static void save_done(int status, void *context)
{
	struct save_ctx *ctx = context;
	ctx->msg->writes--;
	if (status != 0 && write_retry(ctx->queue, status, ctx->tries)) {
		/* The message's current state (and the new message, which keeps
		 * waiting for its announcement), written again. */
		save_submit(ctx->queue, ctx->msg, ctx->extra, ctx->tries + 1);
		ctx->extra = NULL;
	}
	if (ctx->extra != NULL) {
		if (status == 0)
			announce(ctx->queue, ctx->extra);
		else
			mt_error("queue=%s could not store the new message queue=%s",
				 ctx->msg->id, ctx->extra->id);
		queue_msg_unref(&ctx->extra);
	}
	queue_msg_unref(&ctx->msg);
	free(ctx);
}

static void remove_records(struct queue *q, struct queue_msg *msg,
			   struct queue_store_write *w)
{
	queue_store_write_delete(w, msg->id);
	if (!msg->removed) {
		msg->removed = true;
		q->removed++;
	}
	index_remove(q, msg);
}

/* extra: the caller's reference. */
static void save_submit(struct queue *q, struct queue_msg *msg,
			struct queue_msg *extra, unsigned int tries)
{
	struct queue_store_write *w = queue_store_write_new();
	struct save_ctx *ctx = mt_xcalloc(1, sizeof(*ctx));
	ctx->queue = q;
	ctx->msg = msg;
	ctx->tries = tries;
	queue_msg_ref(msg);
	msg->writes++;
	if (extra != NULL) {
		ctx->extra = extra;
		put_envelope(w, extra);
		queue_store_write_body(w, extra->id, extra->body);
	}
	if (msg->removed) {
		/* Deleted meanwhile: keep it deleted. */
		queue_store_write_delete(w, msg->id);
	} else if (queue_msg_done(msg)) {
		remove_records(q, msg, w);
	} else {
		put_envelope(w, msg);
		if (tries == 0)
			q->saved++;
	}
	queue_store_write_submit(q->store, w, QUEUE_STORE_LAZY, save_done, ctx);
}

void queue_save(struct queue *q, struct queue_msg *msg, struct queue_msg *extra)
{
	save_submit(q, msg, extra, 0);
}

void queue_remove(struct queue *q, struct queue_msg *msg)
{
	struct queue_store_write *w = queue_store_write_new();
	struct save_ctx *ctx = mt_xcalloc(1, sizeof(*ctx));
	ctx->queue = q;
	ctx->msg = msg;
	queue_msg_ref(msg);
	msg->writes++;
	remove_records(q, msg, w);
	queue_store_write_submit(q->store, w, QUEUE_STORE_LAZY, save_done, ctx);
}

static void load_finish(void *context)
{
	struct load_ctx *ctx = context;
	ctx->cb(ctx->ok, ctx->ok ? NULL : "cannot read the message from the queue",
		ctx->context);
	queue_msg_unref(&ctx->msg);
	free(ctx);
}

static void load_done(int status, struct queue_body *body, void *context)
{
	struct load_ctx *ctx = context;
	if (status == 0 && ctx->msg->body == NULL) {
		queue_body_ref(body);
		ctx->msg->body = body;
	}
	if (status != 0)
		mt_error("queue=%s reading the body failed: %s", ctx->msg->id,
			 status > 0 ? strerror(status) : db_strerror(status));
	ctx->ok = ctx->msg->body != NULL;
	ctx->queue->loads++;
	load_finish(ctx);
}

void queue_load_body(struct queue *q, struct queue_msg *msg,
		     queue_done_cb_t *cb, void *context)
{
	struct load_ctx *ctx = mt_xcalloc(1, sizeof(*ctx));
	ctx->queue = q;
	ctx->msg = msg;
	queue_msg_ref(msg);
	ctx->cb = cb;
	ctx->context = context;
	if (msg->body != NULL) {
		/* Already here; still answer from the loop, never inside. */
		ctx->ok = true;
		mt_loop_post(q->loop, load_finish, ctx);
		return;
	}
	queue_store_read_pieces(q->store, msg->id, 0, QUEUE_HEAD_MAX, load_done, ctx);
}

struct queue_read {
	char id[QUEUE_ID_LEN + 1];
	queue_read_cb_t *cb;
	void *context;
	bool cancelled;
};

static void read_next_done(int status, struct queue_body *piece, void *context)
{
	struct queue_read *r = context;
	if (status != 0)
		mt_error("queue=%s reading the body failed: %s", r->id,
			 status > 0 ? strerror(status) : db_strerror(status));
	if (!r->cancelled)
		r->cb(status == 0 ? piece : NULL, r->context);
	free(r);
}

struct queue_read *queue_read_next(struct queue *q, const struct queue_msg *msg,
				   const struct queue_body *after,
				   queue_read_cb_t *cb, void *context)
{
	struct queue_read *r = mt_xcalloc(1, sizeof(*r));
	memcpy(r->id, msg->id, sizeof(r->id));
	r->cb = cb;
	r->context = context;
	queue_store_read_pieces(q->store, msg->id, after->next_piece,
				QUEUE_PIECE_SIZE, read_next_done, r);
	return r;
}

void queue_read_cancel(struct queue_read **read_p)
{
	if (*read_p != NULL)
		(*read_p)->cancelled = true;
	*read_p = NULL;
}

void queue_set_commit_delay(struct queue *q, unsigned int usecs)
{
	queue_store_set_commit_delay(q->store, usecs);
}

void queue_observe_checkpoints(struct queue *q, struct mt_series *histogram)
{
	queue_store_observe_checkpoints(q->store, histogram);
}

void queue_observe_commit_latency(struct queue *q, struct mt_series *histogram)
{
	queue_store_observe_commit_latency(q->store, histogram);
}

void queue_get_stats(struct queue *q, struct queue_stats *s)
{
	struct mt_bdb_commit_stats cs;
	queue_store_get_stats(q->store, &cs);
	s->messages = q->count;
	s->submitted = q->submitted;
	s->saved = q->saved;
	s->removed = q->removed;
	s->loads = q->loads;
	s->spooled_pieces = q->spooled_pieces;
	s->orphans = q->orphans;
	s->flushes = cs.flushes;
	s->lazy_flushes = cs.lazy_flushes;
	s->commit_usecs = cs.exec_usecs;
	s->company_waits = cs.company_waits;
	s->flush_usecs = cs.flush_usecs;
	s->flushed_jobs = cs.jobs;
	s->max_batch = cs.max_batch;
	s->pending_writes = queue_store_pending(q->store);
}
