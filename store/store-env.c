/* store-env.c — the bottom of the store: its Berkeley DB environment and
 * databases. Open with recovery, the nine databases, their creation, the
 * format check and the upgrades to version 5, checkpoints, close, and the
 * mapping of Berkeley DB results to store statuses. When each runs (open,
 * become master, close) is store-lifecycle.c's.
 *
 * Trust boundary: the home directory comes from the administrator's config;
 * its files are ours only if meta.db carries a format version we read.
 *
 * Guarantees: the environment is transactional (DB_INIT_TXN | DB_INIT_LOG |
 * DB_INIT_LOCK | DB_INIT_MPOOL, DB_THREAD) and opened with DB_RECOVER |
 * DB_REGISTER: recovery runs whenever a process using it died (kill -9
 * included) or left it panicked, and mailtierctl can join it while the
 * daemon runs without disturbing it. One serving process per store (a
 * flock()ed lock file). Log files are removed once no checkpoint needs them
 * (DB_LOG_AUTO_REMOVE; a replicated store keeps them for a retention
 * instead, store-repl.c, which also configures repmgr before the open and
 * gets the replication events); the checkpointer (store-lifecycle.c) checkpoints
 * every checkpoint_secs, and sooner once 256 MB of log has been written,
 * bounding log space and recovery time. Deadlocks are broken by the default
 * detector at each blocked lock request (set_lk_detect). A Berkeley DB
 * panic is logged and latched (mt_store_failed()). After a clean close the
 * region files are removed unless another process is attached, so the next
 * open applies its own cache size. Format versions: a store is refused
 * unless its version is MT_STORE_FORMAT_VERSION (5), 4, 3, 2 or 1; a
 * version 1 store (no purge.db, no delivered.db, no refs.db or partial.db,
 * no imap.db), 2 (no delivered.db, ...), 3 (no refs.db or partial.db, ...)
 * or 4 (no imap.db: its records read as version 5 ones with defaults,
 * store-records.c) is upgraded by the serving process in one transaction
 * that creates what it lacks and rewrites the version record (a crash
 * midway leaves the old version), and read as it is by mailtierctl. A new
 * store's databases and format records are made in one transaction too.
 * Every region page is backed by allocated blocks from the open on
 * (DB_REGION_INIT plus store-space.c), so a full disk cannot fault a
 * region page (SIGBUS); full-disk handling is in store-space.c. */
#include "store-env.h"
#include "alloc.h"
#include "log.h"
#include "bdb-lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOG_BUFFER_MAX (8u << 20)
/* The space reserve beyond the log buffer (file system metadata, the
 * next log file's first blocks). */
#define RESERVE_SLACK (1u << 20)
/* Sized for expunges of large mailboxes; a few MB of region. */
#define LOCKS_MAX 20000u
#define LOCKERS_MAX 4000u
#define TXNS_MAX 400u

static _Thread_local char store_errbuf[512];

const char *store_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(store_errbuf, sizeof(store_errbuf), fmt, ap);
	va_end(ap);
	return store_errbuf;
}

const char *mt_store_status_name(enum mt_store_status status)
{
	static const char *const names[] = {
		[MT_STORE_OK] = "ok", [MT_STORE_NOT_FOUND] = "not-found",
		[MT_STORE_IN_USE] = "in-use", [MT_STORE_OVER_QUOTA] = "over-quota",
		[MT_STORE_NO_SPACE] = "no-space", [MT_STORE_TEMPFAIL] = "tempfail",
		[MT_STORE_FATAL] = "fatal", [MT_STORE_BAD_FORMAT] = "bad-format",
		[MT_STORE_INVALID] = "invalid", [MT_STORE_EXISTS] = "exists",
		[MT_STORE_HAS_CHILDREN] = "has-children", [MT_STORE_LIMIT] = "limit",
	};
	if ((unsigned int)status >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[status];
}

enum mt_store_status store_status_from_db(struct mt_store *store, int ret)
{
	switch (ret) {
	case 0:
		return MT_STORE_OK;
	case DB_NOTFOUND:
	case DB_KEYEMPTY:
		return MT_STORE_NOT_FOUND;
	case STORE_ERR_QUOTA:
		return MT_STORE_OVER_QUOTA;
	case STORE_ERR_EXISTS:
		return MT_STORE_EXISTS;
	case STORE_ERR_HAS_CHILDREN:
		return MT_STORE_HAS_CHILDREN;
	case STORE_ERR_LIMIT:
		return MT_STORE_LIMIT;
	case STORE_ERR_IN_USE:
		return MT_STORE_IN_USE;
	case STORE_ERR_INVALID:
		return MT_STORE_INVALID;
	case ENOSPC:
	case EDQUOT:
		return MT_STORE_NO_SPACE;
	case DB_RUNRECOVERY:
		if (store != NULL)
			atomic_store(&store->failed, true);
		return MT_STORE_FATAL;
	default:
		if (store != NULL && atomic_load(&store->failed))
			return MT_STORE_FATAL;
		return MT_STORE_TEMPFAIL;
	}
}

const char *store_strerror(int ret)
{
	if (ret == STORE_ERR_QUOTA)
		return "mailbox over quota";
	if (ret == STORE_ERR_DAMAGED)
		return "damaged record (run db_verify on the store)";
	if (ret == STORE_ERR_EXISTS)
		return "a mailbox of that name exists";
	if (ret == STORE_ERR_HAS_CHILDREN)
		return "the mailbox has inferior mailboxes";
	if (ret == STORE_ERR_LIMIT)
		return "limit reached";
	if (ret == STORE_ERR_IN_USE)
		return "the mailbox is open";
	if (ret == STORE_ERR_INVALID)
		return "not allowed";
	return db_strerror(ret);
}

bool mt_store_failed(struct mt_store *store)
{
	return atomic_load(&store->failed);
}

/* Berkeley DB's own error messages go to our log; on a full disk, where
 * every probe repeats them, as debug lines (store-space.c logs the state). */
static void store_errcall(const DB_ENV *dbenv, const char *prefix,
			  const char *msg)
{
	struct mt_store *store = dbenv->app_private;
	/* A replica's full copy (internal init) reads the head of every file
	 * in the home directory, the store's lock and reserve files too, and
	 * says so; they are not databases and are left alone. */
	bool not_a_db = strstr(msg, "fop_read_meta") != NULL &&
		(strstr(msg, "/" STORE_LOCK_FILE ":") != NULL ||
		 strstr(msg, "/" STORE_RESERVE_FILE ":") != NULL);
	if (not_a_db || (store != NULL && store_space_full(store)))
		mt_debug("store: berkeley-db: %s", msg);
	else
		mt_error("store: berkeley-db: %s", msg);
}

static void store_event(DB_ENV *dbenv, u_int32_t event, void *info)
{
	struct mt_store *store = dbenv->app_private;
	switch (event) {
	case DB_EVENT_PANIC:
		/* At open, the panic is the last user's, found on the way
		 * to recovery, which then makes a fresh environment. */
		if (store->opening)
			mt_warning("store: home=%s the environment was left "
				   "panicked: recovering", store->home);
		else if (!atomic_exchange(&store->failed, true))
			mt_error("store: home=%s Berkeley DB panic (DB_RUNRECOVERY): "
				 "the daemon must restart to run recovery",
				 store->home);
		break;
	case DB_EVENT_WRITE_FAILED:
		if (!store_space_full(store))
			mt_error("store: home=%s Berkeley DB write failed",
				 store->home);
		break;
	default:
		(void)store_repl_event(store, event, info);
		break;
	}
}

/* The last checkpoint's LSN, to tell whether a conditional one happened. */
int store_checkpoint(struct mt_store *store, unsigned int log_kbytes)
{
	bool written;
	int ret = mt_bdb_checkpoint(store->env, log_kbytes, &written);
	if (written)
		store_counter_add(&store->n_checkpoints, 1);
	else if (ret != 0 && !store_space_failed(store, ret, "checkpoint")) {
		(void)store_status_from_db(store, ret);
		mt_error("store: home=%s checkpoint failed: %s", store->home,
			 db_strerror(ret));
	}
	return ret;
}

static bool file_exists(const char *home, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", home, name);
	return access(path, F_OK) == 0;
}

/* One serving process per store: two daemons on one shard would each hand
 * out the same mailbox (the in-use table is per process). mailtierctl
 * (ADMIN mode) does not take the lock. */
static enum mt_store_status store_lock(struct mt_store *store, const char **error_r)
{
	int err = mt_bdb_lock_take(store->home, STORE_LOCK_FILE, &store->lock_fd);
	if (err == EWOULDBLOCK) {
		*error_r = store_error("store %s is in use by another "
				       "mailtier-popstore (%s/%s is locked)",
				       store->home, store->home, STORE_LOCK_FILE);
		return MT_STORE_IN_USE;
	}
	if (err != 0) {
		*error_r = store_error("store %s: %s/%s: %s", store->home, store->home,
				       STORE_LOCK_FILE, strerror(err));
		return err == ENOSPC ? MT_STORE_NO_SPACE : MT_STORE_INVALID;
	}
	return MT_STORE_OK;
}

static int env_open_recover(struct mt_store *store, u_int32_t flags)
{
	store->opening = true;
	int ret = store->env->open(store->env, store->home, flags, 0600);
	store->opening = false;
	if (ret == 0)
		atomic_store(&store->failed, false);
	return ret;
}

/* Every region page backed by allocated blocks (store-space.c). The daemon
 * refuses to run without that on a full disk; elsewhere (no fallocate
 * there, or mailtierctl, which exits soon) it is a warning. */
static enum mt_store_status env_regions_backed(struct mt_store *store,
					       const char **error_r)
{
	int ret = store_space_prealloc_regions(store, error_r);
	if (ret == 0)
		return MT_STORE_OK;
	if (store->set.mode == MT_STORE_MODE_SERVE &&
	    (ret == ENOSPC || ret == EDQUOT))
		return MT_STORE_NO_SPACE;
	mt_warning("store: home=%s %s: a full disk may crash this process",
		   store->home, *error_r);
	return MT_STORE_OK;
}

enum mt_store_status store_env_open(struct mt_store *store, const char **error_r)
{
	const struct mt_store_settings *set = &store->set;
	struct stat st;
	if (stat(store->home, &st) < 0) {
		if (errno != ENOENT || set->mode != MT_STORE_MODE_SERVE || !set->create) {
			*error_r = store_error("store %s: %s", store->home, strerror(errno));
			return MT_STORE_INVALID;
		}
		if (mkdir(store->home, 0700) < 0) {
			*error_r = store_error("store %s: mkdir: %s", store->home,
					       strerror(errno));
			return MT_STORE_INVALID;
		}
	} else if (!S_ISDIR(st.st_mode)) {
		*error_r = store_error("store %s: not a directory", store->home);
		return MT_STORE_INVALID;
	}
	if ((set->mode == MT_STORE_MODE_ADMIN || !set->create) &&
	    !file_exists(store->home, STORE_META_DB)) {
		*error_r = store_error("store %s: no store there (no %s)",
				       store->home, STORE_META_DB);
		return MT_STORE_INVALID;
	}
	if (set->mode == MT_STORE_MODE_SERVE) {
		enum mt_store_status status = store_lock(store, error_r);
		if (status != MT_STORE_OK)
			return status;
	} else if (store->admin_replicated && file_exists(store->home, STORE_LOCK_FILE)) {
		int fd;
		if (mt_bdb_lock_take(store->home, STORE_LOCK_FILE, &fd) == 0) {
			close(fd);	/* not held: the site's daemon is not running */
			*error_r = store_error("%s is a site of a replicated shard and its "
				"mailtier-popstore is not running: opening it here would "
				"recover it without replication. Start the site (it recovers "
				"and rejoins its group), then run this again", store->home);
			return MT_STORE_TEMPFAIL;
		}
	}

	DB_ENV *env;
	int ret = db_env_create(&env, 0);
	if (ret != 0) {
		*error_r = store_error("store %s: db_env_create: %s", store->home,
				       db_strerror(ret));
		return MT_STORE_TEMPFAIL;
	}
	store->env = env;
	env->app_private = store;
	env->set_errcall(env, store_errcall);
	(void)env->set_event_notify(env, store_event);

	uint64_t lg_bsize = set->log_file_size / 4;
	if (lg_bsize > LOG_BUFFER_MAX)
		lg_bsize = LOG_BUFFER_MAX;
	/* The most a log flush writes is the log buffer. */
	store->reserve_size = lg_bsize + RESERVE_SLACK;
	u_int32_t env_flags = DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
		DB_INIT_LOCK | DB_INIT_MPOOL | DB_THREAD | DB_RECOVER | DB_REGISTER;
	u_int32_t repl_flags = 0;
	enum mt_store_status repl_status = store_repl_configure(store, &repl_flags, error_r);
	if (repl_status != MT_STORE_OK)
		return repl_status;
	env_flags |= repl_flags;
	if ((ret = env->set_cachesize(env, (u_int32_t)(set->cache_size >> 30),
				      (u_int32_t)(set->cache_size & ((1u << 30) - 1)),
				      1)) != 0 ||
	    (ret = env->set_lk_detect(env, DB_LOCK_DEFAULT)) != 0 ||
	    (ret = env->set_lg_max(env, (u_int32_t)set->log_file_size)) != 0 ||
	    (ret = env->set_lg_bsize(env, (u_int32_t)lg_bsize)) != 0 ||
	    (store->repl == NULL &&
	     (ret = env->log_set_config(env, DB_LOG_AUTO_REMOVE, 1)) != 0) ||
	    (ret = env->set_lk_max_locks(env, LOCKS_MAX)) != 0 ||
	    (ret = env->set_lk_max_objects(env, LOCKS_MAX)) != 0 ||
	    (ret = env->set_lk_max_lockers(env, LOCKERS_MAX)) != 0 ||
	    (ret = env->set_tx_max(env, TXNS_MAX)) != 0 ||
	    (ret = env->set_flags(env, DB_REGION_INIT, 1)) != 0 ||
	    (ret = env_open_recover(store, env_flags)) != 0) {
		if (ret == DB_VERSION_MISMATCH) {
			*error_r = store_error("store %s: the environment was made by "
					       "another Berkeley DB version (this is %s)",
					       store->home, DB_VERSION_STRING);
			return MT_STORE_BAD_FORMAT;
		}
		*error_r = store_error("store %s: opening the environment: %s",
				       store->home, db_strerror(ret));
		return store_status_from_db(store, ret);
	}
	return env_regions_backed(store, error_r);
}

static int db_open_one(struct mt_store *store, DB_TXN *txn, DB **db_r,
		       const char *file, u_int32_t pagesize, u_int32_t flags)
{
	DB *db;
	int ret = db_create(&db, store->env, 0);
	if (ret != 0)
		return ret;
	if (pagesize != 0 && (ret = db->set_pagesize(db, pagesize)) != 0) {
		(void)db->close(db, 0);
		return ret;
	}
	if (txn == NULL)
		flags |= DB_AUTO_COMMIT;
	ret = db->open(db, txn, file, NULL, DB_BTREE, flags | DB_THREAD, 0600);
	if (ret != 0) {
		(void)db->close(db, 0);
		return ret;
	}
	*db_r = db;
	return 0;
}

static int dbs_open_all(struct mt_store *store, DB_TXN *txn, u_int32_t flags)
{
	int ret;
	if ((ret = db_open_one(store, txn, &store->meta, STORE_META_DB, 0, flags)) != 0 ||
	    (ret = db_open_one(store, txn, &store->mailboxes, STORE_MAILBOX_DB,
			       0, flags)) != 0 ||
	    (ret = db_open_one(store, txn, &store->messages, STORE_MESSAGE_DB,
			       0, flags)) != 0 ||
	    (ret = db_open_one(store, txn, &store->bodies, STORE_BODY_DB,
			       STORE_BODY_PAGESIZE, flags)) != 0 ||
	    (ret = db_open_one(store, txn, &store->purge, STORE_PURGE_DB,
			       0, flags)) != 0 ||
	    (ret = db_open_one(store, txn, &store->delivered, STORE_DELIVERED_DB,
			       0, flags)) != 0 ||
	    (ret = db_open_one(store, txn, &store->refs, STORE_REFS_DB,
			       0, flags)) != 0 ||
	    (ret = db_open_one(store, txn, &store->partial, STORE_PARTIAL_DB,
			       0, flags)) != 0 ||
	    (ret = db_open_one(store, txn, &store->imap, STORE_IMAP_DB,
			       0, flags)) != 0)
		return ret;
	return 0;
}

static void dbs_close_all(struct mt_store *store)
{
	DB **dbs[] = { &store->imap, &store->partial, &store->refs, &store->delivered,
		       &store->purge, &store->bodies, &store->messages,
		       &store->mailboxes, &store->meta };
	for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++) {
		if (*dbs[i] == NULL)
			continue;
		int ret = (*dbs[i])->close(*dbs[i], 0);
		if (ret != 0 && !atomic_load(&store->failed))
			mt_error("store: home=%s closing a database: %s",
				 store->home, db_strerror(ret));
		*dbs[i] = NULL;
	}
}

/* A new store: the databases and the format records in one transaction, so
 * a crash midway leaves no store rather than half of one. */
static enum mt_store_status store_create(struct mt_store *store,
					 const char **error_r)
{
	DB_TXN *txn;
	int ret = store->env->txn_begin(store->env, NULL, &txn, 0);
	if (ret == 0) {
		ret = dbs_open_all(store, txn, DB_CREATE | DB_EXCL);
		if (ret == 0)
			ret = store_records_format_init(store, txn);
		if (ret == 0)
			ret = txn->commit(txn, 0);
		else {
			(void)txn->abort(txn);
			dbs_close_all(store);
		}
	}
	if (ret == EEXIST) {
		*error_r = store_error("store %s: database files exist without %s: "
				       "not creating a store over them",
				       store->home, STORE_META_DB);
		return MT_STORE_BAD_FORMAT;
	}
	if (ret != 0) {
		*error_r = store_error("store %s: creating the store: %s",
				       store->home, db_strerror(ret));
		return store_status_from_db(store, ret);
	}
	mt_info("store: home=%s created format_version=%u chunk_size=%u",
		store->home, MT_STORE_FORMAT_VERSION, store->chunk_size);
	return MT_STORE_OK;
}

/* The databases versions 2 to 5 added, each with the version that has it. */
struct added_db {
	DB **db;
	const char *file;
	uint32_t since;
};
#define ADDED_DBS 5

static size_t added_dbs(struct mt_store *store, struct added_db *out)
{
	const struct added_db all[ADDED_DBS] = {
		{ &store->purge, STORE_PURGE_DB, 2 },
		{ &store->delivered, STORE_DELIVERED_DB, 3 },
		{ &store->refs, STORE_REFS_DB, 4 },
		{ &store->partial, STORE_PARTIAL_DB, 4 },
		{ &store->imap, STORE_IMAP_DB, 5 },
	};
	memcpy(out, all, sizeof(all));
	return ADDED_DBS;
}

/* Version 1 to 4 → 5 (SERVE mode): the databases the old version lacks
 * (purge.db before 2, delivered.db before 3, refs.db and partial.db before
 * 4, imap.db before 5) created and the version record rewritten in one
 * transaction. */
static enum mt_store_status store_upgrade(struct mt_store *store,
					  const char **error_r)
{
	const uint32_t from = store->format_version;
	struct added_db made[ADDED_DBS];
	const size_t n = added_dbs(store, made);
	char created[128] = "";
	DB_TXN *txn = NULL;
	int ret = store->env->txn_begin(store->env, NULL, &txn, 0);
	for (size_t i = 0; ret == 0 && i < n; i++) {
		if (from >= made[i].since)
			continue;
		ret = db_open_one(store, txn, made[i].db, made[i].file, 0, DB_CREATE);
		size_t len = strlen(created);
		snprintf(created + len, sizeof(created) - len, " %s", made[i].file);
	}
	if (ret == 0)
		ret = store_records_format_set(store, txn, MT_STORE_FORMAT_VERSION);
	if (ret == 0)
		ret = txn->commit(txn, 0);
	else if (txn != NULL) {
		(void)txn->abort(txn);
		for (size_t i = 0; i < n; i++) {
			if (from < made[i].since && *made[i].db != NULL) {
				(void)(*made[i].db)->close(*made[i].db, 0);
				*made[i].db = NULL;
			}
		}
	}
	if (ret != 0) {
		*error_r = store_error("store %s: upgrading format version %u to "
				       "%u: %s", store->home, from,
				       MT_STORE_FORMAT_VERSION, db_strerror(ret));
		return store_status_from_db(store, ret);
	}
	mt_info("store: home=%s upgraded format_version=%u to format_version=%u "
		"(created:%s)", store->home, from, MT_STORE_FORMAT_VERSION, created);
	return MT_STORE_OK;
}

enum mt_store_status store_env_dbs_open(struct mt_store *store,
					const char **error_r)
{
	if (!file_exists(store->home, STORE_META_DB))
		return MT_STORE_OK;	/* a new store: store_env_dbs_make() */
	/* The format record first, before trusting the other files. */
	int ret = db_open_one(store, NULL, &store->meta, STORE_META_DB, 0, 0);
	if (ret != 0) {
		*error_r = store_error("store %s: opening %s: %s", store->home,
				       STORE_META_DB, db_strerror(ret));
		return ret == EINVAL ? MT_STORE_BAD_FORMAT :
			store_status_from_db(store, ret);
	}
	enum mt_store_status status = store_records_format_check(store, error_r);
	if (status != MT_STORE_OK)
		return status;
	DB_TXN *none = NULL;
	if ((ret = db_open_one(store, none, &store->mailboxes, STORE_MAILBOX_DB, 0, 0)) != 0 ||
	    (ret = db_open_one(store, none, &store->messages, STORE_MESSAGE_DB, 0, 0)) != 0 ||
	    (ret = db_open_one(store, none, &store->bodies, STORE_BODY_DB, 0, 0)) != 0) {
		*error_r = store_error("store %s: opening the databases: %s "
				       "(damaged store?)", store->home,
				       db_strerror(ret));
		return ret == ENOENT ? MT_STORE_BAD_FORMAT :
			store_status_from_db(store, ret);
	}
	struct added_db newer[ADDED_DBS];
	for (size_t i = 0, n = added_dbs(store, newer); i < n; i++) {
		if (store->format_version < newer[i].since)
			continue;
		if ((ret = db_open_one(store, none, newer[i].db, newer[i].file,
				       0, 0)) != 0) {
			*error_r = store_error("store %s: opening %s: %s (damaged "
					       "store?)", store->home, newer[i].file,
					       db_strerror(ret));
			return ret == ENOENT ? MT_STORE_BAD_FORMAT :
				store_status_from_db(store, ret);
		}
	}
	return MT_STORE_OK;
}

enum mt_store_status store_env_dbs_make(struct mt_store *store,
					const char **error_r)
{
	if (store->meta == NULL)
		return store_create(store, error_r);
	if (store->format_version < MT_STORE_FORMAT_VERSION)
		return store_upgrade(store, error_r);
	return MT_STORE_OK;
}

/* After a clean close, remove the region files unless another process
 * (mailtierctl, the daemon) is attached: the next open then makes them
 * afresh with its own settings, so a changed db_cache_size takes effect at
 * a plain restart and not only after a recovery. */
static void env_remove_regions(const char *home)
{
	DB_ENV *env;
	if (db_env_create(&env, 0) != 0)
		return;
	env->set_errcall(env, NULL);
	(void)env->remove(env, home, 0);	/* EBUSY: someone is attached */
}

/* A panicked environment refuses every call, its close included, so its
 * handles cannot be freed; they are kept here (reachable, not leaked) until
 * the process exits, which after a panic it must. So is an environment
 * whose last checkpoint failed (a full disk): closing it would drop the
 * dirty pages and unregister the process, and the next open would then
 * see a clean environment and skip the recovery that redoes those pages
 * from the log. Left open, it is recovered when this process is gone (or
 * joined, pages and all, by an open in this process). So are a replicated
 * site's databases when it is not master (store_repl_keeps_handles): its
 * daemon exits to rejoin as a replica. */
static DB_ENV *abandoned_envs[8];

/* The events of an environment left open: its replication threads run on
 * until the process exits, and the store is gone. */
static void abandoned_event(DB_ENV *dbenv, u_int32_t event, void *info)
{
	(void)dbenv;
	(void)event;
	(void)info;
}

void store_env_close(struct mt_store *store)
{
	if (store->env != NULL && store->unwritten && !atomic_load(&store->failed))
		mt_warning("store: home=%s closed with pages not written (disk "
			   "full?): the next start runs recovery", store->home);
	bool keep = store->env != NULL && !atomic_load(&store->failed) &&
		store_repl_keeps_handles(store);
	if (keep)
		mt_info("store: home=%s no longer master: the databases stay open "
			"until the process exits, and the restart's recovery closes "
			"them", store->home);
	if (store->env != NULL && (atomic_load(&store->failed) || store->unwritten || keep)) {
		(void)store->env->set_event_notify(store->env, abandoned_event);
		store->env->app_private = NULL;
		for (size_t i = 0; i < sizeof(abandoned_envs) / sizeof(abandoned_envs[0]); i++) {
			if (abandoned_envs[i] == NULL) {
				abandoned_envs[i] = store->env;
				break;
			}
		}
		store->env = NULL;
		store->meta = store->mailboxes = store->messages = store->bodies = NULL;
		store->purge = store->delivered = store->refs = store->partial = NULL;
		store->imap = NULL;
	}
	dbs_close_all(store);
	store_repl_stop(store);
	if (store->env != NULL) {
		int ret = store->env->close(store->env, 0);
		if (ret != 0 && !atomic_load(&store->failed))
			mt_error("store: home=%s closing the environment: %s",
				 store->home, db_strerror(ret));
		if (ret == 0 && !atomic_load(&store->failed))
			env_remove_regions(store->home);
		store->env = NULL;
	}
	store_repl_free(store);
	if (store->lock_fd >= 0)
		close(store->lock_fd);	/* releases the flock */
	store->lock_fd = -1;
}
