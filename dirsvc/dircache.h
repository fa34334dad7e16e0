/* dircache.h — the directory lookup cache of libdirsvc: a thread-safe hash
 * table of byte-string keys to byte-string values with per-entry expiry,
 * positive and negative entries, a bound on the number of entries with
 * least-recently-used eviction, and counters.
 *
 * Auth entries: a separate key space, one entry per user name, holding a
 * keyed hash (HMAC-SHA-256 under a random per-cache secret) of the one
 * password that last succeeded, never the password. A lookup with another
 * password is a miss, so a changed password is always checked against the
 * directory, and a success with the new password replaces the entry, after
 * which the old password no longer hits.
 *
 * Locking: the table is split into stripes (16 when the bound is at least
 * 4096 entries, else 1), each with its own mutex, hash table and LRU list;
 * each stripe holds 1/16th of the bound, so eviction is LRU per stripe.
 * Time: a clock callback in milliseconds (CLOCK_MONOTONIC_COARSE unless the
 * caller injects one, as the unit tests do).
 * Trust boundary: keys are derived from client input (addresses, user
 * names); the hash is keyed (SipHash-1-3, random key per cache) so clients
 * cannot choose colliding keys. Values come from the directory. */
#ifndef MT_DIRCACHE_H
#define MT_DIRCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct mt_dircache;

/* Milliseconds on a monotonic clock. */
typedef uint64_t mt_dircache_clock_t(void *context);

enum mt_dircache_hit {
	MT_DIRCACHE_MISS,	/* absent or expired */
	MT_DIRCACHE_POSITIVE,	/* value copied out */
	MT_DIRCACHE_NEGATIVE,	/* a cached "does not exist" */
};

struct mt_dircache_stats {
	uint64_t entries;	/* now held */
	uint64_t hits;		/* positive hits, lookups and auth */
	uint64_t negative_hits;
	uint64_t misses;	/* includes expired entries and auth mismatches */
	uint64_t expired;	/* entries found expired (also counted as misses) */
	uint64_t evictions;	/* LRU entries dropped to stay within the bound */
	uint64_t inserts;
	uint64_t errors;	/* counted by the user: lookups that failed */
};

/* A cache of at most max_entries entries (0: a cache that holds nothing).
 * clock NULL: CLOCK_MONOTONIC_COARSE. */
struct mt_dircache *mt_dircache_new(size_t max_entries,
				    mt_dircache_clock_t *clock,
				    void *clock_context);
void mt_dircache_free(struct mt_dircache **cache_p);

/* Store value (negative: value NULL, len 0) under key for ttl_ms, replacing
 * any entry with that key; the least recently used entry goes if the stripe
 * is full. ttl_ms 0 stores nothing and removes an existing entry. */
void mt_dircache_put(struct mt_dircache *cache, const void *key,
		     size_t key_len, const void *value, size_t value_len,
		     bool negative, uint64_t ttl_ms);
/* Look key up. On a positive hit up to cap bytes of the value are copied to
 * value_r and its full length is set in *value_len_r; the entry becomes the
 * most recently used. An expired entry is removed and reported as a miss. */
enum mt_dircache_hit mt_dircache_get(struct mt_dircache *cache,
				     const void *key, size_t key_len,
				     void *value_r, size_t cap,
				     size_t *value_len_r);
void mt_dircache_remove(struct mt_dircache *cache, const void *key,
			size_t key_len);

/* Remember that password succeeded for user, with value (e.g. the
 * canonical address and shard), for ttl_ms. Only successes are stored. */
void mt_dircache_auth_put(struct mt_dircache *cache, const char *user,
			  const char *password, const void *value,
			  size_t value_len, uint64_t ttl_ms);
/* POSITIVE (value copied as for mt_dircache_get) only if user has an
 * unexpired entry made with exactly this password; MISS otherwise. */
enum mt_dircache_hit mt_dircache_auth_get(struct mt_dircache *cache,
					  const char *user,
					  const char *password, void *value_r,
					  size_t cap, size_t *value_len_r);

/* Drop user's auth entry, whatever password made it. */
void mt_dircache_auth_remove(struct mt_dircache *cache, const char *user);

/* Count a failed directory request (reported as errors=). */
void mt_dircache_count_error(struct mt_dircache *cache);
void mt_dircache_get_stats(struct mt_dircache *cache,
			   struct mt_dircache_stats *stats_r);
/* Append "cache_entries=N cache_hits=N ... cache_errors=N" to out. */
void mt_dircache_stats_append(struct mt_dircache *cache, struct mt_buf *out);

#endif
