/* fuzz-sieve-match.c — libFuzzer target for lib-mail/sieve-match.c: the
 * comparators and match types every Sieve test applies to message values
 * (any sender) and script keys (a user).
 *
 * Properties, beyond "no crash, no over-read, no UB":
 *  - each comparator orders antisymmetrically: compare(a, b) is
 *    -compare(b, a), and compare(a, a) is 0;
 *  - :is agrees with compare() == 0, :value with the relation;
 *  - :matches "*" matches every value; a value matches itself with its
 *    "*", "?" and "\" escaped; a value contains itself and "";
 *  - i;ascii-casemap matches what i;octet matches.
 *
 * Input: value NUL key (a missing NUL: the value, and an empty key).
 * Trust boundary: message header values and a user's script keys. */
#include "fuzz.h"

#include "sieve-match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *v = (const char *)data;
	const char *nul = memchr(data, '\0', size);
	size_t vlen = nul != NULL ? (size_t)(nul - v) : size;
	const char *k = nul != NULL ? nul + 1 : v + size;
	size_t klen = nul != NULL ? size - vlen - 1 : 0;
	if (vlen > 4096 || klen > 4096)
		return 0;
	char *escaped = malloc(2 * vlen + 1);
	size_t elen = 0;
	for (size_t i = 0; i < vlen; i++) {
		if (v[i] == '*' || v[i] == '?' || v[i] == '\\')
			escaped[elen++] = '\\';
		escaped[elen++] = v[i];
	}
	const enum mt_sieve_comparator cmps[] = {
		MT_SIEVE_CMP_OCTET, MT_SIEVE_CMP_ASCII_CASEMAP, MT_SIEVE_CMP_ASCII_NUMERIC,
	};
	for (size_t c = 0; c < 3; c++) {
		enum mt_sieve_comparator cmp = cmps[c];
		int ab = mt_sieve_compare(cmp, v, vlen, k, klen);
		int ba = mt_sieve_compare(cmp, k, klen, v, vlen);
		FUZZ_CHECK((ab > 0) == (ba < 0) && (ab == 0) == (ba == 0), "not antisymmetric");
		FUZZ_CHECK(mt_sieve_compare(cmp, v, vlen, v, vlen) == 0, "a value is not itself");
		FUZZ_CHECK(mt_sieve_match(cmp, MT_SIEVE_MATCH_IS, MT_SIEVE_REL_EQ, v, vlen, k,
					  klen) == (ab == 0), ":is disagrees");
		for (int r = MT_SIEVE_REL_GT; r <= MT_SIEVE_REL_NE; r++)
			FUZZ_CHECK(mt_sieve_match(cmp, MT_SIEVE_MATCH_VALUE,
						  (enum mt_sieve_relation)r, v, vlen, k, klen) ==
				   mt_sieve_relation_holds((enum mt_sieve_relation)r, ab),
				   ":value disagrees");
		if (cmp == MT_SIEVE_CMP_ASCII_NUMERIC)
			continue;
		FUZZ_CHECK(mt_sieve_match(cmp, MT_SIEVE_MATCH_MATCHES, MT_SIEVE_REL_EQ, v, vlen,
					  "*", 1), "\"*\" does not match");
		FUZZ_CHECK(mt_sieve_match(cmp, MT_SIEVE_MATCH_MATCHES, MT_SIEVE_REL_EQ, v, vlen,
					  escaped, elen), "the escaped value does not match");
		FUZZ_CHECK(mt_sieve_match(cmp, MT_SIEVE_MATCH_CONTAINS, MT_SIEVE_REL_EQ, v, vlen,
					  v, vlen) &&
			   mt_sieve_match(cmp, MT_SIEVE_MATCH_CONTAINS, MT_SIEVE_REL_EQ, v, vlen,
					  "", 0), "contains fails");
	}
	const enum mt_sieve_match_type types[] = {
		MT_SIEVE_MATCH_IS, MT_SIEVE_MATCH_CONTAINS, MT_SIEVE_MATCH_MATCHES,
	};
	for (size_t t = 0; t < 3; t++)
		if (mt_sieve_match(MT_SIEVE_CMP_OCTET, types[t], MT_SIEVE_REL_EQ, v, vlen, k, klen))
			FUZZ_CHECK(mt_sieve_match(MT_SIEVE_CMP_ASCII_CASEMAP, types[t],
						  MT_SIEVE_REL_EQ, v, vlen, k, klen),
				   "casemap misses what octet matches");
	free(escaped);
	return 0;
}
