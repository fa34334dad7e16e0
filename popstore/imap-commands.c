/* imap-commands.c — mailtier-popstore's IMAP command table, its dispatch
 * by state, and the commands of any state that are not the login phase's:
 * CAPABILITY after login, ENABLE, NAMESPACE, CHECK; the login commands
 * are lib-mail's (imap-login.h, through imap-auth.c), the mailbox ones in
 * imap-mailbox.c.
 *
 * Trust boundary: the client's parsed commands; each handler checks its
 * arguments' number and types. A command not valid in the state is a
 * tagged BAD that counts towards max_errors, and the session goes on.
 *
 * RFC 9051 6 (commands by state: any, not authenticated, authenticated,
 * selected), 6.1.1 (CAPABILITY), 6.3.1 (ENABLE; RFC 5161), 6.3.10
 * (NAMESPACE; RFC 2342), Appendix E (CHECK from IMAP4rev1 clients: a
 * NOOP here, every change being durable when answered). */
#include "imap-session.h"
#include "alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* After login: what this store implements so far (grows with it). */
#define CAPABILITIES_AUTH "IMAP4rev2 IMAP4rev1 SASL-IR LITERAL+ ID ENABLE " \
	"NAMESPACE UNSELECT SPECIAL-USE LIST-EXTENDED LIST-STATUS UTF8=ACCEPT " \
	"UIDPLUS MOVE IDLE ESEARCH CONDSTORE QRESYNC QUOTA QUOTA=RES-STORAGE " \
	"SORT SORT=DISPLAY ESORT THREAD=ORDEREDSUBJECT THREAD=REFERENCES STATUS=SIZE"

const char *imap_capabilities_auth(const struct imap_session *s)
{
	/* RFC 7889 APPENDLIMIT: the largest message APPEND takes. */
	static char caps[sizeof(CAPABILITIES_AUTH) + 64];
	snprintf(caps, sizeof(caps), "%s APPENDLIMIT=%llu", CAPABILITIES_AUTH,
		 (unsigned long long)s->ps->set->max_message_size);
	return caps;
}

/* The states a command may run in (lib-mail/command.h's tier states). */
#define NOT_AUTH MT_CMD_STATE(0)
#define AUTH MT_CMD_STATE(1)
#define SELECTED MT_CMD_STATE(2)
#define ANY (NOT_AUTH | AUTH | SELECTED)

typedef void imap_handler_t(struct imap_session *s, const struct mt_imap_command *cmd);

struct imap_command {
	struct mt_command_def def;
	imap_handler_t *handler;
};

static imap_handler_t cmd_capability, cmd_noop, cmd_logout, cmd_id, cmd_starttls,
	cmd_login, cmd_authenticate, cmd_enable, cmd_namespace, cmd_fetch, cmd_store,
	cmd_copy, cmd_move, cmd_expunge, cmd_check, cmd_search, cmd_sort,
	cmd_thread;

static const struct imap_command commands[] = {
	{ { "CAPABILITY", ANY }, cmd_capability },
	{ { "NOOP", ANY }, cmd_noop },
	{ { "LOGOUT", ANY }, cmd_logout },
	{ { "ID", ANY }, cmd_id },
	{ { "STARTTLS", NOT_AUTH }, cmd_starttls },
	{ { "LOGIN", NOT_AUTH | MT_CMD_SECRET }, cmd_login },
	{ { "AUTHENTICATE", NOT_AUTH | MT_CMD_SECRET }, cmd_authenticate },
	{ { "ENABLE", AUTH }, cmd_enable },
	{ { "NAMESPACE", AUTH | SELECTED }, cmd_namespace },
	{ { "SELECT", AUTH | SELECTED }, imap_cmd_select },
	{ { "EXAMINE", AUTH | SELECTED }, imap_cmd_examine },
	{ { "CREATE", AUTH | SELECTED }, imap_cmd_create },
	{ { "DELETE", AUTH | SELECTED }, imap_cmd_delete },
	{ { "RENAME", AUTH | SELECTED }, imap_cmd_rename },
	{ { "SUBSCRIBE", AUTH | SELECTED }, imap_cmd_subscribe },
	{ { "UNSUBSCRIBE", AUTH | SELECTED }, imap_cmd_unsubscribe },
	{ { "LIST", AUTH | SELECTED }, imap_cmd_list },
	{ { "LSUB", AUTH | SELECTED }, imap_cmd_lsub },
	{ { "STATUS", AUTH | SELECTED }, imap_cmd_status },
	{ { "CHECK", SELECTED }, cmd_check },
	{ { "IDLE", AUTH | SELECTED }, imap_cmd_idle },
	{ { "CLOSE", SELECTED }, imap_cmd_close },
	{ { "UNSELECT", SELECTED }, imap_cmd_unselect },
	{ { "APPEND", AUTH | SELECTED }, imap_cmd_append },
	{ { "FETCH", SELECTED }, cmd_fetch },
	{ { "STORE", SELECTED }, cmd_store },
	{ { "COPY", SELECTED }, cmd_copy },
	{ { "MOVE", SELECTED }, cmd_move },
	{ { "EXPUNGE", SELECTED }, cmd_expunge },
	{ { "UID", SELECTED }, imap_cmd_uid },
	{ { "SEARCH", SELECTED }, cmd_search },
	{ { "SORT", SELECTED }, cmd_sort },
	{ { "THREAD", SELECTED }, cmd_thread },
	{ { "GETQUOTAROOT", AUTH | SELECTED }, imap_cmd_getquotaroot },
	{ { "GETQUOTA", AUTH | SELECTED }, imap_cmd_getquota },
	{ { "SETQUOTA", AUTH | SELECTED }, imap_cmd_setquota },
};

const struct mt_command_table imap_command_table = MT_COMMAND_TABLE(commands);

static unsigned int state_flag(const struct imap_session *s)
{
	switch (s->state) {
	case IMAP_STATE_NOT_AUTH:
		return NOT_AUTH;
	case IMAP_STATE_AUTH:
		return AUTH;
	case IMAP_STATE_SELECTED:
		return SELECTED;
	default:
		return 0;
	}
}

void imap_command_dispatch(struct imap_session *s, const struct mt_imap_command *cmd)
{
	const struct mt_command_gate gate = { .state = state_flag(s) };
	struct mt_command_call call;
	switch (mt_command_check(&imap_command_table, &s->commands, &gate, cmd->name,
				 &call)) {
	case MT_COMMAND_RUN:
		commands[call.index].handler(s, cmd);
		return;
	case MT_COMMAND_BAD_STATE:
		imap_error(s, cmd->tag, "BAD Command not valid in this state.");
		return;
	default:
		imap_error(s, cmd->tag, "BAD Unknown command.");
		return;
	}
}

static void cmd_capability(struct imap_session *s, const struct mt_imap_command *cmd)
{
	if (s->state == IMAP_STATE_NOT_AUTH) {
		mt_imap_login_capability(&s->login_phase, cmd);
		return;
	}
	if (cmd->count != 0) {
		imap_error(s, cmd->tag, "BAD CAPABILITY takes no arguments.");
		return;
	}
	imap_line(s, "* CAPABILITY %s", imap_capabilities_auth(s));
	imap_tagged(s, cmd->tag, "OK CAPABILITY completed.");
}

static void cmd_noop(struct imap_session *s, const struct mt_imap_command *cmd)
{
	if (s->state == IMAP_STATE_SELECTED)
		imap_cmd_poll(s, cmd, "NOOP");
	else
		mt_imap_login_noop(&s->login_phase, cmd);
}

static void cmd_check(struct imap_session *s, const struct mt_imap_command *cmd)
{
	imap_cmd_poll(s, cmd, "CHECK");
}

static void cmd_logout(struct imap_session *s, const struct mt_imap_command *cmd)
{
	mt_imap_login_logout(&s->login_phase, cmd);
	if (cmd->count == 0)
		imap_close_after(s, MT_OUTCOME_QUIT, "logout");
}

static void cmd_id(struct imap_session *s, const struct mt_imap_command *cmd)
{
	mt_imap_login_id(&s->login_phase, cmd);
}

static void cmd_starttls(struct imap_session *s, const struct mt_imap_command *cmd)
{
	mt_imap_login_starttls(&s->login_phase, cmd);
}

static void cmd_login(struct imap_session *s, const struct mt_imap_command *cmd)
{
	mt_imap_login_login(&s->login_phase, cmd);
}

static void cmd_authenticate(struct imap_session *s, const struct mt_imap_command *cmd)
{
	mt_imap_login_authenticate(&s->login_phase, cmd);
}

/* RFC 5161: the extensions a client turns on; those this store knows are
 * answered in "* ENABLED", the others ignored. */
static void cmd_enable(struct imap_session *s, const struct mt_imap_command *cmd)
{
	if (cmd->count == 0) {
		imap_error(s, cmd->tag, "BAD ENABLE takes capability names.");
		return;
	}
	struct mt_buf enabled = MT_BUF_INIT;
	for (size_t i = 0; i < cmd->count; i++) {
		const struct mt_imap_arg *a = &cmd->args[i];
		if (a->type != MT_IMAP_ARG_ATOM) {
			mt_buf_free(&enabled);
			imap_error(s, cmd->tag, "BAD ENABLE takes capability names.");
			return;
		}
		bool *flag = NULL;
		if (strcasecmp(a->str, "IMAP4rev2") == 0)
			flag = &s->rev2;
		else if (strcasecmp(a->str, "UTF8=ACCEPT") == 0)
			flag = &s->utf8;
		else if (strcasecmp(a->str, "CONDSTORE") == 0)
			flag = &s->condstore;
		else if (strcasecmp(a->str, "QRESYNC") == 0)
			flag = &s->qresync;
		if (flag == NULL || *flag)
			continue;	/* unknown, or enabled already: not repeated */
		*flag = true;
		mt_buf_append_str(&enabled, " ");
		mt_buf_append_str(&enabled, flag == &s->rev2 ? "IMAP4rev2" :
				  flag == &s->utf8 ? "UTF8=ACCEPT" :
				  flag == &s->qresync ? "QRESYNC" : "CONDSTORE");
	}
	/* RFC 9051 6.3.1: IMAP4rev2 brings UTF-8 mailbox names; RFC 7162
	 * 3.2.3: QRESYNC implies CONDSTORE. */
	if (s->rev2)
		s->utf8 = true;
	if (s->qresync)
		s->condstore = true;
	imap_line(s, "* ENABLED%s", mt_buf_cstr(&enabled));
	mt_buf_free(&enabled);
	imap_tagged(s, cmd->tag, "OK ENABLE completed.");
}

static void cmd_fetch(struct imap_session *s, const struct mt_imap_command *cmd)
{
	imap_cmd_fetch(s, cmd, false);
}

static void cmd_store(struct imap_session *s, const struct mt_imap_command *cmd)
{
	imap_cmd_store(s, cmd, false);
}

static void cmd_copy(struct imap_session *s, const struct mt_imap_command *cmd)
{
	imap_cmd_copy(s, cmd, false, false);
}

static void cmd_move(struct imap_session *s, const struct mt_imap_command *cmd)
{
	imap_cmd_copy(s, cmd, false, true);
}

static void cmd_search(struct imap_session *s, const struct mt_imap_command *cmd)
{
	imap_cmd_search(s, cmd, false);
}

static void cmd_sort(struct imap_session *s, const struct mt_imap_command *cmd)
{
	imap_cmd_sort(s, cmd, false);
}

static void cmd_thread(struct imap_session *s, const struct mt_imap_command *cmd)
{
	imap_cmd_thread(s, cmd, false);
}

static void cmd_expunge(struct imap_session *s, const struct mt_imap_command *cmd)
{
	imap_cmd_expunge(s, cmd, false);
}

/* One personal namespace, no prefix, '/' as the delimiter. */
static void cmd_namespace(struct imap_session *s, const struct mt_imap_command *cmd)
{
	if (cmd->count != 0) {
		imap_error(s, cmd->tag, "BAD NAMESPACE takes no arguments.");
		return;
	}
	imap_line(s, "* NAMESPACE ((\"\" \"/\")) NIL NIL");
	imap_tagged(s, cmd->tag, "OK NAMESPACE completed.");
}
