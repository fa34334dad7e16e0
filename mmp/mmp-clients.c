/* mmp-clients.c — what the MMP remembers per client address: how many
 * connections it has open (conn_limit_per_client) and its recent failed
 * logins (the growing delay before a failure answer, the seed's "bad guy
 * penalty", and the auth_fail_limit block).
 *
 * Delay for the n-th failure within auth_fail_window of the previous one:
 * auth_fail_delay * 2^(n-1), at most MMP_AUTH_FAIL_DELAY_MAX. When n
 * reaches auth_fail_limit the address is blocked: new connections from it
 * are refused until auth_fail_window has passed since its last failure.
 * A successful login does not clear the count (an attacker holding one
 * valid account could otherwise reset it between guesses).
 *
 * Trust boundary: the key is the TCP peer address, which the client
 * controls only as far as TCP lets it (it cannot be spoofed on an
 * established connection). One table for the process behind one mutex:
 * admits come from the main loop, releases and failures from the workers;
 * every operation is a short hash lookup. No RFC applies. */
#include "mmp.h"
#include "alloc.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct client_key {
	uint8_t family;		/* AF_INET or AF_INET6 */
	uint8_t addr[16];
};

struct client_entry {
	struct client_entry *next;
	struct client_key key;
	uint32_t conns;
	uint32_t failures;
	uint64_t last_failure_ms;
};

struct mmp_clients {
	struct mmp_clients_settings set;
	pthread_mutex_t lock;
	struct client_entry **buckets;
	size_t n_buckets;	/* a power of two */
	size_t count;
};

static bool key_from_sockaddr(const struct sockaddr *sa, struct client_key *key)
{
	memset(key, 0, sizeof(*key));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		key->family = AF_INET;
		memcpy(key->addr, &sin->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			key->family = AF_INET;
			memcpy(key->addr, &sin6->sin6_addr.s6_addr[12], 4);
		} else {
			key->family = AF_INET6;
			memcpy(key->addr, &sin6->sin6_addr, 16);
		}
		return true;
	}
	return false;	/* AF_UNIX: not tracked */
}

/* FNV-1a over the key. */
static size_t key_hash(const struct client_key *key)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const uint8_t *p = (const uint8_t *)key;
	for (size_t i = 0; i < sizeof(*key); i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return (size_t)(h ^ (h >> 32));
}

struct mmp_clients *mmp_clients_new(const struct mmp_clients_settings *set)
{
	struct mmp_clients *c = mt_xcalloc(1, sizeof(*c));
	c->set = *set;
	pthread_mutex_init(&c->lock, NULL);
	c->n_buckets = 256;
	c->buckets = mt_xcalloc(c->n_buckets, sizeof(*c->buckets));
	return c;
}

void mmp_clients_free(struct mmp_clients **clients_p)
{
	struct mmp_clients *c = *clients_p;
	if (c == NULL)
		return;
	*clients_p = NULL;
	for (size_t i = 0; i < c->n_buckets; i++) {
		struct client_entry *e = c->buckets[i], *next;
		for (; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void grow(struct mmp_clients *c)
{
	size_t n = c->n_buckets * 2;
	struct client_entry **buckets = mt_xcalloc(n, sizeof(*buckets));
	for (size_t i = 0; i < c->n_buckets; i++) {
		struct client_entry *e = c->buckets[i], *next;
		for (; e != NULL; e = next) {
			next = e->next;
			size_t b = key_hash(&e->key) & (n - 1);
			e->next = buckets[b];
			buckets[b] = e;
		}
	}
	free(c->buckets);
	c->buckets = buckets;
	c->n_buckets = n;
}

/* The entry for key, created when create is set; locked by the caller. */
static struct client_entry *lookup(struct mmp_clients *c,
				   const struct client_key *key, bool create)
{
	size_t b = key_hash(key) & (c->n_buckets - 1);
	for (struct client_entry *e = c->buckets[b]; e != NULL; e = e->next)
		if (memcmp(&e->key, key, sizeof(*key)) == 0)
			return e;
	if (!create)
		return NULL;
	if (c->count >= c->n_buckets) {
		grow(c);
		b = key_hash(key) & (c->n_buckets - 1);
	}
	struct client_entry *e = mt_xcalloc(1, sizeof(*e));
	e->key = *key;
	e->next = c->buckets[b];
	c->buckets[b] = e;
	c->count++;
	return e;
}

/* Drop e if it holds nothing worth remembering (failures are expired by
 * the caller first); locked by the caller. */
static void maybe_remove(struct mmp_clients *c, struct client_entry *e)
{
	if (e->conns != 0 || e->failures != 0)
		return;
	size_t b = key_hash(&e->key) & (c->n_buckets - 1);
	for (struct client_entry **pp = &c->buckets[b]; *pp != NULL;
	     pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			free(e);
			c->count--;
			return;
		}
	}
}

/* Forget failures that are older than the window; locked. */
static void expire_failures(const struct mmp_clients *c,
			    struct client_entry *e, uint64_t now_ms)
{
	if (e->failures != 0 &&
	    now_ms - e->last_failure_ms >= c->set.auth_fail_window)
		e->failures = 0;
}

enum mmp_admit mmp_clients_admit(struct mmp_clients *c,
				 const struct sockaddr *peer, uint64_t now_ms)
{
	struct client_key key;
	enum mmp_admit admit = MMP_ADMIT_OK;

	if (!key_from_sockaddr(peer, &key))
		return MMP_ADMIT_OK;
	pthread_mutex_lock(&c->lock);
	struct client_entry *e = lookup(c, &key, true);
	expire_failures(c, e, now_ms);
	if (e->failures >= c->set.auth_fail_limit)
		admit = MMP_ADMIT_BLOCKED;
	else if (e->conns >= c->set.conn_limit_per_client)
		admit = MMP_ADMIT_PER_CLIENT;
	else
		e->conns++;
	if (admit != MMP_ADMIT_OK)
		maybe_remove(c, e);
	pthread_mutex_unlock(&c->lock);
	return admit;
}

void mmp_clients_release(struct mmp_clients *c, const struct sockaddr *peer)
{
	struct client_key key;

	if (!key_from_sockaddr(peer, &key))
		return;
	pthread_mutex_lock(&c->lock);
	struct client_entry *e = lookup(c, &key, false);
	if (e != NULL && e->conns > 0) {
		e->conns--;
		/* An entry with failures stays until the sweep expires them. */
		maybe_remove(c, e);
	}
	pthread_mutex_unlock(&c->lock);
}

uint64_t mmp_clients_auth_failed(struct mmp_clients *c,
				 const struct sockaddr *peer, uint64_t now_ms,
				 bool *blocked_r)
{
	struct client_key key;
	uint64_t delay = c->set.auth_fail_delay;

	*blocked_r = false;
	if (!key_from_sockaddr(peer, &key))
		return delay;
	pthread_mutex_lock(&c->lock);
	struct client_entry *e = lookup(c, &key, true);
	expire_failures(c, e, now_ms);
	if (e->failures < UINT32_MAX)
		e->failures++;
	e->last_failure_ms = now_ms;
	for (uint32_t i = 1; i < e->failures && delay < MMP_AUTH_FAIL_DELAY_MAX; i++)
		delay *= 2;
	*blocked_r = e->failures >= c->set.auth_fail_limit;
	pthread_mutex_unlock(&c->lock);
	return delay < MMP_AUTH_FAIL_DELAY_MAX ? delay : MMP_AUTH_FAIL_DELAY_MAX;
}

void mmp_clients_sweep(struct mmp_clients *c, uint64_t now_ms)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n_buckets; i++) {
		struct client_entry *e = c->buckets[i], *next;
		for (; e != NULL; e = next) {
			next = e->next;
			expire_failures(c, e, now_ms);
			maybe_remove(c, e);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

size_t mmp_clients_count(struct mmp_clients *c)
{
	pthread_mutex_lock(&c->lock);
	size_t n = c->count;
	pthread_mutex_unlock(&c->lock);
	return n;
}
