/* store-req.h — the request layer: one shape for every request (its ops,
 * struct store_req_ops: run, settle, apply, free; its own state in the
 * kind's struct around struct mt_store_req) over the executors that know
 * no kinds (store-commit.c's group commit, store-async.c's reader pool),
 * completion ports, IMAP's operations (store_op, store-ops.c) and streamed
 * bodies (store-body.c). Built on store-mailbox.h; the top of the store.
 * Trust boundary: as store.h; arguments are checked when a request is
 * made, before it is queued. */
#ifndef MT_STORE_REQ_H
#define MT_STORE_REQ_H

#include "store-mailbox.h"
#include "buf.h"

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
 * no kinds: they call run, then (commit path) settle after the flush; the
 * port (store-async.c) calls apply before the callback, and
 * store_req_free() calls free. The ops of each kind live beside the code
 * that makes its requests: store-async.c (deliver, expunge, open, read),
 * store-body.c (a chunk, an abort), store-ops.c (IMAP's change, query). */
struct store_req_ops {
	const char *name;
	size_t size;			/* of the kind's request struct */
	enum store_path path;
	/* Commit path: completed as soon as run returns, without a log flush
	 * (a streamed body's chunk writes and aborts: store-body.c says why). */
	bool unflushed;
	/* On an executor or a reader thread: the work, its outcome in req
	 * (status, needs_flush, removed). */
	void (*run)(struct mt_store *store, struct mt_store_req *req);
	/* At the request's end, before its completion: on the flusher after
	 * the flush (commit path), or at submission if it was refused.
	 * durable false: what it did is not durable (the flush it needed
	 * failed) or it did not run (refused); its error says why. Counters,
	 * per-recipient results. May be NULL. */
	void (*settle)(struct mt_store *store, struct mt_store_req *req,
		       bool durable);
	/* On the caller's thread (the port's loop, or a blocking caller),
	 * before the callback: an OK result applied to the caller's objects
	 * (a snapshot). May be NULL. */
	void (*apply)(struct mt_store_req *req);
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

	unsigned int removed;		/* messages it expunged: purge */
};

/* A request of a kind is its own struct with struct mt_store_req first
 * (ops->size long, allocated by store_req_new()); its ops reach it with a
 * cast. Those that two files share: */

/* A delivery, a chunk write or an abort (store-body.c, store-records.c):
 * the body, and for a delivery its last partial chunk in body/body_size
 * (for a chunk write the chunk). */
struct store_body_req {
	struct mt_store_req req;
	struct mt_store_body *sbody;
	uint32_t chunk;			/* chunk write: its index */
	struct mt_store_rcpt *rcpts;	/* delivery */
	unsigned int rcpt_count;
	char *body_owned;
	const char *body;
	size_t body_size;
};

/* An expunge (store-async.c, store-records.c). */
struct store_expunge_req {
	struct mt_store_req req;
	struct mt_store_mailbox *mbox;	/* a reference, counted as a writer */
	uint32_t *uids;
	unsigned int uid_count;
};

/* IMAP's change or query (store-ops.c): its op. */
struct store_op_req {
	struct mt_store_req req;
	struct store_op *op;		/* NULL: refused before one was made */
};

struct mt_store_port {
	struct mt_store *store;
	struct mt_loop *loop;
	pthread_mutex_t lock;
	struct mt_store_req *head, **tail;	/* finished, under lock */
	atomic_uint refs;		/* owner + requests in flight + a post */
	bool closed;			/* under lock */
};

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

/* store-ops.c */
/* req's op if req is a change or a query whose op runs run, else NULL
 * (the result accessors of each kind of op). */
struct store_op *store_req_op(const struct mt_store_req *req,
			      int (*run)(struct mt_store *, DB_TXN *,
					 struct store_op *));
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
struct store_body_req *store_deliver_new(struct mt_store *store,
					 struct mt_store_port *port,
					 const struct mt_store_rcpt *rcpts,
					 unsigned int count, mt_store_cb_t *cb,
					 void *context);
void store_req_set_error(struct mt_store_req *req, enum mt_store_status status,
			 const char *error);
bool store_readers_start(struct mt_store *store, const char **error_r);
void store_readers_stop(struct mt_store *store);

#endif
