/* store-repl.c — one site of a shard's replication group (HA.md
 * 5.2-5.3), on lib-bdb/bdb-repl.h: the group from the settings, repmgr's
 * configuration before the environment's open, the join, what a role
 * change does to the store, whether it takes sessions, the answers that
 * rest on commits the replicas did not acknowledge, and the removal of
 * log files past their retention. When each runs is store-lifecycle.c's.
 *
 *   joining ──► replica ──► promoting ──► serving ──► demoted
 *      └──────────────────────►┘  (the store's phases    (closed by the
 *                                  after join, on the     daemon: exit 75)
 *                                  notifier thread)
 *
 * A replica opens no database and writes nothing (a client's writes are
 * rolled back, and its handles die at a rollback or a full copy: HA.md
 * 5.3); it answers no session. When it is elected, store->promote (the
 * lifecycle's master and serve phases) runs on bdb-repl's notifier thread
 * and the store serves once that is done. A master that stops being one
 * (a DUPMASTER, an election it lost after a partition) is demoted: the
 * daemon closes the store and exits, and its restart rejoins as a replica
 * with recovery, the path HA.md chooses over reopening handles in place.
 *
 * Durability (HA.md 5.2, its second phase): commits wait for no
 * acknowledgement (DB_REPMGR_ACKS_NONE); the group commit, after each
 * batch's log flush, waits until a quorum of replicas (one of two) has
 * flushed its log through the end of that batch, in the same generation
 * (lib-bdb/bdb-repl-ack.h). A batch without that within
 * replication_ack_timeout completes MT_STORE_TEMPFAIL ("not replicated":
 * LMTP 451, IMAP NO, POP3 -ERR) — every request of it, those that wrote
 * nothing too, so that no "already delivered" or no-op success rests on a
 * commit only this disk holds (the trap of HA.md 5.2, closed because every
 * answer waits for the end of the log at its flush). repmgr's own
 * per-commit wait held each transaction's write locks across a round trip
 * and a replica's fsync (0.30 of single-site throughput, measured).
 *
 * Trust boundary: the sites come from the operator's configuration
 * (checked by mt_bdb_repl_group_parse); events from Berkeley DB. */
#include "store-env.h"
#include "alloc.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* A first join waits this long for a master and a quorum (repmgr refuses
 * it until then); an existing member's restart does not wait. */
#define JOIN_MS 60000u
/* The open waits this long for a role, so a lone creator serves at once. */
#define ROLE_WAIT_MS 5000u
#define ROLE_POLL_NS 10000000L
/* Log files past their retention are looked for this often. */
#define ARCHIVE_EVERY_SECS 60
#define DEFAULT_RETENTION_SECS (6u * 3600u)
#define DEFAULT_RETENTION_BYTES (2ull << 30)

static const char *repl_name(const struct mt_store *store)
{
	const struct mt_store_replication *r = store->set.replication;
	return r != NULL && r->name != NULL ? r->name : "store";
}

static void info_update(struct mt_store *store, const struct mt_bdb_repl_status *st)
{
	pthread_mutex_lock(&store->repl_lock);
	struct mt_store_repl_info *info = &store->repl_info;
	info->replicated = true;
	info->role = st->role == MT_BDB_REPL_ROLE_MASTER ? "master" :
		st->role == MT_BDB_REPL_ROLE_CLIENT ? "replica" : "none";
	snprintf(info->master, sizeof(info->master), "%s", st->master);
	info->sites = st->sites;
	info->connected = st->connected;
	info->generation = st->generation;
	info->startup_done = st->startup_done;
	info->elections = st->elections;
	info->master_changes = st->master_changes;
	info->perm_failed = st->perm_failed;
	info->internal_inits = st->internal_inits;
	pthread_mutex_unlock(&store->repl_lock);
}

/* Elected: the lifecycle's master and serve phases, once (the notifier
 * and the join may both get here). */
static void promote(struct mt_store *store)
{
	const char *name = repl_name(store);
	int expected = atomic_load(&store->repl_state);
	if ((expected != STORE_REPL_JOINING && expected != STORE_REPL_REPLICA) ||
	    !atomic_compare_exchange_strong(&store->repl_state, &expected,
					    STORE_REPL_PROMOTING))
		return;
	mt_info("%s: home=%s elected master: opening the store", name, store->home);
	/* A master's commits are made durable by its own group commit. */
	(void)store->env->set_flags(store->env, DB_TXN_NOSYNC, 0);
	const char *error = "";
	enum mt_store_status status = store->promote(store, &error);
	if (status != MT_STORE_OK) {
		mt_error("%s: home=%s becoming master failed (%s): %s", name,
			 store->home, mt_store_status_name(status), error);
		atomic_store(&store->repl_state, STORE_REPL_FAILED);
		return;
	}
	atomic_store(&store->repl_state, STORE_REPL_SERVING);
	mt_info("%s: home=%s master: serving", name, store->home);
}

/* On the notifier thread: what a role change does to the store. */
static void role_changed(void *context, const struct mt_bdb_repl_status *before,
			 const struct mt_bdb_repl_status *now)
{
	struct mt_store *store = context;
	const char *name = repl_name(store);
	info_update(store, now);
	int state = atomic_load(&store->repl_state);
	if (now->role == MT_BDB_REPL_ROLE_MASTER &&
	    (state == STORE_REPL_JOINING || state == STORE_REPL_REPLICA)) {
		/* A creator is master inside repmgr_start, which holds the
		 * environment until it returns: the join promotes then. */
		pthread_mutex_lock(&store->repl_lock);
		bool started = store->repl_started;
		store->repl_promote_pending = !started;
		pthread_mutex_unlock(&store->repl_lock);
		if (started)
			promote(store);
		return;
	}
	if ((state == STORE_REPL_SERVING || state == STORE_REPL_PROMOTING) &&
	    (now->role != MT_BDB_REPL_ROLE_MASTER || now->demotions > before->demotions)) {
		atomic_store(&store->repl_state, STORE_REPL_DEMOTED);
		mt_bdb_repl_unelectable(store->repl);
		mt_warning("%s: home=%s no longer master (role %s, master %s): closing, to "
			   "restart as a replica", name, store->home,
			   mt_bdb_repl_role_name(now->role),
			   now->master[0] != '\0' ? now->master : "none");
		return;
	}
	if (now->role == MT_BDB_REPL_ROLE_CLIENT && state != STORE_REPL_SERVING &&
	    state != STORE_REPL_PROMOTING)
		/* A replica flushes its log when the master asks, once per
		 * batch (bdb-repl-ack.c), not at each commit it applies. */
		(void)store->env->set_flags(store->env, DB_TXN_NOSYNC, 1);
	if (now->role == MT_BDB_REPL_ROLE_CLIENT && state == STORE_REPL_JOINING) {
		atomic_store(&store->repl_state, STORE_REPL_REPLICA);
		mt_info("%s: home=%s replica, master %s", name, store->home,
			now->master[0] != '\0' ? now->master : "not known yet");
	}
}

enum mt_store_status store_repl_configure(struct mt_store *store, u_int32_t *flags_r,
					  const char **error_r)
{
	const struct mt_store_replication *r = store->set.replication;
	*flags_r = 0;
	if (r == NULL)
		return MT_STORE_OK;
	const char *error;
	struct mt_bdb_repl_group group;
	if (!mt_bdb_repl_group_parse(r->sites, r->site_count, r->listen, &group, &error)) {
		*error_r = store_error("store %s: replication: %s", store->home, error);
		return MT_STORE_INVALID;
	}
	const struct mt_bdb_repl_settings set = {
		.name = repl_name(store), .group = &group, .priority = r->priority,
		.creator = r->create_group, .ack_timeout_ms = r->ack_timeout_ms,
		.batched_acks = true, .role_changed = role_changed, .context = store,
	};
	store->repl = mt_bdb_repl_configure(store->env, &set, &error);
	mt_bdb_repl_group_free(&group);
	if (store->repl == NULL) {
		*error_r = store_error("store %s: replication: %s", store->home, error);
		return MT_STORE_INVALID;
	}
	pthread_mutex_lock(&store->repl_lock);
	store->repl_info.replicated = true;
	store->repl_info.role = "none";
	store->repl_info.sites = (unsigned int)r->site_count;
	snprintf(store->repl_info.local, sizeof(store->repl_info.local), "%s", r->listen);
	pthread_mutex_unlock(&store->repl_lock);
	*flags_r = MT_BDB_REPL_ENV_FLAGS;
	return MT_STORE_OK;
}

bool store_repl_event(struct mt_store *store, u_int32_t event, void *info)
{
	return store->repl != NULL && mt_bdb_repl_event(store->repl, event, info);
}

enum mt_store_status store_repl_join(struct mt_store *store, const char **error_r)
{
	const char *error;
	if (!mt_bdb_repl_start(store->repl, JOIN_MS, &error)) {
		*error_r = store_error("store %s: %s", store->home, error);
		return MT_STORE_TEMPFAIL;
	}
	pthread_mutex_lock(&store->repl_lock);
	store->repl_started = true;
	bool pending = store->repl_promote_pending;
	pthread_mutex_unlock(&store->repl_lock);
	if (pending)
		promote(store);
	struct timespec pause = { 0, ROLE_POLL_NS };
	for (unsigned int waited = 0; waited < ROLE_WAIT_MS; waited += ROLE_POLL_NS / 1000000) {
		int state = atomic_load(&store->repl_state);
		if (state != STORE_REPL_JOINING && state != STORE_REPL_PROMOTING)
			break;
		nanosleep(&pause, NULL);
	}
	store_repl_tick(store);
	return MT_STORE_OK;
}

void store_repl_tick(struct mt_store *store)
{
	if (store->repl == NULL)
		return;
	struct mt_bdb_repl_status st;
	mt_bdb_repl_status(store->repl, &st);
	info_update(store, &st);
	/* A connection repmgr made or took since the last second (the
	 * notifier tunes them at connection events too): a scan of this
	 * process's descriptors only when the count changed. */
	DB_LOG_STAT *ls = NULL;
	if (store->env->log_stat(store->env, &ls, 0) == 0) {
		uint64_t position = (uint64_t)(ls->st_cur_file > 0 ? ls->st_cur_file - 1 : 0) *
			store->set.log_file_size + ls->st_cur_offset;
		pthread_mutex_lock(&store->repl_lock);
		store->repl_info.log_position = position;
		pthread_mutex_unlock(&store->repl_lock);
	}
	free(ls);
	if (st.connected != store->repl_connected_seen) {
		store->repl_connected_seen = st.connected;
		mt_bdb_repl_sockets_nodelay(store->repl);
	}
	time_t now = time(NULL);
	if (now - store->repl_archived < ARCHIVE_EVERY_SECS)
		return;
	store->repl_archived = now;
	const struct mt_store_replication *r = store->set.replication;
	uint64_t secs = r->log_retention_secs != 0 ? r->log_retention_secs :
		DEFAULT_RETENTION_SECS;
	uint64_t bytes = r->log_retention_bytes != 0 ? r->log_retention_bytes :
		DEFAULT_RETENTION_BYTES;
	unsigned int removed = 0;
	const char *error;
	int ret = mt_bdb_repl_archive_logs(store->env, secs, bytes, &removed, &error);
	if (ret != 0)
		mt_debug("%s: home=%s log removal: %s", repl_name(store), store->home, error);
	if (removed > 0) {
		store_counter_add(&store->n_log_removed, removed);
		mt_info("%s: home=%s removed %u log files past their retention",
			repl_name(store), store->home, removed);
	}
	char **logs = NULL;
	struct stat oldest;
	if (store->env->log_archive(store->env, &logs, DB_ARCH_ABS | DB_ARCH_LOG) == 0 &&
	    logs != NULL && logs[0] != NULL && stat(logs[0], &oldest) == 0)
		atomic_store(&store->log_oldest_mtime, (uint64_t)oldest.st_mtime);
	free(logs);
}

void mt_store_observe_ack_latency(struct mt_store *store, struct mt_series *histogram)
{
	atomic_store(&store->ack_latency, histogram);
}

void store_repl_stop(struct mt_store *store)
{
	if (store->repl != NULL)
		mt_bdb_repl_stop(store->repl);
}

/* A site's databases are opened as master, which logs their file ids. A
 * client's close logs nothing and frees those ids in the environment, so
 * the next file this environment opens as master (repmgr's own system
 * database when the site is elected again before it exits, seen after a
 * partition healed) takes an id the log still gives to another file, and a
 * later rollback or a replica's apply across that point fails: Berkeley DB
 * panicked with ENOENT in its backward pass, or EINVAL on a replica,
 * every restart after. Left open, the handles die with the process and the
 * restart's recovery closes them in the log (RCLOSE), as after kill -9. */
bool store_repl_keeps_handles(struct mt_store *store)
{
	return store->repl != NULL && store->meta != NULL &&
		!mt_bdb_repl_is_master(store->repl);
}

void store_repl_free(struct mt_store *store)
{
	mt_bdb_repl_free(&store->repl);
}

void store_repl_serve(struct mt_store *store)
{
	if (store->repl != NULL && store->ack == NULL)
		store->ack = mt_bdb_repl_ack_new(store->env,
						 (unsigned int)store->set.replication->site_count,
						 repl_name(store));
}

void store_repl_serve_stop(struct mt_store *store)
{
	mt_bdb_repl_ack_free(&store->ack);
}

int store_repl_replicate(void *context, const DB_LSN *end)
{
	struct mt_store *store = context;
	const struct mt_store_replication *r = store->set.replication;
	unsigned int timeout = r->ack_timeout_ms != 0 ? r->ack_timeout_ms :
		MT_BDB_REPL_ACK_TIMEOUT_MS;
	uint64_t start = mt_clock_us();
	int ret = mt_bdb_repl_ack_wait(store->ack, end, timeout);
	struct mt_series *latency = atomic_load(&store->ack_latency);
	if (latency != NULL)
		mt_series_observe(latency, (double)(mt_clock_us() - start) / 1e6);
	if (ret != 0) {
		store_counter_add(&store->n_unreplicated, 1);
		if (!atomic_exchange(&store->unreplicated, true))
			mt_warning("%s: home=%s the replicas did not acknowledge a commit "
				   "within %u ms: temporary failures until they do",
				   repl_name(store), store->home, timeout);
	} else if (atomic_exchange(&store->unreplicated, false))
		mt_info("%s: home=%s commits are acknowledged again", repl_name(store),
			store->home);
	return ret;
}

bool mt_store_serving(struct mt_store *store, char *why, size_t size)
{
	if (store->repl == NULL)
		return true;
	int state = atomic_load(&store->repl_state);
	pthread_mutex_lock(&store->repl_lock);
	unsigned int sites = store->repl_info.sites, connected = store->repl_info.connected;
	char master[sizeof(store->repl_info.master)];
	memcpy(master, store->repl_info.master, sizeof(master));
	pthread_mutex_unlock(&store->repl_lock);
	switch (state) {
	case STORE_REPL_SERVING:
		if (connected >= sites / 2)
			return true;
		snprintf(why, size, "master without a quorum (%u of %u sites connected)",
			 connected + 1, sites);
		return false;
	case STORE_REPL_JOINING:
	case STORE_REPL_REPLICA:
		if (master[0] != '\0')
			snprintf(why, size, "replica, master is %s", master);
		else
			snprintf(why, size, "replica, no master yet");
		return false;
	case STORE_REPL_PROMOTING:
		snprintf(why, size, "becoming master");
		return false;
	default:
		snprintf(why, size, "no longer master, restarting");
		return false;
	}
}

bool mt_store_demoted(struct mt_store *store)
{
	return store_repl_demoted(store);
}

void mt_store_repl_info_get(struct mt_store *store, struct mt_store_repl_info *info_r)
{
	pthread_mutex_lock(&store->repl_lock);
	*info_r = store->repl_info;
	pthread_mutex_unlock(&store->repl_lock);
	if (!info_r->replicated)
		info_r->role = "none";
	info_r->log_files_removed = atomic_load(&store->n_log_removed);
	uint64_t oldest = atomic_load(&store->log_oldest_mtime);
	time_t now = time(NULL);
	info_r->log_oldest_age_secs = oldest != 0 && (uint64_t)now > oldest ?
		(uint64_t)now - oldest : 0;
	info_r->perm_failed += atomic_load(&store->n_unreplicated);
}
