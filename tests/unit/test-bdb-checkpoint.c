/* test-bdb-checkpoint.c — unit tests for lib-bdb/bdb-checkpoint.c, the
 * checkpoint thread under the MTA's queue and the message store, on a real
 * Berkeley DB environment in a temporary directory: mt_bdb_checkpoint()
 * writes a checkpoint unconditionally with log_kbytes 0 and none under the
 * log threshold; the thread runs the caller's tick every second, with
 * every signal blocked, checkpoints once the interval has passed (the
 * environment's last checkpoint moves) and reports each call to the
 * checkpointed hook; a tick that answers false skips the second's work. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <db.h>

#include "bdb-checkpoint.h"
#include "buf.h"
#include "metrics.h"
#include "log.h"
#include "test-bdb-util.h"

struct fixture {
	char dir[64];
	DB_ENV *env;
	DB *db;
};

struct hooks {
	atomic_uint ticks, calls, written, failures, signals_open;
	atomic_bool allow;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	test_bdb_mkdtemp(f->dir, sizeof(f->dir), "test-bdb-checkpoint");
	test_bdb_open(f->dir, NULL, &f->env, &f->db);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	test_bdb_close(&f->env, &f->db);
	test_bdb_rmdir(f->dir);
	free(f);
	return 0;
}

static void put_some(struct fixture *f, unsigned int first, unsigned int n)
{
	for (unsigned int i = first; i < first + n; i++) {
		DBT key, data;
		memset(&key, 0, sizeof(key));
		memset(&data, 0, sizeof(data));
		key.data = &i;
		key.size = sizeof(i);
		data.data = "some value";
		data.size = 10;
		assert_int_equal(f->db->put(f->db, NULL, &key, &data, DB_AUTO_COMMIT), 0);
	}
}

static DB_LSN last_ckp(struct fixture *f)
{
	DB_TXN_STAT *st;
	assert_int_equal(f->env->txn_stat(f->env, &st, 0), 0);
	DB_LSN lsn = st->st_last_ckp;
	free(st);
	return lsn;
}

static bool lsn_equal(DB_LSN a, DB_LSN b)
{
	return a.file == b.file && a.offset == b.offset;
}

static void test_checkpoint_now(void **state)
{
	struct fixture *f = *state;
	put_some(f, 0, 50);
	bool written;
	assert_int_equal(mt_bdb_checkpoint(f->env, 0, &written), 0);
	assert_true(written);
	DB_LSN first = last_ckp(f);
	put_some(f, 100, 50);
	/* A few KB of log, under a 1 GB threshold: no checkpoint. */
	assert_int_equal(mt_bdb_checkpoint(f->env, 1u << 20, &written), 0);
	assert_false(written);
	assert_true(lsn_equal(first, last_ckp(f)));
	assert_int_equal(mt_bdb_checkpoint(f->env, 0, &written), 0);
	assert_true(written);
	assert_false(lsn_equal(first, last_ckp(f)));
}

static bool tick(void *context)
{
	struct hooks *h = context;
	sigset_t mask;
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	if (!sigismember(&mask, SIGTERM) || !sigismember(&mask, SIGHUP))
		atomic_fetch_add(&h->signals_open, 1);
	atomic_fetch_add(&h->ticks, 1);
	return atomic_load(&h->allow);
}

static bool checkpointed(void *context, int ret, bool written)
{
	struct hooks *h = context;
	atomic_fetch_add(&h->calls, 1);
	atomic_fetch_add(&h->written, written);
	atomic_fetch_add(&h->failures, ret != 0);
	return false;
}

static void wait_ticks(struct hooks *h, unsigned int n)
{
	/* Bounded: the thread ticks once a second. */
	for (unsigned int i = 0; i < 100 * (n + 2) && atomic_load(&h->ticks) < n; i++)
		usleep(10000);
	assert_true(atomic_load(&h->ticks) >= n);
}

static void test_thread(void **state)
{
	struct fixture *f = *state;
	struct hooks h;
	memset(&h, 0, sizeof(h));
	atomic_store(&h.allow, true);
	const struct mt_bdb_checkpoint_settings set = {
		.name = "test", .interval_secs = 1,
		.tick = tick, .checkpointed = checkpointed, .context = &h,
	};
	const char *error;
	bool written;
	assert_int_equal(mt_bdb_checkpoint(f->env, 0, &written), 0);
	DB_LSN before = last_ckp(f);
	put_some(f, 0, 200);
	struct mt_bdb_checkpointer *c = mt_bdb_checkpointer_start(f->env, &set, &error);
	assert_non_null(c);
	/* Observed before the first tick (a second away). */
	struct mt_metrics *m = mt_metrics_new();
	mt_bdb_checkpointer_observe(c, mt_bdb_checkpoint_duration_histogram(m,
		"test_checkpoint_duration_seconds", "test"));
	wait_ticks(&h, 2);
	/* Interval 1 s: every second's checkpoint is forced. */
	assert_true(atomic_load(&h.calls) >= 1);
	assert_true(atomic_load(&h.written) >= 1);
	assert_int_equal(atomic_load(&h.failures), 0);
	assert_int_equal(atomic_load(&h.signals_open), 0);
	assert_true(mt_bdb_checkpointer_count(c) >= 1);
	assert_false(lsn_equal(before, last_ckp(f)));

	/* A tick that says no: the second passes without a checkpoint. */
	atomic_store(&h.allow, false);
	unsigned int ticks = atomic_load(&h.ticks);
	wait_ticks(&h, ticks + 1);	/* one that may have begun before */
	unsigned int calls = atomic_load(&h.calls);
	ticks = atomic_load(&h.ticks);
	wait_ticks(&h, ticks + 2);
	assert_int_equal(atomic_load(&h.calls), calls);
	/* No checkpoint runs now: each written one was observed once. */
	struct mt_buf out = MT_BUF_INIT;
	mt_metrics_render(m, &out);
	char want[64];
	snprintf(want, sizeof(want), "test_checkpoint_duration_seconds_count %lu\n",
		 mt_bdb_checkpointer_count(c));
	if (strstr(mt_buf_cstr(&out), want) == NULL)
		fail_msg("no '%s' in:\n%s", want, mt_buf_cstr(&out));
	mt_buf_free(&out);
	mt_bdb_checkpointer_stop(&c);
	mt_metrics_free(&m);
	assert_null(c);
}

int main(void)
{
	mt_log_init("test-bdb-checkpoint", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(MT_LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_checkpoint_now, setup, teardown),
		cmocka_unit_test_setup_teardown(test_thread, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
