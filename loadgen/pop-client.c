/* pop-client.c — the POP3 client session, a state machine driven by one
 * const command table (see pop-client.h).
 * Trust boundary: status lines must be "+OK" or "-ERR" (else a protocol
 * error); -ERR ends the session as rejected; message data may hold any
 * octets and is only counted and searched for our id header; the message
 * count from STAT is capped so the RETR/DELE loop is bounded.
 * RFC 1939 3, 5 (STAT, RETR, DELE), 6 (QUIT). */
#include "pop-client.h"

#include "alloc.h"
#include "ledger.h"
#include "message.h"
#include "pop3-status.h"
#include "smtp-reply.h"

#include <stdlib.h>

#include <event2/buffer.h>

enum pop_state {
	POP_GREETING,
	POP_USER,
	POP_PASS,
	POP_STAT,
	POP_RETR,
	POP_DELE,
	POP_QUIT,
	POP_DONE,
	POP_STATE_COUNT
};

static const char *const pop_state_names[POP_STATE_COUNT] = {
	"greeting", "user", "pass", "stat", "retr", "dele", "quit", "done",
};

struct lg_pop_session {
	struct lg_session base;
	enum pop_state state;
	uint64_t user;
	uint64_t n_messages;	/* to handle (capped STAT count) */
	uint64_t index;		/* 1-based message number */
	bool in_data;		/* reading RETR's multi-line data */
	bool in_headers;
	uint64_t data_octets;
	struct lg_ledger_rx *ledger_rx;	/* with a ledger: what RETR got */
	uint64_t ledger_session;
	bool retrieved;			/* a RETR completed */
};

struct pop_command {
	enum lg_function fn;
	bool begins_step;
	bool multiline;		/* +OK is followed by data up to "." */
	void (*send)(struct lg_pop_session *s);
	/* After the +OK (and data); may fail the session instead. */
	enum pop_state (*next)(struct lg_pop_session *s);
};

static void send_user(struct lg_pop_session *s);
static void send_pass(struct lg_pop_session *s);
static void send_stat(struct lg_pop_session *s);
static void send_retr(struct lg_pop_session *s);
static void send_dele(struct lg_pop_session *s);
static void send_quit(struct lg_pop_session *s);
static enum pop_state after_greeting(struct lg_pop_session *s) { return POP_USER; }
static enum pop_state after_user(struct lg_pop_session *s) { return POP_PASS; }
static enum pop_state after_pass(struct lg_pop_session *s) { return POP_STAT; }
static enum pop_state after_stat(struct lg_pop_session *s);
static enum pop_state after_retr(struct lg_pop_session *s);
static enum pop_state after_dele(struct lg_pop_session *s);
static enum pop_state after_quit(struct lg_pop_session *s);

static const struct pop_command pop_commands[POP_STATE_COUNT] = {
	/* The connect step, begun by lg_session_connect(), ends with the
	 * +OK greeting. */
	[POP_GREETING] = { LG_FN_POP_CONNECT, false, false, NULL, after_greeting },
	[POP_USER] = { LG_FN_POP_USER, true, false, send_user, after_user },
	[POP_PASS] = { LG_FN_POP_PASS, true, false, send_pass, after_pass },
	[POP_STAT] = { LG_FN_POP_STAT, true, false, send_stat, after_stat },
	[POP_RETR] = { LG_FN_POP_RETR, true, true, send_retr, after_retr },
	[POP_DELE] = { LG_FN_POP_DELE, true, false, send_dele, after_dele },
	[POP_QUIT] = { LG_FN_POP_QUIT, true, false, send_quit, after_quit },
};

static void enter_state(struct lg_pop_session *s, enum pop_state state)
{
	const struct pop_command *cmd = &pop_commands[state];

	mt_slog(MT_LOG_DEBUG, &s->base.log, "pop state %s -> %s",
		pop_state_names[s->state], pop_state_names[state]);
	s->state = state;
	if (state == POP_DONE) {
		lg_session_finish(&s->base);
		return;
	}
	if (cmd->begins_step)
		lg_session_step_begin(&s->base, cmd->fn);
	if (cmd->send != NULL)
		cmd->send(s);
}

static void send_user(struct lg_pop_session *s)
{
	char login[320];

	lg_format_login(login, sizeof(login), s->base.env->wl, s->user);
	lg_session_send(&s->base, "USER %s", login);
}

static void send_pass(struct lg_pop_session *s)
{
	char password[320];

	lg_format_password(password, sizeof(password), s->base.env->wl, s->user);
	lg_session_send(&s->base, "PASS %s", password);
}

static void send_stat(struct lg_pop_session *s)
{
	lg_session_send(&s->base, "STAT");
}

static enum pop_state after_stat(struct lg_pop_session *s)
{
	uint64_t count, size;

	if (!mt_pop3_parse_stat(s->base.line.data, &count, &size)) {
		lg_session_fail(&s->base, LG_ERR_PROTOCOL,
				"STAT reply is not \"+OK count size\"");
		return POP_DONE;
	}
	s->n_messages = count < LG_POP_MAX_MESSAGES ? count : LG_POP_MAX_MESSAGES;
	s->index = 1;
	return s->n_messages > 0 ? POP_RETR : POP_QUIT;
}

static void send_retr(struct lg_pop_session *s)
{
	lg_session_send(&s->base, "RETR %llu", (unsigned long long)s->index);
}

static enum pop_state after_retr(struct lg_pop_session *s)
{
	s->base.stats->counters.msgs_retrieved++;
	s->base.stats->counters.bytes_down += s->data_octets;
	return POP_DELE;
}

static void send_dele(struct lg_pop_session *s)
{
	lg_session_send(&s->base, "DELE %llu", (unsigned long long)s->index);
}

static enum pop_state after_dele(struct lg_pop_session *s)
{
	s->base.stats->counters.msgs_deleted++;
	return ++s->index <= s->n_messages ? POP_RETR : POP_QUIT;
}

static void send_quit(struct lg_pop_session *s)
{
	lg_session_send(&s->base, "QUIT");
}

/* RFC 1939 6: the deletions are made when QUIT is answered +OK. */
static enum pop_state after_quit(struct lg_pop_session *s)
{
	if (s->ledger_rx != NULL && s->retrieved)
		lg_ledger_commit(s->base.env->ledger, s->ledger_session);
	return POP_DONE;
}

/* A RETR's data is complete: write what it got into the ledger. */
static void ledger_retrieved(struct lg_pop_session *s)
{
	char mailbox[320];

	s->retrieved = true;
	if (s->ledger_rx == NULL)
		return;
	lg_format_address(mailbox, sizeof(mailbox), s->base.env->wl, false, s->user);
	lg_ledger_pop(s->base.env->ledger, s->ledger_rx, mailbox, s->ledger_session);
}

/* One line of RETR data (RFC 1939 3: a leading "." is stuffed; "." alone
 * ends the data). true at the end. */
static bool data_line(struct lg_pop_session *s, const char *line, size_t len)
{
	if (len == 1 && line[0] == '.')
		return true;
	if (len > 0 && line[0] == '.') {
		line++;
		len--;
	}
	s->data_octets += len + 2;
	if (s->ledger_rx != NULL)
		lg_ledger_rx_line(s->ledger_rx, line, len);
	if (!s->in_headers)
		return false;
	if (len == 0) {
		s->in_headers = false;
		return false;
	}
	size_t value_len;
	const char *value = lg_id_header_value(line, len, &value_len);
	if (value != NULL && s->base.env->tracker != NULL)
		lg_tracker_seen(s->base.env->tracker, value, value_len, 1,
				lg_now_us());
	return false;
}

/* Read RETR data. Message text may hold overlong lines, bare CRs or NULs
 * (they are the message's business): such lines are only counted. */
static void read_data(struct lg_pop_session *s)
{
	struct lg_session *base = &s->base;
	const char *error;

	while (s->in_data && !base->finished) {
		enum mt_line_status status = mt_line_read(&base->reader,
			lg_session_input(base), &base->line, &error);
		if (status == MT_LINE_NEED_MORE)
			return;
		if (status != MT_LINE_OK) {
			s->data_octets += base->line.len + 2;
			if (s->ledger_rx != NULL)
				lg_ledger_rx_bad_line(s->ledger_rx);
			continue;
		}
		if (data_line(s, base->line.data, base->line.len)) {
			s->in_data = false;
			ledger_retrieved(s);
			enum pop_state next = pop_commands[s->state].next(s);
			lg_session_step_end(base, true);
			enter_state(s, next);
		}
	}
}

static void handle_status(struct lg_pop_session *s)
{
	struct lg_session *base = &s->base;
	const struct pop_command *cmd = &pop_commands[s->state];

	switch (mt_pop3_status(base->line.data, base->line.len)) {
	case MT_POP3_CONTINUE:	/* we send no AUTH: not an answer to us */
	case MT_POP3_BAD:
		lg_session_fail(base, LG_ERR_PROTOCOL,
				"%s: reply is neither +OK nor -ERR",
				pop_state_names[s->state]);
		return;
	case MT_POP3_ERR:
		lg_session_step_end(base, false);
		lg_session_fail(base, LG_ERR_REJECTED, "%s answered -ERR",
				pop_state_names[s->state]);
		return;
	case MT_POP3_OK:
		break;
	}
	if (cmd->multiline) {
		s->in_data = true;
		s->in_headers = true;
		s->data_octets = 0;
		if (s->ledger_rx != NULL)
			lg_ledger_rx_begin(s->ledger_rx);
		return;
	}
	/* next() may still find the answer wrong (STAT's numbers): then the
	 * step stays an attempt without a pass. */
	enum pop_state next = cmd->next(s);
	if (base->finished)
		return;
	lg_session_step_end(base, true);
	enter_state(s, next);
}

static void pop_input(struct lg_session *base)
{
	struct lg_pop_session *s = (struct lg_pop_session *)base;

	while (!base->finished) {
		if (s->in_data) {
			read_data(s);
			if (s->in_data)
				return;
			continue;
		}
		if (!lg_session_read_line(base))
			return;
		handle_status(s);
	}
}

static void pop_destroy(struct lg_session *base)
{
	struct lg_pop_session *s = (struct lg_pop_session *)base;

	lg_ledger_rx_free(&s->ledger_rx);
	free(base);
}

static const struct lg_session_proto pop_proto = {
	.name = "pop3",
	.input = pop_input,
	.drained = NULL,
	.destroy = pop_destroy,
};

struct lg_session *lg_pop_session_start(const struct lg_session_env *env,
					enum lg_kind kind, struct lg_stats *stats,
					struct lg_addrs *addrs, uint64_t user,
					lg_session_done_cb *done, void *context)
{
	struct lg_pop_session *s = mt_xcalloc(1, sizeof(*s));

	lg_session_init(&s->base, &pop_proto, env, kind, stats, done, context);
	s->user = user;
	s->state = POP_GREETING;
	if (env->ledger != NULL) {
		s->ledger_rx = lg_ledger_rx_new();
		s->ledger_session = lg_ledger_session_no(env->ledger);
	}
	lg_session_connect(&s->base, addrs, LG_FN_POP_CONNECT);
	return &s->base;
}
