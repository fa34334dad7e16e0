/* clock.h — the one set of clock readings every tier uses, so intervals,
 * timestamps and their units cannot drift between modules:
 *   monotonic (CLOCK_MONOTONIC): timeouts, delays, latencies, rate windows;
 *   coarse monotonic (CLOCK_MONOTONIC_COARSE, a few ms resolution, no
 *     syscall cost): per-event stamps on hot paths (caches, idle timers);
 *   wall clock (CLOCK_REALTIME): what is stored or shown as a date
 *     (queue arrival times, ids, retry times that survive a restart).
 * Milliseconds and microseconds are unsigned 64-bit counts; wall-clock
 * milliseconds are signed (since the epoch, as time_t is).
 * Trust boundary: none (reads the kernel's clocks). */
#ifndef MT_CLOCK_H
#define MT_CLOCK_H

#include <stdint.h>

uint64_t mt_clock_ms(void);
uint64_t mt_clock_us(void);
uint64_t mt_clock_coarse_ms(void);
/* Milliseconds and microseconds since the epoch. */
int64_t mt_wall_ms(void);
uint64_t mt_wall_us(void);

#endif
