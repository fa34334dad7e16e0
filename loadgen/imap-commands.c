/* imap-commands.c — the IMAP client's command table (see imap-private.h):
 * per command its name, the report row it is timed in, the function that
 * writes it and whether a NO is an answer; the writers, from the quoting of
 * the login to the APPEND literal generated as the socket drains.
 * Trust boundary: nothing read here; what is written quotes only our own
 * names (users, folders) and numbers the server gave (UIDs, counts).
 * RFC 9051 6.1.1 (CAPABILITY), 6.2.1 (STARTTLS), 6.2.2 (AUTHENTICATE),
 * 6.2.3 (LOGIN), 6.3.2 (SELECT), 6.3.9 (LIST), 6.3.12 (APPEND), 6.4.3-6.4.9
 * (EXPUNGE, SEARCH, FETCH, STORE, MOVE, UID), 9 (quoted strings, literal);
 * RFC 2177 (IDLE), 4959 (SASL-IR), 4616 (PLAIN), 7888 (LITERAL+), 7162
 * (SELECT (CONDSTORE), CHANGEDSINCE), 6154 (RETURN (SPECIAL-USE)), 4315
 * (UID EXPUNGE), 6851 (UID MOVE); 6.4.5 (BODY.PEEK[HEADER.FIELDS]) and
 * 6.4.6 (+FLAGS.SILENT) for the probe watcher, 6.1.2 (NOOP). */
#include "imap-private.h"

#include "sasl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

/* Queue the APPEND literal while less than this is waiting to go. */
#define APPEND_CHUNK (64 * 1024)
/* A user's login and password, quoted. */
#define CREDENTIAL_MAX 320

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
static void send_probe_fetch(struct lg_imap_session *s);
static void send_probe_delete(struct lg_imap_session *s);
static void send_probe_expunge(struct lg_imap_session *s);
static void send_noop(struct lg_imap_session *s);
static void send_logout(struct lg_imap_session *s);

const struct imap_command lg_imap_commands[IC_COUNT] = {
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
	[IC_PROBE_FETCH] = { "probe-fetch", LG_FN_IMAP_FETCH_HEADERS, send_probe_fetch, false },
	[IC_PROBE_DELETE] = { "probe-delete", LG_FN_IMAP_STORE, send_probe_delete, false },
	[IC_PROBE_EXPUNGE] = { "probe-expunge", LG_FN_IMAP_EXPUNGE, send_probe_expunge, false },
	[IC_NOOP] = { "noop", LG_FN_IMAP_NOOP, send_noop, false },
	[IC_LOGOUT] = { "logout", LG_FN_IMAP_LOGOUT, send_logout, false },
};

const char *lg_imap_cmd_name(enum imap_cmd cmd)
{
	return cmd < IC_COUNT ? lg_imap_commands[cmd].name :
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

void lg_imap_send_plain(struct lg_imap_session *s)
{
	struct mt_buf b64;

	mt_buf_init(&b64);
	plain_response(s, &b64);
	lg_session_send(&s->base, "%s", b64.data);
	mt_buf_free(&b64);
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
void lg_imap_fill_literal(struct lg_imap_session *s)
{
	struct evbuffer *out = lg_session_output(&s->base);

	while (s->appending && evbuffer_get_length(out) < APPEND_CHUNK) {
		if (lg_message_fill(&s->append_body, out, APPEND_CHUNK) == 0) {
			evbuffer_add(out, "\r\n", 2);
			s->appending = false;
		}
	}
}

void lg_imap_start_literal(struct lg_imap_session *s)
{
	evbuffer_add(lg_session_output(&s->base), s->append_headers.data,
		     s->append_headers.len);
	s->appending = true;
	lg_imap_fill_literal(s);
}

/* RFC 9051 6.3.12: APPEND mailbox [flags] literal. A reply goes to Sent
 * and is handed to the submission (submit_reply: by SMTP, on its own
 * connection; the client does not wait for it), the fill's messages to
 * the folder being filled; sizes from the size table, the session's own
 * stream. */
static void send_append(struct lg_imap_session *s)
{
	const struct lg_session_env *env = s->base.env;
	bool reply = s->cmd == IC_APPEND_REPLY;
	const char *folder = reply ? "Sent" : lg_imap_folders[s->fill_folder];
	struct lg_message_plan plan;
	char id[64];

	if (reply) {
		lg_imap_reply_plan(s, &plan);
		if (env->submit_reply != NULL)
			env->submit_reply(env->submit_context, s->base.stats, &plan);
	} else {
		/* Draws in a fixed order: size, then the correspondent. */
		uint64_t drawn = lg_workload_message_size(&s->rng);
		uint64_t other = 1 + lg_rng_below(&s->rng, LG_REMOTE_USERS);
		plan = (struct lg_message_plan){
			.from_remote = true, .sender = other, .size = drawn,
			.n_rcpts = 1, .n_local = 1,
			.rcpts = { { .remote = false, .user = s->params.user } },
		};
	}
	snprintf(id, sizeof(id), "imap.%" PRIu64 ".%u", s->base.log.session_id, s->tag_no);
	lg_message_begin(&s->append_headers, &s->append_body, env->wl, &plan, id);
	uint64_t size = s->append_headers.len + s->append_body.remaining;
	bool plus = (s->caps & CAP_LITERAL_PLUS) != 0;
	send_tagged(s, "APPEND \"%s\" (\\Seen) {%" PRIu64 "%s}", folder, size,
		    plus ? "+" : "");
	if (plus)
		lg_imap_start_literal(s);
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

/* ---- the probe watcher ---- */

/* RFC 9051 6.4.5: the id header of every message above those handled. */
static void send_probe_fetch(struct lg_imap_session *s)
{
	lg_imap_probe_round_begin(s);
	send_tagged(s, "UID FETCH %" PRIu64 ":* (UID BODY.PEEK[HEADER.FIELDS (%s)])",
		    s->known_max_uid + 1, LG_ID_HEADER);
}

/* The delete list as a UID set: "u,u,..." (at most LG_IMAP_MAX_NEW). */
static void uid_set(const struct lg_imap_session *s, struct mt_buf *out)
{
	for (unsigned int i = 0; i < s->n_uids; i++)
		mt_buf_appendf(out, "%s%" PRIu64, i > 0 ? "," : "", s->uids[i]);
}

static void send_probe_delete(struct lg_imap_session *s)
{
	struct mt_buf set = MT_BUF_INIT;

	uid_set(s, &set);
	lg_session_send(&s->base, "%s UID STORE %s +FLAGS.SILENT (\\Deleted)", s->tag,
			mt_buf_cstr(&set));
	mt_buf_free(&set);
}

/* UID EXPUNGE (RFC 4315) removes only ours; plain EXPUNGE also what the
 * desktop sessions of the probe user marked \Deleted, as theirs would. */
static void send_probe_expunge(struct lg_imap_session *s)
{
	struct mt_buf set = MT_BUF_INIT;

	if (!(s->caps & CAP_UIDPLUS)) {
		send_tagged(s, "EXPUNGE");
		return;
	}
	uid_set(s, &set);
	lg_session_send(&s->base, "%s UID EXPUNGE %s", s->tag, mt_buf_cstr(&set));
	mt_buf_free(&set);
}

static void send_noop(struct lg_imap_session *s)
{
	send_tagged(s, "NOOP");
}

static void send_logout(struct lg_imap_session *s)
{
	send_tagged(s, "LOGOUT");
}
