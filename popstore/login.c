/* login.c — a login on this shard, for POP3 and IMAP: the directory's
 * verdict on a user's password, the proxy credential, the mailHost check
 * and the failure delay (login.h says why the proxy's logins are not
 * delayed). Moved here from pop3-auth.c when the IMAP server arrived.
 *
 * Trust boundary: as login.h. RFC 4616 (PLAIN's authorization identity,
 * the proxy login's shape). */
#include "login.h"
#include "alloc.h"
#include "authfail.h"
#include "clock.h"
#include "dirsvc.h"
#include "loglimit.h"
#include "loop.h"
#include "buf.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

/* The delay (ms after the credentials arrived) of this failure's answer;
 * see login.h for who is exempt and why. */
static uint64_t failure_delay(struct popstore_login *l)
{
	struct popstore *ps = l->ps;
	const struct mt_authfail_limits limits = {
		.delay = ps->set->auth_fail_delay,
		.window = ps->set->auth_fail_window,
	};
	/* A wrong proxy credential is a guess at the key to every mailbox:
	 * delayed and counted per address, proxy_addresses too. */
	if (l->from_proxy && strcmp(l->method, "proxy") == 0 && !l->credential_failed)
		return 0;
	if (l->peer_ip[0] == '\0' || (l->from_proxy && !l->credential_failed))
		return mt_authfail_delay(limits.delay, 1);
	if (ps->auth_failures == NULL)
		ps->auth_failures = mt_authfail_new();
	return mt_authfail_failed(ps->auth_failures, l->peer_ip, &limits,
				  mt_clock_ms(), NULL);
}

static void finish(struct popstore_login *l, enum popstore_login_outcome outcome,
		   const char *address)
{
	l->cb(l->context, outcome, address);
}

static void failed_due(evutil_socket_t fd, short what, void *arg)
{
	struct popstore_login *l = arg;
	(void)fd;
	(void)what;
	if (!l->delaying)
		return;
	l->delaying = false;
	finish(l, POPSTORE_LOGIN_FAILED, NULL);
}

/* A refused proxy credential: one warning, at most one a second per
 * address (a guesser must not fill the log). */
static void proxy_refused_log(struct popstore_login *l, const char *reason,
			      uint64_t delay)
{
	struct popstore *ps = l->ps;
	uint64_t suppressed;
	if (!ps->proxy_log_limit_ready) {
		mt_loglimit_init(&ps->proxy_log_limit, 1000);
		ps->proxy_log_limit_ready = true;
	}
	if (!mt_loglimit_allow(&ps->proxy_log_limit, l->peer_ip, mt_clock_ms(), &suppressed))
		return;
	struct mt_buf fields = MT_BUF_INIT;
	mt_log_field(&fields, "authcid", l->authcid != NULL ? l->authcid : "-", 64);
	mt_slog(MT_LOG_WARNING, l->log,
		"%s proxy login refused%s authzid=%s reason=%s delay_ms=%llu "
		"suppressed=%llu", l->protocol, mt_buf_cstr(&fields), l->user, reason,
		(unsigned long long)delay, (unsigned long long)suppressed);
	mt_buf_free(&fields);
}

/* A failure that is the client's: FAILED once its delay has passed. */
static void failed(struct popstore_login *l, const char *user, const char *reason)
{
	uint64_t delay = failure_delay(l);
	if (!l->credential_failed)
		mt_slog(MT_LOG_INFO, l->log,
			"%s login failed user=%s method=%s reason=%s delay_ms=%llu",
			l->protocol, user != NULL ? user : "-", l->method, reason,
			(unsigned long long)delay);
	else
		proxy_refused_log(l, reason, delay);
	l->ps->logins_failed++;
	uint64_t wait = mt_authfail_wait_ms(l->started_ms, delay, mt_clock_ms());
	if (wait == 0) {
		finish(l, POPSTORE_LOGIN_FAILED, NULL);
		return;
	}
	if (l->delay_timer == NULL &&
	    (l->delay_timer = evtimer_new(mt_loop_base(l->ps->loop), failed_due,
					  l)) == NULL)
		mt_panic("evtimer_new failed");
	struct timeval tv = { (time_t)(wait / 1000), (suseconds_t)(wait % 1000) * 1000 };
	l->delaying = true;
	evtimer_add(l->delay_timer, &tv);
}

static void found(struct popstore_login *l, const char *address, const char *shard)
{
	if (shard != NULL && strcmp(shard, l->ps->shard) == 0) {
		finish(l, POPSTORE_LOGIN_OK, address);
		return;
	}
	mt_slog(MT_LOG_INFO, l->log, "%s login user=%s result=wrong-shard shard=%s",
		l->protocol, address, shard != NULL ? shard : "-");
	l->ps->logins_failed++;
	finish(l, POPSTORE_LOGIN_WRONG_SHARD, NULL);
}

/* The directory could not answer: not the client's fault, no delay. */
static void tempfail(struct popstore_login *l, const char *reason)
{
	mt_slog(MT_LOG_WARNING, l->log, "%s login user=%s result=tempfail reason=\"%s\"",
		l->protocol, l->user, reason != NULL ? reason : "directory");
	finish(l, POPSTORE_LOGIN_TEMPFAIL, NULL);
}

static void auth_done(const struct mt_dirsvc_auth *r, void *context)
{
	struct popstore_login *l = context;
	l->dir_req = NULL;
	switch (r->status) {
	case MT_DIRSVC_AUTH_OK:
		found(l, r->address, r->shard);
		break;
	case MT_DIRSVC_AUTH_BAD_CREDENTIALS:
		failed(l, l->user, "bad-credentials");
		break;
	case MT_DIRSVC_AUTH_DISABLED:
		failed(l, l->user, "disabled");
		break;
	case MT_DIRSVC_AUTH_TEMPFAIL:
	default:
		tempfail(l, r->reason);
		break;
	}
}

/* The proxy logged in for user l->user: does the user live here? */
static void proxy_lookup_done(const struct mt_dirsvc_recipient *r, void *context)
{
	struct popstore_login *l = context;
	l->dir_req = NULL;
	switch (r->status) {
	case MT_DIRSVC_FOUND:
		if (r->account != MT_DIRSVC_ACTIVE)
			failed(l, l->user, "disabled");
		else
			found(l, r->address, r->shard);
		break;
	case MT_DIRSVC_NOT_FOUND:
	case MT_DIRSVC_INVALID:
		failed(l, l->user, "unknown-authzid");
		break;
	case MT_DIRSVC_TEMPFAIL:
	default:
		tempfail(l, r->reason);
		break;
	}
}

/* Constant-time comparison of two secrets of any lengths. */
static bool secret_equal(const char *a, const char *b)
{
	unsigned char da[EVP_MAX_MD_SIZE], db[EVP_MAX_MD_SIZE];
	unsigned int la = 0, lb = 0;
	if (EVP_Digest(a, strlen(a), da, &la, EVP_sha256(), NULL) != 1 ||
	    EVP_Digest(b, strlen(b), db, &lb, EVP_sha256(), NULL) != 1 || la != lb)
		return false;
	return CRYPTO_memcmp(da, db, la) == 0;
}

static void proxy_login(struct popstore_login *l, const char *authzid,
			const char *authcid, const char *password)
{
	const struct popstore *ps = l->ps;
	const char *why = NULL;
	if (!l->from_proxy)
		why = "proxy-login-from-non-proxy-address";
	else if (ps->proxy_password == NULL)
		why = "proxy-logins-disabled";
	else if (strcmp(authcid, ps->set->proxy_user) != 0)
		why = "not-the-proxy-user";
	if (!secret_equal(password, ps->proxy_password != NULL ? ps->proxy_password : "") &&
	    why == NULL)
		why = "bad-proxy-password";
	if (why != NULL) {
		l->credential_failed = true;
		l->authcid = mt_xstrdup(authcid);
		failed(l, authzid, why);
		return;
	}
	l->dir_req = mt_dirsvc_lookup_recipient(l->ps->dir, l->log, authzid,
						proxy_lookup_done, l);
}

void popstore_login_start(struct popstore_login *l, const char *authzid,
			  const char *authcid, const char *password,
			  const char *method)
{
	const bool proxy = authzid != NULL && authzid[0] != '\0';
	free(l->user);
	l->user = mt_xstrdup(proxy ? authzid : authcid);
	l->method = proxy ? "proxy" : method;
	l->credential_failed = false;
	MT_FREE(&l->authcid);
	l->started_ms = mt_clock_ms();
	if (proxy)
		proxy_login(l, authzid, authcid, password);
	else
		l->dir_req = mt_dirsvc_authenticate(l->ps->dir, l->log, authcid,
						    password, auth_done, l);
}

const char *popstore_login_method(const struct popstore_login *l)
{
	return l->method != NULL ? l->method : "-";
}

bool popstore_login_busy(const struct popstore_login *l)
{
	return l->dir_req != NULL || l->delaying;
}

void popstore_login_free(struct popstore_login *l)
{
	mt_dirsvc_request_cancel(&l->dir_req);
	if (l->delay_timer != NULL)
		event_free(l->delay_timer);
	l->delay_timer = NULL;
	l->delaying = false;
	MT_FREE(&l->user);
	MT_FREE(&l->authcid);
}
