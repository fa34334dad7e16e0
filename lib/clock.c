/* clock.c — monotonic, coarse and wall-clock readings (see clock.h). */
#include "clock.h"

#include <time.h>

static struct timespec now(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts;
}

uint64_t mt_clock_ms(void)
{
	struct timespec ts = now(CLOCK_MONOTONIC);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t mt_clock_us(void)
{
	struct timespec ts = now(CLOCK_MONOTONIC);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t mt_clock_coarse_ms(void)
{
	struct timespec ts = now(CLOCK_MONOTONIC_COARSE);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int64_t mt_wall_ms(void)
{
	struct timespec ts = now(CLOCK_REALTIME);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t mt_wall_us(void)
{
	struct timespec ts = now(CLOCK_REALTIME);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
