/* schedule.c — open-loop arrivals of one level (see schedule.h).
 * Trust boundary: none (internal). */
#include "schedule.h"

#include "alloc.h"

#include <math.h>
#include <stdlib.h>

/* Stream numbers: the SMTP and POP kinds and the priming stream, 5 per
 * level (as before the IMAP kinds came: POP runs keep their schedules);
 * the IMAP kinds from a range of their own. */
#define STREAM_PRIME LG_KIND_IMAP_DESKTOP
#define STREAMS_PER_LEVEL (LG_KIND_IMAP_DESKTOP + 1)
#define STREAM_IMAP_BASE (1ull << 32)
/* The IMAP range's stride per level: the kind count when it was made (a
 * kind added since, not scheduled, must not move the IMAP streams). */
#define IMAP_STREAMS_PER_LEVEL 6

static uint64_t kind_stream(int kind, unsigned int level_index)
{
	if (kind < LG_KIND_IMAP_DESKTOP)
		return (uint64_t)level_index * STREAMS_PER_LEVEL + (uint64_t)kind;
	return STREAM_IMAP_BASE + (uint64_t)level_index * IMAP_STREAMS_PER_LEVEL +
		(uint64_t)kind;
}

static bool repeat_before(const struct lg_repeat *a, const struct lg_repeat *b)
{
	return a->due_s < b->due_s || (a->due_s == b->due_s && a->order < b->order);
}

static void heap_push(struct lg_schedule *s, double due_s, uint64_t user)
{
	if (s->heap_len == s->heap_cap) {
		s->heap_cap = s->heap_cap ? s->heap_cap * 2 : 256;
		s->heap = mt_xrealloc(s->heap, s->heap_cap * sizeof(*s->heap));
	}
	size_t i = s->heap_len++;
	struct lg_repeat item = { due_s, s->order++, user };
	while (i > 0 && repeat_before(&item, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = item;
}

static struct lg_repeat heap_pop(struct lg_schedule *s)
{
	struct lg_repeat top = s->heap[0];
	struct lg_repeat last = s->heap[--s->heap_len];
	size_t i = 0;

	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= s->heap_len)
			break;
		if (child + 1 < s->heap_len &&
		    repeat_before(&s->heap[child + 1], &s->heap[child]))
			child++;
		if (!repeat_before(&s->heap[child], &last))
			break;
		s->heap[i] = s->heap[child];
		i = child;
	}
	if (s->heap_len > 0)
		s->heap[i] = last;
	return top;
}

/* A check by user at t: maybe the next one of the chain. */
static void chain(struct lg_schedule *s, struct lg_rng *rng, double t,
		  uint64_t user)
{
	if (lg_workload_repeat_follows(rng))
		heap_push(s, t + lg_workload_repeat_delay(rng), user);
}

/* Simulate the first checks of the PRIME_S seconds before the start and
 * follow each chain until a repeat falls at or after 0: that one is
 * pending at the start. Bounded: each step moves >= 300 s forward. */
static void prime(struct lg_schedule *s, struct lg_rng *rng)
{
	double rate = s->rate[LG_KIND_POP_FIRST];

	if (rate <= 0)
		return;
	for (double t = -LG_SCHEDULE_PRIME_S + lg_rng_exponential(rng, 1 / rate);
	     t < 0; t += lg_rng_exponential(rng, 1 / rate)) {
		uint64_t user = lg_workload_pick_user(s->wl, rng);
		double check = t;
		while (check < 0 && lg_workload_repeat_follows(rng))
			check += lg_workload_repeat_delay(rng);
		if (check >= 0) {
			heap_push(s, check, user);
			s->primed++;
		}
	}
}

void lg_schedule_init(struct lg_schedule *s, const struct lg_workload *wl,
		      unsigned int level_pct, uint64_t seed,
		      unsigned int level_index)
{
	struct lg_rng prime_rng;
	uint64_t base = (uint64_t)level_index * STREAMS_PER_LEVEL;

	*s = (struct lg_schedule){ .wl = wl };
	for (int k = 0; k < LG_KIND_COUNT; k++) {
		lg_rng_seed(&s->rng[k], seed, kind_stream(k, level_index));
		s->rate[k] = lg_workload_rate(wl, k, level_pct);
		s->next_s[k] = k == LG_KIND_POP_REPEAT || s->rate[k] <= 0 ? INFINITY :
			lg_rng_exponential(&s->rng[k], 1 / s->rate[k]);
	}
	lg_rng_seed(&prime_rng, seed, base + STREAM_PRIME);
	prime(s, &prime_rng);
}

void lg_schedule_free(struct lg_schedule *s)
{
	free(s->heap);
	s->heap = NULL;
	s->heap_len = s->heap_cap = 0;
}

double lg_schedule_next_s(const struct lg_schedule *s)
{
	double next = s->heap_len > 0 ? s->heap[0].due_s : INFINITY;

	for (int k = 0; k < LG_KIND_COUNT; k++)
		if (s->next_s[k] < next)
			next = s->next_s[k];
	return next;
}

bool lg_share_owns(const struct lg_share *share, uint64_t user)
{
	return share->count <= 1 || user % share->count == share->index;
}

uint64_t lg_arrival_owner(const struct lg_arrival *a)
{
	switch (a->kind) {
	case LG_KIND_SMTP_LOCAL:
		return a->plan.sender;
	case LG_KIND_SMTP_REMOTE:
		return a->plan.n_rcpts > 0 ? a->plan.rcpts[0].user : 0;
	default:
		return a->user;
	}
}

bool lg_schedule_pop_before(struct lg_schedule *s, double now_s, double end_s,
			    struct lg_arrival *a)
{
	if (!(lg_schedule_next_s(s) < end_s))
		return false;
	return lg_schedule_pop(s, now_s, a);
}

bool lg_schedule_pop(struct lg_schedule *s, double now_s, struct lg_arrival *a)
{
	int kind = -1;
	double at = lg_schedule_next_s(s);

	if (at > now_s || isinf(at))
		return false;
	if (s->heap_len > 0 && s->heap[0].due_s == at) {
		struct lg_repeat r = heap_pop(s);
		a->kind = LG_KIND_POP_REPEAT;
		a->at_s = r.due_s;
		a->user = r.user;
		chain(s, &s->rng[LG_KIND_POP_REPEAT], a->at_s, a->user);
		return true;
	}
	for (int k = 0; k < LG_KIND_COUNT; k++)
		if (s->next_s[k] == at) {
			kind = k;
			break;
		}
	struct lg_rng *rng = &s->rng[kind];
	a->kind = kind;
	a->at_s = at;
	s->next_s[kind] = at + lg_rng_exponential(rng, 1 / s->rate[kind]);
	switch (kind) {
	case LG_KIND_SMTP_LOCAL:
	case LG_KIND_SMTP_REMOTE:
		a->user = 0;
		lg_workload_plan_message(s->wl, rng, kind == LG_KIND_SMTP_REMOTE,
					 &a->plan);
		break;
	case LG_KIND_IMAP_DESKTOP:
	case LG_KIND_IMAP_WEBMAIL:
		a->user = lg_workload_pick_user(s->wl, rng);
		lg_workload_plan_imap(rng, kind, &a->imap);
		break;
	default:
		a->user = lg_workload_pick_user(s->wl, rng);
		chain(s, rng, a->at_s, a->user);
		break;
	}
	return true;
}
