/* lmtp-session.c — one LMTP connection of mailtier-popstore: accepting it
 * (only from lmtp_clients) and the store's hook set on lib-mail's SMTP/LMTP
 * server engine (lib-mail/smtpd.h: it reads command lines and DATA, runs
 * the table, queues replies, runs the timers): the greeting, the LHLO
 * gate, the answers to unknown commands and bad lines, the error limit,
 * the idle timeout's words, the drain and the summary line. The commands
 * themselves are in lmtp-commands.c, the DATA phase in lmtp-data.c.
 *
 * Trust boundary: the peer is an MTA on an address in lmtp_clients, but
 * every byte it sends is still checked: command lines are bounded to 512
 * octets (RFC 2033 4.1 via RFC 5321 4.5.3.1.4), DATA ends only at
 * CRLF.CRLF (lib/dotcodec), a message with a bare CR/LF (under reject) or
 * a NUL octet (always; RFC 5322 3.5) is refused after its end (550 5.6.0,
 * lmtp-commands.c), a message is bounded by max_message_size and streamed
 * into the store as it arrives (lmtp-data.c: the session holds a few
 * chunks of it, not the message), and pipelined input is read ahead only
 * up to POPSTORE_INPUT_HIGH octets.
 * RFC 2033 (LMTP), RFC 5321 4.1.1.4 (DATA), 4.2 (replies), 3.8 (421 on
 * shutdown), RFC 2920 (PIPELINING: input is processed in order, a command
 * that waits on the directory or the store holds the rest back). */
#include "lmtp-session.h"
#include "alloc.h"
#include "dirsvc.h"
#include "store/store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>

void lmtp_close_after(struct lmtp_session *s, enum mt_conn_outcome outcome,
		      const char *reason)
{
	if (s->smtpd.state == MT_SMTPD_CLOSING)
		return;
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_CLOSING);
	/* The core closes once the reply is out. */
	mt_conn_close_after(&s->smtpd.conn, outcome, reason);
}

void lmtp_error(struct lmtp_session *s, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mt_smtpd_vreply(&s->smtpd, code, false, fmt, ap);
	va_end(ap);
	if (++s->errors >= s->ps->set->max_errors) {
		mt_slog(MT_LOG_WARNING, &s->log, "lmtp too many errors=%u: disconnecting",
			s->errors);
		mt_smtpd_reply(&s->smtpd, 421, "4.7.0 %s Too many errors, closing connection",
			   s->ps->hostname);
		lmtp_close_after(s, MT_OUTCOME_LIMIT, "errors");
	}
}

void lmtp_tx_reset(struct lmtp_session *s)
{
	struct lmtp_tx *tx = &s->tx;
	for (unsigned int i = 0; i < tx->rcpt_count; i++) {
		free(tx->rcpts[i].address);
		free(tx->rcpts[i].mailbox);
	}
	free(tx->rcpts);
	free(tx->sender);
	free(tx->delivery_id);
	mt_smtpd_content_reset(&s->smtpd);
	/* Not delivered: what was written of it goes (store.h). */
	mt_store_body_abort(&tx->store_body);
	memset(tx, 0, sizeof(*tx));
	s->log.queue_id[0] = '\0';
}

/* The engine's hooks (lib-mail/smtpd.h) */

static void lmtp_close(struct lmtp_session *s, enum mt_conn_outcome outcome,
		       const char *reason)
{
	mt_smtpd_close(&s->smtpd, outcome, reason);
}

static void greet(struct mt_smtpd *d)
{
	struct lmtp_session *s = LMTP_SESSION(d);
	mt_smtpd_reply(d, 220, "%s LMTP %s ready", s->ps->hostname, POPSTORE_NAME);
}

static void gate(struct mt_smtpd *d, struct mt_command_gate *gate)
{
	/* HELO/EHLO are refused by their handler (and count as errors),
	 * so the junk gate has no limit of its own here. */
	gate->state = LMTP_SESSION(d)->lhlo != NULL ? LMTP_CMD_GREETED : LMTP_CMD_NEW;
}

static void run(struct mt_smtpd *d, unsigned int index, const char *arg)
{
	lmtp_command_run(LMTP_SESSION(d), index, arg);
}

static void refuse(struct mt_smtpd *d, enum mt_command_verdict verdict,
		   const struct mt_command_call *call, const char *line)
{
	(void)call;
	(void)line;
	if (verdict == MT_COMMAND_BAD_STATE)
		lmtp_error(LMTP_SESSION(d), 503, "5.5.1 Send LHLO first");
	else
		lmtp_error(LMTP_SESSION(d), 500, "5.5.1 Unknown command");
}

static void bad_line(struct mt_smtpd *d, enum mt_line_status status, const char *error)
{
	struct lmtp_session *s = LMTP_SESSION(d);
	(void)error;
	switch (status) {
	case MT_LINE_BARE_LF:
	case MT_LINE_BARE_CR:
		lmtp_error(s, 500, "5.5.2 Command lines must end in CRLF");
		break;
	case MT_LINE_NUL:
		lmtp_error(s, 500, "5.5.2 NUL octet in command");
		break;
	default:
		lmtp_error(s, 500, "5.5.2 Line too long (at most %u octets)",
			   LMTP_LINE_MAX);
		break;
	}
}

/* Draining: the next command gets the 421 once no transaction is open. */
static bool next_command(struct mt_smtpd *d)
{
	struct lmtp_session *s = LMTP_SESSION(d);
	if (!s->drain || s->tx.active)
		return true;
	mt_smtpd_reply(d, 421, "4.3.2 %s Service shutting down", s->ps->hostname);
	lmtp_close_after(s, MT_OUTCOME_SHUTDOWN, "shutdown");
	return false;
}

static void conn_eof(struct mt_smtpd *d, bool error)
{
	struct lmtp_session *s = LMTP_SESSION(d);
	if (!error && d->state == MT_SMTPD_DATA)
		lmtp_close(s, MT_OUTCOME_CLIENT_CLOSED, "eof-in-data");
	else
		lmtp_close(s, error ? MT_OUTCOME_ERROR : MT_OUTCOME_CLIENT_CLOSED,
			   error ? "error" : "eof");
}

static void conn_idle_timeout(struct mt_smtpd *d)
{
	struct lmtp_session *s = LMTP_SESSION(d);
	mt_smtpd_reply(d, 421, "4.4.2 %s Idle timeout, closing connection",
		       s->ps->hostname);
	mt_smtpd_enter_state(d, MT_SMTPD_CLOSING);	/* the core closes once written */
}

/* Life cycle */

static void conn_free(struct mt_smtpd *d)
{
	struct lmtp_session *s = LMTP_SESSION(d);
	lmtp_tx_reset(s);
	free(s->lhlo);
	free(s->rcpt_pending);
	free(s);
}

/* Summary line, cancel what is in flight (the core frees the socket now
 * and the session from the loop: we may be inside one of its callbacks). */
static void conn_closed(struct mt_smtpd *d, const char *reason)
{
	struct lmtp_session *s = LMTP_SESSION(d);
	struct mt_buf counts = MT_BUF_INIT;
	mt_commands_summary(&lmtp_command_table, &s->smtpd.commands, "", &counts);
	popstore_metrics_session_end(s->ps, POPSTORE_LMTP, mt_conn_outcome(&d->conn),
				     &s->smtpd.commands);
	mt_slog(MT_LOG_INFO, &s->log,
		"lmtp disconnect peer=%s reason=%s%s delivered=%llu rejected=%llu errors=%u",
		s->peer, reason, mt_buf_cstr(&counts),
		(unsigned long long)s->delivered, (unsigned long long)s->rejected,
		s->errors);
	mt_buf_free(&counts);
	mt_dirsvc_request_cancel(&s->dir_req);
	/* A message cut off mid-DATA: its written chunks go, and no callback
	 * of the body reaches the session any more. */
	mt_store_body_abort(&s->tx.store_body);
	if (s->store_req != NULL) {
		/* A delivery in flight may still commit: the client got no
		 * 250, so it will retry (README.md, "Architecture": an acknowledgement means durable). */
		mt_store_req_cancel(s->store_req);
		s->store_req = NULL;
	}
	popstore_session_remove(s->ps);
}

static const struct mt_smtpd_hooks smtpd_hooks = {
	.greet = greet, .gate = gate, .run = run, .refuse = refuse,
	.bad_line = bad_line, .next_command = next_command,
	.content = lmtp_data_piece, .data_end = lmtp_data_done,
	.eof = conn_eof, .idle_timeout = conn_idle_timeout,
	.closed = conn_closed, .free = conn_free,
};

static const struct mt_smtpd_def smtpd_def = {
	.table = &lmtp_command_table, .hooks = &smtpd_hooks,
};


/* Best-effort one-line answer on a socket we will not keep. */
static void refuse_socket(int fd, const char *line)
{
	(void)send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

/* The client's address as RFC 5321 writes it in Received: lines. */
static void peer_ip_literal(const struct sockaddr *peer, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN];
	if (peer->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)peer;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			inet_ntop(AF_INET, in6->sin6_addr.s6_addr + 12, ip, sizeof(ip));
			snprintf(buf, size, "%s", ip);
		} else {
			inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
			snprintf(buf, size, "IPv6:%s", ip);
		}
	} else if (peer->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr,
			  ip, sizeof(ip));
		snprintf(buf, size, "%s", ip);
	} else
		snprintf(buf, size, "unknown");
}

void lmtp_session_accept(struct popstore *ps, int fd, const struct sockaddr *peer)
{
	char addr[MT_SOCKADDR_STRLEN], line[512];
	struct mt_logctx log = { .session_id = mt_session_id_new() };

	mt_sockaddr_str(peer, addr, sizeof(addr));
	if (!mt_cidr_match(ps->lmtp_clients, ps->n_lmtp_clients, peer)) {
		mt_slog(MT_LOG_WARNING, &log,
			"lmtp refused peer=%s reason=not-in-lmtp_clients", addr);
		ps->refused_connections++;
		popstore_metrics_session_end(ps, POPSTORE_LMTP, MT_OUTCOME_REFUSED, NULL);
		snprintf(line, sizeof(line), "554 5.7.1 %s LMTP access denied\r\n",
			 ps->hostname);
		refuse_socket(fd, line);
		return;
	}
	if (!popstore_store_serving(ps, POPSTORE_LMTP, line, sizeof(line))) {
		mt_slog(MT_LOG_INFO, &log, "lmtp refused peer=%s reason=not-serving", addr);
		ps->refused_connections++;
		popstore_metrics_session_end(ps, POPSTORE_LMTP, MT_OUTCOME_REFUSED, NULL);
		refuse_socket(fd, line);
		return;
	}
	if (!popstore_session_add(ps, true)) {
		mt_slog(MT_LOG_WARNING, &log,
			"lmtp refused peer=%s reason=max-sessions limit=%llu", addr,
			(unsigned long long)ps->set->max_sessions);
		ps->refused_connections++;
		popstore_metrics_session_end(ps, POPSTORE_LMTP, MT_OUTCOME_REFUSED, NULL);
		snprintf(line, sizeof(line),
			 "421 4.3.2 %s Too many sessions, try again later\r\n",
			 ps->hostname);
		refuse_socket(fd, line);
		return;
	}
	popstore_socket_setup(fd);
	ps->lmtp_connections++;

	struct lmtp_session *s = mt_xcalloc(1, sizeof(*s));
	s->ps = ps;
	s->log = log;
	memcpy(s->peer, addr, sizeof(s->peer));
	peer_ip_literal(peer, s->peer_ip, sizeof(s->peer_ip));
	struct bufferevent *bev = bufferevent_socket_new(mt_loop_base(ps->loop), fd,
							 BEV_OPT_CLOSE_ON_FREE |
							 BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL)
		mt_panic("bufferevent_socket_new failed");
	const struct mt_popstore_settings *set = ps->set;
	s->smtpd_settings = (struct mt_smtpd_settings){
		.max_line_length = LMTP_LINE_MAX,
		.bare_newlines = set->bare_newline_policy == MT_POPSTORE_BARE_NORMALIZE ?
			MT_DOT_BARE_NORMALIZE : MT_DOT_BARE_REJECT,
		.command_timeout = set->idle_timeout,
		.data_timeout = set->idle_timeout,
		.input_high = POPSTORE_INPUT_HIGH,
		.output_high = POPSTORE_OUTPUT_HIGH,
		.piece_size = LMTP_DATA_BUFFER,
		.reject_log = MT_LOG_DEBUG,
		.log_prefix = "lmtp ",
	};
	s->smtpd.log = &s->log;
	s->smtpd.peer_name = s->peer;

	mt_slog(MT_LOG_INFO, &s->log, "lmtp connect peer=%s", addr);
	mt_smtpd_start(&s->smtpd, &smtpd_def, &s->smtpd_settings, &ps->lmtp_sessions,
		       ps->loop, bev, false);
	if (mt_loop_is_draining(ps->loop)) {
		s->drain = true;
		mt_smtpd_resume(&s->smtpd);
	}
}

static void session_drain(struct mt_conn *conn)
{
	struct lmtp_session *s = LMTP_SESSION(MT_CONN_OWNER(conn, struct mt_smtpd, conn));
	s->drain = true;
	mt_smtpd_resume(&s->smtpd);
}

void lmtp_sessions_drain(struct popstore *ps)
{
	mt_conn_list_each(&ps->lmtp_sessions, session_drain);
}

void lmtp_sessions_free_all(struct popstore *ps)
{
	mt_conn_list_close_all(&ps->lmtp_sessions, "shutdown");
}
