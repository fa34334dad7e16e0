/* engine-private.h — the run loop's state, shared by engine.c (levels,
 * phases, progress, set-up) and engine-sessions.c (starting sessions on
 * schedule, probes, the open-session list). Not for other files.
 * Trust boundary: none (internal). */
#ifndef LG_ENGINE_PRIVATE_H
#define LG_ENGINE_PRIVATE_H

#include "engine.h"
#include "loop.h"
#include "session.h"

#include <event2/event.h>

/* Our choice: local probes are small (1 KiB) remote-server messages to
 * one user, whose mailbox is polled by POP3 (timed from the MTA's 250 to
 * the RETR that shows them) or watched by an IDLE-ing IMAP session (to
 * the EXISTS that announced them). */
#define LG_PROBE_SIZE 1024
/* Once the rest of the cool-down is done, the IMAP probe watcher is asked
 * to log out; it gets this long for it. */
#define LG_WATCHER_LOGOUT_MS 2000

enum lg_phase { PHASE_WARMUP, PHASE_MEASURE, PHASE_COOLDOWN, PHASE_DONE };

struct lg_engine {
	const struct lg_run_settings *set;
	const struct lg_engine_hooks *hooks;	/* NULL: standalone */
	struct lg_run_result *result;
	struct mt_loop *loop;
	struct event_base *base;
	struct lg_addrs smtp_addrs, pop_addrs, imap_addrs, submit_addrs;
	struct lg_session_env env;
	char helo[300];
	struct lg_tracker *tracker;
	struct lg_sink *sink;
	struct lg_live_metrics *live;	/* --metrics-listen (standalone) */
	struct lg_ledger *ledger;	/* --ledger (ledger.h) */
	struct mt_tls *tls;		/* --tls, --imaps, --submission: the client context */
	bool probes;			/* the probe user is ours */
	bool probe_imap;		/* ... watched by IMAP (--protocol imap) */
	bool attached;			/* the hooks' attach succeeded */

	size_t level;
	enum lg_phase phase;
	uint64_t start_us, level_start_us, phase_start_us, cooldown_end_us;
	double warmup_s, level_end_s;	/* schedule time of the level */
	struct lg_stats *current;	/* the phase's stats (progress, probes) */
	struct lg_schedule sched;
	bool sched_active;
	struct lg_rng probe_rng;

	struct event *arrival_ev, *phase_ev, *tick_ev, *reaper_ev,
		*probe_ev, *poll_ev;
	struct lg_session *active;	/* open sessions */
	size_t n_active;
	struct lg_session *dead;	/* finished, freed from the loop */
	struct lg_session *poll;	/* the probe poll in flight */
	/* The IMAP probe watcher (not in the active list: it lasts the run
	 * and is stopped once everything else is done). */
	struct lg_session *watcher;
	bool watcher_stopped;
	uint64_t watcher_stop_us;
	unsigned int failed_in_a_row;	/* load points that missed QoS */
	uint64_t last_progress_us;
	uint64_t last_beat_us;
};

/* Arm a one-shot timer ms from now. */
void lg_engine_timer_in(struct event *ev, uint64_t ms);

/* engine-sessions.c */
void lg_engine_reaper_cb(evutil_socket_t fd, short what, void *arg);
void lg_engine_arrival_cb(evutil_socket_t fd, short what, void *arg);
void lg_engine_probe_cb(evutil_socket_t fd, short what, void *arg);
void lg_engine_poll_cb(evutil_socket_t fd, short what, void *arg);
/* The env's submit_reply: a desktop client's reply by SMTP. */
void lg_engine_submit_reply(void *context, struct lg_stats *stats,
			    const struct lg_message_plan *plan);
/* The cool-down is otherwise over: true while the probe watcher still
 * has to log out (asked once here, then given LG_WATCHER_LOGOUT_MS). */
bool lg_engine_watcher_ending(struct lg_engine *e, uint64_t now_us);
/* Start every arrival scheduled before the level's end. */
void lg_engine_flush_level(struct lg_engine *e);
/* Leave the in-flight steps (within their limit) out of known: see engine.c. */
void lg_engine_unjudge_open_steps(const struct lg_engine *e,
				  const struct lg_stats *measure, struct lg_stats *known);

#endif
