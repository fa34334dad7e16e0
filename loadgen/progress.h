/* progress.h — where a run is: the progress line on the terminal and the
 * one-a-second timeline sample, for one generator process or for the sum
 * of several (a manager adds up its workers' heartbeats).
 * Trust boundary: none (our own figures). */
#ifndef LG_PROGRESS_H
#define LG_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#include "stats.h"

struct lg_progress {
	uint64_t level;			/* index */
	uint64_t pct;
	uint64_t phase;			/* 0 warm-up, 1 measure, 2 cool-down */
	uint64_t phase_ms;		/* time into the phase */
	uint64_t phase_len_ms;
	uint64_t target_msgs_per_min_x100;
	uint64_t open;			/* sessions open now */
	uint64_t awaited;		/* deliveries still awaited */
	/* The current phase so far. */
	uint64_t msgs_local;
	uint64_t data_attempts, data_pass;
	uint64_t retr_attempts, retr_pass;
	uint64_t delivery_attempts, delivery_pass;
	uint64_t sessions, failed;
	uint64_t errors[LG_ERR_COUNT];
	/* The whole run so far (the timeline). */
	uint64_t run_msgs_local, run_failed;
};

/* The phase figures of p from a phase's stats. */
void lg_progress_set_phase(struct lg_progress *p, const struct lg_stats *stats);
/* Add p's counts to sum (where sum is in the run stays). */
void lg_progress_add(struct lg_progress *sum, const struct lg_progress *p);
void lg_progress_print(FILE *out, const struct lg_progress *p);

#endif
