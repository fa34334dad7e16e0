/* shard.c — the rendezvous shard hash (see shard.h and dirsvc/README.md).
 * Trust boundary: none. */
#include "shard.h"

#include <string.h>

#define FNV64_OFFSET 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL

/* MurmurHash3's 64-bit finalizer. */
static uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

uint64_t lg_shard_score(const char *addr, const char *shard)
{
	uint64_t h = FNV64_OFFSET;

	for (const unsigned char *p = (const unsigned char *)shard; *p != '\0'; p++)
		h = (h ^ *p) * FNV64_PRIME;
	h = (h ^ 0) * FNV64_PRIME;	/* the 0x00 separator */
	for (const unsigned char *p = (const unsigned char *)addr; *p != '\0'; p++) {
		unsigned char c = *p >= 'A' && *p <= 'Z' ? (unsigned char)(*p - 'A' + 'a') : *p;
		h = (h ^ c) * FNV64_PRIME;
	}
	return fmix64(h);
}

int lg_shard_pick(const char *addr, const char *const *names, size_t n)
{
	int best = -1;
	uint64_t best_score = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t score = lg_shard_score(addr, names[i]);
		if (best < 0 || score > best_score ||
		    (score == best_score && strcmp(names[i], names[best]) < 0)) {
			best = (int)i;
			best_score = score;
		}
	}
	return best;
}
