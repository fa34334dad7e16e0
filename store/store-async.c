/* store-async.c — the store's async interface: requests, completion ports
 * on the callers' event loops, the reader pool (on lib-bdb's pipeline),
 * and the blocking *_wait variants built on the same requests (deliveries:
 * store-body.c). A request is one shape: what it does is its ops (struct
 * store_req_ops: run, settle, free), so the reader pool here and the group
 * commit (store-commit.c) know no kinds; the ops of deliveries, expunges,
 * mailbox opens and reads are here too.
 *
 * A completion port is a mutex-protected list of finished requests on the
 * caller's loop: a store thread appends one and, when the list was empty,
 * posts the port to the loop (mt_loop_post, the one thread-to-loop
 * hand-off); the loop thread takes the list and runs the callbacks. So one
 * wake-up serves every request finished meanwhile, and libevent is only
 * touched from the loop's thread.
 *
 * Trust boundary: arguments from the LMTP/POP3 code are checked here (name
 * lengths, message indexes, read sizes) before any work is queued.
 *
 * Guarantees: a callback runs exactly once, on the port's loop thread, after
 * the call that created the request has returned — never from inside it —
 * unless the request was cancelled or its port freed. */
#include "store-req.h"
#include "alloc.h"
#include "log.h"
#include "loop.h"
#include "thread.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* Requests */

static void port_unref(struct mt_store_port *port)
{
	if (atomic_fetch_sub(&port->refs, 1) == 1) {
		pthread_mutex_destroy(&port->lock);
		free(port);
	}
}

/* On the port's loop: run the callbacks of everything finished so far
 * (none once the port is closed), then drop the caller's reference (a
 * post's, or at mt_store_port_free() the owner's). */
static void port_run(void *context)
{
	struct mt_store_port *port = context;
	pthread_mutex_lock(&port->lock);
	struct mt_store_req *list = port->head;
	port->head = NULL;
	port->tail = &port->head;
	pthread_mutex_unlock(&port->lock);
	/* The caller's reference keeps the port while a callback frees it. */
	for (struct mt_store_req *req = list, *next; req != NULL; req = next) {
		next = req->next;
		if (!req->cancelled && !port->closed && req->cb != NULL) {
			if (req->ops->apply != NULL)
				req->ops->apply(req);
			req->cb(req, req->context);
		}
		store_req_free(req);
	}
	port_unref(port);
}

/* The loop was freed before the post ran (the port was freed first, so
 * its list is empty): the post's reference goes. */
static void port_discard(void *context)
{
	port_unref(context);
}

struct mt_store_req *store_req_new(struct mt_store *store,
				   const struct store_req_ops *ops,
				   struct mt_store_port *port, mt_store_cb_t *cb,
				   void *context)
{
	struct mt_store_req *req = mt_xcalloc(1, ops->size);
	req->ops = ops;
	req->store = store;
	req->port = port;
	req->cb = cb;
	req->context = context;
	if (port != NULL)
		atomic_fetch_add(&port->refs, 1);
	return req;
}

void store_req_free(struct mt_store_req *req)
{
	if (req->ops->free != NULL)
		req->ops->free(req);
	if (req->port != NULL)
		port_unref(req->port);
	free(req);
}

void store_req_set_error(struct mt_store_req *req, enum mt_store_status status,
			 const char *error)
{
	req->status = status;
	snprintf(req->error, sizeof(req->error), "%s", error);
}

void store_req_complete(struct mt_store_req *req)
{
	if (req->port == NULL && req->waiter == NULL) {
		store_req_free(req);	/* nobody waits for it (an abort) */
		return;
	}
	if (req->port == NULL) {
		struct store_waiter *w = req->waiter;
		pthread_mutex_lock(&w->lock);
		w->done = true;
		pthread_cond_signal(&w->cond);
		pthread_mutex_unlock(&w->lock);
		return;
	}
	struct mt_store_port *port = req->port;
	pthread_mutex_lock(&port->lock);
	if (port->closed) {
		pthread_mutex_unlock(&port->lock);
		store_req_free(req);
		return;
	}
	bool wake = port->head == NULL;
	req->next = NULL;
	*port->tail = req;
	port->tail = &req->next;
	if (wake) {
		/* The post holds a reference: the port outlives it. */
		atomic_fetch_add(&port->refs, 1);
		mt_loop_post_discardable(port->loop, port_run, port_discard, port);
	}
	pthread_mutex_unlock(&port->lock);
}

void mt_store_req_cancel(struct mt_store_req *req)
{
	req->cancelled = true;
}

enum mt_store_status mt_store_req_status(const struct mt_store_req *req,
					 const char **error_r)
{
	if (error_r != NULL)
		*error_r = req->error;
	return req->status;
}


/* Ports */

struct mt_store_port *mt_store_port_new(struct mt_store *store,
					struct mt_loop *loop,
					const char **error_r)
{
	(void)error_r;
	struct mt_store_port *port = mt_xcalloc(1, sizeof(*port));
	port->store = store;
	port->loop = loop;
	port->tail = &port->head;
	pthread_mutex_init(&port->lock, NULL);
	atomic_init(&port->refs, 1);
	return port;
}

void mt_store_port_free(struct mt_store_port **port_p)
{
	struct mt_store_port *port = *port_p;
	if (port == NULL)
		return;
	*port_p = NULL;
	pthread_mutex_lock(&port->lock);
	port->closed = true;
	pthread_mutex_unlock(&port->lock);
	/* What finished meanwhile is freed without its callback, and the
	 * owner's reference goes. */
	port_run(port);
}

/* Reader pool */

/* On a reader thread: the read, then its completion (port or waiter). */
static int reader_job(DB_ENV *env, DB_TXN *txn, void *context)
{
	(void)env;
	(void)txn;
	struct mt_store_req *req = context;
	pthread_rwlock_rdlock(&req->store->io_lock);
	store_counter_add(&req->store->n_reads, 1);
	req->ops->run(req->store, req);
	pthread_rwlock_unlock(&req->store->io_lock);
	return 0;
}

static void reader_done(int status, void *context)
{
	(void)status;
	store_req_complete(context);
}

/* The reader pool is lib-bdb's pipeline with read jobs only: reader_threads
 * executors, no transaction of their own, completed without a flush. */
bool store_readers_start(struct mt_store *store, const char **error_r)
{
	const struct mt_bdb_commit_settings set = {
		.name = "store readers", .executors = store->set.reader_threads,
	};
	const char *error;
	store->readers = mt_bdb_commit_start(store->env, &set, &error);
	if (store->readers == NULL) {
		*error_r = store_error("store %s: %s", store->home, error);
		return false;
	}
	return true;
}

void store_readers_stop(struct mt_store *store)
{
	mt_bdb_commit_stop(&store->readers);
}

/* Submission */

static void req_refuse(struct mt_store_req *req, enum mt_store_status status,
		       const char *error)
{
	store_req_set_error(req, status, error);
	req->refused = true;
}

struct mt_store_req *store_req_submit(struct mt_store_req *req)
{
	struct mt_store *store = req->store;
	if (!req->refused && store->set.mode != MT_STORE_MODE_SERVE)
		req_refuse(req, MT_STORE_INVALID, "store opened for administration only");
	if (!req->refused && atomic_load(&store->failed))
		req_refuse(req, MT_STORE_FATAL, "store failed: restart needed for recovery");
	if (!req->refused && store->repl != NULL &&
	    atomic_load(&store->repl_state) != STORE_REPL_SERVING)
		req_refuse(req, MT_STORE_TEMPFAIL, "not the master of the shard's group");
	if (req->refused) {
		if (req->ops->settle != NULL)
			req->ops->settle(store, req, false);
		store_req_complete(req);
	} else if (req->ops->path == STORE_PATH_COMMIT)
		store_commit_submit(store, req);
	else
		mt_bdb_commit_submit(store->readers, NULL, MT_BDB_JOB_READ, reader_job,
				     reader_done, req);
	return req;
}

void store_req_wait(struct mt_store_req *req)
{
	struct store_waiter w = { .done = false };
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	req->waiter = &w;
	(void)store_req_submit(req);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.cond);
}

static bool name_ok(const char *name)
{
	size_t len = name == NULL ? 0 : strlen(name);
	return len > 0 && len <= MT_STORE_MAILBOX_MAX;
}

/* NULL (INBOX) or a folder name. */
static bool folder_ok(const char *folder)
{
	size_t len = folder == NULL ? 1 : strlen(folder);
	return len > 0 && len <= MT_STORE_FOLDER_MAX;
}

/* Deliver: the recipients' transactions (store-records.c); after the flush,
 * a failed flush's status for each stored copy, or the counters. */
static void deliver_settle(struct mt_store *store, struct mt_store_req *req,
			   bool durable)
{
	struct store_body_req *d = (struct store_body_req *)req;
	if (!durable) {
		for (unsigned int i = 0; i < d->rcpt_count; i++)
			if (d->rcpts[i].status == MT_STORE_OK)
				d->rcpts[i].status = req->status;
		return;
	}
	uint64_t delivered = 0, duplicates = 0;
	for (unsigned int i = 0; i < d->rcpt_count; i++) {
		if (d->rcpts[i].status != MT_STORE_OK)
			continue;
		delivered++;
		duplicates += d->rcpts[i].duplicate;
	}
	uint64_t size = d->sbody != NULL ? mt_store_body_size(d->sbody) :
		d->body_size;
	store_counter_add(&store->n_delivery_requests, 1);
	store_counter_add(&store->n_deliveries, delivered);
	store_counter_add(&store->n_duplicates, duplicates);
	store_counter_add(&store->n_bytes_stored, (delivered - duplicates) * size);
}

static void deliver_free(struct mt_store_req *req)
{
	struct store_body_req *d = (struct store_body_req *)req;
	for (unsigned int i = 0; i < d->rcpt_count; i++) {
		struct mt_store_rcpt *r = &d->rcpts[i];
		free((char *)r->mailbox);
		free((char *)r->prefix);
		free((char *)r->delivery_id);
		free((char *)r->folder);
		for (unsigned int k = 0; k < r->keyword_count; k++)
			free((char *)r->keywords[k]);
		free((void *)r->keywords);
	}
	free(d->rcpts);
	free(d->body_owned);
	if (d->sbody != NULL)
		store_body_unref(d->sbody);
}

static const struct store_req_ops deliver_ops = {
	.name = "deliver", .size = sizeof(struct store_body_req),
	.path = STORE_PATH_COMMIT,
	.run = store_records_deliver, .settle = deliver_settle,
	.free = deliver_free,
};

struct store_body_req *store_deliver_new(struct mt_store *store,
					 struct mt_store_port *port,
					 const struct mt_store_rcpt *rcpts,
					 unsigned int count, mt_store_cb_t *cb,
					 void *context)
{
	struct store_body_req *d = (struct store_body_req *)
		store_req_new(store, &deliver_ops, port, cb, context);
	struct mt_store_req *req = &d->req;
	d->rcpts = mt_xcalloc(count == 0 ? 1 : count, sizeof(*d->rcpts));
	d->rcpt_count = count;
	for (unsigned int i = 0; i < count; i++) {
		struct mt_store_rcpt *r = &d->rcpts[i];
		*r = rcpts[i];
		r->uid = 0;
		r->uidvalidity = 0;
		r->status = MT_STORE_OK;
		r->duplicate = false;
		r->folder = rcpts[i].folder != NULL &&
			strcmp(rcpts[i].folder, "INBOX") != 0 ?
			mt_xstrdup(rcpts[i].folder) : NULL;
		r->keywords = NULL;
		r->keyword_count = 0;
		bool args_ok = folder_ok(rcpts[i].folder) &&
			(rcpts[i].flags & ~MT_STORE_FLAGS_ALL) == 0 &&
			rcpts[i].keyword_count <= MT_STORE_KEYWORDS_MAX &&
			(rcpts[i].keyword_count == 0 || rcpts[i].keywords != NULL);
		if (args_ok && rcpts[i].keyword_count > 0) {
			char **k = mt_xcalloc(rcpts[i].keyword_count, sizeof(char *));
			for (unsigned int j = 0; j < rcpts[i].keyword_count; j++) {
				const char *kw = rcpts[i].keywords[j];
				size_t len = kw != NULL ? strlen(kw) : 0;
				args_ok &= len > 0 && len <= MT_STORE_KEYWORD_MAX &&
					kw[0] != '\\';
				k[j] = mt_xstrdup(kw != NULL ? kw : "");
			}
			r->keywords = (const char *const *)k;
			r->keyword_count = rcpts[i].keyword_count;
		}
		if (!args_ok && name_ok(rcpts[i].mailbox)) {
			r->status = MT_STORE_INVALID;
			if (req->status == MT_STORE_OK)
				store_req_set_error(req, MT_STORE_INVALID,
						    "bad folder, flags or keywords");
		}
		r->delivery_id = rcpts[i].delivery_id != NULL ?
			mt_xstrdup(rcpts[i].delivery_id) : NULL;
		r->mailbox = mt_xstrdup(name_ok(rcpts[i].mailbox) ? rcpts[i].mailbox : "");
		r->prefix = NULL;
		if (r->prefix_len > 0 && rcpts[i].prefix != NULL) {
			char *p = mt_xmalloc(r->prefix_len);
			memcpy(p, rcpts[i].prefix, r->prefix_len);
			r->prefix = p;
		} else
			r->prefix_len = 0;
		if (!name_ok(rcpts[i].mailbox)) {
			r->status = MT_STORE_INVALID;
			if (req->status == MT_STORE_OK)
				store_req_set_error(req, MT_STORE_INVALID,
						    "bad mailbox name");
		}
	}
	unsigned int valid = 0;
	for (unsigned int i = 0; i < count; i++)
		valid += d->rcpts[i].status == MT_STORE_OK;
	if (valid == 0)
		req_refuse(req, MT_STORE_INVALID, count == 0 ? "no recipients" :
			   "bad mailbox name");
	return d;
}

const struct mt_store_rcpt *mt_store_req_rcpts(const struct mt_store_req *req,
					       unsigned int *count_r)
{
	const struct store_body_req *d = req->ops == &deliver_ops ?
		(const struct store_body_req *)req : NULL;
	*count_r = d != NULL ? d->rcpt_count : 0;
	return d != NULL ? d->rcpts : NULL;
}

/* Open: the in-use lock and the snapshot, on a reader. */
struct open_req {
	struct mt_store_req req;
	char *name;
	char *folder;			/* an IMAP folder's name, or NULL */
	struct mt_store_mailbox *result;	/* until taken */
};

static void open_run(struct mt_store *store, struct mt_store_req *req)
{
	struct open_req *o = (struct open_req *)req;
	const char *error;
	enum mt_store_status status =
		store_folder_open(store, o->name, o->folder,
				  o->folder == NULL, &o->result, &error);
	if (status != MT_STORE_OK)
		store_req_set_error(req, status, error);
}

static void open_free(struct mt_store_req *req)
{
	struct open_req *o = (struct open_req *)req;
	free(o->name);
	free(o->folder);
	if (o->result != NULL)
		mt_store_mailbox_close(&o->result);	/* not taken */
}

static const struct store_req_ops open_ops = {
	.name = "open", .size = sizeof(struct open_req), .path = STORE_PATH_READ,
	.run = open_run, .free = open_free,
};

static struct mt_store_req *open_new(struct mt_store_port *port,
				     const char *name, const char *folder,
				     mt_store_cb_t *cb, void *context)
{
	struct mt_store *store = port->store;
	struct open_req *o = (struct open_req *)
		store_req_new(store, &open_ops, port, cb, context);
	struct mt_store_req *req = &o->req;
	o->name = mt_xstrdup(name != NULL ? name : "");
	o->folder = folder != NULL ? mt_xstrdup(folder) : NULL;
	if (!name_ok(name))
		req_refuse(req, MT_STORE_INVALID, "bad mailbox name");
	else if (folder != NULL &&
		 (folder[0] == '\0' || strlen(folder) > MT_STORE_FOLDER_MAX))
		req_refuse(req, MT_STORE_INVALID, "bad folder name");
	return store_req_submit(req);
}

struct mt_store_mailbox *mt_store_req_mailbox(struct mt_store_req *req)
{
	if (req->ops != &open_ops)
		return NULL;
	struct open_req *o = (struct open_req *)req;
	struct mt_store_mailbox *mbox = o->result;
	o->result = NULL;
	return mbox;
}

struct mt_store_req *mt_store_mailbox_open(struct mt_store_port *port,
					   const char *name, mt_store_cb_t *cb,
					   void *context)
{
	return open_new(port, name, NULL, cb, context);
}

struct mt_store_req *mt_store_folder_open(struct mt_store_port *port,
					  const char *user, const char *name,
					  mt_store_cb_t *cb, void *context)
{
	return open_new(port, user, name != NULL ? name : "", cb, context);
}

enum mt_store_status mt_store_folder_open_sync(struct mt_store *store,
					       const char *user,
					       const char *name,
					       struct mt_store_mailbox **mbox_r,
					       const char **error_r)
{
	*mbox_r = NULL;
	if (!name_ok(user) || name == NULL || name[0] == '\0' ||
	    strlen(name) > MT_STORE_FOLDER_MAX) {
		*error_r = store_error("bad mailbox or folder name");
		return MT_STORE_INVALID;
	}
	store_counter_add(&store->n_reads, 1);
	return store_folder_open(store, user, name, false, mbox_r, error_r);
}

/* Read: a message's bytes, on a reader. */
struct read_req {
	struct mt_store_req req;
	struct mt_store_mailbox *mbox;	/* a reference */
	unsigned int index;
	uint64_t offset;
	size_t max;
	char *data;
	size_t data_size;
};

static void read_run(struct mt_store *store, struct mt_store_req *req)
{
	struct read_req *r = (struct read_req *)req;
	(void)store;
	const char *error;
	r->data = mt_xmalloc(r->max + 1);
	enum mt_store_status status =
		mt_store_read_sync(r->mbox, r->index, r->offset, r->data,
				   r->max, &r->data_size, &error);
	if (status != MT_STORE_OK)
		store_req_set_error(req, status, error);
}

static void read_free(struct mt_store_req *req)
{
	struct read_req *r = (struct read_req *)req;
	free(r->data);
	store_mailbox_unref(&r->mbox);
}

static const struct store_req_ops read_ops = {
	.name = "read", .size = sizeof(struct read_req), .path = STORE_PATH_READ,
	.run = read_run, .free = read_free,
};

const void *mt_store_req_data(const struct mt_store_req *req, size_t *size_r)
{
	const struct read_req *r = req->ops == &read_ops ?
		(const struct read_req *)req : NULL;
	*size_r = r != NULL ? r->data_size : 0;
	return r != NULL && r->data != NULL ? r->data : "";
}

struct mt_store_req *mt_store_read(struct mt_store_port *port,
				   struct mt_store_mailbox *mbox,
				   unsigned int index, uint64_t offset,
				   size_t max, mt_store_cb_t *cb, void *context)
{
	struct mt_store *store = port->store;
	struct read_req *r = (struct read_req *)
		store_req_new(store, &read_ops, port, cb, context);
	struct mt_store_req *req = &r->req;
	r->mbox = store_mailbox_ref(mbox);
	r->index = index;
	r->offset = offset;
	r->max = max > MT_STORE_READ_MAX ? MT_STORE_READ_MAX : max;
	if (index >= mbox->count)
		req_refuse(req, MT_STORE_NOT_FOUND, "no such message");
	return store_req_submit(req);
}

/* Expunge: one transaction (store-records.c); after the flush, the
 * counters. */
static void expunge_settle(struct mt_store *store, struct mt_store_req *req,
			   bool durable)
{
	if (!durable || req->status != MT_STORE_OK)
		return;
	store_counter_add(&store->n_expunges, 1);
	store_counter_add(&store->n_expunged, req->removed);
}

static void expunge_free(struct mt_store_req *req)
{
	struct store_expunge_req *e = (struct store_expunge_req *)req;
	free(e->uids);
	store_mailbox_writer(e->mbox, false);
	store_mailbox_unref(&e->mbox);
}

static const struct store_req_ops expunge_ops = {
	.name = "expunge", .size = sizeof(struct store_expunge_req),
	.path = STORE_PATH_COMMIT,
	.run = store_records_expunge, .settle = expunge_settle,
	.free = expunge_free,
};

static struct mt_store_req *expunge_new(struct mt_store_port *port,
					struct mt_store_mailbox *mbox,
					const uint32_t *uids, unsigned int count,
					mt_store_cb_t *cb, void *context)
{
	struct store_expunge_req *e = (struct store_expunge_req *)
		store_req_new(mbox->store, &expunge_ops, port, cb, context);
	e->mbox = store_mailbox_ref(mbox);
	store_mailbox_writer(mbox, true);
	e->uids = mt_xmalloc((count == 0 ? 1 : count) * sizeof(*uids));
	if (count > 0)
		memcpy(e->uids, uids, count * sizeof(*uids));
	e->uid_count = count;
	return &e->req;
}

struct mt_store_req *mt_store_expunge(struct mt_store_port *port,
				      struct mt_store_mailbox *mbox,
				      const uint32_t *uids, unsigned int count,
				      mt_store_cb_t *cb, void *context)
{
	struct mt_store_req *req = expunge_new(port, mbox, uids, count, cb, context);
	return store_req_submit(req);
}

enum mt_store_status mt_store_expunge_wait(struct mt_store_mailbox *mbox,
					   const uint32_t *uids,
					   unsigned int count,
					   const char **error_r)
{
	struct mt_store_req *req = expunge_new(NULL, mbox, uids, count, NULL, NULL);
	store_req_wait(req);
	enum mt_store_status status = req->status;
	*error_r = store_error("%s", req->error);
	store_req_free(req);
	return status;
}
