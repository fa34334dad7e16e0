/* queue-spool.c — a message body written to the queue while it arrives
 * (see queue.h, "queue_spool"): each piece of the client's content is one
 * transaction committed without a flush (QUEUE_STORE_UNFLUSHED), at most
 * one in flight per session, so a session holds about two pieces in memory
 * whatever the message's size; the submit that follows waits for the last
 * one, then writes the envelope whose flush makes every piece durable.
 *
 * Trust boundary: the content is the client's, stored as opaque bytes; its
 * size is already bounded by the session (max_message_size).
 * Threading: the loop thread that opened the queue. */
#include "queue-private.h"
#include "alloc.h"
#include "log.h"

#include <db.h>
#include <stdlib.h>
#include <string.h>

struct queue_spool {
	struct queue *queue;
	char id[QUEUE_ID_LEN + 1];
	uint32_t next_index;		/* of the next piece (0 is ours) */
	unsigned int in_flight;
	int status;			/* the first failed piece's */
	uint64_t written;
	bool aborted;
	queue_spool_ready_cb_t *ready;
	void *context;
	struct queue_op *then;		/* the submit waiting for the writes */
};

struct queue_spool *queue_spool_new(struct queue *queue, const char *id,
				    queue_spool_ready_cb_t *ready, void *context)
{
	struct queue_spool *spool = mt_xcalloc(1, sizeof(*spool));
	spool->queue = queue;
	memcpy(spool->id, id, sizeof(spool->id));
	spool->next_index = 1;
	spool->ready = ready;
	spool->context = context;
	return spool;
}

static void delete_done(int status, void *context)
{
	char *id = context;
	if (status != 0)
		mt_error("queue=%s deleting the pieces of a message not queued "
			 "failed: %s (deleted at the next start)", id,
			 status > 0 ? strerror(status) : db_strerror(status));
	free(id);
}

/* Nobody wants the pieces: delete them (lazily: nobody waits) and go. */
static void spool_discard(struct queue_spool *spool)
{
	if (spool->next_index > 1 && spool->queue->store != NULL) {
		struct queue_store_write *w = queue_store_write_new();
		queue_store_write_delete(w, spool->id);
		queue_store_write_submit(spool->queue->store, w, QUEUE_STORE_LAZY,
					 delete_done, mt_xstrdup(spool->id));
	}
	free(spool);
}

/* After the last write in flight: the waiting submit goes on, taking
 * the spool (the pieces are now the message's, or deleted with it). */
static void spool_hand_over(struct queue_spool *spool)
{
	struct queue_op *op = spool->then;
	spool->then = NULL;
	if (spool->status != 0) {
		queue_op_fail(op);
	} else {
		queue_op_write(op, spool->next_index);
	}
	free(spool);
}

static void piece_done(int status, void *context)
{
	struct queue_spool *spool = context;
	spool->in_flight--;
	if (status != 0 && spool->status == 0) {
		spool->status = status;
		mt_error("queue=%s writing a piece of the message failed: %s "
			 "(it will be refused)", spool->id,
			 status > 0 ? strerror(status) : db_strerror(status));
	}
	if (spool->in_flight > 0)
		return;
	if (spool->aborted)
		spool_discard(spool);
	else if (spool->then != NULL)
		spool_hand_over(spool);
	else if (spool->ready != NULL)
		spool->ready(spool->context);
}

void queue_spool_write(struct queue_spool *spool, struct mt_buf *content)
{
	if (spool->status != 0 || content->len == 0) {
		mt_buf_reset(content);
		return;
	}
	struct queue_store_write *w = queue_store_write_new();
	spool->written += content->len;
	queue_store_write_piece(w, spool->id, spool->next_index++, content);
	spool->in_flight++;
	spool->queue->spooled_pieces++;
	queue_store_write_submit(spool->queue->store, w, QUEUE_STORE_UNFLUSHED,
				 piece_done, spool);
}

static void rewind_done(int status, void *context)
{
	piece_done(status, context);
}

void queue_spool_rewind(struct queue_spool *spool)
{
	if (spool->in_flight > 0)
		mt_panic("queue=%s: rewinding a spool with a write in flight", spool->id);
	spool->written = 0;
	if (spool->next_index == 1 || spool->status != 0)
		return;
	/* One job deletes what was written; the next piece is written only
	 * once it is done (busy meanwhile), so the order holds whatever
	 * the storage threads do. */
	struct queue_store_write *w = queue_store_write_new();
	queue_store_write_delete(w, spool->id);
	spool->next_index = 1;
	spool->in_flight++;
	queue_store_write_submit(spool->queue->store, w, QUEUE_STORE_UNFLUSHED,
				 rewind_done, spool);
}

bool queue_spool_busy(const struct queue_spool *spool)
{
	return spool->in_flight > 0;
}

bool queue_spool_failed(const struct queue_spool *spool)
{
	return spool->status != 0;
}

uint64_t queue_spool_size(const struct queue_spool *spool)
{
	return spool->written;
}

void queue_spool_abort(struct queue_spool **spool_p)
{
	struct queue_spool *spool = *spool_p;
	if (spool == NULL)
		return;
	*spool_p = NULL;
	spool->aborted = true;
	spool->ready = NULL;
	if (spool->in_flight == 0)
		spool_discard(spool);
}

void queue_spool_then(struct queue_spool *spool, struct queue_op *op)
{
	spool->then = op;
	spool->ready = NULL;
	if (spool->in_flight == 0)
		spool_hand_over(spool);
}
