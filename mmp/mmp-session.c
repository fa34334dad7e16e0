/* mmp-session.c — one client connection to the MMP, from accept to close:
 * the greeting, implicit TLS and STLS, reading command lines before login,
 * the login and idle timers, the session state machine (every change
 * through mmp_enter_state()), the end-of-session log line, and the
 * deferred free (a session is freed by its worker's reaper event after the
 * callback that closed it has returned, never inside it).
 *
 * Trust boundary: the client's bytes. Before login a client can make us
 * hold at most MMP_INPUT_MAX bytes of input and one command line of
 * MMP_COMMAND_LINE_MAX (MMP_SASL_LINE_MAX for a SASL response); it has
 * login_timeout to log in and max_errors bad commands. After login the
 * relay (mmp-relay.c) owns the connection.
 * RFCs: RFC 1939 section 4 (greeting, AUTHORIZATION state), RFC 2449
 * section 4 (line lengths), RFC 2595 section 4 (STLS: discard what came
 * before TLS), RFC 8314 (implicit TLS). */
#include "mmp.h"
#include "mmp-parse.h"
#include "clock.h"
#include "alloc.h"
#include "buf.h"
#include "tls.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

/* A last reply gets this long to be written before the connection goes. */
#define CLOSING_FLUSH_MSECS 5000

const char *const mmp_state_names[MMP_STATE_COUNT] = {
	[MMP_STATE_NEW] = "new",
	[MMP_STATE_TLS_HANDSHAKE] = "tls_handshake",
	[MMP_STATE_AUTHORIZATION] = "authorization",
	[MMP_STATE_SASL] = "sasl",
	[MMP_STATE_STLS] = "stls",
	[MMP_STATE_DIRECTORY] = "directory",
	[MMP_STATE_AUTH_DELAY] = "auth_delay",
	[MMP_STATE_BACKEND] = "backend",
	[MMP_STATE_RELAY] = "relay",
	[MMP_STATE_CLOSING] = "closing",
	[MMP_STATE_DEAD] = "dead",
};

static void client_read_cb(struct bufferevent *bev, void *arg);
static void client_write_cb(struct bufferevent *bev, void *arg);
static void client_event_cb(struct bufferevent *bev, short what, void *arg);

void mmp_enter_state(struct mmp_session *sess, enum mmp_state state)
{
	if (sess->state == state)
		return;
	mt_slog(MT_LOG_DEBUG, &sess->log, "state %s -> %s",
		mmp_state_names[sess->state], mmp_state_names[state]);
	sess->state = state;
	/* Each reading state has its own line limit; lines are whole here. */
	if (state == MMP_STATE_AUTHORIZATION)
		mt_line_reader_init(&sess->reader, MMP_COMMAND_LINE_MAX,
				    MT_LINE_ACCEPT_LF);
	else if (state == MMP_STATE_SASL)
		mt_line_reader_init(&sess->reader, MMP_SASL_LINE_MAX,
				    MT_LINE_ACCEPT_LF);
}

void mmp_session_timer_at(struct mmp_session *sess, uint64_t deadline_ms)
{
	uint64_t now = mt_clock_coarse_ms();
	uint64_t ms = deadline_ms > now ? deadline_ms - now : 0;
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
	evtimer_add(sess->timer, &tv);
}

/* Replies */

void mmp_bev_send(struct bufferevent *bev, bool direct, struct evbuffer *buf)
{
	struct evbuffer *out = bufferevent_get_output(bev);

	/* Straight to the socket when nothing is queued ahead: one write(2)
	 * instead of adding the write event, waking up for it and removing
	 * it again (two epoll_ctl calls and a loop turn per reply). On
	 * EAGAIN or an error the rest goes the bufferevent's way, which
	 * reports the error. */
	if (direct && evbuffer_get_length(out) == 0)
		(void)evbuffer_write(buf, bufferevent_getfd(bev));
	if (evbuffer_get_length(buf) != 0)
		evbuffer_add_buffer(out, buf);
}

void mmp_reply_raw(struct mmp_session *sess, const void *data, size_t len)
{
	if (sess->client == NULL)
		return;
	evbuffer_add(sess->worker->scratch, data, len);
	sess->bytes_out += len;
	mmp_bev_send(sess->client, !sess->tls, sess->worker->scratch);
}

/* A status line is the command's final reply ("+ " asks for more). */
static void count_status(struct mmp_session *sess, struct evbuffer *line)
{
	const unsigned char *status = evbuffer_pullup(line, 2);
	if (status != NULL && (status[0] == '-' || (status[0] == '+' && status[1] == 'O')))
		mt_commands_reply(&sess->commands, status[0] == '+');
}

void mmp_reply(struct mmp_session *sess, const char *fmt, ...)
{
	struct evbuffer *scratch = sess->worker->scratch;
	va_list ap;

	if (sess->client == NULL)
		return;
	va_start(ap, fmt);
	mt_line_vwrite(scratch, fmt, ap);
	va_end(ap);
	count_status(sess, scratch);
	sess->bytes_out += evbuffer_get_length(scratch);
	mmp_bev_send(sess->client, !sess->tls, scratch);
}

/* What the write callback does once the output is written out; also
 * called after a reply that went straight to the socket. */
static void output_flushed(struct mmp_session *sess);

void mmp_session_flushed_check(struct mmp_session *sess)
{
	if (sess->client != NULL &&
	    evbuffer_get_length(bufferevent_get_output(sess->client)) == 0)
		output_flushed(sess);
}

void mmp_session_finish(struct mmp_session *sess, const char *end,
			const char *fmt, ...)
{
	struct evbuffer *scratch = sess->worker->scratch;
	va_list ap;

	if (sess->state == MMP_STATE_DEAD || sess->state == MMP_STATE_CLOSING)
		return;
	if (sess->end == NULL)
		sess->end = end;
	if (sess->client == NULL || sess->state == MMP_STATE_TLS_HANDSHAKE) {
		mmp_session_close(sess, end);
		return;
	}
	mmp_login_abort(sess);
	mmp_enter_state(sess, MMP_STATE_CLOSING);
	bufferevent_disable(sess->client, EV_READ);
	va_start(ap, fmt);
	mt_line_vwrite(scratch, fmt, ap);
	va_end(ap);
	count_status(sess, scratch);
	sess->bytes_out += evbuffer_get_length(scratch);
	mmp_bev_send(sess->client, !sess->tls, scratch);
	mmp_session_timer_at(sess, mt_clock_coarse_ms() + CLOSING_FLUSH_MSECS);
	/* Written already: close now (the caller returns at once). */
	mmp_session_flushed_check(sess);
}

bool mmp_session_error(struct mmp_session *sess)
{
	if (++sess->errors < sess->worker->server->set->max_errors)
		return true;
	mmp_session_finish(sess, "too_many_errors",
			   "-ERR Too many errors, closing the connection.");
	return false;
}

/* The log line */

const char *mmp_log_name(const char *name)
{
	/* log.c escapes control characters; a space would end the value and
	 * let a client add key=value fields of its own. */
	static _Thread_local char buf[MMP_USER_MAX * 4 + 8];
	size_t pos = 0;

	if (name == NULL)
		return "-";
	for (const char *p = name; *p != '\0' && pos + 5 < sizeof(buf); p++) {
		if (*p == ' ') {
			memcpy(buf + pos, "\\x20", 4);
			pos += 4;
		} else {
			buf[pos++] = *p;
		}
	}
	buf[pos] = '\0';
	return buf;
}

static void log_end(struct mmp_session *sess)
{
	char peer[MT_SOCKADDR_STRLEN];
	struct mt_buf cmds = MT_BUF_INIT;
	mt_commands_summary(&mmp_command_table, &sess->commands, "cmd_", &cmds);
	mt_slog(MT_LOG_INFO, &sess->log,
		"session end client=%s listener=%s tls=%s user=%s shard=%s "
		"result=%s end=%s in=%llu out=%llu duration_ms=%llu%s",
		mt_sockaddr_str((struct sockaddr *)&sess->peer, peer, sizeof(peer)),
		sess->kind == MMP_LISTENER_POP3S ? "pop3s" : "pop3",
		sess->tls ? "yes" : "no",
		mmp_log_name(sess->user),
		sess->shard != NULL ? mmp_shard_name(sess->shard) : "-",
		sess->result != NULL ? sess->result : "none",
		sess->end != NULL ? sess->end : "unknown",
		(unsigned long long)sess->bytes_in,
		(unsigned long long)sess->bytes_out,
		(unsigned long long)(mt_clock_coarse_ms() - sess->start_ms),
		mt_buf_cstr(&cmds));
	mt_buf_free(&cmds);
}

/* Close and free */

static void reaper_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mmp_worker *worker = arg;
	(void)fd; (void)what;
	struct mmp_session *sess = worker->dead, *next;
	worker->dead = NULL;
	for (; sess != NULL; sess = next) {
		next = sess->next;
		free(sess->user);
		mt_commands_free(&sess->commands);
		free(sess);
	}
}

void mmp_session_close(struct mmp_session *sess, const char *end)
{
	struct mmp_worker *worker = sess->worker;
	struct mmp_server *server = worker->server;

	if (sess->state == MMP_STATE_DEAD)
		return;
	if (sess->end == NULL)
		sess->end = end;
	mmp_login_abort(sess);
	mmp_relay_free(&sess->relay);
	if (sess->timer != NULL) {
		event_free(sess->timer);
		sess->timer = NULL;
	}
	if (sess->client != NULL) {
		bufferevent_free(sess->client);
		sess->client = NULL;
	}
	log_end(sess);
	mmp_enter_state(sess, MMP_STATE_DEAD);
	atomic_fetch_add(&server->stats.bytes_in, sess->bytes_in);
	atomic_fetch_add(&server->stats.bytes_out, sess->bytes_out);
	if (sess->reject != NULL) {
		atomic_fetch_sub(&server->rejects, 1);
	} else {
		mmp_clients_release(server->clients,
				    (struct sockaddr *)&sess->peer);
		atomic_fetch_sub(&server->conns, 1);
	}

	if (sess->prev != NULL)
		sess->prev->next = sess->next;
	else
		worker->sessions = sess->next;
	if (sess->next != NULL)
		sess->next->prev = sess->prev;
	sess->prev = NULL;
	sess->next = worker->dead;
	worker->dead = sess;
	if (worker->reaper != NULL)
		event_active(worker->reaper, EV_TIMEOUT, 0);
	if (--worker->n_sessions == 0 && worker->draining)
		mt_loop_drain_done(worker->loop);
}

/* Input before login */

void mmp_session_input(struct mmp_session *sess)
{
	struct evbuffer *in = bufferevent_get_input(sess->client);
	struct mt_buf line = MT_BUF_INIT;

	while (sess->state == MMP_STATE_AUTHORIZATION ||
	       sess->state == MMP_STATE_SASL) {
		const char *error = NULL;
		size_t before = evbuffer_get_length(in);
		enum mt_line_status st = mt_line_read(&sess->reader, in, &line,
						      &error);
		sess->bytes_in += before - evbuffer_get_length(in);
		if (st == MT_LINE_NEED_MORE)
			break;
		if (st == MT_LINE_OK) {
			if (sess->state == MMP_STATE_SASL)
				mmp_command_sasl_response(sess, mt_buf_cstr(&line));
			else
				mmp_command_run(sess, mt_buf_cstr(&line));
		} else {
			mt_slog(MT_LOG_DEBUG, &sess->log, "bad line: %s", error);
			if (sess->state == MMP_STATE_SASL)
				mmp_enter_state(sess, MMP_STATE_AUTHORIZATION);
			mt_commands_unknown(&sess->commands);
			if (mmp_session_error(sess))
				mmp_reply(sess, "-ERR %s.",
					  st == MT_LINE_TOO_LONG ?
					  "Line too long" : "Invalid characters in line");
		}
		/* The line may hold a password. */
		if (line.data != NULL)
			explicit_bzero(line.data, line.cap);
		mt_buf_reset(&line);
	}
	mt_buf_free(&line);
}

void mmp_session_resume(struct mmp_session *sess)
{
	if (sess->state == MMP_STATE_DEAD || sess->state == MMP_STATE_CLOSING)
		return;
	if (sess->worker->draining) {
		mmp_session_finish(sess, "shutdown",
				   "-ERR [SYS/TEMP] Server shutting down.");
		return;
	}
	mmp_enter_state(sess, MMP_STATE_AUTHORIZATION);
	mmp_session_timer_at(sess, sess->login_deadline_ms);
	mmp_session_input(sess);
}

static void greet(struct mmp_session *sess)
{
	if (sess->reject != NULL) {
		mmp_session_finish(sess, "refused", "%s", sess->reject);
		return;
	}
	mmp_reply(sess, "+OK mailtier POP3 proxy ready.");
	mmp_enter_state(sess, MMP_STATE_AUTHORIZATION);
}

/* STLS: the "+OK" is written; switch the socket to TLS. RFC 2595 section
 * 4: anything the client sent after STLS in plaintext is discarded, and
 * the USER name given before is forgotten. */
static void start_tls(struct mmp_session *sess)
{
	struct mmp_server *server = sess->worker->server;
	size_t discarded = 0;
	const char *error = NULL;

	struct bufferevent *bev = mt_tls_bev_starttls(server->tls, &sess->client,
						      NULL, &discarded, &error);
	if (bev == NULL) {
		mt_slog(MT_LOG_WARNING, &sess->log, "STLS failed: %s", error);
		mmp_session_close(sess, "tls_error");
		return;
	}
	if (discarded > 0)
		mt_slog(MT_LOG_INFO, &sess->log,
			"discarded %zu plaintext bytes sent after STLS", discarded);
	sess->client = bev;
	sess->tls = true;
	MT_FREE(&sess->user);
	bufferevent_setcb(bev, client_read_cb, client_write_cb, client_event_cb,
			  sess);
	bufferevent_setwatermark(bev, EV_READ, 0, MMP_INPUT_MAX);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	mmp_enter_state(sess, MMP_STATE_TLS_HANDSHAKE);
}

/* Callbacks before login (the relay installs its own) */

static void client_read_cb(struct bufferevent *bev, void *arg)
{
	struct mmp_session *sess = arg;
	(void)bev;
	/* In other states the input waits (bounded by the read watermark):
	 * pipelined commands after PASS go to the store after login. */
	if (sess->state == MMP_STATE_AUTHORIZATION || sess->state == MMP_STATE_SASL)
		mmp_session_input(sess);
}

static void output_flushed(struct mmp_session *sess)
{
	if (sess->state == MMP_STATE_STLS)
		start_tls(sess);
	else if (sess->state == MMP_STATE_CLOSING)
		mmp_session_close(sess, sess->end);
}

/* The output buffer has been written out. */
static void client_write_cb(struct bufferevent *bev, void *arg)
{
	struct mmp_session *sess = arg;
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		output_flushed(sess);
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct mmp_session *sess = arg;

	if ((what & BEV_EVENT_CONNECTED) != 0) {
		if (sess->state != MMP_STATE_TLS_HANDSHAKE)
			return;
		char desc[128];
		SSL *ssl = bufferevent_openssl_get_ssl(bev);
		mt_slog(MT_LOG_DEBUG, &sess->log, "tls=%s",
			ssl != NULL ? mt_tls_describe(ssl, desc, sizeof(desc)) : "?");
		mmp_enter_state(sess, MMP_STATE_AUTHORIZATION);
		/* Implicit TLS: the greeting (or refusal) comes now; after
		 * STLS there is none (RFC 2595 section 4). */
		if (sess->kind == MMP_LISTENER_POP3S)
			greet(sess);
		/* Input that came with the handshake's last flight. */
		if (sess->state == MMP_STATE_AUTHORIZATION)
			mmp_session_input(sess);
		return;
	}
	if ((what & BEV_EVENT_EOF) != 0) {
		mmp_session_close(sess, "client_eof");
		return;
	}
	if (sess->tls) {
		char why[128];
		mt_slog(MT_LOG_DEBUG, &sess->log, "tls error: %s",
			mt_tls_bev_error(bev, why, sizeof(why)));
		mmp_session_close(sess, sess->state == MMP_STATE_TLS_HANDSHAKE ?
				  "tls_failed" : "client_error");
		return;
	}
	mmp_session_close(sess, "client_error");
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mmp_session *sess = arg;
	(void)fd; (void)what;

	switch (sess->state) {
	case MMP_STATE_AUTH_DELAY:
		mmp_login_delay_done(sess);
		break;
	case MMP_STATE_RELAY: {
		uint64_t idle = sess->worker->server->set->idle_timeout;
		uint64_t now = mt_clock_coarse_ms();
		if (now - sess->last_active_ms >= idle)
			mmp_session_close(sess, "idle_timeout");
		else
			mmp_session_timer_at(sess, sess->last_active_ms + idle);
		break;
	}
	case MMP_STATE_CLOSING:
		mmp_session_close(sess, sess->end);
		break;
	case MMP_STATE_TLS_HANDSHAKE:
		mmp_session_close(sess, "login_timeout");
		break;
	default:
		mmp_session_finish(sess, "login_timeout",
				   "-ERR Disconnected for inactivity.");
		break;
	}
}

void mmp_session_new(struct mmp_worker *worker, int fd,
		     const struct sockaddr *peer, socklen_t peerlen,
		     enum mmp_listener_kind kind, const char *reject)
{
	struct mmp_server *server = worker->server;
	struct mmp_session *sess = mt_xcalloc(1, sizeof(*sess));
	const char *error = NULL;
	int one = 1;

	sess->worker = worker;
	sess->log.session_id = mt_session_id_new();
	mt_commands_init(&sess->commands, &mmp_command_table);
	if (peerlen > sizeof(sess->peer))
		peerlen = sizeof(sess->peer);
	memcpy(&sess->peer, peer, peerlen);
	sess->kind = kind;
	sess->reject = reject;
	sess->start_ms = mt_clock_coarse_ms();
	sess->login_deadline_ms = sess->start_ms + server->set->login_timeout;
	sess->state = MMP_STATE_NEW;
	mmp_commands_init(sess);
	/* POP3 is request/response in small lines: never wait for Nagle. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	if (kind == MMP_LISTENER_POP3S) {
		sess->client = mt_tls_bev_accept(server->tls, worker->base, fd, &error);
		sess->tls = true;
	} else {
		sess->client = bufferevent_socket_new(worker->base, fd,
						      BEV_OPT_CLOSE_ON_FREE);
		if (sess->client == NULL) {
			close(fd);
			error = "bufferevent_socket_new failed";
		}
	}
	sess->timer = evtimer_new(worker->base, timer_cb, sess);
	if (sess->timer == NULL)
		mt_panic("evtimer_new failed");

	sess->next = worker->sessions;
	if (sess->next != NULL)
		sess->next->prev = sess;
	worker->sessions = sess;
	worker->n_sessions++;

	char addr[MT_SOCKADDR_STRLEN];
	mt_slog(MT_LOG_DEBUG, &sess->log, "connect client=%s listener=%s",
		mt_sockaddr_str(peer, addr, sizeof(addr)),
		kind == MMP_LISTENER_POP3S ? "pop3s" : "pop3");
	if (sess->client == NULL) {
		mt_slog(MT_LOG_ERROR, &sess->log, "cannot start session: %s", error);
		mmp_session_close(sess, "error");
		return;
	}
	bufferevent_setcb(sess->client, client_read_cb, client_write_cb,
			  client_event_cb, sess);
	bufferevent_setwatermark(sess->client, EV_READ, 0, MMP_INPUT_MAX);
	bufferevent_enable(sess->client, EV_READ | EV_WRITE);
	mmp_session_timer_at(sess, sess->login_deadline_ms);
	if (kind == MMP_LISTENER_POP3S)
		mmp_enter_state(sess, MMP_STATE_TLS_HANDSHAKE);
	else
		greet(sess);
}

/* Drain and exit */

void mmp_sessions_drain(struct mmp_worker *worker)
{
	worker->draining = true;
	struct mmp_session *sess = worker->sessions, *next;
	for (; sess != NULL; sess = next) {
		next = sess->next;
		switch (sess->state) {
		case MMP_STATE_AUTHORIZATION:
		case MMP_STATE_SASL:
		case MMP_STATE_TLS_HANDSHAKE:
			mmp_session_finish(sess, "shutdown",
					   "-ERR [SYS/TEMP] Server shutting down.");
			break;
		default:
			/* Logging in: answered in mmp_session_resume();
			 * relaying: runs to its end or the drain bound. */
			break;
		}
	}
	if (worker->n_sessions == 0)
		mt_loop_drain_done(worker->loop);
}

void mmp_sessions_free_all(struct mmp_worker *worker)
{
	while (worker->sessions != NULL)
		mmp_session_close(worker->sessions, "shutdown");
	reaper_cb(-1, 0, worker);
}

struct event *mmp_reaper_new(struct mmp_worker *worker)
{
	struct event *ev = event_new(worker->base, -1, 0, reaper_cb, worker);
	if (ev == NULL)
		mt_panic("event_new failed");
	return ev;
}
