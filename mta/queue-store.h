/* queue-store.h — the Berkeley DB side of the MTA queue (queue.c is the
 * in-memory side): the environment in queue_dir, two databases
 * (envelope.db: id → envelope record, body.db: id → message bytes), the
 * group-commit pipeline and the checkpoint thread.
 *
 * Trust boundary: queue_dir comes from the config; its files are opened only
 * by this process (a lock file guards against a second mailtier-mta).
 * Threading: the write/read calls from the loop thread given at open; the
 * work runs on lib/bdb-commit's threads. */
#ifndef MT_MTA_QUEUE_STORE_H
#define MT_MTA_QUEUE_STORE_H

#include <stdbool.h>
#include <stddef.h>

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
/* Keeps a reference to body until the write completes. New ids only. */
void queue_store_write_body(struct queue_store_write *w, const char *id,
			    struct queue_body *body);
/* Delete id's envelope and body. */
void queue_store_write_delete(struct queue_store_write *w, const char *id);
typedef void queue_store_done_cb_t(int status, void *context);
/* Run w as one transaction; done(0) on the loop once it is durable. w is
 * freed by the store. lazy: nobody waits on it, so it shares the next
 * flush someone does wait on (MT_BDB_JOB_LAZY); company: others are about
 * to write too, the flush may wait a moment for them (MT_BDB_JOB_COMPANY). */
void queue_store_write_submit(struct queue_store *store,
			      struct queue_store_write *w, bool lazy, bool company,
			      queue_store_done_cb_t *done, void *context);
/* The longest a flush waits for company (commit_delay). */
void queue_store_set_commit_delay(struct queue_store *store, unsigned int usecs);

/* Read id's body; done(status, body or NULL) on the loop. */
typedef void queue_store_body_cb_t(int status, struct queue_body *body,
				   void *context);
void queue_store_read_body(struct queue_store *store, const char *id,
			   queue_store_body_cb_t *done, void *context);

void queue_store_get_stats(struct queue_store *store,
			   struct mt_bdb_commit_stats *stats_r);
unsigned int queue_store_pending(struct queue_store *store);

#endif
