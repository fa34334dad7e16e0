/* bdb-checkpoint.h — the checkpoint thread of a transactional Berkeley DB
 * environment (the MTA's queue and each message store run one), written
 * so that a checkpoint never holds up commits for long (a 30-second
 * checkpoint of a busy MTA queue stalled DATA replies for up to ~385 ms: it
 * wrote every page dirtied since the last one, and commits waited behind
 * those writes and their fsyncs).
 *
 * Every second the thread trickles the cache (DB_ENV->memp_trickle: dirty
 * pages written, without fsync, until MT_BDB_TRICKLE_PCT % of the cache
 * is clean, so neither a checkpoint nor a transaction that needs a free
 * buffer has much left to write), checkpoints when log_kbytes of log were
 * written since the last one, and checkpoints every interval_secs
 * regardless; the checkpoint also lets old log files go (with
 * DB_LOG_AUTO_REMOVE set on the environment). The caller's tick hook runs
 * first each second and may skip that second's work (the store, on a full
 * disk, probes for space instead). The thread takes no signal
 * (lib/thread.h).
 *
 * Trust boundary: none (our own environment). Durability is not its
 * business: commits are durable by their log flush (bdb-commit.h); a
 * checkpoint only bounds recovery time and log disk use. */
#ifndef MT_BDB_CHECKPOINT_H
#define MT_BDB_CHECKPOINT_H

#include <stdbool.h>

#include <db.h>

#define MT_BDB_TRICKLE_PCT 20
#define MT_BDB_CHECKPOINT_KBYTES 8192
/* A checkpoint that took this long is logged at info (else debug). */
#define MT_BDB_CHECKPOINT_SLOW_MS 100.0
#define MT_BDB_CHECKPOINT_SECS 60

/* Zeroed fields take the defaults. */
struct mt_bdb_checkpoint_settings {
	const char *name;		/* log prefix ("queue"); "bdb-checkpoint" */
	unsigned int interval_secs;	/* MT_BDB_CHECKPOINT_SECS */
	unsigned int log_kbytes;	/* MT_BDB_CHECKPOINT_KBYTES */
	/* Each second, on the thread, before the trickle and checkpoint;
	 * false skips them this second. NULL: always true. */
	bool (*tick)(void *context);
	/* After each checkpoint call: its status, and whether it wrote a
	 * checkpoint (a call under the log threshold writes none). Return
	 * true if a failure is handled (no error line from here). NULL: every
	 * failure is logged. */
	bool (*checkpointed)(void *context, int ret, bool written);
	void *context;
};

struct mt_bdb_checkpointer;

/* Start the thread for env (set may be NULL). NULL and *error_r (static)
 * if the thread cannot be started. */
struct mt_bdb_checkpointer *
mt_bdb_checkpointer_start(DB_ENV *env, const struct mt_bdb_checkpoint_settings *set,
			  const char **error_r);
/* One checkpoint now, from any thread: unconditional with log_kbytes 0,
 * else only if that much log was written since the last. 0 or the Berkeley
 * DB error; *written_r: whether a checkpoint was written. */
int mt_bdb_checkpoint(DB_ENV *env, unsigned int log_kbytes, bool *written_r);
/* Observe each written checkpoint's duration (seconds) into histogram
 * (NULL: stop). Any thread. */
struct mt_series;
struct mt_metrics;
void mt_bdb_checkpointer_observe(struct mt_bdb_checkpointer *ckp, struct mt_series *histogram);
/* A histogram for that, from 1 ms to 30 s, registered as name in m. */
struct mt_series *mt_bdb_checkpoint_duration_histogram(struct mt_metrics *m, const char *name,
							const char *help);
/* Checkpoints the thread has written. Any thread. */
unsigned long mt_bdb_checkpointer_count(struct mt_bdb_checkpointer *ckp);
/* Stop and join the thread (a checkpoint in progress finishes first). */
void mt_bdb_checkpointer_stop(struct mt_bdb_checkpointer **ckp_p);

#endif
