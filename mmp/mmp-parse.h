/* mmp-parse.h — the pure parsers of the POP3 commands the MMP answers
 * itself before login: which command a line names and its argument, the
 * USER name, the AUTH mechanism and initial response, and an AUTH PLAIN
 * response (base64, RFC 4616 message, whose identity it may name). No
 * session, no I/O: mmp-commands.c applies the results,
 * tests/fuzz/fuzz-mmp-cmd.c drives them with arbitrary lines.
 *
 * Trust boundary: a client's command line (at most 255 octets; a SASL
 * response line at most 1024; no CR, LF or NUL inside: lib/lineio), so
 * anything else at all. Results point into the line, or into the caller's
 * buffer for a decoded PLAIN message, which then holds a password: the
 * caller wipes it.
 * RFC 1939 3 (keywords, arguments), 7 (USER, PASS); RFC 5034 4 (AUTH,
 * the initial response, "=" is an empty one); RFC 4616 (PLAIN). */
#ifndef MT_MMP_PARSE_H
#define MT_MMP_PARSE_H

#include <stdbool.h>

#include "buf.h"
#include "mmp.h"

enum mmp_user_status {
	MMP_USER_OK,
	MMP_USER_MISSING,	/* "-ERR Missing user name." */
	MMP_USER_TOO_LONG,	/* over MMP_USER_MAX: "-ERR User name too long." */
};

enum mmp_auth_kind {
	MMP_AUTH_LIST,		/* "AUTH" alone: list the mechanisms */
	MMP_AUTH_PLAIN,		/* PLAIN, with or without an initial response */
	MMP_AUTH_UNSUPPORTED,	/* any other mechanism */
};

/* The command line names (case-insensitively; MMP_CMD_UNKNOWN if none)
 * and its argument: the text after the verb and one space, "" if none,
 * set in any case. */
enum mmp_command_id mmp_parse_command(const char *line, const char **args_r);
/* "CAPA", ... for a command in the table (upper case), else NULL. */
const char *mmp_command_keyword(enum mmp_command_id id);
/* USER's argument: present and at most MMP_USER_MAX octets (spaces are
 * part of it). */
enum mmp_user_status mmp_parse_user(const char *args);
/* AUTH's argument: the mechanism, and for PLAIN the initial response
 * after one space (NULL without one). */
enum mmp_auth_kind mmp_parse_auth(const char *args, const char **initial_r);
/* An AUTH PLAIN response (initial or on its own line): not "=", base64,
 * an RFC 4616 message whose names fit MMP_USER_MAX, and an authorization
 * identity that is empty or the authentication identity (users may not
 * act as someone else). Decoded into msg; plain_r points into it. */
bool mmp_parse_plain_response(const char *b64, struct mt_buf *msg,
			      struct mmp_plain *plain_r, const char **error_r);

#endif
