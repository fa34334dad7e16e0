/* test-bdb-commit.c — unit tests for lib/bdb-commit.c, the group-commit
 * pipeline under the MTA's queue, on a real Berkeley DB environment in a
 * temporary directory: jobs submitted together share log flushes; a job
 * whose fn fails is aborted (nothing of it written) and completes with its
 * error; MT_BDB_JOB_UNFLUSHED jobs complete without a flush and a later
 * flushed job covers them (their records are there after the environment
 * is closed without a checkpoint and recovered); read jobs run without a
 * transaction; the completions run on the submitting loop. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <db.h>

#include "bdb-commit.h"
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
	assert_int_equal(db_env_create(&f->env, 0), 0);
	assert_int_equal(f->env->open(f->env, f->dir, DB_CREATE | DB_INIT_TXN |
				      DB_INIT_LOG | DB_INIT_LOCK | DB_INIT_MPOOL |
				      DB_THREAD | DB_RECOVER, 0600), 0);
	assert_int_equal(db_create(&f->db, f->env, 0), 0);
	assert_int_equal(f->db->open(f->db, NULL, "t.db", NULL, DB_BTREE,
				     DB_CREATE | DB_AUTO_COMMIT | DB_THREAD, 0600), 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	static const char prefix[] = "/tmp/test-bdb-commit.";
	memcpy(f->dir, prefix, sizeof(prefix) - 1);
	memset(f->dir + sizeof(prefix) - 1, 'X', 6);	/* mkdtemp's template */
	f->dir[sizeof(prefix) - 1 + 6] = '\0';
	assert_non_null(mkdtemp(f->dir));
	open_env(f);
	const char *error;
	f->loop = mt_loop_new(&error);
	assert_non_null(f->loop);
	f->commit = mt_bdb_commit_start(f->env, &error);
	assert_non_null(f->commit);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	mt_bdb_commit_stop(&f->commit);
	if (f->db != NULL)
		f->db->close(f->db, 0);
	if (f->env != NULL)
		f->env->close(f->env, 0);
	mt_loop_free(&f->loop);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
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
	f->db->close(f->db, 0);
	f->db = NULL;
	f->env->close(f->env, 0);
	f->env = NULL;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *error;
		open_env(f);
		struct mt_loop *loop = mt_loop_new(&error);
		f->loop = loop;
		f->commit = mt_bdb_commit_start(f->env, &error);
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
	f->commit = mt_bdb_commit_start(f->env, &error);
	for (unsigned int i = 0; i < 10; i++)
		submit(f, MT_BDB_JOB_READ, get_fn, 5000 + i, false);
	submit(f, MT_BDB_JOB_READ, get_fn, 6000, false);
	run(f, 11);
	assert_int_equal(f->failed, 0);
}

int main(void)
{
	mt_log_init("test-bdb-commit", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(MT_LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unflushed_covered_by_a_later_flush,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
