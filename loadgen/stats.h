/* stats.h — what a run measures: per function (each protocol step, and
 * delivery time) attempts, passes within the QoS limit and a latency
 * histogram; per session kind attempts and failures; error counters by
 * kind; message and byte counters. One lg_stats per load level and phase;
 * sessions record into the one that was current when they started.
 * Trust boundary: none (internal). */
#ifndef LG_STATS_H
#define LG_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "histogram.h"
#include "workload.h"

enum lg_function {
	LG_FN_SMTP_CONNECT,	/* TCP connect until the 220 greeting */
	LG_FN_SMTP_EHLO,	/* EHLO (or the HELO after a refused EHLO) */
	LG_FN_SMTP_STARTTLS,	/* --tls: STARTTLS until its 220 (the handshake
				 * is in the EHLO after it) */
	LG_FN_SMTP_MAIL,
	LG_FN_SMTP_RCPT,	/* one per recipient */
	LG_FN_SMTP_DATA,	/* DATA command until the reply after the body */
	LG_FN_SMTP_QUIT,
	LG_FN_POP_CONNECT,	/* TCP connect until the +OK greeting */
	LG_FN_POP_USER,
	LG_FN_POP_PASS,
	LG_FN_POP_STAT,
	LG_FN_POP_RETR,		/* RETR until the terminating "." */
	LG_FN_POP_DELE,
	LG_FN_POP_QUIT,
	LG_FN_IMAP_CONNECT,	/* TCP connect until the "* OK" greeting */
	LG_FN_IMAP_STARTTLS,	/* STARTTLS until its OK (the handshake follows) */
	LG_FN_IMAP_LOGIN,	/* LOGIN or AUTHENTICATE PLAIN */
	LG_FN_IMAP_LIST,
	LG_FN_IMAP_SELECT,	/* SELECT of INBOX or a folder */
	LG_FN_IMAP_FETCH_HEADERS, /* FETCHes of flags, envelopes, header fields */
	LG_FN_IMAP_FETCH_BODY,	/* UID FETCH BODY.PEEK[] until the tagged OK */
	LG_FN_IMAP_STORE,
	LG_FN_IMAP_EXPUNGE,
	LG_FN_IMAP_MOVE,
	LG_FN_IMAP_APPEND,	/* the command until the tagged OK after the literal */
	LG_FN_IMAP_SEARCH,
	LG_FN_IMAP_IDLE,	/* IDLE until the "+" continuation */
	LG_FN_IMAP_IDLE_WAKE,	/* DONE until the IDLE's tagged OK */
	LG_FN_IMAP_NOOP,	/* the probe watcher's poll without IDLE */
	LG_FN_IMAP_CREATE,	/* fill: the folder model */
	LG_FN_IMAP_LOGOUT,
	/* A desktop client's reply submitted by SMTP (the same steps as an
	 * SMTP session, in rows of their own, and AUTH) */
	LG_FN_SUBMIT_CONNECT,
	LG_FN_SUBMIT_EHLO,
	LG_FN_SUBMIT_STARTTLS,
	LG_FN_SUBMIT_AUTH,	/* AUTH PLAIN as the user until its 235 */
	LG_FN_SUBMIT_MAIL,
	LG_FN_SUBMIT_RCPT,
	LG_FN_SUBMIT_DATA,
	LG_FN_SUBMIT_QUIT,
	LG_FN_DELIVERY,		/* accepted by the MTA until seen at the sink, by POP
				 * or by the IMAP probe watcher */
	LG_FN_COUNT
};

struct lg_function_info {
	const char *key;	/* JSON key */
	const char *label;	/* report label */
	uint64_t limit_us;	/* QoS response time limit */
	bool summary;		/* one of the Summary table's QoS rows */
};

extern const struct lg_function_info lg_functions[LG_FN_COUNT];

enum lg_error {
	LG_ERR_CONNECT,		/* connection refused / unreachable / reset */
	LG_ERR_PROTOCOL,	/* a reply we cannot parse: garbage, bad line */
	LG_ERR_REJECTED,	/* a well-formed negative or unexpected reply */
	LG_ERR_TIMEOUT,		/* a step not answered within the step timeout */
	LG_ERR_DISCONNECT,	/* the server closed the connection mid-session */
	LG_ERR_OVERLOAD,	/* the generator itself was at its session limit */
	LG_ERR_COUNT
};

extern const char *const lg_error_names[LG_ERR_COUNT];

struct lg_fn_stats {
	uint64_t attempts;	/* steps begun */
	uint64_t pass;		/* answered correctly within the limit */
	struct lg_hist hist;	/* response times of answered steps */
};

struct lg_counters {
	uint64_t msgs_local_sent;	/* local users' messages accepted (250) */
	uint64_t msgs_remote_sent;	/* remote servers' messages accepted */
	uint64_t rcpts_to_local;	/* recipients of accepted messages */
	uint64_t rcpts_to_remote;
	uint64_t bytes_up;		/* message octets sent by SMTP */
	uint64_t bytes_down;		/* message octets retrieved by POP */
	uint64_t msgs_retrieved;
	uint64_t msgs_deleted;
	uint64_t probes_local;		/* local delivery probes accepted */
	uint64_t deliveries_late;	/* seen after the limit */
	uint64_t deliveries_lost;	/* not seen within the expiry (120 s) */
	/* Still awaited when the run ended: fate unknown, not lost. */
	uint64_t deliveries_unresolved;
	uint64_t deliveries_unresolved_late; /* of those, past the limit */
	uint64_t probe_sessions;	/* probe sends and polls (not in the tables) */
	uint64_t probe_session_errors;
	/* Desktop IMAP clients' replies accepted by SMTP (not in
	 * msgs_local_sent: the SPECmail2001 figure is the SMTP sessions'),
	 * and their recipients (also in rcpts_to_local, rcpts_to_remote). */
	uint64_t msgs_submitted;
	uint64_t submitted_rcpts_local;
	uint64_t submitted_rcpts_remote;
};

struct lg_stats {
	struct lg_fn_stats fn[LG_FN_COUNT];
	uint64_t sessions[LG_KIND_COUNT];
	uint64_t sessions_failed[LG_KIND_COUNT];
	uint64_t errors[LG_ERR_COUNT];
	struct lg_counters counters;
};

void lg_stats_init(struct lg_stats *stats);
void lg_stats_merge(struct lg_stats *dst, const struct lg_stats *src);

/* A step began; later exactly one of _answered() or nothing (a step that
 * failed without an answer stays an attempt without a pass). */
void lg_stats_attempt(struct lg_stats *stats, enum lg_function fn);
/* The step's answer came after us microseconds; ok = the answer was the
 * one expected. A pass needs ok and us <= the function's limit. */
void lg_stats_answered(struct lg_stats *stats, enum lg_function fn,
		       uint64_t us, bool ok);

uint64_t lg_stats_total_sessions(const struct lg_stats *stats);
uint64_t lg_stats_total_failed(const struct lg_stats *stats);
/* Percent of attempts that passed; -1 when there were none. */
double lg_stats_pass_pct(const struct lg_stats *stats, enum lg_function fn);
/* Failed sessions in percent of attempted ones; -1 when none. */
double lg_stats_error_rate_pct(const struct lg_stats *stats);

/* QoS thresholds of WORKLOAD.md. */
#define LG_QOS_REQUIRED_PCT 95.0
#define LG_QOS_MAX_ERROR_PCT 1.0
/* Our rule for small samples: a Summary row needs this many attempts (the
 * Error Rate this many sessions) to be judged within QoS: among fewer,
 * one failure is already 5%, so a clean row shows nothing yet. A row with
 * fewer is judged only when it already fails: when even passes making up
 * the attempts to this many would leave it outside QoS. */
#define LG_QOS_MIN_ATTEMPTS 20u

enum lg_qos {
	LG_QOS_UNUSED,		/* a row with no attempts: does not count */
	LG_QOS_MET,
	LG_QOS_NOT_MET,
	LG_QOS_NOT_JUDGED,	/* too few attempts to tell */
};

/* The verdict on one Summary row (function fn). */
enum lg_qos lg_stats_fn_qos(const struct lg_stats *stats, enum lg_function fn);
/* The verdict on the error rate; no session at all is not judged. */
enum lg_qos lg_stats_error_qos(const struct lg_stats *stats);
/* A level's verdict: not met if any row fails, else not judged if any row
 * (or the error rate) has too few attempts, else met. */
enum lg_qos lg_stats_qos(const struct lg_stats *stats);
bool lg_stats_qos_met(const struct lg_stats *stats);
/* "no attempts", "met", "not met", "not judged" */
extern const char *const lg_qos_names[];
/* A ramp's count of points in a row that missed QoS, after one more
 * point: met ends the run of misses, not met extends it, a point not
 * judged does neither. */
unsigned int lg_qos_misses_in_a_row(unsigned int before, enum lg_qos point);

#endif
