/* mmp-clients.c — what the MMP remembers per client address: how many
 * connections it has open (conn_limit_per_client) and its recent failed
 * logins (the growing delay before a failure answer, the seed's "bad guy
 * penalty", and the auth_fail_limit block). The bookkeeping is the one
 * the MTA and popstore use too (lib/authfail.c); this file holds the
 * MMP's limits and turns a peer's sockaddr into the table's key.
 *
 * Delay for the n-th failure within auth_fail_window of the previous one:
 * auth_fail_delay * 2^(n-1), at most MMP_AUTH_FAIL_DELAY_MAX. When n
 * reaches auth_fail_limit the address is blocked until auth_fail_window
 * has passed since its last failure: new connections from it are refused,
 * and so is every login on a connection it opened before, before the
 * directory is asked (mmp-login.c). The checks under way count too: at
 * most auth_fail_limit - n of them run at once for the address, the
 * other logins wait, so logins sent together on many connections test
 * no more than auth_fail_limit passwords a window.
 * A successful login does not clear the count.
 *
 * Trust boundary: the key is the TCP peer address (IPv4, or IPv6 /128; a
 * v4-mapped address counts as IPv4), which the client controls only as
 * far as TCP lets it. Threads: admits come from the main loop, releases
 * and failures from the workers; lib/authfail's table locks itself.
 * No RFC applies. */
#include "mmp.h"
#include "alloc.h"
#include "authfail.h"
#include "authfail-metrics.h"

#include <stdlib.h>

struct mmp_clients {
	struct mt_authfail_limits limits;
	struct mt_authfail *table;
	struct mt_authfail_metrics *metrics;	/* table "client" */
};

struct mmp_clients *mmp_clients_new(const struct mmp_clients_settings *set)
{
	struct mmp_clients *c = mt_xcalloc(1, sizeof(*c));
	c->limits = (struct mt_authfail_limits){
		.delay = set->auth_fail_delay,
		.window = set->auth_fail_window,
		.block_after = set->auth_fail_limit,
		.sessions = set->conn_limit_per_client,
	};
	c->table = mt_authfail_new();
	return c;
}

void mmp_clients_free(struct mmp_clients **clients_p)
{
	struct mmp_clients *c = *clients_p;
	if (c == NULL)
		return;
	*clients_p = NULL;
	mt_authfail_metrics_free(&c->metrics);
	mt_authfail_free(&c->table);
	free(c);
}

enum mmp_admit mmp_clients_admit(struct mmp_clients *c,
				 const struct sockaddr *peer, uint64_t now_ms)
{
	char key[MT_AUTHFAIL_KEY_MAX];

	if (!mt_authfail_key(peer, key, sizeof(key)))
		return MMP_ADMIT_OK;	/* AF_UNIX: not tracked */
	switch (mt_authfail_session_open(c->table, key, &c->limits, now_ms)) {
	case MT_AUTHFAIL_ADMIT_SESSIONS:
		return MMP_ADMIT_PER_CLIENT;
	case MT_AUTHFAIL_ADMIT_BLOCKED:
		return MMP_ADMIT_BLOCKED;
	case MT_AUTHFAIL_ADMIT_OK:
	default:
		return MMP_ADMIT_OK;
	}
}

void mmp_clients_release(struct mmp_clients *c, const struct sockaddr *peer)
{
	char key[MT_AUTHFAIL_KEY_MAX];

	if (mt_authfail_key(peer, key, sizeof(key)))
		mt_authfail_session_close(c->table, key);
}

uint64_t mmp_clients_auth_failed(struct mmp_clients *c,
				 const struct sockaddr *peer, uint64_t now_ms,
				 bool *blocked_r)
{
	char key[MT_AUTHFAIL_KEY_MAX];

	*blocked_r = false;
	if (!mt_authfail_key(peer, key, sizeof(key)))
		return mt_authfail_delay(c->limits.delay, 1);
	return mt_authfail_failed(c->table, key, &c->limits, now_ms, blocked_r);
}

enum mmp_attempt mmp_clients_attempt_start(struct mmp_clients *c,
					   const struct sockaddr *peer, uint64_t now_ms)
{
	char key[MT_AUTHFAIL_KEY_MAX];

	if (!mt_authfail_key(peer, key, sizeof(key)))
		return MMP_ATTEMPT_OK;	/* AF_UNIX: not tracked */
	switch (mt_authfail_attempt_start(c->table, key, &c->limits, now_ms)) {
	case MT_AUTHFAIL_ATTEMPT_WAIT:
		return MMP_ATTEMPT_WAIT;
	case MT_AUTHFAIL_ATTEMPT_BLOCKED:
		return MMP_ATTEMPT_BLOCKED;
	case MT_AUTHFAIL_ATTEMPT_OK:
	default:
		return MMP_ATTEMPT_OK;
	}
}

void mmp_clients_attempt_done(struct mmp_clients *c, const struct sockaddr *peer)
{
	char key[MT_AUTHFAIL_KEY_MAX];

	if (mt_authfail_key(peer, key, sizeof(key)))
		mt_authfail_attempt_done(c->table, key);
}

void mmp_clients_sweep(struct mmp_clients *c, uint64_t now_ms)
{
	mt_authfail_sweep(c->table, &c->limits, now_ms);
}

void mmp_clients_export_metrics(struct mmp_clients *c, struct mt_metrics *m)
{
	c->metrics = mt_authfail_metrics_new(m, "client", &c->table);
}

size_t mmp_clients_count(struct mmp_clients *c)
{
	return mt_authfail_count(c->table);
}
