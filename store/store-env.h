/* store-env.h — the bottom layer of the store: the store object (struct
 * mt_store: its environment, databases, counters and the state of its
 * threads), the files of its home directory, the results of our own beside
 * Berkeley DB's, and the calls of the environment (store-env.c) and of a
 * full disk (store-space.c). Every other store header builds on it.
 * Trust boundary: as store.h; for the store*.c files only. */
#ifndef MT_STORE_ENV_H
#define MT_STORE_ENV_H

#include "store.h"
#include "bdb-checkpoint.h"
#include "bdb-commit.h"
#include "bdb-repl.h"
#include "bdb-repl-ack.h"

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

struct store_open_entry;

/* An abort the purger retries (store-purge.c). */
struct store_drop {
	struct store_drop *next;
	uint64_t body_id;
	uint32_t chunks;
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
	struct mt_bdb_commit *commit;	/* set under repl_lock */
	struct mt_bdb_commit_stats commit_final;	/* after the close */
	struct mt_series *commit_latency;	/* under repl_lock */

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

	/* Replication (store-repl.c); repl NULL: a store of one site. */
	struct mt_bdb_repl *repl;
	atomic_int repl_state;		/* enum store_repl_state */
	/* The group commit's acknowledgements (bdb-repl-ack.h), while
	 * serving as master; a batch without them: unreplicated (logged once
	 * until one has them again). */
	struct mt_bdb_repl_ack *ack;
	atomic_bool unreplicated;
	_Atomic(struct mt_series *) ack_latency;
	atomic_uint_fast64_t log_oldest_mtime;	/* Unix time; 0: not known */
	/* Becoming master, on the replication notifier thread (the
	 * lifecycle's phases after join). */
	enum mt_store_status (*promote)(struct mt_store *store, const char **error_r);
	pthread_mutex_t repl_lock;
	struct mt_store_repl_info repl_info;	/* under repl_lock */
	bool repl_started, repl_promote_pending;	/* under repl_lock */
	bool admin_replicated;		/* ADMIN mode on a replicated site */
	/* The settings' replication, the store's own copy. */
	struct mt_store_replication repl_set;
	char **repl_sites;
	time_t repl_archived;		/* the checkpointer's last log removal */
	unsigned int repl_connected_seen;	/* the checkpointer's last count */
	atomic_uint_fast64_t n_log_removed, n_unreplicated;

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

/* store-repl.c: one site of a replication group (see store.h). */
enum store_repl_state {
	STORE_REPL_JOINING,		/* no role yet */
	STORE_REPL_REPLICA,
	STORE_REPL_PROMOTING,		/* elected: opening, becoming master */
	STORE_REPL_SERVING,		/* master, serving */
	STORE_REPL_DEMOTED,		/* was master: must close */
	STORE_REPL_FAILED,		/* becoming master failed: must close */
};
/* Before the environment's open: the group from the settings, repmgr's
 * configuration; *flags_r the open flags replication adds. */
enum mt_store_status store_repl_configure(struct mt_store *store, u_int32_t *flags_r,
					  const char **error_r);
/* From the environment's event callback; false: not replication's. */
bool store_repl_event(struct mt_store *store, u_int32_t event, void *info);
/* Join the group (the lifecycle's join phase): repmgr started; returns
 * once this site is master or a replica (or join_ms passed). When the
 * site becomes master, now or later, store->promote runs on the
 * notifier thread. */
enum mt_store_status store_repl_join(struct mt_store *store, const char **error_r);
/* The checkpointer's second: the status for mt_store_repl_info_get, and
 * now and then the removal of log files past their retention. */
void store_repl_tick(struct mt_store *store);
/* Stop the notifier (no more promotions), before the threads stop. */
void store_repl_stop(struct mt_store *store);
/* After the environment's close. */
void store_repl_free(struct mt_store *store);
/* Whether the close must leave the databases open (store-env.c): a
 * replicated site that is not master (demoted, or never promoted) with
 * databases open. */
bool store_repl_keeps_handles(struct mt_store *store);
/* The group commit's replicate hook (lib-bdb/bdb-commit.h): after a
 * batch's flush, wait for a quorum of replicas to have flushed through
 * end; non-zero: the batch completes MT_STORE_TEMPFAIL. */
int store_repl_replicate(void *context, const DB_LSN *end);
/* Serving as master: the acknowledgements' state (before the group
 * commit starts), and its end (after the group commit stopped). */
void store_repl_serve(struct mt_store *store);
void store_repl_serve_stop(struct mt_store *store);
static inline bool store_repl_demoted(struct mt_store *store)
{
	int state = atomic_load(&store->repl_state);
	return store->repl != NULL && (state == STORE_REPL_DEMOTED || state == STORE_REPL_FAILED);
}

/* meta.db's format records (store-records.c), which the environment's
 * open, creation and upgrade read and write. New store: write them. */
int store_records_format_init(struct mt_store *store, DB_TXN *txn);
/* Rewrite the format-version record (the upgrades). */
int store_records_format_set(struct mt_store *store, DB_TXN *txn,
			     uint32_t version);
/* Existing store: check them (format version, chunk size). */
enum mt_store_status store_records_format_check(struct mt_store *store,
						const char **error_r);

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
static inline void store_counter_add(atomic_uint_fast64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

#endif
