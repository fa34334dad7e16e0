/* test-bdb-commit.c — unit tests for lib-bdb/bdb-commit.c, the group-commit
 * pipeline under the MTA's queue, on a real Berkeley DB environment in a
 * temporary directory: jobs submitted together share log flushes; a job
 * whose fn fails is aborted (nothing of it written) and completes with its
 * error; MT_BDB_JOB_UNFLUSHED jobs complete without a flush and a later
 * flushed job covers them (their records are there after the environment
 * is closed without a checkpoint and recovered); read jobs run without a
 * transaction; the completions run on the submitting loop. The store's
 * policies: several executors with a gather window, jobs that run their
 * own transactions (MT_BDB_JOB_OWN_TXN), completions without a loop (on the
 * pipeline's thread, which takes no signal); and a log flush that finds
 * the disk full (a tiny tmpfs, when run as root) going through the
 * flush_failed hook, which frees space and has it retried. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <db.h>

#include "bdb-commit.h"
#include "test-bdb-util.h"
#include "log.h"
#include "loop.h"

#define JOBS 100

struct fixture {
	char dir[64];
	DB_ENV *env;
	DB *db;
	struct mt_loop *loop;
	struct mt_bdb_commit *commit;
	unsigned int done, failed, wanted;
	int last_status;
};

struct job {
	struct fixture *f;
	unsigned int key;
	bool fail;
	char value[32];
};

static void open_env(struct fixture *f)
{
	test_bdb_open(f->dir, NULL, &f->env, &f->db);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	test_bdb_mkdtemp(f->dir, sizeof(f->dir), "test-bdb-commit");
	open_env(f);
	const char *error;
	f->loop = mt_loop_new(&error);
	assert_non_null(f->loop);
	f->commit = mt_bdb_commit_start(f->env, NULL, &error);
	assert_non_null(f->commit);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	mt_bdb_commit_stop(&f->commit);
	test_bdb_close(&f->env, &f->db);
	mt_loop_free(&f->loop);
	char logdir[96];
	snprintf(logdir, sizeof(logdir), "%s/log", f->dir);
	(void)umount2(logdir, MNT_DETACH);	/* a failed full-disk test's */
	test_bdb_rmdir(f->dir);
	free(f);
	return 0;
}

static int put_fn(DB_ENV *env, DB_TXN *txn, void *context)
{
	struct job *j = context;
	DBT key, data;
	memset(&key, 0, sizeof(key));
	memset(&data, 0, sizeof(data));
	key.data = &j->key;
	key.size = sizeof(j->key);
	data.data = j->value;
	data.size = (u_int32_t)strlen(j->value);
	int ret = j->f->db->put(j->f->db, txn, &key, &data, 0);
	return ret != 0 ? ret : j->fail ? EINVAL : 0;
}

/* Read job: is the key there? (no transaction of its own) */
static int get_fn(DB_ENV *env, DB_TXN *txn, void *context)
{
	struct job *j = context;
	assert_null(txn);
	DBT key, data;
	memset(&key, 0, sizeof(key));
	memset(&data, 0, sizeof(data));
	key.data = &j->key;
	key.size = sizeof(j->key);
	data.flags = DB_DBT_USERMEM;
	data.data = j->value;
	data.ulen = sizeof(j->value) - 1;
	int ret = j->f->db->get(j->f->db, NULL, &key, &data, 0);
	if (ret == 0)
		j->value[data.size] = '\0';
	return ret;
}

static void done_cb(int status, void *context)
{
	struct job *j = context;
	struct fixture *f = j->f;
	f->done++;
	if (status != 0)
		f->failed++;
	f->last_status = status;
	free(j);
	if (f->done == f->wanted)
		mt_loop_exit(f->loop);
}

static void submit(struct fixture *f, unsigned int flags, mt_bdb_job_fn *fn,
		   unsigned int key, bool fail)
{
	struct job *j = calloc(1, sizeof(*j));
	j->f = f;
	j->key = key;
	j->fail = fail;
	snprintf(j->value, sizeof(j->value), "value %u", key);
	mt_bdb_commit_submit(f->commit, f->loop, flags, fn, done_cb, j);
}

static void run(struct fixture *f, unsigned int wanted)
{
	f->done = f->failed = 0;
	f->wanted = wanted;
	assert_int_equal(mt_loop_run(f->loop), 0);
	assert_int_equal(f->done, wanted);
}

static void test_group_commit(void **state)
{
	struct fixture *f = *state;
	for (unsigned int i = 0; i < JOBS; i++)
		submit(f, 0, put_fn, i, false);
	run(f, JOBS);
	assert_int_equal(f->failed, 0);
	struct mt_bdb_commit_stats st;
	mt_bdb_commit_get_stats(f->commit, &st);
	assert_int_equal(st.jobs, JOBS);
	assert_true(st.flushes >= 1 && st.flushes < JOBS);
	printf("# %u jobs made durable by %llu flushes\n", JOBS,
	       (unsigned long long)st.flushes);
	assert_int_equal(mt_bdb_commit_pending(f->commit), 0);

	/* A failing job: aborted, its put not there; its error reported. */
	submit(f, 0, put_fn, 1000, true);
	run(f, 1);
	assert_int_equal(f->last_status, EINVAL);
	submit(f, MT_BDB_JOB_READ, get_fn, 1000, false);
	run(f, 1);
	assert_int_equal(f->last_status, DB_NOTFOUND);
	submit(f, MT_BDB_JOB_READ, get_fn, 7, false);
	run(f, 1);
	assert_int_equal(f->last_status, 0);
	mt_bdb_commit_get_stats(f->commit, &st);
	assert_int_equal(st.reads, 2);
	assert_int_equal(st.failures, 1);
}

static void test_unflushed_covered_by_a_later_flush(void **state)
{
	struct fixture *f = *state;
	struct mt_bdb_commit_stats before, after;
	mt_bdb_commit_get_stats(f->commit, &before);
	for (unsigned int i = 0; i < 10; i++)
		submit(f, MT_BDB_JOB_UNFLUSHED, put_fn, 2000 + i, false);
	run(f, 10);
	mt_bdb_commit_get_stats(f->commit, &after);
	assert_int_equal(after.unflushed - before.unflushed, 10);
	assert_int_equal(after.flushes, before.flushes);	/* none of their own */
	submit(f, 0, put_fn, 3000, false);			/* one that is waited for */
	run(f, 1);
	mt_bdb_commit_get_stats(f->commit, &after);
	assert_int_equal(after.flushes, before.flushes + 1);

	/* Die without closing anything (no checkpoint, no cache flush): a
	 * child process does the same writes and exits; recovery from its
	 * log alone must find every record the flushed job covered. */
	mt_bdb_commit_stop(&f->commit);
	test_bdb_close(&f->env, &f->db);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *error;
		open_env(f);
		struct mt_loop *loop = mt_loop_new(&error);
		f->loop = loop;
		f->commit = mt_bdb_commit_start(f->env, NULL, &error);
		for (unsigned int i = 0; i < 10; i++)
			submit(f, MT_BDB_JOB_UNFLUSHED, put_fn, 5000 + i, false);
		submit(f, 0, put_fn, 6000, false);
		f->done = 0;
		f->wanted = 11;
		(void)mt_loop_run(loop);
		_exit(f->done == 11 ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	open_env(f);
	const char *error;
	f->commit = mt_bdb_commit_start(f->env, NULL, &error);
	for (unsigned int i = 0; i < 10; i++)
		submit(f, MT_BDB_JOB_READ, get_fn, 5000 + i, false);
	submit(f, MT_BDB_JOB_READ, get_fn, 6000, false);
	run(f, 11);
	assert_int_equal(f->failed, 0);
}

/* Completions without a loop: counted under a lock, on a thread that is
 * not the test's and that blocks every signal. */
struct threaded {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int done, failed, off_main, signals_open;
	pthread_t main_thread;
};

static struct threaded threaded = {
	.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
};

static void threaded_done(int status, void *context)
{
	sigset_t mask;
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	pthread_mutex_lock(&threaded.lock);
	threaded.done++;
	threaded.failed += status != 0;
	threaded.off_main += !pthread_equal(pthread_self(), threaded.main_thread);
	threaded.signals_open += !sigismember(&mask, SIGTERM) ||
		!sigismember(&mask, SIGPIPE);
	pthread_cond_broadcast(&threaded.cond);
	pthread_mutex_unlock(&threaded.lock);
	free(context);
}

static void threaded_wait(unsigned int wanted)
{
	pthread_mutex_lock(&threaded.lock);
	while (threaded.done < wanted)
		pthread_cond_wait(&threaded.cond, &threaded.lock);
	pthread_mutex_unlock(&threaded.lock);
}

/* One of own_txn_fn's transactions: the put of key + i * 100000. */
static int own_txn_put(DB_ENV *env, struct job *j, unsigned int i)
{
	DB_TXN *t;
	int ret = env->txn_begin(env, NULL, &t, 0);
	if (ret != 0)
	return ret;
	unsigned int k = j->key + i * 100000u;
	DBT key, data;
	memset(&key, 0, sizeof(key));
	memset(&data, 0, sizeof(data));
	key.data = &k;
	key.size = sizeof(k);
	data.data = j->value;
	data.size = (u_int32_t)strlen(j->value);
	ret = j->f->db->put(j->f->db, t, &key, &data, 0);
	if (ret != 0) {
		(void)t->abort(t);
		return ret;
	}
	return t->commit(t, DB_TXN_NOSYNC);
}

/* Two transactions of its own, as a delivery to two mailboxes does; one
 * the deadlock detector chose as its victim is run again, as the store's
 * are. */
static int own_txn_fn(DB_ENV *env, DB_TXN *txn, void *context)
{
	struct job *j = context;
	assert_null(txn);
	for (unsigned int i = 0; i < 2; i++) {
		int ret;
		do
			ret = own_txn_put(env, j, i);
		while (ret == DB_LOCK_DEADLOCK);
		if (ret != 0)
			return ret;
	}
	return 0;
}

struct submitter {
	struct fixture *f;
	unsigned int first;
};

static void *submitter_main(void *arg)
{
	struct submitter *s = arg;
	for (unsigned int i = 0; i < JOBS; i++) {
		struct job *j = calloc(1, sizeof(*j));
		j->f = s->f;
		j->key = s->first + i;
		snprintf(j->value, sizeof(j->value), "value %u", j->key);
		mt_bdb_commit_submit(s->f->commit, NULL, MT_BDB_JOB_OWN_TXN,
				     own_txn_fn, threaded_done, j);
	}
	return NULL;
}

static void test_executors_gather_own_txn_no_loop(void **state)
{
	struct fixture *f = *state;
	mt_bdb_commit_stop(&f->commit);
	const struct mt_bdb_commit_settings set = {
		.name = "test", .executors = 4, .gather_usecs = 5000,
	};
	const char *error;
	f->commit = mt_bdb_commit_start(f->env, &set, &error);
	assert_non_null(f->commit);
	threaded.main_thread = pthread_self();
	enum { SUBMITTERS = 4 };
	pthread_t threads[SUBMITTERS];
	struct submitter subs[SUBMITTERS];
	for (unsigned int i = 0; i < SUBMITTERS; i++) {
		subs[i] = (struct submitter){ f, 10000 + i * JOBS };
		assert_int_equal(pthread_create(&threads[i], NULL, submitter_main,
						&subs[i]), 0);
	}
	for (unsigned int i = 0; i < SUBMITTERS; i++)
		pthread_join(threads[i], NULL);
	threaded_wait(SUBMITTERS * JOBS);
	assert_int_equal(threaded.failed, 0);
	assert_int_equal(threaded.off_main, SUBMITTERS * JOBS);
	assert_int_equal(threaded.signals_open, 0);
	struct mt_bdb_commit_stats st;
	mt_bdb_commit_get_stats(f->commit, &st);
	assert_int_equal(st.jobs, SUBMITTERS * JOBS);
	assert_true(st.flushes >= 1 && st.flushes < SUBMITTERS * JOBS);
	printf("# %u jobs of 2 transactions each on 4 executors: %llu flushes, "
	       "largest batch %llu\n", SUBMITTERS * JOBS,
	       (unsigned long long)st.flushes, (unsigned long long)st.max_batch);
	assert_int_equal(mt_bdb_commit_pending(f->commit), 0);
	assert_int_equal(mt_bdb_commit_executing(f->commit), 0);
	/* Both transactions of every job are there. */
	for (unsigned int i = 0; i < SUBMITTERS * JOBS; i += 37) {
		for (unsigned int t = 0; t < 2; t++) {
			submit(f, MT_BDB_JOB_READ, get_fn, 10000 + i + t * 100000u, false);
			run(f, 1);
			assert_int_equal(f->last_status, 0);
		}
	}
}

/* The disk-full hook: the log directory is a 1 MB tmpfs with a filler
 * file taking what the log does not. */
struct full_disk {
	char filler[128];
	unsigned int calls;
	int last_ret;
};

static int full_disk_flush_failed(void *context, int ret, unsigned int attempt)
{
	struct full_disk *fd = context;
	fd->calls++;
	fd->last_ret = ret;
	if (ret != ENOSPC || attempt > 3)
		return ret;
	unlink(fd->filler);	/* an operator frees space */
	return EAGAIN;
}

static void fill_up(const char *path)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	static char block[4096];
	while (fwrite(block, 1, sizeof(block), fp) == sizeof(block) && fflush(fp) == 0)
		;
	fclose(fp);
}

static void test_flush_on_a_full_disk(void **state)
{
	struct fixture *f = *state;
	if (geteuid() != 0) {
		skip();	/* mounting a tmpfs needs root */
		return;
	}
	mt_bdb_commit_stop(&f->commit);
	test_bdb_close(&f->env, &f->db);
	char logdir[96];
	snprintf(logdir, sizeof(logdir), "%s/log", f->dir);
	assert_int_equal(mkdir(logdir, 0700), 0);
	if (mount("tmpfs", logdir, "tmpfs", 0, "size=1m") != 0) {
		printf("# no tmpfs here: %s\n", strerror(errno));
		skip();
		return;
	}
	test_bdb_open(f->dir, "log", &f->env, &f->db);
	struct full_disk full = { .calls = 0 };
	snprintf(full.filler, sizeof(full.filler), "%s/filler", logdir);
	const struct mt_bdb_commit_settings set = {
		.name = "test", .flush_failed = full_disk_flush_failed, .context = &full,
	};
	const char *error;
	f->commit = mt_bdb_commit_start(f->env, &set, &error);
	assert_non_null(f->commit);
	fill_up(full.filler);
	/* 100 jobs of ~1 KB: in the log buffer, whose flush finds no room. */
	for (unsigned int i = 0; i < JOBS; i++) {
		struct job *j = calloc(1, sizeof(*j));
		j->f = f;
		j->key = 20000 + i;
		memset(j->value, 'v', sizeof(j->value) - 1);
		mt_bdb_commit_submit(f->commit, f->loop, 0, put_fn, done_cb, j);
	}
	run(f, JOBS);
	printf("# flush_failed called %u times (last: %s), %u jobs failed\n",
	       full.calls, db_strerror(full.last_ret), f->failed);
	assert_true(full.calls >= 1);
	assert_int_equal(full.last_ret, ENOSPC);
	assert_int_equal(f->failed, 0);	/* retried once space was back */
	mt_bdb_commit_stop(&f->commit);
	test_bdb_close(&f->env, &f->db);
	assert_int_equal(umount(logdir), 0);
}

int main(void)
{
	mt_log_init("test-bdb-commit", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(MT_LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unflushed_covered_by_a_later_flush,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_executors_gather_own_txn_no_loop,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_on_a_full_disk, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
