/* rng.c — xoshiro256** (Blackman and Vigna, 2018) seeded with splitmix64.
 * See rng.h. Trust boundary: none (internal). */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void lg_rng_seed(struct lg_rng *rng, uint64_t seed, uint64_t stream)
{
	/* Mix the stream number in through its own splitmix round so streams
	 * 0, 1, 2 ... of one seed are unrelated sequences. */
	uint64_t mix = stream;
	uint64_t state = seed ^ splitmix64(&mix);

	for (int i = 0; i < 4; i++)
		rng->s[i] = splitmix64(&state);
	/* The all-zero state is the one xoshiro cannot leave. */
	if ((rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]) == 0)
		rng->s[0] = 1;
}

uint64_t lg_rng_next(struct lg_rng *rng)
{
	uint64_t *s = rng->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double lg_rng_uniform(struct lg_rng *rng)
{
	return (double)(lg_rng_next(rng) >> 11) * 0x1.0p-53;
}

uint64_t lg_rng_below(struct lg_rng *rng, uint64_t n)
{
	/* Reject the top partial range so every value is equally likely. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;

	do {
		x = lg_rng_next(rng);
	} while (x >= limit);
	return x % n;
}

double lg_rng_exponential(struct lg_rng *rng, double mean)
{
	/* 1 - U is in (0, 1], so the log is finite. */
	return -mean * log(1.0 - lg_rng_uniform(rng));
}
