/* store-structure.c — each body's MIME structure record (lib-mail's
 * imap-bodystructure: ENVELOPE, BODY, BODYSTRUCTURE and the part table),
 * kept in imap.db under 'M' + body id. It is made as the body streams in
 * (store-body.c scans every append), written in the transaction of the
 * body's first reference and deleted with its last, so every copy of a
 * message (COPY, MOVE, several recipients) shares it and no FETCH parses
 * the body again.
 *
 * A message stored before there were records (format 4 and older, or one
 * without a shared body) has none: its structure is scanned from its
 * octets when asked, on the reader thread, and not kept (those messages
 * are only ever read; new ones all have a record).
 *
 * Trust boundary: records are the store's own; the reader checks one
 * before handing it out (mt_mime_record_read), and a damaged one is
 * scanned again instead. */
#include "store-req.h"
#include "alloc.h"
#include "buf.h"
#include "imap-bodystructure.h"
#include "mime-scan.h"

#include <stdlib.h>
#include <string.h>

#define STRUCTURE_KEY_SIZE 9

static void structure_key(unsigned char *kbuf, uint64_t body_id)
{
	kbuf[0] = STORE_IMAP_STRUCTURE;
	store_put_be64(kbuf + 1, body_id);
}

int store_structure_put(struct mt_store *store, DB_TXN *txn, uint64_t body_id,
			const void *record, size_t len)
{
	if (store->imap == NULL || len == 0)
		return 0;
	unsigned char kbuf[STRUCTURE_KEY_SIZE];
	structure_key(kbuf, body_id);
	DBT key, data;
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	store_dbt_in(&data, record, len);
	return store->imap->put(store->imap, txn, &key, &data, 0);
}

int store_structure_del(struct mt_store *store, DB_TXN *txn, uint64_t body_id)
{
	if (store->imap == NULL)
		return 0;
	unsigned char kbuf[STRUCTURE_KEY_SIZE];
	structure_key(kbuf, body_id);
	DBT key;
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	int ret = store->imap->del(store->imap, txn, &key, 0);
	return ret == DB_NOTFOUND ? 0 : ret;
}

struct structure_op {
	struct store_op op;
	unsigned int index;
	struct mt_buf record;
	uint64_t shift;
};

/* The stored record of body_id into out; DB_NOTFOUND if none. */
static int structure_get(struct mt_store *store, uint64_t body_id, struct mt_buf *out)
{
	unsigned char kbuf[STRUCTURE_KEY_SIZE];
	structure_key(kbuf, body_id);
	DBT key, data;
	store_dbt_in(&key, kbuf, sizeof(kbuf));
	memset(&data, 0, sizeof(data));
	data.flags = DB_DBT_MALLOC;
	int ret = store->imap->get(store->imap, NULL, &key, &data, 0);
	if (ret == 0) {
		mt_buf_append(out, data.data, data.size);
		free(data.data);
	}
	return ret;
}

/* No record: the message's own octets scanned (shift 0). */
static int structure_scan(struct mt_store *store, struct mt_store_mailbox *mbox,
			  unsigned int index, struct mt_buf *out)
{
	const struct mt_store_msg *msg = &mbox->msgs[index];
	struct mt_mime_scan *scan = mt_mime_scan_new();
	char *buf = mt_xmalloc(MT_STORE_READ_MAX);
	int ret = 0;
	for (uint64_t offset = 0; offset < msg->size;) {
		size_t n = 0;
		ret = store_records_read(store, mbox->id, msg, &mbox->locs[index], offset, buf,
					 MT_STORE_READ_MAX, &n);
		if (ret != 0 || n == 0)
			break;
		mt_mime_scan_feed(scan, buf, n);
		offset += n;
	}
	free(buf);
	if (ret == 0) {
		mt_mime_scan_finish(scan);
		unsigned int count;
		const struct mt_mime_entity *entities = mt_mime_scan_entities(scan, &count);
		mt_mime_record_write(out, entities, count);
	}
	mt_mime_scan_free(&scan);
	return ret;
}

static int structure_run(struct mt_store *store, DB_TXN *txn, struct store_op *op)
{
	(void)txn;
	struct structure_op *s = (struct structure_op *)op;
	struct mt_store_mailbox *mbox = op->mbox;
	const struct store_msg_loc *loc = &mbox->locs[s->index];
	mt_buf_reset(&s->record);
	s->shift = 0;
	if (loc->body_id != 0 && store->imap != NULL) {
		int ret = structure_get(store, loc->body_id, &s->record);
		struct mt_mime_record check;
		if (ret == 0 && mt_mime_record_read(&check, s->record.data, s->record.len)) {
			s->shift = loc->prefix_len;
			return 0;
		}
		if (ret != 0 && ret != DB_NOTFOUND)
			return ret;
		mt_buf_reset(&s->record);
	}
	return structure_scan(store, mbox, s->index, &s->record);
}

static void structure_free(struct store_op *op)
{
	struct structure_op *s = (struct structure_op *)op;
	mt_buf_free(&s->record);
	free(s);
}

static struct structure_op *structure_new(struct mt_store_mailbox *mbox, unsigned int index)
{
	struct structure_op *s = mt_xcalloc(1, sizeof(*s));
	s->op.run = structure_run;
	s->op.free = structure_free;
	s->op.what = "reading a message's structure";
	s->op.mbox = store_mailbox_ref(mbox);
	store_mailbox_writer(mbox, true);	/* released with the others' */
	s->index = index;
	return s;
}

struct mt_store_req *mt_store_structure(struct mt_store_port *port,
					struct mt_store_mailbox *mbox, unsigned int index,
					mt_store_cb_t *cb, void *context)
{
	if (index >= mbox->count)
		return store_ops_refuse(port, &store_req_query, "no such message", cb, context);
	return store_ops_submit(port->store, port, &store_req_query,
				&structure_new(mbox, index)->op, cb, context);
}

const void *mt_store_req_structure(const struct mt_store_req *req, size_t *len_r,
				   uint64_t *shift_r)
{
	const struct structure_op *s =
		(const struct structure_op *)store_req_op(req, structure_run);
	*len_r = 0;
	*shift_r = 0;
	if (s == NULL || req->status != MT_STORE_OK)
		return NULL;
	*len_r = s->record.len;
	*shift_r = s->shift;
	return s->record.data;
}

enum mt_store_status mt_store_structure_sync(struct mt_store_mailbox *mbox, unsigned int index,
					     struct mt_buf *record_r, uint64_t *shift_r,
					     const char **error_r)
{
	*shift_r = 0;
	if (index >= mbox->count) {
		*error_r = store_error("no such message");
		return MT_STORE_NOT_FOUND;
	}
	struct structure_op *s = structure_new(mbox, index);
	struct mt_store_req *req = store_ops_wait(mbox->store, &store_req_query, &s->op);
	enum mt_store_status status = req->status;
	if (status == MT_STORE_OK) {
		mt_buf_append(record_r, s->record.data, s->record.len);
		*shift_r = s->shift;
	}
	*error_r = store_error("%s", req->error);
	store_req_free(req);
	return status;
}
