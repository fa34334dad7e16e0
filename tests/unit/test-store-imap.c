/* test-store-imap.c — the store's format 5 for IMAP, on real Berkeley DB
 * files: the in-place upgrade of a store filled by the format 4 code
 * (tests/unit/data/store-v4.tar.xz, made by data/make-store-v4.c) with
 * every byte and UIDL read back; folders (the first login's special-use
 * ones, CREATE with superiors and the folder limit, DELETE and its
 * messages, RENAME with inferiors and the INBOX rule, UIDVALIDITY never
 * reused); subscriptions with \NonExistent names; STORE's flags, keywords,
 * MODSEQs and UNCHANGEDSINCE, the mailbox counts that follow them, and
 * what an expunge leaves for QRESYNC; the async forms on an event loop,
 * and completions that follow a log flush. White-box where it counts
 * imap.db records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test-store-util.h"
#include "store-private.h"
#include "imap-bodystructure.h"
#include "loop.h"

static struct mt_store *store;

static int setup(void **state)
{
	test_dir_setup(state);
	test_count_fsyncs();
	store = NULL;
	return 0;
}

static int teardown(void **state)
{
	if (store != NULL)
		mt_store_close(&store);
	return test_dir_teardown(state);
}

static enum mt_store_status folder_change(enum mt_store_folder_change change,
					  const char *user, const char *name,
					  const char *new_name, unsigned int max)
{
	const struct mt_store_folder_args args = {
		.change = change, .user = user, .name = name, .new_name = new_name,
		.folder_max = max,
	};
	const char *error;
	return mt_store_folder_change_wait(store, &args, &error);
}

/* The user's LIST as "name[=use][+sub][!]" words (! for \NonExistent). */
static char *list_string(const char *user)
{
	struct mt_store_folder *folders;
	unsigned int count;
	const char *error;
	assert_int_equal(mt_store_folders_list_sync(store, user, &folders, &count,
						    &error), MT_STORE_OK);
	static char buf[2048];
	buf[0] = '\0';
	for (unsigned int i = 0; i < count; i++) {
		const struct mt_store_folder *f = &folders[i];
		const char *use = mt_store_special_use_name(f->special_use);
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s%s%s%s",
			 i > 0 ? " " : "", f->name, use != NULL ? "=" : "",
			 use != NULL ? use + 1 : "", f->subscribed ? "+" : "");
		if (!f->exists)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "!");
	}
	mt_store_folders_free(&folders, count);
	return buf;
}

static struct mt_store_folder folder_get(const char *user, const char *name)
{
	struct mt_store_folder *folders, found = { 0 };
	unsigned int count;
	const char *error;
	assert_int_equal(mt_store_folders_list_sync(store, user, &folders, &count,
						    &error), MT_STORE_OK);
	for (unsigned int i = 0; i < count; i++)
		if (strcmp(folders[i].name, name) == 0) {
			found = folders[i];
			found.name = NULL;
		}
	mt_store_folders_free(&folders, count);
	return found;
}

static struct mt_store_mailbox *open_folder(const char *user, const char *name)
{
	struct mt_store_mailbox *mbox;
	const char *error;
	enum mt_store_status status =
		mt_store_folder_open_sync(store, user, name, &mbox, &error);
	if (status != MT_STORE_OK)
		fail_msg("open %s %s: %s", user, name, error);
	return mbox;
}

/* APPEND size bytes of message seed to user's folder. */
static enum mt_store_status append(const char *user, const char *folder,
				   unsigned int seed, size_t size, uint32_t flags,
				   const char *const *keywords,
				   unsigned int keyword_count, int64_t arrival,
				   uint64_t quota, uint32_t *uid_r,
				   uint32_t *uidvalidity_r)
{
	char *data = test_message(seed, size);
	struct mt_store_rcpt rcpt = {
		.mailbox = user, .folder = folder, .flags = flags,
		.keywords = keywords, .keyword_count = keyword_count,
		.arrival = arrival, .quota = quota,
	};
	const char *error;
	enum mt_store_status status =
		mt_store_deliver_wait(store, &rcpt, 1, data, size, &error);
	free(data);
	if (uid_r != NULL)
		*uid_r = rcpt.uid;
	if (uidvalidity_r != NULL)
		*uidvalidity_r = rcpt.uidvalidity;
	return status;
}

static enum mt_store_status copy(struct mt_store_mailbox *mbox, const uint32_t *uids,
				 unsigned int count, const char *dest, bool move,
				 uint64_t quota, uint32_t *new_uids,
				 uint32_t *uidvalidity_r)
{
	const struct mt_store_copy_args args = {
		.uids = uids, .uid_count = count, .dest = dest, .move = move,
		.quota = quota,
	};
	const char *error;
	return mt_store_copy_wait(mbox, &args, new_uids, uidvalidity_r, &error);
}

static void store_flags(struct mt_store_mailbox *mbox, enum mt_store_flag_op op,
			uint32_t flags, const char *const *keywords,
			unsigned int keyword_count, uint64_t unchanged_since,
			const uint32_t *uids, unsigned int uid_count,
			enum mt_store_flag_result *results, enum mt_store_status want)
{
	const struct mt_store_flag_args args = {
		.op = op, .flags = flags, .keywords = keywords,
		.keyword_count = keyword_count, .unchanged_since = unchanged_since,
		.uids = uids, .uid_count = uid_count,
	};
	const char *error;
	assert_int_equal(mt_store_flags_store_wait(mbox, &args, results, &error), want);
}

/* The upgrade */

static void untar_v4(void)
{
	const char *src = getenv("MT_SRCDIR");
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "tar -xJf '%s/tests/unit/data/store-v4.tar.xz' -C '%s'",
		 src != NULL ? src : "..", test_dir);
	assert_int_equal(system(cmd), 0);
}

struct manifest_line {
	char mailbox[64];
	uint32_t uid;
	char uidl[MT_STORE_UIDL_MAX + 1];
	uint64_t size;
	unsigned int seed;
	int prefix;
};

static unsigned int manifest_read(struct manifest_line *lines, unsigned int max)
{
	FILE *f = fopen(test_path("manifest"), "r");
	assert_non_null(f);
	unsigned int n = 0;
	unsigned long long size;
	while (n < max && fscanf(f, "%63s %u %70s %llu %u %d", lines[n].mailbox,
				 &lines[n].uid, lines[n].uidl, &size, &lines[n].seed,
				 &lines[n].prefix) == 6) {
		lines[n].size = size;
		n++;
	}
	fclose(f);
	return n;
}

/* Every message of the manifest in the store, byte for byte, with its
 * uid and UIDL. */
static void check_manifest(const struct manifest_line *lines, unsigned int n,
			   bool renamed_alice)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct manifest_line *m = &lines[i];
		bool alice = strcmp(m->mailbox, "alice@example.org") == 0;
		struct mt_store_mailbox *mbox =
			open_folder(m->mailbox, alice && renamed_alice ? "Old" : "INBOX");
		int index = mt_store_mailbox_find(mbox, m->uid);
		assert_true(index >= 0);
		const struct mt_store_msg *msg = mt_store_mailbox_msg(mbox, (unsigned int)index);
		assert_string_equal(msg->uidl, m->uidl);
		assert_int_equal(msg->size, m->size);
		char expect_prefix[128] = "";
		if (m->prefix)
			snprintf(expect_prefix, sizeof(expect_prefix),
				 "Delivered-To: <%s>\r\n", m->mailbox);
		size_t plen = strlen(expect_prefix);
		char *body = test_message(m->seed, m->size - plen);
		char *got = test_read_all(mbox, (unsigned int)index, 70000);
		assert_memory_equal(got, expect_prefix, plen);
		assert_memory_equal(got + plen, body, m->size - plen);
		free(body);
		free(got);
		mt_store_mailbox_close(&mbox);
	}
}

/* The structure record of message index, read and checked. */
static void structure_of(struct mt_store_mailbox *mbox, unsigned int index, struct mt_buf *raw,
			 struct mt_mime_record *record, uint64_t *shift)
{
	const char *error;
	mt_buf_reset(raw);
	assert_int_equal(mt_store_structure_sync(mbox, index, raw, shift, &error), MT_STORE_OK);
	assert_true(mt_mime_record_read(record, raw->data, raw->len));
}

/* The octets of part path[0..depth) of message index, by the record. */
static char *part_octets(struct mt_store_mailbox *mbox, unsigned int index,
			 const uint32_t *path, unsigned int depth)
{
	struct mt_buf raw = MT_BUF_INIT;
	struct mt_mime_record record;
	uint64_t shift;
	structure_of(mbox, index, &raw, &record, &shift);
	struct mt_mime_part part;
	assert_true(mt_mime_record_find(&record, path, depth, &part));
	char *all = test_read_all(mbox, index, 7);
	char *out = strndup(all + part.body_offset + shift, part.end_offset - part.body_offset);
	free(all);
	mt_buf_free(&raw);
	return out;
}

/* A message's MIME structure is recorded at delivery (a per-recipient
 * prefix before the shared body shifts it), shared by its copies, and a
 * message without a record is scanned when asked. */
static void test_structure(void **state)
{
	(void)state;
	static const char msg[] =
		"Subject: parts\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
		"--b\r\nContent-Type: text/plain\r\n\r\nfirst part\r\n"
		"--b\r\nContent-Type: text/html\r\n\r\n<b>second</b>\r\n--b--\r\n";
	struct mt_store_rcpt rcpts[2] = {
		{ .mailbox = "sam@example.org",
		  .prefix = "Return-Path: <x@y>\r\nDelivered-To: sam\r\n" },
		{ .mailbox = "tom@example.org" },
	};
	rcpts[0].prefix_len = strlen(rcpts[0].prefix);
	store = test_store_open();
	const char *error;
	assert_int_equal(mt_store_deliver_wait(store, rcpts, 2, msg, strlen(msg), &error),
			 MT_STORE_OK);
	struct mt_store_mailbox *sam = open_folder("sam@example.org", "INBOX");
	struct mt_store_mailbox *tom = open_folder("tom@example.org", "INBOX");
	struct mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT;
	struct mt_mime_record ra, rb;
	uint64_t shift_a, shift_b;
	structure_of(sam, 0, &a, &ra, &shift_a);
	structure_of(tom, 0, &b, &rb, &shift_b);
	assert_int_equal(shift_a, rcpts[0].prefix_len);
	assert_int_equal(shift_b, 0);
	assert_int_equal(a.len, b.len);		/* one record, shared */
	assert_memory_equal(a.data, b.data, a.len);
	assert_non_null(memmem(ra.envelope, ra.envelope_len, "\"parts\"", 7));
	uint32_t one = 1, two = 2;
	char *p = part_octets(sam, 0, &one, 1);
	assert_string_equal(p, "first part");
	free(p);
	p = part_octets(tom, 0, &two, 1);
	assert_string_equal(p, "<b>second</b>");
	free(p);

	/* A copy shares it. */
	uint32_t uid = 1, new_uid = 0, validity;
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, "sam@example.org", "Kept",
				       NULL, 0), MT_STORE_OK);
	assert_int_equal(copy(sam, &uid, 1, "Kept", false, 0, &new_uid, &validity), MT_STORE_OK);
	struct mt_store_mailbox *kept = open_folder("sam@example.org", "Kept");
	structure_of(kept, 0, &b, &rb, &shift_b);
	assert_int_equal(shift_b, shift_a);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	p = part_octets(kept, 0, &two, 1);
	assert_string_equal(p, "<b>second</b>");
	free(p);
	mt_store_mailbox_close(&kept);
	mt_store_mailbox_close(&sam);
	mt_store_mailbox_close(&tom);

	/* Without its record (as a message of an older store has none), the
	 * same structure is scanned from the message's octets. */
	const struct store_msg_loc *loc = NULL;
	tom = open_folder("tom@example.org", "INBOX");
	loc = &tom->locs[0];
	DB_TXN *txn;
	assert_int_equal(store->env->txn_begin(store->env, NULL, &txn, 0), 0);
	assert_int_equal(store_structure_del(store, txn, loc->body_id), 0);
	assert_int_equal(txn->commit(txn, 0), 0);
	structure_of(tom, 0, &b, &rb, &shift_b);
	assert_int_equal(shift_b, 0);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	mt_store_mailbox_close(&tom);
	mt_buf_free(&a);
	mt_buf_free(&b);
}

static void test_upgrade_from_v4(void **state)
{
	(void)state;
	untar_v4();
	struct manifest_line lines[16];
	unsigned int n = manifest_read(lines, 16);
	assert_int_equal(n, 7);
	const char *home = test_path("store");

	/* mailtierctl reads it as it is: format 4, no folders but INBOX. */
	struct mt_store_settings admin = {
		.home = home, .mode = MT_STORE_MODE_ADMIN, .cache_size = 16u << 20,
	};
	const char *error;
	assert_int_equal(mt_store_open(&admin, &store, &error), MT_STORE_OK);
	struct mt_store_stat st;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.format_version, 4);
	assert_int_equal(st.messages, 7);
	assert_string_equal(list_string("alice@example.org"), "INBOX");
	struct mt_store_folder inbox = folder_get("alice@example.org", "INBOX");
	assert_int_equal(inbox.messages, 4);
	assert_int_equal(inbox.uidnext, 6);
	assert_int_equal(inbox.highest_modseq, 1);
	mt_store_close(&store);

	/* The daemon upgrades it in place; everything reads as before. */
	store = test_store_open_with(home, 0, 1u << 20);
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.format_version, MT_STORE_FORMAT_VERSION);
	check_manifest(lines, n, false);
	struct mt_store_mailbox *mbox = open_folder("alice@example.org", "INBOX");
	assert_int_equal(mt_store_mailbox_count(mbox), 4);
	assert_int_equal(mt_store_mailbox_uidnext(mbox), 6);
	assert_int_equal(mt_store_mailbox_highest_modseq(mbox), 1);
	for (unsigned int i = 0; i < 4; i++) {
		assert_int_equal(mt_store_mailbox_msg(mbox, i)->flags, 0);
		assert_int_equal(mt_store_mailbox_msg(mbox, i)->modseq, 1);
		/* no record: scanned from its octets (shift 0), the body
		 * part 1 of a message without MIME */
		struct mt_buf raw = MT_BUF_INIT;
		struct mt_mime_record record;
		uint64_t shift = 1;
		structure_of(mbox, i, &raw, &record, &shift);
		assert_int_equal(shift, 0);
		struct mt_mime_part part;
		assert_true(mt_mime_record_find(&record, (uint32_t[]){ 1 }, 1, &part));
		assert_int_equal(part.end_offset, mt_store_mailbox_msg(mbox, i)->size);
		mt_buf_free(&raw);
	}
	/* A format 4 message takes flags (its record is rewritten as 5). */
	uint32_t uids[] = { 1, 3, 2 };
	enum mt_store_flag_result results[3];
	store_flags(mbox, MT_STORE_FLAGS_ADD, MT_STORE_FLAG_SEEN, NULL, 0, 0,
		    uids, 3, results, MT_STORE_OK);
	assert_int_equal(results[0], MT_STORE_FLAG_CHANGED);
	assert_int_equal(results[1], MT_STORE_FLAG_CHANGED);
	assert_int_equal(results[2], MT_STORE_FLAG_GONE);	/* POP3 DELE'd */
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->modseq, 2);
	mt_store_mailbox_close(&mbox);
	/* A delivery after the upgrade: the next uid and MODSEQ. */
	assert_int_equal(test_deliver(store, "alice@example.org", 9, 500), 6);
	mbox = open_folder("alice@example.org", "INBOX");
	assert_int_equal(mt_store_mailbox_count(mbox), 5);
	assert_int_equal(mt_store_mailbox_msg(mbox, 4)->modseq, 3);
	assert_int_equal(mt_store_mailbox_highest_modseq(mbox), 3);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->flags, MT_STORE_FLAG_SEEN);
	mt_store_mailbox_close(&mbox);
	inbox = folder_get("alice@example.org", "INBOX");
	assert_int_equal(inbox.seen, 2);
	assert_int_equal(inbox.messages, 5);

	/* The first login, then RENAME INBOX: the old messages move with
	 * their UIDs and UIDLs, INBOX starts over with a new UIDVALIDITY. */
	assert_int_equal(folder_change(MT_STORE_FOLDER_PREPARE, "alice@example.org",
				       NULL, NULL, 0), MT_STORE_OK);
	uint32_t old_validity = inbox.uidvalidity;
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, "alice@example.org",
				       "INBOX", "Old", 0), MT_STORE_OK);
	struct mt_store_folder old = folder_get("alice@example.org", "Old");
	assert_true(old.exists);
	assert_int_equal(old.uidvalidity, old_validity);
	assert_int_equal(old.messages, 5);
	assert_int_equal(old.seen, 2);
	inbox = folder_get("alice@example.org", "INBOX");
	assert_int_equal(inbox.messages, 0);
	assert_true(inbox.uidvalidity != old_validity);
	check_manifest(lines, n, true);

	/* POP3 sees the new, empty INBOX; a delivery lands there. */
	mbox = open_folder("alice@example.org", "INBOX");
	assert_int_equal(mt_store_mailbox_count(mbox), 0);
	mt_store_mailbox_close(&mbox);
	assert_int_equal(test_deliver(store, "alice@example.org", 10, 600), 1);

	/* Upgraded for good: closed and reopened, still version 5. */
	mt_store_close(&store);
	store = test_store_open_with(home, 0, 1u << 20);
	check_manifest(lines, n, true);
	assert_int_equal(folder_get("alice@example.org", "INBOX").messages, 1);
}

/* Folders */

static const char *const PREPARED =
	"INBOX+ Archive=Archive+ Drafts=Drafts+ Junk=Junk+ Sent=Sent+ Trash=Trash+";

static void test_prepare(void **state)
{
	(void)state;
	store = test_store_open();
	/* A user who never got mail: INBOX only, not subscribed. */
	assert_string_equal(list_string("u@x"), "INBOX");
	assert_int_equal(folder_change(MT_STORE_FOLDER_PREPARE, "u@x", NULL, NULL, 0),
			 MT_STORE_OK);
	assert_string_equal(list_string("u@x"), PREPARED);
	struct mt_store_folder inbox = folder_get("u@x", "INBOX");
	assert_true(inbox.uidvalidity != 0);
	assert_int_equal(inbox.uidnext, 1);
	/* Once: a deleted Trash does not come back at the next login. */
	assert_int_equal(folder_change(MT_STORE_FOLDER_DELETE, "u@x", "Trash", NULL, 0),
			 MT_STORE_OK);
	assert_int_equal(folder_change(MT_STORE_FOLDER_PREPARE, "u@x", NULL, NULL, 0),
			 MT_STORE_OK);
	assert_string_equal(list_string("u@x"),
		"INBOX+ Archive=Archive+ Drafts=Drafts+ Junk=Junk+ Sent=Sent+ Trash+!");
	/* A user whose name begins with another's sees only their own. */
	assert_string_equal(list_string("u@xy"), "INBOX");
	assert_string_equal(list_string("u@"), "INBOX");
	/* The folder limit leaves out what does not fit. */
	assert_int_equal(folder_change(MT_STORE_FOLDER_PREPARE, "v@x", NULL, NULL, 2),
			 MT_STORE_OK);
	assert_string_equal(list_string("v@x"), "INBOX+ Drafts=Drafts+ Sent=Sent+");
	/* Survives a restart (durable, and the mark is in the record). */
	mt_store_close(&store);
	store = test_store_open();
	assert_string_equal(list_string("u@x"),
		"INBOX+ Archive=Archive+ Drafts=Drafts+ Junk=Junk+ Sent=Sent+ Trash+!");
}

static void test_create_delete(void **state)
{
	(void)state;
	store = test_store_open();
	const char *u = "c@x";
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "INBOX", NULL, 0),
			 MT_STORE_EXISTS);
	/* Superiors are made (RFC 9051 6.3.4's SHOULD), once each. */
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "a/b/c", NULL, 0),
			 MT_STORE_OK);
	assert_string_equal(list_string(u), "INBOX a a/b a/b/c");
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "a/b", NULL, 0),
			 MT_STORE_EXISTS);
	/* "INBOX/x" is below INBOX: no INBOX folder is made for it. */
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "INBOX/x", NULL, 0),
			 MT_STORE_OK);
	/* UTF-8 names, in byte order after ASCII. */
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "Entw\xc3\xbcrfe",
				       NULL, 0), MT_STORE_OK);
	assert_string_equal(list_string(u),
			    "INBOX Entw\xc3\xbcrfe INBOX/x a a/b a/b/c");
	/* The limit counts folders, not INBOX; superiors count too. */
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "z/y", NULL, 6),
			 MT_STORE_LIMIT);
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "z", NULL, 6),
			 MT_STORE_OK);
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "w", NULL, 6),
			 MT_STORE_LIMIT);

	/* DELETE: not INBOX, not with inferiors, not an absent one. */
	assert_int_equal(folder_change(MT_STORE_FOLDER_DELETE, u, "INBOX", NULL, 0),
			 MT_STORE_INVALID);
	assert_int_equal(folder_change(MT_STORE_FOLDER_DELETE, u, "a/b", NULL, 0),
			 MT_STORE_HAS_CHILDREN);
	assert_int_equal(folder_change(MT_STORE_FOLDER_DELETE, u, "nope", NULL, 0),
			 MT_STORE_NOT_FOUND);
	/* Not while open. */
	struct mt_store_mailbox *mbox = open_folder(u, "a/b/c");
	assert_int_equal(folder_change(MT_STORE_FOLDER_DELETE, u, "a/b/c", NULL, 0),
			 MT_STORE_IN_USE);
	mt_store_mailbox_close(&mbox);
	struct mt_store_folder before = folder_get(u, "a/b/c");
	assert_int_equal(folder_change(MT_STORE_FOLDER_DELETE, u, "a/b/c", NULL, 0),
			 MT_STORE_OK);
	const char *error;
	assert_int_equal(mt_store_folder_open_sync(store, u, "a/b/c", &mbox, &error),
			 MT_STORE_NOT_FOUND);
	/* Made again: a new UIDVALIDITY (RFC 9051 2.3.1.1). */
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "a/b/c", NULL, 0),
			 MT_STORE_OK);
	assert_true(folder_get(u, "a/b/c").uidvalidity > before.uidvalidity);
}

static void test_delete_messages(void **state)
{
	(void)state;
	store = test_store_open();
	const char *u = "d@x";
	/* Messages into a folder: delivered to INBOX, INBOX renamed. */
	test_deliver(store, u, 1, 1000);
	test_deliver(store, u, 2, 200000);
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, u, "INBOX", "F", 0),
			 MT_STORE_OK);
	struct mt_store_mailbox *mbox = open_folder(u, "F");
	assert_int_equal(mt_store_mailbox_count(mbox), 2);
	const char *kw[] = { "$Forwarded" };
	uint32_t uid = 2;
	store_flags(mbox, MT_STORE_FLAGS_ADD, 0, kw, 1, 0, &uid, 1, NULL, MT_STORE_OK);
	mt_store_mailbox_close(&mbox);
	struct mt_store_stat st;
	const char *error;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.messages, 2);
	unsigned int imap_records = test_db_records(store->imap);
	assert_int_equal(folder_change(MT_STORE_FOLDER_DELETE, u, "F", NULL, 0),
			 MT_STORE_OK);
	/* Its messages left every count, their bodies the disk (purger), and
	 * its keyword table and the two bodies' structure records imap.db. */
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.messages, 0);
	unsigned int purged;
	assert_int_equal(mt_store_purge_sync(store, &purged, &error), MT_STORE_OK);
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.purge_messages, 0);
	assert_int_equal(st.purge_bytes, 0);
	/* The backlog the metrics read: the DELETE's two counted, both purged
	 * (raw: a DELETE not counted would leave it at -2). */
	for (unsigned int i = 0; i < 100 && atomic_load(&store->purge_backlog) != 0; i++)
		usleep(10000);
	assert_int_equal(atomic_load(&store->purge_backlog), 0);
	assert_int_equal(test_db_records(store->bodies), 0);
	assert_int_equal(test_db_records(store->refs), 0);
	assert_int_equal(test_db_records(store->imap), imap_records - 1 - 2);
}

static void test_rename(void **state)
{
	(void)state;
	store = test_store_open();
	const char *u = "r@x";
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "p/q/r", NULL, 0),
			 MT_STORE_OK);
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "pp", NULL, 0),
			 MT_STORE_OK);
	struct mt_store_folder q = folder_get(u, "p/q");
	/* Inferiors go along and keep their UIDVALIDITY; "pp" is no
	 * inferior of "p". */
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, u, "p", "s/t", 0),
			 MT_STORE_OK);
	assert_string_equal(list_string(u), "INBOX pp s s/t s/t/q s/t/q/r");
	assert_int_equal(folder_get(u, "s/t/q").uidvalidity, q.uidvalidity);
	/* Errors: taken, absent, into itself, onto INBOX, open. */
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, u, "pp", "s", 0),
			 MT_STORE_EXISTS);
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, u, "nope", "n", 0),
			 MT_STORE_NOT_FOUND);
	assert_string_equal(list_string(u), "INBOX pp s s/t s/t/q s/t/q/r");
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, u, "s", "s/u", 0),
			 MT_STORE_INVALID);
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, u, "pp", "INBOX", 0),
			 MT_STORE_EXISTS);
	struct mt_store_mailbox *mbox = open_folder(u, "s/t/q/r");
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, u, "s", "v", 0),
			 MT_STORE_IN_USE);
	mt_store_mailbox_close(&mbox);
	mbox = open_folder(u, "INBOX");
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, u, "INBOX", "v", 0),
			 MT_STORE_IN_USE);
	mt_store_mailbox_close(&mbox);
	/* A name below grows too long: nothing renamed. */
	char longname[MT_STORE_FOLDER_MAX + 1];
	memset(longname, 'x', MT_STORE_FOLDER_MAX - 2);
	longname[MT_STORE_FOLDER_MAX - 2] = '\0';
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, u, "s", longname, 0),
			 MT_STORE_LIMIT);
	assert_string_equal(list_string(u), "INBOX pp s s/t s/t/q s/t/q/r");
}

static void test_subscriptions(void **state)
{
	(void)state;
	store = test_store_open();
	const char *u = "s@x";
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "b", NULL, 0),
			 MT_STORE_OK);
	assert_int_equal(folder_change(MT_STORE_FOLDER_SUBSCRIBE, u, "b", NULL, 0),
			 MT_STORE_OK);
	assert_int_equal(folder_change(MT_STORE_FOLDER_SUBSCRIBE, u, "a/none", NULL, 0),
			 MT_STORE_OK);
	assert_int_equal(folder_change(MT_STORE_FOLDER_SUBSCRIBE, u, "zz", NULL, 0),
			 MT_STORE_OK);
	assert_string_equal(list_string(u), "INBOX a/none+! b+ zz+!");
	/* DELETE keeps the subscription (RFC 9051 6.3.9). */
	assert_int_equal(folder_change(MT_STORE_FOLDER_DELETE, u, "b", NULL, 0),
			 MT_STORE_OK);
	assert_string_equal(list_string(u), "INBOX a/none+! b+! zz+!");
	assert_int_equal(folder_change(MT_STORE_FOLDER_UNSUBSCRIBE, u, "b", NULL, 0),
			 MT_STORE_OK);
	assert_int_equal(folder_change(MT_STORE_FOLDER_UNSUBSCRIBE, u, "b", NULL, 0),
			 MT_STORE_NOT_FOUND);
	assert_string_equal(list_string(u), "INBOX a/none+! zz+!");
	/* Bad arguments are refused before any work. */
	assert_int_equal(folder_change(MT_STORE_FOLDER_SUBSCRIBE, u, "", NULL, 0),
			 MT_STORE_INVALID);
	assert_int_equal(folder_change(MT_STORE_FOLDER_RENAME, u, "a", NULL, 0),
			 MT_STORE_INVALID);
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, "", "a", NULL, 0),
			 MT_STORE_INVALID);
}

/* Flags */

static void test_flags(void **state)
{
	(void)state;
	store = test_store_open();
	const char *u = "f@x";
	for (unsigned int i = 1; i <= 4; i++)
		assert_int_equal(test_deliver(store, u, i, 300 * i), i);
	struct mt_store_mailbox *mbox = open_folder(u, "INBOX");
	assert_int_equal(mt_store_mailbox_highest_modseq(mbox), 5);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->modseq, 2);
	assert_int_equal(mt_store_mailbox_msg(mbox, 3)->modseq, 5);

	uint32_t all[] = { 1, 2, 3, 4, 99 };
	enum mt_store_flag_result r[5];
	const char *kw1[] = { "$Junk", "work" };
	store_flags(mbox, MT_STORE_FLAGS_ADD, MT_STORE_FLAG_SEEN | MT_STORE_FLAG_FLAGGED,
		    kw1, 2, 0, all, 5, r, MT_STORE_OK);
	for (unsigned int i = 0; i < 4; i++) {
		assert_int_equal(r[i], MT_STORE_FLAG_CHANGED);
		const struct mt_store_msg *m = mt_store_mailbox_msg(mbox, i);
		assert_int_equal(m->flags, MT_STORE_FLAG_SEEN | MT_STORE_FLAG_FLAGGED);
		assert_int_equal(m->keywords, 3);
		assert_int_equal(m->modseq, 6);	/* one MODSEQ for the command */
	}
	assert_int_equal(r[4], MT_STORE_FLAG_GONE);
	assert_string_equal(mt_store_mailbox_keyword(mbox, 0), "$Junk");
	assert_string_equal(mt_store_mailbox_keyword(mbox, 1), "work");
	assert_null(mt_store_mailbox_keyword(mbox, 2));
	assert_int_equal(mt_store_mailbox_highest_modseq(mbox), 6);

	/* The same again changes nothing and takes no MODSEQ. */
	store_flags(mbox, MT_STORE_FLAGS_ADD, MT_STORE_FLAG_SEEN, kw1, 1, 0, all, 4, r,
		    MT_STORE_OK);
	assert_int_equal(r[0], MT_STORE_FLAG_UNCHANGED);
	assert_int_equal(mt_store_mailbox_highest_modseq(mbox), 6);

	/* -FLAGS with a keyword spelled otherwise (case-insensitive), and one
	 * the mailbox never had (ignored, not added to the table). */
	const char *kw2[] = { "WORK", "never" };
	uint32_t two[] = { 2 };
	store_flags(mbox, MT_STORE_FLAGS_REMOVE, MT_STORE_FLAG_FLAGGED, kw2, 2, 0, two,
		    1, r, MT_STORE_OK);
	assert_int_equal(r[0], MT_STORE_FLAG_CHANGED);
	assert_int_equal(mt_store_mailbox_msg(mbox, 1)->flags, MT_STORE_FLAG_SEEN);
	assert_int_equal(mt_store_mailbox_msg(mbox, 1)->keywords, 1);
	assert_int_equal(mt_store_mailbox_msg(mbox, 1)->modseq, 7);
	assert_null(mt_store_mailbox_keyword(mbox, 2));

	/* UNCHANGEDSINCE 6: message 2 (MODSEQ 7) is reported modified and
	 * left alone, the others change (RFC 7162 3.1.3). */
	uint32_t three[] = { 1, 2, 3 };
	store_flags(mbox, MT_STORE_FLAGS_REPLACE, MT_STORE_FLAG_DELETED, NULL, 0, 6,
		    three, 3, r, MT_STORE_OK);
	assert_int_equal(r[0], MT_STORE_FLAG_CHANGED);
	assert_int_equal(r[1], MT_STORE_FLAG_MODIFIED);
	assert_int_equal(r[2], MT_STORE_FLAG_CHANGED);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->flags, MT_STORE_FLAG_DELETED);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->keywords, 0);
	assert_int_equal(mt_store_mailbox_msg(mbox, 1)->flags, MT_STORE_FLAG_SEEN);

	/* The counts follow: \Seen on 2 and 4, \Deleted on 1 and 3. */
	struct mt_store_folder f = folder_get(u, "INBOX");
	assert_int_equal(f.seen, 2);
	assert_int_equal(f.deleted, 2);
	assert_int_equal(f.highest_modseq, 8);

	/* Bad arguments. */
	const char *bad[] = { "\\Seen" };
	store_flags(mbox, MT_STORE_FLAGS_ADD, 0, bad, 1, 0, all, 1, r, MT_STORE_INVALID);
	store_flags(mbox, MT_STORE_FLAGS_ADD, 0x20, NULL, 0, 0, all, 1, r,
		    MT_STORE_INVALID);

	/* EXPUNGE of the \Deleted ones: counts, MODSEQ, the VANISHED record. */
	unsigned int imap_records = test_db_records(store->imap);
	uint32_t deleted[] = { 1, 3 };
	const char *error;
	assert_int_equal(mt_store_expunge_wait(mbox, deleted, 2, &error), MT_STORE_OK);
	/* one VANISHED record more, the two bodies' structure records gone */
	assert_int_equal(test_db_records(store->imap), imap_records + 1 - 2);
	/* QRESYNC reads them back by MODSEQ (the expunge's is 9). */
	uint32_t *vanished;
	unsigned int n_vanished;
	assert_int_equal(mt_store_vanished_sync(mbox, 8, &vanished, &n_vanished, &error),
			 MT_STORE_OK);
	assert_int_equal(n_vanished, 2);
	assert_int_equal(vanished[0], 1);
	assert_int_equal(vanished[1], 3);
	free(vanished);
	assert_int_equal(mt_store_vanished_sync(mbox, 9, &vanished, &n_vanished, &error),
			 MT_STORE_OK);
	assert_int_equal(n_vanished, 0);
	free(vanished);
	mt_store_mailbox_close(&mbox);
	f = folder_get(u, "INBOX");
	assert_int_equal(f.messages, 2);
	assert_int_equal(f.seen, 2);
	assert_int_equal(f.deleted, 0);
	assert_int_equal(f.highest_modseq, 9);

	/* Durable and reloaded: flags, keywords, MODSEQs. */
	mt_store_close(&store);
	store = test_store_open();
	mbox = open_folder(u, "INBOX");
	assert_int_equal(mt_store_mailbox_count(mbox), 2);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->uid, 2);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->flags, MT_STORE_FLAG_SEEN);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->keywords, 1);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->modseq, 7);
	assert_int_equal(mt_store_mailbox_msg(mbox, 1)->uid, 4);
	assert_int_equal(mt_store_mailbox_msg(mbox, 1)->keywords, 3);
	assert_string_equal(mt_store_mailbox_keyword(mbox, 1), "work");
	assert_int_equal(mt_store_mailbox_highest_modseq(mbox), 9);
	mt_store_mailbox_close(&mbox);
}

static void test_keyword_limit(void **state)
{
	(void)state;
	store = test_store_open();
	test_deliver(store, "k@x", 1, 100);
	struct mt_store_mailbox *mbox = open_folder("k@x", "INBOX");
	uint32_t uid = 1;
	char names[MT_STORE_KEYWORDS_MAX + 1][16];
	const char *kw[MT_STORE_KEYWORDS_MAX + 1];
	for (unsigned int i = 0; i <= MT_STORE_KEYWORDS_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "k%u", i);
		kw[i] = names[i];
	}
	store_flags(mbox, MT_STORE_FLAGS_ADD, 0, kw, MT_STORE_KEYWORDS_MAX, 0, &uid, 1,
		    NULL, MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->keywords, UINT64_MAX);
	/* The 65th: LIMIT, and nothing changed (one transaction). */
	store_flags(mbox, MT_STORE_FLAGS_REPLACE, MT_STORE_FLAG_SEEN,
		    kw + MT_STORE_KEYWORDS_MAX, 1, 0, &uid, 1, NULL, MT_STORE_LIMIT);
	mt_store_mailbox_close(&mbox);
	mbox = open_folder("k@x", "INBOX");
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->flags, 0);
	assert_int_equal(mt_store_mailbox_msg(mbox, 0)->keywords, UINT64_MAX);
	assert_string_equal(mt_store_mailbox_keyword(mbox, 63), "k63");
	mt_store_mailbox_close(&mbox);
}

/* APPEND and COPY / MOVE */

static void test_append(void **state)
{
	(void)state;
	store = test_store_open();
	const char *u = "ap@x";
	assert_int_equal(folder_change(MT_STORE_FOLDER_PREPARE, u, NULL, NULL, 0),
			 MT_STORE_OK);
	const char *kw[] = { "$MDNSent" };
	uint32_t uid, uidvalidity;
	assert_int_equal(append(u, "Sent", 1, 3000, MT_STORE_FLAG_SEEN, kw, 1,
				1700000000, 0, &uid, &uidvalidity), MT_STORE_OK);
	assert_int_equal(uid, 1);
	struct mt_store_folder sent = folder_get(u, "Sent");
	assert_int_equal(uidvalidity, sent.uidvalidity);
	assert_int_equal(sent.messages, 1);
	assert_int_equal(sent.seen, 1);
	assert_int_equal(sent.bytes, 3000);
	struct mt_store_mailbox *mbox = open_folder(u, "Sent");
	const struct mt_store_msg *msg = mt_store_mailbox_msg(mbox, 0);
	assert_int_equal(msg->arrival, 1700000000);
	assert_int_equal(msg->flags, MT_STORE_FLAG_SEEN);
	assert_int_equal(msg->keywords, 1);
	assert_string_equal(mt_store_mailbox_keyword(mbox, 0), "$MDNSent");
	char *want = test_message(1, 3000), *got = test_read_all(mbox, 0, 1000);
	assert_memory_equal(got, want, 3000);
	free(want);
	free(got);
	mt_store_mailbox_close(&mbox);
	/* An absent folder: NOT_FOUND ([TRYCREATE]); nothing made. */
	assert_int_equal(append(u, "Nope", 2, 100, 0, NULL, 0, 0, 0, NULL, NULL),
			 MT_STORE_NOT_FOUND);
	assert_int_equal(folder_get(u, "Nope").exists, false);
	/* "INBOX" is INBOX; POP3 sees it. */
	assert_int_equal(append(u, "INBOX", 3, 200, 0, NULL, 0, 0, 0, &uid, NULL),
			 MT_STORE_OK);
	assert_int_equal(uid, 1);
	/* IMAP's opens are shared: two of them and one POP3 session at once;
	 * POP3's is exclusive among POP3 sessions (RFC 1939 8). */
	mbox = open_folder(u, "INBOX");
	struct mt_store_mailbox *pop, *pop2, *imap2 = open_folder(u, "INBOX");
	const char *error;
	assert_int_equal(mt_store_mailbox_open_sync(store, u, &pop, &error), MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(pop), 1);
	assert_int_equal(mt_store_mailbox_open_sync(store, u, &pop2, &error),
			 MT_STORE_IN_USE);
	mt_store_mailbox_close(&mbox);
	mt_store_mailbox_close(&imap2);
	mt_store_mailbox_close(&pop);
	assert_int_equal(mt_store_mailbox_open_sync(store, u, &pop, &error), MT_STORE_OK);
	mt_store_mailbox_close(&pop);
	/* The quota counts every folder: 3200 used. */
	assert_int_equal(append(u, "Drafts", 4, 800, 0, NULL, 0, 0, 4000, NULL, NULL),
			 MT_STORE_OK);
	assert_int_equal(append(u, "Drafts", 5, 1, 0, NULL, 0, 0, 4000, NULL, NULL),
			 MT_STORE_OVER_QUOTA);
	struct mt_store_rcpt lmtp = { .mailbox = u, .quota = 4000 };
	assert_int_equal(mt_store_deliver_wait(store, &lmtp, 1, "x", 1, &error),
			 MT_STORE_OVER_QUOTA);
	/* Bad flags or keywords are refused before any work. */
	const char *bad[] = { "\\Seen" };
	assert_int_equal(append(u, "Sent", 6, 10, 0x40, NULL, 0, 0, 0, NULL, NULL),
			 MT_STORE_INVALID);
	assert_int_equal(append(u, "Sent", 6, 10, 0, bad, 1, 0, 0, NULL, NULL),
			 MT_STORE_INVALID);
}

static void test_copy_move(void **state)
{
	(void)state;
	store = test_store_open();
	const char *u = "cp@x";
	for (unsigned int i = 1; i <= 3; i++)
		test_deliver(store, u, i, i == 2 ? 150000 : 2000);
	assert_int_equal(folder_change(MT_STORE_FOLDER_CREATE, u, "A", NULL, 0),
			 MT_STORE_OK);
	/* A has a keyword of its own first: indexes differ from INBOX's. */
	const char *own[] = { "aaa" }, *kw[] = { "zzz", "$Label1" };
	uint32_t uid;
	assert_int_equal(append(u, "A", 9, 100, 0, own, 1, 0, 0, &uid, NULL), MT_STORE_OK);
	struct mt_store_mailbox *inbox = open_folder(u, "INBOX");
	uint32_t two = 2;
	store_flags(inbox, MT_STORE_FLAGS_ADD, MT_STORE_FLAG_FLAGGED, kw, 2, 0, &two,
		    1, NULL, MT_STORE_OK);
	unsigned int bodies = test_db_records(store->bodies);

	uint32_t uids[] = { 1, 2, 99 }, new_uids[3], uidvalidity;
	assert_int_equal(copy(inbox, uids, 3, "A", false, 0, new_uids, &uidvalidity),
			 MT_STORE_OK);
	assert_int_equal(new_uids[0], 2);
	assert_int_equal(new_uids[1], 3);
	assert_int_equal(new_uids[2], 0);
	assert_int_equal(uidvalidity, folder_get(u, "A").uidvalidity);
	/* Shared bodies: no chunk written (these have no prefix). */
	assert_int_equal(test_db_records(store->bodies), bodies);
	struct mt_store_mailbox *a = open_folder(u, "A");
	assert_int_equal(mt_store_mailbox_count(a), 3);
	const struct mt_store_msg *c2 = mt_store_mailbox_msg(a, 2);
	assert_int_equal(c2->uid, 3);
	assert_int_equal(c2->flags, MT_STORE_FLAG_FLAGGED);
	assert_string_equal(mt_store_mailbox_keyword(a, 0), "aaa");
	assert_int_equal(c2->keywords, 6);	/* zzz, $Label1 after aaa */
	assert_string_equal(mt_store_mailbox_keyword(a, 1), "zzz");
	assert_int_equal(c2->modseq, mt_store_mailbox_highest_modseq(a));
	assert_int_equal(c2->arrival, mt_store_mailbox_msg(inbox, 1)->arrival);
	assert_string_not_equal(c2->uidl, mt_store_mailbox_msg(inbox, 1)->uidl);
	char *orig = test_read_all(inbox, 1, 65536), *dup = test_read_all(a, 2, 65536);
	assert_memory_equal(orig, dup, 150000);
	free(orig);
	free(dup);
	mt_store_mailbox_close(&a);

	/* COPY to an absent folder; one over quota (a MOVE is not). */
	assert_int_equal(copy(inbox, uids, 1, "B", false, 0, NULL, NULL),
			 MT_STORE_NOT_FOUND);
	struct mt_store_folder before = folder_get(u, "INBOX");
	uint64_t used = before.bytes + folder_get(u, "A").bytes;
	assert_int_equal(copy(inbox, uids, 1, "A", false, used + 1999, NULL, NULL),
			 MT_STORE_OVER_QUOTA);

	/* MOVE 2 and 3: gone from INBOX (VANISHED recorded), in A. */
	unsigned int imap_records = test_db_records(store->imap);
	uint32_t move[] = { 2, 3 };
	assert_int_equal(copy(inbox, move, 2, "A", true, used, new_uids, NULL),
			 MT_STORE_OK);
	assert_int_equal(new_uids[0], 4);
	assert_int_equal(new_uids[1], 5);
	assert_int_equal(test_db_records(store->imap), imap_records + 1);
	mt_store_mailbox_close(&inbox);
	struct mt_store_folder after = folder_get(u, "INBOX");
	assert_int_equal(after.messages, 1);
	assert_true(after.highest_modseq > before.highest_modseq);
	assert_int_equal(folder_get(u, "A").messages, 5);

	/* The originals' bodies stay while copies hold them. */
	a = open_folder(u, "A");
	uint32_t gone[] = { 3 };
	const char *error;
	assert_int_equal(mt_store_expunge_wait(a, gone, 1, &error), MT_STORE_OK);
	unsigned int purged;
	assert_int_equal(mt_store_purge_sync(store, &purged, &error), MT_STORE_OK);
	/* The MOVE's two and this expunge counted in the backlog, all purged. */
	for (unsigned int i = 0; i < 100 && atomic_load(&store->purge_backlog) != 0; i++)
		usleep(10000);
	assert_int_equal(atomic_load(&store->purge_backlog), 0);
	char *moved = test_read_all(a, 3, 65536), *want = test_message(2, 150000);
	assert_memory_equal(moved, want, 150000);
	free(moved);
	free(want);

	/* Back into INBOX: POP3 sees a new message with a new UIDL; a copy
	 * within one mailbox works too. */
	uint32_t back = 4;
	assert_int_equal(copy(a, &back, 1, "INBOX", false, 0, new_uids, NULL),
			 MT_STORE_OK);
	assert_int_equal(new_uids[0], 4);
	assert_int_equal(copy(a, &back, 1, "A", false, 0, new_uids, NULL), MT_STORE_OK);
	assert_int_equal(new_uids[0], 6);
	mt_store_mailbox_close(&a);
	struct mt_store_mailbox *pop;
	assert_int_equal(mt_store_mailbox_open_sync(store, u, &pop, &error), MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(pop), 2);
	assert_int_equal(mt_store_mailbox_msg(pop, 1)->uid, 4);
	assert_string_not_equal(mt_store_mailbox_msg(pop, 0)->uidl,
				mt_store_mailbox_msg(pop, 1)->uidl);
	mt_store_mailbox_close(&pop);
	assert_int_equal(folder_get(u, "A").messages, 5);
}

/* The async forms, on a loop: results applied before the callback, and
 * the callback after a log flush. */

struct async_ctx {
	struct mt_loop *loop;
	unsigned int done;
	enum mt_store_status status;
	unsigned int fsyncs_at_cb;
	unsigned int folders;
	uint64_t modseq_at_cb;
	struct mt_store_mailbox *mbox;
};

static void async_cb(struct mt_store_req *req, void *context)
{
	struct async_ctx *ctx = context;
	ctx->status = mt_store_req_status(req, NULL);
	ctx->fsyncs_at_cb = atomic_load(&test_fsyncs);
	unsigned int count;
	(void)mt_store_req_folders(req, &count);
	ctx->folders = count;
	if (ctx->mbox != NULL)
		ctx->modseq_at_cb = mt_store_mailbox_msg(ctx->mbox, 0)->modseq;
	ctx->done++;
	mt_loop_exit(ctx->loop);
}

static void test_async(void **state)
{
	(void)state;
	store = test_store_open();
	test_deliver(store, "a@x", 1, 100);
	struct async_ctx ctx = { .loop = test_loop_new() };
	const char *error;
	struct mt_store_port *port = mt_store_port_new(store, ctx.loop, &error);

	unsigned int fsyncs = atomic_load(&test_fsyncs);
	const struct mt_store_folder_args args = {
		.change = MT_STORE_FOLDER_PREPARE, .user = "a@x",
	};
	mt_store_folder_change(port, &args, async_cb, &ctx);
	assert_int_equal(ctx.done, 0);	/* never from inside the call */
	mt_loop_run(ctx.loop);
	assert_int_equal(ctx.status, MT_STORE_OK);
	assert_true(ctx.fsyncs_at_cb > fsyncs);

	mt_store_folders_list(port, "a@x", async_cb, &ctx);
	mt_loop_run(ctx.loop);
	assert_int_equal(ctx.status, MT_STORE_OK);
	assert_int_equal(ctx.folders, 6);

	struct mt_store_req *req = mt_store_folder_open(port, "a@x", "Sent", async_cb,
							&ctx);
	(void)req;
	mt_loop_run(ctx.loop);
	assert_int_equal(ctx.status, MT_STORE_OK);

	ctx.mbox = open_folder("a@x", "INBOX");
	uint32_t uid = 1;
	const struct mt_store_flag_args fargs = {
		.op = MT_STORE_FLAGS_ADD, .flags = MT_STORE_FLAG_ANSWERED,
		.uids = &uid, .uid_count = 1,
	};
	fsyncs = atomic_load(&test_fsyncs);
	mt_store_flags_store(port, ctx.mbox, &fargs, async_cb, &ctx);
	mt_loop_run(ctx.loop);
	assert_int_equal(ctx.status, MT_STORE_OK);
	assert_true(ctx.fsyncs_at_cb > fsyncs);
	assert_int_equal(ctx.modseq_at_cb, 3);	/* applied before the callback */
	assert_int_equal(mt_store_mailbox_msg(ctx.mbox, 0)->flags, MT_STORE_FLAG_ANSWERED);
	mt_store_mailbox_close(&ctx.mbox);
	/* The request outlives its mailbox's close until it completes. */
	ctx.mbox = NULL;
	struct mt_store_mailbox *mbox = open_folder("a@x", "INBOX");
	mt_store_flags_store(port, mbox, &fargs, async_cb, &ctx);
	mt_store_mailbox_close(&mbox);
	mt_loop_run(ctx.loop);
	assert_int_equal(ctx.done, 5);

	mt_store_port_free(&port);
	mt_loop_free(&ctx.loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_upgrade_from_v4, setup, teardown),
		cmocka_unit_test_setup_teardown(test_structure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subscriptions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keyword_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_append, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copy_move, setup, teardown),
		cmocka_unit_test_setup_teardown(test_async, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
