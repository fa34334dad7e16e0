/* session.c — the connection, timing and ending shared by the SMTP and POP3
 * client sessions (see session.h).
 * Trust boundary: bytes from the system under test are only handed to the
 * line reader (bounded line length) and the protocol's parser; every step
 * runs under a timer, so a silent server costs one timeout, not a hang. */
#include "session.h"

#include "alloc.h"
#include "tls.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

/* Stream a message body while less than this is queued. */
#define WRITE_LOW_WATERMARK (32 * 1024)

static void session_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg_session *s = arg;

	lg_session_fail(s, LG_ERR_TIMEOUT, "%s not answered within %u ms",
			lg_functions[s->step].key, s->env->step_timeout_ms);
}

static void session_read_cb(struct bufferevent *bev, void *arg)
{
	struct lg_session *s = arg;

	if (!s->finished)
		s->proto->input(s);
}

static void session_write_cb(struct bufferevent *bev, void *arg)
{
	struct lg_session *s = arg;

	if (!s->finished && s->proto->drained != NULL)
		s->proto->drained(s);
}

static void connect_failover(struct lg_session *s, int err);

static void session_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct lg_session *s = arg;

	if (s->finished)
		return;
	if (what & BEV_EVENT_CONNECTED) {
		int one = 1;
		s->connected = true;
		if (s->connect_timer != NULL)
			evtimer_del(s->connect_timer);
		/* Commands are written whole; don't let Nagle hold the last
		 * segment of a body behind a delayed ACK. */
		(void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP,
				 TCP_NODELAY, &one, sizeof(one));
		return;
	}
	if (what & BEV_EVENT_EOF) {
		lg_session_fail(s, LG_ERR_DISCONNECT,
				"server closed the connection during %s",
				lg_functions[s->step].key);
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		int err = EVUTIL_SOCKET_ERROR();
		bool connecting = s->step == LG_FN_SMTP_CONNECT ||
				  s->step == LG_FN_SUBMIT_CONNECT ||
				  s->step == LG_FN_POP_CONNECT ||
				  s->step == LG_FN_IMAP_CONNECT;
		if (connecting && !s->connected) {
			/* Refused, unreachable, reset before the connect (or
			 * the TLS handshake) completed: the next address. */
			connect_failover(s, err != 0 ? err : ECONNREFUSED);
			return;
		}
		/* An error before the greeting is a failed connection
		 * (refused, unreachable, reset at once); after it, the
		 * server dropped an established session. */
		lg_session_fail(s, connecting ? LG_ERR_CONNECT : LG_ERR_DISCONNECT,
				"%s: %s", lg_functions[s->step].key,
				evutil_socket_error_to_string(err));
	}
}

void lg_session_init(struct lg_session *s, const struct lg_session_proto *proto,
		     const struct lg_session_env *env, enum lg_kind kind,
		     struct lg_stats *stats, lg_session_done_cb *done,
		     void *done_context)
{
	s->proto = proto;
	s->env = env;
	s->kind = kind;
	s->stats = stats;
	s->delivery_stats = stats;
	s->done = done;
	s->done_context = done_context;
	s->log.session_id = mt_session_id_new();
	mt_line_reader_init(&s->reader, LG_REPLY_LINE_MAX, MT_LINE_ACCEPT_LF);
	mt_buf_init(&s->line);
	s->started_us = lg_now_us();
	stats->sessions[kind]++;
}

/* Our callbacks and watermark on the connection's bufferevent. */
static void attach_bev(struct lg_session *s)
{
	bufferevent_setcb(s->bev, session_read_cb, session_write_cb,
			  session_event_cb, s);
	bufferevent_setwatermark(s->bev, EV_WRITE, WRITE_LOW_WATERMARK, 0);
	bufferevent_enable(s->bev, EV_READ | EV_WRITE);
}

/* A failed connect: our descriptor limit is the generator's, not the
 * server's fault. */
static void connect_failed(struct lg_session *s, int err)
{
	lg_session_fail(s, err == EMFILE || err == ENFILE ?
			LG_ERR_OVERLOAD : LG_ERR_CONNECT,
			"connect: %s", strerror(err));
}

static void connect_next(struct lg_session *s);

/* The connect to the current address failed with err (ETIMEDOUT: not
 * answered within the connect timeout): on to the service's next address
 * while one is left, as a client of several servers does; else the
 * session fails. */
static void connect_failover(struct lg_session *s, int err)
{
	if (err != EMFILE && err != ENFILE && s->addr_tried + 1 < s->addrs->count) {
		s->addr_tried++;
		if (s->bev != NULL) {
			bufferevent_free(s->bev);
			s->bev = NULL;
		}
		connect_next(s);
		return;
	}
	if (err == ETIMEDOUT && s->connect_timer != NULL)
		lg_session_fail(s, LG_ERR_TIMEOUT, "connect not answered within %u ms "
				"(each of %zu addresses)", s->env->connect_timeout_ms,
				s->addrs->count);
	else
		connect_failed(s, err);
}

static void connect_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	connect_failover(arg, ETIMEDOUT);
}

/* Connect to the address whose turn it is (the connect step is open). */
static void connect_next(struct lg_session *s)
{
	unsigned int i = (s->addr_first + s->addr_tried) % (unsigned int)s->addrs->count;
	const struct sockaddr *addr = (const struct sockaddr *)&s->addrs->ss[i];
	socklen_t addrlen = s->addrs->len[i];

	if (s->connect_timer != NULL) {
		struct timeval tv = {
			.tv_sec = s->env->connect_timeout_ms / 1000,
			.tv_usec = (s->env->connect_timeout_ms % 1000) * 1000,
		};
		evtimer_add(s->connect_timer, &tv);
	}
	if (!s->connect_tls) {
		s->bev = bufferevent_socket_new(s->env->base, -1, BEV_OPT_CLOSE_ON_FREE);
		if (s->bev == NULL)
			mt_panic("out of memory creating a client connection");
		attach_bev(s);
		if (bufferevent_socket_connect(s->bev, (struct sockaddr *)addr,
					       (int)addrlen) < 0)
			connect_failover(s, errno);
		return;
	}
	const char *error;
	int fd = socket(addr->sa_family, SOCK_STREAM, 0);
	if (fd < 0) {
		connect_failed(s, errno);
		return;
	}
	if (evutil_make_socket_nonblocking(fd) < 0 ||
	    (connect(fd, addr, addrlen) < 0 && errno != EINPROGRESS)) {
		int err = errno;
		close(fd);
		connect_failover(s, err);
		return;
	}
	/* The handshake runs as soon as the connect completes; a refused
	 * connect shows as an error event in the connect step. */
	s->bev = mt_tls_bev_connect(s->env->tls, s->env->base, fd, NULL, &error);
	if (s->bev == NULL) {
		lg_session_fail(s, LG_ERR_CONNECT, "TLS: %s", error);
		return;
	}
	attach_bev(s);
}

static void connect_begin(struct lg_session *s, struct lg_addrs *addrs, bool tls,
			  enum lg_function fn)
{
	s->addrs = addrs;
	s->addr_first = lg_addrs_start(addrs);
	s->addr_tried = 0;
	s->connect_tls = tls;
	s->timer = evtimer_new(s->env->base, session_timeout_cb, s);
	if (s->timer == NULL)
		mt_panic("out of memory creating a client connection");
	if (addrs->count > 1 && s->env->connect_timeout_ms > 0 &&
	    (s->connect_timer = evtimer_new(s->env->base, connect_timeout_cb, s)) == NULL)
		mt_panic("out of memory creating a client connection");
	lg_session_step_begin(s, fn);
	connect_next(s);
}

void lg_session_connect_tls(struct lg_session *s, struct lg_addrs *addrs,
			    enum lg_function fn)
{
	connect_begin(s, addrs, true, fn);
}

bool lg_session_starttls(struct lg_session *s)
{
	const char *error;
	size_t discarded = 0;
	struct bufferevent *tls = mt_tls_bev_starttls(s->env->tls, &s->bev, NULL,
						      &discarded, &error);

	if (tls == NULL) {
		lg_session_fail(s, LG_ERR_PROTOCOL, "STARTTLS: %s", error);
		return false;
	}
	s->bev = tls;
	mt_line_reader_reset(&s->reader);
	attach_bev(s);
	return true;
}

void lg_session_connect(struct lg_session *s, struct lg_addrs *addrs, enum lg_function fn)
{
	connect_begin(s, addrs, false, fn);
}

void lg_session_step_begin(struct lg_session *s, enum lg_function fn)
{
	struct timeval tv = {
		.tv_sec = s->env->step_timeout_ms / 1000,
		.tv_usec = (s->env->step_timeout_ms % 1000) * 1000,
	};

	s->step = fn;
	s->step_open = true;
	s->step_start_us = lg_now_us();
	lg_stats_attempt(s->stats, fn);
	evtimer_add(s->timer, &tv);
}

void lg_session_step_end(struct lg_session *s, bool ok)
{
	uint64_t now = lg_now_us();

	if (!s->step_open)
		mt_panic("lg_session_step_end: no step open");
	s->step_open = false;
	evtimer_del(s->timer);
	lg_stats_answered(s->stats, s->step,
			  now > s->step_start_us ? now - s->step_start_us : 0, ok);
}

struct evbuffer *lg_session_input(struct lg_session *s)
{
	return bufferevent_get_input(s->bev);
}

struct evbuffer *lg_session_output(struct lg_session *s)
{
	return bufferevent_get_output(s->bev);
}

void lg_session_send(struct lg_session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mt_line_vwrite(bufferevent_get_output(s->bev), fmt, ap);
	va_end(ap);
}

bool lg_session_read_line(struct lg_session *s)
{
	const char *error = NULL;

	if (s->finished)
		return false;
	switch (mt_line_read(&s->reader, bufferevent_get_input(s->bev),
			     &s->line, &error)) {
	case MT_LINE_OK:
		return true;
	case MT_LINE_NEED_MORE:
		return false;
	default:
		lg_session_fail(s, LG_ERR_PROTOCOL, "bad reply to %s: %s",
				lg_functions[s->step].key, error);
		return false;
	}
}

static void session_close(struct lg_session *s)
{
	if (s->timer != NULL) {
		event_free(s->timer);
		s->timer = NULL;
	}
	if (s->connect_timer != NULL) {
		event_free(s->connect_timer);
		s->connect_timer = NULL;
	}
	if (s->bev != NULL) {
		bufferevent_free(s->bev);
		s->bev = NULL;
	}
}

void lg_session_fail(struct lg_session *s, enum lg_error error,
		     const char *fmt, ...)
{
	va_list ap;

	if (s->finished)
		return;
	va_start(ap, fmt);
	vsnprintf(s->detail, sizeof(s->detail), fmt, ap);
	va_end(ap);
	s->finished = true;
	s->failed = true;
	s->error = error;
	s->step_open = false;
	s->stats->errors[error]++;
	s->stats->sessions_failed[s->kind]++;
	mt_slog(MT_LOG_DEBUG, &s->log, "%s session failed: error=%s %s",
		s->proto->name, lg_error_names[error], s->detail);
	session_close(s);
	s->done(s, s->done_context);
}

void lg_session_finish(struct lg_session *s)
{
	if (s->finished)
		return;
	s->finished = true;
	session_close(s);
	s->done(s, s->done_context);
}

void lg_session_free(struct lg_session **session_p)
{
	struct lg_session *s = *session_p;

	if (s == NULL)
		return;
	session_close(s);
	mt_buf_free(&s->line);
	s->proto->destroy(s);
	*session_p = NULL;
}
