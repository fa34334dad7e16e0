/* pop3-auth.c — POP3 login for mailtier-popstore: USER/PASS and AUTH PLAIN
 * for users (verified by libdirsvc; the user's mailHost must be this
 * shard), AUTH PLAIN with an authorization identity for the MMP's proxy
 * credential (only from proxy_addresses), then the mailbox open that may
 * answer [IN-USE].
 *
 * Trust boundary: names and passwords are the client's. Passwords go only
 * to libdirsvc or into a constant-time comparison with the proxy
 * credential, and are wiped from our buffers after use; they are never
 * logged. Every failed login gets the same "-ERR [AUTH] Authentication
 * failed", whether the user exists or not, and counts towards max_errors.
 * Plaintext credentials are refused before TLS unless the client is in
 * proxy_addresses or allow_plaintext_auth is set (RFC 2595 2.1 spirit).
 *
 * Failure timing: the -ERR is sent auth_fail_delay after the PASS or AUTH
 * arrived, not when the directory answers, so a real user's slow password
 * hash and an unknown user's quick miss end at the same moment. The delay
 * doubles per failure from the client address within auth_fail_window
 * (lib/authfail.c, as the MTA's and the MMP's), at most 60 s. Two kinds of
 * client are treated otherwise, because they share one address:
 *   - the MMP's proxy logins (AUTH PLAIN with the proxy credential and
 *     the user as authzid, from proxy_addresses) are answered at once and
 *     never counted. The MMP checked the user's password itself, delays
 *     its own clients' failures per their real address and hides the
 *     directory's time from them; here all its users share its address,
 *     so counting would throttle every one of them for one guesser, and a
 *     delayed answer would outlast the MMP's backend_connect_timeout and
 *     mark this shard down. Whoever holds the proxy credential may open
 *     any mailbox anyway, so the timing of its failures tells nothing;
 *     guessing the credential itself is left to the trusted hosts of
 *     proxy_addresses (it should be long and random).
 *   - a user's own password from proxy_addresses (a trusted local client)
 *     gets the first delay every time, not counted: its timing is hidden
 *     but no address-wide penalty grows against the MMP's host.
 * The session reads nothing meanwhile (POP3_STATE_AUTH_DELAY); the timer
 * belongs to the session and is freed when it closes, so a client that
 * goes away during the delay leaves nothing to fire.
 *
 * The commands themselves (USER, PASS, AUTH PLAIN, the continuation, the
 * plaintext refusal and every answer to a malformed attempt) are the one
 * POP3 login phase shared with the MMP (lib-mail/pop3-login.h); here are
 * the store's ops for it and what a login means on this shard.
 *
 * RFC 1939 7 (USER, PASS), RFC 5034 4 (AUTH), RFC 4616 (PLAIN and its
 * authorization identity), RFC 2449 8 and RFC 3206 (IN-USE, AUTH,
 * SYS/TEMP, SYS/PERM response codes). */
#include "pop3-session.h"
#include "clock.h"
#include "alloc.h"
#include "authfail.h"
#include "dirsvc.h"
#include "pop3-login.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

/* The delay (ms after the command) of this failed login's answer; see
 * the header for who is exempt and why. */
static uint64_t failure_delay(struct pop3_session *s)
{
	struct popstore *ps = s->ps;
	const struct mt_authfail_limits limits = {
		.delay = ps->set->auth_fail_delay,
		.window = ps->set->auth_fail_window,
	};
	if (s->from_proxy && strcmp(s->login_method, "proxy") == 0)
		return 0;
	if (s->from_proxy || s->peer_ip[0] == '\0')
		return mt_authfail_delay(limits.delay, 1);
	if (ps->auth_failures == NULL)
		ps->auth_failures = mt_authfail_new();
	return mt_authfail_failed(ps->auth_failures, s->peer_ip, &limits,
				  mt_clock_ms(), NULL);
}

/* The one answer to every failed login. */
static void login_failed_answer(struct pop3_session *s)
{
	pop3_enter_state(s, POP3_STATE_AUTHORIZATION);
	pop3_error(s, "[AUTH] Authentication failed");
}

/* The delay is over: answer, then go on with pipelined input. */
static void login_failed_due(evutil_socket_t fd, short what, void *arg)
{
	struct pop3_session *s = arg;
	(void)fd;
	(void)what;
	if (s->state != POP3_STATE_AUTH_DELAY)
		return;
	login_failed_answer(s);
	pop3_resume(s);
}

/* A failed login: -ERR [AUTH] once its delay since the command has
 * passed. True if the answer waits (login_failed_due resumes). */
static bool login_failed(struct pop3_session *s, const char *user, const char *reason)
{
	uint64_t delay = failure_delay(s);
	mt_slog(MT_LOG_INFO, &s->log,
		"pop3 login failed user=%s method=%s reason=%s delay_ms=%llu",
		user != NULL ? user : "-", s->login_method, reason,
		(unsigned long long)delay);
	s->ps->logins_failed++;
	uint64_t wait = mt_authfail_wait_ms(s->login_started_ms, delay,
					    mt_clock_ms());
	if (wait == 0) {
		login_failed_answer(s);
		return false;
	}
	if (s->auth_delay_timer == NULL &&
	    (s->auth_delay_timer = evtimer_new(mt_loop_base(s->ps->loop),
					       login_failed_due, s)) == NULL)
		mt_panic("evtimer_new failed");
	struct timeval tv = { (time_t)(wait / 1000), (suseconds_t)(wait % 1000) * 1000 };
	pop3_enter_state(s, POP3_STATE_AUTH_DELAY);
	evtimer_add(s->auth_delay_timer, &tv);
	return true;
}

/* After a failure that is not the client's fault: back to AUTHORIZATION. */
static void login_aborted(struct pop3_session *s, const char *reply)
{
	pop3_enter_state(s, POP3_STATE_AUTHORIZATION);
	pop3_err(s, "%s", reply);
	MT_FREE(&s->login);
}

static void open_done(struct mt_store_req *req, void *context)
{
	struct pop3_session *s = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);

	s->store_req = NULL;
	switch (status) {
	case MT_STORE_OK: {
		struct pop3_maildrop *d = &s->drop;
		d->mbox = mt_store_req_mailbox(req);
		d->name = mt_xstrdup(s->login);
		d->count = mt_store_mailbox_count(d->mbox);
		d->deleted = mt_xcalloc(d->count == 0 ? 1 : d->count, sizeof(bool));
		s->ps->logins++;
		mt_slog(MT_LOG_INFO, &s->log,
			"pop3 login user=%s method=%s messages=%u bytes=%llu", s->login,
			s->login_method, d->count,
			(unsigned long long)mt_store_mailbox_bytes(d->mbox));
		pop3_enter_state(s, POP3_STATE_TRANSACTION);
		pop3_ok(s, "Logged in, %u messages", d->count);
		pop3_prefetch_start(s);
		break;
	}
	case MT_STORE_IN_USE:
		mt_slog(MT_LOG_INFO, &s->log, "pop3 login user=%s result=in-use", s->login);
		login_aborted(s, "[IN-USE] Mailbox is in use by another session");
		break;
	case MT_STORE_FATAL:
		login_aborted(s, "[SYS/TEMP] Mailbox temporarily unavailable");
		popstore_store_fatal(s->ps, error);
		return;
	default:
		mt_slog(MT_LOG_WARNING, &s->log, "pop3 login user=%s open failed: %s: %s",
			s->login, mt_store_status_name(status), error);
		login_aborted(s, "[SYS/TEMP] Mailbox temporarily unavailable");
		break;
	}
	pop3_resume(s);
}

/* Authenticated as (or on behalf of) address: open its mailbox. */
static void open_mailbox(struct pop3_session *s, const char *address)
{
	free(s->login);
	s->login = mt_xstrdup(address);
	pop3_enter_state(s, POP3_STATE_LOGIN);
	s->store_req = mt_store_mailbox_open(s->ps->port, address, open_done, s);
}

static bool shard_is_ours(struct pop3_session *s, const char *address,
			  const char *shard)
{
	if (shard != NULL && strcmp(shard, s->ps->shard) == 0)
		return true;
	mt_slog(MT_LOG_INFO, &s->log, "pop3 login user=%s result=wrong-shard shard=%s",
		address, shard != NULL ? shard : "-");
	s->ps->logins_failed++;
	login_aborted(s, "[SYS/PERM] This mailbox is not on this server");
	return false;
}

/* The directory could not answer: not the client's fault, no delay. */
static void directory_tempfail(struct pop3_session *s, const char *reason)
{
	mt_slog(MT_LOG_WARNING, &s->log, "pop3 login user=%s result=tempfail reason=\"%s\"",
		s->user, reason != NULL ? reason : "directory");
	login_aborted(s, "[SYS/TEMP] Authentication temporarily unavailable");
}

static void auth_done(const struct mt_dirsvc_auth *r, void *context)
{
	struct pop3_session *s = context;
	s->dir_req = NULL;

	switch (r->status) {
	case MT_DIRSVC_AUTH_OK:
		if (shard_is_ours(s, r->address, r->shard)) {
			open_mailbox(s, r->address);
			return;
		}
		break;
	case MT_DIRSVC_AUTH_BAD_CREDENTIALS:
		if (login_failed(s, s->user, "bad-credentials"))
			return;
		break;
	case MT_DIRSVC_AUTH_DISABLED:
		if (login_failed(s, s->user, "disabled"))
			return;
		break;
	case MT_DIRSVC_AUTH_TEMPFAIL:
	default:
		directory_tempfail(s, r->reason);
		break;
	}
	pop3_resume(s);
}

/* A user's own password: ask the directory. */
static void password_login(struct pop3_session *s, const char *user,
			   const char *password, const char *method)
{
	if (user != s->user) {	/* USER/PASS: it is s->user already */
		free(s->user);
		s->user = mt_xstrdup(user);
	}
	s->login_method = method;
	pop3_enter_state(s, POP3_STATE_LOGIN);
	s->dir_req = mt_dirsvc_authenticate(s->ps->dir, &s->log, user, password,
					    auth_done, s);
}

/* The proxy logged in for user s->user: does the user live here? */
static void proxy_lookup_done(const struct mt_dirsvc_recipient *r, void *context)
{
	struct pop3_session *s = context;
	s->dir_req = NULL;

	switch (r->status) {
	case MT_DIRSVC_FOUND:
		if (r->account != MT_DIRSVC_ACTIVE) {
			if (login_failed(s, s->user, "disabled"))
				return;
		} else if (shard_is_ours(s, r->address, r->shard)) {
			open_mailbox(s, r->address);
			return;
		}
		break;
	case MT_DIRSVC_NOT_FOUND:
	case MT_DIRSVC_INVALID:
		if (login_failed(s, s->user, "unknown-authzid"))
			return;
		break;
	case MT_DIRSVC_TEMPFAIL:
	default:
		directory_tempfail(s, r->reason);
		break;
	}
	pop3_resume(s);
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

static void proxy_login(struct pop3_session *s, const struct mt_pop3_credentials *p)
{
	const struct popstore *ps = s->ps;
	s->login_method = "proxy";
	free(s->user);
	s->user = mt_xstrdup(p->authzid);
	const char *why = NULL;
	if (!s->from_proxy)
		why = "proxy-login-from-non-proxy-address";
	else if (ps->proxy_password == NULL)
		why = "proxy-logins-disabled";
	else if (strcmp(p->authcid, ps->set->proxy_user) != 0)
		why = "not-the-proxy-user";
	if (!secret_equal(p->password, ps->proxy_password != NULL ? ps->proxy_password : "") &&
	    why == NULL)
		why = "bad-proxy-password";
	if (why != NULL) {
		mt_slog(MT_LOG_WARNING, &s->log, "pop3 proxy login refused authcid=%s reason=%s",
			p->authcid, why);
		login_failed(s, p->authzid, why);
		return;
	}
	pop3_enter_state(s, POP3_STATE_LOGIN);
	s->dir_req = mt_dirsvc_lookup_recipient(s->ps->dir, &s->log, p->authzid,
						proxy_lookup_done, s);
}

/* The login phase's ops (lib-mail/pop3-login.h) on a store session. */

static void login_reply(void *context, const char *line)
{
	mt_line_write(pop3_output(context), "%s", line);
}

static void login_reply_raw(void *context, const char *data, size_t len)
{
	evbuffer_add(pop3_output(context), data, len);
}

static void login_error(void *context, const char *line)
{
	pop3_error_line(context, line);
}

static bool login_plaintext_ok(void *context)
{
	return pop3_plaintext_ok(context);
}

static bool login_tls_active(void *context)
{
	const struct pop3_session *s = context;
	return s->tls;
}

static bool login_tls_available(void *context)
{
	const struct pop3_session *s = context;
	return s->ps->tls != NULL;
}

/* RFC 5034 4 puts no 255-octet limit on a response line. */
static void login_sasl_wait(void *context, bool waiting)
{
	struct pop3_session *s = context;
	mt_line_reader_init(&s->reader, waiting ? POP3_SASL_LINE_MAX : POP3_LINE_MAX,
			    MT_LINE_ACCEPT_LF);
	pop3_enter_state(s, waiting ? POP3_STATE_SASL : POP3_STATE_AUTHORIZATION);
}

static void login_starttls(void *context)
{
	pop3_starttls_pending(context);
}

/* A user's own password, or (an authorization identity) the MMP's proxy
 * credential acting for that user. */
static void login_start(void *context, const struct mt_pop3_credentials *cred)
{
	struct pop3_session *s = context;
	s->login_method = cred->method;
	s->login_started_ms = mt_clock_ms();
	if (cred->authzid[0] != '\0')
		proxy_login(s, cred);
	else
		password_login(s, cred->authcid, cred->password, cred->method);
}

static const struct mt_pop3_login_ops login_ops = {
	.reply = login_reply, .reply_raw = login_reply_raw, .error = login_error,
	.plaintext_ok = login_plaintext_ok, .tls_active = login_tls_active,
	.tls_available = login_tls_available, .sasl_wait = login_sasl_wait,
	.starttls = login_starttls, .login = login_start,
};

void pop3_login_init(struct pop3_session *s)
{
	/* An authorization identity is the MMP's proxy login (proxy_login
	 * checks where it comes from and its credential). */
	s->login_phase = (struct mt_pop3_login){
		.ops = &login_ops, .context = s, .user = &s->user,
		.authzid_allowed = true,
		.capa_extra = "IMPLEMENTATION " POPSTORE_NAME "\r\n",
	};
}

void pop3_cmd_user(struct pop3_session *s, const char *arg)
{
	mt_pop3_login_user(&s->login_phase, arg);
}

void pop3_cmd_pass(struct pop3_session *s, const char *arg)
{
	mt_pop3_login_pass(&s->login_phase, arg);
}

void pop3_cmd_auth(struct pop3_session *s, const char *arg)
{
	mt_pop3_login_auth(&s->login_phase, arg);
}

void pop3_sasl_response(struct pop3_session *s, char *line)
{
	mt_pop3_login_sasl_response(&s->login_phase, line);
}
