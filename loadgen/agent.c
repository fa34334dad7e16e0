/* agent.c — one managed run on the generator side (see agent.h).
 * Trust boundary: the manager's connection; bounded waits (hello 10 s,
 * settings 30 s, go 120 s, the result written within 30 s), bounded line
 * lengths, and output that the manager does not read ends the run. */
#include "agent.h"

#include "alloc.h"
#include "engine.h"
#include "log.h"
#include "run-options.h"
#include "session.h"
#include "wire.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#define HELLO_US (10 * 1000000ull)
#define SETTINGS_US (30 * 1000000ull)
#define GO_US (120 * 1000000ull)
#define RESULT_US (30 * 1000000ull)
/* After the last line: how long to wait for the manager to close. */
#define LINGER_US (10 * 1000000ull)
#define MAX_HANDSHAKE_LINES 200
/* Output the manager has not read: beyond this it is gone. */
#define OUTPUT_MAX (16 * 1024 * 1024)

struct agent {
	int fd;
	const char *peer;
	struct lg_run_settings set;
	struct mt_buf line;
	char **owned;			/* the settings' strings */
	size_t n_owned;
	struct lg_engine *engine;
	struct bufferevent *bev;
	struct mt_buf pending;		/* output left when the run ended */
	bool manager_gone;
};

/* ---- during the run (the engine's loop) ---- */

static void manager_gone(struct agent *a, const char *why)
{
	if (a->manager_gone)
		return;
	mt_warning("agent: manager %s: %s; stopping the run", a->peer, why);
	a->manager_gone = true;
	bufferevent_disable(a->bev, EV_READ | EV_WRITE);
	lg_engine_interrupt(a->engine);
}

static void send_buf(struct agent *a, const struct mt_buf *b)
{
	struct evbuffer *out = bufferevent_get_output(a->bev);

	if (a->manager_gone)
		return;
	evbuffer_add(out, b->data, b->len);
	if (evbuffer_get_length(out) > OUTPUT_MAX)
		manager_gone(a, "does not read");
}

static void command(struct agent *a, const char *line)
{
	const char *args, *count_s;
	size_t len = lg_wire_word(line, &args);
	uint64_t count;

	if (len == 4 && strncmp(line, "seen", 4) == 0) {
		size_t id_len = lg_wire_word(args, &count_s);
		if (id_len > 0 && lg_wire_numbers(count_s, &count, 1) && count <= 1000000)
			lg_engine_arrival(a->engine, args, id_len, (unsigned int)count);
		else
			mt_warning("agent: bad line from the manager: %.80s", line);
	} else if (strcmp(line, "stop") == 0) {
		lg_engine_stop_levels(a->engine);
	} else if (strcmp(line, "interrupt") == 0) {
		lg_engine_interrupt(a->engine);
	} else {
		mt_warning("agent: unknown line from the manager: %.80s", line);
	}
}

static void read_cb(struct bufferevent *bev, void *context)
{
	struct agent *a = context;
	struct evbuffer *in = bufferevent_get_input(bev);
	char *line;
	size_t len;

	/* The input is bounded by the read high watermark. */
	while (!a->manager_gone &&
	       (line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF)) != NULL) {
		command(a, line);
		free(line);
	}
	if (evbuffer_get_length(in) > LG_WIRE_LINE_MAX)
		manager_gone(a, "sent an overlong line");
}

static void event_cb(struct bufferevent *bev, short what, void *context)
{
	struct agent *a = context;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		manager_gone(a, what & BEV_EVENT_EOF ? "closed the connection" :
			     evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

static bool attach(struct lg_engine *engine, struct event_base *base,
		   void *context, const char **error_r)
{
	struct agent *a = context;

	a->engine = engine;
	if (evutil_make_socket_nonblocking(a->fd) < 0 ||
	    (a->bev = bufferevent_socket_new(base, a->fd, 0)) == NULL) {
		*error_r = "cannot set up the manager's connection";
		return false;
	}
	bufferevent_setwatermark(a->bev, EV_READ, 0, 2 * LG_WIRE_LINE_MAX);
	bufferevent_setcb(a->bev, read_cb, NULL, event_cb, a);
	bufferevent_enable(a->bev, EV_READ | EV_WRITE);
	return true;
}

static void beat(struct lg_engine *engine, const struct lg_progress *p, void *context)
{
	struct agent *a = context;
	struct mt_buf b = MT_BUF_INIT;

	lg_wire_beat(&b, p);
	send_buf(a, &b);
	mt_buf_free(&b);
}

static void measured(struct lg_engine *engine, size_t level,
		     const struct lg_stats *measure, void *context)
{
	struct agent *a = context;
	struct mt_buf b = MT_BUF_INIT;

	mt_buf_appendf(&b, "measured %zu\n", level);
	lg_wire_stats(&b, "measured", measure);
	send_buf(a, &b);
	mt_buf_free(&b);
}

/* Keep what is still queued for the manager; it goes out after the run. */
static void detach(struct lg_engine *engine, void *context)
{
	struct agent *a = context;
	struct evbuffer *out = bufferevent_get_output(a->bev);
	size_t len = evbuffer_get_length(out);

	/* (copied, not drained: a socket bufferevent's output is frozen at
	 * its start for everyone but itself) */
	if (!a->manager_gone && len > 0) {
		mt_buf_reserve(&a->pending, len);
		ev_ssize_t n = evbuffer_copyout(out, a->pending.data + a->pending.len, len);
		a->pending.len += n > 0 ? (size_t)n : 0;
		a->pending.data[a->pending.len] = '\0';
	}
	bufferevent_free(a->bev);
	a->bev = NULL;
	a->engine = NULL;
}

/* ---- before and after the run (blocking, with deadlines) ---- */

static bool say(struct agent *a, const char *text, uint64_t deadline_us)
{
	const char *error;

	if (!lg_wire_write(a->fd, text, strlen(text), deadline_us, &error)) {
		mt_warning("agent: writing to manager %s: %s", a->peer, error);
		return false;
	}
	return true;
}

/* Our last word is said: half-close, and wait (bounded) for the manager
 * to close, so what it still sends meets an open socket and our last
 * lines are read, not lost to a reset. */
static void linger(struct agent *a, uint64_t us)
{
	uint64_t deadline = lg_now_us() + us;
	const char *error;

	shutdown(a->fd, SHUT_WR);
	while (lg_wire_read_line(a->fd, &a->line, deadline, &error))
		;
}

static bool refuse(struct agent *a, const char *why)
{
	char *line = mt_xasprintf("error %s\n", why);

	mt_warning("agent: manager %s: %s", a->peer, why);
	if (say(a, line, lg_now_us() + RESULT_US))
		linger(a, LINGER_US);
	free(line);
	return false;
}

static bool read_line(struct agent *a, uint64_t deadline_us, const char *waiting_for)
{
	const char *error;

	if (lg_wire_read_line(a->fd, &a->line, deadline_us, &error))
		return true;
	mt_warning("agent: manager %s: %s while waiting for %s", a->peer, error,
		   waiting_for);
	return false;
}

static const char *keep(struct agent *a, const char *value)
{
	a->owned = mt_xrealloc(a->owned, (a->n_owned + 1) * sizeof(*a->owned));
	return a->owned[a->n_owned++] = mt_xstrdup(value);
}

/* "set NAME VALUE" and "share INDEX COUNT RUNID" until "prepare". */
static bool read_settings(struct agent *a)
{
	uint64_t deadline = lg_now_us() + SETTINGS_US;
	bool have_share = false;

	for (int n = 0; n < MAX_HANDSHAKE_LINES; n++) {
		const char *args, *error, *value;
		uint64_t v[3];

		if (!read_line(a, deadline, "the settings"))
			return false;
		const char *line = a->line.data;
		size_t len = lg_wire_word(line, &args);
		if (strcmp(line, "prepare") == 0) {
			if (!have_share)
				return refuse(a, "no share given");
			return true;
		}
		if (len == 3 && strncmp(line, "set", 3) == 0) {
			char name[64];
			size_t name_len = lg_wire_word(args, &value);
			const struct lg_run_option *opt;
			snprintf(name, sizeof(name), "%.*s", (int)name_len, args);
			if ((opt = lg_run_option_find(name)) == NULL ||
			    (opt->flags & LG_OPT_WIRE) == 0)
				return refuse(a, "unknown setting");
			if (!lg_run_option_set(&a->set, opt, keep(a, value), &error)) {
				char *why = mt_xasprintf("%s: %s", name, error);
				refuse(a, why);
				free(why);
				return false;
			}
		} else if (len == 5 && strncmp(line, "share", 5) == 0) {
			if (!lg_wire_numbers(args, v, 3) || v[1] == 0 ||
			    v[1] > LG_MAX_SLOTS || v[0] >= v[1] ||
			    (v[2] & LG_RUN_SLOT_MASK) != v[0])
				return refuse(a, "bad share");
			a->set.share = (struct lg_share){ (unsigned int)v[0], (unsigned int)v[1] };
			a->set.run_id = v[2];
			have_share = true;
		} else {
			return refuse(a, "unexpected line before prepare");
		}
	}
	return refuse(a, "too many setting lines");
}

static bool handshake(struct agent *a)
{
	struct mt_buf hello = MT_BUF_INIT;
	const char *error;
	bool ok;

	if (!read_line(a, lg_now_us() + HELLO_US, "hello"))
		return false;
	if (!lg_wire_hello_check(a->line.data, &error))
		return refuse(a, error);
	lg_wire_hello(&hello);
	ok = say(a, hello.data, lg_now_us() + HELLO_US);
	mt_buf_free(&hello);
	if (!ok || !read_settings(a))
		return false;
	a->set.progress_ms = 0;
	a->set.sink_listen = NULL;
	if (!lg_run_settings_check(&a->set, &error))
		return refuse(a, error);
	struct lg_addrs addrs;
	if (!lg_resolve_list(a->set.smtp, &addrs, &error) ||
	    (a->set.pop != NULL && !lg_resolve_list(a->set.pop, &addrs, &error)) ||
	    (a->set.imap != NULL && !lg_resolve_list(a->set.imap, &addrs, &error)))
		return refuse(a, error);
	if (!say(a, "ready\n", lg_now_us() + SETTINGS_US) ||
	    !read_line(a, lg_now_us() + GO_US, "go"))
		return false;
	if (strcmp(a->line.data, "go") != 0)
		return refuse(a, "expected go");
	return true;
}

int lg_agent_serve(int fd, const char *peer)
{
	struct agent a = { .fd = fd, .peer = peer };
	const struct lg_engine_hooks hooks = {
		.attach = attach, .beat = beat, .measured = measured,
		.detach = detach, .context = &a,
	};
	struct lg_run_result result;
	const char *error;
	int rc = -1;

	lg_run_settings_defaults(&a.set, false);
	memset(&result, 0, sizeof(result));
	if (handshake(&a)) {
		mt_info("agent: running share %u of %u for %s", a.set.share.index,
			a.set.share.count, peer);
		if (!lg_engine_run(&a.set, &hooks, &result, &error)) {
			refuse(&a, error);
		} else if (!a.manager_gone) {
			lg_wire_result(&a.pending, &result);
			if (say(&a, a.pending.data, lg_now_us() + RESULT_US)) {
				rc = 0;
				linger(&a, LINGER_US);
			}
		}
	}
	lg_run_result_free(&result);
	mt_buf_free(&a.pending);
	mt_buf_free(&a.line);
	for (size_t i = 0; i < a.n_owned; i++)
		free(a.owned[i]);
	free(a.owned);
	close(fd);
	return rc;
}
