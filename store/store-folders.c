/* store-folders.c — IMAP's folders and subscriptions (format 5): LIST's
 * data, CREATE, DELETE, RENAME (the INBOX rule included), SUBSCRIBE /
 * UNSUBSCRIBE and the special-use folders of a user's first login.
 *
 * Records (store-records.c has the layout): a folder is a mailbox.db
 * record keyed user NUL name, with a mailbox id of its own, so its
 * messages, bodies and flags are a mailbox's like INBOX's; INBOX is the
 * record keyed by the user's name alone. imap.db holds subscriptions as
 * 'S' user NUL name. A folder's name is RFC 9051's mailbox name in UTF-8
 * with '/' levels, already in normal form (lib-mail/imap-mailbox.h), so
 * byte order of the keys is the order LIST answers in and a folder's
 * inferiors are the keys that begin with its key and '/'.
 *
 * Trust boundary: user names from the directory, folder names from IMAP
 * clients after the caller's name check; here only their lengths are
 * checked (no NUL can be in a C string).
 *
 * Guarantees: each change is one transaction (store-ops.c makes it
 * durable before it completes); a DELETE expunges the folder's messages as
 * an EXPUNGE does (bodies purged lazily) in the same transaction that
 * removes the folder; a folder open in this process is neither deleted nor
 * renamed under its session (IN_USE). */
#include "store-req.h"
#include "alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct {
	const char *name;
	enum mt_store_special_use use;
} special_folders[] = {
	{ "Sent", MT_STORE_USE_SENT }, { "Drafts", MT_STORE_USE_DRAFTS },
	{ "Trash", MT_STORE_USE_TRASH }, { "Junk", MT_STORE_USE_JUNK },
	{ "Archive", MT_STORE_USE_ARCHIVE },
};

const struct mt_store_flag_name mt_store_flag_names[MT_STORE_FLAG_COUNT] = {
	{ MT_STORE_FLAG_SEEN, "\\Seen" }, { MT_STORE_FLAG_ANSWERED, "\\Answered" },
	{ MT_STORE_FLAG_FLAGGED, "\\Flagged" }, { MT_STORE_FLAG_DELETED, "\\Deleted" },
	{ MT_STORE_FLAG_DRAFT, "\\Draft" },
};

const char *mt_store_special_use_name(enum mt_store_special_use use)
{
	static const char *const names[] = {
		[MT_STORE_USE_SENT] = "\\Sent", [MT_STORE_USE_DRAFTS] = "\\Drafts",
		[MT_STORE_USE_TRASH] = "\\Trash", [MT_STORE_USE_JUNK] = "\\Junk",
		[MT_STORE_USE_ARCHIVE] = "\\Archive",
	};
	if ((unsigned int)use >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[use];
}

static bool is_inbox(const char *name)
{
	return strcmp(name, "INBOX") == 0;
}

/* imap.db key of user's subscription to name. */
static size_t subscription_key(unsigned char *key, const char *user,
			       const char *name)
{
	key[0] = STORE_IMAP_SUBSCRIPTION;
	size_t ulen = strlen(user), nlen = strlen(name);
	memcpy(key + 1, user, ulen);
	key[1 + ulen] = '\0';
	memcpy(key + 2 + ulen, name, nlen);
	return 2 + ulen + nlen;
}

/* LIST */

struct list_op {
	struct store_op op;
	char *user;
	size_t user_len;
	struct mt_store_folder *folders;
	unsigned int count, cap;
};

static struct mt_store_folder *list_add(struct list_op *l, const char *name,
					size_t len)
{
	if (l->count == l->cap) {
		l->cap = l->cap == 0 ? 16 : l->cap * 2;
		l->folders = mt_xrealloc(l->folders, l->cap * sizeof(*l->folders));
	}
	struct mt_store_folder *f = &l->folders[l->count++];
	memset(f, 0, sizeof(*f));
	f->name = mt_xmalloc(len + 1);
	memcpy(f->name, name, len);
	f->name[len] = '\0';
	return f;
}

static void folder_from_rec(struct mt_store_folder *f,
			    const struct store_mailbox_rec *rec)
{
	f->exists = true;
	f->special_use = rec->attrs & STORE_MBOX_USE_MASK;
	f->uidvalidity = rec->uidl_validity;
	f->uidnext = rec->next_uid;
	f->messages = rec->count;
	f->seen = rec->seen;
	f->deleted = rec->deleted;
	f->bytes = rec->bytes;
	f->highest_modseq = rec->highest_modseq;
}

static int list_visit_mailbox(DBC *cursor, const DBT *key, const DBT *data,
			      void *context)
{
	(void)cursor;
	struct list_op *l = context;
	struct store_mailbox_rec rec;
	int ret = store_mailbox_rec_decode(data, &rec);
	if (ret != 0)
		return ret;
	const char *k = key->data;
	if (key->size == l->user_len) {
		folder_from_rec(&l->folders[0], &rec);	/* INBOX */
		return 0;
	}
	if (k[l->user_len] != '\0')
		return 0;	/* another user's name that begins with ours */
	struct mt_store_folder *f = list_add(l, k + l->user_len + 1,
					     key->size - l->user_len - 1);
	folder_from_rec(f, &rec);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	const struct mt_store_folder *x = a, *y = b;
	if (is_inbox(x->name) != is_inbox(y->name))
		return is_inbox(x->name) ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int list_visit_subscription(DBC *cursor, const DBT *key, const DBT *data,
				   void *context)
{
	(void)cursor;
	(void)data;
	struct list_op *l = context;
	const char *name = (const char *)key->data + 2 + l->user_len;
	size_t len = key->size - 2 - l->user_len;
	char buf[MT_STORE_FOLDER_MAX + 1];
	if (len > MT_STORE_FOLDER_MAX)
		return STORE_ERR_DAMAGED;
	memcpy(buf, name, len);
	buf[len] = '\0';
	struct mt_store_folder want = { .name = buf };
	struct mt_store_folder *f = bsearch(&want, l->folders, l->count,
					    sizeof(*l->folders), name_cmp);
	if (f == NULL)
		f = list_add(l, buf, len);	/* \NonExistent; sorted below */
	f->subscribed = true;
	return 0;
}

static void folders_clear(struct mt_store_folder *folders, unsigned int count)
{
	for (unsigned int i = 0; i < count; i++)
		free(folders[i].name);
}

static int list_run(struct mt_store *store, DB_TXN *txn, struct store_op *op)
{
	struct list_op *l = (struct list_op *)op;
	folders_clear(l->folders, l->count);
	l->count = 0;
	struct mt_store_folder *inbox = list_add(l, "INBOX", 5);
	inbox->exists = true;	/* before its first message too */
	inbox->uidnext = 1;
	inbox->highest_modseq = 1;
	int ret = store_records_walk(store->mailboxes, txn, (const unsigned char *)l->user,
			      l->user_len, 0, list_visit_mailbox, l);
	if (ret != 0 || store->imap == NULL)
		return ret;
	/* Folders are in key order already; INBOX first. Subscriptions
	 * find theirs by binary search, so new ones go after and sort. */
	unsigned char prefix[MT_STORE_MAILBOX_MAX + 2];
	size_t prefix_len = subscription_key(prefix, l->user, "");
	unsigned int existing = l->count;
	ret = store_records_walk(store->imap, txn, prefix, prefix_len, 0,
			  list_visit_subscription, l);
	if (ret == 0 && l->count > existing)
		qsort(l->folders, l->count, sizeof(*l->folders), name_cmp);
	return ret;
}

static void list_free(struct store_op *op)
{
	struct list_op *l = (struct list_op *)op;
	if (l->folders != NULL)
		folders_clear(l->folders, l->count);
	free(l->folders);
	free(l->user);
	free(l);
}

static bool user_ok(const char *user)
{
	size_t len = user == NULL ? 0 : strlen(user);
	return len > 0 && len <= MT_STORE_MAILBOX_MAX;
}

static struct list_op *list_new(const char *user)
{
	struct list_op *l = mt_xcalloc(1, sizeof(*l));
	l->op.run = list_run;
	l->op.free = list_free;
	l->op.what = "listing folders";
	l->user = mt_xstrdup(user != NULL ? user : "");
	l->user_len = strlen(l->user);
	return l;
}

struct mt_store_req *mt_store_folders_list(struct mt_store_port *port,
					   const char *user, mt_store_cb_t *cb,
					   void *context)
{
	if (!user_ok(user))
		return store_ops_refuse(port, &store_req_query, "bad mailbox name",
					cb, context);
	return store_ops_submit(port->store, port, &store_req_query,
				&list_new(user)->op, cb, context);
}

const struct mt_store_folder *mt_store_req_folders(const struct mt_store_req *req,
						   unsigned int *count_r)
{
	const struct list_op *l = (const struct list_op *)store_req_op(req, list_run);
	*count_r = l != NULL && req->status == MT_STORE_OK ? l->count : 0;
	return l != NULL ? l->folders : NULL;
}

enum mt_store_status mt_store_folders_list_sync(struct mt_store *store,
						const char *user,
						struct mt_store_folder **folders_r,
						unsigned int *count_r,
						const char **error_r)
{
	*folders_r = NULL;
	*count_r = 0;
	if (!user_ok(user)) {
		*error_r = store_error("bad mailbox name");
		return MT_STORE_INVALID;
	}
	struct list_op *l = list_new(user);
	struct store_op *op = &l->op;
	struct store_op_req q = {
		.req = { .ops = &store_req_query, .store = store }, .op = op,
	};
	struct mt_store_req *req = &q.req;
	store_counter_add(&store->n_reads, 1);
	req->ops->run(store, req);
	if (req->status == MT_STORE_OK) {
		*folders_r = l->folders;
		*count_r = l->count;
		l->folders = NULL;
		l->count = 0;
	}
	*error_r = store_error("%s", req->error);
	list_free(op);
	return req->status;
}

void mt_store_folders_free(struct mt_store_folder **folders_p,
			   unsigned int count)
{
	if (*folders_p == NULL)
		return;
	folders_clear(*folders_p, count);
	MT_FREE(folders_p);
}

/* Changes */

struct change_op {
	struct store_op op;
	struct mt_store_folder_args args;
	char *user, *name, *new_name;
};

struct count_ctx {
	unsigned int count;
	size_t user_len;
};

static int count_visit(DBC *cursor, const DBT *key, const DBT *data,
		       void *context)
{
	(void)cursor;
	(void)data;
	struct count_ctx *c = context;
	c->count += key->size > c->user_len;	/* folders, not INBOX */
	return 0;
}

/* user's folders (INBOX not counted). */
static int folders_count(struct mt_store *store, DB_TXN *txn, const char *user,
			 unsigned int *count_r)
{
	unsigned char prefix[MT_STORE_MAILBOX_MAX + 1];
	size_t len = strlen(user);
	memcpy(prefix, user, len);
	prefix[len] = '\0';
	struct count_ctx c = { .user_len = len };
	int ret = store_records_walk(store->mailboxes, txn, prefix, len + 1, 0,
			      count_visit, &c);
	*count_r = c.count;
	return ret;
}

static int folder_exists(struct mt_store *store, DB_TXN *txn,
			 const unsigned char *key, size_t key_len)
{
	struct store_mailbox_rec rec;
	return store_mailbox_get(store, txn, key, key_len, &rec, DB_RMW);
}

/* A new folder at key (absent: the caller checked), special use use. */
static int folder_make(struct mt_store *store, DB_TXN *txn,
		       const unsigned char *key, size_t key_len,
		       enum mt_store_special_use use)
{
	uint64_t now = (uint64_t)time(NULL);
	uint32_t uidvalidity;
	struct store_mailbox_rec rec;
	int ret = store_uidvalidity_next(store, txn, now, &uidvalidity);
	if (ret == 0)
		ret = store_mailbox_new(store, txn, now, uidvalidity, &rec);
	if (ret != 0)
		return ret;
	rec.attrs = (uint32_t)use & STORE_MBOX_USE_MASK;
	return store_mailbox_put(store, txn, key, key_len, &rec);
}

static bool is_inbox_key(const unsigned char *name, size_t len)
{
	return len == 5 && memcmp(name, "INBOX", 5) == 0;
}

/* The superiors of the folder at key that do not exist, made (RFC 9051
 * 6.3.4's SHOULD); *made_r how many. */
static int superiors_make(struct mt_store *store, DB_TXN *txn,
			  const unsigned char *key, size_t key_len,
			  size_t user_len, unsigned int *made_r)
{
	*made_r = 0;
	for (size_t i = user_len + 1; i < key_len; i++) {
		if (key[i] != '/' || is_inbox_key(key + user_len + 1, i - user_len - 1))
			continue;
		int ret = folder_exists(store, txn, key, i);
		if (ret == DB_NOTFOUND) {
			ret = folder_make(store, txn, key, i, MT_STORE_USE_NONE);
			(*made_r)++;
		}
		if (ret != 0)
			return ret;
	}
	return 0;
}

static int create_run(struct mt_store *store, DB_TXN *txn, struct change_op *c)
{
	if (is_inbox(c->name))
		return STORE_ERR_EXISTS;
	unsigned char key[STORE_MAILBOX_KEY_MAX];
	size_t key_len = store_mailbox_key(key, c->user, c->name);
	int ret = folder_exists(store, txn, key, key_len);
	if (ret == 0)
		return STORE_ERR_EXISTS;
	if (ret != DB_NOTFOUND)
		return ret;
	unsigned int count, made;
	if ((ret = folders_count(store, txn, c->user, &count)) != 0 ||
	    (ret = superiors_make(store, txn, key, key_len, strlen(c->user),
				  &made)) != 0)
		return ret;
	if (c->args.folder_max != 0 && count + made + 1 > c->args.folder_max)
		return STORE_ERR_LIMIT;
	c->op.wrote = true;
	return folder_make(store, txn, key, key_len, c->args.special_use);
}

struct uids_ctx {
	uint32_t *uids;
	unsigned int count, cap;
};

static int uids_visit(DBC *cursor, const DBT *key, const DBT *data,
		      void *context)
{
	(void)cursor;
	(void)data;
	struct uids_ctx *u = context;
	if (key->size != STORE_MESSAGE_KEY_SIZE)
		return STORE_ERR_DAMAGED;
	if (u->count == u->cap) {
		u->cap = u->cap == 0 ? 64 : u->cap * 2;
		u->uids = mt_xrealloc(u->uids, u->cap * sizeof(*u->uids));
	}
	u->uids[u->count++] = store_get_be32((const unsigned char *)key->data + 8);
	return 0;
}

/* Is there a key below key (key '/' ...)? */
static int has_inferiors(struct mt_store *store, DB_TXN *txn,
			 const unsigned char *key, size_t key_len, bool *has_r)
{
	unsigned char prefix[STORE_MAILBOX_KEY_MAX + 1];
	memcpy(prefix, key, key_len);
	prefix[key_len] = '/';
	struct count_ctx c = { .user_len = 0 };
	int ret = store_records_walk(store->mailboxes, txn, prefix, key_len + 1, 0,
			      count_visit, &c);
	*has_r = c.count > 0;
	return ret;
}

static int delete_run(struct mt_store *store, DB_TXN *txn, struct change_op *c)
{
	if (is_inbox(c->name))
		return STORE_ERR_INVALID;
	unsigned char key[STORE_MAILBOX_KEY_MAX];
	size_t key_len = store_mailbox_key(key, c->user, c->name);
	struct store_mailbox_rec rec;
	int ret = store_mailbox_get(store, txn, key, key_len, &rec, DB_RMW);
	if (ret != 0)
		return ret;
	bool has;
	if ((ret = has_inferiors(store, txn, key, key_len, &has)) != 0)
		return ret;
	if (has)
		return STORE_ERR_HAS_CHILDREN;
	if (store_mailbox_in_use(store, key, key_len, false))
		return STORE_ERR_IN_USE;
	unsigned char prefix[STORE_MESSAGE_KEY_SIZE];
	store_message_key(prefix, rec.id, 0);
	struct uids_ctx u = { 0 };
	ret = store_records_walk(store->messages, txn, prefix, 8, DB_RMW,
				 uids_visit, &u);
	for (unsigned int i = 0; ret == 0 && i < u.count; i++)
		ret = store_records_expunge_one(store, txn, &rec, u.uids[i]);
	free(u.uids);
	DBT k;
	store_dbt_in(&k, key, key_len);
	if (ret == 0)
		ret = store->mailboxes->del(store->mailboxes, txn, &k, 0);
	if (ret == 0)
		ret = store_flags_drop_mailbox(store, txn, rec.id);
	if (ret == 0) {
		c->op.wrote = true;
		c->op.expunged = u.count;
	}
	return ret;
}

struct rename_ctx {
	unsigned char (*keys)[STORE_MAILBOX_KEY_MAX];
	size_t *lens;
	unsigned int count, cap;
};

static int rename_visit(DBC *cursor, const DBT *key, const DBT *data,
			void *context)
{
	(void)cursor;
	(void)data;
	struct rename_ctx *r = context;
	if (key->size > STORE_MAILBOX_KEY_MAX)
		return STORE_ERR_DAMAGED;
	if (r->count == r->cap) {
		r->cap = r->cap == 0 ? 8 : r->cap * 2;
		r->keys = mt_xrealloc(r->keys, r->cap * sizeof(*r->keys));
		r->lens = mt_xrealloc(r->lens, r->cap * sizeof(*r->lens));
	}
	memcpy(r->keys[r->count], key->data, key->size);
	r->lens[r->count++] = key->size;
	return 0;
}

/* Move the record at from to to (absent), keeping it as it is. */
static int record_move(struct mt_store *store, DB_TXN *txn,
		       const unsigned char *from, size_t from_len,
		       const unsigned char *to, size_t to_len)
{
	struct store_mailbox_rec rec;
	int ret = store_mailbox_get(store, txn, from, from_len, &rec, DB_RMW);
	DBT k;
	store_dbt_in(&k, from, from_len);
	if (ret == 0)
		ret = store->mailboxes->del(store->mailboxes, txn, &k, 0);
	if (ret == 0)
		ret = store_mailbox_put(store, txn, to, to_len, &rec);
	return ret;
}

/* RENAME INBOX new: its record (id, messages, UIDVALIDITY) becomes the
 * folder's; INBOX starts over with a new id and UIDVALIDITY. */
static int rename_inbox(struct mt_store *store, DB_TXN *txn, struct change_op *c,
			const unsigned char *to, size_t to_len)
{
	unsigned char key[STORE_MAILBOX_KEY_MAX];
	size_t key_len = store_mailbox_key(key, c->user, NULL);
	if (store_mailbox_in_use(store, key, key_len, false))
		return STORE_ERR_IN_USE;
	struct store_mailbox_rec rec, fresh;
	uint64_t now = (uint64_t)time(NULL);
	uint32_t uidvalidity;
	int ret = store_mailbox_get(store, txn, key, key_len, &rec, DB_RMW);
	if (ret == DB_NOTFOUND)
		return folder_make(store, txn, to, to_len, MT_STORE_USE_NONE);
	/* The new INBOX's UIDVALIDITY above the old one's (which may not
	 * have come from the counter: a store older than format 5). */
	if (ret != 0 ||
	    (ret = store_uidvalidity_next(store, txn,
					  now > rec.uidl_validity ? now :
					  (uint64_t)rec.uidl_validity + 1,
					  &uidvalidity)) != 0 ||
	    (ret = store_mailbox_new(store, txn, now, uidvalidity, &fresh)) != 0)
		return ret;
	fresh.attrs = rec.attrs & STORE_MBOX_PREPARED;
	rec.attrs &= ~STORE_MBOX_PREPARED;
	if ((ret = store_mailbox_put(store, txn, to, to_len, &rec)) != 0)
		return ret;
	return store_mailbox_put(store, txn, key, key_len, &fresh);
}

static int rename_run(struct mt_store *store, DB_TXN *txn, struct change_op *c)
{
	const size_t user_len = strlen(c->user);
	unsigned char to[STORE_MAILBOX_KEY_MAX], from[STORE_MAILBOX_KEY_MAX];
	size_t to_len = store_mailbox_key(to, c->user, c->new_name);
	size_t from_len = store_mailbox_key(from, c->user, c->name);
	size_t name_len = strlen(c->name), new_len = strlen(c->new_name);
	if (is_inbox(c->new_name))
		return STORE_ERR_EXISTS;
	/* Not into itself or below it. */
	if (!is_inbox(c->name) && new_len >= name_len &&
	    memcmp(c->new_name, c->name, name_len) == 0 &&
	    (new_len == name_len || c->new_name[name_len] == '/'))
		return STORE_ERR_INVALID;
	int ret = folder_exists(store, txn, to, to_len);
	if (ret == 0)
		return STORE_ERR_EXISTS;
	if (ret != DB_NOTFOUND)
		return ret;
	unsigned int count, made;
	if ((ret = folders_count(store, txn, c->user, &count)) != 0 ||
	    (ret = superiors_make(store, txn, to, to_len, user_len, &made)) != 0)
		return ret;
	c->op.wrote = true;
	if (is_inbox(c->name)) {
		if (c->args.folder_max != 0 && count + made + 1 > c->args.folder_max)
			return STORE_ERR_LIMIT;
		return rename_inbox(store, txn, c, to, to_len);
	}
	if (c->args.folder_max != 0 && count + made > c->args.folder_max)
		return STORE_ERR_LIMIT;
	if ((ret = folder_exists(store, txn, from, from_len)) != 0)
		return ret;
	/* The folder and its inferiors, none open, none of the new names
	 * taken. */
	struct rename_ctx r = { 0 };
	unsigned char prefix[STORE_MAILBOX_KEY_MAX + 1];
	memcpy(prefix, from, from_len);
	prefix[from_len] = '/';
	ret = store_records_walk(store->mailboxes, txn, prefix, from_len + 1, DB_RMW,
			  rename_visit, &r);
	if (ret == 0 && (store_mailbox_in_use(store, from, from_len, false) ||
			 store_mailbox_in_use(store, prefix, from_len + 1, true)))
		ret = STORE_ERR_IN_USE;
	if (ret == 0)
		ret = record_move(store, txn, from, from_len, to, to_len);
	for (unsigned int i = 0; ret == 0 && i < r.count; i++) {
		unsigned char dest[STORE_MAILBOX_KEY_MAX + 1];
		size_t tail = r.lens[i] - from_len;
		if (to_len + tail > STORE_MAILBOX_KEY_MAX ||
		    to_len + tail - user_len - 1 > MT_STORE_FOLDER_MAX) {
			ret = STORE_ERR_LIMIT;	/* a name below gets too long */
			break;
		}
		memcpy(dest, to, to_len);
		memcpy(dest + to_len, r.keys[i] + from_len, tail);
		ret = folder_exists(store, txn, dest, to_len + tail);
		if (ret == 0)
			ret = STORE_ERR_EXISTS;
		else if (ret == DB_NOTFOUND)
			ret = record_move(store, txn, r.keys[i], r.lens[i], dest,
					  to_len + tail);
	}
	free(r.keys);
	free(r.lens);
	return ret;
}

static int subscribe_run(struct mt_store *store, DB_TXN *txn, struct change_op *c,
			 bool on)
{
	unsigned char key[MT_STORE_MAILBOX_MAX + MT_STORE_FOLDER_MAX + 2];
	DBT k, data;
	store_dbt_in(&k, key, subscription_key(key, c->user, c->name));
	store_dbt_in(&data, "", 0);
	int ret = on ? store->imap->put(store->imap, txn, &k, &data, 0) :
		store->imap->del(store->imap, txn, &k, 0);
	if (ret == 0)
		c->op.wrote = true;
	return ret;
}

/* The first login's folders, once. */
static int prepare_run(struct mt_store *store, DB_TXN *txn, struct change_op *c)
{
	unsigned char inbox[STORE_MAILBOX_KEY_MAX];
	size_t inbox_len = store_mailbox_key(inbox, c->user, NULL);
	struct store_mailbox_rec rec;
	int ret = store_mailbox_get(store, txn, inbox, inbox_len, &rec, DB_RMW);
	if (ret == DB_NOTFOUND) {
		uint64_t now = (uint64_t)time(NULL);
		uint32_t uidvalidity;
		ret = store_uidvalidity_next(store, txn, now, &uidvalidity);
		if (ret == 0)
			ret = store_mailbox_new(store, txn, now, uidvalidity, &rec);
	}
	if (ret != 0 || (rec.attrs & STORE_MBOX_PREPARED) != 0)
		return ret;
	unsigned int count;
	if ((ret = folders_count(store, txn, c->user, &count)) != 0)
		return ret;
	const char *name = c->name;
	c->name = (char *)"INBOX";
	ret = subscribe_run(store, txn, c, true);
	for (size_t i = 0; ret == 0 && i < sizeof(special_folders) /
		     sizeof(special_folders[0]); i++) {
		unsigned char key[STORE_MAILBOX_KEY_MAX];
		size_t key_len = store_mailbox_key(key, c->user,
						   special_folders[i].name);
		ret = folder_exists(store, txn, key, key_len);
		if (ret == DB_NOTFOUND) {
			if (c->args.folder_max != 0 && count >= c->args.folder_max) {
				ret = 0;	/* the user's own folders came first */
				continue;
			}
			ret = folder_make(store, txn, key, key_len,
					  special_folders[i].use);
			count++;
		}
		c->name = (char *)special_folders[i].name;
		if (ret == 0)
			ret = subscribe_run(store, txn, c, true);
	}
	c->name = (char *)name;
	rec.attrs |= STORE_MBOX_PREPARED;
	if (ret == 0)
		ret = store_mailbox_put(store, txn, inbox, inbox_len, &rec);
	c->op.wrote = true;
	return ret;
}

static int change_run(struct mt_store *store, DB_TXN *txn, struct store_op *op)
{
	struct change_op *c = (struct change_op *)op;
	switch (c->args.change) {
	case MT_STORE_FOLDER_CREATE:
		return create_run(store, txn, c);
	case MT_STORE_FOLDER_DELETE:
		return delete_run(store, txn, c);
	case MT_STORE_FOLDER_RENAME:
		return rename_run(store, txn, c);
	case MT_STORE_FOLDER_SUBSCRIBE:
		return subscribe_run(store, txn, c, true);
	case MT_STORE_FOLDER_UNSUBSCRIBE:
		return subscribe_run(store, txn, c, false);
	case MT_STORE_FOLDER_PREPARE:
		return prepare_run(store, txn, c);
	}
	return STORE_ERR_INVALID;
}

static void change_free(struct store_op *op)
{
	struct change_op *c = (struct change_op *)op;
	free(c->user);
	free(c->name);
	free(c->new_name);
	free(c);
}

static bool folder_name_ok(const char *name)
{
	size_t len = name == NULL ? 0 : strlen(name);
	return len > 0 && len <= MT_STORE_FOLDER_MAX;
}

/* The op for args, or NULL and *error_r when they are refused. */
static struct change_op *change_new(struct mt_store *store,
				    const struct mt_store_folder_args *args,
				    const char **error_r)
{
	static const char *const what[] = {
		[MT_STORE_FOLDER_CREATE] = "creating a folder",
		[MT_STORE_FOLDER_DELETE] = "deleting a folder",
		[MT_STORE_FOLDER_RENAME] = "renaming a folder",
		[MT_STORE_FOLDER_SUBSCRIBE] = "subscribing",
		[MT_STORE_FOLDER_UNSUBSCRIBE] = "unsubscribing",
		[MT_STORE_FOLDER_PREPARE] = "making the first login's folders",
	};
	if ((unsigned int)args->change > MT_STORE_FOLDER_PREPARE || !user_ok(args->user) ||
	    (args->change != MT_STORE_FOLDER_PREPARE && !folder_name_ok(args->name)) ||
	    (args->change == MT_STORE_FOLDER_RENAME && !folder_name_ok(args->new_name)) ||
	    (unsigned int)args->special_use > MT_STORE_USE_ARCHIVE) {
		*error_r = "bad mailbox or folder name";
		return NULL;
	}
	if (store->imap == NULL) {
		*error_r = "store not upgraded to format 5 (administration only)";
		return NULL;
	}
	struct change_op *c = mt_xcalloc(1, sizeof(*c));
	c->op.run = change_run;
	c->op.free = change_free;
	c->op.what = what[args->change];
	c->args = *args;
	c->user = mt_xstrdup(args->user);
	c->name = mt_xstrdup(args->name != NULL ? args->name : "INBOX");
	c->new_name = args->new_name != NULL ? mt_xstrdup(args->new_name) : NULL;
	return c;
}

struct mt_store_req *mt_store_folder_change(struct mt_store_port *port,
					    const struct mt_store_folder_args *args,
					    mt_store_cb_t *cb, void *context)
{
	const char *error;
	struct change_op *c = change_new(port->store, args, &error);
	if (c == NULL)
		return store_ops_refuse(port, &store_req_change, error, cb, context);
	return store_ops_submit(port->store, port, &store_req_change, &c->op, cb,
				context);
}

enum mt_store_status mt_store_folder_change_wait(struct mt_store *store,
						 const struct mt_store_folder_args *args,
						 const char **error_r)
{
	struct change_op *c = change_new(store, args, error_r);
	if (c == NULL) {
		*error_r = store_error("%s", *error_r);
		return MT_STORE_INVALID;
	}
	struct mt_store_req *req = store_ops_wait(store, &store_req_change, &c->op);
	enum mt_store_status status = req->status;
	*error_r = store_error("%s", req->error);
	store_req_free(req);
	return status;
}
