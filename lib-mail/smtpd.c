/* smtpd.c — the SMTP/LMTP server session engine (see smtpd.h): the
 * connection core's callbacks, the input loop, command dispatch through
 * the tier's table, replies and their counters, the per-state timeouts, a
 * penalty-delayed reply and the switch to TLS. Content is smtpd-content.c.
 *
 * Trust boundary: every byte from the socket is the client's; command
 * lines through lib/lineio (bounded, no NUL, CRLF unless accept_bare_lf);
 * a line that held a credential (MT_CMD_SECRET, or any continuation line)
 * is wiped from the buffer once handled.
 * RFCs: 5321 3.1 (greeting), 4.2 (replies), 4.5.3.2 (a timeout per
 * state); 2920 (pipelining: one command at a time, in order); 3207 4.2
 * (plaintext pipelined after STARTTLS is discarded); 8314 (implicit TLS). */
#include "smtpd.h"
#include "alloc.h"
#include "loop.h"
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

const char *const mt_smtpd_state_names[MT_SMTPD_STATE_COUNT] = {
	[MT_SMTPD_HANDSHAKE] = "handshake",
	[MT_SMTPD_COMMAND] = "command",
	[MT_SMTPD_LINE] = "auth",
	[MT_SMTPD_DATA] = "data",
	[MT_SMTPD_BDAT] = "bdat",
	[MT_SMTPD_WAIT] = "wait",
	[MT_SMTPD_STARTTLS] = "starttls",
	[MT_SMTPD_CLOSING] = "closing",
};

static struct mt_smtpd *conn_smtpd(struct mt_conn *conn)
{
	return MT_CONN_OWNER(conn, struct mt_smtpd, conn);
}

bool mt_smtpd_is_closed(const struct mt_smtpd *d)
{
	return mt_conn_is_closed(&d->conn);
}

static bool receiving(enum mt_smtpd_state state)
{
	return state == MT_SMTPD_DATA || state == MT_SMTPD_BDAT;
}

/* Timers (the core runs them; RFC 5321 4.5.3.2: each state its own) */

static void arm_idle_timer(struct mt_smtpd *d)
{
	mt_conn_set_idle(&d->conn, receiving(d->state) ? d->set->data_timeout :
			 d->set->command_timeout);
}

void mt_smtpd_enter_state(struct mt_smtpd *d, enum mt_smtpd_state state)
{
	if (d->state == state)
		return;
	mt_slog(MT_LOG_DEBUG, d->log, "%sstate %s -> %s", d->set->log_prefix,
		mt_smtpd_state_names[d->state], mt_smtpd_state_names[state]);
	enum mt_smtpd_state old = d->state;
	d->state = state;
	if (state == MT_SMTPD_COMMAND &&
	    (receiving(old) || old == MT_SMTPD_WAIT))
		mt_line_reader_reset(&d->reader);
	if (receiving(state) != receiving(old))
		arm_idle_timer(d);
	if (d->def->hooks->state_changed != NULL)
		d->def->hooks->state_changed(d, old);
}

/* Replies */

static void count_reply(struct mt_smtpd *d, int code)
{
	if (code >= 500)
		d->errors++;
	/* 334 and 354 ask for more; the command is done at its final reply. */
	if (code == 334 || code == 354)
		return;
	mt_commands_reply_class(&d->commands, mt_reply_class_smtp(code));
}

static void write_reply(struct mt_smtpd *d, int code, bool more,
			const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
static void write_reply(struct mt_smtpd *d, int code, bool more,
			const char *fmt, va_list ap)
{
	struct mt_buf text = MT_BUF_INIT;
	mt_buf_vappendf(&text, fmt, ap);
	mt_line_reply(mt_conn_output(&d->conn), code, more, "%s", mt_buf_cstr(&text));
	if (!more && code >= 400)
		mt_slog(d->set->reject_log, d->log, "%sreject cmd=%s from %s: %d %s",
			d->set->log_prefix,
			mt_commands_current_name(d->def->table, &d->commands),
			d->peer_name, code, mt_buf_cstr(&text));
	mt_buf_free(&text);
}

void mt_smtpd_vreply(struct mt_smtpd *d, int code, bool more, const char *fmt,
		     va_list ap)
{
	if (mt_smtpd_is_closed(d))
		return;
	write_reply(d, code, more, fmt, ap);
	if (!more)
		count_reply(d, code);
}

void mt_smtpd_reply(struct mt_smtpd *d, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mt_smtpd_vreply(d, code, false, fmt, ap);
	va_end(ap);
}

void mt_smtpd_reply_more(struct mt_smtpd *d, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mt_smtpd_vreply(d, code, true, fmt, ap);
	va_end(ap);
}

static void delayed_reply_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mt_smtpd *d = arg;
	(void)fd;
	(void)what;
	char *text = d->delayed_text;
	d->delayed_text = NULL;
	/* A timeout or the drain may have ended the wait meanwhile. */
	if (d->state == MT_SMTPD_WAIT && text != NULL) {
		mt_smtpd_reply(d, d->delayed_code, "%s", text);
		mt_smtpd_enter_state(d, MT_SMTPD_COMMAND);
		arm_idle_timer(d);
		mt_smtpd_resume(d);
	}
	free(text);
}

bool mt_smtpd_reply_delayed(struct mt_smtpd *d, uint64_t delay_ms, int code,
			    const char *fmt, ...)
{
	struct mt_buf text = MT_BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	mt_buf_vappendf(&text, fmt, ap);
	va_end(ap);
	if (delay_ms == 0 || mt_smtpd_is_closed(d)) {
		mt_smtpd_reply(d, code, "%s", mt_buf_cstr(&text));
		mt_buf_free(&text);
		return false;
	}
	if (d->delay_timer == NULL &&
	    (d->delay_timer = evtimer_new(mt_loop_base(d->conn.loop),
					  delayed_reply_cb, d)) == NULL)
		mt_panic("evtimer_new failed");
	free(d->delayed_text);
	d->delayed_code = code;
	d->delayed_text = mt_buf_steal(&text);
	struct timeval tv = { (time_t)(delay_ms / 1000),
			      (suseconds_t)(delay_ms % 1000) * 1000 };
	mt_smtpd_enter_state(d, MT_SMTPD_WAIT);
	/* Our penalty is not the client's idleness: in MT_SMTPD_WAIT the idle
	 * timer does not run down (conn_busy); command_timeout starts again
	 * once the reply is sent (max_session_time still runs). */
	evtimer_add(d->delay_timer, &tv);
	return true;
}

void mt_smtpd_vfinish(struct mt_smtpd *d, enum mt_conn_outcome outcome, int code,
		      const char *fmt, va_list ap)
{
	if (mt_smtpd_is_closed(d) || d->state == MT_SMTPD_CLOSING)
		return;
	write_reply(d, code, false, fmt, ap);
	count_reply(d, code);
	mt_smtpd_enter_state(d, MT_SMTPD_CLOSING);
	/* Nothing more is read; the core closes once the reply is out, or
	 * at the idle timeout if the client does not take it. */
	arm_idle_timer(d);
	mt_conn_close_after(&d->conn, outcome, "done");
}

void mt_smtpd_finish(struct mt_smtpd *d, enum mt_conn_outcome outcome, int code,
		     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mt_smtpd_vfinish(d, outcome, code, fmt, ap);
	va_end(ap);
}

size_t mt_smtpd_input_pending(struct mt_smtpd *d)
{
	return evbuffer_get_length(mt_conn_input(&d->conn));
}

/* Dispatch */

static void dispatch(struct mt_smtpd *d, const char *line)
{
	const struct mt_smtpd_hooks *hooks = d->def->hooks;
	struct mt_command_gate gate = { 0 };
	struct mt_command_call call;
	hooks->gate(d, &gate);
	enum mt_command_verdict verdict =
		mt_command_check(d->def->table, &d->commands, &gate, line, &call);
	if (verdict != MT_COMMAND_RUN) {
		hooks->refuse(d, verdict, &call, line);
		return;
	}
	/* RFC 2920 3.1: these end a group; input already waiting after them
	 * is improper pipelining (STARTTLS discards it, DATA may refuse it). */
	if ((call.def->flags & MT_CMD_GROUP_END) != 0 && mt_smtpd_input_pending(d) > 0)
		mt_slog(MT_LOG_DEBUG, d->log, "%simproper pipelining after %s from %s",
			d->set->log_prefix, call.def->name, d->peer_name);
	hooks->run(d, call.index, call.arg);
}

/* One command or continuation line; false when none is complete yet. */
static bool read_command(struct mt_smtpd *d)
{
	const struct mt_smtpd_hooks *hooks = d->def->hooks;
	const char *error;
	enum mt_line_status status = mt_line_read(&d->reader,
		mt_conn_input(&d->conn), &d->line, &error);

	switch (status) {
	case MT_LINE_NEED_MORE:
		return false;
	case MT_LINE_OK: {
		bool secret = d->state == MT_SMTPD_LINE;
		if (secret)
			hooks->line(d, mt_buf_cstr(&d->line));
		else {
			dispatch(d, mt_buf_cstr(&d->line));
			secret = (d->commands.flags & MT_CMD_SECRET) != 0;
		}
		/* Credentials are not left in the buffer for the next line to
		 * overwrite only in part (the session may have closed and
		 * freed it meanwhile). */
		if (secret && d->line.data != NULL)
			explicit_bzero(d->line.data, d->line.cap);
		return true;
	}
	case MT_LINE_TOO_LONG:
		error = NULL;
		/* fall through */
	default:
		mt_commands_forget(&d->commands);
		if (d->state == MT_SMTPD_LINE)
			hooks->line(d, NULL);
		hooks->bad_line(d, status, error);
		return true;
	}
}

static void process_input(struct mt_smtpd *d)
{
	const struct mt_smtpd_hooks *hooks = d->def->hooks;
	while (!mt_smtpd_is_closed(d)) {
		if (mt_conn_output_pending(&d->conn) > d->set->output_high) {
			/* Resumed by conn_output once the client reads. */
			d->input_paused = true;
			return;
		}
		bool progress;
		switch (d->state) {
		case MT_SMTPD_COMMAND:
			if (hooks->next_command != NULL && !hooks->next_command(d))
				return;
			/* fall through */
		case MT_SMTPD_LINE:
			progress = read_command(d);
			break;
		case MT_SMTPD_DATA:
			progress = mt_smtpd_data_input(d);
			break;
		case MT_SMTPD_BDAT:
			progress = mt_smtpd_bdat_input(d);
			break;
		default:
			return;
		}
		if (!progress)
			return;
	}
}

void mt_smtpd_resume(struct mt_smtpd *d)
{
	d->content.paused = false;
	if (!mt_smtpd_is_closed(d))
		process_input(d);
}

/* The connection core's callbacks */

static void greet(struct mt_smtpd *d)
{
	mt_smtpd_enter_state(d, MT_SMTPD_COMMAND);
	d->greeted = true;
	d->def->hooks->greet(d);
}

static void conn_input(struct mt_conn *conn)
{
	process_input(conn_smtpd(conn));
}

void mt_smtpd_starttls(struct mt_smtpd *d)
{
	mt_smtpd_enter_state(d, MT_SMTPD_STARTTLS);
}

/* STARTTLS: the 220 is on the wire; wrap the socket in TLS. Whatever the
 * client pipelined after the command is dropped with the plain
 * bufferevent (RFC 3207 4.2, CVE-2011-0411). */
static void start_tls(struct mt_smtpd *d)
{
	size_t discarded = 0;
	const char *error;
	struct bufferevent *tls_bev = mt_tls_bev_starttls(d->tls_server,
		&d->conn.bev, NULL, &discarded, &error);
	if (tls_bev == NULL) {
		mt_slog(MT_LOG_WARNING, d->log, "%sSTARTTLS from %s failed: %s",
			d->set->log_prefix, d->peer_name, error);
		mt_smtpd_close(d, MT_OUTCOME_ERROR, "starttls failed");
		return;
	}
	if (discarded > 0)
		mt_slog(MT_LOG_WARNING, d->log, "%sdiscarded %zu octets pipelined "
			"after STARTTLS from %s (RFC 3207 4.2)", d->set->log_prefix,
			discarded, d->peer_name);
	mt_line_reader_reset(&d->reader);
	mt_smtpd_enter_state(d, MT_SMTPD_HANDSHAKE);
	mt_conn_set_bev(&d->conn, tls_bev);
}

static void conn_output(struct mt_conn *conn)
{
	struct mt_smtpd *d = conn_smtpd(conn);
	if (d->state == MT_SMTPD_STARTTLS) {
		start_tls(d);
		return;
	}
	if (d->input_paused) {
		d->input_paused = false;
		process_input(d);
	}
}

static void conn_connected(struct mt_conn *conn)
{
	struct mt_smtpd *d = conn_smtpd(conn);
	SSL *ssl = bufferevent_openssl_get_ssl(d->conn.bev);
	d->tls = true;
	if (ssl != NULL)
		mt_tls_describe(ssl, d->tls_info, sizeof(d->tls_info));
	mt_slog(MT_LOG_INFO, d->log, "%stls from %s: %s", d->set->log_prefix,
		d->peer_name, d->tls_info);
	if (d->def->hooks->tls_started != NULL)
		d->def->hooks->tls_started(d);
	if (!d->greeted)
		greet(d);
	else
		mt_smtpd_enter_state(d, MT_SMTPD_COMMAND);
	process_input(d);
}

static void conn_eof(struct mt_conn *conn, bool error)
{
	struct mt_smtpd *d = conn_smtpd(conn);
	d->def->hooks->eof(d, error);
}

/* Waiting on the daemon (or a piece waits for it): the client is not idle. */
static bool conn_busy(struct mt_conn *conn)
{
	struct mt_smtpd *d = conn_smtpd(conn);
	if (d->state == MT_SMTPD_WAIT || d->content.paused)
		return true;
	return d->def->hooks->busy != NULL && d->def->hooks->busy(d);
}

static void conn_idle_timeout(struct mt_conn *conn)
{
	struct mt_smtpd *d = conn_smtpd(conn);
	d->def->hooks->idle_timeout(d);
}

static void conn_session_timeout(struct mt_conn *conn)
{
	struct mt_smtpd *d = conn_smtpd(conn);
	d->def->hooks->session_timeout(d);
}

static void conn_closed(struct mt_conn *conn, const char *reason)
{
	struct mt_smtpd *d = conn_smtpd(conn);
	d->def->hooks->closed(d, reason);
	mt_smtpd_content_reset(d);
	mt_buf_free(&d->line);
	if (d->delay_timer != NULL) {
		event_free(d->delay_timer);
		d->delay_timer = NULL;
	}
	MT_FREE(&d->delayed_text);
	d->state = MT_SMTPD_CLOSING;
}

static void conn_free(struct mt_conn *conn)
{
	struct mt_smtpd *d = conn_smtpd(conn);
	mt_commands_free(&d->commands);
	d->def->hooks->free(d);
}

static const struct mt_conn_ops conn_ops = {
	.input = conn_input, .output = conn_output, .connected = conn_connected,
	.eof = conn_eof, .busy = conn_busy, .idle_timeout = conn_idle_timeout,
	.session_timeout = conn_session_timeout,
	.closed = conn_closed, .free = conn_free,
};

/* Life cycle */

void mt_smtpd_start(struct mt_smtpd *d, const struct mt_smtpd_def *def,
		    const struct mt_smtpd_settings *set, struct mt_conn_list *list,
		    struct mt_loop *loop, struct bufferevent *bev, bool implicit_tls)
{
	d->def = def;
	d->set = set;
	mt_commands_init(&d->commands, def->table);
	mt_line_reader_init(&d->reader, set->max_line_length,
			    set->accept_bare_lf ? MT_LINE_ACCEPT_LF : MT_LINE_STRICT_CRLF);
	/* Input is read at most input_high ahead; the write callback comes
	 * once everything is written (STARTTLS and the paused input wait
	 * for that). */
	mt_conn_start(&d->conn, list, loop, bev, &conn_ops, set->command_timeout,
		      set->input_high, 0);
	if (set->max_session_time != 0)
		mt_conn_set_lifetime(&d->conn, set->max_session_time);
	d->state = MT_SMTPD_HANDSHAKE;	/* so greet() logs the change */
	if (!implicit_tls)
		greet(d);
}

void mt_smtpd_close(struct mt_smtpd *d, enum mt_conn_outcome outcome,
		    const char *reason)
{
	mt_conn_close(&d->conn, outcome, reason);
}
