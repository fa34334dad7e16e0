/* smtp-session.c — one ESMTP server connection on lib-mail's connection
 * core (socket, timers, close, deferred free): the input loop (command
 * lines, DATA/BDAT content), command dispatch through the table, replies
 * and their counters, the per-state timeouts, the switch to TLS, and the
 * end of the session with its summary log line.
 *
 * Trust boundary: every byte from the socket is the client's. Command lines
 * go through lib/lineio (bounded, CRLF only unless bare_newline_policy =
 * normalize, no NUL); content goes to smtp-data.c. Input is read at most
 * INPUT_HIGH ahead of processing and command processing pauses while more
 * than OUTPUT_HIGH of replies wait to be sent, so a client that pipelines
 * without reading cannot grow our memory.
 * RFCs: 5321 3.1 (greeting), 4.2 (replies), 4.5.3.2 (timeouts); 2920
 * (pipelining); 3207 4.2 (discard plaintext state after STARTTLS); 8314
 * (implicit TLS). */
#include "smtp-session.h"
#include "alloc.h"
#include "dirsvc.h"
#include "mta-policy.h"
#include "mta.h"
#include "tls.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#define INPUT_HIGH (256u * 1024u)
#define OUTPUT_HIGH (256u * 1024u)

static const char *const state_names[SMTP_STATE_COUNT] = {
	[SMTP_STATE_HANDSHAKE] = "handshake",
	[SMTP_STATE_COMMAND] = "command",
	[SMTP_STATE_AUTH] = "auth",
	[SMTP_STATE_DATA] = "data",
	[SMTP_STATE_BDAT] = "bdat",
	[SMTP_STATE_WAIT] = "wait",
	[SMTP_STATE_STARTTLS] = "starttls",
	[SMTP_STATE_CLOSING] = "closing",
};

static const char *const service_names[SMTP_SERVICE_COUNT] = {
	[SMTP_SERVICE_SMTP] = "smtp",
	[SMTP_SERVICE_SUBMISSION] = "submission",
	[SMTP_SERVICE_SUBMISSIONS] = "submissions",
};

static struct smtp_session *conn_session(struct mt_conn *conn)
{
	return MT_CONN_OWNER(conn, struct smtp_session, conn);
}

static bool closed(const struct smtp_session *s)
{
	return mt_conn_is_closed(&s->conn);
}

/* Timers (the core runs them; RFC 5321 4.5.3.2: each state its own) */

static void arm_idle_timer(struct smtp_session *s)
{
	const struct mt_mta_settings *set = s->mta->set;
	uint64_t ms = s->state == SMTP_STATE_DATA || s->state == SMTP_STATE_BDAT ?
		set->data_timeout : set->command_timeout;
	mt_conn_set_idle(&s->conn, (unsigned int)ms);
}

static void conn_idle_timeout(struct mt_conn *conn)
{
	struct smtp_session *s = conn_session(conn);
	mt_slog(MT_LOG_INFO, &s->log, "timeout after state=%s from %s",
		state_names[s->state], s->peer_name);
	smtp_session_finish(s, 421, "4.4.2 %s Error: timeout exceeded",
			    s->mta->hostname);
}

static void conn_session_timeout(struct mt_conn *conn)
{
	struct smtp_session *s = conn_session(conn);
	mt_slog(MT_LOG_INFO, &s->log, "max_session_time reached from %s",
		s->peer_name);
	smtp_session_finish(s, 421, "4.4.2 %s Error: session time limit exceeded",
			    s->mta->hostname);
}

/* States */

void smtp_enter_state(struct smtp_session *s, enum smtp_state state)
{
	if (s->state == state)
		return;
	mt_slog(MT_LOG_DEBUG, &s->log, "state %s -> %s", state_names[s->state],
		state_names[state]);
	enum smtp_state old = s->state;
	bool was_receiving = old == SMTP_STATE_DATA || old == SMTP_STATE_BDAT;
	bool receiving = state == SMTP_STATE_DATA || state == SMTP_STATE_BDAT;
	if (was_receiving != receiving)
		smtp_server_note_receiving(s->mta->server, receiving ? 1 : -1);
	s->state = state;
	if (state == SMTP_STATE_COMMAND &&
	    (old == SMTP_STATE_DATA || old == SMTP_STATE_BDAT ||
	     old == SMTP_STATE_WAIT))
		mt_line_reader_reset(&s->reader);
	if (state == SMTP_STATE_DATA || state == SMTP_STATE_BDAT ||
	    old == SMTP_STATE_DATA || old == SMTP_STATE_BDAT)
		arm_idle_timer(s);
}

/* Replies */

static void count_reply(struct smtp_session *s, int code)
{
	if (code >= 500)
		s->errors++;
	/* 334 and 354 ask for more; the command is done at its final reply. */
	if (code == 334 || code == 354)
		return;
	mt_commands_reply(&s->commands, code < 400);
}

static void reply_va(struct smtp_session *s, int code, bool more,
		     const char *fmt, va_list ap)
{
	struct mt_buf text = MT_BUF_INIT;
	mt_buf_vappendf(&text, fmt, ap);
	mt_line_reply(mt_conn_output(&s->conn), code, more, "%s",
		      mt_buf_cstr(&text));
	if (!more && code >= 400) {
		const char *cmd = mt_commands_current_name(&smtp_command_table,
							   &s->commands);
		mt_slog(MT_LOG_INFO, &s->log, "reject cmd=%s from %s: %d %s", cmd,
			s->peer_name, code, mt_buf_cstr(&text));
	}
	mt_buf_free(&text);
}

void smtp_reply(struct smtp_session *s, int code, const char *fmt, ...)
{
	va_list ap;
	if (closed(s))
		return;
	va_start(ap, fmt);
	reply_va(s, code, false, fmt, ap);
	va_end(ap);
	count_reply(s, code);
}

static void delayed_reply_cb(evutil_socket_t fd, short what, void *arg)
{
	struct smtp_session *s = arg;
	(void)fd;
	(void)what;
	char *text = s->delayed_text;
	s->delayed_text = NULL;
	/* A timeout or the drain may have ended the wait meanwhile. */
	if (s->state == SMTP_STATE_WAIT && text != NULL) {
		smtp_reply(s, s->delayed_code, "%s", text);
		smtp_enter_state(s, SMTP_STATE_COMMAND);
		arm_idle_timer(s);
		smtp_session_resume(s);
	}
	free(text);
}

bool smtp_reply_delayed(struct smtp_session *s, uint64_t delay_ms, int code,
			const char *fmt, ...)
{
	struct mt_buf text = MT_BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	mt_buf_vappendf(&text, fmt, ap);
	va_end(ap);
	if (delay_ms == 0 || closed(s)) {
		smtp_reply(s, code, "%s", mt_buf_cstr(&text));
		mt_buf_free(&text);
		return false;
	}
	if (s->delay_timer == NULL &&
	    (s->delay_timer = evtimer_new(mt_loop_base(s->mta->loop),
					  delayed_reply_cb, s)) == NULL)
		mt_panic("evtimer_new failed");
	free(s->delayed_text);
	s->delayed_code = code;
	s->delayed_text = mt_buf_steal(&text);
	struct timeval tv = { (time_t)(delay_ms / 1000),
			      (suseconds_t)(delay_ms % 1000) * 1000 };
	smtp_enter_state(s, SMTP_STATE_WAIT);
	/* Our penalty is not the client's idleness: in SMTP_STATE_WAIT the
	 * idle timer does not run down (conn_busy); command_timeout starts
	 * again once the reply is sent (max_session_time still runs). */
	evtimer_add(s->delay_timer, &tv);
	return true;
}

void smtp_reply_more(struct smtp_session *s, int code, const char *fmt, ...)
{
	va_list ap;
	if (closed(s))
		return;
	va_start(ap, fmt);
	reply_va(s, code, true, fmt, ap);
	va_end(ap);
}

void smtp_session_finish(struct smtp_session *s, int code, const char *fmt, ...)
{
	va_list ap;
	if (closed(s) || s->state == SMTP_STATE_CLOSING)
		return;
	va_start(ap, fmt);
	reply_va(s, code, false, fmt, ap);
	va_end(ap);
	count_reply(s, code);
	smtp_enter_state(s, SMTP_STATE_CLOSING);
	/* Nothing more is read; the core closes once the reply is out, or
	 * at the idle timeout if the client does not take it. */
	arm_idle_timer(s);
	mt_conn_close_after(&s->conn, "done");
}

/* Policy helpers for the handlers */

bool smtp_auth_required(const struct smtp_session *s)
{
	return s->service != SMTP_SERVICE_SMTP;
}

bool smtp_auth_offered(const struct smtp_session *s)
{
	return s->mta->dirsvc != NULL &&
		(s->tls || !s->mta->set->require_tls_for_auth);
}

/* Submission with AUTH only over TLS: nothing but the PRE_TLS commands
 * before STARTTLS (RFC 3207 4: a server may require it). */
static bool tls_required(const struct smtp_session *s)
{
	return s->service == SMTP_SERVICE_SUBMISSION &&
		s->mta->set->require_tls_for_auth && s->mta->tls_server != NULL;
}

/* Dispatch */

static void dispatch(struct smtp_session *s, const char *line)
{
	const struct mt_command_gate gate = {
		.tls_required = !s->tls && tls_required(s),
		.auth_required = !s->authenticated && smtp_auth_required(s),
		.max_junk = (unsigned int)s->mta->set->max_junk_commands,
	};
	struct mt_command_call call;
	enum mt_command_verdict verdict =
		mt_command_check(&smtp_command_table, &s->commands, &gate, line, &call);
	const struct smtp_command *cmd = call.def != NULL ? &smtp_commands[call.index] : NULL;

	if (cmd != NULL && smtp_server_draining(s) && cmd->handler != smtp_cmd_quit) {
		smtp_session_finish(s, 421, "4.3.2 %s Service shutting down",
				    s->mta->hostname);
		return;
	}
	switch (verdict) {
	case MT_COMMAND_UNKNOWN:
	case MT_COMMAND_BAD_STATE:	/* (the MTA's table has no states) */
		smtp_reply(s, 500, line[0] == '\0' ? "5.5.2 Error: bad syntax" :
			   "5.5.2 Error: command not recognized");
		return;
	case MT_COMMAND_TOO_MUCH_JUNK:
		smtp_session_finish(s, 421, "4.7.0 %s Error: too many %s commands",
				    s->mta->hostname, cmd->def.name);
		return;
	case MT_COMMAND_NEEDS_TLS:
		smtp_reply(s, 530, "5.7.0 Must issue a STARTTLS command first");
		return;
	case MT_COMMAND_NEEDS_AUTH:
		smtp_reply(s, 530, "5.7.0 Authentication required");
		return;
	case MT_COMMAND_RUN:
		break;
	}
	/* RFC 2920 3.1: these end a group; input already waiting after them
	 * is improper pipelining (STARTTLS discards it and says so). */
	if ((cmd->def.flags & MT_CMD_GROUP_END) != 0 && cmd->handler != smtp_cmd_starttls &&
	    evbuffer_get_length(mt_conn_input(&s->conn)) > 0)
		mt_slog(MT_LOG_DEBUG, &s->log, "improper pipelining after %s from %s",
			cmd->def.name, s->peer_name);
	cmd->handler(s, call.arg);
}

/* One command or AUTH line; false when none is complete yet. */
static bool read_command(struct smtp_session *s)
{
	const char *error;
	enum mt_line_status status = mt_line_read(&s->reader,
		mt_conn_input(&s->conn), &s->line, &error);

	switch (status) {
	case MT_LINE_NEED_MORE:
		return false;
	case MT_LINE_OK: {
		bool secret = s->state == SMTP_STATE_AUTH;
		if (secret)
			smtp_auth_continue(s, mt_buf_cstr(&s->line));
		else {
			dispatch(s, mt_buf_cstr(&s->line));
			secret = (s->commands.flags & MT_CMD_SECRET) != 0;
		}
		/* AUTH's lines hold credentials: not left in the buffer for
		 * the next line to overwrite only in part (the session may
		 * have closed and freed it meanwhile). */
		if (secret && s->line.data != NULL)
			explicit_bzero(s->line.data, s->line.cap);
		return true;
	}
	case MT_LINE_TOO_LONG:
		mt_commands_forget(&s->commands);
		if (s->state == SMTP_STATE_AUTH)
			smtp_auth_continue(s, NULL);
		smtp_reply(s, 500, "5.5.2 Error: line too long");
		return true;
	default:
		mt_commands_forget(&s->commands);
		if (s->state == SMTP_STATE_AUTH)
			smtp_auth_continue(s, NULL);
		mt_slog(MT_LOG_INFO, &s->log, "bad command line from %s: %s",
			s->peer_name, error);
		smtp_reply(s, 500, "5.5.2 Error: %s", error);
		return true;
	}
}

static void process_input(struct smtp_session *s)
{
	const struct mt_mta_settings *set = s->mta->set;
	while (!closed(s)) {
		if (s->errors > set->max_errors) {
			smtp_session_finish(s, 421, "4.7.0 %s Error: too many errors",
					    s->mta->hostname);
			return;
		}
		if (evbuffer_get_length(mt_conn_output(&s->conn)) > OUTPUT_HIGH) {
			/* Resumed by conn_output once the client reads. */
			s->input_paused = true;
			return;
		}
		bool progress;
		switch (s->state) {
		case SMTP_STATE_COMMAND:
		case SMTP_STATE_AUTH:
			progress = read_command(s);
			break;
		case SMTP_STATE_DATA:
			progress = smtp_data_input(s);
			break;
		case SMTP_STATE_BDAT:
			progress = smtp_bdat_input(s);
			break;
		default:
			return;
		}
		if (!progress)
			return;
	}
}

void smtp_session_resume(struct smtp_session *s)
{
	if (!closed(s))
		process_input(s);
}

/* The connection core's callbacks */

static void greet(struct smtp_session *s)
{
	smtp_enter_state(s, SMTP_STATE_COMMAND);
	s->greeted = true;
	mt_line_reply(mt_conn_output(&s->conn), 220, false,
		      "%s ESMTP %s", s->mta->hostname, MTA_NAME);
}

static void conn_input(struct mt_conn *conn)
{
	process_input(conn_session(conn));
}

/* STARTTLS: the 220 is on the wire; wrap the socket in TLS. Whatever the
 * client pipelined after the command is dropped with the plain
 * bufferevent (RFC 3207 4.2, CVE-2011-0411). */
static void start_tls(struct smtp_session *s)
{
	size_t discarded = 0;
	const char *error;
	struct bufferevent *tls_bev = mt_tls_bev_starttls(s->mta->tls_server,
		&s->conn.bev, NULL, &discarded, &error);
	if (tls_bev == NULL) {
		mt_slog(MT_LOG_WARNING, &s->log, "STARTTLS from %s failed: %s",
			s->peer_name, error);
		smtp_session_close(s, "starttls failed");
		return;
	}
	if (discarded > 0)
		mt_slog(MT_LOG_WARNING, &s->log, "discarded %zu octets pipelined "
			"after STARTTLS from %s (RFC 3207 4.2)", discarded,
			s->peer_name);
	mt_line_reader_reset(&s->reader);
	smtp_enter_state(s, SMTP_STATE_HANDSHAKE);
	mt_conn_set_bev(&s->conn, tls_bev);
}

static void conn_output(struct mt_conn *conn)
{
	struct smtp_session *s = conn_session(conn);
	if (s->state == SMTP_STATE_STARTTLS) {
		start_tls(s);
		return;
	}
	if (s->input_paused) {
		s->input_paused = false;
		process_input(s);
	}
}

static void conn_connected(struct mt_conn *conn)
{
	struct smtp_session *s = conn_session(conn);
	SSL *ssl = bufferevent_openssl_get_ssl(s->conn.bev);
	s->tls = true;
	if (ssl != NULL)
		mt_tls_describe(ssl, s->tls_info, sizeof(s->tls_info));
	mt_slog(MT_LOG_INFO, &s->log, "tls from %s: %s", s->peer_name, s->tls_info);
	if (!s->greeted)
		greet(s);
	else
		smtp_enter_state(s, SMTP_STATE_COMMAND);
	process_input(s);
}

static void conn_eof(struct mt_conn *conn, bool error)
{
	struct smtp_session *s = conn_session(conn);
	char why[256], tls_error[128];
	if (!error)
		snprintf(why, sizeof(why), "lost connection in state %s",
			 state_names[s->state]);
	else if (bufferevent_openssl_get_ssl(s->conn.bev) != NULL)
		snprintf(why, sizeof(why), "tls error in state %s: %s",
			 state_names[s->state],
			 mt_tls_bev_error(s->conn.bev, tls_error, sizeof(tls_error)));
	else
		snprintf(why, sizeof(why), "connection error in state %s",
			 state_names[s->state]);
	smtp_session_close(s, why);
}

/* Waiting on the directory, the queue or our own penalty delay: the
 * client is not idle. */
static bool conn_busy(struct mt_conn *conn)
{
	return conn_session(conn)->state == SMTP_STATE_WAIT;
}

static void conn_closed(struct mt_conn *conn, const char *reason);
static void conn_free(struct mt_conn *conn);

static const struct mt_conn_ops conn_ops = {
	.input = conn_input, .output = conn_output, .connected = conn_connected,
	.eof = conn_eof, .busy = conn_busy, .idle_timeout = conn_idle_timeout,
	.session_timeout = conn_session_timeout,
	.closed = conn_closed, .free = conn_free,
};

/* Life cycle */

struct smtp_session *smtp_session_new(struct mta *mta, struct mt_conn_list *list,
				      enum smtp_service service, int fd,
				      const struct sockaddr *peer, socklen_t peerlen)
{
	struct event_base *base = mt_loop_base(mta->loop);
	struct smtp_session *s = mt_xcalloc(1, sizeof(*s));
	const char *error;

	s->mta = mta;
	s->service = service;
	s->log.session_id = mt_session_id_new();
	if (peerlen > sizeof(s->peer))
		peerlen = sizeof(s->peer);
	memcpy(&s->peer, peer, peerlen);
	mt_sockaddr_str(peer, s->peer_name, sizeof(s->peer_name));
	smtp_format_peer_ip(peer, s->peer_ip, sizeof(s->peer_ip));
	s->trusted = mta_policy_is_trusted_client(mta->policy, peer);
	mt_commands_init(&s->commands, &smtp_command_table);
	mt_line_reader_init(&s->reader, mta->set->max_line_length,
			    mta->set->bare_newline_policy == MT_BARE_NEWLINE_NORMALIZE ?
			    MT_LINE_ACCEPT_LF : MT_LINE_STRICT_CRLF);

	struct bufferevent *bev = NULL;
	error = "bufferevent_socket_new failed";
	if (service != SMTP_SERVICE_SUBMISSIONS)
		bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	else if (mta->tls_server != NULL)
		bev = mt_tls_bev_accept(mta->tls_server, base, fd, &error);
	else
		error = "no TLS certificate configured";
	if (bev == NULL) {
		mt_slog(MT_LOG_ERROR, &s->log, "cannot set up the connection from %s: %s",
			s->peer_name, error);
		if (service != SMTP_SERVICE_SUBMISSIONS || mta->tls_server == NULL)
			close(fd);
		mt_commands_free(&s->commands);
		free(s);
		return NULL;
	}
	/* Input is read at most INPUT_HIGH ahead; the write callback comes
	 * once everything is written (STARTTLS and the paused input wait
	 * for that). */
	mt_conn_start(&s->conn, list, mta->loop, bev, &conn_ops,
		      (unsigned int)mta->set->command_timeout, INPUT_HIGH, 0);
	mt_conn_set_lifetime(&s->conn, (unsigned int)mta->set->max_session_time);

	mt_slog(MT_LOG_INFO, &s->log, "connect from %s service=%s%s", s->peer_name,
		service_names[service], s->trusted ? " trusted=yes" : "");
	s->state = SMTP_STATE_HANDSHAKE;	/* so greet() logs the change */
	if (service != SMTP_SERVICE_SUBMISSIONS)
		greet(s);
	return s;
}

/* " ehlo=1 mail=1 rcpt=1/2 data=1 quit=1 commands=5/6" (lib-mail/command),
 * then "unknown_rcpt=N rcpt_limited=N" when not 0. */
static void log_summary(struct smtp_session *s, const char *reason)
{
	struct mt_buf line = MT_BUF_INIT;
	mt_commands_summary(&smtp_command_table, &s->commands, "", &line);
	/* The per-address RCPT penalties this session met (smtp-commands.c). */
	if (s->unknown_rcpts != 0)
		mt_buf_appendf(&line, " unknown_rcpt=%u", s->unknown_rcpts);
	if (s->limited_rcpts != 0)
		mt_buf_appendf(&line, " rcpt_limited=%u", s->limited_rcpts);
	mt_slog(MT_LOG_INFO, &s->log, "disconnect from %s reason=\"%s\" messages=%u%s",
		s->peer_name, reason, s->messages, mt_buf_cstr(&line));
	mt_buf_free(&line);
}

static void conn_free(struct mt_conn *conn)
{
	struct smtp_session *s = conn_session(conn);
	struct mta *mta = s->mta;
	mt_commands_free(&s->commands);
	free(s);
	/* The last one gone during a drain (a no-op otherwise). */
	mta_drain_check(mta);
}

void smtp_session_close(struct smtp_session *s, const char *reason)
{
	mt_conn_close(&s->conn, reason);
}

/* The summary line, cancel what is in flight; the core frees the socket
 * and the timers, and the session from the loop (we may be inside one of
 * its callbacks). */
static void conn_closed(struct mt_conn *conn, const char *reason)
{
	struct smtp_session *s = conn_session(conn);
	if (s->state == SMTP_STATE_DATA || s->state == SMTP_STATE_BDAT)
		smtp_server_note_receiving(s->mta->server, -1);
	s->log.queue_id[0] = '\0';
	log_summary(s, reason);
	mt_dirsvc_request_cancel(&s->dir_req);
	queue_op_forget(&s->queue_op);
	smtp_tx_reset(s);
	free(s->pending_rcpt.address);
	free(s->pending_rcpt.orcpt);
	free(s->helo);
	free(s->auth_user);
	if (s->auth_login_user != NULL) {
		explicit_bzero(s->auth_login_user, strlen(s->auth_login_user));
		free(s->auth_login_user);
	}
	mt_buf_free(&s->line);
	if (s->delay_timer != NULL)
		event_free(s->delay_timer);
	free(s->delayed_text);
	smtp_server_session_closed(s->mta->server, s);
}

void smtp_session_drain(struct smtp_session *s)
{
	/* Idle between transactions: go now. Otherwise the next command
	 * gets the 421 (dispatch()). */
	if (s->state == SMTP_STATE_COMMAND && !s->tx.active &&
	    evbuffer_get_length(mt_conn_input(&s->conn)) == 0)
		smtp_session_finish(s, 421, "4.3.2 %s Service shutting down",
				    s->mta->hostname);
	else if (s->state == SMTP_STATE_HANDSHAKE)
		smtp_session_close(s, "shutdown during tls handshake");
}
