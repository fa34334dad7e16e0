/* queue-store.h — the Berkeley DB side of the MTA queue (queue.c is the
 * in-memory side): the environment in queue_dir, two databases
 * (envelope.db: id → envelope record, body.db: id + piece index → a piece
 * of the message's bytes), the group-commit pipeline and the checkpoint
 * thread. A body is stored in pieces so that it can be written while it
 * arrives and read while it is sent, never whole in memory: piece 0 is ours
 * (trace and added header lines, written with the envelope), pieces 1.. the
 * client's content in order. A body written whole by an older release
 * (key: the id alone) reads as piece 0.
 *
 * Trust boundary: queue_dir comes from the config; its files are opened only
 * by this process (a lock file guards against a second mailtier-mta).
 * Threading: the write/read calls from the loop thread given at open; the
 * work runs on lib-bdb/bdb-commit's threads. */
#ifndef MT_MTA_QUEUE_STORE_H
#define MT_MTA_QUEUE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bdb-commit.h"
#include "buf.h"
#include "queue.h"

struct mt_loop;
struct queue_store;
struct queue_store_write;

struct queue_store *queue_store_open(const char *dir, struct mt_loop *loop,
				     const char **error_r);
/* Finish every queued job (completions are posted to the loop), checkpoint,
 * close. */
void queue_store_close(struct queue_store **store_p);

/* Start-up: call cb for every envelope record, in key (= id) order. */
typedef void queue_store_scan_cb_t(const char *id, size_t id_len,
				   const void *record, size_t size,
				   void *context);
bool queue_store_scan(struct queue_store *store, queue_store_scan_cb_t *cb,
		      void *context, const char **error_r);

/* A transaction of puts and deletes, submitted as one. */
struct queue_store_write *queue_store_write_new(void);
/* Takes record's contents. */
void queue_store_write_envelope(struct queue_store_write *w, const char *id,
				struct mt_buf *record);
/* body as piece 0 of id (a reference is kept until the write completes). */
void queue_store_write_body(struct queue_store_write *w, const char *id,
			    struct queue_body *body);
/* data (taken, left empty) as piece index of id. */
void queue_store_write_piece(struct queue_store_write *w, const char *id,
			     uint32_t index, struct mt_buf *data);
/* Delete id's envelope and every piece of its body. */
void queue_store_write_delete(struct queue_store_write *w, const char *id);
typedef void queue_store_done_cb_t(int status, void *context);
/* How soon a write must be durable (lib-bdb/bdb-commit.h's job flags). */
enum queue_store_urgency {
	QUEUE_STORE_WAITED,	/* someone waits: flush now */
	QUEUE_STORE_COMPANY,	/* others are about to write: may wait for them */
	QUEUE_STORE_LAZY,	/* nobody waits: shares the next flush */
	QUEUE_STORE_UNFLUSHED,	/* a piece of a body: done once committed; the
				 * envelope's flush later makes it durable */
};
/* Run w as one transaction; done(0) on the loop once it is durable
 * (committed, for QUEUE_STORE_UNFLUSHED). w is freed by the store. */
void queue_store_write_submit(struct queue_store *store,
			      struct queue_store_write *w,
			      enum queue_store_urgency urgency,
			      queue_store_done_cb_t *done, void *context);
/* The longest a flush waits for company (commit_delay). */
void queue_store_set_commit_delay(struct queue_store *store, unsigned int usecs);
void queue_store_observe_checkpoints(struct queue_store *store, struct mt_series *histogram);
void queue_store_observe_commit_latency(struct queue_store *store,
					struct mt_series *histogram);

/* Read id's pieces from index `from` on, whole, until max_bytes are read
 * (at least one piece) or the body ends; done(status, body or NULL) on the
 * loop. The body's next_piece and complete say where the next read starts
 * and whether there is one; DB_NOTFOUND if piece `from` is not there. */
typedef void queue_store_body_cb_t(int status, struct queue_body *body,
				   void *context);
void queue_store_read_pieces(struct queue_store *store, const char *id,
			     uint32_t from, size_t max_bytes,
			     queue_store_body_cb_t *done, void *context);

/* Start-up, after the scan: delete the body pieces of every id that
 * known() says has no envelope (a message still arriving when the process
 * died: never acknowledged). Returns how many bodies were deleted. */
typedef bool queue_store_known_cb_t(const char *id, void *context);
unsigned int queue_store_sweep_orphans(struct queue_store *store,
				       queue_store_known_cb_t *known,
				       void *context);

void queue_store_get_stats(struct queue_store *store,
			   struct mt_bdb_commit_stats *stats_r);
unsigned int queue_store_pending(struct queue_store *store);

#endif
