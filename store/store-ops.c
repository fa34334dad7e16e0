/* store-ops.c — the requests of IMAP's folder and flag operations
 * (store-folders.c, store-flags.c, store-copy.c, store-structure.c): each
 * operation is a struct store_op carried by a request of one of two ops
 * (struct store_req_ops): store_req_change, whose run is the op's one
 * transaction on the group-commit pipeline (committed without a sync,
 * completed after the flush that made it durable, as a delivery is), or
 * store_req_query, the op's reads on the reader pool. Here: running them,
 * their errors, and handing their results back.
 *
 * Trust boundary: none of its own (each operation checks its arguments
 * when it is made).
 *
 * Guarantees: a change completes MT_STORE_OK only once durable; on a full
 * disk it is refused before its transaction (store-space.c); its run is
 * retried from the start after a deadlock, so it must not keep state
 * between attempts but in what it resets. An op's apply runs on the
 * caller's thread, after an OK, before the callback. */
#include "store-req.h"
#include "log.h"

#include <sched.h>

static int op_txn(struct mt_store *store, DB_TXN *txn, void *context)
{
	struct store_op *op = context;
	op->wrote = false;
	op->expunged = 0;
	return op->run(store, txn, op);
}

static bool op_error_logged(int ret)
{
	/* The client's answers, not the store's trouble. */
	return ret != DB_NOTFOUND && ret != STORE_ERR_QUOTA &&
		ret != STORE_ERR_EXISTS && ret != STORE_ERR_HAS_CHILDREN &&
		ret != STORE_ERR_LIMIT && ret != STORE_ERR_IN_USE &&
		ret != STORE_ERR_INVALID;
}

static struct store_op *op_of(const struct mt_store_req *req)
{
	return ((const struct store_op_req *)req)->op;
}

struct store_op *store_req_op(const struct mt_store_req *req,
			      int (*run)(struct mt_store *, DB_TXN *,
					 struct store_op *))
{
	bool is_op = req->ops == &store_req_change || req->ops == &store_req_query;
	struct store_op *op = is_op ? op_of(req) : NULL;
	return op != NULL && op->run == run ? op : NULL;
}

/* A failed op's status and error (logged unless it is the client's). */
static void op_failed(struct mt_store *store, struct mt_store_req *req, int ret)
{
	enum mt_store_status status = store_status_from_db(store, ret);
	if (status == MT_STORE_TEMPFAIL && store_space_full(store))
		status = MT_STORE_NO_SPACE;
	const char *error = store_error("%s failed: %s", op_of(req)->what,
					store_strerror(ret));
	if (op_error_logged(ret))
		mt_error("store: %s", error);
	store_req_set_error(req, status, error);
}

/* False (the request failed) once the store has failed. */
static bool op_runnable(struct mt_store *store, struct mt_store_req *req)
{
	if (!atomic_load(&store->failed))
		return true;
	op_failed(store, req, DB_RUNRECOVERY);
	return false;
}

/* On an executor: the op's transaction. */
static void change_run(struct mt_store *store, struct mt_store_req *req)
{
	struct store_op *op = op_of(req);
	if (!op_runnable(store, req))
		return;
	if (!store_space_writable(store)) {
		store_req_set_error(req, MT_STORE_NO_SPACE, "disk full: "
				    "no writes until space returns");
		return;
	}
	int ret = store_txn_run(store, op_txn, op, DB_TXN_NOSYNC);
	(void)store_space_failed(store, ret, op->what);
	if (ret != 0) {
		op_failed(store, req, ret);
		return;
	}
	req->needs_flush = op->wrote;
	req->removed = op->expunged;
	store_purge_backlog_add(store, op->expunged);	/* MOVE, DELETE */
}

/* On a reader: the op's reads, retried on deadlock. */
static void query_run(struct mt_store *store, struct mt_store_req *req)
{
	struct store_op *op = op_of(req);
	if (!op_runnable(store, req))
		return;
	int ret;
	for (unsigned int attempt = 1;; attempt++) {
		ret = op->run(store, NULL, op);
		if (!store_retryable(ret) || attempt >= STORE_TXN_ATTEMPTS)
			break;
		store_counter_add(&store->n_retries, 1);
		sched_yield();
	}
	if (ret != 0)
		op_failed(store, req, ret);
}

/* The op (NULL if refused) and its mailbox reference. */
static void op_req_free(struct mt_store_req *req)
{
	struct store_op *op = op_of(req);
	if (op == NULL)
		return;
	if (op->mbox != NULL) {
		store_mailbox_writer(op->mbox, false);
		store_mailbox_unref(&op->mbox);
	}
	op->free(op);
}

/* On the caller's thread: the op's apply, once, after an OK. */
static void op_apply(struct mt_store_req *req)
{
	struct store_op *op = op_of(req);
	if (op != NULL && req->status == MT_STORE_OK && op->apply != NULL) {
		op->apply(op);
		op->apply = NULL;	/* once */
	}
}

const struct store_req_ops store_req_change = {
	.name = "change", .size = sizeof(struct store_op_req),
	.path = STORE_PATH_COMMIT,
	.run = change_run, .apply = op_apply, .free = op_req_free,
};

const struct store_req_ops store_req_query = {
	.name = "query", .size = sizeof(struct store_op_req),
	.path = STORE_PATH_READ,
	.run = query_run, .apply = op_apply, .free = op_req_free,
};

static struct mt_store_req *op_req(struct mt_store *store,
				   struct mt_store_port *port,
				   const struct store_req_ops *ops,
				   struct store_op *op, mt_store_cb_t *cb,
				   void *context)
{
	struct store_op_req *q = (struct store_op_req *)
		store_req_new(store, ops, port, cb, context);
	q->op = op;
	return &q->req;
}

struct mt_store_req *store_ops_submit(struct mt_store *store,
				      struct mt_store_port *port,
				      const struct store_req_ops *ops,
				      struct store_op *op, mt_store_cb_t *cb,
				      void *context)
{
	return store_req_submit(op_req(store, port, ops, op, cb, context));
}

struct mt_store_req *store_ops_refuse(struct mt_store_port *port,
				      const struct store_req_ops *ops,
				      const char *error, mt_store_cb_t *cb,
				      void *context)
{
	struct mt_store_req *req = store_req_new(port->store, ops, port, cb, context);
	store_req_set_error(req, MT_STORE_INVALID, error);
	req->refused = true;
	return store_req_submit(req);
}

struct mt_store_req *store_ops_wait(struct mt_store *store,
				    const struct store_req_ops *ops,
				    struct store_op *op)
{
	struct mt_store_req *req = op_req(store, NULL, ops, op, NULL, NULL);
	store_req_wait(req);
	op_apply(req);
	return req;
}
