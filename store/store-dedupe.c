/* store-dedupe.c — delivery ids: a message an MTA delivers twice to one
 * mailbox is stored once.
 *
 * LMTP gives at-least-once delivery: when an MTA dies (or loses the
 * connection) after the store committed a message but before the MTA
 * recorded the 250, it delivers the message again from its queue. mailtier's
 * MTA names each delivery (its LHLO name and the XQUEUEID it sends), and
 * the store remembers, per mailbox, the ids it stored: a second delivery
 * with a remembered id is answered as delivered (with the first copy's uid)
 * and stores nothing. Together with the MTA's durable queue this makes
 * delivery exactly-once as long as the redelivery comes within
 * redelivery_window (the MTA retries at once after its restart and after a
 * lost connection by its retry schedule, whose first steps are minutes).
 *
 *   delivered.db  delivery id + NUL + mailbox name → time u64 (Unix), uid u32
 *
 * The record is written in the delivery's own transaction (deliver_txn in
 * store-records.c), so it is durable exactly when the message is, and a
 * crash cannot keep one without the other. The checkpoint thread removes
 * records older than the window every EXPIRE_EVERY_SECS, in small NOSYNC
 * transactions (a record that comes back after a crash is only removed
 * again at the next sweep).
 *
 * Trust boundary: ids come from LMTP clients (XQUEUEID is checked by the
 * LMTP parser; LHLO names are bounded); a record read back is length
 * checked. An id from a client that is not mailtier's MTA can at worst make
 * that client's own second delivery with the same id a no-op.
 *
 * Guarantees: a delivery with an id the mailbox got less than the window
 * ago stores no copy; one whose record expired is stored again. */
#include "store-records.h"
#include "alloc.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_WINDOW_SECS 3600u
#define EXPIRE_EVERY_SECS 60u
/* Records examined per expiry transaction (its locks are held until it
 * commits; deliveries wait for them). */
#define EXPIRE_BATCH 256u
#define DELIVERED_REC_SIZE 12
#define DELIVERED_KEY_MAX (MT_STORE_MAILBOX_MAX + 512)

static unsigned int window_secs(const struct mt_store *store)
{
	return store->set.redelivery_window_secs != 0 ?
		store->set.redelivery_window_secs : DEFAULT_WINDOW_SECS;
}

/* The key of (id, mailbox); 0 if it does not fit (then no dedupe). */
static size_t delivered_key(unsigned char *key, const char *id,
			    const char *mailbox)
{
	size_t id_len = strlen(id), mb_len = strlen(mailbox);
	if (id_len == 0 || id_len + 1 + mb_len > DELIVERED_KEY_MAX)
		return 0;
	memcpy(key, id, id_len);
	key[id_len] = '\0';
	memcpy(key + id_len + 1, mailbox, mb_len);
	return id_len + 1 + mb_len;
}

int store_dedupe_lookup(struct mt_store *store, DB_TXN *txn,
			const struct mt_store_rcpt *rcpt, uint64_t now,
			uint32_t *uid_r)
{
	unsigned char kbuf[DELIVERED_KEY_MAX], vbuf[DELIVERED_REC_SIZE + 8];
	size_t klen;
	if (store->delivered == NULL || rcpt->delivery_id == NULL ||
	    (klen = delivered_key(kbuf, rcpt->delivery_id, rcpt->mailbox)) == 0)
		return DB_NOTFOUND;
	DBT key = { .data = kbuf, .size = (u_int32_t)klen };
	DBT data = { .data = vbuf, .ulen = sizeof(vbuf), .flags = DB_DBT_USERMEM };
	/* DB_RMW: a concurrent redelivery of the same id waits for this one. */
	int ret = store->delivered->get(store->delivered, txn, &key, &data, DB_RMW);
	if (ret != 0)
		return ret;
	if (data.size != DELIVERED_REC_SIZE)
		return STORE_ERR_DAMAGED;
	uint64_t when = store_get_be64(vbuf);
	if (when + window_secs(store) <= now)
		return DB_NOTFOUND;	/* expired, not swept yet */
	*uid_r = store_get_be32(vbuf + 8);
	return 0;
}

int store_dedupe_record(struct mt_store *store, DB_TXN *txn,
			const struct mt_store_rcpt *rcpt, uint64_t now,
			uint32_t uid)
{
	unsigned char kbuf[DELIVERED_KEY_MAX], vbuf[DELIVERED_REC_SIZE];
	size_t klen;
	if (store->delivered == NULL || rcpt->delivery_id == NULL ||
	    (klen = delivered_key(kbuf, rcpt->delivery_id, rcpt->mailbox)) == 0)
		return 0;
	store_put_be64(vbuf, now);
	store_put_be32(vbuf + 8, uid);
	DBT key = { .data = kbuf, .size = (u_int32_t)klen };
	DBT data = { .data = vbuf, .size = sizeof(vbuf) };
	return store->delivered->put(store->delivered, txn, &key, &data, 0);
}

struct expire_ctx {
	uint64_t cutoff;
	unsigned char start[DELIVERED_KEY_MAX];
	size_t start_len;	/* 0: from the first record */
	bool end;		/* the walk reached the last record */
	unsigned int removed;
};

/* Up to EXPIRE_BATCH records from ctx->start on; remove the old ones. The
 * position and count move on only when the batch succeeded, so a batch
 * retried after a lost deadlock starts where it started. */
static int expire_txn(struct mt_store *store, DB_TXN *txn, void *context)
{
	struct expire_ctx *ctx = context;
	DBC *cursor;
	int ret = store->delivered->cursor(store->delivered, txn, &cursor, 0);
	if (ret != 0)
		return ret;
	unsigned char kbuf[DELIVERED_KEY_MAX], vbuf[DELIVERED_REC_SIZE + 8];
	DBT key = { .data = kbuf, .ulen = sizeof(kbuf), .flags = DB_DBT_USERMEM };
	DBT data = { .data = vbuf, .ulen = sizeof(vbuf), .flags = DB_DBT_USERMEM };
	unsigned int removed = 0, seen = 0;
	size_t last_len = 0;
	u_int32_t op = DB_FIRST;
	if (ctx->start_len > 0) {
		memcpy(kbuf, ctx->start, ctx->start_len);
		key.size = (u_int32_t)ctx->start_len;
		op = DB_SET_RANGE;
	}
	while (seen < EXPIRE_BATCH && (ret = cursor->get(cursor, &key, &data, op)) == 0) {
		op = DB_NEXT;
		seen++;
		bool old = data.size != DELIVERED_REC_SIZE ||	/* damaged: drop */
			store_get_be64(vbuf) < ctx->cutoff;
		if (old && (ret = cursor->del(cursor, 0)) != 0)
			break;
		removed += old;
		last_len = key.size;
	}
	int c_ret = cursor->close(cursor);
	bool end = ret == DB_NOTFOUND;
	if (end)
		ret = 0;
	if (ret == 0 && c_ret != 0)
		ret = c_ret;
	if (ret == 0) {
		/* kbuf holds the last record read: the next batch starts there
		 * (re-reading it is harmless). */
		ctx->end = end || last_len == 0;
		memcpy(ctx->start, kbuf, last_len);
		ctx->start_len = last_len;
		ctx->removed += removed;
	}
	return ret;
}

void store_dedupe_expire(struct mt_store *store, unsigned int *secs)
{
	if (store->delivered == NULL || ++*secs < EXPIRE_EVERY_SECS)
		return;
	*secs = 0;
	struct expire_ctx *ctx = mt_xcalloc(1, sizeof(*ctx));
	uint64_t now = (uint64_t)time(NULL);
	ctx->cutoff = now > window_secs(store) ? now - window_secs(store) : 0;
	/* Each batch reads at least one record past its start (EXPIRE_BATCH
	 * > 1), so the walk ends. */
	while (!ctx->end && !atomic_load(&store->failed) && !store_space_full(store)) {
		int ret = store_txn_run(store, expire_txn, ctx, DB_TXN_NOSYNC);
		if (ret != 0) {
			mt_warning("store: home=%s expiring delivery ids: %s",
				   store->home, store_strerror(ret));
			break;
		}
	}
	if (ctx->removed > 0)
		mt_debug("store: home=%s expired %u delivery ids", store->home,
			 ctx->removed);
	free(ctx);
}
