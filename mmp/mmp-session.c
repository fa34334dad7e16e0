/* mmp-session.c — one client connection to the MMP, POP3 or IMAP, from
 * accept to close: the greeting, implicit TLS and STLS/STARTTLS, reading
 * command lines before login (POP3 here, IMAP in mmp-imap.c),
 * the login and idle timers, the session state machine (every change
 * through mmp_enter_state()) and the end-of-session log line. The
 * connection itself (bufferevent callbacks, timers, the worker's session
 * list, close-after-flush and the deferred free) is lib-mail/conn's; this
 * file is its hook set.
 *
 * Trust boundary: the client's bytes. Before login a client can make us
 * hold at most MMP_INPUT_MAX bytes of input and one command line of
 * MMP_COMMAND_LINE_MAX (MMP_SASL_LINE_MAX for a SASL response); it has
 * login_timeout to log in and max_errors bad commands. After login the
 * relay (mmp-relay.c) owns the connection.
 * RFCs: RFC 1939 section 4 (greeting, AUTHORIZATION state), RFC 2449
 * section 4 (line lengths), RFC 2595 section 4 (STLS: discard what came
 * before TLS), RFC 9051 6.2.1 (the same for STARTTLS), RFC 8314 (implicit
 * TLS). */
#include "mmp.h"
#include "mmp-parse.h"
#include "clock.h"
#include "alloc.h"
#include "buf.h"
#include "tls.h"

#include <limits.h>
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
	[MMP_STATE_LOGIN_WAIT] = "login_wait",
	[MMP_STATE_DIRECTORY] = "directory",
	[MMP_STATE_AUTH_DELAY] = "auth_delay",
	[MMP_STATE_BACKEND] = "backend",
	[MMP_STATE_RELAY] = "relay",
	[MMP_STATE_CLOSING] = "closing",
	[MMP_STATE_DEAD] = "dead",
};

static const struct mt_conn_ops conn_ops;

static struct mmp_session *conn_session(struct mt_conn *conn)
{
	return MT_CONN_OWNER(conn, struct mmp_session, conn);
}

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

static void login_timer_cb(void *context)
{
	mmp_login_timer_fired(context);
}

void mmp_session_login_timer_at(struct mmp_session *sess, uint64_t deadline_ms)
{
	uint64_t now = mt_clock_coarse_ms();
	uint64_t wait = deadline_ms > now ? deadline_ms - now : 0;
	/* At most MMP_AUTH_FAIL_DELAY_MAX, well within a timer's range. */
	unsigned int ms = (unsigned int)(wait < UINT_MAX ? wait : UINT_MAX);
	if (sess->login_timer == NULL)
		sess->login_timer = mt_timer_add(sess->worker->loop, ms, false,
						 login_timer_cb, sess);
	else
		mt_timer_set(sess->login_timer, ms);
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
	if (sess->conn.bev == NULL)
		return;		/* closed, or relaying */
	evbuffer_add(sess->worker->scratch, data, len);
	sess->bytes_out += len;
	mmp_bev_send(sess->conn.bev, !sess->tls, sess->worker->scratch);
}

void mmp_session_count_reply(struct mmp_session *sess, const char *line,
			     size_t len)
{
	if (sess->protocol == MMP_PROTO_IMAP) {
		/* A tagged line is the command's final reply ("*" and "+"
		 * lines are not). */
		const char *space = memchr(line, ' ', len);
		if (len > 0 && line[0] != '*' && line[0] != '+' && space != NULL)
			mt_commands_reply(&sess->commands,
					  (size_t)(line + len - space) > 2 &&
					  strncmp(space + 1, "OK", 2) == 0);
		return;
	}
	/* POP3: +OK or -ERR ("+ " asks for more). */
	if (len >= 2 && (line[0] == '-' || (line[0] == '+' && line[1] == 'O')))
		mt_commands_reply(&sess->commands, line[0] == '+');
}

static void count_status(struct mmp_session *sess, struct evbuffer *line)
{
	size_t len = evbuffer_get_length(line);
	size_t look = len < 80 ? len : 80;
	const char *start = (const char *)evbuffer_pullup(line, (ssize_t)look);
	if (start != NULL)
		mmp_session_count_reply(sess, start, look);
}

void mmp_reply(struct mmp_session *sess, const char *fmt, ...)
{
	struct evbuffer *scratch = sess->worker->scratch;
	va_list ap;

	if (sess->conn.bev == NULL)
		return;
	va_start(ap, fmt);
	mt_line_vwrite(scratch, fmt, ap);
	va_end(ap);
	count_status(sess, scratch);
	sess->bytes_out += evbuffer_get_length(scratch);
	mmp_bev_send(sess->conn.bev, !sess->tls, scratch);
}

static void start_tls(struct mmp_session *sess);

void mmp_session_flushed_check(struct mmp_session *sess)
{
	if (sess->conn.bev != NULL && sess->state == MMP_STATE_STLS &&
	    mt_conn_output_pending(&sess->conn) == 0)
		start_tls(sess);
}

/* Can the session still say a last word? (else it is closed now) */
static bool finish_begin(struct mmp_session *sess, enum mt_conn_outcome outcome,
			 const char *end)
{
	if (sess->state == MMP_STATE_DEAD || sess->state == MMP_STATE_CLOSING)
		return false;
	if (sess->end == NULL)
		sess->end = end;
	if (sess->conn.bev == NULL || sess->state == MMP_STATE_TLS_HANDSHAKE) {
		mmp_session_close(sess, outcome, end);
		return false;
	}
	mmp_login_abort(sess);
	mmp_enter_state(sess, MMP_STATE_CLOSING);
	return true;
}

/* The last reply is queued: close once it is written. */
static void finish_after_flush(struct mmp_session *sess, enum mt_conn_outcome outcome)
{
	mt_conn_set_idle(&sess->conn, CLOSING_FLUSH_MSECS);
	/* Written already: closes now (the caller returns at once). */
	mt_conn_close_after(&sess->conn, outcome, sess->end);
}

void mmp_session_finish(struct mmp_session *sess, enum mt_conn_outcome outcome,
			const char *end, const char *fmt, ...)
{
	struct evbuffer *scratch = sess->worker->scratch;
	va_list ap;

	if (!finish_begin(sess, outcome, end))
		return;
	va_start(ap, fmt);
	mt_line_vwrite(scratch, fmt, ap);
	va_end(ap);
	count_status(sess, scratch);
	sess->bytes_out += evbuffer_get_length(scratch);
	mmp_bev_send(sess->conn.bev, !sess->tls, scratch);
	finish_after_flush(sess, outcome);
}

void mmp_session_finish_queued(struct mmp_session *sess, enum mt_conn_outcome outcome,
			       const char *end)
{
	if (finish_begin(sess, outcome, end))
		finish_after_flush(sess, outcome);
}

void mmp_session_finish_answer(struct mmp_session *sess, enum mt_conn_outcome outcome,
			       const char *end, enum mmp_answer answer)
{
	mmp_session_finish(sess, outcome, end, "%s",
			   mmp_answer_text(sess->protocol, answer));
}

void mmp_answer(struct mmp_session *sess, enum mmp_answer answer)
{
	const char *text = mmp_answer_text(sess->protocol, answer);
	if (sess->protocol == MMP_PROTO_IMAP && answer <= MMP_ANSWER_LOGIN_LAST)
		mmp_reply(sess, "%s %s", sess->imap_tag, text);
	else
		mmp_reply(sess, "%s", text);
}

bool mmp_session_error(struct mmp_session *sess)
{
	if (++sess->errors < sess->worker->server->set->max_errors)
		return true;
	mmp_session_finish_answer(sess, MT_OUTCOME_LIMIT, "too_many_errors",
				  MMP_ANSWER_BYE_ERRORS);
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
	mt_commands_summary(sess->protocol == MMP_PROTO_IMAP ? &mmp_imap_command_table :
			    &mmp_command_table, &sess->commands, "cmd_", &cmds);
	mt_slog(MT_LOG_INFO, &sess->log,
		"session end client=%s listener=%s tls=%s user=%s shard=%s "
		"result=%s end=%s in=%llu out=%llu duration_ms=%llu%s",
		mt_sockaddr_str((struct sockaddr *)&sess->peer, peer, sizeof(peer)),
		mmp_listener_names[sess->kind], sess->tls ? "yes" : "no",
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

/* The admission main counted for this connection is over. */
static void release_admission(struct mmp_server *server, struct mmp_session *sess)
{
	if (sess->reject != NULL) {
		atomic_fetch_sub(&server->rejects, 1);
	} else {
		mmp_clients_release(server->clients,
				    (struct sockaddr *)&sess->peer);
		atomic_fetch_sub(&server->conns, 1);
	}
}

void mmp_session_close(struct mmp_session *sess, enum mt_conn_outcome outcome,
		       const char *end)
{
	if (sess->end == NULL)
		sess->end = end;
	mt_conn_close(&sess->conn, outcome, end);
}

/* ops->closed: off the worker's list already; the bufferevent (if the
 * relay did not take it) is freed right after. */
static void conn_closed(struct mt_conn *conn, const char *reason)
{
	struct mmp_session *sess = conn_session(conn);
	struct mmp_worker *worker = sess->worker;
	struct mmp_server *server = worker->server;

	if (sess->end == NULL)
		sess->end = reason;
	mmp_login_abort(sess);
	mmp_relay_free(&sess->relay);
	mt_timer_free(&sess->login_timer);
	log_end(sess);
	/* A refusal was counted when main refused it. */
	if (sess->reject == NULL)
		mmp_metrics_session_closed(sess->kind, mt_conn_outcome(conn));
	mmp_enter_state(sess, MMP_STATE_DEAD);
	atomic_fetch_add(&server->stats.bytes_in, sess->bytes_in);
	atomic_fetch_add(&server->stats.bytes_out, sess->bytes_out);
	release_admission(server, sess);
	if (worker->sessions.count == 0 && worker->draining)
		mt_loop_drain_done(worker->loop);
}

static void session_free(struct mmp_session *sess)
{
	mmp_imap_free(sess);
	free(sess->user);
	free(sess->login_user);
	mt_commands_free(&sess->commands);
	free(sess);
}

static void conn_free(struct mt_conn *conn)
{
	session_free(conn_session(conn));
}

/* Input before login */

void mmp_session_input(struct mmp_session *sess)
{
	if (sess->protocol == MMP_PROTO_IMAP) {
		mmp_imap_input(sess);
		return;
	}
	struct evbuffer *in = mt_conn_input(&sess->conn);
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
		mmp_session_finish_answer(sess, MT_OUTCOME_SHUTDOWN, "shutdown",
					  MMP_ANSWER_BYE_SHUTDOWN);
		return;
	}
	mmp_enter_state(sess, MMP_STATE_AUTHORIZATION);
	mmp_session_input(sess);
}

static void greet(struct mmp_session *sess)
{
	if (sess->reject != NULL) {
		mmp_session_finish(sess, MT_OUTCOME_REFUSED, "refused", "%s", sess->reject);
		return;
	}
	if (sess->protocol == MMP_PROTO_IMAP)
		mmp_imap_greet(sess);
	else
		mmp_reply(sess, "+OK mailtier POP3 proxy ready.");
	mmp_enter_state(sess, MMP_STATE_AUTHORIZATION);
}

void mmp_session_starttls(struct mmp_session *sess)
{
	/* Read nothing more in plaintext; switch to TLS once the reply is
	 * out (now, or from the write callback). */
	bufferevent_disable(sess->conn.bev, EV_READ);
	mmp_enter_state(sess, MMP_STATE_STLS);
	mmp_session_flushed_check(sess);
}

/* STLS / STARTTLS: the OK is written; switch the socket to TLS. RFC 2595
 * section 4, RFC 9051 6.2.1: anything the client sent after it in
 * plaintext is discarded, and the USER name given before is forgotten. */
static void start_tls(struct mmp_session *sess)
{
	struct mmp_server *server = sess->worker->server;
	size_t discarded = 0;
	const char *error = NULL;

	struct bufferevent *bev = mt_tls_bev_starttls(server->tls, &sess->conn.bev,
						      NULL, &discarded, &error);
	if (bev == NULL) {
		mt_slog(MT_LOG_WARNING, &sess->log, "STLS failed: %s", error);
		mmp_session_close(sess, MT_OUTCOME_ERROR, "tls_error");
		return;
	}
	if (discarded > 0)
		mt_slog(MT_LOG_INFO, &sess->log,
			"discarded %zu plaintext bytes sent after STLS", discarded);
	mt_conn_set_bev(&sess->conn, bev);
	sess->tls = true;
	MT_FREE(&sess->user);
	mmp_imap_tls_started(sess);
	mmp_enter_state(sess, MMP_STATE_TLS_HANDSHAKE);
}

/* The connection core's ops (the relay takes the bufferevent over) */

static void conn_input(struct mt_conn *conn)
{
	struct mmp_session *sess = conn_session(conn);
	/* In other states the input waits (bounded by the read watermark):
	 * pipelined commands after PASS go to the store after login. */
	if (sess->state == MMP_STATE_AUTHORIZATION || sess->state == MMP_STATE_SASL)
		mmp_session_input(sess);
}

/* The output has been written out (the core closes a CLOSING session). */
static void conn_output(struct mt_conn *conn)
{
	mmp_session_flushed_check(conn_session(conn));
}

static void conn_connected(struct mt_conn *conn)
{
	struct mmp_session *sess = conn_session(conn);
	if (sess->state != MMP_STATE_TLS_HANDSHAKE)
		return;
	char desc[128];
	SSL *ssl = bufferevent_openssl_get_ssl(conn->bev);
	mt_slog(MT_LOG_DEBUG, &sess->log, "tls=%s",
		ssl != NULL ? mt_tls_describe(ssl, desc, sizeof(desc)) : "?");
	mmp_enter_state(sess, MMP_STATE_AUTHORIZATION);
	/* Implicit TLS: the greeting (or refusal) comes now; after STLS or
	 * STARTTLS there is none (RFC 2595 section 4, RFC 9051 6.2.1). */
	if (mmp_listener_implicit_tls(sess->kind))
		greet(sess);
	else if (sess->worker->draining)
		/* STLS/STARTTLS while the drain began: now it can be told. */
		mmp_session_finish_answer(sess, MT_OUTCOME_SHUTDOWN, "shutdown",
					  MMP_ANSWER_BYE_SHUTDOWN);
	/* Input that came with the handshake's last flight. */
	if (sess->state == MMP_STATE_AUTHORIZATION)
		mmp_session_input(sess);
}

static void conn_eof(struct mt_conn *conn, bool error)
{
	struct mmp_session *sess = conn_session(conn);
	if (!error) {
		mmp_session_close(sess, MT_OUTCOME_CLIENT_CLOSED, "client_eof");
		return;
	}
	if (sess->tls) {
		char why[128];
		mt_slog(MT_LOG_DEBUG, &sess->log, "tls error: %s",
			mt_tls_bev_error(conn->bev, why, sizeof(why)));
		mmp_session_close(sess, MT_OUTCOME_ERROR,
				  sess->state == MMP_STATE_TLS_HANDSHAKE ?
				  "tls_failed" : "client_error");
		return;
	}
	mmp_session_close(sess, MT_OUTCOME_ERROR, "client_error");
}

/* A relayed session went quiet for idle_session_threshold, or moves
 * bytes again (or closes): the idle-sessions gauge. */
static void conn_quiet(struct mt_conn *conn, bool quiet)
{
	struct mmp_counters *st = &conn_session(conn)->worker->server->stats;
	if (quiet)
		atomic_fetch_add(&st->relays_idle, 1);
	else
		atomic_fetch_sub(&st->relays_idle, 1);
}

/* Waiting for its turn, on the directory, the penalty or the shard: not
 * idle. */
static bool conn_busy(struct mt_conn *conn)
{
	enum mmp_state state = conn_session(conn)->state;
	return state == MMP_STATE_LOGIN_WAIT || state == MMP_STATE_DIRECTORY ||
		state == MMP_STATE_AUTH_DELAY || state == MMP_STATE_BACKEND;
}

/* The login deadline (the session's lifetime until login), or silence:
 * before login both end it the same way; relaying, silence ends it
 * without a word (the store speaks to the client then). */
static void conn_timeout(struct mt_conn *conn)
{
	struct mmp_session *sess = conn_session(conn);
	switch (sess->state) {
	case MMP_STATE_RELAY:
		mmp_session_close(sess, MT_OUTCOME_TIMEOUT, "idle_timeout");
		break;
	case MMP_STATE_TLS_HANDSHAKE:
		mmp_session_close(sess, MT_OUTCOME_TIMEOUT, "login_timeout");
		break;
	case MMP_STATE_AUTH_DELAY:
		/* Not inactive: waiting on us. The login's answer, then why. */
		mmp_login_delay_cut(sess, MT_OUTCOME_TIMEOUT, "login_timeout",
				    MMP_ANSWER_BYE_LOGIN_TIME);
		break;
	default:
		mmp_session_finish_answer(sess, MT_OUTCOME_TIMEOUT, "login_timeout",
					  MMP_ANSWER_BYE_INACTIVITY);
		break;
	}
}

static const struct mt_conn_ops conn_ops = {
	.input = conn_input, .output = conn_output, .connected = conn_connected,
	.eof = conn_eof, .busy = conn_busy, .idle_timeout = conn_timeout,
	.session_timeout = conn_timeout, .quiet = conn_quiet, .closed = conn_closed,
	.free = conn_free,
};

void mmp_session_new(struct mmp_worker *worker, int fd,
		     const struct sockaddr *peer, socklen_t peerlen,
		     enum mmp_listener_kind kind, const char *reject)
{
	struct mmp_server *server = worker->server;
	struct mmp_session *sess = mt_xcalloc(1, sizeof(*sess));
	struct bufferevent *bev;
	const char *error = NULL;
	int one = 1;

	sess->worker = worker;
	sess->log.session_id = mt_session_id_new();
	sess->protocol = mmp_listener_protocol(kind);
	mt_commands_init(&sess->commands, sess->protocol == MMP_PROTO_IMAP ?
			 &mmp_imap_command_table : &mmp_command_table);
	if (peerlen > sizeof(sess->peer))
		peerlen = sizeof(sess->peer);
	memcpy(&sess->peer, peer, peerlen);
	sess->kind = kind;
	sess->reject = reject;
	sess->start_ms = mt_clock_coarse_ms();
	sess->state = MMP_STATE_NEW;
	if (sess->protocol == MMP_PROTO_IMAP)
		mmp_imap_init(sess);
	else
		mmp_commands_init(sess);
	/* Request/response in small lines: never wait for Nagle. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	char addr[MT_SOCKADDR_STRLEN];
	mt_slog(MT_LOG_DEBUG, &sess->log, "connect client=%s listener=%s",
		mt_sockaddr_str(peer, addr, sizeof(addr)), mmp_listener_names[kind]);
	if (mmp_listener_implicit_tls(kind)) {
		bev = mt_tls_bev_accept(server->tls, worker->base, fd, &error);
		sess->tls = true;
	} else {
		bev = bufferevent_socket_new(worker->base, fd, BEV_OPT_CLOSE_ON_FREE);
		if (bev == NULL) {
			close(fd);
			error = "bufferevent_socket_new failed";
		}
	}
	if (bev == NULL) {
		mt_slog(MT_LOG_ERROR, &sess->log, "cannot start session: %s", error);
		if (reject == NULL)
			mmp_metrics_session_closed(kind, MT_OUTCOME_ERROR);
		release_admission(server, sess);
		session_free(sess);
		return;
	}
	/* Before login the client has login_timeout in all (the lifetime)
	 * and can make us hold MMP_INPUT_MAX bytes of input. */
	mt_conn_start(&sess->conn, &worker->sessions, worker->loop, bev, &conn_ops,
		      server->set->login_timeout, MMP_INPUT_MAX, 0);
	mt_conn_set_lifetime(&sess->conn, server->set->login_timeout);
	if (mmp_listener_implicit_tls(kind))
		mmp_enter_state(sess, MMP_STATE_TLS_HANDSHAKE);
	else
		greet(sess);
}

/* Drain and exit */

static void drain_session(struct mt_conn *conn)
{
	struct mmp_session *sess = conn_session(conn);
	switch (sess->state) {
	case MMP_STATE_AUTHORIZATION:
	case MMP_STATE_SASL:
	case MMP_STATE_TLS_HANDSHAKE:
	case MMP_STATE_LOGIN_WAIT:
		mmp_session_finish_answer(sess, MT_OUTCOME_SHUTDOWN, "shutdown",
					  MMP_ANSWER_BYE_SHUTDOWN);
		break;
	case MMP_STATE_AUTH_DELAY:
		/* A failure's delay may outlast drain_timeout (up to 60 s):
		 * answer it now rather than be closed without a word. */
		mmp_login_delay_cut(sess, MT_OUTCOME_SHUTDOWN, "shutdown",
				    MMP_ANSWER_BYE_SHUTDOWN);
		break;
	default:
		/* Asking the directory or the shard: answered in
		 * mmp_session_resume() when that step returns (within the
		 * directory's timeout or backend_connect_timeout); after STLS:
		 * once TLS is up (conn_connected); relaying: runs to its end or
		 * the drain bound. */
		break;
	}
}

void mmp_sessions_drain(struct mmp_worker *worker)
{
	worker->draining = true;
	mt_conn_list_each(&worker->sessions, drain_session);
	if (worker->sessions.count == 0)
		mt_loop_drain_done(worker->loop);
}

void mmp_sessions_free_all(struct mmp_worker *worker)
{
	/* The frees are posted to the worker's loop, which runs (or, freed,
	 * discards) them after this. */
	mt_conn_list_close_all(&worker->sessions, "shutdown");
}
