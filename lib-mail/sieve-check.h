/* sieve-check.h — what a parsed Sieve script (sieve-parse.h) means, checked
 * before it is stored or run: every command and test known, with the
 * arguments, tags and tests it takes (RFC 5228 sections 3-5 and the
 * extensions below), `require` first and naming only offered extensions,
 * each extension's commands, tests and tags used only once required,
 * `elsif`/`else` only after `if`/`elsif`, one match type, comparator and
 * address part each, the comparator and the relational operator known.
 * What ManageSieve's PUTSCRIPT and CHECKSCRIPT answer (RFC 5804 2.6, 2.12)
 * and what delivery refuses to run.
 *
 * Extensions: fileinto (RFC 5228 4.1), envelope (5.4), reject and ereject
 * (RFC 5429), vacation (RFC 5230), imap4flags (RFC 5232), variables (RFC
 * 5229), body (RFC 5173), relational (RFC 5231), subaddress (RFC 5233),
 * copy (RFC 3894), include (RFC 6609), mailbox (RFC 5490),
 * comparator-i;ascii-numeric (RFC 4790 9.1).
 *
 * Trust boundary: the tree comes from a user's script (untrusted); every
 * refusal is "line N: what", naming the construct. */
#ifndef MT_SIEVE_CHECK_H
#define MT_SIEVE_CHECK_H

#include "sieve-parse.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mt_sieve_ext {
	MT_SIEVE_EXT_FILEINTO = 1u << 0,
	MT_SIEVE_EXT_ENVELOPE = 1u << 1,
	MT_SIEVE_EXT_REJECT = 1u << 2,
	MT_SIEVE_EXT_EREJECT = 1u << 3,
	MT_SIEVE_EXT_VACATION = 1u << 4,
	MT_SIEVE_EXT_IMAP4FLAGS = 1u << 5,
	MT_SIEVE_EXT_VARIABLES = 1u << 6,
	MT_SIEVE_EXT_BODY = 1u << 7,
	MT_SIEVE_EXT_RELATIONAL = 1u << 8,
	MT_SIEVE_EXT_SUBADDRESS = 1u << 9,
	MT_SIEVE_EXT_COPY = 1u << 10,
	MT_SIEVE_EXT_INCLUDE = 1u << 11,
	MT_SIEVE_EXT_MAILBOX = 1u << 12,
	MT_SIEVE_EXT_NUMERIC = 1u << 13,	/* comparator-i;ascii-numeric */
};
#define MT_SIEVE_EXT_ALL ((1u << 14) - 1)

/* The extension's name as `require` spells it; NULL for no such bit. */
const char *mt_sieve_ext_name(uint32_t ext);
/* The names of the extensions in offered, space-separated, in bit order
 * (ManageSieve's SIEVE capability), into buf; its length. */
size_t mt_sieve_ext_list(uint32_t offered, char *buf, size_t size);

/* Check script against the extensions offered. true and *required_r (the
 * extensions it requires); false and error ("line N: what"). */
bool mt_sieve_check(const struct mt_sieve_script *script, uint32_t offered,
		    uint32_t *required_r, char *error, size_t error_size);

#endif
