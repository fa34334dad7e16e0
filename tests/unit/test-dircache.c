/* test-dircache.c — unit tests for dirsvc/dircache.c with an injected
 * clock: TTL expiry, negative entries, the LRU bound, the auth cache
 * (a changed password is never accepted from cache), counters, and
 * concurrent use from several threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dircache.h"

static uint64_t fake_now;

static uint64_t fake_clock(void *context)
{
	(void)context;
	return fake_now;
}

static struct mt_dircache *new_cache(size_t entries)
{
	fake_now = 1000000;
	return mt_dircache_new(entries, fake_clock, NULL);
}

static enum mt_dircache_hit get_str(struct mt_dircache *c, const char *key,
				    char *buf, size_t cap)
{
	size_t len = 0;
	enum mt_dircache_hit hit = mt_dircache_get(c, key, strlen(key), buf,
						   cap - 1, &len);
	if (hit == MT_DIRCACHE_POSITIVE)
		buf[len < cap - 1 ? len : cap - 1] = '\0';
	return hit;
}

static void put_str(struct mt_dircache *c, const char *key, const char *value,
		    uint64_t ttl)
{
	mt_dircache_put(c, key, strlen(key), value, strlen(value), false, ttl);
}

static void test_ttl_expiry(void **state)
{
	struct mt_dircache *c = new_cache(100);
	char buf[64];

	put_str(c, "alice@example.test", "store1", 60000);
	assert_int_equal(get_str(c, "alice@example.test", buf, sizeof(buf)),
			 MT_DIRCACHE_POSITIVE);
	assert_string_equal(buf, "store1");
	fake_now += 59999;
	assert_int_equal(get_str(c, "alice@example.test", buf, sizeof(buf)),
			 MT_DIRCACHE_POSITIVE);
	fake_now += 1;
	assert_int_equal(get_str(c, "alice@example.test", buf, sizeof(buf)),
			 MT_DIRCACHE_MISS);
	struct mt_dircache_stats st;
	mt_dircache_get_stats(c, &st);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.expired, 1);
	assert_int_equal(st.hits, 2);
	assert_int_equal(st.misses, 1);
	mt_dircache_free(&c);
	assert_null(c);
}

static void test_negative_entries(void **state)
{
	struct mt_dircache *c = new_cache(100);
	char buf[64];

	mt_dircache_put(c, "nobody", 6, NULL, 0, true, 10000);
	put_str(c, "alice", "store1", 60000);
	assert_int_equal(get_str(c, "nobody", buf, sizeof(buf)),
			 MT_DIRCACHE_NEGATIVE);
	/* A negative TTL runs on its own. */
	fake_now += 10000;
	assert_int_equal(get_str(c, "nobody", buf, sizeof(buf)), MT_DIRCACHE_MISS);
	assert_int_equal(get_str(c, "alice", buf, sizeof(buf)),
			 MT_DIRCACHE_POSITIVE);
	/* A positive answer replaces a negative one and the other way round. */
	mt_dircache_put(c, "bob", 3, NULL, 0, true, 10000);
	put_str(c, "bob", "store2", 60000);
	assert_int_equal(get_str(c, "bob", buf, sizeof(buf)), MT_DIRCACHE_POSITIVE);
	assert_string_equal(buf, "store2");
	mt_dircache_put(c, "bob", 3, NULL, 0, true, 10000);
	assert_int_equal(get_str(c, "bob", buf, sizeof(buf)), MT_DIRCACHE_NEGATIVE);
	/* TTL 0 stores nothing and removes what was there. */
	put_str(c, "alice", "store9", 0);
	assert_int_equal(get_str(c, "alice", buf, sizeof(buf)), MT_DIRCACHE_MISS);
	struct mt_dircache_stats st;
	mt_dircache_get_stats(c, &st);
	assert_int_equal(st.negative_hits, 2);
	assert_int_equal(st.entries, 1);
	mt_dircache_free(&c);
}

static void test_lru_bound(void **state)
{
	struct mt_dircache *c = new_cache(3);
	char buf[64];

	put_str(c, "a", "1", 60000);
	put_str(c, "b", "2", 60000);
	put_str(c, "c", "3", 60000);
	/* Touch a: b is now the least recently used. */
	assert_int_equal(get_str(c, "a", buf, sizeof(buf)), MT_DIRCACHE_POSITIVE);
	put_str(c, "d", "4", 60000);
	assert_int_equal(get_str(c, "b", buf, sizeof(buf)), MT_DIRCACHE_MISS);
	assert_int_equal(get_str(c, "a", buf, sizeof(buf)), MT_DIRCACHE_POSITIVE);
	assert_int_equal(get_str(c, "c", buf, sizeof(buf)), MT_DIRCACHE_POSITIVE);
	assert_int_equal(get_str(c, "d", buf, sizeof(buf)), MT_DIRCACHE_POSITIVE);
	/* Replacing an entry does not evict another. */
	put_str(c, "c", "33", 60000);
	assert_int_equal(get_str(c, "a", buf, sizeof(buf)), MT_DIRCACHE_POSITIVE);
	assert_int_equal(get_str(c, "c", buf, sizeof(buf)), MT_DIRCACHE_POSITIVE);
	assert_string_equal(buf, "33");
	struct mt_dircache_stats st;
	mt_dircache_get_stats(c, &st);
	assert_int_equal(st.entries, 3);
	assert_int_equal(st.evictions, 1);
	mt_dircache_free(&c);
}

/* A large cache (striped): never more than its bound, growth works. */
static void test_large_bound(void **state)
{
	struct mt_dircache *c = new_cache(5000);
	char key[32], buf[64];

	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "user%d@example.test", i);
		put_str(c, key, key, 60000);
	}
	struct mt_dircache_stats st;
	mt_dircache_get_stats(c, &st);
	assert_int_equal(st.entries, 5000);
	assert_int_equal(st.evictions, 15000);
	/* The newest are there, the oldest are gone. */
	assert_int_equal(get_str(c, "user19999@example.test", buf, sizeof(buf)),
			 MT_DIRCACHE_POSITIVE);
	assert_string_equal(buf, "user19999@example.test");
	assert_int_equal(get_str(c, "user0@example.test", buf, sizeof(buf)),
			 MT_DIRCACHE_MISS);
	mt_dircache_free(&c);
}

static void test_zero_entries(void **state)
{
	struct mt_dircache *c = new_cache(0);
	char buf[8];

	put_str(c, "a", "1", 60000);
	assert_int_equal(get_str(c, "a", buf, sizeof(buf)), MT_DIRCACHE_MISS);
	mt_dircache_auth_put(c, "a", "pw", "v", 1, 60000);
	size_t len;
	assert_int_equal(mt_dircache_auth_get(c, "a", "pw", buf, sizeof(buf), &len),
			 MT_DIRCACHE_MISS);
	mt_dircache_free(&c);
}

static void test_short_buffer(void **state)
{
	struct mt_dircache *c = new_cache(10);
	char buf[4] = "";
	size_t len = 0;

	put_str(c, "k", "0123456789", 60000);
	assert_int_equal(mt_dircache_get(c, "k", 1, buf, sizeof(buf), &len),
			 MT_DIRCACHE_POSITIVE);
	assert_int_equal(len, 10);
	assert_memory_equal(buf, "0123", 4);
	mt_dircache_free(&c);
}

static enum mt_dircache_hit auth_get(struct mt_dircache *c, const char *user,
				     const char *pw, char *buf, size_t cap)
{
	size_t len = 0;
	enum mt_dircache_hit hit = mt_dircache_auth_get(c, user, pw, buf,
							cap - 1, &len);
	if (hit == MT_DIRCACHE_POSITIVE)
		buf[len] = '\0';
	return hit;
}

static void test_auth_changed_password(void **state)
{
	struct mt_dircache *c = new_cache(100);
	char buf[64];

	mt_dircache_auth_put(c, "alice", "old-secret", "store1", 6, 60000);
	assert_int_equal(auth_get(c, "alice", "old-secret", buf, sizeof(buf)),
			 MT_DIRCACHE_POSITIVE);
	assert_string_equal(buf, "store1");
	/* Another password is not accepted from the cache: it must go to
	 * the directory (a miss), whatever it is. */
	assert_int_equal(auth_get(c, "alice", "new-secret", buf, sizeof(buf)),
			 MT_DIRCACHE_MISS);
	assert_int_equal(auth_get(c, "alice", "old-secre", buf, sizeof(buf)),
			 MT_DIRCACHE_MISS);
	assert_int_equal(auth_get(c, "alice", "", buf, sizeof(buf)),
			 MT_DIRCACHE_MISS);
	/* The directory said yes to the new one: the old one stops hitting. */
	mt_dircache_auth_put(c, "alice", "new-secret", "store1", 6, 60000);
	assert_int_equal(auth_get(c, "alice", "new-secret", buf, sizeof(buf)),
			 MT_DIRCACHE_POSITIVE);
	assert_int_equal(auth_get(c, "alice", "old-secret", buf, sizeof(buf)),
			 MT_DIRCACHE_MISS);
	/* Another user with the same password does not hit. */
	assert_int_equal(auth_get(c, "bob", "new-secret", buf, sizeof(buf)),
			 MT_DIRCACHE_MISS);
	/* Auth entries and lookup entries are apart. */
	assert_int_equal(get_str(c, "alice", buf, sizeof(buf)), MT_DIRCACHE_MISS);
	/* Expiry applies. */
	fake_now += 60000;
	assert_int_equal(auth_get(c, "alice", "new-secret", buf, sizeof(buf)),
			 MT_DIRCACHE_MISS);
	mt_dircache_free(&c);
}

/* Dropping one user's entries (mt_dirsvc_forget: a store said the cached
 * mailHost is stale): each kind is removed by its own call, whatever
 * password made the auth entry, and nobody else's entry goes. */
static void test_remove_one_user(void **state)
{
	struct mt_dircache *c = new_cache(100);
	struct mt_dircache_stats st;
	char buf[64];

	put_str(c, "alice", "s1", 60000);
	put_str(c, "bob", "s1", 60000);
	mt_dircache_auth_put(c, "alice", "pw", "s1", 2, 60000);
	mt_dircache_auth_put(c, "bob", "pw", "s1", 2, 60000);
	mt_dircache_remove(c, "alice", 5);
	assert_int_equal(get_str(c, "alice", buf, sizeof(buf)), MT_DIRCACHE_MISS);
	assert_int_equal(auth_get(c, "alice", "pw", buf, sizeof(buf)),
			 MT_DIRCACHE_POSITIVE);
	mt_dircache_auth_remove(c, "alice");
	assert_int_equal(auth_get(c, "alice", "pw", buf, sizeof(buf)),
			 MT_DIRCACHE_MISS);
	assert_int_equal(get_str(c, "bob", buf, sizeof(buf)), MT_DIRCACHE_POSITIVE);
	assert_string_equal(buf, "s1");
	assert_int_equal(auth_get(c, "bob", "pw", buf, sizeof(buf)),
			 MT_DIRCACHE_POSITIVE);
	mt_dircache_get_stats(c, &st);
	assert_int_equal(st.entries, 2);
	/* Absent keys, and a cache that holds nothing: no-ops. */
	mt_dircache_remove(c, "carol", 5);
	mt_dircache_auth_remove(c, "carol");
	mt_dircache_free(&c);
	c = new_cache(0);
	mt_dircache_auth_remove(c, "alice");
	mt_dircache_remove(c, "alice", 5);
	mt_dircache_free(&c);
}

/* The plaintext password is nowhere in the cache's entries: look for it in
 * the value copied out and in the stats line (the rest is opaque). */
static void test_auth_no_plaintext(void **state)
{
	struct mt_dircache *c = new_cache(100);
	char buf[256];
	size_t len = 0;

	mt_dircache_auth_put(c, "alice", "hunter2", "v", 1, 60000);
	assert_int_equal(mt_dircache_auth_get(c, "alice", "hunter2", buf,
					      sizeof(buf), &len),
			 MT_DIRCACHE_POSITIVE);
	assert_int_equal(len, 1);
	struct mt_buf line = MT_BUF_INIT;
	mt_dircache_stats_append(c, &line);
	assert_null(strstr(line.data, "hunter2"));
	assert_non_null(strstr(line.data, "cache_hits=1"));
	mt_buf_free(&line);
	mt_dircache_free(&c);
}

static void test_stats_line(void **state)
{
	struct mt_dircache *c = new_cache(2);
	char buf[8];

	put_str(c, "a", "1", 1000);
	get_str(c, "a", buf, sizeof(buf));
	get_str(c, "b", buf, sizeof(buf));
	mt_dircache_count_error(c);
	struct mt_buf line = MT_BUF_INIT;
	mt_dircache_stats_append(c, &line);
	assert_string_equal(line.data,
		"cache_entries=1 cache_hits=1 cache_negative_hits=0 "
		"cache_misses=1 cache_expired=0 cache_evictions=0 "
		"cache_inserts=1 cache_errors=1");
	mt_buf_free(&line);
	mt_dircache_free(&c);
}

struct thread_arg {
	struct mt_dircache *cache;
	int id;
};

static void *hammer(void *p)
{
	struct thread_arg *a = p;
	char key[32], buf[64];

	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "u%d", (i * 7 + a->id) % 3000);
		if (i % 3 == 0)
			put_str(a->cache, key, key, 60000);
		else if (get_str(a->cache, key, buf, sizeof(buf)) ==
			 MT_DIRCACHE_POSITIVE && strcmp(buf, key) != 0)
			return (void *)1;
		if (i % 100 == 0)
			mt_dircache_auth_put(a->cache, key, "pw", "x", 1, 60000);
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct mt_dircache *c = mt_dircache_new(4096, NULL, NULL);
	pthread_t t[4];
	struct thread_arg args[4];

	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){ c, i };
		assert_int_equal(pthread_create(&t[i], NULL, hammer, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		assert_null(ret);
	}
	struct mt_dircache_stats st;
	mt_dircache_get_stats(c, &st);
	assert_true(st.entries <= 4096);
	mt_dircache_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ttl_expiry),
		cmocka_unit_test(test_negative_entries),
		cmocka_unit_test(test_lru_bound),
		cmocka_unit_test(test_large_bound),
		cmocka_unit_test(test_zero_entries),
		cmocka_unit_test(test_short_buffer),
		cmocka_unit_test(test_auth_changed_password),
		cmocka_unit_test(test_remove_one_user),
		cmocka_unit_test(test_auth_no_plaintext),
		cmocka_unit_test(test_stats_line),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
