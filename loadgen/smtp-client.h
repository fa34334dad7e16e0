/* smtp-client.h — one SMTP client session of the workload: connect, EHLO
 * (HELO if EHLO is refused), MAIL FROM, RCPT TO per recipient, DATA with a
 * generated message carrying the unique id header, QUIT; every step timed.
 * The same machine speaks LMTP for `fill` straight to the store shards:
 * LHLO instead of EHLO, one reply per recipient after the data, and
 * several transactions on one connection.
 * Trust boundary: the server's replies (untrusted; see session.h).
 * RFC 5321 3.3 (mail transactions), 4.1.1 (commands), 4.2 (replies),
 * 4.3.2 (the replies each command expects); RFC 2033 4.1 (LHLO), 4.2
 * (a reply for each successful RCPT after the data). */
#ifndef LG_SMTP_CLIENT_H
#define LG_SMTP_CLIENT_H

#include "session.h"

struct lg_smtp_params {
	const struct lg_message_plan *plan;	/* copied */
	uint64_t seq;			/* message number for the id header */
	bool track_remote;		/* time its remote copies at the sink */
	bool local_probe;		/* time its local copies through POP */
	struct lg_stats *delivery_stats; /* NULL: the session's stats */
	bool lmtp;			/* speak LMTP (RFC 2033) */
	/* After an accepted message: the next one for the same connection
	 * (false: QUIT). NULL: one message per session. */
	bool (*next)(void *context, struct lg_message_plan *plan, uint64_t *seq_r);
	void *next_context;
};

/* Start a session to addr; returns it (it is in progress or, if the
 * connect failed at once, already finished and done has been called). */
struct lg_session *lg_smtp_session_start(const struct lg_session_env *env,
					 enum lg_kind kind, struct lg_stats *stats,
					 const struct sockaddr *addr,
					 socklen_t addrlen,
					 const struct lg_smtp_params *params,
					 lg_session_done_cb *done, void *context);

#endif
