/* store-admin.c — what `mailtierctl store stat` and `store backup` need:
 * the store's contents (with the purge backlog and the bodies being
 * written), log and checkpoint state, and a hot backup that opens as a
 * store; and the counters the daemon's metrics read.
 *
 * Trust boundary: the backup directory comes from the administrator's
 * command line; it must be absent or empty (nothing in it is removed or
 * overwritten).
 *
 * Guarantees: both work while the daemon serves (mailtierctl joins the
 * environment in MT_STORE_MODE_ADMIN). A backup is a checkpoint, then the
 * database files copied page-consistently through the cache, then the log
 * files (Berkeley DB holds off log removal meanwhile: DB_ENV->backup), then
 * catastrophic recovery run in the copy, which leaves it consistent as of
 * the last log record copied: every delivery acknowledged before the
 * backup started is in it. */
#include "store-req.h"
#include "alloc.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A scan without a transaction, again while it loses a deadlock to the
 * daemon's writers. */
static int scan_retried(struct mt_store *store,
			int (*scan)(struct mt_store *, uint64_t *, uint64_t *),
			uint64_t *a_r, uint64_t *b_r)
{
	for (unsigned int attempt = 1;; attempt++) {
		int ret = scan(store, a_r, b_r);
		if (ret != DB_LOCK_DEADLOCK || attempt >= STORE_TXN_ATTEMPTS)
			return ret;
	}
}

bool mt_store_env_counters_get(struct mt_store *store,
			       struct mt_store_env_counters *c, const char **error_r)
{
	DB_ENV *env = store->env;
	memset(c, 0, sizeof(*c));
	c->no_space = store_space_full(store);
	pthread_mutex_lock(&store->open_lock);
	c->mailboxes_open = store->open_count;
	pthread_mutex_unlock(&store->open_lock);
	DB_MPOOL_STAT *ms;
	int ret = env->memp_stat(env, &ms, NULL, 0);
	if (ret != 0) {
		*error_r = store_error("store %s: memp_stat: %s", store->home, db_strerror(ret));
		return false;
	}
	c->cache_hits = ms->st_cache_hit;
	c->cache_misses = ms->st_cache_miss;
	c->cache_bytes = (uint64_t)ms->st_gbytes << 30 | ms->st_bytes;
	free(ms);
	DB_LOG_STAT *ls;
	if ((ret = env->log_stat(env, &ls, 0)) != 0) {
		*error_r = store_error("store %s: log_stat: %s", store->home, db_strerror(ret));
		return false;
	}
	c->log_bytes = (uint64_t)ls->st_w_mbytes * 1048576u + ls->st_w_bytes;
	free(ls);
	return true;
}

enum mt_store_status mt_store_stat_get(struct mt_store *store,
				       struct mt_store_stat *st,
				       const char **error_r)
{
	DB_ENV *env = store->env;
	memset(st, 0, sizeof(*st));
	st->format_version = store->format_version;
	int ret;
	for (unsigned int attempt = 1;; attempt++) {
		ret = store_records_totals(store, &st->mailboxes, &st->messages,
					   &st->bytes);
		if (ret != DB_LOCK_DEADLOCK || attempt >= STORE_TXN_ATTEMPTS)
			break;
	}
	if (ret != 0) {
		*error_r = store_error("store %s: reading mailboxes: %s",
				       store->home, store_strerror(ret));
		return store_status_from_db(store, ret);
	}
	if ((ret = scan_retried(store, store_records_purge_totals,
				&st->purge_messages, &st->purge_bytes)) != 0) {
		*error_r = store_error("store %s: reading the purge queue: %s",
				       store->home, store_strerror(ret));
		return store_status_from_db(store, ret);
	}
	if ((ret = scan_retried(store, store_chunks_partial_totals,
				&st->partial_bodies, &st->partial_bytes)) != 0) {
		*error_r = store_error("store %s: reading the bodies being written: %s",
				       store->home, store_strerror(ret));
		return store_status_from_db(store, ret);
	}

	DB_LOG_STAT *ls;
	DB_TXN_STAT *ts;
	DB_MPOOL_STAT *ms;
	if ((ret = env->log_stat(env, &ls, 0)) != 0) {
		*error_r = store_error("store %s: log_stat: %s", store->home,
				       db_strerror(ret));
		return store_status_from_db(store, ret);
	}
	st->log_file = ls->st_cur_file;
	st->log_offset = ls->st_cur_offset;
	st->env_log_flushes = ls->st_scount;
	free(ls);
	if ((ret = env->txn_stat(env, &ts, 0)) != 0) {
		*error_r = store_error("store %s: txn_stat: %s", store->home,
				       db_strerror(ret));
		return store_status_from_db(store, ret);
	}
	st->ckp_file = ts->st_last_ckp.file;
	st->ckp_offset = ts->st_last_ckp.offset;
	st->ckp_time = (int64_t)ts->st_time_ckp;
	st->env_commits = ts->st_ncommits;
	free(ts);
	if ((ret = env->memp_stat(env, &ms, NULL, 0)) != 0) {
		*error_r = store_error("store %s: memp_stat: %s", store->home,
				       db_strerror(ret));
		return store_status_from_db(store, ret);
	}
	st->cache_size = (uint64_t)ms->st_gbytes << 30 | ms->st_bytes;
	st->cache_hits = ms->st_cache_hit;
	st->cache_misses = ms->st_cache_miss;
	free(ms);

	char **logs = NULL;
	if ((ret = env->log_archive(env, &logs, DB_ARCH_LOG)) != 0) {
		*error_r = store_error("store %s: log_archive: %s", store->home,
				       db_strerror(ret));
		return store_status_from_db(store, ret);
	}
	for (char **p = logs; p != NULL && *p != NULL; p++) {
		const char *dot = strrchr(*p, '.');
		unsigned long n = dot != NULL ? strtoul(dot + 1, NULL, 10) : 0;
		if (st->log_files == 0 || n < st->log_first_file)
			st->log_first_file = (uint32_t)n;
		st->log_files++;
	}
	free(logs);
	return MT_STORE_OK;
}

/* dir absent (made here) or an empty directory. */
static enum mt_store_status backup_dir_ready(const char *dir, const char **error_r)
{
	if (mkdir(dir, 0700) == 0)
		return MT_STORE_OK;
	if (errno != EEXIST) {
		*error_r = store_error("backup %s: %s", dir, strerror(errno));
		return errno == ENOSPC ? MT_STORE_NO_SPACE : MT_STORE_INVALID;
	}
	DIR *d = opendir(dir);
	if (d == NULL) {
		*error_r = store_error("backup %s: %s", dir, strerror(errno));
		return MT_STORE_INVALID;
	}
	const struct dirent *de;
	bool empty = true;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, ".."))
			empty = false;
	closedir(d);
	if (!empty) {
		*error_r = store_error("backup %s: directory not empty", dir);
		return MT_STORE_INVALID;
	}
	return MT_STORE_OK;
}

/* Catastrophic recovery over every log in dir, a checkpoint, and removal
 * of the logs it no longer needs (what db_hotbackup does after copying). */
static int backup_recover(const char *dir)
{
	DB_ENV *env;
	int ret = db_env_create(&env, 0);
	if (ret != 0)
		return ret;
	env->set_errcall(env, NULL);
	ret = env->open(env, dir, DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
			DB_INIT_LOCK | DB_INIT_MPOOL | DB_RECOVER_FATAL |
			DB_PRIVATE, 0600);
	if (ret == 0)
		ret = env->txn_checkpoint(env, 0, 0, DB_FORCE);
	if (ret == 0)
		ret = env->log_archive(env, NULL, DB_ARCH_REMOVE);
	int t_ret = env->close(env, 0);
	return ret != 0 ? ret : t_ret;
}

enum mt_store_status mt_store_backup(struct mt_store *store, const char *dir,
				     const char **error_r)
{
	enum mt_store_status status = backup_dir_ready(dir, error_r);
	if (status != MT_STORE_OK)
		return status;
	int ret = store_checkpoint(store, 0);
	if (ret == 0)
		ret = store->env->backup(store->env, dir, DB_CREATE | DB_EXCL);
	if (ret != 0) {
		*error_r = store_error("backup of %s to %s failed: %s", store->home,
				       dir, db_strerror(ret));
		return store_status_from_db(store, ret);
	}
	if ((ret = backup_recover(dir)) != 0) {
		*error_r = store_error("backup %s: recovery of the copy failed: %s",
				       dir, db_strerror(ret));
		return ret == ENOSPC ? MT_STORE_NO_SPACE : MT_STORE_TEMPFAIL;
	}
	mt_info("store: home=%s backup=%s done", store->home, dir);
	return MT_STORE_OK;
}

void mt_store_counters_get(struct mt_store *store,
			   struct mt_store_counters *c)
{
	c->deliveries = atomic_load(&store->n_deliveries);
	c->delivery_requests = atomic_load(&store->n_delivery_requests);
	c->expunges = atomic_load(&store->n_expunges);
	c->expunged = atomic_load(&store->n_expunged);
	store_commit_counters(store, c);
	c->retries = atomic_load(&store->n_retries);
	c->reads = atomic_load(&store->n_reads);
	c->checkpoints = atomic_load(&store->n_checkpoints);
	c->purged = atomic_load(&store->n_purged);
	c->purge_txns = atomic_load(&store->n_purge_txns);
	c->chunk_writes = atomic_load(&store->n_chunk_writes);
	c->aborted = atomic_load(&store->n_aborted);
	c->swept = atomic_load(&store->n_swept);
	c->duplicates = atomic_load(&store->n_duplicates);
	c->bytes_stored = atomic_load(&store->n_bytes_stored);
	int_fast64_t backlog = atomic_load(&store->purge_backlog);
	c->purge_backlog = backlog > 0 ? (uint64_t)backlog : 0;
}
