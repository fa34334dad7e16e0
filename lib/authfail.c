/* authfail.c — the per-client-address table of authfail.h: open sessions
 * and recent failed logins, the delay that doubles per failure, the
 * optional block, and forgetting what no longer matters.
 *
 * A chained hash table (FNV-1a over the address text) that doubles its
 * buckets when it holds as many entries as buckets, behind one mutex.
 * An entry lives while it has open sessions, attempts under way or
 * unexpired failures; one with only failures is dropped by a sweep (the
 * daemon's periodic one, or the one mt_authfail_failed runs at most once
 * a window, so a daemon without a sweep timer still forgets guessers that
 * went away).
 *
 * Trust boundary: the key is the peer address text (bounded to
 * MT_AUTHFAIL_KEY_MAX - 1 characters here, so a longer one is cut the
 * same way on every call); a client can make us keep one small entry per
 * address it connects or fails from, and no more. No RFC applies. */
#include "authfail.h"
#include "clock.h"
#include "alloc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct authfail_entry {
	struct authfail_entry *next;
	uint32_t sessions;
	uint32_t attempts;		/* password checks under way */
	uint32_t failures;		/* within the window */
	uint64_t last_failure_ms;
	char ip[MT_AUTHFAIL_KEY_MAX];
};

struct mt_authfail {
	pthread_mutex_t lock;
	struct authfail_entry **buckets;
	size_t n_buckets;		/* a power of two */
	size_t count;
	uint64_t last_sweep_ms;
	struct mt_authfail_stats stats;	/* under lock; count is its addresses */
};

#define INITIAL_BUCKETS 256

/* FNV-1a over the address text. */
static size_t key_hash(const char *ip)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const char *p = ip; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	return (size_t)(h ^ (h >> 32));
}

struct mt_authfail *mt_authfail_new(void)
{
	struct mt_authfail *af = mt_xcalloc(1, sizeof(*af));
	pthread_mutex_init(&af->lock, NULL);
	af->n_buckets = INITIAL_BUCKETS;
	af->buckets = mt_xcalloc(af->n_buckets, sizeof(*af->buckets));
	return af;
}

void mt_authfail_free(struct mt_authfail **af_p)
{
	struct mt_authfail *af = *af_p;
	if (af == NULL)
		return;
	*af_p = NULL;
	for (size_t i = 0; i < af->n_buckets; i++) {
		for (struct authfail_entry *e = af->buckets[i], *next; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(af->buckets);
	pthread_mutex_destroy(&af->lock);
	free(af);
}

static void grow(struct mt_authfail *af)
{
	size_t n = af->n_buckets * 2;
	struct authfail_entry **buckets = mt_xcalloc(n, sizeof(*buckets));
	for (size_t i = 0; i < af->n_buckets; i++) {
		for (struct authfail_entry *e = af->buckets[i], *next; e != NULL; e = next) {
			next = e->next;
			size_t b = key_hash(e->ip) & (n - 1);
			e->next = buckets[b];
			buckets[b] = e;
		}
	}
	free(af->buckets);
	af->buckets = buckets;
	af->n_buckets = n;
}

/* Where the entry for key is linked (*result NULL if absent); locked. */
static struct authfail_entry **find(struct mt_authfail *af, const char *key)
{
	struct authfail_entry **pp = &af->buckets[key_hash(key) & (af->n_buckets - 1)];
	while (*pp != NULL && strcmp((*pp)->ip, key) != 0)
		pp = &(*pp)->next;
	return pp;
}

/* The entry for key, created if absent; locked. */
static struct authfail_entry *get(struct mt_authfail *af, const char *key)
{
	struct authfail_entry **pp = find(af, key);
	if (*pp != NULL)
		return *pp;
	if (af->count >= af->n_buckets) {
		grow(af);
		pp = find(af, key);
	}
	struct authfail_entry *e = mt_xcalloc(1, sizeof(*e));
	memcpy(e->ip, key, sizeof(e->ip));
	*pp = e;
	af->count++;
	return e;
}

/* Forget failures the window has passed (a clock read before another
 * thread recorded a later failure is not past it); locked. */
static void expire(struct authfail_entry *e, const struct mt_authfail_limits *limits,
		   uint64_t now_ms)
{
	if (e->failures != 0 && now_ms >= e->last_failure_ms &&
	    now_ms - e->last_failure_ms >= limits->window)
		e->failures = 0;
}

/* Unlink and free *pp if it holds nothing worth remembering; locked. */
static void drop_if_empty(struct mt_authfail *af, struct authfail_entry **pp)
{
	struct authfail_entry *e = *pp;
	if (e->sessions != 0 || e->attempts != 0 || e->failures != 0)
		return;
	*pp = e->next;
	free(e);
	af->count--;
}

static void sweep_locked(struct mt_authfail *af,
			 const struct mt_authfail_limits *limits, uint64_t now_ms)
{
	for (size_t i = 0; i < af->n_buckets; i++) {
		struct authfail_entry **pp = &af->buckets[i];
		while (*pp != NULL) {
			struct authfail_entry *e = *pp;
			expire(e, limits, now_ms);
			drop_if_empty(af, pp);
			if (*pp == e)
				pp = &e->next;
		}
	}
	af->last_sweep_ms = now_ms;
}

/* The caller's address text, cut to what an entry holds. */
static void key_copy(char key[MT_AUTHFAIL_KEY_MAX], const char *ip)
{
	snprintf(key, MT_AUTHFAIL_KEY_MAX, "%s", ip);
}

enum mt_authfail_admit mt_authfail_session_open(struct mt_authfail *af,
						const char *ip,
						const struct mt_authfail_limits *limits,
						uint64_t now_ms)
{
	enum mt_authfail_admit admit = MT_AUTHFAIL_ADMIT_OK;
	char key[MT_AUTHFAIL_KEY_MAX];

	key_copy(key, ip);
	pthread_mutex_lock(&af->lock);
	struct authfail_entry *e = get(af, key);
	expire(e, limits, now_ms);
	if (limits->block_after != 0 && e->failures >= limits->block_after) {
		admit = MT_AUTHFAIL_ADMIT_BLOCKED;
		af->stats.refused_blocked++;
	} else if (limits->sessions != 0 && e->sessions >= limits->sessions) {
		admit = MT_AUTHFAIL_ADMIT_SESSIONS;
		af->stats.refused_sessions++;
	} else
		e->sessions++;
	/* A refused address holds failures or sessions: its entry stays. */
	pthread_mutex_unlock(&af->lock);
	return admit;
}

void mt_authfail_session_close(struct mt_authfail *af, const char *ip)
{
	char key[MT_AUTHFAIL_KEY_MAX];

	key_copy(key, ip);
	pthread_mutex_lock(&af->lock);
	struct authfail_entry **pp = find(af, key);
	if (*pp != NULL && (*pp)->sessions > 0) {
		(*pp)->sessions--;
		/* An entry with failures stays until a sweep expires them. */
		drop_if_empty(af, pp);
	}
	pthread_mutex_unlock(&af->lock);
}

enum mt_authfail_attempt mt_authfail_attempt_start(struct mt_authfail *af,
						   const char *ip,
						   const struct mt_authfail_limits *limits,
						   uint64_t now_ms)
{
	enum mt_authfail_attempt attempt = MT_AUTHFAIL_ATTEMPT_OK;
	char key[MT_AUTHFAIL_KEY_MAX];

	if (limits->block_after == 0)
		return MT_AUTHFAIL_ATTEMPT_OK;
	key_copy(key, ip);
	pthread_mutex_lock(&af->lock);
	struct authfail_entry *e = get(af, key);
	expire(e, limits, now_ms);
	if (e->failures >= limits->block_after) {
		attempt = MT_AUTHFAIL_ATTEMPT_BLOCKED;
		af->stats.refused_blocked++;
	} else if ((uint64_t)e->failures + e->attempts >= limits->block_after) {
		/* Each check under way may fail and block the address. */
		attempt = MT_AUTHFAIL_ATTEMPT_WAIT;
	} else {
		e->attempts++;
	}
	/* Refused or waiting, the entry holds failures or attempts: it stays. */
	pthread_mutex_unlock(&af->lock);
	return attempt;
}

void mt_authfail_attempt_done(struct mt_authfail *af, const char *ip)
{
	char key[MT_AUTHFAIL_KEY_MAX];

	key_copy(key, ip);
	pthread_mutex_lock(&af->lock);
	struct authfail_entry **pp = find(af, key);
	if (*pp != NULL && (*pp)->attempts > 0) {
		(*pp)->attempts--;
		drop_if_empty(af, pp);
	}
	pthread_mutex_unlock(&af->lock);
}

uint64_t mt_authfail_failed(struct mt_authfail *af, const char *ip,
			    const struct mt_authfail_limits *limits,
			    uint64_t now_ms, bool *blocked_r)
{
	char key[MT_AUTHFAIL_KEY_MAX];

	key_copy(key, ip);
	pthread_mutex_lock(&af->lock);
	if (now_ms > af->last_sweep_ms && now_ms - af->last_sweep_ms >= limits->window)
		sweep_locked(af, limits, now_ms);
	struct authfail_entry *e = get(af, key);
	expire(e, limits, now_ms);
	if (e->failures < UINT32_MAX)
		e->failures++;
	af->stats.failures++;
	if (limits->block_after != 0 && e->failures == limits->block_after)
		af->stats.blocks++;
	if (now_ms > e->last_failure_ms)
		e->last_failure_ms = now_ms;
	uint64_t failures = e->failures;
	pthread_mutex_unlock(&af->lock);
	if (blocked_r != NULL)
		*blocked_r = limits->block_after != 0 && failures >= limits->block_after;
	return mt_authfail_delay(limits->delay, failures);
}

bool mt_authfail_blocked(struct mt_authfail *af, const char *ip,
			 const struct mt_authfail_limits *limits, uint64_t now_ms)
{
	char key[MT_AUTHFAIL_KEY_MAX];
	bool blocked = false;

	if (limits->block_after == 0)
		return false;
	key_copy(key, ip);
	pthread_mutex_lock(&af->lock);
	struct authfail_entry **pp = find(af, key);
	if (*pp != NULL) {
		expire(*pp, limits, now_ms);
		blocked = (*pp)->failures >= limits->block_after;
		if (blocked)
			af->stats.refused_blocked++;
		/* Expired and without sessions: nothing left to remember. */
		drop_if_empty(af, pp);
	}
	pthread_mutex_unlock(&af->lock);
	return blocked;
}

void mt_authfail_sweep(struct mt_authfail *af,
		       const struct mt_authfail_limits *limits, uint64_t now_ms)
{
	pthread_mutex_lock(&af->lock);
	sweep_locked(af, limits, now_ms);
	pthread_mutex_unlock(&af->lock);
}

void mt_authfail_get_stats(struct mt_authfail *af, struct mt_authfail_stats *stats)
{
	pthread_mutex_lock(&af->lock);
	*stats = af->stats;
	stats->addresses = af->count;
	pthread_mutex_unlock(&af->lock);
}

size_t mt_authfail_count(struct mt_authfail *af)
{
	pthread_mutex_lock(&af->lock);
	size_t n = af->count;
	pthread_mutex_unlock(&af->lock);
	return n;
}

uint64_t mt_authfail_delay(uint64_t first_ms, uint64_t n)
{
	uint64_t delay = first_ms;
	/* Doubling stops at the cap: at most 16 rounds for a 1 ms start. */
	for (uint64_t i = 1; i < n && delay != 0 && delay < MT_AUTHFAIL_DELAY_MAX; i++)
		delay *= 2;
	return delay < MT_AUTHFAIL_DELAY_MAX ? delay : MT_AUTHFAIL_DELAY_MAX;
}

uint64_t mt_authfail_wait_ms(uint64_t started_ms, uint64_t delay_ms,
			     uint64_t now_ms)
{
	uint64_t due = started_ms + delay_ms;
	return due > now_ms ? due - now_ms : 0;
}

bool mt_authfail_key(const struct sockaddr *peer, char *buf, size_t size)
{
	char text[INET6_ADDRSTRLEN];

	if (peer->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)peer;
		inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text));
	} else if (peer->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)peer;
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
			inet_ntop(AF_INET, &sin6->sin6_addr.s6_addr[12], text, sizeof(text));
		else
			inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof(text));
	} else {
		return false;
	}
	snprintf(buf, size, "%s", text);
	return true;
}
