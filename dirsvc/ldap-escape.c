/* ldap-escape.c — checking client values and escaping them for LDAP search
 * filters (see ldap-escape.h).
 * Trust boundary: all input is untrusted client data.
 * RFCs: 4515 section 3, 3629 section 4 (UTF-8 syntax). */
#include "ldap-escape.h"

#include <string.h>

/* RFC 3629 section 4, UTF8-char: the second byte's range depends on the
 * first so that overlong forms, surrogates (U+D800..DFFF) and code points
 * above U+10FFFF are refused. */
bool mt_utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		unsigned char lo = 0x80, hi = 0xbf;
		size_t n;

		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			if (c == 0xe0)
				lo = 0xa0;	/* no overlong 3-byte forms */
			else if (c == 0xed)
				hi = 0x9f;	/* no surrogates */
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			if (c == 0xf0)
				lo = 0x90;	/* no overlong 4-byte forms */
			else if (c == 0xf4)
				hi = 0x8f;	/* nothing above U+10FFFF */
		} else {
			return false;	/* 0x80..0xc1, 0xf5..0xff */
		}
		if (len - i <= n)
			return false;	/* truncated sequence */
		if (s[i + 1] < lo || s[i + 1] > hi)
			return false;
		for (size_t k = 2; k <= n; k++) {
			if (s[i + k] < 0x80 || s[i + k] > 0xbf)
				return false;
		}
		i += n + 1;
	}
	return true;
}

bool mt_ldap_value_check(const char *value, size_t max_len,
			 const char **error_r)
{
	size_t len = strlen(value);

	if (len == 0) {
		*error_r = "empty value";
		return false;
	}
	if (len > max_len) {
		*error_r = "value too long";
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		if (c < 0x20 || c == 0x7f) {
			*error_r = "value contains a control character";
			return false;
		}
	}
	if (!mt_utf8_valid((const unsigned char *)value, len)) {
		*error_r = "value is not valid UTF-8";
		return false;
	}
	return true;
}

void mt_ldap_filter_escape(struct mt_buf *out, const char *value)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = value;

	/* Copy runs of plain bytes at once; escape the rest. */
	for (const char *p = value; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;
		if (c != '*' && c != '(' && c != ')' && c != '\\' &&
		    c >= 0x20 && c != 0x7f)
			continue;
		mt_buf_append(out, run, (size_t)(p - run));
		char esc[3] = { '\\', hex[c >> 4], hex[c & 15] };
		mt_buf_append(out, esc, sizeof(esc));
		run = p + 1;
	}
	mt_buf_append_str(out, run);
}
