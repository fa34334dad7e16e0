/* pop3-parse.h — the pure parsers of mailtier-popstore's POP3 command
 * lines: which command a line names and its argument, message numbers,
 * and TOP's "msg n". No session, no I/O: pop3-commands.c applies the
 * results to a session, tests/fuzz/fuzz-pop3-cmd.c and
 * tests/unit/test-pop3-parse.c drive them with arbitrary lines.
 *
 * Trust boundary: a client's command line (at most 255 octets, no CR, LF
 * or NUL inside: lib/lineio), so anything else at all. Results point into
 * the line or are plain numbers; nothing is allocated. Whether a message
 * is marked as deleted is session state: the caller checks it.
 * RFC 1939 3 (keywords, arguments, "a message-number argument ... may
 * NOT refer to a message marked as deleted"), 5 (LIST, RETR, DELE: "msg"),
 * 7 (TOP msg n: "n ... a non-negative number", UIDL); RFC 2449 5 (CAPA). */
#ifndef MT_POP3_PARSE_H
#define MT_POP3_PARSE_H

#include "command.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The commands of the POP3 table, in its order (the order of the
 * per-command counters in the session's summary line). */
enum pop3_verb {
	POP3_VERB_CAPA,
	POP3_VERB_USER,
	POP3_VERB_PASS,
	POP3_VERB_AUTH,
	POP3_VERB_STLS,
	POP3_VERB_STAT,
	POP3_VERB_LIST,
	POP3_VERB_UIDL,
	POP3_VERB_TOP,
	POP3_VERB_RETR,
	POP3_VERB_DELE,
	POP3_VERB_NOOP,
	POP3_VERB_RSET,
	POP3_VERB_QUIT,
	POP3_VERB_COUNT
};

/* A message number is 1..this many decimal digits (no sign, no space). */
#define POP3_NUMBER_DIGITS_MAX 10

/* What is wrong with a message-number argument (the reply differs). */
enum pop3_arg_status {
	POP3_ARG_OK,
	POP3_ARG_SYNTAX,	/* "-ERR Syntax: TOP msg n" */
	POP3_ARG_NO_SUCH,	/* "-ERR No such message" */
};

/* The states a command is allowed in (RFC 1939 3), and MT_CMD_SECRET
 * for the lines that hold a password. */
#define POP3_CMD_AUTHORIZATION MT_CMD_STATE(0)
#define POP3_CMD_TRANSACTION MT_CMD_STATE(1)

/* The command table's definitions, indexed by enum pop3_verb: what the
 * session's command engine (lib-mail/command) looks lines up in; the
 * handlers are pop3-commands.c's, indexed alike. */
extern const struct mt_command_def pop3_command_defs[POP3_VERB_COUNT];
extern const struct mt_command_table pop3_command_table;

/* The command line names (case-insensitively, RFC 1939 3) and its
 * argument: the text after the verb and one space, "" if none, set
 * whether or not the verb is known. The engine's lookup in the same
 * table, without its counting (for tests and the fuzz target). */
bool pop3_parse_command(const char *line, enum pop3_verb *verb_r, const char **arg_r);
/* "CAPA", ... (upper case, as in the table). */
const char *pop3_verb_name(enum pop3_verb verb);

/* A decimal number of 1..POP3_NUMBER_DIGITS_MAX digits in s[0..len). */
bool pop3_parse_number(const char *s, size_t len, uint64_t *value_r);
/* "msg" in arg[0..len) naming one of count messages: its index
 * (the number - 1). */
bool pop3_parse_msg(const char *arg, size_t len, unsigned int count,
		    unsigned int *index_r);
/* TOP's "msg n": exactly one space between two numbers (else SYNTAX,
 * checked first), msg naming one of count messages (else NO_SUCH). */
enum pop3_arg_status pop3_parse_top(const char *arg, unsigned int count,
				    unsigned int *index_r, uint64_t *lines_r);

#endif
