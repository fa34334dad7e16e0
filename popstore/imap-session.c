/* imap-session.c — one IMAP connection of mailtier-popstore: accepting it
 * (plain on imap_listen, implicit TLS on imaps_listen), STARTTLS, reading
 * commands and their literals with lib-mail's imap-parse (the "+"
 * continuation for synchronising literals), AUTHENTICATE's response line,
 * replies, flow control, the idle timeout, drain and the deferred free.
 * Commands are in imap-commands.c, imap-mailbox.c and imap-auth.c.
 *
 * Trust boundary: every byte is the client's. Before login a command is
 * bounded by lib-mail's mt_imap_login_limits (64 KiB, literals of 4 KiB:
 * the MMP's bound too); after it by IMAP_LINE_MAX a line, IMAP_LITERAL_MAX
 * a literal (an APPEND's message: max_message_size), IMAP_COMMAND_MAX a
 * command, IMAP_DEPTH_MAX nesting, IMAP_ARGS_MAX arguments; over them a
 * tagged BAD [TOOBIG] where the client can still be followed, a BYE where
 * not. An APPEND's message is not held: it streams into the store as it
 * arrives (process_stream; reading pauses while two chunk writes are in
 * flight), as LMTP's DATA does. A command that waits on the store keeps
 * its arguments in the parser until it ends (release_command), so a
 * SEARCH's criteria or a FETCH's sections never outlive the buffers they
 * point into;
 * pipelined input is read ahead at most POPSTORE_INPUT_HIGH octets, and a
 * client that does not read its replies stops being read (output over
 * POPSTORE_OUTPUT_HIGH pauses command processing). After STARTTLS nothing
 * received before the TLS handshake is used (RFC 9051 6.2.1, lib/tls.h
 * mt_tls_bev_starttls()). A parsed command's buffers are wiped after a
 * command of the not-authenticated state (LOGIN's password is in them).
 * The socket, idle timer, close-after-flush and deferred free are the
 * connection core's (lib-mail/conn.h); here are its ops for IMAP.
 * RFC 9051 2.2 (commands, continuation requests, responses), 3 (states),
 * 5.4 (the autologout timer: at least 30 minutes), 7.1.4 (the greeting's
 * [CAPABILITY]), 7.1.5 (BYE); RFC 7888 (LITERAL+); RFC 8314. */
#include "imap-session.h"
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

const char *const imap_state_names[IMAP_STATE_COUNT] = {
	[IMAP_STATE_NOT_AUTH] = "not-authenticated",
	[IMAP_STATE_SASL] = "sasl",
	[IMAP_STATE_LOGIN] = "login",
	[IMAP_STATE_STARTTLS] = "starttls",
	[IMAP_STATE_AUTH] = "authenticated",
	[IMAP_STATE_SELECTED] = "selected",
	[IMAP_STATE_WAIT] = "wait",
	[IMAP_STATE_IDLE] = "idle",
	[IMAP_STATE_LOGOUT] = "logout",
};

static void imap_process(struct imap_session *s);
static void release_command(struct imap_session *s);
static void imap_close(struct imap_session *s, enum mt_conn_outcome outcome,
		       const char *reason);

void imap_enter_state(struct imap_session *s, enum imap_state state)
{
	if (s->state == state)
		return;
	mt_slog(MT_LOG_DEBUG, &s->log, "imap state %s -> %s",
		imap_state_names[s->state], imap_state_names[state]);
	s->state = state;
}

struct evbuffer *imap_output(struct imap_session *s)
{
	return mt_conn_output(&s->conn);
}

void imap_line(struct imap_session *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	evbuffer_add_vprintf(imap_output(s), fmt, ap);
	va_end(ap);
	evbuffer_add(imap_output(s), "\r\n", 2);
}

static void vtagged(struct imap_session *s, const char *tag, const char *fmt,
		    va_list ap) __attribute__((format(printf, 3, 0)));
static void vtagged(struct imap_session *s, const char *tag, const char *fmt,
		    va_list ap)
{
	struct evbuffer *out = imap_output(s);
	evbuffer_add_printf(out, "%s ", tag);
	evbuffer_add_vprintf(out, fmt, ap);
	evbuffer_add(out, "\r\n", 2);
	mt_commands_reply_class(&s->commands, mt_reply_class_imap(fmt, strlen(fmt)));
}

void imap_tagged(struct imap_session *s, const char *tag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vtagged(s, tag, fmt, ap);
	va_end(ap);
}

void imap_close_after(struct imap_session *s, enum mt_conn_outcome outcome,
		      const char *reason)
{
	if (s->state == IMAP_STATE_LOGOUT)
		return;
	imap_enter_state(s, IMAP_STATE_LOGOUT);
	mt_conn_close_after(&s->conn, outcome, reason);
}

/* One error more: too many end the session (RFC 9051 7.1.5's BYE). */
static void count_error(struct imap_session *s)
{
	if (++s->errors >= s->ps->set->max_errors) {
		mt_slog(MT_LOG_WARNING, &s->log, "imap too many errors=%u: disconnecting",
			s->errors);
		imap_line(s, "* BYE Too many errors, closing connection");
		imap_close_after(s, MT_OUTCOME_LIMIT, "errors");
	}
}

void imap_error(struct imap_session *s, const char *tag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vtagged(s, tag, fmt, ap);
	va_end(ap);
	/* A NO is the mailbox's answer (RFC 9051 7.1.2): a sync tool that
	 * creates its folders every run, an IDLE session that meets a
	 * deleted folder get them in ordinary use. Only a BAD (a command
	 * the server could not take) counts. */
	if (mt_reply_class_imap(fmt, strlen(fmt)) == MT_REPLY_BAD)
		count_error(s);
}

void imap_login_failed(struct imap_session *s, const char *tag)
{
	imap_tagged(s, tag, "NO [AUTHENTICATIONFAILED] Authentication failed.");
	count_error(s);
}

void imap_error_line(struct imap_session *s, const char *line)
{
	imap_line(s, "%s", line);
	const char *space = strchr(line, ' ');
	mt_commands_reply_class(&s->commands, space != NULL ?
				mt_reply_class_imap(space + 1, strlen(space + 1)) : MT_REPLY_BAD);
	count_error(s);
}

void imap_authenticated(struct imap_session *s)
{
	/* Only an APPEND's message may be as large as a delivered one; any
	 * other literal (a SEARCH string, a mailbox name) is held whole in
	 * the parser, so it is bounded like a command. */
	const struct mt_imap_limits limits = {
		.line_max = IMAP_LINE_MAX, .literal_max = IMAP_LITERAL_MAX,
		.append_literal_max = s->ps->set->max_message_size,
		.stream_literal_min = 1,	/* every APPEND's message streams */
		.command_max = IMAP_COMMAND_MAX + s->ps->set->max_message_size,
		.depth_max = IMAP_DEPTH_MAX, .args_max = IMAP_ARGS_MAX,
		.literal_plus = true,
	};
	mt_imap_parser_set_limits(&s->parser, &limits);
	/* RFC 9051 5.4: the autologout of a logged-in session. */
	mt_conn_set_lifetime(&s->conn, 0);
	mt_conn_set_idle(&s->conn, s->ps->set->imap_idle_timeout);
}

bool imap_plaintext_ok(const struct imap_session *s)
{
	return s->tls || s->from_proxy || s->ps->set->allow_plaintext_auth;
}

void imap_wait(struct imap_session *s)
{
	if (s->state != IMAP_STATE_WAIT)
		s->resume_state = s->state;
	imap_enter_state(s, IMAP_STATE_WAIT);
}

void imap_resume_in(struct imap_session *s, enum imap_state state)
{
	if (s->dispatching) {
		/* Done before its dispatch returned: process_command goes on
		 * with what is pipelined (running it from here would feed a
		 * parser still holding this command). */
		if (s->state != IMAP_STATE_LOGOUT && !mt_conn_is_closed(&s->conn))
			imap_enter_state(s, state);
		return;
	}
	release_command(s);
	if (s->state == IMAP_STATE_LOGOUT || mt_conn_is_closed(&s->conn))
		return;
	imap_enter_state(s, state);
	imap_process(s);
}

void imap_resume(struct imap_session *s)
{
	imap_resume_in(s, s->state == IMAP_STATE_WAIT ? s->resume_state : s->state);
}

void imap_store_fatal(struct imap_session *s, const char *tag, const char *error)
{
	imap_tagged(s, tag, "NO [UNAVAILABLE] Mailbox store failed");
	imap_line(s, "* BYE Server restarting");
	imap_close_after(s, MT_OUTCOME_ERROR, "store-failed");
	popstore_store_fatal(s->ps, error);
}

struct imap_session *imap_store_call_arm(struct imap_session *s, mt_store_cb_t *cb,
					 void *op, void (*op_free)(void *op))
{
	s->store_call = (struct imap_store_call){ .cb = cb, .op = op, .op_free = op_free };
	return s;
}

void imap_store_call_back(struct mt_store_req *req, void *session)
{
	struct imap_session *s = session;
	struct imap_store_call call = s->store_call;
	s->store_call = (struct imap_store_call){ 0 };
	call.cb(req, call.op);
}

/* The session closes with a request in flight: its command's state. */
static void store_call_drop(struct imap_session *s)
{
	struct imap_store_call call = s->store_call;
	s->store_call = (struct imap_store_call){ 0 };
	if (call.op != NULL && call.op_free != NULL)
		call.op_free(call.op);
}

void imap_starttls_pending(struct imap_session *s)
{
	imap_enter_state(s, IMAP_STATE_STARTTLS);
	/* Nothing more is read in plaintext; what the client pipelined after
	 * STARTTLS is dropped with the plain bufferevent. */
	bufferevent_disable(s->conn.bev, EV_READ);
}

/* The tagged OK is written: wrap the socket in TLS. */
static void imap_starttls_now(struct imap_session *s)
{
	size_t discarded = 0;
	const char *error;
	struct bufferevent *bev = mt_tls_bev_starttls(s->ps->tls, &s->conn.bev, NULL,
						      &discarded, &error);
	if (bev == NULL) {
		mt_slog(MT_LOG_WARNING, &s->log, "imap starttls failed: %s", error);
		imap_close(s, MT_OUTCOME_ERROR, "tls-failed");
		return;
	}
	mt_conn_set_bev(&s->conn, bev);
	s->tls = true;
	/* RFC 9051 6.2.1: the client discards what it knew; a half-read
	 * command is forgotten too. */
	mt_imap_parser_reset(&s->parser);
	imap_enter_state(s, IMAP_STATE_NOT_AUTH);
	mt_slog(MT_LOG_INFO, &s->log, "imap starttls discarded=%zu", discarded);
}

static void wipe_parser(struct imap_session *s)
{
	struct mt_imap_parser *p = &s->parser;
	if (p->input.data != NULL)
		explicit_bzero(p->input.data, p->input.cap);
	if (p->strings.data != NULL)
		explicit_bzero(p->strings.data, p->strings.cap);
}

/* AUTHENTICATE's response line, or IDLE's DONE. */
static bool process_raw_line(struct imap_session *s, struct evbuffer *in)
{
	const bool idle = s->state == IMAP_STATE_IDLE;
	const char *error;
	enum mt_line_status st = mt_line_read(&s->reader, in, &s->line, &error);
	switch (st) {
	case MT_LINE_NEED_MORE:
		if (s->input_eof)
			imap_close(s, MT_OUTCOME_CLIENT_CLOSED, "eof");
		return false;
	case MT_LINE_OK:
		if (idle)
			imap_idle_line(s, s->line.data);
		else
			mt_imap_login_sasl_response(&s->login_phase, s->line.data);
		break;
	default:
		/* Too long, a bare CR or a NUL: the exchange is over. */
		if (idle)
			imap_idle_line(s, "");
		else
			mt_imap_login_sasl_response(&s->login_phase, "*");
		break;
	}
	if (s->line.data != NULL)
		explicit_bzero(s->line.data, s->line.cap);
	s->line.len = 0;
	return true;
}

/* A store chunk write of the APPEND's message is done: read on if the
 * message waited for it. */
static void append_written(struct mt_store_body *body, void *context)
{
	struct imap_session *s = context;
	(void)body;
	if (mt_imap_parser_stream_left(&s->parser) > 0)
		imap_process(s);
}

struct mt_store_body *imap_append_body_take(struct imap_session *s)
{
	struct mt_store_body *body = s->append_body;
	s->append_body = NULL;
	return body;
}

static void append_abort(struct imap_session *s)
{
	if (s->append_body != NULL)
		mt_store_body_abort(&s->append_body);
	s->append_discard = false;
}

/* An APPEND's message (MT_IMAP_PARSE_STREAM) goes into the store as it
 * arrives, never whole in memory: reading stops while two chunk writes
 * are in flight (append_written resumes), so a session holds about two
 * chunks whatever the message's size (as LMTP's DATA). False when
 * nothing more can be done now. */
static bool process_stream(struct imap_session *s, struct evbuffer *in)
{
	struct mt_imap_parser *p = &s->parser;
	while (mt_imap_parser_stream_left(p) > 0) {
		if (s->append_body != NULL && !s->append_discard &&
		    mt_store_body_writes(s->append_body) >= 2)
			return false;
		size_t len = evbuffer_get_contiguous_space(in);
		if (len == 0) {
			if (s->input_eof)
				imap_close(s, MT_OUTCOME_CLIENT_CLOSED, "eof");
			return false;
		}
		const unsigned char *data = evbuffer_pullup(in, (ssize_t)len);
		size_t n = mt_imap_parser_stream(p, data, len);
		if (!s->append_discard)
			mt_store_body_append(s->append_body, data, n);
		evbuffer_drain(in, n);
	}
	return true;
}

/* A streamed literal begins: its body, and the continuation it asks for. */
static void stream_begin(struct imap_session *s)
{
	if (s->append_body == NULL)
		s->append_body = mt_store_body_begin(s->ps->port, append_written, s);
	else
		s->append_discard = true;
	if (s->parser.stream_sync) {
		imap_line(s, "+ Ready for literal data");
		mt_conn_quickack(&s->conn);
	}
}

/* Feed the parser what the input holds; false when nothing more can be
 * done now. */
static bool process_command(struct imap_session *s, struct evbuffer *in)
{
	if (mt_imap_parser_stream_left(&s->parser) > 0)
		return process_stream(s, in);
	size_t len = evbuffer_get_contiguous_space(in);
	if (len == 0) {
		if (s->input_eof)
			imap_close(s, MT_OUTCOME_CLIENT_CLOSED, "eof");
		return false;
	}
	const unsigned char *data = evbuffer_pullup(in, (ssize_t)len);
	size_t used = 0;
	enum mt_imap_parse st = mt_imap_parser_feed(&s->parser, data, len, &used);
	evbuffer_drain(in, used);
	struct mt_imap_parser *p = &s->parser;
	const bool not_auth = s->state == IMAP_STATE_NOT_AUTH;
	switch (st) {
	case MT_IMAP_PARSE_MORE:
		return true;	/* the next contiguous piece, if any */
	case MT_IMAP_PARSE_LITERAL:
		imap_line(s, "+ Ready for literal data");
		/* The literal's octets are ACKed at once: a client with Nagle
		 * on sends its last segment only then (#37 item 19). */
		mt_conn_quickack(&s->conn);
		return true;
	case MT_IMAP_PARSE_STREAM:
		stream_begin(s);
		return true;
	case MT_IMAP_PARSE_DONE:
		s->dispatching = true;
		imap_command_dispatch(s, &p->command);
		s->dispatching = false;
		if (s->state == IMAP_STATE_WAIT || s->state == IMAP_STATE_LOGIN) {
			/* The command goes on without us: its arguments stay
			 * in the parser until it ends (imap_resume_in). */
			s->command_held = true;
			s->command_not_auth = not_auth;
			append_abort(s);
			return true;
		}
		break;
	case MT_IMAP_PARSE_ERROR:
		mt_commands_unknown(&s->commands);
		if (p->tag[0] != '\0')
			imap_error(s, p->tag, "BAD %s%s%s%s", p->error_code[0] != '\0' ? "[" : "",
				   p->error_code, p->error_code[0] != '\0' ? "] " : "",
				   p->error);
		else {
			imap_line(s, "* BAD %s", p->error);
			mt_commands_reply_class(&s->commands, MT_REPLY_BAD);
			count_error(s);
		}
		break;
	case MT_IMAP_PARSE_FATAL:
		mt_slog(MT_LOG_INFO, &s->log, "imap unfollowable input: %s", p->error);
		imap_line(s, "* BYE %s", p->error);
		imap_close_after(s, MT_OUTCOME_LIMIT, "protocol-error");
		break;
	}
	/* A streamed message its APPEND did not take (refused, or the
	 * command was not one). */
	append_abort(s);
	if (not_auth)
		wipe_parser(s);
	mt_imap_parser_reset(p);
	return true;
}

/* A command that waited on the store or the directory has ended: its
 * arguments (the parser's strings, which a SEARCH's criteria, a FETCH's
 * sections and a LOGIN's password point into) may go now. */
static void release_command(struct imap_session *s)
{
	if (!s->command_held)
		return;
	s->command_held = false;
	if (s->command_not_auth)
		wipe_parser(s);
	mt_imap_parser_reset(&s->parser);
}

/* Run what the input holds until it is used up or a command waits. */
static void imap_process(struct imap_session *s)
{
	for (;;) {
		if (mt_conn_is_closed(&s->conn))
			return;
		if (s->state != IMAP_STATE_NOT_AUTH && s->state != IMAP_STATE_AUTH &&
		    s->state != IMAP_STATE_SELECTED && s->state != IMAP_STATE_SASL &&
		    s->state != IMAP_STATE_IDLE)
			return;
		if (s->state == IMAP_STATE_IDLE && s->refresh_req != NULL)
			return;		/* its updates first, then DONE */
		struct evbuffer *in = mt_conn_input(&s->conn);
		if (evbuffer_get_length(imap_output(s)) > POPSTORE_OUTPUT_HIGH)
			return;
		if (s->drain) {
			imap_line(s, "* BYE [UNAVAILABLE] Server shutting down");
			imap_close_after(s, MT_OUTCOME_SHUTDOWN, "shutdown");
			return;
		}
		bool more = s->state == IMAP_STATE_SASL || s->state == IMAP_STATE_IDLE ?
			process_raw_line(s, in) : process_command(s, in);
		if (!more)
			return;
	}
}

/* The connection core's ops (lib-mail/conn.h) */

static struct imap_session *conn_session(struct mt_conn *conn)
{
	return MT_CONN_OWNER(conn, struct imap_session, conn);
}

static void conn_input(struct mt_conn *conn)
{
	imap_process(conn_session(conn));
}

static void conn_output(struct mt_conn *conn)
{
	struct imap_session *s = conn_session(conn);
	if (s->state == IMAP_STATE_STARTTLS) {
		if (mt_conn_output_pending(conn) == 0)
			imap_starttls_now(s);
		return;
	}
	if (s->fetch != NULL)
		imap_fetch_continue(s);
	else
		imap_process(s);
}

static void conn_connected(struct mt_conn *conn)
{
	popstore_log_tls_up(conn->bev, &conn_session(conn)->log, "imap");
}

static void conn_eof(struct mt_conn *conn, bool error)
{
	struct imap_session *s = conn_session(conn);
	if (!error) {
		/* Run what was pipelined before the close; a command in flight
		 * finishes first. */
		s->input_eof = true;
		if (s->state != IMAP_STATE_WAIT && s->state != IMAP_STATE_LOGIN)
			imap_process(s);
		return;
	}
	if (s->tls)
		popstore_log_tls_error(conn->bev, &s->log, "imap");
	imap_close(s, MT_OUTCOME_ERROR, "error");
}

static bool conn_busy(struct mt_conn *conn)
{
	struct imap_session *s = conn_session(conn);
	return s->state == IMAP_STATE_LOGIN ||
		(s->state == IMAP_STATE_WAIT && (s->fetch == NULL || imap_fetch_busy(s)));
}

/* A timer ran out: the BYE (the core closes once it is written), or at
 * once in the middle of a TLS handshake. */
static void timed_out(struct mt_conn *conn, const char *reason, const char *bye)
{
	struct imap_session *s = conn_session(conn);
	if (s->state == IMAP_STATE_STARTTLS) {
		imap_close(s, MT_OUTCOME_TIMEOUT, reason);
		return;
	}
	imap_line(s, "* BYE %s", bye);
	imap_enter_state(s, IMAP_STATE_LOGOUT);
}

/* RFC 9051 5.4: the autologout. */
static void conn_idle_timeout(struct mt_conn *conn)
{
	timed_out(conn, "idle-timeout", "Disconnected for inactivity");
}

/* login_timeout ran out before a login. */
static void conn_login_timeout(struct mt_conn *conn)
{
	timed_out(conn, "login-timeout", "Login timed out");
}

static void conn_free(struct mt_conn *conn)
{
	struct imap_session *s = conn_session(conn);
	mt_buf_free(&s->line);
	release_command(s);
	mt_imap_parser_free(&s->parser);
	free(s->user);
	free(s->arg_name);
	free(s->qresync_known);
	mt_commands_free(&s->commands);
	free(s);
}

extern const struct mt_command_table imap_command_table;

/* The summary line; cancel what is in flight (the core frees the socket
 * and, after the callback, the session). */
static void conn_closed(struct mt_conn *conn, const char *reason)
{
	struct imap_session *s = conn_session(conn);
	struct mt_buf counts = MT_BUF_INIT;
	mt_commands_summary(&imap_command_table, &s->commands, "cmd_", &counts);
	popstore_metrics_session_end(s->ps, POPSTORE_IMAP, mt_conn_outcome(conn),
				     &s->commands);
	mt_slog(MT_LOG_INFO, &s->log, "imap disconnect peer=%s user=%s reason=%s%s errors=%u",
		s->peer, s->user != NULL ? s->user : "-", reason,
		mt_buf_cstr(&counts), s->errors);
	mt_buf_free(&counts);
	popstore_login_free(&s->verify);
	mt_dirsvc_request_cancel(&s->dir_req);
	if (s->store_req != NULL) {
		/* A change in flight may still commit; its client got no OK. */
		mt_store_req_cancel(s->store_req);
		s->store_req = NULL;
	}
	store_call_drop(s);
	imap_fetch_free(s);
	imap_search_free(s);
	append_abort(s);
	imap_selected_reset(s);
	imap_enter_state(s, IMAP_STATE_LOGOUT);
	if (s->user_counted)
		popstore_user_close(s->ps, s->user);
	popstore_address_close(s->ps, s->peer_ip, s->from_proxy);
	popstore_session_remove(s->ps);
}

static const struct mt_conn_ops conn_ops = {
	.input = conn_input, .output = conn_output, .connected = conn_connected,
	.eof = conn_eof, .busy = conn_busy, .idle_timeout = conn_idle_timeout,
	.session_timeout = conn_login_timeout, .closed = conn_closed, .free = conn_free,
};

static void imap_close(struct imap_session *s, enum mt_conn_outcome outcome,
		       const char *reason)
{
	mt_conn_close(&s->conn, outcome, reason);
}

void imap_session_accept(struct popstore *ps, int fd, const struct sockaddr *peer,
			 bool implicit_tls)
{
	char addr[MT_SOCKADDR_STRLEN];
	struct mt_logctx log = { .session_id = mt_session_id_new() };

	static const char busy[] = "* BYE [UNAVAILABLE] Too many sessions, try again later\r\n";
	struct bufferevent *bev = popstore_accept(ps, fd, peer, implicit_tls, POPSTORE_IMAP,
						  busy, &log, addr);
	if (bev == NULL)
		return;
	ps->imap_connections++;

	struct imap_session *s = mt_xcalloc(1, sizeof(*s));
	s->ps = ps;
	s->log = log;
	memcpy(s->peer, addr, sizeof(s->peer));
	(void)mt_authfail_key(peer, s->peer_ip, sizeof(s->peer_ip));
	s->from_proxy = popstore_is_proxy(ps, peer);
	s->tls = implicit_tls;
	s->state = IMAP_STATE_NOT_AUTH;
	mt_imap_parser_init(&s->parser, &mt_imap_login_limits);
	mt_commands_init(&s->commands, &imap_command_table);
	imap_login_init(s);
	/* Until login, login_timeout in all (RFC 9051 5.4's 30 minutes are
	 * for a logged-in session): a client that says nothing does not
	 * hold a session slot for long. */
	mt_conn_start(&s->conn, &ps->imap_sessions, ps->loop, bev, &conn_ops,
		      ps->set->login_timeout, POPSTORE_INPUT_HIGH, IMAP_OUTPUT_LOW);
	mt_conn_set_lifetime(&s->conn, ps->set->login_timeout);

	mt_slog(MT_LOG_INFO, &s->log, "imap connect peer=%s%s%s", addr,
		implicit_tls ? " tls=implicit" : "", s->from_proxy ? " proxy=yes" : "");
	/* RFC 9051 7.1.1 and 7.1.4: the greeting, with the capabilities. */
	struct mt_buf caps = MT_BUF_INIT;
	mt_imap_login_capability_list(&s->login_phase, &caps);
	imap_line(s, "* OK [CAPABILITY %s] %s ready", mt_buf_cstr(&caps), POPSTORE_NAME);
	mt_buf_free(&caps);
	if (mt_loop_is_draining(ps->loop)) {
		s->drain = true;
		imap_process(s);
	}
}

static void session_drain(struct mt_conn *conn)
{
	struct imap_session *s = conn_session(conn);
	s->drain = true;
	if (s->state != IMAP_STATE_WAIT && s->state != IMAP_STATE_LOGIN)
		imap_process(s);
}

void imap_sessions_drain(struct popstore *ps)
{
	mt_conn_list_each(&ps->imap_sessions, session_drain);
}

void imap_sessions_free_all(struct popstore *ps)
{
	mt_conn_list_close_all(&ps->imap_sessions, "shutdown");
}
