/* store-commit.c — group commit: the pipeline every write (delivery,
 * expunge) goes through; a streamed body's chunk writes and aborts run on
 * the same executors but skip the flusher (store-body.c says why).
 *
 *   callers ──commit_q──► executor thread(s) ──flush_q──► flusher thread
 *                         run the transaction,            one log_flush()
 *                         commit DB_TXN_NOSYNC            for all it took,
 *                                                         then complete them
 *
 * An executor commits without waiting for the disk, so it goes straight on
 * to the next request while the flusher syncs the log. The flusher takes
 * every request that has committed since its last flush — and, while more
 * are still queued or executing, waits up to 5 ms for them to commit too —
 * and makes them all durable with one DB_ENV->log_flush(env, NULL). The
 * more sessions deliver at once, the more transactions share a flush; a
 * lone delivery is flushed at once.
 *
 * Trust boundary: none of its own (requests were checked at submission).
 *
 * Guarantees: a request is completed only after a log flush that began
 * after its transaction committed (a request reaches flush_q only once its
 * commit has returned, and the flusher takes flush_q before it flushes).
 * A transaction that committed cannot be taken back, so a flush that fails
 * for lack of space must still succeed: the store enters no-space mode
 * (writes refused at submission and before their transaction, so nothing
 * more commits), gives back its space reserve and flushes again
 * (store-space.c), and the requests complete as durable. Only if that
 * still fails for FLUSH_NOSPACE_RETRIES × FLUSH_RETRY_MSECS do they
 * complete with MT_STORE_NO_SPACE — then a retried message could be stored
 * twice, but an acknowledged one is never lost.
 *
 * An expunge's transaction only queues its bodies (store-records.c); once
 * a flush has made expunges durable, the flusher wakes the purger
 * (store-purge.c), whose transactions ride on later flushes. */
#include "store-private.h"
#include "alloc.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* After the reserve, a full disk may still clear (an admin): retry the
 * flush for up to FLUSH_NOSPACE_RETRIES × FLUSH_RETRY_MSECS. */
#define FLUSH_NOSPACE_RETRIES 50
#define FLUSH_RETRY_MSECS 200
/* How long a flush may wait for transactions still executing to join it,
 * and the most requests one flush completes. */
#define FLUSH_GATHER_USECS 5000
#define FLUSH_GATHER_MAX 1024

static void *executor_main(void *arg)
{
	struct mt_store *store = arg;
	struct mt_store_req *req;
	while ((req = store_queue_pop(&store->commit_q)) != NULL) {
		if (req->kind == STORE_REQ_CHUNK || req->kind == STORE_REQ_ABORT) {
			/* Completed without a flush (store-body.c). */
			store_body_run(store, req);
			continue;
		}
		if (req->kind == STORE_REQ_DELIVER)
			store_records_deliver(store, req);
		else
			store_records_expunge(store, req);
		/* Not pending any more before it is in flush_q: a flusher that
		 * sees none pending must not wait for this one in vain. */
		atomic_fetch_sub(&store->commit_pending, 1);
		store_queue_push(&store->flush_q, req);
	}
	return NULL;
}

static int flush_log(struct mt_store *store)
{
	for (unsigned int attempt = 1;; attempt++) {
		int ret = store->env->log_flush(store->env, NULL);
		if (ret == 0 || atomic_load(&store->failed))
			return ret;
		if (!store_space_failed(store, ret, "log flush") ||
		    attempt >= FLUSH_NOSPACE_RETRIES) {
			mt_error("store: home=%s log flush failed: %s", store->home,
				 db_strerror(ret));
			return ret;
		}
		if (store_space_flush_reserved(store, &ret) && ret == 0)
			return 0;
		struct timespec ts = { 0, FLUSH_RETRY_MSECS * 1000000L };
		nanosleep(&ts, NULL);
	}
}

/* Counters, or the failed flush's status for what it did not make durable. */
static void request_settle(struct mt_store *store, struct mt_store_req *req,
			   int flush_ret)
{
	if (flush_ret != 0 && req->needs_flush) {
		enum mt_store_status status = store_status_from_db(store, flush_ret);
		if (req->kind == STORE_REQ_DELIVER) {
			for (unsigned int i = 0; i < req->rcpt_count; i++)
				if (req->rcpts[i].status == MT_STORE_OK)
					req->rcpts[i].status = status;
		}
		store_req_set_error(req, status,
			store_error("making the transaction durable failed: %s",
				    db_strerror(flush_ret)));
		return;
	}
	if (req->kind == STORE_REQ_DELIVER) {
		uint64_t delivered = 0;
		for (unsigned int i = 0; i < req->rcpt_count; i++)
			if (req->rcpts[i].status == MT_STORE_OK)
				delivered++;
		store_counter_add(&store->n_delivery_requests, 1);
		store_counter_add(&store->n_deliveries, delivered);
	} else if (req->status == MT_STORE_OK) {
		store_counter_add(&store->n_expunges, 1);
		store_counter_add(&store->n_expunged, req->removed);
	}
}

static void note_batch(struct mt_store *store, unsigned int count)
{
	store_counter_add(&store->n_flushes, 1);
	store_counter_add(&store->n_flushed_requests, count);
	uint_fast64_t max = atomic_load(&store->n_max_batch);
	while (count > max &&
	       !atomic_compare_exchange_weak(&store->n_max_batch, &max, count))
		;
}

/* While more transactions are on their way (queued or executing), wait a
 * little for them to commit so that one flush covers them too: under load
 * a batch grows to what the sessions have in flight, and with a single
 * request pending nothing waits. */
static struct mt_store_req *gather(struct mt_store *store,
				   struct mt_store_req *list, unsigned int *count)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_nsec += FLUSH_GATHER_USECS * 1000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	struct mt_store_req **tail = &list;
	while (*tail != NULL)
		tail = &(*tail)->next;
	while (atomic_load(&store->commit_pending) > 0 && *count < FLUSH_GATHER_MAX) {
		unsigned int n;
		struct mt_store_req *more =
			store_queue_pop_all_until(&store->flush_q, &deadline, &n);
		if (more == NULL)
			break;
		*tail = more;
		while (*tail != NULL)
			tail = &(*tail)->next;
		*count += n;
	}
	return list;
}

static void *flusher_main(void *arg)
{
	struct mt_store *store = arg;
	struct mt_store_req *list;
	unsigned int count;
	while ((list = store_queue_pop_all(&store->flush_q, &count)) != NULL) {
		list = gather(store, list, &count);
		/* Flush even for a batch that wrote nothing: a failure or a
		 * quota answer may rest on a transaction not yet durable. */
		int ret = atomic_load(&store->failed) ? DB_RUNRECOVERY :
			flush_log(store);
		if (ret == 0)
			note_batch(store, count);
		else
			(void)store_status_from_db(store, ret);
		bool expunged = false;
		for (struct mt_store_req *req = list, *next; req != NULL; req = next) {
			next = req->next;
			req->next = NULL;
			request_settle(store, req, ret);
			expunged |= req->kind == STORE_REQ_EXPUNGE && req->removed > 0;
			store_req_complete(req);
		}
		if (expunged)
			store_purge_kick(store);
	}
	return NULL;
}

bool store_commit_start(struct mt_store *store, const char **error_r)
{
	store->executors = mt_xcalloc(store->set.commit_threads,
				      sizeof(*store->executors));
	for (unsigned int i = 0; i < store->set.commit_threads; i++) {
		if (!store_thread_start(&store->executors[i], executor_main, store)) {
			*error_r = store_error("store %s: cannot start a commit thread",
					       store->home);
			return false;
		}
		store->executor_count++;
	}
	if (!store_thread_start(&store->flusher, flusher_main, store)) {
		*error_r = store_error("store %s: cannot start the flush thread",
				       store->home);
		return false;
	}
	store->flusher_started = true;
	return true;
}

void store_commit_stop(struct mt_store *store)
{
	/* Executors finish what is queued, then the flusher what they did. */
	store_queue_stop(&store->commit_q);
	for (unsigned int i = 0; i < store->executor_count; i++)
		pthread_join(store->executors[i], NULL);
	store->executor_count = 0;
	store_queue_stop(&store->flush_q);
	if (store->flusher_started) {
		pthread_join(store->flusher, NULL);
		store->flusher_started = false;
	}
}

void store_commit_submit(struct mt_store *store, struct mt_store_req *req)
{
	/* What the flusher waits for: not a body's chunk writes or abort. */
	if (req->kind == STORE_REQ_DELIVER || req->kind == STORE_REQ_EXPUNGE)
		atomic_fetch_add(&store->commit_pending, 1);
	store_queue_push(&store->commit_q, req);
}
