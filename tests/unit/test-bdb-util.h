/* test-bdb-util.h — what the lib-bdb unit tests share: a fresh temporary
 * directory holding a transactional Berkeley DB environment and one btree
 * database, and its removal. Header-only (each test is one program). */
#ifndef TEST_BDB_UTIL_H
#define TEST_BDB_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <db.h>

/* mkdtemp() under /tmp with name's prefix; dir holds 64 bytes. */
static inline void test_bdb_mkdtemp(char *dir, size_t size, const char *name)
{
	int n = snprintf(dir, size, "/tmp/%s.", name);
	assert_true(n > 0 && (size_t)n + 7 <= size);
	memset(dir + n, 'X', 6);	/* mkdtemp's template */
	dir[n + 6] = '\0';
	assert_non_null(mkdtemp(dir));
}

/* Open (recovering) the environment in dir, its log in dir/logdir when
 * logdir is set, and t.db in it. */
static inline void test_bdb_open(const char *dir, const char *logdir,
				 DB_ENV **env_r, DB **db_r)
{
	DB_ENV *env;
	assert_int_equal(db_env_create(&env, 0), 0);
	/* As the queue's and the store's environments: concurrent executors'
	 * transactions can deadlock on a btree page, and without a detector
	 * both wait forever (CI hung here once). */
	assert_int_equal(env->set_lk_detect(env, DB_LOCK_DEFAULT), 0);
	if (logdir != NULL) {
		assert_int_equal(env->set_lg_dir(env, logdir), 0);
		assert_int_equal(env->set_lg_max(env, 512u << 10), 0);
		assert_int_equal(env->set_lg_bsize(env, 256u << 10), 0);
	}
	assert_int_equal(env->open(env, dir, DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
				   DB_INIT_LOCK | DB_INIT_MPOOL | DB_THREAD |
				   DB_RECOVER, 0600), 0);
	DB *db;
	assert_int_equal(db_create(&db, env, 0), 0);
	assert_int_equal(db->open(db, NULL, "t.db", NULL, DB_BTREE,
				  DB_CREATE | DB_AUTO_COMMIT | DB_THREAD, 0600), 0);
	*env_r = env;
	*db_r = db;
}

static inline void test_bdb_close(DB_ENV **env_p, DB **db_p)
{
	if (*db_p != NULL)
		(void)(*db_p)->close(*db_p, 0);
	if (*env_p != NULL)
		(void)(*env_p)->close(*env_p, 0);
	*db_p = NULL;
	*env_p = NULL;
}

static inline void test_bdb_rmdir(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

#endif
