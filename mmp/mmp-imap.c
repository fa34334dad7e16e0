/* mmp-imap.c — the MMP's IMAP front before login: the greeting, reading
 * commands and their literals with lib-mail/imap-parse, the command table
 * of the not-authenticated state (CAPABILITY, NOOP, LOGOUT, ID, STARTTLS,
 * LOGIN, AUTHENTICATE) whose answers are lib-mail/imap-login's (the one
 * not-authenticated state the store speaks too), and the ops that tie
 * them to an MMP session. A login goes to mmp-login.c (directory, shard,
 * backend) exactly as a POP3 one does; after it the relay carries every
 * byte and the store speaks to the client.
 *
 * Trust boundary: every byte is the client's. A command is bounded by
 * mt_imap_login_limits (a line, a literal, the whole command, nesting,
 * arguments: the store's own bound before login, so an ID the store
 * takes passes here too),
 * the input read ahead by MMP_INPUT_MAX, the AUTHENTICATE response line by
 * MMP_SASL_LINE_MAX; bad commands count towards max_errors. The parser's
 * buffers (which hold LOGIN's password) and the response line are wiped
 * after each command. After STARTTLS nothing received in plaintext is used
 * (RFC 9051 6.2.1). The pre-login capability list is the stores'
 * (IMAP4rev2 IMAP4rev1 SASL-IR LITERAL+ ID ENABLE), so a client sees the
 * same before login whether it reaches a store directly or through here;
 * the login's OK carries the store's own list.
 * RFCs: RFC 9051 2.2 (commands, continuation requests), 6.1, 6.2, 7.1.1
 * (the greeting's [CAPABILITY]), 7.1.5 (BYE); RFC 7888 (LITERAL+); RFC
 * 4959 (SASL-IR); RFC 2971 (ID). */
#include "mmp.h"
#include "alloc.h"
#include "buf.h"
#include "imap-parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#define CAPABILITIES_PRE "IMAP4rev2 IMAP4rev1 SASL-IR LITERAL+ ID ENABLE"
#define ID_REPLY "(\"name\" \"mailtier-mmp\" \"vendor\" \"mailtier\")"

struct mmp_imap_front {
	struct mt_imap_parser parser;
	struct mt_imap_login login;
};

typedef void imap_handler_t(struct mmp_session *sess, const struct mt_imap_command *cmd);

struct imap_command {
	struct mt_command_def def;
	imap_handler_t *run;
};

static imap_handler_t cmd_capability, cmd_noop, cmd_logout, cmd_id, cmd_starttls,
	cmd_login, cmd_authenticate;

static const struct imap_command commands[] = {
	{ { "CAPABILITY", 0 }, cmd_capability },
	{ { "NOOP", 0 }, cmd_noop },
	{ { "LOGOUT", 0 }, cmd_logout },
	{ { "ID", 0 }, cmd_id },
	{ { "STARTTLS", 0 }, cmd_starttls },
	{ { "LOGIN", MT_CMD_SECRET }, cmd_login },
	{ { "AUTHENTICATE", MT_CMD_SECRET }, cmd_authenticate },
};

const struct mt_command_table mmp_imap_command_table = MT_COMMAND_TABLE(commands);

/* The login phase's ops on an MMP session */

static void login_start(void *context, const char *tag,
			const struct mt_imap_credentials *cred)
{
	struct mmp_session *sess = context;
	/* imap-login refused any authorization identity but the user's own. */
	snprintf(sess->imap_tag, sizeof(sess->imap_tag), "%s", tag);
	free(sess->user);
	sess->user = mt_xstrdup(cred->authcid);
	mmp_login_start(sess, sess->user, cred->password);
}

static const struct mt_imap_login_ops login_ops = {
	.reply = mmp_phase_reply, .error = mmp_phase_error,
	.plaintext_ok = mmp_phase_plaintext_ok, .tls_active = mmp_phase_tls_active,
	.tls_available = mmp_phase_tls_available, .sasl_wait = mmp_phase_sasl_wait,
	.starttls = mmp_phase_starttls, .login = login_start,
};

/* The session's front */

void mmp_imap_init(struct mmp_session *sess)
{
	struct mmp_imap_front *f = mt_xcalloc(1, sizeof(*f));
	mt_imap_parser_init(&f->parser, &mt_imap_login_limits);
	f->login = (struct mt_imap_login){
		.ops = &login_ops, .context = sess, .authzid_allowed = false,
		.capabilities = CAPABILITIES_PRE, .id_reply = ID_REPLY,
	};
	sess->imap = f;
}

static void wipe_parser(struct mt_imap_parser *p)
{
	if (p->input.data != NULL)
		explicit_bzero(p->input.data, p->input.cap);
	if (p->strings.data != NULL)
		explicit_bzero(p->strings.data, p->strings.cap);
}

void mmp_imap_free(struct mmp_session *sess)
{
	struct mmp_imap_front *f = sess->imap;
	if (f == NULL)
		return;
	sess->imap = NULL;
	wipe_parser(&f->parser);
	mt_imap_parser_free(&f->parser);
	free(f);
}

void mmp_imap_greet(struct mmp_session *sess)
{
	struct mt_buf line = MT_BUF_INIT;
	mt_buf_append_str(&line, "* OK [CAPABILITY ");
	mt_imap_login_capability_list(&sess->imap->login, &line);
	mt_buf_append_str(&line, "] mailtier IMAP proxy ready.");
	mmp_reply(sess, "%s", mt_buf_cstr(&line));
	mt_buf_free(&line);
}

void mmp_imap_tls_started(struct mmp_session *sess)
{
	/* RFC 9051 6.2.1: a half-read command from before TLS is forgotten. */
	if (sess->imap != NULL)
		mt_imap_parser_reset(&sess->imap->parser);
}

/* The commands */

static void cmd_capability(struct mmp_session *sess, const struct mt_imap_command *cmd)
{
	mt_imap_login_capability(&sess->imap->login, cmd);
}

static void cmd_noop(struct mmp_session *sess, const struct mt_imap_command *cmd)
{
	mt_imap_login_noop(&sess->imap->login, cmd);
}

static void cmd_logout(struct mmp_session *sess, const struct mt_imap_command *cmd)
{
	bool ends = cmd->count == 0;	/* else a BAD, and the session goes on */
	mt_imap_login_logout(&sess->imap->login, cmd);
	if (ends)
		mmp_session_finish_queued(sess, MT_OUTCOME_QUIT, "logout");
}

static void cmd_id(struct mmp_session *sess, const struct mt_imap_command *cmd)
{
	mt_imap_login_id(&sess->imap->login, cmd);
}

static void cmd_starttls(struct mmp_session *sess, const struct mt_imap_command *cmd)
{
	mt_imap_login_starttls(&sess->imap->login, cmd);
}

static void cmd_login(struct mmp_session *sess, const struct mt_imap_command *cmd)
{
	mt_imap_login_login(&sess->imap->login, cmd);
}

static void cmd_authenticate(struct mmp_session *sess, const struct mt_imap_command *cmd)
{
	mt_imap_login_authenticate(&sess->imap->login, cmd);
}

static void dispatch(struct mmp_session *sess, const struct mt_imap_command *cmd)
{
	static const struct mt_command_gate gate = { 0 };	/* one state */
	struct mt_command_call call;
	if (mt_command_check(&mmp_imap_command_table, &sess->commands, &gate, cmd->name,
			     &call) != MT_COMMAND_RUN) {
		/* SELECT and the rest are the store's, after login. */
		if (mmp_session_error(sess))
			mmp_reply(sess, "%s BAD Unknown command, or not valid before login.",
				  cmd->tag);
		return;
	}
	commands[call.index].run(sess, cmd);
}

/* Input */

/* AUTHENTICATE's response line; false when more input is needed. */
static bool read_sasl_line(struct mmp_session *sess, struct evbuffer *in,
			   struct mt_buf *line)
{
	const char *error = NULL;
	size_t before = evbuffer_get_length(in);
	enum mt_line_status st = mt_line_read(&sess->reader, in, line, &error);
	sess->bytes_in += before - evbuffer_get_length(in);
	if (st == MT_LINE_NEED_MORE)
		return false;
	/* Too long, a bare CR or a NUL: the exchange is cancelled. */
	mt_imap_login_sasl_response(&sess->imap->login,
				    st == MT_LINE_OK ? mt_buf_cstr(line) : "*");
	if (line->data != NULL)
		explicit_bzero(line->data, line->cap);
	mt_buf_reset(line);
	return true;
}

/* Feed the parser one contiguous piece of input; false when there is none. */
static bool read_command(struct mmp_session *sess, struct evbuffer *in)
{
	size_t len = evbuffer_get_contiguous_space(in);
	if (len == 0)
		return false;
	struct mt_imap_parser *p = &sess->imap->parser;
	const unsigned char *data = evbuffer_pullup(in, (ssize_t)len);
	size_t used = 0;
	enum mt_imap_parse st = mt_imap_parser_feed(p, data, len, &used);
	evbuffer_drain(in, used);
	sess->bytes_in += used;
	switch (st) {
	case MT_IMAP_PARSE_MORE:
		return true;
	case MT_IMAP_PARSE_LITERAL:
		mmp_reply(sess, "+ Ready for literal data");
		/* The literal's last segment is ACKed at once (conn.h): a
		 * client with Nagle on sends its CRLF only then (#37 item 19). */
		mt_conn_quickack(&sess->conn);
		return true;
	case MT_IMAP_PARSE_DONE:
		dispatch(sess, &p->command);
		break;
	case MT_IMAP_PARSE_ERROR:
		mt_commands_unknown(&sess->commands);
		if (!mmp_session_error(sess))
			break;
		if (p->tag[0] != '\0')
			mmp_reply(sess, "%s BAD %s%s%s%s", p->tag,
				  p->error_code[0] != '\0' ? "[" : "", p->error_code,
				  p->error_code[0] != '\0' ? "] " : "", p->error);
		else
			mmp_reply(sess, "* BAD %s", p->error);
		break;
	case MT_IMAP_PARSE_STREAM:	/* never: mt_imap_login_limits stream nothing */
	case MT_IMAP_PARSE_FATAL:
		mt_slog(MT_LOG_INFO, &sess->log, "unfollowable input: %s", p->error);
		mmp_session_finish(sess, MT_OUTCOME_LIMIT, "protocol_error", "* BYE %s",
				   p->error);
		break;
	}
	/* The front may be gone (a login that answered at once and relays). */
	if (sess->imap != NULL) {
		wipe_parser(&sess->imap->parser);
		mt_imap_parser_reset(&sess->imap->parser);
	}
	return true;
}

void mmp_imap_input(struct mmp_session *sess)
{
	struct evbuffer *in = mt_conn_input(&sess->conn);
	struct mt_buf line = MT_BUF_INIT;

	while ((sess->state == MMP_STATE_AUTHORIZATION || sess->state == MMP_STATE_SASL) &&
	       sess->imap != NULL) {
		bool more = sess->state == MMP_STATE_SASL ?
			read_sasl_line(sess, in, &line) : read_command(sess, in);
		if (!more)
			break;
	}
	mt_buf_free(&line);
}
