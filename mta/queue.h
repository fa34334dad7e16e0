/* queue.h — the MTA's durable queue: every accepted message with its
 * envelope and per-recipient delivery state, in a transactional Berkeley DB
 * environment in queue_dir, plus the in-memory index the delivery side works
 * from. The queue has one owner, the mailtier-mta process (mailtierctl asks
 * it over the admin socket).
 *
 * Durability: queue_submit() completes only when the message and its
 * envelope are on stable storage (a body that arrived in pieces too) (group commit, lib-bdb/bdb-commit.h), so the
 * SMTP 250 may be sent from its callback. State changes (delivered, deferred,
 * bounced) are written the same way; a change lost in a crash only means a
 * recipient is tried again (at least once, never lost).
 *
 * Trust boundary: envelope fields and bodies come from SMTP clients and are
 * stored as opaque strings and bytes; records read back at start-up are
 * checked for shape (queue-records.c) and a damaged one is logged and
 * skipped, never trusted for lengths.
 *
 * Threading: all calls from the loop thread that opened the queue. */
#ifndef MT_MTA_QUEUE_H
#define MT_MTA_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smtp-params.h"

struct mt_buf;
struct mt_loop;
struct mt_series;
struct queue;

#define QUEUE_ID_LEN 16		/* upper-case hex digits */

enum queue_rcpt_state {
	QUEUE_RCPT_PENDING,	/* not tried yet */
	QUEUE_RCPT_DEFERRED,	/* temporary failure: next_try, last_error */
	QUEUE_RCPT_DELIVERED,
	QUEUE_RCPT_BOUNCED,	/* permanent failure: a DSN was queued (or the
				 * postmaster's copy for a null sender; none
				 * for NOTIFY=NEVER) */
};

/* DSN NOTIFY (RFC 3461 4.1) as lib-mail parses it; 0 means not given
 * (failure and delay). Stored: the values never change. */
#define QUEUE_NOTIFY_NEVER MT_SMTP_NOTIFY_NEVER
#define QUEUE_NOTIFY_SUCCESS MT_SMTP_NOTIFY_SUCCESS
#define QUEUE_NOTIFY_FAILURE MT_SMTP_NOTIFY_FAILURE
#define QUEUE_NOTIFY_DELAY MT_SMTP_NOTIFY_DELAY

/* DSN RET (RFC 3461 4.3), lib-mail's values (stored). */
enum queue_ret {
	QUEUE_RET_DEFAULT = MT_SMTP_RET_DEFAULT,
	QUEUE_RET_FULL = MT_SMTP_RET_FULL,
	QUEUE_RET_HDRS = MT_SMTP_RET_HDRS,
};

/* Message flags, stored. */
#define QUEUE_MSG_HELD 0x1u	/* admin hold: not delivered until released */
#define QUEUE_MSG_LOOP 0x2u	/* too many Received: lines: bounce all */
#define QUEUE_MSG_DSN 0x4u	/* a bounce we generated */
#define QUEUE_MSG_8BIT 0x8u	/* BODY=8BITMIME */
#define QUEUE_MSG_SMTPUTF8 0x10u
#define QUEUE_MSG_POSTMASTER_COPY 0x20u /* a null-sender message's failure,
					  * for the postmaster: held if it fails */

struct queue_rcpt {
	char *address;		/* envelope recipient as accepted */
	char *orcpt;		/* DSN ORCPT ("rfc822;" xtext as sent) or NULL */
	unsigned int notify;	/* QUEUE_NOTIFY_* */
	enum queue_rcpt_state state;
	uint32_t attempts;
	int64_t next_try;	/* ms since the epoch (DEFERRED) */
	char *last_error;	/* last reply or reason, or NULL */
	/* Not stored: */
	bool busy;		/* in a delivery attempt now */
};

/* Bytes of a message body, shared by reference: a whole body made here (a
 * DSN), or what one read from the queue returned — the first pieces (the
 * head, queue_load_body) or the next ones (queue_read_next). */
struct queue_body {
	unsigned int refs;
	size_t size;
	char *data;
	bool complete;		/* nothing of the body follows these bytes */
	uint32_t next_piece;	/* where the following bytes start (if any) */
};

/* A body is stored in pieces of about this size (the client's content
 * as it arrives), so no session holds more than about two in memory. */
#define QUEUE_PIECE_SIZE (256u * 1024u)
/* What queue_load_body() reads: the head, from which a DSN quotes and the
 * header section is checked; a body no longer than this is read whole. */
#define QUEUE_HEAD_MAX QUEUE_PIECE_SIZE

struct queue_msg {
	char id[QUEUE_ID_LEN + 1];
	int64_t arrival;	/* ms since the epoch */
	uint32_t flags;		/* QUEUE_MSG_* */
	uint64_t size;		/* body octets */
	char *sender;		/* "" for the null sender <> */
	char *envid;		/* DSN ENVID (xtext as sent) or NULL */
	enum queue_ret ret;
	char *client;		/* "helo=NAME addr=IP" for logs and DSNs */
	unsigned int rcpt_count;
	struct queue_rcpt *rcpts;

	/* Not stored: */
	struct queue_body *body;	/* the head (see queue_load_body), or NULL;
					 * at submit: our lines before the content */
	unsigned int refs;
	bool indexed;		/* durable and in the queue's index */
	bool removed;		/* deleted from the queue (records going) */
	unsigned int writes;	/* state writes in flight */
	struct queue_msg *hash_next, *list_prev, *list_next;
	void *delivery;		/* the delivery side's per-message state */
};

/* Called when a message becomes durable (queue_submit, bounces) or is found
 * at start-up: the delivery side schedules it. */
typedef void queue_arrival_cb_t(struct queue_msg *msg, void *context);
/* Completion of a submit/save/load: ok, or error says why. */
typedef void queue_done_cb_t(bool ok, const char *error, void *context);

/* Open (create, recover) the queue in dir and load every envelope. Takes a
 * lock file: a second process on the same dir fails. NULL and an error
 * (valid until the next call) on failure. */
struct queue *queue_open(const char *dir, struct mt_loop *loop,
			 const char **error_r);
/* Finish outstanding writes (their callbacks run on the loop), checkpoint
 * and close. Messages still referenced elsewhere are freed regardless. */
void queue_close(struct queue **queue_p);
void queue_set_arrival_cb(struct queue *queue, queue_arrival_cb_t *cb,
			  void *context);
/* Offer every loaded message to the arrival callback (after start-up). */
void queue_announce_all(struct queue *queue);

/* Messages */

struct queue_msg *queue_msg_new(void);
/* A fresh id, unique in this queue (also across restarts). */
void queue_new_id(struct queue *queue, char id_r[QUEUE_ID_LEN + 1]);
struct queue_rcpt *queue_msg_add_rcpt(struct queue_msg *msg,
				      const char *address);
void queue_msg_ref(struct queue_msg *msg);
void queue_msg_unref(struct queue_msg **msg_p);

/* A complete body (takes data). */
struct queue_body *queue_body_new(char *data, size_t size);
void queue_body_ref(struct queue_body *body);
void queue_body_unref(struct queue_body **body_p);

/* Index */

unsigned int queue_count(const struct queue *queue);
struct queue_msg *queue_find(struct queue *queue, const char *id);
/* First/next message in arrival order (NULL at the end). */
struct queue_msg *queue_first(struct queue *queue);
struct queue_msg *queue_next(struct queue_msg *msg);
/* True when no recipient still waits for delivery. */
bool queue_msg_done(const struct queue_msg *msg);

/* Writes */

/* A body being received: the client's content written to the queue in
 * pieces as it arrives (queue-spool.c), each piece committed without a
 * flush of its own; none of it counts until queue_submit() makes the
 * envelope durable (that flush makes the pieces durable too: the log is
 * one sequence). An aborted spool's pieces are deleted, and pieces that
 * no envelope names (the process died while the message arrived) at the
 * next start. */
struct queue_spool;
/* ready(context) runs on the loop each time a piece write finishes. */
typedef void queue_spool_ready_cb_t(void *context);
struct queue_spool *queue_spool_new(struct queue *queue, const char *id,
				    queue_spool_ready_cb_t *ready, void *context);
/* Write content (taken, left empty) as the next piece; dropped once a
 * piece has failed (the message will be refused, queue_spool_failed). */
void queue_spool_write(struct queue_spool *spool, struct mt_buf *content);
/* Start the body again (a mail filter replaced it): what was written is
 * deleted (the spool is busy until it is) and the next piece is the
 * first. Not while a write is in flight. */
void queue_spool_rewind(struct queue_spool *spool);
/* A piece write is in flight: read no more content until ready. */
bool queue_spool_busy(const struct queue_spool *spool);
/* A piece could not be written (a full disk): answer 451 at the end. */
bool queue_spool_failed(const struct queue_spool *spool);
/* Octets written as pieces so far. */
uint64_t queue_spool_size(const struct queue_spool *spool);
/* The message will not be queued: its pieces are deleted once the writes
 * in flight are done; ready is not called again. NULL is fine. */
void queue_spool_abort(struct queue_spool **spool_p);

struct queue_op;
/* Store a new message (msg->id set) durably: its envelope, msg->body
 * (taken: for a received message our own lines, before the content) as
 * piece 0, the spool's pieces (spool taken, may be NULL) and tail (the
 * content after them, taken; may be NULL). On success msg is indexed, the
 * arrival callback runs, then cb(true). On failure cb(false, error); msg
 * is not indexed and nothing of it stays on disk. The handle is valid
 * until the callback; queue_op_forget() makes it not call back (the write
 * still happens). company: other messages are about to be submitted too,
 * so the flush may wait up to the commit delay to share itself with
 * them. */
struct queue_op *queue_submit(struct queue *queue, struct queue_msg *msg,
			      struct queue_spool **spool_p, struct mt_buf *tail,
			      bool company, queue_done_cb_t *cb, void *context);
/* commit_delay: how long a flush may wait for company (0: never). */
void queue_set_commit_delay(struct queue *queue, unsigned int usecs);
/* Observe each queue write's latency (submitted → durable) into histogram. */
void queue_observe_commit_latency(struct queue *queue, struct mt_series *histogram);
/* Observe each checkpoint of the queue's environment (its duration). */
void queue_observe_checkpoints(struct queue *queue, struct mt_series *histogram);
void queue_op_forget(struct queue_op **op_p);
/* Write msg's current state; when no recipient waits any more, remove it
 * from disk and from the index instead. With extra (a new message, e.g. a
 * DSN, holding its body), store it in the same transaction; it is indexed
 * and announced once durable. */
void queue_save(struct queue *queue, struct queue_msg *msg,
		struct queue_msg *extra);
/* Remove msg whatever its state (admin delete). */
void queue_remove(struct queue *queue, struct queue_msg *msg);
/* Read the head of msg's body (up to QUEUE_HEAD_MAX octets, in whole
 * pieces; all of it if no longer) into msg->body (cb on the loop). */
void queue_load_body(struct queue *queue, struct queue_msg *msg,
		     queue_done_cb_t *cb, void *context);
/* Read the bytes of msg's body that follow `after` (a head or an earlier
 * piece, not complete), about QUEUE_PIECE_SIZE of them: cb(piece) on the
 * loop, or cb(NULL) if they cannot be read (the message was deleted, a
 * read error: logged). queue_read_cancel() before the callback makes it
 * not call back. */
struct queue_read;
typedef void queue_read_cb_t(struct queue_body *piece, void *context);
struct queue_read *queue_read_next(struct queue *queue,
				   const struct queue_msg *msg,
				   const struct queue_body *after,
				   queue_read_cb_t *cb, void *context);
void queue_read_cancel(struct queue_read **read_p);

/* Counters for the periodic stats line and the admin socket. */
struct queue_stats {
	unsigned int messages;
	uint64_t submitted, saved, removed, loads;
	uint64_t spooled_pieces;	/* body pieces written while arriving */
	uint64_t orphans;		/* unfinished bodies deleted at start-up */
	uint64_t flushes, lazy_flushes, flushed_jobs, max_batch;
	uint64_t commit_usecs, flush_usecs;	/* storage threads' busy time */
	uint64_t company_waits;		/* flushes that waited for company */
	unsigned int pending_writes;
};
void queue_get_stats(struct queue *queue, struct queue_stats *stats_r);

/* Names for logs and the admin listing. */
const char *queue_rcpt_state_name(enum queue_rcpt_state state);

#endif
