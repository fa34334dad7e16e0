/* test-store.c — unit tests of the message store (store/store.h) on a
 * real Berkeley DB environment in a scratch directory: deliver, list, read
 * by ranges (chunk boundaries, a 2.6 MB body), expunge, quota, the in-use
 * lock (released at the owner's close unless an expunge is in flight), UIDL stability across close/reopen, the format-version refusal and
 * the version 1 and 2 upgrades (version 3: test-store-stream.c), the lazy expunge (purge queue, purger, backlog
 * across a close, purging on a full disk; the backlog the metrics read
 * without a scan, equal to store stat's),
 * the async API on an event_base (streaming read, cancel, freeing a port
 * with requests in flight), a full disk (ENOSPC injected through Berkeley
 * DB's I/O hooks) and a Berkeley DB panic (DB_RUNRECOVERY, set through
 * the environment handle, white-box) with the restart that recovers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test-store-util.h"
#include "store-private.h"	/* test_panic reaches the DB_ENV; references */
#include "buf.h"
#include "log.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <sys/wait.h>

static void test_deliver_list_read(void **state)
{
	struct mt_store *store = test_store_open();
	const size_t sizes[] = { 0, 1, 100, 24 * 1024, 200000, 2600000 };
	const unsigned int n = sizeof(sizes) / sizeof(sizes[0]);
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(test_deliver(store, "alice@example.test", i, sizes[i]),
				 i + 1);
	struct mt_store_mailbox *mbox;
	const char *error;
	assert_int_equal(mt_store_mailbox_open_sync(store, "alice@example.test",
						    &mbox, &error), MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), n);
	uint64_t total = 0;
	for (unsigned int i = 0; i < n; i++) {
		const struct mt_store_msg *msg = mt_store_mailbox_msg(mbox, i);
		assert_int_equal(msg->uid, i + 1);
		assert_int_equal(msg->size, sizes[i]);
		assert_int_equal(strlen(msg->uidl), 16);
		assert_true(msg->arrival > 0);
		for (unsigned int j = 0; j < i; j++)
			assert_string_not_equal(msg->uidl,
						mt_store_mailbox_msg(mbox, j)->uidl);
		total += sizes[i];
	}
	assert_int_equal(mt_store_mailbox_bytes(mbox), total);
	assert_null(mt_store_mailbox_msg(mbox, n));

	/* Every message read back whole, in steps that cross chunk
	 * boundaries at different places. */
	const size_t steps[] = { 1, 4093, 65536, 65328, 100000, MT_STORE_READ_MAX };
	for (unsigned int i = 0; i < n; i++) {
		char *want = test_message(i, sizes[i]);
		for (unsigned int s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			if (steps[s] == 1 && sizes[i] > 300000)
				continue;
			char *got = test_read_all(mbox, i, steps[s]);
			assert_memory_equal(got, want, sizes[i]);
			free(got);
		}
		free(want);
	}
	/* A range in the middle of the large one, and past its end. */
	char buf[5000], *want = test_message(5, sizes[5]);
	size_t got;
	assert_int_equal(mt_store_read_sync(mbox, 5, 1234567, buf, sizeof(buf),
					    &got, &error), MT_STORE_OK);
	assert_int_equal(got, sizeof(buf));
	assert_memory_equal(buf, want + 1234567, sizeof(buf));
	assert_int_equal(mt_store_read_sync(mbox, 5, sizes[5] - 10, buf, sizeof(buf),
					    &got, &error), MT_STORE_OK);
	assert_int_equal(got, 10);
	assert_int_equal(mt_store_read_sync(mbox, 5, sizes[5] + 10, buf, sizeof(buf),
					    &got, &error), MT_STORE_OK);
	assert_int_equal(got, 0);
	assert_int_equal(mt_store_read_sync(mbox, n, 0, buf, sizeof(buf), &got,
					    &error), MT_STORE_NOT_FOUND);
	free(want);
	mt_store_mailbox_close(&mbox);
	assert_null(mbox);

	/* An unknown mailbox opens empty and is not created. */
	assert_int_equal(mt_store_mailbox_open_sync(store, "nobody", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 0);
	mt_store_mailbox_close(&mbox);
	struct mt_store_stat st;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.mailboxes, 1);
	assert_int_equal(st.messages, n);
	assert_int_equal(st.bytes, total);
	mt_store_close(&store);
	assert_null(store);
}

static void test_multi_rcpt_prefix(void **state)
{
	struct mt_store *store = test_store_open();
	const char *body = "Subject: hi\r\n\r\nshared body\r\n";
	struct mt_store_rcpt rcpts[3] = {
		{ .mailbox = "a", .prefix = "Received: for <a>\r\n", .prefix_len = 19 },
		{ .mailbox = "b", .prefix = "Received: for <b>\r\n", .prefix_len = 19 },
		{ .mailbox = "a" },	/* the same mailbox twice: two messages */
	};
	const char *error;
	assert_int_equal(mt_store_deliver_wait(store, rcpts, 3, body, strlen(body),
					       &error), MT_STORE_OK);
	assert_int_equal(rcpts[0].uid, 1);
	assert_int_equal(rcpts[1].uid, 1);
	assert_int_equal(rcpts[2].uid, 2);
	struct mt_store_mailbox *mbox;
	assert_int_equal(mt_store_mailbox_open_sync(store, "a", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 2);
	char *m = test_read_all(mbox, 0, 7);
	assert_string_equal(m, "Received: for <a>\r\nSubject: hi\r\n\r\nshared body\r\n");
	free(m);
	m = test_read_all(mbox, 1, 4096);
	assert_string_equal(m, body);
	free(m);
	mt_store_mailbox_close(&mbox);

	/* A bad mailbox name fails that recipient only. */
	struct mt_store_rcpt bad[2] = { { .mailbox = "" }, { .mailbox = "b" } };
	assert_int_equal(mt_store_deliver_wait(store, bad, 2, body, strlen(body),
					       &error), MT_STORE_INVALID);
	assert_int_equal(bad[0].status, MT_STORE_INVALID);
	assert_int_equal(bad[1].status, MT_STORE_OK);
	assert_int_equal(bad[1].uid, 2);
	mt_store_close(&store);
}

static void test_expunge(void **state)
{
	struct mt_store *store = test_store_open();
	for (unsigned int i = 0; i < 5; i++)
		test_deliver(store, "bob", 100 + i, 1000 + i * 70000);
	struct mt_store_mailbox *mbox;
	const char *error;
	assert_int_equal(mt_store_mailbox_open_sync(store, "bob", &mbox, &error),
			 MT_STORE_OK);
	const uint32_t uids[] = { 2, 4, 99 };	/* 99 never existed */
	assert_int_equal(mt_store_expunge_wait(mbox, uids, 3, &error), MT_STORE_OK);
	/* The snapshot is unchanged; reading an expunged one says so. */
	assert_int_equal(mt_store_mailbox_count(mbox), 5);
	char buf[16];
	size_t got;
	assert_int_equal(mt_store_read_sync(mbox, 1, 0, buf, sizeof(buf), &got,
					    &error), MT_STORE_NOT_FOUND);
	/* Expunging them again is harmless. */
	assert_int_equal(mt_store_expunge_wait(mbox, uids, 2, &error), MT_STORE_OK);
	mt_store_mailbox_close(&mbox);

	assert_int_equal(mt_store_mailbox_open_sync(store, "bob", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 3);
	const uint32_t left[] = { 1, 3, 5 };
	for (unsigned int i = 0; i < 3; i++) {
		const struct mt_store_msg *msg = mt_store_mailbox_msg(mbox, i);
		assert_int_equal(msg->uid, left[i]);
		char *want = test_message(100 + left[i] - 1, msg->size);
		char *have = test_read_all(mbox, i, 65536);
		assert_memory_equal(have, want, msg->size);
		free(want);
		free(have);
	}
	assert_int_equal(mt_store_mailbox_bytes(mbox), 1000 * 3 + 70000 * (0 + 2 + 4));
	mt_store_mailbox_close(&mbox);
	/* uids are never reused. */
	assert_int_equal(test_deliver(store, "bob", 7, 10), 6);
	struct mt_store_stat st;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.messages, 4);
	assert_int_equal(st.bytes, 1000 * 3 + 70000 * 6 + 10);
	struct mt_store_counters c;
	mt_store_counters_get(store, &c);
	assert_int_equal(c.expunges, 2);
	assert_int_equal(c.expunged, 2);	/* the second removed nothing */
	mt_store_close(&store);
}

static void test_quota(void **state)
{
	struct mt_store *store = test_store_open();
	char *data = test_message(1, 40000);
	const char *error;
	for (unsigned int i = 0; i < 2; i++) {
		struct mt_store_rcpt r = { .mailbox = "carol", .quota = 100000 };
		assert_int_equal(mt_store_deliver_wait(store, &r, 1, data, 40000, &error),
				 MT_STORE_OK);
	}
	struct mt_store_rcpt rcpts[2] = {
		{ .mailbox = "carol", .quota = 100000 },
		{ .mailbox = "dave", .quota = 100000 },
	};
	assert_int_equal(mt_store_deliver_wait(store, rcpts, 2, data, 40000, &error),
			 MT_STORE_OVER_QUOTA);
	assert_non_null(strstr(error, "quota"));
	assert_int_equal(rcpts[0].status, MT_STORE_OVER_QUOTA);
	assert_int_equal(rcpts[1].status, MT_STORE_OK);
	/* Exactly at the quota is allowed; a message bigger than it is not. */
	struct mt_store_rcpt exact = { .mailbox = "carol", .quota = 120000 };
	assert_int_equal(mt_store_deliver_wait(store, &exact, 1, data, 40000, &error),
			 MT_STORE_OK);
	struct mt_store_rcpt huge = { .mailbox = "erin", .quota = 39999 };
	assert_int_equal(mt_store_deliver_wait(store, &huge, 1, data, 40000, &error),
			 MT_STORE_OVER_QUOTA);
	struct mt_store_mailbox *mbox;
	assert_int_equal(mt_store_mailbox_open_sync(store, "carol", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 3);
	assert_int_equal(mt_store_mailbox_bytes(mbox), 120000);
	mt_store_mailbox_close(&mbox);
	free(data);
	mt_store_close(&store);
}

static void test_in_use(void **state)
{
	struct mt_store *store = test_store_open(), *other_store = NULL;
	test_deliver(store, "frank", 1, 10);
	struct mt_store_mailbox *mbox, *other;
	const char *error;
	assert_int_equal(mt_store_mailbox_open_sync(store, "frank", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_open_sync(store, "frank", &other, &error),
			 MT_STORE_IN_USE);
	assert_null(other);
	/* Deliveries go on while it is open, not into the snapshot. */
	test_deliver(store, "frank", 2, 10);
	assert_int_equal(mt_store_mailbox_count(mbox), 1);
	/* Another mailbox is not affected. */
	assert_int_equal(mt_store_mailbox_open_sync(store, "grace", &other, &error),
			 MT_STORE_OK);
	mt_store_mailbox_close(&other);
	mt_store_mailbox_close(&mbox);
	assert_int_equal(mt_store_mailbox_open_sync(store, "frank", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 2);

	/* A read the owner cancelled still holds the mailbox when it closes
	 * (a reference): the next session gets it all the same. */
	struct mt_store_mailbox *reading = store_mailbox_ref(mbox);
	mt_store_mailbox_close(&mbox);
	assert_int_equal(mt_store_mailbox_open_sync(store, "frank", &mbox, &error),
			 MT_STORE_OK);
	store_mailbox_unref(&reading);	/* the old view goes; the lock stays */
	assert_int_equal(mt_store_mailbox_open_sync(store, "frank", &other, &error),
			 MT_STORE_IN_USE);
	/* An expunge in flight keeps it until the request is freed. */
	struct mt_store_mailbox *expunging = store_mailbox_ref(mbox);
	store_mailbox_writer(expunging, true);
	mt_store_mailbox_close(&mbox);
	assert_int_equal(mt_store_mailbox_open_sync(store, "frank", &other, &error),
			 MT_STORE_IN_USE);
	store_mailbox_writer(expunging, false);
	store_mailbox_unref(&expunging);
	assert_int_equal(mt_store_mailbox_open_sync(store, "frank", &mbox, &error),
			 MT_STORE_OK);
	mt_store_mailbox_close(&mbox);

	/* One serving process per store; mailtierctl may join. */
	struct mt_store_settings set = {
		.home = test_path("store"), .mode = MT_STORE_MODE_SERVE,
		.create = true, .cache_size = 8u << 20,
	};
	assert_int_equal(mt_store_open(&set, &other_store, &error), MT_STORE_IN_USE);
	assert_non_null(strstr(error, "in use by another mailtier-popstore"));
	mt_store_close(&store);
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	mt_store_close(&store);
}

static void test_uidl_stable(void **state)
{
	struct mt_store *store = test_store_open();
	for (unsigned int i = 0; i < 20; i++)
		test_deliver(store, i % 2 ? "odd" : "even", i, 500 + i);
	struct mt_store_mailbox *mbox;
	const char *error;
	struct mt_store_msg before[10];
	assert_int_equal(mt_store_mailbox_open_sync(store, "odd", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 10);
	for (unsigned int i = 0; i < 10; i++)
		before[i] = *mt_store_mailbox_msg(mbox, i);
	mt_store_mailbox_close(&mbox);
	mt_store_close(&store);

	store = test_store_open();
	assert_int_equal(mt_store_mailbox_open_sync(store, "odd", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 10);
	for (unsigned int i = 0; i < 10; i++) {
		const struct mt_store_msg *msg = mt_store_mailbox_msg(mbox, i);
		assert_int_equal(msg->uid, before[i].uid);
		assert_int_equal(msg->size, before[i].size);
		assert_int_equal(msg->arrival, before[i].arrival);
		assert_string_equal(msg->uidl, before[i].uidl);
	}
	mt_store_mailbox_close(&mbox);
	/* The next uid continues after a restart. */
	assert_int_equal(test_deliver(store, "odd", 99, 5), 11);
	mt_store_close(&store);
}

/* Rewrite meta.db's format-version record directly. */
static void set_format_version(const char *home, uint32_t version)
{
	DB_ENV *env;
	DB *db;
	assert_int_equal(db_env_create(&env, 0), 0);
	assert_int_equal(env->open(env, home, DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
				   DB_INIT_LOCK | DB_INIT_MPOOL | DB_RECOVER |
				   DB_REGISTER, 0600), 0);
	assert_int_equal(db_create(&db, env, 0), 0);
	assert_int_equal(db->open(db, NULL, "meta.db", NULL, DB_BTREE,
				  DB_AUTO_COMMIT, 0), 0);
	unsigned char v[4] = { version >> 24, version >> 16, version >> 8, version };
	DBT key = { .data = "format-version", .size = 14 };
	DBT data = { .data = v, .size = 4 };
	assert_int_equal(db->put(db, NULL, &key, &data, DB_AUTO_COMMIT), 0);
	assert_int_equal(db->close(db, 0), 0);
	assert_int_equal(env->close(env, 0), 0);
}

/* What an older store looked like: version 3 had no refs.db and
 * partial.db, version 2 no delivered.db either, version 1 no purge.db. */
static void make_version(const char *home, uint32_t version)
{
	set_format_version(home, version);
	DB_ENV *env;
	assert_int_equal(db_env_create(&env, 0), 0);
	assert_int_equal(env->open(env, home, DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
				   DB_INIT_LOCK | DB_INIT_MPOOL | DB_RECOVER |
				   DB_REGISTER, 0600), 0);
	assert_int_equal(env->dbremove(env, NULL, "refs.db", NULL,
				       DB_AUTO_COMMIT), 0);
	assert_int_equal(env->dbremove(env, NULL, "partial.db", NULL,
				       DB_AUTO_COMMIT), 0);
	if (version < 3)
		assert_int_equal(env->dbremove(env, NULL, "delivered.db", NULL,
					       DB_AUTO_COMMIT), 0);
	if (version < 2)
		assert_int_equal(env->dbremove(env, NULL, "purge.db", NULL,
					       DB_AUTO_COMMIT), 0);
	assert_int_equal(env->close(env, 0), 0);
}

static void test_format_version(void **state)
{
	struct mt_store *store = test_store_open();
	test_deliver(store, "henry", 1, 10);
	mt_store_close(&store);
	set_format_version(test_path("store"), 99);

	char home[512], purge_db[600], delivered_db[600];	/* test_path()'s buffer is reused */
	snprintf(home, sizeof(home), "%s", test_path("store"));
	snprintf(purge_db, sizeof(purge_db), "%s/purge.db", home);
	snprintf(delivered_db, sizeof(delivered_db), "%s/delivered.db", home);
	struct mt_store_settings set = {
		.home = home, .mode = MT_STORE_MODE_SERVE,
		.create = true, .cache_size = 8u << 20,
	};
	const char *error = NULL;
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_BAD_FORMAT);
	assert_null(store);
	assert_non_null(strstr(error, "format version 99"));
	assert_non_null(strstr(error, "reads version 5"));
	set.mode = MT_STORE_MODE_ADMIN;
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_BAD_FORMAT);

	/* A version 1 store (no purge.db): mailtierctl reads it as it is,
	 * the daemon upgrades it in place, with its data. */
	make_version(home, 1);
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	struct mt_store_stat st;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.format_version, 1);
	assert_int_equal(st.messages, 1);
	assert_int_equal(st.purge_messages, 0);
	mt_store_close(&store);
	assert_int_equal(access(purge_db, F_OK), -1);
	assert_int_equal(access(delivered_db, F_OK), -1);
	set.mode = MT_STORE_MODE_SERVE;
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.format_version, MT_STORE_FORMAT_VERSION);
	assert_int_equal(st.messages, 1);
	struct mt_store_mailbox *mbox;
	assert_int_equal(mt_store_mailbox_open_sync(store, "henry", &mbox, &error),
			 MT_STORE_OK);
	const uint32_t uid = 1;
	assert_int_equal(mt_store_expunge_wait(mbox, &uid, 1, &error), MT_STORE_OK);
	mt_store_mailbox_close(&mbox);
	mt_store_close(&store);
	assert_int_equal(access(purge_db, F_OK), 0);
	assert_int_equal(access(delivered_db, F_OK), 0);
	/* Upgraded for good: version 1 code now refuses it. */
	set.mode = MT_STORE_MODE_ADMIN;
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.format_version, MT_STORE_FORMAT_VERSION);
	assert_int_equal(st.messages, 0);
	mt_store_close(&store);

	/* A version 2 store (no delivered.db): read as it is, upgraded by the
	 * daemon, its purge queue and messages kept. */
	store = test_store_open();
	test_deliver(store, "henry", 2, 10);
	mt_store_close(&store);
	make_version(home, 2);
	set.home = home;
	set.mode = MT_STORE_MODE_ADMIN;
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.format_version, 2);
	assert_int_equal(st.messages, 1);
	mt_store_close(&store);
	assert_int_equal(access(delivered_db, F_OK), -1);
	set.mode = MT_STORE_MODE_SERVE;
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.format_version, MT_STORE_FORMAT_VERSION);
	assert_int_equal(st.messages, 1);
	mt_store_close(&store);
	assert_int_equal(access(delivered_db, F_OK), 0);

	/* Nothing there: admin mode and create=false refuse, naming it. */
	set.home = test_path("absent");
	set.mode = MT_STORE_MODE_ADMIN;
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_INVALID);
	assert_non_null(strstr(error, "absent"));
	set.mode = MT_STORE_MODE_SERVE;
	set.create = false;
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_INVALID);
	set.home = "";
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_INVALID);
}

/* Async: one loop, a session-like context driving the requests. */
struct async_state {
	struct mt_loop *loop;
	struct event_base *base;
	struct mt_store_port *port;
	struct mt_store_mailbox *mbox;
	struct mt_buf streamed;
	unsigned int callbacks;
	enum mt_store_status last;
	uint32_t uid;
	bool done;
};

static void async_deliver_cb(struct mt_store_req *req, void *context)
{
	struct async_state *st = context;
	unsigned int count;
	const struct mt_store_rcpt *r = mt_store_req_rcpts(req, &count);
	assert_int_equal(count, 1);
	st->last = mt_store_req_status(req, NULL);
	st->uid = r[0].uid;
	st->callbacks++;
	event_base_loopbreak(st->base);
}

static void async_open_cb(struct mt_store_req *req, void *context)
{
	struct async_state *st = context;
	st->last = mt_store_req_status(req, NULL);
	st->mbox = mt_store_req_mailbox(req);
	st->callbacks++;
	event_base_loopbreak(st->base);
}

/* RETR-style streaming: ask for the next piece from each completion. */
static void async_read_cb(struct mt_store_req *req, void *context)
{
	struct async_state *st = context;
	st->callbacks++;
	st->last = mt_store_req_status(req, NULL);
	size_t size;
	const void *data = mt_store_req_data(req, &size);
	if (st->last != MT_STORE_OK || size == 0) {
		st->done = true;
		event_base_loopbreak(st->base);
		return;
	}
	mt_buf_append(&st->streamed, data, size);
	(void)mt_store_read(st->port, st->mbox, 0, st->streamed.len, 65536,
			    async_read_cb, st);
}

static void async_plain_cb(struct mt_store_req *req, void *context)
{
	struct async_state *st = context;
	st->last = mt_store_req_status(req, NULL);
	st->callbacks++;
	event_base_loopbreak(st->base);
}

static void never_cb(struct mt_store_req *req, void *context)
{
	fail_msg("a cancelled request's callback ran");
}

static void run_once(struct async_state *st)
{
	struct timeval tv = { 10, 0 };
	event_base_loopexit(st->base, &tv);
	assert_int_equal(event_base_dispatch(st->base), 0);
	assert_false(event_base_got_exit(st->base));
}

static void test_async(void **state)
{
	struct mt_store *store = test_store_open();
	struct async_state st = { .loop = test_loop_new() };
	st.base = mt_loop_base(st.loop);
	const char *error;
	st.port = mt_store_port_new(store, st.loop, &error);
	assert_non_null(st.port);

	const size_t big = 2600000;
	char *want = test_message(42, big);
	struct mt_buf body = MT_BUF_INIT;
	mt_buf_append(&body, want, big);
	struct mt_store_rcpt rcpt = { .mailbox = "ivan" };
	(void)mt_store_deliver(st.port, &rcpt, 1, &body, async_deliver_cb, &st);
	assert_int_equal(body.len, 0);	/* taken over */
	assert_int_equal(st.callbacks, 0);	/* never from inside the call */
	run_once(&st);
	assert_int_equal(st.last, MT_STORE_OK);
	assert_int_equal(st.uid, 1);

	(void)mt_store_mailbox_open(st.port, "ivan", async_open_cb, &st);
	run_once(&st);
	assert_int_equal(st.last, MT_STORE_OK);
	assert_non_null(st.mbox);
	assert_int_equal(mt_store_mailbox_count(st.mbox), 1);
	/* A second open, async this time, is refused. */
	(void)mt_store_mailbox_open(st.port, "ivan", async_plain_cb, &st);
	run_once(&st);
	assert_int_equal(st.last, MT_STORE_IN_USE);

	(void)mt_store_read(st.port, st.mbox, 0, 0, 65536, async_read_cb, &st);
	while (!st.done)
		run_once(&st);
	assert_int_equal(st.last, MT_STORE_OK);
	assert_int_equal(st.streamed.len, big);
	assert_memory_equal(st.streamed.data, want, big);

	/* Cancelled: the callback never runs. */
	struct mt_store_req *req = mt_store_read(st.port, st.mbox, 0, 0, 100,
						 never_cb, &st);
	mt_store_req_cancel(req);
	/* A bad index completes (NOT_FOUND), still asynchronously. */
	unsigned int before = st.callbacks;
	(void)mt_store_read(st.port, st.mbox, 7, 0, 100, async_plain_cb, &st);
	assert_int_equal(st.callbacks, before);
	run_once(&st);
	assert_int_equal(st.last, MT_STORE_NOT_FOUND);

	uint32_t uid = 1;
	(void)mt_store_expunge(st.port, st.mbox, &uid, 1, async_plain_cb, &st);
	run_once(&st);
	assert_int_equal(st.last, MT_STORE_OK);
	mt_store_mailbox_close(&st.mbox);

	/* Freed with requests in flight: no callbacks, nothing leaks, and the
	 * mailbox lock goes with the last of them. */
	(void)mt_store_mailbox_open(st.port, "ivan", never_cb, &st);
	struct mt_buf b2 = MT_BUF_INIT;
	mt_buf_append_str(&b2, "x");
	(void)mt_store_deliver(st.port, &rcpt, 1, &b2, never_cb, &st);
	mt_store_port_free(&st.port);
	assert_null(st.port);
	mt_store_close(&store);	/* waits for the delivery */

	store = test_store_open();
	struct mt_store_mailbox *mbox;
	assert_int_equal(mt_store_mailbox_open_sync(store, "ivan", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 1);	/* the "x" */
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->uid, 2);
	mt_store_mailbox_close(&mbox);
	mt_store_close(&store);
	mt_buf_free(&st.streamed);
	free(want);
	mt_loop_free(&st.loop);
}

/* A full disk, injected through Berkeley DB's write hooks. */
static atomic_bool disk_full;

static ssize_t full_write(int fd, const void *buf, size_t size)
{
	if (atomic_load(&disk_full)) {
		errno = ENOSPC;
		return -1;
	}
	return write(fd, buf, size);
}

static ssize_t full_pwrite(int fd, const void *buf, size_t size, off_t off)
{
	if (atomic_load(&disk_full)) {
		errno = ENOSPC;
		return -1;
	}
	return pwrite(fd, buf, size, off);
}

static void test_disk_full(void **state)
{
	db_env_set_func_write(full_write);
	db_env_set_func_pwrite(full_pwrite);
	/* 1 MB log files: a 2.6 MB message cannot sit in the log buffer, so
	 * the write fails inside the transaction. */
	struct mt_store *store = test_store_open_with(test_path("store"), 1, 1u << 20);
	test_deliver(store, "judy", 1, 1000);
	const size_t big = 2600000;
	char *data = test_message(2, big);
	const char *error;

	atomic_store(&disk_full, true);
	struct mt_store_rcpt r = { .mailbox = "judy" };
	enum mt_store_status status = mt_store_deliver_wait(store, &r, 1, data, big,
							    &error);
	atomic_store(&disk_full, false);
	assert_int_equal(status, MT_STORE_NO_SPACE);
	assert_int_equal(r.status, MT_STORE_NO_SPACE);
	assert_false(mt_store_failed(store));
	struct mt_store_mailbox *mbox;
	assert_int_equal(mt_store_mailbox_open_sync(store, "judy", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 1);	/* nothing half-written */
	mt_store_mailbox_close(&mbox);

	/* Space is back: normal service once a probe (every 250 ms at most)
	 * has seen it. */
	char *next = test_message(3, big);
	r = (struct mt_store_rcpt){ .mailbox = "judy" };
	status = MT_STORE_NO_SPACE;
	for (unsigned int i = 0; i < 300 && status == MT_STORE_NO_SPACE; i++) {
		usleep(10000);
		status = mt_store_deliver_wait(store, &r, 1, next, big, &error);
	}
	assert_int_equal(status, MT_STORE_OK);
	assert_int_equal(r.uid, 2);
	free(next);
	mt_store_close(&store);
	db_env_set_func_write(NULL);
	db_env_set_func_pwrite(NULL);

	store = test_store_open();
	assert_int_equal(mt_store_mailbox_open_sync(store, "judy", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 2);
	char *have = test_read_all(mbox, 1, MT_STORE_READ_MAX);
	char *want = test_message(3, big);
	assert_memory_equal(have, want, big);
	free(have);
	free(want);
	mt_store_mailbox_close(&mbox);
	mt_store_close(&store);
	free(data);
}

static struct mt_store *store_open_delay(unsigned int purge_delay_msecs)
{
	struct mt_store_settings set = {
		.home = test_path("store"), .mode = MT_STORE_MODE_SERVE,
		.create = true, .cache_size = 16u << 20, .commit_threads = 1,
		.log_file_size = 1u << 20, .purge_delay_msecs = purge_delay_msecs,
	};
	struct mt_store *store = NULL;
	const char *error = NULL;
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	return store;
}

static void expunge_uids(struct mt_store *store, const char *name,
			 const uint32_t *uids, unsigned int count)
{
	struct mt_store_mailbox *mbox;
	const char *error;
	assert_int_equal(mt_store_mailbox_open_sync(store, name, &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_expunge_wait(mbox, uids, count, &error), MT_STORE_OK);
	mt_store_mailbox_close(&mbox);
}

/* The backlog as the metrics read it, and the raw count (which must not
 * go below 0 once the purger is done: every expunge counted). */
static uint64_t backlog_of(struct mt_store *store)
{
	struct mt_store_counters c;
	mt_store_counters_get(store, &c);
	return c.purge_backlog;
}

static void wait_backlog_zero(struct mt_store *store)
{
	for (unsigned int i = 0; i < 500 && atomic_load(&store->purge_backlog) != 0; i++)
		usleep(10000);
	assert_int_equal(atomic_load(&store->purge_backlog), 0);
}

static struct mt_store_stat stat_of(struct mt_store *store)
{
	struct mt_store_stat st;
	const char *error;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	return st;
}

/* Lazy expunge: the expunge removes the messages from listings, reads,
 * totals and quota at once and queues the bodies; the purger deletes them
 * later, also after a close (or crash) in between. */
static void test_lazy_expunge(void **state)
{
	/* A purger that would wait an hour: the bodies stay queued. */
	struct mt_store *store = store_open_delay(3600 * 1000);
	const size_t sizes[] = { 1000, 200000, 3000, 4000 };
	for (unsigned int i = 0; i < 4; i++)
		test_deliver(store, "lazy", 10 + i, sizes[i]);
	const unsigned int chunks = 1 + 4 + 1 + 1;	/* 200000: 4 chunks */
	assert_int_equal(test_db_records(store->bodies), chunks);

	struct mt_store_mailbox *snap;
	const char *error;
	assert_int_equal(mt_store_mailbox_open_sync(store, "lazy", &snap, &error),
			 MT_STORE_OK);
	const uint32_t uids[] = { 1, 2 };
	assert_int_equal(mt_store_expunge_wait(snap, uids, 2, &error), MT_STORE_OK);
	/* Gone from reads although the bodies are still there. */
	char buf[64];
	size_t got;
	assert_int_equal(mt_store_read_sync(snap, 1, 0, buf, sizeof(buf), &got, &error),
			 MT_STORE_NOT_FOUND);
	assert_int_equal(mt_store_read_sync(snap, 2, 0, buf, sizeof(buf), &got, &error),
			 MT_STORE_OK);
	mt_store_mailbox_close(&snap);
	assert_int_equal(test_db_records(store->bodies), chunks);
	struct mt_store_stat st = stat_of(store);
	assert_int_equal(st.messages, 2);
	assert_int_equal(st.bytes, 3000 + 4000);
	assert_int_equal(st.purge_messages, 2);
	assert_int_equal(st.purge_bytes, 1000 + 200000);
	assert_int_equal(backlog_of(store), 2);
	/* Gone from listings; the quota counts only listed messages. */
	struct mt_store_mailbox *mbox;
	assert_int_equal(mt_store_mailbox_open_sync(store, "lazy", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 2);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->uid, 3);
	mt_store_mailbox_close(&mbox);
	char *data = test_message(20, 3000);
	struct mt_store_rcpt r = { .mailbox = "lazy", .quota = 10000 };
	assert_int_equal(mt_store_deliver_wait(store, &r, 1, data, 3000, &error),
			 MT_STORE_OK);
	assert_int_equal(r.uid, 5);	/* uids are not reused */
	free(data);

	/* Closed (as after a crash) with the bodies still queued: the next
	 * open's purger deletes them by itself. */
	mt_store_close(&store);
	store = store_open_delay(0);
	for (unsigned int i = 0; i < 500 && stat_of(store).purge_bytes > 0; i++)
		usleep(10000);
	st = stat_of(store);
	assert_int_equal(st.purge_messages, 0);
	assert_int_equal(st.purge_bytes, 0);
	assert_int_equal(st.messages, 3);
	assert_int_equal(test_db_records(store->bodies), 3);
	assert_int_equal(test_db_records(store->purge), 0);
	wait_backlog_zero(store);	/* counted at open, purged since */
	struct mt_store_counters c;
	mt_store_counters_get(store, &c);
	assert_int_equal(c.purged, 2);
	assert_true(c.purge_txns >= 1);
	assert_int_equal(mt_store_mailbox_open_sync(store, "lazy", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 3);
	for (unsigned int i = 0; i < 2; i++) {
		char *have = test_read_all(mbox, i, 1000);
		char *want = test_message(12 + i, sizes[2 + i]);
		assert_memory_equal(have, want, sizes[2 + i]);
		free(have);
		free(want);
	}
	mt_store_mailbox_close(&mbox);

	/* The running purger: kicked by the expunge's flush. */
	const uint32_t more[] = { 3 };
	expunge_uids(store, "lazy", more, 1);
	for (unsigned int i = 0; i < 500 && stat_of(store).purge_bytes > 0; i++)
		usleep(10000);
	assert_int_equal(stat_of(store).purge_messages, 0);
	assert_int_equal(test_db_records(store->bodies), 2);
	wait_backlog_zero(store);
	mt_store_close(&store);
}

/* A full disk: no purge is tried (or one fails and is kept) until space
 * returns; then the same bodies are purged, and the chunks of a delivery
 * the full disk refused too. */
static void test_purge_disk_full(void **state)
{
	db_env_set_func_write(full_write);
	db_env_set_func_pwrite(full_pwrite);
	struct mt_store *store = store_open_delay(3600 * 1000);
	test_deliver(store, "pat", 1, 5000);
	test_deliver(store, "pat", 2, 150000);
	const uint32_t uids[] = { 1, 2 };
	expunge_uids(store, "pat", uids, 2);
	assert_int_equal(stat_of(store).purge_messages, 2);

	/* The disk fills: a delivery fails, the store is in no-space mode. */
	atomic_store(&disk_full, true);
	char *big = test_message(3, 2600000);
	struct mt_store_rcpt r = { .mailbox = "pat" };
	const char *error;
	assert_int_equal(mt_store_deliver_wait(store, &r, 1, big, 2600000, &error),
			 MT_STORE_NO_SPACE);
	unsigned int purged = 99;
	assert_int_equal(mt_store_purge_sync(store, &purged, &error), MT_STORE_NO_SPACE);
	assert_int_equal(purged, 0);
	assert_int_equal(stat_of(store).purge_messages, 2);
	assert_false(mt_store_failed(store));

	/* Space is back: the queue is purged, nothing was lost. */
	atomic_store(&disk_full, false);
	enum mt_store_status status = MT_STORE_NO_SPACE;
	for (unsigned int i = 0; i < 300 && status == MT_STORE_NO_SPACE; i++) {
		usleep(10000);	/* until a probe (every 250 ms at most) */
		status = mt_store_purge_sync(store, &purged, &error);
	}
	assert_int_equal(status, MT_STORE_OK);
	assert_int_equal(purged, 2);
	assert_int_equal(stat_of(store).purge_messages, 0);
	/* So are the chunks the refused delivery had written (its abort
	 * waited for the space). */
	assert_int_equal(test_db_records(store->bodies), 0);
	assert_int_equal(test_db_records(store->partial), 0);
	assert_int_equal(test_deliver(store, "pat", 4, 100), 3);
	mt_store_close(&store);
	db_env_set_func_write(NULL);
	db_env_set_func_pwrite(NULL);
	free(big);
}

/* The in-process side of a panic, in a child (Berkeley DB leaks the
 * handles of a panicked environment at close, so the leak checker must not
 * see it): every kind of call answers MT_STORE_FATAL, close returns. */
static int panic_in_process(void)
{
	struct mt_store *store = test_store_open();
	test_deliver(store, "kim", 2, 100);
	if (store->env->set_flags(store->env, DB_PANIC_ENVIRONMENT, 1) != 0)
		return 1;
	struct mt_store_rcpt r = { .mailbox = "kim" };
	const char *error;
	if (mt_store_deliver_wait(store, &r, 1, "x", 1, &error) != MT_STORE_FATAL ||
	    r.status != MT_STORE_FATAL || !mt_store_failed(store))
		return 2;
	struct mt_store_mailbox *mbox;
	if (mt_store_mailbox_open_sync(store, "kim", &mbox, &error) != MT_STORE_FATAL)
		return 3;
	struct async_state st = { .loop = test_loop_new() };
	st.base = mt_loop_base(st.loop);
	st.port = mt_store_port_new(store, st.loop, &error);
	struct mt_buf body = MT_BUF_INIT;
	mt_buf_append_str(&body, "y");
	(void)mt_store_deliver(st.port, &r, 1, &body, async_deliver_cb, &st);
	run_once(&st);
	if (st.last != MT_STORE_FATAL)
		return 4;
	(void)mt_store_mailbox_open(st.port, "kim", async_open_cb, &st);
	run_once(&st);
	if (st.last != MT_STORE_FATAL || st.mbox != NULL)
		return 5;
	mt_store_port_free(&st.port);
	mt_loop_free(&st.loop);
	mt_store_close(&store);
	return 0;
}

/* A daemon that panics and exits without closing anything. */
static int panic_and_exit(void)
{
	struct mt_store *store = test_store_open();
	test_deliver(store, "kim", 1, 100);
	(void)store->env->set_flags(store->env, DB_PANIC_ENVIRONMENT, 1);
	struct mt_store_rcpt r = { .mailbox = "kim" };
	const char *error;
	enum mt_store_status status = mt_store_deliver_wait(store, &r, 1, "x", 1, &error);
	return status == MT_STORE_FATAL && mt_store_failed(store) ? 0 : 1;
}

static void run_child(int (*fn)(void))
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn());
	int wstatus;
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	assert_true(WIFEXITED(wstatus));
	assert_int_equal(WEXITSTATUS(wstatus), 0);
}

static void test_panic(void **state)
{
	/* Each time, the restart (the next open) recovers: every delivery
	 * acknowledged before the panic is there, and service is normal. */
	run_child(panic_and_exit);
	run_child(panic_in_process);
	struct mt_store *store = test_store_open();
	assert_false(mt_store_failed(store));
	struct mt_store_mailbox *mbox;
	const char *error;
	assert_int_equal(mt_store_mailbox_open_sync(store, "kim", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 2);
	mt_store_mailbox_close(&mbox);
	assert_int_equal(test_deliver(store, "kim", 3, 100), 3);
	mt_store_close(&store);
}

int main(void)
{
	mt_log_init("test-store", MT_LOG_TARGET_STDERR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_deliver_list_read, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_multi_rcpt_prefix, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_expunge, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_quota, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_in_use, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_uidl_stable, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_format_version, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_async, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_disk_full, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_lazy_expunge, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_purge_disk_full, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_panic, test_dir_setup, test_dir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
