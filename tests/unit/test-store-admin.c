/* test-store-admin.c — the administration side of the store: `store stat`
 * figures, log files removed once checkpoints no longer need them, a hot
 * backup that opens (with recovery) holding exactly the data acknowledged
 * before it, and mailtierctl's way in: a second process joining the live
 * environment in MT_STORE_MODE_ADMIN (this binary re-executed) to read the
 * stat and take a backup while the serving store keeps delivering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test-store-util.h"
#include "log.h"

#include <dirent.h>
#include <sys/wait.h>

#define MSG_SIZE 100000

static const char *self_path;	/* argv[0]: re-executed as the ctl side */

static unsigned int count_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	unsigned int n = 0;
	const struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

static void deliver_many(struct mt_store *store, const char *prefix,
			 unsigned int first, unsigned int count)
{
	char name[64];
	for (unsigned int i = first; i < first + count; i++) {
		snprintf(name, sizeof(name), "%s%u", prefix, i % 3);
		test_deliver(store, name, i, MSG_SIZE);
	}
}

static void check_mailbox(struct mt_store *store, const char *name,
			  unsigned int expected)
{
	struct mt_store_mailbox *mbox;
	const char *error;
	assert_int_equal(mt_store_mailbox_open_sync(store, name, &mbox, &error),
			 MT_STORE_OK);
	assert_int_equal(mt_store_mailbox_count(mbox), expected);
	for (unsigned int i = 0; i < expected; i++) {
		char *have = test_read_all(mbox, i, 65536);
		char want_head[64];
		int n = snprintf(want_head, sizeof(want_head), "Subject: message ");
		assert_memory_equal(have, want_head, (size_t)n);
		unsigned int seed = (unsigned int)strtoul(have + n, NULL, 10);
		char *want = test_message(seed, MSG_SIZE);
		assert_memory_equal(have, want, MSG_SIZE);
		free(want);
		free(have);
	}
	mt_store_mailbox_close(&mbox);
}

static void test_stat_and_log_removal(void **state)
{
	struct mt_store *store = test_store_open_with(test_path("store"), 0, 1u << 20);
	deliver_many(store, "user", 0, 60);	/* ~6 MB of log */
	struct mt_store_stat st;
	const char *error;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.format_version, MT_STORE_FORMAT_VERSION);
	assert_int_equal(st.mailboxes, 3);
	assert_int_equal(st.messages, 60);
	assert_int_equal(st.bytes, 60 * MSG_SIZE);
	assert_true(st.log_file >= 6);
	assert_true(st.env_commits >= 60);
	assert_true(st.env_log_flushes > 0);
	assert_true(st.cache_size >= 16u << 20);
	uint32_t files_before = st.log_files;

	/* A checkpoint (the backup takes one), then more log: the files no
	 * checkpoint needs are gone. */
	assert_int_equal(mt_store_backup(store, test_path("bk"), &error), MT_STORE_OK);
	deliver_many(store, "user", 60, 20);
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	print_message("log files before=%u after=%u first=%u current=%u ckp=%u/%u\n",
		      files_before, st.log_files, st.log_first_file, st.log_file,
		      st.ckp_file, st.ckp_offset);
	assert_true(st.log_first_file > 1);
	assert_true(st.log_files < files_before);
	assert_int_equal(count_files(test_path("store"), "log."), st.log_files);
	assert_true(st.ckp_time > 0);
	assert_true(st.ckp_file >= st.log_first_file);
	uint64_t cache_before = st.cache_size;
	mt_store_close(&store);

	/* A new cache size applies at a plain restart (the regions were
	 * removed at the clean close), and the data is still there. */
	struct mt_store_settings set = {
		.home = test_path("store"), .mode = MT_STORE_MODE_SERVE,
		.cache_size = 48u << 20,
	};
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_true(st.cache_size > cache_before + (16u << 20));
	assert_int_equal(st.messages, 80);
	assert_int_equal(count_files(test_path("store"), "popstore.lock"), 1);
	mt_store_close(&store);
}

static void test_backup_restores(void **state)
{
	struct mt_store *store = test_store_open_with(test_path("store"), 0, 1u << 20);
	deliver_many(store, "user", 0, 30);
	struct mt_store_mailbox *mbox;
	const char *error;
	/* An expunge before the backup stays expunged in it. */
	assert_int_equal(mt_store_mailbox_open_sync(store, "user0", &mbox, &error),
			 MT_STORE_OK);
	const uint32_t uid = 1;
	assert_int_equal(mt_store_expunge_wait(mbox, &uid, 1, &error), MT_STORE_OK);
	mt_store_mailbox_close(&mbox);

	assert_int_equal(mt_store_backup(store, test_path("backup"), &error),
			 MT_STORE_OK);
	deliver_many(store, "late", 0, 5);	/* after: not in it */
	/* Not into a directory with something in it. */
	assert_int_equal(mt_store_backup(store, test_path("backup"), &error),
			 MT_STORE_INVALID);
	assert_non_null(strstr(error, "not empty"));
	mt_store_close(&store);

	assert_true(count_files(test_path("backup"), "meta.db") == 1);
	assert_true(count_files(test_path("backup"), "body.db") == 1);
	assert_int_equal(count_files(test_path("backup"), "__db"), 0);
	assert_int_equal(count_files(test_path("backup"), "popstore.lock"), 0);

	struct mt_store_settings set = {
		.home = test_path("backup"), .mode = MT_STORE_MODE_SERVE,
		.create = false, .cache_size = 8u << 20,
	};
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	struct mt_store_stat st;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.mailboxes, 3);
	assert_int_equal(st.messages, 29);
	check_mailbox(store, "user0", 9);
	check_mailbox(store, "user1", 10);
	check_mailbox(store, "user2", 10);
	check_mailbox(store, "late0", 0);
	/* The restored store takes deliveries; uids go on. */
	assert_int_equal(test_deliver(store, "user0", 1000, 10), 11);
	mt_store_close(&store);
}

/* The re-executed child: join the live environment as mailtierctl does. */
static int admin_child(const char *home, const char *backup)
{
	struct mt_store_settings set = { .home = home, .mode = MT_STORE_MODE_ADMIN };
	struct mt_store *store;
	const char *error;
	if (mt_store_open(&set, &store, &error) != MT_STORE_OK) {
		fprintf(stderr, "admin open: %s\n", error);
		return 1;
	}
	struct mt_store_stat st;
	if (mt_store_stat_get(store, &st, &error) != MT_STORE_OK) {
		fprintf(stderr, "admin stat: %s\n", error);
		return 1;
	}
	printf("mailboxes=%llu messages=%llu\n", (unsigned long long)st.mailboxes,
	       (unsigned long long)st.messages);
	/* Async calls are refused in admin mode, not hung. */
	struct mt_store_rcpt r = { .mailbox = "x" };
	if (mt_store_deliver_wait(store, &r, 1, "x", 1, &error) != MT_STORE_INVALID)
		return 1;
	if (mt_store_backup(store, backup, &error) != MT_STORE_OK) {
		fprintf(stderr, "admin backup: %s\n", error);
		return 1;
	}
	mt_store_close(&store);
	return 0;
}

static void test_admin_joins_live_store(void **state)
{
	struct mt_store *store = test_store_open_with(test_path("store"), 0, 1u << 20);
	deliver_many(store, "user", 0, 12);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		char home[512], backup[512];
		snprintf(home, sizeof(home), "%s", test_path("store"));
		snprintf(backup, sizeof(backup), "%s", test_path("ctl-backup"));
		execl(self_path, self_path, "--admin-child", home, backup,
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	/* The daemon side keeps delivering meanwhile. */
	deliver_many(store, "busy", 0, 6);
	char out[256] = "";
	ssize_t n, len = 0;
	while ((n = read(fds[0], out + len, sizeof(out) - 1 - (size_t)len)) > 0)
		len += n;
	close(fds[0]);
	int wstatus;
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	assert_true(WIFEXITED(wstatus));
	assert_int_equal(WEXITSTATUS(wstatus), 0);
	unsigned long long mailboxes, messages;
	assert_int_equal(sscanf(out, "mailboxes=%llu messages=%llu", &mailboxes,
				&messages), 2);
	assert_true(messages >= 12 && messages <= 18);

	/* The serving store was not disturbed. */
	deliver_many(store, "after", 0, 3);
	struct mt_store_stat st;
	const char *error;
	assert_int_equal(mt_store_stat_get(store, &st, &error), MT_STORE_OK);
	assert_int_equal(st.messages, 21);
	mt_store_close(&store);

	struct mt_store_settings set = {
		.home = test_path("ctl-backup"), .mode = MT_STORE_MODE_SERVE,
		.cache_size = 8u << 20,
	};
	assert_int_equal(mt_store_open(&set, &store, &error), MT_STORE_OK);
	check_mailbox(store, "user0", 4);
	check_mailbox(store, "user1", 4);
	check_mailbox(store, "user2", 4);
	mt_store_close(&store);
}

int main(int argc, char **argv)
{
	mt_log_init("test-store-admin", MT_LOG_TARGET_STDERR);
	self_path = argv[0];
	if (argc == 4 && strcmp(argv[1], "--admin-child") == 0)
		return admin_child(argv[2], argv[3]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stat_and_log_removal, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_backup_restores, test_dir_setup, test_dir_teardown),
		cmocka_unit_test_setup_teardown(test_admin_joins_live_store, test_dir_setup, test_dir_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
