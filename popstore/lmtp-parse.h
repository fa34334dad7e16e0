/* lmtp-parse.h — the pure parsers of mailtier-popstore's LMTP command
 * lines: which command a line names and its argument, the LHLO name, MAIL
 * FROM and RCPT TO with their parameters (SIZE, BODY, SMTPUTF8, XQUEUEID). No
 * session, no I/O: lmtp-commands.c applies the results to a session,
 * tests/fuzz/fuzz-lmtp-cmd.c and tests/unit/test-lmtp-parse.c drive them
 * with arbitrary lines.
 *
 * Trust boundary: an LMTP client's command line (at most 512 octets, no
 * CR, LF or NUL inside: lib/lineio), so anything else at all. MAIL and
 * RCPT arguments are lib-mail/smtp-params.c's (the MTA's listeners use the
 * same parser), with what LMTP offers; see there for the replies.
 * RFC 2033 4.1 (LHLO), RFC 5321 4.1.1.1-3, 4.1.2; RFC 1870 (SIZE: 552
 * over the limit), RFC 6152 (BODY=7BIT|8BITMIME), RFC 6531 3.4
 * (SMTPUTF8: UTF-8 paths, 553 5.6.7 without it), RFC 3463 (codes). */
#ifndef MT_LMTP_PARSE_H
#define MT_LMTP_PARSE_H

#include "command.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "address.h"
#include "smtp-params.h"

/* The LHLO name (a domain or address literal). */
#define LMTP_LHLO_MAX 255

/* The commands of the LMTP table, in its order (the order of the
 * per-command counters in the session's summary line). */
enum lmtp_verb {
	LMTP_VERB_LHLO,
	LMTP_VERB_MAIL,
	LMTP_VERB_RCPT,
	LMTP_VERB_DATA,
	LMTP_VERB_RSET,
	LMTP_VERB_NOOP,
	LMTP_VERB_QUIT,
	LMTP_VERB_HELO,
	LMTP_VERB_EHLO,
	LMTP_VERB_COUNT
};

/* What the LMTP server offers on MAIL and RCPT (its LHLO reply lists
 * the same): lib-mail/smtp-params.c parses the arguments. No DSN
 * parameters: the MTA keeps them, the store has nobody to notify. */
#define LMTP_OFFERED (MT_SMTP_OFFER_ESMTP | MT_SMTP_OFFER_SIZE | \
		      MT_SMTP_OFFER_8BITMIME | MT_SMTP_OFFER_SMTPUTF8 | \
		      MT_SMTP_OFFER_XQUEUEID)

/* The states a command is allowed in: MAIL, RCPT and DATA only after
 * LHLO (503 before). HELO and EHLO are MT_CMD_JUNK (an SMTP client at an
 * LMTP port: refused). */
#define LMTP_CMD_NEW MT_CMD_STATE(0)
#define LMTP_CMD_GREETED MT_CMD_STATE(1)

/* The command table's definitions, indexed by enum lmtp_verb: what the
 * session's command engine (lib-mail/command) looks lines up in; the
 * handlers are lmtp-commands.c's, indexed alike. */
extern const struct mt_command_def lmtp_command_defs[LMTP_VERB_COUNT];
extern const struct mt_command_table lmtp_command_table;

/* The command line names (case-insensitively) and its argument: the text
 * after the verb and one space, "" if none, set whether or not the verb
 * is known. The engine's lookup in the same table, without its counting
 * (for tests and the fuzz target). */
bool lmtp_parse_command(const char *line, enum lmtp_verb *verb_r, const char **arg_r);
/* "LHLO", ... (upper case, as in the table). */
const char *lmtp_verb_name(enum lmtp_verb verb);

/* RFC 5321 4.1.1.1: 1..LMTP_LHLO_MAX octets of the characters a domain or
 * an address literal may hold, so the name is safe in a Received: line. */
bool lmtp_parse_lhlo(const char *arg);
/* MAIL FROM with what LMTP offers (LMTP_OFFERED; the null path allowed);
 * max_size: the SIZE limit. */
bool lmtp_parse_mail(const char *arg, uint64_t max_size,
		     struct mt_smtp_mail_args *mail_r,
		     struct mt_smtp_param_error *error_r);
/* RCPT TO: no parameters. smtputf8: the transaction's MAIL asked for
 * SMTPUTF8, so a UTF-8 path is allowed. */
bool lmtp_parse_rcpt(const char *arg, bool smtputf8,
		     struct mt_smtp_rcpt_args *rcpt_r,
		     struct mt_smtp_param_error *error_r);

#endif
