/* mmp-commands.c — the POP3 commands the MMP itself answers, before login:
 * a const table, indexed by command id (for the per-session counters in
 * the log line), of flags and handler. After login every byte goes to the
 * store.
 *
 * Trust boundary: command lines from the client (at most 255 octets, no
 * CR/LF/NUL inside: lineio.c), parsed by mmp-parse.c; user names,
 * passwords and SASL responses are client data, passed to the directory
 * only through libdirsvc, never logged (passwords) and wiped after use.
 * RFCs: RFC 1939 sections 4, 7 (USER, PASS, QUIT in AUTHORIZATION; PASS
 * takes the rest of the line, spaces included), RFC 2449 section 5 (CAPA)
 * and 6 (capabilities), RFC 2595 section 4 (STLS) and 6 (PLAIN only over
 * TLS), RFC 5034 section 4 (AUTH, "=" and "*"), RFC 4616 (PLAIN), RFC 3206
 * ([AUTH], [SYS/TEMP]). */
#include "mmp.h"
#include "mmp-parse.h"
#include "alloc.h"
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

/* The command carries a credential: refused before TLS unless
 * allow_plaintext_auth (RFC 2595 section 6). */
#define CMD_CREDENTIALS 0x01u

/* Indexed by command id; the keyword is mmp-parse.c's. */
struct mmp_command {
	unsigned int flags;
	void (*handler)(struct mmp_session *sess, const char *args);
};

static void cmd_capa(struct mmp_session *sess, const char *args);
static void cmd_user(struct mmp_session *sess, const char *args);
static void cmd_pass(struct mmp_session *sess, const char *args);
static void cmd_auth(struct mmp_session *sess, const char *args);
static void cmd_stls(struct mmp_session *sess, const char *args);
static void cmd_quit(struct mmp_session *sess, const char *args);

static const struct mmp_command command_table[MMP_CMD_UNKNOWN] = {
	[MMP_CMD_CAPA] = { 0, cmd_capa },
	[MMP_CMD_USER] = { CMD_CREDENTIALS, cmd_user },
	[MMP_CMD_PASS] = { CMD_CREDENTIALS, cmd_pass },
	[MMP_CMD_AUTH] = { 0, cmd_auth },	/* PLAIN checked inside */
	[MMP_CMD_STLS] = { 0, cmd_stls },
	[MMP_CMD_QUIT] = { 0, cmd_quit },
};

static const char *const command_names[MMP_CMD_COUNT] = {
	[MMP_CMD_CAPA] = "capa", [MMP_CMD_USER] = "user",
	[MMP_CMD_PASS] = "pass", [MMP_CMD_AUTH] = "auth",
	[MMP_CMD_STLS] = "stls", [MMP_CMD_QUIT] = "quit",
	[MMP_CMD_UNKNOWN] = "unknown",
};

#define PLAINTEXT_REFUSED "-ERR [AUTH] Plaintext authentication disallowed " \
	"on non-secure (SSL/TLS) connections."

const char *mmp_command_name(enum mmp_command_id id)
{
	return id < MMP_CMD_COUNT ? command_names[id] : "?";
}

static bool plaintext_ok(const struct mmp_session *sess)
{
	return sess->tls || sess->worker->server->set->allow_plaintext_auth;
}

void mmp_command_run(struct mmp_session *sess, const char *line)
{
	const char *args;
	enum mmp_command_id id = mmp_parse_command(line, &args);

	sess->commands[id]++;
	if (id == MMP_CMD_UNKNOWN) {
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR Unknown command.");
		return;
	}
	const struct mmp_command *cmd = &command_table[id];
	if ((cmd->flags & CMD_CREDENTIALS) != 0 && !plaintext_ok(sess)) {
		if (mmp_session_error(sess))
			mmp_reply(sess, PLAINTEXT_REFUSED);
		return;
	}
	cmd->handler(sess, args);
}

/* RFC 2449 section 5; RFC 2595 section 4 (STLS) and 6 (no USER or PLAIN
 * before TLS unless the policy allows them). */
static void cmd_capa(struct mmp_session *sess, const char *args)
{
	char capa[256];
	(void)args;
	/* One write for the whole list. */
	int n = snprintf(capa, sizeof(capa), "%s%s%s.\r\n",
			 "+OK Capability list follows\r\n"
			 "TOP\r\nUIDL\r\nRESP-CODES\r\nAUTH-RESP-CODE\r\n"
			 "PIPELINING\r\n",
			 plaintext_ok(sess) ? "USER\r\nSASL PLAIN\r\n" : "",
			 !sess->tls && sess->worker->server->tls != NULL ?
			 "STLS\r\n" : "");
	mmp_reply_raw(sess, capa, (size_t)n);
}

static void cmd_user(struct mmp_session *sess, const char *args)
{
	switch (mmp_parse_user(args)) {
	case MMP_USER_MISSING:
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR Missing user name.");
		return;
	case MMP_USER_TOO_LONG:
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR User name too long.");
		return;
	case MMP_USER_OK:
		break;
	}
	free(sess->user);
	sess->user = mt_xstrdup(args);
	/* Same answer whether the user exists or not. */
	mmp_reply(sess, "+OK");
}

static void cmd_pass(struct mmp_session *sess, const char *args)
{
	if (sess->user == NULL) {
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR No user name given (USER first).");
		return;
	}
	if (args[0] == '\0') {
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR Missing password.");
		return;
	}
	/* RFC 1939 section 7: spaces are part of the password. */
	mmp_login_start(sess, sess->user, args);
}

/* An AUTH PLAIN response: check it and log in. */
static void sasl_plain(struct mmp_session *sess, const char *b64)
{
	struct mt_buf msg = MT_BUF_INIT;
	struct mmp_plain plain;
	const char *error = NULL;

	mt_buf_reserve(&msg, strlen(b64));	/* no realloc copies of it */
	bool ok = mmp_parse_plain_response(b64, &msg, &plain, &error);
	if (ok) {
		free(sess->user);
		sess->user = mt_xstrdup(plain.authcid);
		mmp_login_start(sess, sess->user, plain.password);
	}
	explicit_bzero(msg.data, msg.cap);
	mt_buf_free(&msg);
	if (!ok) {
		mt_slog(MT_LOG_DEBUG, &sess->log, "AUTH PLAIN refused: %s", error);
		if (sess->state == MMP_STATE_SASL)
			mmp_enter_state(sess, MMP_STATE_AUTHORIZATION);
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR [AUTH] Invalid AUTH PLAIN response.");
	}
}

/* RFC 5034 section 4. */
static void cmd_auth(struct mmp_session *sess, const char *args)
{
	const char *initial;

	switch (mmp_parse_auth(args, &initial)) {
	case MMP_AUTH_LIST: {
		/* Not in RFC 5034, but clients use it to list mechanisms. */
		const char *list = plaintext_ok(sess) ? "+OK\r\nPLAIN\r\n.\r\n" :
			"+OK\r\n.\r\n";
		mmp_reply_raw(sess, list, strlen(list));
		return;
	}
	case MMP_AUTH_UNSUPPORTED:
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR Unsupported authentication mechanism.");
		return;
	case MMP_AUTH_PLAIN:
		break;
	}
	if (!plaintext_ok(sess)) {
		if (mmp_session_error(sess))
			mmp_reply(sess, PLAINTEXT_REFUSED);
		return;
	}
	if (initial != NULL) {
		sasl_plain(sess, initial);
		return;
	}
	/* No initial response: ask for it with an empty challenge. */
	mmp_reply(sess, "+ ");
	mmp_enter_state(sess, MMP_STATE_SASL);
}

void mmp_command_sasl_response(struct mmp_session *sess, const char *line)
{
	if (strcmp(line, "*") == 0) {
		/* RFC 5034 section 4: the server MUST reject the AUTH. */
		mmp_enter_state(sess, MMP_STATE_AUTHORIZATION);
		mmp_reply(sess, "-ERR Authentication cancelled.");
		return;
	}
	sasl_plain(sess, line);
}

/* RFC 2595 section 4. */
static void cmd_stls(struct mmp_session *sess, const char *args)
{
	if (sess->tls) {
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR Command not permitted when TLS active.");
		return;
	}
	if (sess->worker->server->tls == NULL) {
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR TLS not available.");
		return;
	}
	if (args[0] != '\0') {
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR STLS takes no arguments.");
		return;
	}
	/* Read nothing more in plaintext; switch to TLS once the +OK is
	 * out (now, or from the write callback). */
	bufferevent_disable(sess->client, EV_READ);
	mmp_enter_state(sess, MMP_STATE_STLS);
	mmp_reply(sess, "+OK Begin TLS negotiation now.");
	mmp_session_flushed_check(sess);
}

static void cmd_quit(struct mmp_session *sess, const char *args)
{
	(void)args;
	mmp_session_finish(sess, "quit", "+OK Logging out.");
}
