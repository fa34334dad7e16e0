/* mmp-parse.c — the pure parser of the MMP's pre-login POP3 command
 * names (see mmp-parse.h), over lib-mail/command-find.
 *
 * Trust boundary: client command lines; every read stays inside the
 * NUL-terminated line. RFC 1939 3. */
#include "mmp-parse.h"
#include "command-find.h"

#include <string.h>

/* RFC 1939 3: keywords are case-insensitive. Indexed by command id. */
const struct mt_command_def mmp_command_defs[MMP_CMD_UNKNOWN] = {
	[MMP_CMD_CAPA] = { "CAPA", 0 }, [MMP_CMD_USER] = { "USER", 0 },
	[MMP_CMD_PASS] = { "PASS", MT_CMD_SECRET }, [MMP_CMD_AUTH] = { "AUTH", MT_CMD_SECRET },
	[MMP_CMD_STLS] = { "STLS", 0 }, [MMP_CMD_QUIT] = { "QUIT", 0 },
};
const struct mt_command_table mmp_command_table = MT_COMMAND_DEFS(mmp_command_defs);

enum mmp_command_id mmp_parse_command(const char *line, const char **args_r)
{
	/* RFC 1939 3: a keyword, then arguments after one space. */
	unsigned int id;
	if (!mt_command_find(line, &mmp_command_defs[0].name, MMP_CMD_UNKNOWN,
			     sizeof(mmp_command_defs[0]), &id, args_r))
		return MMP_CMD_UNKNOWN;
	return (enum mmp_command_id)id;
}

const char *mmp_command_keyword(enum mmp_command_id id)
{
	return (unsigned int)id < MMP_CMD_UNKNOWN ? mmp_command_defs[id].name : NULL;
}
