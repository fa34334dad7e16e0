/* dirsvc-worker.c — libdirsvc's worker pool: pool_size threads take
 * requests from one queue; each thread owns its LDAP connections (one bound
 * as the service DN for searches, and with auth_method = bind one more for
 * user binds) and makes blocking libldap calls whose timeouts come from the
 * request's deadline, so no call outlives it.
 *
 * Failover: URIs are tried in the configured order, skipping any that
 * failed to connect or timed out in the last MT_DIRSVC_URI_RETRY_MSECS; the
 * time left is shared between the URIs still to try, so a dead first server
 * leaves time for the second. A kept connection that turns out dead (slapd
 * restarted) is re-made once at once without marking its URI. An
 * operation on a kept connection gets the same share of the time left
 * (op_slice) while other URIs are up; one that times out marks its URI
 * and the request goes on to the next (a provider hung under load:
 * HA.md 5.5, dirsvc/README.md "Two providers"). When every
 * URI is marked, requests fail at once (TEMPFAIL) instead of waiting.
 * Why threads rather than libldap's asynchronous calls on each caller's
 * loop: callers run several loops, password hashes ({CRYPT}, tens of ms)
 * must not run on a loop either, and simple binds cannot be multiplexed on
 * a connection (RFC 4511 section 4.2.1). Measured against a local slapd on
 * 2 cores: at 16 requests in flight this pool (4 threads) gives the same
 * ~9,000 searches/s as 16 pipelined asynchronous searches on one
 * connection (slapd is the limit); alone, a request pays ~60 us for the
 * two thread wake-ups (4,600/s against 6,400/s).
 * Trust boundary: requests carry checked, escaped client values; URIs and
 * the service credentials come from the administrator's config.
 * RFCs: 4511 (LDAP), 4513 (simple bind). */
#include "dirsvc-private.h"
#include "clock.h"
#include "metrics.h"
#include "thread.h"

#include "alloc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dirsvc_conn {
	LDAP *ld;
	size_t uri;
};

struct dirsvc_worker {
	struct mt_dirsvc *dirsvc;
	pthread_t thread;
	unsigned int index;
	bool started;
	bool had_failure;	/* log the next successful connect */
	struct dirsvc_conn conn[2];	/* by enum dirsvc_conn_kind */
};

static const char *const conn_kind_names[] = { "service", "auth" };

struct mt_dirsvc *mt_dirsvc_worker_dirsvc(struct dirsvc_worker *w)
{
	return w->dirsvc;
}

static struct timeval ms_to_tv(uint64_t ms)
{
	if (ms == 0)
		ms = 1;
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
	return tv;
}

/* LDAP result codes that say the connection is unusable, not that the
 * request was answered. */
static bool conn_error(int rc)
{
	switch (rc) {
	case LDAP_SERVER_DOWN:
	case LDAP_LOCAL_ERROR:
	case LDAP_ENCODING_ERROR:
	case LDAP_DECODING_ERROR:
	case LDAP_TIMEOUT:
	case LDAP_CONNECT_ERROR:
	case LDAP_BUSY:
	case LDAP_UNAVAILABLE:
		return true;
	default:
		return false;
	}
}

static void conn_close(struct dirsvc_conn *c)
{
	if (c->ld != NULL) {
		ldap_unbind_ext(c->ld, NULL, NULL);
		c->ld = NULL;
	}
}

static void mark_down(struct mt_dirsvc *d, size_t uri)
{
	atomic_store(&d->uris[uri].down_until,
		     mt_clock_ms() + MT_DIRSVC_URI_RETRY_MSECS);
}

void mt_dirsvc_ldap_set_options(LDAP *ld, uint64_t budget_ms, uint64_t timeout_ms)
{
	int version = LDAP_VERSION3;
	struct timeval tv = ms_to_tv(budget_ms);
	unsigned int user_timeout = (unsigned int)timeout_ms;

	ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &version);
	ldap_set_option(ld, LDAP_OPT_REFERRALS, LDAP_OPT_OFF);
	ldap_set_option(ld, LDAP_OPT_RESTART, LDAP_OPT_ON);
	/* connect() and TLS handshake */
	ldap_set_option(ld, LDAP_OPT_NETWORK_TIMEOUT, &tv);
	/* synchronous calls without their own timeout (the service bind) */
	ldap_set_option(ld, LDAP_OPT_TIMEOUT, &tv);
	/* unacknowledged data: a peer that vanished is noticed */
	ldap_set_option(ld, LDAP_OPT_TCP_USER_TIMEOUT, &user_timeout);
}

/* Open the worker's connection of this kind on the first URI that works. */
static bool conn_open(struct dirsvc_worker *w, enum dirsvc_conn_kind kind,
		      struct mt_dirsvc_request *req)
{
	struct mt_dirsvc *d = w->dirsvc;
	struct dirsvc_conn *c = &w->conn[kind];
	uint64_t now = mt_clock_ms();
	size_t candidates = 0;
	int rc = LDAP_SUCCESS;
	const char *failed_uri = NULL;

	for (size_t i = 0; i < d->n_uris; i++)
		candidates += atomic_load(&d->uris[i].down_until) <= now;
	for (size_t i = 0; i < d->n_uris; i++) {
		if (atomic_load(&d->uris[i].down_until) > now)
			continue;
		if (now >= req->deadline)
			break;
		/* Share the time left among the URIs still to try. */
		uint64_t budget = (req->deadline - now) / candidates--;
		LDAP *ld = NULL;
		failed_uri = d->uris[i].uri;
		rc = ldap_initialize(&ld, d->uris[i].uri);
		if (rc == LDAP_SUCCESS) {
			mt_dirsvc_ldap_set_options(ld, budget, d->timeout);
			if (kind == DIRSVC_CONN_SERVICE && d->bind_dn != NULL)
				rc = ldap_sasl_bind_s(ld, d->bind_dn, LDAP_SASL_SIMPLE,
						      &d->bind_pw, NULL, NULL, NULL);
			else
				rc = ldap_connect(ld);
		}
		if (rc == LDAP_SUCCESS) {
			c->ld = ld;
			c->uri = i;
			atomic_fetch_add(&d->stats.connects, 1);
			if (i > 0)
				atomic_fetch_add(&d->stats.failovers, 1);
			mt_log(w->had_failure ? MT_LOG_INFO : MT_LOG_DEBUG,
			       "dirsvc: connected uri=%s worker=%u conn=%s",
			       d->uris[i].uri, w->index, conn_kind_names[kind]);
			w->had_failure = false;
			return true;
		}
		if (ld != NULL)
			ldap_unbind_ext(ld, NULL, NULL);
		atomic_fetch_add(&d->stats.connect_failures, 1);
		mark_down(d, i);
		w->had_failure = true;
		mt_slog(MT_LOG_WARNING, mt_dirsvc_req_log(req),
			"dirsvc: cannot connect uri=%s worker=%u conn=%s: %s "
			"(skipped for %u ms)", d->uris[i].uri, w->index,
			conn_kind_names[kind], ldap_err2string(rc),
			MT_DIRSVC_URI_RETRY_MSECS);
		now = mt_clock_ms();
	}
	if (failed_uri == NULL)
		mt_dirsvc_req_reason(req, "every directory server failed in the "
				     "last %u ms", MT_DIRSVC_URI_RETRY_MSECS);
	else if (now >= req->deadline)
		mt_dirsvc_req_reason(req, "directory timeout connecting (last "
				     "uri=%s: %s)", failed_uri, ldap_err2string(rc));
	else
		mt_dirsvc_req_reason(req, "no directory server reachable (last "
				     "uri=%s: %s)", failed_uri, ldap_err2string(rc));
	return false;
}

/* The time an operation on a kept connection to URI cur may take: all of
 * what is left when no other URI is up, else an equal share with each
 * other URI not marked down, so that a provider that stopped answering
 * (host gone without a FIN, slapd stopped) leaves the request time to
 * be answered by the next one within [directory] timeout. */
static uint64_t op_slice(struct mt_dirsvc *d, size_t cur, uint64_t left_ms)
{
	uint64_t now = mt_clock_ms();
	uint64_t others = 0;

	for (size_t i = 0; i < d->n_uris; i++)
		others += i != cur && atomic_load(&d->uris[i].down_until) <= now;
	return left_ms / (others + 1);
}

int mt_dirsvc_worker_run(struct dirsvc_worker *w, enum dirsvc_conn_kind kind,
			 struct mt_dirsvc_request *req, dirsvc_ldap_op_t *op,
			 void *context)
{
	struct mt_dirsvc *d = w->dirsvc;
	struct dirsvc_conn *c = &w->conn[kind];
	int rc = LDAP_SERVER_DOWN;

	/* A kept connection may be dead (one retry), then each URI once. */
	for (size_t attempt = 0; attempt <= d->n_uris; attempt++) {
		bool fresh = false;
		if (c->ld == NULL) {
			if (!conn_open(w, kind, req))
				return LDAP_SERVER_DOWN;
			fresh = true;
		}
		uint64_t now = mt_clock_ms();
		if (now >= req->deadline) {
			rc = LDAP_TIMEOUT;
			break;
		}
		struct timeval tv = ms_to_tv(op_slice(d, c->uri, req->deadline - now));
		struct mt_series *latency = atomic_load(&d->stats.latency[kind]);
		uint64_t started = latency != NULL ? mt_clock_us() : 0;
		rc = op(c->ld, &tv, context);
		if (latency != NULL)
			mt_series_observe(latency, (double)(mt_clock_us() - started) / 1e6);
		if (!conn_error(rc))
			return rc;
		atomic_fetch_add(&d->stats.ldap_errors, 1);
		size_t uri = c->uri;
		conn_close(c);
		if (rc == LDAP_TIMEOUT) {
			mark_down(d, uri);
			w->had_failure = true;
			if (mt_clock_ms() >= req->deadline)
				break;
			mt_slog(MT_LOG_WARNING, mt_dirsvc_req_log(req),
				"dirsvc: uri=%s worker=%u conn=%s: no answer in its "
				"share of the timeout; trying the next (skipped for "
				"%u ms)", d->uris[uri].uri, w->index,
				conn_kind_names[kind], MT_DIRSVC_URI_RETRY_MSECS);
			continue;
		}
		if (fresh)
			mark_down(d, uri);
		mt_slog(MT_LOG_WARNING, mt_dirsvc_req_log(req),
			"dirsvc: uri=%s worker=%u conn=%s: %s; reconnecting",
			d->uris[uri].uri, w->index, conn_kind_names[kind],
			ldap_err2string(rc));
	}
	if (rc == LDAP_TIMEOUT) {
		atomic_fetch_add(&d->stats.timeouts, 1);
		mt_dirsvc_req_reason(req, "directory timeout (%llu ms)",
				     (unsigned long long)d->timeout);
	} else {
		mt_dirsvc_req_reason(req, "directory error: %s",
				     ldap_err2string(rc));
	}
	return rc;
}

/* Answer req TEMPFAIL with this reason. */
static void fail_now(struct mt_dirsvc_request *req, const char *reason)
{
	mt_dirsvc_req_reason(req, "%s", reason);
	if (req->kind == DIRSVC_LOOKUP)
		req->result.recipient.status = MT_DIRSVC_TEMPFAIL;
	else
		req->result.auth.status = MT_DIRSVC_AUTH_TEMPFAIL;
}

static void handle(struct dirsvc_worker *w, struct mt_dirsvc_request *req,
		   bool stopping)
{
	struct mt_dirsvc *d = w->dirsvc;

	if (atomic_load(&req->cancelled) || mt_dirsvc_req_abandoned(req))
		return;	/* completing it frees it */
	if (stopping) {
		fail_now(req, "directory client shutting down");
	} else if (mt_clock_ms() >= req->deadline) {
		atomic_fetch_add(&d->stats.timeouts, 1);
		fail_now(req, "directory timeout: every connection was busy");
	} else if (req->kind == DIRSVC_LOOKUP) {
		mt_dirsvc_query_lookup(w, req);
	} else {
		mt_dirsvc_query_auth(w, req);
	}
	if ((req->kind == DIRSVC_LOOKUP &&
	     req->result.recipient.status == MT_DIRSVC_TEMPFAIL) ||
	    (req->kind == DIRSVC_AUTH &&
	     req->result.auth.status == MT_DIRSVC_AUTH_TEMPFAIL)) {
		atomic_fetch_add(&d->stats.tempfails, 1);
		if (d->cache != NULL)
			mt_dircache_count_error(d->cache);
	}
}

static void *worker_main(void *arg)
{
	struct dirsvc_worker *w = arg;
	struct mt_dirsvc *d = w->dirsvc;

	for (;;) {
		pthread_mutex_lock(&d->lock);
		while (d->queue == NULL && !d->stopping)
			pthread_cond_wait(&d->cond, &d->lock);
		struct mt_dirsvc_request *req = d->queue;
		if (req != NULL) {
			d->queue = req->next;
			if (d->queue == NULL)
				d->queue_tail = &d->queue;
		}
		bool stopping = d->stopping;
		pthread_mutex_unlock(&d->lock);
		if (req == NULL)
			break;
		handle(w, req, stopping);
		mt_dirsvc_req_complete(req);
	}
	conn_close(&w->conn[DIRSVC_CONN_SERVICE]);
	conn_close(&w->conn[DIRSVC_CONN_AUTH]);
	return NULL;
}

void mt_dirsvc_workers_submit(struct mt_dirsvc *d, struct mt_dirsvc_request *req)
{
	req->next = NULL;
	pthread_mutex_lock(&d->lock);
	*d->queue_tail = req;
	d->queue_tail = &req->next;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

bool mt_dirsvc_workers_start(struct mt_dirsvc *d, const char **error_r)
{
	d->workers = mt_xcalloc(d->n_workers, sizeof(*d->workers));
	/* Workers take no signals (thread.h): the daemon's main loop does. */
	for (size_t i = 0; i < d->n_workers; i++) {
		struct dirsvc_worker *w = &d->workers[i];
		w->dirsvc = d;
		w->index = (unsigned int)i;
		if (mt_thread_start(&w->thread, worker_main, w) != 0) {
			*error_r = "directory: cannot start the worker threads";
			mt_dirsvc_workers_stop(d);
			return false;
		}
		w->started = true;
	}
	return true;
}

void mt_dirsvc_workers_stop(struct mt_dirsvc *d)
{
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	for (size_t i = 0; i < d->n_workers; i++) {
		if (d->workers[i].started)
			pthread_join(d->workers[i].thread, NULL);
	}
	free(d->workers);
	d->workers = NULL;
}
