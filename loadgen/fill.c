/* fill.c — the initial mailbox fill (see fill.h): per target (the SMTP
 * server, or each LMTP shard) a cursor over the users that target holds
 * and a window of concurrent sessions; by SMTP one message a session, by
 * LMTP as many as the cursor has on one connection.
 * Trust boundary: server replies, handled by smtp-client.c. The work is
 * bounded: every planned message is handed out once, and each step of
 * each session runs under the step timeout. */
#include "fill.h"

#include "errors.h"
#include "imap-client.h"
#include "alloc.h"
#include "log.h"
#include "loop.h"
#include "resolve.h"
#include "session.h"
#include "shard.h"
#include "smtp-client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

/* Streams of the fill's draws: this plus the user number (the run's
 * levels use small stream numbers). */
#define FILL_STREAM (0x66696c6cULL << 32)
#define FOLDER_STREAM (0x666f6c64ULL << 32)

struct fill;

struct target {
	struct fill *f;
	size_t index;
	const char *name;		/* for messages */
	bool lmtp;
	struct lg_addrs addrs;
	struct lg_fill_user cursor;	/* the user being filled */
	bool imap;			/* the folder model, a session a user */
	bool exhausted;
	unsigned int open;
};

struct fill {
	const struct lg_fill_settings *set;
	struct lg_fill_result *result;
	struct mt_loop *loop;
	struct lg_session_env env;
	char helo[300];
	struct target targets[LG_FILL_MAX_TARGETS];
	size_t n_targets;
	uint8_t *shard_of;		/* per user (1-based), when sharded */
	bool stopping;
	uint64_t seq, handed;
	struct lg_session *active;	/* open sessions */
	struct lg_session *dead;
	struct event *pump_ev;		/* frees finished sessions, starts more */
	struct event *progress_ev;
	uint64_t start_us;
};

void lg_fill_user_begin(struct lg_fill_user *u, uint64_t seed, uint64_t user)
{
	lg_rng_seed(&u->rng, seed, FILL_STREAM + user);
	u->user = user;
	u->left = lg_weighted_pick(lg_mailbox_table, lg_mailbox_table_len, &u->rng);
}

bool lg_fill_user_next(struct lg_fill_user *u, struct lg_message_plan *plan)
{
	if (u->left == 0)
		return false;
	u->left--;
	*plan = (struct lg_message_plan){
		.from_remote = true,
		.sender = 1 + lg_rng_below(&u->rng, LG_REMOTE_USERS),
		.size = lg_workload_message_size(&u->rng),
		.n_rcpts = 1, .n_local = 1,
		.rcpts = { { .remote = false, .user = u->user } },
	};
	return true;
}

void lg_fill_folders(uint64_t seed, uint64_t user,
		     unsigned int counts[LG_IMAP_FOLDERS], uint64_t *size_seed_r)
{
	struct lg_rng rng;

	lg_rng_seed(&rng, seed, FOLDER_STREAM + user);
	for (unsigned int i = 0; i < LG_IMAP_FOLDERS; i++) {
		bool sent = strcmp(lg_imap_folders[i], "Sent") == 0;
		bool user_folder = i >= LG_IMAP_SPECIAL_FOLDERS;
		counts[i] = sent ? (unsigned int)lg_rng_below(&rng, LG_IMAP_FILL_SENT_MAX + 1) :
			user_folder ? (unsigned int)lg_rng_below(&rng, LG_IMAP_FILL_FOLDER_MAX + 1) : 0;
	}
	*size_seed_r = lg_rng_next(&rng);
}

static void schedule_pump(struct fill *f)
{
	static const struct timeval now = { 0, 0 };

	evtimer_add(f->pump_ev, &now);
}

/* The next message for target t: false when its users are all done. The
 * loop skips the users of other shards: bounded by the user count. */
static bool next_message(struct target *t, struct lg_message_plan *plan)
{
	struct fill *f = t->f;
	uint64_t users = f->set->wl.users;

	if (f->stopping)
		return false;
	while (!t->exhausted && !lg_fill_user_next(&t->cursor, plan)) {
		uint64_t user = t->cursor.user + 1;
		while (user <= users && f->shard_of != NULL && f->shard_of[user] != t->index)
			user++;
		if (user > users) {
			t->exhausted = true;
			break;
		}
		lg_fill_user_begin(&t->cursor, f->set->seed, user);
		if (f->set->inbox_scale > 1)
			t->cursor.left *= f->set->inbox_scale;
		f->result->users++;
		f->result->messages_planned += t->cursor.left;
		f->result->target_users[t->index]++;
		f->result->target_messages[t->index] += t->cursor.left;
	}
	if (t->exhausted)
		return false;
	f->handed++;
	return true;
}

/* LMTP: the next transaction on the same connection. */
static bool next_cb(void *context, struct lg_message_plan *plan, uint64_t *seq_r)
{
	struct target *t = context;

	if (!next_message(t, plan))
		return false;
	*seq_r = ++t->f->seq;
	return true;
}

static void fill_done(struct lg_session *s, void *context)
{
	struct target *t = context;
	struct fill *f = t->f;

	t->open--;
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

/* One user's folder fill: what it planned, for the count at its end. */
struct folder_job {
	struct target *t;
	uint64_t planned;
};

static void folder_done(struct lg_session *s, void *context)
{
	struct folder_job *job = context;
	struct lg_fill_result *r = job->t->f->result;

	if (s->failed)
		r->folder_users_failed++;
	else
		r->folder_messages_sent += job->planned;
	fill_done(s, job->t);
	free(job);
}

/* Start IMAP folder fills on t up to its window, a user each. */
static bool start_folder_sessions(struct fill *f, struct target *t)
{
	while (t->open < f->set->concurrency && !f->stopping && !t->exhausted) {
		struct lg_imap_params params = {
			.profile = LG_IMAP_PROFILE_FILL, .user = ++t->cursor.user,
		};
		struct folder_job *job = mt_xcalloc(1, sizeof(*job));

		if (t->cursor.user >= f->set->wl.users)
			t->exhausted = true;
		lg_fill_folders(f->set->seed, params.user, params.fill_counts,
				&params.plan.seed);
		job->t = t;
		for (unsigned int i = 0; i < LG_IMAP_FOLDERS; i++)
			job->planned += params.fill_counts[i];
		f->result->folder_users++;
		f->result->folder_messages_planned += job->planned;
		t->open++;
		struct lg_session *s = lg_imap_session_start(&f->env, LG_KIND_IMAP_DESKTOP,
			&f->result->stats, &t->addrs, &params, folder_done, job);
		if (s->finished)
			return false;
		s->next = f->active;
		if (f->active != NULL)
			f->active->prev = s;
		f->active = s;
	}
	return true;
}

/* Start sessions on t up to its window; false when one failed at once. */
static bool start_sessions(struct fill *f, struct target *t)
{
	struct lg_message_plan plan;

	if (t->imap)
		return start_folder_sessions(f, t);
	while (t->open < f->set->concurrency && next_message(t, &plan)) {
		struct lg_smtp_params params = {
			.plan = &plan, .seq = ++f->seq, .lmtp = t->lmtp,
			.next = t->lmtp ? next_cb : NULL, .next_context = t,
		};
		t->open++;
		struct lg_session *s = lg_smtp_session_start(&f->env, LG_KIND_SMTP_REMOTE,
					  &f->result->stats, &t->addrs, &params, fill_done, t);
		if (s->finished)
			return false;	/* failed at once: freed, and more next time */
		s->next = f->active;
		if (f->active != NULL)
			f->active->prev = s;
		f->active = s;
	}
	return true;
}

static void pump_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fill *f = arg;
	bool all_done = true;

	while (f->dead != NULL) {
		struct lg_session *s = f->dead;
		f->dead = s->next;
		lg_session_free(&s);
	}
	for (size_t i = 0; i < f->n_targets; i++) {
		struct target *t = &f->targets[i];
		if (!start_sessions(f, t))
			break;
	}
	for (size_t i = 0; i < f->n_targets; i++)
		all_done &= f->targets[i].open == 0 &&
			(f->stopping || f->targets[i].exhausted);
	if (all_done && f->dead == NULL)
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

	fprintf(stderr, "[fill %4.0f s] users %llu/%llu, messages %llu accepted, %llu "
		"failed, %.0f msgs/s\n", s, (unsigned long long)f->result->users,
		(unsigned long long)f->set->wl.users, (unsigned long long)sent,
		(unsigned long long)(f->handed - sent), s > 0 ? (double)sent / s : 0);
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

/* The targets, and with several shards each user's shard. */
static bool setup_targets(struct fill *f, const char **error_r)
{
	const struct lg_fill_settings *set = f->set;
	const char *names[LG_FILL_MAX_TARGETS];
	char addr[320];

	f->n_targets = set->smtp != NULL ? 1 : set->n_lmtp;
	if (f->n_targets == 0 || f->n_targets > LG_FILL_MAX_TARGETS) {
		*error_r = "no server, or too many shards";
		return false;
	}
	for (size_t i = 0; i < f->n_targets; i++) {
		struct target *t = &f->targets[i];
		const char *hostport = set->smtp != NULL ? set->smtp : set->lmtp[i].hostport;
		*t = (struct target){ .f = f, .index = i, .lmtp = set->smtp == NULL,
				      .name = hostport };
		t->cursor.user = 0;
		names[i] = set->smtp != NULL || set->lmtp[i].name == NULL ? "" :
			set->lmtp[i].name;
		if (!lg_resolve_list(hostport, &t->addrs, error_r))
			return false;
	}
	if (set->imap != NULL) {
		/* The IMAP server: after the INBOX targets, every user. */
		if (f->n_targets + 1 > LG_FILL_MAX_TARGETS) {
			*error_r = "too many shards";
			return false;
		}
		struct target *t = &f->targets[f->n_targets];
		*t = (struct target){ .f = f, .index = f->n_targets, .imap = true,
				      .name = set->imap };
		if (!lg_resolve_list(set->imap, &t->addrs, error_r))
			return false;
	}
	size_t inbox_targets = f->n_targets;
	f->n_targets += set->imap != NULL;
	if (inbox_targets == 1)
		return true;
	f->shard_of = mt_xmalloc(set->wl.users + 1);
	for (uint64_t k = 1; k <= set->wl.users; k++) {
		lg_format_address(addr, sizeof(addr), &set->wl, false, k);
		f->shard_of[k] = (uint8_t)lg_shard_pick(addr, names, inbox_targets);
	}
	return true;
}

static void free_sessions(struct lg_session **list)
{
	while (*list != NULL) {
		struct lg_session *s = *list;
		*list = s->next;
		lg_session_free(&s);
	}
}

bool lg_fill_run(const struct lg_fill_settings *set,
		 struct lg_fill_result *result, const char **error_r)
{
	struct fill f = { .set = set, .result = result };
	struct timeval tv = { set->progress_ms / 1000, (set->progress_ms % 1000) * 1000 };
	bool ok = false;

	memset(result, 0, sizeof(*result));
	lg_stats_init(&result->stats);
	if (!setup_targets(&f, error_r)) {
		free(f.shard_of);
		return false;
	}
	if ((f.loop = mt_loop_new(error_r)) == NULL) {
		free(f.shard_of);
		return lg_error_kept(error_r);
	}
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
	if (!mt_loop_handle_signals(f.loop, NULL, NULL, error_r)) {
		lg_error_kept(error_r);
		goto out;
	}
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
	result->messages_failed = f.handed - result->messages_sent;
	result->octets = result->stats.counters.bytes_up;
	result->elapsed_s = (double)(lg_now_us() - f.start_us) / 1e6;
	/* Sessions still open (a drain that ran out of time) end uncounted. */
	free_sessions(&f.active);
	free_sessions(&f.dead);
	event_free(f.pump_ev);
	event_free(f.progress_ev);
	mt_loop_free(&f.loop);
	free(f.shard_of);
	return ok;
}
