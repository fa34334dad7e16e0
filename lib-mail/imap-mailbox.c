/* imap-mailbox.c — mailbox names and LIST patterns (see imap-mailbox.h). */
#include "imap-mailbox.h"
#include "utf8.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/* Length of a first level that is INBOX in any case, else 0. */
static size_t inbox_prefix(const char *s, size_t len)
{
	if (len < 5 || strncasecmp(s, "INBOX", 5) != 0)
		return 0;
	return len == 5 || s[5] == MT_IMAP_DELIMITER ? 5 : 0;
}

bool mt_imap_name_is_inbox(const char *name, size_t len)
{
	return len == 5 && inbox_prefix(name, len) == 5;
}

bool mt_imap_name_check(struct mt_buf *out, const char *name, size_t len,
			const struct mt_imap_name_limits *limits,
			const char **error_r)
{
	const unsigned char *s = (const unsigned char *)name;
	if (len == 0) {
		*error_r = "empty mailbox name";
		return false;
	}
	if (len > limits->length_max) {
		*error_r = "mailbox name too long";
		return false;
	}
	unsigned int levels = 1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < 0x20 || s[i] == 0x7f) {
			*error_r = "control character in mailbox name";
			return false;
		}
		if (s[i] == '%' || s[i] == '*') {
			*error_r = "mailbox name with a LIST wildcard ('%' or '*')";
			return false;
		}
		if (s[i] != MT_IMAP_DELIMITER)
			continue;
		if (i == 0 || i == len - 1 || s[i + 1] == MT_IMAP_DELIMITER) {
			*error_r = "mailbox name with an empty level "
				"(a leading, trailing or doubled '/')";
			return false;
		}
		levels++;
	}
	if (levels > limits->depth_max) {
		*error_r = "mailbox name too deep";
		return false;
	}
	if (!mt_utf8_valid(s, len)) {
		*error_r = "mailbox name is not UTF-8";
		return false;
	}
	size_t inbox = inbox_prefix(name, len);
	if (inbox > 0)
		mt_buf_append_str(out, "INBOX");
	mt_buf_append(out, name + inbox, len - inbox);
	return true;
}

bool mt_imap_pattern_join(struct mt_buf *out, const char *reference,
			  size_t reference_len, const char *pattern,
			  size_t pattern_len)
{
	if (pattern_len > 0 && pattern[0] == MT_IMAP_DELIMITER)
		reference_len = 0;
	if (reference_len + pattern_len > MT_IMAP_PATTERN_MAX)
		return false;
	const size_t start = out->len;
	mt_buf_append(out, reference, reference_len);
	mt_buf_append(out, pattern, pattern_len);
	const size_t len = out->len - start;
	if (inbox_prefix(out->data + start, len) > 0)
		memcpy(out->data + start, "INBOX", 5);
	return true;
}

/* A Thompson-style simulation over the pattern's positions: live[j] says
 * the first j pattern octets can match the name read so far. */
bool mt_imap_pattern_match(const char *pattern, size_t pattern_len,
			   const char *name, size_t name_len)
{
	if (pattern_len > MT_IMAP_PATTERN_MAX)
		return false;
	unsigned char live[MT_IMAP_PATTERN_MAX + 1], next[MT_IMAP_PATTERN_MAX + 1];
	const size_t m = pattern_len;
	memset(live, 0, m + 1);
	live[0] = 1;
	/* A wildcard may match nothing: reaching it reaches what follows. */
	for (size_t j = 0; j < m; j++)
		if (live[j] && (pattern[j] == '*' || pattern[j] == '%'))
			live[j + 1] = 1;
	for (size_t i = 0; i < name_len; i++) {
		const char c = name[i];
		bool any = false;
		memset(next, 0, m + 1);
		for (size_t j = 0; j < m; j++) {
			if (!live[j])
				continue;
			const char p = pattern[j];
			if (p == '*' || (p == '%' && c != MT_IMAP_DELIMITER))
				next[j] = 1;	/* the wildcard takes c */
			else if (p == c)
				next[j + 1] = 1;
		}
		for (size_t j = 0; j < m; j++)
			if (next[j] && (pattern[j] == '*' || pattern[j] == '%'))
				next[j + 1] = 1;
		for (size_t j = 0; j <= m; j++)
			any |= next[j] != 0;
		if (!any)
			return false;
		memcpy(live, next, m + 1);
	}
	return live[m] != 0;
}
