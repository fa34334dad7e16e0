/* bdb-checkpoint.c — trickle and checkpoint thread (see bdb-checkpoint.h). */
#include "bdb-checkpoint.h"
#include "alloc.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

struct mt_bdb_checkpointer {
	DB_ENV *env;
	struct mt_bdb_checkpoint_settings set;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	atomic_ulong written;
	_Atomic(struct mt_series *) duration;	/* NULL: not observed */
};

static DB_LSN last_checkpoint(DB_ENV *env)
{
	DB_LSN lsn = { 0, 0 };
	DB_TXN_STAT *st = NULL;
	if (env->txn_stat(env, &st, 0) == 0 && st != NULL) {
		lsn = st->st_last_ckp;
		free(st);
	}
	return lsn;
}

int mt_bdb_checkpoint(DB_ENV *env, unsigned int log_kbytes, bool *written_r)
{
	DB_LSN before = log_kbytes > 0 ? last_checkpoint(env) : (DB_LSN){ 0, 0 };
	int ret = env->txn_checkpoint(env, log_kbytes, 0, 0);
	*written_r = false;
	if (ret == 0) {
		DB_LSN after = log_kbytes > 0 ? last_checkpoint(env) : before;
		*written_r = log_kbytes == 0 || after.file != before.file ||
			after.offset != before.offset;
	}
	return ret;
}

static void checkpoint(struct mt_bdb_checkpointer *c, bool forced)
{
	bool written;
	uint64_t start = mt_clock_us();
	int ret = mt_bdb_checkpoint(c->env, forced ? 0 : c->set.log_kbytes, &written);
	/* A long one is worth an operator's eye: it may hold up commits. */
	double ms = (double)(mt_clock_us() - start) / 1000.0;
	if (written)
		mt_log(ms >= MT_BDB_CHECKPOINT_SLOW_MS ? MT_LOG_INFO : MT_LOG_DEBUG,
		       "%s: checkpoint took %.1f ms", c->set.name, ms);
	if (written) {
		atomic_fetch_add(&c->written, 1);
		struct mt_series *duration = atomic_load(&c->duration);
		if (duration != NULL)
			mt_series_observe(duration, ms / 1000.0);
	}
	bool handled = c->set.checkpointed != NULL &&
		c->set.checkpointed(c->set.context, ret, written);
	if (ret != 0 && !handled)
		mt_error("%s: checkpoint failed: %s", c->set.name, db_strerror(ret));
}

/* One second's work: trickle, then a checkpoint if one is due. */
static void tick(struct mt_bdb_checkpointer *c, unsigned int *secs)
{
	if (c->set.tick != NULL && !c->set.tick(c->set.context))
		return;
	int pages = 0;
	int ret = c->env->memp_trickle(c->env, MT_BDB_TRICKLE_PCT, &pages);
	if (ret != 0)
		mt_error("%s: cache trickle failed: %s", c->set.name, db_strerror(ret));
	bool forced = ++*secs >= c->set.interval_secs;
	if (forced)
		*secs = 0;
	checkpoint(c, forced);
}

static void *checkpoint_main(void *arg)
{
	struct mt_bdb_checkpointer *c = arg;
	unsigned int secs = 0;
	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		int rc = 0;
		while (!c->stop && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		if (c->stop)
			break;
		pthread_mutex_unlock(&c->lock);
		tick(c, &secs);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

struct mt_bdb_checkpointer *
mt_bdb_checkpointer_start(DB_ENV *env, const struct mt_bdb_checkpoint_settings *set,
			  const char **error_r)
{
	struct mt_bdb_checkpointer *c = mt_xcalloc(1, sizeof(*c));
	c->env = env;
	if (set != NULL)
		c->set = *set;
	if (c->set.name == NULL)
		c->set.name = "bdb-checkpoint";
	if (c->set.interval_secs == 0)
		c->set.interval_secs = MT_BDB_CHECKPOINT_SECS;
	if (c->set.log_kbytes == 0)
		c->set.log_kbytes = MT_BDB_CHECKPOINT_KBYTES;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (mt_thread_start(&c->thread, checkpoint_main, c) != 0) {
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->cond);
		free(c);
		*error_r = "cannot start the checkpoint thread";
		return NULL;
	}
	return c;
}

void mt_bdb_checkpointer_observe(struct mt_bdb_checkpointer *c, struct mt_series *histogram)
{
	atomic_store(&c->duration, histogram);
}

struct mt_series *mt_bdb_checkpoint_duration_histogram(struct mt_metrics *m, const char *name,
							const char *help)
{
	static const double bounds[] = {
		0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
	};
	return mt_metric_series(mt_metrics_histogram(m, name, help, NULL, bounds,
						     sizeof(bounds) / sizeof(bounds[0])), NULL);
}

unsigned long mt_bdb_checkpointer_count(struct mt_bdb_checkpointer *c)
{
	return atomic_load(&c->written);
}

void mt_bdb_checkpointer_stop(struct mt_bdb_checkpointer **ckp_p)
{
	struct mt_bdb_checkpointer *c = *ckp_p;
	if (c == NULL)
		return;
	*ckp_p = NULL;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}
