/* manager.c — a run made by several generator processes (see manager.h):
 * forking the local workers or connecting to the agents, the handshake,
 * the loop (the sink and its arrivals' routing, progress, liveness,
 * SIGINT), and the end (the merged result, our children reaped); the
 * generators' lines are read by manager-lines.c.
 * Trust boundary: the generators' lines, parsed strictly (wire.c); every
 * wait on them has a deadline. Only processes this manager forked are
 * signalled or waited for. */
#include "manager-private.h"

#include "errors.h"
#include "agent.h"
#include "live-metrics.h"
#include "alloc.h"
#include "log.h"
#include "loop.h"
#include "session.h"
#include "sink.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#define CONNECT_US (5 * 1000000ull)
#define TICK_MS 250
#define REAP_MS 5000
/* Arrivals queued for a generator that does not read them: beyond this
 * it has failed. */
#define OUTPUT_MAX (16 * 1024 * 1024)

void lg_manager_fail(struct manager *m, const char *fmt, ...)
{
	va_list ap;

	if (!m->failed) {
		va_start(ap, fmt);
		vsnprintf(m->error, sizeof(m->error), fmt, ap);
		va_end(ap);
		m->failed = true;
	}
	if (m->loop != NULL)
		mt_loop_exit(m->loop);
}

void lg_manager_send_all(struct manager *m, const char *text)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->w[i].bev != NULL && m->w[i].state != W_DONE)
			evbuffer_add(bufferevent_get_output(m->w[i].bev), text, strlen(text));
}

/* ---- starting the generators ---- */

static void spawn_local(struct manager *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct worker *w = &m->w[i];
		int pair[2];

		snprintf(w->name, sizeof(w->name), "worker %zu", i);
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
			lg_manager_fail(m, "socketpair: %s", strerror(errno));
			return;
		}
		fflush(NULL);
		w->pid = fork();
		if (w->pid < 0) {
			close(pair[0]);
			close(pair[1]);
			w->pid = 0;
			lg_manager_fail(m, "fork: %s", strerror(errno));
			return;
		}
		if (w->pid == 0) {
			/* The worker: only its own end of its own pair. */
			static char ident[64];
			for (size_t j = 0; j < i; j++)
				close(m->w[j].fd);
			close(pair[0]);
			snprintf(ident, sizeof(ident), "mailtier-load[worker %zu]", i);
			mt_log_init(ident, MT_LOG_TARGET_STDERR);
			exit(lg_agent_serve(pair[1], "local") == 0 ? 0 : 1);
		}
		close(pair[1]);
		w->fd = pair[0];
	}
}

static int connect_to(const char *hostport, const char **error_r)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, err = 0;
	socklen_t err_len = sizeof(err);

	if (!lg_resolve(hostport, &ss, &len, error_r))
		return -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		*error_r = lg_error_keep(strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
		*error_r = lg_error_keep(strerror(errno));
		close(fd);
		return -1;
	}
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	int rc;
	do
		rc = poll(&pfd, 1, (int)(CONNECT_US / 1000));
	while (rc < 0 && errno == EINTR);
	if (rc == 0) {
		*error_r = "no answer to connect within 5 s";
		close(fd);
		return -1;
	}
	if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) < 0 || err != 0) {
		*error_r = lg_error_keep(strerror(rc < 0 ? errno : err != 0 ? err : errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void connect_agents(struct manager *m)
{
	const char *error;

	for (size_t i = 0; i < m->n && !m->failed; i++) {
		struct worker *w = &m->w[i];
		snprintf(w->name, sizeof(w->name), "agent %s", m->mset->agents[i]);
		if ((w->fd = connect_to(m->mset->agents[i], &error)) < 0)
			lg_manager_fail(m, "%s: %s", w->name, error);
	}
}

/* Settings, share and "prepare" to each, then each one's "ready". */
static void handshake(struct manager *m)
{
	uint64_t deadline = lg_now_us() + m->mset->agent_timeout_ms * 1000;
	struct mt_buf out = MT_BUF_INIT, line = MT_BUF_INIT;
	const char *error;

	for (size_t i = 0; i < m->n && !m->failed; i++) {
		struct worker *w = &m->w[i];
		mt_buf_reset(&out);
		lg_wire_hello(&out);
		lg_wire_settings(&out, m->set);
		mt_buf_appendf(&out, "share %zu %zu %" PRIu64 "\nprepare\n", i, m->n,
			       m->base_run_id | i);
		if (!lg_wire_write(w->fd, out.data, out.len, deadline, &error))
			lg_manager_fail(m, "%s: %s", w->name, error);
	}
	for (size_t i = 0; i < m->n && !m->failed; i++) {
		struct worker *w = &m->w[i];
		if (!lg_wire_read_line(w->fd, &line, deadline, &error)) {
			lg_manager_fail(m, "%s: %s (no hello)", w->name, error);
			break;
		}
		if (!lg_wire_hello_check(line.data, &error)) {
			lg_manager_fail(m, "%s: %s", w->name, strncmp(line.data, "error ", 6) == 0 ?
			     line.data + 6 : error);
			break;
		}
		if (!lg_wire_read_line(w->fd, &line, deadline, &error))
			lg_manager_fail(m, "%s: %s (not ready)", w->name, error);
		else if (strcmp(line.data, "ready") != 0)
			lg_manager_fail(m, "%s: %s", w->name, strncmp(line.data, "error ", 6) == 0 ?
			     line.data + 6 : "did not say ready");
	}
	mt_buf_free(&out);
	mt_buf_free(&line);
}
/* ---- the connections ---- */

static void read_cb(struct bufferevent *bev, void *context)
{
	struct worker *w = context;
	struct evbuffer *in = bufferevent_get_input(bev);
	char *line;
	size_t len;
	bool ok = true;

	while (ok && w->state != W_DONE &&
	       (line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF)) != NULL) {
		ok = lg_manager_worker_line(w, line);
		free(line);
	}
	if (ok && w->state != W_DONE && evbuffer_get_length(in) > LG_WIRE_LINE_MAX)
		lg_manager_fail(w->m, "%s: overlong line", w->name);
	/* It has said all: let it go (it waits for our close, so nothing
	 * we still had queued for it meets a closed socket). libevent
	 * defers the free until this callback returns. */
	if (w->state == W_DONE && w->bev != NULL) {
		bufferevent_free(w->bev);
		w->bev = NULL;
	}
}

static void event_cb(struct bufferevent *bev, short what, void *context)
{
	struct worker *w = context;
	int err = EVUTIL_SOCKET_ERROR();

	if (w->state == W_DONE || !(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	read_cb(bev, w);	/* what it said before the end */
	if (w->state != W_DONE)
		lg_manager_fail(w->m, "%s: the connection ended before its result (%s)",
				w->name, what & BEV_EVENT_EOF ? "closed" :
				evutil_socket_error_to_string(err));
}

/* ---- the loop: sink, progress, liveness ---- */

/* The sink saw one of ours: route it to the generator that sent it. */
static void arrival(const char *id, size_t len, unsigned int count, void *context)
{
	struct manager *m = context;
	uint64_t run, seq;

	if (!lg_id_parse(id, len, &run, &seq) ||
	    (run & ~LG_RUN_SLOT_MASK) != m->base_run_id) {
		m->foreign++;
		return;
	}
	struct worker *w = (run & LG_RUN_SLOT_MASK) < m->n ? &m->w[run & LG_RUN_SLOT_MASK] : NULL;
	if (w == NULL || w->state != W_RUN || w->bev == NULL) {
		m->late++;
		return;
	}
	struct evbuffer *out = bufferevent_get_output(w->bev);
	evbuffer_add_printf(out, "seen %.*s %u\n", (int)len, id, count);
	if (evbuffer_get_length(out) > OUTPUT_MAX)
		lg_manager_fail(m, "%s: does not read what it is sent", w->name);
}

static void tick_cb(void *context)
{
	struct manager *m = context;
	uint64_t now = lg_now_us();
	struct lg_progress sum = { 0 };
	bool have = false;

	for (size_t i = 0; i < m->n; i++) {
		struct worker *w = &m->w[i];
		if (w->state != W_DONE &&
		    now - w->last_heard_us > m->mset->agent_timeout_ms * 1000) {
			lg_manager_fail(m, "%s: no word for %.0f s", w->name,
			     (double)(now - w->last_heard_us) / 1e6);
			return;
		}
		if (!w->have_beat)
			continue;
		if (!have) {	/* where the run is: the first one's */
			sum.level = w->beat.level;
			sum.pct = w->beat.pct;
			sum.phase = w->beat.phase;
			sum.phase_ms = w->beat.phase_ms;
			sum.phase_len_ms = w->beat.phase_len_ms;
			sum.target_msgs_per_min_x100 = w->beat.target_msgs_per_min_x100;
			have = true;
		}
		lg_progress_add(&sum, &w->beat);
	}
	if (now > m->deadline_us) {
		lg_manager_fail(m, "the run overran its planned length by far; giving up");
		return;
	}
	if (have && now - m->last_sample_us >= 1000000) {
		m->last_sample_us = now;
		lg_run_result_add_sample(m->result, (double)(now - m->start_us) / 1e6, &sum);
		lg_live_metrics_update(m->live, &sum);
	}
	if (have && m->set->progress_ms > 0 &&
	    now - m->last_progress_us >= (uint64_t)m->set->progress_ms * 1000) {
		m->last_progress_us = now;
		lg_progress_print(stderr, &sum);
	}
}

/* SIGINT/SIGTERM: every generator stops and reports what it measured. */
static void drain_cb(void *context)
{
	struct manager *m = context;

	m->result->interrupted = true;
	lg_manager_send_all(m, "interrupt\n");
}

static uint64_t planned_us(const struct lg_run_settings *set, uint64_t agent_timeout_ms)
{
	/* levels, cool-down, the last steps, and margins for priming and
	 * for the results to come in */
	return (set->n_levels * (set->warmup_ms + set->duration_ms + 10000) +
		set->cooldown_ms + set->step_timeout_ms + agent_timeout_ms + 30000) * 1000;
}

static bool start_loop(struct manager *m, const char **error_r)
{
	if ((m->loop = mt_loop_new(error_r)) == NULL)
		return lg_error_kept(error_r);
	if (m->set->sink_listen != NULL) {
		if ((m->sink = lg_sink_new(m->loop, m->set->sink_listen, NULL, error_r)) == NULL)
			return false;
		lg_sink_set_arrival(m->sink, arrival, m);
	}
	if (m->set->metrics_listen != NULL &&
	    (m->live = lg_live_metrics_start(m->loop, m->set->metrics_listen, error_r)) == NULL)
		return false;
	mt_loop_set_drain(m->loop, m->set->step_timeout_ms + 5000 +
			  (unsigned int)m->mset->agent_timeout_ms, drain_cb, m);
	if (!mt_loop_handle_signals(m->loop, NULL, NULL, error_r))
		return lg_error_kept(error_r);
	m->start_us = m->last_sample_us = m->last_progress_us = lg_now_us();
	m->deadline_us = m->start_us + planned_us(m->set, m->mset->agent_timeout_ms);
	for (size_t i = 0; i < m->n; i++) {
		struct worker *w = &m->w[i];
		if (evutil_make_socket_nonblocking(w->fd) < 0 ||
		    (w->bev = bufferevent_socket_new(mt_loop_base(m->loop), w->fd,
						     BEV_OPT_CLOSE_ON_FREE)) == NULL) {
			*error_r = "cannot set up a generator's connection";
			return false;
		}
		w->fd = -1;	/* the bufferevent's now */
		bufferevent_setwatermark(w->bev, EV_READ, 0, 2 * LG_WIRE_LINE_MAX);
		bufferevent_setcb(w->bev, read_cb, NULL, event_cb, w);
		bufferevent_enable(w->bev, EV_READ | EV_WRITE);
		w->last_heard_us = m->start_us;
	}
	lg_manager_send_all(m, "go\n");
	m->tick = mt_timer_add(m->loop, TICK_MS, true, tick_cb, m);
	return true;
}

/* ---- the end ---- */

static void reap(struct manager *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct worker *w = &m->w[i];
		if (w->bev != NULL)
			bufferevent_free(w->bev);
		w->bev = NULL;
		if (w->fd >= 0)
			close(w->fd);
		w->fd = -1;
	}
	/* Our own children: they end when their connection does; a worker
	 * still busy after the bound is killed. */
	for (size_t i = 0; i < m->n; i++) {
		struct worker *w = &m->w[i];
		int status;
		for (int waited = 0; w->pid > 0; waited += 10) {
			pid_t rc = waitpid(w->pid, &status, WNOHANG);
			if (rc == w->pid && !m->failed &&
			    !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
				mt_warning("%s (pid %ld) ended with status %d", w->name,
					   (long)w->pid, status);
			if (rc == w->pid || (rc < 0 && errno != EINTR)) {
				w->pid = 0;
			} else if (waited >= REAP_MS) {
				mt_warning("%s (pid %ld) did not exit; killing it", w->name,
					   (long)w->pid);
				kill(w->pid, SIGKILL);
				(void)waitpid(w->pid, &status, 0);
				w->pid = 0;
			} else {
				struct timespec ts = { 0, 10 * 1000000 };
				nanosleep(&ts, NULL);
			}
		}
	}
}

static void finish_result(struct manager *m)
{
	struct lg_run_result *r = m->result;

	for (size_t i = 0; i < r->n_levels; i++)
		r->levels[i].complete = m->complete_votes[i] == m->n;
	r->tracker.foreign += m->foreign;
	r->tracker.untracked += m->late;
	r->have_sink = m->sink != NULL;
	if (m->sink != NULL)
		r->sink = *lg_sink_counts(m->sink);
	r->run_id = m->base_run_id;
	r->generators = (unsigned int)m->n;
	struct lg_progress last = { 0 };
	for (size_t i = 0; i < m->n; i++)
		lg_progress_add(&last, &m->w[i].beat);
	last.level = r->n_levels > 0 ? r->n_levels - 1 : 0;
	last.phase = 2;
	last.open = 0;
	lg_run_result_add_sample(r, r->elapsed_s, &last);
}

bool lg_manager_run(const struct lg_run_settings *set,
		    const struct lg_manager_settings *mset,
		    struct lg_run_result *result, const char **error_r)
{
	struct lg_run_settings shared = *set;
	struct manager m = {
		.set = &shared, .mset = mset, .result = result,
		.n = mset->n_agents > 0 ? mset->n_agents : mset->workers,
	};
	bool ok = false;

	/* What each generator gets: its part of the session limit, and
	 * remote copies timed here when this process runs the sink. */
	if (m.n > 0)
		shared.max_sessions = (unsigned int)((set->max_sessions + m.n - 1) / m.n);
	shared.remote_sink = set->sink_listen != NULL;

	lg_run_result_init(result, set);
	if (m.n == 0 || m.n > LG_MAX_SLOTS) {
		*error_r = "bad number of generators";
		return false;
	}
	if (getrandom(&m.base_run_id, sizeof(m.base_run_id), 0) != sizeof(m.base_run_id))
		m.base_run_id = (uint64_t)time(NULL) << 24 ^ (uint64_t)getpid();
	m.base_run_id &= ~LG_RUN_SLOT_MASK;
	m.w = mt_xcalloc(m.n, sizeof(*m.w));
	for (size_t i = 0; i < m.n; i++)
		m.w[i] = (struct worker){ .m = &m, .index = (unsigned int)i, .fd = -1,
					  .measured_level = -1 };
	m.measured = mt_xcalloc(set->n_levels, sizeof(*m.measured));
	m.measured_count = mt_xcalloc(set->n_levels, sizeof(*m.measured_count));
	m.complete_votes = mt_xcalloc(set->n_levels, sizeof(*m.complete_votes));
	if (mset->n_agents > 0)
		connect_agents(&m);
	else
		spawn_local(&m);
	if (!m.failed)
		handshake(&m);
	const char *setup_error = NULL;
	if (!m.failed && !start_loop(&m, &setup_error))
		lg_manager_fail(&m, "%s", setup_error);
	if (!m.failed && mt_loop_run(m.loop) < 0)
		lg_manager_fail(&m, "the event loop failed");
	if (!m.failed && m.done < m.n)
		lg_manager_fail(&m, "the run ended (interrupted) before every generator's result");
	if (!m.failed) {
		finish_result(&m);
		ok = true;
	}
	mt_timer_free(&m.tick);
	lg_sink_free(&m.sink);
	lg_live_metrics_free(&m.live);
	reap(&m);
	mt_loop_free(&m.loop);
	for (size_t i = 0; i < set->n_levels; i++)
		free(m.measured[i]);
	free(m.measured);
	free(m.measured_count);
	free(m.complete_votes);
	free(m.w);
	if (!ok)
		*error_r = lg_error_keep(m.error);
	return ok;
}
