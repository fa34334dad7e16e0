/* bounce.c — delivery status notifications (RFC 3464): a
 * multipart/report message to the sender of a message some of whose
 * recipients failed for good (Action: failed) or, when asked with
 * NOTIFY=SUCCESS, were delivered (Action: delivered, or relayed when the
 * next hop was another MTA). Sent from the null sender, so it can never
 * cause a bounce of its own; never sent for a message whose sender is
 * null (RFC 5321 6.1, RFC 3461 6.2).
 *
 * Trust boundary: the report quotes data that came from clients and
 * servers — addresses, reply texts and the original header section — so
 * it is put only in places where it cannot break the MIME structure: one
 * line per field (control characters replaced), bounded lengths, a
 * boundary built from our queue id and host name.
 * RFCs: 3464 (message/delivery-status fields), 3462/6522
 * (multipart/report), 3461 4.3 (RET=HDRS|FULL) and 4.1 (NOTIFY), 3463
 * (status codes), 5322 3.3 (dates). */
#include "delivery-private.h"
#include "alloc.h"
#include "mta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIAGNOSTIC_MAX 900	/* keep the field's line under 998 octets */
#define FULL_RETURN_MAX (10u * 1024u * 1024u)

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

static bool wants_report(const struct queue_rcpt *r)
{
	if ((r->notify & QUEUE_NOTIFY_NEVER) != 0)
		return false;
	if (r->state == QUEUE_RCPT_DELIVERED)
		return (r->notify & QUEUE_NOTIFY_SUCCESS) != 0;
	if (r->state == QUEUE_RCPT_BOUNCED)
		return r->notify == 0 || (r->notify & QUEUE_NOTIFY_FAILURE) != 0;
	return false;
}

/* The header section of the stored message (through its empty line). */
static size_t header_length(const struct queue_body *body)
{
	const char *p = body->data;
	size_t len = body->size;
	for (size_t i = 0; i + 1 < len; i++) {
		if (p[i] == '\n' && (p[i + 1] == '\n' ||
				     (p[i + 1] == '\r' && i + 2 < len && p[i + 2] == '\n')))
			return i + 1;
	}
	return len;
}

static void human_part(struct mt_buf *out, struct mta *mta,
		       const struct queue_msg *msg, const struct dsn_rcpt *rcpts,
		       unsigned int count, bool any_failed)
{
	mt_buf_appendf(out, "This is the mail system at host %s.\r\n\r\n", mta->hostname);
	if (any_failed)
		mt_buf_append_str(out, "I'm sorry to have to inform you that your "
				  "message could not\r\nbe delivered to one or "
				  "more recipients. It's attached below.\r\n\r\n");
	else
		mt_buf_append_str(out, "Your message was successfully delivered to "
				  "the destination(s)\r\nlisted below.\r\n\r\n");
	for (unsigned int i = 0; i < count; i++) {
		const struct queue_rcpt *r = &msg->rcpts[rcpts[i].index];
		if (!wants_report(r))
			continue;
		mt_buf_append_str(out, "<");
		append_field_text(out, r->address, 300);
		mt_buf_append_str(out, ">: ");
		append_field_text(out, r->last_error != NULL ? r->last_error :
				  r->state == QUEUE_RCPT_DELIVERED ? "delivered" :
				  "failed", DIAGNOSTIC_MAX);
		mt_buf_append_str(out, "\r\n");
	}
}

static void status_part(struct mt_buf *out, struct mta *mta,
			const struct queue_msg *msg, const struct dsn_rcpt *rcpts,
			unsigned int count)
{
	char date[64];
	rfc5322_date(msg->arrival, date, sizeof(date));
	mt_buf_appendf(out, "Reporting-MTA: dns; %s\r\nX-Mailtier-Queue-ID: %s\r\n",
		       mta->hostname, msg->id);
	if (msg->envid != NULL) {
		mt_buf_append_str(out, "Original-Envelope-Id: ");
		append_field_text(out, msg->envid, 100);
		mt_buf_append_str(out, "\r\n");
	}
	mt_buf_appendf(out, "Arrival-Date: %s\r\n", date);
	for (unsigned int i = 0; i < count; i++) {
		const struct queue_rcpt *r = &msg->rcpts[rcpts[i].index];
		if (!wants_report(r))
			continue;
		bool ok = r->state == QUEUE_RCPT_DELIVERED;
		const char *error = r->last_error != NULL ? r->last_error :
			ok ? "250 2.0.0 delivered" : "554 5.0.0 failed";
		int code = atoi(error);
		const char *text = strchr(error, ' ');
		char status[16];
		client_reply_status_code(text != NULL ? text + 1 : "", code, status);
		if (!ok && status[0] != '5')
			snprintf(status, sizeof(status), "5.0.0");
		mt_buf_append_str(out, "\r\nFinal-Recipient: rfc822; ");
		append_field_text(out, r->address, 300);
		mt_buf_append_str(out, "\r\n");
		if (r->orcpt != NULL) {
			mt_buf_append_str(out, "Original-Recipient: ");
			append_field_text(out, r->orcpt, 500);
			mt_buf_append_str(out, "\r\n");
		}
		mt_buf_appendf(out, "Action: %s\r\nStatus: %s\r\n",
			       !ok ? "failed" : rcpts[i].relayed ? "relayed" : "delivered",
			       status);
		if (rcpts[i].remote_mta != NULL && rcpts[i].relayed) {
			size_t host_len = strcspn(rcpts[i].remote_mta, "[:");
			mt_buf_appendf(out, "Remote-MTA: dns; %.*s\r\n", (int)host_len,
				       rcpts[i].remote_mta);
		}
		mt_buf_append_str(out, "Diagnostic-Code: smtp; ");
		append_field_text(out, error, DIAGNOSTIC_MAX);
		mt_buf_append_str(out, "\r\n");
	}
}

struct queue_msg *bounce_create(struct mta *mta, const struct queue_msg *msg,
				const struct dsn_rcpt *rcpts, unsigned int count)
{
	unsigned int wanted = 0;
	bool any_failed = false;
	if (msg->sender == NULL || msg->sender[0] == '\0')
		return NULL;	/* never a bounce for a bounce */
	for (unsigned int i = 0; i < count; i++) {
		const struct queue_rcpt *r = &msg->rcpts[rcpts[i].index];
		if (wants_report(r)) {
			wanted++;
			any_failed = any_failed || r->state == QUEUE_RCPT_BOUNCED;
		}
	}
	if (wanted == 0)
		return NULL;

	struct queue_msg *report = queue_msg_new();
	queue_new_id(mta->queue, report->id);
	report->arrival = mta_now_ms();
	char date[64], boundary[160];
	rfc5322_date(report->arrival, date, sizeof(date));
	snprintf(boundary, sizeof(boundary), "%s.%s/%s", report->id, msg->id,
		 mta->hostname);

	struct mt_buf out = MT_BUF_INIT;
	mt_buf_appendf(&out, "Received: by %s (%s) id %s (queue=%s); %s\r\n",
		       mta->hostname, MTA_NAME, report->id, report->id, date);
	mt_buf_appendf(&out, "Date: %s\r\nFrom: Mail Delivery System "
		       "<MAILER-DAEMON@%s>\r\nTo: <", date, mta->hostname);
	append_field_text(&out, msg->sender, 300);
	mt_buf_appendf(&out, ">\r\nSubject: %s\r\nMessage-ID: <%s.dsn@%s>\r\n"
		       "Auto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n"
		       "Content-Type: multipart/report; report-type=delivery-status;\r\n"
		       "\tboundary=\"%s\"\r\n\r\n"
		       "This is a MIME-encapsulated message.\r\n\r\n",
		       any_failed ? "Undelivered Mail Returned to Sender" :
		       "Successful Mail Delivery Report", report->id, mta->hostname,
		       boundary);
	mt_buf_appendf(&out, "--%s\r\nContent-Description: Notification\r\n"
		       "Content-Type: text/plain; charset=utf-8\r\n\r\n", boundary);
	human_part(&out, mta, msg, rcpts, count, any_failed);
	mt_buf_appendf(&out, "\r\n--%s\r\nContent-Description: Delivery report\r\n"
		       "Content-Type: message/delivery-status\r\n\r\n", boundary);
	status_part(&out, mta, msg, rcpts, count);
	if (msg->body != NULL) {
		bool full = msg->ret == QUEUE_RET_FULL && msg->body->size <= FULL_RETURN_MAX;
		size_t len = full ? msg->body->size : header_length(msg->body);
		mt_buf_appendf(&out, "\r\n--%s\r\nContent-Description: %s\r\n"
			       "Content-Type: %s\r\n\r\n", boundary,
			       full ? "Undelivered Message" : "Message Headers",
			       full ? "message/rfc822" : "text/rfc822-headers");
		mt_buf_append(&out, msg->body->data, len);
		if (len > 0 && msg->body->data[len - 1] != '\n')
			mt_buf_append_str(&out, "\r\n");
	}
	mt_buf_appendf(&out, "\r\n--%s--\r\n", boundary);

	report->flags = QUEUE_MSG_DSN |
		(msg->flags & (QUEUE_MSG_8BIT | QUEUE_MSG_SMTPUTF8));
	report->sender = mt_xstrdup("");
	report->client = mt_xstrdup("helo=localhost addr=internal");
	struct queue_rcpt *r = queue_msg_add_rcpt(report, msg->sender);
	r->notify = QUEUE_NOTIFY_NEVER;
	size_t size = out.len;
	report->size = size;
	report->body = queue_body_new(mt_buf_steal(&out), size);
	return report;
}
