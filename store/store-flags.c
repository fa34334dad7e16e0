/* store-flags.c — IMAP's flags on stored messages (format 5): STORE with
 * its +FLAGS / -FLAGS / FLAGS forms and CONDSTORE's UNCHANGEDSINCE
 * (RFC 9051 6.4.6, RFC 7162 3.1), each mailbox's keyword table, and the
 * imap.db records a deleted folder leaves, and QRESYNC's expunged uids
 * read back.
 *
 * Records: a message's system flags are bits of its message.db flag word
 * and its keywords a 64-bit set of indexes into its mailbox's keyword
 * table, imap.db 'K' + mailbox id → the names, each NUL-ended, in the
 * order they were first used (an index never changes, so a message's set
 * stays valid when the table grows). Every change takes its mailbox's
 * next MODSEQ: all the messages one STORE changes get the same one, which
 * is the mailbox's HIGHESTMODSEQ after it (RFC 7162 allows one per
 * command; QRESYNC's FETCH (CHANGEDSINCE) finds them all).
 *
 * Trust boundary: keywords are flag-keyword atoms the IMAP layer checked
 * (no '\\', no controls, at most MT_STORE_KEYWORD_MAX octets: checked again
 * here, as a longer one would not fit the table); uids are the caller's,
 * looked up, never trusted to exist.
 *
 * Guarantees: one transaction per STORE (store-ops.c makes it durable
 * before its completion); the mailbox's \Seen and \Deleted counts change
 * with the flags in it. */
#include "store-req.h"
#include "alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KEYWORDS_REC_MAX (MT_STORE_KEYWORDS_MAX * (MT_STORE_KEYWORD_MAX + 1))

static void keywords_key(unsigned char *key, uint64_t id)
{
	key[0] = STORE_IMAP_KEYWORDS;
	store_put_be64(key + 1, id);
}

/* The table of mailbox id into names (MT_STORE_KEYWORDS_MAX), *count_r. */
static int keywords_get(struct mt_store *store, DB_TXN *txn, uint64_t id,
			char **names, unsigned int *count_r, u_int32_t flags)
{
	*count_r = 0;
	if (store->imap == NULL)
		return 0;	/* before version 5 (ADMIN mode): none */
	unsigned char kbuf[9], *vbuf = mt_xmalloc(KEYWORDS_REC_MAX);
	DBT key, data;
	keywords_key(kbuf, id);
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	store_dbt_out(&data, vbuf, KEYWORDS_REC_MAX);
	int ret = store->imap->get(store->imap, txn, &key, &data, flags);
	if (ret == DB_NOTFOUND)
		ret = 0;
	else if (ret == 0) {
		for (size_t off = 0; off < data.size;) {
			const unsigned char *end = memchr(vbuf + off, '\0',
							  data.size - off);
			if (end == NULL || *count_r == MT_STORE_KEYWORDS_MAX ||
			    end == vbuf + off) {
				ret = STORE_ERR_DAMAGED;
				break;
			}
			names[(*count_r)++] = mt_xstrdup((const char *)vbuf + off);
			off = (size_t)(end - vbuf) + 1;
		}
	}
	free(vbuf);
	return ret;
}

static int keywords_put(struct mt_store *store, DB_TXN *txn, uint64_t id,
			char *const *names, unsigned int count)
{
	unsigned char kbuf[9], *vbuf = mt_xmalloc(KEYWORDS_REC_MAX);
	size_t len = 0;
	for (unsigned int i = 0; i < count; i++) {
		size_t n = strlen(names[i]) + 1;
		memcpy(vbuf + len, names[i], n);
		len += n;
	}
	DBT key, data;
	keywords_key(kbuf, id);
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	store_dbt_in(&data, vbuf, len);
	int ret = store->imap->put(store->imap, txn, &key, &data, 0);
	free(vbuf);
	return ret;
}

static void names_free(char **names, unsigned int count)
{
	for (unsigned int i = 0; i < count; i++)
		free(names[i]);
}

int store_flags_load_keywords(struct mt_store *store, struct mt_store_mailbox *mbox)
{
	char *names[MT_STORE_KEYWORDS_MAX];
	unsigned int count;
	int ret = keywords_get(store, NULL, mbox->id, names, &count, 0);
	if (ret != 0) {
		names_free(names, count);
		return ret;
	}
	mbox->keywords = NULL;
	if (count > 0) {
		mbox->keywords = mt_xmalloc(count * sizeof(char *));
		memcpy(mbox->keywords, names, count * sizeof(char *));
	}
	mbox->keyword_count = count;
	return 0;
}

static int delete_visit(DBC *cursor, const DBT *key, const DBT *data,
			void *context)
{
	(void)key;
	(void)data;
	(void)context;
	return cursor->del(cursor, 0);
}

int store_flags_drop_mailbox(struct mt_store *store, DB_TXN *txn, uint64_t id)
{
	unsigned char kbuf[9];
	DBT key;
	keywords_key(kbuf, id);
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	int ret = store->imap->del(store->imap, txn, &key, 0);
	if (ret != 0 && ret != DB_NOTFOUND)
		return ret;
	/* The VANISHED records: 'V' + id + modseq. */
	unsigned char prefix[9];
	prefix[0] = STORE_IMAP_VANISHED;
	store_put_be64(prefix + 1, id);
	return store_records_walk(store->imap, txn, prefix, sizeof(prefix), DB_RMW,
				  delete_visit, NULL);
}

/* STORE */

struct flags_op {
	struct store_op op;
	struct mt_store_flag_args args;	/* its arrays are the op's copies */
	uint32_t *uids;
	char **keywords;
	uint64_t keyword_set;		/* the arguments' keywords as a set */
	/* Results, per uid. */
	enum mt_store_flag_result *results;
	uint32_t *new_flags;		/* as they are after it, also where */
	uint64_t *new_keywords;		/* unchanged (another session may */
	uint64_t *new_modseqs;		/* have set them first) */
	uint64_t modseq;		/* of the changed ones */
	char *table[MT_STORE_KEYWORDS_MAX];	/* the mailbox's, after */
	unsigned int table_count;
};

/* +FLAGS, -FLAGS or FLAGS on a set (system flags or keyword indexes). */
static uint64_t set_apply(enum mt_store_flag_op op, uint64_t old, uint64_t arg)
{
	switch (op) {
	case MT_STORE_FLAGS_ADD:
		return old | arg;
	case MT_STORE_FLAGS_REMOVE:
		return old & ~arg;
	case MT_STORE_FLAGS_REPLACE:
		break;
	}
	return arg;
}

/* names as a set of indexes into table (count names), added to it where
 * new if add (not for -FLAGS: removing an unknown keyword changes
 * nothing); *grown_r if the table changed. */
static int table_resolve(char **table, unsigned int *count,
			 const char *const *names, unsigned int n, bool add,
			 uint64_t *set_r, bool *grown_r)
{
	*grown_r = false;
	*set_r = 0;
	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = 0;
		while (i < *count && strcasecmp(table[i], names[k]) != 0)
			i++;
		if (i == *count) {
			if (!add)
				continue;
			if (*count == MT_STORE_KEYWORDS_MAX)
				return STORE_ERR_LIMIT;
			table[(*count)++] = mt_xstrdup(names[k]);
			*grown_r = true;
		}
		*set_r |= UINT64_C(1) << i;
	}
	return 0;
}

int store_flags_keywords_map(struct mt_store *store, DB_TXN *txn, uint64_t id,
			     const char *const *names, unsigned int count,
			     uint64_t *set_r)
{
	*set_r = 0;
	if (count == 0)
		return 0;
	char *table[MT_STORE_KEYWORDS_MAX];
	unsigned int table_count;
	bool grown = false;
	int ret = keywords_get(store, txn, id, table, &table_count, DB_RMW);
	if (ret == 0)
		ret = table_resolve(table, &table_count, names, count, true, set_r,
				    &grown);
	if (ret == 0 && grown)
		ret = keywords_put(store, txn, id, table, table_count);
	names_free(table, table_count);
	return ret;
}

int store_flags_keywords_names(struct mt_store *store, DB_TXN *txn, uint64_t id,
			       char **names, unsigned int *count_r)
{
	int ret = keywords_get(store, txn, id, names, count_r, 0);
	if (ret != 0) {
		names_free(names, *count_r);
		*count_r = 0;
	}
	return ret;
}

static int flags_run(struct mt_store *store, DB_TXN *txn, struct store_op *op)
{
	struct flags_op *f = (struct flags_op *)op;
	const struct mt_store_mailbox *mbox = op->mbox;
	names_free(f->table, f->table_count);
	f->table_count = 0;
	f->modseq = 0;
	struct store_mailbox_rec rec;
	int ret = store_mailbox_get(store, txn, mbox->key, mbox->key_len, &rec,
				    DB_RMW);
	if (ret == 0 && rec.id != mbox->id)
		ret = DB_NOTFOUND;	/* the mailbox was deleted meanwhile */
	if (ret != 0)
		return ret;
	bool grown;
	if ((ret = keywords_get(store, txn, rec.id, f->table, &f->table_count,
				DB_RMW)) != 0 ||
	    (ret = table_resolve(f->table, &f->table_count,
				 (const char *const *)f->keywords,
				 f->args.keyword_count,
				 f->args.op != MT_STORE_FLAGS_REMOVE,
				 &f->keyword_set, &grown)) != 0)
		return ret;
	if (rec.highest_modseq == UINT64_MAX)
		return EOVERFLOW;
	const uint64_t modseq = rec.highest_modseq + 1;
	for (unsigned int i = 0; i < f->args.uid_count; i++) {
		struct mt_store_msg msg;
		struct store_msg_loc loc;
		ret = store_message_get(store, txn, rec.id, f->uids[i], &msg, &loc,
					DB_RMW);
		if (ret == DB_NOTFOUND) {
			f->results[i] = MT_STORE_FLAG_GONE;
			continue;
		}
		if (ret != 0)
			return ret;
		f->new_flags[i] = msg.flags;
		f->new_keywords[i] = msg.keywords;
		f->new_modseqs[i] = msg.modseq;
		if (f->args.unchanged_since != 0 && msg.modseq > f->args.unchanged_since) {
			f->results[i] = MT_STORE_FLAG_MODIFIED;
			continue;
		}
		uint32_t flags = (uint32_t)set_apply(f->args.op, msg.flags,
						     f->args.flags);
		uint64_t keywords = set_apply(f->args.op, msg.keywords, f->keyword_set);
		if (flags == msg.flags && keywords == msg.keywords) {
			f->results[i] = MT_STORE_FLAG_UNCHANGED;
			continue;
		}
		rec.seen += (flags & MT_STORE_FLAG_SEEN) != 0;
		rec.seen -= (msg.flags & MT_STORE_FLAG_SEEN) != 0;
		rec.deleted += (flags & MT_STORE_FLAG_DELETED) != 0;
		rec.deleted -= (msg.flags & MT_STORE_FLAG_DELETED) != 0;
		msg.flags = flags;
		msg.keywords = keywords;
		msg.modseq = modseq;
		if ((ret = store_message_put(store, txn, rec.id, &msg, &loc, 0)) != 0)
			return ret;
		f->results[i] = MT_STORE_FLAG_CHANGED;
		f->new_flags[i] = flags;
		f->new_keywords[i] = keywords;
		f->new_modseqs[i] = modseq;
		f->modseq = modseq;
	}
	if (f->modseq == 0 && !grown)
		return 0;	/* nothing to write */
	if (grown && (ret = keywords_put(store, txn, rec.id, f->table,
					 f->table_count)) != 0)
		return ret;
	if (f->modseq != 0) {
		rec.highest_modseq = modseq;
		if ((ret = store_mailbox_put(store, txn, mbox->key, mbox->key_len,
					     &rec)) != 0)
			return ret;
	}
	op->wrote = true;
	return 0;
}

/* On the caller's thread: the snapshot gets the flags of the messages
 * this STORE changed, and of those it found already so (set by another
 * session since the snapshot: the STORE's FETCH must give the message's
 * flags as they are, RFC 9051 6.4.6). A message it left alone for
 * UNCHANGEDSINCE keeps the snapshot's: the caller reports it [MODIFIED]
 * and its view catches up when it reads the mailbox again. */
static void flags_apply(struct store_op *op)
{
	struct flags_op *f = (struct flags_op *)op;
	struct mt_store_mailbox *mbox = op->mbox;
	for (unsigned int i = 0; i < f->args.uid_count; i++) {
		if (f->results[i] != MT_STORE_FLAG_CHANGED &&
		    f->results[i] != MT_STORE_FLAG_UNCHANGED)
			continue;
		int index = mt_store_mailbox_find(mbox, f->uids[i]);
		if (index < 0)
			continue;
		mbox->msgs[index].flags = f->new_flags[i];
		mbox->msgs[index].keywords = f->new_keywords[i];
		mbox->msgs[index].modseq = f->new_modseqs[i];
	}
	if (f->modseq > mbox->highest_modseq)
		mbox->highest_modseq = f->modseq;
	if (f->table_count > mbox->keyword_count) {
		mbox->keywords = mt_xrealloc(mbox->keywords,
					     f->table_count * sizeof(char *));
		for (unsigned int i = mbox->keyword_count; i < f->table_count; i++) {
			mbox->keywords[i] = f->table[i];
			f->table[i] = NULL;
		}
		mbox->keyword_count = f->table_count;
	}
}

static void flags_free(struct store_op *op)
{
	struct flags_op *f = (struct flags_op *)op;
	for (unsigned int i = 0; i < f->table_count; i++)
		free(f->table[i]);
	for (unsigned int i = 0; i < f->args.keyword_count; i++)
		free(f->keywords[i]);
	free(f->keywords);
	free(f->uids);
	free(f->results);
	free(f->new_flags);
	free(f->new_keywords);
	free(f->new_modseqs);
	free(f);
}

static bool keyword_ok(const char *k)
{
	size_t len = k == NULL ? 0 : strlen(k);
	return len > 0 && len <= MT_STORE_KEYWORD_MAX && k[0] != '\\';
}

static struct flags_op *flags_new(struct mt_store_mailbox *mbox,
				  const struct mt_store_flag_args *args,
				  const char **error_r)
{
	if ((args->flags & ~MT_STORE_FLAGS_ALL) != 0 ||
	    (unsigned int)args->op > MT_STORE_FLAGS_REPLACE ||
	    (args->uid_count > 0 && args->uids == NULL) ||
	    args->keyword_count > MT_STORE_KEYWORDS_MAX) {
		*error_r = "bad flag arguments";
		return NULL;
	}
	for (unsigned int i = 0; i < args->keyword_count; i++) {
		if (!keyword_ok(args->keywords[i])) {
			*error_r = "bad keyword";
			return NULL;
		}
	}
	if (mbox->store->imap == NULL) {
		*error_r = "store not upgraded to format 5 (administration only)";
		return NULL;
	}
	struct flags_op *f = mt_xcalloc(1, sizeof(*f));
	const unsigned int n = args->uid_count;
	f->op.run = flags_run;
	f->op.apply = flags_apply;
	f->op.free = flags_free;
	f->op.what = "changing flags";
	f->op.mbox = store_mailbox_ref(mbox);
	store_mailbox_writer(mbox, true);	/* as an expunge: store-mailbox.c */
	f->args = *args;
	f->uids = mt_xmalloc((n + 1) * sizeof(*f->uids));
	if (n > 0)
		memcpy(f->uids, args->uids, n * sizeof(*f->uids));
	f->keywords = mt_xcalloc(args->keyword_count + 1, sizeof(char *));
	for (unsigned int i = 0; i < args->keyword_count; i++)
		f->keywords[i] = mt_xstrdup(args->keywords[i]);
	f->results = mt_xcalloc(n + 1, sizeof(*f->results));
	f->new_flags = mt_xcalloc(n + 1, sizeof(*f->new_flags));
	f->new_keywords = mt_xcalloc(n + 1, sizeof(*f->new_keywords));
	f->new_modseqs = mt_xcalloc(n + 1, sizeof(*f->new_modseqs));
	f->args.uids = f->uids;
	f->args.keywords = (const char *const *)f->keywords;
	return f;
}

struct mt_store_req *mt_store_flags_store(struct mt_store_port *port,
					  struct mt_store_mailbox *mbox,
					  const struct mt_store_flag_args *args,
					  mt_store_cb_t *cb, void *context)
{
	const char *error;
	struct flags_op *f = flags_new(mbox, args, &error);
	if (f == NULL)
		return store_ops_refuse(port, &store_req_change, error, cb, context);
	return store_ops_submit(port->store, port, &store_req_change, &f->op, cb,
				context);
}

const enum mt_store_flag_result *mt_store_req_flag_results(
	const struct mt_store_req *req, unsigned int *count_r)
{
	const struct flags_op *f = (const struct flags_op *)store_req_op(req, flags_run);
	*count_r = f != NULL ? f->args.uid_count : 0;
	return f != NULL ? f->results : NULL;
}

enum mt_store_status mt_store_flags_store_wait(struct mt_store_mailbox *mbox,
					       const struct mt_store_flag_args *args,
					       enum mt_store_flag_result *results_r,
					       const char **error_r)
{
	struct flags_op *f = flags_new(mbox, args, error_r);
	if (f == NULL) {
		*error_r = store_error("%s", *error_r);
		return MT_STORE_INVALID;
	}
	struct mt_store_req *req = store_ops_wait(mbox->store, &store_req_change,
						  &f->op);
	enum mt_store_status status = req->status;
	if (status == MT_STORE_OK && results_r != NULL && args->uid_count > 0)
		memcpy(results_r, f->results, args->uid_count * sizeof(*results_r));
	*error_r = store_error("%s", req->error);
	store_req_free(req);
	return status;
}

/* QRESYNC's VANISHED (EARLIER): the 'V' records above a MODSEQ. */

struct vanished_op {
	struct store_op op;
	uint64_t since;
	uint32_t *uids;
	unsigned int count, cap;
};

static int vanished_read(struct mt_store *store, struct vanished_op *v, uint64_t id)
{
	DBC *cursor;
	int ret = store->imap->cursor(store->imap, NULL, &cursor, 0);
	if (ret != 0)
		return ret;
	unsigned char kbuf[17];
	kbuf[0] = STORE_IMAP_VANISHED;
	store_put_be64(kbuf + 1, id);
	store_put_be64(kbuf + 9, v->since + 1);
	DBT key, data;
	store_dbt_out(&key, kbuf, sizeof(kbuf));
	key.size = sizeof(kbuf);
	memset(&data, 0, sizeof(data));
	data.flags = DB_DBT_MALLOC;
	for (ret = cursor->get(cursor, &key, &data, DB_SET_RANGE); ret == 0;
	     ret = cursor->get(cursor, &key, &data, DB_NEXT)) {
		if (key.size != 17 || kbuf[0] != STORE_IMAP_VANISHED ||
		    store_get_be64(kbuf + 1) != id) {
			free(data.data);
			break;
		}
		const unsigned char *p = data.data;
		for (u_int32_t off = 0; off + 4 <= data.size; off += 4) {
			if (v->count == v->cap) {
				v->cap = v->cap == 0 ? 64 : v->cap * 2;
				v->uids = mt_xrealloc(v->uids, v->cap * sizeof(*v->uids));
			}
			v->uids[v->count++] = store_get_be32(p + off);
		}
		free(data.data);
		data.data = NULL;
	}
	int t_ret = cursor->close(cursor);
	if (ret == DB_NOTFOUND)
		ret = 0;
	return ret != 0 ? ret : t_ret;
}

static int uid_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int vanished_run(struct mt_store *store, DB_TXN *txn, struct store_op *op)
{
	(void)txn;
	struct vanished_op *v = (struct vanished_op *)op;
	v->count = 0;
	if (store->imap == NULL || op->mbox->id == 0)
		return 0;
	int ret = vanished_read(store, v, op->mbox->id);
	if (ret == 0 && v->count > 1)
		qsort(v->uids, v->count, sizeof(*v->uids), uid_cmp);
	return ret;
}

static void vanished_free(struct store_op *op)
{
	struct vanished_op *v = (struct vanished_op *)op;
	free(v->uids);
	free(v);
}

static struct vanished_op *vanished_new(struct mt_store_mailbox *mbox, uint64_t since)
{
	struct vanished_op *v = mt_xcalloc(1, sizeof(*v));
	v->op.run = vanished_run;
	v->op.free = vanished_free;
	v->op.what = "reading expunged uids";
	v->op.mbox = store_mailbox_ref(mbox);
	store_mailbox_writer(mbox, true);	/* released with the others' */
	v->since = since;
	return v;
}

struct mt_store_req *mt_store_vanished(struct mt_store_port *port,
				       struct mt_store_mailbox *mbox, uint64_t since,
				       mt_store_cb_t *cb, void *context)
{
	return store_ops_submit(port->store, port, &store_req_query,
				&vanished_new(mbox, since)->op, cb, context);
}

const uint32_t *mt_store_req_vanished(const struct mt_store_req *req,
				      unsigned int *count_r)
{
	const struct vanished_op *v =
		(const struct vanished_op *)store_req_op(req, vanished_run);
	*count_r = v != NULL && req->status == MT_STORE_OK ? v->count : 0;
	return v != NULL ? v->uids : NULL;
}

enum mt_store_status mt_store_vanished_sync(struct mt_store_mailbox *mbox,
					    uint64_t since, uint32_t **uids_r,
					    unsigned int *count_r, const char **error_r)
{
	struct vanished_op *v = vanished_new(mbox, since);
	struct mt_store_req *req = store_ops_wait(mbox->store, &store_req_query, &v->op);
	enum mt_store_status status = req->status;
	*uids_r = NULL;
	*count_r = 0;
	if (status == MT_STORE_OK) {
		*uids_r = v->uids;
		*count_r = v->count;
		v->uids = NULL;
	}
	*error_r = store_error("%s", req->error);
	store_req_free(req);
	return status;
}
