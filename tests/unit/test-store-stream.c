/* test-store-stream.c — unit tests of streamed delivery (store.h,
 * mt_store_body_*) on a real Berkeley DB environment: a multi-chunk body
 * appended in odd pieces with at most two writes in flight, delivered to
 * three recipients who share it (one copy in body.db), read back byte for
 * byte by ranges across the prefix/body and chunk boundaries, purged only
 * with the last of its messages; an abort, and a delivery no recipient
 * takes, leave no chunk once purged; a process that dies mid-body leaves a
 * half-written body that the next open sweeps; a message stored by a
 * version 3 store (all its bytes in its own chunks) is read and purged
 * after the upgrade to version 4. White-box where it counts records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test-store-util.h"
#include "store-private.h"	/* the databases, to count their records */
#include "buf.h"
#include "log.h"

#include <event2/event.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG (3u * 1024 * 1024 + 12345)	/* 49 chunks and a bit */

/* A session-like writer: appends while fewer than two writes are in
 * flight, and runs the loop until a write is done otherwise. */
struct writer {
	struct mt_loop *loop;
	struct event_base *base;
	struct mt_store_port *port;
	struct mt_store_body *body;
	unsigned int callbacks, max_writes;
	bool delivered;
	enum mt_store_status status;
	struct mt_store_rcpt results[4];
	unsigned int result_count;
};

static void written_cb(struct mt_store_body *body, void *context)
{
	struct writer *w = context;
	assert_ptr_equal(body, w->body);
	w->callbacks++;
	event_base_loopbreak(w->base);
}

static void delivered_cb(struct mt_store_req *req, void *context)
{
	struct writer *w = context;
	const struct mt_store_rcpt *r = mt_store_req_rcpts(req, &w->result_count);
	assert_true(w->result_count <= 4);
	memcpy(w->results, r, w->result_count * sizeof(*r));
	w->status = mt_store_req_status(req, NULL);
	w->delivered = true;
	event_base_loopbreak(w->base);
}

static void writer_run(struct writer *w)
{
	struct timeval tv = { 10, 0 };
	event_base_loopexit(w->base, &tv);
	assert_int_equal(event_base_dispatch(w->base), 0);
	assert_false(event_base_got_exit(w->base));
}

static void writer_init(struct writer *w, struct mt_store *store)
{
	const char *error;
	memset(w, 0, sizeof(*w));
	w->loop = test_loop_new();
	w->base = mt_loop_base(w->loop);
	w->port = mt_store_port_new(store, w->loop, &error);
	assert_non_null(w->port);
}

static void writer_free(struct writer *w)
{
	mt_store_port_free(&w->port);
	mt_loop_free(&w->loop);
}

/* Append data in pieces of step bytes, with back-pressure at two writes. */
static void writer_append(struct writer *w, const char *data, size_t size,
			  size_t step)
{
	w->body = mt_store_body_begin(w->port, written_cb, w);
	for (size_t off = 0; off < size; off += step) {
		while (mt_store_body_writes(w->body) >= 2)
			writer_run(w);
		mt_store_body_append(w->body, data + off,
				     size - off < step ? size - off : step);
		if (mt_store_body_writes(w->body) > w->max_writes)
			w->max_writes = mt_store_body_writes(w->body);
	}
	assert_int_equal(mt_store_body_size(w->body), size);
}

static void writer_deliver(struct writer *w, const struct mt_store_rcpt *rcpts,
			   unsigned int count)
{
	(void)mt_store_body_deliver(&w->body, rcpts, count, delivered_cb, w);
	assert_null(w->body);
	while (!w->delivered)
		writer_run(w);
}

static unsigned int chunks_of(size_t size)
{
	return (unsigned int)((size + STORE_CHUNK_SIZE - 1) / STORE_CHUNK_SIZE);
}

/* Purge until purge.db is empty. The store's own purger thread runs
 * meanwhile and may hold a batch in its transaction while this one looks
 * (seen under ASan): a round that found nothing to do is tried again for
 * up to 5 s, so what is asserted is that every record does go. */
static void purge_all(struct mt_store *store)
{
	unsigned int purged;
	const char *error;
	for (int i = 0; i < 500; i++) {
		assert_int_equal(mt_store_purge_sync(store, &purged, &error), MT_STORE_OK);
		if (test_db_records(store->purge) == 0)
			return;
		usleep(10000);
	}
}

static void expunge_one(struct mt_store *store, const char *name, uint32_t uid)
{
	struct mt_store_mailbox *mbox;
	const char *error;
	assert_int_equal(mt_store_mailbox_open_sync(store, name, &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_expunge_wait(mbox, &uid, 1, &error), MT_STORE_OK);
	mt_store_mailbox_close(&mbox);
}

/* Message 0 of name, whole and by ranges, is prefix + body. */
static void check_message(struct mt_store *store, const char *name,
			  const char *prefix, const char *body, size_t size)
{
	struct mt_store_mailbox *mbox;
	const char *error;
	assert_int_equal(mt_store_mailbox_open_sync(store, name, &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), 1);
	const size_t plen = strlen(prefix);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->size, plen + size);
	char *want = malloc(plen + size + 1);
	assert_non_null(want);
	memcpy(want, prefix, plen);
	memcpy(want + plen, body, size);
	const size_t steps[] = { 7, 65328, 100000, MT_STORE_READ_MAX };
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		if (steps[s] < 1000 && size > 300000)
			continue;
		char *got = test_read_all(mbox, 0, steps[s]);
		assert_memory_equal(got, want, plen + size);
		free(got);
	}
	/* Ranges across the prefix's end and a body chunk boundary. */
	char buf[3000];
	size_t got;
	const uint64_t offsets[] = { 0, plen >= 5 ? plen - 5 : 1, plen + STORE_CHUNK_SIZE - 1000,
				     plen + size - 10 };
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		assert_int_equal(mt_store_read_sync(mbox, 0, offsets[i], buf,
						    sizeof(buf), &got, &error),
				 MT_STORE_OK);
		size_t n = plen + size - offsets[i] < sizeof(buf) ?
			plen + size - offsets[i] : sizeof(buf);
		assert_int_equal(got, n);
		assert_memory_equal(buf, want + offsets[i], n);
	}
	free(want);
	mt_store_mailbox_close(&mbox);
}

static void test_stream_shared(void **state)
{
	struct mt_store *store = test_store_open();
	struct writer w;
	writer_init(&w, store);
	char *body = test_message(7, BIG);
	writer_append(&w, body, BIG, 7777);
	assert_true(w.max_writes <= 2);
	assert_true(w.callbacks >= chunks_of(BIG) - 3);

	const char *prefixes[3] = { "Received: for <a>\r\n", "Received: for <bb>\r\n",
				    "Received: for <ccc>\r\n" };
	struct mt_store_rcpt rcpts[3];
	const char *names[3] = { "a", "b", "c" };
	for (unsigned int i = 0; i < 3; i++)
		rcpts[i] = (struct mt_store_rcpt){
			.mailbox = names[i], .prefix = prefixes[i],
			.prefix_len = strlen(prefixes[i]),
		};
	writer_deliver(&w, rcpts, 3);
	assert_int_equal(w.status, MT_STORE_OK);
	assert_int_equal(w.result_count, 3);
	for (unsigned int i = 0; i < 3; i++) {
		assert_int_equal(w.results[i].status, MT_STORE_OK);
		assert_int_equal(w.results[i].uid, 1);
	}
	/* One copy of the body, one prefix chunk each, one reference. */
	assert_int_equal(test_db_records(store->bodies), chunks_of(BIG) + 3);
	assert_int_equal(test_db_records(store->refs), 1);
	assert_int_equal(test_db_records(store->partial), 0);
	for (unsigned int i = 0; i < 3; i++)
		check_message(store, names[i], prefixes[i], body, BIG);
	struct mt_store_counters c;
	mt_store_counters_get(store, &c);
	assert_int_equal(c.chunk_writes, chunks_of(BIG) - 1);

	/* The body stays until the last of its messages is expunged. */
	expunge_one(store, "a", 1);
	expunge_one(store, "b", 1);
	purge_all(store);
	assert_int_equal(test_db_records(store->bodies), chunks_of(BIG) + 1);
	check_message(store, "c", prefixes[2], body, BIG);
	expunge_one(store, "c", 1);
	purge_all(store);
	assert_int_equal(test_db_records(store->bodies), 0);
	assert_int_equal(test_db_records(store->refs), 0);
	assert_int_equal(test_db_records(store->purge), 0);
	free(body);
	writer_free(&w);
	mt_store_close(&store);
}

static void test_stream_abort(void **state)
{
	struct mt_store *store = test_store_open();
	struct writer w;
	writer_init(&w, store);
	char *body = test_message(8, BIG);

	/* Aborted with writes still in flight. */
	writer_append(&w, body, BIG, 65536);
	mt_store_body_abort(&w.body);
	assert_null(w.body);
	mt_store_body_abort(&w.body);	/* NULL: nothing */
	/* A body no recipient takes (over quota) is aborted by its delivery. */
	writer_append(&w, body, BIG, 100000);
	struct mt_store_rcpt r = { .mailbox = "small", .quota = 1000 };
	writer_deliver(&w, &r, 1);
	assert_int_equal(w.results[0].status, MT_STORE_OVER_QUOTA);
	/* And one refused at once (no valid recipient). */
	w.delivered = false;
	writer_append(&w, body, BIG, 100000);
	struct mt_store_rcpt bad = { .mailbox = "" };
	writer_deliver(&w, &bad, 1);
	assert_int_equal(w.status, MT_STORE_INVALID);
	/* A small body, aborted before any chunk write: nothing to do. */
	w.body = mt_store_body_begin(w.port, NULL, NULL);
	mt_store_body_append(w.body, "x", 1);
	mt_store_body_abort(&w.body);

	/* Once their writes are done and the purger ran, no chunk is left. */
	for (unsigned int i = 0; i < 500; i++) {
		struct mt_store_counters c;
		mt_store_counters_get(store, &c);
		if (c.aborted == 3)
			break;
		usleep(10000);
	}
	struct mt_store_counters c;
	mt_store_counters_get(store, &c);
	assert_int_equal(c.aborted, 3);
	purge_all(store);
	assert_int_equal(test_db_records(store->bodies), 0);
	assert_int_equal(test_db_records(store->partial), 0);
	assert_int_equal(test_db_records(store->purge), 0);
	struct mt_store_stat st;
	const char *error;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.partial_bodies, 0);
	assert_int_equal(st.purge_bytes, 0);
	assert_int_equal(st.messages, 0);
	free(body);
	writer_free(&w);
	mt_store_close(&store);
}

/* Child: write half a body, make it durable, die without closing. */
static void die_mid_body(void)
{
	struct mt_store *store = test_store_open();
	struct writer w;
	writer_init(&w, store);
	char *body = test_message(9, BIG);
	writer_append(&w, body, BIG / 2, 50000);
	while (mt_store_body_writes(w.body) > 0)
		writer_run(&w);
	const char *error;
	struct mt_store_stat st;
	if (mt_store_stat_get(store, &st, &error) != MT_STORE_OK ||
	    st.partial_bodies != 1 || st.partial_bytes == 0)
		_exit(2);
	/* Another delivery's flush makes the chunks durable with it. */
	struct mt_store_rcpt r = { .mailbox = "other" };
	if (mt_store_deliver_wait(store, &r, 1, "hi\r\n", 4, &error) != MT_STORE_OK)
		_exit(3);
	_exit(0);
}

static void test_stream_crash_sweep(void **state)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		die_mid_body();
	int wstatus;
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	assert_true(WIFEXITED(wstatus));
	assert_int_equal(WEXITSTATUS(wstatus), 0);

	/* Recovery, then the sweep queues the half-written body. */
	struct mt_store *store = test_store_open();
	struct mt_store_counters c;
	mt_store_counters_get(store, &c);
	assert_int_equal(c.swept, 1);
	struct mt_store_stat st;
	const char *error;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.partial_bodies, 0);
	assert_int_equal(st.messages, 1);
	purge_all(store);
	assert_int_equal(test_db_records(store->bodies), 1);	/* "other"'s */
	assert_int_equal(test_db_records(store->purge), 0);
	/* A new body gets a fresh id and delivers as usual. */
	char *body = test_message(10, BIG);
	struct mt_store_rcpt r = { .mailbox = "after" };
	assert_int_equal(mt_store_deliver_wait(store, &r, 1, body, BIG, &error),
			 MT_STORE_OK);
	check_message(store, "after", "", body, BIG);
	free(body);
	mt_store_close(&store);
}

/* Rewrite the store's only message as version 3 stored it: all its bytes
 * as its own chunks, no shared body; then the store as version 3. */
static void make_version3_message(struct mt_store *store)
{
	DBC *c;
	DBT key = { 0 }, data = { 0 };
	assert_int_equal(store->messages->cursor(store->messages, NULL, &c, 0), 0);
	assert_int_equal(c->get(c, &key, &data, DB_FIRST), 0);
	unsigned char mkey[12], rec[128];
	assert_int_equal(key.size, 12);
	memcpy(mkey, key.data, 12);
	assert_true(data.size <= sizeof(rec));
	memcpy(rec, data.data, data.size);
	assert_int_equal(c->close(c), 0);
	const size_t uidl_len = rec[20];
	const uint64_t size = store_get_be64(rec);
	const uint64_t body_id = store_get_be64(rec + 21 + uidl_len);
	char *bytes = malloc(size);
	struct mt_store_mailbox *mbox;
	const char *error;
	size_t got;
	assert_int_equal(mt_store_mailbox_open_sync(store, "old", &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_read_sync(mbox, 0, 0, bytes, size, &got, &error),
			 MT_STORE_OK);
	assert_int_equal(got, size);
	mt_store_mailbox_close(&mbox);

	store_put_be32(rec + 16, 0);	/* not shared */
	DBT k = { .data = mkey, .size = 12 }, v = { .data = rec, .size = 21 + uidl_len };
	assert_int_equal(store->messages->put(store->messages, NULL, &k, &v,
					      DB_AUTO_COMMIT), 0);
	for (uint64_t off = 0, i = 0; off < size; off += STORE_CHUNK_SIZE, i++) {
		unsigned char bkey[16];
		store_body_key(bkey, store_get_be64(mkey), store_get_be32(mkey + 8),
			       (uint32_t)i);
		DBT bk = { .data = bkey, .size = 16 };
		DBT bv = { .data = bytes + off,
			   .size = (u_int32_t)(size - off < STORE_CHUNK_SIZE ?
					       size - off : STORE_CHUNK_SIZE) };
		assert_int_equal(store->bodies->put(store->bodies, NULL, &bk, &bv,
						    DB_AUTO_COMMIT), 0);
		store_body_key(bkey, body_id, 0, (uint32_t)i);
		(void)store->bodies->del(store->bodies, NULL, &bk, DB_AUTO_COMMIT);
	}
	assert_int_equal(store->refs->truncate(store->refs, NULL, &(u_int32_t){ 0 },
					       DB_AUTO_COMMIT), 0);
	unsigned char version[4];
	store_put_be32(version, 3);
	DBT fk = { .data = "format-version", .size = 14 };
	DBT fv = { .data = version, .size = 4 };
	assert_int_equal(store->meta->put(store->meta, NULL, &fk, &fv,
					  DB_AUTO_COMMIT), 0);
	free(bytes);
}

static void test_version3_message(void **state)
{
	struct mt_store *store = test_store_open();
	char *body = test_message(11, 200000);
	struct mt_store_rcpt r = {
		.mailbox = "old", .prefix = "Return-Path: <x>\r\n", .prefix_len = 18,
	};
	const char *error;
	assert_int_equal(mt_store_deliver_wait(store, &r, 1, body, 200000, &error),
			 MT_STORE_OK);
	make_version3_message(store);
	mt_store_close(&store);
	char home[512];
	snprintf(home, sizeof(home), "%s", test_path("store"));
	DB_ENV *env;
	assert_int_equal(db_env_create(&env, 0), 0);
	assert_int_equal(env->open(env, home, DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
				   DB_INIT_LOCK | DB_INIT_MPOOL | DB_RECOVER |
				   DB_REGISTER, 0600), 0);
	assert_int_equal(env->dbremove(env, NULL, "refs.db", NULL, DB_AUTO_COMMIT), 0);
	assert_int_equal(env->dbremove(env, NULL, "partial.db", NULL,
				       DB_AUTO_COMMIT), 0);
	assert_int_equal(env->close(env, 0), 0);

	/* mailtierctl reads it as version 3; the daemon upgrades it. */
	struct mt_store_settings set = {
		.home = home, .mode = MT_STORE_MODE_ADMIN, .cache_size = 8u << 20,
	};
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	struct mt_store_stat st;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.format_version, 3);
	assert_int_equal(st.partial_bodies, 0);
	mt_store_close(&store);
	store = test_store_open();
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.format_version, MT_STORE_FORMAT_VERSION);
	check_message(store, "old", "Return-Path: <x>\r\n", body, 200000);
	assert_int_equal(test_db_records(store->bodies), chunks_of(200018));
	/* A new delivery beside it, then both purged. */
	assert_int_equal(test_deliver(store, "old", 12, 1000), 2);
	expunge_one(store, "old", 1);
	expunge_one(store, "old", 2);
	purge_all(store);
	assert_int_equal(test_db_records(store->bodies), 0);
	assert_int_equal(test_db_records(store->purge), 0);
	free(body);
	mt_store_close(&store);
}

int main(void)
{
	mt_log_init("test-store-stream", MT_LOG_TARGET_STDERR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stream_shared, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_stream_abort, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_stream_crash_sweep, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_version3_message, test_dir_setup, test_dir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
