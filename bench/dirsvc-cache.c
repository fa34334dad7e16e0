/* dirsvc-cache.c — benchmark of libdirsvc's lookup cache (dirsvc/dircache.c):
 * cached recipient lookups per second, as the library does them on a hit
 * (lower-case the address, keyed hash, stripe lock, LRU touch, copy of a
 * ~60-byte value), on one core and on several threads at once.
 *
 *   dirsvc-cache [-e ENTRIES] [-n LOOKUPS] [-t THREADS] [-r RUNS] [-a]
 *     ENTRIES  cached addresses (default 100000; the cache is made 1/8
 *              larger, as its bound is split among 16 stripes)
 *     LOOKUPS  per thread per run (default 5000000)
 *     THREADS  threads looking up at once (default 1)
 *     RUNS     runs; the median is reported (default 3)
 *     -a       auth cache instead (HMAC-SHA-256 of the password per hit)
 * Prints each run and "RESULT ... median=N/s". Not installed.
 * Trust boundary: none (synthetic data). */
#include "dircache.h"

#include "alloc.h"
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct opts {
	unsigned long entries, lookups, threads, runs;
	bool auth;
};

/* The passwords of the auth run, made before timing. */
static char (*passwords)[32];

/* "User<k>@Example.TEST" into buf, cheaply: the address arrives in a
 * client's input buffer, already in the CPU cache, not in a big array. */
static void make_addr(char *buf, unsigned long k)
{
	char digits[24];
	size_t n = 0, pos = 4;

	do {
		digits[n++] = (char)('0' + k % 10);
		k /= 10;
	} while (k > 0);
	memcpy(buf, "User", 4);
	while (n > 0)
		buf[pos++] = digits[--n];
	memcpy(buf + pos, "@Example.TEST", 14);
}

struct worker {
	pthread_t thread;
	struct mt_dircache *cache;
	const struct opts *o;
	unsigned int seed;
	unsigned long hits;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What dirsvc.c does with an address before the cache: copy, lower-case. */
static size_t make_key(char *key, const char *addr)
{
	size_t i = 0;
	for (; addr[i] != '\0'; i++) {
		char c = addr[i];
		key[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	key[i] = '\0';
	return i;
}

static void *run_lookups(void *arg)
{
	struct worker *w = arg;
	char addr[64], key[64], value[1100];
	unsigned int x = w->seed;
	size_t len;

	for (unsigned long i = 0; i < w->o->lookups; i++) {
		/* xorshift: a spread of keys, so the table is really used */
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		unsigned long k = x % w->o->entries;
		make_addr(addr, k + 1);
		size_t klen = make_key(key, addr);
		enum mt_dircache_hit hit;
		if (w->o->auth) {
			hit = mt_dircache_auth_get(w->cache, key, passwords[k],
						   value, sizeof(value), &len);
		} else {
			hit = mt_dircache_get(w->cache, key, klen, value,
					      sizeof(value), &len);
		}
		w->hits += hit == MT_DIRCACHE_POSITIVE;
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct opts o = { 100000, 5000000, 1, 3, false };
	int c;

	mt_log_init("dirsvc-cache", MT_LOG_TARGET_STDERR);
	while ((c = getopt(argc, argv, "e:n:t:r:a")) != -1) {
		switch (c) {
		case 'e': o.entries = strtoul(optarg, NULL, 10); break;
		case 'n': o.lookups = strtoul(optarg, NULL, 10); break;
		case 't': o.threads = strtoul(optarg, NULL, 10); break;
		case 'r': o.runs = strtoul(optarg, NULL, 10); break;
		case 'a': o.auth = true; break;
		default:
			fprintf(stderr, "usage: dirsvc-cache [-e ENTRIES] [-n LOOKUPS] "
				"[-t THREADS] [-r RUNS] [-a]\n");
			return 2;
		}
	}
	if (o.entries == 0 || o.threads == 0 || o.runs == 0)
		return 2;

	struct mt_dircache *cache = mt_dircache_new(o.entries + o.entries / 8,
						    NULL, NULL);
	char key[64], value[128];
	passwords = mt_xcalloc(o.entries, sizeof(*passwords));
	for (unsigned long k = 0; k < o.entries; k++) {
		char addr[64];
		make_addr(addr, k + 1);
		snprintf(passwords[k], sizeof(passwords[k]), "secret%lu", k + 1);
		make_key(key, addr);
		/* The recipient encoding: quota, account, forward flag, then
		 * address, shard and forward strings. */
		memset(value, 0, 10);
		int n = snprintf(value + 10, sizeof(value) - 10, "%s%cstore%lu%c",
				 key, 0, 1 + k % 2, 0);
		if (o.auth) {
			mt_dircache_auth_put(cache, key, passwords[k], value,
					     10 + (size_t)n + 1, 3600000);
		} else {
			mt_dircache_put(cache, key, strlen(key), value,
					10 + (size_t)n + 1, false, 3600000);
		}
	}

	double *rates = mt_xcalloc(o.runs, sizeof(double));
	struct worker *ws = mt_xcalloc(o.threads, sizeof(*ws));
	for (unsigned long r = 0; r < o.runs; r++) {
		double t0 = now_s();
		unsigned long hits = 0;
		for (unsigned long i = 0; i < o.threads; i++) {
			ws[i] = (struct worker){ .cache = cache, .o = &o,
						 .seed = (unsigned int)(2463534242u + i * 7919 + r) };
			if (pthread_create(&ws[i].thread, NULL, run_lookups, &ws[i]) != 0)
				mt_fatal("pthread_create failed");
		}
		for (unsigned long i = 0; i < o.threads; i++) {
			pthread_join(ws[i].thread, NULL);
			hits += ws[i].hits;
		}
		double s = now_s() - t0;
		rates[r] = (double)(o.lookups * o.threads) / s;
		printf("run %lu: %lu lookups in %.3f s = %.0f/s (hits %lu)\n", r + 1,
		       o.lookups * o.threads, s, rates[r], hits);
		if (hits < o.lookups * o.threads * 99 / 100)
			mt_fatal("fewer than 99%% of the lookups hit");
	}
	qsort(rates, o.runs, sizeof(double), cmp_double);
	printf("RESULT dirsvc-cache %s entries=%lu threads=%lu median=%.0f/s\n",
	       o.auth ? "auth" : "lookup", o.entries, o.threads,
	       rates[o.runs / 2]);
	free(ws);
	free(rates);
	free(passwords);
	mt_dircache_free(&cache);
	return 0;
}
