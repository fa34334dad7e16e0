/* store-commit.c — the store's writes on lib-bdb's group commit
 * (lib-bdb/bdb-commit.h): every delivery and expunge runs on its executor
 * threads (store_commit_threads of them) and completes after the one log
 * flush that made it durable; a streamed body's chunk writes and aborts run
 * on the same executors but complete without a flush (store-body.c says
 * why). The executor knows no request kinds: it runs each request's ops
 * (struct store_req_ops: run, then settle after the flush). What is the
 * store's own here: a failed flush's answer, the wake-up of the purger
 * after flushed expunges, and what a flush that finds the disk full does.
 *
 *   callers ──submit──► executor thread(s): the request's ops->run:   ──►
 *                       its transactions, committed DB_TXN_NOSYNC
 *   flusher: one log_flush() for all it took (waiting up to 5 ms while
 *            more are still executing) ──► ops->settle ──►
 *            store_req_complete(): the port or the waiter
 *
 * The completions run on the pipeline's thread (the requests have their own
 * completion ports, store-async.c), so no event loop is named here.
 *
 * Trust boundary: none of its own (requests were checked at submission).
 *
 * Guarantees: a request is completed only after a log flush that began
 * after its transactions committed (lib-bdb's guarantee). A transaction
 * that committed cannot be taken back, so a flush that fails for lack of
 * space must still succeed: the store enters no-space mode (writes refused
 * at submission and before their transaction, so nothing more commits),
 * gives back its space reserve and flushes again (store-space.c), and the
 * requests complete as durable. Only if that still fails for
 * FLUSH_NOSPACE_RETRIES × MT_BDB_FLUSH_RETRY_MSECS do they complete with
 * MT_STORE_NO_SPACE — then a retried message could be stored twice, but an
 * acknowledged one is never lost.
 *
 * An expunge's transaction only queues its bodies (store-records.c); once
 * a flush has made expunges durable, the purger is woken (store-purge.c),
 * and its transactions ride on later flushes. IMAP's folder and flag
 * changes (store-ops.c) are flushed as deliveries are; a folder's DELETE
 * queues bodies too and wakes the purger the same way. */
#include "store-req.h"
#include "log.h"

#include <errno.h>

/* After the reserve, a full disk may still clear (an admin): retry the
 * flush for up to FLUSH_NOSPACE_RETRIES × MT_BDB_FLUSH_RETRY_MSECS. */
#define FLUSH_NOSPACE_RETRIES 50
/* How long a flush may wait for transactions still executing to join it. */
#define FLUSH_GATHER_USECS 5000

/* On an executor: the request's run. Its outcome is the request's (per
 * recipient, in req); the job itself never fails, so that it is flushed
 * whatever happened: a failure or a quota answer may rest on a transaction
 * not yet durable. */
static int request_run(DB_ENV *env, DB_TXN *txn, void *context)
{
	(void)env;
	(void)txn;
	struct mt_store_req *req = context;
	req->ops->run(req->store, req);
	return 0;
}

/* On the flusher, or (unflushed requests) on the executor: the flush's
 * failure for what it did not make durable, the request's settle, its
 * completion, and the purger's wake-up after durable expunges. */
static void request_done(int status, void *context)
{
	struct mt_store_req *req = context;
	struct mt_store *store = req->store;
	if (req->ops->unflushed) {
		store_req_complete(req);
		return;
	}
	bool durable;
	if (status == MT_BDB_NOT_REPLICATED) {
		/* On this disk, not on a replica's (store-repl.c): no positive
		 * answer, whether the request wrote or not — a "nothing to do"
		 * may rest on a commit the next master rolls back. */
		store_req_set_error(req, MT_STORE_TEMPFAIL,
			"not replicated: the shard's replicas did not acknowledge it");
		durable = false;
	} else {
		if (status != 0)
			(void)store_status_from_db(store, status);
		int flush_ret = req->needs_flush ? status : 0;
		if (flush_ret != 0)
			store_req_set_error(req, store_status_from_db(store, flush_ret),
				store_error("making the transaction durable failed: %s",
					    db_strerror(flush_ret)));
		durable = flush_ret == 0;
	}
	if (req->ops->settle != NULL)
		req->ops->settle(store, req, durable);
	bool expunged = req->removed > 0 && status == 0;
	store_req_complete(req);
	if (expunged)
		store_purge_kick(store);
}

/* The flusher's log_flush() failed: on a full disk, no-space mode and the
 * reserve (store-space.c); after a panic, nothing to retry. */
static int flush_failed(void *context, int ret, unsigned int attempt)
{
	struct mt_store *store = context;
	if (atomic_load(&store->failed))
		return ret;
	if (!store_space_failed(store, ret, "log flush") ||
	    attempt >= FLUSH_NOSPACE_RETRIES) {
		mt_error("store: home=%s log flush failed: %s", store->home,
			 db_strerror(ret));
		return ret;
	}
	if (store_space_flush_reserved(store, &ret) && ret == 0)
		return 0;
	return EAGAIN;
}

bool store_commit_start(struct mt_store *store, const char **error_r)
{
	const struct mt_bdb_commit_settings set = {
		.name = "store",
		.executors = store->set.commit_threads,
		.gather_usecs = FLUSH_GATHER_USECS,
		.flush_failed = flush_failed,
		.replicate = store->ack != NULL ? store_repl_replicate : NULL,
		.context = store,
	};
	const char *error;
	struct mt_bdb_commit *commit = mt_bdb_commit_start(store->env, &set, &error);
	if (commit == NULL) {
		*error_r = store_error("store %s: %s", store->home, error);
		return false;
	}
	/* A replicated site starts it when elected, on the notifier thread,
	 * while the daemon's loop may already read it (metrics). */
	pthread_mutex_lock(&store->repl_lock);
	store->commit = commit;
	if (store->commit_latency != NULL)
		mt_bdb_commit_observe_latency(commit, store->commit_latency);
	pthread_mutex_unlock(&store->repl_lock);
	return true;
}

void store_commit_stop(struct mt_store *store)
{
	/* Executors finish what is queued, then the flusher what they did;
	 * the counters stay for mt_store_counters_get() after the close. */
	if (store->commit == NULL)
		return;
	mt_bdb_commit_finish(store->commit);
	mt_bdb_commit_get_stats(store->commit, &store->commit_final);
	mt_bdb_commit_stop(&store->commit);
}

void store_commit_submit(struct mt_store *store, struct mt_store_req *req)
{
	unsigned int flags = MT_BDB_JOB_OWN_TXN;
	if (req->ops->unflushed)
		flags |= MT_BDB_JOB_UNFLUSHED;
	mt_bdb_commit_submit(store->commit, NULL, flags, request_run, request_done, req);
}

unsigned int store_commit_executing(struct mt_store *store)
{
	return store->commit != NULL ? mt_bdb_commit_executing(store->commit) : 0;
}

void mt_store_observe_commit_latency(struct mt_store *store, struct mt_series *histogram)
{
	pthread_mutex_lock(&store->repl_lock);
	store->commit_latency = histogram;
	if (store->commit != NULL)
		mt_bdb_commit_observe_latency(store->commit, histogram);
	pthread_mutex_unlock(&store->repl_lock);
}

void store_commit_counters(struct mt_store *store, struct mt_store_counters *c)
{
	pthread_mutex_lock(&store->repl_lock);
	struct mt_bdb_commit_stats st = store->commit_final;
	if (store->commit != NULL)
		mt_bdb_commit_get_stats(store->commit, &st);
	pthread_mutex_unlock(&store->repl_lock);
	c->flushes = st.flushes;
	c->flushed_requests = st.jobs;
	c->max_batch = st.max_batch;
}
