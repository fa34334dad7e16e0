/* sieve-match.h — how Sieve compares a value with a key (RFC 5228 2.7):
 * the comparators i;octet, i;ascii-casemap (RFC 4790 9.2-9.3) and
 * i;ascii-numeric (RFC 4790 9.1: the leading digits as a number, a string
 * without one above every number), the match types :is, :contains and
 * :matches (with "*", "?" and backslash escapes), and relational's
 * :value and :count operators (RFC 5231). Used by the interpreter for
 * every test that compares (header, address, envelope, body, string,
 * hasflag).
 *
 * Trust boundary: values come from messages (any sender), keys from a
 * user's script; both are byte strings of a given length. :matches is
 * bounded by the product of the two lengths (no recursion). Pure. */
#ifndef MT_SIEVE_MATCH_H
#define MT_SIEVE_MATCH_H

#include <stdbool.h>
#include <stddef.h>

enum mt_sieve_comparator {
	MT_SIEVE_CMP_OCTET,
	MT_SIEVE_CMP_ASCII_CASEMAP,	/* the default (RFC 5228 2.7.3) */
	MT_SIEVE_CMP_ASCII_NUMERIC,
};

enum mt_sieve_match_type {
	MT_SIEVE_MATCH_IS,		/* the default */
	MT_SIEVE_MATCH_CONTAINS,
	MT_SIEVE_MATCH_MATCHES,
	MT_SIEVE_MATCH_VALUE,		/* relational :value */
};

enum mt_sieve_relation {
	MT_SIEVE_REL_GT, MT_SIEVE_REL_GE, MT_SIEVE_REL_LT,
	MT_SIEVE_REL_LE, MT_SIEVE_REL_EQ, MT_SIEVE_REL_NE,
};

/* "i;octet" ... (any case); false for another name. */
bool mt_sieve_comparator_parse(const char *name, enum mt_sieve_comparator *cmp_r);
/* "gt" ... "ne" (any case); false for another. */
bool mt_sieve_relation_parse(const char *name, enum mt_sieve_relation *rel_r);
/* Order a and b under cmp: < 0, 0, > 0. */
int mt_sieve_compare(enum mt_sieve_comparator cmp, const char *a, size_t alen,
		     const char *b, size_t blen);
/* Whether "x rel y" holds for a comparison result (mt_sieve_compare). */
bool mt_sieve_relation_holds(enum mt_sieve_relation rel, int order);
/* Whether value matches key by match (rel for MT_SIEVE_MATCH_VALUE).
 * i;ascii-numeric has no substring: :contains and :matches never match
 * under it (the checker refuses them). */
bool mt_sieve_match(enum mt_sieve_comparator cmp, enum mt_sieve_match_type match,
		    enum mt_sieve_relation rel, const char *value, size_t vlen,
		    const char *key, size_t klen);

#endif
