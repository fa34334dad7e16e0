/* imap-idle.c — what other sessions did to the selected mailbox reaches
 * this one: the session watches its mailbox (watch.h); a change made
 * elsewhere marks the view stale, and at NOOP, CHECK and during IDLE the
 * store is read again and the differences are sent as untagged EXPUNGE
 * (highest first), FETCH (FLAGS ... UID ...), FLAGS / PERMANENTFLAGS when
 * new keywords appeared, and EXISTS. IDLE (RFC 9051 6.3.13, RFC 2177)
 * pushes them as they happen, until the client's DONE. The same update
 * (imap_view_update) ends APPEND, COPY and MOVE into the selected
 * mailbox and a COPY or MOVE on a stale view, and precedes an EXPUNGE on
 * a stale view (imap-message.c).
 *
 * Trust boundary: IDLE's end is the client's line, read raw (at most
 * IMAP_SASL_LINE_MAX octets): "DONE" in any case ends it, anything else is
 * a BAD that ends it too. An IDLE lasts at most imap_idle_timeout (at
 * least 30 minutes, RFC 9051 5.4), the connection core's idle timer.
 *
 * RFC 9051 5.2 (mailbox size and message status updates), 7.5.1 (EXPUNGE
 * only where sequence numbers cannot be misread: never outside a command
 * but IDLE, nor during FETCH, STORE or SEARCH; here at NOOP, CHECK, IDLE
 * and the commands above), 7.4.1 (EXISTS), 7.5.2 (unsolicited FETCH),
 * 7.3.5 (FLAGS). */
#include "imap-session.h"
#include "alloc.h"
#include "store/store.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void watch_changed(struct popstore_watch *w)
{
	struct imap_session *s = (struct imap_session *)((char *)w -
		offsetof(struct imap_session, watch));
	s->stale = true;
	if (s->state == IMAP_STATE_IDLE && s->refresh_req == NULL)
		imap_refresh(s);
}

void imap_watch_start(struct imap_session *s)
{
	s->watch.changed = watch_changed;
	popstore_watch_add(s->ps, &s->watch, s->user, s->selected.name);
	s->stale = false;
}

void imap_watch_stop(struct imap_session *s)
{
	popstore_watch_remove(&s->watch);
	if (s->refresh_req != NULL) {
		mt_store_req_cancel(s->refresh_req);
		s->refresh_req = NULL;
	}
	s->stale = false;
}

static bool not_in(uint32_t uid, const void *context)
{
	return mt_store_mailbox_find(context, uid) < 0;
}

void imap_view_update(struct imap_session *s, struct mt_store_mailbox *fresh)
{
	struct imap_selected *sel = &s->selected;
	const struct mt_store_mailbox *old = sel->mbox;
	const uint32_t old_last = sel->count > 0 ? imap_view_msg(s, sel->count - 1)->uid : 0;
	/* Expunged elsewhere. */
	imap_view_expunge(s, not_in, fresh);
	const unsigned int total = mt_store_mailbox_count(fresh);
	unsigned int *view = mt_xmalloc((total + 1) * sizeof(*view));
	unsigned int n = 0;
	for (unsigned int i = 0; i < sel->count; i++) {
		const struct mt_store_msg *was = imap_view_msg(s, i);
		int index = mt_store_mailbox_find(fresh, was->uid);
		const struct mt_store_msg *now = mt_store_mailbox_msg(fresh, (unsigned int)index);
		view[n++] = (unsigned int)index;
		if (now->flags == was->flags && now->keywords == was->keywords)
			continue;
		struct mt_buf line = MT_BUF_INIT;
		mt_buf_appendf(&line, "* %u FETCH (", n);
		imap_flags_write(&line, fresh, now);
		mt_buf_appendf(&line, " UID %u", now->uid);
		if (s->condstore)
			mt_buf_appendf(&line, " MODSEQ (%" PRIu64 ")", now->modseq);
		mt_buf_append_str(&line, ")");
		imap_line(s, "%s", mt_buf_cstr(&line));
		mt_buf_free(&line);
	}
	const unsigned int kept = n;
	for (unsigned int i = 0; i < total; i++)
		if (mt_store_mailbox_msg(fresh, i)->uid > old_last)
			view[n++] = i;
	if (mt_store_mailbox_keyword(fresh, 0) != NULL) {
		unsigned int k = 0;
		while (mt_store_mailbox_keyword(fresh, k) != NULL)
			k++;
		if (mt_store_mailbox_keyword(old, k - 1) == NULL)
			imap_flags_announce(s, fresh);	/* new keywords */
	}
	if (n > kept)
		imap_line(s, "* %u EXISTS", n);
	mt_store_mailbox_close(&sel->mbox);
	free(sel->view);
	sel->mbox = fresh;
	sel->view = view;
	sel->count = n;
}

static void refresh_done(struct mt_store_req *req, void *context)
{
	struct imap_session *s = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->refresh_req = NULL;
	if (status == MT_STORE_OK && s->selected.mbox != NULL)
		imap_view_update(s, mt_store_req_mailbox(req));
	else if (status == MT_STORE_FATAL) {
		imap_store_fatal(s, s->tag, error);
		return;
	} else if (status != MT_STORE_OK)
		mt_slog(MT_LOG_WARNING, &s->log, "imap user=%s refreshing %s: %s: %s",
			s->user, s->selected.name != NULL ? s->selected.name : "-",
			mt_store_status_name(status), error);
	if (s->noop_pending) {
		s->noop_pending = false;
		imap_tagged(s, s->tag, "OK %s", s->refresh_reply);
		imap_resume(s);
		return;
	}
	/* IDLE: a change came meanwhile, read again; else read the client. */
	if (s->stale && s->state == IMAP_STATE_IDLE)
		imap_refresh(s);
	else
		imap_resume(s);
}

void imap_refresh(struct imap_session *s)
{
	s->stale = false;
	s->refresh_req = mt_store_folder_open(s->ps->port, s->user, s->selected.name,
					      refresh_done, s);
}

/* NOOP and CHECK in the selected state: the updates, then OK. */
void imap_cmd_poll(struct imap_session *s, const struct mt_imap_command *cmd,
		   const char *verb)
{
	if (cmd->count != 0) {
		imap_error(s, cmd->tag, "BAD %s takes no arguments.", verb);
		return;
	}
	if (s->selected.mbox == NULL || !s->stale) {
		imap_tagged(s, cmd->tag, "OK %s completed.", verb);
		return;
	}
	snprintf(s->tag, sizeof(s->tag), "%s", cmd->tag);
	snprintf(s->refresh_reply, sizeof(s->refresh_reply), "%s completed.", verb);
	s->noop_pending = true;
	imap_wait(s);
	imap_refresh(s);
}

void imap_cmd_idle(struct imap_session *s, const struct mt_imap_command *cmd)
{
	if (cmd->count != 0) {
		imap_error(s, cmd->tag, "BAD IDLE takes no arguments.");
		return;
	}
	snprintf(s->idle_tag, sizeof(s->idle_tag), "%s", cmd->tag);
	s->idle_from = s->state;
	mt_line_reader_init(&s->reader, IMAP_SASL_LINE_MAX, MT_LINE_ACCEPT_LF);
	imap_enter_state(s, IMAP_STATE_IDLE);
	imap_line(s, "+ idling");
	if (s->selected.mbox != NULL && s->stale)
		imap_refresh(s);
}

void imap_idle_line(struct imap_session *s, const char *line)
{
	imap_enter_state(s, s->idle_from);
	if (strcasecmp(line, "DONE") == 0)
		imap_tagged(s, s->idle_tag, "OK IDLE terminated.");
	else
		imap_error(s, s->idle_tag, "BAD Expected DONE.");
}
