/* bdb-repl-node.c — one site of a Berkeley DB replication group for
 * tests/integration/test-bdb-repl.py: a transactional environment in its
 * own directory, replicated through lib-bdb/bdb-repl.c on a loopback port,
 * driven by one command per line on stdin, one reply line on stdout:
 *
 *   role                   role=R master=H:P gen=G sites=N connected=C
 *                          startup_done=0|1 perm_failed=P inits=I elections=E
 *                          demotions=D
 *   put KEY VALUE          ok | permfailed | err TEXT   (one transaction; ok
 *                          only when the ack policy, QUORUM, was met)
 *   fill PREFIX N SIZE     fill ok=X permfailed=Y err=Z  (N puts of SIZE bytes)
 *   pfill PREFIX N SIZE T  the same from T threads at once, N puts each
 *                          (concurrent commits share bulk messages and acks)
 *   get KEY                value V | notfound | err TEXT
 *   count                  count N | err TEXT
 *   checkpoint             ok | err TEXT
 *   logs                   logs N  (log files in the directory)
 *   archive SECS           archived N | err TEXT   (retention SECS)
 *   quit                   bye, then a clean close
 *
 * Usage: bdb-repl-node -h DIR -l HOST:PORT -s HOST:PORT,HOST:PORT,...
 *        [-c (group creator: the group's first start)] [-p PRIORITY]
 * Role changes are logged on stderr. Trust boundary: none (the test's own
 * commands). */
#include "bdb-repl.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <db.h>

#define NODE_DB "t.db"
#define NODE_RETRIES 20

struct node {
	const char *home;
	DB_ENV *env;
	struct mt_bdb_repl *repl;
};

static void node_event(DB_ENV *env, u_int32_t event, void *info)
{
	struct node *n = env->app_private;
	if (n->repl != NULL && mt_bdb_repl_event(n->repl, event, info))
		return;
	if (event == DB_EVENT_PANIC)
		mt_error("node: Berkeley DB panic");
}

static void node_errcall(const DB_ENV *env, const char *prefix, const char *msg)
{
	(void)env;
	(void)prefix;
	mt_info("node: berkeley-db: %s", msg);
}

static void node_role_changed(void *context, const struct mt_bdb_repl_status *before,
			      const struct mt_bdb_repl_status *now)
{
	(void)context;
	mt_info("node: role-changed %s -> %s master=%s startup_done=%d demotions=%llu",
		mt_bdb_repl_role_name(before->role), mt_bdb_repl_role_name(now->role),
		now->master[0] != '\0' ? now->master : "-", now->startup_done,
		(unsigned long long)now->demotions);
}

static bool is_master(struct node *n)
{
	struct mt_bdb_repl_status st;
	mt_bdb_repl_status(n->repl, &st);
	return st.role == MT_BDB_REPL_ROLE_MASTER;
}

/* A fresh handle per command: one opened before a role change may be dead
 * (DB_REP_HANDLE_DEAD). */
static int db_open(struct node *n, DB **db_r)
{
	int ret = 0;
	for (int i = 0; i < NODE_RETRIES; i++) {
		DB *db;
		if ((ret = db_create(&db, n->env, 0)) != 0)
			return ret;
		u_int32_t flags = DB_THREAD | (is_master(n) ? DB_CREATE | DB_AUTO_COMMIT : 0);
		ret = db->open(db, NULL, NODE_DB, NULL, DB_BTREE, flags, 0600);
		if (ret == 0) {
			*db_r = db;
			return 0;
		}
		(void)db->close(db, 0);
		if (ret != DB_REP_HANDLE_DEAD && ret != DB_LOCK_DEADLOCK)
			break;
	}
	return ret;
}

/* One put in its own transaction: 0 and *replicated_r, or an error. */
static int put_one(struct node *n, DB *db, const char *key, const void *value, size_t size,
		   bool *replicated_r)
{
	int ret = 0;
	for (int i = 0; i < NODE_RETRIES; i++) {
		DB_TXN *txn;
		if ((ret = n->env->txn_begin(n->env, NULL, &txn, 0)) != 0)
			return ret;
		DBT k = { .data = (void *)key, .size = (u_int32_t)strlen(key) };
		DBT v = { .data = (void *)value, .size = (u_int32_t)size };
		ret = db->put(db, txn, &k, &v, 0);
		if (ret != 0) {
			(void)txn->abort(txn);
			if (ret == DB_LOCK_DEADLOCK)
				continue;
			return ret;
		}
		return mt_bdb_repl_commit(txn, 0, replicated_r);
	}
	return ret;
}

static void cmd_role(struct node *n)
{
	struct mt_bdb_repl_status st;
	mt_bdb_repl_status(n->repl, &st);
	printf("role=%s master=%s gen=%u sites=%u connected=%u startup_done=%d "
	       "perm_failed=%llu inits=%llu elections=%llu demotions=%llu\n",
	       mt_bdb_repl_role_name(st.role), st.master[0] != '\0' ? st.master : "-",
	       st.generation, st.sites, st.connected, st.startup_done,
	       (unsigned long long)st.perm_failed, (unsigned long long)st.internal_inits,
	       (unsigned long long)st.elections, (unsigned long long)st.demotions);
}

static void cmd_put(struct node *n, const char *key, const char *value)
{
	DB *db;
	int ret = db_open(n, &db);
	bool replicated = false;
	if (ret == 0) {
		ret = put_one(n, db, key, value, strlen(value), &replicated);
		(void)db->close(db, 0);
	}
	if (ret != 0)
		printf("err %s\n", db_strerror(ret));
	else
		printf("%s\n", replicated ? "ok" : "permfailed");
}

static void cmd_fill(struct node *n, const char *prefix, unsigned int count, size_t size)
{
	char *value = malloc(size + 1);
	memset(value, 'f', size);
	unsigned int ok = 0, failed = 0, errors = 0;
	DB *db;
	int ret = db_open(n, &db);
	for (unsigned int i = 0; i < count; i++) {
		char key[128];
		snprintf(key, sizeof(key), "%s%u", prefix, i);
		bool replicated = false;
		if (ret == 0 && put_one(n, db, key, value, size, &replicated) == 0)
			replicated ? ok++ : failed++;
		else
			errors++;
	}
	if (ret == 0)
		(void)db->close(db, 0);
	free(value);
	printf("fill ok=%u permfailed=%u err=%u\n", ok, failed, errors);
}

struct fill_job {
	struct node *node;
	DB *db;
	char prefix[64];
	unsigned int count;
	size_t size;
	unsigned int ok, failed, errors;
};

static void *fill_thread(void *arg)
{
	struct fill_job *j = arg;
	char *value = malloc(j->size + 1);
	memset(value, 'p', j->size);
	for (unsigned int i = 0; i < j->count; i++) {
		char key[128];
		snprintf(key, sizeof(key), "%s%u", j->prefix, i);
		bool replicated = false;
		if (put_one(j->node, j->db, key, value, j->size, &replicated) == 0)
			replicated ? j->ok++ : j->failed++;
		else
			j->errors++;
	}
	free(value);
	return NULL;
}

static void cmd_pfill(struct node *n, const char *prefix, unsigned int count, size_t size,
		      unsigned int threads)
{
	enum { FILL_THREADS_MAX = 16 };
	struct fill_job jobs[FILL_THREADS_MAX];
	pthread_t ids[FILL_THREADS_MAX];
	DB *db;
	int ret = db_open(n, &db);
	if (ret != 0 || threads == 0 || threads > FILL_THREADS_MAX) {
		printf("err %s\n", ret != 0 ? db_strerror(ret) : "threads");
		if (ret == 0)
			(void)db->close(db, 0);
		return;
	}
	for (unsigned int t = 0; t < threads; t++) {
		jobs[t] = (struct fill_job){ .node = n, .db = db, .count = count, .size = size };
		snprintf(jobs[t].prefix, sizeof(jobs[t].prefix), "%s%u-", prefix, t);
		if (pthread_create(&ids[t], NULL, fill_thread, &jobs[t]) != 0)
			mt_fatal("node: pthread_create failed");
	}
	unsigned int ok = 0, failed = 0, errors = 0;
	for (unsigned int t = 0; t < threads; t++) {
		pthread_join(ids[t], NULL);
		ok += jobs[t].ok;
		failed += jobs[t].failed;
		errors += jobs[t].errors;
	}
	(void)db->close(db, 0);
	printf("fill ok=%u permfailed=%u err=%u\n", ok, failed, errors);
}

static void cmd_get(struct node *n, const char *key)
{
	DB *db;
	int ret = db_open(n, &db);
	if (ret != 0) {
		if (ret == ENOENT)
			printf("notfound\n");
		else
			printf("err %s\n", db_strerror(ret));
		return;
	}
	DBT k = { .data = (void *)key, .size = (u_int32_t)strlen(key) };
	DBT v = { .flags = DB_DBT_MALLOC };
	ret = db->get(db, NULL, &k, &v, 0);
	if (ret == 0)
		printf("value %.*s\n", (int)v.size, (const char *)v.data);
	else if (ret == DB_NOTFOUND)
		printf("notfound\n");
	else
		printf("err %s\n", db_strerror(ret));
	free(v.data);
	(void)db->close(db, 0);
}

static void cmd_count(struct node *n)
{
	DB *db;
	int ret = db_open(n, &db);
	if (ret == ENOENT) {
		printf("count 0\n");
		return;
	}
	if (ret != 0) {
		printf("err %s\n", db_strerror(ret));
		return;
	}
	DBC *c = NULL;
	unsigned long count = 0;
	if ((ret = db->cursor(db, NULL, &c, 0)) == 0) {
		DBT k = { .flags = DB_DBT_MALLOC }, v = { .flags = DB_DBT_MALLOC };
		while ((ret = c->get(c, &k, &v, DB_NEXT)) == 0) {
			count++;
			free(k.data);
			free(v.data);
		}
		(void)c->close(c);
		if (ret == DB_NOTFOUND)
			ret = 0;
	}
	(void)db->close(db, 0);
	if (ret != 0)
		printf("err %s\n", db_strerror(ret));
	else
		printf("count %lu\n", count);
}

static void cmd_logs(struct node *n)
{
	DIR *d = opendir(n->home);
	unsigned int count = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL)
		count += strncmp(e->d_name, "log.", 4) == 0;
	if (d != NULL)
		closedir(d);
	printf("logs %u\n", count);
}

static void dispatch(struct node *n, char *line)
{
	char *save = NULL;
	const char *cmd = strtok_r(line, " \t", &save);
	const char *a1 = strtok_r(NULL, " \t", &save);
	const char *a2 = strtok_r(NULL, " \t", &save);
	const char *a3 = strtok_r(NULL, " \t", &save);
	if (cmd == NULL)
		printf("err empty\n");
	else if (strcmp(cmd, "role") == 0)
		cmd_role(n);
	else if (strcmp(cmd, "put") == 0 && a2 != NULL)
		cmd_put(n, a1, a2);
	else if (strcmp(cmd, "fill") == 0 && a3 != NULL)
		cmd_fill(n, a1, (unsigned int)strtoul(a2, NULL, 10), strtoul(a3, NULL, 10));
	else if (strcmp(cmd, "pfill") == 0 && a3 != NULL) {
		const char *a4 = strtok_r(NULL, " \t", &save);
		cmd_pfill(n, a1, (unsigned int)strtoul(a2, NULL, 10), strtoul(a3, NULL, 10),
			  a4 != NULL ? (unsigned int)strtoul(a4, NULL, 10) : 4);
	} else if (strcmp(cmd, "get") == 0 && a1 != NULL)
		cmd_get(n, a1);
	else if (strcmp(cmd, "count") == 0)
		cmd_count(n);
	else if (strcmp(cmd, "checkpoint") == 0) {
		int ret = n->env->txn_checkpoint(n->env, 0, 0, DB_FORCE);
		printf(ret == 0 ? "ok\n" : "err %s\n", db_strerror(ret));
	} else if (strcmp(cmd, "logs") == 0)
		cmd_logs(n);
	else if (strcmp(cmd, "archive") == 0 && a1 != NULL) {
		unsigned int removed = 0;
		const char *error = NULL;
		int ret = mt_bdb_repl_archive_logs(n->env, strtoull(a1, NULL, 10), 0, &removed,
						   &error);
		if (ret == 0)
			printf("archived %u\n", removed);
		else
			printf("err %s: %s\n", error, db_strerror(ret));
	} else
		printf("err unknown command\n");
}

static struct mt_bdb_repl *node_open(struct node *n, const char *local, char *sites,
				     bool creator, unsigned int priority)
{
	const char *list[MT_BDB_REPL_SITES_MAX + 1];
	size_t count = 0;
	char *save = NULL;
	for (char *s = strtok_r(sites, ",", &save); s != NULL && count <= MT_BDB_REPL_SITES_MAX;
	     s = strtok_r(NULL, ",", &save))
		list[count++] = s;
	struct mt_bdb_repl_group group;
	const char *error;
	if (!mt_bdb_repl_group_parse(list, count, local, &group, &error))
		mt_fatal("node: -s/-l: %s", error);
	int ret = db_env_create(&n->env, 0);
	if (ret != 0)
		mt_fatal("node: db_env_create: %s", db_strerror(ret));
	n->env->app_private = n;
	n->env->set_errcall(n->env, node_errcall);
	(void)n->env->set_event_notify(n->env, node_event);
	struct mt_bdb_repl_settings set = {
		.name = "node", .group = &group, .priority = priority, .creator = creator,
		.role_changed = node_role_changed,
	};
	n->repl = mt_bdb_repl_configure(n->env, &set, &error);
	mt_bdb_repl_group_free(&group);
	if (n->repl == NULL)
		mt_fatal("node: %s", error);
	/* Small log files, so a few hundred records span several. */
	if ((ret = n->env->set_lk_detect(n->env, DB_LOCK_DEFAULT)) != 0 ||
	    (ret = n->env->set_lg_max(n->env, 256u << 10)) != 0 ||
	    (ret = n->env->set_lg_bsize(n->env, 64u << 10)) != 0 ||
	    (ret = n->env->open(n->env, n->home, DB_CREATE | DB_INIT_TXN | DB_INIT_LOG |
				DB_INIT_LOCK | DB_INIT_MPOOL | DB_RECOVER |
				MT_BDB_REPL_ENV_FLAGS, 0600)) != 0)
		mt_fatal("node: opening %s: %s", n->home, db_strerror(ret));
	if (!mt_bdb_repl_start(n->repl, 60000, &error))
		mt_fatal("node: %s", error);
	return n->repl;
}

int main(int argc, char **argv)
{
	struct node n = { 0 };
	const char *local = NULL;
	char *sites = NULL;
	bool creator = false;
	unsigned int priority = 0;
	int opt;
	while ((opt = getopt(argc, argv, "h:l:s:cp:")) != -1) {
		switch (opt) {
		case 'h': n.home = optarg; break;
		case 'l': local = optarg; break;
		case 's': sites = optarg; break;
		case 'c': creator = true; break;
		case 'p': priority = (unsigned int)strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: %s -h DIR -l HOST:PORT -s SITES [-c] [-p PRIO]\n",
				argv[0]);
			return 2;
		}
	}
	if (n.home == NULL || local == NULL || sites == NULL) {
		fprintf(stderr, "usage: %s -h DIR -l HOST:PORT -s SITES [-c] [-p PRIO]\n", argv[0]);
		return 2;
	}
	mt_log_init("bdb-repl-node", MT_LOG_TARGET_STDERR);
	setvbuf(stdout, NULL, _IOLBF, 0);
	node_open(&n, local, sites, creator, priority);
	printf("started\n");
	char line[1024];
	while (fgets(line, sizeof(line), stdin) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (strcmp(line, "quit") == 0)
			break;
		dispatch(&n, line);
		fflush(stdout);
	}
	mt_bdb_repl_stop(n.repl);
	int ret = n.env->close(n.env, 0);
	mt_bdb_repl_free(&n.repl);
	printf("bye\n");
	return ret == 0 ? 0 : 1;
}
