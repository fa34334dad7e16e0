/* ldif.h — writing LDIF (RFC 2849) records and RFC 4514 DN values.
 *
 * Used by provisioning (user entries) and the slapd configuration writer
 * (base entries). Writing only; nothing here parses LDIF.
 * Trust boundary: attribute values may come from an administrator's input
 * (addresses, names); any value that is not an LDIF SAFE-STRING is written
 * base64-encoded, so no value can break out of its line or start a new
 * attribute or record. */
#ifndef MT_LDIF_H
#define MT_LDIF_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* True if value is an RFC 2849 SAFE-STRING that may follow "name: "
 * as it is; false if it must be written base64-encoded. */
bool mt_ldif_value_is_safe(const void *value, size_t len);

/* Append "name: value\n", or "name:: base64\n" when value is not an RFC 2849
 * SAFE-STRING (NUL/CR/LF/non-ASCII, leading space/colon/'<', trailing
 * space). Lines are not folded; slapadd and ldapadd accept long lines. */
void mt_ldif_append_attr(struct mt_buf *out, const char *name,
			 const char *value);
/* The same for a value of len bytes (may contain NUL). */
void mt_ldif_append_attr_len(struct mt_buf *out, const char *name,
			     const void *value, size_t len);

/* Append value escaped as an RFC 4514 section 2.4 attribute value:
 * '"', '+', ',', ';', '<', '>', '\\', a leading '#' or space, a trailing
 * space get a backslash (a C string holds no NUL to escape). */
void mt_dn_append_value(struct mt_buf *out, const char *value);

/* Append the DN "dc=a,dc=b,..." for the DNS domain "a.b..." (RFC 2247).
 * False if the domain is empty, has an empty label or characters other
 * than letters, digits and '-'. */
bool mt_dn_from_domain(struct mt_buf *out, const char *domain,
		       const char **error_r);

#endif
