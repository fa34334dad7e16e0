/* smtp-auth.c — SMTP AUTH (RFC 4954) with the PLAIN (RFC 4616) and LOGIN
 * mechanisms, verified by libdirsvc (the directory decides; no password is
 * checked or kept here).
 *
 * Trust boundary: the client's base64 lines carry a user name and a
 * password. Both are decoded by lib/sasl (strict base64, RFC 4616 PLAIN
 * checks) into bounded buffers, passed to
 * mt_dirsvc_authenticate() (which copies and wipes the password) and wiped
 * here; neither is logged (only the user name once authenticated). AUTH is
 * offered only over TLS unless require_tls_for_auth = no (RFC 4954 4:
 * "538 5.7.11 Encryption required"). A failed AUTH counts as an error
 * toward max_errors, which bounds password guessing per connection, and
 * its 535 is sent only after the client address's penalty delay
 * (auth_fail_delay, doubling per failure within auth_fail_window;
 * smtp-server.c, lib/authfail.c), which bounds it across connections.
 * Every failure — unknown user, wrong password, disabled account,
 * malformed PLAIN — gets the same 535 after the same delay, so neither
 * the text nor the timing tells whether the user exists (RFC 4954
 * section 6, 535 5.7.8).
 * After AUTH, MAIL FROM must be the null sender or one of the login user's
 * addresses (sender_login_check): the login's canonical address at once,
 * anything else after a directory lookup of it, which must find the very
 * entry that logged in (its mail or a mailLocalAddress); otherwise 553
 * 5.7.1, as Postfix's reject_sender_login_mismatch.
 * RFCs: 4954 4 (AUTH command, "*" cancels: 501), 6 (status codes), 4616 2
 * (PLAIN message: [authzid] NUL authcid NUL passwd), 4648 4 (base64); 6409
 * 6.1 (an MSA may check the sender against the authenticated identity). */
#include "smtp-session.h"
#include "clock.h"
#include "alloc.h"
#include "authfail.h"
#include "dirsvc.h"
#include "mta.h"
#include "sasl.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AUTH_MECH_PLAIN 1
#define AUTH_MECH_LOGIN 2
#define CREDENTIAL_MAX 1024	/* decoded octets of one LOGIN line */

static void auth_reset(struct smtp_session *s)
{
	s->auth_mech = 0;
	if (s->auth_login_user != NULL) {
		explicit_bzero(s->auth_login_user, strlen(s->auth_login_user));
		MT_FREE(&s->auth_login_user);
	}
	if (s->smtpd.state == MT_SMTPD_LINE)
		mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
}

/* A failed AUTH: 535 after the client address's penalty delay, counted
 * from the moment the credentials were complete — so the directory's time
 * (a slow password hash for a real user, none for an unknown one) is
 * hidden inside the delay. The session reads nothing meanwhile
 * (MT_SMTPD_WAIT). True if delayed. */
static bool auth_fail(struct smtp_session *s, const char *why)
{
	uint64_t delay = smtp_server_auth_failed(s->mta->server, s->peer_ip);
	mt_slog(MT_LOG_INFO, &s->log, "auth failed from %s: %s delay_ms=%llu",
		s->peer_name, why, (unsigned long long)delay);
	delay = mt_authfail_wait_ms(s->auth_started_ms, delay, mt_clock_ms());
	return mt_smtpd_reply_delayed(&s->smtpd, delay, 535, "5.7.8 Authentication credentials invalid");
}

static void auth_done(const struct mt_dirsvc_auth *result, void *context)
{
	struct smtp_session *s = context;
	s->dir_req = NULL;
	switch (result->status) {
	case MT_DIRSVC_AUTH_OK:
		s->authenticated = true;
		free(s->auth_user);
		s->auth_user = mt_xstrdup(result->address);
		s->auth_type = s->auth_trying;
		mt_slog(MT_LOG_INFO, &s->log, "auth ok user=%s from %s",
			s->auth_user, s->peer_name);
		mt_smtpd_reply(&s->smtpd, 235, "2.7.0 Authentication successful");
		break;
	case MT_DIRSVC_AUTH_BAD_CREDENTIALS:
	case MT_DIRSVC_AUTH_DISABLED:
		if (auth_fail(s, mt_dirsvc_auth_status_name(result->status)))
			return;		/* the delayed reply resumes */
		break;
	case MT_DIRSVC_AUTH_TEMPFAIL:
		mt_slog(MT_LOG_WARNING, &s->log, "auth tempfail from %s: %s",
			s->peer_name, result->reason != NULL ? result->reason : "");
		mt_smtpd_reply(&s->smtpd, 454, "4.7.0 Temporary authentication failure");
		break;
	}
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
	mt_smtpd_resume(&s->smtpd);
}

/* Hand the credentials to the directory; wipes password. */
static void authenticate(struct smtp_session *s, const char *mech,
			 const char *user, char *password)
{
	auth_reset(s);
	s->auth_trying = mech;
	s->auth_started_ms = mt_clock_ms();
	if (user[0] == '\0' || password[0] == '\0') {
		explicit_bzero(password, strlen(password));
		auth_fail(s, "empty user or password");
		return;
	}
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_WAIT);
	s->dir_req = mt_dirsvc_authenticate(s->mta->dir, &s->log, user, password,
					    auth_done, s);
	explicit_bzero(password, strlen(password));
}

/* PLAIN: authzid NUL authcid NUL passwd (lib/sasl). */
static void auth_plain(struct smtp_session *s, const char *b64)
{
	struct mt_sasl_plain plain;
	const char *error;

	/* RFC 4954 4: "=" is an empty response, no valid PLAIN message. */
	enum mt_sasl_status status = b64[0] == '\0' ? MT_SASL_BAD_BASE64 :
		mt_sasl_plain_decode(strcmp(b64, "=") == 0 ? "" : b64, &plain, &error);
	switch (status) {
	case MT_SASL_OK:
		break;
	case MT_SASL_BAD_BASE64:
		auth_reset(s);
		mt_smtpd_reply(&s->smtpd, 501, "5.5.2 Invalid base64 data");
		return;
	case MT_SASL_BAD_MESSAGE:
		auth_reset(s);
		mt_smtpd_reply(&s->smtpd, 501, "5.5.2 Invalid PLAIN authentication message");
		return;
	case MT_SASL_BAD_FIELD:
		/* Empty, over-long or non-UTF-8 names and passwords are
		 * wrong credentials, as the directory would say. */
		auth_reset(s);
		s->auth_started_ms = mt_clock_ms();
		auth_fail(s, "bad PLAIN field");
		return;
	}
	if (plain.authzid[0] != '\0' && strcmp(plain.authzid, plain.authcid) != 0) {
		/* No proxy authorization here. */
		mt_sasl_plain_wipe(&plain);
		auth_reset(s);
		s->auth_started_ms = mt_clock_ms();
		auth_fail(s, "authorization identity differs");
		return;
	}
	authenticate(s, "PLAIN", plain.authcid, plain.passwd);
	mt_sasl_plain_wipe(&plain);
}

/* LOGIN: the user name, then the password, each on its own line. */
static void auth_login_step(struct smtp_session *s, const char *b64)
{
	char buf[CREDENTIAL_MAX + 1];
	const char *error;

	/* "=" is an empty value (RFC 4954 4); "" is no base64 at all. */
	if (b64[0] == '\0' ||
	    mt_sasl_login_decode(strcmp(b64, "=") == 0 ? "" : b64, buf,
				 sizeof(buf), &error) != MT_SASL_OK) {
		auth_reset(s);
		mt_smtpd_reply(&s->smtpd, 501, "5.5.2 Invalid base64 data");
		return;
	}
	if (s->auth_login_user == NULL) {
		s->auth_login_user = mt_xstrdup(buf);
		mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_LINE);
		mt_smtpd_reply(&s->smtpd, 334, "UGFzc3dvcmQ6");	/* "Password:" */
	} else {
		char *user = s->auth_login_user;
		s->auth_login_user = NULL;
		authenticate(s, "LOGIN", user, buf);
		explicit_bzero(user, strlen(user));
		free(user);
	}
	explicit_bzero(buf, sizeof(buf));
}

void smtp_cmd_auth(struct smtp_session *s, const char *args)
{
	if (!s->esmtp) {
		mt_smtpd_reply(&s->smtpd, 503, "5.5.1 Error: send EHLO first");
		return;
	}
	if (s->authenticated) {
		mt_smtpd_reply(&s->smtpd, 503, "5.5.1 Error: already authenticated");
		return;
	}
	if (s->tx.active) {
		mt_smtpd_reply(&s->smtpd, 503, "5.5.1 Error: MAIL transaction in progress");
		return;
	}
	if (!smtp_auth_offered(s)) {
		if (s->mta->dirsvc != NULL && !s->smtpd.tls)
			mt_smtpd_reply(&s->smtpd, 538, "5.7.11 Encryption required for "
				   "requested authentication mechanism");
		else
			mt_smtpd_reply(&s->smtpd, 503, "5.5.1 Error: authentication not enabled");
		return;
	}
	size_t mech_len = strcspn(args, " ");
	const char *initial = args[mech_len] == ' ' ? args + mech_len + 1 : NULL;
	if (mech_len == 5 && strncasecmp(args, "PLAIN", 5) == 0) {
		s->auth_mech = AUTH_MECH_PLAIN;
		if (initial != NULL) {
			auth_plain(s, initial);
			return;
		}
		mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_LINE);
		mt_smtpd_reply(&s->smtpd, 334, "%s", "");
	} else if (mech_len == 5 && strncasecmp(args, "LOGIN", 5) == 0) {
		s->auth_mech = AUTH_MECH_LOGIN;
		if (initial != NULL) {
			auth_login_step(s, initial);
			return;
		}
		mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_LINE);
		mt_smtpd_reply(&s->smtpd, 334, "VXNlcm5hbWU6");	/* "Username:" */
	} else {
		mt_smtpd_reply(&s->smtpd, 504, "5.5.4 Unsupported authentication mechanism");
	}
}

/* MAIL after AUTH */

static void sender_refuse(struct smtp_session *s)
{
	mt_smtpd_reply(&s->smtpd, 553, "5.7.1 <%s>: Sender address rejected: not owned by "
		   "user %s", s->tx.sender, s->auth_user);
	smtp_tx_reset(s);
}

/* The proceed half: is the sender an address of the login's own entry? */
static void sender_lookup_done(const struct mt_dirsvc_recipient *result,
			       void *context)
{
	struct smtp_session *s = context;
	s->dir_req = NULL;
	if (result->status == MT_DIRSVC_FOUND &&
	    strcasecmp(result->address, s->auth_user) == 0) {
		if (smtp_mail_accept(s))
			return;		/* the mail filters answer */
	} else if (result->status == MT_DIRSVC_TEMPFAIL) {
		mt_slog(MT_LOG_WARNING, &s->log, "directory lookup of sender <%s> "
			"failed: %s", s->tx.sender,
			result->reason != NULL ? result->reason : "");
		mt_smtpd_reply(&s->smtpd, 451, "4.4.3 <%s>: Sender address rejected: Directory "
			   "temporarily unavailable, try again later", s->tx.sender);
		smtp_tx_reset(s);
	} else {
		sender_refuse(s);
	}
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
	mt_smtpd_resume(&s->smtpd);
}

void smtp_auth_check_sender(struct smtp_session *s)
{
	const char *sender = s->tx.sender;
	if (!s->authenticated || !s->mta->set->sender_login_check ||
	    sender[0] == '\0' || strcasecmp(sender, s->auth_user) == 0) {
		smtp_mail_accept(s);
		return;
	}
	if (s->mta->dir == NULL) {
		sender_refuse(s);
		return;
	}
	/* An alias of the login, or somebody else's address, or nobody's:
	 * only the directory knows. */
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_WAIT);
	s->dir_req = mt_dirsvc_lookup_recipient(s->mta->dir, &s->log, sender,
						sender_lookup_done, s);
}

void smtp_auth_continue(struct smtp_session *s, const char *line)
{
	if (line == NULL) {
		/* An unreadable line: the caller replies. */
		auth_reset(s);
		return;
	}
	if (strcmp(line, "*") == 0) {
		auth_reset(s);
		mt_smtpd_reply(&s->smtpd, 501, "5.0.0 Authentication aborted");
		return;
	}
	if (s->auth_mech == AUTH_MECH_PLAIN)
		auth_plain(s, line);
	else
		auth_login_step(s, line);
}
