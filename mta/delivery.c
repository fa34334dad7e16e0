/* delivery.c — delivery attempts: for a queued message, take the
 * recipients that are due (pending, or deferred and past their next try),
 * route each one (local domain: the directory names the user's shard, which
 * [shards] maps to an LMTP address; other domains: transport_map, relayhost
 * or DNS MX), hand them to their destinations as jobs grouped per message
 * and destination, and when every job is back record each recipient's fate
 * in the queue with one write, with a DSN for those that failed for good.
 *
 * Fates (RFC 5321 4.2.1, 6.1): a 2xx reply delivers, a 5xx bounces, a 4xx
 * or a broken connection defers to now + retry_schedule[attempts - 1] (the
 * last delay repeating), and a recipient still deferred after
 * max_queue_lifetime bounces with 5.4.7. A message with more Received: lines
 * than max_hops bounces at once with 5.4.6 (RFC 5321 6.3). Never a DSN to
 * the null sender (RFC 5321 6.1, RFC 3461 6.2).
 *
 * Replicated shards: a shard of several sites in [shards] is a replication
 * group; its temporary answers (a site down, a replica's 421, a broken
 * connection, a 451) keep the recipients in this attempt and send them to
 * the shard's next site for shard_failover_budget before the answer decides
 * (delivery-failover.c).
 *
 * Stale routes: a store that answers a RCPT with its "not on this shard"
 * (451 4.4.0, popstore/lmtp-commands.c) says our lookup is older than its
 * own: the mailbox moved, or our cache or directory replica lags. The
 * recipient's cached lookup is dropped and the address looked up again in
 * the same attempt; a new shard gets the recipient at once, anything else
 * (the same shard, a directory that cannot answer) defers it with the
 * store's 451, never a bounce. Once per attempt.
 *
 * Trust boundary: queue contents are ours; directory answers come through
 * libdirsvc; server replies were bounded by lib-mail/smtp-reply.c. */
#include "delivery-private.h"
#include "clock.h"
#include "alloc.h"
#include "dirsvc.h"
#include "loop.h"
#include "mta-metrics.h"
#include "mta-policy.h"
#include "mta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RETRY_SCAN_MSECS 1000u
#define JOB_MAX_RCPTS 100u
#define FORWARD_DEPTH_MAX 1

struct route {
	struct attempt *attempt;
	unsigned int index;		/* into msg->rcpts */
	enum dest_proto proto;
	char *dest_name;		/* shard, domain or host:port */
	struct mt_hostport fixed;	/* copied; host NULL: none */
	char *address;			/* for RCPT TO */
	bool routed, decided;
	int code;
	char *text;
	char *relay;			/* who answered, for logs and DSNs */
	struct mt_dirsvc_request *lookup;
	char *looked_up;		/* the address asked of the directory */
	unsigned int depth;		/* forwards followed */
	bool dispatched;		/* in a job */
	/* Routed again after "not on this shard" from stale_shard, whose
	 * reply (stale_text) is the fate if no other shard is found. */
	char *stale_shard, *stale_text;
};

struct attempt {
	struct attempt *prev, *next;
	struct delivery *d;
	struct queue_msg *msg;
	struct mt_logctx log;
	unsigned int count;
	struct route *routes;
	unsigned int lookups, jobs;
	bool body_wait, abandoned;
};

static void attempt_dispatch(struct attempt *att);
static void attempt_finish(struct attempt *att);

/* Results */

void job_set_result(struct job *job, unsigned int i, int code, const char *text)
{
	struct rcpt_result *r = &job->results[i];
	if (r->code != 0)
		return;	/* the first final answer stands */
	r->code = code;
	free(r->text);
	r->text = mt_xstrdup(text);
}

struct queue_msg *job_msg(const struct job *job)
{
	return job->attempt->msg;
}

void job_free(struct job *job)
{
	for (unsigned int i = 0; i < job->count; i++) {
		free(job->rcpt_address[i]);
		free(job->results[i].text);
	}
	free(job->rcpt_index);
	free(job->msg_index);
	free(job->rcpt_address);
	free(job->results);
	free(job->relay);
	mt_timer_free(&job->failover_timer);
	free(job);
}

static void route_decide(struct route *rt, int code, const char *text)
{
	if (rt->decided)
		return;
	rt->decided = true;
	rt->code = code;
	free(rt->text);
	rt->text = mt_xstrdup(text);
}

/* Attempts */

static void attempt_free(struct attempt *att)
{
	for (unsigned int i = 0; i < att->count; i++) {
		struct route *rt = &att->routes[i];
		mt_dirsvc_request_cancel(&rt->lookup);
		free(rt->looked_up);
		free(rt->stale_shard);
		free(rt->stale_text);
		free(rt->dest_name);
		mt_hostport_clear(&rt->fixed);
		free(rt->address);
		free(rt->text);
		free(rt->relay);
		if (!att->msg->removed && rt->index < att->msg->rcpt_count)
			att->msg->rcpts[rt->index].busy = false;
	}
	if (att->d != NULL) {
		if (att->prev != NULL)
			att->prev->next = att->next;
		else if (att->d->attempts == att)
			att->d->attempts = att->next;
		if (att->next != NULL)
			att->next->prev = att->prev;
	}
	if (att->msg->delivery == att)
		att->msg->delivery = NULL;
	queue_msg_unref(&att->msg);
	free(att->routes);
	free(att);
}

static bool rcpt_due(const struct queue_rcpt *r, int64_t now)
{
	if (r->busy)
		return false;
	return r->state == QUEUE_RCPT_PENDING ||
		(r->state == QUEUE_RCPT_DEFERRED && r->next_try <= now);
}

static void lookup_done(const struct mt_dirsvc_recipient *result, void *context);

/* Route one recipient, or decide its fate at once. */
static void route_address(struct attempt *att, unsigned int i, const char *address)
{
	struct delivery *d = att->d;
	struct route *rt = &att->routes[i];
	const char *at = strrchr(address, '@');
	const char *domain = at != NULL ? at + 1 : "";
	free(rt->address);
	rt->address = mt_xstrdup(address);
	if (*domain != '[' && mta_policy_is_local_domain(d->mta->policy, domain)) {
		free(rt->looked_up);
		rt->looked_up = mt_xstrdup(address);
		att->lookups++;
		rt->lookup = mt_dirsvc_lookup_recipient(d->mta->dir, &att->log, address,
							lookup_done, rt);
		return;
	}
	rt->proto = DEST_SMTP;
	rt->routed = true;
	if (*domain == '[') {
		/* An address literal: that host, port 25. */
		char host[64];
		size_t len = strlen(domain);
		const char *start = strncasecmp(domain, "[IPv6:", 6) == 0 ? domain + 6 :
			domain + 1;
		snprintf(host, sizeof(host), "%.*s", (int)(domain + len - 1 - start), start);
		rt->fixed.host = mt_xstrdup(host);
		rt->fixed.port = 25;
		rt->dest_name = mt_xasprintf("[%s]:25", host);
		return;
	}
	const struct mt_hostport *hop = mta_policy_nexthop(d->mta->policy, domain);
	if (hop != NULL) {
		rt->fixed.host = mt_xstrdup(hop->host);
		rt->fixed.port = hop->port;
		rt->dest_name = mt_hostport_string(hop);
	} else {
		rt->dest_name = mt_xstrdup(domain);
	}
}

/* The directory's answer for rt: routed, or its fate decided. */
static void route_result(struct attempt *att, unsigned int i,
			 const struct mt_dirsvc_recipient *result)
{
	struct route *rt = &att->routes[i];
	switch (result->status) {
	case MT_DIRSVC_FOUND:
		if (result->account == MT_DIRSVC_DISABLED) {
			route_decide(rt, 550, "550 5.2.1 mailbox disabled");
		} else if (result->forward != NULL && rt->depth < FORWARD_DEPTH_MAX) {
			mt_slog(MT_LOG_INFO, &att->log, "to=<%s> forwarded to <%s>",
				rt->address, result->forward);
			rt->depth++;
			route_address(att, i, result->forward);
		} else {
			rt->proto = DEST_LMTP;
			free(rt->dest_name);
			rt->dest_name = mt_xstrdup(result->shard);
			free(rt->address);
			rt->address = mt_xstrdup(result->address);
			rt->routed = true;
		}
		break;
	case MT_DIRSVC_NOT_FOUND:
	case MT_DIRSVC_INVALID:
		route_decide(rt, 550, "550 5.1.1 user unknown");
		break;
	case MT_DIRSVC_TEMPFAIL:
		route_decide(rt, 451, "451 4.4.3 directory temporarily unavailable");
		break;
	}
}

static void lookup_done(const struct mt_dirsvc_recipient *result, void *context)
{
	struct route *rt = context;
	struct attempt *att = rt->attempt;
	rt->lookup = NULL;
	att->lookups--;
	if (rt->stale_shard != NULL && (result->status != MT_DIRSVC_FOUND ||
					result->account == MT_DIRSVC_DISABLED)) {
		/* Routed again: only a new route is taken now; the next try
		 * asks the directory again and applies its verdict. */
		route_decide(rt, 451, rt->stale_text);
	} else {
		route_result(att, (unsigned int)(rt - att->routes), result);
	}
	if (rt->stale_shard != NULL && rt->routed && rt->proto == DEST_LMTP &&
	    strcmp(rt->dest_name, rt->stale_shard) == 0) {
		/* The directory still names the shard that refused it. */
		rt->routed = false;
		route_decide(rt, 451, rt->stale_text);
	}
	if (att->lookups == 0 && !att->body_wait)
		attempt_dispatch(att);
}

static void body_loaded(bool ok, const char *error, void *context)
{
	struct attempt *att = context;
	if (att->abandoned) {
		/* delivery_free() left it to us (att->d is gone). */
		attempt_free(att);
		return;
	}
	att->body_wait = false;
	if (!ok) {
		for (unsigned int i = 0; i < att->count; i++)
			route_decide(&att->routes[i], 451, "451 4.3.0 cannot read the "
				     "message from the queue");
	}
	if (att->lookups == 0)
		attempt_dispatch(att);
}

static void start_attempt(struct delivery *d, struct queue_msg *msg)
{
	int64_t now = mt_wall_ms();
	if (d->draining || msg->removed || !msg->indexed ||
	    (msg->flags & QUEUE_MSG_HELD) != 0 || msg->delivery != NULL)
		return;
	unsigned int due = 0;
	for (unsigned int i = 0; i < msg->rcpt_count; i++)
		if (rcpt_due(&msg->rcpts[i], now))
			due++;
	if (due == 0)
		return;
	struct attempt *att = mt_xcalloc(1, sizeof(*att));
	att->d = d;
	att->msg = msg;
	queue_msg_ref(msg);
	msg->delivery = att;
	att->log.session_id = mt_session_id_new();
	snprintf(att->log.queue_id, sizeof(att->log.queue_id), "%s", msg->id);
	att->routes = mt_xcalloc(due, sizeof(*att->routes));
	for (unsigned int i = 0; i < msg->rcpt_count; i++) {
		if (!rcpt_due(&msg->rcpts[i], now))
			continue;
		msg->rcpts[i].busy = true;
		att->routes[att->count].attempt = att;
		att->routes[att->count++].index = i;
	}
	att->next = d->attempts;
	if (d->attempts != NULL)
		d->attempts->prev = att;
	d->attempts = att;
	d->attempts_active++;
	d->stats.attempts++;

	if (msg->body == NULL) {
		att->body_wait = true;
		queue_load_body(d->mta->queue, msg, body_loaded, att);
	}
	if ((msg->flags & QUEUE_MSG_LOOP) != 0) {
		for (unsigned int i = 0; i < att->count; i++)
			route_decide(&att->routes[i], 554, "554 5.4.6 mail forwarding "
				     "loop: too many Received: lines");
	} else {
		for (unsigned int i = 0; i < att->count; i++)
			route_address(att, i, msg->rcpts[att->routes[i].index].address);
	}
	if (att->lookups == 0 && !att->body_wait)
		attempt_dispatch(att);
}

/* Group the routed recipients into jobs, one per destination. */
static void attempt_dispatch(struct attempt *att)
{
	struct delivery *d = att->d;
	struct job **jobs = mt_xcalloc(att->count, sizeof(*jobs));
	unsigned int n_jobs = 0;
	for (unsigned int i = 0; i < att->count; i++) {
		struct route *rt = &att->routes[i];
		if (rt->decided || !rt->routed || rt->dispatched)
			continue;
		rt->dispatched = true;
		struct dest *dest = dest_get(d, rt->proto, rt->dest_name,
					     rt->fixed.host != NULL ? &rt->fixed : NULL);
		struct job *job = NULL;
		for (unsigned int k = 0; k < n_jobs; k++)
			if (jobs[k]->dest == dest && jobs[k]->count < JOB_MAX_RCPTS)
				job = jobs[k];
		if (job == NULL) {
			job = mt_xcalloc(1, sizeof(*job));
			job->attempt = att;
			job->dest = dest;
			job->rcpt_index = mt_xcalloc(JOB_MAX_RCPTS, sizeof(unsigned int));
			job->msg_index = mt_xcalloc(JOB_MAX_RCPTS, sizeof(unsigned int));
			job->rcpt_address = mt_xcalloc(JOB_MAX_RCPTS, sizeof(char *));
			job->results = mt_xcalloc(JOB_MAX_RCPTS, sizeof(struct rcpt_result));
			jobs[n_jobs++] = job;
		}
		job->rcpt_index[job->count] = i;	/* route index */
		job->msg_index[job->count] = rt->index;
		job->rcpt_address[job->count] = mt_xstrdup(rt->address);
		job->count++;
	}
	/* Jobs may be running already: a recipient routed again joins. */
	att->jobs += n_jobs;
	for (unsigned int k = 0; k < n_jobs; k++)
		dest_submit(jobs[k]->dest, jobs[k]);
	free(jobs);
	if (att->jobs == 0)
		attempt_finish(att);
}

/* The store's "not on this shard" (popstore/lmtp-commands.c): a 4xx with
 * the enhanced code 4.4.0 and that phrase, e.g. "451 4.4.0 <a@b> Mailbox
 * is not on this shard (mailHost s2), try again later". */
static bool reply_wrong_shard(const struct rcpt_result *r)
{
	if (r->code < 400 || r->code >= 500 || r->text == NULL ||
	    strlen(r->text) < 4)
		return false;
	const char *t = r->text + 4;	/* after "451 " */
	size_t n = mt_smtp_enhanced_code_len(t, strlen(t));
	return n == 5 && strncmp(t, "4.4.0", 5) == 0 &&
		strstr(t + n, "not on this shard") != NULL;
}

/* A store refused rt as not on its shard: the lookup that sent it there is
 * stale (a move, a lagging cache or replica). Drop it from the directory
 * cache and look the address up again; lookup_done() routes the answer in
 * this attempt. Once per attempt, and not while draining: false (the
 * reply stands, a deferral) then. */
static bool route_again(struct route *rt, const char *text)
{
	struct attempt *att = rt->attempt;
	struct mt_dirsvc_client *dir = att->d->mta->dir;
	if (rt->stale_shard != NULL || rt->looked_up == NULL ||
	    rt->proto != DEST_LMTP || att->d->draining)
		return false;
	mt_slog(MT_LOG_INFO, &att->log, "to=<%s> relay=%s route=stale (%s): "
		"looking the recipient up again", rt->address, rt->dest_name, text);
	mt_dirsvc_forget(dir, rt->looked_up);
	if (strcasecmp(rt->address, rt->looked_up) != 0)
		mt_dirsvc_forget(dir, rt->address);
	rt->stale_text = mt_xstrdup(text);
	rt->stale_shard = rt->dest_name;
	rt->dest_name = NULL;
	rt->routed = rt->dispatched = false;
	att->lookups++;
	rt->lookup = mt_dirsvc_lookup_recipient(dir, &att->log, rt->looked_up,
						lookup_done, rt);
	return true;
}

/* Move job's recipient i to position k (k <= i), recipient k's place
 * going to i. */
static void job_swap(struct job *job, unsigned int i, unsigned int k)
{
	if (i == k)
		return;
#define SWAP(type, a) do { type t_ = job->a[i]; job->a[i] = job->a[k]; \
		job->a[k] = t_; } while (0)
	SWAP(unsigned int, rcpt_index);
	SWAP(unsigned int, msg_index);
	SWAP(char *, rcpt_address);
	SWAP(struct rcpt_result, results);
#undef SWAP
}

/* The first kept recipients stay in job; the rest are dropped. */
static void job_truncate(struct job *job, unsigned int kept)
{
	for (unsigned int i = kept; i < job->count; i++) {
		MT_FREE(&job->rcpt_address[i]);
		MT_FREE(&job->results[i].text);
		job->results[i].code = 0;
	}
	job->count = kept;
}

void delivery_job_done(struct job *job)
{
	struct attempt *att = job->attempt;
	/* A shard of several sites: its temporary answers send the
	 * recipients to the next site (delivery-failover.c). */
	bool retryable = false;
	for (unsigned int i = 0; i < job->count; i++) {
		const struct rcpt_result *r = &job->results[i];
		if (r->code >= 200 && r->code < 300)
			dest_site_good(job->dest, job->site);
		retryable = retryable || (failover_retryable(r) && !reply_wrong_shard(r));
	}
	bool failover = retryable && failover_possible(job);
	unsigned int kept = 0;
	for (unsigned int i = 0; i < job->count; i++) {
		struct route *rt = &att->routes[job->rcpt_index[i]];
		const struct rcpt_result *r = &job->results[i];
		/* "Not on this shard" is a stale route, not a failed site. */
		bool wrong_shard = job->dest->proto == DEST_LMTP && reply_wrong_shard(r);
		if (wrong_shard && route_again(rt, r->text))
			continue;
		if (failover && !wrong_shard && failover_retryable(r)) {
			job_swap(job, i, kept++);
			continue;
		}
		if (r->code == 0)
			route_decide(rt, 451, "451 4.4.0 delivery attempt ended "
				     "without a reply");
		else
			route_decide(rt, r->code, r->text);
		if (job->relay != NULL && rt->relay == NULL)
			rt->relay = mt_xstrdup(job->relay);
	}
	if (kept > 0) {
		job_truncate(job, kept);
		failover_again(job);
		return;
	}
	job_free(job);
	/* A recipient being looked up again is dispatched from lookup_done. */
	if (--att->jobs == 0 && att->lookups == 0)
		attempt_finish(att);
}

/* The delay before the next try after `attempts` failed ones. */
static int64_t retry_delay(const struct mt_mta_settings *set, uint32_t attempts)
{
	size_t n = set->retry_schedule.count;
	size_t i = attempts == 0 ? 0 : attempts - 1;
	return (int64_t)set->retry_schedule.ms[i < n ? i : n - 1];
}

static const char *route_relay(const struct route *rt)
{
	return rt->relay != NULL ? rt->relay :
		rt->proto == DEST_LMTP && rt->dest_name != NULL ? rt->dest_name : "none";
}

/* Apply one route's result to its recipient; true if a DSN may be due. */
static bool apply(struct attempt *att, struct route *rt, int64_t now)
{
	struct delivery *d = att->d;
	struct queue_msg *msg = att->msg;
	struct queue_rcpt *r = &msg->rcpts[rt->index];
	const struct mt_mta_settings *set = d->mta->set;
	double delay = (double)(now - msg->arrival) / 1000.0;
	const char *orig = r->address;

	free(r->last_error);
	r->last_error = mt_xstrdup(rt->text);
	if (rt->code >= 200 && rt->code < 300) {
		r->state = QUEUE_RCPT_DELIVERED;
		d->stats.delivered++;
		mta_metrics_delivery(d->mta, rt->proto == DEST_LMTP, "delivered", delay);
		mt_slog(MT_LOG_INFO, &att->log, "to=<%s> relay=%s delay=%.2f "
			"status=sent (%s)", orig, route_relay(rt), delay, rt->text);
		return (r->notify & QUEUE_NOTIFY_SUCCESS) != 0;
	}
	r->attempts++;
	if (rt->code >= 400 && rt->code < 500 &&
	    now - msg->arrival < (int64_t)set->max_queue_lifetime) {
		r->state = QUEUE_RCPT_DEFERRED;
		r->next_try = now + retry_delay(set, r->attempts);
		if (d->next_retry == 0 || r->next_try < d->next_retry)
			d->next_retry = r->next_try;
		d->stats.deferred++;
		mta_metrics_delivery(d->mta, rt->proto == DEST_LMTP, "deferred", delay);
		mta_metrics_deferral(d->mta, rt->text);
		mt_slog(MT_LOG_INFO, &att->log, "to=<%s> relay=%s delay=%.2f "
			"status=deferred (%s) next_try=%+.0fs", orig, route_relay(rt),
			delay, rt->text, (double)(r->next_try - now) / 1000.0);
		return false;
	}
	if (rt->code < 500) {
		free(r->last_error);
		r->last_error = mt_xasprintf("554 5.4.7 delivery time expired; last "
					     "error: %s", rt->text);
	}
	if ((msg->flags & QUEUE_MSG_POSTMASTER_COPY) != 0) {
		/* Nobody is left to tell: the operator finds it in the queue. */
		r->state = QUEUE_RCPT_DEFERRED;
		r->next_try = now + retry_delay(set, r->attempts);
		msg->flags |= QUEUE_MSG_HELD;
		mt_slog(MT_LOG_ERROR, &att->log, "to=<%s> relay=%s delay=%.2f "
			"status=held (%s): the postmaster copy of an undeliverable "
			"message cannot be delivered; kept in the queue (check [mta] "
			"postmaster, then mailtierctl queue release %s)", orig,
			route_relay(rt), delay, r->last_error, msg->id);
		return false;
	}
	r->state = QUEUE_RCPT_BOUNCED;
	d->stats.bounced++;
	mta_metrics_delivery(d->mta, rt->proto == DEST_LMTP, "bounced", delay);
	mt_slog(MT_LOG_INFO, &att->log, "to=<%s> relay=%s delay=%.2f "
		"status=bounced (%s)", orig, route_relay(rt), delay, r->last_error);
	return true;
}

static void attempt_finish(struct attempt *att)
{
	struct delivery *d = att->d;
	struct queue_msg *msg = att->msg;
	int64_t now = mt_wall_ms();
	if (msg->removed) {
		mt_slog(MT_LOG_INFO, &att->log, "deleted during its delivery attempt");
	} else {
		struct dsn_rcpt *dsn = mt_xcalloc(att->count, sizeof(*dsn));
		unsigned int n_dsn = 0;
		for (unsigned int i = 0; i < att->count; i++) {
			struct route *rt = &att->routes[i];
			msg->rcpts[rt->index].busy = false;
			if (apply(att, rt, now)) {
				dsn[n_dsn].index = rt->index;
				dsn[n_dsn].remote_mta = rt->relay;
				dsn[n_dsn++].relayed = rt->routed && rt->proto == DEST_SMTP;
			}
		}
		struct queue_msg *report = n_dsn == 0 ? NULL :
			bounce_create(d->mta, msg, dsn, n_dsn);
		if (report != NULL) {
			d->stats.dsns++;
			mta_metrics_dsn(d->mta, msg->sender[0] == '\0');
			mt_slog(MT_LOG_INFO, &att->log, "%s: queue=%s to=<%s> "
				"recipients=%u", msg->sender[0] != '\0' ?
				"sender notification" : "postmaster copy", report->id,
				report->rcpts[0].address, n_dsn);
		}
		free(dsn);
		bool done = queue_msg_done(msg);
		queue_save(d->mta->queue, msg, report);
		if (done)
			mt_slog(MT_LOG_INFO, &att->log, "removed");
	}
	/* The body is read again for a later try: keep memory for the
	 * messages that are moving. */
	queue_body_unref(&msg->body);
	d->attempts_active--;
	attempt_free(att);
	if (d->draining && d->attempts_active == 0)
		mta_drain_check(d->mta);
}

/* Scheduling */

static void arrival_cb(struct queue_msg *msg, void *context)
{
	start_attempt(context, msg);
}

static void retry_scan(void *context)
{
	struct delivery *d = context;
	int64_t now = mt_wall_ms();
	if (d->draining || d->next_retry == 0 || now < d->next_retry)
		return;
	d->next_retry = 0;
	for (struct queue_msg *m = queue_first(d->mta->queue), *next; m != NULL;
	     m = next) {
		next = queue_next(m);
		queue_msg_ref(m);
		start_attempt(d, m);	/* may take m out of the index */
		/* Keep the earliest deferral still waiting. */
		for (unsigned int i = 0; i < m->rcpt_count; i++) {
			const struct queue_rcpt *r = &m->rcpts[i];
			if (r->state == QUEUE_RCPT_DEFERRED && !r->busy &&
			    (d->next_retry == 0 || r->next_try < d->next_retry))
				d->next_retry = r->next_try;
		}
		queue_msg_unref(&m);
	}
}

void delivery_flush(struct delivery *d, struct queue_msg *msg)
{
	for (struct queue_msg *m = msg != NULL ? msg : queue_first(d->mta->queue), *next;
	     m != NULL; m = next) {
		next = msg != NULL ? NULL : queue_next(m);
		for (unsigned int i = 0; i < m->rcpt_count; i++)
			if (m->rcpts[i].state == QUEUE_RCPT_DEFERRED)
				m->rcpts[i].next_try = 0;
		queue_msg_ref(m);
		start_attempt(d, m);
		queue_msg_unref(&m);
	}
}

struct delivery *delivery_new(struct mta *mta, const char **error_r)
{
	struct delivery *d = mt_xcalloc(1, sizeof(*d));
	d->mta = mta;
	d->dns = dns_new(mt_loop_base(mta->loop), &mta->set->dns_servers, error_r);
	if (d->dns == NULL) {
		free(d);
		return NULL;
	}
	d->next_retry = 1;	/* scan once the queue is loaded */
	d->retry_timer = mt_timer_add(mta->loop, RETRY_SCAN_MSECS, true, retry_scan, d);
	queue_set_arrival_cb(mta->queue, arrival_cb, d);
	return d;
}

void delivery_free(struct delivery **delivery_p)
{
	struct delivery *d = *delivery_p;
	if (d == NULL)
		return;
	*delivery_p = NULL;
	d->draining = true;
	queue_set_arrival_cb(d->mta->queue, NULL, NULL);
	mt_timer_free(&d->retry_timer);
	/* Running jobs end with temporary failures, recorded as deferrals. */
	dests_free(d);
	/* What is left waits on the directory or the queue: drop it; its
	 * recipients are still pending on disk. */
	for (struct attempt *att = d->attempts, *next; att != NULL; att = next) {
		next = att->next;
		for (unsigned int i = 0; i < att->count; i++)
			mt_dirsvc_request_cancel(&att->routes[i].lookup);
		if (att->body_wait) {
			att->abandoned = true;
			att->d = NULL;
			att->prev = att->next = NULL;
			continue;
		}
		att->prev = NULL;
		d->attempts = att->next;
		attempt_free(att);
	}
	d->attempts = NULL;
	dns_free(&d->dns);
	free(d);
}

void delivery_drain(struct delivery *d)
{
	d->draining = true;
	for (struct dest *dest = d->dests; dest != NULL; dest = dest->next)
		failover_flush(dest);
	dests_close_idle(d);
	if (d->attempts_active == 0)
		mta_drain_check(d->mta);
}

bool delivery_idle(const struct delivery *d)
{
	return d->attempts_active == 0;
}

void delivery_reload(struct delivery *d)
{
	/* Limits and routes are read at each use; idle connections may point
	 * at an old [shards] address. */
	dests_close_idle(d);
}

void delivery_log_stats(struct delivery *d)
{
	const struct delivery_stats *s = &d->stats;
	mt_info("delivery stats: attempts=%llu delivered=%llu deferred=%llu "
		"bounced=%llu dsns=%llu active=%u connections=%llu open=%u "
		"transactions=%llu reused=%llu destinations=%u",
		(unsigned long long)s->attempts, (unsigned long long)s->delivered,
		(unsigned long long)s->deferred, (unsigned long long)s->bounced,
		(unsigned long long)s->dsns, d->attempts_active,
		(unsigned long long)s->connections, d->conns,
		(unsigned long long)s->transactions, (unsigned long long)s->reused,
		d->n_dests);
}
