/* bounce-text.h — the text of a delivery status notification (RFC 3464),
 * built from a queued message and the fate of its recipients. Pure: no
 * queue, no clock, no I/O; bounce.c wraps it into a queued message, and
 * tests/fuzz/fuzz-bounce.c feeds it hostile originals.
 *
 * Trust boundary: everything quoted comes from clients and servers — the
 * sender, recipients, ORCPT and ENVID, reply texts, the next hop's name,
 * the original header section or message — and may hold any octets. No
 * CR, LF, NUL or other control octet reaches a generated header or
 * delivery-status field; every generated line is at most 998 octets; the
 * MIME boundary never occurs in the quoted original.
 * RFCs: 3464 2 (fields), 6522 (multipart/report), 3461 4.1 and 4.3
 * (NOTIFY, RET), 3463 (status codes), 5322 2.1.1 (998), 2046 5.1.1
 * (boundary must not occur in the encapsulated parts). */
#ifndef MT_MTA_BOUNCE_TEXT_H
#define MT_MTA_BOUNCE_TEXT_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "delivery-private.h"

/* Does recipient r get a line in the report (NOTIFY, its state)? */
bool bounce_wants_report(const struct queue_rcpt *r);

/* Append the whole DSN message (header section and body) about msg's
 * recipients rcpts[0..count) to out. report_id is the DSN's own queue id,
 * now_ms its date, hostname ours. *any_failed_r: some recipient bounced
 * (else it is a success report). false, with nothing appended, when no
 * recipient wants a report or the sender is null. */
bool bounce_compose(struct mt_buf *out, const char *hostname,
		    const char *report_id, int64_t now_ms,
		    const struct queue_msg *msg, const struct dsn_rcpt *rcpts,
		    unsigned int count, bool *any_failed_r);

/* Append the postmaster's copy of msg, a message from the null sender
 * (a DSN, ours or another's), about its failed recipients among
 * rcpts[0..count), addressed to postmaster: the same report with the
 * whole original (up to 10 MiB). false, with nothing appended, when the
 * sender is not null or no recipient failed with a report wanted. */
bool bounce_compose_postmaster(struct mt_buf *out, const char *hostname,
			       const char *report_id, int64_t now_ms,
			       const char *postmaster, const struct queue_msg *msg,
			       const struct dsn_rcpt *rcpts, unsigned int count);

#endif
