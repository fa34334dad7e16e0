/* store-chunks.c — the records of streamed (shared) bodies, format version
 * 4: the chunk transactions, the references messages hold, body ids, the
 * abort, and the sweep at open of what a crash left half-written.
 *
 * Layout (big-endian, as store-records.c):
 *   body.db     body id u64 + uid 0 u32 + chunk u32 → the body's chunks
 *               (body ids have STORE_BODY_ID_BIT set)
 *   refs.db     body id u64 → count u32, size u64: the messages that hold
 *               the body (created by the first, removed with the last)
 *   partial.db  body id u64 → begun u64 (Unix time): a body whose chunks
 *               are being written and that no message holds yet
 *   purge.db    body id u64 + 0 u32 → size u64, flags u32: a body no
 *               message holds any more, for the purger
 *
 * Invariant, at every commit: each shared body's chunk is covered by its
 * refs.db record (delivered), its partial.db record (being written: the
 * record is put in every chunk's transaction, and removed only in the
 * transaction that creates the reference or queues the purge) or its
 * purge.db record (queued). So a crash leaves no chunk nobody knows of:
 * the partial.db records found at open name every body whose writer died
 * (one serving process per store, and no delivery begins before the sweep
 * has run), and the sweep queues them for the purger — O(orphans), not a
 * scan of body.db.
 *
 * Body ids are not allocated durably: at open next_body_id is set past the
 * largest id that any of body.db, refs.db, partial.db and purge.db holds,
 * which are all the records that can name one (a message names its body
 * only while refs.db holds it).
 *
 * Trust boundary: none of its own (the bytes are the LMTP client's, stored
 * as given; records read back are length-checked). */
#include "store-records.h"
#include "alloc.h"
#include "log.h"

#include <errno.h>
#include <limits.h>
#include <time.h>

#define REF_REC_SIZE 12
#define PARTIAL_REC_SIZE 8
/* Orphaned bodies queued per transaction of the sweep. */
#define SWEEP_BATCH 64u

int store_chunk_put(struct mt_store *store, DB_TXN *txn, uint64_t id,
		    uint32_t uid, uint32_t chunk, const void *data, size_t len)
{
	unsigned char kbuf[STORE_BODY_KEY_SIZE];
	DBT key, value;
	store_body_key(kbuf, id, uid, chunk);
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	store_dbt_in(&value, data, len);
	return store->bodies->put(store->bodies, txn, &key, &value, 0);
}

/* partial.db: the body is being written (kept if it is there already). */
static int partial_put(struct mt_store *store, DB_TXN *txn, uint64_t body_id)
{
	unsigned char kbuf[8], vbuf[PARTIAL_REC_SIZE];
	DBT key, value;
	store_put_be64(kbuf, body_id);
	store_put_be64(vbuf, (uint64_t)time(NULL));
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	store_dbt_in(&value, vbuf, sizeof(vbuf));
	int ret = store->partial->put(store->partial, txn, &key, &value,
				      DB_NOOVERWRITE);
	return ret == DB_KEYEXIST ? 0 : ret;
}

static int partial_del(struct mt_store *store, DB_TXN *txn, uint64_t body_id)
{
	unsigned char kbuf[8];
	DBT key;
	store_put_be64(kbuf, body_id);
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	int ret = store->partial->del(store->partial, txn, &key, 0);
	return ret == DB_NOTFOUND ? 0 : ret;
}

struct chunk_ctx {
	uint64_t body_id;
	uint32_t chunk;
	const void *data;
	size_t len;
};

static int chunk_txn(struct mt_store *store, DB_TXN *txn, void *context)
{
	const struct chunk_ctx *ctx = context;
	int ret = partial_put(store, txn, ctx->body_id);
	if (ret == 0)
		ret = store_chunk_put(store, txn, ctx->body_id, 0, ctx->chunk,
				      ctx->data, ctx->len);
	return ret;
}

int store_chunks_write(struct mt_store *store, uint64_t body_id,
		       uint32_t chunk, const void *data, size_t len)
{
	struct chunk_ctx ctx = {
		.body_id = body_id, .chunk = chunk, .data = data, .len = len,
	};
	/* No flush: the delivery's flush covers this commit (store-body.c). */
	return store_txn_run(store, chunk_txn, &ctx, DB_TXN_NOSYNC);
}

static int ref_get(struct mt_store *store, DB_TXN *txn, uint64_t body_id,
		   uint32_t *count_r, uint64_t *size_r)
{
	unsigned char kbuf[8], vbuf[REF_REC_SIZE + 8];
	DBT key, value;
	store_put_be64(kbuf, body_id);
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	store_dbt_out(&value, vbuf, sizeof(vbuf));
	int ret = store->refs->get(store->refs, txn, &key, &value, DB_RMW);
	if (ret != 0)
		return ret;
	if (value.size < REF_REC_SIZE)
		return STORE_ERR_DAMAGED;
	*count_r = store_get_be32(vbuf);
	*size_r = store_get_be64(vbuf + 4);
	return 0;
}

static int ref_put(struct mt_store *store, DB_TXN *txn, uint64_t body_id,
		   uint32_t count, uint64_t size)
{
	unsigned char kbuf[8], vbuf[REF_REC_SIZE];
	DBT key, value;
	store_put_be64(kbuf, body_id);
	store_put_be32(vbuf, count);
	store_put_be64(vbuf + 4, size);
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	store_dbt_in(&value, vbuf, sizeof(vbuf));
	return store->refs->put(store->refs, txn, &key, &value, 0);
}

int store_chunks_ref(struct mt_store *store, DB_TXN *txn, uint64_t body_id,
		     bool first, uint32_t chunks, const void *tail,
		     size_t tail_len, uint64_t size)
{
	int ret;
	if (first) {
		if (tail_len > 0 &&
		    (ret = store_chunk_put(store, txn, body_id, 0, chunks, tail,
					   tail_len)) != 0)
			return ret;
		/* Only chunk writes put the record: a body of one chunk has none. */
		if (chunks > 0 && (ret = partial_del(store, txn, body_id)) != 0)
			return ret;
		return ref_put(store, txn, body_id, 1, size);
	}
	uint32_t count;
	uint64_t stored;
	if ((ret = ref_get(store, txn, body_id, &count, &stored)) != 0)
		return ret == DB_NOTFOUND ? STORE_ERR_DAMAGED : ret;
	if (count == UINT32_MAX)
		return EOVERFLOW;
	return ref_put(store, txn, body_id, count + 1, stored);
}

/* Queue body_id's size bytes of chunks for the purger. */
static int body_purge_queue(struct mt_store *store, DB_TXN *txn,
			    uint64_t body_id, uint64_t size)
{
	unsigned char kbuf[STORE_MESSAGE_KEY_SIZE];
	store_message_key(kbuf, body_id, 0);
	return store_records_purge_queue(store, txn, kbuf, size);
}

int store_chunks_unref(struct mt_store *store, DB_TXN *txn, uint64_t body_id)
{
	uint32_t count;
	uint64_t size;
	int ret = ref_get(store, txn, body_id, &count, &size);
	if (ret == DB_NOTFOUND)
		return 0;	/* damaged, but nothing left to release */
	if (ret != 0)
		return ret;
	if (count > 1)
		return ref_put(store, txn, body_id, count - 1, size);
	unsigned char kbuf[8];
	DBT key;
	store_put_be64(kbuf, body_id);
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	if ((ret = store->refs->del(store->refs, txn, &key, 0)) != 0 ||
	    (ret = store_structure_del(store, txn, body_id)) != 0)
		return ret;
	return body_purge_queue(store, txn, body_id, size);
}

struct abort_ctx {
	const uint64_t *ids;
	const uint32_t *chunks;
	unsigned int count;
};

static int abort_txn(struct mt_store *store, DB_TXN *txn, void *context)
{
	const struct abort_ctx *ctx = context;
	for (unsigned int i = 0; i < ctx->count; i++) {
		int ret = partial_del(store, txn, ctx->ids[i]);
		if (ret == 0 && ctx->chunks[i] > 0)
			ret = body_purge_queue(store, txn, ctx->ids[i],
					       (uint64_t)ctx->chunks[i] *
					       store->chunk_size);
		if (ret != 0)
			return ret;
	}
	return 0;
}

int store_chunks_abort(struct mt_store *store, uint64_t body_id,
		       uint32_t chunks)
{
	struct abort_ctx ctx = { .ids = &body_id, .chunks = &chunks, .count = 1 };
	/* No flush either: a crash before the next one leaves the partial.db
	 * record, and the next open's sweep queues the body. */
	return store_txn_run(store, abort_txn, &ctx, DB_TXN_NOSYNC);
}

/* The chunks body_id has in body.db: one past the last one's index. */
static int chunks_count(struct mt_store *store, DBC *cursor, uint64_t body_id,
			uint32_t *chunks_r)
{
	unsigned char kbuf[STORE_BODY_KEY_SIZE + 8];
	DBT key, value;
	*chunks_r = 0;
	store_body_key(kbuf, body_id, 1, 0);	/* just past its chunks */
	store_dbt_out(&key, kbuf, sizeof(kbuf));
	key.size = STORE_BODY_KEY_SIZE;
	store_dbt_out(&value, kbuf, 0);
	value.flags |= DB_DBT_PARTIAL;		/* keys only */
	int ret = cursor->get(cursor, &key, &value, DB_SET_RANGE);
	if (ret == 0)
		ret = cursor->get(cursor, &key, &value, DB_PREV);
	else if (ret == DB_NOTFOUND)
		ret = cursor->get(cursor, &key, &value, DB_LAST);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret != 0)
		return ret;
	if (key.size == STORE_BODY_KEY_SIZE && store_get_be64(kbuf) == body_id &&
	    store_get_be32(kbuf + 8) == 0)
		*chunks_r = store_get_be32(kbuf + 12) + 1;
	return 0;
}

/* The largest body id db's last key holds (its first 8 bytes), if any. */
static int last_body_id(DB *db, uint64_t *max)
{
	DBC *cursor;
	int ret = db->cursor(db, NULL, &cursor, 0);
	if (ret != 0)
		return ret;
	unsigned char kbuf[STORE_BODY_KEY_SIZE + 8];
	DBT key, value;
	store_dbt_out(&key, kbuf, sizeof(kbuf));
	store_dbt_out(&value, kbuf, 0);
	value.flags |= DB_DBT_PARTIAL;
	ret = cursor->get(cursor, &key, &value, DB_LAST);
	if (ret == 0 && key.size >= 8) {
		uint64_t id = store_get_be64(kbuf);
		if ((id & STORE_BODY_ID_BIT) != 0 && id > *max)
			*max = id;
	}
	int t_ret = cursor->close(cursor);
	if (ret == DB_NOTFOUND)
		ret = 0;
	return ret != 0 ? ret : t_ret;
}

/* Call fn for up to max partial.db bodies, with their chunk counts. */
/* Both cursors in one read-committed transaction: one locker, so a
 * writer that waits for our partial.db page while we wait for its body.db
 * page is a cycle the deadlock detector sees (two cursors without a
 * transaction are two lockers, and that wait hung test-store-admin: the
 * mailtierctl side and the daemon both blocked for good). The loser gets
 * DB_LOCK_DEADLOCK and is tried again by its caller. */
static int partial_each(struct mt_store *store, unsigned int max,
			void (*fn)(void *, uint64_t, uint32_t), void *context)
{
	DB_TXN *txn;
	DBC *cursor, *bodies;
	int ret = store->env->txn_begin(store->env, NULL, &txn, DB_READ_COMMITTED);
	if (ret != 0)
		return ret;
	if ((ret = store->partial->cursor(store->partial, txn, &cursor, 0)) != 0) {
		(void)txn->abort(txn);
		return ret;
	}
	if ((ret = store->bodies->cursor(store->bodies, txn, &bodies, 0)) != 0) {
		(void)cursor->close(cursor);
		(void)txn->abort(txn);
		return ret;
	}
	unsigned char kbuf[16], vbuf[PARTIAL_REC_SIZE + 8];
	DBT key, value;
	store_dbt_out(&key, kbuf, sizeof(kbuf));
	store_dbt_out(&value, vbuf, sizeof(vbuf));
	for (unsigned int n = 0; n < max &&
	     (ret = cursor->get(cursor, &key, &value, DB_NEXT)) == 0; n++) {
		uint32_t chunks;
		if (key.size != 8) {
			ret = STORE_ERR_DAMAGED;
			break;
		}
		if ((ret = chunks_count(store, bodies, store_get_be64(kbuf),
					&chunks)) != 0)
			break;
		fn(context, store_get_be64(kbuf), chunks);
	}
	int t_ret = bodies->close(bodies);
	int c_ret = cursor->close(cursor);
	if (ret == DB_NOTFOUND)
		ret = 0;
	ret = ret != 0 ? ret : t_ret != 0 ? t_ret : c_ret;
	int x_ret = ret == 0 ? txn->commit(txn, 0) : txn->abort(txn);
	return ret != 0 ? ret : x_ret;
}

struct sweep_batch {
	uint64_t ids[SWEEP_BATCH];
	uint32_t chunks[SWEEP_BATCH];
	unsigned int count;
	uint64_t bodies, bytes;	/* totals */
	uint32_t bytes_per_chunk;
};

static void sweep_add(void *context, uint64_t id, uint32_t chunks)
{
	struct sweep_batch *b = context;
	if (b->count < SWEEP_BATCH) {
		b->ids[b->count] = id;
		b->chunks[b->count++] = chunks;
	}
	b->bodies++;
	b->bytes += (uint64_t)chunks * b->bytes_per_chunk;
}

/* Queue every partial.db body for the purger, SWEEP_BATCH a transaction. */
static int sweep(struct mt_store *store, struct sweep_batch *b)
{
	for (;;) {
		b->count = 0;
		int ret = partial_each(store, SWEEP_BATCH, sweep_add, b);
		if (ret != 0 || b->count == 0)
			return ret;
		struct abort_ctx ctx = {
			.ids = b->ids, .chunks = b->chunks, .count = b->count,
		};
		if ((ret = store_txn_run(store, abort_txn, &ctx, DB_TXN_NOSYNC)) != 0)
			return ret;
	}
}

enum mt_store_status store_chunks_open(struct mt_store *store,
				       const char **error_r)
{
	uint64_t max = STORE_BODY_ID_BIT;
	DB *dbs[] = { store->bodies, store->refs, store->partial, store->purge };
	int ret = 0;
	for (size_t i = 0; ret == 0 && i < sizeof(dbs) / sizeof(dbs[0]); i++)
		ret = last_body_id(dbs[i], &max);
	struct sweep_batch b = { .bytes_per_chunk = store->chunk_size };
	if (ret == 0)
		ret = sweep(store, &b);
	if (ret != 0) {
		*error_r = store_error("store %s: sweeping half-written bodies: %s",
				       store->home, store_strerror(ret));
		return store_status_from_db(store, ret);
	}
	atomic_store(&store->next_body_id, max + 1);
	if (b.bodies > 0) {
		store_counter_add(&store->n_swept, b.bodies);
		mt_info("store: home=%s half-written bodies at open: bodies=%llu "
			"bytes=%llu: purging", store->home,
			(unsigned long long)b.bodies, (unsigned long long)b.bytes);
	}
	return MT_STORE_OK;
}

int store_chunks_partial_totals(struct mt_store *store, uint64_t *bodies_r,
				uint64_t *bytes_r)
{
	*bodies_r = *bytes_r = 0;
	if (store->partial == NULL)
		return 0;	/* before version 4, opened for administration */
	struct sweep_batch b = { .bytes_per_chunk = store->chunk_size };
	int ret = partial_each(store, UINT_MAX, sweep_add, &b);
	*bodies_r = b.bodies;
	*bytes_r = b.bytes;
	return ret;
}
