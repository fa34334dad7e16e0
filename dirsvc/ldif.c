/* ldif.c — LDIF (RFC 2849) and DN (RFC 4514, RFC 2247) writing helpers.
 * See ldif.h. Trust boundary: values are administrator input and are made
 * safe here (base64 / DN escaping); callers pass them unchanged. */
#include "ldif.h"

#include <openssl/evp.h>
#include <string.h>

/* RFC 2849 section 2 (note 8): SAFE-CHAR is %x01-09 / %x0B-0C / %x0E-7F;
 * SAFE-INIT-CHAR also excludes SPACE, ':' and '<'. A trailing space is
 * base64-encoded too, as the RFC recommends, since readers may strip it. */
bool mt_ldif_value_is_safe(const void *value, size_t len)
{
	const unsigned char *v = value;

	if (len == 0)
		return true;
	if (v[0] == ' ' || v[0] == ':' || v[0] == '<' || v[len - 1] == ' ')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (v[i] == '\0' || v[i] == '\n' || v[i] == '\r' || v[i] > 0x7f)
			return false;
	}
	return true;
}

void mt_ldif_append_attr_len(struct mt_buf *out, const char *name,
			     const void *value, size_t len)
{
	mt_buf_append_str(out, name);
	if (mt_ldif_value_is_safe(value, len)) {
		mt_buf_append(out, ": ", 2);
		mt_buf_append(out, value, len);
	} else {
		size_t b64len = 4 * ((len + 2) / 3);

		mt_buf_append(out, ":: ", 3);
		mt_buf_reserve(out, b64len);
		EVP_EncodeBlock((unsigned char *)out->data + out->len, value,
				(int)len);
		out->len += b64len;
	}
	mt_buf_append_char(out, '\n');
}

void mt_ldif_append_attr(struct mt_buf *out, const char *name,
			 const char *value)
{
	mt_ldif_append_attr_len(out, name, value, strlen(value));
}

void mt_dn_append_value(struct mt_buf *out, const char *value)
{
	size_t len = strlen(value);

	for (size_t i = 0; i < len; i++) {
		char c = value[i];

		if (c == '"' || c == '+' || c == ',' || c == ';' || c == '<' ||
		    c == '>' || c == '\\' || (i == 0 && (c == '#' || c == ' ')) ||
		    (i == len - 1 && c == ' '))
			mt_buf_append_char(out, '\\');
		mt_buf_append_char(out, c);
	}
}

bool mt_dn_from_domain(struct mt_buf *out, const char *domain,
		       const char **error_r)
{
	const char *p = domain;

	if (*p == '\0') {
		*error_r = "empty mail domain";
		return false;
	}
	for (;;) {
		size_t n = strcspn(p, ".");

		if (n == 0) {
			*error_r = "mail domain has an empty label";
			return false;
		}
		for (size_t i = 0; i < n; i++) {
			char c = p[i];
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '-')) {
				*error_r = "mail domain has a character other than "
					"a letter, digit, '-' or '.'";
				return false;
			}
		}
		mt_buf_append_str(out, "dc=");
		mt_buf_append(out, p, n);
		if (p[n] == '\0')
			return true;
		mt_buf_append_char(out, ',');
		p += n + 1;
	}
}
