/* sink.h — the SMTP sink: a minimal ESMTP server that accepts the MTA's
 * remote deliveries (the mail to @remote_domain), counts sessions,
 * transactions, recipients and octets, discards the message text (nothing
 * is stored, nothing fsynced) and hands each message's id header to the
 * delivery tracker when the message is complete (its final "." in, counted,
 * the 250 queued), so remote delivery time is measured where it ends and
 * an arrival the tracker has seen is one the sink has counted: a run that
 * ends on its last arrival never cuts a message off half-way. With a
 * ledger (ledger.h) each accepted message's id, SHA-256 of its text and
 * recipients are also written there. Replies
 * still queued when the sink is freed are written before the close.
 *
 * Trust boundary: everything it reads comes from the MTA under test (or
 * whoever connects): commands are parsed by a command table with named
 * limits (line length, recipients per transaction, bad commands, idle time),
 * message data is only scanned for the id header.
 * RFC 5321 3.3 (transactions), 4.1.1 (commands), 4.1.1.4 (DATA and its
 * end), 4.2 (replies), 4.5.2 (dot-stuffing), 4.5.3.2 (timeouts); RFC 2920
 * (PIPELINING: commands are answered strictly in order). */
#ifndef LG_SINK_H
#define LG_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracker.h"

struct mt_loop;
struct lg_sink;

/* Named limits of the sink. */
#define LG_SINK_LINE_MAX 4096		/* command line, CRLF included */
#define LG_SINK_DATA_LINE_MAX 65536	/* text lines longer are only counted */
#define LG_SINK_MAX_RCPTS 1000		/* per transaction (RFC 5321 4.5.3.1.8: >= 100) */
#define LG_SINK_MAX_BAD_COMMANDS 20
#define LG_SINK_IDLE_MSECS (5 * 60 * 1000)	/* RFC 5321 4.5.3.2.7 */

struct lg_sink_counts {
	uint64_t sessions;
	uint64_t active;		/* sessions open now */
	uint64_t transactions;		/* messages accepted */
	uint64_t rcpts;			/* recipients of accepted messages */
	uint64_t octets;		/* message octets (un-stuffed) */
	uint64_t with_id;		/* messages carrying our id header */
	uint64_t bad_commands;
};

/* Listen on hostport ("127.0.0.1:2526", port 0 = any free port).
 * tracker may be NULL (the standalone sink only counts). */
struct lg_sink *lg_sink_new(struct mt_loop *loop, const char *hostport,
			    struct lg_tracker *tracker, const char **error_r);
/* Instead of the tracker: hand each accepted message's id header value
 * (and its recipient count) to cb, e.g. to route it to another generator
 * process. */
typedef void lg_sink_arrival_cb(const char *id, size_t len, unsigned int count,
				void *context);
void lg_sink_set_arrival(struct lg_sink *sink, lg_sink_arrival_cb *cb,
			 void *context);
/* Write each accepted message (id, digest, recipients) into ledger
 * (ledger.h); NULL: none. Before the first connection. */
struct lg_ledger;
void lg_sink_set_ledger(struct lg_sink *sink, struct lg_ledger *ledger);
/* Close the listener and every connection. */
void lg_sink_free(struct lg_sink **sink_p);
unsigned int lg_sink_port(const struct lg_sink *sink);
const struct lg_sink_counts *lg_sink_counts(const struct lg_sink *sink);

#endif
