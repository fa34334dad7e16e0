/* imap-utf7.c — modified UTF-7 mailbox names (see imap-utf7.h). */
#include "imap-utf7.h"
#include "utf8.h"

#include <stdint.h>

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+,";

/* Undo what a failed conversion appended (the buffer stays NUL-terminated). */
static void truncate(struct mt_buf *out, size_t len)
{
	out->len = len;
	if (out->data != NULL)
		out->data[len] = '\0';
}

static bool printable(unsigned char c)
{
	return c >= 0x20 && c <= 0x7e;
}

/* The code point of the well-formed n-octet UTF-8 character at s. */
static uint32_t utf8_decode(const unsigned char *s, size_t n)
{
	if (n == 1)
		return s[0];
	uint32_t cp = s[0] & (0x7fu >> n);
	for (size_t k = 1; k < n; k++)
		cp = cp << 6 | (s[k] & 0x3fu);
	return cp;
}

static void utf8_put(struct mt_buf *out, uint32_t cp)
{
	char b[4];
	size_t n;
	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	mt_buf_append(out, b, n);
}

bool mt_imap_utf7_encode(struct mt_buf *out, const char *utf8, size_t len)
{
	const unsigned char *s = (const unsigned char *)utf8;
	const size_t start = out->len;
	size_t i = 0;
	while (i < len) {
		if (printable(s[i])) {
			mt_buf_append(out, s[i] == '&' ? "&-" : (const char *)s + i,
				      s[i] == '&' ? 2 : 1);
			i++;
			continue;
		}
		/* One shifted run: every character up to the next printable. */
		mt_buf_append_char(out, '&');
		uint32_t bits = 0;
		unsigned int nbits = 0;
		while (i < len && !printable(s[i])) {
			size_t n = mt_utf8_char_len(s + i, len - i);
			if (n == 0 || s[i] < 0x20 || s[i] == 0x7f ||
			    (s[i] == 0xc2 && s[i + 1] < 0xa0)) {
				truncate(out, start);	/* C0, DEL, C1, not UTF-8 */
				return false;
			}
			uint32_t cp = utf8_decode(s + i, n);
			i += n;
			uint16_t units[2];
			unsigned int count = 1;
			if (cp >= 0x10000) {
				cp -= 0x10000;
				units[0] = (uint16_t)(0xd800 | cp >> 10);
				units[1] = (uint16_t)(0xdc00 | (cp & 0x3ff));
				count = 2;
			} else {
				units[0] = (uint16_t)cp;
			}
			for (unsigned int u = 0; u < count; u++) {
				bits = bits << 16 | units[u];
				nbits += 16;
				while (nbits >= 6) {
					nbits -= 6;
					mt_buf_append_char(out, b64[bits >> nbits & 0x3f]);
				}
				bits &= (1u << nbits) - 1;
			}
		}
		if (nbits > 0)
			mt_buf_append_char(out, b64[bits << (6 - nbits) & 0x3f]);
		mt_buf_append_char(out, '-');
	}
	return true;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == ',' ? 63 : -1;
}

static bool fail(struct mt_buf *out, size_t start, const char **error_r,
		 const char *why)
{
	truncate(out, start);
	*error_r = why;
	return false;
}

bool mt_imap_utf7_decode(struct mt_buf *out, const char *utf7, size_t len,
			 const char **error_r)
{
	const unsigned char *s = (const unsigned char *)utf7;
	const size_t start = out->len;
	size_t i = 0, shift_end = SIZE_MAX;	/* just after the last shift */
	while (i < len) {
		if (!printable(s[i]))
			return fail(out, start, error_r, "mailbox name is not 7-bit "
				    "printable (modified UTF-7, RFC 3501 5.1.3)");
		if (s[i] != '&') {
			mt_buf_append_char(out, (char)s[i++]);
			continue;
		}
		i++;
		if (i < len && s[i] == '-') {
			mt_buf_append_char(out, '&');
			i++;
			continue;
		}
		if (i - 1 == shift_end)
			return fail(out, start, error_r, "two modified UTF-7 shifts "
				    "back to back (one is the spelling)");
		uint32_t bits = 0, high = 0;
		unsigned int nbits = 0, chars = 0;
		while (i < len && s[i] != '-') {
			int v = b64_value(s[i++]);
			if (v < 0)
				return fail(out, start, error_r, "bad character in "
					    "a modified UTF-7 shift");
			bits = bits << 6 | (uint32_t)v;
			nbits += 6;
			if (nbits < 16)
				continue;
			nbits -= 16;
			uint32_t unit = bits >> nbits & 0xffff;
			bits &= (1u << nbits) - 1;
			if (high != 0) {
				if (unit < 0xdc00 || unit > 0xdfff)
					return fail(out, start, error_r,
						    "unpaired UTF-16 surrogate");
				utf8_put(out, 0x10000 + ((high - 0xd800) << 10) +
					 (unit - 0xdc00));
				high = 0;
			} else if (unit >= 0xd800 && unit <= 0xdbff) {
				high = unit;
			} else if ((unit >= 0xdc00 && unit <= 0xdfff) ||
				   (unit >= 0x20 && unit <= 0x7e)) {
				return fail(out, start, error_r, unit >= 0xdc00 ?
					    "unpaired UTF-16 surrogate" :
					    "printable US-ASCII encoded in modified UTF-7");
			} else if (unit < 0x20 || (unit >= 0x7f && unit < 0xa0)) {
				return fail(out, start, error_r,
					    "control character in a mailbox name");
			} else {
				utf8_put(out, unit);
			}
			chars++;
		}
		if (i >= len)
			return fail(out, start, error_r, "unterminated modified "
				    "UTF-7 shift (no '-')");
		i++;	/* the '-' */
		shift_end = i;
		if (chars == 0 || high != 0 || nbits >= 6 || bits != 0)
			return fail(out, start, error_r, chars == 0 ?
				    "empty modified UTF-7 shift" :
				    "modified UTF-7 shift ends mid-character");
	}
	return true;
}
