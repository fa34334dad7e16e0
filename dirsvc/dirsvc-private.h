/* dirsvc-private.h — what the files of libdirsvc share and nobody else
 * sees: the service object, requests, the worker pool and the queries.
 *   dirsvc.c         the object, clients (per-loop completion), requests,
 *                    the cache fast path, counters
 *   dirsvc-results.c result strings, reasons, cache encodings, names
 *   dirsvc-worker.c  the worker threads, their LDAP connections, failover,
 *                    deadlines
 *   dirsvc-query.c   the two queries: filters, entry checks, passwords
 *   dirsvc-admin.c   (dirsvc-admin.h) shares the LDAP options only
 * Trust boundary: as dirsvc.h. */
#ifndef MT_DIRSVC_PRIVATE_H
#define MT_DIRSVC_PRIVATE_H

#include "dirsvc.h"
#include "dircache.h"
#include "ldap-escape.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include <ldap.h>

/* A URI that failed to connect or timed out is skipped this long. */
#define MT_DIRSVC_URI_RETRY_MSECS 1000
/* Room for a result's strings (address, shard, forward; each at most 256). */
#define MT_DIRSVC_STRINGS_MAX 1024
/* Longest password accepted (bytes). */
#define MT_DIRSVC_PASSWORD_MAX 1024

struct dirsvc_uri {
	char *uri;
	_Atomic uint64_t down_until;	/* ms (mt_clock_ms); 0 = up */
};

struct dirsvc_worker;
struct mt_series;

struct dirsvc_stats {
	_Atomic uint64_t lookups, auths;	/* requests asked */
	_Atomic uint64_t ldap_searches, ldap_binds;
	_Atomic uint64_t ldap_errors;		/* failed LDAP calls */
	_Atomic uint64_t connects, connect_failures;
	_Atomic uint64_t timeouts;		/* requests past their deadline */
	_Atomic uint64_t tempfails;
	_Atomic uint64_t auth_ok, auth_bad;
	/* Connections opened on a URI after the first: the ones before it
	 * were down or failed (failover). */
	_Atomic uint64_t failovers;
	/* Each LDAP operation's seconds, by connection kind (search on the
	 * service connection, bind on the auth one); NULL: not observed. */
	_Atomic(struct mt_series *) latency[2];
};

struct mt_dirsvc {
	char *base_dn;
	char *bind_dn;			/* NULL: anonymous */
	struct berval bind_pw;		/* wiped on free */
	struct dirsvc_uri *uris;
	size_t n_uris;
	uint64_t timeout, cache_ttl, negative_ttl;
	enum mt_auth_method auth_method;
	bool check_shards;		/* false: no config, mailHost unchecked */
	char **shards;			/* sorted, for bsearch */
	size_t n_shards;
	struct mt_dircache *cache;

	/* The request queue the workers take from. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct mt_dirsvc_request *queue, **queue_tail;
	bool stopping;
	struct dirsvc_worker *workers;
	size_t n_workers;

	struct dirsvc_stats stats;
};

enum dirsvc_request_kind { DIRSVC_LOOKUP, DIRSVC_AUTH };

struct mt_dirsvc_request {
	struct mt_dirsvc_request *next;	/* queue, then completion list */
	struct mt_dirsvc_client *client;
	enum dirsvc_request_kind kind;
	_Atomic bool cancelled;
	uint64_t deadline;		/* ms (mt_clock_ms) */
	bool have_log;
	struct mt_logctx log;
	union {
		mt_dirsvc_recipient_cb_t *recipient;
		mt_dirsvc_auth_cb_t *auth;
	} callback;
	void *context;
	/* The checked, ASCII-lower-cased address or user: filter value and
	 * cache key. */
	char key[MT_LDAP_VALUE_MAX + 1];
	char *password;			/* auth: a copy, wiped when freed */
	union {
		struct mt_dirsvc_recipient recipient;
		struct mt_dirsvc_auth auth;
	} result;
	size_t strings_len;
	char strings[MT_DIRSVC_STRINGS_MAX];
	char reason[256];
};

/* dirsvc.c */
uint64_t mt_dirsvc_now_ms(void);
/* Hand a finished request back to its client's loop (any thread). */
void mt_dirsvc_req_complete(struct mt_dirsvc_request *req);
/* True if req's client has been freed (nobody wants the answer). */
bool mt_dirsvc_req_abandoned(const struct mt_dirsvc_request *req);
/* The [shards] name equal to shard (mailHost is case-insensitive), or NULL. */
const char *mt_dirsvc_shard_name(const struct mt_dirsvc *d, const char *shard);
const struct mt_logctx *mt_dirsvc_req_log(const struct mt_dirsvc_request *req);

/* dirsvc-results.c */
/* Copy len bytes of s into req's string room; NULL if it does not fit. */
const char *mt_dirsvc_req_strdup(struct mt_dirsvc_request *req,
				 const char *s, size_t len);
/* Set the reason, printf style. */
void mt_dirsvc_req_reason(struct mt_dirsvc_request *req, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Store req's answer (FOUND or NOT_FOUND; auth: OK) in the cache. */
void mt_dirsvc_cache_recipient(struct mt_dirsvc *d,
			       struct mt_dirsvc_request *req);
void mt_dirsvc_cache_auth(struct mt_dirsvc *d, struct mt_dirsvc_request *req);
/* Answer req from the cache if it can (req->key, req->password set). */
bool mt_dirsvc_recipient_from_cache(struct mt_dirsvc *d,
				    struct mt_dirsvc_request *req);
bool mt_dirsvc_auth_from_cache(struct mt_dirsvc *d, struct mt_dirsvc_request *req);

/* dirsvc-worker.c */
bool mt_dirsvc_workers_start(struct mt_dirsvc *d, const char **error_r);
/* Stop and join the workers; queued requests are answered TEMPFAIL. */
void mt_dirsvc_workers_stop(struct mt_dirsvc *d);
/* Queue req for a worker (any thread). */
void mt_dirsvc_workers_submit(struct mt_dirsvc *d, struct mt_dirsvc_request *req);

/* Options of every libdirsvc connection: LDAPv3, no referrals, restart on
 * EINTR, budget_ms for connect/TLS and synchronous calls, timeout_ms as the
 * TCP user timeout. */
void mt_dirsvc_ldap_set_options(LDAP *ld, uint64_t budget_ms, uint64_t timeout_ms);

/* The connection a query runs on, and a call to run on it. */
enum dirsvc_conn_kind { DIRSVC_CONN_SERVICE, DIRSVC_CONN_AUTH };
typedef int dirsvc_ldap_op_t(LDAP *ld, struct timeval *timeout, void *context);
/* Run op on the worker's connection of that kind, connecting (with
 * failover) first if needed, and once more on a fresh connection if a kept
 * one turned out to be dead. Returns op's LDAP result code, or an LDAP
 * client error code with req->reason set when no connection could be had or
 * the deadline passed. */
int mt_dirsvc_worker_run(struct dirsvc_worker *w, enum dirsvc_conn_kind kind,
			 struct mt_dirsvc_request *req, dirsvc_ldap_op_t *op,
			 void *context);
struct mt_dirsvc *mt_dirsvc_worker_dirsvc(struct dirsvc_worker *w);

/* dirsvc-query.c: answer req (on a worker thread). */
void mt_dirsvc_query_lookup(struct dirsvc_worker *w, struct mt_dirsvc_request *req);
void mt_dirsvc_query_auth(struct dirsvc_worker *w, struct mt_dirsvc_request *req);

#endif
