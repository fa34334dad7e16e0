/* smtp-milter-content.c — the message content and the end of message for
 * the session's mail filters (see smtp-milter.h): the header section found
 * in the content as it arrives (held in memory, at most MILTER_HEAD_MAX
 * octets), handed over as DATA, one HEADER per field and EOH; the body in
 * BODY chunks of 64 KiB as each piece arrives, then written to the
 * queue's spool like any body (so a 50 MB message is never held whole);
 * at the end, each filter's end of message in order, its modifications
 * applied as they come: header fields edited in the list, recipients and
 * the sender changed in the transaction, a new body streamed into the
 * spool in its place (the old pieces deleted first), quarantine as the
 * queue's held state. Nothing reaches the queue's envelope before every
 * filter has accepted.
 *
 * Trust boundary: the client's content (bounded by the session: size,
 * line length) and the filters' modifications (checked for shape by
 * lib-mail/milter-proto.c; addresses and parameters parsed here as the
 * client's RCPT and MAIL are: one that does not parse is left out, with
 * a warning naming the filter).
 * RFCs: 5322 2.2 (header fields); 5321 4.1.1.2-3 (the envelope);
 * Sendmail libmilter (what each modification means). */
#include "smtp-milter-private.h"
#include "alloc.h"
#include "mta-metrics.h"
#include "mta.h"
#include "smtp-parse.h"
#include "smtp-session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The client's header section, at most (RFC 5322 sets none; Postfix's
 * header_size_limit is 100 KiB): beyond it the message is refused. */
#define MILTER_HEAD_MAX QUEUE_PIECE_SIZE

void milter_message_reset(struct smtp_milters *ms)
{
	mt_buf_free(&ms->head);
	milter_headers_free(&ms->headers);
	mt_buf_free(&ms->feed);
	mt_buf_free(&ms->tail);
	mt_buf_free(&ms->newbody);
	ms->head_found = ms->head_too_big = ms->head_sent = false;
	ms->head_sep = 0;
	ms->feeding = ms->feed_final = ms->ending = false;
	ms->end_done = NULL;
	ms->replaced_by = -1;
	ms->body_nul = false;
	ms->held = NULL;
	ms->discard = false;
	ms->verdict.status = MT_MILTER_CONTINUE;
}

/* What a walk sends */

size_t milter_walk_count(struct smtp_milters *ms, struct smtp_milter *m)
{
	(void)m;
	switch (ms->kind) {
	case WALK_HEAD:
		return ms->headers.count + 2;	/* DATA, the fields, EOH */
	case WALK_BODY:
		return (ms->feed.len + MT_MILTER_CHUNK_SIZE - 1) / MT_MILTER_CHUNK_SIZE;
	default:
		return 1;
	}
}

void milter_walk_packet(struct smtp_milters *ms, enum mt_milter_cmd *cmd_r)
{
	size_t item = ms->item;
	if (ms->kind == WALK_BODY) {
		size_t off = item * MT_MILTER_CHUNK_SIZE;
		size_t len = ms->feed.len - off;
		if (len > MT_MILTER_CHUNK_SIZE)
			len = MT_MILTER_CHUNK_SIZE;
		mt_milter_put_body(&ms->packet, ms->feed.data + off, len);
		*cmd_r = MT_MILTER_CMD_BODY;
		return;
	}
	if (item == 0 || item == ms->headers.count + 1) {
		*cmd_r = item == 0 ? MT_MILTER_CMD_DATA : MT_MILTER_CMD_EOH;
		mt_milter_put_command(&ms->packet, *cmd_r);
		return;
	}
	const struct milter_field *f = &ms->headers.fields[item - 1];
	struct mt_buf name = MT_BUF_INIT, value = MT_BUF_INIT;
	milter_field_name(f, &name);
	milter_field_value(f, mt_milter_client_leadspc(ms->m[ms->cur].client), &value);
	mt_milter_put_header(&ms->packet, mt_buf_cstr(&name), mt_buf_cstr(&value));
	mt_buf_free(&name);
	mt_buf_free(&value);
	*cmd_r = MT_MILTER_CMD_HEADER;
}

/* Handing the content over */

static void end_go(struct smtp_milters *ms);

/* The body octets of this piece have been walked (or there were none to
 * walk): to the spool, or kept for the tail at the end. */
static void feed_done(struct smtp_milters *ms)
{
	struct smtp_session *s = ms->s;
	ms->feeding = false;
	if (ms->head_too_big || milter_message_refused(ms))
		mt_buf_reset(&ms->feed);	/* refused at the end: not kept */
	else if (ms->feed_final)
		mt_buf_append(&ms->tail, ms->feed.data, ms->feed.len);
	else if (ms->feed.len > 0)
		queue_spool_write(smtp_data_spool(s), &ms->feed);
	mt_buf_reset(&ms->feed);
	if (ms->ending) {
		end_go(ms);
		return;
	}
	if (s->smtpd.content.paused)
		mt_smtpd_resume(&s->smtpd);
}

/* DATA, the fields and EOH are out: now the body octets that came with
 * the header section, if any. */
static void head_walked(struct smtp_milters *ms)
{
	ms->head_sent = true;
	if (ms->feed.len > 0 && !milter_message_refused(ms))
		milter_walk(ms, WALK_BODY, feed_done);
	else
		feed_done(ms);
}

/* The client's header section is whole: our lines and its fields into
 * the list (after the MTA's own checks of it: hops, Date:/Message-ID:). */
static void head_complete(struct smtp_milters *ms, size_t head_len, size_t sep)
{
	struct smtp_session *s = ms->s;
	ms->head_found = true;
	ms->head_sep = sep;
	smtp_data_head_checks(s, ms->head.data, head_len);
	milter_headers_parse(&ms->headers, s->tx.prefix.data, s->tx.prefix.len);
	milter_headers_parse(&ms->headers, ms->head.data, head_len);
	/* What follows the section is body. */
	mt_buf_append(&ms->feed, ms->head.data + head_len + sep,
		      ms->head.len - head_len - sep);
	mt_buf_free(&ms->head);
}

/* Take content octets (in, emptied): the header section first, then
 * body. Starts the walks; ms->feeding until they are done. */
static void consume(struct smtp_milters *ms, struct mt_buf *in, bool final)
{
	ms->feed_final = final;
	if (ms->head_found || ms->head_too_big) {
		mt_buf_append(&ms->feed, in->data, in->len);
	} else {
		mt_buf_append(&ms->head, in->data, in->len);
		size_t head_len, sep;
		if (milter_head_scan(ms->head.data, ms->head.len, final, &head_len,
				     &sep) == MILTER_HEAD_END &&
		    head_len <= MILTER_HEAD_MAX)
			head_complete(ms, head_len, sep);
		else if (ms->head.len > MILTER_HEAD_MAX) {
			ms->head_too_big = true;
			mt_buf_free(&ms->head);
		}
	}
	mt_buf_reset(in);
	ms->feeding = true;
	if (ms->head_too_big || milter_message_refused(ms) || !ms->head_found) {
		feed_done(ms);
		return;
	}
	if (!ms->head_sent) {
		milter_walk(ms, WALK_HEAD, head_walked);
		return;
	}
	if (ms->feed.len > 0) {
		milter_walk(ms, WALK_BODY, feed_done);
		return;
	}
	feed_done(ms);
}

bool smtp_milter_busy(const struct smtp_session *s)
{
	const struct smtp_milters *ms = s->milter;
	return ms != NULL && (ms->feeding || ms->walking);
}

bool smtp_milter_piece(struct smtp_session *s)
{
	struct smtp_milters *ms = s->milter;
	if (ms->feeding || (s->tx.spool != NULL && queue_spool_busy(s->tx.spool)))
		return false;
	consume(ms, &s->smtpd.content.body, false);
	return true;
}

/* The end of message */

static void eom_then(struct smtp_milters *ms);

void smtp_milter_end(struct smtp_session *s, smtp_milter_done_t *done)
{
	struct smtp_milters *ms = s->milter;
	ms->end_done = done;
	ms->ending = true;
	if (ms->feeding)
		return;			/* feed_done() goes on */
	consume(ms, &s->smtpd.content.body, true);
}

static void end_go(struct smtp_milters *ms)
{
	struct smtp_session *s = ms->s;
	if (!ms->feed_final) {
		/* A piece was walked: the rest is in the content. */
		consume(ms, &s->smtpd.content.body, true);
		return;
	}
	ms->ending = false;
	if (ms->head_too_big) {
		milter_set_verdict(ms, MT_MILTER_REJECT,
				   "552 5.3.4 Message header section too big", NULL);
		eom_then(ms);
		return;
	}
	if (milter_message_refused(ms)) {
		eom_then(ms);
		return;
	}
	milter_walk(ms, WALK_EOM, eom_then);
}

/* Every filter has answered its end of message (or one refused). */
static void eom_then(struct smtp_milters *ms)
{
	struct smtp_session *s = ms->s;
	struct smtp_milter_verdict v = ms->verdict;
	if (v.status == MT_MILTER_CONTINUE && ms->discard)
		v.status = MT_MILTER_DISCARD;
	if (v.status == MT_MILTER_CONTINUE && s->tx.rcpt_count == 0) {
		mt_slog(MT_LOG_INFO, &s->log, "milter: no recipient left: discarded");
		v.status = MT_MILTER_DISCARD;
	}
	if (v.status != MT_MILTER_CONTINUE) {
		mt_slog(MT_LOG_INFO, &s->log, "milter=%s %s at end of message%s%s",
			ms->verdict_by != NULL ? ms->verdict_by : "-",
			v.status == MT_MILTER_REJECT ? "reject" :
			v.status == MT_MILTER_TEMPFAIL ? "tempfail" : "discard",
			v.text != NULL ? ": " : "", v.text != NULL ? v.text : "");
		for (unsigned int i = 0; i < ms->n; i++)
			mt_milter_client_abort(ms->m[i].client);
	}
	if (ms->replaced_by >= 0) {
		/* The new body's last octets are the queue's tail. */
		mt_buf_reset(&ms->tail);
		mt_buf_append(&ms->tail, ms->newbody.data, ms->newbody.len);
		mt_buf_free(&ms->newbody);
	}
	smtp_milter_done_t *done = ms->end_done;
	ms->end_done = NULL;
	done(s, &v);
}

char *smtp_milter_head(struct smtp_session *s, size_t *len_r)
{
	struct smtp_milters *ms = s->milter;
	struct mt_buf out = MT_BUF_INIT;
	milter_headers_render(&ms->headers, &out);
	if (ms->head_sep > 0 || ms->replaced_by >= 0)
		mt_buf_append(&out, "\r\n", 2);
	*len_r = out.len;
	return mt_buf_steal(&out);
}

struct mt_buf *smtp_milter_tail(struct smtp_session *s)
{
	return &s->milter->tail;
}

/* Modifications */

static struct smtp_milter *current(struct smtp_milters *ms)
{
	return &ms->m[ms->cur];
}

/* "addr", "<addr>" → the address without its brackets. */
static void bare_address(const char *in, struct mt_buf *out)
{
	size_t len = strlen(in);
	if (len >= 2 && in[0] == '<' && in[len - 1] == '>') {
		in++;
		len -= 2;
	}
	mt_buf_append(out, in, len);
}

static bool add_rcpt(struct smtp_milters *ms, const char *address, const char *params)
{
	struct smtp_session *s = ms->s;
	struct mt_buf line = MT_BUF_INIT;
	struct mt_smtp_rcpt_args rcpt;
	struct mt_smtp_param_error error;
	mt_buf_append_str(&line, "TO:<");
	bare_address(address, &line);
	mt_buf_append_str(&line, ">");
	if (params != NULL && params[0] != '\0') {
		mt_buf_append_char(&line, ' ');
		mt_buf_append_str(&line, params);
	}
	bool ok = mt_smtp_parse_rcpt(mt_buf_cstr(&line), SMTP_OFFERED,
				     SMTP_RCPT_ADDR_FLAGS, s->tx.smtputf8, &rcpt, &error);
	if (ok) {
		struct smtp_pending_rcpt pending = {
			mt_xstrdup(rcpt.addr.addr),
			rcpt.orcpt != NULL ? mt_xstrdup(rcpt.orcpt) : NULL,
			rcpt.notify, NULL,
		};
		mt_slog(MT_LOG_INFO, &s->log, "milter=%s addrcpt to=<%s>",
			current(ms)->filter->name, pending.address);
		smtp_tx_add_rcpt(s, &pending);
	} else {
		mt_slog(MT_LOG_WARNING, &s->log, "milter=%s addrcpt <%s>: %s%s",
			current(ms)->filter->name, address, error.text, error.detail);
	}
	mt_buf_free(&line);
	return ok;
}

static void del_rcpt(struct smtp_milters *ms, const char *address)
{
	struct smtp_session *s = ms->s;
	struct mt_buf bare = MT_BUF_INIT;
	bare_address(address, &bare);
	unsigned int removed = smtp_tx_del_rcpt(s, mt_buf_cstr(&bare));
	mt_slog(MT_LOG_INFO, &s->log, "milter=%s delrcpt to=<%s> removed=%u",
		current(ms)->filter->name, mt_buf_cstr(&bare), removed);
	mt_buf_free(&bare);
}

static bool change_from(struct smtp_milters *ms, const char *address, const char *params)
{
	struct smtp_session *s = ms->s;
	struct mt_buf line = MT_BUF_INIT;
	struct mt_smtp_mail_args mail;
	struct mt_smtp_param_error error;
	mt_buf_append_str(&line, "FROM:<");
	bare_address(address, &line);
	mt_buf_append_str(&line, ">");
	if (params != NULL && params[0] != '\0') {
		mt_buf_append_char(&line, ' ');
		mt_buf_append_str(&line, params);
	}
	bool ok = mt_smtp_parse_mail(mt_buf_cstr(&line), SMTP_OFFERED,
				     SMTP_MAIL_ADDR_FLAGS, UINT64_MAX, &mail, &error);
	if (ok) {
		struct smtp_tx *tx = &s->tx;
		mt_slog(MT_LOG_INFO, &s->log, "milter=%s chgfrom from=<%s> to=<%s>",
			current(ms)->filter->name, tx->sender, mail.addr.addr);
		free(tx->sender);
		tx->sender = mt_xstrdup(mail.addr.addr);
		if (params != NULL && params[0] != '\0') {
			tx->ret = (enum queue_ret)mail.ret;
			free(tx->envid);
			tx->envid = mail.envid != NULL ? mt_xstrdup(mail.envid) : NULL;
			tx->body_8bit = tx->body_8bit || mail.body_8bit;
			tx->smtputf8 = tx->smtputf8 || mail.smtputf8;
		}
	} else {
		mt_slog(MT_LOG_WARNING, &s->log, "milter=%s chgfrom <%s>: %s%s",
			current(ms)->filter->name, address, error.text, error.detail);
	}
	mt_buf_free(&line);
	return ok;
}

static void header_change(struct smtp_milters *ms, const struct mt_milter_reply *mod)
{
	struct smtp_milter *m = current(ms);
	bool leadspc = mt_milter_client_leadspc(m->client);
	const char *what = "addheader";
	switch (mod->code) {
	case MT_MILTER_R_ADDHEADER:
		milter_headers_add(&ms->headers, mod->name, mod->value, leadspc);
		break;
	case MT_MILTER_R_INSHEADER:
		milter_headers_insert(&ms->headers, mod->index, mod->name, mod->value, leadspc);
		what = "insheader";
		break;
	default: {
		static const char *const changes[] = { "changed", "deleted", "added", "nothing" };
		what = changes[milter_headers_change(&ms->headers, mod->index, mod->name,
						     mod->value, leadspc)];
		break;
	}
	}
	mt_slog(MT_LOG_DEBUG, &ms->s->log, "milter=%s %s %s index=%u", m->filter->name,
		what, mod->name, (unsigned int)mod->index);
}

/* REPLBODY: the body written again from its first octet. False while the
 * spool cannot take it yet (smtp_milter_spool_ready resumes). */
static bool replace_body(struct smtp_milters *ms, const struct mt_milter_reply *mod)
{
	struct smtp_session *s = ms->s;
	struct queue_spool *spool = s->tx.spool;
	int index = (int)ms->cur;
	if (spool != NULL && queue_spool_busy(spool)) {
		ms->held = current(ms);
		return false;
	}
	if (ms->replaced_by != index) {
		/* This filter's body replaces the client's (and an earlier
		 * filter's). */
		mt_slog(MT_LOG_INFO, &s->log, "milter=%s replaces the body",
			current(ms)->filter->name);
		ms->replaced_by = index;
		ms->body_nul = false;
		mt_buf_reset(&ms->tail);
		mt_buf_reset(&ms->newbody);
		if (spool != NULL) {
			queue_spool_rewind(spool);
			if (queue_spool_busy(spool)) {
				ms->held = current(ms);
				return false;
			}
		}
	}
	if (ms->newbody.len >= QUEUE_PIECE_SIZE)
		queue_spool_write(smtp_data_spool(s), &ms->newbody);
	mt_buf_append(&ms->newbody, mod->body, mod->body_len);
	if (memchr(mod->body, '\0', mod->body_len) != NULL)
		ms->body_nul = true;
	return true;
}

bool smtp_milter_body_nul(const struct smtp_session *s)
{
	return s->milter != NULL && s->milter->replaced_by >= 0 && s->milter->body_nul;
}

void smtp_milter_spool_ready(struct smtp_session *s)
{
	struct smtp_milters *ms = s->milter;
	struct smtp_milter *m = ms->held;
	if (m == NULL)
		return;
	ms->held = NULL;
	mt_milter_client_resume(m->client);
}

bool milter_mod(const struct mt_milter_reply *mod, void *context)
{
	struct smtp_milters *ms = context;
	struct smtp_session *s = ms->s;
	const char *name = current(ms)->filter->name;
	switch (mod->code) {
	case MT_MILTER_R_ADDHEADER:
	case MT_MILTER_R_INSHEADER:
	case MT_MILTER_R_CHGHEADER:
		header_change(ms, mod);
		return true;
	case MT_MILTER_R_ADDRCPT:
		add_rcpt(ms, mod->name, NULL);
		return true;
	case MT_MILTER_R_ADDRCPT_PAR:
		add_rcpt(ms, mod->name, mod->value);
		return true;
	case MT_MILTER_R_DELRCPT:
		del_rcpt(ms, mod->name);
		return true;
	case MT_MILTER_R_CHGFROM:
		change_from(ms, mod->name, mod->value);
		return true;
	case MT_MILTER_R_QUARANTINE:
		mt_slog(MT_LOG_WARNING, &s->log, "milter=%s quarantine: %s (the message "
			"is held: mailtierctl queue release %s)", name, mod->name,
			s->tx.queue_id);
		s->tx.quarantined = true;
		mta_metrics_milter(s->mta, name, "quarantine");
		return true;
	case MT_MILTER_R_REPLBODY:
		return replace_body(ms, mod);
	default:
		return true;
	}
}
