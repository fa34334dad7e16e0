/* store-purge.c — the purger: deletes the bodies of expunged messages in
 * the background, so that the expunge a POP3 QUIT waits for logs only
 * small records (the lazy expunge of store-records.c); and so the shared
 * bodies their last message left, the bodies aborted mid-delivery and
 * those a crash left half-written (queued by store-body.c and
 * store-chunks.c). An abort that cannot run when the body is dropped (a
 * full disk: no write then) waits in a list that each round takes first;
 * one still waiting at close leaves its partial.db record for the next
 * open's sweep.
 *
 *   flusher ──kick──► purger thread: wait purge_delay_msecs for more
 *                     expunges, then batches of PURGE_BATCH entries (at most
 *                     PURGE_BATCH_BYTES: a larger body is deleted from its
 *                     end in several), each one NOSYNC transaction that
 *                     deletes the body chunks and their purge.db records,
 *                     until purge.db is empty
 *
 * The purge transactions are not flushed by the purger: the next group
 * commit flush, checkpoint or full log buffer makes them durable, and a
 * crash before that leaves their purge.db records in place, so the next
 * open's purger (it starts with a round) deletes them again. Deleting a
 * body twice is harmless (missing chunks are skipped), a body is never
 * deleted before its message record (the expunge queues it in the
 * transaction that removes the record), and nothing is lost: a purge that
 * fails — a full disk (store-space.c: no writes are tried in no-space
 * mode), a deadlock lost too often — is retried every PURGE_RETRY_MSECS.
 *
 * The backlog (expunged messages waiting) is counted once at open and then
 * kept up to date by the expunges' and purges' commits, so the metrics
 * read it without a scan (store->purge_backlog).
 *
 * The purger runs on its own thread, never on an event loop; it holds
 * io_lock shared like a reader (its page writes must not take the space
 * reserve that a full-disk log flush is given).
 *
 * Trust boundary: none of its own (purge.db is written by the expunge).
 *
 * Guarantees: after an expunge's +OK, its messages are in no listing and no
 * read even before their bodies go; each queued body is deleted exactly
 * once in effect, eventually, also across crashes and full disks. */
#include "store-records.h"
#include "alloc.h"
#include "log.h"
#include "thread.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#define DEFAULT_PURGE_DELAY_MSECS 50u
/* Queue entries and body bytes per purge transaction. Small: a
 * transaction holds its body.db page locks (leaf pages that RETRs of other
 * messages read, the free list deliveries allocate from) until it commits.
 * An expunged message is two entries (its own chunks, its body), so 8 are
 * about 4 messages. */
#define PURGE_BATCH 8u
#define PURGE_BATCH_BYTES (256u << 10)
#define PURGE_RETRY_MSECS 1000u

void store_purge_init(struct mt_store *store)
{
	pthread_mutex_init(&store->purge_lock, NULL);
	pthread_cond_init(&store->purge_cond, NULL);
	if (store->set.purge_delay_msecs == 0)
		store->set.purge_delay_msecs = DEFAULT_PURGE_DELAY_MSECS;
}

void store_purge_deinit(struct mt_store *store)
{
	/* Aborts not retried: their partial.db records stay for the sweep. */
	while (store->drops != NULL) {
		struct store_drop *d = store->drops;
		store->drops = d->next;
		free(d);
	}
	pthread_mutex_destroy(&store->purge_lock);
	pthread_cond_destroy(&store->purge_cond);
}

static void deadline_in(struct timespec *ts, unsigned int msecs)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += msecs / 1000;
	ts->tv_nsec += (long)(msecs % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static bool purge_stopping(struct mt_store *store)
{
	pthread_mutex_lock(&store->purge_lock);
	bool stop = store->purge_stop;
	pthread_mutex_unlock(&store->purge_lock);
	return stop;
}

/* One batch; 0 with *done_r 0 once purge.db is empty; *messages_r the
 * expunged messages it finished. */
static int purge_batch(struct mt_store *store, unsigned int *done_r,
		       unsigned int *messages_r)
{
	uint64_t bytes;
	pthread_rwlock_rdlock(&store->io_lock);
	int ret = store_records_purge(store, PURGE_BATCH, PURGE_BATCH_BYTES,
				      DB_TXN_NOSYNC, done_r, messages_r, &bytes);
	pthread_rwlock_unlock(&store->io_lock);
	if (ret == 0 && *done_r > 0) {
		store_counter_add(&store->n_purged, *messages_r);
		store_counter_add(&store->n_purge_txns, 1);
		atomic_fetch_sub_explicit(&store->purge_backlog, (int_fast64_t)*messages_r,
					  memory_order_relaxed);
	}
	if (ret != 0 && !store_space_failed(store, ret, "purge")) {
		(void)store_status_from_db(store, ret);
		if (!atomic_load(&store->failed))
			mt_error("store: home=%s purge failed (retried): %s",
				 store->home, store_strerror(ret));
	}
	return ret;
}

void store_purge_drop_retry(struct mt_store *store, uint64_t body_id,
			    uint32_t chunks)
{
	struct store_drop *d = mt_xcalloc(1, sizeof(*d));
	d->body_id = body_id;
	d->chunks = chunks;
	pthread_mutex_lock(&store->purge_lock);
	d->next = store->drops;
	store->drops = d;
	pthread_mutex_unlock(&store->purge_lock);
	store_purge_kick(store);
}

/* The aborts that could not run before: queue their bodies now (0), or
 * keep them for the next round (the error). */
static int purge_drops(struct mt_store *store)
{
	pthread_mutex_lock(&store->purge_lock);
	struct store_drop *list = store->drops;
	store->drops = NULL;
	pthread_mutex_unlock(&store->purge_lock);
	int ret = 0;
	while (list != NULL) {
		struct store_drop *d = list;
		if (ret == 0) {
			pthread_rwlock_rdlock(&store->io_lock);
			ret = store_chunks_abort(store, d->body_id, d->chunks);
			pthread_rwlock_unlock(&store->io_lock);
			(void)store_space_failed(store, ret, "abort");
		}
		if (ret != 0)
			break;
		store_counter_add(&store->n_aborted, 1);
		list = d->next;
		free(d);
	}
	if (list != NULL) {
		struct store_drop **tail = &list;
		pthread_mutex_lock(&store->purge_lock);
		while (*tail != NULL)
			tail = &(*tail)->next;
		*tail = store->drops;
		store->drops = list;
		pthread_mutex_unlock(&store->purge_lock);
	}
	return ret;
}

/* Batches until purge.db is empty (0), or the store stops (0) or a batch
 * fails (its error: the round is retried later). Aborts that waited go
 * first. */
static int purge_round(struct mt_store *store, uint64_t *purged_r)
{
	for (;;) {
		if (purge_stopping(store))
			return 0;
		if (atomic_load(&store->failed))
			return DB_RUNRECOVERY;
		if (!store_space_writable(store))
			return ENOSPC;
		int ret = purge_drops(store);
		if (ret != 0)
			return ret;
		unsigned int done, messages;
		ret = purge_batch(store, &done, &messages);
		if (ret != 0 || done == 0)
			return ret;
		*purged_r += messages;
		sched_yield();	/* between transactions: let writers in */
	}
}

void store_purge_backlog_add(struct mt_store *store, unsigned int n)
{
	atomic_fetch_add_explicit(&store->purge_backlog, (int_fast64_t)n,
				  memory_order_relaxed);
}

static void *purger_main(void *arg)
{
	struct mt_store *store = arg;
	uint64_t backlog_msgs = store->purge_open_messages, purged = 0;
	/* What a crash (or a close) left: announced, purged at once. */
	if (backlog_msgs > 0)
		mt_info("store: home=%s purge backlog at open: messages=%llu "
			"bytes=%llu: purging", store->home,
			(unsigned long long)backlog_msgs,
			(unsigned long long)store->purge_open_bytes);
	bool due = true, retry = false, announce = backlog_msgs > 0;
	pthread_mutex_lock(&store->purge_lock);
	while (!store->purge_stop) {
		if (!due && !store->purge_kicked) {
			if (!retry) {
				pthread_cond_wait(&store->purge_cond, &store->purge_lock);
				continue;
			}
			struct timespec ts;
			deadline_in(&ts, PURGE_RETRY_MSECS);
			int rc = 0;
			while (!store->purge_stop && !store->purge_kicked &&
			       rc != ETIMEDOUT)
				rc = pthread_cond_timedwait(&store->purge_cond,
							    &store->purge_lock, &ts);
			due = rc == ETIMEDOUT;
			continue;
		}
		/* Let the expunges of a few sessions gather (and, at open,
		 * recovery's aftermath settle): a round then purges them all. */
		struct timespec ts;
		deadline_in(&ts, store->set.purge_delay_msecs);
		int rc = 0;
		while (!store->purge_stop && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&store->purge_cond,
						    &store->purge_lock, &ts);
		if (store->purge_stop)
			break;
		store->purge_kicked = false;
		due = false;
		pthread_mutex_unlock(&store->purge_lock);
		int ret = purge_round(store, &purged);
		retry = ret != 0 && ret != DB_RUNRECOVERY;
		if (ret == 0 && announce && !purge_stopping(store)) {
			announce = false;
			mt_info("store: home=%s purge backlog done: purged=%llu",
				store->home, (unsigned long long)purged);
		}
		pthread_mutex_lock(&store->purge_lock);
	}
	pthread_mutex_unlock(&store->purge_lock);
	return NULL;
}

void store_purge_count(struct mt_store *store)
{
	uint64_t messages = 0, bytes = 0;
	int ret = store_records_purge_totals(store, &messages, &bytes);
	if (ret != 0)
		mt_warning("store: home=%s cannot count the purge backlog: %s "
			   "(counted from 0)", store->home, store_strerror(ret));
	store->purge_open_messages = messages;
	store->purge_open_bytes = bytes;
	atomic_store(&store->purge_backlog, (int_fast64_t)messages);
}

bool store_purge_start(struct mt_store *store, const char **error_r)
{
	if (mt_thread_start(&store->purger, purger_main, store) != 0) {
		*error_r = store_error("store %s: cannot start the purge thread",
				       store->home);
		return false;
	}
	store->purger_started = true;
	return true;
}

void store_purge_stop(struct mt_store *store)
{
	if (!store->purger_started)
		return;
	pthread_mutex_lock(&store->purge_lock);
	store->purge_stop = true;
	pthread_cond_signal(&store->purge_cond);
	pthread_mutex_unlock(&store->purge_lock);
	pthread_join(store->purger, NULL);
	store->purger_started = false;
}

void store_purge_kick(struct mt_store *store)
{
	pthread_mutex_lock(&store->purge_lock);
	if (!store->purge_kicked) {
		store->purge_kicked = true;
		pthread_cond_signal(&store->purge_cond);
	}
	pthread_mutex_unlock(&store->purge_lock);
}

enum mt_store_status mt_store_purge_sync(struct mt_store *store,
					 unsigned int *purged_r,
					 const char **error_r)
{
	*purged_r = 0;
	if (store->set.mode != MT_STORE_MODE_SERVE) {
		*error_r = store_error("store opened for administration only");
		return MT_STORE_INVALID;
	}
	if (atomic_load(&store->failed)) {
		*error_r = store_error("store failed: restart needed for recovery");
		return MT_STORE_FATAL;
	}
	if (!store_space_writable(store)) {
		*error_r = store_error("disk full: no writes until space returns");
		return MT_STORE_NO_SPACE;
	}
	int ret = purge_drops(store);
	unsigned int done, messages;
	while (ret == 0 && (ret = purge_batch(store, &done, &messages)) == 0 &&
	       done > 0)
		*purged_r += messages;
	if (ret == 0)
		ret = store->env->log_flush(store->env, NULL);
	if (ret == 0)
		return MT_STORE_OK;
	enum mt_store_status status = store_status_from_db(store, ret);
	if (status == MT_STORE_TEMPFAIL && store_space_full(store))
		status = MT_STORE_NO_SPACE;
	*error_r = store_error("purge failed: %s", store_strerror(ret));
	return status;
}
