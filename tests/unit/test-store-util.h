/* test-store-util.h — helpers shared by the store's unit tests: a scratch
 * directory removed afterwards, opening a store on it, deterministic
 * message bytes, counting a database's records (white-box), and counting
 * Berkeley DB's fsync calls (through its documented db_env_set_func_*
 * hooks) to prove completions follow a flush. Include after cmocka.h. */
#ifndef TEST_STORE_UTIL_H
#define TEST_STORE_UTIL_H

#include "store.h"
#include "loop.h"

#include <db.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char test_dir[256];

/* An event loop for a completion port (its base for timers). */
static inline struct mt_loop *test_loop_new(void)
{
	const char *error;
	struct mt_loop *loop = mt_loop_new(&error);
	assert_non_null(loop);
	return loop;
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	return remove(path);
}

static inline void test_dir_make(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(test_dir, sizeof(test_dir), "%s/mt-store-test.XXXXXX",
		 tmp != NULL ? tmp : "/tmp");
	assert_non_null(mkdtemp(test_dir));
}

static inline void test_dir_remove(void)
{
	if (test_dir[0] != '\0')
		(void)nftw(test_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	test_dir[0] = '\0';
}

/* cmocka fixtures: each test in a scratch directory of its own. */
static inline int test_dir_setup(void **state)
{
	(void)state;
	test_dir_make();
	return 0;
}

static inline int test_dir_teardown(void **state)
{
	(void)state;
	test_dir_remove();
	return 0;
}

static inline char *test_path(const char *name)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s", test_dir, name);
	return path;
}

static inline struct mt_store *test_store_open_with(const char *home,
						    unsigned int commit_threads,
						    uint64_t log_file_size)
{
	struct mt_store_settings set = {
		.home = home, .mode = MT_STORE_MODE_SERVE, .create = true,
		.cache_size = 16u << 20, .commit_threads = commit_threads,
		.log_file_size = log_file_size,
	};
	struct mt_store *store = NULL;
	const char *error = NULL;
	enum mt_store_status status = mt_store_open(&set, &store, &error);
	if (status != MT_STORE_OK)
		fail_msg("mt_store_open(%s): %s: %s", home,
			 mt_store_status_name(status), error);
	return store;
}

static inline struct mt_store *test_store_open(void)
{
	return test_store_open_with(test_path("store"), 0, 0);
}

/* size bytes of message seed: a header line, then varied CRLF lines. */
static inline char *test_message(unsigned int seed, size_t size)
{
	char *p = malloc(size + 1);
	assert_non_null(p);
	char head[64];
	size_t n = (size_t)snprintf(head, sizeof(head), "Subject: message %u\r\n\r\n", seed);
	if (n > size)
		n = size;
	memcpy(p, head, n);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = n; i < size; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (i % 78 == 76) ? '\r' : (i % 78 == 77) ? '\n' :
			(char)(' ' + (x >> 16) % 95);
	}
	p[size] = '\0';
	return p;
}

/* Deliver size bytes of message seed to one mailbox; returns its uid. */
static inline uint32_t test_deliver(struct mt_store *store, const char *mailbox,
				    unsigned int seed, size_t size)
{
	char *data = test_message(seed, size);
	struct mt_store_rcpt rcpt = { .mailbox = mailbox };
	const char *error = NULL;
	enum mt_store_status status =
		mt_store_deliver_wait(store, &rcpt, 1, data, size, &error);
	free(data);
	if (status != MT_STORE_OK)
		fail_msg("deliver to %s: %s: %s", mailbox,
			 mt_store_status_name(status), error);
	assert_int_equal(rcpt.status, MT_STORE_OK);
	return rcpt.uid;
}

/* Read message index of an open mailbox whole, in pieces of step bytes. */
static inline char *test_read_all(struct mt_store_mailbox *mbox,
				  unsigned int index, size_t step)
{
	const struct mt_store_msg *msg = mt_store_mailbox_msg(mbox, index);
	assert_non_null(msg);
	char *buf = malloc(msg->size + 1);
	assert_non_null(buf);
	uint64_t off = 0;
	for (;;) {
		size_t got = 0;
		const char *error = NULL;
		enum mt_store_status status =
			mt_store_read_sync(mbox, index, off, buf + off,
					   step, &got, &error);
		if (status != MT_STORE_OK)
			fail_msg("read: %s", error);
		if (got == 0)
			break;
		off += got;
		assert_true(off <= msg->size);
	}
	assert_int_equal(off, msg->size);
	buf[off] = '\0';
	return buf;
}

/* Records of a Berkeley DB database (white-box). */
static inline unsigned int test_db_records(DB *db)
{
	DBC *c;
	DBT key, data;
	memset(&key, 0, sizeof(key));
	memset(&data, 0, sizeof(data));
	assert_int_equal(db->cursor(db, NULL, &c, 0), 0);
	unsigned int n = 0;
	while (c->get(c, &key, &data, DB_NEXT) == 0)
		n++;
	assert_int_equal(c->close(c), 0);
	return n;
}

/* Counting fsync: Berkeley DB calls it for every log flush (and at
 * checkpoints); set before the environment is opened. */
static atomic_uint test_fsyncs;

static int test_counting_fsync(int fd)
{
	atomic_fetch_add(&test_fsyncs, 1);
	return fdatasync(fd);
}

static inline void test_count_fsyncs(void)
{
	db_env_set_func_fsync(test_counting_fsync);
}

#endif
