/* pop3-session.c — one POP3 connection of mailtier-popstore: accepting it
 * (plain on pop3_listen, implicit TLS on pop3s_listen), STLS, reading
 * command lines, replies, flow control, idle timeout, drain and the
 * deferred free. Commands are in pop3-commands.c and pop3-auth.c,
 * streamed replies in pop3-fetch.c.
 *
 * Trust boundary: every byte is the client's. Lines are bounded (255
 * octets, RFC 2449 4), a NUL or bare CR in a line is an error, pipelined
 * input is read ahead at most POPSTORE_INPUT_HIGH octets, and a client
 * that does not read its replies stops being read (output over
 * POPSTORE_OUTPUT_HIGH pauses command processing and message streaming).
 * After STLS nothing received before the TLS handshake is used (RFC 2595
 * 4; lib/tls.h mt_tls_bev_starttls()), and the USER name given before it
 * is forgotten.
 * The socket, idle timer, close-after-flush and deferred free are the
 * connection core's (lib-mail/conn.h); here are its ops for POP3.
 * RFC 1939 3 (sessions, "+OK"/"-ERR", autologout timer), 4 (greeting),
 * RFC 2449 (CAPA), RFC 2595 4 (STLS), RFC 8314 (implicit TLS on 995). */
#include "pop3-session.h"
#include "pop3-parse.h"
#include "alloc.h"
#include "dirsvc.h"
#include "store/store.h"
#include "tls.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

const char *const pop3_state_names[POP3_STATE_COUNT] = {
	[POP3_STATE_AUTHORIZATION] = "authorization",
	[POP3_STATE_SASL] = "sasl",
	[POP3_STATE_LOGIN] = "login",
	[POP3_STATE_STLS] = "stls",
	[POP3_STATE_TRANSACTION] = "transaction",
	[POP3_STATE_UPDATE] = "update",
	[POP3_STATE_CLOSING] = "closing",
};

static void pop3_process(struct pop3_session *s);
static void pop3_close(struct pop3_session *s, enum mt_conn_outcome outcome,
		       const char *reason);

void pop3_enter_state(struct pop3_session *s, enum pop3_state state)
{
	if (s->state == state)
		return;
	mt_slog(MT_LOG_DEBUG, &s->log, "pop3 state %s -> %s",
		pop3_state_names[s->state], pop3_state_names[state]);
	s->state = state;
}

struct evbuffer *pop3_output(struct pop3_session *s)
{
	return mt_conn_output(&s->conn);
}

static void pop3_vreply(struct pop3_session *s, const char *status,
			const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
static void pop3_vreply(struct pop3_session *s, const char *status,
			const char *fmt, va_list ap)
{
	char text[512];
	vsnprintf(text, sizeof(text), fmt, ap);
	if (text[0] == '\0')
		mt_line_write(pop3_output(s), "%s", status);
	else
		mt_line_write(pop3_output(s), "%s %s", status, text);
	mt_commands_reply(&s->commands, status[0] == '+');
}

void pop3_ok(struct pop3_session *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pop3_vreply(s, "+OK", fmt, ap);
	va_end(ap);
}

void pop3_err(struct pop3_session *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pop3_vreply(s, "-ERR", fmt, ap);
	va_end(ap);
}

void pop3_close_after(struct pop3_session *s, enum mt_conn_outcome outcome,
		      const char *reason)
{
	if (s->state == POP3_STATE_CLOSING)
		return;
	pop3_enter_state(s, POP3_STATE_CLOSING);
	mt_conn_close_after(&s->conn, outcome, reason);
}

/* One error more: too many end the session. */
static void count_error(struct pop3_session *s)
{
	if (++s->errors >= s->ps->set->max_errors) {
		mt_slog(MT_LOG_WARNING, &s->log, "pop3 too many errors=%u: disconnecting",
			s->errors);
		pop3_err(s, "Too many errors, closing connection");
		pop3_close_after(s, MT_OUTCOME_LIMIT, "errors");
	}
}

void pop3_error(struct pop3_session *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pop3_vreply(s, "-ERR", fmt, ap);
	va_end(ap);
	count_error(s);
}

void pop3_error_line(struct pop3_session *s, const char *line)
{
	mt_line_write(pop3_output(s), "%s", line);
	count_error(s);
}

bool pop3_plaintext_ok(const struct pop3_session *s)
{
	return s->tls || s->from_proxy || s->ps->set->allow_plaintext_auth;
}

void pop3_resume(struct pop3_session *s)
{
	pop3_process(s);
}

void pop3_starttls_pending(struct pop3_session *s)
{
	pop3_enter_state(s, POP3_STATE_STLS);
	/* Nothing more is read in plaintext; what the client pipelined after
	 * STLS is dropped with the plain bufferevent. */
	bufferevent_disable(s->conn.bev, EV_READ);
}

/* "+OK Begin TLS" is written: wrap the socket in TLS. */
static void pop3_starttls_now(struct pop3_session *s)
{
	size_t discarded = 0;
	const char *error;
	struct bufferevent *bev = mt_tls_bev_starttls(s->ps->tls, &s->conn.bev, NULL,
						      &discarded, &error);
	if (bev == NULL) {
		mt_slog(MT_LOG_WARNING, &s->log, "pop3 stls failed: %s", error);
		pop3_close(s, MT_OUTCOME_ERROR, "tls-failed");
		return;
	}
	mt_conn_set_bev(&s->conn, bev);
	s->tls = true;
	mt_line_reader_init(&s->reader, POP3_LINE_MAX, MT_LINE_ACCEPT_LF);
	/* RFC 2595 4: the client must forget what it knew; so do we. */
	MT_FREE(&s->user);
	pop3_enter_state(s, POP3_STATE_AUTHORIZATION);
	mt_slog(MT_LOG_INFO, &s->log, "pop3 stls discarded=%zu", discarded);
}

/* Run what the input holds until it is used up or a command waits. */
static void pop3_process(struct pop3_session *s)
{
	struct evbuffer *in, *out;
	const char *error;

	for (;;) {
		if (mt_conn_is_closed(&s->conn) || s->fetch != NULL)
			return;
		if (s->state != POP3_STATE_AUTHORIZATION &&
		    s->state != POP3_STATE_TRANSACTION && s->state != POP3_STATE_SASL)
			return;
		in = mt_conn_input(&s->conn);
		out = mt_conn_output(&s->conn);
		if (evbuffer_get_length(out) > POPSTORE_OUTPUT_HIGH)
			return;
		if (s->drain && s->state != POP3_STATE_TRANSACTION) {
			pop3_err(s, "[SYS/TEMP] Server shutting down");
			pop3_close_after(s, MT_OUTCOME_SHUTDOWN, "shutdown");
			return;
		}
		enum mt_line_status st = mt_line_read(&s->reader, in, &s->line, &error);
		switch (st) {
		case MT_LINE_NEED_MORE:
			if (s->input_eof)
				pop3_close(s, MT_OUTCOME_CLIENT_CLOSED, "eof");
			return;
		case MT_LINE_OK:
			if (s->state == POP3_STATE_SASL)
				pop3_sasl_response(s, s->line.data);
			else
				pop3_command_dispatch(s, s->line.data);
			break;
		case MT_LINE_TOO_LONG:
			if (s->state == POP3_STATE_SASL)
				pop3_enter_state(s, POP3_STATE_AUTHORIZATION);
			mt_line_reader_init(&s->reader, POP3_LINE_MAX, MT_LINE_ACCEPT_LF);
			pop3_error(s, "Line too long (at most %u octets)", POP3_LINE_MAX);
			break;
		case MT_LINE_BARE_LF:
		case MT_LINE_BARE_CR:
			pop3_error(s, "Bare CR in command line");
			break;
		case MT_LINE_NUL:
			pop3_error(s, "NUL octet in command line");
			break;
		}
		/* Lines may hold passwords: do not leave them in memory. */
		if (s->line.data != NULL)
			explicit_bzero(s->line.data, s->line.cap);
		s->line.len = 0;
	}
}

/* The connection core's ops (lib-mail/conn.h) */

static struct pop3_session *conn_session(struct mt_conn *conn)
{
	return MT_CONN_OWNER(conn, struct pop3_session, conn);
}

static void conn_input(struct mt_conn *conn)
{
	pop3_process(conn_session(conn));
}

static void conn_output(struct mt_conn *conn)
{
	struct pop3_session *s = conn_session(conn);
	if (s->state == POP3_STATE_STLS) {
		if (mt_conn_output_pending(conn) == 0)
			pop3_starttls_now(s);
		return;
	}
	if (s->fetch != NULL)
		pop3_fetch_continue(s);
	else
		pop3_process(s);
}

static void conn_connected(struct mt_conn *conn)
{
	popstore_log_tls_up(conn->bev, &conn_session(conn)->log, "pop3");
}

static void conn_eof(struct mt_conn *conn, bool error)
{
	struct pop3_session *s = conn_session(conn);
	if (!error) {
		/* Run what was pipelined before the close; a command in flight
		 * (a login, the deletions of QUIT) finishes first. */
		s->input_eof = true;
		pop3_process(s);
		return;
	}
	if (s->tls)
		popstore_log_tls_error(conn->bev, &s->log, "pop3");
	pop3_close(s, MT_OUTCOME_ERROR, "error");
}

static bool conn_busy(struct mt_conn *conn)
{
	struct pop3_session *s = conn_session(conn);
	return s->state == POP3_STATE_LOGIN ||
		s->state == POP3_STATE_UPDATE || pop3_fetch_busy(s);
}

/* A timer ran out: the -ERR (the core closes once it is written), or at
 * once in the middle of a TLS handshake. */
static void timed_out(struct mt_conn *conn, const char *reason, const char *text)
{
	struct pop3_session *s = conn_session(conn);
	if (s->state == POP3_STATE_STLS) {
		pop3_close(s, MT_OUTCOME_TIMEOUT, reason);
		return;
	}
	pop3_err(s, "%s", text);
	pop3_enter_state(s, POP3_STATE_CLOSING);
}

/* RFC 1939 3: the autologout timer ends the session without UPDATE. */
static void conn_idle_timeout(struct mt_conn *conn)
{
	timed_out(conn, "idle-timeout", "Disconnected for inactivity");
}

/* login_timeout ran out before a login. */
static void conn_login_timeout(struct mt_conn *conn)
{
	timed_out(conn, "login-timeout", "Login timed out");
}

/* Life cycle */

static void conn_free(struct mt_conn *conn)
{
	struct pop3_session *s = conn_session(conn);
	mt_buf_free(&s->line);
	free(s->user);
	free(s->login);
	mt_commands_free(&s->commands);
	free(s);
}

/* The summary line; cancel what is in flight (the core frees the socket
 * and, after the callback, the session). */
static void conn_closed(struct mt_conn *conn, const char *reason)
{
	struct pop3_session *s = conn_session(conn);
	struct mt_buf counts = MT_BUF_INIT;
	mt_commands_summary(&pop3_command_table, &s->commands, "cmd_", &counts);
	popstore_metrics_session_end(s->ps, POPSTORE_POP3, mt_conn_outcome(conn),
				     &s->commands);
	mt_slog(MT_LOG_INFO, &s->log,
		"pop3 disconnect peer=%s user=%s reason=%s%s retrieved=%llu retrieved_bytes=%llu errors=%u",
		s->peer, s->login != NULL ? s->login : "-", reason,
		mt_buf_cstr(&counts), (unsigned long long)s->drop.retrieved,
		(unsigned long long)s->drop.retrieved_bytes, s->errors);
	mt_buf_free(&counts);
	/* A login in flight, or a failed login's answer pending: neither may
	 * fire on a freed session (the client closed meanwhile). */
	popstore_login_free(&s->verify);
	if (s->store_req != NULL) {
		/* An expunge in flight may still commit; its client got no
		 * +OK, which RFC 1939 allows (the deletion was not promised). */
		mt_store_req_cancel(s->store_req);
		s->store_req = NULL;
	}
	pop3_fetch_free(s);
	pop3_maildrop_reset(&s->drop);
	pop3_enter_state(s, POP3_STATE_CLOSING);
	popstore_address_close(s->ps, s->peer_ip, s->from_proxy);
	popstore_session_remove(s->ps);
}

static const struct mt_conn_ops conn_ops = {
	.input = conn_input, .output = conn_output, .connected = conn_connected,
	.eof = conn_eof, .busy = conn_busy, .idle_timeout = conn_idle_timeout,
	.session_timeout = conn_login_timeout, .closed = conn_closed, .free = conn_free,
};

static void pop3_close(struct pop3_session *s, enum mt_conn_outcome outcome,
		       const char *reason)
{
	mt_conn_close(&s->conn, outcome, reason);
}

void pop3_session_accept(struct popstore *ps, int fd, const struct sockaddr *peer,
			 bool implicit_tls)
{
	char addr[MT_SOCKADDR_STRLEN];
	struct mt_logctx log = { .session_id = mt_session_id_new() };

	static const char busy[] = "-ERR [SYS/TEMP] Too many sessions, try again later\r\n";
	struct bufferevent *bev = popstore_accept(ps, fd, peer, implicit_tls, POPSTORE_POP3,
						  busy, &log, addr);
	if (bev == NULL)
		return;
	ps->pop3_connections++;

	struct pop3_session *s = mt_xcalloc(1, sizeof(*s));
	s->ps = ps;
	s->log = log;
	memcpy(s->peer, addr, sizeof(s->peer));
	(void)mt_authfail_key(peer, s->peer_ip, sizeof(s->peer_ip));
	s->from_proxy = popstore_is_proxy(ps, peer);
	s->tls = s->implicit_tls = implicit_tls;
	s->state = POP3_STATE_AUTHORIZATION;
	mt_commands_init(&s->commands, &pop3_command_table);
	pop3_login_init(s);
	mt_line_reader_init(&s->reader, POP3_LINE_MAX, MT_LINE_ACCEPT_LF);
	/* Until login, login_timeout in all (pop3-auth.c: idle_timeout after). */
	mt_conn_start(&s->conn, &ps->pop3_sessions, ps->loop, bev, &conn_ops,
		      ps->set->login_timeout, POPSTORE_INPUT_HIGH,
		      POP3_OUTPUT_LOW);
	mt_conn_set_lifetime(&s->conn, ps->set->login_timeout);

	mt_slog(MT_LOG_INFO, &s->log, "pop3 connect peer=%s%s%s", addr,
		implicit_tls ? " tls=implicit" : "", s->from_proxy ? " proxy=yes" : "");
	/* RFC 1939 4: the greeting. No APOP timestamp: APOP is not offered. */
	pop3_ok(s, "%s ready", POPSTORE_NAME);
	if (mt_loop_is_draining(ps->loop)) {
		s->drain = true;
		pop3_process(s);
	}
}

static void session_drain(struct mt_conn *conn)
{
	struct pop3_session *s = conn_session(conn);
	s->drain = true;
	pop3_process(s);
}

void pop3_sessions_drain(struct popstore *ps)
{
	mt_conn_list_each(&ps->pop3_sessions, session_drain);
}

void pop3_sessions_free_all(struct popstore *ps)
{
	mt_conn_list_close_all(&ps->pop3_sessions, "shutdown");
	mt_authfail_free(&ps->auth_failures);
	popstore_limits_free(ps);
}
