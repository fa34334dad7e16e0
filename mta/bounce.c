/* bounce.c — delivery status notifications (RFC 3464): a
 * multipart/report message to the sender of a message some of whose
 * recipients failed for good (Action: failed) or, when asked with
 * NOTIFY=SUCCESS, were delivered (Action: delivered, or relayed when the
 * next hop was another MTA). Sent from the null sender, so it can never
 * cause a bounce of its own. A message from the null sender (such a report,
 * ours or another MTA's) that fails is not reported to its sender (RFC
 * 5321 6.1, RFC 3461 6.2) but copied whole to the postmaster ([mta]
 * postmaster), so an accepted message always reaches a person; that copy
 * failing in turn is held in the queue (delivery.c), never dropped.
 *
 * The text is bounce-text.c's; here it becomes a queued message.
 * Trust boundary: the report quotes data that came from clients and
 * servers; bounce-text.c keeps it out of the MIME structure and the
 * generated fields.
 * RFCs: 3464 (message/delivery-status fields), 3462/6522
 * (multipart/report), 3461 4.3 (RET=HDRS|FULL) and 4.1 (NOTIFY), 3463
 * (status codes), 5322 3.3 (dates). */
#include "delivery-private.h"
#include "clock.h"
#include "address.h"
#include "alloc.h"
#include "bounce-text.h"
#include "mta-policy.h"
#include "mta.h"

#include <string.h>

/* The flags a report needs for its own content, not the original's: an
 * all-ASCII report goes as plain SMTP whatever the message it is about
 * asked for (RFC 6531 3.4, RFC 6152). */
static uint32_t report_content_flags(const struct mt_buf *out, const char *to)
{
	const char *end = memmem(out->data, out->len, "\r\n\r\n", 4);
	size_t header_len = end != NULL ? (size_t)(end - out->data) : out->len;
	uint32_t flags = 0;
	if (mt_has_8bit(out->data, out->len))
		flags |= QUEUE_MSG_8BIT;
	if (mt_has_8bit(to, strlen(to)) || mt_has_8bit(out->data, header_len))
		flags |= QUEUE_MSG_SMTPUTF8;
	return flags;
}

struct queue_msg *bounce_create(struct mta *mta, const struct queue_msg *msg,
				const struct dsn_rcpt *rcpts, unsigned int count)
{
	struct mt_buf out = MT_BUF_INIT;
	bool any_failed = false, made;
	char id[QUEUE_ID_LEN + 1];
	int64_t now = mt_wall_ms();
	bool null_sender = msg->sender == NULL || msg->sender[0] == '\0';

	/* The postmaster's copy is the end of the line: delivery holds it
	 * when it fails (delivery.c), it is never reported on. */
	if (null_sender && (msg->flags & QUEUE_MSG_POSTMASTER_COPY) != 0)
		return NULL;
	unsigned int wanted = 0;
	for (unsigned int i = 0; i < count; i++)
		wanted += bounce_wants_report(&msg->rcpts[rcpts[i].index]);
	if (wanted == 0)
		return NULL;
	const char *to = null_sender ? mta_policy_postmaster(mta->policy) : msg->sender;
	queue_new_id(mta->queue, id);
	if (null_sender)
		made = bounce_compose_postmaster(&out, mta->hostname, id, now, to, msg,
						 rcpts, count);
	else
		made = bounce_compose(&out, mta->hostname, id, now, msg, rcpts, count,
				      &any_failed);
	if (!made) {
		mt_buf_free(&out);
		return NULL;
	}

	struct queue_msg *report = queue_msg_new();
	memcpy(report->id, id, sizeof(report->id));
	report->arrival = now;
	report->flags = QUEUE_MSG_DSN | report_content_flags(&out, to) |
		(null_sender ? QUEUE_MSG_POSTMASTER_COPY : 0);
	report->sender = mt_xstrdup("");
	report->client = mt_xstrdup("helo=localhost addr=internal");
	/* No NOTIFY: a report has the null sender, so nobody is notified of
	 * its fate but the postmaster (RFC 3461 6.2). */
	queue_msg_add_rcpt(report, to);
	size_t size = out.len;
	report->size = size;
	report->body = queue_body_new(mt_buf_steal(&out), size);
	return report;
}
