/* bdb-repl.c — Berkeley DB Replication Manager for an environment (see
 * bdb-repl.h): the group from configuration, repmgr's start, its events
 * turned into a status and a role callback on a thread of ours, the
 * per-thread PERM_FAILED flag, and log retention. */
#include "bdb-repl.h"
#include "bdb-repl-ack.h"
#include "alloc.h"
#include "clock.h"
#include "config.h"
#include "log.h"
#include "thread.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct mt_bdb_repl {
	DB_ENV *env;
	struct mt_bdb_repl_settings set;
	struct mt_bdb_repl_group group;		/* our copy */
	char local[MT_BDB_REPL_ADDR_MAX];	/* "host:port" of this site */

	/* What the events said; under lock, never held across a BDB call. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum mt_bdb_repl_role role;
	uint64_t changes;	/* role/master events seen; the notifier's cue */
	uint64_t demotions;
	uint64_t master_changes;
	bool stop;

	atomic_uint_least64_t perm_failed;
	atomic_uint_least64_t internal_inits;
	atomic_uint_least64_t connections_broken;

	bool thread_started;
	pthread_t thread;
};

/* Set by a PERM_FAILED event in the thread that committed (repmgr fires it
 * synchronously from its send function there, HA.md §2.3). */
static _Thread_local bool bdb_repl_perm_failed_here;

/* The group. */

static bool site_parse(const char *s, struct mt_bdb_repl_site *site_r, const char **error_r)
{
	struct mt_hostport hp = { 0 };
	if (!mt_parse_hostport(s, &hp, error_r))
		return false;
	if (strcmp(hp.host, "*") == 0 || strlen(hp.host) + 8 > MT_BDB_REPL_ADDR_MAX) {
		mt_hostport_clear(&hp);
		*error_r = "a replication site needs the address the others reach "
			"it at (not *)";
		return false;
	}
	site_r->host = hp.host;
	site_r->port = hp.port;
	return true;
}

static bool site_equal(const struct mt_bdb_repl_site *a, const struct mt_bdb_repl_site *b)
{
	return a->port == b->port && strcmp(a->host, b->host) == 0;
}

bool mt_bdb_repl_group_parse(const char *const *sites, size_t count, const char *local,
			     struct mt_bdb_repl_group *group_r, const char **error_r)
{
	memset(group_r, 0, sizeof(*group_r));
	if (count == 0) {
		*error_r = "no replication sites";
		return false;
	}
	if (count > MT_BDB_REPL_SITES_MAX) {
		*error_r = "too many replication sites";
		return false;
	}
	if (count == 2) {
		*error_r = "a group of two sites cannot both elect safely and need an "
			"acknowledgement: use one site, or three";
		return false;
	}
	struct mt_bdb_repl_site me;
	if (local == NULL || !site_parse(local, &me, error_r)) {
		if (local == NULL)
			*error_r = "no local replication site";
		return false;
	}
	group_r->sites = mt_xcalloc(count, sizeof(*group_r->sites));
	group_r->local = count;
	for (size_t i = 0; i < count; i++) {
		if (!site_parse(sites[i], &group_r->sites[i], error_r))
			goto fail;
		group_r->count++;
		for (size_t j = 0; j < i; j++) {
			if (site_equal(&group_r->sites[j], &group_r->sites[i])) {
				*error_r = "a replication site is listed twice";
				goto fail;
			}
		}
		if (site_equal(&group_r->sites[i], &me))
			group_r->local = i;
	}
	if (group_r->local == count) {
		*error_r = "the local site is not one of the replication sites";
		goto fail;
	}
	free(me.host);
	return true;
fail:
	free(me.host);
	mt_bdb_repl_group_free(group_r);
	return false;
}

void mt_bdb_repl_group_free(struct mt_bdb_repl_group *group)
{
	for (size_t i = 0; i < group->count; i++)
		free(group->sites[i].host);
	MT_FREE(&group->sites);
	group->count = 0;
	group->local = 0;
}

const char *mt_bdb_repl_role_name(enum mt_bdb_repl_role role)
{
	static const char *const names[] = {
		[MT_BDB_REPL_ROLE_NONE] = "none",
		[MT_BDB_REPL_ROLE_CLIENT] = "client",
		[MT_BDB_REPL_ROLE_MASTER] = "master",
	};
	return (size_t)role < sizeof(names) / sizeof(names[0]) ? names[role] : "?";
}

static void addr_format(char *buf, const char *host, unsigned int port)
{
	snprintf(buf, MT_BDB_REPL_ADDR_MAX, strchr(host, ':') != NULL ? "[%s]:%u" : "%s:%u",
		 host, port);
}

/* Configuration. */

static void settings_default(struct mt_bdb_repl_settings *s)
{
#define DEFAULT(field, value) do { if (s->field == 0) s->field = (value); } while (0)
	if (s->name == NULL)
		s->name = "bdb-repl";
	DEFAULT(priority, MT_BDB_REPL_PRIORITY);
	DEFAULT(ack_timeout_ms, MT_BDB_REPL_ACK_TIMEOUT_MS);
	DEFAULT(heartbeat_send_ms, MT_BDB_REPL_HEARTBEAT_SEND_MS);
	DEFAULT(heartbeat_monitor_ms, MT_BDB_REPL_HEARTBEAT_MONITOR_MS);
	DEFAULT(election_timeout_ms, MT_BDB_REPL_ELECTION_TIMEOUT_MS);
	DEFAULT(election_retry_ms, MT_BDB_REPL_ELECTION_RETRY_MS);
	DEFAULT(connection_retry_ms, MT_BDB_REPL_CONNECTION_RETRY_MS);
	DEFAULT(full_election_timeout_ms, MT_BDB_REPL_FULL_ELECTION_TIMEOUT_MS);
	DEFAULT(checkpoint_delay_ms, MT_BDB_REPL_CHECKPOINT_DELAY_MS);
	DEFAULT(threads, MT_BDB_REPL_THREADS);
#undef DEFAULT
}

static int set_timeouts(DB_ENV *env, const struct mt_bdb_repl_settings *s)
{
	const struct { int which; unsigned int ms; } t[] = {
		{ DB_REP_ACK_TIMEOUT, s->ack_timeout_ms },
		{ DB_REP_HEARTBEAT_SEND, s->heartbeat_send_ms },
		{ DB_REP_HEARTBEAT_MONITOR, s->heartbeat_monitor_ms },
		{ DB_REP_ELECTION_TIMEOUT, s->election_timeout_ms },
		{ DB_REP_ELECTION_RETRY, s->election_retry_ms },
		{ DB_REP_CONNECTION_RETRY, s->connection_retry_ms },
		{ DB_REP_FULL_ELECTION_TIMEOUT, s->full_election_timeout_ms },
		{ DB_REP_CHECKPOINT_DELAY, s->checkpoint_delay_ms },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		/* Microseconds (repset_timeout.html). */
		int ret = env->rep_set_timeout(env, t[i].which, (db_timeout_t)t[i].ms * 1000u);
		if (ret != 0)
			return ret;
	}
	return 0;
}

/* One DB_SITE per member: the local one (the creator on the group's first
 * start), the others bootstrap helpers to join through. After the first
 * start repmgr reads the membership from its own database instead
 * (group_membership.html). */
static int set_sites(DB_ENV *env, const struct mt_bdb_repl_group *g, bool creator)
{
	for (size_t i = 0; i < g->count; i++) {
		DB_SITE *site;
		int ret = env->repmgr_site(env, g->sites[i].host, g->sites[i].port, &site, 0);
		if (ret != 0)
			return ret;
		if (i == g->local) {
			ret = site->set_config(site, DB_LOCAL_SITE, 1);
			if (ret == 0 && creator)
				ret = site->set_config(site, DB_GROUP_CREATOR, 1);
		} else {
			ret = site->set_config(site, DB_BOOTSTRAP_HELPER, 1);
		}
		int t_ret = site->close(site);
		if (ret != 0 || t_ret != 0)
			return ret != 0 ? ret : t_ret;
	}
	return 0;
}

static int configure_env(DB_ENV *env, const struct mt_bdb_repl *r, const char **error_r)
{
	u_int32_t flags = 0;
	int ret;
	if ((ret = env->get_flags(env, &flags)) != 0) {
		*error_r = "reading the environment's flags failed";
		return ret;
	}
	if ((flags & DB_TXN_NOSYNC) != 0) {
		/* Clients would acknowledge commits they have not flushed
		 * (rep_record.c: the flush after a commit is skipped). */
		*error_r = "a replicated environment must not run DB_TXN_NOSYNC";
		return EINVAL;
	}
	if ((ret = set_sites(env, &r->group, r->set.creator)) != 0) {
		*error_r = "configuring the replication sites failed";
		return ret;
	}
	/* Batched acknowledgements (bdb-repl-ack.h): commits wait for none;
	 * the group commit asks the replicas over a channel instead. */
	int policy = r->set.batched_acks ? DB_REPMGR_ACKS_NONE : DB_REPMGR_ACKS_QUORUM;
	if ((ret = env->rep_set_priority(env, r->set.priority)) != 0 ||
	    (ret = env->repmgr_set_ack_policy(env, policy)) != 0) {
		*error_r = "setting the election priority or the ack policy failed";
		return ret;
	}
	if (r->set.batched_acks &&
	    (ret = env->repmgr_msg_dispatch(env, mt_bdb_repl_ack_dispatch, 0)) != 0) {
		*error_r = "registering the acknowledgement channel failed";
		return ret;
	}
	/* A master's log records go out in one message per commit (the bulk
	 * buffer is sent when a commit record is put) instead of one each:
	 * repmgr 5.3 never sets TCP_NODELAY, and a second small write behind
	 * an unacknowledged one waited for the peer's delayed ACK (85 ms per
	 * acknowledged commit on loopback, 2 ms with bulk). The ack wait and
	 * PERM_FAILED stay the committing thread's: its commit record is what
	 * sends the buffer, from that thread, and no other commit record lies
	 * between the buffer's first record (the LSN waited for) and it, so
	 * only an ack covering this commit ends the wait (rep_util.c
	 * __rep_bulk_message, __rep_send_bulk; a buffer another thread is
	 * sending makes the record go alone). */
	if ((ret = env->rep_set_config(env, DB_REP_CONF_BULK, 1)) != 0) {
		*error_r = "turning bulk transfer on failed";
		return ret;
	}
	if ((ret = set_timeouts(env, &r->set)) != 0) {
		*error_r = "setting the replication timeouts failed";
		return ret;
	}
	/* A checkpoint must not take a log file that a client still needs
	 * (mt_bdb_repl_archive_logs() removes by age instead). */
	if ((ret = env->log_set_config(env, DB_LOG_AUTO_REMOVE, 0)) != 0) {
		*error_r = "turning automatic log removal off failed";
		return ret;
	}
	return 0;
}

struct mt_bdb_repl *mt_bdb_repl_configure(DB_ENV *env, const struct mt_bdb_repl_settings *set,
					  const char **error_r)
{
	if (set->group == NULL || set->group->count == 0 ||
	    set->group->local >= set->group->count) {
		*error_r = "no replication group";
		return NULL;
	}
	struct mt_bdb_repl *r = mt_xcalloc(1, sizeof(*r));
	r->env = env;
	r->set = *set;
	settings_default(&r->set);
	r->group.count = set->group->count;
	r->group.local = set->group->local;
	r->group.sites = mt_xcalloc(r->group.count, sizeof(*r->group.sites));
	for (size_t i = 0; i < r->group.count; i++) {
		r->group.sites[i].host = mt_xstrdup(set->group->sites[i].host);
		r->group.sites[i].port = set->group->sites[i].port;
	}
	r->set.group = &r->group;
	const struct mt_bdb_repl_site *me = &r->group.sites[r->group.local];
	addr_format(r->local, me->host, me->port);
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	int ret = configure_env(env, r, error_r);
	if (ret != 0) {
		mt_error("%s: %s: %s", r->set.name, *error_r, db_strerror(ret));
		mt_bdb_repl_free(&r);
		return NULL;
	}
	return r;
}

/* Events (on Berkeley DB's threads: record, log, wake; nothing else). */

static int event_eid(u_int32_t event, const void *info)
{
	if (info == NULL)
		return DB_EID_INVALID;
	if (event == DB_EVENT_REP_CONNECT_BROKEN || event == DB_EVENT_REP_CONNECT_TRY_FAILED)
		return ((const DB_REPMGR_CONN_ERR *)info)->eid;
	return *(const int *)info;
}

static void role_event(struct mt_bdb_repl *r, u_int32_t event)
{
	pthread_mutex_lock(&r->lock);
	switch (event) {
	case DB_EVENT_REP_MASTER:
		r->role = MT_BDB_REPL_ROLE_MASTER;
		break;
	case DB_EVENT_REP_CLIENT:
	case DB_EVENT_REP_DUPMASTER:
		if (r->role == MT_BDB_REPL_ROLE_MASTER)
			r->demotions++;
		r->role = MT_BDB_REPL_ROLE_CLIENT;
		break;
	case DB_EVENT_REP_NEWMASTER:
		r->master_changes++;
		break;
	default:
		break;
	}
	r->changes++;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

bool mt_bdb_repl_event(struct mt_bdb_repl *r, u_int32_t event, void *info)
{
	const char *name = r->set.name;
	int eid = event_eid(event, info);
	switch (event) {
	case DB_EVENT_REP_MASTER:
		mt_info("%s: site=%s is now the master", name, r->local);
		break;
	case DB_EVENT_REP_CLIENT:
		mt_info("%s: site=%s is now a client", name, r->local);
		break;
	case DB_EVENT_REP_NEWMASTER:
		mt_info("%s: new master eid=%d", name, eid);
		break;
	case DB_EVENT_REP_DUPMASTER:
		mt_warning("%s: site=%s found another master: demoted to client", name,
			   r->local);
		break;
	case DB_EVENT_REP_STARTUPDONE:
		mt_info("%s: site=%s synchronised with the master", name, r->local);
		break;
	case DB_EVENT_REP_PERM_FAILED:
		bdb_repl_perm_failed_here = true;
		atomic_fetch_add(&r->perm_failed, 1);
		mt_debug("%s: a commit was not acknowledged by a quorum", name);
		return true;
	case DB_EVENT_REP_INIT_DONE:
		atomic_fetch_add(&r->internal_inits, 1);
		mt_info("%s: site=%s received a full copy (internal init)", name, r->local);
		return true;
	case DB_EVENT_REP_CONNECT_ESTD:
		mt_info("%s: connected to eid=%d", name, eid);
		break;
	case DB_EVENT_REP_CONNECT_BROKEN:
		atomic_fetch_add(&r->connections_broken, 1);
		mt_info("%s: connection to eid=%d broken", name, eid);
		break;
	case DB_EVENT_REP_CONNECT_TRY_FAILED:
		mt_debug("%s: connecting to eid=%d failed", name, eid);
		return true;
	case DB_EVENT_REP_MASTER_FAILURE:
		mt_warning("%s: the master is lost", name);
		break;
	case DB_EVENT_REP_ELECTED:
	case DB_EVENT_REP_ELECTION_FAILED:
		mt_info("%s: election %s", name,
			event == DB_EVENT_REP_ELECTED ? "won" : "failed (repmgr retries)");
		return true;
	case DB_EVENT_REP_SITE_ADDED:
	case DB_EVENT_REP_SITE_REMOVED:
		mt_info("%s: site eid=%d %s the group", name, eid,
			event == DB_EVENT_REP_SITE_ADDED ? "joined" : "left");
		break;
	case DB_EVENT_REP_JOIN_FAILURE:
		mt_error("%s: site=%s cannot synchronise with the master", name, r->local);
		break;
	case DB_EVENT_REP_LOCAL_SITE_REMOVED:
		mt_error("%s: site=%s was removed from the group", name, r->local);
		break;
	case DB_EVENT_REP_WOULD_ROLLBACK:
		mt_warning("%s: synchronising would roll back committed transactions", name);
		return true;
	default:
		return false;
	}
	role_event(r, event);
	return true;
}

bool mt_bdb_repl_take_perm_failed(void)
{
	bool failed = bdb_repl_perm_failed_here;
	bdb_repl_perm_failed_here = false;
	return failed;
}

int mt_bdb_repl_commit(DB_TXN *txn, u_int32_t flags, bool *replicated_r)
{
	(void)mt_bdb_repl_take_perm_failed();	/* an earlier commit's */
	int ret = txn->commit(txn, flags);
	bool failed = mt_bdb_repl_take_perm_failed();
	*replicated_r = ret == 0 && !failed;
	return ret;
}

bool mt_bdb_repl_is_master(struct mt_bdb_repl *r)
{
	pthread_mutex_lock(&r->lock);
	bool master = r->role == MT_BDB_REPL_ROLE_MASTER;
	pthread_mutex_unlock(&r->lock);
	return master;
}

void mt_bdb_repl_unelectable(struct mt_bdb_repl *r)
{
	int ret = r->env->rep_set_priority(r->env, 0);
	if (ret != 0)
		mt_warning("%s: site=%s setting election priority 0 failed: %s", r->set.name,
			   r->local, db_strerror(ret));
}

/* Status (a normal thread: may call Berkeley DB). */

static void master_address(struct mt_bdb_repl *r, int eid, char *buf)
{
	buf[0] = '\0';
	DB_SITE *site;
	if (eid < 0 || r->env->repmgr_site_by_eid(r->env, eid, &site) != 0)
		return;
	const char *host;
	u_int port;
	if (site->get_address(site, &host, &port) == 0)
		addr_format(buf, host, port);
	(void)site->close(site);
}

static unsigned int connected_sites(DB_ENV *env)
{
	u_int count = 0;
	DB_REPMGR_SITE *list = NULL;
	unsigned int connected = 0;
	if (env->repmgr_site_list(env, &count, &list) != 0)
		return 0;
	for (u_int i = 0; i < count; i++)
		if (list[i].status == DB_REPMGR_CONNECTED)
			connected++;
	free(list);
	return connected;
}

void mt_bdb_repl_status(struct mt_bdb_repl *r, struct mt_bdb_repl_status *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&r->lock);
	st->role = r->role;
	st->demotions = r->demotions;
	st->master_changes = r->master_changes;
	pthread_mutex_unlock(&r->lock);
	st->perm_failed = atomic_load(&r->perm_failed);
	st->internal_inits = atomic_load(&r->internal_inits);
	st->connections_broken = atomic_load(&r->connections_broken);
	st->sites = (unsigned int)r->group.count;

	DB_REP_STAT *rs = NULL;
	if (r->env->rep_stat(r->env, &rs, 0) == 0 && rs != NULL) {
		st->generation = rs->st_gen;
		st->startup_done = rs->st_startup_complete != 0;
		st->elections = rs->st_elections;
		st->elections_won = rs->st_elections_won;
		if (rs->st_nsites > 0)
			st->sites = rs->st_nsites;
		if (st->role == MT_BDB_REPL_ROLE_MASTER)
			snprintf(st->master, sizeof(st->master), "%s", r->local);
		else
			master_address(r, (int)rs->st_master, st->master);
		free(rs);
	}
	st->connected = connected_sites(r->env);
}

static unsigned int sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static bool site_port(const struct mt_bdb_repl *r, unsigned int port)
{
	for (size_t i = 0; i < r->group.count; i++)
		if (r->group.sites[i].port == port)
			return true;
	return false;
}

void mt_bdb_repl_sockets_nodelay(struct mt_bdb_repl *r)
{
	DIR *dir = opendir("/proc/self/fd");
	if (dir == NULL)
		return;
	unsigned int tuned = 0;
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		if (*end != '\0' || fd < 0 || fd == dirfd(dir))
			continue;
		struct sockaddr_storage local, peer;
		socklen_t llen = sizeof(local), plen = sizeof(peer);
		int type = 0, one = 1, on = 0;
		socklen_t tlen = sizeof(type), olen = sizeof(on);
		if (getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 ||
		    type != SOCK_STREAM ||
		    getsockname((int)fd, (struct sockaddr *)&local, &llen) != 0 ||
		    getpeername((int)fd, (struct sockaddr *)&peer, &plen) != 0 ||
		    (local.ss_family != AF_INET && local.ss_family != AF_INET6))
			continue;
		/* Accepted from a site (our port) or made to one (its port). */
		unsigned int lport = sockaddr_port(&local), pport = sockaddr_port(&peer);
		if (lport != r->group.sites[r->group.local].port && !site_port(r, pport))
			continue;
		if (getsockopt((int)fd, IPPROTO_TCP, TCP_NODELAY, &on, &olen) == 0 && on)
			continue;
		if (setsockopt((int)fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0)
			tuned++;
	}
	closedir(dir);
	if (tuned > 0)
		mt_debug("%s: TCP_NODELAY on %u replication connections", r->set.name, tuned);
}

/* The notifier: role_changed() on a thread of ours, after each batch of
 * role events; new connections get TCP_NODELAY. */
static void *notifier_main(void *arg)
{
	struct mt_bdb_repl *r = arg;
	struct mt_bdb_repl_status before = { 0 }, now;
	uint64_t seen = 0;
	pthread_mutex_lock(&r->lock);
	while (!r->stop) {
		if (r->changes == seen) {
			pthread_cond_wait(&r->cond, &r->lock);
			continue;
		}
		seen = r->changes;
		pthread_mutex_unlock(&r->lock);
		mt_bdb_repl_sockets_nodelay(r);
		mt_bdb_repl_status(r, &now);
		bool changed = now.role != before.role || now.demotions != before.demotions ||
			strcmp(now.master, before.master) != 0 ||
			now.startup_done != before.startup_done;
		if (changed && r->set.role_changed != NULL)
			r->set.role_changed(r->set.context, &before, &now);
		if (changed)
			before = now;
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

bool mt_bdb_repl_start(struct mt_bdb_repl *r, unsigned int join_ms, const char **error_r)
{
	if (!r->thread_started) {
		if (mt_thread_start(&r->thread, notifier_main, r) != 0) {
			*error_r = "cannot start the replication notifier thread";
			return false;
		}
		r->thread_started = true;
	}
	uint64_t deadline = mt_clock_ms() + join_ms;
	for (;;) {
		int ret = r->env->repmgr_start(r->env, (int)r->set.threads, DB_REP_ELECTION);
		if (ret == 0 || ret == DB_REP_IGNORE)
			break;
		if (ret != DB_REP_UNAVAIL || mt_clock_ms() >= deadline) {
			mt_error("%s: site=%s repmgr_start: %s", r->set.name, r->local,
				 db_strerror(ret));
			*error_r = ret == DB_REP_UNAVAIL ?
				"could not join the replication group (no master, or too "
				"few sites to acknowledge the join)" :
				"starting the replication manager failed";
			return false;
		}
		mt_debug("%s: site=%s cannot join the group yet; retrying", r->set.name,
			 r->local);
		struct timespec ts = { 0, MT_BDB_REPL_JOIN_RETRY_MS * 1000000L };
		nanosleep(&ts, NULL);
	}
	mt_info("%s: site=%s replication started sites=%zu priority=%u", r->set.name,
		r->local, r->group.count, r->set.priority);
	return true;
}

void mt_bdb_repl_stop(struct mt_bdb_repl *r)
{
	if (!r->thread_started)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	r->thread_started = false;
}

void mt_bdb_repl_free(struct mt_bdb_repl **repl_p)
{
	struct mt_bdb_repl *r = *repl_p;
	if (r == NULL)
		return;
	*repl_p = NULL;
	mt_bdb_repl_stop(r);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	mt_bdb_repl_group_free(&r->group);
	free(r);
}

/* Log retention. */

size_t mt_bdb_log_select_expired(const struct mt_bdb_log_file *files, size_t count, time_t now,
				 uint64_t retention_secs, uint64_t keep_bytes)
{
	uint64_t total = 0;
	for (size_t i = 0; i < count; i++)
		total += files[i].size;
	size_t n = 0;
	for (; n < count; n++) {
		const struct mt_bdb_log_file *f = &files[n];
		if (!f->archivable || f->mtime > now ||
		    (uint64_t)(now - f->mtime) <= retention_secs)
			break;
		/* What stays if this one goes too. */
		if (total - f->size < keep_bytes)
			break;
		total -= f->size;
	}
	return n;
}

static int path_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mt_bdb_log_file *)a)->path,
		      ((const struct mt_bdb_log_file *)b)->path);
}

static bool listed(char **list, const char *path)
{
	for (char **p = list; p != NULL && *p != NULL; p++)
		if (strcmp(*p, path) == 0)
			return true;
	return false;
}

int mt_bdb_repl_archive_logs(DB_ENV *env, uint64_t retention_secs, uint64_t keep_bytes,
			     unsigned int *removed_r, const char **error_r)
{
	char **all = NULL, **unused = NULL;
	*removed_r = 0;
	/* Every log file, and those no longer needed for recovery (the
	 * default list; file names are log.NNNNNNNNNN, so they sort). */
	int ret = env->log_archive(env, &all, DB_ARCH_LOG | DB_ARCH_ABS);
	if (ret == 0)
		ret = env->log_archive(env, &unused, DB_ARCH_ABS);
	if (ret != 0) {
		*error_r = "log_archive failed";
		free(all);
		free(unused);
		return ret;
	}
	size_t count = 0;
	while (all != NULL && all[count] != NULL)
		count++;
	struct mt_bdb_log_file *files = mt_xcalloc(count + 1, sizeof(*files));
	size_t n = 0;
	for (size_t i = 0; i < count; i++) {
		struct stat sb;
		if (stat(all[i], &sb) != 0)
			continue;	/* gone meanwhile */
		files[n].path = all[i];
		files[n].mtime = sb.st_mtime;
		files[n].size = (uint64_t)sb.st_size;
		files[n].archivable = listed(unused, all[i]);
		n++;
	}
	qsort(files, n, sizeof(*files), path_cmp);
	size_t expired = mt_bdb_log_select_expired(files, n, time(NULL), retention_secs,
						   keep_bytes);
	for (size_t i = 0; i < expired; i++) {
		if (unlink(files[i].path) != 0 && errno != ENOENT) {
			ret = errno;
			*error_r = "removing a log file failed";
			break;
		}
		(*removed_r)++;
	}
	free(files);
	free(all);
	free(unused);
	return ret;
}
