/* engine.c — the run loop (see engine.h): levels and phases, the ramp's
 * stop, the cool-down, progress and heartbeats, set-up and tear-down (the
 * sessions themselves are started by engine-sessions.c).
 * Trust boundary: operator settings; the system under test is only seen
 * through the sessions' and the sink's counts. Every loop here is bounded:
 * arrivals started per timer callback, sessions open at once (max_sessions),
 * and the run's length (levels x (warm-up + duration) + cool-down).
 *
 * Sessions count in the level and phase of their scheduled time (not of
 * when the loop got round to them): the arrivals due before a level ends
 * are all started before the next level begins, so the session counts of
 * a run are a function of the seed and the settings alone, the same for
 * one process or N (our choice; it makes `--workers` checkable). */
#include "engine-private.h"

#include "errors.h"
#include "alloc.h"
#include "ledger.h"
#include "live-metrics.h"
#include "tls.h"
#include "log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#define TICK_MS 100
/* A delivery not seen this long after acceptance is given up (lost);
 * one still awaited when the run ends is unresolved (lg_tracker_end). */
#define DELIVERY_EXPIRE_US (2 * 60 * 1000000ull)

/* ---- phases ---- */

static void finish(struct lg_engine *e)
{
	e->phase = PHASE_DONE;
	evtimer_del(e->arrival_ev);
	evtimer_del(e->phase_ev);
	evtimer_del(e->tick_ev);
	evtimer_del(e->probe_ev);
	evtimer_del(e->poll_ev);
	mt_loop_exit(e->loop);
}

static void start_cooldown(struct lg_engine *e)
{
	e->phase = PHASE_COOLDOWN;
	e->phase_start_us = lg_now_us();
	e->cooldown_end_us = e->phase_start_us + e->set->cooldown_ms * 1000;
	evtimer_del(e->arrival_ev);
	evtimer_del(e->probe_ev);
	evtimer_del(e->phase_ev);
	if (e->sched_active) {
		lg_schedule_free(&e->sched);
		e->sched_active = false;
	}
}

static void start_phase(struct lg_engine *e, enum lg_phase phase, uint64_t ms)
{
	struct lg_level_result *level = &e->result->levels[e->level];

	e->phase = phase;
	e->phase_start_us = lg_now_us();
	e->current = phase == PHASE_WARMUP ? &level->warmup : &level->measure;
	lg_engine_timer_in(e->phase_ev, ms);
}

static void start_level(struct lg_engine *e, size_t index)
{
	const struct lg_run_settings *set = e->set;
	struct lg_level_result *level = &e->result->levels[index];

	if (e->sched_active)
		lg_schedule_free(&e->sched);
	e->level = index;
	lg_schedule_init(&e->sched, &set->wl, level->pct, set->seed,
			 (unsigned int)index);
	e->sched_active = true;
	level->primed_repeats = e->sched.primed;
	e->warmup_s = (double)set->warmup_ms / 1000;
	e->level_end_s = (double)(set->warmup_ms + set->duration_ms) / 1000;
	e->level_start_us = lg_now_us();
	if (set->warmup_ms > 0)
		start_phase(e, PHASE_WARMUP, set->warmup_ms);
	else
		start_phase(e, PHASE_MEASURE, set->duration_ms);
	lg_engine_timer_in(e->arrival_ev, 0);
	mt_info("level %u%% started: %.1f msgs/min target, %.2f SMTP + %.2f POP sessions/s, "
		"%llu repeat checks primed", level->pct, level->target_msgs_per_min,
		e->sched.rate[LG_KIND_SMTP_LOCAL] + e->sched.rate[LG_KIND_SMTP_REMOTE],
		e->sched.rate[LG_KIND_POP_FIRST] + e->sched.rate[LG_KIND_POP_REPEAT],
		(unsigned long long)level->primed_repeats);
}

static void end_measure(struct lg_engine *e, bool complete)
{
	struct lg_level_result *level = &e->result->levels[e->level];

	level->measure_us = lg_now_us() - e->phase_start_us;
	level->complete = complete;
}

/* The measured phase of the current level is over: go on, or stop a ramp
 * that missed QoS too often (a coordinator decides that for all). The
 * point is judged on what is known now: deliveries still awaited (their
 * 60 s have not run out) are left out of its Delivery Time attempts
 * rather than counted as failures, and so are the steps still in flight
 * within their limit (an IMAP desktop session logs out at its level's
 * end: a burst of LOGOUTs is in flight at that moment); the report,
 * after the cool-down, judges every point again on all of them. */
static void level_measured(struct lg_engine *e)
{
	const struct lg_stats *measure = &e->result->levels[e->level].measure;
	bool last = e->level + 1 >= e->result->n_levels;

	lg_engine_flush_level(e);
	end_measure(e, true);
	struct lg_stats *known = mt_xmalloc(sizeof(*known));
	*known = *measure;
	known->fn[LG_FN_DELIVERY].attempts -=
		lg_tracker_outstanding_for(e->tracker, measure);
	lg_engine_unjudge_open_steps(e, measure, known);
	if (e->hooks != NULL) {
		e->hooks->measured(e, e->level, known, e->hooks->context);
	} else {
		e->failed_in_a_row = lg_qos_misses_in_a_row(e->failed_in_a_row,
							    lg_stats_qos(known));
		if (!last && e->set->stop_after_failures > 0 &&
		    e->failed_in_a_row >= e->set->stop_after_failures) {
			e->result->stopped_early = true;
			last = true;
		}
	}
	free(known);
	if (last)
		start_cooldown(e);
	else
		start_level(e, e->level + 1);
}

static void phase_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg_engine *e = arg;

	if (e->phase == PHASE_WARMUP)
		start_phase(e, PHASE_MEASURE, e->set->duration_ms);
	else if (e->phase == PHASE_MEASURE)
		level_measured(e);
}

void lg_engine_stop_levels(struct lg_engine *e)
{
	if (e->phase != PHASE_WARMUP && e->phase != PHASE_MEASURE)
		return;
	e->result->stopped_early = true;
	start_cooldown(e);
}

/* SIGINT/SIGTERM: stop starting sessions, let the open ones end. */
static void drain_cb(void *context)
{
	struct lg_engine *e = context;

	e->result->interrupted = true;
	if (e->phase == PHASE_MEASURE)
		end_measure(e, false);
	if (e->phase == PHASE_WARMUP || e->phase == PHASE_MEASURE)
		start_cooldown(e);
	/* Don't wait for deliveries when interrupted. */
	e->cooldown_end_us = lg_now_us();
}

void lg_engine_interrupt(struct lg_engine *e)
{
	mt_loop_drain(e->loop);
}

void lg_engine_arrival(struct lg_engine *e, const char *id, size_t len,
		       unsigned int count)
{
	lg_tracker_seen(e->tracker, id, len, count, lg_now_us());
}

/* ---- progress ---- */

static void snapshot(struct lg_engine *e, uint64_t now, struct lg_progress *p)
{
	const struct lg_run_result *r = e->result;
	const struct lg_level_result *level = &r->levels[e->level];

	*p = (struct lg_progress){
		.level = e->level, .pct = level->pct,
		.phase = e->phase > PHASE_COOLDOWN ? PHASE_COOLDOWN : e->phase,
		.phase_ms = (now - e->phase_start_us) / 1000,
		.phase_len_ms = e->phase == PHASE_WARMUP ? e->set->warmup_ms :
			e->phase == PHASE_MEASURE ? e->set->duration_ms : e->set->cooldown_ms,
		.target_msgs_per_min_x100 = (uint64_t)(level->target_msgs_per_min * 100 + 0.5),
		.open = e->n_active,
		.awaited = lg_tracker_outstanding(e->tracker),
	};
	lg_progress_set_phase(p, e->current);
	for (size_t i = 0; i < r->n_levels; i++) {
		p->run_msgs_local += r->levels[i].warmup.counters.msgs_local_sent +
			r->levels[i].measure.counters.msgs_local_sent;
		p->run_failed += lg_stats_total_failed(&r->levels[i].warmup) +
			lg_stats_total_failed(&r->levels[i].measure);
	}
}

/* In the cool-down, poll the probe mailbox only while deliveries are
 * awaited. A probe sent before the end may be accepted after a moment
 * with nothing awaited: polling starts again then, or that probe would
 * never be looked for (issue #16: it was counted lost). (The IMAP
 * watcher stays logged in; the timer only starts it again after a
 * failure.) */
static void poll_while_awaited(struct lg_engine *e)
{
	if (lg_tracker_outstanding(e->tracker) == 0)
		evtimer_del(e->poll_ev);
	else if (e->probes && !e->watcher_stopped && !evtimer_pending(e->poll_ev, NULL))
		lg_engine_timer_in(e->poll_ev, 0);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg_engine *e = arg;
	uint64_t now = lg_now_us();
	struct lg_progress p;

	lg_engine_timer_in(e->tick_ev, TICK_MS);
	if (now - e->last_beat_us >= 1000000) {
		e->last_beat_us = now;
		snapshot(e, now, &p);
		lg_run_result_add_sample(e->result, (double)(now - e->start_us) / 1e6, &p);
		lg_live_metrics_update(e->live, &p);
		if (e->hooks != NULL)
			e->hooks->beat(e, &p, e->hooks->context);
	}
	lg_tracker_expire(e->tracker, now);
	if (e->hooks == NULL && e->set->progress_ms > 0 &&
	    now - e->last_progress_us >= (uint64_t)e->set->progress_ms * 1000) {
		e->last_progress_us = now;
		snapshot(e, now, &p);
		lg_progress_print(stderr, &p);
	}
	if (e->phase != PHASE_COOLDOWN)
		return;
	poll_while_awaited(e);
	bool idle = e->n_active == 0 && lg_tracker_outstanding(e->tracker) == 0;
	if (idle || now >= e->cooldown_end_us) {
		if (mt_loop_is_draining(e->loop) && e->n_active > 0)
			return;	/* the drain bound ends it */
		if (lg_engine_watcher_ending(e, now))
			return;
		finish(e);
	}
}

/* ---- set-up ---- */

static uint64_t new_run_id(void)
{
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
	return id & ~LG_RUN_SLOT_MASK;
}

static struct event *new_timer(struct lg_engine *e, event_callback_fn cb)
{
	struct event *ev = evtimer_new(e->base, cb, e);

	if (ev == NULL)
		mt_panic("out of memory creating a timer");
	return ev;
}

void lg_run_result_init(struct lg_run_result *result,
			const struct lg_run_settings *set)
{
	memset(result, 0, sizeof(*result));
	result->n_levels = set->n_levels;
	result->levels = mt_xcalloc(set->n_levels, sizeof(*result->levels));
	for (size_t i = 0; i < set->n_levels; i++) {
		result->levels[i].pct = set->levels[i];
		result->levels[i].target_msgs_per_min =
			lg_workload_msgs_per_min(&set->wl, set->levels[i]);
		lg_stats_init(&result->levels[i].warmup);
		lg_stats_init(&result->levels[i].measure);
	}
	lg_stats_init(&result->probes);
	result->generators = 1;
}

/* Everything before the loop runs: addresses, limits, the loop, the sink,
 * the coordinator's hook, the timers. */
static bool setup(struct lg_engine *e, struct lg_run_settings *limited,
		  const char **error_r)
{
	const struct lg_run_settings *set = e->set;
	struct lg_run_result *result = e->result;

	if (!lg_resolve_list(set->smtp, &e->smtp_addrs, error_r) ||
	    (set->pop != NULL && !lg_resolve_list(set->pop, &e->pop_addrs, error_r)) ||
	    (set->imap != NULL && !lg_resolve_list(set->imap, &e->imap_addrs, error_r)) ||
	    !lg_resolve_list(set->submission != NULL ? set->submission : set->smtp,
			     &e->submit_addrs, error_r))
		return false;
	/* Keep descriptors for the sink's connections and the rest. */
	unsigned int fds = lg_raise_fd_limit();
	*limited = *set;
	if (limited->max_sessions + 256 > fds)
		limited->max_sessions = fds > 512 ? fds - 256 : fds / 2;
	e->set = limited;
	lg_run_result_init(result, set);
	result->run_id = set->run_id != 0 ? set->run_id : new_run_id();
	if ((e->loop = mt_loop_new(error_r)) == NULL)
		return lg_error_kept(error_r);
	e->base = mt_loop_base(e->loop);
	e->tracker = lg_tracker_new(result->run_id, DELIVERY_EXPIRE_US);
	if (set->ledger != NULL &&
	    (e->ledger = lg_ledger_open(set->ledger, result->run_id, error_r)) == NULL)
		return false;
	snprintf(e->helo, sizeof(e->helo), "loadgen.%s", set->wl.remote_domain);
	e->env = (struct lg_session_env){
		.base = e->base, .wl = &set->wl, .tracker = e->tracker,
		.ledger = e->ledger,
		.step_timeout_ms = set->step_timeout_ms, .helo_name = e->helo,
		.connect_timeout_ms = set->connect_timeout_ms,
		.submit_reply = lg_engine_submit_reply, .submit_context = e,
	};
	/* One client context for every session that may need TLS: --tls
	 * (SMTP and IMAP STARTTLS), --imaps, and a submission port that
	 * offers AUTH only after STARTTLS. */
	if (set->tls || set->imaps || set->submission != NULL) {
		/* Opportunistic: no CA, so no verification (RFC 7435). */
		static const struct mt_tls_settings client = { .cert_file = NULL };
		e->tls = mt_tls_new(MT_TLS_CLIENT);
		if (!mt_tls_load(e->tls, &client, error_r))
			return lg_error_kept(error_r);
		e->env.tls = e->tls;
		e->env.starttls = set->tls;
		e->env.imap_implicit_tls = set->imaps;
	}
	lg_rng_seed(&e->probe_rng, set->seed, 0xfeedULL);
	/* The probe mailbox is watched by IMAP in an IMAP run (our choice:
	 * what WORKLOAD.md times, the EXISTS an IDLE-ing client sees), else
	 * polled by POP3 (pop, and mixed: one watcher, never both). */
	e->probe_imap = set->wl.protocol == LG_PROTOCOL_IMAP;
	e->probes = set->probe_interval_ms > 0 &&
		(e->probe_imap ? set->imap != NULL : set->pop != NULL) &&
		lg_share_owns(&set->share, set->probe_user);
	if (e->hooks == NULL && set->sink_listen != NULL &&
	    (e->sink = lg_sink_new(e->loop, set->sink_listen, e->tracker, error_r)) == NULL)
		return false;
	if (e->sink != NULL && e->ledger != NULL)
		lg_sink_set_ledger(e->sink, e->ledger);
	result->have_sink = e->sink != NULL;
	if (e->hooks == NULL && set->metrics_listen != NULL &&
	    (e->live = lg_live_metrics_start(e->loop, set->metrics_listen, error_r)) == NULL)
		return false;
	mt_loop_set_drain(e->loop, set->step_timeout_ms + 2000, drain_cb, e);
	if (!mt_loop_handle_signals(e->loop, NULL, NULL, error_r))
		return lg_error_kept(error_r);
	e->arrival_ev = new_timer(e, lg_engine_arrival_cb);
	e->phase_ev = new_timer(e, phase_cb);
	e->tick_ev = new_timer(e, tick_cb);
	e->reaper_ev = new_timer(e, lg_engine_reaper_cb);
	e->probe_ev = new_timer(e, lg_engine_probe_cb);
	e->poll_ev = new_timer(e, lg_engine_poll_cb);
	if (e->hooks != NULL &&
	    !e->hooks->attach(e, e->base, e->hooks->context, error_r))
		return false;
	e->attached = e->hooks != NULL;
	return true;
}

static void teardown(struct lg_engine *e, bool ok)
{
	/* Sessions still open (a drain that timed out) end uncounted. */
	while (e->active != NULL) {
		struct lg_session *s = e->active;
		e->active = s->next;
		lg_session_free(&s);
	}
	lg_session_free(&e->watcher);	/* one that did not log out in time */
	if (e->reaper_ev != NULL)
		lg_engine_reaper_cb(-1, 0, e);
	if (ok) {
		e->result->undelivered = lg_tracker_outstanding(e->tracker);
		lg_tracker_end(e->tracker, lg_now_us());
		e->result->tracker = *lg_tracker_counts(e->tracker);
		if (e->sink != NULL)
			e->result->sink = *lg_sink_counts(e->sink);
	}
	if (e->attached)
		e->hooks->detach(e, e->hooks->context);
	if (e->sched_active)
		lg_schedule_free(&e->sched);
	lg_sink_free(&e->sink);
	lg_live_metrics_free(&e->live);
	mt_tls_free(&e->tls);
	struct event **timers[] = { &e->arrival_ev, &e->phase_ev, &e->tick_ev,
				    &e->reaper_ev, &e->probe_ev, &e->poll_ev };
	for (size_t i = 0; i < sizeof(timers) / sizeof(timers[0]); i++)
		if (*timers[i] != NULL) {
			event_free(*timers[i]);
			*timers[i] = NULL;
		}
	lg_tracker_free(&e->tracker);
	/* After the sessions and the sink: the unacknowledged are written. */
	lg_ledger_close(&e->ledger);
	mt_loop_free(&e->loop);
}

bool lg_engine_run(const struct lg_run_settings *set,
		   const struct lg_engine_hooks *hooks,
		   struct lg_run_result *result, const char **error_r)
{
	struct lg_engine e = { .set = set, .hooks = hooks, .result = result };
	struct lg_run_settings limited;
	struct lg_progress p;
	bool ok = false;

	memset(result, 0, sizeof(*result));
	if (!setup(&e, &limited, error_r))
		goto out;
	e.start_us = e.last_progress_us = e.last_beat_us = lg_now_us();
	start_level(&e, 0);
	snapshot(&e, lg_now_us(), &p);
	lg_run_result_add_sample(result, 0, &p);
	lg_engine_timer_in(e.tick_ev, TICK_MS);
	if (e.probes) {
		lg_engine_timer_in(e.probe_ev, set->probe_interval_ms / 2);
		/* the IMAP watcher logs in at once, and stays */
		lg_engine_timer_in(e.poll_ev, e.probe_imap ? 0 : set->probe_poll_ms);
	}
	if (mt_loop_run(e.loop) < 0) {
		*error_r = "the event loop failed";
		goto out;
	}
	ok = true;
	result->elapsed_s = (double)(lg_now_us() - e.start_us) / 1e6;
	snapshot(&e, lg_now_us(), &p);
	lg_run_result_add_sample(result, result->elapsed_s, &p);
out:
	teardown(&e, ok);
	return ok;
}

void lg_run_result_free(struct lg_run_result *result)
{
	MT_FREE(&result->levels);
	MT_FREE(&result->samples);
	result->n_samples = result->samples_cap = 0;
	result->n_levels = 0;
}
