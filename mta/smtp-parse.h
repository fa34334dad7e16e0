/* smtp-parse.h — the pure parsers of SMTP command arguments that are the
 * MTA's own: EHLO/HELO and BDAT; and what its listeners offer on MAIL FROM
 * and RCPT TO, whose arguments lib-mail/smtp-params.c parses (one parser
 * for every SMTP and LMTP server tier). No session, no I/O:
 * smtp-commands.c and smtp-data.c apply the results to a session, and
 * tests/fuzz/fuzz-smtp-cmd.c drives them with arbitrary lines.
 *
 * Trust boundary: the argument text of a client's command line (after the
 * verb and one space), anything at all but NUL/CR/LF (lib/lineio).
 * RFCs: 5321 4.1.1.1 (EHLO); 1870, 6152, 6531, 3461, 4954 5 (what MAIL and
 * RCPT take); 3030 (BDAT). */
#ifndef MT_MTA_SMTP_PARSE_H
#define MT_MTA_SMTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "address.h"
#include "smtp-params.h"

#define SMTP_HELO_MAX 255

/* What the MTA's listeners offer on MAIL and RCPT after EHLO (the EHLO
 * reply, smtp-commands.c, lists the same); lib-mail/smtp-params.c parses
 * the arguments. */
#define SMTP_OFFERED (MT_SMTP_OFFER_ESMTP | MT_SMTP_OFFER_SIZE | \
		      MT_SMTP_OFFER_8BITMIME | MT_SMTP_OFFER_SMTPUTF8 | \
		      MT_SMTP_OFFER_DSN | MT_SMTP_OFFER_AUTH)
#define SMTP_MAIL_ADDR_FLAGS (MT_ADDR_ALLOW_NULL | MT_ADDR_LENIENT)
#define SMTP_RCPT_ADDR_FLAGS (MT_ADDR_ALLOW_POSTMASTER | MT_ADDR_LENIENT)

/* EHLO/HELO: one token of printable ASCII, 1..255 octets (a domain or an
 * address literal, checked loosely); its length. */
bool smtp_parse_helo(const char *args, size_t *len_r);
/* BDAT: chunk-size [SP "LAST"]. */
bool smtp_parse_bdat(const char *args, uint64_t *size_r, bool *last_r);

#endif
