/* bounce.c — delivery status notifications (RFC 3464): a
 * multipart/report message to the sender of a message some of whose
 * recipients failed for good (Action: failed) or, when asked with
 * NOTIFY=SUCCESS, were delivered (Action: delivered, or relayed when the
 * next hop was another MTA). Sent from the null sender, so it can never
 * cause a bounce of its own; never sent for a message whose sender is
 * null (RFC 5321 6.1, RFC 3461 6.2).
 *
 * The text is bounce-text.c's; here it becomes a queued message.
 * Trust boundary: the report quotes data that came from clients and
 * servers; bounce-text.c keeps it out of the MIME structure and the
 * generated fields.
 * RFCs: 3464 (message/delivery-status fields), 3462/6522
 * (multipart/report), 3461 4.3 (RET=HDRS|FULL) and 4.1 (NOTIFY), 3463
 * (status codes), 5322 3.3 (dates). */
#include "delivery-private.h"
#include "alloc.h"
#include "bounce-text.h"
#include "mta.h"

#include <string.h>

struct queue_msg *bounce_create(struct mta *mta, const struct queue_msg *msg,
				const struct dsn_rcpt *rcpts, unsigned int count)
{
	struct mt_buf out = MT_BUF_INIT;
	bool any_failed = false;
	char id[QUEUE_ID_LEN + 1];
	int64_t now = mta_now_ms();

	if (msg->sender == NULL || msg->sender[0] == '\0')
		return NULL;	/* never a bounce for a bounce */
	unsigned int wanted = 0;
	for (unsigned int i = 0; i < count; i++)
		wanted += bounce_wants_report(&msg->rcpts[rcpts[i].index]);
	if (wanted == 0)
		return NULL;
	queue_new_id(mta->queue, id);
	if (!bounce_compose(&out, mta->hostname, id, now, msg, rcpts, count,
			    &any_failed))
		return NULL;

	struct queue_msg *report = queue_msg_new();
	memcpy(report->id, id, sizeof(report->id));
	report->arrival = now;
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
