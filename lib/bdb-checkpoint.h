/* bdb-checkpoint.h — the checkpoint thread of a transactional Berkeley DB
 * environment, written so that a checkpoint never holds up commits for
 * long (a 30-second checkpoint of a busy MTA queue stalled DATA replies
 * for up to ~385 ms: it wrote every page dirtied since the last one, and
 * commits waited behind those writes and their fsyncs).
 *
 * Every second the thread trickles the cache (DB_ENV->memp_trickle: dirty
 * pages written, without fsync, until MT_BDB_TRICKLE_PCT % of the cache
 * is clean, so neither a checkpoint nor a transaction that needs a free
 * buffer has much left to write), checkpoints when MT_BDB_CHECKPOINT_KBYTES
 * of log were written since the last one, and checkpoints every interval
 * seconds regardless; the checkpoint also lets old log files go
 * (DB_LOG_AUTO_REMOVE). The thread blocks every signal (the event loop's
 * thread takes them).
 *
 * Trust boundary: none (our own environment). Durability is not its
 * business: commits are durable by their log flush (bdb-commit.h); a
 * checkpoint only bounds recovery time and log disk use. */
#ifndef MT_BDB_CHECKPOINT_H
#define MT_BDB_CHECKPOINT_H

#include <db.h>

#define MT_BDB_TRICKLE_PCT 20
#define MT_BDB_CHECKPOINT_KBYTES 8192

struct mt_bdb_checkpointer;

/* Start the thread for env; name ("queue") prefixes its log lines. NULL
 * and *error_r (static) if the thread cannot be started. */
struct mt_bdb_checkpointer *mt_bdb_checkpointer_start(DB_ENV *env, const char *name,
						      unsigned int interval_secs,
						      const char **error_r);
/* Stop and join the thread (a checkpoint in progress finishes first). */
void mt_bdb_checkpointer_stop(struct mt_bdb_checkpointer **ckp_p);

#endif
