/* imap-auth.c — IMAP login for mailtier-popstore: the store's ops for the
 * one IMAP not-authenticated state (lib-mail/imap-login.h: LOGIN,
 * AUTHENTICATE PLAIN, STARTTLS, ID, the plaintext refusal), what a login
 * means on this shard (login.h: the directory, the MMP's proxy credential,
 * the mailHost check, the failure delay), and the user's first login's
 * folders (Sent, Drafts, Trash, Junk, Archive with their special-use
 * attributes, made once by the store).
 *
 * Trust boundary: names and passwords are the client's; passwords go only
 * to login.c and are never logged. Every failed login gets the same
 * "NO [AUTHENTICATIONFAILED] Authentication failed", whether the user
 * exists or not, and counts towards max_errors. Plaintext credentials are
 * refused before TLS unless the client is in proxy_addresses or
 * allow_plaintext_auth is set (RFC 9051 6.2.3, LOGINDISABLED). ID fields
 * are logged only from proxy_addresses and only before login (the MMP's
 * x-originating-ip; after login the proxy relays what its user writes),
 * each value escaped so it stays one key=value field.
 *
 * RFC 9051 6.2.2, 6.2.3, 7.1 (AUTHENTICATIONFAILED, UNAVAILABLE,
 * CAPABILITY in the tagged OK); RFC 4616; RFC 6154 (the special-use
 * folders); RFC 2971 (ID). */
#include "imap-session.h"
#include "alloc.h"
#include "buf.h"
#include "store/store.h"
#include "dirsvc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

/* What this store offers before login (imap-login adds STARTTLS,
 * LOGINDISABLED and AUTH=PLAIN as the connection allows). */
#define CAPABILITIES_PRE "IMAP4rev2 IMAP4rev1 SASL-IR LITERAL+ ID ENABLE"

static void prepared(struct mt_store_req *req, void *context)
{
	struct imap_session *s = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	if (status == MT_STORE_FATAL) {
		imap_store_fatal(s, s->login_tag, error);
		return;
	}
	if (status != MT_STORE_OK) {
		/* The folders are a convenience: the login stands. */
		mt_slog(MT_LOG_WARNING, &s->log, "imap user=%s first-login folders: %s: %s",
			s->user, mt_store_status_name(status), error);
	}
	s->ps->logins++;
	mt_slog(MT_LOG_INFO, &s->log, "imap login user=%s method=%s", s->user,
		popstore_login_method(&s->verify));
	imap_tagged(s, s->login_tag, "OK [CAPABILITY %s] Logged in",
		    imap_capabilities_auth(s));
	imap_authenticated(s);
	imap_resume_in(s, IMAP_STATE_AUTH);
}

static void quota_found(const struct mt_dirsvc_recipient *r, void *context)
{
	struct imap_session *s = context;
	s->dir_req = NULL;
	if (r->status != MT_DIRSVC_FOUND) {
		/* Just verified, now not found: the directory is in trouble. */
		mt_slog(MT_LOG_WARNING, &s->log, "imap user=%s quota lookup: %s", s->user,
			r->reason != NULL ? r->reason : "not found");
		popstore_user_close(s->ps, s->user);
		s->user_counted = false;
		MT_FREE(&s->user);
		imap_tagged(s, s->login_tag, "NO [UNAVAILABLE] Authentication "
			    "temporarily unavailable.");
		imap_resume_in(s, IMAP_STATE_NOT_AUTH);
		return;
	}
	s->quota = r->quota != 0 ? r->quota : s->ps->set->default_quota;
	const struct mt_store_folder_args args = {
		.change = MT_STORE_FOLDER_PREPARE, .user = s->user,
		.folder_max = (unsigned int)s->ps->set->max_folders,
	};
	s->store_req = mt_store_folder_change(s->ps->port, &args, prepared, s);
}

static void verified(void *context, enum popstore_login_outcome outcome,
		     const char *address)
{
	struct imap_session *s = context;
	switch (outcome) {
	case POPSTORE_LOGIN_OK:
		if (!popstore_user_open(s->ps, address)) {
			mt_slog(MT_LOG_WARNING, &s->log, "imap login refused user=%s "
				"reason=imap-max-user-sessions limit=%llu", address,
				(unsigned long long)s->ps->set->imap_max_user_sessions);
			imap_tagged(s, s->login_tag, "NO [LIMIT] Too many sessions of this "
				    "user are open.");
			break;
		}
		s->user_counted = true;
		s->user = mt_xstrdup(address);
		/* The user's quota (RFC 9208; APPEND and COPY keep to it), as
		 * LMTP reads it: the directory's, else default_quota. */
		s->dir_req = mt_dirsvc_lookup_recipient(s->ps->dir, &s->log, address,
							quota_found, s);
		return;
	case POPSTORE_LOGIN_FAILED:
		imap_login_failed(s, s->login_tag);
		break;
	case POPSTORE_LOGIN_WRONG_SHARD:
		imap_tagged(s, s->login_tag, "NO [UNAVAILABLE] This mailbox is not on "
			    "this server.");
		break;
	case POPSTORE_LOGIN_TEMPFAIL:
		imap_tagged(s, s->login_tag, "NO [UNAVAILABLE] Authentication "
			    "temporarily unavailable.");
		break;
	}
	imap_resume_in(s, IMAP_STATE_NOT_AUTH);
}

/* The login phase's ops (lib-mail/imap-login.h) on a store session. */

static void login_reply(void *context, const char *line)
{
	struct imap_session *s = context;
	imap_line(s, "%s", line);
	/* A tagged reply ends the command; "*" and "+" lines do not. */
	const char *space = strchr(line, ' ');
	if (line[0] != '*' && line[0] != '+' && space != NULL)
		mt_commands_reply_class(&s->commands,
					mt_reply_class_imap(space + 1, strlen(space + 1)));
}

static void login_error(void *context, const char *line)
{
	imap_error_line(context, line);
}

static bool login_plaintext_ok(void *context)
{
	return imap_plaintext_ok(context);
}

static bool login_tls_active(void *context)
{
	const struct imap_session *s = context;
	return s->tls;
}

static bool login_tls_available(void *context)
{
	const struct imap_session *s = context;
	return s->ps->tls != NULL;
}

static void login_sasl_wait(void *context, bool waiting)
{
	struct imap_session *s = context;
	mt_line_reader_init(&s->reader, IMAP_SASL_LINE_MAX, MT_LINE_ACCEPT_LF);
	imap_enter_state(s, waiting ? IMAP_STATE_SASL : IMAP_STATE_NOT_AUTH);
}

static void login_starttls(void *context)
{
	imap_starttls_pending(context);
}

/* A user's own password, or (an authorization identity) the MMP's proxy
 * credential acting for that user. */
static void login_start(void *context, const char *tag,
			const struct mt_imap_credentials *cred)
{
	struct imap_session *s = context;
	snprintf(s->login_tag, sizeof(s->login_tag), "%s", tag);
	imap_enter_state(s, IMAP_STATE_LOGIN);
	popstore_login_start(&s->verify, cred->authzid, cred->authcid,
			     cred->password, cred->method);
}

/* The MMP's ID names the client it proxies for (mmp-backend-imap.c): one
 * log line joins the store's session to the client and the MMP's. */
static void login_id(void *context, const char *const *names,
		     const char *const *values, size_t count)
{
	static const char *const fields[] = {
		"x-originating-ip", "x-originating-port", "x-session-ext-id",
	};
	struct imap_session *s = context;
	/* Only the proxy's ID before login: after it, every byte comes from
	 * the MMP's address but was written by the user. */
	if (!s->from_proxy || s->state != IMAP_STATE_NOT_AUTH)
		return;
	struct mt_buf line = MT_BUF_INIT;
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
		for (size_t i = 0; i < count; i++)
			if (strcasecmp(names[i], fields[f]) == 0 && values[i] != NULL)
				mt_log_field(&line, fields[f], values[i], 64);
	if (line.len > 0)
		mt_slog(MT_LOG_INFO, &s->log, "imap id%s", mt_buf_cstr(&line));
	mt_buf_free(&line);
}

static const struct mt_imap_login_ops login_ops = {
	.reply = login_reply, .error = login_error,
	.plaintext_ok = login_plaintext_ok, .tls_active = login_tls_active,
	.tls_available = login_tls_available, .sasl_wait = login_sasl_wait,
	.starttls = login_starttls, .login = login_start, .id = login_id,
};

void imap_login_init(struct imap_session *s)
{
	s->verify = (struct popstore_login){
		.ps = s->ps, .log = &s->log, .protocol = "imap",
		.from_proxy = s->from_proxy, .peer_ip = s->peer_ip,
		.cb = verified, .context = s,
	};
	/* An authorization identity is the MMP's proxy login (login.c checks
	 * where it comes from and its credential). */
	s->login_phase = (struct mt_imap_login){
		.ops = &login_ops, .context = s, .authzid_allowed = true,
		.capabilities = CAPABILITIES_PRE,
		.id_reply = "(\"name\" \"" POPSTORE_NAME "\" \"vendor\" \"mailtier\")",
	};
}
