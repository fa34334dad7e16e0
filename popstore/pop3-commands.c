/* pop3-commands.c — mailtier-popstore's POP3 command table and the
 * mailbox commands: CAPA, STLS, STAT, LIST, UIDL, TOP, RETR, DELE, NOOP,
 * RSET, QUIT (the login commands are in pop3-auth.c, the streamed
 * multi-line replies in pop3-fetch.c).
 *
 * Trust boundary: arguments are the client's, parsed by pop3-parse.c.
 * Message numbers must be plain decimal within the snapshot and not
 * deleted; anything else is an -ERR that counts towards max_errors, and
 * the session goes on.
 *
 * CAPA and STLS answer as the login phase shared with the MMP does
 * (lib-mail/pop3-login.h).
 *
 * RFC 1939 5 (STAT, LIST, RETR, DELE, NOOP, RSET), 6 (QUIT and the UPDATE
 * state: "the POP3 server removes all messages marked as deleted from the
 * maildrop and replies as to the status of this operation"; "If a session
 * terminates for some reason other than a client-issued QUIT command, the
 * POP3 session does not enter the UPDATE state"), 7 (TOP, UIDL);
 * RFC 2449 5 and 6 (CAPA and its tags), RFC 2595 4 (STLS). */
#include "pop3-session.h"
#include "pop3-parse.h"
#include "watch.h"
#include "alloc.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

static void cmd_capa(struct pop3_session *s, const char *arg);
static void cmd_stls(struct pop3_session *s, const char *arg);
static void cmd_stat(struct pop3_session *s, const char *arg);
static void cmd_list(struct pop3_session *s, const char *arg);
static void cmd_uidl(struct pop3_session *s, const char *arg);
static void cmd_top(struct pop3_session *s, const char *arg);
static void cmd_retr(struct pop3_session *s, const char *arg);
static void cmd_dele(struct pop3_session *s, const char *arg);
static void cmd_noop(struct pop3_session *s, const char *arg);
static void cmd_rset(struct pop3_session *s, const char *arg);
static void cmd_quit(struct pop3_session *s, const char *arg);

/* The handlers, indexed by enum pop3_verb as pop3-parse.c's table. */
#define CMD(verb, handler) [POP3_VERB_##verb] = handler
static void (*const handlers[POP3_VERB_COUNT])(struct pop3_session *s, const char *arg) = {
	CMD(CAPA, cmd_capa),
	CMD(USER, pop3_cmd_user),
	CMD(PASS, pop3_cmd_pass),
	CMD(AUTH, pop3_cmd_auth),
	CMD(STLS, cmd_stls),
	CMD(STAT, cmd_stat),
	CMD(LIST, cmd_list),
	CMD(UIDL, cmd_uidl),
	CMD(TOP, cmd_top),
	CMD(RETR, cmd_retr),
	CMD(DELE, cmd_dele),
	CMD(NOOP, cmd_noop),
	CMD(RSET, cmd_rset),
	CMD(QUIT, cmd_quit),
};
#undef CMD

void pop3_command_dispatch(struct pop3_session *s, char *line)
{
	const struct mt_command_gate gate = {
		.state = s->state == POP3_STATE_TRANSACTION ? POP3_CMD_TRANSACTION :
			POP3_CMD_AUTHORIZATION,
	};
	struct mt_command_call call;
	switch (mt_command_check(&pop3_command_table, &s->commands, &gate, line, &call)) {
	case MT_COMMAND_RUN:
		handlers[call.index](s, call.arg);
		return;
	case MT_COMMAND_BAD_STATE:
		pop3_error(s, "Command not valid in this state");
		return;
	default:	/* unknown (the store's table has no TLS or junk gates) */
		pop3_error(s, "Unknown command");
		return;
	}
}

void pop3_maildrop_reset(struct pop3_maildrop *drop)
{
	if (drop->mbox != NULL)
		mt_store_mailbox_close(&drop->mbox);
	free(drop->name);
	free(drop->deleted);
	memset(drop, 0, sizeof(*drop));
}

/* RFC 1939 3: a message number "may NOT refer to a message marked as
 * deleted". True (and -ERR sent) if index does. */
static bool msg_deleted(struct pop3_session *s, unsigned int index)
{
	if (!s->drop.deleted[index])
		return false;
	pop3_error(s, "Message %u is deleted", index + 1);
	return true;
}

/* "msg" naming a message that exists and is not deleted: its index. */
static bool parse_msg(struct pop3_session *s, const char *arg, size_t len,
		      unsigned int *index_r)
{
	if (!pop3_parse_msg(arg, len, s->drop.count, index_r)) {
		pop3_error(s, "No such message");
		return false;
	}
	return !msg_deleted(s, *index_r);
}

static void cmd_capa(struct pop3_session *s, const char *arg)
{
	(void)arg;
	mt_pop3_login_capa(&s->login_phase, s->state == POP3_STATE_TRANSACTION);
}

static void cmd_stls(struct pop3_session *s, const char *arg)
{
	mt_pop3_login_stls(&s->login_phase, arg);
}

static void cmd_stat(struct pop3_session *s, const char *arg)
{
	const struct pop3_maildrop *d = &s->drop;
	uint64_t bytes = mt_store_mailbox_bytes(d->mbox) - d->deleted_bytes;
	pop3_ok(s, "%u %" PRIu64, d->count - d->deleted_count, bytes);
}

static void cmd_list_uidl(struct pop3_session *s, const char *arg, bool uidl)
{
	unsigned int index;
	if (arg[0] == '\0') {
		pop3_ok(s, uidl ? "Unique-ID listing follows" : "%u messages",
			s->drop.count - s->drop.deleted_count);
		pop3_fetch_list(s, uidl);
		return;
	}
	if (!parse_msg(s, arg, strlen(arg), &index))
		return;
	const struct mt_store_msg *m = mt_store_mailbox_msg(s->drop.mbox, index);
	if (uidl)
		pop3_ok(s, "%u %s", index + 1, m->uidl);
	else
		pop3_ok(s, "%u %" PRIu64, index + 1, m->size);
}

static void cmd_list(struct pop3_session *s, const char *arg)
{
	cmd_list_uidl(s, arg, false);
}

static void cmd_uidl(struct pop3_session *s, const char *arg)
{
	cmd_list_uidl(s, arg, true);
}

static void cmd_retr(struct pop3_session *s, const char *arg)
{
	unsigned int index;
	if (!parse_msg(s, arg, strlen(arg), &index))
		return;
	const struct mt_store_msg *m = mt_store_mailbox_msg(s->drop.mbox, index);
	pop3_ok(s, "%" PRIu64 " octets", m->size);
	s->drop.retrieved++;
	s->drop.retrieved_bytes += m->size;
	pop3_fetch_message(s, index, false, 0);
}

static void cmd_top(struct pop3_session *s, const char *arg)
{
	unsigned int index;
	uint64_t lines;

	switch (pop3_parse_top(arg, s->drop.count, &index, &lines)) {
	case POP3_ARG_SYNTAX:
		pop3_error(s, "Syntax: TOP msg n");
		return;
	case POP3_ARG_NO_SUCH:
		pop3_error(s, "No such message");
		return;
	case POP3_ARG_OK:
		break;
	}
	if (msg_deleted(s, index))
		return;
	pop3_ok(s, "Top of message follows");
	pop3_fetch_message(s, index, true, lines);
}

static void cmd_dele(struct pop3_session *s, const char *arg)
{
	unsigned int index;
	if (!parse_msg(s, arg, strlen(arg), &index))
		return;
	struct pop3_maildrop *d = &s->drop;
	d->deleted[index] = true;
	d->deleted_count++;
	pop3_prefetch_forget(s, index);
	d->deleted_bytes += mt_store_mailbox_msg(d->mbox, index)->size;
	pop3_ok(s, "Message %u deleted", index + 1);
}

static void cmd_noop(struct pop3_session *s, const char *arg)
{
	pop3_ok(s, "%s", "");
}

static void cmd_rset(struct pop3_session *s, const char *arg)
{
	struct pop3_maildrop *d = &s->drop;
	memset(d->deleted, 0, (d->count == 0 ? 1 : d->count) * sizeof(bool));
	d->deleted_count = 0;
	d->deleted_bytes = 0;
	pop3_ok(s, "%u messages", d->count);
}

/* The session is over for the mailbox: free it for the next login now,
 * before the +OK just queued reaches the client, so a client that logs in
 * again the moment it has read +OK never meets [IN-USE] from its own
 * finished session. */
static void release_mailbox(struct pop3_session *s)
{
	if (s->drop.mbox != NULL)
		mt_store_mailbox_close(&s->drop.mbox);
}

static void expunge_done(struct mt_store_req *req, void *context)
{
	struct pop3_session *s = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);

	s->store_req = NULL;
	if (status == MT_STORE_OK) {
		mt_slog(MT_LOG_INFO, &s->log, "pop3 logout user=%s deleted=%u",
			s->login, s->drop.deleted_count);
		pop3_ok(s, "Logging out, %u messages deleted", s->drop.deleted_count);
		/* IMAP sessions with the INBOX selected see the EXPUNGEs. */
		if (s->drop.deleted_count > 0)
			popstore_watch_changed(s->ps, s->login, NULL, NULL);
		release_mailbox(s);
		pop3_close_after(s, MT_OUTCOME_QUIT, "quit");
		return;
	}
	mt_slog(MT_LOG_WARNING, &s->log, "pop3 logout user=%s expunge failed: %s: %s",
		s->login, mt_store_status_name(status), error);
	pop3_err(s, "[SYS/TEMP] Messages marked as deleted were not removed, try again later");
	pop3_close_after(s, MT_OUTCOME_ERROR, "quit-failed");
	if (status == MT_STORE_FATAL)
		popstore_store_fatal(s->ps, error);
}

static void cmd_quit(struct pop3_session *s, const char *arg)
{
	struct pop3_maildrop *d = &s->drop;
	if (s->state != POP3_STATE_TRANSACTION || d->deleted_count == 0) {
		if (s->state == POP3_STATE_TRANSACTION)
			mt_slog(MT_LOG_INFO, &s->log, "pop3 logout user=%s deleted=0", s->login);
		pop3_ok(s, "Logging out");
		release_mailbox(s);
		pop3_close_after(s, MT_OUTCOME_QUIT, "quit");
		return;
	}
	/* RFC 1939 6: UPDATE. The +OK waits until the removal is durable. */
	uint32_t *uids = mt_xmalloc(d->deleted_count * sizeof(*uids));
	unsigned int n = 0;
	for (unsigned int i = 0; i < d->count; i++)
		if (d->deleted[i])
			uids[n++] = mt_store_mailbox_msg(d->mbox, i)->uid;
	pop3_enter_state(s, POP3_STATE_UPDATE);
	s->store_req = mt_store_expunge(s->ps->port, d->mbox, uids, n, expunge_done, s);
	free(uids);
}
