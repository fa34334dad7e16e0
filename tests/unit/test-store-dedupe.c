/* test-store-dedupe.c — unit tests of the store's delivery ids
 * (store/store-dedupe.c) on a real Berkeley DB environment: a delivery
 * repeated with the same id to the same mailbox stores one copy and answers
 * with the first copy's uid, also after the store was closed and reopened
 * (the MTA's redelivery after its crash); another id, another mailbox or no
 * id stores a copy; a mixed request stores only the new recipient's copy; an
 * id older than redelivery_window stores a copy again; the sweep removes the
 * expired ids and keeps the recent ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test-store-util.h"
#include "store-private.h"	/* the sweep and delivered.db, white-box */
#include "log.h"

#include <unistd.h>

static struct mt_store *open_window(unsigned int window_secs)
{
	struct mt_store_settings set = {
		.home = test_path("store"), .mode = MT_STORE_MODE_SERVE,
		.create = true, .cache_size = 16u << 20,
		.redelivery_window_secs = window_secs,
	};
	struct mt_store *store = NULL;
	const char *error = NULL;
	if (mt_store_open(&set, &store, &error) != MT_STORE_OK)
		fail_msg("mt_store_open: %s", error);
	return store;
}

/* Deliver one body to the mailboxes (ids[i] may be NULL); results in r. */
static void deliver(struct mt_store *store, const char *const *mailboxes,
		    const char *const *ids, unsigned int count,
		    struct mt_store_rcpt *r, unsigned int seed)
{
	char *data = test_message(seed, 3000);
	memset(r, 0, count * sizeof(*r));
	for (unsigned int i = 0; i < count; i++) {
		r[i].mailbox = mailboxes[i];
		r[i].delivery_id = ids[i];
	}
	const char *error = NULL;
	enum mt_store_status status = mt_store_deliver_wait(store, r, count, data,
							    3000, &error);
	free(data);
	if (status != MT_STORE_OK)
		fail_msg("deliver: %s: %s", mt_store_status_name(status), error);
	for (unsigned int i = 0; i < count; i++)
		assert_int_equal(r[i].status, MT_STORE_OK);
}

static uint32_t deliver_one(struct mt_store *store, const char *mailbox,
			    const char *id, bool *duplicate_r)
{
	struct mt_store_rcpt r;
	deliver(store, &mailbox, &id, 1, &r, 7);
	*duplicate_r = r.duplicate;
	return r.uid;
}

static unsigned int messages_in(struct mt_store *store, const char *mailbox)
{
	struct mt_store_mailbox *mbox;
	const char *error = NULL;
	assert_int_equal(mt_store_mailbox_open_sync(store, mailbox, &mbox, &error),
			 MT_STORE_OK);
	unsigned int n = mt_store_mailbox_count(mbox);
	mt_store_mailbox_close(&mbox);
	return n;
}

static unsigned int delivered_records(struct mt_store *store)
{
	DBC *c;
	DBT key, data;
	memset(&key, 0, sizeof(key));
	memset(&data, 0, sizeof(data));
	assert_int_equal(store->delivered->cursor(store->delivered, NULL, &c, 0), 0);
	unsigned int n = 0;
	while (c->get(c, &key, &data, DB_NEXT) == 0)
		n++;
	assert_int_equal(c->close(c), 0);
	return n;
}

static void test_same_id_once(void **state)
{
	(void)state;
	struct mt_store *store = open_window(0);
	bool dup;
	assert_int_equal(deliver_one(store, "ann", "mta1 Q0001", &dup), 1);
	assert_false(dup);
	assert_int_equal(deliver_one(store, "ann", "mta1 Q0002", &dup), 2);
	assert_false(dup);
	/* The redelivery of Q0001: the first copy's uid, nothing stored. */
	assert_int_equal(deliver_one(store, "ann", "mta1 Q0001", &dup), 1);
	assert_true(dup);
	assert_int_equal(messages_in(store, "ann"), 2);
	/* The same id to another mailbox, the same queue id from another MTA,
	 * and deliveries without an id are all new copies. */
	assert_int_equal(deliver_one(store, "bob", "mta1 Q0001", &dup), 1);
	assert_false(dup);
	assert_int_equal(deliver_one(store, "ann", "mta2 Q0001", &dup), 3);
	assert_false(dup);
	assert_int_equal(deliver_one(store, "ann", NULL, &dup), 4);
	assert_false(dup);
	assert_int_equal(deliver_one(store, "ann", NULL, &dup), 5);
	assert_false(dup);
	assert_int_equal(messages_in(store, "ann"), 5);
	mt_store_close(&store);

	/* Remembered across a close: the MTA redelivers after its restart. */
	store = open_window(0);
	assert_int_equal(deliver_one(store, "ann", "mta1 Q0002", &dup), 2);
	assert_true(dup);
	assert_int_equal(messages_in(store, "ann"), 5);
	mt_store_close(&store);
}

static void test_mixed_request(void **state)
{
	(void)state;
	struct mt_store *store = open_window(0);
	bool dup;
	assert_int_equal(deliver_one(store, "cat", "mta1 Q0100", &dup), 1);
	/* One transaction to cat (delivered before) and dan (not yet): only
	 * dan gets a copy, and each reply carries its own uid. */
	const char *const mailboxes[] = { "cat", "dan" };
	const char *const ids[] = { "mta1 Q0100", "mta1 Q0100" };
	struct mt_store_rcpt r[2];
	deliver(store, mailboxes, ids, 2, r, 8);
	assert_true(r[0].duplicate);
	assert_int_equal(r[0].uid, 1);
	assert_false(r[1].duplicate);
	assert_int_equal(r[1].uid, 1);
	assert_int_equal(messages_in(store, "cat"), 1);
	assert_int_equal(messages_in(store, "dan"), 1);
	/* An id too long to remember is delivered without dedupe. */
	char long_id[1200];
	memset(long_id, 'x', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	assert_int_equal(deliver_one(store, "cat", long_id, &dup), 2);
	assert_int_equal(deliver_one(store, "cat", long_id, &dup), 3);
	assert_false(dup);
	mt_store_close(&store);
}

static void test_window(void **state)
{
	(void)state;
	struct mt_store *store = open_window(1);
	bool dup;
	assert_int_equal(deliver_one(store, "eve", "mta1 Q0200", &dup), 1);
	assert_int_equal(deliver_one(store, "eve", "mta1 Q0200", &dup), 1);
	assert_true(dup);
	sleep(2);
	/* Older than the window: a copy again (the record is not swept yet,
	 * the lookup itself ignores it). */
	assert_int_equal(deliver_one(store, "eve", "mta1 Q0200", &dup), 2);
	assert_false(dup);
	assert_int_equal(deliver_one(store, "eve", "mta1 Q0201", &dup), 3);
	mt_store_close(&store);

	/* The sweep: three ids older than the window, and three recent ones
	 * in a store with a long window. */
	store = open_window(2);
	for (unsigned int i = 0; i < 3; i++) {
		char id[32];
		snprintf(id, sizeof(id), "mta1 Q03%02u", i);
		(void)deliver_one(store, "fay", id, &dup);
	}
	sleep(3);
	for (unsigned int i = 0; i < 3; i++) {
		char id[32];
		snprintf(id, sizeof(id), "mta1 Q04%02u", i);
		(void)deliver_one(store, "fay", id, &dup);
	}
	/* eve's two ids (re-recorded Q0200 and Q0201) are old too. */
	assert_int_equal(delivered_records(store), 8);
	unsigned int secs = 1000;	/* due */
	store_dedupe_expire(store, &secs);
	assert_int_equal(secs, 0);
	assert_int_equal(delivered_records(store), 3);
	assert_int_equal(deliver_one(store, "fay", "mta1 Q0401", &dup), 5);
	assert_true(dup);
	/* Not due: nothing happens. */
	store_dedupe_expire(store, &secs);
	assert_int_equal(secs, 1);
	mt_store_close(&store);
}

int main(void)
{
	mt_log_init("test-store-dedupe", MT_LOG_TARGET_STDERR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_same_id_once, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_mixed_request, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_window, test_dir_setup, test_dir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
