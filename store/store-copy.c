/* store-copy.c — IMAP's COPY and MOVE (RFC 9051 6.4.7, RFC 6851; the
 * UIDPLUS results of RFC 4315) between a user's mailboxes (format 5).
 *
 * A copy is a new message record in the destination that names the same
 * shared body (one more reference in refs.db, store-chunks.c), so a copy
 * of a 20 MB message writes a few hundred bytes: its record and its own
 * chunks (the recipient's prefix, a few lines; all of it only for a message
 * stored before format 4). Flags and INTERNALDATE go along, keywords by
 * name into the destination's table; the copies get the destination's
 * next uids and one new MODSEQ, and a UIDL of their own ("%08x%08x" of the
 * destination's UIDVALIDITY and uid, as a delivery's), so a copy into
 * INBOX is a new message to POP3. A MOVE also expunges the originals in
 * the same transaction, as an EXPUNGE does (their VANISHED record under the
 * source's next MODSEQ), so no crash leaves a message in both or neither.
 *
 * Trust boundary: uids from the IMAP client (looked up; absent ones are
 * skipped), the destination's name after the caller's name check.
 *
 * Guarantees: one transaction (store-ops.c makes it durable before the
 * completion); the quota counts all the user's mailboxes (a MOVE adds
 * nothing to them and is not refused for it). */
#include "store-req.h"
#include "alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct copy_op {
	struct store_op op;
	char *dest;
	bool move;
	uint64_t quota;
	uint32_t *uids;
	unsigned int uid_count;
	/* Results */
	uint32_t *new_uids;		/* per uid; 0: it was gone */
	uint32_t uidvalidity;
};

/* Copy the object (src_id, src_uid)'s len bytes of chunks to (dst_id,
 * dst_uid), read in the transaction (its own writes may share pages). */
static int own_chunks_copy(struct mt_store *store, DB_TXN *txn, uint64_t src_id,
			   uint32_t src_uid, uint64_t dst_id, uint32_t dst_uid,
			   uint64_t len)
{
	const uint32_t chunk = store->chunk_size;
	char *buf = mt_xmalloc(chunk);
	int ret = 0;
	for (uint64_t off = 0, i = 0; ret == 0 && off < len; off += chunk, i++) {
		unsigned char kbuf[STORE_BODY_KEY_SIZE];
		DBT key, data;
		store_body_key(kbuf, src_id, src_uid, (uint32_t)i);
		store_dbt_in(&key, kbuf, sizeof(kbuf));
		store_dbt_out(&data, buf, chunk);
		ret = store->bodies->get(store->bodies, txn, &key, &data, 0);
		uint64_t want = len - off < chunk ? len - off : chunk;
		if (ret == 0 && data.size != want)
			ret = STORE_ERR_DAMAGED;
		if (ret == 0)
			ret = store_chunk_put(store, txn, dst_id, dst_uid, (uint32_t)i,
					      buf, data.size);
	}
	free(buf);
	return ret;
}

/* The destination's keyword set for src_set (indexes into src_names). */
static uint64_t keywords_translate(uint64_t src_set, char *const *src_names,
				   unsigned int src_count, char *const *dst_names,
				   unsigned int dst_count)
{
	uint64_t set = 0;
	for (unsigned int i = 0; i < src_count; i++) {
		if ((src_set & UINT64_C(1) << i) == 0)
			continue;
		for (unsigned int j = 0; j < dst_count; j++)
			if (strcasecmp(src_names[i], dst_names[j]) == 0)
				set |= UINT64_C(1) << j;
	}
	return set;
}

struct copy_state {
	struct store_mailbox_rec src, dst_own, *dst;
	unsigned char dst_key[STORE_MAILBOX_KEY_MAX];
	size_t dst_key_len;
	struct mt_store_msg *msgs;
	struct store_msg_loc *locs;
	bool *present;
	char *src_names[MT_STORE_KEYWORDS_MAX], *dst_names[MT_STORE_KEYWORDS_MAX];
	unsigned int src_count, dst_count;
};

/* The originals, their keywords' names into the destination's table, and
 * the quota. */
static int copy_prepare(struct mt_store *store, DB_TXN *txn, struct copy_op *c,
			struct copy_state *st)
{
	const struct mt_store_mailbox *mbox = c->op.mbox;
	uint64_t keywords = 0, bytes = 0, count = 0;
	int ret;
	for (unsigned int i = 0; i < c->uid_count; i++) {
		ret = store_message_get(store, txn, st->src.id, c->uids[i],
					&st->msgs[i], &st->locs[i],
					c->move ? DB_RMW : 0);
		if (ret == DB_NOTFOUND)
			continue;
		if (ret != 0)
			return ret;
		st->present[i] = true;
		count++;
		keywords |= st->msgs[i].keywords;
		bytes += st->msgs[i].size;
	}
	if ((ret = store_flags_keywords_names(store, txn, st->src.id, st->src_names,
					      &st->src_count)) != 0)
		return ret;
	const char *used[MT_STORE_KEYWORDS_MAX];
	unsigned int used_count = 0;
	for (unsigned int i = 0; i < st->src_count; i++)
		if ((keywords & UINT64_C(1) << i) != 0)
			used[used_count++] = st->src_names[i];
	uint64_t ignored;
	if ((ret = store_flags_keywords_map(store, txn, st->dst->id, used, used_count,
					    &ignored)) != 0 ||
	    (ret = store_flags_keywords_names(store, txn, st->dst->id, st->dst_names,
					      &st->dst_count)) != 0)
		return ret;
	if (store->set.max_mailbox_messages != 0 &&
	    (st->dst->count >= store->set.max_mailbox_messages ||
	     count > store->set.max_mailbox_messages - st->dst->count))
		return STORE_ERR_LIMIT;
	if (c->quota != 0 && !c->move) {
		uint64_t total;
		if ((ret = store_records_user_bytes(store, txn, mbox->name, st->dst_key,
						    st->dst_key_len, st->dst,
						    &total)) != 0)
			return ret;
		if (bytes > c->quota || total > c->quota - bytes)
			return STORE_ERR_QUOTA;
	}
	return 0;
}

static int copy_one(struct mt_store *store, DB_TXN *txn, struct copy_op *c,
		    struct copy_state *st, unsigned int i, uint64_t modseq)
{
	struct store_mailbox_rec *dst = st->dst;
	if (dst->next_uid == UINT32_MAX)
		return EOVERFLOW;
	struct mt_store_msg msg = st->msgs[i];
	const struct store_msg_loc *loc = &st->locs[i];
	msg.uid = dst->next_uid++;
	msg.modseq = modseq;
	msg.keywords = keywords_translate(st->msgs[i].keywords, st->src_names,
					  st->src_count, st->dst_names, st->dst_count);
	snprintf(msg.uidl, sizeof(msg.uidl), "%08x%08x", dst->uidl_validity, msg.uid);
	int ret = store_message_put(store, txn, dst->id, &msg, loc, DB_NOOVERWRITE);
	if (ret == DB_KEYEXIST)
		return STORE_ERR_DAMAGED;
	if (ret == 0 && loc->body_id != 0)
		ret = store_chunks_ref(store, txn, loc->body_id, false, 0, NULL, 0, 0);
	if (ret == 0)
		ret = own_chunks_copy(store, txn, st->src.id, c->uids[i], dst->id,
				      msg.uid, loc->body_id != 0 ? loc->prefix_len :
				      msg.size);
	if (ret != 0)
		return ret;
	dst->count++;
	dst->bytes += msg.size;
	dst->seen += (msg.flags & MT_STORE_FLAG_SEEN) != 0;
	dst->deleted += (msg.flags & MT_STORE_FLAG_DELETED) != 0;
	c->new_uids[i] = msg.uid;
	return 0;
}

static int copy_body(struct mt_store *store, DB_TXN *txn, struct copy_op *c,
		     struct copy_state *st)
{
	const struct mt_store_mailbox *mbox = c->op.mbox;
	int ret = store_mailbox_get(store, txn, mbox->key, mbox->key_len, &st->src,
				    DB_RMW);
	if (ret == 0 && st->src.id != mbox->id)
		ret = DB_NOTFOUND;	/* the source went meanwhile */
	if (ret != 0)
		return ret == DB_NOTFOUND ? STORE_ERR_INVALID : ret;
	st->dst_key_len = store_mailbox_key(st->dst_key, mbox->name, c->dest);
	if (st->dst_key_len == mbox->key_len &&
	    memcmp(st->dst_key, mbox->key, mbox->key_len) == 0)
		st->dst = &st->src;
	else {
		st->dst = &st->dst_own;
		ret = store_mailbox_get(store, txn, st->dst_key, st->dst_key_len,
					st->dst, DB_RMW);
		if (ret == DB_NOTFOUND && strcmp(c->dest, "INBOX") == 0) {
			/* INBOX before its first message. */
			uint64_t now = (uint64_t)time(NULL);
			uint32_t uidvalidity;
			ret = store_uidvalidity_next(store, txn, now, &uidvalidity);
			if (ret == 0)
				ret = store_mailbox_new(store, txn, now, uidvalidity,
							st->dst);
		}
		if (ret != 0)
			return ret;	/* NOT_FOUND: the client's [TRYCREATE] */
	}
	if ((ret = copy_prepare(store, txn, c, st)) != 0)
		return ret;
	if (st->dst->highest_modseq == UINT64_MAX)
		return EOVERFLOW;
	const uint64_t modseq = st->dst->highest_modseq + 1;
	unsigned int copied = 0;
	for (unsigned int i = 0; i < c->uid_count; i++) {
		if (!st->present[i])
			continue;
		if ((ret = copy_one(store, txn, c, st, i, modseq)) != 0)
			return ret;
		copied++;
	}
	c->uidvalidity = st->dst->uidl_validity;
	if (copied == 0)
		return 0;
	st->dst->highest_modseq = modseq;
	if (c->move) {
		uint32_t *moved = mt_xmalloc(copied * sizeof(*moved));
		unsigned int n = 0;
		for (unsigned int i = 0; ret == 0 && i < c->uid_count; i++) {
			if (!st->present[i])
				continue;
			ret = store_records_expunge_one(store, txn, &st->src, c->uids[i]);
			moved[n++] = c->uids[i];
		}
		if (ret == 0)
			ret = store_records_vanished(store, txn, &st->src, moved, n);
		free(moved);
		c->op.expunged = n;
	}
	if (ret == 0 && st->dst != &st->src)
		ret = store_mailbox_put(store, txn, st->dst_key, st->dst_key_len,
					st->dst);
	if (ret == 0 && (c->move || st->dst == &st->src))
		ret = store_mailbox_put(store, txn, mbox->key, mbox->key_len, &st->src);
	c->op.wrote = true;
	return ret;
}

static int copy_run(struct mt_store *store, DB_TXN *txn, struct store_op *op)
{
	struct copy_op *c = (struct copy_op *)op;
	const unsigned int n = c->uid_count;
	memset(c->new_uids, 0, (n + 1) * sizeof(*c->new_uids));
	c->uidvalidity = 0;
	struct copy_state st = {
		.msgs = mt_xcalloc(n + 1, sizeof(*st.msgs)),
		.locs = mt_xcalloc(n + 1, sizeof(*st.locs)),
		.present = mt_xcalloc(n + 1, sizeof(*st.present)),
	};
	int ret = copy_body(store, txn, c, &st);
	for (unsigned int i = 0; i < st.src_count; i++)
		free(st.src_names[i]);
	for (unsigned int i = 0; i < st.dst_count; i++)
		free(st.dst_names[i]);
	free(st.msgs);
	free(st.locs);
	free(st.present);
	return ret;
}

static void copy_free(struct store_op *op)
{
	struct copy_op *c = (struct copy_op *)op;
	free(c->dest);
	free(c->uids);
	free(c->new_uids);
	free(c);
}

static struct copy_op *copy_new(struct mt_store_mailbox *mbox,
				const struct mt_store_copy_args *args,
				const char **error_r)
{
	size_t len = args->dest == NULL ? 0 : strlen(args->dest);
	if (len == 0 || len > MT_STORE_FOLDER_MAX ||
	    (args->uid_count > 0 && args->uids == NULL)) {
		*error_r = "bad copy arguments";
		return NULL;
	}
	if (mbox->store->imap == NULL) {
		*error_r = "store not upgraded to format 5 (administration only)";
		return NULL;
	}
	struct copy_op *c = mt_xcalloc(1, sizeof(*c));
	const unsigned int n = args->uid_count;
	c->op.run = copy_run;
	c->op.free = copy_free;
	c->op.what = args->move ? "moving messages" : "copying messages";
	c->op.mbox = store_mailbox_ref(mbox);
	store_mailbox_writer(mbox, true);	/* as an expunge: store-mailbox.c */
	c->dest = mt_xstrdup(args->dest);
	c->move = args->move;
	c->quota = args->quota;
	c->uids = mt_xmalloc((n + 1) * sizeof(*c->uids));
	if (n > 0)
		memcpy(c->uids, args->uids, n * sizeof(*c->uids));
	c->uid_count = n;
	c->new_uids = mt_xcalloc(n + 1, sizeof(*c->new_uids));
	return c;
}

struct mt_store_req *mt_store_copy(struct mt_store_port *port,
				   struct mt_store_mailbox *mbox,
				   const struct mt_store_copy_args *args,
				   mt_store_cb_t *cb, void *context)
{
	const char *error;
	struct copy_op *c = copy_new(mbox, args, &error);
	if (c == NULL)
		return store_ops_refuse(port, &store_req_change, error, cb, context);
	return store_ops_submit(port->store, port, &store_req_change, &c->op, cb,
				context);
}

const uint32_t *mt_store_req_copy_uids(const struct mt_store_req *req,
				       unsigned int *count_r,
				       uint32_t *uidvalidity_r)
{
	const struct copy_op *c = (const struct copy_op *)store_req_op(req, copy_run);
	*count_r = c != NULL ? c->uid_count : 0;
	*uidvalidity_r = c != NULL ? c->uidvalidity : 0;
	return c != NULL ? c->new_uids : NULL;
}

enum mt_store_status mt_store_copy_wait(struct mt_store_mailbox *mbox,
					const struct mt_store_copy_args *args,
					uint32_t *new_uids_r,
					uint32_t *uidvalidity_r,
					const char **error_r)
{
	struct copy_op *c = copy_new(mbox, args, error_r);
	if (c == NULL) {
		*error_r = store_error("%s", *error_r);
		return MT_STORE_INVALID;
	}
	struct mt_store_req *req = store_ops_wait(mbox->store, &store_req_change,
						  &c->op);
	enum mt_store_status status = req->status;
	if (status == MT_STORE_OK) {
		if (new_uids_r != NULL && c->uid_count > 0)
			memcpy(new_uids_r, c->new_uids,
			       c->uid_count * sizeof(*new_uids_r));
		if (uidvalidity_r != NULL)
			*uidvalidity_r = c->uidvalidity;
	}
	*error_r = store_error("%s", req->error);
	store_req_free(req);
	return status;
}
