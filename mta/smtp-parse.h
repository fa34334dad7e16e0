/* smtp-parse.h — the pure parsers of SMTP command arguments: EHLO/HELO,
 * MAIL FROM and RCPT TO with their ESMTP parameters, BDAT. No session, no
 * I/O: smtp-commands.c and smtp-data.c apply the results to a session, and
 * tests/fuzz/fuzz-smtp-cmd.c drives them with arbitrary lines.
 *
 * Trust boundary: the argument text of a client's command line (after the
 * verb and one space), anything at all but NUL/CR/LF (lib/lineio). On a
 * refusal the reply is code + text + detail; detail is a static reason or
 * an ESMTP keyword (letters, digits, '-' as lib/address parses them), so
 * no client octet can break the reply line.
 * RFCs: 5321 4.1.1.1 (EHLO), 4.1.1.2-3 (MAIL, RCPT), 4.1.2 (paths); 1870
 * (SIZE); 6152 (BODY=8BITMIME); 6531 (SMTPUTF8); 3461 4 (xtext), 4.1
 * (NOTIFY), 4.2 (ORCPT), 4.3 (RET), 4.4 (ENVID); 4954 5 (AUTH=); 3030
 * (BDAT). */
#ifndef MT_MTA_SMTP_PARSE_H
#define MT_MTA_SMTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "address.h"
#include "queue.h"

#define SMTP_ENVID_MAX 100	/* RFC 3461 4.4 */
#define SMTP_ORCPT_MAX 500	/* RFC 3461 4.2 */
#define SMTP_HELO_MAX 255

/* A refusal: reply "code text detail" (detail may be ""). */
struct smtp_parse_error {
	int code;
	const char *text;
	const char *detail;
};

/* MAIL FROM: the path and what its parameters ask for. Pointers point
 * into params: do not copy the struct by value. */
struct smtp_mail_args {
	struct mt_address addr;
	struct mt_esmtp_params params;
	uint64_t size;			/* SIZE=, 0 if none */
	bool body_8bit, smtputf8;
	enum queue_ret ret;
	const char *envid;		/* ENVID= (valid xtext, as sent) or NULL */
};

struct smtp_rcpt_args {
	struct mt_address addr;
	struct mt_esmtp_params params;
	unsigned int notify;		/* QUEUE_NOTIFY_*, 0 if none */
	const char *orcpt;		/* ORCPT= "type;xtext" as sent, or NULL */
};

/* EHLO/HELO: one token of printable ASCII, 1..255 octets (a domain or an
 * address literal, checked loosely); its length. */
bool smtp_parse_helo(const char *args, size_t *len_r);
/* "FROM:" path [SP params]. esmtp: the client said EHLO (parameters and
 * SMTPUTF8 addresses allowed); max_size: the SIZE limit. */
bool smtp_parse_mail(const char *args, bool esmtp, uint64_t max_size,
		     struct smtp_mail_args *mail_r, struct smtp_parse_error *error_r);
/* "TO:" path [SP params]; smtputf8: the transaction asked for it. */
bool smtp_parse_rcpt(const char *args, bool esmtp, bool smtputf8,
		     struct smtp_rcpt_args *rcpt_r, struct smtp_parse_error *error_r);
/* BDAT: chunk-size [SP "LAST"]. */
bool smtp_parse_bdat(const char *args, uint64_t *size_r, bool *last_r);

#endif
