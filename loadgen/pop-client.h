/* pop-client.h — one POP3 mailbox check of the workload: connect, USER,
 * PASS, STAT, then RETR and DELE for each message, QUIT; every step timed.
 * Retrieved messages are read line by line (never held whole) and their
 * headers searched for the id header, so delivery probes are timed.
 * Trust boundary: the server's replies and message data (untrusted; see
 * session.h). RFC 1939 (3: responses and multi-line byte-stuffing; 4-6:
 * AUTHORIZATION, TRANSACTION and UPDATE states). */
#ifndef LG_POP_CLIENT_H
#define LG_POP_CLIENT_H

#include "session.h"

/* Our bound on the messages handled in one check; STAT may say more. */
#define LG_POP_MAX_MESSAGES 10000u

struct lg_session *lg_pop_session_start(const struct lg_session_env *env,
					enum lg_kind kind, struct lg_stats *stats,
					struct lg_addrs *addrs, uint64_t user,
					lg_session_done_cb *done, void *context);

#endif
