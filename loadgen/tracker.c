/* tracker.c — delivery-time tracking (see tracker.h).
 * Trust boundary: ids arrive in messages handled by the system under test
 * and are parsed strictly (fixed length run id, bounded decimal number). */
#include "tracker.h"

#include "alloc.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct slot {
	uint64_t seq;		/* 0 = empty (sequence numbers start at 1) */
	uint64_t accepted_us;	/* pending: when the data's end was sent */
	struct lg_stats *stats;
	uint32_t remaining;
	/* pending: the data was sent, the reply not yet read; arrivals seen
	 * meanwhile (the system delivered before the generator read its 250)
	 * are kept here, with the first one's time, until the reply comes */
	bool pending;
	uint32_t early;
	uint64_t early_us;
};

struct queued {
	uint64_t seq;
	uint64_t accepted_us;
};

struct lg_tracker {
	uint64_t run_id;
	uint64_t expire_us;
	uint64_t next_seq;
	uint64_t outstanding;
	struct lg_tracker_counts counts;
	/* table: power-of-two size, linear probing, at most half full */
	struct slot *slots;
	size_t n_slots, n_used;
	/* acceptance order: a ring of every expected message */
	struct queued *queue;
	size_t q_cap, q_head, q_len;
};

#define INITIAL_SLOTS 1024u

struct lg_tracker *lg_tracker_new(uint64_t run_id, uint64_t expire_us)
{
	struct lg_tracker *t = mt_xcalloc(1, sizeof(*t));

	t->run_id = run_id;
	t->expire_us = expire_us;
	t->next_seq = 1;
	t->n_slots = INITIAL_SLOTS;
	t->slots = mt_xcalloc(t->n_slots, sizeof(*t->slots));
	t->q_cap = INITIAL_SLOTS;
	t->queue = mt_xcalloc(t->q_cap, sizeof(*t->queue));
	return t;
}

void lg_tracker_free(struct lg_tracker **tracker_p)
{
	struct lg_tracker *t = *tracker_p;

	if (t == NULL)
		return;
	free(t->slots);
	free(t->queue);
	MT_FREE(tracker_p);
}

uint64_t lg_tracker_run_id(const struct lg_tracker *t) { return t->run_id; }
uint64_t lg_tracker_outstanding(const struct lg_tracker *t) { return t->outstanding; }
const struct lg_tracker_counts *lg_tracker_counts(const struct lg_tracker *t) { return &t->counts; }

uint64_t lg_tracker_next_seq(struct lg_tracker *t)
{
	return t->next_seq++;
}

void lg_tracker_format_id(const struct lg_tracker *t, uint64_t seq,
			  char id[LG_ID_MAX])
{
	snprintf(id, LG_ID_MAX, "%016" PRIx64 ".%" PRIu64, t->run_id, seq);
}

static size_t slot_of(const struct lg_tracker *t, uint64_t seq)
{
	return (size_t)((seq * 0x9e3779b97f4a7c15ULL) >> 17) & (t->n_slots - 1);
}

static struct slot *find(struct lg_tracker *t, uint64_t seq)
{
	for (size_t i = slot_of(t, seq);; i = (i + 1) & (t->n_slots - 1)) {
		if (t->slots[i].seq == seq)
			return &t->slots[i];
		if (t->slots[i].seq == 0)
			return NULL;
	}
}

static void insert(struct lg_tracker *t, const struct slot *entry)
{
	size_t i = slot_of(t, entry->seq);

	while (t->slots[i].seq != 0)
		i = (i + 1) & (t->n_slots - 1);
	t->slots[i] = *entry;
	t->n_used++;
}

static void grow_table(struct lg_tracker *t)
{
	struct slot *old = t->slots;
	size_t n_old = t->n_slots;

	t->n_slots *= 2;
	t->slots = mt_xcalloc(t->n_slots, sizeof(*t->slots));
	t->n_used = 0;
	for (size_t i = 0; i < n_old; i++)
		if (old[i].seq != 0)
			insert(t, &old[i]);
	free(old);
}

/* Delete with backward shift, so lookups never need tombstones. */
static void erase(struct lg_tracker *t, struct slot *victim)
{
	size_t mask = t->n_slots - 1;
	size_t hole = (size_t)(victim - t->slots);

	for (size_t i = (hole + 1) & mask; t->slots[i].seq != 0; i = (i + 1) & mask) {
		size_t home = slot_of(t, t->slots[i].seq);
		/* Move i into the hole unless its home lies cyclically in
		 * (hole, i]: then the hole does not break its probe run. */
		bool stays = hole <= i ? (home > hole && home <= i)
				       : (home > hole || home <= i);
		if (!stays) {
			t->slots[hole] = t->slots[i];
			hole = i;
		}
	}
	t->slots[hole].seq = 0;
	t->n_used--;
}

static void enqueue(struct lg_tracker *t, uint64_t seq, uint64_t now_us)
{
	if (t->q_len == t->q_cap) {
		struct queued *q = mt_xcalloc(t->q_cap * 2, sizeof(*q));
		for (size_t i = 0; i < t->q_len; i++)
			q[i] = t->queue[(t->q_head + i) % t->q_cap];
		free(t->queue);
		t->queue = q;
		t->q_cap *= 2;
		t->q_head = 0;
	}
	t->queue[(t->q_head + t->q_len) % t->q_cap] = (struct queued){ seq, now_us };
	t->q_len++;
}

static struct slot *insert_new(struct lg_tracker *t, const struct slot *entry)
{
	if ((t->n_used + 1) * 2 > t->n_slots)
		grow_table(t);
	insert(t, entry);
	return find(t, entry->seq);
}

void lg_tracker_sending(struct lg_tracker *t, uint64_t seq, uint64_t now_us)
{
	if (seq == 0 || find(t, seq) != NULL)
		mt_panic("lg_tracker_sending: message %" PRIu64 " sent twice", seq);
	insert_new(t, &(struct slot){ .seq = seq, .accepted_us = now_us, .pending = true });
}

void lg_tracker_abandon(struct lg_tracker *t, uint64_t seq)
{
	struct slot *slot = find(t, seq);

	if (slot == NULL || !slot->pending)
		return;
	t->counts.untracked += slot->early;	/* arrived, never acknowledged */
	erase(t, slot);
}

static void timed(struct lg_tracker *t, struct slot *slot, unsigned int n, uint64_t us)
{
	for (unsigned int i = 0; i < n; i++) {
		lg_stats_answered(slot->stats, LG_FN_DELIVERY, us, true);
		if (us > lg_functions[LG_FN_DELIVERY].limit_us)
			slot->stats->counters.deliveries_late++;
	}
	slot->remaining -= n;
	t->outstanding -= n;
	t->counts.tracked += n;
}

void lg_tracker_expect(struct lg_tracker *t, uint64_t seq, unsigned int count,
		       struct lg_stats *stats, uint64_t now_us)
{
	struct slot *slot = seq != 0 ? find(t, seq) : NULL;

	if (seq == 0 || (slot != NULL && !slot->pending))
		mt_panic("lg_tracker_expect: message %" PRIu64 " expected twice", seq);
	if (count == 0)
		return;		/* a pending entry stays for the other kind */
	uint32_t early = 0;
	uint64_t early_us = 0;
	if (slot != NULL) {
		/* Seen before the reply: delivered no later than the first
		 * sighting, timed from the data's end (an upper bound). */
		early = slot->early;
		early_us = slot->early_us > slot->accepted_us ? slot->early_us - slot->accepted_us : 0;
		erase(t, slot);
	}
	slot = insert_new(t, &(struct slot){ .seq = seq, .accepted_us = now_us,
					     .stats = stats, .remaining = count });
	enqueue(t, seq, now_us);
	stats->fn[LG_FN_DELIVERY].attempts += count;
	t->outstanding += count;
	if (early > 0) {
		unsigned int n = early < count ? early : count;
		t->counts.untracked += early - n;
		timed(t, slot, n, early_us);
		if (slot->remaining == 0)
			erase(t, slot);
	}
}

/* Parse "RUN.SEQ" (exactly 16 lower- or upper-case hex digits, a dot, 1-19
 * decimal digits). */
bool lg_id_parse(const char *value, size_t len, uint64_t *run_r,
		 uint64_t *seq_r)
{
	uint64_t run = 0, seq = 0;

	if (len < 18 || len > 16 + 1 + 19 || value[16] != '.')
		return false;
	for (size_t i = 0; i < 16; i++) {
		char c = value[i];
		unsigned int d;
		if (c >= '0' && c <= '9') d = (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'f') d = (unsigned int)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F') d = (unsigned int)(c - 'A' + 10);
		else return false;
		run = run << 4 | d;
	}
	for (size_t i = 17; i < len; i++) {
		if (value[i] < '0' || value[i] > '9')
			return false;
		seq = seq * 10 + (uint64_t)(value[i] - '0');
	}
	*run_r = run;
	*seq_r = seq;
	return true;
}

enum lg_seen lg_tracker_seen(struct lg_tracker *t, const char *value,
			     size_t len, unsigned int count, uint64_t now_us)
{
	uint64_t run, seq;
	struct slot *slot;

	if (!lg_id_parse(value, len, &run, &seq) ||
	    (run & ~LG_RUN_SLOT_MASK) != (t->run_id & ~LG_RUN_SLOT_MASK)) {
		t->counts.foreign++;
		return LG_SEEN_FOREIGN;
	}
	if (run != t->run_id || (slot = find(t, seq)) == NULL) {
		t->counts.untracked++;
		return LG_SEEN_UNTRACKED;
	}
	if (slot->pending) {
		if (slot->early == 0)
			slot->early_us = now_us;
		slot->early += count;
		return LG_SEEN_TRACKED;
	}
	uint64_t us = now_us >= slot->accepted_us ? now_us - slot->accepted_us : 0;
	unsigned int n = count < slot->remaining ? count : slot->remaining;
	timed(t, slot, n, us);
	if (count > n)
		t->counts.untracked += count - n;
	if (slot->remaining == 0)
		erase(t, slot);
	return LG_SEEN_TRACKED;
}

uint64_t lg_tracker_outstanding_for(const struct lg_tracker *t,
				    const struct lg_stats *stats)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->n_slots; i++)
		if (t->slots[i].seq != 0 && !t->slots[i].pending && t->slots[i].stats == stats)
			n += t->slots[i].remaining;
	return n;
}

/* What becomes of the arrivals a slot still awaits when they are given
 * up (expired) or the run ends. */
enum give_up { GIVE_UP_EXPIRED, GIVE_UP_RUN_ENDED };

static void give_up(struct lg_tracker *t, struct slot *slot, enum give_up why,
		    uint64_t now_us)
{
	struct lg_counters *c = &slot->stats->counters;
	uint64_t n = slot->remaining;

	if (why == GIVE_UP_EXPIRED) {
		c->deliveries_lost += n;
	} else {
		c->deliveries_unresolved += n;
		if (now_us > slot->accepted_us &&
		    now_us - slot->accepted_us > lg_functions[LG_FN_DELIVERY].limit_us)
			c->deliveries_unresolved_late += n;
		else	/* not known to have missed the limit: not judged */
			slot->stats->fn[LG_FN_DELIVERY].attempts -= n;
	}
	t->outstanding -= n;
	erase(t, slot);
}

/* Pop the acceptance queue up to now_us (all of it when `all`). */
static void give_up_until(struct lg_tracker *t, uint64_t now_us, bool all,
			  enum give_up why)
{
	while (t->q_len > 0) {
		struct queued *head = &t->queue[t->q_head];
		if (!all && head->accepted_us + t->expire_us > now_us)
			break;
		struct slot *slot = find(t, head->seq);
		if (slot != NULL)
			give_up(t, slot, why, now_us);
		t->q_head = (t->q_head + 1) % t->q_cap;
		t->q_len--;
	}
}

void lg_tracker_expire(struct lg_tracker *t, uint64_t now_us)
{
	give_up_until(t, now_us, false, GIVE_UP_EXPIRED);
}

void lg_tracker_end(struct lg_tracker *t, uint64_t now_us)
{
	give_up_until(t, now_us, true, GIVE_UP_RUN_ENDED);
}

const char *lg_id_header_value(const char *line, size_t len, size_t *len_r)
{
	const size_t name_len = sizeof(LG_ID_HEADER) - 1;

	if (len <= name_len || line[name_len] != ':' ||
	    strncasecmp(line, LG_ID_HEADER, name_len) != 0)
		return NULL;
	const char *value = line + name_len + 1;
	const char *end = line + len;
	while (value < end && (*value == ' ' || *value == '\t'))
		value++;
	while (end > value && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*len_r = (size_t)(end - value);
	return value;
}
