/* store-space.c — a full disk as a handled condition, never a crash.
 *
 * 1. Region files. Berkeley DB 5.3 (built with HAVE_MMAP_EXTEND, as on
 *    Linux) maps each region file __db.NNN at its maximum size but writes
 *    only the initial size; the region then grows inside the mapping by
 *    extending the file sparsely (__env_region_extend → __db_file_extend,
 *    a one-byte write at the new end). The first touch of such a hole on a
 *    full file system is a page fault the kernel cannot back: SIGBUS. The
 *    mpool region grows that way as the cache fills (353 KB to 5 MB for a
 *    4 MB cache), the environment region as locks and transactions are
 *    allocated. DB_REGION_INIT (set in store-env.c) writes the initial part
 *    at creation; store_space_prealloc_regions() then allocates the blocks
 *    of every region file up to the end of its mapping with
 *    fallocate(FALLOC_FL_KEEP_SIZE). The file size, which Berkeley DB
 *    compares with the region's recorded size when another process joins,
 *    is unchanged; later growth only writes into blocks that exist.
 *
 * 2. The reserve. Writes commit with DB_TXN_NOSYNC and one flush makes a
 *    group durable (store-commit.c). A transaction that committed is
 *    visible and cannot be undone, so if its flush failed for lack of
 *    space and the client were told 452, the flush that later succeeds
 *    would store the message a second time when the client retries. So
 *    the store keeps STORE_RESERVE_FILE, fallocate()d at open to more than
 *    the log buffer (the most log a flush can have to write): when a flush
 *    fails with ENOSPC/EDQUOT, and once no transaction executes and no
 *    reader runs (either could write pages into the freed space), the
 *    reserve is released and the flush retried: what committed becomes
 *    durable and is acknowledged.
 *
 * 3. Database files. A page write that fails half-way for lack of space
 *    (an 8 KB body page is two file system blocks) leaves a torn page on
 *    disk whose LSN says it is current, so recovery does not redo it: a
 *    stored message with 4 KB of zeros. So the database files' blocks are
 *    allocated (fallocate KEEP_SIZE) ahead of their ends and page writes
 *    never allocate: body.db at least a cache's worth beyond its end (all
 *    dirty pages could be new ones there) plus the message, checked before
 *    each delivery (store_space_ensure); the small files every second.
 *    When that allocation fails, the store enters no-space mode before any
 *    page write can fail.
 *
 * 4. No-space mode. From the first ENOSPC (a flush, a transaction, a
 *    checkpoint, a preallocation) until space is back, deliveries and
 *    expunges are refused by the commit thread before their transaction
 *    with MT_STORE_NO_SPACE (452 4.3.1 / -ERR [SYS/TEMP]), so nothing
 *    refused becomes visible. Reads go on. A probe — re-create the
 *    reserve and the files' headroom, flush the log, checkpoint — runs
 *    every second (checkpoint thread) and before a write (commit thread,
 *    at most every PROBE_MSECS); when it succeeds the mode ends by itself,
 *    without a restart. The purger (store-purge.c) tries no purge in
 *    no-space mode and keeps the queue of one that fails with ENOSPC:
 *    both are retried once space is back. A purge frees body.db pages
 *    for later deliveries (the file itself does not shrink).
 *
 * Trust boundary: the home directory from the configuration; the region
 * file names are Berkeley DB's, found in this process's own mappings. */
#include "store-req.h"	/* the group commit: store_commit_executing() */
#include "clock.h"
#include "bdb-regions.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int store_space_prealloc_regions(struct mt_store *store, const char **error_r)
{
	char failed[PATH_MAX];
	unsigned int regions;
	uint64_t total;
	int ret = mt_bdb_prealloc_regions(store->home, &regions, &total, failed,
					  sizeof(failed));
	if (ret == ENOENT && failed[0] == '\0')
		*error_r = store_error("store %s: no region file mapped (region "
				       "files not preallocated)", store->home);
	else if (ret != 0 && failed[0] != '\0')
		*error_r = store_error("store %s: preallocating region file %s: %s",
				       store->home, failed, strerror(ret));
	else if (ret != 0)
		*error_r = store_error("store %s: %s (region files not "
				       "preallocated)", store->home, strerror(ret));
	else
		mt_debug("store: home=%s regions=%u region_bytes=%llu preallocated",
			 store->home, regions, (unsigned long long)total);
	return ret;
}

static const char *const db_files[] = {
	STORE_META_DB, STORE_MAILBOX_DB, STORE_MESSAGE_DB, STORE_BODY_DB,
	STORE_PURGE_DB, STORE_DELIVERED_DB, STORE_REFS_DB, STORE_PARTIAL_DB,
};

/* Blocks of fd allocated at least need bytes beyond its end: if *end_r
 * (what was allocated, when known) is short of that, allocate up to
 * need + ahead beyond the end (from 0 if all), fewer calls that way. */
static int file_headroom(int fd, uint64_t need, uint64_t ahead, bool all,
			 uint64_t *end_r)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return errno;
	if (!all && end_r != NULL && *end_r >= (uint64_t)st.st_size + need)
		return 0;
	uint64_t from = all ? 0 : (uint64_t)st.st_size;
	uint64_t end = (uint64_t)st.st_size + need + ahead;
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)(end - from)) < 0)
		return errno;
	if (end_r != NULL)
		*end_r = end;
	return 0;
}

/* Under space_lock. */
static int headroom_locked(struct mt_store *store, bool all, uint64_t extra)
{
	const uint64_t cache = store->set.cache_size;
	int ret = 0;
	for (size_t i = 0; ret == 0 && i < sizeof(db_files) / sizeof(db_files[0]); i++) {
		bool body = strcmp(db_files[i], STORE_BODY_DB) == 0;
		if (body && store->body_fd >= 0) {
			ret = file_headroom(store->body_fd, cache + extra, cache,
					    all, &store->body_prealloc_end);
			continue;
		}
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", store->home, db_files[i]);
		int fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return errno;
		struct stat st;
		uint64_t headroom = fstat(fd, &st) == 0 ? (uint64_t)st.st_size / 4 : 0;
		if (headroom < (1u << 20))
			headroom = 1u << 20;
		if (headroom > cache)
			headroom = cache;
		ret = file_headroom(fd, headroom, 0, all, NULL);
		close(fd);
	}
	return ret;
}

static void reserve_path(const struct mt_store *store, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", store->home, STORE_RESERVE_FILE);
}

/* Allocate the reserve (under space_lock); 0 or an errno value.
 * posix_fallocate() writes the blocks where fallocate() is missing. */
static int reserve_make(struct mt_store *store)
{
	if (store->reserve_held)
		return 0;
	char path[4096];
	reserve_path(store, path, sizeof(path));
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	int ret = posix_fallocate(fd, 0, (off_t)store->reserve_size);
	if (ret == 0 && fdatasync(fd) < 0)
		ret = errno;
	if (ret != 0 && ftruncate(fd, 0) < 0)
		mt_error("store: home=%s %s: %s", store->home, path, strerror(errno));
	close(fd);
	if (ret == 0)
		store->reserve_held = true;
	return ret;
}

void store_space_open(struct mt_store *store)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", store->home, STORE_BODY_DB);
	store->body_fd = open(path, O_RDWR | O_CLOEXEC);
	pthread_mutex_lock(&store->space_lock);
	int ret = reserve_make(store);
	if (ret == 0)
		ret = headroom_locked(store, true, 0);
	pthread_mutex_unlock(&store->space_lock);
	if (ret == EOPNOTSUPP)
		ret = 0;
	if (ret == 0)
		return;
	if (ret == ENOSPC || ret == EDQUOT) {
		atomic_store(&store->no_space, true);
		mt_error("store: home=%s disk full at start: deliveries and "
			 "expunges are refused until space returns", store->home);
	} else
		mt_warning("store: home=%s cannot make the space reserve %s: %s",
			   store->home, STORE_RESERVE_FILE, strerror(ret));
}

bool store_space_failed(struct mt_store *store, int ret, const char *where)
{
	if (ret != ENOSPC && ret != EDQUOT)
		return false;
	if (!atomic_exchange(&store->no_space, true))
		mt_error("store: home=%s disk full (%s: %s): deliveries and "
			 "expunges are refused until space returns", store->home,
			 where, strerror(ret));
	return true;
}

int store_space_headroom(struct mt_store *store, bool all)
{
	pthread_mutex_lock(&store->space_lock);
	int ret = headroom_locked(store, all, 0);
	pthread_mutex_unlock(&store->space_lock);
	if (ret == EOPNOTSUPP) {
		static atomic_bool warned;
		if (!atomic_exchange(&warned, true))
			mt_warning("store: home=%s the file system cannot preallocate "
				   "(fallocate): a full disk may damage stored pages",
				   store->home);
		return 0;
	}
	(void)store_space_failed(store, ret, "preallocating the database files");
	return ret;
}

int store_space_ensure(struct mt_store *store, uint64_t bytes)
{
	if (store->body_fd < 0)
		return 0;
	pthread_mutex_lock(&store->space_lock);
	int ret = file_headroom(store->body_fd, store->set.cache_size + bytes,
			       store->set.cache_size, false,
			       &store->body_prealloc_end);
	pthread_mutex_unlock(&store->space_lock);
	if (ret == EOPNOTSUPP)
		return 0;
	(void)store_space_failed(store, ret, "preallocating body.db");
	return ret;
}

/* How long a reserved flush waits for executing transactions to end. */
#define QUIESCE_MSECS 30000

bool store_space_flush_reserved(struct mt_store *store, int *ret_r)
{
	for (unsigned int i = 0; i < QUIESCE_MSECS &&
	     store_commit_executing(store) > 0; i++) {
		struct timespec ts = { 0, 1000000L };
		nanosleep(&ts, NULL);
	}
	pthread_rwlock_wrlock(&store->io_lock);
	pthread_mutex_lock(&store->space_lock);
	bool held = store->reserve_held;
	if (held) {
		char path[4096];
		reserve_path(store, path, sizeof(path));
		if (truncate(path, 0) < 0)
			mt_error("store: home=%s %s: %s", store->home, path,
				 strerror(errno));
		store->reserve_held = false;
		*ret_r = store->env->log_flush(store->env, NULL);
		mt_warning("store: home=%s disk full: gave the %llu byte reserve "
			   "to the log flush: %s", store->home,
			   (unsigned long long)store->reserve_size,
			   *ret_r == 0 ? "committed transactions are durable" :
			   db_strerror(*ret_r));
	}
	pthread_mutex_unlock(&store->space_lock);
	pthread_rwlock_unlock(&store->io_lock);
	return held;
}

void store_space_probe(struct mt_store *store)
{
	/* All under space_lock: a reserved flush must not find its space
	 * taken by this checkpoint. The flush and the checkpoint are what the
	 * writes will need: the log buffer out, dirty pages into the files. */
	pthread_mutex_lock(&store->space_lock);
	int ret = reserve_make(store);
	if (ret == 0)
		ret = headroom_locked(store, false, 0);
	if (ret == EOPNOTSUPP)
		ret = 0;
	if (ret == 0)
		ret = store->env->log_flush(store->env, NULL);
	if (ret == 0)
		ret = store->env->txn_checkpoint(store->env, 0, 0, 0);
	pthread_mutex_unlock(&store->space_lock);
	atomic_store(&store->probe_msecs, mt_clock_ms());
	if (ret != 0) {
		if (ret != ENOSPC && ret != EDQUOT)
			(void)store_status_from_db(store, ret);
		return;
	}
	store_counter_add(&store->n_checkpoints, 1);
	if (atomic_exchange(&store->no_space, false))
		mt_info("store: home=%s disk space available again: deliveries "
			"and expunges accepted", store->home);
}

/* The commit thread probes too, so that a write right after space returns
 * succeeds; not more often than this while the disk stays full. */
#define PROBE_MSECS 250

bool store_space_writable(struct mt_store *store)
{
	if (!store_space_full(store))
		return true;
	uint64_t now = mt_clock_ms();
	uint64_t last = atomic_load(&store->probe_msecs);
	if (now - last < PROBE_MSECS ||
	    !atomic_compare_exchange_strong(&store->probe_msecs, &last, now))
		return false;
	store_space_probe(store);
	return !store_space_full(store);
}
