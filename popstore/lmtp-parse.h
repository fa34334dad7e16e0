/* lmtp-parse.h — the pure parsers of mailtier-popstore's LMTP command
 * lines: which command a line names and its argument, the LHLO name, MAIL
 * FROM and RCPT TO with their parameters (SIZE, BODY, SMTPUTF8, XQUEUEID). No
 * session, no I/O: lmtp-commands.c applies the results to a session,
 * tests/fuzz/fuzz-lmtp-cmd.c and tests/unit/test-lmtp-parse.c drive them
 * with arbitrary lines.
 *
 * Trust boundary: an LMTP client's command line (at most 512 octets, no
 * CR, LF or NUL inside: lib/lineio), so anything else at all. Paths and
 * the parameter syntax are lib/address's (RFC 5321 4.1.2 grammar and
 * limits); here each parameter we implement is checked against its own
 * rule, anything else is refused with 555. A refusal's reply is code +
 * text + detail; detail is a static reason from lib/address or an ESMTP
 * keyword (letters, digits, '-'), so no client octet can break the reply
 * line. Nothing is allocated; results point into the caller's struct.
 * RFC 2033 4.1 (LHLO), RFC 5321 4.1.1.1-3, 4.1.2; RFC 1870 (SIZE: 552
 * over the limit), RFC 6152 (BODY=7BIT|8BITMIME), RFC 6531 3.4
 * (SMTPUTF8: UTF-8 paths, 553 5.6.7 without it), RFC 3463 (codes). */
#ifndef MT_LMTP_PARSE_H
#define MT_LMTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "address.h"

/* The LHLO name (a domain or address literal) and our XQUEUEID limits. */
#define LMTP_LHLO_MAX 255
#define LMTP_QUEUE_ID_MAX 31

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

/* A refusal: reply "code text detail" (detail may be ""). rejected: the
 * command was well formed but asks for more than we take (552 for SIZE);
 * it counts as a rejection, not as a client error. */
struct lmtp_parse_error {
	int code;
	const char *text;
	const char *detail;
	bool rejected;
};

/* MAIL FROM: the path and what its parameters ask for. Pointers point
 * into params: do not copy the struct by value. */
struct lmtp_mail_args {
	struct mt_address addr;
	struct mt_esmtp_params params;
	uint64_t size;		/* SIZE=, 0 if none (UINT64_MAX if huge) */
	const char *queue_id;	/* XQUEUEID= or NULL */
	bool smtputf8;		/* SMTPUTF8 (RFC 6531 3.4) */
};

struct lmtp_rcpt_args {
	struct mt_address addr;
	struct mt_esmtp_params params;	/* always empty when accepted */
};

/* The command line names (case-insensitively) and its argument: the text
 * after the verb and one space, "" if none, set whether or not the verb
 * is known. */
bool lmtp_parse_command(const char *line, enum lmtp_verb *verb_r, const char **arg_r);
/* "LHLO", ... (upper case, as in the table). */
const char *lmtp_verb_name(enum lmtp_verb verb);

/* RFC 5321 4.1.1.1: 1..LMTP_LHLO_MAX octets of the characters a domain or
 * an address literal may hold, so the name is safe in a Received: line. */
bool lmtp_parse_lhlo(const char *arg);
/* XQUEUEID value: 1..LMTP_QUEUE_ID_MAX of letters, digits, '.', '-', '_'
 * (safe in a log line and a Received: line). */
bool lmtp_queue_id_ok(const char *id);
/* "FROM:" path [SP params]; max_size: the SIZE limit. */
bool lmtp_parse_mail(const char *arg, uint64_t max_size, struct lmtp_mail_args *mail_r,
		     struct lmtp_parse_error *error_r);
/* "TO:" path; no parameters are supported. smtputf8: the transaction's
 * MAIL asked for SMTPUTF8, so a UTF-8 path is allowed. */
bool lmtp_parse_rcpt(const char *arg, bool smtputf8, struct lmtp_rcpt_args *rcpt_r,
		     struct lmtp_parse_error *error_r);

#endif
