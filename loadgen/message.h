/* message.h — the generated test messages: RFC 5322 headers with the unique
 * id header (tracker.h), then body lines of printable text up to the exact
 * size drawn from the workload. The body is produced in chunks as the
 * socket drains, so a 2.6 MB message never sits whole in memory. Lines are
 * at most 80 octets with CRLF and never begin with '.', so the text needs no
 * dot-stuffing (RFC 5321 4.5.2) and no line exceeds 998 (4.5.3.1.6).
 * Trust boundary: none (generated here). */
#ifndef LG_MESSAGE_H
#define LG_MESSAGE_H

#include <stdint.h>
#include <stddef.h>

#include "buf.h"
#include "workload.h"

struct evbuffer;

struct lg_body_gen {
	uint64_t remaining;	/* body octets still to produce */
	uint64_t line_no;
	/* When set, every body octet appended is also handed here (the
	 * ledger's digest of the exact octets sent). */
	void (*tap)(void *context, const void *data, size_t len);
	void *tap_context;
};

/* Append the header block (ending with the empty line) for a message of
 * plan->size octets and start the body generator for the rest. The whole
 * message is max(plan->size, header size) octets. */
void lg_message_begin(struct mt_buf *headers, struct lg_body_gen *gen,
		      const struct lg_workload *wl,
		      const struct lg_message_plan *plan, const char *id);
/* Append up to about max body octets to out; returns octets appended
 * (0 once the body is complete). */
size_t lg_message_fill(struct lg_body_gen *gen, struct evbuffer *out,
		       size_t max);

#endif
