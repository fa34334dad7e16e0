/* smtp-data.c — message content: DATA (dot-terminated) and BDAT
 * (CHUNKING), our Received: line, the hop count, and handing the message to
 * the durable queue; the 250 goes out only once the queue says the message
 * is on stable storage.
 *
 * Trust boundary: message content is the client's, any bytes at all. DATA
 * content is decoded by lib/dotcodec alone, which ends it at CRLF.CRLF and
 * nowhere else (SMTP smuggling: LF.LF, CR.CR, LF.CRLF ... are content).
 * Bare LF and bare CR follow bare_newline_policy: "reject" (default) keeps
 * reading to the real end and refuses the message with 550 5.6.0, like
 * Postfix's smtpd_forbid_bare_newline; "normalize" turns each into CRLF. A
 * NUL octet (RFC 5322 3.5) is refused the same way under either policy, so
 * "CRLF NUL . CRLF" never reaches a next hop that drops NULs; so is a NUL
 * a mail filter writes into a new body (REPLBODY), before the 250. BDAT chunks
 * are counted octets (no end marker to smuggle), checked the same way.
 * Lines over 998 octets (RFC 5322 2.1.1) and messages over
 * max_message_size are refused after the content is read (552 5.3.4).
 * An unauthenticated client that sends content before DATA's 354 (RFC 2920
 * 3.1) is refused and disconnected (forbid_unauth_pipelining). Mail from
 * submission clients (and, if configured, mynetworks) gets a missing Date:
 * and Message-ID: (add_missing_headers; RFC 6409 8.2-8.3).
 * RFCs: 5321 4.1.1.4 (DATA), 4.4 (Received:, trace), 4.5.2
 * (transparency), 6.3 (loop detection by counting Received:), 2.3.8 (bare
 * CR/LF); 2920 3.1 (DATA ends a pipelining group); 3030 (BDAT); 3848
 * (with ESMTPS/ESMTPA/ESMTPSA; with received_auth_user also Postfix's
 * "(Authenticated sender: ...)" comment); 6531 3.7.3 (with UTF8SMTP*);
 * 5322 3.6.7 (trace fields).
 * Memory: content goes to the queue in pieces while it arrives
 * (queue_spool); input stops while a piece is being written, so a
 * session holds about two pieces (QUEUE_PIECE_SIZE) plus its socket's
 * input watermark, whatever max_message_size allows. */
#include "smtp-session.h"
#include "clock.h"
#include "alloc.h"
#include "mta.h"
#include "mta-metrics.h"
#include "smtp-content.h"
#include "smtp-milter.h"
#include "smtp-parse.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

/* The protocol name for Received: "with" (RFC 3848, RFC 6531 3.7.3). */
static const char *with_protocol(const struct smtp_session *s)
{
	static const char *const names[2][2][2] = {
		/* [utf8][tls][auth] */
		{ { "ESMTP", "ESMTPA" }, { "ESMTPS", "ESMTPSA" } },
		{ { "UTF8SMTP", "UTF8SMTPA" }, { "UTF8SMTPS", "UTF8SMTPSA" } },
	};
	if (!s->esmtp)
		return "SMTP";
	return names[s->tx.smtputf8][s->smtpd.tls][s->authenticated];
}

/* Now in RFC 5322 3.3 form: "Tue, 01 Dec 2026 10:52:37 +0100". */
static void format_date(char *buf, size_t size)
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(buf, size, "%a, %d %b %Y %H:%M:%S %z", &tm);
}

/* Our trace line, first in the stored message (RFC 5321 4.4). */
static void add_received(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	struct mt_buf *out = &tx->prefix;
	char date[64];
	format_date(date, sizeof(date));
	bool v6 = strchr(s->peer_ip, ':') != NULL;

	mt_buf_appendf(out, "Received: from %s ([%s%s])\r\n",
		       s->helo, v6 ? "IPv6:" : "", s->peer_ip);
	if (s->authenticated && s->mta->set->received_auth_user)
		mt_buf_appendf(out, "\t(Authenticated sender: %s)\r\n",
			       s->auth_user);
	mt_buf_appendf(out, "\tby %s (%s) with %s id %s\r\n",
		       s->mta->hostname, MTA_NAME, with_protocol(s), tx->queue_id);
	mt_buf_appendf(out, "\t(queue=%s%s%s)", tx->queue_id,
		       s->smtpd.tls ? "; " : "", s->smtpd.tls ? s->smtpd.tls_info : "");
	if (tx->rcpt_count == 1)
		mt_buf_appendf(out, "\r\n\tfor <%s>", tx->rcpts[0].address);
	mt_buf_appendf(out, "; %s\r\n", date);
}

/* Content in pieces */

/* The start of the client's header section, head[0..len): look at it
 * once. One piece holds any header section of sensible size; one longer
 * than that is judged by its first QUEUE_PIECE_SIZE octets, which hold
 * more Received: fields than max_hops allows. */
static void check_head(struct smtp_session *s, const char *head, size_t len)
{
	struct smtp_tx *tx = &s->tx;
	if (tx->head_checked)
		return;
	tx->head_checked = true;
	tx->head_hops = mt_smtp_count_received(head, len);
	tx->head_fields = mt_smtp_header_fields(head, len);
}

static void spool_ready(void *context)
{
	struct smtp_session *s = context;
	if (s->milter != NULL)
		smtp_milter_spool_ready(s);
	if (s->smtpd.content.paused)
		mt_smtpd_resume(&s->smtpd);
}

struct queue_spool *smtp_data_spool(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	if (tx->spool == NULL)
		tx->spool = queue_spool_new(s->mta->queue, tx->queue_id,
					    spool_ready, s);
	return tx->spool;
}

/* The engine's content hook: a piece of content goes to the queue (or
 * first to the mail filters). False while the previous piece is still
 * being written: the engine reads nothing more until it is (the socket's
 * input stops at its watermark), so a session holds about two pieces
 * whatever the message's size. */
bool smtp_data_piece(struct mt_smtpd *d)
{
	struct smtp_session *s = SMTP_SESSION(d);
	if (s->milter != NULL)
		return smtp_milter_piece(s);
	struct queue_spool *spool = smtp_data_spool(s);
	if (queue_spool_busy(spool))
		return false;
	check_head(s, d->content.body.data, d->content.body.len);
	queue_spool_write(spool, &d->content.body);
	return true;
}

static void queued_done(bool ok, const char *error, void *context)
{
	struct smtp_session *s = context;
	s->queue_op = NULL;
	if (ok) {
		s->messages++;
		mta_metrics_accepted(s->mta);
		mt_slog(MT_LOG_INFO, &s->log, "queued from=<%s> size=%zu nrcpt=%u "
			"durable_ms=%.1f", s->tx.sender, s->tx.queued_size,
			s->tx.rcpt_count, (double)(mt_clock_us() - s->tx.queued_at) / 1000.0);
		mt_smtpd_reply(&s->smtpd, 250, "2.0.0 Ok: queued as %s", s->tx.queue_id);
	} else {
		mt_slog(MT_LOG_ERROR, &s->log, "queueing failed: %s", error);
		mta_metrics_refused(s->mta, MTA_REFUSED_QUEUE_ERROR);
		mt_smtpd_reply(&s->smtpd, 451, "4.3.0 Error: queue file write error");
	}
	smtp_tx_reset(s);
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
	mt_smtpd_resume(&s->smtpd);
}

/* Is this session's mail completed with Date:/Message-ID: if missing? */
static bool completes_headers(const struct smtp_session *s)
{
	unsigned int who = s->mta->set->add_missing_headers;
	if (who == MT_ADD_HEADERS_NEVER)
		return false;
	if (s->service != SMTP_SERVICE_SMTP)
		return true;
	return who == MT_ADD_HEADERS_SUBMISSION_MYNETWORKS && s->trusted;
}

/* RFC 6409 8.2-8.3: an MSA may add a missing Date: (RFC 5322 3.6
 * requires one) and Message-ID:. They go right after our Received: line,
 * before the client's header section. */
static void add_missing_headers(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	if (!completes_headers(s))
		return;
	unsigned int have = tx->head_fields;
	if ((have & MT_SMTP_HEADER_DATE) == 0) {
		char date[64];
		format_date(date, sizeof(date));
		mt_buf_appendf(&tx->prefix, "Date: %s\r\n", date);
	}
	if ((have & MT_SMTP_HEADER_MESSAGE_ID) == 0)
		mt_buf_appendf(&tx->prefix, "Message-ID: <%s@%s>\r\n", tx->queue_id,
			       s->mta->hostname);
	if ((have & (MT_SMTP_HEADER_DATE | MT_SMTP_HEADER_MESSAGE_ID)) !=
	    (MT_SMTP_HEADER_DATE | MT_SMTP_HEADER_MESSAGE_ID))
		mt_slog(MT_LOG_DEBUG, &s->log, "added missing%s%s",
			(have & MT_SMTP_HEADER_DATE) == 0 ? " Date:" : "",
			(have & MT_SMTP_HEADER_MESSAGE_ID) == 0 ? " Message-ID:" : "");
}

void smtp_data_head_checks(struct smtp_session *s, const char *head, size_t len)
{
	check_head(s, head, len);
	add_missing_headers(s);
}

/* Queue the message durably: head (taken: our lines and the header
 * section, or our lines only) as piece 0, the spool's pieces, then tail
 * (what is not written as pieces yet goes with the envelope). */
static void submit(struct smtp_session *s, char *head, size_t head_len,
		   struct mt_buf *tail)
{
	struct smtp_tx *tx = &s->tx;
	if (tx->spool != NULL && queue_spool_failed(tx->spool)) {
		free(head);
		mta_metrics_refused(s->mta, MTA_REFUSED_QUEUE_ERROR);
		mt_smtpd_reply(&s->smtpd, 451, "4.3.0 Error: queue file write error");
		smtp_tx_reset(s);
		mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
		return;
	}
	struct queue_msg *msg = queue_msg_new();
	unsigned int hops = tx->head_hops;

	memcpy(msg->id, tx->queue_id, sizeof(msg->id));
	msg->arrival = mt_wall_ms();
	msg->flags = (tx->body_8bit ? QUEUE_MSG_8BIT : 0) |
		(tx->smtputf8 ? QUEUE_MSG_SMTPUTF8 : 0) |
		(tx->quarantined ? QUEUE_MSG_HELD : 0);
	if (hops > s->mta->set->max_hops) {
		mt_slog(MT_LOG_WARNING, &s->log, "mail loop: %u Received: lines "
			"(max_hops=%u); the message will be bounced", hops,
			(unsigned int)s->mta->set->max_hops);
		msg->flags |= QUEUE_MSG_LOOP;
	}
	msg->sender = mt_xstrdup(tx->sender);
	msg->envid = tx->envid != NULL ? mt_xstrdup(tx->envid) : NULL;
	msg->ret = tx->ret;
	msg->client = mt_xasprintf("helo=%s addr=%s", s->helo, s->peer_ip);
	for (unsigned int i = 0; i < tx->rcpt_count; i++) {
		struct queue_rcpt *r = queue_msg_add_rcpt(msg, tx->rcpts[i].address);
		r->orcpt = tx->rcpts[i].orcpt != NULL ?
			mt_xstrdup(tx->rcpts[i].orcpt) : NULL;
		r->notify = tx->rcpts[i].notify;
	}
	uint64_t size = head_len + tail->len +
		(tx->spool != NULL ? queue_spool_size(tx->spool) : 0);
	msg->size = size;
	msg->body = queue_body_new(head, head_len);
	tx->queued_size = size;
	tx->queued_at = mt_clock_us();
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_WAIT);
	s->queue_op = queue_submit(s->mta->queue, msg, &tx->spool, tail,
				   smtp_server_receiving(s->mta->server) > 0,
				   queued_done, s);
}

static void refuse_verdict(struct smtp_session *s, enum mt_dot_result r);

/* Every filter has answered the end of the message. */
static void milter_end_done(struct smtp_session *s, const struct smtp_milter_verdict *v)
{
	if (v->status == MT_MILTER_CONTINUE && smtp_milter_body_nul(s)) {
		/* The client's octets were checked as they came; a filter's
		 * are checked here, before the 250. */
		mt_slog(MT_LOG_WARNING, &s->log, "NUL in the body a mail filter wrote");
		refuse_verdict(s, MT_DOT_RESULT_NUL);
		return;
	}
	switch (v->status) {
	case MT_MILTER_REJECT:
	case MT_MILTER_TEMPFAIL:
		mta_metrics_refused(s->mta, MTA_REFUSED_MILTER);
		smtp_milter_reply(s, v);
		break;
	case MT_MILTER_DISCARD:
		/* A filter's wish: accepted, and dropped (as Sendmail and
		 * Postfix do; the log says so). */
		mt_slog(MT_LOG_INFO, &s->log, "discarded from=<%s> nrcpt=%u (milter)",
			s->tx.sender, s->tx.rcpt_count);
		mt_smtpd_reply(&s->smtpd, 250, "2.0.0 Ok: queued as %s", s->tx.queue_id);
		break;
	default: {
		size_t head_len;
		char *head = smtp_milter_head(s, &head_len);
		submit(s, head, head_len, smtp_milter_tail(s));
		if (s->smtpd.state == MT_SMTPD_COMMAND)
			mt_smtpd_resume(&s->smtpd);	/* refused: read on */
		return;
	}
	}
	smtp_tx_reset(s);
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
	mt_smtpd_resume(&s->smtpd);
}

/* The content is complete and acceptable: through the filters, if the
 * session has any, then to the queue. */
static void finish_message(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	if (s->milter != NULL) {
		mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_WAIT);
		smtp_milter_end(s, milter_end_done);
		return;
	}
	struct mt_buf *body = &s->smtpd.content.body;
	check_head(s, body->data, body->len);
	add_missing_headers(s);
	size_t prefix_len = tx->prefix.len;
	submit(s, mt_buf_steal(&tx->prefix), prefix_len, body);
}

/* Refuse the content just read; the transaction is over either way. */
static void refuse_content(struct smtp_session *s, int code, const char *text)
{
	mt_smtpd_reply(&s->smtpd, code, "%s", text);
	smtp_tx_reset(s);
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
}

/* Refuse it for what the decoder found (smtp-content.c has the texts). */
static void refuse_verdict(struct smtp_session *s, enum mt_dot_result r)
{
	int code;
	const char *text;
	static const enum mta_refusal why[] = {
		[MT_DOT_RESULT_BARE_NEWLINE] = MTA_REFUSED_BARE_NEWLINE,
		[MT_DOT_RESULT_TOO_BIG] = MTA_REFUSED_TOO_BIG,
		[MT_DOT_RESULT_LINE_TOO_LONG] = MTA_REFUSED_LINE_TOO_LONG,
		[MT_DOT_RESULT_NUL] = MTA_REFUSED_NUL,
	};
	if (r != MT_DOT_RESULT_OK && (size_t)r < sizeof(why) / sizeof(why[0]))
		mta_metrics_refused(s->mta, why[r]);
	mt_smtp_content_refusal(r, &code, &text);
	refuse_content(s, code, text);
}

/* DATA */

/* RFC 2920 3.1: DATA must be the last command of a pipelined group, so
 * whatever is already buffered behind it when the 354 is due was sent
 * without waiting for it: content a careless or hostile client pushes at
 * us blind (spamware; smuggling probes). Refused, like Postfix's
 * smtpd_forbid_unauth_pipelining, unless the session is authenticated. */
static bool improper_pipelining(struct smtp_session *s)
{
	if (!s->mta->set->forbid_unauth_pipelining || s->authenticated)
		return false;
	size_t pending = evbuffer_get_length(mt_conn_input(&s->smtpd.conn));
	if (pending == 0)
		return false;
	mt_slog(MT_LOG_WARNING, &s->log, "improper command pipelining after DATA "
		"from %s: %zu octets before the 354 (forbid_unauth_pipelining)",
		s->peer_name, pending);
	mt_smtpd_finish(&s->smtpd, MT_OUTCOME_LIMIT, 554,
			"5.5.0 Error: SMTP protocol synchronization");
	return true;
}

void smtp_cmd_data(struct smtp_session *s, const char *args)
{
	struct smtp_tx *tx = &s->tx;
	if (!tx->active) {
		mt_smtpd_reply(&s->smtpd, 503, "5.5.1 Error: need MAIL command");
		return;
	}
	if (s->smtpd.content.bdat_used) {
		mt_smtpd_reply(&s->smtpd, 503, "5.5.1 Error: DATA after BDAT");
		return;
	}
	if (tx->rcpt_count == 0) {
		mt_smtpd_reply(&s->smtpd, 554, "5.5.1 Error: no valid recipients");
		return;
	}
	if (*args != '\0') {
		mt_smtpd_reply(&s->smtpd, 501, "5.5.4 Syntax: DATA");
		return;
	}
	if (improper_pipelining(s))
		return;
	add_received(s);
	mt_smtpd_reply(&s->smtpd, 354, "End data with <CR><LF>.<CR><LF>");
	mt_smtpd_data_begin(&s->smtpd, s->mta->set->max_message_size,
			    MT_SMTP_LINE_MAX_OCTETS);
}

void smtp_data_end(struct mt_smtpd *d, enum mt_dot_result verdict, const char *error)
{
	struct smtp_session *s = SMTP_SESSION(d);
	(void)error;
	if (verdict == MT_DOT_RESULT_OK) {
		finish_message(s);
		return;
	}
	if (verdict == MT_DOT_RESULT_BARE_NEWLINE)
		mt_slog(MT_LOG_WARNING, &s->log, "bare LF or CR in DATA from %s "
			"(bare_newline_policy=reject)", s->peer_name);
	else if (verdict == MT_DOT_RESULT_NUL)
		mt_slog(MT_LOG_WARNING, &s->log, "NUL in DATA from %s", s->peer_name);
	refuse_verdict(s, verdict);
}

/* BDAT (RFC 3030): the engine reads each chunk; smtp_bdat_end answers it. */

void smtp_bdat_end(struct mt_smtpd *d)
{
	struct smtp_session *s = SMTP_SESSION(d);
	struct smtp_tx *tx = &s->tx;
	const struct mt_smtpd_content *content = &d->content;
	if (tx->bdat_error != NULL) {
		/* RFC 3030 2: after a failed chunk the transaction is over. */
		const char *error = tx->bdat_error;
		int code = atoi(error);
		mta_metrics_refused(s->mta, MTA_REFUSED_BDAT);
		refuse_content(s, code, error + 4);
		return;
	}
	if (content->chunk.too_big) {
		refuse_verdict(s, MT_DOT_RESULT_TOO_BIG);
		return;
	}
	if (!content->bdat_last) {
		mt_smtpd_reply(&s->smtpd, 250, "2.0.0 %llu octets received",
			       (unsigned long long)content->bdat_size);
		return;
	}
	enum mt_dot_result r = mt_smtpd_bdat_finish(d, MT_SMTP_LINE_MAX_OCTETS);
	if (r != MT_DOT_RESULT_OK) {
		if (r == MT_DOT_RESULT_NUL)
			mt_slog(MT_LOG_WARNING, &s->log, "NUL in BDAT from %s",
				s->peer_name);
		refuse_verdict(s, r);
		return;
	}
	finish_message(s);
}

void smtp_cmd_bdat(struct smtp_session *s, const char *args)
{
	struct smtp_tx *tx = &s->tx;
	uint64_t size;
	bool last;
	if (!smtp_parse_bdat(args, &size, &last)) {
		/* The chunk size is unknown, so its octets cannot be skipped:
		 * what follows will be read as commands. */
		mt_smtpd_reply(&s->smtpd, 501, "5.5.4 Syntax: BDAT size [LAST]");
		return;
	}
	/* Errors are answered once the chunk has been read (RFC 3030 2). */
	tx->bdat_error = NULL;
	if (!tx->active)
		tx->bdat_error = "503 5.5.1 Error: need MAIL command";
	else if (tx->rcpt_count == 0)
		tx->bdat_error = "554 5.5.1 Error: no valid recipients";
	else if (!s->smtpd.content.bdat_used)
		add_received(s);
	mt_smtpd_bdat_chunk(&s->smtpd, size, last, tx->bdat_error != NULL,
			    s->mta->set->max_message_size);
}
