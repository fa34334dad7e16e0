/* queue-records.h — the on-disk form of a queued message's envelope and
 * recipient states (one record per message, keyed by its queue id).
 *
 * Format (version 1), integers little-endian, strings as u32 length + bytes:
 *   "MTQ" u8 version | u64 arrival | u32 flags | u64 size | str sender |
 *   str envid | u8 ret | str client | u32 rcpt_count |
 *   per recipient: str address | str orcpt | u8 notify | u8 state |
 *                  u32 attempts | i64 next_try | str last_error
 * An absent optional string (envid, orcpt, last_error) has length
 * 0xffffffff. envid and orcpt are the RFC 3461 xtext the client sent
 * (printable ASCII): decoded only where shown (bounce-text.c) or
 * re-encoded where sent on (outbound-tx.c), so the format needs no
 * change for the decoding.
 *
 * Trust boundary: records are ours, but a damaged file must not become a
 * crash: the decoder checks every length against what is left and every
 * enum against its range. */
#ifndef MT_MTA_QUEUE_RECORDS_H
#define MT_MTA_QUEUE_RECORDS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "queue.h"

#define QUEUE_RECORD_VERSION 1
/* More recipients than this in a record means it is damaged. */
#define QUEUE_RECORD_MAX_RCPTS 1000000u

/* Append msg's envelope record to out. */
void queue_record_encode(const struct queue_msg *msg, struct mt_buf *out);
/* Fill msg (fresh from queue_msg_new(), id not touched) from a record;
 * false with a reason if the record is damaged (msg may then hold partial
 * data: unref it). */
bool queue_record_decode(const void *data, size_t size, struct queue_msg *msg,
			 const char **error_r);

#endif
