/* histogram.h — log-linear latency histogram (in the spirit of
 * HdrHistogram): exact below 64 us, then 64 sub-buckets per power of two, so
 * any recorded value is known to within 1/64 (1.6%) whatever its size, in a
 * fixed 18 KiB per histogram, without storing samples. Exact count, sum, min
 * and max ride along. Trust boundary: none (internal). */
#ifndef LG_HISTOGRAM_H
#define LG_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define LG_HIST_SUB_BITS 6
#define LG_HIST_SUB (1u << LG_HIST_SUB_BITS)		/* 64 */
/* Values up to 2^40 us (12.7 days); larger ones land in the last bucket. */
#define LG_HIST_MAX_BITS 40
#define LG_HIST_BUCKETS (LG_HIST_SUB + (LG_HIST_MAX_BITS - LG_HIST_SUB_BITS + 1) * LG_HIST_SUB)

struct lg_hist {
	uint64_t count;
	uint64_t sum;		/* us */
	uint64_t min, max;	/* us; min is UINT64_MAX while empty */
	uint64_t buckets[LG_HIST_BUCKETS];
};

void lg_hist_init(struct lg_hist *hist);
void lg_hist_record(struct lg_hist *hist, uint64_t us);
void lg_hist_merge(struct lg_hist *dst, const struct lg_hist *src);

/* Bucket index of a value, and the smallest and largest values of a bucket. */
size_t lg_hist_index(uint64_t us);
uint64_t lg_hist_bucket_low(size_t index);
uint64_t lg_hist_bucket_high(size_t index);

/* The value at quantile q (0 < q <= 1): the largest value of the bucket that
 * holds the ceil(q * count)-th smallest sample, clamped to [min, max]; so
 * the result is never below the true quantile and above it by at most 1/64.
 * 0 when empty. */
uint64_t lg_hist_quantile(const struct lg_hist *hist, double q);
/* Mean in us (0 when empty). */
double lg_hist_mean(const struct lg_hist *hist);
/* Samples <= us (bucket resolution: counts whole buckets whose high <= us). */
uint64_t lg_hist_count_at_most(const struct lg_hist *hist, uint64_t us);

#endif
