/* make-store-v4.c — how tests/unit/data/store-v4.tar.xz was made: a store
 * filled by the format-version-4 store code (commit d00b905), for
 * test-store-upgrade's in-place upgrade to version 5. Not built by make:
 * it needs that commit's store/ (MT_STORE_FORMAT_VERSION 4). Rebuilt with
 *   cc -std=c11 -I store -I lib -I lib-bdb -I build -I tests/unit \
 *     tests/unit/data/make-store-v4.c build/store/libmtstore.a \
 *     build/lib-bdb/libmtbdb.a build/lib/libmailtier.a -ldb -levent \
 *     -lsystemd -lpthread -o /tmp/make-store-v4 && /tmp/make-store-v4 DIR
 * It writes DIR/store (closed cleanly: checkpointed, its logs kept) and
 * DIR/manifest: one line per message, "mailbox uid uidl size seed prefix"
 * (prefix 1: the recipient's "Delivered-To: <mailbox>\r\n" precedes
 * test_message(seed, size - prefix length), as test-store-util.h makes
 * it), so the test can rebuild every byte it must read back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "test-store-util.h"

static FILE *manifest;

static void deliver(struct mt_store *store, const char *const *mailboxes,
		    unsigned int count, unsigned int seed, size_t size,
		    bool prefix)
{
	struct mt_store_rcpt rcpts[4] = { 0 };
	char prefixes[4][300];
	for (unsigned int i = 0; i < count; i++) {
		rcpts[i].mailbox = mailboxes[i];
		if (prefix) {
			snprintf(prefixes[i], sizeof(prefixes[i]),
				 "Delivered-To: <%s>\r\n", mailboxes[i]);
			rcpts[i].prefix = prefixes[i];
			rcpts[i].prefix_len = strlen(prefixes[i]);
		}
	}
	char *data = test_message(seed, size);
	const char *error = NULL;
	if (mt_store_deliver_wait(store, rcpts, count, data, size, &error) != MT_STORE_OK) {
		fprintf(stderr, "deliver: %s\n", error);
		exit(1);
	}
	free(data);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	char home[512], path[600];
	snprintf(home, sizeof(home), "%s/store", argv[1]);
	struct mt_store_settings set = {
		.home = home, .mode = MT_STORE_MODE_SERVE, .create = true,
		.cache_size = 16u << 20, .log_file_size = 1u << 20,
	};
	struct mt_store *store;
	const char *error;
	if (mt_store_open(&set, &store, &error) != MT_STORE_OK) {
		fprintf(stderr, "open: %s\n", error);
		return 1;
	}
	const char *ab[] = { "alice@example.org", "bob@example.org" };
	const char *a[] = { "alice@example.org" };
	const char *c[] = { "carol@example.net" };
	deliver(store, ab, 2, 1, 1200, true);	/* one body, two mailboxes */
	deliver(store, a, 1, 2, 300, false);
	deliver(store, a, 1, 3, 200000, true);	/* several chunks */
	deliver(store, a, 1, 4, 0, false);	/* empty */
	deliver(store, ab, 2, 5, 70000, false);
	deliver(store, c, 1, 6, 5000, true);
	/* POP3 DELE 2 + QUIT of alice's: expunged and purged. */
	struct mt_store_mailbox *mbox;
	uint32_t uid2 = 2;
	if (mt_store_mailbox_open_sync(store, a[0], &mbox, &error) != MT_STORE_OK ||
	    mt_store_expunge_wait(mbox, &uid2, 1, &error) != MT_STORE_OK) {
		fprintf(stderr, "expunge: %s\n", error);
		return 1;
	}
	mt_store_mailbox_close(&mbox);
	unsigned int purged;
	(void)mt_store_purge_sync(store, &purged, &error);

	snprintf(path, sizeof(path), "%s/manifest", argv[1]);
	manifest = fopen(path, "w");
	const char *names[] = { a[0], ab[1], c[0] };
	/* Seeds by mailbox and uid, as delivered above. */
	const unsigned int seeds[3][5] = { { 1, 2, 3, 4, 5 }, { 1, 5 }, { 6 } };
	const bool prefixed[3][5] = { { 1, 0, 1, 0, 0 }, { 1, 0 }, { 1 } };
	for (unsigned int m = 0; m < 3; m++) {
		if (mt_store_mailbox_open_sync(store, names[m], &mbox, &error) != MT_STORE_OK)
			return 1;
		for (unsigned int i = 0; i < mt_store_mailbox_count(mbox); i++) {
			const struct mt_store_msg *msg = mt_store_mailbox_msg(mbox, i);
			unsigned int k = m == 0 ? msg->uid - 1 : i;
			fprintf(manifest, "%s %u %s %llu %u %d\n", names[m], msg->uid,
				msg->uidl, (unsigned long long)msg->size, seeds[m][k],
				prefixed[m][k]);
		}
		mt_store_mailbox_close(&mbox);
	}
	fclose(manifest);
	mt_store_close(&store);
	return 0;
}
