/* store-mailbox.h — the open-mailbox layer: a mailbox's snapshot (its
 * messages as the session sees them), the in-use table that keeps a POP3
 * mailbox to one session, and the synchronous opens (store-mailbox.c).
 * Built on store-records.h; the request layer builds on it.
 * Trust boundary: as store.h. */
#ifndef MT_STORE_MAILBOX_H
#define MT_STORE_MAILBOX_H

#include "store-records.h"

struct mt_store_mailbox {
	struct mt_store *store;
	atomic_uint refs;
	char *name;			/* the user's (INBOX) mailbox name */
	char *folder;			/* NULL: INBOX */
	unsigned char *key;		/* its mailbox.db key */
	size_t key_len;
	bool exists;
	uint64_t id;
	uint32_t uidvalidity, uidnext;
	uint64_t highest_modseq;
	char **keywords;		/* its keyword table, keyword_count names */
	unsigned int keyword_count;
	struct mt_store_msg *msgs;
	struct store_msg_loc *locs;	/* one per message */
	unsigned int count;
	uint64_t bytes;
	/* The in-use lock: released when the owner closes the mailbox with
	 * no expunge in flight, else with the last reference (a cancelled
	 * read still running does not keep the next session out; a commit
	 * still running does, as its changes are not in that session's view). */
	struct store_open_entry *_Atomic entry;
	atomic_uint writers;		/* expunge requests not yet freed */
};

/* store-mailbox.c */
void store_mailbox_table_init(struct mt_store *store);
void store_mailbox_table_deinit(struct mt_store *store);
/* Take the in-use lock and load the snapshot (any thread). */
enum mt_store_status store_mailbox_open(struct mt_store *store, const char *name,
					struct mt_store_mailbox **mbox_r,
					const char **error_r);
/* The same for user's folder (NULL: INBOX), exclusive (POP3: IN_USE if
 * another exclusive open holds it) or shared (IMAP: never IN_USE);
 * NOT_FOUND if a folder is not there (INBOX opens empty). */
enum mt_store_status store_folder_open(struct mt_store *store, const char *user,
				       const char *folder, bool exclusive,
				       struct mt_store_mailbox **mbox_r,
				       const char **error_r);
/* True while the mailbox at key (or, prefix true, any whose key begins
 * with it) is open in the process (the folder changes refuse it). */
bool store_mailbox_in_use(struct mt_store *store, const unsigned char *key,
			  size_t key_len, bool prefix);
struct mt_store_mailbox *store_mailbox_ref(struct mt_store_mailbox *mbox);
void store_mailbox_unref(struct mt_store_mailbox **mbox_p);
/* An expunge request holding mbox starts (add) or is freed. */
void store_mailbox_writer(struct mt_store_mailbox *mbox, bool add);

#endif
