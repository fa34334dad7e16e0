/* store-records.c — the store's on-disk records (format version 5) and the
 * transactions over them: deliver, expunge, purge queued chunks, load a
 * mailbox's snapshot, read a message range, and the format records. The
 * records of shared bodies themselves are in store-chunks.c, IMAP's
 * folders and flags in store-folders.c and store-flags.c.
 *
 * Layout (all integers big-endian, so the default byte-wise Btree order is
 * numeric order and one mailbox's records sit together):
 *   meta.db     "format-version" → u32 5; "chunk-size" → u32;
 *               "next-mailbox-id" → u64; "created" → u64 Unix time;
 *               "last-uidvalidity" → u32 (version 5, store_uidvalidity_next)
 *   mailbox.db  mailbox key → id u64, next_uid u32, count u32, bytes u64,
 *               uidl_validity u32, attrs u32, created u64 (40 bytes, all a
 *               version 4 record has), highest_modseq u64, seen u32,
 *               deleted u32 (56 bytes); the key is the directory's mailbox
 *               name for INBOX, name NUL folder for an IMAP folder
 *   message.db  id u64 + uid u32 → size u64, arrival u64, flags u32,
 *               uidl_len u8, uidl, and with flag STORE_MSG_SHARED (every
 *               message delivered by version 4 or later) body id u64,
 *               prefix_len u32, and with STORE_MSG_IMAP (version 5) modseq
 *               u64, keywords u64; the flag word's bits 8-12 are the
 *               system flags          (the STAT/LIST/UIDL and FLAGS data)
 *   body.db     id u64 + uid u32 + chunk u32 → chunk_size bytes (the last
 *               chunk shorter; none for an empty one) of the message's
 *               own bytes: its prefix (Return-Path:/Received:) if shared,
 *               else all of it (a message stored before version 4); and
 *               the shared bodies' chunks (store-chunks.c)
 *   purge.db    id u64 + uid u32 → size u64, flags u32 (0): the chunks of
 *               expunged messages (and of shared bodies, uid 0) not yet
 *               deleted (version 2; an older store is upgraded at open by
 *               creating it, store-env.c)
 *   delivered.db  delivery id + NUL + mailbox name → time u64, uid u32:
 *               the ids of recent deliveries (version 3, store-dedupe.c)
 *   refs.db, partial.db  the shared bodies' references and the bodies
 *               being written (version 4, store-chunks.c)
 *   imap.db     subscriptions, keyword tables, expunged uids by MODSEQ
 *               (version 5, store-folders.c, store-flags.c)
 * A version 4 store is upgraded by creating imap.db: its records read as
 * version 5 ones with defaults and are rewritten as such when they change.
 *
 * A delivery is one body shared by its recipients: each recipient's
 * transaction writes its message record, its prefix and one reference to
 * the body; the first also writes the body's last partial chunk (the full
 * ones were written as the message arrived, store-body.c).
 *
 * Lazy expunge. Deleting a body makes Berkeley DB log every deleted page
 * for undo (~24 KB of log for a 24 KB message), and the POP3 QUIT that
 * waited for that log to be durable was most of a session's time. So the
 * expunge transaction (QUIT's, durable before +OK) only deletes the message
 * records, updates the mailbox record, queues each message's own chunks in
 * purge.db and releases its body's reference (the last one queues the
 * body too) —
 * small log records; from its commit on, the message is in no listing and
 * reads of it answer NOT_FOUND. The purger (store-purge.c, a store thread)
 * later deletes bodies and their purge.db records together in batched
 * NOSYNC transactions that the next group-commit flush, checkpoint or full
 * log buffer makes durable; after a crash purge.db still lists whatever
 * was not, and the purge resumes: no orphaned body, no resurrected message.
 * A mailbox's bytes (and so its quota) drop at the expunge; the store's
 * disk space is reusable once the body is purged (`store stat` shows the
 * backlog as purge_messages/purge_bytes).
 *
 * Trust boundary: mailbox names and message bytes are the caller's (from
 * LMTP clients via the directory), stored as given. Records read back are
 * length-checked before they are decoded.
 *
 * Guarantees: each delivery (one recipient) and each expunge is one
 * transaction, retried when it loses a deadlock, so a mailbox's counters
 * always match its messages and a body's reference count its messages.
 * Quota is checked inside the transaction. */
#include "store-req.h"
#include "alloc.h"
#include "log.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAILBOX_REC_SIZE_V4 40
#define MAILBOX_REC_SIZE 56
#define MESSAGE_REC_FIXED 21
/* After the UIDL, with STORE_MSG_SHARED: body id u64, prefix length u32. */
#define MESSAGE_REC_SHARED 12
/* After those, with STORE_MSG_IMAP: MODSEQ u64, keywords u64. */
#define MESSAGE_REC_IMAP 16
#define MESSAGE_REC_MAX (MESSAGE_REC_FIXED + MT_STORE_UIDL_MAX + \
			 MESSAGE_REC_SHARED + MESSAGE_REC_IMAP)
#define PURGE_REC_SIZE 12

static const char META_FORMAT[] = "format-version";
static const char META_CHUNK[] = "chunk-size";
static const char META_NEXT_ID[] = "next-mailbox-id";
static const char META_CREATED[] = "created";
static const char META_UIDVALIDITY[] = "last-uidvalidity";

static void mailbox_rec_encode(const struct store_mailbox_rec *rec,
			       unsigned char *p)
{
	store_put_be64(p, rec->id);
	store_put_be32(p + 8, rec->next_uid);
	store_put_be32(p + 12, rec->count);
	store_put_be64(p + 16, rec->bytes);
	store_put_be32(p + 24, rec->uidl_validity);
	store_put_be32(p + 28, rec->attrs);
	store_put_be64(p + 32, rec->created);
	store_put_be64(p + 40, rec->highest_modseq);
	store_put_be32(p + 48, rec->seen);
	store_put_be32(p + 52, rec->deleted);
}

int store_mailbox_rec_decode(const DBT *data, struct store_mailbox_rec *rec)
{
	const unsigned char *p = data->data;
	if (data->size < MAILBOX_REC_SIZE_V4)
		return STORE_ERR_DAMAGED;
	rec->id = store_get_be64(p);
	rec->next_uid = store_get_be32(p + 8);
	rec->count = store_get_be32(p + 12);
	rec->bytes = store_get_be64(p + 16);
	rec->uidl_validity = store_get_be32(p + 24);
	rec->attrs = store_get_be32(p + 28);
	rec->created = store_get_be64(p + 32);
	rec->highest_modseq = 1;
	rec->seen = rec->deleted = 0;
	if (data->size >= MAILBOX_REC_SIZE) {
		rec->highest_modseq = store_get_be64(p + 40);
		rec->seen = store_get_be32(p + 48);
		rec->deleted = store_get_be32(p + 52);
		if (rec->highest_modseq == 0 || rec->seen > rec->count ||
		    rec->deleted > rec->count)
			return STORE_ERR_DAMAGED;
	}
	return 0;
}

static size_t message_rec_encode(const struct mt_store_msg *msg,
				 const struct store_msg_loc *loc, unsigned char *p)
{
	size_t uidl_len = strlen(msg->uidl);
	store_put_be64(p, msg->size);
	store_put_be64(p + 8, (uint64_t)msg->arrival);
	uint32_t flags = STORE_MSG_IMAP |
		(msg->flags & MT_STORE_FLAGS_ALL) << STORE_MSG_FLAGS_SHIFT;
	if (loc->body_id != 0)
		flags |= STORE_MSG_SHARED;
	store_put_be32(p + 16, flags);
	p[20] = (unsigned char)uidl_len;
	memcpy(p + MESSAGE_REC_FIXED, msg->uidl, uidl_len);
	size_t end = MESSAGE_REC_FIXED + uidl_len;
	if (loc->body_id != 0) {
		store_put_be64(p + end, loc->body_id);
		store_put_be32(p + end + 8, loc->prefix_len);
		end += MESSAGE_REC_SHARED;
	}
	store_put_be64(p + end, msg->modseq);
	store_put_be64(p + end + 8, msg->keywords);
	return end + MESSAGE_REC_IMAP;
}

static int message_rec_decode(const DBT *data, struct mt_store_msg *msg,
			      struct store_msg_loc *loc)
{
	const unsigned char *p = data->data;
	if (data->size < MESSAGE_REC_FIXED || p[20] == 0 ||
	    p[20] > MT_STORE_UIDL_MAX || data->size < MESSAGE_REC_FIXED + (u_int32_t)p[20])
		return STORE_ERR_DAMAGED;
	size_t end = MESSAGE_REC_FIXED + p[20];
	const uint32_t flags = store_get_be32(p + 16);
	msg->size = store_get_be64(p);
	msg->arrival = (int64_t)store_get_be64(p + 8);
	memcpy(msg->uidl, p + MESSAGE_REC_FIXED, p[20]);
	msg->uidl[p[20]] = '\0';
	*loc = (struct store_msg_loc){ 0, 0 };
	if ((flags & STORE_MSG_SHARED) != 0) {
		if (data->size < end + MESSAGE_REC_SHARED)
			return STORE_ERR_DAMAGED;
		loc->body_id = store_get_be64(p + end);
		loc->prefix_len = store_get_be32(p + end + 8);
		if ((loc->body_id & STORE_BODY_ID_BIT) == 0 ||
		    loc->prefix_len > msg->size)
			return STORE_ERR_DAMAGED;
		end += MESSAGE_REC_SHARED;
	}
	msg->flags = 0;
	msg->keywords = 0;
	msg->modseq = 1;
	if ((flags & STORE_MSG_IMAP) != 0) {
		if (data->size < end + MESSAGE_REC_IMAP)
			return STORE_ERR_DAMAGED;
		msg->flags = flags >> STORE_MSG_FLAGS_SHIFT & MT_STORE_FLAGS_ALL;
		msg->modseq = store_get_be64(p + end);
		msg->keywords = store_get_be64(p + end + 8);
		if (msg->modseq == 0)
			return STORE_ERR_DAMAGED;
	}
	return 0;
}

int store_message_get(struct mt_store *store, DB_TXN *txn, uint64_t id,
		      uint32_t uid, struct mt_store_msg *msg,
		      struct store_msg_loc *loc, u_int32_t flags)
{
	unsigned char kbuf[STORE_MESSAGE_KEY_SIZE], vbuf[MESSAGE_REC_MAX + 64];
	DBT key, data;
	store_message_key(kbuf, id, uid);
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	store_dbt_out(&data, vbuf, sizeof(vbuf));
	int ret = store->messages->get(store->messages, txn, &key, &data, flags);
	if (ret == 0)
		ret = message_rec_decode(&data, msg, loc);
	if (ret == 0)
		msg->uid = uid;
	return ret;
}

int store_message_put(struct mt_store *store, DB_TXN *txn, uint64_t id,
		      const struct mt_store_msg *msg,
		      const struct store_msg_loc *loc, u_int32_t flags)
{
	unsigned char kbuf[STORE_MESSAGE_KEY_SIZE], vbuf[MESSAGE_REC_MAX];
	DBT key, data;
	store_message_key(kbuf, id, msg->uid);
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	store_dbt_in(&data, vbuf, message_rec_encode(msg, loc, vbuf));
	return store->messages->put(store->messages, txn, &key, &data, flags);
}

int store_txn_run(struct mt_store *store,
		  int (*body)(struct mt_store *, DB_TXN *, void *),
		  void *context, uint32_t commit_flags)
{
	for (unsigned int attempt = 1;; attempt++) {
		DB_TXN *txn;
		int ret = store->env->txn_begin(store->env, NULL, &txn, 0);
		if (ret != 0)
			return ret;
		ret = body(store, txn, context);
		if (ret == 0)
			return txn->commit(txn, commit_flags);
		(void)txn->abort(txn);
		/* A demoted master's deadlocks are replication's way of
		 * aborting what runs (HA.md 2.5): no retry. */
		if (!store_retryable(ret) || attempt >= STORE_TXN_ATTEMPTS ||
		    store_repl_demoted(store))
			return ret;
		store_counter_add(&store->n_retries, 1);
		sched_yield();
	}
}

size_t store_mailbox_key(unsigned char *key, const char *user,
			 const char *folder)
{
	size_t len = strlen(user);
	memcpy(key, user, len);
	if (folder != NULL && strcmp(folder, "INBOX") != 0) {
		size_t flen = strlen(folder);
		key[len++] = '\0';
		memcpy(key + len, folder, flen);
		len += flen;
	}
	return len;
}

int store_mailbox_get(struct mt_store *store, DB_TXN *txn,
		      const unsigned char *kbuf, size_t key_len,
		      struct store_mailbox_rec *rec, u_int32_t flags)
{
	unsigned char buf[MAILBOX_REC_SIZE + 64];
	DBT key, data;
	store_dbt_in(&key, kbuf, key_len);
	store_dbt_out(&data, buf, sizeof(buf));
	int ret = store->mailboxes->get(store->mailboxes, txn, &key, &data, flags);
	return ret != 0 ? ret : store_mailbox_rec_decode(&data, rec);
}

int store_mailbox_put(struct mt_store *store, DB_TXN *txn,
		      const unsigned char *kbuf, size_t key_len,
		      const struct store_mailbox_rec *rec)
{
	unsigned char buf[MAILBOX_REC_SIZE];
	DBT key, data;
	mailbox_rec_encode(rec, buf);
	store_dbt_in(&key, kbuf, key_len);
	store_dbt_in(&data, buf, sizeof(buf));
	return store->mailboxes->put(store->mailboxes, txn, &key, &data, 0);
}

static int mailbox_get(struct mt_store *store, DB_TXN *txn, const char *name,
		       struct store_mailbox_rec *rec, u_int32_t flags)
{
	return store_mailbox_get(store, txn, (const unsigned char *)name,
				 strlen(name), rec, flags);
}

int store_uidvalidity_next(struct mt_store *store, DB_TXN *txn, uint64_t now,
			   uint32_t *uidvalidity_r)
{
	unsigned char buf[4];
	DBT key, data;
	store_dbt_in(&key, META_UIDVALIDITY, sizeof(META_UIDVALIDITY) - 1);
	store_dbt_out(&data, buf, sizeof(buf));
	int ret = store->meta->get(store->meta, txn, &key, &data, DB_RMW);
	uint32_t last = 0;
	if (ret == 0 && data.size != 4)
		return STORE_ERR_DAMAGED;
	if (ret == 0)
		last = store_get_be32(buf);
	else if (ret != DB_NOTFOUND)
		return ret;
	uint32_t next = (uint32_t)now > last ? (uint32_t)now : last + 1;
	if (next == 0)
		next = 1;	/* UIDVALIDITY is nz-number */
	store_put_be32(buf, next);
	store_dbt_in(&data, buf, sizeof(buf));
	if ((ret = store->meta->put(store->meta, txn, &key, &data, 0)) != 0)
		return ret;
	*uidvalidity_r = next;
	return 0;
}

/* A new mailbox record with the next mailbox id (meta.db's counter). */
int store_mailbox_new(struct mt_store *store, DB_TXN *txn, uint64_t now,
		      uint32_t uidvalidity, struct store_mailbox_rec *rec)
{
	unsigned char buf[8];
	DBT key, data;
	store_dbt_in(&key, META_NEXT_ID, sizeof(META_NEXT_ID) - 1);
	store_dbt_out(&data, buf, sizeof(buf));
	int ret = store->meta->get(store->meta, txn, &key, &data, DB_RMW);
	if (ret != 0)
		return ret;
	if (data.size != 8)
		return STORE_ERR_DAMAGED;
	uint64_t id = store_get_be64(buf);
	store_put_be64(buf, id + 1);
	store_dbt_in(&data, buf, sizeof(buf));
	if ((ret = store->meta->put(store->meta, txn, &key, &data, 0)) != 0)
		return ret;
	*rec = (struct store_mailbox_rec){
		.id = id, .next_uid = 1, .uidl_validity = uidvalidity,
		.created = now, .highest_modseq = 1,
	};
	return 0;
}

/* Write len bytes as the chunks of the object (id, uid), from chunk 0. */
static int object_put(struct mt_store *store, DB_TXN *txn, uint64_t id,
		      uint32_t uid, const char *data, size_t len)
{
	const size_t chunk = store->chunk_size;
	for (size_t off = 0, i = 0; off < len; off += chunk, i++) {
		int ret = store_chunk_put(store, txn, id, uid, (uint32_t)i, data + off,
					  len - off < chunk ? len - off : chunk);
		if (ret != 0)
			return ret;
	}
	return 0;
}

struct deliver_ctx {
	const struct mt_store_rcpt *rcpt;
	const struct mt_store_body *body;
	const char *tail;	/* the body's last partial chunk */
	size_t tail_size;
	uint64_t body_size;
	uint64_t now;
	bool referenced;	/* a committed copy holds the body */
	uint32_t uid, uidvalidity;
	bool duplicate;		/* the delivery id was remembered: nothing stored */
};

/* One recipient: its message record (naming the shared body), its prefix
 * as the message's own chunks, the body's reference, the mailbox record. */
static int deliver_txn(struct mt_store *store, DB_TXN *txn, void *context)
{
	struct deliver_ctx *ctx = context;
	const struct mt_store_rcpt *rcpt = ctx->rcpt;
	const uint64_t size = rcpt->prefix_len + ctx->body_size;
	struct store_mailbox_rec rec;
	ctx->duplicate = false;
	int ret = store_dedupe_lookup(store, txn, rcpt, ctx->now, &ctx->uid);
	if (ret == 0) {
		ctx->duplicate = true;
		return 0;
	}
	if (ret != DB_NOTFOUND)
		return ret;
	/* DB_RMW: take the write lock now, not by upgrading a read lock, which
	 * deadlocks two deliveries to one mailbox. */
	unsigned char key[STORE_MAILBOX_KEY_MAX];
	const size_t key_len = store_mailbox_key(key, rcpt->mailbox, rcpt->folder);
	ret = store_mailbox_get(store, txn, key, key_len, &rec, DB_RMW);
	if (ret == DB_NOTFOUND && rcpt->folder == NULL) {
		uint32_t uidvalidity;
		ret = store_uidvalidity_next(store, txn, ctx->now, &uidvalidity);
		if (ret == 0)
			ret = store_mailbox_new(store, txn, ctx->now, uidvalidity,
						&rec);
	}
	if (ret != 0)
		return ret;	/* an APPEND's absent folder: NOT_FOUND */
	if (rcpt->quota != 0) {
		uint64_t used;
		if ((ret = store_records_user_bytes(store, txn, rcpt->mailbox, key,
						    key_len, &rec, &used)) != 0)
			return ret;
		if (size > rcpt->quota || used > rcpt->quota - size)
			return STORE_ERR_QUOTA;
	}
	if (store->set.max_mailbox_messages != 0 && rec.count >= store->set.max_mailbox_messages)
		return STORE_ERR_LIMIT;
	if (rec.next_uid == UINT32_MAX || rcpt->prefix_len > UINT32_MAX)
		return EOVERFLOW;

	if (rec.highest_modseq == UINT64_MAX)
		return EOVERFLOW;
	struct mt_store_msg msg = {
		.uid = rec.next_uid, .size = size,
		.arrival = rcpt->arrival != 0 ? rcpt->arrival : (int64_t)ctx->now,
		.flags = rcpt->flags & MT_STORE_FLAGS_ALL,
		.modseq = ++rec.highest_modseq,
	};
	if ((ret = store_flags_keywords_map(store, txn, rec.id, rcpt->keywords,
					    rcpt->keyword_count,
					    &msg.keywords)) != 0)
		return ret;
	const struct store_msg_loc loc = {
		.body_id = ctx->body->id, .prefix_len = (uint32_t)rcpt->prefix_len,
	};
	snprintf(msg.uidl, sizeof(msg.uidl), "%08x%08x", rec.uidl_validity,
		 msg.uid);
	if ((ret = store_message_put(store, txn, rec.id, &msg, &loc,
				     DB_NOOVERWRITE)) != 0)
		return ret == DB_KEYEXIST ? STORE_ERR_DAMAGED : ret;
	if ((ret = object_put(store, txn, rec.id, msg.uid, rcpt->prefix,
			      rcpt->prefix_len)) != 0 ||
	    (ret = store_chunks_ref(store, txn, ctx->body->id, !ctx->referenced,
				    ctx->body->chunks, ctx->tail, ctx->tail_size,
				    ctx->body_size)) != 0 ||
	    (!ctx->referenced &&
	     (ret = store_structure_put(store, txn, ctx->body->id, ctx->body->structure.data,
					ctx->body->structure.len)) != 0))
		return ret;
	rec.next_uid++;
	rec.count++;
	rec.bytes += size;
	rec.seen += (msg.flags & MT_STORE_FLAG_SEEN) != 0;
	rec.deleted += (msg.flags & MT_STORE_FLAG_DELETED) != 0;
	if ((ret = store_mailbox_put(store, txn, key, key_len, &rec)) != 0)
		return ret;
	if ((ret = store_dedupe_record(store, txn, rcpt, ctx->now, msg.uid)) != 0)
		return ret;
	ctx->uid = msg.uid;
	ctx->uidvalidity = rec.uidl_validity;
	return 0;
}

struct bytes_ctx {
	uint64_t bytes;
	const unsigned char *skip;	/* the key whose record the caller holds */
	size_t skip_len;
};

static int bytes_visit(DBC *cursor, const DBT *key, const DBT *data,
		       void *context)
{
	(void)cursor;
	struct bytes_ctx *b = context;
	struct store_mailbox_rec rec;
	int ret = store_mailbox_rec_decode(data, &rec);
	if (ret == 0 && (key->size != b->skip_len ||
			 memcmp(key->data, b->skip, b->skip_len) != 0))
		b->bytes += rec.bytes;
	return ret;
}

int store_records_user_bytes(struct mt_store *store, DB_TXN *txn,
			     const char *user, const unsigned char *key,
			     size_t key_len, const struct store_mailbox_rec *rec,
			     uint64_t *bytes_r)
{
	const size_t user_len = strlen(user);
	struct bytes_ctx b = { .bytes = rec->bytes, .skip = key,
			       .skip_len = key_len };
	unsigned char prefix[MT_STORE_MAILBOX_MAX + 1];
	memcpy(prefix, user, user_len);
	prefix[user_len] = '\0';
	int ret = 0;
	if (key_len != user_len) {
		/* A folder's: INBOX too. */
		struct store_mailbox_rec inbox;
		ret = mailbox_get(store, txn, user, &inbox, 0);
		if (ret == 0)
			b.bytes += inbox.bytes;
		else if (ret == DB_NOTFOUND)
			ret = 0;
	}
	if (ret == 0)
		ret = store_records_walk(store->mailboxes, txn, prefix,
					 user_len + 1, 0, bytes_visit, &b);
	*bytes_r = b.bytes;
	return ret;
}

/* A streamed body that failed, or that no recipient took: every
 * recipient still pending gets the failure, and the body goes. (Its chunk
 * writes have all run — the request waited for them — so its status is
 * settled.) */
static void deliver_settle_body(struct mt_store *store, struct mt_store_req *req,
				const struct deliver_ctx *ctx)
{
	struct store_body_req *d = (struct store_body_req *)req;
	struct mt_store_body *body = d->sbody;
	if (body->status != MT_STORE_OK) {
		for (unsigned int i = 0; i < d->rcpt_count; i++)
			if (d->rcpts[i].status == MT_STORE_OK)
				d->rcpts[i].status = body->status;
		if (req->status == MT_STORE_OK)
			store_req_set_error(req, body->status, body->error);
	}
	if (!ctx->referenced)
		store_body_drop(store, body);
}

void store_records_deliver(struct mt_store *store, struct mt_store_req *req)
{
	struct store_body_req *d = (struct store_body_req *)req;
	const struct mt_store_body *body = d->sbody;
	struct deliver_ctx ctx = {
		.body = body, .tail = d->body, .tail_size = d->body_size,
		.body_size = (uint64_t)body->chunks * store->chunk_size + d->body_size,
		.now = (uint64_t)time(NULL),
	};
	const bool body_ok = body->status == MT_STORE_OK;
	/* Room in body.db's allocated blocks first (store-space.c); without
	 * it the store is in no-space mode and nothing below commits. */
	uint64_t bytes = d->body_size;
	for (unsigned int i = 0; i < d->rcpt_count; i++)
		bytes += d->rcpts[i].prefix_len;
	if (body_ok && store_space_writable(store) && !atomic_load(&store->failed))
		(void)store_space_ensure(store, bytes);
	for (unsigned int i = 0; body_ok && i < d->rcpt_count; i++) {
		struct mt_store_rcpt *rcpt = &d->rcpts[i];
		if (rcpt->status != MT_STORE_OK)
			continue;	/* refused at submission */
		int ret;
		if (atomic_load(&store->failed))
			ret = DB_RUNRECOVERY;
		else if (store_space_full(store)) {
			/* Nothing commits on a full disk (store-space.c). */
			rcpt->status = MT_STORE_NO_SPACE;
			if (req->status == MT_STORE_OK)
				store_req_set_error(req, MT_STORE_NO_SPACE, "disk full: "
						    "no writes until space returns");
			continue;
		} else {
			ctx.rcpt = rcpt;
			ret = store_txn_run(store, deliver_txn, &ctx, DB_TXN_NOSYNC);
			(void)store_space_failed(store, ret, "delivery");
		}
		rcpt->status = store_status_from_db(store, ret);
		/* What fails on a full disk is often not ENOSPC itself (a cache
		 * that cannot write its pages returns EIO or ENOMEM). */
		if (rcpt->status == MT_STORE_TEMPFAIL && store_space_full(store))
			rcpt->status = MT_STORE_NO_SPACE;
		if (ret == 0) {
			rcpt->uid = ctx.uid;
			rcpt->uidvalidity = ctx.duplicate ? 0 : ctx.uidvalidity;
			rcpt->duplicate = ctx.duplicate;
			ctx.referenced |= !ctx.duplicate;
			/* A duplicate's first copy may not be durable yet either. */
			req->needs_flush = true;
			continue;
		}
		const char *error = store_error("delivery to mailbox %s failed: %s",
						rcpt->mailbox, store_strerror(ret));
		/* Over quota, an APPEND's absent folder or full keyword table:
		 * the client's answer, not the store's trouble. */
		if (ret != STORE_ERR_QUOTA && ret != DB_NOTFOUND &&
		    ret != STORE_ERR_LIMIT)
			mt_error("store: %s", error);
		if (req->status == MT_STORE_OK)
			store_req_set_error(req, rcpt->status, error);
	}
	deliver_settle_body(store, req, &ctx);
}

struct expunge_ctx {
	const struct mt_store_mailbox *mbox;
	const uint32_t *uids;
	unsigned int count;
	uint32_t removed;
	uint64_t bytes;
};

int store_records_purge_queue(struct mt_store *store, DB_TXN *txn,
			      const unsigned char *key, uint64_t size)
{
	unsigned char pbuf[PURGE_REC_SIZE];
	DBT k, data;
	store_put_be64(pbuf, size);
	store_put_be32(pbuf + 8, 0);
	store_dbt_in(&k, key, STORE_MESSAGE_KEY_SIZE);
	store_dbt_in(&data, pbuf, sizeof(pbuf));
	return store->purge->put(store->purge, txn, &k, &data, 0);
}

int store_records_expunge_one(struct mt_store *store, DB_TXN *txn,
			      struct store_mailbox_rec *rec, uint32_t uid)
{
	unsigned char kbuf[STORE_MESSAGE_KEY_SIZE];
	DBT key;
	struct mt_store_msg msg;
	struct store_msg_loc loc;
	int ret = store_message_get(store, txn, rec->id, uid, &msg, &loc, DB_RMW);
	store_message_key(kbuf, rec->id, uid);
	store_dbt_in(&key, kbuf, STORE_MESSAGE_KEY_SIZE);
	if (ret == 0)
		ret = store->messages->del(store->messages, txn, &key, 0);
	if (ret == 0)
		ret = store_records_purge_queue(store, txn, kbuf, loc.body_id != 0 ?
						loc.prefix_len : msg.size);
	if (ret == 0 && loc.body_id != 0)
		ret = store_chunks_unref(store, txn, loc.body_id);
	if (ret != 0)
		return ret;
	rec->count = rec->count > 0 ? rec->count - 1 : 0;
	rec->bytes = rec->bytes > msg.size ? rec->bytes - msg.size : 0;
	if ((msg.flags & MT_STORE_FLAG_SEEN) != 0 && rec->seen > 0)
		rec->seen--;
	if ((msg.flags & MT_STORE_FLAG_DELETED) != 0 && rec->deleted > 0)
		rec->deleted--;
	return 0;
}

int store_records_vanished(struct mt_store *store, DB_TXN *txn,
			   struct store_mailbox_rec *rec, const uint32_t *uids,
			   unsigned int count)
{
	if (rec->highest_modseq == UINT64_MAX)
		return EOVERFLOW;
	rec->highest_modseq++;
	if (store->imap == NULL || count == 0)
		return 0;
	unsigned char kbuf[17];
	kbuf[0] = STORE_IMAP_VANISHED;
	store_put_be64(kbuf + 1, rec->id);
	store_put_be64(kbuf + 9, rec->highest_modseq);
	unsigned char *vbuf = mt_xmalloc((size_t)count * 4);
	for (unsigned int i = 0; i < count; i++)
		store_put_be32(vbuf + 4 * i, uids[i]);
	DBT key, data;
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	store_dbt_in(&data, vbuf, (size_t)count * 4);
	int ret = store->imap->put(store->imap, txn, &key, &data, 0);
	free(vbuf);
	return ret;
}

static int expunge_txn(struct mt_store *store, DB_TXN *txn, void *context)
{
	struct expunge_ctx *ctx = context;
	const struct mt_store_mailbox *mbox = ctx->mbox;
	struct store_mailbox_rec rec;
	ctx->removed = 0;
	ctx->bytes = 0;
	int ret = store_mailbox_get(store, txn, mbox->key, mbox->key_len, &rec,
				    DB_RMW);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret != 0)
		return ret;
	if (rec.id != mbox->id)
		return 0;	/* another mailbox of that name now */
	uint32_t *removed = mt_xmalloc((ctx->count + 1) * sizeof(*removed));
	const uint64_t bytes = rec.bytes;
	for (unsigned int i = 0; i < ctx->count; i++) {
		ret = store_records_expunge_one(store, txn, &rec, ctx->uids[i]);
		if (ret == DB_NOTFOUND) {
			ret = 0;
			continue;	/* gone already */
		}
		if (ret != 0)
			break;
		removed[ctx->removed++] = ctx->uids[i];
	}
	ctx->bytes = bytes - rec.bytes;
	if (ret == 0 && ctx->removed > 0)
		ret = store_records_vanished(store, txn, &rec, removed, ctx->removed);
	free(removed);
	if (ret != 0 || ctx->removed == 0)
		return ret;
	return store_mailbox_put(store, txn, mbox->key, mbox->key_len, &rec);
}

void store_records_expunge(struct mt_store *store, struct mt_store_req *req)
{
	struct store_expunge_req *e = (struct store_expunge_req *)req;
	struct expunge_ctx ctx = {
		.mbox = e->mbox, .uids = e->uids, .count = e->uid_count,
	};
	if (!store_space_writable(store) && !atomic_load(&store->failed)) {
		store_req_set_error(req, MT_STORE_NO_SPACE,
				    "disk full: no writes until space returns");
		return;
	}
	int ret = atomic_load(&store->failed) ? DB_RUNRECOVERY :
		store_txn_run(store, expunge_txn, &ctx, DB_TXN_NOSYNC);
	(void)store_space_failed(store, ret, "expunge");
	if (ret == 0) {
		req->needs_flush = ctx.removed > 0;
		req->removed = ctx.removed;
		store_purge_backlog_add(store, ctx.removed);
		return;
	}
	const char *error = store_error("expunge in mailbox %s failed: %s",
					e->mbox->name, store_strerror(ret));
	mt_error("store: %s", error);
	enum mt_store_status status = store_status_from_db(store, ret);
	if (status == MT_STORE_TEMPFAIL && store_space_full(store))
		status = MT_STORE_NO_SPACE;
	store_req_set_error(req, status, error);
}

/* One entry of the purge queue. */
struct purge_entry {
	unsigned char key[STORE_MESSAGE_KEY_SIZE];
	uint64_t size;
};

struct purge_ctx {
	const struct purge_entry *entries;
	unsigned int count;
	uint32_t max_chunks;	/* chunks one transaction deletes */
	unsigned int done;	/* entries deleted or shortened */
	unsigned int messages;	/* of those deleted, messages (not bodies) */
	uint64_t bytes;
};

/* Delete the queued chunks, then their purge.db records: the purge.db
 * page locks (which expunges wait for) are held only for the end of the
 * transaction. An entry already gone (another purge took it) is skipped;
 * so are missing chunks. An entry of more than max_chunks (a large body)
 * loses its last max_chunks and is shortened, so no transaction logs more
 * than that many chunks' pages. */
static int purge_txn(struct mt_store *store, DB_TXN *txn, void *context)
{
	struct purge_ctx *ctx = context;
	ctx->done = ctx->messages = 0;
	ctx->bytes = 0;
	uint32_t budget = ctx->max_chunks;
	unsigned int whole = 0;		/* entries deleted whole */
	uint64_t rest = 0;		/* bytes the next entry keeps, if shortened */
	DBT key;
	for (; whole < ctx->count; whole++) {
		const struct purge_entry *e = &ctx->entries[whole];
		uint64_t id = store_get_be64(e->key);
		uint32_t uid = store_get_be32(e->key + 8);
		uint64_t chunks = (e->size + store->chunk_size - 1) / store->chunk_size;
		uint64_t keep = chunks > budget ? chunks - budget : 0;
		for (uint64_t c = keep; c < chunks; c++) {
			unsigned char kbuf[STORE_BODY_KEY_SIZE];
			store_body_key(kbuf, id, uid, (uint32_t)c);
			store_dbt_in(&key, kbuf, STORE_BODY_KEY_SIZE);
			int ret = store->bodies->del(store->bodies, txn, &key, 0);
			if (ret != 0 && ret != DB_NOTFOUND)
				return ret;
		}
		if (keep > 0) {
			rest = keep * store->chunk_size;
			break;
		}
		budget -= (uint32_t)chunks;
	}
	for (unsigned int i = 0; i < whole; i++) {
		const struct purge_entry *e = &ctx->entries[i];
		store_dbt_in(&key, e->key, STORE_MESSAGE_KEY_SIZE);
		int ret = store->purge->del(store->purge, txn, &key, 0);
		if (ret == DB_NOTFOUND)
			continue;
		if (ret != 0)
			return ret;
		ctx->done++;
		/* A message's own chunks; a shared body is uid 0. */
		ctx->messages += store_get_be32(e->key + 8) != 0;
		ctx->bytes += e->size;
	}
	if (whole < ctx->count) {
		/* Shortened: the rest is for the next transaction. */
		const struct purge_entry *e = &ctx->entries[whole];
		int ret = store_records_purge_queue(store, txn, e->key, rest);
		if (ret != 0)
			return ret;
		ctx->done++;
		ctx->bytes += e->size - rest;
	}
	return 0;
}

/* Up to max entries from the head of purge.db, at most max_bytes of bodies
 * (but at least one entry), read without a transaction. */
static int purge_collect(struct mt_store *store, struct purge_entry *entries,
			 unsigned int max, uint64_t max_bytes,
			 unsigned int *count_r)
{
	*count_r = 0;
	DBC *cursor;
	int ret = store->purge->cursor(store->purge, NULL, &cursor, 0);
	if (ret != 0)
		return ret;
	unsigned char kbuf[STORE_MESSAGE_KEY_SIZE + 16], vbuf[PURGE_REC_SIZE + 16];
	DBT key, data;
	store_dbt_out(&key, kbuf, sizeof(kbuf));
	store_dbt_out(&data, vbuf, sizeof(vbuf));
	uint64_t bytes = 0;
	while (*count_r < max && bytes < max_bytes &&
	       (ret = cursor->get(cursor, &key, &data, DB_NEXT)) == 0) {
		if (key.size != STORE_MESSAGE_KEY_SIZE || data.size < PURGE_REC_SIZE) {
			ret = STORE_ERR_DAMAGED;
			break;
		}
		struct purge_entry *e = &entries[(*count_r)++];
		memcpy(e->key, kbuf, STORE_MESSAGE_KEY_SIZE);
		e->size = store_get_be64(vbuf);
		bytes += e->size;
	}
	int t_ret = cursor->close(cursor);
	if (ret == DB_NOTFOUND)
		ret = 0;
	return ret != 0 ? ret : t_ret;
}

int store_records_purge(struct mt_store *store, unsigned int max,
			uint64_t max_bytes, uint32_t commit_flags,
			unsigned int *done_r, unsigned int *messages_r,
			uint64_t *bytes_r)
{
	*done_r = *messages_r = 0;
	*bytes_r = 0;
	struct purge_entry *entries = mt_xcalloc(max, sizeof(*entries));
	unsigned int count = 0;
	int ret;
	for (unsigned int attempt = 1;; attempt++) {
		ret = purge_collect(store, entries, max, max_bytes, &count);
		if (!store_retryable(ret) || attempt >= STORE_TXN_ATTEMPTS)
			break;
		store_counter_add(&store->n_retries, 1);
		sched_yield();
	}
	if (ret == 0 && count > 0) {
		uint64_t per_txn = max_bytes / store->chunk_size;
		struct purge_ctx ctx = {
			.entries = entries, .count = count,
			.max_chunks = per_txn == 0 ? 1 : (uint32_t)per_txn,
		};
		ret = store_txn_run(store, purge_txn, &ctx, commit_flags);
		if (ret == 0) {
			*done_r = ctx.done;
			*messages_r = ctx.messages;
			*bytes_r = ctx.bytes;
		}
	}
	free(entries);
	return ret;
}

int store_records_purge_totals(struct mt_store *store, uint64_t *messages_r,
			       uint64_t *bytes_r)
{
	*messages_r = *bytes_r = 0;
	if (store->purge == NULL)
		return 0;	/* a version 1 store opened for administration */
	DBC *cursor;
	int ret = store->purge->cursor(store->purge, NULL, &cursor, 0);
	if (ret != 0)
		return ret;
	unsigned char kbuf[STORE_MESSAGE_KEY_SIZE + 16], vbuf[PURGE_REC_SIZE + 16];
	DBT key, data;
	store_dbt_out(&key, kbuf, sizeof(kbuf));
	store_dbt_out(&data, vbuf, sizeof(vbuf));
	while ((ret = cursor->get(cursor, &key, &data, DB_NEXT)) == 0) {
		if (key.size != STORE_MESSAGE_KEY_SIZE || data.size < PURGE_REC_SIZE) {
			ret = STORE_ERR_DAMAGED;
			break;
		}
		*messages_r += store_get_be32(kbuf + 8) != 0;
		*bytes_r += store_get_be64(vbuf);
	}
	int t_ret = cursor->close(cursor);
	if (ret == DB_NOTFOUND)
		ret = 0;
	return ret != 0 ? ret : t_ret;
}

/* One attempt at reading the snapshot; deadlocks make the caller retry. */
static int load_once(struct mt_store *store, struct mt_store_mailbox *mbox)
{
	struct store_mailbox_rec rec;
	int ret = store_mailbox_get(store, NULL, mbox->key, mbox->key_len, &rec, 0);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret != 0)
		return ret;
	mbox->exists = true;
	mbox->id = rec.id;
	mbox->uidvalidity = rec.uidl_validity;
	mbox->uidnext = rec.next_uid;
	mbox->highest_modseq = rec.highest_modseq;
	if ((ret = store_flags_load_keywords(store, mbox)) != 0)
		return ret;

	DBC *cursor;
	if ((ret = store->messages->cursor(store->messages, NULL, &cursor, 0)) != 0)
		return ret;
	unsigned char kbuf[STORE_MESSAGE_KEY_SIZE + 16], vbuf[MESSAGE_REC_MAX + 64];
	DBT key, data;
	store_message_key(kbuf, rec.id, 0);
	store_dbt_out(&key, kbuf, sizeof(kbuf));
	key.size = STORE_MESSAGE_KEY_SIZE;
	store_dbt_out(&data, vbuf, sizeof(vbuf));
	unsigned int cap = 0;
	for (ret = cursor->get(cursor, &key, &data, DB_SET_RANGE); ret == 0;
	     ret = cursor->get(cursor, &key, &data, DB_NEXT)) {
		if (key.size != STORE_MESSAGE_KEY_SIZE || store_get_be64(kbuf) != rec.id)
			break;
		if (mbox->count == cap) {
			cap = cap == 0 ? 16 : cap * 2;
			mbox->msgs = mt_xrealloc(mbox->msgs, cap * sizeof(*mbox->msgs));
			mbox->locs = mt_xrealloc(mbox->locs, cap * sizeof(*mbox->locs));
		}
		struct mt_store_msg *msg = &mbox->msgs[mbox->count];
		if ((ret = message_rec_decode(&data, msg, &mbox->locs[mbox->count])) != 0)
			break;
		msg->uid = store_get_be32(kbuf + 8);
		mbox->bytes += msg->size;
		mbox->count++;
	}
	int t_ret = cursor->close(cursor);
	if (ret == DB_NOTFOUND)
		ret = 0;
	return ret != 0 ? ret : t_ret;
}

int store_records_load(struct mt_store *store, struct mt_store_mailbox *mbox)
{
	for (unsigned int attempt = 1;; attempt++) {
		int ret = load_once(store, mbox);
		if (ret == 0 || !store_retryable(ret) || attempt >= STORE_TXN_ATTEMPTS)
			return ret;
		store_counter_add(&store->n_retries, 1);
		MT_FREE(&mbox->msgs);
		MT_FREE(&mbox->locs);
		for (unsigned int i = 0; i < mbox->keyword_count; i++)
			free(mbox->keywords[i]);
		MT_FREE(&mbox->keywords);
		mbox->keyword_count = 0;
		mbox->count = 0;
		mbox->bytes = 0;
		mbox->exists = false;
	}
}

/* Read [offset, offset + want) of the chunks of the object (id, uid). */
static int object_read(struct mt_store *store, uint64_t id, uint32_t uid,
		       uint64_t offset, void *buf, size_t want, size_t *size_r)
{
	const size_t chunk = store->chunk_size;
	size_t done = 0;
	unsigned int attempt = 1;
	*size_r = 0;
	while (done < want) {
		uint64_t pos = offset + done;
		size_t in_chunk = (size_t)(pos % chunk);
		size_t n = want - done < chunk - in_chunk ? want - done : chunk - in_chunk;
		unsigned char kbuf[STORE_BODY_KEY_SIZE];
		DBT key, data;
		store_body_key(kbuf, id, uid, (uint32_t)(pos / chunk));
		store_dbt_in(&key, kbuf, sizeof(kbuf));
		store_dbt_out(&data, (char *)buf + done, n);
		data.flags |= DB_DBT_PARTIAL;
		data.doff = (u_int32_t)in_chunk;
		data.dlen = (u_int32_t)n;
		int ret = store->bodies->get(store->bodies, NULL, &key, &data, 0);
		if (store_retryable(ret) && attempt++ < STORE_TXN_ATTEMPTS) {
			store_counter_add(&store->n_retries, 1);
			continue;
		}
		if (ret != 0)
			return ret;
		if (data.size != n)
			return STORE_ERR_DAMAGED;	/* a short chunk */
		done += n;
	}
	*size_r = done;
	return 0;
}

int store_records_read(struct mt_store *store, uint64_t mailbox_id,
		       const struct mt_store_msg *msg,
		       const struct store_msg_loc *loc, uint64_t offset,
		       void *buf, size_t max, size_t *size_r)
{
	*size_r = 0;
	/* An expunged message's body may wait for the purger: its message
	 * record, gone at the expunge, says whether it may still be read. */
	unsigned char mkey[STORE_MESSAGE_KEY_SIZE], mval[8];
	DBT key, data;
	store_message_key(mkey, mailbox_id, msg->uid);
	store_dbt_in(&key, mkey, sizeof(mkey));
	store_dbt_out(&data, mval, sizeof(mval));
	data.flags |= DB_DBT_PARTIAL;	/* existence only: dlen 0 */
	for (unsigned int attempt = 1;; attempt++) {
		int ret = store->messages->get(store->messages, NULL, &key, &data, 0);
		if (ret == 0)
			break;
		if (!store_retryable(ret) || attempt >= STORE_TXN_ATTEMPTS)
			return ret;
		store_counter_add(&store->n_retries, 1);
	}
	if (offset >= msg->size)
		return 0;
	size_t want = msg->size - offset < max ? (size_t)(msg->size - offset) : max;
	if (loc->body_id == 0)	/* all in its own chunks (before version 4) */
		return object_read(store, mailbox_id, msg->uid, offset, buf, want,
				   size_r);
	/* Its prefix, then the shared body. */
	size_t got = 0;
	int ret = 0;
	if (offset < loc->prefix_len) {
		size_t n = loc->prefix_len - offset < want ?
			(size_t)(loc->prefix_len - offset) : want;
		ret = object_read(store, mailbox_id, msg->uid, offset, buf, n, &got);
	}
	if (ret == 0 && got < want) {
		size_t more;
		ret = object_read(store, loc->body_id, 0,
				  offset + got - loc->prefix_len, (char *)buf + got,
				  want - got, &more);
		got += more;
	}
	if (ret == 0)
		*size_r = got;
	return ret;
}

static int meta_put(struct mt_store *store, DB_TXN *txn, const char *name,
		    const unsigned char *value, size_t size)
{
	DBT key, data;
	store_dbt_in(&key, name, strlen(name));
	store_dbt_in(&data, value, size);
	return store->meta->put(store->meta, txn, &key, &data, 0);
}

int store_records_format_init(struct mt_store *store, DB_TXN *txn)
{
	unsigned char version[4], chunk[4], next_id[8], created[8];
	store_put_be32(version, MT_STORE_FORMAT_VERSION);
	store_put_be32(chunk, STORE_CHUNK_SIZE);
	store_put_be64(next_id, 1);
	store_put_be64(created, (uint64_t)time(NULL));
	int ret;
	if ((ret = meta_put(store, txn, META_FORMAT, version, 4)) != 0 ||
	    (ret = meta_put(store, txn, META_CHUNK, chunk, 4)) != 0 ||
	    (ret = meta_put(store, txn, META_NEXT_ID, next_id, 8)) != 0 ||
	    (ret = meta_put(store, txn, META_CREATED, created, 8)) != 0)
		return ret;
	store->chunk_size = STORE_CHUNK_SIZE;
	store->format_version = MT_STORE_FORMAT_VERSION;
	return 0;
}

int store_records_format_set(struct mt_store *store, DB_TXN *txn,
			     uint32_t version)
{
	unsigned char buf[4];
	store_put_be32(buf, version);
	int ret = meta_put(store, txn, META_FORMAT, buf, 4);
	if (ret == 0)
		store->format_version = version;
	return ret;
}

/* A u32 meta record; DB_NOTFOUND if absent, EINVAL if not 4 bytes. */
static int meta_get_u32(struct mt_store *store, const char *name, uint32_t *value_r)
{
	unsigned char buf[16];
	DBT key, data;
	store_dbt_in(&key, name, strlen(name));
	store_dbt_out(&data, buf, sizeof(buf));
	int ret = store->meta->get(store->meta, NULL, &key, &data, 0);
	if (ret == DB_BUFFER_SMALL || (ret == 0 && data.size != 4))
		return EINVAL;
	if (ret == 0)
		*value_r = store_get_be32(buf);
	return ret;
}

enum mt_store_status store_records_format_check(struct mt_store *store,
						const char **error_r)
{
	uint32_t version, chunk;
	int ret = meta_get_u32(store, META_FORMAT, &version);
	if (ret == DB_NOTFOUND || ret == EINVAL) {
		*error_r = store_error("store %s: %s has no valid format-version "
				       "record: not a mailtier store, refusing it",
				       store->home, STORE_META_DB);
		return MT_STORE_BAD_FORMAT;
	}
	if (ret != 0) {
		*error_r = store_error("store %s: reading the format version: %s",
				       store->home, db_strerror(ret));
		return store_status_from_db(store, ret);
	}
	/* Version 1 is version 2 without purge.db, version 2 is version 3
	 * without delivered.db, version 3 is version 4 without refs.db and
	 * partial.db (and without shared bodies: its messages are read as
	 * they are), version 4 is version 5 without imap.db (its records read
	 * with the defaults of version 5's fields): store-env.c upgrades them
	 * (SERVE mode) by creating what they lack, in the transaction that
	 * rewrites the version record. */
	if (version < 1 || version > MT_STORE_FORMAT_VERSION) {
		*error_r = store_error("store %s has format version %u; this "
				       "mailtier-popstore reads version %u (and "
				       "upgrades versions 1 to 4) only: refusing "
				       "to open it", store->home, version,
				       MT_STORE_FORMAT_VERSION);
		return MT_STORE_BAD_FORMAT;
	}
	store->format_version = version;
	ret = meta_get_u32(store, META_CHUNK, &chunk);
	if (ret != 0 || chunk < 1024 || chunk > (16u << 20)) {
		*error_r = store_error("store %s: bad or missing chunk-size record",
				       store->home);
		return ret == 0 || ret == DB_NOTFOUND || ret == EINVAL ?
			MT_STORE_BAD_FORMAT : store_status_from_db(store, ret);
	}
	store->chunk_size = chunk;
	return MT_STORE_OK;
}

int store_records_walk(DB *db, DB_TXN *txn, const unsigned char *prefix,
		       size_t prefix_len, u_int32_t flags,
		       int (*visit)(DBC *cursor, const DBT *key, const DBT *data,
				    void *context),
		       void *context)
{
	DBC *cursor;
	int ret = db->cursor(db, txn, &cursor, 0);
	if (ret != 0)
		return ret;
	unsigned char kbuf[STORE_MAILBOX_KEY_MAX + 64], vbuf[256];
	DBT key, data;
	store_dbt_out(&key, kbuf, sizeof(kbuf));
	memcpy(kbuf, prefix, prefix_len);
	key.size = (u_int32_t)prefix_len;
	store_dbt_out(&data, vbuf, sizeof(vbuf));
	data.flags |= DB_DBT_PARTIAL;	/* records by their head: up to vbuf */
	data.doff = 0;
	data.dlen = sizeof(vbuf);
	for (ret = cursor->get(cursor, &key, &data, DB_SET_RANGE | flags); ret == 0;
	     ret = cursor->get(cursor, &key, &data, DB_NEXT | flags)) {
		if (key.size < prefix_len || memcmp(kbuf, prefix, prefix_len) != 0)
			break;
		if ((ret = visit(cursor, &key, &data, context)) != 0)
			break;
	}
	int t_ret = cursor->close(cursor);
	if (ret == DB_NOTFOUND)
		ret = 0;
	return ret != 0 ? ret : t_ret;
}

int store_records_totals(struct mt_store *store, uint64_t *mailboxes_r,
			 uint64_t *messages_r, uint64_t *bytes_r)
{
	*mailboxes_r = *messages_r = *bytes_r = 0;
	DBC *cursor;
	int ret = store->mailboxes->cursor(store->mailboxes, NULL, &cursor, 0);
	if (ret != 0)
		return ret;
	unsigned char kbuf[STORE_MAILBOX_KEY_MAX + 1], vbuf[MAILBOX_REC_SIZE + 64];
	DBT key, data;
	store_dbt_out(&key, kbuf, sizeof(kbuf));
	store_dbt_out(&data, vbuf, sizeof(vbuf));
	while ((ret = cursor->get(cursor, &key, &data, DB_NEXT)) == 0) {
		struct store_mailbox_rec rec;
		if ((ret = store_mailbox_rec_decode(&data, &rec)) != 0)
			break;
		(*mailboxes_r)++;
		*messages_r += rec.count;
		*bytes_r += rec.bytes;
	}
	int t_ret = cursor->close(cursor);
	if (ret == DB_NOTFOUND)
		ret = 0;
	return ret != 0 ? ret : t_ret;
}
