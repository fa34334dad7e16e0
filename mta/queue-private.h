/* queue-private.h — what the queue's own files share (queue.c: messages,
 * the index, writes; queue-spool.c: bodies written while they arrive):
 * the queue object and the submit operation. Nothing outside mta/queue*.c
 * includes it.
 *
 * Trust boundary: none of its own (see queue.h). */
#ifndef MT_MTA_QUEUE_PRIVATE_H
#define MT_MTA_QUEUE_PRIVATE_H

#include "buf.h"
#include "queue.h"
#include "queue-store.h"

struct queue {
	struct queue_store *store;
	struct mt_loop *loop;
	struct queue_msg **buckets;
	size_t n_buckets;
	unsigned int count;
	struct queue_msg *head, *tail;
	uint64_t last_id;
	queue_arrival_cb_t *arrival_cb;
	void *arrival_context;
	uint64_t submitted, saved, removed, loads, spooled_pieces, orphans;
};

/* A queue_submit() in progress. */
struct queue_op {
	struct queue *queue;
	struct queue_msg *msg;
	struct mt_buf tail;		/* the content after the spool's pieces */
	bool company;
	queue_done_cb_t *cb;
	void *context;
};

/* Write op's message: envelope, piece 0 (msg->body), the tail as piece
 * `tail_index`, in one transaction (queue.c). */
void queue_op_write(struct queue_op *op, uint32_t tail_index);
/* The message cannot be stored (a piece failed): answer op's caller with
 * a failure and delete what was written (queue.c). */
void queue_op_fail(struct queue_op *op);
/* The spool's last piece write finished: go on with op (queue-spool.c
 * calls it; queue.c's submit waits on it). */
void queue_spool_then(struct queue_spool *spool, struct queue_op *op);

#endif
