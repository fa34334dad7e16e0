/* provision.h — user accounts for the directory: shard assignment, the LDIF
 * of one account entry, and bulk generation of load-test accounts.
 *
 * Entry layout (dirsvc/README.md, "Entries"):
 *   dn: uid=<address>,ou=people,<suffix>       uid = the full lower-case
 *   objectClass: inetOrgPerson                   address, unique across
 *   objectClass: inetLocalMailRecipient          domains
 *   objectClass: mailtierAccount
 *   uid, cn, sn, mail, [mailLocalAddress...], mailHost (shard name),
 *   [mailRoutingAddress], mailtierStatus, [mailtierQuota], [userPassword]
 * mt_account_visit() is the one place that knows this layout: the LDIF
 * writer here (for slapadd, which adds structuralObjectClass, entryUUID,
 * entryCSN, creatorsName and the timestamps itself, also with -q) and the
 * LDAP add of dirsvc-admin.c are both built on it.
 *
 * Shards: rendezvous (highest-random-weight) hashing of the lower-cased
 * address over the shard names, so an address always maps to the same shard
 * and adding a shard moves only the ~1/N of addresses it wins.
 * Trust boundary: addresses and names come from the administrator; values
 * are LDIF/DN-escaped by ldif.c. Bulk generation has no outside input. */
#ifndef MT_PROVISION_H
#define MT_PROVISION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "pwhash.h"

enum mt_account_status {
	MT_ACCOUNT_ACTIVE,	/* "active": normal (also when absent) */
	MT_ACCOUNT_DISABLED,	/* "disabled": no login, mail rejected */
	MT_ACCOUNT_HOLD,	/* "hold": no login, mail accepted and kept */
};

/* One account entry. Only address is required. */
struct mt_account {
	const char *address;		/* primary address: uid and mail */
	const char *password_hash;	/* userPassword value (pwhash.h) */
	const char *mail_host;		/* mailHost: the store shard name */
	const char *const *aliases;	/* mailLocalAddress values */
	size_t n_aliases;
	const char *forward;		/* mailRoutingAddress */
	const char *cn;			/* common name; NULL = the local part */
	uint64_t quota;			/* mailtierQuota in bytes; 0 = omit */
	enum mt_account_status status;
};

/* Bulk load-test accounts userK@domain, password "secretK",
 * K = first .. first + count - 1. */
struct mt_provision_params {
	const char *domain;
	const char *suffix;		/* NULL = dc= labels of domain */
	uint64_t first;			/* 0 is taken as 1 */
	uint64_t count;
	const char *const *shards;	/* mailHost values, n_shards >= 1 */
	size_t n_shards;
	enum mt_pw_scheme scheme;
	unsigned int crypt_rounds;	/* 0 = MT_PW_CRYPT_ROUNDS_DEFAULT */
	uint64_t quota;			/* 0 = omit */
};

const char *mt_account_status_name(enum mt_account_status status);
/* "active", "disabled" or "hold", case-insensitive; false otherwise. */
bool mt_account_status_parse(const char *name,
			     enum mt_account_status *status_r);

/* Rendezvous score of (address, shard): FNV-1a 64 over the shard name, a
 * NUL byte and the ASCII-lower-cased address, then the MurmurHash3 fmix64
 * finalizer. Fixed forever: changing it moves users between shards. */
uint64_t mt_shard_score(const char *addr, const char *shard);
/* The shard with the highest score for addr (ties: the smaller name by
 * strcmp, so the order of shards does not matter); NULL if n == 0. */
const char *mt_shard_for_address(const char *addr, const char *const *shards,
				 size_t n);

/* Receives an account's entry, part by part (mt_account_visit). */
struct mt_account_visitor {
	/* First and once: the ASCII-lower-cased address (len bytes), which is
	 * the uid and the value of the entry's RDN uid=<address>. */
	void (*dn)(void *context, const char *address, size_t len);
	/* Then every attribute value in the layout's order (objectClass three
	 * times, uid, cn, sn, mail, mailLocalAddress..., mailHost, ...). A
	 * repeated attribute's values come one after the other. The strings
	 * are valid during the call only. */
	void (*value)(void *context, const char *attr, const char *value);
};

/* Check acct and hand its entry to v. False, with nothing handed over, if
 * the address is not local-part@domain or too long, or an alias holds
 * UTF-8. */
bool mt_account_visit(const struct mt_account *acct,
		      const struct mt_account_visitor *v, void *context,
		      const char **error_r);

/* Append the LDIF record (ending in an empty line) of acct under
 * ou=people,<suffix>. False if the address has no '@'. */
bool mt_ldif_append_account(struct mt_buf *out, const char *suffix,
			    const struct mt_account *acct,
			    const char **error_r);

/* Called with each bulk account (valid during the call only); false stops
 * the generation, with *error_r set. */
typedef bool mt_provision_account_cb(const struct mt_account *acct,
				     void *context, const char **error_r);
/* Generate the bulk accounts of p (p->suffix unused) and hand each to
 * callback, in order. False with *error_r if p is unusable or callback
 * returned false. */
bool mt_provision_bulk_each(const struct mt_provision_params *p,
			    mt_provision_account_cb *callback, void *context,
			    const char **error_r);

/* Write the bulk accounts of p as LDIF records to out (the caller opens it
 * with a large buffer). Allocates nothing per entry. */
bool mt_provision_bulk(FILE *out, const struct mt_provision_params *p,
		       const char **error_r);

#endif
