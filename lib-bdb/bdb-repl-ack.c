/* bdb-repl-ack.c — batched durability acknowledgements over a repmgr
 * message channel; see bdb-repl-ack.h for the why and the rule.
 *
 * Wire (both 16 octets, network order): request "MTA1", the master's
 * generation, the end of log it waits for (file, offset); response "MTR1",
 * the replica's generation and its end of log after a flush ("MTR0": no
 * answer, e.g. a malformed request or a failed flush).
 *
 * Trust boundary: see the header. */
#include "bdb-repl-ack.h"
#include "alloc.h"
#include "clock.h"
#include "log.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MSG_SIZE 16
#define CHANNELS_MAX 16
#define RETRY_USECS 200

static void put32(unsigned char *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return ntohl(v);
}

void mt_bdb_repl_ack_dispatch(DB_ENV *env, DB_CHANNEL *channel, DBT *request,
			      u_int32_t nrequest, u_int32_t cb_flags)
{
	unsigned char out[MSG_SIZE];
	memset(out, 0, sizeof(out));
	memcpy(out, "MTR0", 4);
	bool ok = nrequest == 1 && request[0].size == MSG_SIZE &&
		memcmp(request[0].data, "MTA1", 4) == 0;
	DB_LOG_STAT *ls = NULL;
	DB_REP_STAT *rs = NULL;
	if (ok && env->log_flush(env, NULL) == 0 && env->log_stat(env, &ls, 0) == 0 &&
	    env->rep_stat(env, &rs, 0) == 0) {
		memcpy(out, "MTR1", 4);
		put32(out + 4, rs->st_gen);
		put32(out + 8, ls->st_cur_file);
		put32(out + 12, ls->st_cur_offset);
	}
	free(ls);
	free(rs);
	if ((cb_flags & DB_REPMGR_NEED_RESPONSE) != 0) {
		DBT dbt;
		memset(&dbt, 0, sizeof(dbt));
		dbt.data = out;
		dbt.size = sizeof(out);
		(void)channel->send_msg(channel, &dbt, 1, 0);
	}
}

struct mt_bdb_repl_ack {
	DB_ENV *env;
	char *name;
	unsigned int needed;	/* replicas that must have flushed */
	int eids[CHANNELS_MAX];
	DB_CHANNEL *channels[CHANNELS_MAX];
	size_t count;
};

struct mt_bdb_repl_ack *mt_bdb_repl_ack_new(DB_ENV *env, unsigned int sites,
					    const char *name)
{
	struct mt_bdb_repl_ack *ack = mt_xcalloc(1, sizeof(*ack));
	ack->env = env;
	ack->name = mt_xstrdup(name != NULL ? name : "bdb-repl");
	/* repmgr's QUORUM among the other (electable) sites: half of them,
	 * at least one (repmgr_net.c). */
	unsigned int others = sites > 0 ? sites - 1 : 0;
	ack->needed = others == 0 ? 0 : others > 1 ? others / 2 : 1;
	return ack;
}

static DB_CHANNEL *channel_for(struct mt_bdb_repl_ack *ack, int eid)
{
	for (size_t i = 0; i < ack->count; i++)
		if (ack->eids[i] == eid)
			return ack->channels[i];
	if (ack->count == CHANNELS_MAX)
		return NULL;
	DB_CHANNEL *ch = NULL;
	if (ack->env->repmgr_channel(ack->env, eid, &ch, 0) != 0)
		return NULL;
	ack->eids[ack->count] = eid;
	ack->channels[ack->count++] = ch;
	return ch;
}

static void channel_drop(struct mt_bdb_repl_ack *ack, int eid)
{
	for (size_t i = 0; i < ack->count; i++) {
		if (ack->eids[i] != eid)
			continue;
		(void)ack->channels[i]->close(ack->channels[i], 0);
		ack->count--;
		ack->eids[i] = ack->eids[ack->count];
		ack->channels[i] = ack->channels[ack->count];
		return;
	}
}

/* Ask one replica; true if it has flushed through end in generation gen. */
static bool ask(struct mt_bdb_repl_ack *ack, int eid, uint32_t gen, const DB_LSN *end,
		uint64_t timeout_us)
{
	DB_CHANNEL *ch = channel_for(ack, eid);
	if (ch == NULL)
		return false;
	unsigned char req[MSG_SIZE], resp[MSG_SIZE * 4];
	memcpy(req, "MTA1", 4);
	put32(req + 4, gen);
	put32(req + 8, end->file);
	put32(req + 12, end->offset);
	DBT in, out;
	memset(&in, 0, sizeof(in));
	memset(&out, 0, sizeof(out));
	in.data = req;
	in.size = sizeof(req);
	out.data = resp;
	out.ulen = sizeof(resp);
	out.flags = DB_DBT_USERMEM;
	int ret = ch->send_request(ch, &in, 1, &out, (db_timeout_t)timeout_us, 0);
	if (ret != 0) {
		if (ret != DB_TIMEOUT)
			channel_drop(ack, eid);	/* reopened next time */
		return false;
	}
	if (out.size != MSG_SIZE || memcmp(resp, "MTR1", 4) != 0 || get32(resp + 4) != gen)
		return false;
	DB_LSN flushed = { get32(resp + 8), get32(resp + 12) };
	return flushed.file > end->file ||
		(flushed.file == end->file && flushed.offset >= end->offset);
}

/* The connected sites' ids, at most max. */
static size_t connected(DB_ENV *env, int *eids, size_t max)
{
	u_int count = 0;
	DB_REPMGR_SITE *list = NULL;
	size_t n = 0;
	if (env->repmgr_site_list(env, &count, &list) != 0)
		return 0;
	for (u_int i = 0; i < count && n < max; i++)
		if (list[i].status == DB_REPMGR_CONNECTED)
			eids[n++] = list[i].eid;
	free(list);
	return n;
}

int mt_bdb_repl_ack_wait(struct mt_bdb_repl_ack *ack, const DB_LSN *end,
			 unsigned int timeout_ms)
{
	if (ack->needed == 0)
		return 0;
	DB_REP_STAT *rs = NULL;
	if (ack->env->rep_stat(ack->env, &rs, 0) != 0 || rs == NULL ||
	    (rs->st_status & DB_REP_MASTER) == 0) {
		free(rs);
		return DB_REP_UNAVAIL;
	}
	uint32_t gen = rs->st_gen;
	free(rs);
	uint64_t deadline = mt_clock_us() + (uint64_t)timeout_ms * 1000u;
	int done[CHANNELS_MAX];
	size_t ndone = 0;
	for (;;) {
		int eids[CHANNELS_MAX];
		size_t n = connected(ack->env, eids, CHANNELS_MAX);
		for (size_t i = 0; i < n; i++) {
			bool seen = false;
			for (size_t j = 0; j < ndone && !seen; j++)
				seen = done[j] == eids[i];
			uint64_t now = mt_clock_us();
			if (seen || now >= deadline)
				continue;
			if (ask(ack, eids[i], gen, end, deadline - now) && ndone < CHANNELS_MAX)
				done[ndone++] = eids[i];
			if (ndone >= ack->needed)
				return 0;
		}
		if (mt_clock_us() >= deadline)
			break;
		struct timespec pause = { 0, RETRY_USECS * 1000L };
		nanosleep(&pause, NULL);
	}
	return DB_REP_UNAVAIL;
}

void mt_bdb_repl_ack_free(struct mt_bdb_repl_ack **ack_p)
{
	struct mt_bdb_repl_ack *ack = *ack_p;
	if (ack == NULL)
		return;
	*ack_p = NULL;
	for (size_t i = 0; i < ack->count; i++)
		(void)ack->channels[i]->close(ack->channels[i], 0);
	free(ack->name);
	free(ack);
}
