/* delivery-failover.c — a store shard that is a replication group: the
 * sites [shards] lists for it (NAME = SITE | SITE | SITE), the one new
 * LMTP connections go to (the last known good: the master that last
 * answered 2xx, else the next after the last that failed), and a job's
 * further tries while its shard fails over.
 *
 * Only the master of a group takes deliveries: a replica greets 421 4.3.2
 * ("replica of shard S, master is ...") and closes, a master that lost its
 * quorum answers 451 4.3.0 ("not replicated") after DATA, a demoted master
 * exits and breaks its sessions. A job to a shard of several sites whose
 * recipients got such a temporary answer — a connection refused, timed out
 * or broken in any state (conn_fail: 451 4.4.2), a 421, or a 451 to MAIL,
 * RCPT, DATA or the final dot — is tried again on the next site at once,
 * each other site once, then every 250 ms doubling to 2 s, for
 * shard_failover_budget from its first such failure: the job stays in its
 * attempt (no queue write, no retry_schedule step). Recipients that got a
 * final answer keep it; only the others go again. After the budget, the
 * last answer decides as it always did: a deferral, never a bounce (a
 * store's answers here are all 4xx).
 *
 * A job lost after its data was sent (the store may have committed it) goes
 * again with the same queue id on MAIL (XQUEUEID): the store's delivered.db,
 * replicated with the mailbox, answers the second delivery "250 Already
 * delivered" without a second copy.
 *
 * A shard of one site, and shard_failover_budget 0, take none of this: the
 * first failure defers as before.
 *
 * Trust boundary: reply codes are the stores' (bounded by smtp-reply.c);
 * sites come from the operator's [shards]. */
#include "delivery-private.h"
#include "alloc.h"
#include "clock.h"
#include "loop.h"
#include "mailtier-settings.h"
#include "mta-metrics.h"
#include "mta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first failed pass over the other sites is immediate; then this,
 * doubling, up to FAILOVER_DELAY_MAX. */
#define FAILOVER_DELAY_MIN 250u
#define FAILOVER_DELAY_MAX 2000u
/* A site of a group gets at most this long to accept a connection: a host
 * that is gone must not cost connect_timeout of the budget. */
#define FAILOVER_CONNECT_MAX 2000u
/* ... and this to greet: a store greets at accept; one that does not (a
 * stopped process, a host cut off without a FIN) must not hold the job
 * for client_timeout. */
#define FAILOVER_GREETING_MAX 5000u

const struct mt_shard_addresses *dest_shard(const struct dest *dest)
{
	if (dest->proto != DEST_LMTP)
		return NULL;
	return mt_config_map_get(dest->delivery->mta->config, "shards", dest->name);
}

unsigned int dest_sites(const struct dest *dest)
{
	const struct mt_shard_addresses *shard = dest_shard(dest);
	return shard != NULL ? shard->n_sites : 1;
}

const struct mt_hostport *dest_site_lmtp(const struct dest *dest,
					 unsigned int *site_r,
					 uint64_t *connect_ms_r,
					 uint64_t *greeting_ms_r)
{
	const struct mt_shard_addresses *shard = dest_shard(dest);
	const struct mt_mta_settings *set = dest->delivery->mta->set;
	if (shard == NULL || shard->sites[0].lmtp.host == NULL)
		return NULL;
	*site_r = dest->site % shard->n_sites;
	*connect_ms_r = set->connect_timeout;
	*greeting_ms_r = set->client_timeout;
	if (shard->n_sites > 1) {
		if (*connect_ms_r > FAILOVER_CONNECT_MAX)
			*connect_ms_r = FAILOVER_CONNECT_MAX;
		if (*greeting_ms_r > FAILOVER_GREETING_MAX)
			*greeting_ms_r = FAILOVER_GREETING_MAX;
	}
	return &shard->sites[*site_r].lmtp;
}

bool dest_site_current(const struct dest *dest, unsigned int site)
{
	/* The usual case first (every connection of a one-site shard is to
	 * site 0): no [shards] lookup on the delivery path. */
	if (dest->site == site)
		return true;
	unsigned int n = dest_sites(dest);
	return n <= 1 || dest->site % n == site;
}

void dest_site_failed(struct dest *dest, unsigned int site, const char *why)
{
	unsigned int n = dest_sites(dest);
	if (n <= 1 || dest->site % n != site)
		return;	/* one site, or moved on already */
	dest->site = (site + 1) % n;
	/* Each site's first failure since the last success at info; the
	 * polling after it would repeat them many times a second. */
	bool first = (dest->sites_failed & (1u << site)) == 0;
	dest->sites_failed |= 1u << site;
	mt_log(first ? MT_LOG_INFO : MT_LOG_DEBUG, "shard=%s site=%u "
	       "event=site_failed reason=%s: next site %u", dest->name, site + 1,
	       why, dest->site + 1);
}

void dest_site_good(struct dest *dest, unsigned int site)
{
	if (dest->sites_failed == 0 && dest->site == site)
		return;		/* the usual case: nothing to change */
	unsigned int n = dest_sites(dest);
	dest->sites_failed = 0;
	if (n <= 1 || dest->site % n == site)
		return;
	mt_log(MT_LOG_INFO, "shard=%s site=%u event=site_good: deliveries go "
	       "there", dest->name, site + 1);
	dest->site = site;
}

bool failover_retryable(const struct rcpt_result *r)
{
	return r->code == 421 || r->code == 451;
}

bool failover_possible(const struct job *job)
{
	const struct delivery *d = job->dest->delivery;
	uint64_t budget = d->mta->set->shard_failover_budget;
	if (d->draining || budget == 0 || dest_sites(job->dest) <= 1)
		return false;
	if (job->failover_start == 0)
		return true;
	uint64_t spent = mt_clock_ms() - job->failover_start;
	if (spent < budget)
		return true;
	mta_metrics_failover(d->mta, true);
	mt_log(MT_LOG_INFO, "shard=%s event=failover_budget_spent tries=%u "
	       "budget_ms=%llu: deferring", job->dest->name, job->failover_tries,
	       (unsigned long long)budget);
	return false;
}

/* Unlink job from its dest's waiting list. */
static void waiting_remove(struct job *job)
{
	for (struct job **p = &job->dest->waiting; *p != NULL; p = &(*p)->next) {
		if (*p == job) {
			*p = job->next;
			job->next = NULL;
			return;
		}
	}
}

static void retry_cb(void *context)
{
	struct job *job = context;
	mt_timer_free(&job->failover_timer);
	waiting_remove(job);
	for (unsigned int i = 0; i < job->count; i++) {
		job->results[i].code = 0;
		MT_FREE(&job->results[i].text);
	}
	MT_FREE(&job->relay);
	dest_submit(job->dest, job);
}

void failover_again(struct job *job)
{
	struct dest *dest = job->dest;
	unsigned int n = dest_sites(dest);
	uint64_t now = mt_clock_ms();
	if (job->failover_start == 0)
		job->failover_start = now;
	dest_site_failed(dest, job->site, job->results[0].text);
	job->failover_tries++;
	mta_metrics_failover(dest->delivery->mta, false);
	/* Each other site once at once; then poll with backoff. */
	uint64_t delay = 0;
	if (job->failover_tries >= n) {
		unsigned int k = job->failover_tries - n;
		delay = k >= 4 ? FAILOVER_DELAY_MAX : FAILOVER_DELAY_MIN << k;
		if (delay > FAILOVER_DELAY_MAX)
			delay = FAILOVER_DELAY_MAX;
	}
	uint64_t budget = dest->delivery->mta->set->shard_failover_budget;
	uint64_t left = budget - (now - job->failover_start);
	if (delay > left)
		delay = left;
	mt_log(MT_LOG_DEBUG, "shard=%s event=failover try=%u delay_ms=%llu "
	       "recipients=%u last=%s", dest->name, job->failover_tries,
	       (unsigned long long)delay, job->count, job->results[0].text);
	job->next = dest->waiting;
	dest->waiting = job;
	job->failover_timer = mt_timer_add(dest->delivery->mta->loop,
					   (unsigned int)delay, false, retry_cb, job);
}

void failover_flush(struct dest *dest)
{
	struct job *job;
	while ((job = dest->waiting) != NULL) {
		dest->waiting = job->next;
		job->next = NULL;
		mt_timer_free(&job->failover_timer);
		/* Draining: decided by its last answers (deferrals). */
		delivery_job_done(job);
	}
}
