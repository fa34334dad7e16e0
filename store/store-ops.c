/* store-ops.c — the requests of IMAP's folder and flag operations
 * (store-folders.c, store-flags.c): each operation is a struct store_op
 * whose run is one transaction on the group-commit pipeline (a CHANGE:
 * committed without a sync, completed after the flush that made it
 * durable, as a delivery is) or reads on the reader pool (a QUERY). Here:
 * running them, their errors, and handing their results back.
 *
 * Trust boundary: none of its own (each operation checks its arguments
 * when it is made).
 *
 * Guarantees: a CHANGE completes MT_STORE_OK only once durable; on a full
 * disk it is refused before its transaction (store-space.c); its run is
 * retried from the start after a deadlock, so it must not keep state
 * between attempts but in what it resets. An op's apply runs on the
 * caller's thread, after an OK, before the callback. */
#include "store-private.h"
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

void store_ops_run(struct mt_store *store, struct mt_store_req *req)
{
	struct store_op *op = req->op;
	int ret;
	if (atomic_load(&store->failed))
		ret = DB_RUNRECOVERY;
	else if (req->kind == STORE_REQ_CHANGE) {
		if (!store_space_writable(store)) {
			store_req_set_error(req, MT_STORE_NO_SPACE, "disk full: "
					    "no writes until space returns");
			return;
		}
		ret = store_txn_run(store, op_txn, op, DB_TXN_NOSYNC);
		(void)store_space_failed(store, ret, op->what);
		if (ret == 0) {
			req->needs_flush = op->wrote;
			req->removed = op->expunged;
			store_purge_backlog_add(store, op->expunged);	/* MOVE, DELETE */
		}
	} else {
		for (unsigned int attempt = 1;; attempt++) {
			ret = op->run(store, NULL, op);
			if (!store_retryable(ret) || attempt >= STORE_TXN_ATTEMPTS)
				break;
			store_counter_add(&store->n_retries, 1);
			sched_yield();
		}
	}
	if (ret == 0)
		return;
	enum mt_store_status status = store_status_from_db(store, ret);
	if (status == MT_STORE_TEMPFAIL && store_space_full(store))
		status = MT_STORE_NO_SPACE;
	const char *error = store_error("%s failed: %s", op->what,
					store_strerror(ret));
	if (op_error_logged(ret))
		mt_error("store: %s", error);
	store_req_set_error(req, status, error);
}

static struct mt_store_req *op_req(struct mt_store *store,
				   struct mt_store_port *port,
				   enum store_req_kind kind, struct store_op *op,
				   mt_store_cb_t *cb, void *context)
{
	struct mt_store_req *req = store_req_new(store, kind, port, cb, context);
	req->op = op;
	return req;
}

static enum store_path op_path(enum store_req_kind kind)
{
	return kind == STORE_REQ_CHANGE ? STORE_PATH_COMMIT : STORE_PATH_READ;
}

struct mt_store_req *store_ops_submit(struct mt_store *store,
				      struct mt_store_port *port,
				      enum store_req_kind kind,
				      struct store_op *op, mt_store_cb_t *cb,
				      void *context)
{
	return store_req_submit(op_req(store, port, kind, op, cb, context),
				op_path(kind));
}

struct mt_store_req *store_ops_refuse(struct mt_store_port *port,
				      enum store_req_kind kind, const char *error,
				      mt_store_cb_t *cb, void *context)
{
	struct mt_store_req *req = store_req_new(port->store, kind, port, cb, context);
	store_req_set_error(req, MT_STORE_INVALID, error);
	req->refused = true;
	return store_req_submit(req, op_path(kind));
}

struct mt_store_req *store_ops_wait(struct mt_store *store,
				    enum store_req_kind kind,
				    struct store_op *op)
{
	struct mt_store_req *req = op_req(store, NULL, kind, op, NULL, NULL);
	store_req_wait(req, op_path(kind));
	store_ops_apply(req);
	return req;
}

void store_ops_apply(struct mt_store_req *req)
{
	if (req->op != NULL && req->status == MT_STORE_OK && req->op->apply != NULL) {
		req->op->apply(req->op);
		req->op->apply = NULL;	/* once */
	}
}
