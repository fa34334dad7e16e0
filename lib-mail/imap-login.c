/* imap-login.c — the IMAP not-authenticated state shared by the MMP and
 * the store (see imap-login.h): the pre-login commands' answers, over
 * lib/sasl for PLAIN and imap-parse's arguments.
 *
 * Trust boundary: the client's parsed commands and its continuation line;
 * a decoded PLAIN message lives only in a wiped struct, LOGIN's password
 * only in the parser's buffer (which the tier's command handling wipes).
 * RFC 9051 6.1, 6.2, 7.1; RFC 4959; RFC 4616 2; RFC 2971. */
#include "imap-login.h"
#include "buf.h"
#include "sasl.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

const struct mt_imap_limits mt_imap_login_limits = {
	.line_max = 64 * 1024, .literal_max = 4096, .command_max = 64 * 1024,
	.depth_max = 4, .args_max = 4 * MT_IMAP_ID_PAIRS_MAX + 8, .literal_plus = true,
};

#define PRIVACY_REQUIRED "NO [PRIVACYREQUIRED] Plaintext authentication " \
	"disallowed on non-secure (SSL/TLS) connections."

static void reply(struct mt_imap_login *l, const char *tag, const char *text)
{
	char line[MT_IMAP_TAG_MAX + 256];
	snprintf(line, sizeof(line), "%s %s", tag, text);
	l->ops->reply(l->context, line);
}

static void error(struct mt_imap_login *l, const char *tag, const char *text)
{
	char line[MT_IMAP_TAG_MAX + 256];
	snprintf(line, sizeof(line), "%s %s", tag, text);
	l->ops->error(l->context, line);
}

static bool plaintext_ok(const struct mt_imap_login *l)
{
	return l->ops->plaintext_ok(l->context);
}

void mt_imap_login_capability_list(const struct mt_imap_login *l,
				   struct mt_buf *out)
{
	mt_buf_append_str(out, l->capabilities);
	if (l->ops->tls_available(l->context) && !l->ops->tls_active(l->context))
		mt_buf_append_str(out, " STARTTLS");
	/* RFC 9051 6.2.3: LOGINDISABLED, and no mechanism that sends the
	 * password in the clear, until TLS. */
	mt_buf_append_str(out, plaintext_ok(l) ? " AUTH=PLAIN" : " LOGINDISABLED");
}

void mt_imap_login_capability(struct mt_imap_login *l,
			      const struct mt_imap_command *cmd)
{
	if (cmd->count != 0) {
		error(l, cmd->tag, "BAD CAPABILITY takes no arguments.");
		return;
	}
	struct mt_buf line = MT_BUF_INIT;
	mt_buf_append_str(&line, "* CAPABILITY ");
	mt_imap_login_capability_list(l, &line);
	l->ops->reply(l->context, mt_buf_cstr(&line));
	mt_buf_free(&line);
	reply(l, cmd->tag, "OK CAPABILITY completed.");
}

void mt_imap_login_noop(struct mt_imap_login *l, const struct mt_imap_command *cmd)
{
	if (cmd->count != 0)
		error(l, cmd->tag, "BAD NOOP takes no arguments.");
	else
		reply(l, cmd->tag, "OK NOOP completed.");
}

void mt_imap_login_logout(struct mt_imap_login *l, const struct mt_imap_command *cmd)
{
	if (cmd->count != 0) {
		error(l, cmd->tag, "BAD LOGOUT takes no arguments.");
		return;
	}
	l->ops->reply(l->context, "* BYE Logging out");
	reply(l, cmd->tag, "OK LOGOUT completed.");
}

void mt_imap_login_starttls(struct mt_imap_login *l,
			    const struct mt_imap_command *cmd)
{
	if (cmd->count != 0)
		error(l, cmd->tag, "BAD STARTTLS takes no arguments.");
	else if (l->ops->tls_active(l->context))
		error(l, cmd->tag, "BAD TLS is already active.");
	else if (!l->ops->tls_available(l->context))
		error(l, cmd->tag, "BAD STARTTLS is not available.");
	else {
		reply(l, cmd->tag, "OK Begin TLS negotiation now.");
		l->ops->starttls(l->context);
	}
}

void mt_imap_login_login(struct mt_imap_login *l, const struct mt_imap_command *cmd)
{
	const char *user, *password;
	size_t user_len, password_len;
	if (!plaintext_ok(l)) {
		error(l, cmd->tag, PRIVACY_REQUIRED);
		return;
	}
	if (cmd->count != 2 || !mt_imap_arg_astring(&cmd->args[0], &user, &user_len) ||
	    !mt_imap_arg_astring(&cmd->args[1], &password, &password_len)) {
		error(l, cmd->tag, "BAD LOGIN takes a user name and a password.");
		return;
	}
	if (user_len == 0 || user_len > MT_IMAP_USER_MAX ||
	    memchr(user, '\0', user_len) != NULL) {
		error(l, cmd->tag, "NO [AUTHENTICATIONFAILED] Authentication failed.");
		return;
	}
	if (password_len == 0 || password_len > MT_SASL_PASSWD_MAX ||
	    memchr(password, '\0', password_len) != NULL) {
		error(l, cmd->tag, "NO [AUTHENTICATIONFAILED] Authentication failed.");
		return;
	}
	const struct mt_imap_credentials cred = {
		.method = "login", .authzid = "", .authcid = user, .password = password,
	};
	l->ops->login(l->context, cmd->tag, &cred);
}

/* A PLAIN response (initial or on its own line) for tag. */
static void plain_response(struct mt_imap_login *l, const char *tag, const char *b64)
{
	struct mt_sasl_plain plain;
	const char *why;
	if (!mt_sasl_plain_accept(b64, MT_IMAP_USER_MAX, l->authzid_allowed, &plain,
				  &why)) {
		error(l, tag, "NO [AUTHENTICATIONFAILED] Invalid SASL PLAIN response.");
		return;
	}
	const struct mt_imap_credentials cred = {
		.method = "plain", .authzid = plain.authzid, .authcid = plain.authcid,
		.password = plain.passwd,
	};
	l->ops->login(l->context, tag, &cred);
	mt_sasl_plain_wipe(&plain);
}

void mt_imap_login_authenticate(struct mt_imap_login *l,
				const struct mt_imap_command *cmd)
{
	if (cmd->count < 1 || cmd->count > 2 || cmd->args[0].type != MT_IMAP_ARG_ATOM ||
	    (cmd->count == 2 && cmd->args[1].type != MT_IMAP_ARG_ATOM)) {
		error(l, cmd->tag, "BAD AUTHENTICATE takes a mechanism and an "
		      "optional initial response.");
		return;
	}
	if (strcasecmp(cmd->args[0].str, "PLAIN") != 0) {
		error(l, cmd->tag, "NO [CANNOT] Unsupported authentication mechanism.");
		return;
	}
	if (!plaintext_ok(l)) {
		error(l, cmd->tag, PRIVACY_REQUIRED);
		return;
	}
	if (cmd->count == 2) {
		plain_response(l, cmd->tag, cmd->args[1].str);
		return;
	}
	/* RFC 9051 6.2.2: an empty challenge. */
	snprintf(l->sasl_tag, sizeof(l->sasl_tag), "%s", cmd->tag);
	l->ops->sasl_wait(l->context, true);
	l->ops->reply(l->context, "+ ");
}

void mt_imap_login_sasl_response(struct mt_imap_login *l, const char *line)
{
	char tag[MT_IMAP_TAG_MAX + 1];
	memcpy(tag, l->sasl_tag, sizeof(tag));
	l->sasl_tag[0] = '\0';
	l->ops->sasl_wait(l->context, false);
	if (strcmp(line, "*") == 0) {
		error(l, tag, "BAD Authentication cancelled.");
		return;
	}
	/* RFC 4959 3's "=" stands only for an empty initial response; on its
	 * own line an empty response is an empty line (both are no PLAIN
	 * message: refused by lib/sasl). */
	plain_response(l, tag, line);
}

/* An ID argument string (quoted or literal) or NIL. */
static bool id_string(const struct mt_imap_arg *arg, size_t max, const char **str_r)
{
	if (mt_imap_arg_is_nil(arg)) {
		*str_r = NULL;
		return true;
	}
	size_t len;
	return mt_imap_arg_string(arg, str_r, &len) && len <= max &&
		memchr(*str_r, '\0', len) == NULL;
}

void mt_imap_login_id(struct mt_imap_login *l, const struct mt_imap_command *cmd)
{
	const char *names[MT_IMAP_ID_PAIRS_MAX], *values[MT_IMAP_ID_PAIRS_MAX];
	size_t count = 0;
	const struct mt_imap_arg *arg = cmd->count == 1 ? &cmd->args[0] : NULL;
	bool ok = arg != NULL && (mt_imap_arg_is_nil(arg) ||
				  (arg->type == MT_IMAP_ARG_LIST && arg->len % 2 == 0 &&
				   arg->len / 2 <= MT_IMAP_ID_PAIRS_MAX));
	for (size_t i = 0; ok && arg->type == MT_IMAP_ARG_LIST && i < arg->len; i += 2) {
		const char *name;
		ok = id_string(&arg->list[i], MT_IMAP_ID_FIELD_MAX, &name) && name != NULL &&
			id_string(&arg->list[i + 1], MT_IMAP_ID_VALUE_MAX, &values[count]);
		for (size_t j = 0; ok && j < count; j++)
			ok = strcasecmp(names[j], name) != 0;	/* no field twice */
		if (ok)
			names[count++] = name;
	}
	if (!ok) {
		error(l, cmd->tag, "BAD ID takes NIL or a list of up to 30 field and "
		      "value pairs.");
		return;
	}
	if (l->ops->id != NULL && count > 0)
		l->ops->id(l->context, names, values, count);
	struct mt_buf line = MT_BUF_INIT;
	mt_buf_append_str(&line, "* ID ");
	mt_buf_append_str(&line, l->id_reply != NULL ? l->id_reply : "NIL");
	l->ops->reply(l->context, mt_buf_cstr(&line));
	mt_buf_free(&line);
	reply(l, cmd->tag, "OK ID completed.");
}
