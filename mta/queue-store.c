/* queue-store.c — the MTA queue's Berkeley DB environment (see
 * queue-store.h): open with recovery under a lock file, the envelope and
 * body databases, writes as group-committed transactions, body reads, and
 * the checkpoint thread (lib/bdb-checkpoint.h: it trickles the cache every
 * second so a checkpoint does not stall commits).
 *
 * Trust boundary: queue_dir is the administrator's; nothing from the
 * network is interpreted here (records and bodies are opaque bytes).
 * Durability: environment flags DB_INIT_TXN | DB_INIT_LOG | DB_RECOVER, every
 * write a transaction committed with DB_TXN_NOSYNC and made durable by the
 * flusher's log_flush() before its completion runs (lib/bdb-commit.c).
 * Full disk: every page of the region files is backed by allocated blocks
 * from the open on (DB_REGION_INIT and lib/bdb-regions.c), so it cannot
 * fault the process (it died of SIGBUS in tests/faults disk-full-mta); a
 * write that finds no space fails, and the message gets 451. */
#include "queue-store.h"
#include "alloc.h"
#include "bdb-checkpoint.h"
#include "bdb-regions.h"
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
#include <sys/file.h>
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

enum op_kind { OP_ENVELOPE, OP_BODY, OP_DELETE };

struct store_op {
	enum op_kind kind;
	char id[QUEUE_ID_LEN + 1];
	struct mt_buf record;
	struct queue_body *body;
};

struct queue_store_write {
	struct queue_store *store;
	struct store_op *ops;
	unsigned int count, cap;
	queue_store_done_cb_t *done;
	void *context;
};

struct body_read {
	struct queue_store *store;
	char id[QUEUE_ID_LEN + 1];
	void *data;
	size_t size;
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
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", store->dir, LOCK_FILE);
	store->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (store->lock_fd < 0) {
		*error_r = store_fail(store, "lock file", errno);
		return false;
	}
	if (flock(store->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		*error_r = errno == EWOULDBLOCK ?
			store_fail(store, "in use by another mailtier-mta", EBUSY) :
			store_fail(store, "lock file", errno);
		return false;
	}
	return true;
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
	 * (and is what makes kill -9 safe). */
	const u_int32_t flags = DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
		DB_INIT_LOCK | DB_INIT_MPOOL | DB_THREAD | DB_RECOVER;
	if ((ret = env->set_cachesize(env, 0, CACHE_SIZE, 1)) != 0 ||
	    (ret = env->set_lk_detect(env, DB_LOCK_DEFAULT)) != 0 ||
	    (ret = env->set_lg_max(env, LOG_FILE_SIZE)) != 0 ||
	    (ret = env->set_lg_bsize(env, LOG_BUFFER_SIZE)) != 0 ||
	    (ret = env->log_set_config(env, DB_LOG_AUTO_REMOVE, 1)) != 0 ||
	    (ret = env->set_tx_max(env, 200)) != 0 ||
	    (ret = env->set_flags(env, DB_REGION_INIT, 1)) != 0 ||
	    (ret = env->open(env, store->dir, flags, 0600)) != 0) {
		*error_r = store_fail(store, "opening the environment", ret);
		return false;
	}
	/* Without space for them the MTA would crash later: refuse to start.
	 * Without fallocate (or /proc) here: a full disk may crash it. */
	unsigned int regions;
	uint64_t region_bytes;
	char failed[PATH_MAX];
	if ((ret = mt_bdb_prealloc_regions(store->dir, &regions, &region_bytes,
					   failed, sizeof(failed))) == ENOSPC ||
	    ret == EDQUOT) {
		*error_r = store_fail(store, "allocating the region files", ret);
		return false;
	} else if (ret != 0) {
		mt_warning("queue: %s: region files not preallocated%s%s: %s; a "
			   "full disk may crash this process", store->dir,
			   failed[0] != '\0' ? " at " : "", failed, strerror(ret));
	} else {
		mt_debug("queue: %s: regions=%u region_bytes=%llu preallocated",
			 store->dir, regions, (unsigned long long)region_bytes);
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
	static char error[600];
	struct queue_store *store = mt_xcalloc(1, sizeof(*store));
	store->dir = mt_xstrdup(dir);
	store->loop = loop;
	store->lock_fd = -1;

	const char *fail = NULL;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		fail = store_fail(store, "mkdir", errno);
	if (fail == NULL && !take_lock(store, &fail)) {
	} else if (fail == NULL && !env_open(store, &fail)) {
	} else if (fail == NULL &&
		   (store->commit = mt_bdb_commit_start(store->env, &fail)) == NULL) {
	} else if (fail == NULL &&
		   (store->checkpointer = mt_bdb_checkpointer_start(store->env, "queue",
								     CHECKPOINT_SECS,
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
	struct store_op *op = write_add(w, OP_BODY, id);
	queue_body_ref(body);
	op->body = body;
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

/* On the executor thread: apply the ops in txn. */
static int write_job(DB_ENV *env, DB_TXN *txn, void *context)
{
	struct queue_store_write *w = context;
	struct queue_store *store = w->store;
	for (unsigned int i = 0; i < w->count; i++) {
		const struct store_op *op = &w->ops[i];
		DBT key, data;
		int ret = 0;
		dbt_set(&key, op->id, QUEUE_ID_LEN);
		switch (op->kind) {
		case OP_ENVELOPE:
			dbt_set(&data, op->record.data, op->record.len);
			ret = store->envelopes->put(store->envelopes, txn, &key,
						    &data, 0);
			break;
		case OP_BODY:
			dbt_set(&data, op->body->data, op->body->size);
			ret = store->bodies->put(store->bodies, txn, &key, &data, 0);
			break;
		case OP_DELETE:
			ret = store->envelopes->del(store->envelopes, txn, &key, 0);
			if (ret == 0 || ret == DB_NOTFOUND)
				ret = store->bodies->del(store->bodies, txn, &key, 0);
			if (ret == DB_NOTFOUND)
				ret = 0;
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
			      struct queue_store_write *w, bool lazy, bool company,
			      queue_store_done_cb_t *done, void *context)
{
	w->store = store;
	w->done = done;
	w->context = context;
	mt_bdb_commit_submit(store->commit, store->loop,
			     (lazy ? MT_BDB_JOB_LAZY : 0) | (company ? MT_BDB_JOB_COMPANY : 0),
			     write_job, write_done, w);
}

void queue_store_set_commit_delay(struct queue_store *store, unsigned int usecs)
{
	mt_bdb_commit_set_delay(store->commit, usecs);
}

/* Reads */

static int read_job(DB_ENV *env, DB_TXN *txn, void *context)
{
	struct body_read *r = context;
	DBT key, data;
	dbt_set(&key, r->id, QUEUE_ID_LEN);
	memset(&data, 0, sizeof(data));
	data.flags = DB_DBT_MALLOC;
	int ret = r->store->bodies->get(r->store->bodies, NULL, &key, &data, 0);
	if (ret == 0) {
		r->data = data.data;
		r->size = data.size;
	}
	return ret;
}

static void read_done(int status, void *context)
{
	struct body_read *r = context;
	struct queue_body *body = NULL;
	if (status == 0)
		body = queue_body_new(r->data, r->size);
	r->done(status, body, r->context);
	queue_body_unref(&body);
	free(r);
}

void queue_store_read_body(struct queue_store *store, const char *id,
			   queue_store_body_cb_t *done, void *context)
{
	struct body_read *r = mt_xcalloc(1, sizeof(*r));
	r->store = store;
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->done = done;
	r->context = context;
	mt_bdb_commit_submit(store->commit, store->loop, MT_BDB_JOB_READ,
			     read_job, read_done, r);
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
