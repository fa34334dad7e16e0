/* engine.c — the run loop (see engine.h): levels and phases, starting
 * sessions at their scheduled times, probes, the cool-down, progress.
 * Trust boundary: operator settings; the system under test is only seen
 * through the sessions' and the sink's counts. Every loop here is bounded:
 * arrivals started per timer callback, sessions open at once (max_sessions),
 * and the run's length (levels x (warm-up + duration) + cool-down). */
#include "engine.h"

#include "alloc.h"
#include "log.h"
#include "loop.h"
#include "pop-client.h"
#include "schedule.h"
#include "session.h"
#include "smtp-client.h"

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>

/* Arrivals started per timer callback; the rest follow at once after. */
#define MAX_STARTS_PER_TICK 5000
#define TICK_MS 100
/* Our choice: local probes are small (1 KiB) remote-server messages to
 * one user, whose mailbox is polled; probe arrivals are timed from the
 * MTA's 250 to the RETR that shows them. */
#define PROBE_SIZE 1024
/* A delivery not seen this long after acceptance is given up (lost). */
#define DELIVERY_EXPIRE_US (2 * 60 * 1000000ull)

enum phase { PHASE_WARMUP, PHASE_MEASURE, PHASE_COOLDOWN, PHASE_DONE };
static const char *const phase_names[] = { "warm-up", "measure", "cool-down", "done" };

struct engine {
	const struct lg_run_settings *set;
	struct lg_run_result *result;
	struct mt_loop *loop;
	struct event_base *base;
	struct sockaddr_storage smtp_addr, pop_addr;
	socklen_t smtp_len, pop_len;
	struct lg_session_env env;
	char helo[300];
	struct lg_tracker *tracker;
	struct lg_sink *sink;

	size_t level;
	enum phase phase;
	uint64_t start_us, level_start_us, phase_start_us, cooldown_end_us;
	struct lg_stats *current;	/* where new sessions record */
	struct lg_schedule sched;
	bool sched_active;
	struct lg_rng probe_rng;

	struct event *arrival_ev, *phase_ev, *tick_ev, *reaper_ev,
		*probe_ev, *poll_ev;
	struct lg_session *active;	/* open sessions */
	size_t n_active;
	struct lg_session *dead;	/* finished, freed from the loop */
	struct lg_session *poll;	/* the probe poll in flight */
	unsigned int failed_in_a_row;	/* load points that missed QoS */
	uint64_t last_progress_us;
	uint64_t last_sample_us;
};

static void timer_in(struct event *ev, uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };

	evtimer_add(ev, &tv);
}

/* ---- sessions ---- */

static void session_done(struct lg_session *s, void *context)
{
	struct engine *e = context;
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
	if (s->probe && s->failed)
		e->result->probes.counters.probe_session_errors++;
	s->prev = NULL;
	s->next = e->dead;
	e->dead = s;
	evtimer_add(e->reaper_ev, &now);
}

static void reaper_cb(evutil_socket_t fd, short what, void *arg)
{
	struct engine *e = arg;

	while (e->dead != NULL) {
		struct lg_session *s = e->dead;
		e->dead = s->next;
		lg_session_free(&s);
	}
}

static void track(struct engine *e, struct lg_session *s)
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
static bool overloaded(struct engine *e, enum lg_kind kind, struct lg_stats *stats)
{
	if (e->n_active < e->set->max_sessions)
		return false;
	stats->sessions[kind]++;
	stats->sessions_failed[kind]++;
	stats->errors[LG_ERR_OVERLOAD]++;
	return true;
}

static void start_arrival(struct engine *e, struct lg_arrival *a)
{
	struct lg_session *s;

	if (overloaded(e, a->kind, e->current))
		return;
	if (a->kind == LG_KIND_SMTP_LOCAL || a->kind == LG_KIND_SMTP_REMOTE) {
		struct lg_smtp_params params = {
			.plan = &a->plan,
			.seq = lg_tracker_next_seq(e->tracker),
			.track_remote = e->sink != NULL,
		};
		s = lg_smtp_session_start(&e->env, a->kind, e->current,
					  (struct sockaddr *)&e->smtp_addr,
					  e->smtp_len, &params, session_done, e);
	} else {
		s = lg_pop_session_start(&e->env, a->kind, e->current,
					 (struct sockaddr *)&e->pop_addr,
					 e->pop_len, a->user, session_done, e);
	}
	track(e, s);
}

static void arrival_cb(evutil_socket_t fd, short what, void *arg)
{
	struct engine *e = arg;
	struct lg_arrival a;
	double now_s = (double)(lg_now_us() - e->level_start_us) / 1e6;
	int started = 0;

	while (started < MAX_STARTS_PER_TICK &&
	       lg_schedule_pop(&e->sched, now_s, &a)) {
		start_arrival(e, &a);
		started++;
	}
	double next = lg_schedule_next_s(&e->sched);
	if (isinf(next))
		return;
	double wait_ms = (next - now_s) * 1000;
	timer_in(e->arrival_ev, wait_ms > 0 ? (uint64_t)ceil(wait_ms) : 0);
}

/* ---- probes ---- */

static void probe_cb(evutil_socket_t fd, short what, void *arg)
{
	struct engine *e = arg;
	struct lg_message_plan plan = {
		.from_remote = true,
		.sender = 1 + lg_rng_below(&e->probe_rng, LG_REMOTE_USERS),
		.size = PROBE_SIZE,
		.n_rcpts = 1, .n_local = 1,
		.rcpts = { { .remote = false, .user = e->set->probe_user } },
	};
	struct lg_smtp_params params = {
		.plan = &plan,
		.seq = lg_tracker_next_seq(e->tracker),
		.local_probe = true,
		.delivery_stats = e->current,
	};

	timer_in(e->probe_ev, e->set->probe_interval_ms);
	if (overloaded(e, LG_KIND_SMTP_REMOTE, &e->result->probes))
		return;
	e->result->probes.counters.probe_sessions++;
	struct lg_session *s = lg_smtp_session_start(&e->env, LG_KIND_SMTP_REMOTE,
		&e->result->probes, (struct sockaddr *)&e->smtp_addr,
		e->smtp_len, &params, session_done, e);
	s->probe = true;
	if (s->finished && s->failed)
		e->result->probes.counters.probe_session_errors++;
	track(e, s);
}

static void poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct engine *e = arg;

	timer_in(e->poll_ev, e->set->probe_poll_ms);
	if (e->poll != NULL || overloaded(e, LG_KIND_POP_REPEAT, &e->result->probes))
		return;
	e->result->probes.counters.probe_sessions++;
	struct lg_session *s = lg_pop_session_start(&e->env, LG_KIND_POP_REPEAT,
		&e->result->probes, (struct sockaddr *)&e->pop_addr,
		e->pop_len, e->set->probe_user, session_done, e);
	s->probe = true;
	if (!s->finished)
		e->poll = s;
	else if (s->failed)
		e->result->probes.counters.probe_session_errors++;
	track(e, s);
}

/* ---- phases ---- */

static void finish(struct engine *e)
{
	e->phase = PHASE_DONE;
	evtimer_del(e->arrival_ev);
	evtimer_del(e->phase_ev);
	evtimer_del(e->tick_ev);
	evtimer_del(e->probe_ev);
	evtimer_del(e->poll_ev);
	mt_loop_exit(e->loop);
}

static void start_cooldown(struct engine *e)
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

static void start_phase(struct engine *e, enum phase phase, uint64_t ms)
{
	struct lg_level_result *level = &e->result->levels[e->level];

	e->phase = phase;
	e->phase_start_us = lg_now_us();
	e->current = phase == PHASE_WARMUP ? &level->warmup : &level->measure;
	timer_in(e->phase_ev, ms);
}

static void start_level(struct engine *e, size_t index)
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
	e->level_start_us = lg_now_us();
	if (set->warmup_ms > 0)
		start_phase(e, PHASE_WARMUP, set->warmup_ms);
	else
		start_phase(e, PHASE_MEASURE, set->duration_ms);
	timer_in(e->arrival_ev, 0);
	mt_info("level %u%% started: %.1f msgs/min target, %.2f SMTP + %.2f POP sessions/s, "
		"%llu repeat checks primed", level->pct, level->target_msgs_per_min,
		e->sched.rate[LG_KIND_SMTP_LOCAL] + e->sched.rate[LG_KIND_SMTP_REMOTE],
		e->sched.rate[LG_KIND_POP_FIRST] + e->sched.rate[LG_KIND_POP_REPEAT],
		(unsigned long long)level->primed_repeats);
}

static void end_measure(struct engine *e, bool complete)
{
	struct lg_level_result *level = &e->result->levels[e->level];

	level->measure_us = lg_now_us() - e->phase_start_us;
	level->complete = complete;
}

static void phase_cb(evutil_socket_t fd, short what, void *arg)
{
	struct engine *e = arg;

	switch (e->phase) {
	case PHASE_WARMUP:
		start_phase(e, PHASE_MEASURE, e->set->duration_ms);
		break;
	case PHASE_MEASURE:
		end_measure(e, true);
		if (lg_stats_qos_met(&e->result->levels[e->level].measure))
			e->failed_in_a_row = 0;
		else
			e->failed_in_a_row++;
		if (e->set->stop_after_failures > 0 &&
		    e->failed_in_a_row >= e->set->stop_after_failures &&
		    e->level + 1 < e->result->n_levels) {
			e->result->stopped_early = true;
			start_cooldown(e);
		} else if (e->level + 1 < e->result->n_levels) {
			start_level(e, e->level + 1);
		} else {
			start_cooldown(e);
		}
		break;
	default:
		break;
	}
}

/* SIGINT/SIGTERM: stop starting sessions, let the open ones end. */
static void drain_cb(void *context)
{
	struct engine *e = context;

	e->result->interrupted = true;
	if (e->phase == PHASE_MEASURE)
		end_measure(e, false);
	if (e->phase == PHASE_WARMUP || e->phase == PHASE_MEASURE)
		start_cooldown(e);
	/* Don't wait for deliveries when interrupted. */
	e->cooldown_end_us = lg_now_us();
}

/* ---- progress ---- */

static void print_progress(struct engine *e, uint64_t now)
{
	const struct lg_stats *st = e->current;
	double elapsed_s = (double)(now - e->phase_start_us) / 1e6;
	double msgs_min = elapsed_s > 0 ?
		(double)st->counters.msgs_local_sent * 60.0 / elapsed_s : 0;
	double smtp = lg_stats_pass_pct(st, LG_FN_SMTP_DATA);
	double pop = lg_stats_pass_pct(st, LG_FN_POP_RETR);
	double dlv = lg_stats_pass_pct(st, LG_FN_DELIVERY);
	double err = lg_stats_error_rate_pct(st);
	uint64_t phase_len = e->phase == PHASE_WARMUP ? e->set->warmup_ms :
			     e->phase == PHASE_MEASURE ? e->set->duration_ms :
			     e->set->cooldown_ms;

	if (e->phase == PHASE_COOLDOWN) {
		fprintf(stderr, "[cool-down %4.0f/%llu s] open sessions %zu, "
			"deliveries awaited %llu\n", elapsed_s,
			(unsigned long long)(phase_len / 1000), e->n_active,
			(unsigned long long)lg_tracker_outstanding(e->tracker));
		return;
	}
	fprintf(stderr, "[level %u%% %s %4.0f/%llu s] %.1f msgs/min (target %.1f) | "
		"open %zu | QoS so far: data %.1f%% retr %.1f%% delivery %.1f%% | "
		"errors %.2f%% (conn %llu proto %llu rej %llu timeout %llu disc %llu)\n",
		e->result->levels[e->level].pct, phase_names[e->phase], elapsed_s,
		(unsigned long long)(phase_len / 1000), msgs_min,
		e->result->levels[e->level].target_msgs_per_min, e->n_active,
		smtp < 0 ? 100 : smtp, pop < 0 ? 100 : pop, dlv < 0 ? 100 : dlv,
		err < 0 ? 0 : err,
		(unsigned long long)st->errors[LG_ERR_CONNECT],
		(unsigned long long)st->errors[LG_ERR_PROTOCOL],
		(unsigned long long)st->errors[LG_ERR_REJECTED],
		(unsigned long long)st->errors[LG_ERR_TIMEOUT],
		(unsigned long long)st->errors[LG_ERR_DISCONNECT]);
}

/* Append the run's state to the timeline. */
static void take_sample(struct engine *e, uint64_t now)
{
	struct lg_run_result *r = e->result;
	struct lg_sample sample = {
		.t_s = (double)(now - e->start_us) / 1e6,
		.level = (unsigned int)e->level,
		.phase = e->phase == PHASE_WARMUP ? 0 : e->phase == PHASE_MEASURE ? 1 : 2,
		.open = e->n_active,
	};

	for (size_t i = 0; i < r->n_levels; i++) {
		sample.msgs_local += r->levels[i].warmup.counters.msgs_local_sent +
			r->levels[i].measure.counters.msgs_local_sent;
		sample.sessions_failed += lg_stats_total_failed(&r->levels[i].warmup) +
			lg_stats_total_failed(&r->levels[i].measure);
	}
	if (r->n_samples == r->samples_cap) {
		r->samples_cap = r->samples_cap ? r->samples_cap * 2 : 256;
		r->samples = mt_xrealloc(r->samples, r->samples_cap * sizeof(*r->samples));
	}
	r->samples[r->n_samples++] = sample;
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct engine *e = arg;
	uint64_t now = lg_now_us();

	timer_in(e->tick_ev, TICK_MS);
	if (now - e->last_sample_us >= 1000000) {
		e->last_sample_us = now;
		take_sample(e, now);
	}
	lg_tracker_expire(e->tracker, now, false);
	if (e->set->progress_ms > 0 &&
	    now - e->last_progress_us >= (uint64_t)e->set->progress_ms * 1000) {
		e->last_progress_us = now;
		print_progress(e, now);
	}
	if (e->phase != PHASE_COOLDOWN)
		return;
	/* Keep polling for probes only while some are awaited. */
	if (lg_tracker_outstanding(e->tracker) == 0)
		evtimer_del(e->poll_ev);
	bool idle = e->n_active == 0 && lg_tracker_outstanding(e->tracker) == 0;
	if (idle || now >= e->cooldown_end_us) {
		if (mt_loop_is_draining(e->loop) && e->n_active > 0)
			return;	/* the drain bound ends it */
		finish(e);
	}
}

/* ---- set-up ---- */

bool lg_resolve(const char *hostport, struct sockaddr_storage *ss,
		socklen_t *len_r, const char **error_r)
{
	static char error[300];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	const char *colon = strrchr(hostport, ':');
	char host[256];
	int rc;

	if (mt_sockaddr_parse(hostport, ss, len_r, error_r) &&
	    strncmp(hostport, "*:", 2) != 0)
		return true;
	if (colon == NULL || colon == hostport || colon[1] == '\0' ||
	    (size_t)(colon - hostport) >= sizeof(host)) {
		snprintf(error, sizeof(error), "'%s' is not HOST:PORT", hostport);
		*error_r = error;
		return false;
	}
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = '\0';
	if ((rc = getaddrinfo(host, colon + 1, &hints, &res)) != 0) {
		snprintf(error, sizeof(error), "'%s': %s", hostport, gai_strerror(rc));
		*error_r = error;
		return false;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len_r = res->ai_addrlen;
	freeaddrinfo(res);
	return true;
}

/* As many descriptors as allowed: each open session holds one. */
static unsigned int raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur > 1000000 ? 1000000 : (unsigned int)rl.rlim_cur;
}

static uint64_t new_run_id(void)
{
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
	return id;
}

static struct event *new_timer(struct engine *e, event_callback_fn cb)
{
	struct event *ev = evtimer_new(e->base, cb, e);

	if (ev == NULL)
		mt_panic("out of memory creating a timer");
	return ev;
}

bool lg_engine_run(const struct lg_run_settings *set,
		   struct lg_run_result *result, const char **error_r)
{
	struct engine e = { .set = set, .result = result };
	struct lg_run_settings limited;
	bool ok = false;

	memset(result, 0, sizeof(*result));
	if (!lg_resolve(set->smtp, &e.smtp_addr, &e.smtp_len, error_r) ||
	    !lg_resolve(set->pop, &e.pop_addr, &e.pop_len, error_r))
		return false;
	/* Keep descriptors for the sink's connections and the rest. */
	unsigned int fds = raise_fd_limit();
	limited = *set;
	if (limited.max_sessions + 256 > fds)
		limited.max_sessions = fds > 512 ? fds - 256 : fds / 2;
	e.set = &limited;

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
	result->run_id = new_run_id();

	if ((e.loop = mt_loop_new(error_r)) == NULL)
		return false;
	e.base = mt_loop_base(e.loop);
	e.tracker = lg_tracker_new(result->run_id, DELIVERY_EXPIRE_US);
	snprintf(e.helo, sizeof(e.helo), "loadgen.%s", set->wl.remote_domain);
	e.env = (struct lg_session_env){
		.base = e.base, .wl = &set->wl, .tracker = e.tracker,
		.step_timeout_ms = set->step_timeout_ms, .helo_name = e.helo,
	};
	lg_rng_seed(&e.probe_rng, set->seed, 0xfeedULL);
	if (set->sink_listen != NULL &&
	    (e.sink = lg_sink_new(e.loop, set->sink_listen, e.tracker, error_r)) == NULL)
		goto out;
	result->have_sink = e.sink != NULL;
	mt_loop_set_drain(e.loop, set->step_timeout_ms + 2000, drain_cb, &e);
	if (!mt_loop_handle_signals(e.loop, NULL, NULL, error_r))
		goto out;

	e.arrival_ev = new_timer(&e, arrival_cb);
	e.phase_ev = new_timer(&e, phase_cb);
	e.tick_ev = new_timer(&e, tick_cb);
	e.reaper_ev = new_timer(&e, reaper_cb);
	e.probe_ev = new_timer(&e, probe_cb);
	e.poll_ev = new_timer(&e, poll_cb);

	e.start_us = e.last_progress_us = e.last_sample_us = lg_now_us();
	take_sample(&e, e.start_us);
	start_level(&e, 0);
	timer_in(e.tick_ev, TICK_MS);
	if (set->probe_interval_ms > 0) {
		timer_in(e.probe_ev, set->probe_interval_ms / 2);
		timer_in(e.poll_ev, set->probe_poll_ms);
	}
	if (mt_loop_run(e.loop) < 0) {
		*error_r = "the event loop failed";
		goto out;
	}
	ok = true;
	result->elapsed_s = (double)(lg_now_us() - e.start_us) / 1e6;
out:
	/* Sessions still open (a drain that timed out) end uncounted. */
	while (e.active != NULL) {
		struct lg_session *s = e.active;
		e.active = s->next;
		lg_session_free(&s);
	}
	if (e.reaper_ev != NULL)
		reaper_cb(-1, 0, &e);
	if (ok) {
		take_sample(&e, lg_now_us());
		result->undelivered = lg_tracker_outstanding(e.tracker);
		lg_tracker_expire(e.tracker, 0, true);
		result->tracker = *lg_tracker_counts(e.tracker);
		if (e.sink != NULL)
			result->sink = *lg_sink_counts(e.sink);
	}
	if (e.sched_active)
		lg_schedule_free(&e.sched);
	lg_sink_free(&e.sink);
	struct event **timers[] = { &e.arrival_ev, &e.phase_ev, &e.tick_ev,
				    &e.reaper_ev, &e.probe_ev, &e.poll_ev };
	for (size_t i = 0; i < sizeof(timers) / sizeof(timers[0]); i++)
		if (*timers[i] != NULL) {
			event_free(*timers[i]);
			*timers[i] = NULL;
		}
	lg_tracker_free(&e.tracker);
	mt_loop_free(&e.loop);
	return ok;
}

void lg_run_result_free(struct lg_run_result *result)
{
	MT_FREE(&result->levels);
	MT_FREE(&result->samples);
	result->n_samples = result->samples_cap = 0;
	result->n_levels = 0;
}
