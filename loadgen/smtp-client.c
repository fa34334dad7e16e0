/* smtp-client.c — the SMTP client session, a state machine driven by one
 * const command table (see smtp-client.h).
 * Trust boundary: every reply is parsed by lib-mail's smtp-reply.c; a
 * reply of the wrong class ends the session as rejected, a malformed one
 * as a protocol error; a server that does not offer what the session needs
 * (STARTTLS with --tls, AUTH PLAIN for a submission) fails it as rejected.
 * RFC 5321 3.3, 4.1.1, 4.2, 4.3.2; RFC 3207 4, 4.2; RFC 4954 4, 6;
 * RFC 4616 2; RFC 5322 (the generated message). */
#include "smtp-client.h"

#include "alloc.h"
#include "ledger.h"
#include "message.h"
#include "pop3-status.h"
#include "sasl.h"
#include "smtp-reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

/* Queue body text up to this much ahead of the socket. */
#define BODY_CHUNK (64 * 1024)

enum smtp_state {
	SMTP_GREETING,
	SMTP_EHLO,
	SMTP_HELO,
	SMTP_LHLO,
	SMTP_STARTTLS,
	SMTP_AUTH,
	SMTP_MAIL,
	SMTP_RCPT,
	SMTP_DATA,
	SMTP_BODY,
	SMTP_QUIT,
	SMTP_DONE,
	SMTP_FAIL,	/* not entered: "end the session as rejected" */
	SMTP_STATE_COUNT
};

static const char *const smtp_state_names[SMTP_STATE_COUNT] = {
	"greeting", "ehlo", "helo", "lhlo", "starttls", "auth", "mail", "rcpt",
	"data", "body", "quit", "done", "fail",
};

struct lg_smtp_session {
	struct lg_session base;
	enum smtp_state state;
	struct lg_message_plan plan;
	uint64_t seq;
	char id[LG_ID_MAX];
	bool track_remote, local_probe;
	bool lmtp;
	bool submission, auth;		/* smtp-client.h */
	bool tls;			/* after STARTTLS */
	unsigned int rcpt_index;
	unsigned int lmtp_replies;	/* still due after the data (LMTP) */
	bool (*next)(void *context, struct lg_message_plan *plan, uint64_t *seq_r);
	void *next_context;
	struct mt_smtp_reply reply;
	struct mt_buf headers;
	struct lg_body_gen body;
	bool body_sent;		/* the final "." is queued */
	struct lg_ledger_tx *ledger_tx;	/* with a ledger: the digest sent */
};

struct smtp_command {
	enum lg_function fn;
	bool begins_step;	/* false: continues the previous state's step */
	bool ends_step;		/* the expected reply completes the step */
	int expect;		/* first digit of the expected reply code */
	void (*send)(struct lg_smtp_session *s);
	enum smtp_state (*next)(struct lg_smtp_session *s);
	enum smtp_state on_negative;	/* SMTP_FAIL, or where to fall back */
};

static void send_ehlo(struct lg_smtp_session *s);
static void send_helo(struct lg_smtp_session *s);
static void send_lhlo(struct lg_smtp_session *s);
static void send_starttls(struct lg_smtp_session *s);
static void send_auth(struct lg_smtp_session *s);
static void send_mail(struct lg_smtp_session *s);
static void send_rcpt(struct lg_smtp_session *s);
static void send_data(struct lg_smtp_session *s);
static void send_body(struct lg_smtp_session *s);
static void send_quit(struct lg_smtp_session *s);
static enum smtp_state after_greeting(struct lg_smtp_session *s)
{
	return s->lmtp ? SMTP_LHLO : SMTP_EHLO;
}
static enum smtp_state after_hello(struct lg_smtp_session *s);
static enum smtp_state after_starttls(struct lg_smtp_session *s);
static enum smtp_state after_auth(struct lg_smtp_session *s) { return SMTP_MAIL; }
static enum smtp_state after_mail(struct lg_smtp_session *s) { return SMTP_RCPT; }
static enum smtp_state after_rcpt(struct lg_smtp_session *s);
static enum smtp_state after_data(struct lg_smtp_session *s) { return SMTP_BODY; }
static enum smtp_state after_body(struct lg_smtp_session *s);
static enum smtp_state after_quit(struct lg_smtp_session *s) { return SMTP_DONE; }

static const struct smtp_command smtp_commands[SMTP_STATE_COUNT] = {
	/* The connect step, begun by lg_session_connect(), ends with the
	 * 220 greeting (RFC 5321 4.3.2: 220 / 554). */
	[SMTP_GREETING] = { LG_FN_SMTP_CONNECT, false, true, 2, NULL, after_greeting, SMTP_FAIL },
	/* A client SHOULD fall back to HELO when EHLO is refused (4.1.4);
	 * both count as the one hello step. */
	[SMTP_EHLO] = { LG_FN_SMTP_EHLO, true, true, 2, send_ehlo, after_hello, SMTP_HELO },
	[SMTP_HELO] = { LG_FN_SMTP_EHLO, false, true, 2, send_helo, after_hello, SMTP_FAIL },
	/* LMTP has no HELO to fall back to (RFC 2033 4.1). */
	[SMTP_LHLO] = { LG_FN_SMTP_EHLO, true, true, 2, send_lhlo, after_hello, SMTP_FAIL },
	/* RFC 3207 4: 220, then TLS; the handshake is timed in the EHLO
	 * that follows it (4.2). */
	[SMTP_STARTTLS] = { LG_FN_SMTP_STARTTLS, true, true, 2, send_starttls,
			    after_starttls, SMTP_FAIL },
	/* RFC 4954 4, 6: AUTH with the initial response, 235. Only a
	 * submission authenticates: its row is its own. */
	[SMTP_AUTH] = { LG_FN_SUBMIT_AUTH, true, true, 2, send_auth, after_auth, SMTP_FAIL },
	[SMTP_MAIL] = { LG_FN_SMTP_MAIL, true, true, 2, send_mail, after_mail, SMTP_FAIL },
	[SMTP_RCPT] = { LG_FN_SMTP_RCPT, true, true, 2, send_rcpt, after_rcpt, SMTP_FAIL },
	/* DATA: 354, then the body, then 250; one step from command to the
	 * final reply. */
	[SMTP_DATA] = { LG_FN_SMTP_DATA, true, false, 3, send_data, after_data, SMTP_FAIL },
	[SMTP_BODY] = { LG_FN_SMTP_DATA, false, true, 2, send_body, after_body, SMTP_FAIL },
	[SMTP_QUIT] = { LG_FN_SMTP_QUIT, true, true, 2, send_quit, after_quit, SMTP_FAIL },
};

/* A reply's submission is timed in rows of its own (stats.h). */
static enum lg_function row(const struct lg_smtp_session *s, enum lg_function fn)
{
	if (!s->submission)
		return fn;
	switch (fn) {
	case LG_FN_SMTP_CONNECT: return LG_FN_SUBMIT_CONNECT;
	case LG_FN_SMTP_EHLO: return LG_FN_SUBMIT_EHLO;
	case LG_FN_SMTP_STARTTLS: return LG_FN_SUBMIT_STARTTLS;
	case LG_FN_SMTP_MAIL: return LG_FN_SUBMIT_MAIL;
	case LG_FN_SMTP_RCPT: return LG_FN_SUBMIT_RCPT;
	case LG_FN_SMTP_DATA: return LG_FN_SUBMIT_DATA;
	case LG_FN_SMTP_QUIT: return LG_FN_SUBMIT_QUIT;
	default: return fn;
	}
}

static void enter_state(struct lg_smtp_session *s, enum smtp_state state)
{
	const struct smtp_command *cmd = &smtp_commands[state];

	mt_slog(MT_LOG_DEBUG, &s->base.log, "smtp state %s -> %s",
		smtp_state_names[s->state], smtp_state_names[state]);
	s->state = state;
	if (state == SMTP_DONE) {
		lg_session_finish(&s->base);
		return;
	}
	mt_smtp_reply_reset(&s->reply);
	if (cmd->begins_step)
		lg_session_step_begin(&s->base, row(s, cmd->fn));
	if (cmd->send != NULL)
		cmd->send(s);
}

static void send_ehlo(struct lg_smtp_session *s)
{
	lg_session_send(&s->base, "EHLO %s", s->base.env->helo_name);
}

static void send_helo(struct lg_smtp_session *s)
{
	lg_session_send(&s->base, "HELO %s", s->base.env->helo_name);
}

static void send_lhlo(struct lg_smtp_session *s)
{
	lg_session_send(&s->base, "LHLO %s", s->base.env->helo_name);
}

/* After EHLO (or HELO, which offers nothing): STARTTLS with --tls, or
 * where AUTH is offered only after it (RFC 3207 4, RFC 4954 4); then AUTH
 * for a submission; then the mail. A server without what is needed fails
 * the session as rejected (as IMAP's --tls without STARTTLS does). */
static enum smtp_state after_hello(struct lg_smtp_session *s)
{
	struct mt_smtp_caps caps = { 0 };

	if (s->lmtp)
		return SMTP_MAIL;
	if (s->state == SMTP_EHLO)
		mt_smtp_caps_parse(&s->reply, &caps);
	if (!s->tls && (s->base.env->starttls || (s->auth && !caps.auth_plain && caps.starttls))) {
		if (caps.starttls && s->base.env->tls != NULL)
			return SMTP_STARTTLS;
		lg_session_fail(&s->base, LG_ERR_REJECTED, "%s: no STARTTLS offered",
				s->base.env->starttls ? "--tls" : "AUTH");
		return SMTP_FAIL;
	}
	if (s->auth) {
		if (caps.auth_plain)
			return SMTP_AUTH;
		lg_session_fail(&s->base, LG_ERR_REJECTED, "submission: no AUTH PLAIN offered");
		return SMTP_FAIL;
	}
	return SMTP_MAIL;
}

static void send_starttls(struct lg_smtp_session *s)
{
	lg_session_send(&s->base, "STARTTLS");
}

/* RFC 3207 4.2: TLS now; what the server said before it is forgotten,
 * and the client asks again with EHLO. */
static enum smtp_state after_starttls(struct lg_smtp_session *s)
{
	if (!lg_session_starttls(&s->base))
		return SMTP_FAIL;
	s->tls = true;
	return SMTP_EHLO;
}

/* RFC 4954 4: AUTH PLAIN with the initial response, as the sender (the
 * login and password the IMAP session uses). */
static void send_auth(struct lg_smtp_session *s)
{
	char login[320], password[320];
	struct mt_buf b64 = MT_BUF_INIT;

	lg_format_login(login, sizeof(login), s->base.env->wl, s->plan.sender);
	lg_format_password(password, sizeof(password), s->base.env->wl, s->plan.sender);
	mt_sasl_plain_encode(&b64, "", login, password);
	lg_session_send(&s->base, "AUTH PLAIN %s", mt_buf_cstr(&b64));
	mt_buf_free(&b64);
}

static void send_mail(struct lg_smtp_session *s)
{
	char from[320];

	lg_format_address(from, sizeof(from), s->base.env->wl,
			  s->plan.from_remote, s->plan.sender);
	lg_session_send(&s->base, "MAIL FROM:<%s>", from);
}

static void send_rcpt(struct lg_smtp_session *s)
{
	const struct lg_rcpt *rcpt = &s->plan.rcpts[s->rcpt_index];
	char to[320];

	lg_format_address(to, sizeof(to), s->base.env->wl, rcpt->remote,
			  rcpt->user);
	lg_session_send(&s->base, "RCPT TO:<%s>", to);
}

static enum smtp_state after_rcpt(struct lg_smtp_session *s)
{
	return ++s->rcpt_index < s->plan.n_rcpts ? SMTP_RCPT : SMTP_DATA;
}

static void send_data(struct lg_smtp_session *s)
{
	lg_session_send(&s->base, "DATA");
}

/* Queue body text while the socket keeps up; the "." line at the end. */
static void fill_body(struct lg_smtp_session *s)
{
	struct evbuffer *out = lg_session_output(&s->base);

	while (!s->body_sent && evbuffer_get_length(out) < BODY_CHUNK) {
		if (lg_message_fill(&s->body, out, BODY_CHUNK) == 0) {
			/* RFC 5321 4.1.1.4: the data ends with CRLF "." CRLF;
			 * the text always ends with CRLF. */
			evbuffer_add(out, ".\r\n", 3);
			s->body_sent = true;
			if (s->base.env->tracker != NULL && (s->track_remote || s->local_probe))
				lg_tracker_sending(s->base.env->tracker, s->seq, lg_now_us());
		}
	}
}

static void send_body(struct lg_smtp_session *s)
{
	s->lmtp_replies = s->plan.n_rcpts;
	lg_message_begin(&s->headers, &s->body, s->base.env->wl, &s->plan, s->id);
	if (s->ledger_tx != NULL) {
		lg_ledger_tx_begin(s->ledger_tx);
		lg_ledger_tx_update(s->ledger_tx, s->headers.data, s->headers.len);
		s->body.tap = lg_ledger_tx_update;
		s->body.tap_context = s->ledger_tx;
	}
	evbuffer_add(lg_session_output(&s->base), s->headers.data, s->headers.len);
	fill_body(s);
}

static void format_id(struct lg_smtp_session *s)
{
	if (s->base.env->tracker != NULL)
		lg_tracker_format_id(s->base.env->tracker, s->seq, s->id);
	else
		snprintf(s->id, sizeof(s->id), "%016x.%llu", 0u,
			 (unsigned long long)s->seq);
}

/* The message was accepted: count it, and expect its arrivals. */
static enum smtp_state after_body(struct lg_smtp_session *s)
{
	struct lg_counters *c = &s->base.stats->counters;
	struct lg_tracker *tracker = s->base.env->tracker;
	uint64_t now = lg_now_us();

	if (s->submission) {
		c->msgs_submitted++;
		c->submitted_rcpts_local += s->plan.n_local;
		c->submitted_rcpts_remote += s->plan.n_remote;
	} else if (s->plan.from_remote) {
		c->msgs_remote_sent++;
	} else {
		c->msgs_local_sent++;
	}
	c->rcpts_to_local += s->plan.n_local;
	c->rcpts_to_remote += s->plan.n_remote;
	c->bytes_up += s->plan.size > s->headers.len ? s->plan.size : s->headers.len;
	if (s->ledger_tx != NULL)
		lg_ledger_sent(s->base.env->ledger, s->ledger_tx, s->id,
			       s->base.env->wl, &s->plan, true, true);
	if (tracker != NULL && s->track_remote)
		lg_tracker_expect(tracker, s->seq, s->plan.n_remote,
				  s->base.delivery_stats, now);
	if (tracker != NULL && s->local_probe) {
		lg_tracker_expect(tracker, s->seq, s->plan.n_local,
				  s->base.delivery_stats, now);
		s->base.delivery_stats->counters.probes_local++;
	}
	if (tracker != NULL)	/* neither kind had an arrival to expect */
		lg_tracker_abandon(tracker, s->seq);
	if (s->next == NULL || !s->next(s->next_context, &s->plan, &s->seq))
		return SMTP_QUIT;
	/* The next transaction on this connection (RFC 5321 3.3: a new
	 * MAIL after the previous one completed). */
	s->rcpt_index = 0;
	s->body_sent = false;
	mt_buf_reset(&s->headers);
	format_id(s);
	return SMTP_MAIL;
}

static void send_quit(struct lg_smtp_session *s)
{
	lg_session_send(&s->base, "QUIT");
}

static void handle_reply(struct lg_smtp_session *s)
{
	const struct smtp_command *cmd = &smtp_commands[s->state];
	int code = s->reply.code;

	if (s->state == SMTP_BODY && !s->body_sent && code / 100 == cmd->expect) {
		lg_session_fail(&s->base, LG_ERR_PROTOCOL,
				"reply %d before the end of the message data", code);
		return;
	}
	/* LMTP: one reply per recipient after the data; the step ends
	 * with the last (RFC 2033 4.2). */
	if (s->state == SMTP_BODY && s->lmtp && code / 100 == cmd->expect &&
	    s->lmtp_replies > 1) {
		s->lmtp_replies--;
		mt_smtp_reply_reset(&s->reply);
		return;
	}
	if (code / 100 == cmd->expect) {
		if (cmd->ends_step)
			lg_session_step_end(&s->base, true);
		enum smtp_state next = cmd->next(s);
		if (!s->base.finished)	/* next() may have failed it */
			enter_state(s, next);
		return;
	}
	if (cmd->on_negative != SMTP_FAIL) {
		enter_state(s, cmd->on_negative);
		return;
	}
	lg_session_step_end(&s->base, false);
	lg_session_fail(&s->base, LG_ERR_REJECTED, "%s answered %d",
			smtp_state_names[s->state], code);
}

static void smtp_input(struct lg_session *base)
{
	struct lg_smtp_session *s = (struct lg_smtp_session *)base;
	const char *error;

	while (!base->finished && lg_session_read_line(base)) {
		switch (mt_smtp_reply_feed(&s->reply, base->line.data,
					   base->line.len, &error)) {
		case MT_SMTP_REPLY_MORE:
			break;
		case MT_SMTP_REPLY_BAD:
			lg_session_fail(base, LG_ERR_PROTOCOL, "%s: %s",
					smtp_state_names[s->state], error);
			return;
		case MT_SMTP_REPLY_DONE:
			handle_reply(s);
			break;
		}
	}
}

static void smtp_drained(struct lg_session *base)
{
	struct lg_smtp_session *s = (struct lg_smtp_session *)base;

	if (s->state == SMTP_BODY)
		fill_body(s);
}

static void smtp_destroy(struct lg_session *base)
{
	struct lg_smtp_session *s = (struct lg_smtp_session *)base;

	/* The data was begun and no 250 came: it may arrive or not. */
	if (lg_ledger_tx_pending(s->ledger_tx))
		lg_ledger_sent(s->base.env->ledger, s->ledger_tx, s->id,
			       s->base.env->wl, &s->plan, false, s->body_sent);
	if (s->base.env->tracker != NULL)	/* no 250 read for the data sent */
		lg_tracker_abandon(s->base.env->tracker, s->seq);
	lg_ledger_tx_free(&s->ledger_tx);
	mt_buf_free(&s->headers);
	free(s);
}

static const struct lg_session_proto smtp_proto = {
	.name = "smtp",
	.input = smtp_input,
	.drained = smtp_drained,
	.destroy = smtp_destroy,
};

struct lg_session *lg_smtp_session_start(const struct lg_session_env *env,
					 enum lg_kind kind, struct lg_stats *stats,
					 struct lg_addrs *addrs,
					 const struct lg_smtp_params *params,
					 lg_session_done_cb *done, void *context)
{
	struct lg_smtp_session *s = mt_xcalloc(1, sizeof(*s));

	lg_session_init(&s->base, &smtp_proto, env, kind, stats, done, context);
	if (params->delivery_stats != NULL)
		s->base.delivery_stats = params->delivery_stats;
	s->plan = *params->plan;
	s->seq = params->seq;
	s->track_remote = params->track_remote;
	s->local_probe = params->local_probe;
	s->lmtp = params->lmtp;
	s->submission = params->submission;
	s->auth = params->auth && !params->lmtp;
	s->next = params->next;
	s->next_context = params->next_context;
	mt_buf_init(&s->headers);
	if (env->ledger != NULL && !s->lmtp)
		s->ledger_tx = lg_ledger_tx_new();
	format_id(s);
	s->state = SMTP_GREETING;
	mt_smtp_reply_reset(&s->reply);
	lg_session_connect(&s->base, addrs, row(s, LG_FN_SMTP_CONNECT));
	return &s->base;
}
