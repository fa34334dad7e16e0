/* imap-login.h — the one IMAP not-authenticated state (RFC 9051 3.1,
 * 6.1, 6.2), as the store's IMAP server and the MMP's IMAP front both
 * speak it: CAPABILITY (with STARTTLS, LOGINDISABLED and AUTH=PLAIN as
 * the connection allows), NOOP, LOGOUT, STARTTLS, LOGIN, AUTHENTICATE
 * PLAIN with an initial response (SASL-IR, RFC 4959) or on a continuation
 * line, ID (RFC 2971), the refusal of plaintext credentials before TLS
 * ([PRIVACYREQUIRED]) and every answer to a malformed attempt. What is the
 * tier's: reading commands (lib-mail/imap-parse.h) and the continuation
 * line, verifying the credentials and what follows a login, the failure
 * delay, counting errors towards its limit, the socket and TLS. Its shape
 * is the POP3 one's (pop3-login.h).
 *
 * Trust boundary: the client's commands as imap-parse read them (their
 * strings bounded by its limits) and the continuation line (at most the
 * tier's line limit, no CR, LF or NUL). User names and passwords are
 * client data: the password only ever reaches ops->login, in a buffer
 * wiped when it returns, and is never logged. Every answer here is a fixed
 * text that quotes nothing of the input but the tag (which imap-parse
 * checked to be tag characters).
 * RFC 9051 6.1.1 (CAPABILITY), 6.1.2 (NOOP), 6.1.3 (LOGOUT), 6.2.1
 * (STARTTLS: the client must forget what it knew), 6.2.2 (AUTHENTICATE,
 * "+ " continuation, "*" cancels with BAD), 6.2.3 (LOGIN, LOGINDISABLED),
 * 7.1 (PRIVACYREQUIRED, AUTHENTICATIONFAILED, CANNOT); RFC 4959 (SASL-IR,
 * "=" for an empty initial response); RFC 4616 (PLAIN and its
 * authorization identity); RFC 2971 (ID: at most 30 pairs, names of at
 * most 30 octets, values of at most 1024, no name twice). */
#ifndef MT_IMAP_LOGIN_H
#define MT_IMAP_LOGIN_H

#include <stdbool.h>
#include <stddef.h>

#include "imap-parse.h"

struct mt_buf;

/* dirsvc's limit on names (RFC 5321 path length). */
#define MT_IMAP_USER_MAX 254
/* RFC 2971 3.3. */
#define MT_IMAP_ID_PAIRS_MAX 30
#define MT_IMAP_ID_FIELD_MAX 30
#define MT_IMAP_ID_VALUE_MAX 1024

/* What a client may send before it is logged in (the store's and the
 * MMP's one bound, so the proxy is never stricter than the store behind
 * it): a login (a name and a password, 4 KiB literals at most) or an ID
 * of RFC 2971's largest size (30 pairs of a 30-octet name and a
 * 1024-octet value: about 32 KiB quoted, twice that if every octet needs
 * an escape), so a line and a command hold 64 KiB at most (Dovecot's
 * bound too); nothing more waits in memory for a client that has not
 * said who it is. */
extern const struct mt_imap_limits mt_imap_login_limits;

/* What the client asked to log in as. */
struct mt_imap_credentials {
	const char *method;	/* "login" (LOGIN) or "plain" (AUTHENTICATE PLAIN) */
	const char *authzid;	/* "": none, or equal to authcid (ignoring case) */
	const char *authcid;
	const char *password;	/* wiped after ops->login returns */
};

struct mt_imap_login_ops {
	/* One response line; the CRLF is added. */
	void (*reply)(void *context, const char *line);
	/* A tagged BAD or NO for a client error, which counts towards the
	 * tier's error limit (the tier may end the session instead). */
	void (*error)(void *context, const char *line);
	/* Plaintext credentials are accepted on this connection now. */
	bool (*plaintext_ok)(void *context);
	bool (*tls_active)(void *context);
	/* STARTTLS can be offered (the tier has a TLS context). */
	bool (*tls_available)(void *context);
	/* AUTHENTICATE waits for its response line (true), or is over: the
	 * tier reads that line raw (not as a command) and hands it to
	 * mt_imap_login_sasl_response. */
	void (*sasl_wait)(void *context, bool waiting);
	/* "tag OK Begin TLS negotiation now" is queued: read nothing more in
	 * plaintext and start TLS once it is written. */
	void (*starttls)(void *context);
	/* Verify and log in; the tier answers tag when done (OK, or NO
	 * [AUTHENTICATIONFAILED] / [UNAVAILABLE]). */
	void (*login)(void *context, const char *tag,
		      const struct mt_imap_credentials *cred);
	/* Optional: the client's ID fields, count name/value pairs (a value
	 * NULL for NIL), strings valid during the call. */
	void (*id)(void *context, const char *const *names,
		   const char *const *values, size_t count);
};

struct mt_imap_login {
	const struct mt_imap_login_ops *ops;
	void *context;
	/* AUTHENTICATE PLAIN may name another identity to act for (the
	 * store's proxy login); else such a response is refused. */
	bool authzid_allowed;
	/* The tier's capabilities before login, space-separated
	 * ("IMAP4rev2 IMAP4rev1 SASL-IR ID ..."): STARTTLS, LOGINDISABLED and
	 * AUTH=PLAIN are added here as the connection allows. */
	const char *capabilities;
	/* The server's ID answer: an RFC 2971 list ("(\"name\" \"x\")") or
	 * NIL (NULL: NIL). */
	const char *id_reply;
	/* Private: the tag of an AUTHENTICATE waiting for its response. */
	char sasl_tag[MT_IMAP_TAG_MAX + 1];
};

/* The capability list as it is now (no "* CAPABILITY" and no CRLF),
 * appended to out: a tier's greeting's [CAPABILITY ...] code too. */
void mt_imap_login_capability_list(const struct mt_imap_login *login,
				   struct mt_buf *out);

/* The commands' handlers, with the command as imap-parse read it. They
 * answer through ops, once each (LOGIN and AUTHENTICATE through
 * ops->login, or with their refusal). */
void mt_imap_login_capability(struct mt_imap_login *login,
			      const struct mt_imap_command *cmd);
void mt_imap_login_noop(struct mt_imap_login *login,
			const struct mt_imap_command *cmd);
/* "* BYE" and the tagged OK: the tier closes once they are written. */
void mt_imap_login_logout(struct mt_imap_login *login,
			  const struct mt_imap_command *cmd);
void mt_imap_login_starttls(struct mt_imap_login *login,
			    const struct mt_imap_command *cmd);
void mt_imap_login_login(struct mt_imap_login *login,
			 const struct mt_imap_command *cmd);
void mt_imap_login_authenticate(struct mt_imap_login *login,
				const struct mt_imap_command *cmd);
/* The line that answers AUTHENTICATE's "+ " continuation. */
void mt_imap_login_sasl_response(struct mt_imap_login *login, const char *line);
void mt_imap_login_id(struct mt_imap_login *login,
		      const struct mt_imap_command *cmd);

#endif
