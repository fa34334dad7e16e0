/* pop3-parse.c — the pure parsers of POP3 command lines (see
 * pop3-parse.h): the command table's names, message numbers, TOP.
 *
 * Trust boundary: client command lines. Every read stays inside the
 * NUL-terminated line or the length given; numbers are bounded to 10
 * digits, so they never overflow. RFC 1939 3, 5, 7. */
#include "pop3-parse.h"
#include "command-find.h"

#include <string.h>

#define AUTHZ POP3_CMD_AUTHORIZATION
#define TRANS POP3_CMD_TRANSACTION

/* The name is the enum's own suffix, so the two cannot disagree. */
#define VERB(name, flags) [POP3_VERB_##name] = { #name, flags }
const struct mt_command_def pop3_command_defs[POP3_VERB_COUNT] = {
	VERB(CAPA, AUTHZ | TRANS),
	VERB(USER, AUTHZ),
	VERB(PASS, AUTHZ | MT_CMD_SECRET),
	VERB(AUTH, AUTHZ | MT_CMD_SECRET),
	VERB(STLS, AUTHZ),
	VERB(STAT, TRANS),
	VERB(LIST, TRANS),
	VERB(UIDL, TRANS),
	VERB(TOP, TRANS),
	VERB(RETR, TRANS),
	VERB(DELE, TRANS),
	VERB(NOOP, TRANS),
	VERB(RSET, TRANS),
	VERB(QUIT, AUTHZ | TRANS),
};
#undef VERB
const struct mt_command_table pop3_command_table = MT_COMMAND_DEFS(pop3_command_defs);

bool pop3_parse_command(const char *line, enum pop3_verb *verb_r, const char **arg_r)
{
	unsigned int index;

	if (!mt_command_find(line, &pop3_command_defs[0].name, POP3_VERB_COUNT,
			     sizeof(pop3_command_defs[0]), &index, arg_r))
		return false;
	*verb_r = (enum pop3_verb)index;
	return true;
}

const char *pop3_verb_name(enum pop3_verb verb)
{
	return (unsigned int)verb < POP3_VERB_COUNT ? pop3_command_defs[verb].name : "?";
}

/* Digits only: no sign, no space, no leading "+" (strtoul would take
 * them). */
bool pop3_parse_number(const char *s, size_t len, uint64_t *value_r)
{
	uint64_t v = 0;

	if (len == 0 || len > POP3_NUMBER_DIGITS_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*value_r = v;
	return true;
}

bool pop3_parse_msg(const char *arg, size_t len, unsigned int count,
		    unsigned int *index_r)
{
	uint64_t n;

	if (!pop3_parse_number(arg, len, &n) || n == 0 || n > count)
		return false;
	*index_r = (unsigned int)(n - 1);
	return true;
}

enum pop3_arg_status pop3_parse_top(const char *arg, unsigned int count,
				    unsigned int *index_r, uint64_t *lines_r)
{
	size_t len = strcspn(arg, " ");

	if (arg[len] != ' ' ||
	    !pop3_parse_number(arg + len + 1, strlen(arg + len + 1), lines_r))
		return POP3_ARG_SYNTAX;
	if (!pop3_parse_msg(arg, len, count, index_r))
		return POP3_ARG_NO_SUCH;
	return POP3_ARG_OK;
}
