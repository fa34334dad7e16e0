/* rng.h — the load generator's seeded pseudo-random numbers: xoshiro256**
 * seeded through splitmix64, so a fixed seed gives the same run on every
 * machine (never rand(), whose sequence differs between C libraries).
 * Each independent stream of decisions (one per session kind and load level)
 * has its own generator, derived from (seed, stream), so the order in which
 * timers of different kinds fire cannot change what any stream draws.
 * Trust boundary: none (internal). */
#ifndef LG_RNG_H
#define LG_RNG_H

#include <stdint.h>

struct lg_rng {
	uint64_t s[4];
};

/* Seed the generator for stream number `stream` of run seed `seed`. */
void lg_rng_seed(struct lg_rng *rng, uint64_t seed, uint64_t stream);
uint64_t lg_rng_next(struct lg_rng *rng);
/* Uniform in [0, 1) with 53 random bits. */
double lg_rng_uniform(struct lg_rng *rng);
/* Uniform integer in [0, n); n > 0. Unbiased (rejection). */
uint64_t lg_rng_below(struct lg_rng *rng, uint64_t n);
/* Exponentially distributed with the given mean (> 0). */
double lg_rng_exponential(struct lg_rng *rng, double mean);

#endif
