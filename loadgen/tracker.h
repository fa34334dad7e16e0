/* tracker.h — delivery-time tracking. Every generated message carries a
 * unique id header, "X-Mailtier-Load-Id: RUN.SEQ" (RUN: 16 hex digits of
 * this run, SEQ: the message's number). When the MTA accepts a message whose
 * delivery is measured (remote recipients: seen at the sink; local delivery
 * probes: seen through POP), the tracker expects that many arrivals; each
 * arrival is timed from the acceptance, into the stats that were current
 * when the message was sent. Arrivals that never come are counted lost when
 * they expire; those still awaited when the run ends are unresolved (their
 * fate is not known), not lost. A message can arrive before the
 * generator has read the 250 that accepts it (the system delivered at
 * once, the generator's loop was busy): the sender marks it pending when
 * its data's end is sent, and arrivals of a pending message wait in its
 * entry for the reply (timed from the data's end: an upper bound) instead
 * of being counted untracked and the message then awaited forever. An
 * open-addressing table plus an
 * acceptance-order queue:
 * O(1) per message, memory bounded by the rate times the expiry time.
 * Trust boundary: the id values come from messages relayed or stored by the
 * system under test (untrusted): they are parsed strictly and unknown,
 * foreign or repeated ids are only counted. */
#ifndef LG_TRACKER_H
#define LG_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"

#define LG_ID_HEADER "X-Mailtier-Load-Id"
#define LG_ID_MAX 48	/* "RUN.SEQ" and NUL */
/* The low bits of RUN number the generator processes of one run (local
 * workers, agents): slot i has run id (base | i). Ids of a sibling slot
 * are ours but not this tracker's to time (the manager routes each arrival
 * at the sink to its slot). */
#define LG_RUN_SLOT_MASK 0xffffULL
#define LG_MAX_SLOTS 4096u

enum lg_seen {
	LG_SEEN_TRACKED,	/* an expected arrival: timed */
	LG_SEEN_UNTRACKED,	/* ours (or a sibling slot's), but not timed here */
	LG_SEEN_FOREIGN,	/* another run's, or not a valid id */
};

struct lg_tracker_counts {
	uint64_t tracked, untracked, foreign;
};

struct lg_tracker;

struct lg_tracker *lg_tracker_new(uint64_t run_id, uint64_t expire_us);
void lg_tracker_free(struct lg_tracker **tracker_p);

uint64_t lg_tracker_run_id(const struct lg_tracker *tracker);
/* A new message number, and its id text. */
uint64_t lg_tracker_next_seq(struct lg_tracker *tracker);
void lg_tracker_format_id(const struct lg_tracker *tracker, uint64_t seq,
			  char id[LG_ID_MAX]);

/* The data of message seq (whose arrivals will be timed) was sent at
 * now_us; its reply is awaited. Then exactly one of: */
void lg_tracker_sending(struct lg_tracker *tracker, uint64_t seq, uint64_t now_us);
/* the message was not accepted (or the session ended first): arrivals
 * seen while it was pending are counted untracked; nothing if seq is not
 * pending; */
void lg_tracker_abandon(struct lg_tracker *tracker, uint64_t seq);
/* The MTA accepted message seq at now_us: expect `count` arrivals, timed
 * into stats (counted there as delivery attempts at once). Arrivals seen
 * while it was pending are timed now. */
void lg_tracker_expect(struct lg_tracker *tracker, uint64_t seq,
		       unsigned int count, struct lg_stats *stats,
		       uint64_t now_us);
/* count arrivals of the message whose id header value is value[0..len). */
enum lg_seen lg_tracker_seen(struct lg_tracker *tracker, const char *value,
			     size_t len, unsigned int count, uint64_t now_us);
/* Give up on arrivals expected more than expire_us ago: each is a
 * delivery attempt without a pass, counted as lost. */
void lg_tracker_expire(struct lg_tracker *tracker, uint64_t now_us);
/* The run is over: every arrival still expected is unresolved (neither
 * seen nor given up). One awaited longer than the delivery limit missed
 * it whatever became of it: an attempt without a pass, also counted in
 * deliveries_unresolved_late. One still within the limit has no known
 * outcome: it leaves the Delivery Time attempts. */
void lg_tracker_end(struct lg_tracker *tracker, uint64_t now_us);
/* Arrivals still expected. */
uint64_t lg_tracker_outstanding(const struct lg_tracker *tracker);
/* Deliveries still awaited that were expected into stats. */
uint64_t lg_tracker_outstanding_for(const struct lg_tracker *tracker,
				    const struct lg_stats *stats);
const struct lg_tracker_counts *lg_tracker_counts(const struct lg_tracker *tracker);

/* Parse an id value "RUN.SEQ" (16 hex digits, '.', 1-19 decimal digits). */
bool lg_id_parse(const char *value, size_t len, uint64_t *run_r, uint64_t *seq_r);

/* If the header line `line` (one physical line, no CRLF) is our id header,
 * return its value with surrounding blanks removed (pointing into `line`,
 * length in *len_r); NULL otherwise. */
const char *lg_id_header_value(const char *line, size_t len, size_t *len_r);

#endif
