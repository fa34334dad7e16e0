/* pop3-auth.c — POP3 login for mailtier-popstore: the store's ops for the
 * one POP3 login phase (lib-mail/pop3-login.h: USER/PASS, AUTH PLAIN, the
 * plaintext refusal and every answer to a malformed attempt), what a login
 * means on this shard (login.h: the directory, the MMP's proxy
 * credential, the mailHost check, the failure delay), then the mailbox
 * open that may answer [IN-USE].
 *
 * Trust boundary: names and passwords are the client's; passwords go only
 * to login.c and are never logged. Every failed login gets the same
 * "-ERR [AUTH] Authentication failed", whether the user exists or not,
 * and counts towards max_errors. Plaintext credentials are refused before
 * TLS unless the client is in proxy_addresses or allow_plaintext_auth is
 * set (RFC 2595 2.1 spirit). The session reads nothing while the login
 * (or its failure delay) runs (POP3_STATE_LOGIN).
 *
 * RFC 1939 7 (USER, PASS), RFC 5034 4 (AUTH), RFC 4616 (PLAIN and its
 * authorization identity), RFC 2449 8 and RFC 3206 (IN-USE, AUTH,
 * SYS/TEMP, SYS/PERM response codes). */
#include "pop3-session.h"
#include "alloc.h"
#include "dirsvc.h"
#include "login.h"
#include "pop3-login.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

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
			popstore_login_method(&s->verify), d->count,
			(unsigned long long)mt_store_mailbox_bytes(d->mbox));
		pop3_enter_state(s, POP3_STATE_TRANSACTION);
		mt_conn_set_lifetime(&s->conn, 0);
		mt_conn_set_idle(&s->conn, s->ps->set->idle_timeout);
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

/* login.c's verdict. */
static void verified(void *context, enum popstore_login_outcome outcome,
		     const char *address)
{
	struct pop3_session *s = context;
	switch (outcome) {
	case POPSTORE_LOGIN_OK:
		open_mailbox(s, address);
		return;
	case POPSTORE_LOGIN_FAILED:
		pop3_enter_state(s, POP3_STATE_AUTHORIZATION);
		pop3_error(s, "[AUTH] Authentication failed");
		break;
	case POPSTORE_LOGIN_WRONG_SHARD:
		/* RFC 3206 SYS/TEMP (likely to be temporary): during a
		 * mailbox move or with a stale directory the client's (or
		 * the MMP's) route is what is wrong, and it will be right
		 * again; as IMAP's NO [UNAVAILABLE]. The MMP looks the shard
		 * up again on it. */
		login_aborted(s, "[SYS/TEMP] This mailbox is not on this server");
		break;
	case POPSTORE_LOGIN_TEMPFAIL:
		login_aborted(s, "[SYS/TEMP] Authentication temporarily unavailable");
		break;
	}
	pop3_resume(s);
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
	pop3_enter_state(s, POP3_STATE_LOGIN);
	popstore_login_start(&s->verify, cred->authzid, cred->authcid,
			     cred->password, cred->method);
}

static const struct mt_pop3_login_ops login_ops = {
	.reply = login_reply, .reply_raw = login_reply_raw, .error = login_error,
	.plaintext_ok = login_plaintext_ok, .tls_active = login_tls_active,
	.tls_available = login_tls_available, .sasl_wait = login_sasl_wait,
	.starttls = login_starttls, .login = login_start,
};

void pop3_login_init(struct pop3_session *s)
{
	s->verify = (struct popstore_login){
		.ps = s->ps, .log = &s->log, .protocol = "pop3",
		.from_proxy = s->from_proxy, .peer_ip = s->peer_ip,
		.cb = verified, .context = s,
	};
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
