/* bdb-checkpoint.c — trickle and checkpoint thread (see bdb-checkpoint.h). */
#include "bdb-checkpoint.h"
#include "alloc.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>

struct mt_bdb_checkpointer {
	DB_ENV *env;
	const char *name;
	unsigned int interval_secs;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
};

/* One second's work: trickle, then a checkpoint if one is due. */
static void tick(struct mt_bdb_checkpointer *c, unsigned int *secs)
{
	int written = 0;
	int ret = c->env->memp_trickle(c->env, MT_BDB_TRICKLE_PCT, &written);
	if (ret != 0)
		mt_error("%s: cache trickle failed: %s", c->name, db_strerror(ret));
	bool forced = ++*secs >= c->interval_secs;
	if (forced)
		*secs = 0;
	ret = c->env->txn_checkpoint(c->env, forced ? 0 : MT_BDB_CHECKPOINT_KBYTES,
				     0, 0);
	if (ret != 0)
		mt_error("%s: checkpoint failed: %s", c->name, db_strerror(ret));
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

struct mt_bdb_checkpointer *mt_bdb_checkpointer_start(DB_ENV *env, const char *name,
						      unsigned int interval_secs,
						      const char **error_r)
{
	struct mt_bdb_checkpointer *c = mt_xcalloc(1, sizeof(*c));
	c->env = env;
	c->name = name;
	c->interval_secs = interval_secs > 0 ? interval_secs : 1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&c->thread, NULL, checkpoint_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->cond);
		free(c);
		*error_r = "cannot start the checkpoint thread";
		return NULL;
	}
	return c;
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
