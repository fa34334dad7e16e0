/* bdb-repl.h — Berkeley DB 5.3 replication (the Replication Manager,
 * "repmgr") for any transactional environment of the tree: the message
 * store's shards now, the MTA's queue next. One group of sites per
 * environment, every site a full replica; one master takes writes, the
 * clients apply its log and acknowledge.
 *
 * Use around the environment's open (HA.md §5.3):
 *
 *   mt_bdb_repl_group_parse(sites, n, local, &group, &error)   config → sites
 *   repl = mt_bdb_repl_configure(env, &set, &error)   before DB_ENV->open:
 *        sites (local; the others bootstrap helpers; the group creator on
 *        the group's very first start only), priority, ack policy QUORUM,
 *        timeouts and heartbeats, DB_LOG_AUTO_REMOVE off
 *   env->open(... | MT_BDB_REPL_ENV_FLAGS)          DB_INIT_REP | DB_THREAD
 *   the tier's DB_ENV event callback: mt_bdb_repl_event(repl, event, info)
 *   mt_bdb_repl_start(repl, join_ms, &error)       repmgr_start(DB_REP_ELECTION)
 *   ... role_changed() on the notifier thread: MASTER → begin writing;
 *       a demotion → stop (HA.md: exit and restart as a client) ...
 *   every commit: mt_bdb_repl_commit() (or txn->commit and then
 *       mt_bdb_repl_take_perm_failed() on the same thread)
 *   now and then: mt_bdb_repl_archive_logs(env, retention, keep, ...)
 *   mt_bdb_repl_stop(repl); env->close(); mt_bdb_repl_free(&repl)
 *
 * Durability (HA.md §2.3): on the master a commit blocks in repmgr until a
 * quorum of electable sites acknowledged it (a client acknowledges after its
 * own log flush, so the environment must not run DB_TXN_NOSYNC: configure
 * refuses it) or the ack timeout passed. When the acknowledgements did not
 * come, the commit still returns 0 (it is committed, and flushed, locally)
 * and repmgr fires DB_EVENT_REP_PERM_FAILED synchronously in the committing
 * thread: that event is the only sign, so this file turns it into a
 * per-thread flag that the caller reads and clears after each commit. A
 * positive answer to a client needs a commit without it.
 *
 * Re-entrancy: repmgr calls the event callback on its own threads (or the
 * committing one) and "Berkeley DB is not re-entrant" (BDB-doc
 * api_reference/C/envevent_notify.html): mt_bdb_repl_event() only records
 * and wakes the notifier thread; the tier's role_changed() runs there, where
 * it may call Berkeley DB. No lock of this file is held around a Berkeley DB
 * call, so an event fired under a library mutex cannot deadlock with it.
 *
 * Logs (HA.md §5.3): automatic log removal is off. A checkpoint would let a
 * log file go that a client away for a while still needs; 5.3 exposes no
 * client's position, so files are kept for a retention (time and bytes)
 * instead, and a site that was away less than that catches up from the log
 * rather than by a full copy (internal init).
 *
 * Trust boundary: the site list comes from the operator's configuration
 * (checked here); repmgr's traffic is plaintext and unauthenticated in 5.3
 * (no TLS before 18.1, HA.md §2.1): replication ports belong on a private
 * network. Events come from the library.
 *
 * References (Oracle Berkeley DB 11.2.5.3 docs, docs/db/5.3.28/ in
 * github.com/berkeleydb/libdb, and its 5.3.28 sources): api_reference/C/
 * repmgrstart.html, repmgr_site.html, dbsite_set_config.html,
 * repmgrset_ack_policy.html, repset_timeout.html, envevent_notify.html,
 * logarchive.html; programmer_reference/group_membership.html,
 * rep_mgr_ack.html, rep_elect.html, rep_twosite.html; src/repmgr/
 * repmgr_method.c (__repmgr_start, __repmgr_join_group), repmgr_net.c
 * (__repmgr_send: the ack wait and PERM_FAILED). */
#ifndef MT_BDB_REPL_H
#define MT_BDB_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <db.h>

/* What DB_ENV->open needs besides the tier's own flags. */
#define MT_BDB_REPL_ENV_FLAGS (DB_INIT_REP | DB_THREAD)
/* At most this many sites in a group (a shard runs three). */
#define MT_BDB_REPL_SITES_MAX 15
/* "host:port" of a site, NUL included. */
#define MT_BDB_REPL_ADDR_MAX 280

/* Defaults (HA.md §5.2-5.3), in milliseconds. */
#define MT_BDB_REPL_PRIORITY 100
#define MT_BDB_REPL_ACK_TIMEOUT_MS 1000
#define MT_BDB_REPL_HEARTBEAT_SEND_MS 500
#define MT_BDB_REPL_HEARTBEAT_MONITOR_MS 2000
#define MT_BDB_REPL_ELECTION_TIMEOUT_MS 1000
#define MT_BDB_REPL_ELECTION_RETRY_MS 2000
#define MT_BDB_REPL_CONNECTION_RETRY_MS 2000
#define MT_BDB_REPL_FULL_ELECTION_TIMEOUT_MS 60000
/* A master's checkpoint sleeps this long before it logs its checkpoint
 * record, so the clients' cache flushes keep up (txn_chkpt.c). Berkeley
 * DB's own default is 30 s: every checkpoint of a master (and the
 * checkpoint thread's stop) would wait that long. The clients' own
 * checkpoint threads trickle their caches, so a short pause is enough. */
#define MT_BDB_REPL_CHECKPOINT_DELAY_MS 100
#define MT_BDB_REPL_THREADS 3
/* mt_bdb_repl_start() retries a join refused with DB_REP_UNAVAIL this often. */
#define MT_BDB_REPL_JOIN_RETRY_MS 500

struct mt_bdb_repl_site {
	char *host;
	uint16_t port;
};

/* A group as configured: every site, the local one among them. */
struct mt_bdb_repl_group {
	struct mt_bdb_repl_site *sites;
	size_t count;
	size_t local;	/* index of this site in sites */
};

/* Parse the group's sites ("host:port" each; the same strings on every
 * site, as repmgr identifies a site by them) and this site's address
 * (one of them). Refused: a bad address, "*" or an empty host, a site
 * listed twice, more than MT_BDB_REPL_SITES_MAX, and exactly two sites (two
 * electable sites either cannot elect or elect two masters, and QUORUM then
 * needs no acknowledgement at all: HA.md §2.4, §5.2). One site is a group
 * of one (no acknowledgements: today's behaviour). false and a static
 * *error_r on bad input; free with mt_bdb_repl_group_free(). Pure. */
bool mt_bdb_repl_group_parse(const char *const *sites, size_t count, const char *local,
			     struct mt_bdb_repl_group *group_r, const char **error_r);
void mt_bdb_repl_group_free(struct mt_bdb_repl_group *group);

enum mt_bdb_repl_role {
	MT_BDB_REPL_ROLE_NONE,		/* not started, or no role yet */
	MT_BDB_REPL_ROLE_CLIENT,
	MT_BDB_REPL_ROLE_MASTER,
};
/* "none", "client", "master". */
const char *mt_bdb_repl_role_name(enum mt_bdb_repl_role role);

/* A snapshot for metrics, status commands and role_changed(). */
struct mt_bdb_repl_status {
	enum mt_bdb_repl_role role;	/* as the events last said */
	bool startup_done;	/* a client has synced and applies live records */
	char master[MT_BDB_REPL_ADDR_MAX];	/* "host:port"; "" when none known */
	uint32_t generation;	/* replication generation (rep_stat st_gen) */
	unsigned int sites;	/* sites in the group, this one included */
	unsigned int connected;	/* remote sites connected now */
	uint64_t elections;	/* held, as rep_stat counts them */
	uint64_t elections_won;
	uint64_t master_changes;	/* NEWMASTER events */
	uint64_t demotions;	/* this site stopped being master (DUPMASTER, CLIENT) */
	uint64_t perm_failed;	/* commits whose acknowledgements did not come */
	uint64_t internal_inits;	/* full copies received (INIT_DONE events) */
	uint64_t connections_broken;
};

struct mt_bdb_repl;

/* The role, the master or a demotion changed: before is the status last
 * passed here (zeroed the first time), now the current one. On the
 * notifier thread; may call Berkeley DB; changes close together are passed
 * as one, but a demotion always shows (now->demotions > before->demotions). */
typedef void mt_bdb_repl_role_fn(void *context, const struct mt_bdb_repl_status *before,
				 const struct mt_bdb_repl_status *now);

/* Zeroed numeric fields take the defaults above. */
struct mt_bdb_repl_settings {
	const char *name;	/* log prefix ("store s1", "queue"); "bdb-repl" */
	const struct mt_bdb_repl_group *group;	/* copied */
	unsigned int priority;	/* election priority; > 0 (electable) */
	/* The group's very first start, on one site only: with no group
	 * membership database yet, this site becomes master of a group of one
	 * that the others then join. Never for a site whose data directory was
	 * lost: it would found a second group (group_membership.html,
	 * "Primordial Startups"); such a site joins through the others. */
	bool creator;
	unsigned int ack_timeout_ms;
	unsigned int heartbeat_send_ms;
	unsigned int heartbeat_monitor_ms;
	unsigned int election_timeout_ms;
	unsigned int election_retry_ms;
	unsigned int connection_retry_ms;
	unsigned int full_election_timeout_ms;
	unsigned int checkpoint_delay_ms;
	unsigned int threads;	/* repmgr message threads */
	/* Durability by batched acknowledgements over a repmgr channel
	 * (bdb-repl-ack.h; the store's group commit) instead of repmgr's
	 * per-commit QUORUM wait (mt_bdb_repl_commit, PERM_FAILED). The
	 * same on every site of a group. */
	bool batched_acks;
	mt_bdb_repl_role_fn *role_changed;	/* may be NULL */
	void *context;
};

/* Configure a created, not yet opened environment for replication (see the
 * top of this file). NULL and a static *error_r if Berkeley DB refused a
 * setting or the environment runs DB_TXN_NOSYNC. */
struct mt_bdb_repl *mt_bdb_repl_configure(DB_ENV *env, const struct mt_bdb_repl_settings *set,
					  const char **error_r);
/* From the tier's DB_ENV event callback, on whatever thread Berkeley DB
 * calls it: records a replication event (logged, counted; PERM_FAILED also
 * in the calling thread's flag) and wakes the notifier. Calls nothing of
 * Berkeley DB. false for an event that is not replication's (DB_EVENT_PANIC,
 * DB_EVENT_WRITE_FAILED, ...): the tier handles those. */
bool mt_bdb_repl_event(struct mt_bdb_repl *repl, u_int32_t event, void *info);
/* Start the notifier thread and repmgr on the opened environment
 * (DB_REP_ELECTION: a client that calls an election when it finds no
 * master). A site joining the group for the first time needs a master and
 * a quorum: repmgr refuses with DB_REP_UNAVAIL until then, and this retries
 * for up to join_ms. false and a static *error_r on failure. */
bool mt_bdb_repl_start(struct mt_bdb_repl *repl, unsigned int join_ms, const char **error_r);
/* Berkeley DB 5.3's repmgr never sets TCP_NODELAY on its connections: a
 * commit record sent while another is unacknowledged waits for the peer's
 * delayed ACK (Nagle, tens of ms per commit under concurrency). This
 * finds this process's TCP connections to or from the group's sites (by
 * port, in /proc/self/fd) and sets it. The notifier calls it after each
 * connection event; call it now and then as well (a connection may come
 * up between events). Any thread. */
void mt_bdb_repl_sockets_nodelay(struct mt_bdb_repl *repl);
/* The current status (calls Berkeley DB: not from the event callback). */
void mt_bdb_repl_status(struct mt_bdb_repl *repl, struct mt_bdb_repl_status *status_r);
/* Whether this site is master, as the events last said. Calls nothing of
 * Berkeley DB. */
bool mt_bdb_repl_is_master(struct mt_bdb_repl *repl);
/* A site that stopped being master and is about to close: election
 * priority 0 from now on, so that repmgr does not elect it again in the
 * time it has left (HA.md 5.3: a process whose handles were closed as a
 * client must not log as master). Its restart takes the configured
 * priority again. */
void mt_bdb_repl_unelectable(struct mt_bdb_repl *repl);
/* Stop the notifier thread (before DB_ENV->close, which stops repmgr);
 * idempotent. */
void mt_bdb_repl_stop(struct mt_bdb_repl *repl);
/* After DB_ENV->close (events may come until then). */
void mt_bdb_repl_free(struct mt_bdb_repl **repl_p);

/* Whether a PERM_FAILED event reached this thread since the last call, and
 * clear it: call after each commit whose outcome someone is answered on
 * (acknowledgements are cumulative, so only the last commit of a unit of
 * work matters, HA.md §2.3). */
bool mt_bdb_repl_take_perm_failed(void);
/* txn->commit(flags); *replicated_r: committed and acknowledged by the
 * ack policy (false also when the commit failed). Returns commit's status. */
int mt_bdb_repl_commit(DB_TXN *txn, u_int32_t flags, bool *replicated_r);

/* One log file of the environment, oldest first. */
struct mt_bdb_log_file {
	const char *path;
	time_t mtime;		/* its last write: its newest record is older */
	uint64_t size;
	bool archivable;	/* no longer needed for recovery (log_archive) */
};
/* How many of files, from the oldest, may go: a prefix (the log stays one
 * sequence) of archivable files, each last written more than retention_secs
 * before now, leaving at least keep_bytes of newer log. Pure. */
size_t mt_bdb_log_select_expired(const struct mt_bdb_log_file *files, size_t count, time_t now,
				 uint64_t retention_secs, uint64_t keep_bytes);
/* Remove the environment's log files that mt_bdb_log_select_expired()
 * selects (what DB_LOG_AUTO_REMOVE would have removed at once). 0 and
 * *removed_r, or a Berkeley DB error / errno with *error_r (static). */
int mt_bdb_repl_archive_logs(DB_ENV *env, uint64_t retention_secs, uint64_t keep_bytes,
			     unsigned int *removed_r, const char **error_r);

#endif
