/* schedule.h — the open-loop arrival schedule of one load level: Poisson
 * arrivals (exponential gaps) of local users' SMTP sessions, remote
 * servers' SMTP sessions and first POP checks, plus the repeat POP checks,
 * each 300-600 s after the same user's previous check. Everything a session
 * will do (user, message size, recipients) is drawn here, from one seeded
 * stream per kind, in time order: the sequence of arrivals is a function of
 * (seed, level, workload) alone, never of how the server behaves or when
 * the event loop gets round to it.
 *
 * Repeats in short runs (our choice): a level starts in steady state. Its
 * repeat queue is primed by simulating the first checks of the 4 hours
 * before the level began (and their chains) without running them; the
 * repeats still pending at the start are kept. So repeat checks arrive at
 * their full 12.50/s per 100,000 users from the first second, as in a
 * system that has been running all day, rather than ramping up over the
 * first 10 minutes.
 *
 * Several generator processes (`--workers`, agents) share one run by users:
 * user K (1..U) belongs to share K mod N. Every process computes the whole
 * schedule from the same seed and starts only the arrivals whose owner is
 * in its share, so the sessions of all processes together are exactly the
 * sessions of one process, whatever N: the working set never depends on
 * how many generators run (SPEC withdrew SFS 2.0 for that defect).
 * Trust boundary: none (internal). */
#ifndef LG_SCHEDULE_H
#define LG_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rng.h"
#include "workload.h"

#define LG_SCHEDULE_PRIME_S (4 * 3600.0)

struct lg_arrival {
	enum lg_kind kind;
	double at_s;			/* seconds since the level started */
	uint64_t user;			/* POP and IMAP kinds: whose mailbox */
	struct lg_message_plan plan;	/* SMTP kinds */
	struct lg_imap_plan imap;	/* IMAP kinds */
};

struct lg_repeat {
	double due_s;
	uint64_t order;			/* ties: first pushed, first out */
	uint64_t user;
};

struct lg_schedule {
	const struct lg_workload *wl;
	struct lg_rng rng[LG_KIND_COUNT];
	double rate[LG_KIND_COUNT];	/* sessions/s (repeat: steady state) */
	double next_s[LG_KIND_COUNT];	/* Poisson kinds: next arrival */
	struct lg_repeat *heap;		/* min-heap of pending repeats */
	size_t heap_len, heap_cap;
	uint64_t order;
	uint64_t primed;		/* repeats pending at the start */
};

/* One generator's part of the users: index of count (count <= 1: all). */
struct lg_share {
	unsigned int index;
	unsigned int count;
};

/* Whether user K (1..U) is in the share: K mod count == index. */
bool lg_share_owns(const struct lg_share *share, uint64_t user);
/* The user an arrival belongs to: the checking user (POP), the sender
 * (local users' SMTP), the first recipient (remote servers' SMTP: all
 * recipients are local). */
uint64_t lg_arrival_owner(const struct lg_arrival *arrival);

/* Set up the schedule of level number level_index at level_pct percent. */
void lg_schedule_init(struct lg_schedule *sched, const struct lg_workload *wl,
		      unsigned int level_pct, uint64_t seed,
		      unsigned int level_index);
void lg_schedule_free(struct lg_schedule *sched);
/* Time of the next arrival (seconds since the level start). */
double lg_schedule_next_s(const struct lg_schedule *sched);
/* Take the next arrival if it is due at or before now_s. */
bool lg_schedule_pop(struct lg_schedule *sched, double now_s,
		     struct lg_arrival *arrival);
/* The same, and only if it is due before end_s (the level's end). */
bool lg_schedule_pop_before(struct lg_schedule *sched, double now_s,
			    double end_s, struct lg_arrival *arrival);

#endif
