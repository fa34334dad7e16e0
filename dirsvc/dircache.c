/* dircache.c — the thread-safe LRU/TTL lookup cache of libdirsvc (see
 * dircache.h).
 *
 * Layout: stripes, each a mutex, a chained hash table (power-of-two bucket
 * count, doubled as it fills) and a circular doubly-linked LRU list with a
 * sentinel; an entry is one allocation holding the key and then the value.
 * Allocation and hashing happen outside the stripe lock. A hit moves its
 * entry to the front only if it is not already among the stripe's newest
 * eighth (a tick count says), which spares the cache lines of its LRU
 * neighbours on hot entries; eviction order stays LRU within that eighth.
 * Trust boundary: keys come from client input, hence the keyed hash
 * (SipHash-1-3, Aumasson and Bernstein 2012) against chosen collisions;
 * passwords reach this file only to be MACed (HMAC-SHA-256, RFC 2104) and
 * are never stored. */
#include "dircache.h"
#include "clock.h"

#include "alloc.h"
#include "log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#define STRIPES_MAX 16
#define STRIPES_MIN_ENTRIES 4096	/* below this: one stripe, exact LRU */
#define BUCKETS_INITIAL 16
#define AUTH_MAC_LEN 32			/* HMAC-SHA-256 */

enum entry_kind { KIND_PLAIN, KIND_AUTH };

struct entry {
	struct entry *hnext;
	struct entry *prev, *next;	/* LRU: head->next is the newest */
	uint64_t hash;
	uint64_t expires;		/* ms on the cache's clock */
	uint64_t touched;		/* stripe tick when last put in front */
	uint32_t key_len, value_len;
	uint8_t kind;
	bool negative;
	unsigned char data[];		/* key, then value */
};

struct stripe {
	pthread_mutex_t lock;
	struct entry **buckets;
	size_t n_buckets;		/* power of two */
	size_t count, capacity;
	uint64_t tick;			/* counts moves to the front */
	uint64_t promote_after;		/* capacity / 8 */
	struct entry lru;		/* sentinel */
	uint64_t hits, negative_hits, misses, expired, evictions, inserts;
} __attribute__((aligned(64)));

struct mt_dircache {
	mt_dircache_clock_t *clock;
	void *clock_context;
	uint64_t sip_key[2];
	unsigned char mac_key[32];
	EVP_MAC *hmac;
	unsigned int n_stripes;		/* 0 when the cache holds nothing */
	_Atomic uint64_t errors;
	struct stripe *stripes;
};

/* SipHash-1-3: the variant hash tables use (Python 3.11, Rust); keyed, so
 * collisions cannot be chosen without the key. */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND do { \
	v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
	v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
	v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; \
	v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
} while (0)

static uint64_t load64_le(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static uint64_t siphash13(const uint64_t key[2], uint8_t kind,
			  const unsigned char *in, size_t len)
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ key[0];
	uint64_t v1 = 0x646f72616e646f6dULL ^ key[1];
	uint64_t v2 = 0x6c7967656e657261ULL ^ key[0];
	uint64_t v3 = 0x7465646279746573ULL ^ key[1];
	/* The kind goes into v1 so both key spaces hash apart. */
	v1 ^= (uint64_t)kind * 0xee;
	const unsigned char *end = in + (len & ~(size_t)7);
	uint64_t b = (uint64_t)len << 56, m;

	for (; in != end; in += 8) {
		m = load64_le(in);
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t i = 0; i < (len & 7); i++)
		b |= (uint64_t)in[i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/* Lists */

static void lru_unlink(struct entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
}

static void lru_push_front(struct stripe *s, struct entry *e)
{
	e->touched = ++s->tick;
	e->next = s->lru.next;
	e->prev = &s->lru;
	s->lru.next->prev = e;
	s->lru.next = e;
}

static struct entry **bucket_of(struct stripe *s, uint64_t hash)
{
	return &s->buckets[hash & (s->n_buckets - 1)];
}

/* The link that points at the entry for (kind, key), or at the NULL that
 * ends its chain. */
static struct entry **stripe_find(struct stripe *s, uint64_t hash, uint8_t kind,
				  const void *key, size_t key_len)
{
	struct entry **pp = bucket_of(s, hash);

	for (; *pp != NULL; pp = &(*pp)->hnext) {
		struct entry *e = *pp;
		if (e->hash == hash && e->kind == kind && e->key_len == key_len &&
		    memcmp(e->data, key, key_len) == 0)
			break;
	}
	return pp;
}

/* Unlink *pp from its chain and the LRU list; the caller frees it. */
static struct entry *stripe_unlink(struct stripe *s, struct entry **pp)
{
	struct entry *e = *pp;
	*pp = e->hnext;
	lru_unlink(e);
	s->count--;
	return e;
}

static void stripe_grow(struct stripe *s)
{
	size_t n = s->n_buckets * 2;
	struct entry **buckets = mt_xcalloc(n, sizeof(*buckets));

	for (size_t i = 0; i < s->n_buckets; i++) {
		for (struct entry *e = s->buckets[i], *next; e != NULL; e = next) {
			next = e->hnext;
			struct entry **b = &buckets[e->hash & (n - 1)];
			e->hnext = *b;
			*b = e;
		}
	}
	free(s->buckets);
	s->buckets = buckets;
	s->n_buckets = n;
}

/* Cache */

static uint64_t clock_coarse_ms(void *context)
{
	(void)context;
	return mt_clock_coarse_ms();
}

struct mt_dircache *mt_dircache_new(size_t max_entries,
				    mt_dircache_clock_t *clock,
				    void *clock_context)
{
	struct mt_dircache *c = mt_xcalloc(1, sizeof(*c));

	c->clock = clock != NULL ? clock : clock_coarse_ms;
	c->clock_context = clock_context;
	if (RAND_bytes((unsigned char *)c->sip_key, sizeof(c->sip_key)) != 1 ||
	    RAND_bytes(c->mac_key, sizeof(c->mac_key)) != 1)
		mt_panic("dircache: RAND_bytes failed");
	c->hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (c->hmac == NULL)
		mt_panic("dircache: OpenSSL has no HMAC");
	if (max_entries == 0)
		return c;
	c->n_stripes = max_entries >= STRIPES_MIN_ENTRIES ? STRIPES_MAX : 1;
	c->stripes = aligned_alloc(64, sizeof(struct stripe) * c->n_stripes);
	if (c->stripes == NULL)
		mt_panic("dircache: out of memory");
	for (unsigned int i = 0; i < c->n_stripes; i++) {
		struct stripe *s = &c->stripes[i];
		memset(s, 0, sizeof(*s));
		pthread_mutex_init(&s->lock, NULL);
		s->n_buckets = BUCKETS_INITIAL;
		s->buckets = mt_xcalloc(s->n_buckets, sizeof(*s->buckets));
		/* Split the bound exactly: the first stripes take the rest. */
		s->capacity = max_entries / c->n_stripes +
			(i < max_entries % c->n_stripes ? 1 : 0);
		s->promote_after = s->capacity / 8;
		s->lru.next = s->lru.prev = &s->lru;
	}
	return c;
}

void mt_dircache_free(struct mt_dircache **cache_p)
{
	struct mt_dircache *c = *cache_p;

	if (c == NULL)
		return;
	*cache_p = NULL;
	for (unsigned int i = 0; i < c->n_stripes; i++) {
		struct stripe *s = &c->stripes[i];
		for (struct entry *e = s->lru.next, *next; e != &s->lru; e = next) {
			next = e->next;
			free(e);
		}
		free(s->buckets);
		pthread_mutex_destroy(&s->lock);
	}
	free(c->stripes);
	EVP_MAC_free(c->hmac);
	OPENSSL_cleanse(c->mac_key, sizeof(c->mac_key));
	free(c);
}

static struct stripe *stripe_for(struct mt_dircache *c, uint64_t hash)
{
	/* The top bits pick the stripe, the low bits the bucket. */
	return &c->stripes[(hash >> 60) & (c->n_stripes - 1)];
}

/* Insert a new entry for (kind, key) built from up to two value parts. */
static void cache_put(struct mt_dircache *c, uint8_t kind, const void *key,
		      size_t key_len, const void *v1, size_t v1_len,
		      const void *v2, size_t v2_len, bool negative,
		      uint64_t ttl_ms)
{
	if (c->n_stripes == 0)
		return;
	uint64_t hash = siphash13(c->sip_key, kind, key, key_len);
	struct stripe *s = stripe_for(c, hash);
	struct entry *old = NULL, *evicted = NULL, *e = NULL;

	if (ttl_ms > 0) {
		e = mt_xmalloc(sizeof(*e) + key_len + v1_len + v2_len);
		e->hash = hash;
		e->expires = c->clock(c->clock_context) + ttl_ms;
		e->key_len = (uint32_t)key_len;
		e->value_len = (uint32_t)(v1_len + v2_len);
		e->kind = kind;
		e->negative = negative;
		memcpy(e->data, key, key_len);
		if (v1_len > 0)
			memcpy(e->data + key_len, v1, v1_len);
		if (v2_len > 0)
			memcpy(e->data + key_len + v1_len, v2, v2_len);
	}

	pthread_mutex_lock(&s->lock);
	struct entry **pp = stripe_find(s, hash, kind, key, key_len);
	if (*pp != NULL)
		old = stripe_unlink(s, pp);
	if (e != NULL) {
		if (s->count >= s->capacity) {
			struct entry *lru = s->lru.prev;
			evicted = stripe_unlink(s, stripe_find(s, lru->hash,
				lru->kind, lru->data, lru->key_len));
			s->evictions++;
		}
		if (s->count >= s->n_buckets)
			stripe_grow(s);
		pp = bucket_of(s, hash);
		e->hnext = *pp;
		*pp = e;
		lru_push_front(s, e);
		s->count++;
		s->inserts++;
	}
	pthread_mutex_unlock(&s->lock);
	free(old);
	free(evicted);
}

/* Find (kind, key); on a positive hit copy the value from offset skip on.
 * If mac is set, the value must start with those AUTH_MAC_LEN bytes. */
static enum mt_dircache_hit
cache_get(struct mt_dircache *c, uint8_t kind, const void *key, size_t key_len,
	  const unsigned char *mac, void *value_r, size_t cap,
	  size_t *value_len_r)
{
	if (c->n_stripes == 0)
		return MT_DIRCACHE_MISS;
	uint64_t hash = siphash13(c->sip_key, kind, key, key_len);
	uint64_t now = c->clock(c->clock_context);
	struct stripe *s = stripe_for(c, hash);
	struct entry *expired = NULL;
	enum mt_dircache_hit hit = MT_DIRCACHE_MISS;
	size_t skip = mac != NULL ? AUTH_MAC_LEN : 0;

	pthread_mutex_lock(&s->lock);
	struct entry **pp = stripe_find(s, hash, kind, key, key_len);
	struct entry *e = *pp;
	if (e == NULL) {
		s->misses++;
	} else if (now >= e->expires) {
		expired = stripe_unlink(s, pp);
		s->expired++;
		s->misses++;
	} else if (mac != NULL && (e->value_len < skip ||
		   CRYPTO_memcmp(e->data + e->key_len, mac, skip) != 0)) {
		s->misses++;
	} else {
		if (s->tick - e->touched >= s->promote_after) {
			lru_unlink(e);
			lru_push_front(s, e);
		}
		if (e->negative) {
			hit = MT_DIRCACHE_NEGATIVE;
			s->negative_hits++;
		} else {
			size_t len = e->value_len - skip;
			memcpy(value_r, e->data + e->key_len + skip,
			       len < cap ? len : cap);
			*value_len_r = len;
			hit = MT_DIRCACHE_POSITIVE;
			s->hits++;
		}
	}
	pthread_mutex_unlock(&s->lock);
	free(expired);
	return hit;
}

void mt_dircache_put(struct mt_dircache *cache, const void *key,
		     size_t key_len, const void *value, size_t value_len,
		     bool negative, uint64_t ttl_ms)
{
	if (negative)
		value_len = 0;
	cache_put(cache, KIND_PLAIN, key, key_len, value, value_len, NULL, 0,
		  negative, ttl_ms);
}

enum mt_dircache_hit mt_dircache_get(struct mt_dircache *cache,
				     const void *key, size_t key_len,
				     void *value_r, size_t cap,
				     size_t *value_len_r)
{
	return cache_get(cache, KIND_PLAIN, key, key_len, NULL, value_r, cap,
			 value_len_r);
}

void mt_dircache_remove(struct mt_dircache *cache, const void *key,
			size_t key_len)
{
	cache_put(cache, KIND_PLAIN, key, key_len, NULL, 0, NULL, 0, false, 0);
}

/* mac_r = HMAC-SHA-256(secret, user || NUL || password). Including the user
 * means equal passwords of two users give different MACs. */
static void auth_mac(struct mt_dircache *c, const char *user,
		     const char *password, unsigned char mac_r[AUTH_MAC_LEN])
{
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						 (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(c->hmac);
	size_t len = 0;

	if (ctx == NULL ||
	    EVP_MAC_init(ctx, c->mac_key, sizeof(c->mac_key), params) != 1 ||
	    EVP_MAC_update(ctx, (const unsigned char *)user, strlen(user) + 1) != 1 ||
	    EVP_MAC_update(ctx, (const unsigned char *)password,
			   strlen(password)) != 1 ||
	    EVP_MAC_final(ctx, mac_r, &len, AUTH_MAC_LEN) != 1 ||
	    len != AUTH_MAC_LEN)
		mt_panic("dircache: HMAC-SHA-256 failed");
	EVP_MAC_CTX_free(ctx);
}

void mt_dircache_auth_put(struct mt_dircache *cache, const char *user,
			  const char *password, const void *value,
			  size_t value_len, uint64_t ttl_ms)
{
	unsigned char mac[AUTH_MAC_LEN];

	if (cache->n_stripes == 0 || ttl_ms == 0)
		return;
	auth_mac(cache, user, password, mac);
	cache_put(cache, KIND_AUTH, user, strlen(user), mac, sizeof(mac),
		  value, value_len, false, ttl_ms);
	OPENSSL_cleanse(mac, sizeof(mac));
}

enum mt_dircache_hit mt_dircache_auth_get(struct mt_dircache *cache,
					  const char *user,
					  const char *password, void *value_r,
					  size_t cap, size_t *value_len_r)
{
	unsigned char mac[AUTH_MAC_LEN];

	if (cache->n_stripes == 0)
		return MT_DIRCACHE_MISS;
	auth_mac(cache, user, password, mac);
	enum mt_dircache_hit hit = cache_get(cache, KIND_AUTH, user,
		strlen(user), mac, value_r, cap, value_len_r);
	OPENSSL_cleanse(mac, sizeof(mac));
	return hit;
}

void mt_dircache_auth_remove(struct mt_dircache *cache, const char *user)
{
	cache_put(cache, KIND_AUTH, user, strlen(user), NULL, 0, NULL, 0, false, 0);
}

void mt_dircache_count_error(struct mt_dircache *cache)
{
	atomic_fetch_add_explicit(&cache->errors, 1, memory_order_relaxed);
}

void mt_dircache_get_stats(struct mt_dircache *cache,
			   struct mt_dircache_stats *stats_r)
{
	memset(stats_r, 0, sizeof(*stats_r));
	for (unsigned int i = 0; i < cache->n_stripes; i++) {
		struct stripe *s = &cache->stripes[i];
		pthread_mutex_lock(&s->lock);
		stats_r->entries += s->count;
		stats_r->hits += s->hits;
		stats_r->negative_hits += s->negative_hits;
		stats_r->misses += s->misses;
		stats_r->expired += s->expired;
		stats_r->evictions += s->evictions;
		stats_r->inserts += s->inserts;
		pthread_mutex_unlock(&s->lock);
	}
	stats_r->errors = atomic_load_explicit(&cache->errors,
					       memory_order_relaxed);
}

void mt_dircache_stats_append(struct mt_dircache *cache, struct mt_buf *out)
{
	struct mt_dircache_stats st;

	mt_dircache_get_stats(cache, &st);
	mt_buf_appendf(out, "cache_entries=%llu cache_hits=%llu "
		       "cache_negative_hits=%llu cache_misses=%llu "
		       "cache_expired=%llu cache_evictions=%llu "
		       "cache_inserts=%llu cache_errors=%llu",
		       (unsigned long long)st.entries,
		       (unsigned long long)st.hits,
		       (unsigned long long)st.negative_hits,
		       (unsigned long long)st.misses,
		       (unsigned long long)st.expired,
		       (unsigned long long)st.evictions,
		       (unsigned long long)st.inserts,
		       (unsigned long long)st.errors);
}
