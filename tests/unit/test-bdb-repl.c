/* test-bdb-repl.c — unit tests for lib-bdb/bdb-repl.c, what needs no
 * second process: the group's parse (table-driven: good lists, the local
 * site found, bad addresses, "*", duplicates, two sites, too many), the log
 * retention's choice of files (a prefix only; age, archivability and the
 * bytes kept each stop it), the per-thread PERM_FAILED flag, and on a real
 * environment in a temporary directory: configure refuses DB_TXN_NOSYNC,
 * turns automatic log removal off, and mt_bdb_repl_archive_logs() removes
 * old unneeded log files and keeps recent ones. tests/integration/
 * test-bdb-repl.py runs real groups. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <utime.h>

#include <db.h>

#include "bdb-repl.h"
#include "log.h"
#include "test-bdb-util.h"

static void test_group_parse(void **state)
{
	(void)state;
	static const struct {
		const char *sites[4];
		size_t count;
		const char *local;
		size_t want_local;	/* SIZE_MAX: refused */
		const char *error_part;
	} cases[] = {
		{ { "10.0.0.1:7001", "10.0.0.2:7001", "10.0.0.3:7001" }, 3, "10.0.0.2:7001", 1, NULL },
		{ { "a.example:1", "b.example:2", "c.example:3" }, 3, "c.example:3", 2, NULL },
		{ { "[::1]:7001", "[::1]:7002", "[::1]:7003" }, 3, "[::1]:7001", 0, NULL },
		{ { "127.0.0.1:7001" }, 1, "127.0.0.1:7001", 0, NULL },
		{ { "a:1", "b:1", "c:1", "d:1" }, 4, "d:1", 3, NULL },
		{ { "a:1", "b:1" }, 2, "a:1", SIZE_MAX, "two sites" },
		{ { "a:1", "b:1", "a:1" }, 3, "a:1", SIZE_MAX, "twice" },
		{ { "a:1", "b:1", "c:1" }, 3, "d:1", SIZE_MAX, "not one of" },
		{ { "a:1", "b:1", "c:1" }, 3, "a:2", SIZE_MAX, "not one of" },
		{ { "a:1", "*:2", "c:1" }, 3, "a:1", SIZE_MAX, "not *" },
		{ { "a:1", "b:1", "c:1" }, 3, "*:1", SIZE_MAX, "not *" },
		{ { "a:1", "b", "c:1" }, 3, "a:1", SIZE_MAX, "host:port" },
		{ { "a:1", "b:0", "c:1" }, 3, "a:1", SIZE_MAX, "range" },
		{ { "a:1", "b:70000", "c:1" }, 3, "a:1", SIZE_MAX, "range" },
		{ { "a:1", "b:1", "c:1" }, 3, NULL, SIZE_MAX, "no local" },
		{ { NULL }, 0, "a:1", SIZE_MAX, "no replication sites" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_bdb_repl_group g;
		const char *error = NULL;
		bool ok = mt_bdb_repl_group_parse(cases[i].sites, cases[i].count,
						  cases[i].local, &g, &error);
		if (cases[i].want_local == SIZE_MAX) {
			if (ok)
				fail_msg("case %zu: accepted", i);
			assert_non_null(error);
			if (strstr(error, cases[i].error_part) == NULL)
				fail_msg("case %zu: error '%s' lacks '%s'", i, error,
					 cases[i].error_part);
			assert_null(g.sites);
			continue;
		}
		if (!ok)
			fail_msg("case %zu: refused: %s", i, error);
		assert_int_equal(g.count, cases[i].count);
		assert_int_equal(g.local, cases[i].want_local);
		mt_bdb_repl_group_free(&g);
	}
	/* Too many. */
	const char *many[MT_BDB_REPL_SITES_MAX + 1];
	char names[MT_BDB_REPL_SITES_MAX + 1][16];
	for (size_t i = 0; i <= MT_BDB_REPL_SITES_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "h:%zu", i + 1);
		many[i] = names[i];
	}
	struct mt_bdb_repl_group g;
	const char *error;
	assert_false(mt_bdb_repl_group_parse(many, MT_BDB_REPL_SITES_MAX + 1, "h:1", &g, &error));
	assert_true(mt_bdb_repl_group_parse(many, MT_BDB_REPL_SITES_MAX, "h:15", &g, &error));
	assert_string_equal(g.sites[g.local].host, "h");
	assert_int_equal(g.sites[g.local].port, 15);
	mt_bdb_repl_group_free(&g);
}

static void test_select_expired(void **state)
{
	(void)state;
	const time_t now = 100000;
	/* Oldest first: 4 files of 10 bytes, the last one in use. */
	struct mt_bdb_log_file f[] = {
		{ "log.1", now - 5000, 10, true },
		{ "log.2", now - 4000, 10, true },
		{ "log.3", now - 100, 10, true },
		{ "log.4", now, 10, false },
	};
	const size_t n = sizeof(f) / sizeof(f[0]);
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 3600, 0), 2);
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 4500, 0), 1);
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 6000, 0), 0);
	/* Written exactly retention ago: kept (older than, not as old as). */
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 4000, 0), 1);
	/* Retention 0: every archivable file written before now. */
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 0, 0), 3);
	/* Bytes kept: 40 in all; keeping 25 lets one go, 30 two, 31 one. */
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 0, 25), 1);
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 0, 20), 2);
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 0, 21), 1);
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 0, 1000), 0);
	/* A prefix only: an unneeded file after a needed one stays. */
	f[1].archivable = false;
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 0, 0), 1);
	f[1].archivable = true;
	/* A newer file among old ones stops it too (a clock step back). */
	f[1].mtime = now - 10;
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 3600, 0), 1);
	/* A file from the future (clock stepped back) is never expired. */
	f[0].mtime = now + 100;
	assert_int_equal(mt_bdb_log_select_expired(f, n, now, 0, 0), 0);
	assert_int_equal(mt_bdb_log_select_expired(f, 0, now, 0, 0), 0);
}

/* The flag is the committing thread's own. */
static void *perm_failed_thread(void *arg)
{
	struct mt_bdb_repl *r = arg;
	assert_true(mt_bdb_repl_event(r, DB_EVENT_REP_PERM_FAILED, NULL));
	bool *seen = malloc(sizeof(*seen));
	*seen = mt_bdb_repl_take_perm_failed();
	return seen;
}

static DB_ENV *env_create(void)
{
	DB_ENV *env;
	assert_int_equal(db_env_create(&env, 0), 0);
	return env;
}

static const char *const test_sites[] = { "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3" };

static void test_configure_and_events(void **state)
{
	(void)state;
	char dir[64];
	test_bdb_mkdtemp(dir, sizeof(dir), "test-bdb-repl");
	struct mt_bdb_repl_group g;
	const char *error;
	assert_true(mt_bdb_repl_group_parse(test_sites, 3, "127.0.0.1:2", &g, &error));
	struct mt_bdb_repl_settings set = { .name = "test", .group = &g };

	/* DB_TXN_NOSYNC on the environment: clients would ack unflushed. */
	DB_ENV *env = env_create();
	assert_int_equal(env->set_flags(env, DB_TXN_NOSYNC, 1), 0);
	assert_null(mt_bdb_repl_configure(env, &set, &error));
	assert_non_null(strstr(error, "DB_TXN_NOSYNC"));
	(void)env->close(env, 0);

	env = env_create();
	assert_int_equal(env->log_set_config(env, DB_LOG_AUTO_REMOVE, 1), 0);
	struct mt_bdb_repl *r = mt_bdb_repl_configure(env, &set, &error);
	assert_non_null(r);
	mt_bdb_repl_group_free(&g);	/* configure copied it */
	assert_int_equal(env->open(env, dir, DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
				   DB_INIT_LOCK | DB_INIT_MPOOL | MT_BDB_REPL_ENV_FLAGS, 0600), 0);
	int on = 1;
	assert_int_equal(env->log_get_config(env, DB_LOG_AUTO_REMOVE, &on), 0);
	assert_int_equal(on, 0);
	int policy = 0;
	assert_int_equal(env->repmgr_get_ack_policy(env, &policy), 0);
	assert_int_equal(policy, DB_REPMGR_ACKS_QUORUM);
	u_int32_t usecs = 0, prio = 0;
	assert_int_equal(env->rep_get_timeout(env, DB_REP_HEARTBEAT_MONITOR, &usecs), 0);
	assert_int_equal(usecs, MT_BDB_REPL_HEARTBEAT_MONITOR_MS * 1000u);
	assert_int_equal(env->rep_get_timeout(env, DB_REP_CHECKPOINT_DELAY, &usecs), 0);
	assert_int_equal(usecs, MT_BDB_REPL_CHECKPOINT_DELAY_MS * 1000u);
	assert_int_equal(env->rep_get_priority(env, &prio), 0);
	assert_int_equal(prio, MT_BDB_REPL_PRIORITY);

	/* PERM_FAILED: counted, and flagged in the thread it came from only. */
	(void)mt_bdb_repl_take_perm_failed();
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, perm_failed_thread, r), 0);
	void *seen;
	assert_int_equal(pthread_join(t, &seen), 0);
	assert_true(*(bool *)seen);
	free(seen);
	assert_false(mt_bdb_repl_take_perm_failed());
	assert_true(mt_bdb_repl_event(r, DB_EVENT_REP_PERM_FAILED, NULL));
	assert_true(mt_bdb_repl_take_perm_failed());
	assert_false(mt_bdb_repl_take_perm_failed());
	/* Not replication's. */
	assert_false(mt_bdb_repl_event(r, DB_EVENT_PANIC, NULL));
	assert_false(mt_bdb_repl_event(r, DB_EVENT_WRITE_FAILED, NULL));

	/* Role events as repmgr sends them (not started: no notifier). */
	int eid = 0;
	assert_true(mt_bdb_repl_event(r, DB_EVENT_REP_MASTER, NULL));
	struct mt_bdb_repl_status st;
	mt_bdb_repl_status(r, &st);
	assert_int_equal(st.role, MT_BDB_REPL_ROLE_MASTER);
	assert_string_equal(st.master, "127.0.0.1:2");
	assert_int_equal(st.perm_failed, 2);
	assert_int_equal(st.sites, 3);
	assert_true(mt_bdb_repl_event(r, DB_EVENT_REP_DUPMASTER, NULL));
	assert_true(mt_bdb_repl_event(r, DB_EVENT_REP_CLIENT, NULL));
	assert_true(mt_bdb_repl_event(r, DB_EVENT_REP_NEWMASTER, &eid));
	mt_bdb_repl_status(r, &st);
	assert_int_equal(st.role, MT_BDB_REPL_ROLE_CLIENT);
	assert_int_equal(st.demotions, 1);
	assert_int_equal(st.master_changes, 1);
	assert_string_equal(mt_bdb_repl_role_name(st.role), "client");

	mt_bdb_repl_stop(r);
	assert_int_equal(env->close(env, 0), 0);
	mt_bdb_repl_free(&r);
	assert_null(r);
	test_bdb_rmdir(dir);
}

static unsigned int count_logs(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	unsigned int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, "log.", 4) == 0;
	closedir(d);
	return n;
}

/* Age every log file of dir by secs. */
static void age_logs(const char *dir, time_t secs)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "log.", 4) != 0)
			continue;
		char path[64 + sizeof(e->d_name)];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		struct stat sb;
		assert_int_equal(stat(path, &sb), 0);
		struct utimbuf ut = { sb.st_atime - secs, sb.st_mtime - secs };
		assert_int_equal(utime(path, &ut), 0);
	}
	closedir(d);
}

static void test_archive_logs(void **state)
{
	(void)state;
	char dir[64];
	test_bdb_mkdtemp(dir, sizeof(dir), "test-bdb-repl-logs");
	DB_ENV *env = env_create();
	assert_int_equal(env->set_lg_max(env, 64u << 10), 0);
	assert_int_equal(env->set_lg_bsize(env, 16u << 10), 0);
	assert_int_equal(env->open(env, dir, DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
				   DB_INIT_LOCK | DB_INIT_MPOOL | DB_THREAD, 0600), 0);
	DB *db;
	assert_int_equal(db_create(&db, env, 0), 0);
	assert_int_equal(db->open(db, NULL, "t.db", NULL, DB_BTREE,
				  DB_CREATE | DB_AUTO_COMMIT | DB_THREAD, 0600), 0);
	char value[1000];
	memset(value, 'v', sizeof(value));
	for (unsigned int i = 0; i < 400; i++) {
		DBT k = { .data = &i, .size = sizeof(i) };
		DBT v = { .data = value, .size = sizeof(value) };
		assert_int_equal(db->put(db, NULL, &k, &v, DB_AUTO_COMMIT), 0);
		if (i % 50 == 0)
			assert_int_equal(env->txn_checkpoint(env, 0, 0, DB_FORCE), 0);
	}
	assert_int_equal(env->txn_checkpoint(env, 0, 0, DB_FORCE), 0);
	unsigned int before = count_logs(dir);
	assert_true(before > 4);

	unsigned int removed = 99;
	const char *error = NULL;
	/* All written just now: a retention of an hour keeps them all. */
	assert_int_equal(mt_bdb_repl_archive_logs(env, 3600, 0, &removed, &error), 0);
	assert_int_equal(removed, 0);
	assert_int_equal(count_logs(dir), before);
	/* Two hours old: the unneeded ones go, the one in use stays. */
	age_logs(dir, 7200);
	assert_int_equal(mt_bdb_repl_archive_logs(env, 3600, 0, &removed, &error), 0);
	assert_true(removed > 0);
	assert_int_equal(count_logs(dir), before - removed);
	assert_true(count_logs(dir) >= 1);
	/* The environment still works and recovers from what is left. */
	assert_int_equal(db->close(db, 0), 0);
	assert_int_equal(env->close(env, 0), 0);
	env = env_create();
	assert_int_equal(env->open(env, dir, DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
				   DB_INIT_LOCK | DB_INIT_MPOOL | DB_THREAD | DB_RECOVER,
				   0600), 0);
	assert_int_equal(env->close(env, 0), 0);
	test_bdb_rmdir(dir);
}

int main(void)
{
	mt_log_init("test-bdb-repl", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(MT_LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_parse),
		cmocka_unit_test(test_select_expired),
		cmocka_unit_test(test_configure_and_events),
		cmocka_unit_test(test_archive_logs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
