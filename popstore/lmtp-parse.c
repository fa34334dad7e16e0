/* lmtp-parse.c — the pure parsers of LMTP command lines (see
 * lmtp-parse.h): the command table's names, LHLO, MAIL FROM and RCPT TO
 * with SIZE, BODY and XQUEUEID.
 *
 * Trust boundary: an LMTP client's command arguments. Paths go through
 * lib/address (RFC 5321 4.1.2); every read here stays inside the
 * NUL-terminated argument. RFC 2033 4.1, RFC 5321 4.1.1, RFC 1870,
 * RFC 6152, RFC 6531 3.4 (SMTPUTF8: UTF-8 paths only when MAIL asks),
 * RFC 3463 3.6 (X.5.4 for a repeated parameter). */
#include "lmtp-parse.h"
#include "command-find.h"

#include <string.h>
#include <strings.h>

#define ANY (LMTP_CMD_NEW | LMTP_CMD_GREETED)

/* The name is the enum's own suffix, so the two cannot disagree. */
#define VERB(name, flags) [LMTP_VERB_##name] = { #name, flags }
const struct mt_command_def lmtp_command_defs[LMTP_VERB_COUNT] = {
	VERB(LHLO, ANY),
	VERB(MAIL, LMTP_CMD_GREETED),
	VERB(RCPT, LMTP_CMD_GREETED),
	VERB(DATA, LMTP_CMD_GREETED),
	VERB(RSET, ANY),
	VERB(NOOP, ANY),
	VERB(QUIT, ANY),
	VERB(HELO, ANY | MT_CMD_JUNK),
	VERB(EHLO, ANY | MT_CMD_JUNK),
};
#undef VERB
const struct mt_command_table lmtp_command_table = MT_COMMAND_DEFS(lmtp_command_defs);

bool lmtp_parse_command(const char *line, enum lmtp_verb *verb_r, const char **arg_r)
{
	unsigned int index;

	if (!mt_command_find(line, &lmtp_command_defs[0].name, LMTP_VERB_COUNT,
			     sizeof(lmtp_command_defs[0]), &index, arg_r))
		return false;
	*verb_r = (enum lmtp_verb)index;
	return true;
}

const char *lmtp_verb_name(enum lmtp_verb verb)
{
	return (unsigned int)verb < LMTP_VERB_COUNT ? lmtp_command_defs[verb].name : "?";
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* 1..max octets, each alphanumeric or one of extra. */
static bool token_ok(const char *s, size_t max, const char *extra)
{
	size_t len = strlen(s);

	if (len == 0 || len > max)
		return false;
	for (const char *p = s; *p != '\0'; p++)
		if (!is_alnum(*p) && strchr(extra, *p) == NULL)
			return false;
	return true;
}

bool lmtp_parse_lhlo(const char *arg)
{
	return token_ok(arg, LMTP_LHLO_MAX, ".-_:[]");
}

bool lmtp_parse_mail(const char *arg, uint64_t max_size,
		     struct mt_smtp_mail_args *m, struct mt_smtp_param_error *error_r)
{
	return mt_smtp_parse_mail(arg, LMTP_OFFERED, MT_ADDR_ALLOW_NULL, max_size,
				  m, error_r);
}

bool lmtp_parse_rcpt(const char *arg, bool smtputf8, struct mt_smtp_rcpt_args *r,
		     struct mt_smtp_param_error *error_r)
{
	return mt_smtp_parse_rcpt(arg, LMTP_OFFERED, 0, smtputf8, r, error_r);
}
