/* xtext.c — RFC 3461 section 4 xtext: check, decode, encode (see
 * xtext.h).
 *
 * Trust boundary: client text (ENVID=, ORCPT=) and queue records holding
 * it; every read stays within the NUL-terminated input. RFC 3461 4. */
#include "xtext.h"

#include <string.h>

/* xchar: "any ASCII CHAR between "!" (33) and "~" (126) inclusive, except
 * for "+" and "="" (RFC 3461 4). */
static bool is_xchar(unsigned char c)
{
	return c >= 33 && c <= 126 && c != '+' && c != '=';
}

/* An upper-case hex digit's value, or -1. */
static int hex_upper(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Any hex digit's value (the decoder's leniency), or -1. */
static int hex_any(unsigned char c)
{
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : hex_upper(c);
}

bool mt_xtext_valid(const char *s, size_t max)
{
	size_t len = strlen(s);
	if (len == 0 || len > max)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '+') {
			/* s[i + 1] is NUL at worst, so s[i + 2] is not read
			 * past the end. */
			if (hex_upper((unsigned char)s[i + 1]) < 0 ||
			    hex_upper((unsigned char)s[i + 2]) < 0)
				return false;
			i += 2;
		} else if (!is_xchar(c)) {
			return false;
		}
	}
	return true;
}

void mt_xtext_decode(const char *s, struct mt_buf *out)
{
	for (const char *p = s; *p != '\0'; p++) {
		int hi, lo;
		if (*p == '+' && (hi = hex_any((unsigned char)p[1])) >= 0 &&
		    (lo = hex_any((unsigned char)p[2])) >= 0) {
			mt_buf_append_char(out, (char)(hi * 16 + lo));
			p += 2;
		} else {
			mt_buf_append_char(out, *p);
		}
	}
}

void mt_xtext_encode(const void *data, size_t len, struct mt_buf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		if (is_xchar(p[i])) {
			mt_buf_append_char(out, (char)p[i]);
		} else {
			char enc[3] = { '+', hex[p[i] >> 4], hex[p[i] & 15] };
			mt_buf_append(out, enc, sizeof(enc));
		}
	}
}

bool mt_xtext_printable(const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return false;
	return true;
}
