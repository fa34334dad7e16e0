/* smtp-params.h — the one parser of MAIL FROM and RCPT TO arguments, for
 * every tier that is an SMTP or LMTP server (the MTA's listeners, the
 * stores' LMTP): the path (lib/address) and the ESMTP parameters the
 * server offers, each checked against its own rule. The tier says what it
 * offers (MT_SMTP_OFFER_*) and which path forms it takes (lib/address
 * flags); what a result means for a transaction is the tier's.
 *
 * One rule for every refusal: a parameter the server does not offer, or a
 * keyword it does not know, is 555 5.5.4 "Unsupported parameter KEY"; an
 * offered keyword with a bad value is 501 5.5.4 (RFC 5321 4.1.1.11, RFC
 * 3463 3.6); a keyword given twice 555 "Duplicate parameter KEY"; a bad
 * path 501 with lib/address's reason; SIZE over the limit 552 5.3.4 and a
 * UTF-8 path in a transaction without SMTPUTF8 553 5.6.7 (both
 * "rejected": well formed, asking for more than we take).
 *
 * Trust boundary: the argument text of a client's command line (after the
 * verb and one space): anything but NUL/CR/LF (lib/lineio). A refusal's
 * detail is a static reason or an ESMTP keyword (letters, digits, '-' as
 * lib/address parses them), so no client octet can break the reply line.
 * Pure: nothing allocated, no I/O; results point into the caller's struct
 * (tests/fuzz/fuzz-smtp-cmd.c, fuzz-lmtp-cmd.c, tests/unit/test-lmtp-parse.c).
 * RFCs: 5321 4.1.1.2-3, 4.1.2; 1870 (SIZE: 1*20DIGIT, a value beyond 64
 * bits is only too big); 6152 (BODY=7BIT|8BITMIME); 6531 3.4 (SMTPUTF8);
 * 3461 4 (xtext), 4.1 (NOTIFY), 4.2 (ORCPT), 4.3 (RET), 4.4 (ENVID);
 * 4954 5 (AUTH=); XQUEUEID is mailtier's LMTP extension (the MTA's queue
 * id, for the store's logs and duplicate recognition). */
#ifndef MT_SMTP_PARAMS_H
#define MT_SMTP_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "address.h"

/* What a server offers (its EHLO/LHLO keywords); 0: the client said HELO,
 * so no parameter at all. */
#define MT_SMTP_OFFER_ESMTP 0x1u	/* parameters at all (EHLO/LHLO) */
#define MT_SMTP_OFFER_SIZE 0x2u
#define MT_SMTP_OFFER_8BITMIME 0x4u	/* BODY= */
#define MT_SMTP_OFFER_SMTPUTF8 0x8u	/* also: UTF-8 paths are syntax */
#define MT_SMTP_OFFER_DSN 0x10u		/* RET, ENVID; NOTIFY, ORCPT */
#define MT_SMTP_OFFER_AUTH 0x20u	/* AUTH= on MAIL */
#define MT_SMTP_OFFER_XQUEUEID 0x40u

#define MT_SMTP_ENVID_MAX 100		/* RFC 3461 4.4 */
#define MT_SMTP_ORCPT_MAX 500		/* RFC 3461 4.2 */
#define MT_SMTP_QUEUE_ID_MAX 31

/* DSN NOTIFY (RFC 3461 4.1); 0 means not given (failure and delay). */
#define MT_SMTP_NOTIFY_NEVER 0x1u
#define MT_SMTP_NOTIFY_SUCCESS 0x2u
#define MT_SMTP_NOTIFY_FAILURE 0x4u
#define MT_SMTP_NOTIFY_DELAY 0x8u

/* DSN RET (RFC 3461 4.3). */
enum mt_smtp_ret { MT_SMTP_RET_DEFAULT, MT_SMTP_RET_FULL, MT_SMTP_RET_HDRS };

/* A refusal: reply "code text detail" (detail may be ""). rejected: well
 * formed but more than we take (552, 553): a rejection, not a client
 * error. */
struct mt_smtp_param_error {
	int code;
	const char *text;
	const char *detail;
	bool rejected;
};

/* MAIL FROM: the path and what its parameters ask for. Pointers point
 * into params: do not copy the struct by value. */
struct mt_smtp_mail_args {
	struct mt_address addr;
	struct mt_esmtp_params params;
	uint64_t size;			/* SIZE=, 0 if none (UINT64_MAX if huge) */
	bool body_8bit;			/* BODY=8BITMIME */
	bool smtputf8;			/* SMTPUTF8 */
	enum mt_smtp_ret ret;
	const char *envid;		/* ENVID= (valid xtext, as sent) or NULL */
	const char *queue_id;		/* XQUEUEID= or NULL */
};

struct mt_smtp_rcpt_args {
	struct mt_address addr;
	struct mt_esmtp_params params;
	unsigned int notify;		/* MT_SMTP_NOTIFY_*, 0 if none */
	const char *orcpt;		/* ORCPT= "type;xtext" as sent, or NULL */
};

/* "FROM:" path [SP params]. addr_flags: lib/address's (MT_ADDR_ALLOW_NULL,
 * MT_ADDR_LENIENT; MT_ADDR_SMTPUTF8 is added when SMTPUTF8 is offered);
 * max_size: the SIZE limit. */
bool mt_smtp_parse_mail(const char *args, unsigned int offered,
			unsigned int addr_flags, uint64_t max_size,
			struct mt_smtp_mail_args *mail_r,
			struct mt_smtp_param_error *error_r);
/* "TO:" path [SP params]; smtputf8: the transaction's MAIL asked for it
 * (a UTF-8 path is refused with 553 5.6.7 otherwise). */
bool mt_smtp_parse_rcpt(const char *args, unsigned int offered,
			unsigned int addr_flags, bool smtputf8,
			struct mt_smtp_rcpt_args *rcpt_r,
			struct mt_smtp_param_error *error_r);
/* XQUEUEID's value: 1..MT_SMTP_QUEUE_ID_MAX letters, digits, '.', '-', '_'
 * (safe in a log line and a Received: line). */
bool mt_smtp_queue_id_ok(const char *id);

#endif
