/* queue-store.c — the MTA queue's Berkeley DB environment (see
 * queue-store.h): open with recovery under a lock file, the envelope and
 * body databases, writes as group-committed transactions, body reads, and
 * the checkpoint thread (lib-bdb/bdb-checkpoint.h: it trickles the cache every
 * second so a checkpoint does not stall commits).
 *
 * Trust boundary: queue_dir is the administrator's; nothing from the
 * network is interpreted here (records and bodies are opaque bytes).
 * Durability: environment flags DB_INIT_TXN | DB_INIT_LOG | DB_RECOVER, every
 * write a transaction committed with DB_TXN_NOSYNC and made durable by the
 * flusher's log_flush() before its completion runs (lib-bdb/bdb-commit.c).
 * Regions: private (DB_PRIVATE: the MTA is the environment's one process),
 * in the process's own memory instead of mmap()ed __db.NNN files. A
 * file-backed region is written back by the kernel whenever its pages have
 * been dirty for vm.dirty_expire_centisecs (30 s), and a page under
 * writeback stalls the thread that writes it: every 30 s the queue's
 * commits stopped for up to half a second (bench/mta.py at 18,000 msgs/min:
 * DATA p99 165 ms, all of it in those stalls). Private regions also cannot
 * fault the process on a full disk (it died of SIGBUS in tests/faults
 * disk-full-mta when they were sparse files); a write that finds no space
 * fails, and the message gets 451. */
#include "queue-store.h"
#include "alloc.h"
#include "bdb-checkpoint.h"
#include "bdb-lock.h"
#include "log.h"
#include "loop.h"

#include <db.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENVELOPE_DB "envelope.db"
#define BODY_DB "body.db"
#define LOCK_FILE "mta.lock"
#define CACHE_SIZE (64u << 20)
#define LOG_FILE_SIZE (64u << 20)
#define LOG_BUFFER_SIZE (8u << 20)
#define BODY_PAGESIZE 16384
#define CHECKPOINT_SECS 30

struct queue_store {
	char *dir;
	struct mt_loop *loop;
	int lock_fd;
	DB_ENV *env;
	DB *envelopes, *bodies;
	struct mt_bdb_commit *commit;
	struct mt_bdb_checkpointer *checkpointer;
	char error[512];
};

enum op_kind { OP_ENVELOPE, OP_PIECE, OP_DELETE };

struct store_op {
	enum op_kind kind;
	char id[QUEUE_ID_LEN + 1];
	uint32_t index;			/* OP_PIECE */
	struct mt_buf record;		/* OP_ENVELOPE; OP_PIECE's bytes ... */
	struct queue_body *body;	/* ... or a shared body's */
};

struct queue_store_write {
	struct queue_store *store;
	struct store_op *ops;
	unsigned int count, cap;
	queue_store_done_cb_t *done;
	void *context;
};

struct piece_read {
	struct queue_store *store;
	char id[QUEUE_ID_LEN + 1];
	uint32_t from;
	size_t max_bytes;
	struct mt_buf data;
	uint32_t next;
	bool complete;
	queue_store_body_cb_t *done;
	void *context;
};

static const char *store_fail(struct queue_store *store, const char *what,
			      int ret)
{
	snprintf(store->error, sizeof(store->error), "queue %s: %s: %s",
		 store->dir, what, ret > 0 ? strerror(ret) : db_strerror(ret));
	return store->error;
}

static void bdb_errcall(const DB_ENV *env, const char *prefix, const char *msg)
{
	mt_error("queue: berkeley-db: %s", msg);
}

static void bdb_event(DB_ENV *env, u_int32_t event, void *info)
{
	if (event == DB_EVENT_PANIC)
		mt_error("queue: Berkeley DB panic: restart mailtier-mta to run recovery");
	else if (event == DB_EVENT_WRITE_FAILED)
		mt_error("queue: Berkeley DB write failed");
}

static bool take_lock(struct queue_store *store, const char **error_r)
{
	int err = mt_bdb_lock_take(store->dir, LOCK_FILE, &store->lock_fd);
	if (err == 0)
		return true;
	*error_r = err == EWOULDBLOCK ?
		store_fail(store, "in use by another mailtier-mta", EBUSY) :
		store_fail(store, "lock file", err);
	return false;
}

static int db_open_one(struct queue_store *store, DB **db_r, const char *file,
		       u_int32_t pagesize)
{
	DB *db;
	int ret = db_create(&db, store->env, 0);
	if (ret != 0)
		return ret;
	if (pagesize != 0 && (ret = db->set_pagesize(db, pagesize)) != 0) {
		(void)db->close(db, 0);
		return ret;
	}
	ret = db->open(db, NULL, file, NULL, DB_BTREE,
		       DB_CREATE | DB_AUTO_COMMIT | DB_THREAD, 0600);
	if (ret != 0) {
		(void)db->close(db, 0);
		return ret;
	}
	*db_r = db;
	return 0;
}

static bool env_open(struct queue_store *store, const char **error_r)
{
	DB_ENV *env;
	int ret = db_env_create(&env, 0);
	if (ret != 0) {
		*error_r = store_fail(store, "db_env_create", ret);
		return false;
	}
	store->env = env;
	env->set_errcall(env, bdb_errcall);
	(void)env->set_event_notify(env, bdb_event);
	/* One owner process, locked above: recovery at every open is right
	 * (and is what makes kill -9 safe), and its regions are its own
	 * memory (see the top of this file). */
	const u_int32_t flags = DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
		DB_INIT_LOCK | DB_INIT_MPOOL | DB_THREAD | DB_RECOVER | DB_PRIVATE;
	if ((ret = env->set_cachesize(env, 0, CACHE_SIZE, 1)) != 0 ||
	    (ret = env->set_lk_detect(env, DB_LOCK_DEFAULT)) != 0 ||
	    (ret = env->set_lg_max(env, LOG_FILE_SIZE)) != 0 ||
	    (ret = env->set_lg_bsize(env, LOG_BUFFER_SIZE)) != 0 ||
	    (ret = env->log_set_config(env, DB_LOG_AUTO_REMOVE, 1)) != 0 ||
	    (ret = env->set_tx_max(env, 200)) != 0 ||
	    (ret = env->open(env, store->dir, flags, 0600)) != 0) {
		*error_r = store_fail(store, "opening the environment", ret);
		return false;
	}
	if ((ret = db_open_one(store, &store->envelopes, ENVELOPE_DB, 0)) != 0 ||
	    (ret = db_open_one(store, &store->bodies, BODY_DB, BODY_PAGESIZE)) != 0) {
		*error_r = store_fail(store, "opening the databases", ret);
		return false;
	}
	return true;
}

static void store_free(struct queue_store *store)
{
	if (store->bodies != NULL)
		(void)store->bodies->close(store->bodies, 0);
	if (store->envelopes != NULL)
		(void)store->envelopes->close(store->envelopes, 0);
	if (store->env != NULL)
		(void)store->env->close(store->env, 0);
	if (store->lock_fd >= 0)
		close(store->lock_fd);
	free(store->dir);
	free(store);
}

struct queue_store *queue_store_open(const char *dir, struct mt_loop *loop,
				     const char **error_r)
{
	static _Thread_local char error[600];
	struct queue_store *store = mt_xcalloc(1, sizeof(*store));
	store->dir = mt_xstrdup(dir);
	store->loop = loop;
	store->lock_fd = -1;

	static const struct mt_bdb_commit_settings commit_set = { .name = "queue" };
	static const struct mt_bdb_checkpoint_settings ckp_set = {
		.name = "queue", .interval_secs = CHECKPOINT_SECS,
	};
	const char *fail = NULL;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		fail = store_fail(store, "mkdir", errno);
	if (fail == NULL && !take_lock(store, &fail)) {
	} else if (fail == NULL && !env_open(store, &fail)) {
	} else if (fail == NULL &&
		   (store->commit = mt_bdb_commit_start(store->env, &commit_set,
							&fail)) == NULL) {
	} else if (fail == NULL &&
		   (store->checkpointer = mt_bdb_checkpointer_start(store->env, &ckp_set,
								     &fail)) == NULL) {
	}
	if (fail != NULL) {
		snprintf(error, sizeof(error), "%s", fail);
		*error_r = error;
		mt_bdb_commit_stop(&store->commit);
		store_free(store);
		return NULL;
	}
	return store;
}

void queue_store_close(struct queue_store **store_p)
{
	struct queue_store *store = *store_p;
	if (store == NULL)
		return;
	*store_p = NULL;
	mt_bdb_commit_stop(&store->commit);
	mt_bdb_checkpointer_stop(&store->checkpointer);
	int ret = store->env->txn_checkpoint(store->env, 0, 0, 0);
	if (ret != 0)
		mt_error("queue: final checkpoint failed: %s", db_strerror(ret));
	store_free(store);
}

bool queue_store_scan(struct queue_store *store, queue_store_scan_cb_t *cb,
		      void *context, const char **error_r)
{
	DBC *cursor;
	int ret = store->envelopes->cursor(store->envelopes, NULL, &cursor, 0);
	if (ret != 0) {
		*error_r = store_fail(store, "reading envelopes", ret);
		return false;
	}
	DBT key, data;
	memset(&key, 0, sizeof(key));
	memset(&data, 0, sizeof(data));
	while ((ret = cursor->get(cursor, &key, &data, DB_NEXT)) == 0)
		cb(key.data, key.size, data.data, data.size, context);
	(void)cursor->close(cursor);
	if (ret != DB_NOTFOUND) {
		*error_r = store_fail(store, "reading envelopes", ret);
		return false;
	}
	return true;
}

/* Writes */

struct queue_store_write *queue_store_write_new(void)
{
	return mt_xcalloc(1, sizeof(struct queue_store_write));
}

static struct store_op *write_add(struct queue_store_write *w,
				  enum op_kind kind, const char *id)
{
	if (w->count == w->cap) {
		w->cap = w->cap == 0 ? 4 : w->cap * 2;
		w->ops = mt_xrealloc(w->ops, w->cap * sizeof(*w->ops));
	}
	struct store_op *op = &w->ops[w->count++];
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	snprintf(op->id, sizeof(op->id), "%s", id);
	return op;
}

void queue_store_write_envelope(struct queue_store_write *w, const char *id,
				struct mt_buf *record)
{
	struct store_op *op = write_add(w, OP_ENVELOPE, id);
	op->record = *record;
	mt_buf_init(record);
}

void queue_store_write_body(struct queue_store_write *w, const char *id,
			    struct queue_body *body)
{
	struct store_op *op = write_add(w, OP_PIECE, id);
	queue_body_ref(body);
	op->body = body;
	op->index = 0;
}

void queue_store_write_piece(struct queue_store_write *w, const char *id,
			     uint32_t index, struct mt_buf *data)
{
	struct store_op *op = write_add(w, OP_PIECE, id);
	op->index = index;
	op->record = *data;
	mt_buf_init(data);
}

void queue_store_write_delete(struct queue_store_write *w, const char *id)
{
	(void)write_add(w, OP_DELETE, id);
}

static void dbt_set(DBT *dbt, const void *data, size_t size)
{
	memset(dbt, 0, sizeof(*dbt));
	dbt->data = (void *)data;
	dbt->size = (u_int32_t)size;
}

/* Body keys: the id and the piece's index, big-endian so that a message's
 * pieces sort together and in order. A key of the id alone is a body
 * written whole by an older release: piece 0, the only one. */
#define PIECE_KEY_LEN (QUEUE_ID_LEN + 4)

static void piece_key(unsigned char key[PIECE_KEY_LEN], const char *id,
		      uint32_t index)
{
	memcpy(key, id, QUEUE_ID_LEN);
	key[QUEUE_ID_LEN] = (unsigned char)(index >> 24);
	key[QUEUE_ID_LEN + 1] = (unsigned char)(index >> 16);
	key[QUEUE_ID_LEN + 2] = (unsigned char)(index >> 8);
	key[QUEUE_ID_LEN + 3] = (unsigned char)index;
}

/* Is key one of id's pieces (id NULL: any message's)? Its index if so. */
static bool piece_of(const DBT *key, const char *id, uint32_t *index_r)
{
	if (key->size != QUEUE_ID_LEN && key->size != PIECE_KEY_LEN)
		return false;
	if (id != NULL && memcmp(key->data, id, QUEUE_ID_LEN) != 0)
		return false;
	const unsigned char *k = key->data;
	*index_r = key->size == QUEUE_ID_LEN ? 0 :
		(uint32_t)k[QUEUE_ID_LEN] << 24 | (uint32_t)k[QUEUE_ID_LEN + 1] << 16 |
		(uint32_t)k[QUEUE_ID_LEN + 2] << 8 | k[QUEUE_ID_LEN + 3];
	return true;
}

/* Delete every piece of id's body in txn. */
static int delete_pieces(DB *bodies, DB_TXN *txn, const char *id)
{
	DBC *cursor;
	int ret = bodies->cursor(bodies, txn, &cursor, 0);
	if (ret != 0)
		return ret;
	DBT key, data;
	dbt_set(&key, id, QUEUE_ID_LEN);
	memset(&data, 0, sizeof(data));
	data.flags = DB_DBT_PARTIAL;	/* keys only: never read a body */
	uint32_t index;
	u_int32_t how = DB_SET_RANGE | DB_RMW;
	while ((ret = cursor->get(cursor, &key, &data, how)) == 0 &&
	       piece_of(&key, id, &index)) {
		if ((ret = cursor->del(cursor, 0)) != 0)
			break;
		how = DB_NEXT | DB_RMW;
	}
	int close_ret = cursor->close(cursor);
	if (ret == 0 || ret == DB_NOTFOUND)
		ret = close_ret;
	return ret;
}

/* On the executor thread: apply the ops in txn. */
static int write_job(DB_ENV *env, DB_TXN *txn, void *context)
{
	struct queue_store_write *w = context;
	struct queue_store *store = w->store;
	for (unsigned int i = 0; i < w->count; i++) {
		const struct store_op *op = &w->ops[i];
		unsigned char pkey[PIECE_KEY_LEN];
		DBT key, data;
		int ret = 0;
		dbt_set(&key, op->id, QUEUE_ID_LEN);
		switch (op->kind) {
		case OP_ENVELOPE:
			dbt_set(&data, op->record.data, op->record.len);
			ret = store->envelopes->put(store->envelopes, txn, &key,
						    &data, 0);
			break;
		case OP_PIECE:
			piece_key(pkey, op->id, op->index);
			dbt_set(&key, pkey, sizeof(pkey));
			if (op->body != NULL)
				dbt_set(&data, op->body->data, op->body->size);
			else
				dbt_set(&data, op->record.data, op->record.len);
			ret = store->bodies->put(store->bodies, txn, &key, &data, 0);
			break;
		case OP_DELETE:
			ret = store->envelopes->del(store->envelopes, txn, &key, 0);
			if (ret == 0 || ret == DB_NOTFOUND)
				ret = delete_pieces(store->bodies, txn, op->id);
			break;
		}
		if (ret != 0)
			return ret;
	}
	return 0;
}

/* On the loop: durable (or failed); release what the ops held. */
static void write_done(int status, void *context)
{
	struct queue_store_write *w = context;
	if (status != 0)
		mt_error("queue: write of %u operations failed: %s", w->count,
			 status > 0 ? strerror(status) : db_strerror(status));
	if (w->done != NULL)
		w->done(status, w->context);
	for (unsigned int i = 0; i < w->count; i++) {
		mt_buf_free(&w->ops[i].record);
		queue_body_unref(&w->ops[i].body);
	}
	free(w->ops);
	free(w);
}

void queue_store_write_submit(struct queue_store *store,
			      struct queue_store_write *w,
			      enum queue_store_urgency urgency,
			      queue_store_done_cb_t *done, void *context)
{
	static const unsigned int flags[] = {
		[QUEUE_STORE_WAITED] = 0,
		[QUEUE_STORE_COMPANY] = MT_BDB_JOB_COMPANY,
		[QUEUE_STORE_LAZY] = MT_BDB_JOB_LAZY,
		[QUEUE_STORE_UNFLUSHED] = MT_BDB_JOB_UNFLUSHED,
	};
	w->store = store;
	w->done = done;
	w->context = context;
	mt_bdb_commit_submit(store->commit, store->loop, flags[urgency],
			     write_job, write_done, w);
}

void queue_store_set_commit_delay(struct queue_store *store, unsigned int usecs)
{
	mt_bdb_commit_set_delay(store->commit, usecs);
}

void queue_store_observe_checkpoints(struct queue_store *store, struct mt_series *histogram)
{
	if (store->checkpointer != NULL)
		mt_bdb_checkpointer_observe(store->checkpointer, histogram);
}

void queue_store_observe_commit_latency(struct queue_store *store,
					struct mt_series *histogram)
{
	mt_bdb_commit_observe_latency(store->commit, histogram);
}

/* Reads */

/* On the executor thread: id's pieces from r->from on, whole, until
 * max_bytes are read (at least one piece) or the body ends. */
static int read_job(DB_ENV *env, DB_TXN *txn, void *context)
{
	struct piece_read *r = context;
	DB *bodies = r->store->bodies;
	DBC *cursor;
	int ret = bodies->cursor(bodies, NULL, &cursor, 0);
	if (ret != 0)
		return ret;
	unsigned char pkey[PIECE_KEY_LEN];
	DBT key, data;
	if (r->from == 0) {
		dbt_set(&key, r->id, QUEUE_ID_LEN);	/* also finds an old whole body */
	} else {
		piece_key(pkey, r->id, r->from);
		dbt_set(&key, pkey, sizeof(pkey));
	}
	memset(&data, 0, sizeof(data));
	data.flags = DB_DBT_REALLOC;
	DBT peek;
	memset(&peek, 0, sizeof(peek));
	peek.flags = DB_DBT_PARTIAL;	/* is there more? the key says */
	uint32_t index;
	bool found = false;
	u_int32_t how = DB_SET_RANGE;
	r->complete = true;
	for (;;) {
		bool full = found && r->data.len >= r->max_bytes;
		ret = cursor->get(cursor, &key, full ? &peek : &data, how);
		how = DB_NEXT;
		if (ret != 0 || !piece_of(&key, r->id, &index))
			break;
		if (full || (found && index != r->next)) {
			r->complete = false;	/* more to come (or a gap: its read fails) */
			break;
		}
		if (!found && r->from != 0 && index != r->from)
			break;			/* the piece asked for is gone */
		found = true;
		mt_buf_append(&r->data, data.data, data.size);
		r->next = index + 1;
	}
	free(data.data);
	(void)cursor->close(cursor);
	if (ret != 0 && ret != DB_NOTFOUND)
		return ret;
	return found ? 0 : DB_NOTFOUND;
}

static void read_done(int status, void *context)
{
	struct piece_read *r = context;
	struct queue_body *body = NULL;
	if (status == 0) {
		size_t size = r->data.len;
		body = queue_body_new(mt_buf_steal(&r->data), size);
		body->complete = r->complete;
		body->next_piece = r->next;
	}
	r->done(status, body, r->context);
	queue_body_unref(&body);
	mt_buf_free(&r->data);
	free(r);
}

void queue_store_read_pieces(struct queue_store *store, const char *id,
			     uint32_t from, size_t max_bytes,
			     queue_store_body_cb_t *done, void *context)
{
	struct piece_read *r = mt_xcalloc(1, sizeof(*r));
	r->store = store;
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->from = from;
	r->max_bytes = max_bytes;
	r->done = done;
	r->context = context;
	mt_bdb_commit_submit(store->commit, store->loop, MT_BDB_JOB_READ,
			     read_job, read_done, r);
}

/* Start-up: the pieces of bodies whose envelope never became durable (a
 * message still arriving when the process died) are found in one pass over
 * the keys, then deleted, one message per transaction. */
unsigned int queue_store_sweep_orphans(struct queue_store *store,
				       queue_store_known_cb_t *known,
				       void *context)
{
	char (*orphans)[QUEUE_ID_LEN + 1] = NULL;
	size_t count = 0, cap = 0;
	DBC *cursor;
	int ret = store->bodies->cursor(store->bodies, NULL, &cursor, 0);
	if (ret != 0) {
		mt_error("queue: looking for unfinished bodies: %s", db_strerror(ret));
		return 0;
	}
	DBT key, data;
	memset(&key, 0, sizeof(key));
	memset(&data, 0, sizeof(data));
	data.flags = DB_DBT_PARTIAL;	/* keys only */
	uint32_t index;
	while ((ret = cursor->get(cursor, &key, &data, DB_NEXT)) == 0) {
		if (!piece_of(&key, NULL, &index))
			continue;
		char id[QUEUE_ID_LEN + 1];
		memcpy(id, key.data, QUEUE_ID_LEN);
		id[QUEUE_ID_LEN] = '\0';
		if ((count > 0 && strcmp(orphans[count - 1], id) == 0) ||
		    known(id, context))
			continue;
		if (count == cap) {
			cap = cap == 0 ? 16 : cap * 2;
			orphans = mt_xrealloc(orphans, cap * sizeof(*orphans));
		}
		memcpy(orphans[count++], id, sizeof(id));
	}
	(void)cursor->close(cursor);
	unsigned int removed = 0;
	for (size_t i = 0; i < count; i++) {
		DB_TXN *txn;
		if ((ret = store->env->txn_begin(store->env, NULL, &txn, 0)) == 0 &&
		    (ret = delete_pieces(store->bodies, txn, orphans[i])) != 0)
			(void)txn->abort(txn);
		else if (ret == 0)
			ret = txn->commit(txn, 0);
		if (ret != 0) {
			mt_error("queue=%s deleting an unfinished body failed: %s",
				 orphans[i], db_strerror(ret));
			continue;
		}
		mt_warning("queue=%s deleted the body of a message that was still "
			   "arriving when the MTA stopped (never acknowledged)",
			   orphans[i]);
		removed++;
	}
	free(orphans);
	return removed;
}

void queue_store_get_stats(struct queue_store *store,
			   struct mt_bdb_commit_stats *stats_r)
{
	mt_bdb_commit_get_stats(store->commit, stats_r);
}

unsigned int queue_store_pending(struct queue_store *store)
{
	return mt_bdb_commit_pending(store->commit);
}
