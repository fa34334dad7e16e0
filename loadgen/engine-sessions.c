/* engine-sessions.c — starting the run's sessions (see engine.h): the
 * open-loop arrivals of the current level at their scheduled times, only
 * those of this process's share of the users, into the stats of the phase
 * of their scheduled time; the generator's own limit (max_sessions: beyond
 * it an arrival fails as generator_overload); the desktop clients'
 * replies by SMTP; the delivery probes and what looks for them (a POP3
 * poll, or the IMAP watcher); the list of open sessions and their
 * deferred free.
 * Trust boundary: none here; the sessions handle the system under test.
 * Bounded: arrivals started per timer callback and at a level's end. */
#include "engine-private.h"

#include "imap-client.h"
#include "pop-client.h"
#include "smtp-client.h"

#include <math.h>

/* Arrivals started per timer callback; the rest follow at once after. */
#define MAX_STARTS_PER_TICK 5000
/* Arrivals started at a level's end, when the loop fell behind; the rest
 * count as generator overload (so the counts stay the schedule's). */
#define MAX_STARTS_AT_END 100000

void lg_engine_timer_in(struct event *ev, uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };

	evtimer_add(ev, &tv);
}

/* ---- sessions ---- */

static void session_done(struct lg_session *s, void *context)
{
	struct lg_engine *e = context;
	static const struct timeval now = { 0, 0 };

	if (s->prev != NULL || e->active == s) {
		if (s->prev != NULL)
			s->prev->next = s->next;
		else
			e->active = s->next;
		if (s->next != NULL)
			s->next->prev = s->prev;
		e->n_active--;
	}
	if (s == e->poll)
		e->poll = NULL;
	if (s == e->watcher)
		e->watcher = NULL;
	if (s->probe && s->failed)
		e->result->probes.counters.probe_session_errors++;
	s->prev = NULL;
	s->next = e->dead;
	e->dead = s;
	evtimer_add(e->reaper_ev, &now);
}

void lg_engine_reaper_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg_engine *e = arg;

	while (e->dead != NULL) {
		struct lg_session *s = e->dead;
		e->dead = s->next;
		lg_session_free(&s);
	}
}

static void track(struct lg_engine *e, struct lg_session *s)
{
	if (s->finished)
		return;
	s->prev = NULL;
	s->next = e->active;
	if (e->active != NULL)
		e->active->prev = s;
	e->active = s;
	e->n_active++;
}

/* The generator is at its own limit: the arrival fails without a try. */
static bool overloaded(struct lg_engine *e, enum lg_kind kind,
		       struct lg_stats *stats, bool force)
{
	if (!force && e->n_active < e->set->max_sessions)
		return false;
	stats->sessions[kind]++;
	stats->sessions_failed[kind]++;
	stats->errors[LG_ERR_OVERLOAD]++;
	return true;
}

/* Start an arrival of this process's share; into the stats of the phase
 * of its scheduled time. */
static void start_arrival(struct lg_engine *e, struct lg_arrival *a, bool overload)
{
	struct lg_level_result *level = &e->result->levels[e->level];
	struct lg_stats *stats = a->at_s < e->warmup_s ? &level->warmup : &level->measure;
	struct lg_session *s;

	if (!lg_share_owns(&e->set->share, lg_arrival_owner(a)) ||
	    overloaded(e, a->kind, stats, overload))
		return;
	if (a->kind == LG_KIND_SMTP_LOCAL || a->kind == LG_KIND_SMTP_REMOTE) {
		struct lg_smtp_params params = {
			.plan = &a->plan,
			.seq = lg_tracker_next_seq(e->tracker),
			/* remote copies are timed at our sink or the manager's */
			.track_remote = e->sink != NULL || e->set->remote_sink,
		};
		s = lg_smtp_session_start(&e->env, a->kind, stats,
					  &e->smtp_addrs, &params, session_done, e);
	} else if (a->kind == LG_KIND_IMAP_DESKTOP || a->kind == LG_KIND_IMAP_WEBMAIL) {
		struct lg_imap_params params = {
			.profile = a->kind == LG_KIND_IMAP_DESKTOP ?
				LG_IMAP_PROFILE_DESKTOP : LG_IMAP_PROFILE_WEBMAIL,
			.user = a->user,
			.plan = a->imap,
			/* A desktop session logs out by its level's end at the
			 * latest: the run bounds it. */
			.end_by_us = e->level_start_us + (uint64_t)(e->level_end_s * 1e6),
		};
		s = lg_imap_session_start(&e->env, a->kind, stats,
					  &e->imap_addrs, &params, session_done, e);
	} else {
		s = lg_pop_session_start(&e->env, a->kind, stats,
					 &e->pop_addrs, a->user, session_done, e);
	}
	track(e, s);
}

void lg_engine_arrival_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg_engine *e = arg;
	struct lg_arrival a;
	double now_s = (double)(lg_now_us() - e->level_start_us) / 1e6;
	int started = 0;

	while (started < MAX_STARTS_PER_TICK &&
	       lg_schedule_pop_before(&e->sched, now_s, e->level_end_s, &a)) {
		start_arrival(e, &a, false);
		started++;
	}
	double next = lg_schedule_next_s(&e->sched);
	if (!(next < e->level_end_s))
		return;	/* the rest at the level's end (flush_level) */
	double wait_ms = (next - now_s) * 1000;
	lg_engine_timer_in(e->arrival_ev, wait_ms > 0 ? (uint64_t)ceil(wait_ms) : 0);
}

/* The level ends: every arrival scheduled before its end is started now
 * (the loop may run a little behind the schedule). */
void lg_engine_flush_level(struct lg_engine *e)
{
	struct lg_arrival a;
	unsigned int n = 0;

	evtimer_del(e->arrival_ev);
	while (lg_schedule_pop_before(&e->sched, INFINITY, e->level_end_s, &a))
		start_arrival(e, &a, ++n > MAX_STARTS_AT_END);
}

/* Steps of the level's sessions still awaiting their answer, within their
 * limit: their outcome is not known yet, so they leave `known`'s attempts
 * (one past its limit has failed already and stays). */
void lg_engine_unjudge_open_steps(const struct lg_engine *e,
				  const struct lg_stats *measure, struct lg_stats *known)
{
	uint64_t now = lg_now_us();

	for (const struct lg_session *s = e->active; s != NULL; s = s->next)
		if (s->stats == measure && s->step_open &&
		    now - s->step_start_us <= lg_functions[s->step].limit_us &&
		    known->fn[s->step].attempts > known->fn[s->step].pass)
			known->fn[s->step].attempts--;
}

/* ---- probes ---- */

void lg_engine_probe_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg_engine *e = arg;
	struct lg_message_plan plan = {
		.from_remote = true, .probe = true,
		.sender = 1 + lg_rng_below(&e->probe_rng, LG_REMOTE_USERS),
		.size = LG_PROBE_SIZE,
		.n_rcpts = 1, .n_local = 1,
		.rcpts = { { .remote = false, .user = e->set->probe_user } },
	};
	struct lg_smtp_params params = {
		.plan = &plan,
		.seq = lg_tracker_next_seq(e->tracker),
		.local_probe = true,
		.delivery_stats = e->current,
	};

	lg_engine_timer_in(e->probe_ev, e->set->probe_interval_ms);
	if (overloaded(e, LG_KIND_SMTP_REMOTE, &e->result->probes, false))
		return;
	e->result->probes.counters.probe_sessions++;
	struct lg_session *s = lg_smtp_session_start(&e->env, LG_KIND_SMTP_REMOTE,
		&e->result->probes, &e->smtp_addrs, &params, session_done, e);
	s->probe = true;
	if (s->finished && s->failed)
		e->result->probes.counters.probe_session_errors++;
	track(e, s);
}

/* The IMAP probe watcher: one session on the probe mailbox for the run
 * (imap-client.h, LG_IMAP_PROFILE_PROBE), started again by the poll timer
 * after a failure. Its steps go to the probes' stats, not the tables. */
static void start_watcher(struct lg_engine *e)
{
	struct lg_imap_params params = {
		.profile = LG_IMAP_PROFILE_PROBE,
		.user = e->set->probe_user,
		.poll_ms = e->set->probe_poll_ms,
	};

	if (e->watcher != NULL || e->watcher_stopped)
		return;
	e->result->probes.counters.probe_sessions++;
	struct lg_session *s = lg_imap_session_start(&e->env, LG_KIND_IMAP_DESKTOP,
		&e->result->probes, &e->imap_addrs,
		&params, session_done, e);
	s->probe = true;
	if (!s->finished)
		e->watcher = s;
	else if (s->failed)
		e->result->probes.counters.probe_session_errors++;
}

bool lg_engine_watcher_ending(struct lg_engine *e, uint64_t now_us)
{
	if (e->watcher == NULL)
		return false;
	if (!e->watcher_stopped) {
		e->watcher_stopped = true;
		e->watcher_stop_us = now_us;
		lg_imap_session_stop(e->watcher);
		return e->watcher != NULL;
	}
	return now_us - e->watcher_stop_us < LG_WATCHER_LOGOUT_MS * 1000ull;
}

void lg_engine_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg_engine *e = arg;

	lg_engine_timer_in(e->poll_ev, e->set->probe_poll_ms);
	if (e->probe_imap) {
		start_watcher(e);
		return;
	}
	if (e->poll != NULL ||
	    overloaded(e, LG_KIND_POP_REPEAT, &e->result->probes, false))
		return;
	e->result->probes.counters.probe_sessions++;
	struct lg_session *s = lg_pop_session_start(&e->env, LG_KIND_POP_REPEAT,
		&e->result->probes, &e->pop_addrs, e->set->probe_user, session_done, e);
	s->probe = true;
	if (!s->finished)
		e->poll = s;
	else if (s->failed)
		e->result->probes.counters.probe_session_errors++;
	track(e, s);
}

/* ---- the desktop clients' replies ---- */

void lg_engine_submit_reply(void *context, struct lg_stats *stats,
			    const struct lg_message_plan *plan)
{
	struct lg_engine *e = context;
	struct lg_smtp_params params = {
		.plan = plan,
		.seq = lg_tracker_next_seq(e->tracker),
		/* a remote recipient's copy is timed at the sink like any */
		.track_remote = e->sink != NULL || e->set->remote_sink,
		.submission = true,
		/* to --submission as the user; without it to --smtp, as the
		 * SMTP sessions of local users send */
		.auth = e->set->submission != NULL,
	};

	if (overloaded(e, LG_KIND_IMAP_REPLY_SUBMIT, stats, false))
		return;
	struct lg_session *s = lg_smtp_session_start(&e->env, LG_KIND_IMAP_REPLY_SUBMIT,
		stats, &e->submit_addrs, &params,
		session_done, e);
	track(e, s);
}
