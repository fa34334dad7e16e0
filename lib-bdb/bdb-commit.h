/* bdb-commit.h — group commit for a transactional Berkeley DB environment,
 * the one durability pipeline under the MTA's queue and the message store:
 * jobs run as transactions on executor threads and commit without a sync
 * (DB_TXN_NOSYNC); a flusher thread makes every job committed since its last
 * flush durable with one DB_ENV->log_flush(), then hands each job's
 * completion back to the event loop that submitted it (mt_loop_post).
 *
 *   loop ──submit──► executor(s): txn_begin, fn(), commit NOSYNC ──► flusher:
 *                    one log_flush() for the whole batch ──► post done() to
 *                    each job's loop (one wake-up per loop per batch)
 *
 * The more callers write at once, the more transactions share one flush: that
 * is where throughput comes from, never from completing a job before its
 * transaction is on stable storage (README.md, "Architecture": an
 * acknowledgement means durable).
 *
 * Batching policies, each a caller's choice: lazy jobs wait briefly for a
 * flush someone else asks for (MT_BDB_JOB_LAZY); a caller that knows others
 * are about to commit lets the flush wait for them (MT_BDB_JOB_COMPANY and
 * the commit delay); a flush may wait while jobs are still executing
 * (gather_usecs); several executors run transactions at once. A flush that
 * fails for lack of space is retried, or handed to the caller's hook (the
 * store gives back its space reserve).
 *
 * Generic: it knows nothing of mail. Trust boundary: none (jobs come from
 * the daemon's own code).
 *
 * Guarantees: done() for a write job runs only after a log flush that began
 * after the job's commit returned. A job whose fn fails is aborted (nothing
 * of it is written) and completes with fn's error; a deadlock
 * (DB_LOCK_DEADLOCK/DB_LOCK_NOTGRANTED) aborts and re-runs fn, so fn must be
 * re-runnable. Read jobs (MT_BDB_JOB_READ) run without a transaction of their
 * own and complete without waiting for a flush.
 *
 * Threading: submit from any thread; fn runs on an executor thread; done
 * runs on the loop's thread, or, for a job submitted without a loop, on the
 * pipeline's own thread (it must then be quick and thread-safe: a blocking
 * wait's wake-up, a library's own completion queue). The threads take no
 * signal (lib/thread.h). */
#ifndef MT_BDB_COMMIT_H
#define MT_BDB_COMMIT_H

#include <stdbool.h>
#include <stdint.h>

#include <db.h>

struct mt_loop;
struct mt_bdb_commit;
struct mt_metrics;
struct mt_series;

/* On the executor thread: do the job inside txn (NULL for a read job).
 * Returns 0, or a Berkeley DB error / errno that aborts the transaction. */
typedef int mt_bdb_job_fn(DB_ENV *env, DB_TXN *txn, void *context);
/* On the submitting loop: the job is durable (status 0) or failed. */
typedef void mt_bdb_done_fn(int status, void *context);

/* Flags for mt_bdb_commit_submit(). */
#define MT_BDB_JOB_READ 0x1u	/* no transaction, no flush */
/* Durable like any write, but in no hurry: it waits (up to
 * MT_BDB_LAZY_MSECS) to share the flush of a job someone is waiting for,
 * instead of asking for a flush of its own. For writes whose completion
 * nobody answers a client on (delivery bookkeeping). The wait is also the
 * window in which a kill -9 loses the bookkeeping (the MTA then delivers a
 * message again after its restart: at least once, never lost), so it is
 * short; under load a waited-for flush comes sooner anyway. */
#define MT_BDB_JOB_LAZY 0x2u
#define MT_BDB_LAZY_MSECS 10u
/* Others are about to commit too (the caller knows: e.g. other sessions
 * are receiving a message): the flush may wait up to the commit delay
 * (mt_bdb_commit_set_delay) to make them durable together — PostgreSQL's
 * commit_delay/commit_siblings. A job without the flag arriving meanwhile
 * ends the wait. */
#define MT_BDB_JOB_COMPANY 0x4u
/* Committed, not yet durable: done() runs as soon as the transaction has
 * committed, without waiting for a flush. For a part of something that a
 * later job of the same caller completes (a message body written in pieces
 * as it arrives, then its envelope): the log is one sequence and a flush
 * writes everything before the flushed commit, so the later job's done()
 * means this one is durable too. Never for a write someone is answered on
 * by itself. */
#define MT_BDB_JOB_UNFLUSHED 0x8u
/* fn runs transactions of its own (txn is NULL), each committed with
 * DB_TXN_NOSYNC, and reports their outcome in its context (e.g. one
 * transaction per recipient of a delivery); the job is then flushed like
 * any write, and done() gets the flush's status. Retrying deadlocks is fn's
 * business. May be combined with MT_BDB_JOB_UNFLUSHED. */
#define MT_BDB_JOB_OWN_TXN 0x10u

/* What a pipeline is started with; zeroed fields take the defaults. */
struct mt_bdb_commit_settings {
	const char *name;	/* log prefix ("queue", "store"); "bdb-commit" */
	unsigned int executors;	/* threads running transactions; 1 */
	/* While write jobs are still queued or executing, a flush waits up
	 * to this long for them to commit too, so that under load a batch
	 * grows to what the callers have in flight; 0 never waits. */
	unsigned int gather_usecs;
	unsigned int gather_max;	/* jobs a flush waits for at most; 1024 */
	/* A log flush returned ret (attempt counts from 1). Return 0 if the
	 * hook has made the log durable itself (given back a space reserve
	 * and flushed), EAGAIN to flush again after MT_BDB_FLUSH_RETRY_MSECS,
	 * or an error to complete the batch's jobs with. NULL: ENOSPC and
	 * EDQUOT are retried MT_BDB_FLUSH_RETRIES times, anything else is
	 * final. Runs on the flusher thread. */
	int (*flush_failed)(void *context, int ret, unsigned int attempt);
	/* A replicated environment (bdb-repl-ack.h): after the batch's log
	 * flush, wait until the replicas have the log through end (its end
	 * before the flush); non-zero: the batch's jobs that succeeded
	 * complete with MT_BDB_NOT_REPLICATED instead. On the flusher thread,
	 * no lock held. NULL: none. */
	int (*replicate)(void *context, const DB_LSN *end);
	void *context;
};
/* A job's status when its batch was flushed here but not acknowledged by
 * the replicas (replicate failed): committed locally, maybe rolled back
 * by the next master — a temporary failure for whoever waits on it. */
#define MT_BDB_NOT_REPLICATED DB_REP_UNAVAIL
#define MT_BDB_FLUSH_RETRIES 10
#define MT_BDB_FLUSH_RETRY_MSECS 200

struct mt_bdb_commit_stats {
	uint64_t jobs;		/* write jobs completed (flushed) */
	uint64_t unflushed;	/* MT_BDB_JOB_UNFLUSHED jobs completed */
	uint64_t reads;		/* read jobs completed */
	uint64_t flushes;	/* log flushes */
	uint64_t lazy_flushes;	/* flushes that only lazy jobs asked for */
	uint64_t company_waits;	/* flushes that waited for company */
	uint64_t max_batch;	/* most jobs one flush made durable */
	uint64_t retries;	/* transactions re-run after a deadlock */
	uint64_t failures;	/* jobs completed with an error */
	uint64_t exec_usecs;	/* time the executor spent running jobs */
	uint64_t flush_usecs;	/* time the flusher spent in log_flush() */
};

/* Start the executor and flusher threads on an open environment (opened
 * with DB_THREAD and DB_INIT_TXN); set may be NULL (every default). NULL
 * and a static error on failure. */
struct mt_bdb_commit *mt_bdb_commit_start(DB_ENV *env,
					  const struct mt_bdb_commit_settings *set,
					  const char **error_r);
/* Observe each write job's latency, from its submission until the flush
 * that made it durable, in seconds into histogram (lib/metrics.h); NULL
 * stops. Jobs submitted before the call are not observed. Any thread. */
void mt_bdb_commit_observe_latency(struct mt_bdb_commit *commit,
				   struct mt_series *histogram);
/* A histogram (no labels) with bounds for commit latencies (0.5 ms to
 * 10 s), registered as name in m: what the daemons pass above. */
struct mt_series *mt_bdb_commit_latency_histogram(struct mt_metrics *m, const char *name,
						  const char *help);
/* How long a flush may wait for company (see MT_BDB_JOB_COMPANY); 0 (the
 * default) never waits. Any thread. */
void mt_bdb_commit_set_delay(struct mt_bdb_commit *commit, unsigned int usecs);
/* Queue a job; loop NULL: done runs on the pipeline's thread (see
 * Threading). Never fails; after mt_bdb_commit_stop() it panics. */
void mt_bdb_commit_submit(struct mt_bdb_commit *commit, struct mt_loop *loop,
			  unsigned int flags, mt_bdb_job_fn *fn,
			  mt_bdb_done_fn *done, void *context);
/* Jobs queued or in flight now (for the drain). Any thread. */
unsigned int mt_bdb_commit_pending(struct mt_bdb_commit *commit);
/* Write jobs queued or executing, not yet committed (those a flush could
 * still wait for). Any thread. */
unsigned int mt_bdb_commit_executing(struct mt_bdb_commit *commit);
void mt_bdb_commit_get_stats(struct mt_bdb_commit *commit,
			     struct mt_bdb_commit_stats *stats_r);
/* Finish every queued job (their completions are posted to their loops:
 * run those loops once more, see mt_loop_run(), to deliver them) and stop
 * the threads; the stats stay readable. Idempotent. */
void mt_bdb_commit_finish(struct mt_bdb_commit *commit);
/* Finish (as above) and free. The environment stays open. */
void mt_bdb_commit_stop(struct mt_bdb_commit **commit_p);

#endif
