/* store-records.h — the records layer: the keys and records of the
 * databases (format 5) and the transactions on them: mailboxes and messages
 * (store-records.c), delivery ids (store-dedupe.c), MIME structures
 * (store-structure.c), body chunks and references (store-chunks.c), the
 * purger's queue (store-purge.c), IMAP's keyword tables (store-flags.c).
 * Built on store-env.h; the mailbox and request layers build on it.
 * Trust boundary: as store.h; records read back are decoded with their
 * lengths checked (STORE_ERR_DAMAGED). */
#ifndef MT_STORE_RECORDS_H
#define MT_STORE_RECORDS_H

#include "store-env.h"

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

#endif
