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
 * "CRLF NUL . CRLF" never reaches a next hop that drops NULs. BDAT chunks
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
#include "smtp-content.h"
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
	return names[s->tx.smtputf8][s->tls][s->authenticated];
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
		       s->tls ? "; " : "", s->tls ? s->tls_info : "");
	if (tx->rcpt_count == 1)
		mt_buf_appendf(out, "\r\n\tfor <%s>", tx->rcpts[0].address);
	mt_buf_appendf(out, "; %s\r\n", date);
}

/* Content in pieces */

/* The start of the client's content is in tx->body (before the first
 * piece leaves): look at its header section once. One piece holds any
 * header section of sensible size; one longer than that is judged by its
 * first QUEUE_PIECE_SIZE octets, which hold more Received: fields than
 * max_hops allows. */
static void check_head(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	if (tx->head_checked)
		return;
	tx->head_checked = true;
	tx->head_hops = smtp_count_received(tx->body.data, tx->body.len);
	tx->head_fields = smtp_header_fields(tx->body.data, tx->body.len);
}

static void spool_ready(void *context)
{
	struct smtp_session *s = context;
	if (s->tx.spool_paused) {
		s->tx.spool_paused = false;
		smtp_session_resume(s);
	}
}

/* Once the content fills a piece, write it to the queue. False when the
 * previous piece is still being written: read nothing more until it is
 * (the socket's input stops at its watermark), so a session holds about
 * two pieces whatever the message's size. */
static bool spool_content(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	if (tx->body.len < QUEUE_PIECE_SIZE)
		return true;
	if (tx->spool == NULL)
		tx->spool = queue_spool_new(s->mta->queue, tx->queue_id,
					    spool_ready, s);
	if (queue_spool_busy(tx->spool)) {
		tx->spool_paused = true;
		return false;
	}
	check_head(s);
	queue_spool_write(tx->spool, &tx->body);
	return true;
}

static void queued_done(bool ok, const char *error, void *context)
{
	struct smtp_session *s = context;
	s->queue_op = NULL;
	if (ok) {
		s->messages++;
		mt_slog(MT_LOG_INFO, &s->log, "queued from=<%s> size=%zu nrcpt=%u "
			"durable_ms=%.1f", s->tx.sender, s->tx.queued_size,
			s->tx.rcpt_count, (double)(mt_clock_us() - s->tx.queued_at) / 1000.0);
		smtp_reply(s, 250, "2.0.0 Ok: queued as %s", s->tx.queue_id);
	} else {
		mt_slog(MT_LOG_ERROR, &s->log, "queueing failed: %s", error);
		smtp_reply(s, 451, "4.3.0 Error: queue file write error");
	}
	smtp_tx_reset(s);
	smtp_enter_state(s, SMTP_STATE_COMMAND);
	smtp_session_resume(s);
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
	if ((have & SMTP_HEADER_DATE) == 0) {
		char date[64];
		format_date(date, sizeof(date));
		mt_buf_appendf(&tx->prefix, "Date: %s\r\n", date);
	}
	if ((have & SMTP_HEADER_MESSAGE_ID) == 0)
		mt_buf_appendf(&tx->prefix, "Message-ID: <%s@%s>\r\n", tx->queue_id,
			       s->mta->hostname);
	if ((have & (SMTP_HEADER_DATE | SMTP_HEADER_MESSAGE_ID)) !=
	    (SMTP_HEADER_DATE | SMTP_HEADER_MESSAGE_ID))
		mt_slog(MT_LOG_DEBUG, &s->log, "added missing%s%s",
			(have & SMTP_HEADER_DATE) == 0 ? " Date:" : "",
			(have & SMTP_HEADER_MESSAGE_ID) == 0 ? " Message-ID:" : "");
}

/* The content is complete and acceptable: queue it durably (what is not
 * written as pieces yet goes with the envelope). */
static void finish_message(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	if (tx->spool != NULL && queue_spool_failed(tx->spool)) {
		smtp_reply(s, 451, "4.3.0 Error: queue file write error");
		smtp_tx_reset(s);
		smtp_enter_state(s, SMTP_STATE_COMMAND);
		return;
	}
	check_head(s);
	add_missing_headers(s);
	struct queue_msg *msg = queue_msg_new();
	unsigned int hops = tx->head_hops;

	memcpy(msg->id, tx->queue_id, sizeof(msg->id));
	msg->arrival = mt_wall_ms();
	msg->flags = (tx->body_8bit ? QUEUE_MSG_8BIT : 0) |
		(tx->smtputf8 ? QUEUE_MSG_SMTPUTF8 : 0);
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
	size_t prefix_len = tx->prefix.len;
	uint64_t size = prefix_len + tx->body.len +
		(tx->spool != NULL ? queue_spool_size(tx->spool) : 0);
	msg->size = size;
	msg->body = queue_body_new(mt_buf_steal(&tx->prefix), prefix_len);
	tx->queued_size = size;
	tx->queued_at = mt_clock_us();
	smtp_enter_state(s, SMTP_STATE_WAIT);
	s->queue_op = queue_submit(s->mta->queue, msg, &tx->spool, &tx->body,
				   smtp_server_receiving(s->mta->server) > 0,
				   queued_done, s);
}

/* Refuse the content just read; the transaction is over either way. */
static void refuse_content(struct smtp_session *s, int code, const char *text)
{
	smtp_reply(s, code, "%s", text);
	smtp_tx_reset(s);
	smtp_enter_state(s, SMTP_STATE_COMMAND);
}

/* Refuse it for what the decoder found (smtp-content.c has the texts). */
static void refuse_verdict(struct smtp_session *s, enum mt_dot_result r)
{
	int code;
	const char *text;
	smtp_content_refusal(r, &code, &text);
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
	size_t pending = evbuffer_get_length(mt_conn_input(&s->conn));
	if (pending == 0)
		return false;
	mt_slog(MT_LOG_WARNING, &s->log, "improper command pipelining after DATA "
		"from %s: %zu octets before the 354 (forbid_unauth_pipelining)",
		s->peer_name, pending);
	smtp_session_finish(s, 554, "5.5.0 Error: SMTP protocol synchronization");
	return true;
}

void smtp_cmd_data(struct smtp_session *s, const char *args)
{
	struct smtp_tx *tx = &s->tx;
	if (!tx->active) {
		smtp_reply(s, 503, "5.5.1 Error: need MAIL command");
		return;
	}
	if (tx->bdat_used) {
		smtp_reply(s, 503, "5.5.1 Error: DATA after BDAT");
		return;
	}
	if (tx->rcpt_count == 0) {
		smtp_reply(s, 554, "5.5.1 Error: no valid recipients");
		return;
	}
	if (*args != '\0') {
		smtp_reply(s, 501, "5.5.4 Syntax: DATA");
		return;
	}
	if (improper_pipelining(s))
		return;
	const struct mt_mta_settings *set = s->mta->set;
	add_received(s);
	mt_dot_decoder_init(&tx->dec, set->bare_newline_policy == MT_BARE_NEWLINE_NORMALIZE ?
			    MT_DOT_BARE_NORMALIZE : MT_DOT_BARE_REJECT,
			    set->max_message_size, SMTP_LINE_MAX_OCTETS);
	smtp_reply(s, 354, "End data with <CR><LF>.<CR><LF>");
	smtp_enter_state(s, SMTP_STATE_DATA);
}

bool smtp_data_input(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	struct evbuffer *in = mt_conn_input(&s->conn);
	const char *error;
	for (;;) {
		if (!spool_content(s))
			return false;
		if (mt_dot_decode_evbuffer_max(&tx->dec, in, &tx->body,
					       QUEUE_PIECE_SIZE))
			break;
		if (tx->body.len < QUEUE_PIECE_SIZE)
			return false;	/* wants more input */
	}
	enum mt_dot_result r = mt_dot_decoder_result(&tx->dec, &error);
	if (r == MT_DOT_RESULT_OK) {
		finish_message(s);
		return true;
	}
	if (r == MT_DOT_RESULT_BARE_NEWLINE)
		mt_slog(MT_LOG_WARNING, &s->log, "bare LF or CR in DATA from %s "
			"(bare_newline_policy=reject)", s->peer_name);
	else if (r == MT_DOT_RESULT_NUL)
		mt_slog(MT_LOG_WARNING, &s->log, "NUL in DATA from %s", s->peer_name);
	refuse_verdict(s, r);
	return true;
}

/* BDAT (RFC 3030) */

static void bdat_chunk_done(struct smtp_session *s, uint64_t size)
{
	struct smtp_tx *tx = &s->tx;
	smtp_enter_state(s, SMTP_STATE_COMMAND);
	if (tx->bdat_error != NULL) {
		/* RFC 3030 2: after a failed chunk the transaction is over. */
		const char *error = tx->bdat_error;
		int code = atoi(error);
		refuse_content(s, code, error + 4);
		return;
	}
	if (tx->chunk.too_big) {
		refuse_verdict(s, MT_DOT_RESULT_TOO_BIG);
		return;
	}
	if (!tx->bdat_last) {
		smtp_reply(s, 250, "2.0.0 %llu octets received", (unsigned long long)size);
		return;
	}
	smtp_chunk_finish(&tx->chunk, &tx->body);
	enum mt_dot_result r = smtp_chunk_result(&tx->chunk, SMTP_LINE_MAX_OCTETS);
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
		smtp_reply(s, 501, "5.5.4 Syntax: BDAT size [LAST]");
		return;
	}
	/* Errors are answered once the chunk has been read (RFC 3030 2). */
	tx->bdat_error = NULL;
	if (!tx->active)
		tx->bdat_error = "503 5.5.1 Error: need MAIL command";
	else if (tx->rcpt_count == 0)
		tx->bdat_error = "554 5.5.1 Error: no valid recipients";
	else if (!tx->bdat_used) {
		tx->bdat_used = true;
		add_received(s);
		smtp_chunk_init(&tx->chunk, s->mta->set->bare_newline_policy ==
				MT_BARE_NEWLINE_NORMALIZE, s->mta->set->max_message_size);
	}
	tx->bdat_last = last;
	tx->bdat_left = size;
	if (size == 0) {
		bdat_chunk_done(s, 0);
		return;
	}
	tx->bdat_chunk = size;
	smtp_enter_state(s, SMTP_STATE_BDAT);
}

/* Decode up to n octets of in (all there, n > 0) into the content. */
static void bdat_decode(struct smtp_session *s, struct evbuffer *in, size_t n)
{
	struct smtp_tx *tx = &s->tx;
	struct evbuffer_iovec vec[16];
	size_t done = 0;
	while (done < n) {
		int k = evbuffer_peek(in, (ev_ssize_t)(n - done), NULL, vec, 16);
		size_t taken = 0;
		for (int i = 0; i < k && i < 16 && done + taken < n; i++) {
			size_t len = vec[i].iov_len;
			if (len > n - done - taken)
				len = n - done - taken;
			smtp_chunk_decode(&tx->chunk, vec[i].iov_base, len, &tx->body);
			taken += len;
		}
		evbuffer_drain(in, taken);
		done += taken;
	}
}

/* BDAT content is read in slices of this much, so that the content held
 * stays near one piece whatever the chunk size. */
#define BDAT_SLICE (64u * 1024u)

bool smtp_bdat_input(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	struct evbuffer *in = mt_conn_input(&s->conn);
	while (tx->bdat_left > 0) {
		if (tx->bdat_error == NULL && !spool_content(s))
			return false;
		size_t avail = evbuffer_get_length(in);
		if (avail == 0)
			return false;
		size_t n = avail < tx->bdat_left ? avail : (size_t)tx->bdat_left;
		if (n > BDAT_SLICE)
			n = BDAT_SLICE;
		if (tx->bdat_error == NULL)
			bdat_decode(s, in, n);
		else
			evbuffer_drain(in, n);
		tx->bdat_left -= n;
	}
	bdat_chunk_done(s, tx->bdat_chunk);
	return true;
}
