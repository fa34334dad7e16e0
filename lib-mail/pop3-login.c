/* pop3-login.c — the POP3 AUTHORIZATION phase shared by the MMP and the
 * store (see pop3-login.h): the pre-login commands' answers, and the pure
 * parsers of USER, AUTH and an AUTH PLAIN response over lib/sasl.
 *
 * Trust boundary: client command lines; every read stays inside the
 * NUL-terminated line, a decoded PLAIN message lives only in a wiped
 * struct. RFC 1939 7; RFC 2449 5, 6; RFC 2595 2.1, 4; RFC 5034 4;
 * RFC 4616 2; RFC 3206. */
#include "pop3-login.h"
#include "alloc.h"
#include "buf.h"

#include <stdlib.h>

#include <string.h>
#include <strings.h>

#define PLAINTEXT_REFUSED "-ERR [AUTH] Plaintext authentication disallowed " \
	"on non-secure (SSL/TLS) connections."
#define INVALID_PLAIN "-ERR [AUTH] Invalid AUTH PLAIN response."

enum mt_pop3_user_status mt_pop3_parse_user(const char *arg)
{
	if (arg[0] == '\0')
		return MT_POP3_USER_MISSING;
	if (strlen(arg) > MT_POP3_USER_MAX)
		return MT_POP3_USER_TOO_LONG;
	return MT_POP3_USER_OK;
}

enum mt_pop3_auth_kind mt_pop3_parse_auth(const char *arg, const char **initial_r)
{
	size_t mlen = strcspn(arg, " ");

	*initial_r = NULL;
	if (arg[0] == '\0')
		return MT_POP3_AUTH_LIST;
	if (mlen != 5 || strncasecmp(arg, "PLAIN", 5) != 0)
		return MT_POP3_AUTH_UNSUPPORTED;
	if (arg[mlen] == ' ')
		*initial_r = arg + mlen + 1;
	return MT_POP3_AUTH_PLAIN;
}

bool mt_pop3_parse_plain(const char *b64, bool authzid_allowed,
			 struct mt_sasl_plain *plain_r, const char **error_r)
{
	return mt_sasl_plain_accept(b64, MT_POP3_USER_MAX, authzid_allowed,
				    plain_r, error_r);
}

static bool plaintext_ok(struct mt_pop3_login *l)
{
	return l->ops->plaintext_ok(l->context);
}

/* RFC 2449 5; RFC 2595 4 (STLS) and 2.1 (no USER or PLAIN before TLS
 * unless the policy allows them); one write for the whole list. */
void mt_pop3_login_capa(struct mt_pop3_login *l, bool logged_in)
{
	struct mt_buf capa = MT_BUF_INIT;
	mt_buf_append_str(&capa, "+OK Capability list follows\r\n"
			  "TOP\r\nUIDL\r\nRESP-CODES\r\nAUTH-RESP-CODE\r\n"
			  "PIPELINING\r\n");
	if (!logged_in) {
		if (plaintext_ok(l))
			mt_buf_append_str(&capa, "USER\r\nSASL PLAIN\r\n");
		if (!l->ops->tls_active(l->context) && l->ops->tls_available(l->context))
			mt_buf_append_str(&capa, "STLS\r\n");
	}
	if (l->capa_extra != NULL)
		mt_buf_append_str(&capa, l->capa_extra);
	mt_buf_append_str(&capa, ".\r\n");
	l->ops->reply_raw(l->context, capa.data, capa.len);
	mt_buf_free(&capa);
}

void mt_pop3_login_user(struct mt_pop3_login *l, const char *arg)
{
	if (!plaintext_ok(l)) {
		l->ops->error(l->context, PLAINTEXT_REFUSED);
		return;
	}
	switch (mt_pop3_parse_user(arg)) {
	case MT_POP3_USER_MISSING:
		l->ops->error(l->context, "-ERR Missing user name.");
		return;
	case MT_POP3_USER_TOO_LONG:
		l->ops->error(l->context, "-ERR User name too long.");
		return;
	case MT_POP3_USER_OK:
		break;
	}
	free(*l->user);
	*l->user = mt_xstrdup(arg);
	/* The same answer whether the user exists or not. */
	l->ops->reply(l->context, "+OK");
}

void mt_pop3_login_pass(struct mt_pop3_login *l, const char *arg)
{
	if (!plaintext_ok(l)) {
		l->ops->error(l->context, PLAINTEXT_REFUSED);
		return;
	}
	if (*l->user == NULL) {
		l->ops->error(l->context, "-ERR No user name given (USER first).");
		return;
	}
	if (arg[0] == '\0') {
		l->ops->error(l->context, "-ERR Missing password.");
		return;
	}
	/* RFC 1939 7: spaces are part of the password. */
	const struct mt_pop3_credentials cred = {
		.method = "user", .authzid = "", .authcid = *l->user, .password = arg,
	};
	l->ops->login(l->context, &cred);
}

/* A complete AUTH PLAIN response: check it and log in. */
static void plain_response(struct mt_pop3_login *l, const char *b64)
{
	struct mt_sasl_plain plain;
	const char *error;
	if (!mt_pop3_parse_plain(b64, l->authzid_allowed, &plain, &error)) {
		l->ops->error(l->context, INVALID_PLAIN);
		return;
	}
	free(*l->user);
	*l->user = mt_xstrdup(plain.authcid);
	const struct mt_pop3_credentials cred = {
		.method = "plain", .authzid = plain.authzid,
		.authcid = plain.authcid, .password = plain.passwd,
	};
	l->ops->login(l->context, &cred);
	mt_sasl_plain_wipe(&plain);
}

/* RFC 5034 4. */
void mt_pop3_login_auth(struct mt_pop3_login *l, const char *arg)
{
	const char *initial;
	switch (mt_pop3_parse_auth(arg, &initial)) {
	case MT_POP3_AUTH_LIST: {
		/* Not in RFC 5034, but clients use it to list mechanisms. */
		const char *list = plaintext_ok(l) ? "+OK\r\nPLAIN\r\n.\r\n" :
			"+OK\r\n.\r\n";
		l->ops->reply_raw(l->context, list, strlen(list));
		return;
	}
	case MT_POP3_AUTH_UNSUPPORTED:
		l->ops->error(l->context, "-ERR Unsupported authentication mechanism.");
		return;
	case MT_POP3_AUTH_PLAIN:
		break;
	}
	if (!plaintext_ok(l)) {
		l->ops->error(l->context, PLAINTEXT_REFUSED);
		return;
	}
	if (initial != NULL) {
		plain_response(l, initial);
		return;
	}
	/* No initial response: ask for it with an empty challenge. */
	l->ops->reply(l->context, "+ ");
	l->ops->sasl_wait(l->context, true);
}

void mt_pop3_login_sasl_response(struct mt_pop3_login *l, const char *line)
{
	l->ops->sasl_wait(l->context, false);
	if (strcmp(line, "*") == 0) {
		/* RFC 5034 4: the server MUST reject the AUTH. */
		l->ops->reply(l->context, "-ERR Authentication cancelled.");
		return;
	}
	plain_response(l, line);
}

/* RFC 2595 4. */
void mt_pop3_login_stls(struct mt_pop3_login *l, const char *arg)
{
	if (l->ops->tls_active(l->context)) {
		l->ops->error(l->context, "-ERR Command not permitted when TLS active.");
		return;
	}
	if (!l->ops->tls_available(l->context)) {
		l->ops->error(l->context, "-ERR TLS not available.");
		return;
	}
	if (arg[0] != '\0') {
		l->ops->error(l->context, "-ERR STLS takes no arguments.");
		return;
	}
	l->ops->reply(l->context, "+OK Begin TLS negotiation now.");
	l->ops->starttls(l->context);
}
