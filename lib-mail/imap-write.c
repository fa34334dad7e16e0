/* imap-write.c — IMAP strings in server responses (see imap-write.h). */
#include "imap-write.h"
#include "imap-parse.h"
#include "utf8.h"

#include <string.h>

/* ASTRING-CHAR, less '[': a legal atom octet, but readers that take
 * FETCH sections as atoms (ours, imap-parse.c) read it as a section's
 * start, so a value with one is quoted. */
static bool is_astring_char(unsigned char c)
{
	return c == ']' || (c != '[' && mt_imap_is_atom_char(c));
}

/* Quotable: TEXT-CHARs, and (utf8) well-formed UTF-8 characters. */
static bool quotable(const unsigned char *s, size_t len, unsigned int flags)
{
	if (len > MT_IMAP_QUOTED_MAX)
		return false;
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		if (c == 0 || c == '\r' || c == '\n')
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t n = (flags & MT_IMAP_WRITE_UTF8) != 0 ?
			mt_utf8_char_len(s + i, len - i) : 0;
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

void mt_imap_write_literal_prefix(struct mt_buf *out, uint64_t size, bool binary)
{
	mt_buf_appendf(out, "%s{%llu}\r\n", binary ? "~" : "",
		       (unsigned long long)size);
}

void mt_imap_write_literal_data(struct mt_buf *out, const void *data, size_t len)
{
	const unsigned char *s = data;
	for (;;) {
		const unsigned char *nul = memchr(s, 0, len);
		if (nul == NULL)
			break;
		mt_buf_append(out, s, (size_t)(nul - s));
		mt_buf_append_char(out, (char)0x80);
		len -= (size_t)(nul - s) + 1;
		s = nul + 1;
	}
	mt_buf_append(out, s, len);
}

void mt_imap_write_literal(struct mt_buf *out, const void *data, size_t len, bool binary)
{
	const bool literal8 = binary && memchr(data, 0, len) != NULL;
	mt_imap_write_literal_prefix(out, len, literal8);
	if (literal8)
		mt_buf_append(out, data, len);
	else
		mt_imap_write_literal_data(out, data, len);
}

void mt_imap_write_string(struct mt_buf *out, const void *value, size_t len,
			  unsigned int flags)
{
	const unsigned char *s = value;
	if (quotable(s, len, flags)) {
		mt_buf_reserve(out, len + 2);
		mt_buf_append_char(out, '"');
		size_t run = 0;
		for (size_t i = 0; i < len; i++) {
			if (s[i] != '"' && s[i] != '\\')
				continue;
			mt_buf_append(out, s + run, i - run);
			mt_buf_append_char(out, '\\');
			run = i;
		}
		mt_buf_append(out, s + run, len - run);
		mt_buf_append_char(out, '"');
		return;
	}
	mt_imap_write_literal(out, s, len, (flags & MT_IMAP_WRITE_BINARY) != 0);
}

void mt_imap_write_nstring(struct mt_buf *out, const void *value, size_t len,
			   unsigned int flags)
{
	if (value == NULL)
		mt_buf_append_str(out, "NIL");
	else
		mt_imap_write_string(out, value, len, flags);
}

void mt_imap_write_astring(struct mt_buf *out, const void *value, size_t len,
			   unsigned int flags)
{
	const unsigned char *s = value;
	size_t i = 0;
	while (i < len && is_astring_char(s[i]))
		i++;
	if (len > 0 && i == len && len <= MT_IMAP_QUOTED_MAX)
		mt_buf_append(out, s, len);
	else
		mt_imap_write_string(out, s, len, flags);
}

void mt_imap_write_seqset(struct mt_buf *out, const uint32_t *n, size_t count)
{
	for (size_t i = 0; i < count;) {
		size_t j = i;
		while (j + 1 < count && n[j + 1] == n[j] + 1)
			j++;
		mt_buf_appendf(out, "%s%u", i > 0 ? "," : "", n[i]);
		if (j > i)
			mt_buf_appendf(out, ":%u", n[j]);
		i = j + 1;
	}
}
