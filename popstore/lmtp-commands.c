/* lmtp-commands.c — mailtier-popstore's LMTP command table and handlers:
 * LHLO, MAIL, RCPT (checked against the directory), DATA (streamed into
 * the store as it arrives, lmtp-data.c; at its end delivered with group
 * commit, one reply per recipient once durable), RSET, NOOP, QUIT.
 *
 * Trust boundary: command arguments come from the LMTP client and are
 * parsed by lmtp-parse.c: addresses through lib/address (RFC 5321 4.1.2
 * grammar and limits), then to the directory only through libdirsvc; the
 * LHLO name and XQUEUEID are restricted to safe characters before they
 * reach a Received: line.
 *
 * RFC 2033 4.1 (LHLO; HELO/EHLO are not LMTP), 4.2 (after DATA "one reply
 * for each successful RCPT command", in RCPT order; "If there were no
 * successful RCPT commands ... the DATA command MUST fail with a 503");
 * RFC 5321 4.1.1 (commands), 4.5.3.1.10 (too many recipients: 452);
 * RFC 1870 (SIZE; 552 when the declared size is over the limit);
 * RFC 6152 (8BITMIME: BODY=7BIT|8BITMIME); RFC 3463 (enhanced codes);
 * RFC 2034 (ENHANCEDSTATUSCODES).
 *
 * XQUEUEID=<id> on MAIL FROM (advertised in the LHLO reply) is a private
 * parameter: the MTA's queue id, logged as queue=<id> on this session's
 * lines and written into the Received: line, so one grep follows a
 * message from the MTA into the store. */
#include "lmtp-session.h"
#include "watch.h"
#include "lmtp-headers.h"
#include "lmtp-parse.h"
#include "alloc.h"
#include "dirsvc.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void cmd_lhlo(struct lmtp_session *s, const char *arg);
static void cmd_mail(struct lmtp_session *s, const char *arg);
static void cmd_rcpt(struct lmtp_session *s, const char *arg);
static void cmd_data(struct lmtp_session *s, const char *arg);
static void cmd_rset(struct lmtp_session *s, const char *arg);
static void cmd_noop(struct lmtp_session *s, const char *arg);
static void cmd_quit(struct lmtp_session *s, const char *arg);
static void cmd_helo(struct lmtp_session *s, const char *arg);

/* The handlers, indexed by enum lmtp_verb as lmtp-parse.c's table. */
#define CMD(verb, handler) [LMTP_VERB_##verb] = handler
static void (*const handlers[LMTP_VERB_COUNT])(struct lmtp_session *s, const char *arg) = {
	CMD(LHLO, cmd_lhlo),
	CMD(MAIL, cmd_mail),
	CMD(RCPT, cmd_rcpt),
	CMD(DATA, cmd_data),
	CMD(RSET, cmd_rset),
	CMD(NOOP, cmd_noop),
	CMD(QUIT, cmd_quit),
	CMD(HELO, cmd_helo),
	CMD(EHLO, cmd_helo),
};
#undef CMD

void lmtp_command_run(struct lmtp_session *s, unsigned int verb, const char *arg)
{
	handlers[verb](s, arg);
}

/* A refusal from lmtp-parse.c: a client error (counts towards
 * max_errors), or a rejection of a well-formed command. */
static void reply_parse_error(struct lmtp_session *s, const struct mt_smtp_param_error *e)
{
	if (e->rejected) {
		s->rejected++;
		mt_smtpd_reply(&s->smtpd, e->code, "%s%s", e->text, e->detail);
	} else {
		lmtp_error(s, e->code, "%s%s", e->text, e->detail);
	}
}

static void cmd_lhlo(struct lmtp_session *s, const char *arg)
{
	if (!lmtp_parse_lhlo(arg)) {
		lmtp_error(s, 501, "5.5.4 Syntax: LHLO hostname");
		return;
	}
	lmtp_tx_reset(s);
	free(s->lhlo);
	s->lhlo = mt_xstrdup(arg);
	mt_smtpd_reply_more(&s->smtpd, 250, "%s", s->ps->hostname);
	mt_smtpd_reply_more(&s->smtpd, 250, "PIPELINING");
	mt_smtpd_reply_more(&s->smtpd, 250, "ENHANCEDSTATUSCODES");
	mt_smtpd_reply_more(&s->smtpd, 250, "8BITMIME");
	mt_smtpd_reply_more(&s->smtpd, 250, "SMTPUTF8");
	mt_smtpd_reply_more(&s->smtpd, 250, "XQUEUEID");
	mt_smtpd_reply(&s->smtpd, 250, "SIZE %" PRIu64, s->ps->set->max_message_size);
}

static void cmd_helo(struct lmtp_session *s, const char *arg)
{
	lmtp_error(s, 500, "5.5.1 This is an LMTP server: use LHLO");
}

static void cmd_mail(struct lmtp_session *s, const char *arg)
{
	struct mt_smtp_mail_args mail;
	struct mt_smtp_param_error error;

	if (s->tx.active) {
		lmtp_error(s, 503, "5.5.1 Nested MAIL command");
		return;
	}
	if (!lmtp_parse_mail(arg, s->ps->set->max_message_size, &mail, &error)) {
		reply_parse_error(s, &error);
		return;
	}

	lmtp_tx_reset(s);
	s->tx.active = true;
	s->tx.smtputf8 = mail.smtputf8;
	s->tx.sender = mt_xstrdup(mail.addr.addr);
	s->tx_count++;
	if (mail.queue_id != NULL) {
		snprintf(s->tx.queue_id, sizeof(s->tx.queue_id), "%s", mail.queue_id);
		s->tx.delivery_id = mt_xasprintf("%s %s", s->lhlo, mail.queue_id);
	} else
		snprintf(s->tx.queue_id, sizeof(s->tx.queue_id), "%016" PRIx64 ".%u",
			 s->log.session_id, s->tx_count);
	memcpy(s->log.queue_id, s->tx.queue_id, sizeof(s->log.queue_id));
	mt_slog(MT_LOG_INFO, &s->log, "lmtp from=<%s>", s->tx.sender);
	mt_smtpd_reply(&s->smtpd, 250, "2.1.0 Sender OK");
}

static void rcpt_done(const struct mt_dirsvc_recipient *r, void *context);

static void cmd_rcpt(struct lmtp_session *s, const char *arg)
{
	struct mt_smtp_rcpt_args rcpt;
	struct mt_smtp_param_error error;

	if (!s->tx.active) {
		lmtp_error(s, 503, "5.5.1 Send MAIL first");
		return;
	}
	if (!lmtp_parse_rcpt(arg, s->tx.smtputf8, &rcpt, &error)) {
		reply_parse_error(s, &error);
		return;
	}
	if (s->tx.rcpt_count >= s->ps->set->max_recipients) {
		s->rejected++;
		mt_smtpd_reply(&s->smtpd, 452, "4.5.3 Too many recipients");
		return;
	}
	free(s->rcpt_pending);
	s->rcpt_pending = mt_xstrdup(rcpt.addr.addr);
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_WAIT);
	s->dir_req = mt_dirsvc_lookup_recipient(s->ps->dir, &s->log, rcpt.addr.addr,
						rcpt_done, s);
}

static void rcpt_add(struct lmtp_session *s, const char *mailbox, uint64_t quota)
{
	struct lmtp_tx *tx = &s->tx;
	if (tx->rcpt_count == tx->rcpt_alloc) {
		tx->rcpt_alloc = tx->rcpt_alloc == 0 ? 4 : tx->rcpt_alloc * 2;
		tx->rcpts = mt_xrealloc(tx->rcpts, tx->rcpt_alloc * sizeof(*tx->rcpts));
	}
	struct lmtp_rcpt *r = &tx->rcpts[tx->rcpt_count++];
	r->address = s->rcpt_pending;
	s->rcpt_pending = NULL;
	r->mailbox = mt_xstrdup(mailbox);
	r->quota = quota != 0 ? quota : s->ps->set->default_quota;
	r->slot = 0;
}

/* The proceed half of RCPT: the directory's answer. */
static void rcpt_done(const struct mt_dirsvc_recipient *r, void *context)
{
	struct lmtp_session *s = context;
	const char *rcpt = s->rcpt_pending;
	s->dir_req = NULL;
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);

	switch (r->status) {
	case MT_DIRSVC_FOUND:
		if (r->account == MT_DIRSVC_DISABLED) {
			mt_slog(MT_LOG_INFO, &s->log, "lmtp rcpt=<%s> result=rejected reason=disabled",
				rcpt);
			s->rejected++;
			mt_smtpd_reply(&s->smtpd, 550, "5.2.1 <%s> Mailbox disabled", rcpt);
		} else if (strcmp(r->shard, s->ps->shard) != 0) {
			mt_slog(MT_LOG_INFO, &s->log,
				"lmtp rcpt=<%s> result=tempfail reason=wrong-shard shard=%s",
				rcpt, r->shard);
			s->rejected++;
			/* Temporary, never 550: the sender's directory answer
			 * (or ours) may be older than the other's, during a
			 * mailbox move or with a stale replica, and a 5xx here
			 * bounces mail already accepted with 250. RFC 3463
			 * 3.5, X.4.0 "other or undefined network or routing
			 * status": the mailbox exists and the mail system
			 * works (so not X.1.1 nor X.3.0, which the store uses
			 * for its own failures), but this is the wrong next
			 * hop; X.4.4 means the directory gave no route, and
			 * X.1.6 (moved) is only for permanent failures. The
			 * MTA recognises 4.4.0 with "not on this shard" and
			 * routes the recipient again (mta/delivery.c). */
			mt_smtpd_reply(&s->smtpd, 451, "4.4.0 <%s> Mailbox is not on "
				       "this shard (mailHost %s), try again later",
				       rcpt, r->shard);
		} else {
			mt_smtpd_reply(&s->smtpd, 250, "2.1.5 <%s> Recipient OK", rcpt);
			rcpt_add(s, r->address, r->quota);
		}
		break;
	case MT_DIRSVC_NOT_FOUND:
		mt_slog(MT_LOG_INFO, &s->log, "lmtp rcpt=<%s> result=rejected reason=unknown",
			rcpt);
		s->rejected++;
		mt_smtpd_reply(&s->smtpd, 550, "5.1.1 <%s> User unknown", rcpt);
		break;
	case MT_DIRSVC_INVALID:
		s->rejected++;
		mt_smtpd_reply(&s->smtpd, 553, "5.1.3 <%s> Address not accepted", rcpt);
		break;
	case MT_DIRSVC_TEMPFAIL:
	default:
		mt_slog(MT_LOG_WARNING, &s->log,
			"lmtp rcpt=<%s> result=tempfail reason=\"%s\"", rcpt,
			r->reason != NULL ? r->reason : "directory");
		s->rejected++;
		mt_smtpd_reply(&s->smtpd, 451, "4.4.3 <%s> Directory temporarily unavailable, try again later",
			   rcpt);
		break;
	}
	free(s->rcpt_pending);
	s->rcpt_pending = NULL;
	mt_smtpd_resume(&s->smtpd);
}

static void cmd_data(struct lmtp_session *s, const char *arg)
{
	if (arg[0] != '\0') {
		lmtp_error(s, 501, "5.5.4 DATA takes no arguments");
		return;
	}
	if (!s->tx.active) {
		lmtp_error(s, 503, "5.5.1 Send MAIL first");
		return;
	}
	if (s->tx.rcpt_count == 0) {
		lmtp_error(s, 503, "5.5.1 No valid recipients");
		return;
	}
	mt_smtpd_reply(&s->smtpd, 354, "Start mail input; end with <CRLF>.<CRLF>");
	lmtp_data_begin(s);
}

/* One reply per accepted recipient, all alike (a verdict on the message). */
static void data_reply_all(struct lmtp_session *s, int code, const char *text)
{
	for (unsigned int i = 0; i < s->tx.rcpt_count; i++)
		mt_smtpd_reply(&s->smtpd, code, "%s <%s>", text, s->tx.rcpts[i].address);
	s->rejected += s->tx.rcpt_count;
}

static void deliver_done(struct mt_store_req *req, void *context);

void lmtp_data_end(struct lmtp_session *s, enum mt_dot_result verdict, const char *error)
{
	struct lmtp_tx *tx = &s->tx;
	uint64_t size = mt_smtpd_content_size(&s->smtpd);

	if (verdict != MT_DOT_RESULT_OK) {
		mt_slog(MT_LOG_INFO, &s->log, "lmtp data rejected size=%" PRIu64 " reason=\"%s\"",
			size, error);
		if (verdict == MT_DOT_RESULT_TOO_BIG)
			data_reply_all(s, 552, "5.3.4 Message too big for system");
		else if (verdict == MT_DOT_RESULT_NUL)
			data_reply_all(s, 550, "5.6.0 Message contains a NUL octet");
		else
			data_reply_all(s, 550, "5.6.0 Message contains a bare CR or LF "
				       "(lines must end in CRLF)");
		lmtp_tx_reset(s);
		return;
	}

	/* One store recipient per distinct mailbox: an address and its alias
	 * in one transaction get one copy and the same reply. */
	struct mt_store_rcpt *srcpts = mt_xcalloc(tx->rcpt_count, sizeof(*srcpts));
	struct mt_buf *prefixes = mt_xcalloc(tx->rcpt_count, sizeof(*prefixes));
	unsigned int slots = 0;
	time_t now = time(NULL);
	for (unsigned int i = 0; i < tx->rcpt_count; i++) {
		struct lmtp_rcpt *r = &tx->rcpts[i];
		unsigned int k;
		for (k = 0; k < slots; k++)
			if (strcmp(srcpts[k].mailbox, r->mailbox) == 0)
				break;
		r->slot = k;
		if (k < slots)
			continue;
		const struct lmtp_trace trace = {
			.sender = tx->sender, .helo = s->lhlo, .peer_ip = s->peer_ip,
			.hostname = s->ps->hostname, .id = tx->queue_id,
			.rcpt = r->address, .when = now, .utf8 = tx->smtputf8,
		};
		lmtp_trace_headers(&prefixes[k], &trace);
		srcpts[k].mailbox = r->mailbox;
		srcpts[k].quota = r->quota;
		srcpts[k].prefix = prefixes[k].data;
		srcpts[k].prefix_len = prefixes[k].len;
		srcpts[k].delivery_id = tx->delivery_id;
		slots++;
	}
	mt_slog(MT_LOG_DEBUG, &s->log, "lmtp data size=%" PRIu64 " mailboxes=%u",
		size, slots);
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_WAIT);
	/* What was written of the body, its last chunk and the recipients'
	 * copies, durable before deliver_done. */
	s->store_req = mt_store_body_deliver(&tx->store_body, srcpts, slots,
					     deliver_done, s);
	for (unsigned int k = 0; k < slots; k++)
		mt_buf_free(&prefixes[k]);
	free(prefixes);
	free(srcpts);
}

/* The proceed half of DATA: the store made the copies durable (or not). */
static void deliver_done(struct mt_store_req *req, void *context)
{
	struct lmtp_session *s = context;
	struct lmtp_tx *tx = &s->tx;
	const struct mt_popstore_settings *set = s->ps->set;
	unsigned int count;
	const struct mt_store_rcpt *results = mt_store_req_rcpts(req, &count);
	const char *error;
	enum mt_store_status req_status = mt_store_req_status(req, &error);
	bool fatal = false;

	s->store_req = NULL;
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
	for (unsigned int i = 0; i < tx->rcpt_count; i++) {
		const struct lmtp_rcpt *r = &tx->rcpts[i];
		enum mt_store_status st = r->slot < count ? results[r->slot].status :
			MT_STORE_TEMPFAIL;
		uint32_t uid = r->slot < count ? results[r->slot].uid : 0;
		if (st == MT_STORE_OK && r->slot < count && results[r->slot].duplicate) {
			/* The client's redelivery of what this mailbox has. */
			s->delivered++;
			mt_slog(MT_LOG_INFO, &s->log,
				"lmtp duplicate to=<%s> mailbox=%s uid=%" PRIu32
				" (already delivered with this queue id: not stored again)",
				r->address, r->mailbox, uid);
			mt_smtpd_reply(&s->smtpd, 250, "2.0.0 <%s> Already delivered uid=%" PRIu32,
				   r->address, uid);
			continue;
		}
		if (st == MT_STORE_OK) {
			s->delivered++;
			s->ps->messages_delivered++;
			mt_slog(MT_LOG_INFO, &s->log,
				"lmtp delivered to=<%s> mailbox=%s uid=%" PRIu32 " size=%" PRIu64,
				r->address, r->mailbox, uid,
				mt_smtpd_content_size(&s->smtpd));
			mt_smtpd_reply(&s->smtpd, 250, "2.0.0 <%s> Delivered uid=%" PRIu32, r->address, uid);
			/* IMAP sessions with the INBOX selected (IDLE, NOOP). */
			popstore_watch_changed(s->ps, r->mailbox, NULL, NULL);
			continue;
		}
		s->rejected++;
		mt_slog(st == MT_STORE_OVER_QUOTA ? MT_LOG_INFO : MT_LOG_WARNING, &s->log,
			"lmtp not-delivered to=<%s> mailbox=%s status=%s error=\"%s\"",
			r->address, r->mailbox, mt_store_status_name(st),
			req_status != MT_STORE_OK ? error : "");
		switch (st) {
		case MT_STORE_LIMIT:		/* max_mailbox_messages: full too */
		case MT_STORE_OVER_QUOTA:
			if (set->quota_temporary)
				mt_smtpd_reply(&s->smtpd, 452, "4.2.2 <%s> Mailbox full", r->address);
			else
				mt_smtpd_reply(&s->smtpd, 552, "5.2.2 <%s> Mailbox full", r->address);
			break;
		case MT_STORE_NO_SPACE:
			mt_smtpd_reply(&s->smtpd, 452, "4.3.1 <%s> Insufficient system storage",
				   r->address);
			break;
		case MT_STORE_FATAL:
			fatal = true;
			/* fall through */
		default:
			mt_smtpd_reply(&s->smtpd, 451, "4.3.0 <%s> Temporary store failure, try again later",
				   r->address);
			break;
		}
	}
	lmtp_tx_reset(s);
	if (fatal) {
		popstore_store_fatal(s->ps, error);
		return;
	}
	mt_smtpd_resume(&s->smtpd);
}

static void cmd_rset(struct lmtp_session *s, const char *arg)
{
	lmtp_tx_reset(s);
	mt_smtpd_reply(&s->smtpd, 250, "2.0.0 OK");
}

static void cmd_noop(struct lmtp_session *s, const char *arg)
{
	mt_smtpd_reply(&s->smtpd, 250, "2.0.0 OK");
}

static void cmd_quit(struct lmtp_session *s, const char *arg)
{
	mt_smtpd_reply(&s->smtpd, 221, "2.0.0 %s Bye", s->ps->hostname);
	lmtp_close_after(s, MT_OUTCOME_QUIT, "quit");
}
