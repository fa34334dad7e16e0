/* bdb-commit.c — group commit for a Berkeley DB environment (see
 * bdb-commit.h): executor threads run each job's transaction and commit it
 * with DB_TXN_NOSYNC; one flusher thread takes everything committed since
 * its last flush, makes it durable with a single log_flush() and posts the
 * completions to the submitting loops, one post per loop per batch.
 *
 * Trust boundary: none (jobs come from the daemon's own code).
 * Guarantee: a write job's completion is posted only after a log flush that
 * started after its commit returned (a job reaches the flush queue only once
 * its commit has returned, and the flusher takes the queue before it
 * flushes). */
#include "bdb-commit.h"
#include "clock.h"
#include "alloc.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* Attempts of a transaction that keeps losing deadlocks. */
#define TXN_ATTEMPTS 100
#define DEFAULT_GATHER_MAX 1024u

struct bdb_job {
	struct bdb_job *next;
	struct mt_loop *loop;
	unsigned int flags;
	mt_bdb_job_fn *fn;
	mt_bdb_done_fn *done;
	void *context;
	int status;
	uint64_t submitted_us;	/* for the latency histogram */
};

struct job_queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct bdb_job *head, **tail;
	unsigned int length;
	bool stopping;
};

struct mt_bdb_commit {
	DB_ENV *env;
	struct mt_bdb_commit_settings set;
	struct job_queue commit_q, flush_q;
	pthread_t *executors, flusher;
	unsigned int executors_started;
	bool flusher_started;
	bool stopped;
	atomic_uint pending;
	atomic_uint executing;	/* write jobs not yet committed */
	atomic_uint_fast64_t jobs, unflushed, reads, flushes, lazy_flushes, max_batch, retries,
		failures, exec_usecs, flush_usecs, company_waits;
	atomic_uint delay_usecs;
	_Atomic(struct mt_series *) latency;	/* NULL: not observed */
};

static void queue_init(struct job_queue *q)
{
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	q->head = NULL;
	q->tail = &q->head;
	q->length = 0;
	q->stopping = false;
}

static void queue_destroy(struct job_queue *q)
{
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
}

static void queue_push(struct job_queue *q, struct bdb_job *job)
{
	job->next = NULL;
	pthread_mutex_lock(&q->lock);
	*q->tail = job;
	q->tail = &job->next;
	q->length++;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

/* Wait for a job and take it. NULL once stopping and empty. */
static struct bdb_job *queue_take_one(struct job_queue *q)
{
	pthread_mutex_lock(&q->lock);
	while (q->head == NULL && !q->stopping)
		pthread_cond_wait(&q->cond, &q->lock);
	struct bdb_job *job = q->head;
	if (job != NULL) {
		q->head = job->next;
		if (q->head == NULL)
			q->tail = &q->head;
		q->length--;
		job->next = NULL;
	}
	pthread_mutex_unlock(&q->lock);
	return job;
}

/* Wait for jobs and take all of them (count in *count_r); when `waiting`
 * is set, give up at deadline (CLOCK_REALTIME) and return NULL with
 * *count_r 0 (or at stop). */
static struct bdb_job *queue_take_until(struct job_queue *q, bool waiting,
					const struct timespec *deadline,
					unsigned int *count_r, bool *stopping_r)
{
	pthread_mutex_lock(&q->lock);
	int rc = 0;
	while (q->head == NULL && !q->stopping && rc != ETIMEDOUT) {
		if (waiting)
			rc = pthread_cond_timedwait(&q->cond, &q->lock, deadline);
		else
			pthread_cond_wait(&q->cond, &q->lock);
	}
	struct bdb_job *list = q->head;
	*count_r = q->length;
	*stopping_r = q->stopping;
	q->head = NULL;
	q->tail = &q->head;
	q->length = 0;
	pthread_mutex_unlock(&q->lock);
	return list;
}

static void queue_stop(struct job_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

static void counter_max(atomic_uint_fast64_t *counter, uint64_t value)
{
	uint_fast64_t old = atomic_load(counter);
	while (value > old && !atomic_compare_exchange_weak(counter, &old, value))
		;
}

/* Completions on the loop's thread: a list of jobs of one batch. */
static void run_completions(void *context)
{
	struct bdb_job *job = context, *next;
	for (; job != NULL; job = next) {
		next = job->next;
		job->done(job->status, job->context);
		free(job);
	}
}

/* Post a list's jobs grouped by loop: one wake-up per loop. Jobs without
 * a loop complete here, on this thread. */
static void post_completions(struct mt_bdb_commit *c, struct bdb_job *list)
{
	while (list != NULL) {
		struct mt_loop *loop = list->loop;
		struct bdb_job *mine = NULL, **mine_tail = &mine;
		struct bdb_job *rest = NULL, **rest_tail = &rest;
		unsigned int n = 0;
		for (struct bdb_job *job = list, *next; job != NULL; job = next) {
			next = job->next;
			job->next = NULL;
			if (job->loop == loop) {
				*mine_tail = job;
				mine_tail = &job->next;
				n++;
			} else {
				*rest_tail = job;
				rest_tail = &job->next;
			}
		}
		atomic_fetch_sub(&c->pending, n);
		if (loop == NULL)
			run_completions(mine);
		else
			mt_loop_post(loop, run_completions, mine);
		list = rest;
	}
}

static int run_transaction(struct mt_bdb_commit *c, struct bdb_job *job)
{
	if ((job->flags & MT_BDB_JOB_OWN_TXN) != 0)
		return job->fn(c->env, NULL, job->context);
	int ret = 0;
	for (unsigned int attempt = 1; attempt <= TXN_ATTEMPTS; attempt++) {
		DB_TXN *txn;
		ret = c->env->txn_begin(c->env, NULL, &txn, 0);
		if (ret != 0)
			return ret;
		ret = job->fn(c->env, txn, job->context);
		if (ret == 0)
			return txn->commit(txn, DB_TXN_NOSYNC);
		(void)txn->abort(txn);
		if (ret != DB_LOCK_DEADLOCK && ret != DB_LOCK_NOTGRANTED)
			return ret;
		atomic_fetch_add(&c->retries, 1);
	}
	return ret;
}

/* A write job that a flush may wait for (see gather()). */
static bool awaits_flush(unsigned int flags)
{
	return (flags & (MT_BDB_JOB_READ | MT_BDB_JOB_UNFLUSHED)) == 0;
}

static void *executor_main(void *arg)
{
	struct mt_bdb_commit *c = arg;
	struct bdb_job *job;
	while ((job = queue_take_one(&c->commit_q)) != NULL) {
		uint64_t start = mt_clock_us();
		if ((job->flags & MT_BDB_JOB_READ) != 0) {
			job->status = job->fn(c->env, NULL, job->context);
			atomic_fetch_add(&c->reads, 1);
			post_completions(c, job);
		} else if ((job->flags & MT_BDB_JOB_UNFLUSHED) != 0) {
			job->status = run_transaction(c, job);
			atomic_fetch_add(job->status == 0 ? &c->unflushed :
					 &c->failures, 1);
			post_completions(c, job);
		} else {
			job->status = run_transaction(c, job);
			/* Committed before it is in the flush queue: a flusher
			 * that sees none executing must not wait for it. */
			atomic_fetch_sub(&c->executing, 1);
			queue_push(&c->flush_q, job);
		}
		atomic_fetch_add(&c->exec_usecs, mt_clock_us() - start);
	}
	return NULL;
}

static int default_flush_failed(void *context, int ret, unsigned int attempt)
{
	(void)context;
	if ((ret == ENOSPC || ret == EDQUOT) && attempt < MT_BDB_FLUSH_RETRIES)
		return EAGAIN;	/* a full disk may clear (log removal, an operator) */
	return ret;
}

static int flush_log(struct mt_bdb_commit *c)
{
	for (unsigned int attempt = 1;; attempt++) {
		int ret = c->env->log_flush(c->env, NULL);
		if (ret == 0)
			return 0;
		ret = c->set.flush_failed(c->set.context, ret, attempt);
		if (ret == 0)
			return 0;
		if (ret != EAGAIN) {
			mt_error("%s: log flush failed: %s", c->set.name, db_strerror(ret));
			return ret;
		}
		struct timespec ts = { 0, MT_BDB_FLUSH_RETRY_MSECS * 1000000L };
		nanosleep(&ts, NULL);
	}
}

/* Make list durable with one flush and post the completions. */
static void flush_batch(struct mt_bdb_commit *c, struct bdb_job *list,
			unsigned int count, bool lazy_only)
{
	/* Flush even if every job failed: a job's answer may rest on
	 * another's transaction that is not durable yet. */
	uint64_t start = mt_clock_us();
	DB_LSN end = { 0, 0 };
	DB_LOG_STAT *ls = NULL;
	if (c->set.replicate != NULL && c->env->log_stat(c->env, &ls, 0) == 0) {
		end.file = ls->st_cur_file;
		end.offset = ls->st_cur_offset;
	}
	free(ls);
	int ret = flush_log(c);
	atomic_fetch_add(&c->flush_usecs, mt_clock_us() - start);
	int replicated = 0;
	if (ret == 0 && c->set.replicate != NULL)
		replicated = c->set.replicate(c->set.context, &end);
	if (ret == 0) {
		atomic_fetch_add(&c->flushes, 1);
		if (lazy_only)
			atomic_fetch_add(&c->lazy_flushes, 1);
		counter_max(&c->max_batch, count);
	}
	struct mt_series *latency = atomic_load(&c->latency);
	uint64_t now = latency != NULL ? mt_clock_us() : 0;
	for (struct bdb_job *job = list; job != NULL; job = job->next) {
		if (ret != 0 && job->status == 0)
			job->status = ret;
		if (replicated != 0 && job->status == 0)
			job->status = MT_BDB_NOT_REPLICATED;
		if (job->status != 0) {
			atomic_fetch_add(&c->failures, 1);
		} else {
			atomic_fetch_add(&c->jobs, 1);
			if (latency != NULL && job->submitted_us != 0 &&
			    now >= job->submitted_us)
				mt_series_observe(latency, (double)(now - job->submitted_us) / 1e6);
		}
	}
	post_completions(c, list);
}

static void timespec_add_usecs(struct timespec *ts, uint64_t usecs)
{
	ts->tv_nsec += (long)((usecs % 1000000u) * 1000u);
	ts->tv_sec += (time_t)(usecs / 1000000u) + ts->tv_nsec / 1000000000L;
	ts->tv_nsec %= 1000000000L;
}

/* Append list to the held list; true if it holds a job someone waits on,
 * and in *alone_r whether one of those said it expects no company. */
static bool hold(struct bdb_job ***tail_p, struct bdb_job *list, bool *alone_r)
{
	bool urgent = false;
	for (struct bdb_job *job = list; job != NULL; job = job->next) {
		if ((job->flags & MT_BDB_JOB_LAZY) != 0)
			continue;
		urgent = true;
		if ((job->flags & MT_BDB_JOB_COMPANY) == 0)
			*alone_r = true;
	}
	**tail_p = list;
	while (**tail_p != NULL)
		*tail_p = &(**tail_p)->next;
	return urgent;
}

/* While write jobs are still executing, wait up to gather_usecs for them
 * to commit and join the held list. */
static void gather(struct mt_bdb_commit *c, struct bdb_job ***tail_p,
		   unsigned int *count_p, bool *alone_r)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	timespec_add_usecs(&until, c->set.gather_usecs);
	while (atomic_load(&c->executing) > 0 && *count_p < c->set.gather_max) {
		unsigned int count;
		bool stopping;
		struct bdb_job *more = queue_take_until(&c->flush_q, true, &until,
							&count, &stopping);
		if (more == NULL)
			break;
		(void)hold(tail_p, more, alone_r);
		*count_p += count;
	}
}

static void *flusher_main(void *arg)
{
	struct mt_bdb_commit *c = arg;
	/* Committed but not flushed yet, oldest first. */
	struct bdb_job *held = NULL, **held_tail = &held;
	unsigned int held_count = 0;
	struct timespec lazy_deadline = { 0, 0 };
	for (;;) {
		unsigned int count;
		bool stopping, alone = false;
		struct bdb_job *list = queue_take_until(&c->flush_q, held != NULL,
							&lazy_deadline, &count, &stopping);
		if (list != NULL && held_count == 0) {
			clock_gettime(CLOCK_REALTIME, &lazy_deadline);
			timespec_add_usecs(&lazy_deadline, MT_BDB_LAZY_MSECS * 1000u);
		}
		bool urgent = hold(&held_tail, list, &alone);
		held_count += count;
		if (held == NULL) {
			if (stopping)
				break;
			continue;
		}
		/* Lazy jobs only: keep collecting until the lazy deadline. */
		if (!urgent && list != NULL && !stopping)
			continue;
		if (urgent && c->set.gather_usecs > 0 && !stopping)
			gather(c, &held_tail, &held_count, &alone);
		/* Someone waits: flush now, or first give the sessions that are
		 * about to commit a moment to join this flush. */
		unsigned int delay = atomic_load(&c->delay_usecs);
		if (urgent && !alone && delay > 0 && !stopping) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			timespec_add_usecs(&until, delay);
			atomic_fetch_add(&c->company_waits, 1);
			while (!alone && !stopping) {
				struct bdb_job *more = queue_take_until(&c->flush_q, true,
									&until, &count,
									&stopping);
				if (more == NULL)
					break;
				(void)hold(&held_tail, more, &alone);
				held_count += count;
			}
		}
		flush_batch(c, held, held_count, !urgent);
		held = NULL;
		held_tail = &held;
		held_count = 0;
	}
	return NULL;
}

struct mt_bdb_commit *mt_bdb_commit_start(DB_ENV *env,
					  const struct mt_bdb_commit_settings *set,
					  const char **error_r)
{
	struct mt_bdb_commit *c = mt_xcalloc(1, sizeof(*c));
	c->env = env;
	if (set != NULL)
		c->set = *set;
	if (c->set.name == NULL)
		c->set.name = "bdb-commit";
	if (c->set.executors == 0)
		c->set.executors = 1;
	if (c->set.gather_max == 0)
		c->set.gather_max = DEFAULT_GATHER_MAX;
	if (c->set.flush_failed == NULL)
		c->set.flush_failed = default_flush_failed;
	queue_init(&c->commit_q);
	queue_init(&c->flush_q);
	c->executors = mt_xcalloc(c->set.executors, sizeof(*c->executors));
	for (unsigned int i = 0; i < c->set.executors; i++) {
		if (mt_thread_start(&c->executors[i], executor_main, c) != 0) {
			*error_r = "cannot start the commit threads";
			mt_bdb_commit_stop(&c);
			return NULL;
		}
		c->executors_started++;
	}
	if (mt_thread_start(&c->flusher, flusher_main, c) != 0) {
		*error_r = "cannot start the log flush thread";
		mt_bdb_commit_stop(&c);
		return NULL;
	}
	c->flusher_started = true;
	return c;
}

void mt_bdb_commit_submit(struct mt_bdb_commit *c, struct mt_loop *loop,
			  unsigned int flags, mt_bdb_job_fn *fn,
			  mt_bdb_done_fn *done, void *context)
{
	if (c->stopped)
		mt_panic("bdb-commit: job submitted after stop");
	struct bdb_job *job = mt_xcalloc(1, sizeof(*job));
	job->loop = loop;
	job->flags = flags;
	job->fn = fn;
	job->done = done;
	job->context = context;
	if (atomic_load(&c->latency) != NULL)
		job->submitted_us = mt_clock_us();
	atomic_fetch_add(&c->pending, 1);
	if (awaits_flush(flags))
		atomic_fetch_add(&c->executing, 1);
	queue_push(&c->commit_q, job);
}

void mt_bdb_commit_observe_latency(struct mt_bdb_commit *c, struct mt_series *histogram)
{
	atomic_store(&c->latency, histogram);
}

struct mt_series *mt_bdb_commit_latency_histogram(struct mt_metrics *m, const char *name,
						  const char *help)
{
	static const double bounds[] = {
		0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10,
	};
	return mt_metric_series(mt_metrics_histogram(m, name, help, NULL, bounds,
						     sizeof(bounds) / sizeof(bounds[0])), NULL);
}

void mt_bdb_commit_set_delay(struct mt_bdb_commit *c, unsigned int usecs)
{
	atomic_store(&c->delay_usecs, usecs);
}

unsigned int mt_bdb_commit_pending(struct mt_bdb_commit *c)
{
	return atomic_load(&c->pending);
}

unsigned int mt_bdb_commit_executing(struct mt_bdb_commit *c)
{
	return atomic_load(&c->executing);
}

void mt_bdb_commit_get_stats(struct mt_bdb_commit *c,
			     struct mt_bdb_commit_stats *s)
{
	s->jobs = atomic_load(&c->jobs);
	s->reads = atomic_load(&c->reads);
	s->unflushed = atomic_load(&c->unflushed);
	s->flushes = atomic_load(&c->flushes);
	s->lazy_flushes = atomic_load(&c->lazy_flushes);
	s->exec_usecs = atomic_load(&c->exec_usecs);
	s->flush_usecs = atomic_load(&c->flush_usecs);
	s->company_waits = atomic_load(&c->company_waits);
	s->max_batch = atomic_load(&c->max_batch);
	s->retries = atomic_load(&c->retries);
	s->failures = atomic_load(&c->failures);
}

void mt_bdb_commit_finish(struct mt_bdb_commit *c)
{
	if (c->stopped)
		return;
	c->stopped = true;
	/* The executors finish what is queued, then the flusher its part. */
	queue_stop(&c->commit_q);
	for (unsigned int i = 0; i < c->executors_started; i++)
		pthread_join(c->executors[i], NULL);
	queue_stop(&c->flush_q);
	if (c->flusher_started)
		pthread_join(c->flusher, NULL);
}

void mt_bdb_commit_stop(struct mt_bdb_commit **commit_p)
{
	struct mt_bdb_commit *c = *commit_p;
	if (c == NULL)
		return;
	*commit_p = NULL;
	mt_bdb_commit_finish(c);
	queue_destroy(&c->commit_q);
	queue_destroy(&c->flush_q);
	free(c->executors);
	free(c);
}
