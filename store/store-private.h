/* store-private.h — everything the store*.c files share and nothing else
 * sees, for the white-box tests (tests/unit/test-store*.c, the crash
 * driver): the store's layers, bottom to top, each in its own header that
 * a store*.c file includes as it needs:
 *   store-env.h       the store object, its environment and home directory,
 *                     our own results, a full disk
 *   store-records.h   the databases' keys and records, the transactions on
 *                     them, the purger's queue
 *   store-mailbox.h   open mailboxes: snapshot, in-use table
 *   store-req.h       requests (one shape: store_req_ops) over the group
 *                     commit and the reader pool, ports, IMAP's ops, bodies
 * and the files:
 *   store-env.c       the environment: open, recovery, databases, format
 *                     check and upgrade, checkpoints, close
 *   store-lifecycle.c open → join → become master → serve → close
 *   store-records.c   keys and records; the transactions themselves
 *   store-commit.c    the group-commit pipeline (executors + one flusher)
 *   store-purge.c     the purger: expunged messages' bodies, in the background
 *   store-async.c     requests (one shape: store_req_ops), completion ports,
 *                     the reader pool
 *   store-mailbox.c   open mailboxes: snapshot, in-use table, sync reads
 *   store-admin.c     stat and hot backup, counters
 *   store-space.c     a full disk: region preallocation, reserve, no-space mode
 *   store-dedupe.c    delivery ids: a redelivered message is not stored twice
 *   store-body.c      streamed bodies: the handle, its chunk writes, deliver/abort
 *   store-chunks.c    their records: chunk and abort transactions, references,
 *                     body ids, the orphan sweep at open
 *   store-folders.c   IMAP's folders and subscriptions (format 5)
 *   store-flags.c     IMAP's flags, keywords and MODSEQs: STORE
 *   store-copy.c      IMAP's COPY and MOVE
 *   store-structure.c IMAP's MIME structure records of bodies
 *   store-ops.c       the requests of those four: one transaction or query
 * Trust boundary: as store.h. */
#ifndef MT_POPSTORE_STORE_PRIVATE_H
#define MT_POPSTORE_STORE_PRIVATE_H

#include "store-req.h"

#endif
