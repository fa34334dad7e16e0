/* store-mailbox.c — open mailboxes: the in-process table of open
 * mailboxes (INBOX or an IMAP folder, by its mailbox.db key) that keeps a
 * mailbox open in at most one exclusive session (POP3's, RFC 1939 8) and
 * in any number of shared ones (IMAP's) beside it, the snapshot of its
 * messages taken at open, and reading message bytes by range.
 *
 * Trust boundary: mailbox names from the caller (already authenticated and
 * resolved through the directory); message indexes and offsets from POP3
 * clients, checked against the snapshot here.
 *
 * Guarantees: while a mailbox object exists (open, or referenced by a
 * request still in flight) no other open of the same name succeeds; the
 * lock is released when the last reference goes, so an expunge still
 * running after the session died is never overtaken by a new session. */
#include "store-mailbox.h"
#include "alloc.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

/* One open mailbox object; several may share a key (one exclusive). */
struct store_open_entry {
	struct store_open_entry *next;
	bool exclusive;
	size_t len;
	unsigned char key[];
};

static unsigned int key_bucket(const unsigned char *key, size_t len)
{
	uint32_t h = 2166136261u;	/* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ key[i]) * 16777619u;
	return h % STORE_OPEN_BUCKETS;
}

void store_mailbox_table_init(struct mt_store *store)
{
	pthread_mutex_init(&store->open_lock, NULL);
}

void store_mailbox_table_deinit(struct mt_store *store)
{
	for (unsigned int i = 0; i < STORE_OPEN_BUCKETS; i++) {
		struct store_open_entry *e = store->open_table[i], *next;
		for (; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
		store->open_table[i] = NULL;
	}
	pthread_mutex_destroy(&store->open_lock);
}

/* Take key's lock (exclusive, or shared); NULL if an exclusive open of
 * it is wanted and another one holds it. */
static struct store_open_entry *table_take(struct mt_store *store,
					   const unsigned char *key, size_t len,
					   bool exclusive)
{
	unsigned int b = key_bucket(key, len);
	pthread_mutex_lock(&store->open_lock);
	for (struct store_open_entry *e = store->open_table[b];
	     e != NULL && exclusive; e = e->next) {
		if (e->exclusive && e->len == len && memcmp(e->key, key, len) == 0) {
			pthread_mutex_unlock(&store->open_lock);
			return NULL;
		}
	}
	struct store_open_entry *entry = mt_xmalloc(sizeof(*entry) + len);
	memcpy(entry->key, key, len);
	entry->len = len;
	entry->exclusive = exclusive;
	entry->next = store->open_table[b];
	store->open_table[b] = entry;
	store->open_count++;
	pthread_mutex_unlock(&store->open_lock);
	return entry;
}

static void table_release(struct mt_store *store, struct store_open_entry *entry)
{
	struct store_open_entry **pp =
		&store->open_table[key_bucket(entry->key, entry->len)];
	pthread_mutex_lock(&store->open_lock);
	for (; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == entry) {
			*pp = entry->next;
			store->open_count--;
			break;
		}
	}
	pthread_mutex_unlock(&store->open_lock);
	free(entry);
}

bool store_mailbox_in_use(struct mt_store *store, const unsigned char *key,
			  size_t key_len, bool prefix)
{
	bool found = false;
	pthread_mutex_lock(&store->open_lock);
	if (!prefix) {
		unsigned int b = key_bucket(key, key_len);
		for (struct store_open_entry *e = store->open_table[b];
		     e != NULL && !found; e = e->next)
			found = e->len == key_len && memcmp(e->key, key, key_len) == 0;
	}
	for (unsigned int b = 0; prefix && b < STORE_OPEN_BUCKETS && !found; b++)
		for (struct store_open_entry *e = store->open_table[b];
		     e != NULL && !found; e = e->next)
			found = e->len >= key_len && memcmp(e->key, key, key_len) == 0;
	pthread_mutex_unlock(&store->open_lock);
	return found;
}

enum mt_store_status store_folder_open(struct mt_store *store, const char *user,
				       const char *folder, bool exclusive,
				       struct mt_store_mailbox **mbox_r,
				       const char **error_r)
{
	*mbox_r = NULL;
	if (atomic_load(&store->failed)) {
		*error_r = store_error("store failed: restart needed for recovery");
		return MT_STORE_FATAL;
	}
	if (folder != NULL && strcmp(folder, "INBOX") == 0)
		folder = NULL;
	unsigned char key[STORE_MAILBOX_KEY_MAX];
	size_t key_len = store_mailbox_key(key, user, folder);
	struct store_open_entry *entry = table_take(store, key, key_len, exclusive);
	if (entry == NULL) {
		*error_r = store_error("mailbox %s%s%s is in use", user,
				       folder != NULL ? " folder " : "",
				       folder != NULL ? folder : "");
		return MT_STORE_IN_USE;
	}
	struct mt_store_mailbox *mbox = mt_xcalloc(1, sizeof(*mbox));
	mbox->store = store;
	atomic_init(&mbox->refs, 1);
	atomic_init(&mbox->writers, 0);
	mbox->name = mt_xstrdup(user);
	mbox->folder = folder != NULL ? mt_xstrdup(folder) : NULL;
	mbox->key = mt_xmalloc(key_len);
	memcpy(mbox->key, key, key_len);
	mbox->key_len = key_len;
	atomic_init(&mbox->entry, entry);
	int ret = store_records_load(store, mbox);
	if (ret == 0 && folder != NULL && !mbox->exists)
		ret = DB_NOTFOUND;
	if (ret != 0) {
		enum mt_store_status status = store_status_from_db(store, ret);
		if (status == MT_STORE_NOT_FOUND) {
			*error_r = store_error("mailbox %s has no folder %s", user,
					       folder);
			store_mailbox_unref(&mbox);
			return status;
		}
		*error_r = store_error("opening mailbox %s%s%s: %s", user,
				       folder != NULL ? " folder " : "",
				       folder != NULL ? folder : "",
				       store_strerror(ret));
		mt_error("store: %s", *error_r);
		store_mailbox_unref(&mbox);
		return status;
	}
	*mbox_r = mbox;
	return MT_STORE_OK;
}

enum mt_store_status store_mailbox_open(struct mt_store *store, const char *name,
					struct mt_store_mailbox **mbox_r,
					const char **error_r)
{
	return store_folder_open(store, name, NULL, true, mbox_r, error_r);
}

enum mt_store_status mt_store_mailbox_open_sync(struct mt_store *store,
						const char *name,
						struct mt_store_mailbox **mbox_r,
						const char **error_r)
{
	*mbox_r = NULL;
	if (name == NULL || name[0] == '\0' || strlen(name) > MT_STORE_MAILBOX_MAX) {
		*error_r = store_error("bad mailbox name");
		return MT_STORE_INVALID;
	}
	store_counter_add(&store->n_reads, 1);
	return store_mailbox_open(store, name, mbox_r, error_r);
}

struct mt_store_mailbox *store_mailbox_ref(struct mt_store_mailbox *mbox)
{
	atomic_fetch_add(&mbox->refs, 1);
	return mbox;
}

/* Give the in-use lock back (once, whoever comes first). */
static void mailbox_unlock(struct mt_store_mailbox *mbox)
{
	struct store_open_entry *entry = atomic_exchange(&mbox->entry, NULL);
	if (entry != NULL)
		table_release(mbox->store, entry);
}

void store_mailbox_unref(struct mt_store_mailbox **mbox_p)
{
	struct mt_store_mailbox *mbox = *mbox_p;
	if (mbox == NULL)
		return;
	*mbox_p = NULL;
	if (atomic_fetch_sub(&mbox->refs, 1) != 1)
		return;
	mailbox_unlock(mbox);
	free(mbox->msgs);
	free(mbox->locs);
	for (unsigned int i = 0; i < mbox->keyword_count; i++)
		free(mbox->keywords[i]);
	free(mbox->keywords);
	free(mbox->key);
	free(mbox->folder);
	free(mbox->name);
	free(mbox);
}

void store_mailbox_writer(struct mt_store_mailbox *mbox, bool add)
{
	if (add)
		atomic_fetch_add(&mbox->writers, 1);
	else
		atomic_fetch_sub(&mbox->writers, 1);
}

void mt_store_mailbox_close(struct mt_store_mailbox **mbox_p)
{
	struct mt_store_mailbox *mbox = *mbox_p;
	/* The owner is done: reads it cancelled may still run (their results
	 * go nowhere), but the next session may have the mailbox. An
	 * expunge in flight keeps it until it is freed. The owner submits
	 * nothing after this, so writers cannot grow meanwhile. */
	if (mbox != NULL && atomic_load(&mbox->writers) == 0)
		mailbox_unlock(mbox);
	store_mailbox_unref(mbox_p);
}

const char *mt_store_mailbox_name(const struct mt_store_mailbox *mbox)
{
	return mbox->name;
}

unsigned int mt_store_mailbox_count(const struct mt_store_mailbox *mbox)
{
	return mbox->count;
}

uint64_t mt_store_mailbox_bytes(const struct mt_store_mailbox *mbox)
{
	return mbox->bytes;
}

uint32_t mt_store_mailbox_uidvalidity(const struct mt_store_mailbox *mbox)
{
	return mbox->uidvalidity;
}

uint32_t mt_store_mailbox_uidnext(const struct mt_store_mailbox *mbox)
{
	return mbox->exists ? mbox->uidnext : 1;
}

uint64_t mt_store_mailbox_highest_modseq(const struct mt_store_mailbox *mbox)
{
	return mbox->exists ? mbox->highest_modseq : 1;
}

const char *mt_store_mailbox_keyword(const struct mt_store_mailbox *mbox,
				     unsigned int index)
{
	return index < mbox->keyword_count ? mbox->keywords[index] : NULL;
}

int mt_store_mailbox_find(const struct mt_store_mailbox *mbox, uint32_t uid)
{
	/* The snapshot is in uid order (message.db's key order). */
	unsigned int lo = 0, hi = mbox->count;
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		if (mbox->msgs[mid].uid < uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < mbox->count && mbox->msgs[lo].uid == uid ? (int)lo : -1;
}

const struct mt_store_msg *mt_store_mailbox_msg(const struct mt_store_mailbox *mbox,
						unsigned int index)
{
	return index < mbox->count ? &mbox->msgs[index] : NULL;
}

enum mt_store_status mt_store_read_sync(struct mt_store_mailbox *mbox,
					unsigned int index, uint64_t offset,
					void *buf, size_t max, size_t *size_r,
					const char **error_r)
{
	*size_r = 0;
	if (index >= mbox->count) {
		*error_r = store_error("no such message");
		return MT_STORE_NOT_FOUND;
	}
	if (max > MT_STORE_READ_MAX)
		max = MT_STORE_READ_MAX;
	const struct mt_store_msg *msg = &mbox->msgs[index];
	int ret = store_records_read(mbox->store, mbox->id, msg,
				     &mbox->locs[index], offset, buf, max,
				     size_r);
	if (ret == 0)
		return MT_STORE_OK;
	enum mt_store_status status = store_status_from_db(mbox->store, ret);
	if (status == MT_STORE_NOT_FOUND)
		*error_r = store_error("message uid %u of %s is gone", msg->uid,
				       mbox->name);
	else {
		*error_r = store_error("reading uid %u of %s: %s", msg->uid,
				       mbox->name, store_strerror(ret));
		mt_error("store: %s", *error_r);
	}
	return status;
}
