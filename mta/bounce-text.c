/* bounce-text.c — the text of a DSN (see bounce-text.h): a
 * multipart/report with a human-readable part, the message/delivery-status
 * fields, and the original's header section (RET=HDRS, the default) or the
 * whole original (RET=FULL, if the head the queue loaded is all of it:
 * up to QUEUE_HEAD_MAX, as Postfix's bounce_size_limit; larger ones get
 * the header section); and the postmaster's copy of a message from the
 * null sender that failed, quoted the same way (a double bounce: the
 * message reaches a person).
 *
 * Trust boundary: the report quotes data that came from clients and
 * servers — addresses, reply texts, host names and the original message —
 * so it is put only in places where it cannot break the MIME structure:
 * one line per field (control characters replaced), bounded lengths, a
 * boundary built from our queue ids and host name and made longer until
 * the quoted original does not contain it.
 * ENVID and ORCPT are queued as the client sent them (xtext) and shown
 * decoded (lib/xtext), unless the decoded text holds anything but
 * printable US-ASCII: then as xtext, so a "+0D+0A" cannot add a line.
 * RFCs: 3464 (message/delivery-status fields; 2.2.1 and 2.3.2: ENVID and
 * ORCPT decoded from RFC 3461 4 xtext), 3462/6522
 * (multipart/report), 3461 4.3 (RET=HDRS|FULL) and 4.1 (NOTIFY), 3463
 * (status codes), 5322 3.3 (dates), 2.1.1 (line length), 2046 5.1.1. */
#include "bounce-text.h"
#include "mta.h"
#include "xtext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIAGNOSTIC_MAX 900	/* keep the field's line under 998 octets */
#define ADDRESS_MAX 300
#define HUMAN_ERROR_MAX 600	/* "<" ADDRESS_MAX ">: " error: under 998 */
#define HOST_MAX 255

static void rfc5322_date(int64_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(buf, size, "%a, %d %b %Y %H:%M:%S %z", &tm);
}

/* Text from a peer, on one line and bounded. */
static void append_field_text(struct mt_buf *out, const char *text, size_t max)
{
	size_t n = 0;
	for (const char *p = text; *p != '\0' && n < max; p++, n++) {
		unsigned char c = (unsigned char)*p;
		mt_buf_append_char(out, c < 0x20 || c == 0x7f ? ' ' : (char)c);
	}
}

/* A DSN parameter's xtext as the report shows it (RFC 3464 2.2.1,
 * 2.3.2: decoded). A decoded value that is not all printable US-ASCII (a
 * CR, LF, NUL, other control or 8-bit octet) stays xtext as stored, which
 * is printable and so cannot end the field line or start another. */
static void append_xtext_field(struct mt_buf *out, const char *xtext, size_t max)
{
	struct mt_buf decoded = MT_BUF_INIT;
	mt_xtext_decode(xtext, &decoded);
	bool plain = mt_xtext_printable(decoded.data, decoded.len);
	append_field_text(out, plain ? mt_buf_cstr(&decoded) : xtext, max);
	mt_buf_free(&decoded);
}

/* ORCPT "addr-type;xtext" as "addr-type;address" (RFC 3464 2.3.2). */
static void append_orcpt_field(struct mt_buf *out, const char *orcpt, size_t max)
{
	const char *semi = strchr(orcpt, ';');
	if (semi == NULL) {
		append_xtext_field(out, orcpt, max);
		return;
	}
	size_t type_len = (size_t)(semi - orcpt) + 1;
	if (type_len > max)
		type_len = max;
	struct mt_buf type = MT_BUF_INIT;
	mt_buf_append(&type, orcpt, type_len);
	append_field_text(out, mt_buf_cstr(&type), type_len);
	mt_buf_free(&type);
	append_xtext_field(out, semi + 1, max - type_len);
}

bool bounce_wants_report(const struct queue_rcpt *r)
{
	if ((r->notify & QUEUE_NOTIFY_NEVER) != 0)
		return false;
	if (r->state == QUEUE_RCPT_DELIVERED)
		return (r->notify & QUEUE_NOTIFY_SUCCESS) != 0;
	if (r->state == QUEUE_RCPT_BOUNCED)
		return r->notify == 0 || (r->notify & QUEUE_NOTIFY_FAILURE) != 0;
	return false;
}

/* The header section of the stored message (through its empty line); in
 * a head that holds no end of it, the whole lines there are. */
static size_t header_length(const struct queue_body *body)
{
	const char *p = body->data;
	size_t len = body->size;
	for (size_t i = 0; i + 1 < len; i++) {
		if (p[i] == '\n' && (p[i + 1] == '\n' ||
				     (p[i + 1] == '\r' && i + 2 < len && p[i + 2] == '\n')))
			return i + 1;
	}
	if (!body->complete) {
		const char *last = len > 0 ? memrchr(p, '\n', len) : NULL;
		return last != NULL ? (size_t)(last - p) + 1 : 0;
	}
	return len;
}

static void human_part(struct mt_buf *out, const char *hostname,
		       const struct queue_msg *msg, const struct dsn_rcpt *rcpts,
		       unsigned int count, bool any_failed, bool postmaster_copy)
{
	mt_buf_appendf(out, "This is the mail system at host %s.\r\n\r\n", hostname);
	if (postmaster_copy)
		mt_buf_append_str(out, "The message attached below could not be "
				  "delivered to one or more\r\nrecipients. It came "
				  "from the null sender <> (a delivery report\r\nor "
				  "another automatic message), so it cannot be returned "
				  "to its\r\nsender: this copy is for the postmaster."
				  "\r\n\r\n");
	else if (any_failed)
		mt_buf_append_str(out, "I'm sorry to have to inform you that your "
				  "message could not\r\nbe delivered to one or "
				  "more recipients. It's attached below.\r\n\r\n");
	else
		mt_buf_append_str(out, "Your message was successfully delivered to "
				  "the destination(s)\r\nlisted below.\r\n\r\n");
	for (unsigned int i = 0; i < count; i++) {
		const struct queue_rcpt *r = &msg->rcpts[rcpts[i].index];
		if (!bounce_wants_report(r))
			continue;
		mt_buf_append_str(out, "<");
		append_field_text(out, r->address, ADDRESS_MAX);
		mt_buf_append_str(out, ">: ");
		append_field_text(out, r->last_error != NULL ? r->last_error :
				  r->state == QUEUE_RCPT_DELIVERED ? "delivered" :
				  "failed", HUMAN_ERROR_MAX);
		mt_buf_append_str(out, "\r\n");
	}
}

static void status_part(struct mt_buf *out, const char *hostname,
			const struct queue_msg *msg, const struct dsn_rcpt *rcpts,
			unsigned int count)
{
	char date[64];
	rfc5322_date(msg->arrival, date, sizeof(date));
	mt_buf_appendf(out, "Reporting-MTA: dns; %s\r\nX-Mailtier-Queue-ID: %s\r\n",
		       hostname, msg->id);
	if (msg->envid != NULL) {
		mt_buf_append_str(out, "Original-Envelope-Id: ");
		append_xtext_field(out, msg->envid, 100);
		mt_buf_append_str(out, "\r\n");
	}
	mt_buf_appendf(out, "Arrival-Date: %s\r\n", date);
	for (unsigned int i = 0; i < count; i++) {
		const struct queue_rcpt *r = &msg->rcpts[rcpts[i].index];
		if (!bounce_wants_report(r))
			continue;
		bool ok = r->state == QUEUE_RCPT_DELIVERED;
		const char *error = r->last_error != NULL ? r->last_error :
			ok ? "250 2.0.0 delivered" : "554 5.0.0 failed";
		int code = atoi(error);
		const char *text = strchr(error, ' ');
		char status[16];
		mt_smtp_status_code(text != NULL ? text + 1 : "", code, status);
		if (!ok && status[0] != '5')
			snprintf(status, sizeof(status), "5.0.0");
		mt_buf_append_str(out, "\r\nFinal-Recipient: rfc822; ");
		append_field_text(out, r->address, ADDRESS_MAX);
		mt_buf_append_str(out, "\r\n");
		if (r->orcpt != NULL) {
			mt_buf_append_str(out, "Original-Recipient: ");
			append_orcpt_field(out, r->orcpt, 500);
			mt_buf_append_str(out, "\r\n");
		}
		mt_buf_appendf(out, "Action: %s\r\nStatus: %s\r\n",
			       !ok ? "failed" : rcpts[i].relayed ? "relayed" : "delivered",
			       status);
		if (rcpts[i].remote_mta != NULL && rcpts[i].relayed) {
			/* The name came from DNS or a peer: quoted like the rest. */
			size_t host_len = strcspn(rcpts[i].remote_mta, "[:");
			mt_buf_append_str(out, "Remote-MTA: dns; ");
			append_field_text(out, rcpts[i].remote_mta,
					  host_len < HOST_MAX ? host_len : HOST_MAX);
			mt_buf_append_str(out, "\r\n");
		}
		mt_buf_append_str(out, "Diagnostic-Code: smtp; ");
		append_field_text(out, error, DIAGNOSTIC_MAX);
		mt_buf_append_str(out, "\r\n");
	}
}

/* The quoted original: its header section, or all of it for RET=FULL
 * (and for the postmaster's copy, which is the message's last reader)
 * when the loaded head is the whole message. */
static void original_part(const struct queue_msg *msg, bool postmaster_copy,
			  const char **data_r, size_t *len_r, bool *full_r)
{
	*data_r = NULL;
	*len_r = 0;
	*full_r = false;
	if (msg->body == NULL)
		return;
	*full_r = (msg->ret == QUEUE_RET_FULL || postmaster_copy) &&
		msg->body->complete;
	*data_r = msg->body->data;
	*len_r = *full_r ? msg->body->size : header_length(msg->body);
}

/* RFC 2046 5.1.1: the boundary must not occur in the quoted original. */
static void choose_boundary(char *boundary, size_t size, const char *report_id,
			    const char *msg_id, const char *hostname,
			    const char *quoted, size_t quoted_len)
{
	snprintf(boundary, size, "%s.%s/%s", report_id, msg_id, hostname);
	for (unsigned int n = 1; quoted_len > 0 &&
	     memmem(quoted, quoted_len, boundary, strlen(boundary)) != NULL; n++)
		snprintf(boundary, size, "%s.%s/%s/%u", report_id, msg_id, hostname, n);
}

/* The report about msg's rcpts, to the address `to`: the sender's DSN,
 * or the postmaster's copy of a message from the null sender. */
static bool compose(struct mt_buf *out, const char *hostname,
		    const char *report_id, int64_t now_ms,
		    const struct queue_msg *msg, const struct dsn_rcpt *rcpts,
		    unsigned int count, const char *to, bool postmaster_copy,
		    bool *any_failed_r)
{
	unsigned int wanted = 0;
	bool any_failed = false;
	for (unsigned int i = 0; i < count; i++) {
		const struct queue_rcpt *r = &msg->rcpts[rcpts[i].index];
		if (bounce_wants_report(r)) {
			wanted++;
			any_failed = any_failed || r->state == QUEUE_RCPT_BOUNCED;
		}
	}
	if (wanted == 0 || (postmaster_copy && !any_failed))
		return false;
	*any_failed_r = any_failed;

	const char *quoted;
	size_t quoted_len;
	bool full;
	original_part(msg, postmaster_copy, &quoted, &quoted_len, &full);
	char date[64], boundary[400];
	rfc5322_date(now_ms, date, sizeof(date));
	choose_boundary(boundary, sizeof(boundary), report_id, msg->id, hostname,
			quoted, quoted_len);

	mt_buf_appendf(out, "Received: by %s (%s) id %s (queue=%s); %s\r\n",
		       hostname, MTA_NAME, report_id, report_id, date);
	mt_buf_appendf(out, "Date: %s\r\nFrom: Mail Delivery System "
		       "<MAILER-DAEMON@%s>\r\nTo: <", date, hostname);
	append_field_text(out, to, ADDRESS_MAX);
	mt_buf_appendf(out, ">\r\nSubject: %s\r\nMessage-ID: <%s.dsn@%s>\r\n"
		       "Auto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n"
		       "Content-Type: multipart/report; report-type=delivery-status;\r\n"
		       "\tboundary=\"%s\"\r\n\r\n"
		       "This is a MIME-encapsulated message.\r\n\r\n",
		       postmaster_copy ? "Postmaster Copy: Undelivered Mail" :
		       any_failed ? "Undelivered Mail Returned to Sender" :
		       "Successful Mail Delivery Report", report_id, hostname,
		       boundary);
	mt_buf_appendf(out, "--%s\r\nContent-Description: Notification\r\n"
		       "Content-Type: text/plain; charset=utf-8\r\n\r\n", boundary);
	human_part(out, hostname, msg, rcpts, count, any_failed, postmaster_copy);
	mt_buf_appendf(out, "\r\n--%s\r\nContent-Description: Delivery report\r\n"
		       "Content-Type: message/delivery-status\r\n\r\n", boundary);
	status_part(out, hostname, msg, rcpts, count);
	if (msg->body != NULL) {
		mt_buf_appendf(out, "\r\n--%s\r\nContent-Description: %s\r\n"
			       "Content-Type: %s\r\n\r\n", boundary,
			       full ? "Undelivered Message" : "Message Headers",
			       full ? "message/rfc822" : "text/rfc822-headers");
		mt_buf_append(out, quoted, quoted_len);
		if (quoted_len > 0 && quoted[quoted_len - 1] != '\n')
			mt_buf_append_str(out, "\r\n");
	}
	mt_buf_appendf(out, "\r\n--%s--\r\n", boundary);
	return true;
}

bool bounce_compose(struct mt_buf *out, const char *hostname,
		    const char *report_id, int64_t now_ms,
		    const struct queue_msg *msg, const struct dsn_rcpt *rcpts,
		    unsigned int count, bool *any_failed_r)
{
	if (msg->sender == NULL || msg->sender[0] == '\0')
		return false;	/* never a bounce for a bounce */
	return compose(out, hostname, report_id, now_ms, msg, rcpts, count,
		       msg->sender, false, any_failed_r);
}

bool bounce_compose_postmaster(struct mt_buf *out, const char *hostname,
			       const char *report_id, int64_t now_ms,
			       const char *postmaster, const struct queue_msg *msg,
			       const struct dsn_rcpt *rcpts, unsigned int count)
{
	bool any_failed;
	if (msg->sender != NULL && msg->sender[0] != '\0')
		return false;	/* the sender gets the report */
	return compose(out, hostname, report_id, now_ms, msg, rcpts, count,
		       postmaster, true, &any_failed);
}
