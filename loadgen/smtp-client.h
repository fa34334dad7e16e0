/* smtp-client.h — one SMTP client session of the workload: connect, EHLO
 * (HELO if EHLO is refused), with --tls STARTTLS and EHLO again, MAIL
 * FROM, RCPT TO per recipient, DATA with a generated message carrying the
 * unique id header, QUIT; every step timed. A desktop IMAP client's reply
 * is the same session in rows of its own (smtp_submit_*), with AUTH PLAIN
 * as the user on a submission port (after STARTTLS where AUTH is offered
 * only then). The same machine speaks LMTP for `fill` straight to the
 * store shards: LHLO instead of EHLO, one reply per recipient after the
 * data, and several transactions on one connection.
 * Trust boundary: the server's replies (untrusted; see session.h); after
 * STARTTLS nothing said before it is kept (the extensions are asked again).
 * RFC 5321 3.3 (mail transactions), 4.1.1 (commands), 4.2 (replies),
 * 4.3.2 (the replies each command expects); RFC 3207 4 and 4.2 (STARTTLS,
 * EHLO again after it); RFC 4954 4 (AUTH with an initial response), 6
 * (235, 535); RFC 4616 2 (PLAIN); RFC 6409 (submission); RFC 2033 4.1
 * (LHLO), 4.2 (a reply for each successful RCPT after the data). */
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
	/* A desktop client's reply: the smtp_submit_* rows, counted as
	 * submitted (not in the SPECmail2001 msgs/min). */
	bool submission;
	/* AUTH PLAIN as the plan's (local) sender; STARTTLS first where AUTH
	 * is offered only after it. A server without AUTH PLAIN fails it. */
	bool auth;
	/* After an accepted message: the next one for the same connection
	 * (false: QUIT). NULL: one message per session. */
	bool (*next)(void *context, struct lg_message_plan *plan, uint64_t *seq_r);
	void *next_context;
};

/* Start a session to one of addrs (session.h); returns it (it is in progress or, if the
 * connect failed at once, already finished and done has been called). */
struct lg_session *lg_smtp_session_start(const struct lg_session_env *env,
					 enum lg_kind kind, struct lg_stats *stats,
					 struct lg_addrs *addrs,
					 const struct lg_smtp_params *params,
					 lg_session_done_cb *done, void *context);

#endif
