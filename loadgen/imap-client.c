/* imap-client.c — the IMAP4rev2 client session: the tagged command /
 * response cycle over imap-commands.c's table, untagged data (EXISTS,
 * EXPUNGE, FETCH's UID and FLAGS, CAPABILITY, BYE), continuations for
 * AUTHENTICATE PLAIN, APPEND's synchronising literal and IDLE, STARTTLS's
 * switch, and the timers for think time, IDLE and the session's end.
 * Which command follows which is imap-script.c's (see imap-private.h),
 * what the probe watcher fetched imap-probe.c's. A new message's sender is
 * read from its summary's ENVELOPE (a reply goes back to it).
 * Trust boundary: server responses, framed and bounded by imap-response.c;
 * a tag that is not ours, a continuation not asked for, a greeting that is
 * not "* OK"/"* PREAUTH" are protocol errors; NO, BAD and an unexpected
 * BYE end the session as rejected (NO [EXPUNGEISSUED] is an answer).
 * Counts taken from the server (EXISTS, UIDs) only choose our next
 * command; the new-message list is capped.
 * RFC 9051 2.2 (tags, untagged, continuation), 6.2.1 (STARTTLS: forget
 * the capabilities), 7.1 (response codes: CAPABILITY, EXPUNGEISSUED),
 * 7.3.1 (EXISTS), 7.4.1 (EXPUNGE), 7.5 (continuation); RFC 2177 (IDLE /
 * DONE). */
#include "imap-private.h"

#include "alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

/* RFC 2177 3: re-issue IDLE at least every 29 minutes. */
#define IDLE_MAX_MS (29 * 60 * 1000)

/* ---- the command cycle ---- */

static void start_command(struct lg_imap_session *s, enum imap_cmd cmd)
{
	mt_slog(MT_LOG_DEBUG, &s->base.log, "imap %s -> %s", lg_imap_cmd_name(s->cmd),
		lg_imap_cmd_name(cmd));
	s->cmd = cmd;
	s->awaiting_continue = false;
	snprintf(s->tag, sizeof(s->tag), "A%04u", ++s->tag_no);
	lg_session_step_begin(&s->base, lg_imap_commands[cmd].fn);
	lg_imap_commands[cmd].send(s);
}

/* Ask the profile what follows and do it. */
static void advance(struct lg_imap_session *s)
{
	enum imap_cmd next = lg_imap_script_next(s);

	if (s->base.finished)
		return;
	if (next == IC_DONE)
		lg_session_finish(&s->base);
	else if (next != IC_WAIT)
		start_command(s, next);
}

uint64_t lg_imap_time_left_ms(const struct lg_imap_session *s)
{
	uint64_t now = lg_now_us();

	return now >= s->deadline_us ? 0 : (s->deadline_us - now) / 1000;
}

void lg_imap_wait(struct lg_imap_session *s, enum imap_wait wait, uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };

	s->wait = wait;
	evtimer_add(s->wait_timer, &tv);
}

/* RFC 2177 3: DONE ends the IDLE; its tagged OK follows. */
static void wake(struct lg_imap_session *s)
{
	evtimer_del(s->wait_timer);
	s->done_sent = true;
	lg_session_step_begin(&s->base, LG_FN_IMAP_IDLE_WAKE);
	lg_session_send(&s->base, "DONE");
}

static void wait_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg_imap_session *s = arg;

	if (s->base.finished)
		return;
	if (s->idling) {
		if (!s->done_sent)
			wake(s);
		return;
	}
	advance(s);	/* the script reads and clears s->wait */
}

/* ---- responses ---- */

static const struct { const char *word; unsigned int bit; } cap_words[] = {
	{ "LITERAL+", CAP_LITERAL_PLUS }, { "SASL-IR", CAP_SASL_IR },
	{ "AUTH=PLAIN", CAP_AUTH_PLAIN }, { "CONDSTORE", CAP_CONDSTORE },
	{ "IDLE", CAP_IDLE }, { "MOVE", CAP_MOVE },
	{ "SPECIAL-USE", CAP_SPECIAL_USE }, { "UIDPLUS", CAP_UIDPLUS },
	{ "LOGINDISABLED", CAP_LOGINDISABLED }, { "STARTTLS", CAP_STARTTLS },
};

/* A capability list (after "CAPABILITY"): it replaces what we knew. */
static void read_caps(struct lg_imap_session *s, const char *list)
{
	const char *end = strchr(list, ']');
	char text[2048];
	size_t len = end != NULL ? (size_t)(end - list) : strlen(list);

	if (len >= sizeof(text))
		len = sizeof(text) - 1;
	memcpy(text, list, len);
	text[len] = '\0';
	s->caps = 0;
	for (size_t i = 0; i < sizeof(cap_words) / sizeof(cap_words[0]); i++)
		if (lg_imap_has_word(text, cap_words[i].word))
			s->caps |= cap_words[i].bit;
	s->caps_known = true;
	s->caps_fresh = s->logged_in;
}

/* A "[CAPABILITY ...]" response code anywhere in a status response. */
static void caps_in_code(struct lg_imap_session *s, const char *rest)
{
	const char *code = strstr(rest, "[CAPABILITY ");

	if (code != NULL)
		read_caps(s, code + strlen("[CAPABILITY "));
}

/* A new message's sender, from its summary's ENVELOPE: one of ours? */
static void note_sender(struct lg_imap_session *s, const char *rest,
			struct imap_sender *from)
{
	char mailbox[256], host[256];

	from->known = lg_imap_envelope_from(rest, mailbox, sizeof(mailbox), host,
					    sizeof(host)) &&
		lg_parse_address(s->base.env->wl, mailbox, host, &from->remote, &from->user);
}

/* "* N FETCH (... UID u ... FLAGS (...))": a new message to handle when
 * its UID is above what we knew and it is not \Seen (the probe watcher's
 * are imap-probe.c's). */
static void fetch_data(struct lg_imap_session *s, uint32_t seq, const char *rest)
{
	uint64_t uid;

	if (s->cmd == IC_PROBE_FETCH) {
		lg_imap_probe_fetch(s, seq, rest);
		return;
	}
	if (s->cmd == IC_FETCH_BODY || s->cmd == IC_FETCH_NEWEST_BODY) {
		s->base.stats->counters.msgs_retrieved++;
		s->base.stats->counters.bytes_down += s->reader.literal_octets;
		return;
	}
	if (s->cmd != IC_FETCH_NEW || !lg_imap_find_number(rest, "UID", &uid) ||
	    uid <= s->known_max_uid)
		return;
	if (uid > s->fetch_max_uid)
		s->fetch_max_uid = uid;
	if (!lg_imap_has_word(rest, "\\Seen") && s->n_uids < LG_IMAP_MAX_NEW) {
		note_sender(s, rest, &s->senders[s->n_uids]);
		s->uids[s->n_uids++] = uid;
	}
}

static void greeting(struct lg_imap_session *s, const char *rest)
{
	if (lg_imap_starts_with(rest, "BYE")) {
		lg_session_step_end(&s->base, false);
		lg_session_fail(&s->base, LG_ERR_REJECTED, "greeting is * BYE");
		return;
	}
	if (lg_imap_starts_with(rest, "PREAUTH"))
		s->logged_in = true;
	else if (!lg_imap_starts_with(rest, "OK")) {
		lg_session_fail(&s->base, LG_ERR_PROTOCOL,
				"greeting is not \"* OK\" or \"* PREAUTH\"");
		return;
	}
	caps_in_code(s, rest);
	lg_session_step_end(&s->base, true);
	advance(s);
}

static void untagged(struct lg_imap_session *s, const char *rest)
{
	uint32_t n;

	if (s->cmd == IC_GREETING) {
		greeting(s, rest);
		return;
	}
	if (lg_imap_starts_with(rest, "BYE")) {
		if (s->cmd != IC_LOGOUT)
			lg_session_fail(&s->base, LG_ERR_REJECTED,
					"server said BYE during %s: %.80s",
					lg_imap_cmd_name(s->cmd), rest);
		return;
	}
	if (lg_imap_starts_with(rest, "CAPABILITY"))
		read_caps(s, rest + strlen("CAPABILITY"));
	else if (lg_imap_starts_with(rest, "OK"))
		caps_in_code(s, rest);
	else if (lg_imap_number_then(rest, "EXISTS", &n)) {
		uint32_t old = s->exists;
		s->exists = n;
		lg_imap_probe_exists(s, old, n);
		if (s->idling && !s->done_sent && n > s->idle_base)
			wake(s);
	} else if (lg_imap_number_then(rest, "EXPUNGE", &n)) {
		if (s->exists > 0)
			s->exists--;
		lg_imap_probe_expunge(s, n);
	} else if (lg_imap_number_then(rest, "FETCH", &n)) {
		fetch_data(s, n, rest);
	}
	/* FLAGS, LIST, SEARCH, ESEARCH, VANISHED, ...: nothing we act on. */
}

static void tagged(struct lg_imap_session *s)
{
	struct lg_imap_reader *r = &s->reader;

	if (s->cmd == IC_GREETING || strcmp(r->tag, s->tag) != 0) {
		lg_session_fail(&s->base, LG_ERR_PROTOCOL,
				"tagged response %.20s is not for our %s", r->tag,
				s->cmd == IC_GREETING ? "greeting" : s->tag);
		return;
	}
	/* RFC 9051 7.1: EXPUNGEISSUED, another session expunged a message
	 * we named: the command was answered; a client moves on. */
	bool expunged = r->status == LG_IMAP_STATUS_NO &&
		lg_imap_starts_with(r->rest, "[EXPUNGEISSUED");
	if (r->status != LG_IMAP_STATUS_OK && !expunged &&
	    !(r->status == LG_IMAP_STATUS_NO && lg_imap_commands[s->cmd].no_is_answer)) {
		if (s->base.step_open)
			lg_session_step_end(&s->base, false);
		lg_session_fail(&s->base, LG_ERR_REJECTED, "%s answered %s: %.80s",
				lg_imap_cmd_name(s->cmd),
				r->status == LG_IMAP_STATUS_NO ? "NO" : "BAD", r->rest);
		return;
	}
	if (s->appending) {
		lg_session_fail(&s->base, LG_ERR_PROTOCOL,
				"%s answered before its literal was sent", lg_imap_cmd_name(s->cmd));
		return;
	}
	if (s->cmd == IC_STARTTLS) {
		/* RFC 9051 6.2.1: TLS now; forget what was said before it
		 * (the capabilities too: ask again). */
		lg_session_step_end(&s->base, true);
		if (!lg_session_starttls(&s->base))
			return;
		lg_imap_reader_free(&s->reader);
		lg_imap_reader_init(&s->reader);
		lg_imap_probe_attach(s);
		s->tls = true;
		s->caps = 0;
		s->caps_known = false;
		advance(s);
		return;
	}
	if (s->cmd == IC_LOGIN || s->cmd == IC_AUTHENTICATE)
		s->logged_in = true;
	/* After the login: fresh capabilities (RFC 9051 6.2.3). */
	caps_in_code(s, r->rest);
	if (s->cmd == IC_EXPUNGE || s->cmd == IC_MOVE)
		s->base.stats->counters.msgs_deleted++;
	s->idling = false;
	if (s->base.step_open)
		lg_session_step_end(&s->base, true);
	advance(s);
}

static void continuation(struct lg_imap_session *s)
{
	if (s->awaiting_continue && s->cmd == IC_AUTHENTICATE) {
		s->awaiting_continue = false;
		lg_imap_send_plain(s);
		return;
	}
	if (s->awaiting_continue &&
	    (s->cmd == IC_APPEND_REPLY || s->cmd == IC_APPEND_FILL)) {
		s->awaiting_continue = false;
		lg_imap_start_literal(s);
		return;
	}
	if (s->cmd == IC_IDLE && !s->idling && s->base.step_open) {
		uint64_t left = lg_imap_time_left_ms(s);
		lg_session_step_end(&s->base, true);
		s->idling = true;
		if (s->exists > s->idle_base || left == 0) {
			wake(s);
			return;
		}
		lg_imap_wait(s, WAIT_NONE, left < IDLE_MAX_MS ? left : IDLE_MAX_MS);
		return;
	}
	lg_session_fail(&s->base, LG_ERR_PROTOCOL,
			"continuation request not asked for during %s",
			lg_imap_cmd_name(s->cmd));
}

static void imap_input(struct lg_session *base)
{
	struct lg_imap_session *s = (struct lg_imap_session *)base;
	const char *error = NULL;

	while (!base->finished) {
		switch (lg_imap_read(&s->reader, lg_session_input(base), &error)) {
		case LG_IMAP_READ_MORE:
			return;
		case LG_IMAP_READ_ERROR:
			lg_session_fail(base, LG_ERR_PROTOCOL, "bad response to %s: %s",
					lg_imap_cmd_name(s->cmd), error);
			return;
		case LG_IMAP_READ_DONE:
			break;
		}
		switch (s->reader.kind) {
		case LG_IMAP_CONTINUE:
			continuation(s);
			break;
		case LG_IMAP_UNTAGGED:
			untagged(s, s->reader.rest);
			break;
		case LG_IMAP_TAGGED:
			tagged(s);
			break;
		}
		lg_imap_probe_response_done(s);
	}
}

static void imap_drained(struct lg_session *base)
{
	struct lg_imap_session *s = (struct lg_imap_session *)base;

	if (s->appending)
		lg_imap_fill_literal(s);
}

static void imap_destroy(struct lg_session *base)
{
	struct lg_imap_session *s = (struct lg_imap_session *)base;

	if (s->wait_timer != NULL)
		event_free(s->wait_timer);
	lg_imap_reader_free(&s->reader);
	mt_buf_free(&s->append_headers);
	mt_buf_free(&s->probe_header);
	free(s);
}

static const struct lg_session_proto imap_proto = {
	.name = "imap",
	.input = imap_input,
	.drained = imap_drained,
	.destroy = imap_destroy,
};

struct lg_session *lg_imap_session_start(const struct lg_session_env *env,
					 enum lg_kind kind, struct lg_stats *stats,
					 struct lg_addrs *addrs,
					 const struct lg_imap_params *params,
					 lg_session_done_cb *done, void *context)
{
	struct lg_imap_session *s = mt_xcalloc(1, sizeof(*s));

	lg_session_init(&s->base, &imap_proto, env, kind, stats, done, context);
	s->params = *params;
	s->profile = params->profile;
	s->cmd = IC_GREETING;
	lg_rng_seed(&s->rng, params->plan.seed, params->user);
	s->deadline_us = s->base.started_us + params->plan.length_ms * 1000;
	if (params->end_by_us != 0 && params->end_by_us < s->deadline_us)
		s->deadline_us = params->end_by_us;
	if (s->profile == LG_IMAP_PROFILE_PROBE)
		s->deadline_us = UINT64_MAX;	/* until lg_imap_session_stop() */
	lg_imap_reader_init(&s->reader);
	mt_buf_init(&s->append_headers);
	mt_buf_init(&s->probe_header);
	lg_imap_probe_attach(s);
	s->wait_timer = evtimer_new(env->base, wait_cb, s);
	if (s->wait_timer == NULL)
		mt_panic("out of memory creating a timer");
	s->tls = env->tls != NULL && env->imap_implicit_tls;
	if (s->tls)
		lg_session_connect_tls(&s->base, addrs, LG_FN_IMAP_CONNECT);
	else
		lg_session_connect(&s->base, addrs, LG_FN_IMAP_CONNECT);
	return &s->base;
}

void lg_imap_session_stop(struct lg_session *base)
{
	struct lg_imap_session *s = (struct lg_imap_session *)base;

	if (base->finished)
		return;
	s->deadline_us = lg_now_us();
	if (s->idling) {
		if (!s->done_sent)
			wake(s);
	} else if (evtimer_pending(s->wait_timer, NULL)) {
		evtimer_del(s->wait_timer);
		advance(s);	/* the script sees the time is up */
	}
}
