/* store-private.h — what the store*.c files share and nothing else sees:
 * the store, request, port and mailbox structures, the on-disk layout
 * constants and the internal calls between the store's parts.
 *   store-env.c       the environment: open, recovery, databases, format
 *                     check and upgrade, checkpoints, close
 *   store-lifecycle.c open → join → become master → serve → close
 *   store-records.c   keys and records; the transactions themselves
 *   store-commit.c    the group-commit pipeline (executors + one flusher)
 *   store-purge.c     the purger: expunged messages' bodies, in the background
 *   store-async.c     requests (one shape: store_req_ops), completion ports,
 *                     the reader pool
 *   store-mailbox.c   open mailboxes: snapshot, in-use table, sync reads
 *   store-admin.c     stat and hot backup
 *   store-space.c     a full disk: region preallocation, reserve, no-space mode
 *   store-dedupe.c    delivery ids: a redelivered message is not stored twice
 *   store-body.c      streamed bodies: the handle, its chunk writes, deliver/abort
 *   store-chunks.c    their records: chunk and abort transactions, references,
 *                     body ids, the orphan sweep at open
 *   store-folders.c   IMAP's folders and subscriptions (format 5)
 *   store-flags.c     IMAP's flags, keywords and MODSEQs: STORE
 *   store-copy.c      IMAP's COPY and MOVE
 *   store-ops.c       the requests of those three: one transaction or query
 * Trust boundary: as store.h. */
#ifndef MT_POPSTORE_STORE_PRIVATE_H
#define MT_POPSTORE_STORE_PRIVATE_H

#include "store.h"
#include "bdb-checkpoint.h"
#include "bdb-commit.h"
#include "buf.h"

#include <db.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* On-disk layout, format version 5 (see store-records.c for the records).
 * The chunk size is written into meta.db at creation and read back at open,
 * so it could change without touching stored messages. */
#define STORE_META_DB "meta.db"
#define STORE_MAILBOX_DB "mailbox.db"
#define STORE_MESSAGE_DB "message.db"
#define STORE_BODY_DB "body.db"
/* Version 2: the bodies of expunged messages waiting for the purger. */
#define STORE_PURGE_DB "purge.db"
/* Version 3: the delivery ids each mailbox got (store-dedupe.c). */
#define STORE_DELIVERED_DB "delivered.db"
/* Version 4: references of the shared bodies of messages, and the bodies
 * being written (store-chunks.c). */
#define STORE_REFS_DB "refs.db"
#define STORE_PARTIAL_DB "partial.db"
/* Version 5: IMAP's subscriptions, keyword tables and expunged uids
 * (store-folders.c, store-flags.c). */
#define STORE_IMAP_DB "imap.db"
/* flock()ed by the serving process: one daemon per store. */
#define STORE_LOCK_FILE "popstore.lock"
/* Allocated space given back when a log flush hits a full disk, so that
 * what committed can still be made durable (store-space.c). */
#define STORE_RESERVE_FILE "popstore.reserve"
#define STORE_BODY_PAGESIZE 8192
/* Eight overflow pages' payload (page size minus Berkeley DB's 26-byte page
 * header), so a full chunk wastes no page. */
#define STORE_CHUNK_SIZE (8u * (STORE_BODY_PAGESIZE - 26u))

/* Results of our own, neither errno nor DB_* values: a transaction body's
 * "over quota", and a record that does not decode (a damaged store). */
#define STORE_ERR_QUOTA (-1000)
#define STORE_ERR_DAMAGED (-1001)
/* Folder changes: MT_STORE_EXISTS, _HAS_CHILDREN, _LIMIT, _IN_USE, _INVALID. */
#define STORE_ERR_EXISTS (-1002)
#define STORE_ERR_HAS_CHILDREN (-1003)
#define STORE_ERR_LIMIT (-1004)
#define STORE_ERR_IN_USE (-1005)
#define STORE_ERR_INVALID (-1006)
/* Attempts of a transaction that keeps losing deadlocks. */
#define STORE_TXN_ATTEMPTS 100

#define STORE_ERROR_MAX 256

/* A shared body's chunks are keyed in body.db as the pseudo message (body
 * id, uid 0): body ids have the top bit set, mailbox ids never (they count
 * from 1), and uids start at 1, so neither collides with a message's own
 * chunks (its prefix, or a whole pre-version-4 message). */
#define STORE_BODY_ID_BIT (UINT64_C(1) << 63)
/* message.db record flag: the message is a prefix of its own plus a shared
 * body (version 4); without it the message's chunks hold all of it. */
#define STORE_MSG_SHARED 0x1u
/* message.db record flag (version 5): MODSEQ u64 and keywords u64 follow
 * the record's other fields; the system flags are the flag word's bits
 * STORE_MSG_FLAGS_SHIFT and up. Without it: no flags, MODSEQ 1. */
#define STORE_MSG_IMAP 0x2u
#define STORE_MSG_FLAGS_SHIFT 8

/* mailbox.db record's attribute word (version 5). */
#define STORE_MBOX_USE_MASK 0xfu	/* enum mt_store_special_use */
#define STORE_MBOX_PREPARED 0x100u	/* INBOX: the first login's folders made */

/* imap.db keys begin with their kind. */
#define STORE_IMAP_SUBSCRIPTION 'S'	/* + user NUL name → nothing */
#define STORE_IMAP_KEYWORDS 'K'		/* + mailbox id u64 → names, NUL-ended */
#define STORE_IMAP_VANISHED 'V'		/* + id u64 + modseq u64 → uids u32 */
#define STORE_IMAP_STRUCTURE 'M'	/* + body id u64 → MIME structure record */

/* A mailbox.db key: the user's name for INBOX, user NUL folder else. */
#define STORE_MAILBOX_KEY_MAX (MT_STORE_MAILBOX_MAX + 1 + MT_STORE_FOLDER_MAX)

/* Where a message's bytes are (kept beside the public mt_store_msg). */
struct store_msg_loc {
	uint64_t body_id;	/* 0: all in the message's own chunks */
	uint32_t prefix_len;	/* bytes in its own chunks before the body */
};

/* A blocking caller's rendezvous with its request. */
struct store_waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

/* Where a request runs: the group commit (writes) or the reader pool. */
enum store_path { STORE_PATH_COMMIT, STORE_PATH_READ };

/* What a request does. Every request is one of these over the executors
 * (store-commit.c's group commit, store-async.c's reader pool), which know
 * no kinds: they call run, then (commit path) settle after the flush, and
 * store_req_free() calls free. The ops of each kind live beside the code
 * that makes its requests: store-async.c (deliver, expunge, open, read),
 * store-body.c (a chunk, an abort), store-ops.c (IMAP's change, query). */
struct store_req_ops {
	const char *name;
	enum store_path path;
	/* Commit path: completed as soon as run returns, without a log flush
	 * (a streamed body's chunk writes and aborts: store-body.c says why). */
	bool unflushed;
	/* On an executor or a reader thread: the work, its outcome in req
	 * (status, needs_flush, removed). */
	void (*run)(struct mt_store *store, struct mt_store_req *req);
	/* Commit path, on the flusher after the flush, before the completion:
	 * flush_ret is the flush's failure if req needed the flush (the
	 * request's error already says so), else 0. Counters, per-recipient
	 * results. May be NULL. */
	void (*settle)(struct mt_store *store, struct mt_store_req *req,
		       int flush_ret);
	/* What the request holds of its kind (not the request). May be NULL. */
	void (*free)(struct mt_store_req *req);
};

/* An operation of store-folders.c or store-flags.c, carried by a request
 * of store_req_change or store_req_query (store-ops.c), which frees it. */
struct store_op {
	/* Change: the body of one transaction, retried on deadlock; query:
	 * reads without one (txn NULL). 0, a DB/errno or STORE_ERR value. */
	int (*run)(struct mt_store *store, DB_TXN *txn, struct store_op *op);
	/* On the caller's thread, after an OK and before the callback: the
	 * result applied to the caller's objects (a snapshot). May be NULL. */
	void (*apply)(struct store_op *op);
	void (*free)(struct store_op *op);
	const char *what;		/* "creating folder" for errors */
	bool wrote;			/* run changed something: flush */
	unsigned int expunged;		/* messages it expunged: purge */
	struct mt_store_mailbox *mbox;	/* a reference, or NULL */
};

/* A body being written (store-body.c). Shared by its owner (until deliver
 * or abort) and its requests in flight; freed with the last reference. */
struct mt_store_body {
	struct mt_store *store;
	struct mt_store_port *port;	/* NULL: blocking appends */
	uint64_t id;
	atomic_uint refs;
	mt_store_body_cb_t *cb;
	void *context;
	/* Owner's thread only. */
	char *buf;			/* the chunk being filled */
	size_t len;
	uint64_t size;			/* appended */
	bool stopped;			/* a write failed: appends write nothing */
	uint32_t chunks;		/* full chunks handed to the store */
	unsigned int writes;		/* of those, callbacks not yet seen */
	bool finished;			/* delivered or aborted: no callbacks */
	struct mt_mime_scan *mime;	/* its MIME structure, as it arrives */
	/* Set at deliver (then read by the executors): the structure
	 * record (store-structure.c), written with the first reference. */
	struct mt_buf structure;
	/* Under lock: written by the executors. */
	pthread_mutex_t lock;
	unsigned int executing;		/* chunk writes not yet run */
	struct mt_store_req *parked;	/* deliver/abort waiting for them */
	enum mt_store_status status;	/* the first failed chunk write's */
	char error[STORE_ERROR_MAX];
};

struct mt_store_req {
	struct mt_store_req *next;
	const struct store_req_ops *ops;
	struct mt_store *store;
	struct mt_store_port *port;	/* NULL: waiter */
	struct store_waiter *waiter;
	mt_store_cb_t *cb;
	void *context;
	bool cancelled;			/* port thread only */
	bool refused;			/* completed at submission, not run */

	enum mt_store_status status;
	char error[STORE_ERROR_MAX];
	bool needs_flush;		/* committed something not yet durable */

	/* Deliver, chunk, abort: the body, and for a delivery its last partial
	 * chunk in body/body_size (for a chunk write the chunk). */
	struct mt_store_body *sbody;
	uint32_t chunk;			/* chunk: its index */
	/* Deliver */
	struct mt_store_rcpt *rcpts;
	unsigned int rcpt_count;
	char *body_owned;
	const char *body;
	size_t body_size;

	/* Open, read, expunge */
	char *name;
	char *folder;			/* open: an IMAP folder's name, or NULL */
	struct mt_store_mailbox *mbox;		/* a reference (read, expunge) */
	struct mt_store_mailbox *result;	/* open, until taken */
	uint32_t *uids;
	unsigned int uid_count;
	unsigned int removed;		/* messages it expunged: purge */
	unsigned int index;
	uint64_t offset;
	size_t max;
	char *data;
	size_t data_size;

	/* IMAP's change, query */
	struct store_op *op;
};

struct mt_store_port {
	struct mt_store *store;
	struct mt_loop *loop;
	pthread_mutex_t lock;
	struct mt_store_req *head, **tail;	/* finished, under lock */
	atomic_uint refs;		/* owner + requests in flight + a post */
	bool closed;			/* under lock */
};

struct store_open_entry;

/* An abort the purger retries (store-purge.c). */
struct store_drop {
	struct store_drop *next;
	uint64_t body_id;
	uint32_t chunks;
};

struct mt_store_mailbox {
	struct mt_store *store;
	atomic_uint refs;
	char *name;			/* the user's (INBOX) mailbox name */
	char *folder;			/* NULL: INBOX */
	unsigned char *key;		/* its mailbox.db key */
	size_t key_len;
	bool exists;
	uint64_t id;
	uint32_t uidvalidity, uidnext;
	uint64_t highest_modseq;
	char **keywords;		/* its keyword table, keyword_count names */
	unsigned int keyword_count;
	struct mt_store_msg *msgs;
	struct store_msg_loc *locs;	/* one per message */
	unsigned int count;
	uint64_t bytes;
	/* The in-use lock: released when the owner closes the mailbox with
	 * no expunge in flight, else with the last reference (a cancelled
	 * read still running does not keep the next session out; a commit
	 * still running does, as its changes are not in that session's view). */
	struct store_open_entry *_Atomic entry;
	atomic_uint writers;		/* expunge requests not yet freed */
};

/* A decoded mailbox record. A version 4 one (40 octets) reads with the
 * version 5 fields' defaults: HIGHESTMODSEQ 1, no \Seen or \Deleted. */
struct store_mailbox_rec {
	uint64_t id;
	uint32_t next_uid;
	uint32_t count;
	uint64_t bytes;
	uint32_t uidl_validity;		/* also IMAP's UIDVALIDITY */
	uint32_t attrs;			/* STORE_MBOX_* */
	uint64_t created;
	uint64_t highest_modseq;
	uint32_t seen, deleted;		/* messages with \Seen, \Deleted */
};

#define STORE_OPEN_BUCKETS 4096

struct mt_store {
	struct mt_store_settings set;
	char *home;
	DB_ENV *env;
	DB *meta, *mailboxes, *messages, *bodies;
	DB *purge;			/* NULL: a version 1 store (ADMIN mode) */
	DB *delivered;			/* NULL: a version 1 or 2 store (ADMIN mode) */
	DB *refs, *partial;		/* NULL: before version 4 (ADMIN mode) */
	DB *imap;			/* NULL: before version 5 (ADMIN mode) */
	/* The next shared body id (store-chunks.c); every id below it that
	 * has a partial.db record at open was a crash's. */
	atomic_uint_fast64_t next_body_id;
	uint32_t chunk_size;
	uint32_t format_version;	/* as found (1 before the upgrade) */
	atomic_bool failed;
	bool opening;			/* in DB_ENV->open (recovery) */
	int lock_fd;			/* STORE_LOCK_FILE, SERVE mode */

	/* Group commit (store-commit.c on lib-bdb/bdb-commit.h). */
	struct mt_bdb_commit *commit;
	struct mt_bdb_commit_stats commit_final;	/* after the close */

	/* The reader pool: lib-bdb's pipeline with read jobs only. */
	struct mt_bdb_commit *readers;

	/* The purger (store-purge.c): woken after flushed expunges. */
	pthread_t purger;
	bool purger_started;
	pthread_mutex_t purge_lock;
	pthread_cond_t purge_cond;
	bool purge_stop, purge_kicked;	/* under purge_lock */
	struct store_drop *drops;	/* under purge_lock: aborts to retry */
	/* The backlog: expunged messages whose own chunks wait in purge.db
	 * (its uid != 0 records), counted at open (before any request), up
	 * at each expunge's commit, down at each purge's; a purge may commit
	 * a moment before its expunge's count is added, so it may dip below
	 * 0 for that moment (read as 0). What purge.db held at open, for the
	 * purger's log line. */
	atomic_int_fast64_t purge_backlog;
	uint64_t purge_open_messages, purge_open_bytes;

	/* lib-bdb's checkpointer, with the store's tick (store-env.c). */
	struct mt_bdb_checkpointer *checkpointer;
	unsigned int expire_secs;	/* the checkpointer's, dedupe expiry */

	pthread_mutex_t open_lock;
	struct store_open_entry *open_table[STORE_OPEN_BUCKETS];
	unsigned int open_count;

	/* A full disk (store-space.c): writes are refused while no_space. */
	atomic_bool no_space;
	pthread_mutex_t space_lock;
	bool reserve_held;		/* under space_lock */
	uint64_t reserve_size;		/* the log buffer and some */
	/* Held shared by the reader threads, exclusively while the reserve's
	 * space is given to the log, so no page write can take it. */
	pthread_rwlock_t io_lock;
	/* Database files' blocks allocated ahead of their end (store-space.c),
	 * under space_lock. */
	int body_fd;
	uint64_t body_prealloc_end;
	atomic_uint_fast64_t probe_msecs;	/* last probe, CLOCK_MONOTONIC */
	/* The checkpoint at close failed (pages only in the cache): the
	 * environment is left for the next open's recovery, not closed. */
	bool unwritten;

	atomic_uint_fast64_t n_deliveries, n_delivery_requests, n_expunges,
		n_expunged, n_retries, n_reads, n_checkpoints, n_purged, n_purge_txns,
		n_chunk_writes, n_aborted, n_swept, n_duplicates, n_bytes_stored;
};

/* store-env.c */
/* Format a message into the thread's error buffer (valid until the thread's
 * next store call) and return it. */
const char *store_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Map a Berkeley DB/errno result to a status, noting a panic. */
enum mt_store_status store_status_from_db(struct mt_store *store, int ret);
/* db_strerror() that also knows STORE_ERR_*. */
const char *store_strerror(int ret);
/* Checkpoint now, or (log_kbytes > 0) only if that much log was written
 * since the last one. */
int store_checkpoint(struct mt_store *store, unsigned int log_kbytes);
/* The lifecycle's open (store-lifecycle.c): the home directory, the
 * serving process's lock, the environment (recovery) with every region
 * page backed. */
enum mt_store_status store_env_open(struct mt_store *store, const char **error_r);
/* The databases of an existing store, its format checked; nothing for a
 * new one. No writes. */
enum mt_store_status store_env_dbs_open(struct mt_store *store,
					const char **error_r);
/* Becoming master (SERVE mode): a new store's databases and format records,
 * or an older format's upgrade, each in one transaction. */
enum mt_store_status store_env_dbs_make(struct mt_store *store,
					const char **error_r);
/* Close the databases and the environment (or keep them, after a panic or
 * a failed last checkpoint: see store-env.c) and release the lock. */
void store_env_close(struct mt_store *store);

/* store-space.c */
/* Allocate the blocks of every region file up to the end of its mapping;
 * 0 or an errno value (message in *error_r). */
int store_space_prealloc_regions(struct mt_store *store, const char **error_r);
/* SERVE mode, after open: make the reserve (or start in no-space mode). */
void store_space_open(struct mt_store *store);
/* A write failed for lack of space (ret ENOSPC/EDQUOT; anything else is
 * ignored): enter no-space mode. True if ret was such a failure. */
bool store_space_failed(struct mt_store *store, int ret, const char *where);
static inline bool store_space_full(struct mt_store *store)
{
	return atomic_load(&store->no_space);
}
/* Blocks for the database files ahead of their ends: at open over the
 * whole files (all = true), then every second; and before a delivery of
 * bytes, for body.db. 0 or an errno value; ENOSPC/EDQUOT enter no-space
 * mode. */
int store_space_headroom(struct mt_store *store, bool all);
int store_space_ensure(struct mt_store *store, uint64_t bytes);
/* After a log flush failed for lack of space: once no transaction runs
 * (none starts in no-space mode) and no reader, give the reserve back and
 * flush again, *ret_r its result. False if the reserve was not held. */
bool store_space_flush_reserved(struct mt_store *store, int *ret_r);
/* In no-space mode, every second (checkpoint thread): reserve, log flush
 * and checkpoint; when all succeed, writes are accepted again. */
void store_space_probe(struct mt_store *store);
/* For a write about to run (commit thread): true unless in no-space mode
 * and a probe (at most every few hundred ms) does not end it. */
bool store_space_writable(struct mt_store *store);

/* store-records.c */
/* Queue the chunks of (key: id u64 + uid u32) for the purger, size bytes
 * of them. */
int store_records_purge_queue(struct mt_store *store, DB_TXN *txn,
			      const unsigned char *key, uint64_t size);
/* Run body(txn, context) in a transaction, retrying deadlocks; commit with
 * commit_flags (DB_TXN_NOSYNC on the group-commit path). 0, a DB/errno
 * value or STORE_ERR_QUOTA. */
int store_txn_run(struct mt_store *store,
		  int (*body)(struct mt_store *, DB_TXN *, void *),
		  void *context, uint32_t commit_flags);
/* Deliver req's recipients, each in its own NOSYNC transaction. */
void store_records_deliver(struct mt_store *store, struct mt_store_req *req);
/* Expunge req->uids from req->mbox in one NOSYNC transaction. */
void store_records_expunge(struct mt_store *store, struct mt_store_req *req);
/* Delete up to max queued entries (at most max_bytes, at least one
 * chunk) and their purge.db records in one transaction; *done_r the
 * entries deleted or shortened (0: the queue is empty), *messages_r the
 * messages among those deleted, *bytes_r the bytes. 0 or a DB/errno value. */
int store_records_purge(struct mt_store *store, unsigned int max,
			uint64_t max_bytes, uint32_t commit_flags,
			unsigned int *done_r, unsigned int *messages_r,
			uint64_t *bytes_r);
/* Count purge.db: the backlog of messages (bodies queued count only in
 * bytes; 0 without purge.db). */
int store_records_purge_totals(struct mt_store *store, uint64_t *messages_r,
			       uint64_t *bytes_r);
/* Fill mbox (name set) from the mailbox record and its message records. */
int store_records_load(struct mt_store *store, struct mt_store_mailbox *mbox);
/* Read [offset, offset + max) of msg (its bytes at loc) into buf;
 * *size_r the bytes read. */
int store_records_read(struct mt_store *store, uint64_t mailbox_id,
		       const struct mt_store_msg *msg,
		       const struct store_msg_loc *loc, uint64_t offset,
		       void *buf, size_t max, size_t *size_r);
/* New store: write the format records. Existing: check them. */
int store_records_format_init(struct mt_store *store, DB_TXN *txn);
/* Rewrite the format-version record (the upgrades). */
int store_records_format_set(struct mt_store *store, DB_TXN *txn,
			     uint32_t version);
enum mt_store_status store_records_format_check(struct mt_store *store,
						const char **error_r);
/* Sum every mailbox record. */
int store_records_totals(struct mt_store *store, uint64_t *mailboxes_r,
			 uint64_t *messages_r, uint64_t *bytes_r);
/* The bytes of all of user's mailboxes (the quota's), rec being the one
 * at key, read in the caller's transaction (and maybe changed in it). */
int store_records_user_bytes(struct mt_store *store, DB_TXN *txn,
			     const char *user, const unsigned char *key,
			     size_t key_len, const struct store_mailbox_rec *rec,
			     uint64_t *bytes_r);
/* Walk db's records from prefix on while their keys begin with it, each
 * (its first 256 octets) given to visit with the cursor on it (which may
 * delete it); a non-zero return ends the walk with that result. flags:
 * DB_RMW. Keys up to STORE_MAILBOX_KEY_MAX + 64 octets. */
int store_records_walk(DB *db, DB_TXN *txn, const unsigned char *prefix,
		       size_t prefix_len, u_int32_t flags,
		       int (*visit)(DBC *cursor, const DBT *key, const DBT *data,
				    void *context),
		       void *context);
/* mailbox.db key of user's mailbox folder (NULL or "INBOX": the INBOX
 * record) into key (STORE_MAILBOX_KEY_MAX); its length. */
size_t store_mailbox_key(unsigned char *key, const char *user,
			 const char *folder);
/* The mailbox record at key; DB_NOTFOUND if absent. flags: DB_RMW. */
int store_mailbox_get(struct mt_store *store, DB_TXN *txn,
		      const unsigned char *key, size_t key_len,
		      struct store_mailbox_rec *rec, u_int32_t flags);
int store_mailbox_put(struct mt_store *store, DB_TXN *txn,
		      const unsigned char *key, size_t key_len,
		      const struct store_mailbox_rec *rec);
int store_mailbox_rec_decode(const DBT *data, struct store_mailbox_rec *rec);
/* A new mailbox record: the next mailbox id, UIDVALIDITY uidvalidity. */
int store_mailbox_new(struct mt_store *store, DB_TXN *txn, uint64_t now,
		      uint32_t uidvalidity, struct store_mailbox_rec *rec);
/* A UIDVALIDITY never handed out before in this store (meta.db's
 * counter): at least now. */
int store_uidvalidity_next(struct mt_store *store, DB_TXN *txn, uint64_t now,
			   uint32_t *uidvalidity_r);
/* message.db record of (id, uid), decoded; DB_NOTFOUND if absent. */
int store_message_get(struct mt_store *store, DB_TXN *txn, uint64_t id,
		      uint32_t uid, struct mt_store_msg *msg,
		      struct store_msg_loc *loc, u_int32_t flags);
int store_message_put(struct mt_store *store, DB_TXN *txn, uint64_t id,
		      const struct mt_store_msg *msg,
		      const struct store_msg_loc *loc, u_int32_t flags);
/* Expunge uid of mailbox id (rec updated: counts, bytes; not written):
 * its record gone, its chunks queued, its body unreferenced. */
int store_records_expunge_one(struct mt_store *store, DB_TXN *txn,
			      struct store_mailbox_rec *rec, uint32_t uid);
/* After expunging uids (count of them) in rec's mailbox: the next MODSEQ
 * in rec and their VANISHED record under it (version 5). */
int store_records_vanished(struct mt_store *store, DB_TXN *txn,
			   struct store_mailbox_rec *rec, const uint32_t *uids,
			   unsigned int count);

/* store-dedupe.c */
/* In a delivery's transaction: 0 and *uid_r if rcpt's delivery id is
 * remembered for its mailbox (write-locked), DB_NOTFOUND if not (or it has
 * no id), or a DB/STORE_ERR value. */
int store_dedupe_lookup(struct mt_store *store, DB_TXN *txn,
			const struct mt_store_rcpt *rcpt, uint64_t now,
			uint32_t *uid_r);
/* In the same transaction, after the copy was stored: remember the id. */
int store_dedupe_record(struct mt_store *store, DB_TXN *txn,
			const struct mt_store_rcpt *rcpt, uint64_t now,
			uint32_t uid);
/* Checkpoint thread, every second (*secs its counter): every
 * EXPIRE_EVERY_SECS remove the ids older than the window. */
void store_dedupe_expire(struct mt_store *store, unsigned int *secs);

/* store-structure.c */
/* In the transaction of a body's first reference: its structure record
 * (len 0: none). */
int store_structure_put(struct mt_store *store, DB_TXN *txn, uint64_t body_id,
			const void *record, size_t len);
/* With the body's last reference: its record goes too. */
int store_structure_del(struct mt_store *store, DB_TXN *txn, uint64_t body_id);

/* store-chunks.c */
/* Put one chunk of the object (id, uid): a message's own chunks, or a
 * shared body's (body id, 0). */
int store_chunk_put(struct mt_store *store, DB_TXN *txn, uint64_t id,
		    uint32_t uid, uint32_t chunk, const void *data, size_t len);
/* A streamed body's full chunk and its partial.db record, in one NOSYNC
 * transaction. 0 or a DB/errno value. */
int store_chunks_write(struct mt_store *store, uint64_t body_id,
		       uint32_t chunk, const void *data, size_t len);
/* In a delivery's transaction, one more message references the body. The
 * first (first true) also writes the last partial chunk (tail, after
 * chunks full ones; none if empty), removes the partial.db record and
 * creates the reference; size is the body's. */
int store_chunks_ref(struct mt_store *store, DB_TXN *txn, uint64_t body_id,
		     bool first, uint32_t chunks, const void *tail,
		     size_t tail_len, uint64_t size);
/* In an expunge's transaction: one reference less; the last queues the
 * body for the purger. */
int store_chunks_unref(struct mt_store *store, DB_TXN *txn, uint64_t body_id);
/* A body that no message references: its partial.db record removed and
 * its chunks full chunks queued for the purger, one NOSYNC transaction. */
int store_chunks_abort(struct mt_store *store, uint64_t body_id,
		       uint32_t chunks);
/* SERVE mode, at open before any delivery: set next_body_id past every
 * body id in use, and queue every body still in partial.db (its writer
 * died) for the purger. */
enum mt_store_status store_chunks_open(struct mt_store *store,
				       const char **error_r);
/* Bodies in partial.db and the bytes of their chunks (0 before version 4). */
int store_chunks_partial_totals(struct mt_store *store, uint64_t *bodies_r,
				uint64_t *bytes_r);

/* store-body.c */
/* Commit thread: no message holds body (aborted, or no recipient took
 * it): queue what was written for the purger. */
void store_body_drop(struct mt_store *store, struct mt_store_body *body);
/* A request that held a reference to its body is freed. */
void store_body_unref(struct mt_store_body *body);

/* store-commit.c */
bool store_commit_start(struct mt_store *store, const char **error_r);
void store_commit_stop(struct mt_store *store);
/* Any thread: queue a request of the commit path (as its ops say). */
void store_commit_submit(struct mt_store *store, struct mt_store_req *req);
/* Deliveries and expunges submitted and not yet committed. */
unsigned int store_commit_executing(struct mt_store *store);
/* The group commit's counters (flushes, requests per flush). */
void store_commit_counters(struct mt_store *store, struct mt_store_counters *c);

/* store-purge.c */
void store_purge_init(struct mt_store *store);
void store_purge_deinit(struct mt_store *store);
/* Becoming master, before any request can expunge: count the backlog
 * (one scan of what a crash or the last close left; the purger then
 * deletes it at once). */
void store_purge_count(struct mt_store *store);
bool store_purge_start(struct mt_store *store, const char **error_r);
/* Ends after the batch in progress; the rest waits for the next open. */
void store_purge_stop(struct mt_store *store);
/* Expunges were made durable: purge their bodies soon. */
void store_purge_kick(struct mt_store *store);
/* n expunged messages were committed (their purge.db records with them). */
void store_purge_backlog_add(struct mt_store *store, unsigned int n);
/* A body's abort could not run now (a full disk, a failure): the purger
 * retries it before its next round. */
void store_purge_drop_retry(struct mt_store *store, uint64_t body_id,
			    uint32_t chunks);

/* store-flags.c */
/* Load the keyword table of mailbox id into mbox (no transaction). */
int store_flags_load_keywords(struct mt_store *store,
			      struct mt_store_mailbox *mbox);
/* names (keywords) as a set of indexes into mailbox id's table, new ones
 * added to it (STORE_ERR_LIMIT when it is full). */
int store_flags_keywords_map(struct mt_store *store, DB_TXN *txn, uint64_t id,
			     const char *const *names, unsigned int count,
			     uint64_t *set_r);
/* Mailbox id's table into names (MT_STORE_KEYWORDS_MAX, the caller frees
 * each), *count_r. */
int store_flags_keywords_names(struct mt_store *store, DB_TXN *txn, uint64_t id,
			       char **names, unsigned int *count_r);
/* Delete every imap.db record of mailbox id (kind K and V). */
int store_flags_drop_mailbox(struct mt_store *store, DB_TXN *txn, uint64_t id);

/* store-ops.c */
/* The requests that carry a store_op: a change (one transaction, commit
 * path) and a query (reads, reader pool). */
extern const struct store_req_ops store_req_change, store_req_query;
/* A request of ops for op (taken); submitted on its path, or waited for. */
struct mt_store_req *store_ops_submit(struct mt_store *store,
				      struct mt_store_port *port,
				      const struct store_req_ops *ops,
				      struct store_op *op, mt_store_cb_t *cb,
				      void *context);
/* A request refused with MT_STORE_INVALID and error: its callback runs
 * as for any other (bad arguments found before an op was made). */
struct mt_store_req *store_ops_refuse(struct mt_store_port *port,
				      const struct store_req_ops *ops,
				      const char *error, mt_store_cb_t *cb,
				      void *context);
/* Blocking: the finished request (applied if OK), for the caller to read
 * and free (store_req_free). */
struct mt_store_req *store_ops_wait(struct mt_store *store,
				    const struct store_req_ops *ops,
				    struct store_op *op);
/* On the completing thread: the op's apply (port thread, or waiter). */
void store_ops_apply(struct mt_store_req *req);

/* store-async.c */
struct mt_store_req *store_req_new(struct mt_store *store,
				   const struct store_req_ops *ops,
				   struct mt_store_port *port, mt_store_cb_t *cb,
				   void *context);
void store_req_free(struct mt_store_req *req);
/* Hand a finished request back to its port or waiter, or free it if it
 * has neither (any thread). */
void store_req_complete(struct mt_store_req *req);
/* Queue req on its ops' path, or complete it at once when refused, or when
 * the store cannot take it (ADMIN mode, failed). */
struct mt_store_req *store_req_submit(struct mt_store_req *req);
/* Submit from a blocking caller and wait for the completion. */
void store_req_wait(struct mt_store_req *req);
/* A DELIVER request for rcpts (copied and checked; refused if none is
 * valid), its body still to be set. */
struct mt_store_req *store_deliver_new(struct mt_store *store,
				       struct mt_store_port *port,
				       const struct mt_store_rcpt *rcpts,
				       unsigned int count, mt_store_cb_t *cb,
				       void *context);
void store_req_set_error(struct mt_store_req *req, enum mt_store_status status,
			 const char *error);
bool store_readers_start(struct mt_store *store, const char **error_r);
void store_readers_stop(struct mt_store *store);

/* store-mailbox.c */
void store_mailbox_table_init(struct mt_store *store);
void store_mailbox_table_deinit(struct mt_store *store);
/* Take the in-use lock and load the snapshot (any thread). */
enum mt_store_status store_mailbox_open(struct mt_store *store, const char *name,
					struct mt_store_mailbox **mbox_r,
					const char **error_r);
/* The same for user's folder (NULL: INBOX), exclusive (POP3: IN_USE if
 * another exclusive open holds it) or shared (IMAP: never IN_USE);
 * NOT_FOUND if a folder is not there (INBOX opens empty). */
enum mt_store_status store_folder_open(struct mt_store *store, const char *user,
				       const char *folder, bool exclusive,
				       struct mt_store_mailbox **mbox_r,
				       const char **error_r);
/* True while the mailbox at key (or, prefix true, any whose key begins
 * with it) is open in the process (the folder changes refuse it). */
bool store_mailbox_in_use(struct mt_store *store, const unsigned char *key,
			  size_t key_len, bool prefix);
struct mt_store_mailbox *store_mailbox_ref(struct mt_store_mailbox *mbox);
void store_mailbox_unref(struct mt_store_mailbox **mbox_p);
/* An expunge request holding mbox starts (add) or is freed. */
void store_mailbox_writer(struct mt_store_mailbox *mbox, bool add);

/* DBTs: input bytes, or a caller's buffer to be filled. */
static inline void store_dbt_in(DBT *dbt, const void *data, size_t size)
{
	memset(dbt, 0, sizeof(*dbt));
	dbt->data = (void *)data;
	dbt->size = (u_int32_t)size;
}

static inline void store_dbt_out(DBT *dbt, void *buf, size_t cap)
{
	memset(dbt, 0, sizeof(*dbt));
	dbt->data = buf;
	dbt->ulen = (u_int32_t)cap;
	dbt->flags = DB_DBT_USERMEM;
}

static inline bool store_retryable(int ret)
{
	return ret == DB_LOCK_DEADLOCK || ret == DB_LOCK_NOTGRANTED;
}

/* Big-endian encoding of keys and records. */
static inline void store_put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

static inline void store_put_be64(unsigned char *p, uint64_t v)
{
	store_put_be32(p, (uint32_t)(v >> 32));
	store_put_be32(p + 4, (uint32_t)v);
}

static inline uint32_t store_get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		(uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t store_get_be64(const unsigned char *p)
{
	return (uint64_t)store_get_be32(p) << 32 | store_get_be32(p + 4);
}

#define STORE_MESSAGE_KEY_SIZE 12
#define STORE_BODY_KEY_SIZE 16

/* message.db and purge.db: id u64 + uid u32. */
static inline void store_message_key(unsigned char *key, uint64_t id, uint32_t uid)
{
	store_put_be64(key, id);
	store_put_be32(key + 8, uid);
}

/* body.db: id u64 + uid u32 + chunk u32. */
static inline void store_body_key(unsigned char *key, uint64_t id, uint32_t uid,
				  uint32_t chunk)
{
	store_message_key(key, id, uid);
	store_put_be32(key + 12, chunk);
}

static inline void store_counter_add(atomic_uint_fast64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

#endif
