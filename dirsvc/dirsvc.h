/* dirsvc.h — libdirsvc: the one client API through which every daemon asks
 * the directory (OpenLDAP slapd) who a recipient is and whether a password
 * is right. Nothing outside dirsvc/ builds LDAP filters or talks LDAP.
 *
 *   struct mt_dirsvc *d = mt_dirsvc_new(dirset, config, &error);   (once)
 *   struct mt_dirsvc_client *cl = mt_dirsvc_client_new(d, base);   (per loop)
 *   sess->req = mt_dirsvc_lookup_recipient(cl, &sess->log, addr,
 *                                          rcpt_done, sess);
 *   ...  rcpt_done(result, sess) runs later on base's thread:
 *        sess->req = NULL; reply 250 / 550 / 451 ...
 *   on session free:  mt_dirsvc_request_cancel(&sess->req);
 *   periodically:     mt_dirsvc_log_stats(d);
 *   at exit:          mt_dirsvc_client_free(&cl) in each loop's thread,
 *                     then mt_dirsvc_free(&d).
 *
 * Asynchronous: the caller's loop never waits on LDAP. A small pool of
 * worker threads (pool_size), each with its own LDAP connection (and with
 * auth_method = bind a second one for user binds), runs the blocking
 * libldap calls with network and operation timeouts, and the password hash
 * checks of auth_method = hash; results come
 * back to the caller's loop through mt_loop_post(). A cache hit
 * is answered from the calling thread without a thread switch, but still
 * through the loop: a callback is never called before the call that asked
 * for it has returned.
 *
 * Timeouts and failover: every request has a deadline of [directory]
 * timeout from the moment it is asked; whatever happens (slapd down,
 * stopped, slow, a queue of requests ahead), its callback runs by then with
 * TEMPFAIL at the latest. URIs are tried in order; one that fails to
 * connect or times out is skipped for a second; connections are re-made on
 * the next request after a failure (a slapd restart is retried at once,
 * invisibly to callers).
 *
 * Threads: mt_dirsvc_new/free from one thread; a client belongs to the
 * thread that runs its loop, and its requests, cancels and callbacks
 * all happen in that thread. Several clients (worker loops) share one
 * struct mt_dirsvc, its pool and its cache. libevent needs no locking
 * (evthread) for this.
 *
 * Trust boundary: addresses, user names and passwords are client data:
 * they are checked (at most 254 octets, UTF-8, no control characters) and
 * RFC 4515-escaped before they reach a filter; passwords are never logged
 * nor cached (only an HMAC of the last good one; dircache.h). Directory
 * answers are trusted for content but checked for shape: an entry without
 * mailHost, or whose mailHost is not in [shards], is logged with its DN and
 * answered TEMPFAIL, never guessed.
 * RFCs: 4511 (LDAP), 4513 section 5.1 (simple bind; an empty password is
 * refused here, as it would be an unauthenticated bind), 4515 (filters),
 * 2798 (inetOrgPerson), 3112 (userPassword schemes). */
#ifndef MT_DIRSVC_H
#define MT_DIRSVC_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "dirsvc-settings.h"
#include "log.h"

struct mt_loop;
struct mt_dirsvc;
struct mt_dirsvc_client;
struct mt_dirsvc_request;

/* mailtierStatus: absent means active. */
enum mt_dirsvc_account {
	MT_DIRSVC_ACTIVE,
	MT_DIRSVC_DISABLED,	/* no login; mail to it is rejected */
	MT_DIRSVC_HOLD,		/* no login; mail is accepted and kept */
};

enum mt_dirsvc_lookup_status {
	MT_DIRSVC_FOUND,
	MT_DIRSVC_NOT_FOUND,	/* no entry has this mail or mailLocalAddress */
	MT_DIRSVC_INVALID,	/* refused before asking: too long, not UTF-8 */
	MT_DIRSVC_TEMPFAIL,	/* directory unreachable, timeout, bad entry */
};

struct mt_dirsvc_recipient {
	enum mt_dirsvc_lookup_status status;
	/* FOUND: */
	const char *address;	/* canonical: the entry's mail */
	const char *shard;	/* mailHost, a key of [shards] */
	const char *forward;	/* mailRoutingAddress, or NULL */
	uint64_t quota;		/* mailtierQuota bytes; 0 = store default */
	enum mt_dirsvc_account account;
	bool cached;		/* answered from the cache */
	/* NOT_FOUND, INVALID, TEMPFAIL: why, for the log (no secrets). */
	const char *reason;
};

enum mt_dirsvc_auth_status {
	MT_DIRSVC_AUTH_OK,
	MT_DIRSVC_AUTH_BAD_CREDENTIALS,	/* unknown user or wrong password */
	MT_DIRSVC_AUTH_DISABLED,	/* right password, account disabled/hold */
	MT_DIRSVC_AUTH_TEMPFAIL,
};

struct mt_dirsvc_auth {
	enum mt_dirsvc_auth_status status;
	/* OK and DISABLED: */
	const char *address;	/* canonical: the entry's mail */
	const char *shard;	/* mailHost (OK only) */
	enum mt_dirsvc_account account;
	bool cached;
	const char *reason;	/* for the log; never shown to the client */
};

/* Results and their strings are valid during the callback only. */
typedef void mt_dirsvc_recipient_cb_t(const struct mt_dirsvc_recipient *result,
				      void *context);
typedef void mt_dirsvc_auth_cb_t(const struct mt_dirsvc_auth *result,
				 void *context);

/* Start the pool (threads start at once; LDAP connections are made on
 * demand, so a directory that is down does not stop start-up). Reads
 * set->bind_password_file. config supplies [shards] (the names are copied;
 * config may be freed afterwards); config NULL (tools only) leaves mailHost
 * unchecked. NULL and a message on failure. */
struct mt_dirsvc *mt_dirsvc_new(const struct mt_directory_settings *set,
				const struct mt_config *config,
				const char **error_r);
/* Stop the threads and close the connections. Every client must have been
 * freed before. */
void mt_dirsvc_free(struct mt_dirsvc **dirsvc_p);

/* A per-loop handle: completions for requests made through it are run on
 * loop, by the thread that runs it. */
struct mt_dirsvc_client *mt_dirsvc_client_new(struct mt_dirsvc *dirsvc,
					      struct mt_loop *loop);
/* Cancel the client's outstanding requests (their callbacks never run) and
 * free it. From the loop's thread, not from inside one of its callbacks. */
void mt_dirsvc_client_free(struct mt_dirsvc_client **client_p);

/* Find the account that receives mail for address (its mail or one of its
 * mailLocalAddress values, case-insensitively). log (may be NULL) puts the
 * caller's session id on dirsvc's log lines. The returned handle is valid
 * until the callback runs or the request is cancelled; never NULL. */
struct mt_dirsvc_request *
mt_dirsvc_lookup_recipient(struct mt_dirsvc_client *client,
			   const struct mt_logctx *log, const char *address,
			   mt_dirsvc_recipient_cb_t *callback, void *context);

/* Check user's password. user is the account's mail address or uid.
 * [directory] auth_method says how: "bind" (an LDAP simple bind as the
 * user's DN) or "hash" (the stored userPassword, {CRYPT}, {SSHA512} or
 * {SSHA}, checked here). The password is copied, wiped after use and never
 * logged. Handle as for mt_dirsvc_lookup_recipient(). */
struct mt_dirsvc_request *
mt_dirsvc_authenticate(struct mt_dirsvc_client *client,
		       const struct mt_logctx *log, const char *user,
		       const char *password, mt_dirsvc_auth_cb_t *callback,
		       void *context);

/* Drop what the cache holds for name: its recipient lookup (name as an
 * address) and its auth entry (name as a login user name), so that the
 * next lookup or login asks the directory. For a tier that learned the
 * cached answer is stale, e.g. a store answered that the user is not on
 * the shard the cache names (mailHost changed by a move). Keys are as the
 * lookups make them (ASCII case ignored); a lookup answered from an alias
 * or a uid is cached under that name, so forget every name the caller
 * asked with. A request already sent to the directory is not affected.
 * Any thread; a name the lookups would refuse (INVALID) is a no-op. */
void mt_dirsvc_forget(struct mt_dirsvc_client *client, const char *name);

/* Forget a request: its callback will not run. From the client's thread;
 * sets *request_p to NULL; a NULL *request_p is fine. */
void mt_dirsvc_request_cancel(struct mt_dirsvc_request **request_p);

/* Log the counters as one line: "dirsvc stats: cache_entries=N
 * cache_hits=N ... ldap_requests=N ldap_errors=N tempfails=N ...". */
void mt_dirsvc_log_stats(struct mt_dirsvc *dirsvc);
/* Export the same counters (and the cache's) on the process's metrics
 * (lib/metrics.h) as mailtier_dirsvc_*; read at each scrape. The
 * directory must outlive m's last render (free m's listener first). */
struct mt_metrics;
void mt_dirsvc_metrics(struct mt_dirsvc *dirsvc, struct mt_metrics *m);

/* Names for log lines. */
const char *mt_dirsvc_lookup_status_name(enum mt_dirsvc_lookup_status status);
const char *mt_dirsvc_auth_status_name(enum mt_dirsvc_auth_status status);
const char *mt_dirsvc_account_name(enum mt_dirsvc_account account);

#endif
