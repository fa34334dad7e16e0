/* dirsvc.c — libdirsvc's front half (see dirsvc.h): the service object,
 * per-loop clients that carry results back to their loop, requests, the
 * cache fast path and the counters. The LDAP half is dirsvc-worker.c and
 * dirsvc-query.c.
 *
 * Completion: a worker appends a finished request to the client's list
 * under the client's mutex and, only when the list was empty, posts the
 * client to its loop (mt_loop_post, the one thread-to-loop hand-off); a
 * cache hit appends from the client's own thread and activates a local
 * event directly (no syscall). Either way the callback runs from the loop,
 * never inside the call that asked.
 * Lifetime: a client is reference-counted by its outstanding requests, so a
 * worker finishing a request for a client that is gone frees the request
 * (and the client's last remains) instead of touching its loop.
 * Trust boundary: as dirsvc.h; client input is checked here before it is
 * queued or used as a cache key. Result storage and the cache encodings are
 * in dirsvc-results.c. */
#include "dirsvc-private.h"
#include "clock.h"

#include "alloc.h"
#include "secret.h"
#include "loop.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

struct mt_dirsvc_client {
	struct mt_dirsvc *dirsvc;
	struct mt_loop *loop;
	struct event *local_ev;		/* cache hits: run the list */
	pthread_mutex_t lock;
	struct mt_dirsvc_request *done, **done_tail;
	unsigned int refs;	/* the owner, each outstanding request, a post */
	_Atomic bool closed;
};

/* Errors from mt_dirsvc_new(): valid until this thread's next call. */
static _Thread_local char new_error[512];

/* Settings */

static int cmp_str(const void *a, const void *b)
{
	return strcasecmp(*(char *const *)a, *(char *const *)b);
}

static void copy_shards(struct mt_dirsvc *d, const struct mt_config *config)
{
	const struct mt_section *sec = config != NULL ?
		mt_config_section(config, "shards", NULL) : NULL;

	d->check_shards = config != NULL;
	if (sec == NULL || sec->n_entries == 0)
		return;
	d->shards = mt_xcalloc(sec->n_entries, sizeof(char *));
	for (size_t i = 0; i < sec->n_entries; i++)
		d->shards[i] = mt_xstrdup(sec->entries[i].key);
	d->n_shards = sec->n_entries;
	qsort(d->shards, d->n_shards, sizeof(char *), cmp_str);
}

const char *mt_dirsvc_shard_name(const struct mt_dirsvc *d, const char *shard)
{
	char *const *found = bsearch(&shard, d->shards, d->n_shards,
				     sizeof(char *), cmp_str);
	return found != NULL ? *found : NULL;
}

static void dirsvc_destroy(struct mt_dirsvc *d)
{
	mt_dircache_free(&d->cache);
	for (size_t i = 0; i < d->n_uris; i++)
		free(d->uris[i].uri);
	free(d->uris);
	for (size_t i = 0; i < d->n_shards; i++)
		free(d->shards[i]);
	free(d->shards);
	if (d->bind_pw.bv_val != NULL) {
		explicit_bzero(d->bind_pw.bv_val, d->bind_pw.bv_len);
		free(d->bind_pw.bv_val);
	}
	free(d->base_dn);
	free(d->bind_dn);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

struct mt_dirsvc *mt_dirsvc_new(const struct mt_directory_settings *set,
				const struct mt_config *config,
				const char **error_r)
{
	if (set->uris.count == 0 || set->base_dn == NULL || set->base_dn[0] == '\0') {
		*error_r = "directory: uris and base_dn are required";
		return NULL;
	}
	struct mt_dirsvc *d = mt_xcalloc(1, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	d->queue_tail = &d->queue;
	d->base_dn = mt_xstrdup(set->base_dn);
	if (set->bind_dn != NULL && set->bind_dn[0] != '\0') {
		d->bind_dn = mt_xstrdup(set->bind_dn);
		const char *error;
		char *pw = mt_secret_read(set->bind_password_file, &error);
		if (pw == NULL) {
			snprintf(new_error, sizeof(new_error),
				 "directory: bind_password_file %s", error);
			*error_r = new_error;
			dirsvc_destroy(d);
			return NULL;
		}
		d->bind_pw.bv_val = pw;
		d->bind_pw.bv_len = strlen(pw);
	}
	d->uris = mt_xcalloc(set->uris.count, sizeof(*d->uris));
	for (size_t i = 0; i < set->uris.count; i++)
		d->uris[i].uri = mt_xstrdup(set->uris.items[i]);
	d->n_uris = set->uris.count;
	d->timeout = set->timeout > 0 ? set->timeout : 1;
	d->cache_ttl = set->cache_ttl;
	d->negative_ttl = set->negative_cache_ttl;
	d->auth_method = (enum mt_auth_method)set->auth_method;
	copy_shards(d, config);
	if (set->cache_entries > 0 && (d->cache_ttl > 0 || d->negative_ttl > 0))
		d->cache = mt_dircache_new(set->cache_entries, NULL, NULL);
	d->n_workers = set->pool_size > 0 ? set->pool_size : 1;
	if (!mt_dirsvc_workers_start(d, error_r)) {
		dirsvc_destroy(d);
		return NULL;
	}
	return d;
}

void mt_dirsvc_free(struct mt_dirsvc **dirsvc_p)
{
	struct mt_dirsvc *d = *dirsvc_p;

	if (d == NULL)
		return;
	*dirsvc_p = NULL;
	mt_dirsvc_workers_stop(d);
	dirsvc_destroy(d);
}

/* Requests */

static void request_free(struct mt_dirsvc_request *req)
{
	if (req->password != NULL) {
		explicit_bzero(req->password, strlen(req->password));
		free(req->password);
	}
	free(req);
}

/* Drop one reference; the last one frees the client. Called with
 * client->lock held; unlocks it. */
static void client_unref_unlock(struct mt_dirsvc_client *client)
{
	bool last = --client->refs == 0;

	pthread_mutex_unlock(&client->lock);
	if (last) {
		pthread_mutex_destroy(&client->lock);
		free(client);
	}
}

static void client_dispatch(struct mt_dirsvc_client *client);

/* A worker's post reached the loop: run the list, drop the post's ref. */
static void client_post_run(void *context)
{
	struct mt_dirsvc_client *client = context;
	client_dispatch(client);
	pthread_mutex_lock(&client->lock);
	client_unref_unlock(client);
}

/* The loop was freed before the post ran. */
static void client_post_discard(void *context)
{
	struct mt_dirsvc_client *client = context;
	pthread_mutex_lock(&client->lock);
	client_unref_unlock(client);
}

const struct mt_logctx *mt_dirsvc_req_log(const struct mt_dirsvc_request *req)
{
	return req->have_log ? &req->log : NULL;
}

void mt_dirsvc_req_complete(struct mt_dirsvc_request *req)
{
	struct mt_dirsvc_client *client = req->client;

	pthread_mutex_lock(&client->lock);
	if (atomic_load(&client->closed)) {
		request_free(req);
		client_unref_unlock(client);
		return;
	}
	bool was_empty = client->done == NULL;
	req->next = NULL;
	*client->done_tail = req;
	client->done_tail = &req->next;
	/* Under the lock: a closed client is never posted. The post holds a
	 * reference of its own. */
	if (was_empty) {
		client->refs++;
		mt_loop_post_discardable(client->loop, client_post_run,
					 client_post_discard, client);
	}
	pthread_mutex_unlock(&client->lock);
}

bool mt_dirsvc_req_abandoned(const struct mt_dirsvc_request *req)
{
	/* The request's reference keeps the client's memory alive. */
	return atomic_load(&req->client->closed);
}

/* Finish a request on the client's own thread (cache hit, bad input). */
static struct mt_dirsvc_request *
complete_local(struct mt_dirsvc_request *req)
{
	struct mt_dirsvc_client *client = req->client;

	pthread_mutex_lock(&client->lock);
	bool was_empty = client->done == NULL;
	req->next = NULL;
	*client->done_tail = req;
	client->done_tail = &req->next;
	pthread_mutex_unlock(&client->lock);
	if (was_empty)
		event_active(client->local_ev, EV_READ, 1);
	return req;
}

static void run_callback(struct mt_dirsvc_request *req)
{
	if (req->kind == DIRSVC_LOOKUP)
		req->callback.recipient(&req->result.recipient, req->context);
	else
		req->callback.auth(&req->result.auth, req->context);
}

/* On the client's loop: run the callbacks of every finished request. */
static void client_dispatch(struct mt_dirsvc_client *client)
{
	pthread_mutex_lock(&client->lock);
	struct mt_dirsvc_request *req = client->done, *next;
	client->done = NULL;
	client->done_tail = &client->done;
	pthread_mutex_unlock(&client->lock);
	for (; req != NULL; req = next) {
		next = req->next;
		if (!atomic_load_explicit(&req->cancelled, memory_order_relaxed))
			run_callback(req);
		request_free(req);
		pthread_mutex_lock(&client->lock);
		client_unref_unlock(client);	/* never the last: owner holds one */
	}
}

static void client_local_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	client_dispatch(arg);
}

struct mt_dirsvc_client *mt_dirsvc_client_new(struct mt_dirsvc *dirsvc,
					      struct mt_loop *loop)
{
	struct mt_dirsvc_client *client = mt_xcalloc(1, sizeof(*client));

	client->dirsvc = dirsvc;
	client->loop = loop;
	client->local_ev = event_new(mt_loop_base(loop), -1, 0, client_local_cb, client);
	if (client->local_ev == NULL)
		mt_panic("dirsvc: cannot make the client event");
	pthread_mutex_init(&client->lock, NULL);
	client->done_tail = &client->done;
	client->refs = 1;
	return client;
}

void mt_dirsvc_client_free(struct mt_dirsvc_client **client_p)
{
	struct mt_dirsvc_client *client = *client_p;

	if (client == NULL)
		return;
	*client_p = NULL;
	pthread_mutex_lock(&client->lock);
	atomic_store(&client->closed, true);
	struct mt_dirsvc_request *req = client->done, *next;
	client->done = NULL;
	client->done_tail = &client->done;
	pthread_mutex_unlock(&client->lock);
	/* No worker posts the client once closed is set; a post already
	 * made holds its own reference and finds the list empty. */
	event_free(client->local_ev);
	pthread_mutex_lock(&client->lock);
	for (; req != NULL; req = next) {
		next = req->next;
		request_free(req);
		client->refs--;		/* the owner's ref is still held */
	}
	/* Requests still with the workers are freed when they finish. */
	client_unref_unlock(client);
}

static struct mt_dirsvc_request *
request_new(struct mt_dirsvc_client *client, enum dirsvc_request_kind kind,
	    const struct mt_logctx *log, void *context)
{
	struct mt_dirsvc_request *req = mt_xmalloc(sizeof(*req));

	/* Only the header: strings and reason are written before use. */
	memset(req, 0, offsetof(struct mt_dirsvc_request, strings));
	req->reason[0] = '\0';
	req->client = client;
	req->kind = kind;
	req->context = context;
	if (log != NULL) {
		req->have_log = true;
		req->log = *log;
	}
	req->deadline = mt_clock_ms() + client->dirsvc->timeout;
	pthread_mutex_lock(&client->lock);
	client->refs++;
	pthread_mutex_unlock(&client->lock);
	return req;
}

/* The cache key of a checked value: ASCII letters lower-cased into key
 * (MT_LDAP_VALUE_MAX + 1 bytes); its length. */
static size_t key_make(char *key, const char *value)
{
	size_t i = 0;
	for (; value[i] != '\0'; i++) {
		char c = value[i];
		key[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	key[i] = '\0';
	return i;
}

void mt_dirsvc_request_cancel(struct mt_dirsvc_request **request_p)
{
	struct mt_dirsvc_request *req = *request_p;

	if (req == NULL)
		return;
	*request_p = NULL;
	atomic_store(&req->cancelled, true);
}

/* The two requests */

struct mt_dirsvc_request *
mt_dirsvc_lookup_recipient(struct mt_dirsvc_client *client,
			   const struct mt_logctx *log, const char *address,
			   mt_dirsvc_recipient_cb_t *callback, void *context)
{
	struct mt_dirsvc *d = client->dirsvc;
	struct mt_dirsvc_request *req = request_new(client, DIRSVC_LOOKUP, log,
						    context);
	const char *error;

	atomic_fetch_add_explicit(&d->stats.lookups, 1, memory_order_relaxed);
	req->callback.recipient = callback;
	if (!mt_ldap_value_check(address, MT_LDAP_VALUE_MAX, &error)) {
		req->result.recipient.status = MT_DIRSVC_INVALID;
		mt_dirsvc_req_reason(req, "invalid address: %s", error);
		return complete_local(req);
	}
	(void)key_make(req->key, address);
	if (mt_dirsvc_recipient_from_cache(d, req))
		return complete_local(req);
	req->strings_len = 0;
	mt_dirsvc_workers_submit(d, req);
	return req;
}

struct mt_dirsvc_request *
mt_dirsvc_authenticate(struct mt_dirsvc_client *client,
		       const struct mt_logctx *log, const char *user,
		       const char *password, mt_dirsvc_auth_cb_t *callback,
		       void *context)
{
	struct mt_dirsvc *d = client->dirsvc;
	struct mt_dirsvc_request *req = request_new(client, DIRSVC_AUTH, log,
						    context);
	struct mt_dirsvc_auth *a = &req->result.auth;
	const char *error;
	size_t pwlen = strlen(password);

	atomic_fetch_add_explicit(&d->stats.auths, 1, memory_order_relaxed);
	req->callback.auth = callback;
	if (!mt_ldap_value_check(user, MT_LDAP_VALUE_MAX, &error)) {
		a->status = MT_DIRSVC_AUTH_BAD_CREDENTIALS;
		mt_dirsvc_req_reason(req, "invalid user name: %s", error);
		return complete_local(req);
	}
	/* RFC 4513 section 5.1.2: a simple bind with a DN and an empty
	 * password is an unauthenticated bind, which may "succeed". */
	if (pwlen == 0 || pwlen > MT_DIRSVC_PASSWORD_MAX) {
		a->status = MT_DIRSVC_AUTH_BAD_CREDENTIALS;
		mt_dirsvc_req_reason(req, pwlen == 0 ? "empty password" :
				     "password too long");
		return complete_local(req);
	}
	(void)key_make(req->key, user);
	req->password = mt_xstrdup(password);
	if (mt_dirsvc_auth_from_cache(d, req)) {
		atomic_fetch_add_explicit(&d->stats.auth_ok, 1,
					  memory_order_relaxed);
		return complete_local(req);
	}
	req->strings_len = 0;
	mt_dirsvc_workers_submit(d, req);
	return req;
}

void mt_dirsvc_forget(struct mt_dirsvc_client *client, const char *name)
{
	struct mt_dirsvc *d = client->dirsvc;
	char key[MT_LDAP_VALUE_MAX + 1];
	const char *error;

	if (d->cache == NULL || !mt_ldap_value_check(name, MT_LDAP_VALUE_MAX, &error))
		return;
	size_t len = key_make(key, name);
	mt_dircache_remove(d->cache, key, len);
	mt_dircache_auth_remove(d->cache, key);
}

/* Counters */

void mt_dirsvc_log_stats(struct mt_dirsvc *d)
{
	struct mt_buf line = MT_BUF_INIT;
	const struct dirsvc_stats *s = &d->stats;

	mt_buf_append_str(&line, "dirsvc stats: ");
	if (d->cache != NULL)
		mt_dircache_stats_append(d->cache, &line);
	else
		mt_buf_append_str(&line, "cache=off");
#define C(name) (unsigned long long)atomic_load_explicit(&s->name, memory_order_relaxed)
	mt_buf_appendf(&line, " lookups=%llu auths=%llu auth_ok=%llu auth_bad=%llu "
		       "ldap_searches=%llu ldap_binds=%llu ldap_errors=%llu "
		       "connects=%llu connect_failures=%llu timeouts=%llu "
		       "tempfails=%llu",
		       C(lookups), C(auths), C(auth_ok), C(auth_bad),
		       C(ldap_searches), C(ldap_binds), C(ldap_errors),
		       C(connects), C(connect_failures), C(timeouts),
		       C(tempfails));
#undef C
	mt_info("%s", line.data);
	mt_buf_free(&line);
}
