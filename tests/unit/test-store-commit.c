/* test-store-commit.c — group commit under concurrency: several loop
 * threads, each with its own event loop and completion port, keep many
 * deliveries in flight into shared and private mailboxes. Every completion
 * must come after an fsync that began after its submission (fsyncs counted
 * through Berkeley DB's hook), far fewer flushes than deliveries must be
 * made, and afterwards every mailbox holds exactly what was acknowledged,
 * byte for byte. Run with one and with two executor threads (the second
 * makes deliveries to one mailbox race). Blocking callers
 * (mt_store_deliver_wait from many threads) share flushes too. And a real
 * deadlock between two transactions (white-box, on the store's own
 * databases): the detector breaks it and the loser is retried. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test-store-util.h"
#include "store-private.h"	/* test_deadlock_retried runs store_txn_run */
#include "buf.h"
#include "log.h"

#include <event2/event.h>
#include <pthread.h>

#define LOOPS 4
#define SESSIONS 8		/* in flight per loop */
#define PER_SESSION 40
#define SHARED_MAILBOXES 3
#define TOTAL (LOOPS * SESSIONS * PER_SESSION)

struct session {
	struct loop *loop;
	unsigned int id;	/* global */
	unsigned int sent;
	unsigned int fsyncs_at_submit;
	char mailbox[32];
	unsigned int seed;
};

struct loop {
	struct mt_store *store;
	struct mt_loop *mtloop;
	struct event_base *base;
	struct mt_store_port *port;
	struct session sessions[SESSIONS];
	unsigned int done_sessions;
	unsigned int early;		/* completions not after an fsync */
	unsigned int failed;
	pthread_t thread;
};

/* Which message went where, filled from the completions. */
static pthread_mutex_t record_lock = PTHREAD_MUTEX_INITIALIZER;
static struct delivered {
	char mailbox[32];
	uint32_t uid;
	size_t size;
} delivered[TOTAL];
static unsigned int delivered_count;

static size_t seed_size(unsigned int seed)
{
	return 2000 + (seed * 7919u) % 23000;
}

static void session_next(struct session *s);

static void deliver_cb(struct mt_store_req *req, void *context)
{
	struct session *s = context;
	unsigned int count;
	const struct mt_store_rcpt *r = mt_store_req_rcpts(req, &count);
	if (atomic_load(&test_fsyncs) <= s->fsyncs_at_submit)
		s->loop->early++;
	if (r[0].status != MT_STORE_OK) {
		s->loop->failed++;
	} else {
		pthread_mutex_lock(&record_lock);
		struct delivered *d = &delivered[s->seed];
		snprintf(d->mailbox, sizeof(d->mailbox), "%s", s->mailbox);
		d->uid = r[0].uid;
		d->size = seed_size(s->seed);
		delivered_count++;
		pthread_mutex_unlock(&record_lock);
	}
	session_next(s);
}

static void session_next(struct session *s)
{
	if (s->sent == PER_SESSION) {
		if (++s->loop->done_sessions == SESSIONS)
			event_base_loopbreak(s->loop->base);
		return;
	}
	s->seed = s->id * PER_SESSION + s->sent;
	s->sent++;
	/* Half go to a few shared mailboxes, half to the session's own. */
	if (s->seed % 2 == 0)
		snprintf(s->mailbox, sizeof(s->mailbox), "shared%u",
			 s->seed % (2 * SHARED_MAILBOXES) / 2);
	else
		snprintf(s->mailbox, sizeof(s->mailbox), "own%u", s->id);
	size_t size = seed_size(s->seed);
	char *data = test_message(s->seed, size);
	struct mt_buf body = MT_BUF_INIT;
	mt_buf_append(&body, data, size);
	free(data);
	struct mt_store_rcpt rcpt = { .mailbox = s->mailbox };
	s->fsyncs_at_submit = atomic_load(&test_fsyncs);
	(void)mt_store_deliver(s->loop->port, &rcpt, 1, &body, deliver_cb, s);
}

static void *loop_main(void *arg)
{
	struct loop *loop = arg;
	for (unsigned int i = 0; i < SESSIONS; i++)
		session_next(&loop->sessions[i]);
	struct timeval tv = { 60, 0 };
	event_base_loopexit(loop->base, &tv);
	event_base_dispatch(loop->base);
	return NULL;
}

static void verify_mailboxes(struct mt_store *store)
{
	/* Per mailbox, the acknowledged uids are exactly its messages. */
	const char *names[SHARED_MAILBOXES + LOOPS * SESSIONS];
	char own[LOOPS * SESSIONS][32];
	unsigned int n = 0;
	for (unsigned int i = 0; i < SHARED_MAILBOXES; i++) {
		static char shared[SHARED_MAILBOXES][32];
		snprintf(shared[i], sizeof(shared[i]), "shared%u", i);
		names[n++] = shared[i];
	}
	for (unsigned int i = 0; i < LOOPS * SESSIONS; i++) {
		snprintf(own[i], sizeof(own[i]), "own%u", i);
		names[n++] = own[i];
	}
	unsigned int seen = 0;
	for (unsigned int m = 0; m < n; m++) {
		struct mt_store_mailbox *mbox;
		const char *error;
		assert_int_equal(mt_store_mailbox_open_sync(store, names[m], &mbox,
							    &error), MT_STORE_OK);
		unsigned int expected = 0;
		for (unsigned int seed = 0; seed < TOTAL; seed++) {
			if (strcmp(delivered[seed].mailbox, names[m]) != 0)
				continue;
			expected++;
			bool found = false;
			for (unsigned int i = 0; i < mt_store_mailbox_count(mbox); i++) {
				const struct mt_store_msg *msg = mt_store_mailbox_msg(mbox, i);
				if (msg->uid != delivered[seed].uid)
					continue;
				found = true;
				assert_int_equal(msg->size, delivered[seed].size);
				char *have = test_read_all(mbox, i, 65536);
				char *want = test_message(seed, msg->size);
				assert_memory_equal(have, want, msg->size);
				free(have);
				free(want);
			}
			assert_true(found);
		}
		assert_int_equal(mt_store_mailbox_count(mbox), expected);
		seen += expected;
		mt_store_mailbox_close(&mbox);
	}
	assert_int_equal(seen, TOTAL);
}

static void run_loops(unsigned int commit_threads)
{
	test_dir_make();
	memset(delivered, 0, sizeof(delivered));
	delivered_count = 0;
	struct mt_store *store = test_store_open_with(test_path("store"),
						      commit_threads, 0);
	struct loop loops[LOOPS];
	memset(loops, 0, sizeof(loops));
	for (unsigned int l = 0; l < LOOPS; l++) {
		const char *error;
		loops[l].store = store;
		loops[l].mtloop = test_loop_new();
		loops[l].base = mt_loop_base(loops[l].mtloop);
		loops[l].port = mt_store_port_new(store, loops[l].mtloop, &error);
		assert_non_null(loops[l].port);
		for (unsigned int i = 0; i < SESSIONS; i++) {
			loops[l].sessions[i].loop = &loops[l];
			loops[l].sessions[i].id = l * SESSIONS + i;
		}
	}
	for (unsigned int l = 0; l < LOOPS; l++)
		assert_int_equal(pthread_create(&loops[l].thread, NULL, loop_main,
						&loops[l]), 0);
	for (unsigned int l = 0; l < LOOPS; l++) {
		pthread_join(loops[l].thread, NULL);
		assert_int_equal(loops[l].done_sessions, SESSIONS);
		assert_int_equal(loops[l].early, 0);
		assert_int_equal(loops[l].failed, 0);
		mt_store_port_free(&loops[l].port);
		mt_loop_free(&loops[l].mtloop);
	}
	assert_int_equal(delivered_count, TOTAL);

	struct mt_store_counters c;
	mt_store_counters_get(store, &c);
	print_message("commit_threads=%u deliveries=%llu flushes=%llu "
		      "flushes/delivery=%.3f max_batch=%llu retries=%llu\n",
		      commit_threads, (unsigned long long)c.deliveries,
		      (unsigned long long)c.flushes,
		      (double)c.flushes / (double)c.deliveries,
		      (unsigned long long)c.max_batch,
		      (unsigned long long)c.retries);
	assert_int_equal(c.deliveries, TOTAL);
	assert_true(c.flushes < c.deliveries);
	assert_true(c.max_batch > 1);
	verify_mailboxes(store);
	mt_store_close(&store);

	/* Once more after a restart. */
	store = test_store_open_with(test_path("store"), commit_threads, 0);
	verify_mailboxes(store);
	mt_store_close(&store);
	test_dir_remove();
}

static void test_loops_one_executor(void **state)
{
	run_loops(1);
}

static void test_loops_two_executors(void **state)
{
	run_loops(2);
}

/* Blocking callers */

#define WAITERS 8
#define PER_WAITER 50

static void *waiter_main(void *arg)
{
	struct mt_store *store = arg;
	static atomic_uint next;
	for (unsigned int i = 0; i < PER_WAITER; i++) {
		unsigned int seed = atomic_fetch_add(&next, 1);
		char *data = test_message(seed, 3000);
		struct mt_store_rcpt r = { .mailbox = seed % 2 ? "w-odd" : "w-even" };
		const char *error;
		unsigned int before = atomic_load(&test_fsyncs);
		enum mt_store_status status =
			mt_store_deliver_wait(store, &r, 1, data, 3000, &error);
		free(data);
		if (status != MT_STORE_OK || atomic_load(&test_fsyncs) <= before)
			return (void *)1;
	}
	return NULL;
}

static void test_blocking_callers(void **state)
{
	test_dir_make();
	struct mt_store *store = test_store_open();
	pthread_t threads[WAITERS];
	for (unsigned int i = 0; i < WAITERS; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, waiter_main, store), 0);
	for (unsigned int i = 0; i < WAITERS; i++) {
		void *ret;
		pthread_join(threads[i], &ret);
		assert_null(ret);
	}
	struct mt_store_counters c;
	mt_store_counters_get(store, &c);
	print_message("blocking: deliveries=%llu flushes=%llu\n",
		      (unsigned long long)c.deliveries, (unsigned long long)c.flushes);
	assert_int_equal(c.deliveries, WAITERS * PER_WAITER);
	assert_true(c.flushes < c.deliveries);
	struct mt_store_stat st;
	const char *error;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.messages, WAITERS * PER_WAITER);
	assert_int_equal(st.mailboxes, 2);
	mt_store_close(&store);
	test_dir_remove();
}

/* Two transactions taking two pages in opposite orders. */
struct deadlocker {
	struct mt_store *store;
	pthread_barrier_t *barrier;
	bool reverse;
	unsigned int attempts;
	int ret;
};

static int deadlock_body(struct mt_store *store, DB_TXN *txn, void *context)
{
	struct deadlocker *d = context;
	DB *first = d->reverse ? store->mailboxes : store->meta;
	DB *second = d->reverse ? store->meta : store->mailboxes;
	DBT key = { .data = "deadlock-test", .size = 13 };
	DBT data = { .data = "x", .size = 1 };
	int ret = first->put(first, txn, &key, &data, 0);
	if (ret != 0)
		return ret;
	if (++d->attempts == 1)
		pthread_barrier_wait(d->barrier);	/* both hold their first */
	return second->put(second, txn, &key, &data, 0);
}

static void *deadlock_main(void *arg)
{
	struct deadlocker *d = arg;
	d->ret = store_txn_run(d->store, deadlock_body, d, 0);
	return NULL;
}

static void test_deadlock_retried(void **state)
{
	test_dir_make();
	struct mt_store *store = test_store_open();
	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, 2);
	struct deadlocker d[2] = {
		{ .store = store, .barrier = &barrier, .reverse = false },
		{ .store = store, .barrier = &barrier, .reverse = true },
	};
	pthread_t threads[2];
	for (unsigned int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, deadlock_main, &d[i]), 0);
	for (unsigned int i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	pthread_barrier_destroy(&barrier);
	assert_int_equal(d[0].ret, 0);
	assert_int_equal(d[1].ret, 0);
	assert_int_equal(d[0].attempts + d[1].attempts, 3);	/* one lost once */
	struct mt_store_counters c;
	mt_store_counters_get(store, &c);
	assert_int_equal(c.retries, 1);
	mt_store_close(&store);
	test_dir_remove();
}

int main(void)
{
	mt_log_init("test-store-commit", MT_LOG_TARGET_STDERR);
	test_count_fsyncs();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loops_one_executor),
		cmocka_unit_test(test_loops_two_executors),
		cmocka_unit_test(test_blocking_callers),
		cmocka_unit_test(test_deadlock_retried),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
