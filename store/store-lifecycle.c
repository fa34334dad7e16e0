/* store-lifecycle.c — the store's lifecycle, in one place:
 *
 *   open ──► join ──► become master ──► serve ──► close
 *
 *   open     the settings' defaults; the environment with recovery, and the
 *            databases of an existing store with their format checked
 *            (store-env.c). No writes. ADMIN mode (mailtierctl) stops here.
 *   join     joining the shard's replication group (store-repl.c): one
 *            site is its own group, master at once; a replicated site
 *            starts repmgr and the checkpointer (log retention, status)
 *            here, and goes on only once elected — at once, or later on
 *            the replication notifier thread (promote), while the caller
 *            already has the store and refuses sessions
 *            (mt_store_serving). A replica opens no database.
 *   master   what may only be done as master, since a client's writes are
 *            rolled back (HA.md 5.3): a new store's databases or an older
 *            format's upgrade (store-env.c), the sweep of half-written
 *            bodies and the next body id (store-chunks.c), the purge
 *            backlog's count (store-purge.c), the space reserve
 *            (store-space.c).
 *   serve    the threads: the group commit (store-commit.c), the readers
 *            (store-async.c), the purger, and the checkpointer, whose
 *            second expires old delivery ids (store-dedupe.c) and probes a
 *            full disk (store-space.c).
 *   close    the threads stopped once what is queued is done and flushed,
 *            a last checkpoint, the environment closed (store-env.c).
 * Demotion (a master that becomes a client): mt_store_demoted() says so
 * and the daemon closes the store and exits, to rejoin as a replica
 * (HA.md 5.3); close stops the notifier first, so no promotion runs
 * during it, and leaves the databases of a site that is no longer master
 * open for the restart's recovery (store_repl_keeps_handles).
 *
 * Trust boundary: the settings come from the administrator's config (the
 * daemon's, or mailtierctl's command line).
 *
 * Guarantees: no request runs before serve (the caller gets the store only
 * then), so the in-memory state computed in master is complete before any
 * delivery or expunge; an open that fails at any phase undoes the ones
 * before it. */
#include "store-req.h"
#include "alloc.h"
#include "log.h"

#include <stdlib.h>
#include <unistd.h>

#define DEFAULT_CACHE_SIZE (64ull << 20)
#define DEFAULT_CHECKPOINT_SECS 60u
#define DEFAULT_LOG_FILE_SIZE (64ull << 20)
#define CHECKPOINT_LOG_KBYTES (256u * 1024)

/* The store with set's defaults filled in and its locks made; NULL (and
 * *error_r) for settings out of bounds. */
static struct mt_store *store_new(const struct mt_store_settings *set,
				  const char **error_r)
{
	if (set->home == NULL || set->home[0] == '\0') {
		*error_r = store_error("store: no home directory (db_home)");
		return NULL;
	}
	struct mt_store *store = mt_xcalloc(1, sizeof(*store));
	store->set = *set;
	store->home = mt_xstrdup(set->home);
	store->set.home = store->home;
	store->lock_fd = -1;
	store->body_fd = -1;
	if (store->set.cache_size == 0)
		store->set.cache_size = DEFAULT_CACHE_SIZE;
	if (store->set.checkpoint_secs == 0)
		store->set.checkpoint_secs = DEFAULT_CHECKPOINT_SECS;
	if (store->set.commit_threads == 0)
		store->set.commit_threads = 1;
	if (store->set.reader_threads == 0)
		store->set.reader_threads = 2;
	if (store->set.log_file_size == 0)
		store->set.log_file_size = DEFAULT_LOG_FILE_SIZE;
	if (store->set.log_file_size < (1u << 20) ||
	    store->set.log_file_size > (1ull << 31)) {
		*error_r = store_error("store %s: log file size must be 1M..2G",
				       store->home);
		free(store->home);
		free(store);
		return NULL;
	}
	if (set->replication != NULL && set->mode == MT_STORE_MODE_SERVE) {
		const struct mt_store_replication *r = set->replication;
		store->repl_set = *r;
		store->repl_set.listen = mt_xstrdup(r->listen != NULL ? r->listen : "");
		store->repl_set.name = mt_xstrdup(r->name != NULL ? r->name : "store");
		store->repl_sites = mt_xcalloc(r->site_count + 1, sizeof(char *));
		for (size_t i = 0; i < r->site_count; i++)
			store->repl_sites[i] = mt_xstrdup(r->sites[i]);
		store->repl_set.sites = (const char *const *)store->repl_sites;
		store->set.replication = &store->repl_set;
	} else {
		/* A reader needs no replication (HA.md 2.5): it only must not
		 * recover a site whose daemon is gone (store_env_open). */
		store->admin_replicated = set->replication != NULL;
		store->set.replication = NULL;
	}
	store_purge_init(store);
	pthread_mutex_init(&store->repl_lock, NULL);
	atomic_init(&store->repl_state, STORE_REPL_JOINING);
	pthread_mutex_init(&store->space_lock, NULL);
	pthread_rwlock_init(&store->io_lock, NULL);
	store_mailbox_table_init(store);
	return store;
}

static void store_free(struct mt_store *store)
{
	store_env_close(store);
	store_purge_deinit(store);
	pthread_mutex_destroy(&store->repl_lock);
	if (store->repl_sites != NULL) {
		for (size_t i = 0; i < store->repl_set.site_count; i++)
			free(store->repl_sites[i]);
		free(store->repl_sites);
		free((char *)store->repl_set.listen);
		free((char *)store->repl_set.name);
	}
	pthread_mutex_destroy(&store->space_lock);
	pthread_rwlock_destroy(&store->io_lock);
	store_mailbox_table_deinit(store);
	if (store->body_fd >= 0)
		close(store->body_fd);
	free(store->home);
	free(store);
}

/* Open: the environment (recovery) and what databases exist; no writes.
 * A replicated site opens its databases only once it is master. */
static enum mt_store_status phase_open(struct mt_store *store,
				       const char **error_r)
{
	enum mt_store_status status = store_env_open(store, error_r);
	if (status == MT_STORE_OK && store->repl == NULL)
		status = store_env_dbs_open(store, error_r);
	return status;
}

static enum mt_store_status checkpointer_start(struct mt_store *store,
					       const char **error_r);

/* Join the shard's group: one site is its own group, master at once. */
static enum mt_store_status phase_join(struct mt_store *store,
				       const char **error_r)
{
	if (store->repl == NULL)
		return MT_STORE_OK;
	enum mt_store_status status = checkpointer_start(store, error_r);
	if (status == MT_STORE_OK)
		status = store_repl_join(store, error_r);
	return status;
}

/* Become master: the open-time writes and the state computed from the
 * databases, before any request. */
static enum mt_store_status phase_master(struct mt_store *store,
					 const char **error_r)
{
	enum mt_store_status status = MT_STORE_OK;
	if (store->repl != NULL)
		status = store_env_dbs_open(store, error_r);
	if (status == MT_STORE_OK)
		status = store_env_dbs_make(store, error_r);
	/* Before any delivery can begin: what a crash left half-written. */
	if (status == MT_STORE_OK)
		status = store_chunks_open(store, error_r);
	if (status != MT_STORE_OK)
		return status;
	store_purge_count(store);
	store_space_open(store);
	return MT_STORE_OK;
}

/* The checkpointer's second, before its trickle and checkpoint: the
 * reserve's headroom, dedupe expiry; on a full disk the probe for space
 * instead of a checkpoint (store-space.c); after a panic nothing. */
static bool checkpoint_tick(void *context)
{
	struct mt_store *store = context;
	if (atomic_load(&store->failed))
		return false;
	if (store->repl != NULL) {
		store_repl_tick(store);
		if (atomic_load(&store->repl_state) != STORE_REPL_SERVING)
			return false;	/* a replica checkpoints with its master */
	}
	if (!store_space_full(store))
		(void)store_space_headroom(store, false);
	if (store_space_full(store)) {
		store_space_probe(store);
		return false;
	}
	store_dedupe_expire(store, &store->expire_secs);
	return true;
}

static bool checkpointed(void *context, int ret, bool written)
{
	struct mt_store *store = context;
	if (written)
		store_counter_add(&store->n_checkpoints, 1);
	if (ret == 0 || store_space_failed(store, ret, "checkpoint"))
		return true;
	(void)store_status_from_db(store, ret);
	mt_error("store: home=%s checkpoint failed: %s", store->home, db_strerror(ret));
	return true;
}

/* The checkpointer (in join for a replicated site, which needs its
 * second on every role; else in serve). */
static enum mt_store_status checkpointer_start(struct mt_store *store,
					       const char **error_r)
{
	if (store->checkpointer != NULL)
		return MT_STORE_OK;
	const struct mt_bdb_checkpoint_settings ckp = {
		.name = "store", .interval_secs = store->set.checkpoint_secs,
		.log_kbytes = CHECKPOINT_LOG_KBYTES,
		.tick = checkpoint_tick, .checkpointed = checkpointed, .context = store,
	};
	const char *error;
	store->checkpointer = mt_bdb_checkpointer_start(store->env, &ckp, &error);
	if (store->checkpointer == NULL) {
		*error_r = store_error("store %s: %s", store->home, error);
		return MT_STORE_TEMPFAIL;
	}
	return MT_STORE_OK;
}

/* Serve: the threads that run requests and keep the store. */
static enum mt_store_status phase_serve(struct mt_store *store,
					const char **error_r)
{
	store_repl_serve(store);
	if (!store_commit_start(store, error_r) || !store_readers_start(store, error_r) ||
	    !store_purge_start(store, error_r))
		return MT_STORE_TEMPFAIL;
	return checkpointer_start(store, error_r);
}

/* A replicated site elected master (on the notifier thread). */
static enum mt_store_status promote(struct mt_store *store, const char **error_r)
{
	enum mt_store_status status = phase_master(store, error_r);
	if (status == MT_STORE_OK)
		status = phase_serve(store, error_r);
	return status;
}

/* The end of serving (any of its threads started, or none). */
static void serve_stop(struct mt_store *store)
{
	/* The purger after its batch in progress (the rest waits for the next
	 * open); then the writers: every queued delivery is finished and
	 * flushed. */
	store_purge_stop(store);
	store_commit_stop(store);
	store_repl_serve_stop(store);
	store_readers_stop(store);
	mt_bdb_checkpointer_stop(&store->checkpointer);
}

enum mt_store_status mt_store_open(const struct mt_store_settings *set,
				   struct mt_store **store_r,
				   const char **error_r)
{
	*store_r = NULL;
	struct mt_store *store = store_new(set, error_r);
	if (store == NULL)
		return MT_STORE_INVALID;
	store->promote = promote;
	enum mt_store_status status = phase_open(store, error_r);
	if (set->mode == MT_STORE_MODE_SERVE) {
		if (status == MT_STORE_OK)
			status = phase_join(store, error_r);
		if (status == MT_STORE_OK && store->repl == NULL)
			status = promote(store, error_r);
	}
	if (status != MT_STORE_OK) {
		store_repl_stop(store);
		serve_stop(store);
		store_free(store);
		return status;
	}
	*store_r = store;
	return MT_STORE_OK;
}

void mt_store_close(struct mt_store **store_p)
{
	struct mt_store *store = *store_p;
	if (store == NULL)
		return;
	*store_p = NULL;
	store_repl_stop(store);
	serve_stop(store);
	if (store->open_count > 0)
		mt_warning("store: home=%s closed with %u mailboxes open",
			   store->home, store->open_count);
	if (store->set.mode == MT_STORE_MODE_SERVE && !atomic_load(&store->failed) &&
	    store->repl != NULL && store->env != NULL)
		/* A master sends log records before it flushes them, and a
		 * close writes no log buffer of a shared environment
		 * (log.c __log_env_refresh): without this flush a site that
		 * restarts (a demoted master) would come back with a shorter
		 * log than the replicas that applied its last records. */
		(void)store->env->log_flush(store->env, NULL);
	if (store->set.mode == MT_STORE_MODE_SERVE && !atomic_load(&store->failed)) {
		if (store->repl == NULL ||
		    atomic_load(&store->repl_state) == STORE_REPL_SERVING)
			store->unwritten = store_checkpoint(store, 0) != 0;
		else if (store->env != NULL)
			/* A replica's checkpoint is its master's (a call of
			 * its own returns at once): its pages written, so the
			 * files are current for a reader (mailtierctl). */
			(void)store->env->memp_sync(store->env, NULL);
	}
	store_free(store);
}
