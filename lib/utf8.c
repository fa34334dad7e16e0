/* utf8.c — well-formed UTF-8 (see utf8.h). */
#include "utf8.h"

/* RFC 3629 section 4, UTF8-char: the second octet's range depends on the
 * first so that overlong forms, surrogates and code points above U+10FFFF
 * are refused. */
size_t mt_utf8_char_len(const unsigned char *s, size_t avail)
{
	if (avail == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;	/* continuation, overlong 2-octet lead, > U+10FFFF */
	size_t n = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	unsigned char lo = 0x80, hi = 0xbf;
	if (s[0] == 0xe0)
		lo = 0xa0;	/* no overlong 3-octet forms */
	else if (s[0] == 0xed)
		hi = 0x9f;	/* no surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;	/* no overlong 4-octet forms */
	else if (s[0] == 0xf4)
		hi = 0x8f;	/* nothing above U+10FFFF */
	if (avail < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < n; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	return n;
}

bool mt_utf8_valid(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t n = s[i] < 0x80 ? 1 : mt_utf8_char_len(s + i, len - i);
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}
