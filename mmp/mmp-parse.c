/* mmp-parse.c — the pure parsers of the MMP's pre-login POP3 commands
 * (see mmp-parse.h): the command table's keywords, USER, AUTH and the
 * AUTH PLAIN response.
 *
 * Trust boundary: client command lines and SASL responses. Every read
 * stays inside the NUL-terminated line; base64 and the PLAIN message are
 * checked by mmp-sasl.c over lib/sasl. RFC 1939 3, 7; RFC 5034 4;
 * RFC 4616 2. */
#include "mmp-parse.h"
#include "command-find.h"

#include <string.h>
#include <strings.h>

/* RFC 1939 3: keywords are case-insensitive. Indexed by command id. */
static const char *const keywords[MMP_CMD_UNKNOWN] = {
	[MMP_CMD_CAPA] = "CAPA", [MMP_CMD_USER] = "USER",
	[MMP_CMD_PASS] = "PASS", [MMP_CMD_AUTH] = "AUTH",
	[MMP_CMD_STLS] = "STLS", [MMP_CMD_QUIT] = "QUIT",
};

enum mmp_command_id mmp_parse_command(const char *line, const char **args_r)
{
	/* RFC 1939 3: a keyword, then arguments after one space. */
	unsigned int id;
	if (!mt_command_find(line, keywords, MMP_CMD_UNKNOWN, sizeof(keywords[0]), &id,
			     args_r))
		return MMP_CMD_UNKNOWN;
	return (enum mmp_command_id)id;
}

const char *mmp_command_keyword(enum mmp_command_id id)
{
	return (unsigned int)id < MMP_CMD_UNKNOWN ? keywords[id] : NULL;
}

enum mmp_user_status mmp_parse_user(const char *args)
{
	if (args[0] == '\0')
		return MMP_USER_MISSING;
	if (strlen(args) > MMP_USER_MAX)
		return MMP_USER_TOO_LONG;
	return MMP_USER_OK;
}

enum mmp_auth_kind mmp_parse_auth(const char *args, const char **initial_r)
{
	size_t mlen = strcspn(args, " ");

	*initial_r = NULL;
	if (args[0] == '\0')
		return MMP_AUTH_LIST;
	if (mlen != 5 || strncasecmp(args, "PLAIN", 5) != 0)
		return MMP_AUTH_UNSUPPORTED;
	if (args[mlen] == ' ')
		*initial_r = args + mlen + 1;
	return MMP_AUTH_PLAIN;
}

bool mmp_parse_plain_response(const char *b64, struct mt_buf *msg,
			      struct mmp_plain *plain_r, const char **error_r)
{
	if (strcmp(b64, "=") == 0) {
		/* RFC 5034 section 4: "=" is an empty response, which is no
		 * valid PLAIN message. */
		*error_r = "empty response";
		return false;
	}
	if (!mmp_base64_decode(b64, msg, error_r) ||
	    !mmp_sasl_plain_parse(msg, plain_r, error_r))
		return false;
	if (plain_r->authzid[0] != '\0' &&
	    strcasecmp(plain_r->authzid, plain_r->authcid) != 0) {
		/* Users may not act as someone else. */
		*error_r = "authorization identity not permitted";
		return false;
	}
	return true;
}
