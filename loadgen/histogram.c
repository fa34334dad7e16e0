/* histogram.c — log-linear latency histogram (see histogram.h).
 * Trust boundary: none (internal). */
#include "histogram.h"

#include <math.h>
#include <string.h>

void lg_hist_init(struct lg_hist *hist)
{
	memset(hist, 0, sizeof(*hist));
	hist->min = UINT64_MAX;
}

size_t lg_hist_index(uint64_t us)
{
	if (us < LG_HIST_SUB)
		return (size_t)us;
	if (us >> LG_HIST_MAX_BITS)
		return LG_HIST_BUCKETS - 1;
	unsigned int msb = 63u - (unsigned int)__builtin_clzll(us);
	unsigned int shift = msb - LG_HIST_SUB_BITS;
	uint64_t top = us >> shift;		/* 64..127 */

	return LG_HIST_SUB + (size_t)shift * LG_HIST_SUB + (size_t)(top - LG_HIST_SUB);
}

uint64_t lg_hist_bucket_low(size_t index)
{
	if (index < LG_HIST_SUB)
		return index;
	size_t shift = (index - LG_HIST_SUB) / LG_HIST_SUB;
	uint64_t top = LG_HIST_SUB + (index - LG_HIST_SUB) % LG_HIST_SUB;

	return top << shift;
}

uint64_t lg_hist_bucket_high(size_t index)
{
	if (index < LG_HIST_SUB)
		return index;
	if (index == LG_HIST_BUCKETS - 1)
		return UINT64_MAX;
	size_t shift = (index - LG_HIST_SUB) / LG_HIST_SUB;

	return lg_hist_bucket_low(index) + ((uint64_t)1 << shift) - 1;
}

void lg_hist_record(struct lg_hist *hist, uint64_t us)
{
	hist->buckets[lg_hist_index(us)]++;
	hist->count++;
	hist->sum += us;
	if (us < hist->min)
		hist->min = us;
	if (us > hist->max)
		hist->max = us;
}

void lg_hist_merge(struct lg_hist *dst, const struct lg_hist *src)
{
	for (size_t i = 0; i < LG_HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t lg_hist_quantile(const struct lg_hist *hist, double q)
{
	if (hist->count == 0)
		return 0;
	double want = ceil(q * (double)hist->count);
	uint64_t rank = want < 1 ? 1 : (uint64_t)want;
	uint64_t seen = 0;

	if (rank > hist->count)
		rank = hist->count;
	for (size_t i = 0; i < LG_HIST_BUCKETS; i++) {
		seen += hist->buckets[i];
		if (seen >= rank) {
			uint64_t value = lg_hist_bucket_high(i);
			if (value > hist->max)
				value = hist->max;
			if (value < hist->min)
				value = hist->min;
			return value;
		}
	}
	return hist->max;
}

double lg_hist_mean(const struct lg_hist *hist)
{
	return hist->count == 0 ? 0 : (double)hist->sum / (double)hist->count;
}

uint64_t lg_hist_count_at_most(const struct lg_hist *hist, uint64_t us)
{
	uint64_t n = 0;

	for (size_t i = 0; i < LG_HIST_BUCKETS && lg_hist_bucket_high(i) <= us; i++)
		n += hist->buckets[i];
	return n;
}
