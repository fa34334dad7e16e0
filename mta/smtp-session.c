/* smtp-session.c — one ESMTP server connection: the MTA's hook set on
 * lib-mail's SMTP server engine (lib-mail/smtpd.h: the input loop,
 * dispatch, replies, states and timers, TLS, content reading). Here are
 * what is the MTA's own: the greeting, the command gate (TLS and AUTH
 * required on submission, the junk limit), the answers to refused
 * commands and bad lines, the error limit, the drain, the timeouts'
 * words, and the end of the session with its summary log line.
 *
 * Trust boundary: every byte from the socket is the client's; the engine
 * bounds lines (max_line_length, CRLF only unless bare_newline_policy =
 * normalize, no NUL), reads input at most INPUT_HIGH ahead of processing
 * and pauses command processing while more than OUTPUT_HIGH of replies
 * wait to be sent, so a client that pipelines without reading cannot
 * grow our memory; content goes to smtp-data.c a piece at a time.
 * RFCs: 5321 3.1 (greeting), 4.2 (replies), 4.5.3.2 (timeouts); 2920
 * (pipelining); 3207 4 (530 before STARTTLS); 4954 (530 before AUTH);
 * 8314 (implicit TLS). */
#include "smtp-session.h"
#include "alloc.h"
#include "dirsvc.h"
#include "mta-metrics.h"
#include "mta-policy.h"
#include "mta.h"
#include "smtp-milter.h"
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

#define INPUT_HIGH (256u * 1024u)
#define OUTPUT_HIGH (256u * 1024u)

static const char *const service_names[SMTP_SERVICE_COUNT] = {
	[SMTP_SERVICE_SMTP] = "smtp",
	[SMTP_SERVICE_SUBMISSION] = "submission",
	[SMTP_SERVICE_SUBMISSIONS] = "submissions",
};

static void idle_timeout(struct mt_smtpd *d)
{
	struct smtp_session *s = SMTP_SESSION(d);
	mt_slog(MT_LOG_INFO, &s->log, "timeout after state=%s from %s",
		mt_smtpd_state_names[d->state], s->peer_name);
	mt_smtpd_finish(d, MT_OUTCOME_TIMEOUT, 421, "4.4.2 %s Error: timeout exceeded",
			s->mta->hostname);
}

static void session_timeout(struct mt_smtpd *d)
{
	struct smtp_session *s = SMTP_SESSION(d);
	mt_slog(MT_LOG_INFO, &s->log, "max_session_time reached from %s",
		s->peer_name);
	mt_smtpd_finish(d, MT_OUTCOME_TIMEOUT, 421,
			"4.4.2 %s Error: session time limit exceeded", s->mta->hostname);
}

/* Sessions receiving content are counted for the queue's group commit. */
static bool receiving(enum mt_smtpd_state state)
{
	return state == MT_SMTPD_DATA || state == MT_SMTPD_BDAT;
}

static void state_changed(struct mt_smtpd *d, enum mt_smtpd_state old)
{
	struct smtp_session *s = SMTP_SESSION(d);
	if (receiving(old) != receiving(d->state))
		smtp_server_note_receiving(s->mta->server, receiving(d->state) ? 1 : -1);
}

/* Policy helpers for the handlers */

bool smtp_auth_required(const struct smtp_session *s)
{
	return s->service != SMTP_SERVICE_SMTP;
}

bool smtp_auth_offered(const struct smtp_session *s)
{
	return s->mta->dirsvc != NULL &&
		(s->smtpd.tls || !s->mta->set->require_tls_for_auth);
}

/* Submission with AUTH only over TLS: nothing but the PRE_TLS commands
 * before STARTTLS (RFC 3207 4: a server may require it). */
static bool tls_required(const struct smtp_session *s)
{
	return s->service == SMTP_SERVICE_SUBMISSION &&
		s->mta->set->require_tls_for_auth && s->mta->tls_server != NULL;
}

/* The engine's hooks */

static void gate(struct mt_smtpd *d, struct mt_command_gate *gate)
{
	struct smtp_session *s = SMTP_SESSION(d);
	gate->tls_required = !d->tls && tls_required(s);
	gate->auth_required = !s->authenticated && smtp_auth_required(s);
	gate->max_junk = (unsigned int)s->mta->set->max_junk_commands;
}

/* A mail filter refused the connection: every command but these gets
 * its answer (as Postfix does after a milter's connect reject). */
static bool allowed_when_denied(smtp_cmd_handler_t *handler)
{
	return handler == smtp_cmd_quit || handler == smtp_cmd_noop ||
		handler == smtp_cmd_rset || handler == smtp_cmd_help;
}

static void run(struct mt_smtpd *d, unsigned int index, const char *arg)
{
	struct smtp_session *s = SMTP_SESSION(d);
	const struct smtp_command *cmd = &smtp_commands[index];
	if (smtp_server_draining(s) && cmd->handler != smtp_cmd_quit) {
		mt_smtpd_finish(d, MT_OUTCOME_SHUTDOWN, 421, "4.3.2 %s Service shutting down",
				s->mta->hostname);
		return;
	}
	if (s->milter_denied.status != MT_MILTER_CONTINUE &&
	    !allowed_when_denied(cmd->handler)) {
		smtp_milter_reply(s, &s->milter_denied);
		return;
	}
	cmd->handler(s, arg);
}

static void refuse(struct mt_smtpd *d, enum mt_command_verdict verdict,
		   const struct mt_command_call *call, const char *line)
{
	struct smtp_session *s = SMTP_SESSION(d);
	if (call->def != NULL && smtp_server_draining(s)) {
		mt_smtpd_finish(d, MT_OUTCOME_SHUTDOWN, 421, "4.3.2 %s Service shutting down",
				s->mta->hostname);
		return;
	}
	switch (verdict) {
	case MT_COMMAND_TOO_MUCH_JUNK:
		mt_smtpd_finish(d, MT_OUTCOME_LIMIT, 421, "4.7.0 %s Error: too many %s commands",
				s->mta->hostname, call->def->name);
		return;
	case MT_COMMAND_NEEDS_TLS:
		mt_smtpd_reply(d, 530, "5.7.0 Must issue a STARTTLS command first");
		return;
	case MT_COMMAND_NEEDS_AUTH:
		mt_smtpd_reply(d, 530, "5.7.0 Authentication required");
		return;
	default:	/* unknown; BAD_STATE: the MTA's table has no states */
		mt_smtpd_reply(d, 500, line[0] == '\0' ? "5.5.2 Error: bad syntax" :
			       "5.5.2 Error: command not recognized");
		return;
	}
}

static void bad_line(struct mt_smtpd *d, enum mt_line_status status,
		     const char *error)
{
	(void)status;
	struct smtp_session *s = SMTP_SESSION(d);
	if (error == NULL) {
		mt_smtpd_reply(d, 500, "5.5.2 Error: line too long");
		return;
	}
	mt_slog(MT_LOG_INFO, &s->log, "bad command line from %s: %s",
		s->peer_name, error);
	mt_smtpd_reply(d, 500, "5.5.2 Error: %s", error);
}

static void auth_line(struct mt_smtpd *d, const char *line)
{
	smtp_auth_continue(SMTP_SESSION(d), line);
}

/* Every 5xx counts; above max_errors the session ends. */
static bool next_command(struct mt_smtpd *d)
{
	struct smtp_session *s = SMTP_SESSION(d);
	if (d->errors <= s->mta->set->max_errors)
		return true;
	mt_smtpd_finish(d, MT_OUTCOME_LIMIT, 421, "4.7.0 %s Error: too many errors",
			s->mta->hostname);
	return false;
}

static void say_hello(struct smtp_session *s)
{
	mt_line_reply(mt_conn_output(&s->smtpd.conn), 220, false, "%s ESMTP %s",
		      s->mta->hostname, MTA_NAME);
}

/* The filters heard of the connection: greet. A refusal is kept for the
 * commands that follow (run). */
static void connect_milter_done(struct smtp_session *s,
				const struct smtp_milter_verdict *v)
{
	if (v->status == MT_MILTER_REJECT || v->status == MT_MILTER_TEMPFAIL) {
		s->milter_denied.status = v->status;
		s->milter_denied_text = v->text != NULL ? mt_xstrdup(v->text) : NULL;
		s->milter_denied.text = s->milter_denied_text;
	}
	say_hello(s);
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
	mt_smtpd_resume(&s->smtpd);
}

/* The filters first hear of the connection (before our 220, as
 * Postfix's smtpd does); without filters, greet at once. */
static void greet(struct mt_smtpd *d)
{
	struct smtp_session *s = SMTP_SESSION(d);
	if (!smtp_milter_active(s)) {
		say_hello(s);
		return;
	}
	mt_smtpd_enter_state(d, MT_SMTPD_WAIT);
	smtp_milter_connect(s, connect_milter_done);
}

static void conn_eof(struct mt_smtpd *d, bool error)
{
	struct smtp_session *s = SMTP_SESSION(d);
	const char *state = mt_smtpd_state_names[d->state];
	char why[256], tls_error[128];
	if (!error)
		snprintf(why, sizeof(why), "lost connection in state %s", state);
	else if (bufferevent_openssl_get_ssl(d->conn.bev) != NULL)
		snprintf(why, sizeof(why), "tls error in state %s: %s", state,
			 mt_tls_bev_error(d->conn.bev, tls_error, sizeof(tls_error)));
	else
		snprintf(why, sizeof(why), "connection error in state %s", state);
	smtp_session_close(s, error ? MT_OUTCOME_ERROR : MT_OUTCOME_CLIENT_CLOSED, why);
}

static void conn_closed(struct mt_smtpd *d, const char *reason);
static void conn_free(struct mt_smtpd *d);

static const struct mt_smtpd_hooks smtpd_hooks = {
	.greet = greet, .gate = gate, .run = run, .refuse = refuse,
	.bad_line = bad_line, .line = auth_line, .next_command = next_command,
	.content = smtp_data_piece, .data_end = smtp_data_end,
	.bdat_end = smtp_bdat_end, .state_changed = state_changed,
	.eof = conn_eof, .idle_timeout = idle_timeout,
	.session_timeout = session_timeout, .closed = conn_closed,
	.free = conn_free,
};

static const struct mt_smtpd_def smtpd_def = {
	.table = &smtp_command_table, .hooks = &smtpd_hooks,
};

/* Life cycle */

/* The engine's settings from [mta] as they are when the session starts
 * (a reload applies to the sessions after it). */
static void engine_settings(const struct mta *mta, struct mt_smtpd_settings *out)
{
	const struct mt_mta_settings *set = mta->set;
	*out = (struct mt_smtpd_settings){
		.max_line_length = set->max_line_length,
		.accept_bare_lf = set->bare_newline_policy == MT_BARE_NEWLINE_NORMALIZE,
		.bare_newlines = set->bare_newline_policy == MT_BARE_NEWLINE_NORMALIZE ?
			MT_DOT_BARE_NORMALIZE : MT_DOT_BARE_REJECT,
		.command_timeout = set->command_timeout,
		.data_timeout = set->data_timeout,
		.max_session_time = set->max_session_time,
		.input_high = INPUT_HIGH,
		.output_high = OUTPUT_HIGH,
		.piece_size = QUEUE_PIECE_SIZE,
		.reject_log = MT_LOG_INFO,
		.log_prefix = "",
	};
}

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
		mta_metrics_session_closed(mta, service, MT_OUTCOME_ERROR);
		free(s);
		return NULL;
	}
	mta_metrics_session(mta, service);
	mt_slog(MT_LOG_INFO, &s->log, "connect from %s service=%s%s", s->peer_name,
		service_names[service], s->trusted ? " trusted=yes" : "");
	engine_settings(mta, &s->smtpd_settings);
	s->smtpd.log = &s->log;
	s->smtpd.peer_name = s->peer_name;
	s->smtpd.tls_server = mta->tls_server;
	smtp_milter_session_start(s);
	mt_smtpd_start(&s->smtpd, &smtpd_def, &s->smtpd_settings, list, mta->loop,
		       bev, service == SMTP_SERVICE_SUBMISSIONS);
	return s;
}

/* " ehlo=1 mail=1 rcpt=1/2 data=1 quit=1 commands=5/6" (lib-mail/command),
 * then "unknown_rcpt=N rcpt_limited=N" when not 0. */
static void log_summary(struct smtp_session *s, const char *reason)
{
	struct mt_buf line = MT_BUF_INIT;
	mt_commands_summary(&smtp_command_table, &s->smtpd.commands, "", &line);
	mta_metrics_session_end(s->mta, &s->smtpd.commands);
	/* The per-address RCPT penalties this session met (smtp-commands.c). */
	if (s->unknown_rcpts != 0)
		mt_buf_appendf(&line, " unknown_rcpt=%u", s->unknown_rcpts);
	if (s->limited_rcpts != 0)
		mt_buf_appendf(&line, " rcpt_limited=%u", s->limited_rcpts);
	mt_slog(MT_LOG_INFO, &s->log, "disconnect from %s reason=\"%s\" messages=%u%s",
		s->peer_name, reason, s->messages, mt_buf_cstr(&line));
	mt_buf_free(&line);
}

static void conn_free(struct mt_smtpd *d)
{
	struct smtp_session *s = SMTP_SESSION(d);
	struct mta *mta = s->mta;
	free(s);
	/* The last one gone during a drain (a no-op otherwise). */
	mta_drain_check(mta);
}

void smtp_session_close(struct smtp_session *s, enum mt_conn_outcome outcome,
			const char *reason)
{
	mt_smtpd_close(&s->smtpd, outcome, reason);
}

/* The summary line, cancel what is in flight; the engine frees its own
 * parts and the core the socket and the timers, and the session from the
 * loop (we may be inside one of its callbacks). */
static void conn_closed(struct mt_smtpd *d, const char *reason)
{
	struct smtp_session *s = SMTP_SESSION(d);
	if (receiving(d->state))
		smtp_server_note_receiving(s->mta->server, -1);
	s->log.queue_id[0] = '\0';
	log_summary(s, reason);
	mta_metrics_session_closed(s->mta, s->service, mt_conn_outcome(&d->conn));
	mt_dirsvc_request_cancel(&s->dir_req);
	queue_op_forget(&s->queue_op);
	smtp_tx_reset(s);
	smtp_milter_session_end(s);
	free(s->milter_denied_text);
	free(s->pending_rcpt.address);
	free(s->pending_rcpt.orcpt);
	free(s->helo);
	free(s->auth_user);
	if (s->auth_login_user != NULL) {
		explicit_bzero(s->auth_login_user, strlen(s->auth_login_user));
		free(s->auth_login_user);
	}
	smtp_server_session_closed(s->mta->server, s);
}

void smtp_session_drain(struct smtp_session *s)
{
	/* Idle between transactions: go now. Otherwise the next command
	 * gets the 421 (run()). */
	if (s->smtpd.state == MT_SMTPD_COMMAND && !s->tx.active &&
	    mt_smtpd_input_pending(&s->smtpd) == 0)
		mt_smtpd_finish(&s->smtpd, MT_OUTCOME_SHUTDOWN, 421,
				"4.3.2 %s Service shutting down", s->mta->hostname);
	else if (s->smtpd.state == MT_SMTPD_HANDSHAKE)
		smtp_session_close(s, MT_OUTCOME_SHUTDOWN, "shutdown during tls handshake");
}
