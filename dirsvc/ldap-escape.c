/* ldap-escape.c — checking client values and escaping them for LDAP search
 * filters (see ldap-escape.h).
 * Trust boundary: all input is untrusted client data.
 * RFCs: 4515 section 3, 3629 section 4 (UTF-8 syntax). */
#include "ldap-escape.h"
#include "utf8.h"

#include <string.h>

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
