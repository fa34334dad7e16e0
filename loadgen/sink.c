/* sink.c — the SMTP sink (see sink.h): one session per accepted
 * connection, commands dispatched through a const command table, message
 * data read line by line and discarded.
 * Trust boundary: untrusted SMTP client input; every limit is named in
 * sink.h. RFC 5321 3.3, 4.1.1, 4.1.1.4, 4.2, 4.5.2, 4.5.3.2; RFC 2920. */
#include "sink.h"

#include "errors.h"
#include "alloc.h"
#include "buf.h"
#include "ledger.h"
#include "lineio.h"
#include "log.h"
#include "loop.h"
#include "session.h"
#include "command.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

/* The session's states, for the command engine's state gate. */
#define S_NEW MT_CMD_STATE(0)		/* before EHLO/HELO */
#define S_GREETED MT_CMD_STATE(1)	/* no transaction */
#define S_MAIL MT_CMD_STATE(2)		/* MAIL, no recipient yet */
#define S_RCPT MT_CMD_STATE(3)		/* with a recipient */

enum sink_cmd_id { CMD_EHLO, CMD_HELO, CMD_MAIL, CMD_RCPT, CMD_DATA,
		   CMD_RSET, CMD_NOOP, CMD_QUIT, CMD_COUNT };

struct sink_conn {
	struct lg_sink *sink;
	struct sink_conn *prev, *next;
	struct bufferevent *bev;
	struct event *idle;
	struct mt_line_reader reader;
	struct mt_buf line;
	struct mt_logctx log;
	bool helo, in_mail, in_data, in_headers, closing, dead;
	unsigned int rcpts;		/* of the current transaction */
	/* The message's id header value (the first one), handed over when
	 * the message is complete: a message has arrived when its final
	 * "." has, not when its headers have (a run that ended on the
	 * header would close the connection under the rest of it). A
	 * longer value is cut to one that never parses as an id. */
	char id[LG_ID_MAX];
	size_t id_len;
	bool have_id;
	uint64_t octets;
	unsigned int bad_commands;
	struct mt_commands commands;	/* lib-mail/command: counters */
	struct lg_ledger_rx *ledger_rx;	/* with a ledger: the text received */
};

struct lg_sink {
	struct mt_loop *loop;
	struct mt_listener *listener;
	struct lg_tracker *tracker;
	lg_sink_arrival_cb *arrival_cb;
	void *arrival_context;
	struct lg_sink_counts counts;
	struct lg_ledger *ledger;
	struct sink_conn *conns;	/* open */
	struct sink_conn *dead;		/* closed, to free from the loop */
	struct event *reaper;
};

struct sink_command {
	struct mt_command_def def;
	void (*handler)(struct sink_conn *conn, const char *args);
};

static void cmd_ehlo(struct sink_conn *conn, const char *args);
static void cmd_helo(struct sink_conn *conn, const char *args);
static void cmd_mail(struct sink_conn *conn, const char *args);
static void cmd_rcpt(struct sink_conn *conn, const char *args);
static void cmd_data(struct sink_conn *conn, const char *args);
static void cmd_rset(struct sink_conn *conn, const char *args);
static void cmd_noop(struct sink_conn *conn, const char *args);
static void cmd_quit(struct sink_conn *conn, const char *args);

static const struct sink_command sink_commands[CMD_COUNT] = {
	[CMD_EHLO] = { { "EHLO", 0 }, cmd_ehlo },
	[CMD_HELO] = { { "HELO", 0 }, cmd_helo },
	[CMD_MAIL] = { { "MAIL", S_GREETED | S_MAIL | S_RCPT }, cmd_mail },
	[CMD_RCPT] = { { "RCPT", S_MAIL | S_RCPT }, cmd_rcpt },
	[CMD_DATA] = { { "DATA", S_RCPT }, cmd_data },
	[CMD_RSET] = { { "RSET", 0 }, cmd_rset },
	[CMD_NOOP] = { { "NOOP", 0 }, cmd_noop },
	[CMD_QUIT] = { { "QUIT", 0 }, cmd_quit },
};
static const struct mt_command_table sink_command_table = MT_COMMAND_TABLE(sink_commands);

static struct evbuffer *out_of(struct sink_conn *conn)
{
	return bufferevent_get_output(conn->bev);
}

static void reset_transaction(struct sink_conn *conn)
{
	conn->in_mail = false;
	conn->in_data = false;
	conn->rcpts = 0;
	conn->octets = 0;
	conn->have_id = false;
	conn->id_len = 0;
	if (conn->ledger_rx != NULL)
		lg_ledger_rx_clear_rcpts(conn->ledger_rx);
}

static void cmd_ehlo(struct sink_conn *conn, const char *args)
{
	reset_transaction(conn);
	conn->helo = true;
	mt_line_reply(out_of(conn), 250, true, "mailtier-load sink");
	mt_line_reply(out_of(conn), 250, true, "PIPELINING");
	mt_line_reply(out_of(conn), 250, false, "8BITMIME");
}

static void cmd_helo(struct sink_conn *conn, const char *args)
{
	reset_transaction(conn);
	conn->helo = true;
	mt_line_reply(out_of(conn), 250, false, "mailtier-load sink");
}

static void cmd_mail(struct sink_conn *conn, const char *args)
{
	if (strncasecmp(args, "FROM:", 5) != 0) {
		mt_line_reply(out_of(conn), 501, false, "5.5.4 Syntax: MAIL FROM:<address>");
		return;
	}
	reset_transaction(conn);
	conn->in_mail = true;
	mt_line_reply(out_of(conn), 250, false, "2.1.0 Ok");
}

static void cmd_rcpt(struct sink_conn *conn, const char *args)
{
	if (strncasecmp(args, "TO:", 3) != 0) {
		mt_line_reply(out_of(conn), 501, false, "5.5.4 Syntax: RCPT TO:<address>");
		return;
	}
	if (conn->rcpts >= LG_SINK_MAX_RCPTS) {
		mt_line_reply(out_of(conn), 452, false, "4.5.3 Too many recipients");
		return;
	}
	conn->rcpts++;
	if (conn->ledger_rx != NULL)
		lg_ledger_rx_add_rcpt(conn->ledger_rx, args);
	mt_line_reply(out_of(conn), 250, false, "2.1.5 Ok");
}

static void cmd_data(struct sink_conn *conn, const char *args)
{
	conn->in_data = true;
	conn->in_headers = true;
	conn->octets = 0;
	conn->have_id = false;
	conn->id_len = 0;
	if (conn->ledger_rx != NULL)
		lg_ledger_rx_begin(conn->ledger_rx);
	mt_line_reply(out_of(conn), 354, false, "End data with <CR><LF>.<CR><LF>");
}

static void cmd_rset(struct sink_conn *conn, const char *args)
{
	reset_transaction(conn);
	mt_line_reply(out_of(conn), 250, false, "2.0.0 Ok");
}

static void cmd_noop(struct sink_conn *conn, const char *args)
{
	mt_line_reply(out_of(conn), 250, false, "2.0.0 Ok");
}

static void cmd_quit(struct sink_conn *conn, const char *args)
{
	mt_line_reply(out_of(conn), 221, false, "2.0.0 Bye");
	conn->closing = true;
}

static void conn_close(struct sink_conn *conn)
{
	struct lg_sink *sink = conn->sink;
	static const struct timeval now = { 0, 0 };

	if (conn->dead)
		return;
	conn->dead = true;
	struct mt_buf summary = MT_BUF_INIT;
	mt_commands_summary(&sink_command_table, &conn->commands, "", &summary);
	mt_slog(MT_LOG_DEBUG, &conn->log, "sink session closed:%s", mt_buf_cstr(&summary));
	mt_buf_free(&summary);
	bufferevent_disable(conn->bev, EV_READ | EV_WRITE);
	evtimer_del(conn->idle);
	/* Move to the dead list; freed from the loop after this callback. */
	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		sink->conns = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
	conn->prev = NULL;
	conn->next = sink->dead;
	sink->dead = conn;
	sink->counts.active--;
	evtimer_add(sink->reaper, &now);
}

static void conn_free(struct sink_conn *conn)
{
	bufferevent_free(conn->bev);
	event_free(conn->idle);
	mt_buf_free(&conn->line);
	lg_ledger_rx_free(&conn->ledger_rx);
	mt_commands_free(&conn->commands);
	free(conn);
}

static void reaper_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg_sink *sink = arg;

	while (sink->dead != NULL) {
		struct sink_conn *conn = sink->dead;
		sink->dead = conn->next;
		conn_free(conn);
	}
}

/* One line of message data (RFC 5321 4.5.2: a leading "." is stuffed;
 * 4.1.1.4: "." alone ends the data). */
static void data_line(struct sink_conn *conn, const char *line, size_t len)
{
	struct lg_sink *sink = conn->sink;

	if (len == 1 && line[0] == '.') {
		sink->counts.transactions++;
		sink->counts.rcpts += conn->rcpts;
		sink->counts.octets += conn->octets;
		mt_line_reply(out_of(conn), 250, false, "2.0.0 Ok: discarded");
		if (conn->ledger_rx != NULL)
			lg_ledger_sink(sink->ledger, conn->ledger_rx);
		if (conn->have_id) {
			sink->counts.with_id++;
			if (sink->arrival_cb != NULL)
				sink->arrival_cb(conn->id, conn->id_len, conn->rcpts,
						 sink->arrival_context);
			else if (sink->tracker != NULL)
				lg_tracker_seen(sink->tracker, conn->id, conn->id_len,
						conn->rcpts, lg_now_us());
		}
		reset_transaction(conn);
		return;
	}
	if (len > 0 && line[0] == '.') {
		line++;
		len--;
	}
	conn->octets += len + 2;
	if (conn->ledger_rx != NULL)
		lg_ledger_rx_line(conn->ledger_rx, line, len);
	if (!conn->in_headers)
		return;
	if (len == 0) {
		conn->in_headers = false;
		return;
	}
	size_t value_len;
	const char *value = lg_id_header_value(line, len, &value_len);
	if (value != NULL && !conn->have_id) {
		conn->id_len = value_len < sizeof(conn->id) ? value_len : sizeof(conn->id) - 1;
		memcpy(conn->id, value, conn->id_len);
		conn->id[conn->id_len] = '\0';
		conn->have_id = true;
	}
}

static void command_line(struct sink_conn *conn, const char *line)
{
	const struct mt_command_gate gate = {
		.state = !conn->helo ? S_NEW : !conn->in_mail ? S_GREETED :
			conn->rcpts == 0 ? S_MAIL : S_RCPT,
	};
	struct mt_command_call call;
	enum mt_command_verdict verdict =
		mt_command_check(&sink_command_table, &conn->commands, &gate, line, &call);
	const char *args = call.arg;
	while (*args == ' ')	/* a sink is lenient: more spaces are fine */
		args++;
	if (verdict == MT_COMMAND_RUN) {
		mt_commands_reply(&conn->commands, true);
		sink_commands[call.index].handler(conn, args);
	} else {
		mt_commands_reply(&conn->commands, false);
		conn->sink->counts.bad_commands++;
		conn->bad_commands++;
		if (verdict == MT_COMMAND_UNKNOWN)
			mt_line_reply(out_of(conn), 502, false, "5.5.2 Command not recognized");
		else
			mt_line_reply(out_of(conn), 503, false, "5.5.1 Bad sequence of commands");
	}
	if (conn->bad_commands > LG_SINK_MAX_BAD_COMMANDS) {
		mt_line_reply(out_of(conn), 421, false, "4.7.0 Too many errors");
		conn->closing = true;
	}
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct sink_conn *conn = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	const char *error;
	static const struct timeval idle = {
		LG_SINK_IDLE_MSECS / 1000, (LG_SINK_IDLE_MSECS % 1000) * 1000
	};

	if (!conn->closing)
		evtimer_add(conn->idle, &idle);
	while (!conn->closing && !conn->dead) {
		enum mt_line_status status = mt_line_read(&conn->reader, in,
							  &conn->line, &error);
		if (status == MT_LINE_NEED_MORE)
			break;
		if (conn->in_data) {
			/* Text may hold anything; odd lines are counted. */
			if (status == MT_LINE_OK)
				data_line(conn, conn->line.data, conn->line.len);
			else
				conn->octets += conn->line.len + 2;
			if (status != MT_LINE_OK && conn->ledger_rx != NULL)
				lg_ledger_rx_bad_line(conn->ledger_rx);
			if (!conn->in_data)
				mt_line_reader_init(&conn->reader, LG_SINK_LINE_MAX,
						    MT_LINE_ACCEPT_LF);
			continue;
		}
		if (status != MT_LINE_OK) {
			conn->sink->counts.bad_commands++;
			conn->bad_commands++;
			mt_line_reply(out_of(conn), 500, false, "5.5.2 %s", error);
			continue;
		}
		command_line(conn, conn->line.data);
		if (conn->in_data)
			mt_line_reader_init(&conn->reader, LG_SINK_DATA_LINE_MAX,
					    MT_LINE_ACCEPT_LF);
	}
	/* Close once the goodbye has been written (see conn_write_cb). */
	if (conn->closing && evbuffer_get_length(out_of(conn)) == 0)
		conn_close(conn);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct sink_conn *conn = arg;

	if (conn->closing && evbuffer_get_length(out_of(conn)) == 0)
		conn_close(conn);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		conn_close(arg);
}

static void conn_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sink_conn *conn = arg;
	static const struct timeval grace = { 10, 0 };

	/* A client that does not even read the goodbye is dropped. */
	if (conn->closing) {
		conn_close(conn);
		return;
	}
	mt_line_reply(out_of(conn), 421, false, "4.4.2 Idle timeout");
	conn->closing = true;
	evtimer_add(conn->idle, &grace);
}

static void sink_accept_cb(int fd, const struct sockaddr *peer,
			   socklen_t peerlen, void *context)
{
	struct lg_sink *sink = context;
	struct event_base *base = mt_loop_base(sink->loop);
	struct sink_conn *conn = mt_xcalloc(1, sizeof(*conn));
	static const struct timeval idle = {
		LG_SINK_IDLE_MSECS / 1000, (LG_SINK_IDLE_MSECS % 1000) * 1000
	};

	conn->sink = sink;
	conn->log.session_id = mt_session_id_new();
	mt_commands_init(&conn->commands, &sink_command_table);
	conn->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	conn->idle = evtimer_new(base, conn_idle_cb, conn);
	if (conn->bev == NULL || conn->idle == NULL)
		mt_panic("out of memory accepting a sink connection");
	mt_line_reader_init(&conn->reader, LG_SINK_LINE_MAX, MT_LINE_ACCEPT_LF);
	mt_buf_init(&conn->line);
	if (sink->ledger != NULL)
		conn->ledger_rx = lg_ledger_rx_new();
	conn->next = sink->conns;
	if (sink->conns != NULL)
		sink->conns->prev = conn;
	sink->conns = conn;
	sink->counts.sessions++;
	sink->counts.active++;
	bufferevent_setcb(conn->bev, conn_read_cb, conn_write_cb, conn_event_cb, conn);
	bufferevent_enable(conn->bev, EV_READ | EV_WRITE);
	evtimer_add(conn->idle, &idle);
	mt_line_reply(out_of(conn), 220, false, "mailtier-load sink ESMTP");
}

struct lg_sink *lg_sink_new(struct mt_loop *loop, const char *hostport,
			    struct lg_tracker *tracker, const char **error_r)
{
	struct lg_sink *sink = mt_xcalloc(1, sizeof(*sink));

	sink->loop = loop;
	sink->tracker = tracker;
	sink->reaper = evtimer_new(mt_loop_base(loop), reaper_cb, sink);
	if (sink->reaper == NULL)
		mt_panic("out of memory creating the sink");
	sink->listener = mt_listener_add(loop, hostport, 0, sink_accept_cb,
					 sink, error_r);
	if (sink->listener == NULL) {
		lg_error_kept(error_r);	/* the loop's message: errors.h */
		event_free(sink->reaper);
		free(sink);
		return NULL;
	}
	return sink;
}

void lg_sink_set_arrival(struct lg_sink *sink, lg_sink_arrival_cb *cb,
			 void *context)
{
	sink->arrival_cb = cb;
	sink->arrival_context = context;
}

void lg_sink_set_ledger(struct lg_sink *sink, struct lg_ledger *ledger)
{
	sink->ledger = ledger;
}

void lg_sink_free(struct lg_sink **sink_p)
{
	struct lg_sink *sink = *sink_p;

	if (sink == NULL)
		return;
	mt_listener_free(&sink->listener);
	while (sink->conns != NULL) {
		struct sink_conn *conn = sink->conns;
		/* A reply still queued (the 250 that accepts a message the
		 * run counted) goes out before the close, as far as the
		 * socket takes it at once: a client that never saw it would
		 * send the message again, or count it as not relayed. */
		if (evbuffer_get_length(out_of(conn)) > 0)
			(void)evbuffer_write(out_of(conn), bufferevent_getfd(conn->bev));
		conn_close(conn);
	}
	reaper_cb(-1, 0, sink);
	event_free(sink->reaper);
	MT_FREE(sink_p);
}

unsigned int lg_sink_port(const struct lg_sink *sink)
{
	return mt_listener_port(sink->listener);
}

const struct lg_sink_counts *lg_sink_counts(const struct lg_sink *sink)
{
	return &sink->counts;
}
