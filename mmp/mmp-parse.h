/* mmp-parse.h — the pure parser of the POP3 command names the MMP answers
 * itself before login: which command a line names and its argument. No
 * session, no I/O: mmp-commands.c applies the result (the arguments of
 * USER, AUTH and an AUTH PLAIN response are lib-mail/pop3-login's), and
 * tests/fuzz/fuzz-mmp-cmd.c drives it with arbitrary lines.
 *
 * Trust boundary: a client's command line (at most 255 octets; no CR, LF
 * or NUL inside: lib/lineio), so anything else at all. The argument points
 * into the line.
 * RFC 1939 3 (keywords, arguments). */
#ifndef MT_MMP_PARSE_H
#define MT_MMP_PARSE_H

#include "mmp.h"
#include "command.h"

/* The command table's definitions, indexed by command id: what the
 * session's command engine (lib-mail/command) looks lines up in. */
extern const struct mt_command_def mmp_command_defs[MMP_CMD_UNKNOWN];
extern const struct mt_command_table mmp_command_table;

/* The command line names (case-insensitively; MMP_CMD_UNKNOWN if none)
 * and its argument: the text after the verb and one space, "" if none,
 * set in any case. The engine's lookup without its counting (the fuzz
 * target's). */
enum mmp_command_id mmp_parse_command(const char *line, const char **args_r);
/* "CAPA", ... for a command in the table (upper case), else NULL. */
const char *mmp_command_keyword(enum mmp_command_id id);

#endif
