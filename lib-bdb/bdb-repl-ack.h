/* bdb-repl-ack.h — batched durability acknowledgements over a repmgr
 * message channel (HA.md 5.2, "Phase 2"): the master's group
 * commit, after its own log flush, asks the replicas to flush theirs up to
 * the end of the log it flushed, and counts it replicated once a quorum of
 * them answer, in the same replication generation, with a flushed end at
 * or past it.
 *
 * Why not repmgr's own acknowledgements (DB_REPMGR_ACKS_QUORUM): they are
 * waited for inside each transaction's commit, while it still holds its
 * write locks (txn.c), so every commit that touches a hot page (a
 * database's metadata page when it allocates one, the last leaf of an
 * increasing key) holds it for a network round trip and a replica's fsync:
 * measured here, replicated LMTP deliveries ran at 0.30 of single-site with
 * 25 ms added per delivery. Here commits use DB_REPMGR_ACKS_NONE and end at
 * once; the wait is one per flushed batch, on the flusher thread, with no
 * lock held — the same rule (a positive answer once the change is on the
 * master's disk and on a replica's) at a group commit's cost.
 *
 * Why it is exact: a replica's log is the master's, record for record at
 * the same LSNs, within one generation; a replica that answers generation G
 * and a flushed end >= L has every record of the master's log below L on
 * its disk. A batch's L is the master's end of log taken before its flush,
 * after every transaction of the batch committed. A request answered
 * "nothing to do" rides the same batch, so it too waits for everything
 * logged before it (the trap of HA.md 5.2 closed by construction).
 *
 * Trust boundary: requests come from the group's sites over repmgr's
 * connections (a private network, HA.md 2.1); a malformed one is
 * answered with nothing counted. Berkeley DB 5.3 references:
 * api_reference/C/repmgrchannel.html, repmgrmsg_dispatch.html,
 * channel_send_request.html; programmer_reference/repmgr_channels.html. */
#ifndef MT_BDB_REPL_ACK_H
#define MT_BDB_REPL_ACK_H

#include <stdbool.h>
#include <stdint.h>

#include <db.h>

/* Replicas answering this: registered with repmgr_msg_dispatch() before
 * repmgr_start() (bdb-repl.c does). A request is answered after a log
 * flush with the replica's generation and end of log. */
void mt_bdb_repl_ack_dispatch(DB_ENV *env, DB_CHANNEL *channel, DBT *request,
			      u_int32_t nrequest, u_int32_t cb_flags);

struct mt_bdb_repl_ack;

/* For the master's flusher; sites: the group's size (the quorum: of the
 * other sites, half of them rounded down, at least one). */
struct mt_bdb_repl_ack *mt_bdb_repl_ack_new(DB_ENV *env, unsigned int sites,
					    const char *name);
/* Block until a quorum of replicas has flushed through end (0), or
 * timeout_ms passed, or this site is not master (DB_REP_UNAVAIL). Flusher
 * thread only. */
int mt_bdb_repl_ack_wait(struct mt_bdb_repl_ack *ack, const DB_LSN *end,
			 unsigned int timeout_ms);
/* Close the channels (before the environment's close). */
void mt_bdb_repl_ack_free(struct mt_bdb_repl_ack **ack_p);

#endif
