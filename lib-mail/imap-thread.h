/* imap-thread.h — IMAP THREAD (RFC 5256 2.2 ORDEREDSUBJECT, 2.3
 * REFERENCES, 4 the THREAD response) over an array of message records:
 * the tier hands each message's number, sent date and the raw Subject,
 * Message-ID, In-Reply-To and References values; the result is the
 * response's threads, "(2)(3 6 (4 23)(44 7 96))".
 *
 * REFERENCES as RFC 5256 2.3 says, with the broken cases it names: a
 * message without a valid Message-ID, or with one an earlier message
 * has, gets a container of its own; links that would make a loop are not
 * made (a References list that names the message itself or its own
 * descendants, two messages naming each other); a message's own parent
 * replaces one guessed from another's References; missing parents are
 * dummies, pruned (their children promoted, at the root only when there
 * is one) and used to join threads of one base subject. Siblings are
 * ordered by sent date (the Date: field, else the arrival), ties by
 * sequence order. Msg-ids are the "<...>" tokens of the fields (white
 * space inside dropped, compared as octets); a message with no valid
 * References uses In-Reply-To's first.
 *
 * Bounds: the last MT_IMAP_THREAD_REFS_MAX msg-ids of a References field
 * are used, msg-ids longer than MT_IMAP_THREAD_ID_MAX are not msg-ids;
 * work is O(n log n) plus the ancestor walks of new links, memory linear
 * in the messages and their references; no recursion (deep threads are
 * walked with explicit stacks).
 *
 * Trust boundary: every string is a header value from any sender. */
#ifndef MT_IMAP_THREAD_H
#define MT_IMAP_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "imap-parse.h"

#define MT_IMAP_THREAD_REFS_MAX 256
#define MT_IMAP_THREAD_ID_MAX 998

enum mt_imap_thread_algorithm {
	MT_IMAP_THREAD_ORDEREDSUBJECT,
	MT_IMAP_THREAD_REFERENCES,
};

/* "ORDEREDSUBJECT" / "REFERENCES" (any case); false if neither. */
bool mt_imap_thread_algorithm_parse(const struct mt_imap_arg *arg,
				    enum mt_imap_thread_algorithm *algorithm_r);

struct mt_imap_thread_msg {
	uint32_t id;			/* what the answer names */
	uint32_t order;			/* sequence order */
	int64_t date;			/* sent date (or arrival), Unix time */
	/* Raw values, NUL-terminated; NULL when absent. */
	const char *subject, *message_id, *in_reply_to, *references;
};

/* The threads of msgs[0..count) appended to out ("" for none; the
 * caller writes "* THREAD" before). */
void mt_imap_thread(struct mt_buf *out, enum mt_imap_thread_algorithm algorithm,
		    const struct mt_imap_thread_msg *msgs, size_t count);

/* The msg-ids of a field, in order (for REFERENCES' records and tests):
 * calls each(id, len, context) for every valid one. */
void mt_imap_thread_msgids(const char *value,
			   void (*each)(const char *id, size_t len, void *context),
			   void *context);

/* The value of header's first field called name (case-insensitive), its
 * folded lines joined, appended to out; false if there is none. header
 * is a message's header section (up to its empty line). */
bool mt_imap_thread_header_field(const char *header, size_t len, const char *name,
				 struct mt_buf *out);

#endif
