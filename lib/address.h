/* address.h — RFC 5321 envelope address parsing for MAIL FROM and RCPT TO:
 * the path, its normalised form, and the ESMTP parameters after it.
 *
 * Trust boundary: the argument text of a client's MAIL/RCPT command (after
 * "MAIL FROM:" / "RCPT TO:"), so anything at all. The parser reads only
 * s[0..len), needs no NUL terminator, allocates nothing and keeps no state.
 *
 * RFC 5321 4.1.2 (Path, Mailbox, Local-part, Domain, address-literal,
 * Mail-parameters), 4.1.1.3 ("<Postmaster>"), 4.1.3 (IPv4/IPv6 literals),
 * 4.5.3.1.1-3 (64/255/256-octet limits), C (source routes: accepted and
 * ignored); RFC 6531 3.3 (UTF-8 under SMTPUTF8).
 *
 * Normal form: the domain is lower-cased (ASCII only; UTF-8 labels are kept
 * as sent, no IDNA mapping); an IPv6 literal keeps its "IPv6:" tag with the
 * address lower-cased, not re-compressed. The local part keeps its case;
 * a Quoted-string is unquoted when its content is a valid Dot-string, and
 * otherwise re-quoted with only '"' and '\' escaped. Limits are checked on
 * the octets as sent: local part <= 64, domain <= 255, path <= 256 (angle
 * brackets and any source route included). */
#ifndef MT_ADDRESS_H
#define MT_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

#define MT_ADDR_LOCAL_MAX 64
#define MT_ADDR_DOMAIN_MAX 255
#define MT_ADDR_PATH_MAX 256
#define MT_ESMTP_PARAMS_MAX 16
#define MT_ESMTP_STORE_SIZE 1024	/* keys and values, NUL-terminated */

enum mt_addr_flags {
	MT_ADDR_ALLOW_NULL = 1 << 0,	/* "<>" (MAIL FROM reverse-path) */
	MT_ADDR_ALLOW_POSTMASTER = 1 << 1, /* "<Postmaster>" without domain
					    * (RCPT TO), case-insensitive */
	MT_ADDR_LENIENT = 1 << 2,	/* sendmail-isms: spaces before the
					 * path, and a path without <> */
	MT_ADDR_SMTPUTF8 = 1 << 3,	/* UTF-8 in local part, domain and
					 * parameter values (RFC 6531) */
};

struct mt_address {
	bool is_null;			/* "<>": all strings empty */
	bool is_literal;		/* domain is an [address literal] */
	char local[MT_ADDR_LOCAL_MAX + 1];	/* normal form */
	char domain[MT_ADDR_DOMAIN_MAX + 1];	/* "" for <Postmaster> */
	/* "local@domain", "postmaster" for <Postmaster>, "" for <> */
	char addr[MT_ADDR_LOCAL_MAX + 1 + MT_ADDR_DOMAIN_MAX + 1];
};

struct mt_esmtp_param {
	const char *key;	/* upper-cased keyword */
	const char *value;	/* as sent; NULL when there was no "=" */
};

/* The pointers point into store: do not copy this struct by value. */
struct mt_esmtp_params {
	size_t count;
	struct mt_esmtp_param param[MT_ESMTP_PARAMS_MAX];
	/* After a failed parse: the keyword that was given twice (the
	 * failure is then no syntax error but RFC 3463's 5.5.4 "invalid
	 * command arguments", answered 555 by the callers), else NULL. */
	const char *duplicate;
	char store[MT_ESMTP_STORE_SIZE];
};

/* Parse a MAIL FROM/RCPT TO argument s[0..len): a path, then, if params_r
 * is not NULL, optional SP-separated ESMTP parameters (keywords are unique,
 * at most MT_ESMTP_PARAMS_MAX; a repeated one sets params_r->duplicate). Trailing spaces are allowed. On failure
 * returns false with a reason such as "local part longer than 64 octets". */
bool mt_address_parse(const char *s, size_t len, unsigned int flags,
		      struct mt_address *addr_r,
		      struct mt_esmtp_params *params_r, const char **error_r);

/* Does s[0..len) hold an octet above 0x7f (UTF-8 text, RFC 6531/6532;
 * an address, a header section, a message)? */
bool mt_has_8bit(const void *s, size_t len);

/* The parameter with this keyword (case-insensitive), or NULL. */
const struct mt_esmtp_param *
mt_esmtp_param_find(const struct mt_esmtp_params *params, const char *key);

#endif
