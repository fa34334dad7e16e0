/* delivery-dest.c — destinations: one per next hop (a store shard over
 * LMTP, or a remote domain / fixed host over SMTP), each with a FIFO of
 * jobs, a limit on its connections (delivery_concurrency for a shard,
 * remote_concurrency for a remote destination: the seed's job-controller
 * job-limit) and its cached connections, which take the next job as soon as
 * they finish one.
 *
 * A connection that fails before running any job (refused, timed out, bad
 * greeting) while no other connection to the destination is alive fails
 * every queued job with its error: they are deferred and retried by the
 * schedule, instead of each waiting for its own connect timeout (for a
 * shard of several sites, they go to its next site first:
 * delivery-failover.c). Idle connections to a site that has failed since
 * are closed rather than given work.
 *
 * Trust boundary: none of its own (jobs and results are ours). */
#include "delivery-private.h"
#include "alloc.h"
#include "mta.h"

#include <stdlib.h>
#include <string.h>

static unsigned int dest_limit(const struct dest *dest)
{
	const struct mt_mta_settings *set = dest->delivery->mta->set;
	return (unsigned int)(dest->proto == DEST_LMTP ? set->delivery_concurrency :
			      set->remote_concurrency);
}

struct dest *dest_get(struct delivery *d, enum dest_proto proto,
		      const char *name, const struct mt_hostport *fixed)
{
	for (struct dest *dest = d->dests; dest != NULL; dest = dest->next)
		if (dest->proto == proto && strcmp(dest->name, name) == 0)
			return dest;
	struct dest *dest = mt_xcalloc(1, sizeof(*dest));
	dest->delivery = d;
	dest->proto = proto;
	dest->name = mt_xstrdup(name);
	if (fixed != NULL) {
		dest->fixed.host = mt_xstrdup(fixed->host);
		dest->fixed.port = fixed->port;
	}
	dest->jobs_tail = &dest->jobs;
	dest->next = d->dests;
	d->dests = dest;
	d->n_dests++;
	return dest;
}

struct job *dest_next_job(struct dest *dest)
{
	struct job *job = dest->jobs;
	if (job == NULL)
		return NULL;
	dest->jobs = job->next;
	if (dest->jobs == NULL)
		dest->jobs_tail = &dest->jobs;
	job->next = NULL;
	dest->queued--;
	return job;
}

/* Connections not yet idle nor running a job: being set up. */
static unsigned int starting(const struct dest *dest)
{
	unsigned int n = 0;
	for (struct conn *c = dest->conns; c != NULL; c = conn_next(c))
		if (conn_is_starting(c))
			n++;
	return n;
}

static void pump(struct dest *dest)
{
	/* Idle connections first: they are ready now (those to a site of
	 * the shard that has failed since are closed instead). */
	for (struct conn *c = dest->conns, *next; c != NULL && dest->queued > 0;
	     c = next) {
		next = conn_next(c);
		if (!conn_is_idle(c))
			continue;
		if (dest_site_current(dest, conn_site(c)))
			conn_run(c, dest_next_job(dest));
		else
			conn_quit(c);
	}
	/* Then as many new ones as there is work for, within the limit.
	 * Each takes a job when it is ready (dest_conn_idle()). */
	unsigned int limit = dest_limit(dest);
	unsigned int busy_or_starting = dest->n_conns;
	unsigned int setting_up = starting(dest);
	while (dest->queued > setting_up && busy_or_starting < limit) {
		struct conn *c = conn_new(dest);
		conn_set_next(c, dest->conns);
		dest->conns = c;
		dest->n_conns++;
		dest->delivery->conns++;
		dest->delivery->stats.connections++;
		busy_or_starting++;
		setting_up++;
	}
}

void dest_submit(struct dest *dest, struct job *job)
{
	*dest->jobs_tail = job;
	dest->jobs_tail = &job->next;
	job->next = NULL;
	dest->queued++;
	pump(dest);
}

/* Every queued job fails with error, as if tried on site. */
static void fail_queued(struct dest *dest, unsigned int site, int code,
			const char *error)
{
	struct job *job;
	while ((job = dest_next_job(dest)) != NULL) {
		job->site = site;
		for (unsigned int i = 0; i < job->count; i++)
			job_set_result(job, i, code, error);
		delivery_job_done(job);
	}
}

void dest_conn_idle(struct dest *dest, struct conn *conn)
{
	if (!dest_site_current(dest, conn_site(conn))) {
		/* Its site failed meanwhile: the next job goes elsewhere. */
		conn_quit(conn);
		return;
	}
	struct job *job = dest_next_job(dest);
	if (job != NULL) {
		conn_run(conn, job);
		return;
	}
	const struct delivery *d = dest->delivery;
	if (d->draining || d->mta->set->connection_cache_time == 0)
		conn_quit(conn);
}

void dest_conn_gone(struct dest *dest, struct conn *conn, bool failed,
		    int code, const char *error)
{
	/* Unlink by rebuilding: lists are short (the concurrency limit). */
	struct conn *kept = NULL;
	for (struct conn *c = dest->conns, *next; c != NULL; c = next) {
		next = conn_next(c);
		if (c == conn)
			continue;
		conn_set_next(c, kept);
		kept = c;
	}
	dest->conns = kept;
	dest->n_conns--;
	dest->delivery->conns--;
	if (failed)
		dest_site_failed(dest, conn_site(conn), error);
	if (failed && dest->n_conns == 0)
		fail_queued(dest, conn_site(conn), code, error);
	else
		pump(dest);
	if (dest->delivery->draining)
		mta_drain_check(dest->delivery->mta);
}

void dests_close_idle(struct delivery *d)
{
	for (struct dest *dest = d->dests; dest != NULL; dest = dest->next) {
		for (struct conn *c = dest->conns, *next; c != NULL; c = next) {
			next = conn_next(c);
			if (conn_is_idle(c))
				conn_quit(c);
		}
	}
}

unsigned int dests_busy(const struct delivery *d)
{
	unsigned int n = 0;
	for (const struct dest *dest = d->dests; dest != NULL; dest = dest->next)
		n += dest->n_conns + dest->queued;
	return n;
}

void dests_free(struct delivery *d)
{
	for (struct dest *dest = d->dests; dest != NULL; dest = dest->next) {
		failover_flush(dest);
		fail_queued(dest, dest->site, 451, "451 4.3.2 delivery stopped (shutdown)");
	}
	while (d->dests != NULL) {
		struct dest *dest = d->dests;
		while (dest->conns != NULL)
			conn_close(dest->conns, "shutdown");
		d->dests = dest->next;
		free(dest->name);
		mt_hostport_clear(&dest->fixed);
		free(dest);
	}
	d->n_dests = 0;
}
