/* fill.c — the initial mailbox fill (see fill.h): a window of concurrent
 * SMTP sessions, one message each, users in order, counts and sizes from
 * the seeded tables (the same seed fills the same mailboxes).
 * Trust boundary: server replies, handled by smtp-client.c. The work is
 * bounded: one session per planned message, each step under a timeout. */
#include "fill.h"

#include "alloc.h"
#include "engine.h"
#include "log.h"
#include "loop.h"
#include "smtp-client.h"

#include <stdio.h>
#include <string.h>

#include <event2/event.h>

/* Stream of the fill's draws (the run's levels use 0..). */
#define FILL_STREAM 0x66696c6cULL

struct fill {
	const struct lg_fill_settings *set;
	struct lg_fill_result *result;
	struct mt_loop *loop;
	struct lg_session_env env;
	char helo[300];
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct lg_rng rng;
	uint64_t user;			/* being filled (1-based), 0 before */
	unsigned int left_for_user;	/* messages still to start for it */
	unsigned int open;
	bool stopping;
	uint64_t seq;
	struct lg_session *active;	/* open sessions */
	struct lg_session *dead;
	struct event *pump_ev;		/* frees finished sessions, starts more */
	struct event *progress_ev;
	uint64_t start_us;
};

static void schedule_pump(struct fill *f)
{
	static const struct timeval now = { 0, 0 };

	evtimer_add(f->pump_ev, &now);
}

static void fill_done(struct lg_session *s, void *context)
{
	struct fill *f = context;

	f->open--;
	if (s->failed)
		f->result->messages_failed++;
	if (s->prev != NULL || f->active == s) {	/* linked (see pump_cb) */
		if (s->prev != NULL)
			s->prev->next = s->next;
		else
			f->active = s->next;
		if (s->next != NULL)
			s->next->prev = s->prev;
	}
	s->prev = NULL;
	s->next = f->dead;
	f->dead = s;
	/* Never start the next session from inside this one's callback: a
	 * connect that fails at once would recurse. */
	schedule_pump(f);
}

/* The next message to send: false when every user is done. */
static bool next_message(struct fill *f, struct lg_message_plan *plan)
{
	while (f->left_for_user == 0) {
		if (f->user >= f->set->wl.users)
			return false;
		f->user++;
		f->result->users++;
		f->left_for_user = lg_weighted_pick(lg_mailbox_table,
						    lg_mailbox_table_len, &f->rng);
		f->result->messages_planned += f->left_for_user;
	}
	f->left_for_user--;
	*plan = (struct lg_message_plan){
		.from_remote = true,
		.sender = 1 + lg_rng_below(&f->rng, LG_REMOTE_USERS),
		.size = lg_workload_message_size(&f->rng),
		.n_rcpts = 1, .n_local = 1,
		.rcpts = { { .remote = false, .user = f->user } },
	};
	return true;
}

static void pump_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fill *f = arg;
	struct lg_message_plan plan;

	while (f->dead != NULL) {
		struct lg_session *s = f->dead;
		f->dead = s->next;
		lg_session_free(&s);
	}
	while (!f->stopping && f->open < f->set->concurrency &&
	       next_message(f, &plan)) {
		struct lg_smtp_params params = { .plan = &plan, .seq = ++f->seq };
		f->open++;
		struct lg_session *s = lg_smtp_session_start(&f->env, LG_KIND_SMTP_REMOTE,
					  &f->result->stats, (struct sockaddr *)&f->addr,
					  f->addrlen, &params, fill_done, f);
		if (s->finished)
			break;	/* failed at once: free it, go on next time */
		s->next = f->active;
		if (f->active != NULL)
			f->active->prev = s;
		f->active = s;
	}
	bool all_started = f->stopping ||
		(f->user >= f->set->wl.users && f->left_for_user == 0);
	if (f->open == 0 && f->dead == NULL && all_started)
		mt_loop_exit(f->loop);
	else if (f->dead != NULL)
		schedule_pump(f);
}

static void progress_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fill *f = arg;
	struct timeval tv = { f->set->progress_ms / 1000, (f->set->progress_ms % 1000) * 1000 };
	double s = (double)(lg_now_us() - f->start_us) / 1e6;
	uint64_t sent = f->result->stats.counters.msgs_remote_sent;

	fprintf(stderr, "[fill %4.0f s] users %llu/%llu, messages %llu accepted, %llu failed, "
		"%.0f msgs/s\n", s, (unsigned long long)f->user,
		(unsigned long long)f->set->wl.users, (unsigned long long)sent,
		(unsigned long long)f->result->messages_failed, s > 0 ? (double)sent / s : 0);
	evtimer_add(f->progress_ev, &tv);
}

/* SIGINT/SIGTERM: start nothing more, let the open sessions end. */
static void fill_drain(void *context)
{
	struct fill *f = context;

	f->stopping = true;
	f->result->interrupted = true;
	schedule_pump(f);
}

bool lg_fill_run(const struct lg_fill_settings *set,
		 struct lg_fill_result *result, const char **error_r)
{
	struct fill f = { .set = set, .result = result };
	struct timeval tv = { set->progress_ms / 1000, (set->progress_ms % 1000) * 1000 };
	bool ok = false;

	memset(result, 0, sizeof(*result));
	lg_stats_init(&result->stats);
	if (!lg_resolve(set->smtp, &f.addr, &f.addrlen, error_r))
		return false;
	if ((f.loop = mt_loop_new(error_r)) == NULL)
		return false;
	lg_rng_seed(&f.rng, set->seed, FILL_STREAM);
	snprintf(f.helo, sizeof(f.helo), "loadgen.%s", set->wl.remote_domain);
	f.env = (struct lg_session_env){
		.base = mt_loop_base(f.loop), .wl = &set->wl, .tracker = NULL,
		.step_timeout_ms = set->step_timeout_ms, .helo_name = f.helo,
	};
	f.pump_ev = evtimer_new(mt_loop_base(f.loop), pump_cb, &f);
	f.progress_ev = evtimer_new(mt_loop_base(f.loop), progress_cb, &f);
	if (f.pump_ev == NULL || f.progress_ev == NULL)
		mt_panic("out of memory creating timers");
	mt_loop_set_drain(f.loop, set->step_timeout_ms + 2000, fill_drain, &f);
	if (!mt_loop_handle_signals(f.loop, NULL, NULL, error_r))
		goto out;
	f.start_us = lg_now_us();
	schedule_pump(&f);
	if (set->progress_ms > 0)
		evtimer_add(f.progress_ev, &tv);
	if (mt_loop_run(f.loop) < 0) {
		*error_r = "the event loop failed";
		goto out;
	}
	ok = true;
out:
	result->messages_sent = result->stats.counters.msgs_remote_sent;
	result->octets = result->stats.counters.bytes_up;
	result->elapsed_s = (double)(lg_now_us() - f.start_us) / 1e6;
	/* Sessions still open (a drain that ran out of time) end uncounted. */
	while (f.active != NULL) {
		struct lg_session *s = f.active;
		f.active = s->next;
		lg_session_free(&s);
	}
	while (f.dead != NULL) {
		struct lg_session *s = f.dead;
		f.dead = s->next;
		lg_session_free(&s);
	}
	event_free(f.pump_ev);
	event_free(f.progress_ev);
	mt_loop_free(&f.loop);
	return ok;
}
