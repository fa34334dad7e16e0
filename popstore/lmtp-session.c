/* lmtp-session.c — one LMTP connection of mailtier-popstore: accepting it
 * (only from lmtp_clients), reading command lines and DATA, queueing
 * replies, idle timeout, drain and the deferred free. The commands
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
 * The socket, idle timer, close-after-flush and deferred free are the
 * connection core's (lib-mail/conn.h); here are its ops for LMTP.
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

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

const char *const lmtp_state_names[LMTP_STATE_COUNT] = {
	[LMTP_STATE_COMMAND] = "command",
	[LMTP_STATE_RCPT_WAIT] = "rcpt-wait",
	[LMTP_STATE_DATA] = "data",
	[LMTP_STATE_DELIVER] = "deliver",
	[LMTP_STATE_CLOSING] = "closing",
};

static void lmtp_process(struct lmtp_session *s);
static void lmtp_close(struct lmtp_session *s, const char *reason);

void lmtp_enter_state(struct lmtp_session *s, enum lmtp_state state)
{
	if (s->state == state)
		return;
	mt_slog(MT_LOG_DEBUG, &s->log, "lmtp state %s -> %s",
		lmtp_state_names[s->state], lmtp_state_names[state]);
	s->state = state;
}

static void lmtp_vreply(struct lmtp_session *s, int code, bool more,
			const char *fmt, va_list ap)
{
	char text[LMTP_LINE_MAX];
	vsnprintf(text, sizeof(text), fmt, ap);
	mt_line_reply(mt_conn_output(&s->conn), code, more, "%s", text);
	/* The command's final reply (DATA's first recipient reply). */
	if (!more && code != 354)
		mt_commands_reply(&s->commands, code < 400);
	if (code >= 400)
		mt_slog(MT_LOG_DEBUG, &s->log, "lmtp reply=\"%d %s\"", code, text);
}

void lmtp_reply(struct lmtp_session *s, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lmtp_vreply(s, code, false, fmt, ap);
	va_end(ap);
}

void lmtp_reply_more(struct lmtp_session *s, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lmtp_vreply(s, code, true, fmt, ap);
	va_end(ap);
}

void lmtp_close_after(struct lmtp_session *s, const char *reason)
{
	if (s->state == LMTP_STATE_CLOSING)
		return;
	lmtp_enter_state(s, LMTP_STATE_CLOSING);
	/* The core closes once the reply is out. */
	mt_conn_close_after(&s->conn, reason);
}

void lmtp_error(struct lmtp_session *s, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lmtp_vreply(s, code, false, fmt, ap);
	va_end(ap);
	if (++s->errors >= s->ps->set->max_errors) {
		mt_slog(MT_LOG_WARNING, &s->log, "lmtp too many errors=%u: disconnecting",
			s->errors);
		lmtp_reply(s, 421, "4.7.0 %s Too many errors, closing connection",
			   s->ps->hostname);
		lmtp_close_after(s, "errors");
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
	mt_buf_free(&tx->body);
	/* Not delivered: what was written of it goes (store.h). */
	mt_store_body_abort(&tx->store_body);
	memset(tx, 0, sizeof(*tx));
	s->log.queue_id[0] = '\0';
}

void lmtp_resume(struct lmtp_session *s)
{
	if (s->state == LMTP_STATE_COMMAND || s->state == LMTP_STATE_DATA)
		lmtp_process(s);
}

/* Read and run what the input holds, until it is used up or a command
 * waits for the directory or the store. */
static void lmtp_process(struct lmtp_session *s)
{
	struct evbuffer *in = mt_conn_input(&s->conn);
	struct evbuffer *out = mt_conn_output(&s->conn);
	const char *error;

	for (;;) {
		if (s->state == LMTP_STATE_DATA) {
			if (!lmtp_data_read(s))
				return;
			lmtp_data_end(s);
			continue;
		}
		if (s->state != LMTP_STATE_COMMAND)
			return;
		/* A client that does not read its replies stops being read. */
		if (evbuffer_get_length(out) > POPSTORE_OUTPUT_HIGH)
			return;
		if (s->drain && !s->tx.active) {
			lmtp_reply(s, 421, "4.3.2 %s Service shutting down",
				   s->ps->hostname);
			lmtp_close_after(s, "shutdown");
			return;
		}
		enum mt_line_status st = mt_line_read(&s->reader, in, &s->line, &error);
		switch (st) {
		case MT_LINE_NEED_MORE:
			return;
		case MT_LINE_OK:
			lmtp_command_dispatch(s, mt_buf_cstr(&s->line));
			break;
		case MT_LINE_TOO_LONG:
			lmtp_error(s, 500, "5.5.2 Line too long (at most %u octets)",
				   LMTP_LINE_MAX);
			break;
		case MT_LINE_BARE_LF:
		case MT_LINE_BARE_CR:
			lmtp_error(s, 500, "5.5.2 Command lines must end in CRLF");
			break;
		case MT_LINE_NUL:
			lmtp_error(s, 500, "5.5.2 NUL octet in command");
			break;
		}
	}
}

/* The connection core's ops (lib-mail/conn.h) */

static struct lmtp_session *conn_session(struct mt_conn *conn)
{
	return MT_CONN_OWNER(conn, struct lmtp_session, conn);
}

static void conn_input(struct mt_conn *conn)
{
	lmtp_process(conn_session(conn));	/* input, or output was over the mark */
}

static void conn_eof(struct mt_conn *conn, bool error)
{
	struct lmtp_session *s = conn_session(conn);
	if (!error && s->state == LMTP_STATE_DATA)
		lmtp_close(s, "eof-in-data");
	else
		lmtp_close(s, error ? "error" : "eof");
}

static bool conn_busy(struct mt_conn *conn)
{
	struct lmtp_session *s = conn_session(conn);
	return s->state == LMTP_STATE_RCPT_WAIT || s->state == LMTP_STATE_DELIVER ||
		(s->state == LMTP_STATE_DATA && s->tx.paused);
}

static void conn_idle_timeout(struct mt_conn *conn)
{
	struct lmtp_session *s = conn_session(conn);
	lmtp_reply(s, 421, "4.4.2 %s Idle timeout, closing connection",
		   s->ps->hostname);
	lmtp_enter_state(s, LMTP_STATE_CLOSING);	/* the core closes once written */
}

/* Life cycle */

static void conn_free(struct mt_conn *conn)
{
	struct lmtp_session *s = conn_session(conn);
	lmtp_tx_reset(s);
	mt_buf_free(&s->line);
	free(s->lhlo);
	free(s->rcpt_pending);
	mt_commands_free(&s->commands);
	free(s);
}

/* Summary line, cancel what is in flight (the core frees the socket now
 * and the session from the loop: we may be inside one of its callbacks). */
static void conn_closed(struct mt_conn *conn, const char *reason)
{
	struct lmtp_session *s = conn_session(conn);
	struct mt_buf counts = MT_BUF_INIT;
	mt_commands_summary(&lmtp_command_table, &s->commands, "", &counts);
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
	lmtp_enter_state(s, LMTP_STATE_CLOSING);
	popstore_session_remove(s->ps);
}

static const struct mt_conn_ops conn_ops = {
	.input = conn_input, .eof = conn_eof, .busy = conn_busy,
	.idle_timeout = conn_idle_timeout, .closed = conn_closed, .free = conn_free,
};

static void lmtp_close(struct lmtp_session *s, const char *reason)
{
	mt_conn_close(&s->conn, reason);
}

/* Best-effort one-line answer on a socket we will not keep. */
static void refuse(int fd, const char *line)
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
	char addr[MT_SOCKADDR_STRLEN], line[256];
	struct mt_logctx log = { .session_id = mt_session_id_new() };

	mt_sockaddr_str(peer, addr, sizeof(addr));
	if (!mt_cidr_match(ps->lmtp_clients, ps->n_lmtp_clients, peer)) {
		mt_slog(MT_LOG_WARNING, &log,
			"lmtp refused peer=%s reason=not-in-lmtp_clients", addr);
		ps->refused_connections++;
		snprintf(line, sizeof(line), "554 5.7.1 %s LMTP access denied\r\n",
			 ps->hostname);
		refuse(fd, line);
		return;
	}
	if (!popstore_session_add(ps)) {
		mt_slog(MT_LOG_WARNING, &log,
			"lmtp refused peer=%s reason=max-sessions limit=%llu", addr,
			(unsigned long long)ps->set->max_sessions);
		ps->refused_connections++;
		snprintf(line, sizeof(line),
			 "421 4.3.2 %s Too many sessions, try again later\r\n",
			 ps->hostname);
		refuse(fd, line);
		return;
	}
	popstore_socket_setup(fd);
	ps->lmtp_connections++;

	struct lmtp_session *s = mt_xcalloc(1, sizeof(*s));
	s->ps = ps;
	s->log = log;
	memcpy(s->peer, addr, sizeof(s->peer));
	peer_ip_literal(peer, s->peer_ip, sizeof(s->peer_ip));
	s->state = LMTP_STATE_COMMAND;
	mt_commands_init(&s->commands, &lmtp_command_table);
	mt_line_reader_init(&s->reader, LMTP_LINE_MAX, MT_LINE_STRICT_CRLF);
	struct bufferevent *bev = bufferevent_socket_new(mt_loop_base(ps->loop), fd,
							 BEV_OPT_CLOSE_ON_FREE |
							 BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL)
		mt_panic("bufferevent_socket_new failed");
	mt_conn_start(&s->conn, &ps->lmtp_sessions, ps->loop, bev, &conn_ops,
		      (unsigned int)ps->set->idle_timeout, POPSTORE_INPUT_HIGH, 0);

	mt_slog(MT_LOG_INFO, &s->log, "lmtp connect peer=%s", addr);
	lmtp_reply(s, 220, "%s LMTP %s ready", ps->hostname, POPSTORE_NAME);
	if (mt_loop_is_draining(ps->loop)) {
		s->drain = true;
		lmtp_process(s);
	}
}

static void session_drain(struct mt_conn *conn)
{
	struct lmtp_session *s = conn_session(conn);
	s->drain = true;
	lmtp_resume(s);
}

void lmtp_sessions_drain(struct popstore *ps)
{
	mt_conn_list_each(&ps->lmtp_sessions, session_drain);
}

void lmtp_sessions_free_all(struct popstore *ps)
{
	mt_conn_list_close_all(&ps->lmtp_sessions, "shutdown");
}
