/* imap-client.c — the IMAP4rev2 client session: one const command table
 * (name, timed function, sender, whether a NO is an answer), the tagged
 * command / response cycle, untagged data (EXISTS, EXPUNGE, FETCH's UID
 * and FLAGS, CAPABILITY, BYE), continuations for AUTHENTICATE PLAIN,
 * APPEND's synchronising literal and IDLE, and the timers for think time,
 * IDLE and the session's end. Which command follows which is
 * imap-script.c's (see imap-private.h).
 * Trust boundary: server responses, framed and bounded by imap-response.c;
 * a tag that is not ours, a continuation not asked for, a greeting that is
 * not "* OK"/"* PREAUTH" are protocol errors; NO, BAD and an unexpected
 * BYE end the session as rejected. Counts taken from the server (EXISTS,
 * UIDs) only choose our next command; the new-message list is capped.
 * RFC 9051 2.2 (tags, untagged, continuation), 6.1.1 (CAPABILITY), 6.2.2
 * (AUTHENTICATE), 6.2.3 (LOGIN), 6.3.2 (SELECT), 6.3.9 (LIST), 6.3.12
 * (APPEND), 6.4.3-6.4.9 (EXPUNGE, SEARCH, FETCH, STORE, MOVE, UID), 7.1
 * (response codes: CAPABILITY), 7.3.1 (EXISTS), 7.5 (continuation);
 * RFC 2177 (IDLE / DONE), 4959 (SASL-IR), 4616 (PLAIN), 7888 (LITERAL+),
 * 7162 3.1.4-3.1.8 (SELECT (CONDSTORE), CHANGEDSINCE), 6154 (RETURN
 * (SPECIAL-USE)), 4315 (UID EXPUNGE), 6851 (UID MOVE). */
#include "imap-private.h"

#include "alloc.h"
#include "sasl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

/* Queue the APPEND literal while less than this is waiting to go. */
#define APPEND_CHUNK (64 * 1024)
/* RFC 2177 3: re-issue IDLE at least every 29 minutes. */
#define IDLE_MAX_MS (29 * 60 * 1000)
/* A user's login and password, quoted. */
#define CREDENTIAL_MAX 320

struct imap_command {
	const char *name;
	enum lg_function fn;
	void (*send)(struct lg_imap_session *s);
	bool no_is_answer;	/* CREATE of a folder that is there already */
};

static void send_capability(struct lg_imap_session *s);
static void send_starttls(struct lg_imap_session *s);
static void send_login(struct lg_imap_session *s);
static void send_authenticate(struct lg_imap_session *s);
static void send_list(struct lg_imap_session *s);
static void send_select_inbox(struct lg_imap_session *s);
static void send_select_folder(struct lg_imap_session *s);
static void send_fetch_new(struct lg_imap_session *s);
static void send_fetch_folder_headers(struct lg_imap_session *s);
static void send_fetch_changed(struct lg_imap_session *s);
static void send_fetch_newest(struct lg_imap_session *s);
static void send_fetch_newest_body(struct lg_imap_session *s);
static void send_fetch_body(struct lg_imap_session *s);
static void send_store_seen(struct lg_imap_session *s);
static void send_store_deleted(struct lg_imap_session *s);
static void send_store_answered(struct lg_imap_session *s);
static void send_expunge(struct lg_imap_session *s);
static void send_move(struct lg_imap_session *s);
static void send_append(struct lg_imap_session *s);
static void send_create(struct lg_imap_session *s);
static void send_search(struct lg_imap_session *s);
static void send_idle(struct lg_imap_session *s);
static void send_logout(struct lg_imap_session *s);

static const struct imap_command imap_commands[IC_COUNT] = {
	/* The connect step, begun by lg_session_connect(), ends with the
	 * greeting. */
	[IC_GREETING] = { "greeting", LG_FN_IMAP_CONNECT, NULL, false },
	[IC_CAPABILITY] = { "capability", LG_FN_IMAP_LOGIN, send_capability, false },
	[IC_STARTTLS] = { "starttls", LG_FN_IMAP_STARTTLS, send_starttls, false },
	[IC_LOGIN] = { "login", LG_FN_IMAP_LOGIN, send_login, false },
	[IC_AUTHENTICATE] = { "authenticate", LG_FN_IMAP_LOGIN, send_authenticate, false },
	[IC_LIST] = { "list", LG_FN_IMAP_LIST, send_list, false },
	[IC_SELECT_INBOX] = { "select-inbox", LG_FN_IMAP_SELECT, send_select_inbox, false },
	[IC_SELECT_FOLDER] = { "select-folder", LG_FN_IMAP_SELECT, send_select_folder, false },
	[IC_FETCH_NEW] = { "fetch-new", LG_FN_IMAP_FETCH_HEADERS, send_fetch_new, false },
	[IC_FETCH_FOLDER_HEADERS] = { "fetch-folder-headers", LG_FN_IMAP_FETCH_HEADERS,
				      send_fetch_folder_headers, false },
	[IC_FETCH_CHANGED] = { "fetch-changed", LG_FN_IMAP_FETCH_HEADERS,
			       send_fetch_changed, false },
	[IC_FETCH_NEWEST] = { "fetch-newest", LG_FN_IMAP_FETCH_HEADERS,
			      send_fetch_newest, false },
	[IC_FETCH_NEWEST_BODY] = { "fetch-newest-body", LG_FN_IMAP_FETCH_BODY,
				   send_fetch_newest_body, false },
	[IC_FETCH_BODY] = { "fetch-body", LG_FN_IMAP_FETCH_BODY, send_fetch_body, false },
	[IC_STORE_SEEN] = { "store-seen", LG_FN_IMAP_STORE, send_store_seen, false },
	[IC_STORE_DELETED] = { "store-deleted", LG_FN_IMAP_STORE, send_store_deleted, false },
	[IC_STORE_ANSWERED] = { "store-answered", LG_FN_IMAP_STORE, send_store_answered, false },
	[IC_EXPUNGE] = { "expunge", LG_FN_IMAP_EXPUNGE, send_expunge, false },
	[IC_MOVE] = { "move", LG_FN_IMAP_MOVE, send_move, false },
	[IC_APPEND_REPLY] = { "append-reply", LG_FN_IMAP_APPEND, send_append, false },
	[IC_APPEND_FILL] = { "append-fill", LG_FN_IMAP_APPEND, send_append, false },
	[IC_CREATE] = { "create", LG_FN_IMAP_CREATE, send_create, true },
	[IC_SEARCH] = { "search", LG_FN_IMAP_SEARCH, send_search, false },
	[IC_IDLE] = { "idle", LG_FN_IMAP_IDLE, send_idle, false },
	[IC_LOGOUT] = { "logout", LG_FN_IMAP_LOGOUT, send_logout, false },
};

static const char *cmd_name(enum imap_cmd cmd)
{
	return cmd < IC_COUNT ? imap_commands[cmd].name :
		cmd == IC_WAIT ? "wait" : "done";
}

/* ---- sending ---- */

/* "TAG text" CRLF with the command's fresh tag. */
static void send_tagged(struct lg_imap_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void send_tagged(struct lg_imap_session *s, const char *fmt, ...)
{
	char text[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	lg_session_send(&s->base, "%s %s", s->tag, text);
}

/* An IMAP quoted string (RFC 9051 9: '"' and '\' escaped). */
static void quote(char *out, size_t size, const char *in)
{
	size_t len = 0;

	if (size < 3)
		return;
	out[len++] = '"';
	for (; *in != '\0' && len + 3 < size; in++) {
		if (*in == '"' || *in == '\\')
			out[len++] = '\\';
		out[len++] = *in;
	}
	out[len++] = '"';
	out[len] = '\0';
}

static void send_capability(struct lg_imap_session *s)
{
	send_tagged(s, "CAPABILITY");
}

static void send_starttls(struct lg_imap_session *s)
{
	send_tagged(s, "STARTTLS");
}

static void send_login(struct lg_imap_session *s)
{
	char login[CREDENTIAL_MAX], password[CREDENTIAL_MAX];
	char qlogin[2 * CREDENTIAL_MAX + 3], qpassword[2 * CREDENTIAL_MAX + 3];

	lg_format_login(login, sizeof(login), s->base.env->wl, s->params.user);
	lg_format_password(password, sizeof(password), s->base.env->wl, s->params.user);
	quote(qlogin, sizeof(qlogin), login);
	quote(qpassword, sizeof(qpassword), password);
	lg_session_send(&s->base, "%s LOGIN %s %s", s->tag, qlogin, qpassword);
}

/* RFC 4616 2: message = [authzid] NUL authcid NUL passwd, in base64. */
static void plain_response(struct lg_imap_session *s, struct mt_buf *out)
{
	char login[CREDENTIAL_MAX], password[CREDENTIAL_MAX];
	struct mt_buf raw;

	lg_format_login(login, sizeof(login), s->base.env->wl, s->params.user);
	lg_format_password(password, sizeof(password), s->base.env->wl, s->params.user);
	mt_buf_init(&raw);
	mt_buf_append_char(&raw, '\0');
	mt_buf_append_str(&raw, login);
	mt_buf_append_char(&raw, '\0');
	mt_buf_append_str(&raw, password);
	mt_base64_encode(raw.data, raw.len, out);
	mt_buf_free(&raw);
}

static void send_authenticate(struct lg_imap_session *s)
{
	struct mt_buf b64;

	if (!(s->caps & CAP_SASL_IR)) {
		s->awaiting_continue = true;
		send_tagged(s, "AUTHENTICATE PLAIN");
		return;
	}
	mt_buf_init(&b64);
	plain_response(s, &b64);
	lg_session_send(&s->base, "%s AUTHENTICATE PLAIN %s", s->tag, b64.data);
	mt_buf_free(&b64);
}

static void send_list(struct lg_imap_session *s)
{
	send_tagged(s, s->caps & CAP_SPECIAL_USE ?
		    "LIST \"\" \"*\" RETURN (SPECIAL-USE)" : "LIST \"\" \"*\"");
}

static void send_select_inbox(struct lg_imap_session *s)
{
	s->exists = 0;
	send_tagged(s, s->caps & CAP_CONDSTORE ? "SELECT INBOX (CONDSTORE)" :
		    "SELECT INBOX");
}

static void send_select_folder(struct lg_imap_session *s)
{
	s->exists = 0;
	send_tagged(s, "SELECT \"%s\"", lg_imap_folders[s->folder]);
}

#define SUMMARY_ITEMS "(UID FLAGS ENVELOPE BODYSTRUCTURE RFC822.SIZE)"
#define HEADER_ITEMS "(UID FLAGS RFC822.SIZE BODY.PEEK[HEADER.FIELDS (From To Subject Date)])"

static void send_fetch_new(struct lg_imap_session *s)
{
	s->n_uids = 0;
	s->uid_index = 0;
	send_tagged(s, "UID FETCH %" PRIu64 ":* " SUMMARY_ITEMS, s->known_max_uid + 1);
}

static void send_fetch_folder_headers(struct lg_imap_session *s)
{
	send_tagged(s, "FETCH 1:* " HEADER_ITEMS);
}

/* Our choice: a webmail client keeps no cache between sessions, so it
 * asks for every change (CHANGEDSINCE 1) where CONDSTORE is offered. */
static void send_fetch_changed(struct lg_imap_session *s)
{
	send_tagged(s, s->caps & CAP_CONDSTORE ? "UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1)" :
		    "UID FETCH 1:* (FLAGS)");
}

static void send_fetch_newest(struct lg_imap_session *s)
{
	send_tagged(s, "FETCH %" PRIu32 ":* " HEADER_ITEMS,
		    s->exists > 20 ? s->exists - 19 : 1);
}

static void send_fetch_newest_body(struct lg_imap_session *s)
{
	send_tagged(s, "FETCH %" PRIu32 " BODY.PEEK[]", s->exists);
}

static uint64_t current_uid(const struct lg_imap_session *s)
{
	return s->uid_index < s->n_uids ? s->uids[s->uid_index] : 0;
}

static void send_fetch_body(struct lg_imap_session *s)
{
	send_tagged(s, "UID FETCH %" PRIu64 " BODY.PEEK[]", current_uid(s));
}

static void send_store_seen(struct lg_imap_session *s)
{
	send_tagged(s, "UID STORE %" PRIu64 " +FLAGS (\\Seen)", current_uid(s));
}

static void send_store_deleted(struct lg_imap_session *s)
{
	send_tagged(s, "UID STORE %" PRIu64 " +FLAGS (\\Deleted)", current_uid(s));
}

static void send_store_answered(struct lg_imap_session *s)
{
	send_tagged(s, "UID STORE %" PRIu64 " +FLAGS (\\Answered)", current_uid(s));
}

static void send_expunge(struct lg_imap_session *s)
{
	if (s->caps & CAP_UIDPLUS)
		send_tagged(s, "UID EXPUNGE %" PRIu64, current_uid(s));
	else
		send_tagged(s, "EXPUNGE");
}

static void send_move(struct lg_imap_session *s)
{
	send_tagged(s, "UID MOVE %" PRIu64 " \"%s\"", current_uid(s),
		    lg_imap_folders[s->folder]);
}

/* Queue literal octets while the socket keeps up; CRLF ends the command. */
static void fill_literal(struct lg_imap_session *s)
{
	struct evbuffer *out = lg_session_output(&s->base);

	while (s->appending && evbuffer_get_length(out) < APPEND_CHUNK) {
		if (lg_message_fill(&s->append_body, out, APPEND_CHUNK) == 0) {
			evbuffer_add(out, "\r\n", 2);
			s->appending = false;
		}
	}
}

static void start_literal(struct lg_imap_session *s)
{
	evbuffer_add(lg_session_output(&s->base), s->append_headers.data,
		     s->append_headers.len);
	s->appending = true;
	fill_literal(s);
}

/* RFC 9051 6.3.12: APPEND mailbox [flags] literal. A reply goes to Sent,
 * the fill's messages to the folder being filled; sizes from the size
 * table, the session's own stream. */
static void send_append(struct lg_imap_session *s)
{
	bool reply = s->cmd == IC_APPEND_REPLY;
	const char *folder = reply ? "Sent" : lg_imap_folders[s->fill_folder];
	/* Draws in a fixed order: size, then the correspondent. */
	uint64_t size = lg_workload_message_size(&s->rng);
	uint64_t other = 1 + lg_rng_below(&s->rng, LG_REMOTE_USERS);
	struct lg_message_plan plan = {
		.from_remote = !reply,
		.sender = reply ? s->params.user : other,
		.size = size,
		.n_rcpts = 1,
		.rcpts = { { .remote = reply, .user = reply ? other : s->params.user } },
	};
	char id[64];

	snprintf(id, sizeof(id), "imap.%" PRIu64 ".%u", s->base.log.session_id, s->tag_no);
	lg_message_begin(&s->append_headers, &s->append_body, s->base.env->wl, &plan, id);
	size = s->append_headers.len + s->append_body.remaining;
	bool plus = (s->caps & CAP_LITERAL_PLUS) != 0;
	send_tagged(s, "APPEND \"%s\" (\\Seen) {%" PRIu64 "%s}", folder, size,
		    plus ? "+" : "");
	if (plus)
		start_literal(s);
	else
		s->awaiting_continue = true;
}

static void send_create(struct lg_imap_session *s)
{
	send_tagged(s, "CREATE \"%s\"", lg_imap_folders[s->fill_folder]);
}

static void send_search(struct lg_imap_session *s)
{
	if (s->params.plan.search == LG_IMAP_SEARCH_HEADER)
		send_tagged(s, "UID SEARCH HEADER Subject \"test message\"");
	else
		send_tagged(s, "UID SEARCH UNSEEN");
}

static void send_idle(struct lg_imap_session *s)
{
	s->idle_base = s->exists;
	s->done_sent = false;
	send_tagged(s, "IDLE");
}

static void send_logout(struct lg_imap_session *s)
{
	send_tagged(s, "LOGOUT");
}

/* ---- the command cycle ---- */

static void start_command(struct lg_imap_session *s, enum imap_cmd cmd)
{
	mt_slog(MT_LOG_DEBUG, &s->base.log, "imap %s -> %s", cmd_name(s->cmd),
		cmd_name(cmd));
	s->cmd = cmd;
	s->awaiting_continue = false;
	snprintf(s->tag, sizeof(s->tag), "A%04u", ++s->tag_no);
	lg_session_step_begin(&s->base, imap_commands[cmd].fn);
	imap_commands[cmd].send(s);
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

/* "* N FETCH (... UID u ... FLAGS (...))": a new message to handle when
 * its UID is above what we knew and it is not \Seen. */
static void fetch_data(struct lg_imap_session *s, const char *rest)
{
	uint64_t uid;

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
	if (!lg_imap_has_word(rest, "\\Seen") && s->n_uids < LG_IMAP_MAX_NEW)
		s->uids[s->n_uids++] = uid;
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
					cmd_name(s->cmd), rest);
		return;
	}
	if (lg_imap_starts_with(rest, "CAPABILITY"))
		read_caps(s, rest + strlen("CAPABILITY"));
	else if (lg_imap_starts_with(rest, "OK"))
		caps_in_code(s, rest);
	else if (lg_imap_number_then(rest, "EXISTS", &n)) {
		s->exists = n;
		if (s->idling && !s->done_sent && n > s->idle_base)
			wake(s);
	} else if (lg_imap_number_then(rest, "EXPUNGE", &n)) {
		if (s->exists > 0)
			s->exists--;
	} else if (lg_imap_number_then(rest, "FETCH", &n)) {
		fetch_data(s, rest);
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
	    !(r->status == LG_IMAP_STATUS_NO && imap_commands[s->cmd].no_is_answer)) {
		if (s->base.step_open)
			lg_session_step_end(&s->base, false);
		lg_session_fail(&s->base, LG_ERR_REJECTED, "%s answered %s: %.80s",
				cmd_name(s->cmd),
				r->status == LG_IMAP_STATUS_NO ? "NO" : "BAD", r->rest);
		return;
	}
	if (s->appending) {
		lg_session_fail(&s->base, LG_ERR_PROTOCOL,
				"%s answered before its literal was sent", cmd_name(s->cmd));
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
		struct mt_buf b64;

		s->awaiting_continue = false;
		mt_buf_init(&b64);
		plain_response(s, &b64);
		lg_session_send(&s->base, "%s", b64.data);
		mt_buf_free(&b64);
		return;
	}
	if (s->awaiting_continue &&
	    (s->cmd == IC_APPEND_REPLY || s->cmd == IC_APPEND_FILL)) {
		s->awaiting_continue = false;
		start_literal(s);
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
			cmd_name(s->cmd));
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
					cmd_name(s->cmd), error);
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
	}
}

static void imap_drained(struct lg_session *base)
{
	struct lg_imap_session *s = (struct lg_imap_session *)base;

	if (s->appending)
		fill_literal(s);
}

static void imap_destroy(struct lg_session *base)
{
	struct lg_imap_session *s = (struct lg_imap_session *)base;

	if (s->wait_timer != NULL)
		event_free(s->wait_timer);
	lg_imap_reader_free(&s->reader);
	mt_buf_free(&s->append_headers);
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
					 const struct sockaddr *addr,
					 socklen_t addrlen,
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
	lg_imap_reader_init(&s->reader);
	mt_buf_init(&s->append_headers);
	s->wait_timer = evtimer_new(env->base, wait_cb, s);
	if (s->wait_timer == NULL)
		mt_panic("out of memory creating a timer");
	s->tls = env->tls != NULL && env->imap_implicit_tls;
	if (s->tls)
		lg_session_connect_tls(&s->base, addr, addrlen, LG_FN_IMAP_CONNECT);
	else
		lg_session_connect(&s->base, addr, addrlen, LG_FN_IMAP_CONNECT);
	return &s->base;
}
