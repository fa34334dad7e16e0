/* mime-decode.c — lenient base64 and quoted-printable decoding for IMAP
 * BINARY (see mime-decode.h). Trust boundary: untrusted body octets,
 * read within len; output bounded by the input. RFCs: 2045 6.7, 6.8. */
#include "mime-decode.h"

#include <stdbool.h>

static int base64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

void mt_mime_decode_base64(struct mt_buf *out, const char *in, size_t len)
{
	unsigned int quantum = 0, bits = 0;
	mt_buf_reserve(out, len / 4 * 3 + 3);
	for (size_t i = 0; i < len && in[i] != '='; i++) {
		int v = base64_value((unsigned char)in[i]);
		if (v < 0)
			continue;
		quantum = (quantum << 6) | (unsigned int)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			mt_buf_append_char(out, (char)((quantum >> bits) & 0xff));
		}
	}
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

void mt_mime_decode_qp(struct mt_buf *out, const char *in, size_t len)
{
	mt_buf_reserve(out, len);
	size_t i = 0;
	while (i < len) {
		/* One line: [i, end) without its line end. */
		size_t end = i;
		while (end < len && in[end] != '\n')
			end++;
		bool has_break = end < len;
		size_t next = has_break ? end + 1 : end;
		if (end > i && in[end - 1] == '\r' && has_break)
			end--;
		size_t content = end;
		while (content > i && (in[content - 1] == ' ' || in[content - 1] == '\t'))
			content--;	/* rule 3: trailing white space is not data */
		bool soft = content > i && in[content - 1] == '=';
		if (soft)
			content--;
		for (size_t j = i; j < content; j++) {
			int hi, lo;
			if (in[j] == '=' && j + 2 < content &&
			    (hi = hex_value(in[j + 1])) >= 0 && (lo = hex_value(in[j + 2])) >= 0) {
				mt_buf_append_char(out, (char)(hi << 4 | lo));
				j += 2;
			} else
				mt_buf_append_char(out, in[j]);
		}
		if (has_break && !soft)
			mt_buf_append(out, "\r\n", 2);
		i = next;
	}
}
