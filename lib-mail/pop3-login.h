/* pop3-login.h — the one POP3 AUTHORIZATION phase (RFC 1939 4 and 7), as
 * the MMP's front and the store's POP3 server both speak it: CAPA before
 * login, USER and PASS, AUTH PLAIN with an initial response or on a
 * continuation line, STLS, the refusal of plaintext credentials before TLS,
 * and every answer to a malformed attempt. What is the tier's: verifying
 * the credentials (the directory, the proxy credential) and what follows
 * (routing to a shard, opening the mailbox), the failure delay, QUIT,
 * counting errors towards max_errors, the socket and TLS. An IMAP login
 * phase sits beside it (Dovecot's login-common is the model).
 *
 * Shape: a tier keeps its own command table and calls the handler of each
 * pre-login command here; the phase answers through the tier's ops. The
 * pure parsers (USER's argument, AUTH's mechanism and initial response, an
 * AUTH PLAIN response) are exported for the fuzz target.
 *
 * Trust boundary: the client's command lines (at most 255 octets; a SASL
 * response line at most 1024 or 2048 as the tier reads them; no CR, LF or
 * NUL inside: lib/lineio). User names and passwords are client data: the
 * password only ever reaches ops->login, in a buffer wiped when it returns,
 * and is never logged. Every answer here is a fixed text that quotes
 * nothing of the input.
 * RFC 1939 7 (USER, PASS: the password is the rest of the line, spaces
 * included), RFC 2449 5, 6 (CAPA and its tags), RFC 2595 4 (STLS) and 2.1
 * (no plaintext credentials before TLS unless the policy allows them),
 * RFC 5034 4 (AUTH, "+ " continuation, "*" cancels, "=" an empty initial
 * response), RFC 4616 (PLAIN and its authorization identity), RFC 3206
 * ([AUTH]). */
#ifndef MT_POP3_LOGIN_H
#define MT_POP3_LOGIN_H

#include <stdbool.h>
#include <stddef.h>

#include "sasl.h"

/* dirsvc's limit on names (RFC 5321 path length). */
#define MT_POP3_USER_MAX 254

/* What the client asked to log in as. */
struct mt_pop3_credentials {
	const char *method;	/* "user" (USER/PASS) or "plain" (AUTH PLAIN) */
	const char *authzid;	/* "": none, or equal to authcid (ignoring case) */
	const char *authcid;
	const char *password;	/* wiped after ops->login returns */
};

struct mt_pop3_login_ops {
	/* One reply line; the CRLF is added. */
	void (*reply)(void *context, const char *line);
	/* Bytes of a multi-line reply, CRLFs included. */
	void (*reply_raw)(void *context, const char *data, size_t len);
	/* A -ERR line for a client error, which counts towards max_errors
	 * (the tier may end the session instead of sending it). */
	void (*error)(void *context, const char *line);
	/* Plaintext credentials are accepted on this connection now. */
	bool (*plaintext_ok)(void *context);
	bool (*tls_active)(void *context);
	/* STLS can be offered (the tier has a TLS context). */
	bool (*tls_available)(void *context);
	/* AUTH PLAIN waits for its response line (true), or is over. */
	void (*sasl_wait)(void *context, bool waiting);
	/* "+OK Begin TLS negotiation now." is queued: read nothing more in
	 * plaintext and start TLS once it is written. */
	void (*starttls)(void *context);
	/* Verify and log in (answer when done, also for a failure). */
	void (*login)(void *context, const struct mt_pop3_credentials *cred);
};

struct mt_pop3_login {
	const struct mt_pop3_login_ops *ops;
	void *context;
	/* The tier's USER name field (a heap string, NULL before USER); set
	 * here, freed by the tier. */
	char **user;
	/* AUTH PLAIN may name another identity to act for (the store's proxy
	 * login); else such a response is refused as invalid. */
	bool authzid_allowed;
	/* CAPA lines the tier adds at the end ("IMPLEMENTATION x\r\n"). */
	const char *capa_extra;
};

/* The commands' handlers; arg is the line's text after the verb and one
 * space ("" if none). */
void mt_pop3_login_capa(struct mt_pop3_login *login, bool logged_in);
void mt_pop3_login_user(struct mt_pop3_login *login, const char *arg);
void mt_pop3_login_pass(struct mt_pop3_login *login, const char *arg);
void mt_pop3_login_auth(struct mt_pop3_login *login, const char *arg);
/* The line that answers AUTH PLAIN's "+ " continuation. */
void mt_pop3_login_sasl_response(struct mt_pop3_login *login, const char *line);
void mt_pop3_login_stls(struct mt_pop3_login *login, const char *arg);

/* The pure parsers. */
enum mt_pop3_user_status {
	MT_POP3_USER_OK,
	MT_POP3_USER_MISSING,	/* "-ERR Missing user name." */
	MT_POP3_USER_TOO_LONG,	/* over MT_POP3_USER_MAX: "-ERR User name too long." */
};

enum mt_pop3_auth_kind {
	MT_POP3_AUTH_LIST,		/* "AUTH" alone: list the mechanisms */
	MT_POP3_AUTH_PLAIN,		/* PLAIN, with or without an initial response */
	MT_POP3_AUTH_UNSUPPORTED,	/* any other mechanism */
};

/* USER's argument: present and at most MT_POP3_USER_MAX octets (spaces
 * are part of it). */
enum mt_pop3_user_status mt_pop3_parse_user(const char *arg);
/* AUTH's argument: the mechanism (any case), and for PLAIN the initial
 * response after one space (NULL without one). */
enum mt_pop3_auth_kind mt_pop3_parse_auth(const char *arg, const char **initial_r);
/* An AUTH PLAIN response (initial or on its own line): not "=", strict
 * base64, an RFC 4616 message whose names fit MT_POP3_USER_MAX; an
 * authorization identity equal to the authentication identity (ignoring
 * case) is dropped, another one refused unless authzid_allowed. On
 * success *plain_r holds the fields (wipe it); on failure it is zeroed and
 * *error_r says why (never quoting the input). */
bool mt_pop3_parse_plain(const char *b64, bool authzid_allowed,
			 struct mt_sasl_plain *plain_r, const char **error_r);

#endif
