/* mmp-commands.c — the POP3 commands the MMP itself answers, before login:
 * a const table of handlers, indexed by command id (for the per-session
 * counters in the log line). After login every byte goes to the store.
 *
 * Trust boundary: command lines from the client (at most 255 octets, no
 * CR/LF/NUL inside: lineio.c), parsed by mmp-parse.c; user names,
 * passwords and SASL responses are client data, passed to the directory
 * only through libdirsvc, never logged (passwords) and wiped after use.
 * The answers to CAPA, USER, PASS, AUTH and STLS are the one POP3 login
 * phase's (lib-mail/pop3-login.h), shared with the store; the MMP's ops
 * count errors, switch states and start the login (mmp-login.c).
 * RFCs: RFC 1939 sections 4, 7 (USER, PASS, QUIT in AUTHORIZATION), RFC
 * 2449 section 5 (CAPA), RFC 2595 section 4 (STLS), RFC 5034 section 4
 * (AUTH), RFC 4616 (PLAIN). */
#include "mmp.h"
#include "mmp-parse.h"
#include "alloc.h"
#include "buf.h"
#include "pop3-login.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

static void cmd_capa(struct mmp_session *sess, const char *args);
static void cmd_user(struct mmp_session *sess, const char *args);
static void cmd_pass(struct mmp_session *sess, const char *args);
static void cmd_auth(struct mmp_session *sess, const char *args);
static void cmd_stls(struct mmp_session *sess, const char *args);
static void cmd_quit(struct mmp_session *sess, const char *args);

/* Indexed by command id; the keywords are mmp-parse.c's table. */
static void (*const handlers[MMP_CMD_UNKNOWN])(struct mmp_session *sess, const char *args) = {
	[MMP_CMD_CAPA] = cmd_capa,
	[MMP_CMD_USER] = cmd_user,
	[MMP_CMD_PASS] = cmd_pass,
	[MMP_CMD_AUTH] = cmd_auth,
	[MMP_CMD_STLS] = cmd_stls,
	[MMP_CMD_QUIT] = cmd_quit,
};

/* The login phase's ops (lib-mail/pop3-login.h) on an MMP session: the
 * shared ones are mmp-phase-ops.c's. */

static void login_reply_raw(void *context, const char *data, size_t len)
{
	mmp_reply_raw(context, data, len);
}

static void login_start(void *context, const struct mt_pop3_credentials *cred)
{
	struct mmp_session *sess = context;
	/* The phase set sess->user; the password is wiped after this. */
	mmp_login_start(sess, sess->user, cred->password);
}

static const struct mt_pop3_login_ops login_ops = {
	.reply = mmp_phase_reply, .reply_raw = login_reply_raw, .error = mmp_phase_error,
	.plaintext_ok = mmp_phase_plaintext_ok, .tls_active = mmp_phase_tls_active,
	.tls_available = mmp_phase_tls_available, .sasl_wait = mmp_phase_sasl_wait,
	.starttls = mmp_phase_starttls, .login = login_start,
};

void mmp_commands_init(struct mmp_session *sess)
{
	/* Users may not act for someone else: no authzid of another. */
	sess->login = (struct mt_pop3_login){
		.ops = &login_ops, .context = sess, .user = &sess->user,
		.authzid_allowed = false,
	};
}

void mmp_command_run(struct mmp_session *sess, const char *line)
{
	static const struct mt_command_gate gate = { 0 };	/* one state, no TLS gate */
	struct mt_command_call call;
	if (mt_command_check(&mmp_command_table, &sess->commands, &gate, line, &call) !=
	    MT_COMMAND_RUN) {
		if (mmp_session_error(sess))
			mmp_reply(sess, "-ERR Unknown command.");
		return;
	}
	handlers[call.index](sess, call.arg);
}

static void cmd_capa(struct mmp_session *sess, const char *args)
{
	(void)args;
	mt_pop3_login_capa(&sess->login, false);
}

static void cmd_user(struct mmp_session *sess, const char *args)
{
	mt_pop3_login_user(&sess->login, args);
}

static void cmd_pass(struct mmp_session *sess, const char *args)
{
	mt_pop3_login_pass(&sess->login, args);
}

static void cmd_auth(struct mmp_session *sess, const char *args)
{
	mt_pop3_login_auth(&sess->login, args);
}

void mmp_command_sasl_response(struct mmp_session *sess, const char *line)
{
	mt_pop3_login_sasl_response(&sess->login, line);
}

static void cmd_stls(struct mmp_session *sess, const char *args)
{
	mt_pop3_login_stls(&sess->login, args);
}

static void cmd_quit(struct mmp_session *sess, const char *args)
{
	(void)args;
	mmp_session_finish(sess, MT_OUTCOME_QUIT, "quit", "+OK Logging out.");
}
