/* sieve-match.c — Sieve's comparators, match types and relations (see
 * sieve-match.h).
 *
 * Trust boundary: message values and script keys, as counted byte
 * strings; pure functions.
 * RFC 5228 2.7.1-2.7.3; RFC 4790 9.1-9.3; RFC 5231 4. */
#include "sieve-match.h"

#include <strings.h>

bool mt_sieve_comparator_parse(const char *name, enum mt_sieve_comparator *cmp_r)
{
	if (strcasecmp(name, "i;octet") == 0)
		*cmp_r = MT_SIEVE_CMP_OCTET;
	else if (strcasecmp(name, "i;ascii-casemap") == 0)
		*cmp_r = MT_SIEVE_CMP_ASCII_CASEMAP;
	else if (strcasecmp(name, "i;ascii-numeric") == 0)
		*cmp_r = MT_SIEVE_CMP_ASCII_NUMERIC;
	else
		return false;
	return true;
}

bool mt_sieve_relation_parse(const char *name, enum mt_sieve_relation *rel_r)
{
	static const char *const names[] = { "gt", "ge", "lt", "le", "eq", "ne" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcasecmp(name, names[i]) == 0) {
			*rel_r = (enum mt_sieve_relation)i;
			return true;
		}
	}
	return false;
}

static unsigned char fold(enum mt_sieve_comparator cmp, unsigned char c)
{
	if (cmp == MT_SIEVE_CMP_ASCII_CASEMAP && c >= 'a' && c <= 'z')
		return (unsigned char)(c - 'a' + 'A');
	return c;
}

/* RFC 4790 9.1: the leading digits (leading zeros dropped) or, without
 * one, positive infinity, which equals itself and exceeds every number. */
static int compare_numeric(const char *a, size_t alen, const char *b, size_t blen)
{
	bool a_num = alen > 0 && a[0] >= '0' && a[0] <= '9';
	bool b_num = blen > 0 && b[0] >= '0' && b[0] <= '9';
	if (!a_num || !b_num)
		return a_num ? -1 : b_num ? 1 : 0;
	size_t ai = 0, bi = 0, ae, be;
	while (ai + 1 < alen && a[ai] == '0' && a[ai + 1] >= '0' && a[ai + 1] <= '9')
		ai++;
	while (bi + 1 < blen && b[bi] == '0' && b[bi + 1] >= '0' && b[bi + 1] <= '9')
		bi++;
	for (ae = ai; ae < alen && a[ae] >= '0' && a[ae] <= '9'; ae++)
		;
	for (be = bi; be < blen && b[be] >= '0' && b[be] <= '9'; be++)
		;
	if (ae - ai != be - bi)
		return ae - ai < be - bi ? -1 : 1;	/* more digits, larger */
	for (; ai < ae; ai++, bi++)
		if (a[ai] != b[bi])
			return a[ai] < b[bi] ? -1 : 1;
	return 0;
}

int mt_sieve_compare(enum mt_sieve_comparator cmp, const char *a, size_t alen,
		     const char *b, size_t blen)
{
	if (cmp == MT_SIEVE_CMP_ASCII_NUMERIC)
		return compare_numeric(a, alen, b, blen);
	size_t n = alen < blen ? alen : blen;
	for (size_t i = 0; i < n; i++) {
		unsigned char x = fold(cmp, (unsigned char)a[i]);
		unsigned char y = fold(cmp, (unsigned char)b[i]);
		if (x != y)
			return x < y ? -1 : 1;
	}
	return alen == blen ? 0 : alen < blen ? -1 : 1;
}

bool mt_sieve_relation_holds(enum mt_sieve_relation rel, int order)
{
	switch (rel) {
	case MT_SIEVE_REL_GT: return order > 0;
	case MT_SIEVE_REL_GE: return order >= 0;
	case MT_SIEVE_REL_LT: return order < 0;
	case MT_SIEVE_REL_LE: return order <= 0;
	case MT_SIEVE_REL_EQ: return order == 0;
	default: return order != 0;
	}
}

static bool contains(enum mt_sieve_comparator cmp, const char *v, size_t vlen,
		     const char *k, size_t klen)
{
	if (klen == 0)
		return true;
	for (size_t i = 0; i + klen <= vlen; i++)
		if (mt_sieve_compare(cmp, v + i, klen, k, klen) == 0)
			return true;
	return false;
}

/* One key position: a literal octet (escaped or not) or a wildcard. */
static size_t key_token(const char *k, size_t klen, size_t i, int *wild_r,
			unsigned char *c_r)
{
	if (k[i] == '\\' && i + 1 < klen) {
		*wild_r = 0;
		*c_r = (unsigned char)k[i + 1];
		return 2;
	}
	*wild_r = k[i] == '*' ? '*' : k[i] == '?' ? '?' : 0;
	*c_r = (unsigned char)k[i];
	return 1;
}

/* "*" any run, "?" one octet, "\x" the octet x: the usual backtracking on
 * the last "*", O(vlen x klen) at worst. */
static bool matches(enum mt_sieve_comparator cmp, const char *v, size_t vlen,
		    const char *k, size_t klen)
{
	size_t vi = 0, ki = 0, star_k = 0, star_v = 0;
	bool star = false;
	while (vi < vlen) {
		if (ki < klen) {
			int wild;
			unsigned char c;
			size_t step = key_token(k, klen, ki, &wild, &c);
			if (wild == '*') {
				star = true;
				star_k = ki + step;
				star_v = vi;
				ki += step;
				continue;
			}
			if (wild == '?' || fold(cmp, c) == fold(cmp, (unsigned char)v[vi])) {
				ki += step;
				vi++;
				continue;
			}
		}
		if (!star)
			return false;
		ki = star_k;
		vi = ++star_v;
	}
	while (ki < klen) {
		int wild;
		unsigned char c;
		size_t step = key_token(k, klen, ki, &wild, &c);
		if (wild != '*')
			return false;
		ki += step;
	}
	return true;
}

bool mt_sieve_match(enum mt_sieve_comparator cmp, enum mt_sieve_match_type match,
		    enum mt_sieve_relation rel, const char *value, size_t vlen,
		    const char *key, size_t klen)
{
	switch (match) {
	case MT_SIEVE_MATCH_IS:
		return mt_sieve_compare(cmp, value, vlen, key, klen) == 0;
	case MT_SIEVE_MATCH_VALUE:
		return mt_sieve_relation_holds(rel, mt_sieve_compare(cmp, value, vlen, key,
								     klen));
	case MT_SIEVE_MATCH_CONTAINS:
		return cmp != MT_SIEVE_CMP_ASCII_NUMERIC && contains(cmp, value, vlen, key, klen);
	default:
		return cmp != MT_SIEVE_CMP_ASCII_NUMERIC && matches(cmp, value, vlen, key, klen);
	}
}
