/* ldap-escape.h — checking and escaping client-supplied values before they
 * go into an LDAP search filter (RFC 4515).
 *
 * Every value a client controls (a recipient address from RCPT TO, a user
 * name from POP3 USER/AUTH) passes through mt_ldap_value_check() and then
 * mt_ldap_filter_escape() before it is placed in a filter, so that no input
 * can change a filter's structure: "a*)(uid=*" stays one assertion value.
 * Trust boundary: the input is untrusted client data; the output is a
 * filter fragment that is safe to place between "(attr=" and ")".
 * RFCs: 4515 section 3 (string representation of search filters), 3629
 * (UTF-8), 5321 section 4.5.3.1.3 (a path is at most 256 octets, so an
 * address at most 254). */
#ifndef MT_LDAP_ESCAPE_H
#define MT_LDAP_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* Longest address or user name accepted, in octets (RFC 5321 path limit
 * less the angle brackets). */
#define MT_LDAP_VALUE_MAX 254

/* Check a client-supplied value: not empty, at most max_len octets,
 * well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF) and no control characters (C0, DEL). false with a static
 * reason otherwise. */
bool mt_ldap_value_check(const char *value, size_t max_len,
			 const char **error_r);

/* Append value as an RFC 4515 assertion value: '*', '(', ')', '\\' and NUL
 * become \2a \28 \29 \5c \00 (section 3: they are outside UTF1SUBSET);
 * other control bytes are escaped too, as defence in depth. Everything else,
 * UTF-8 included, is copied as it is. */
void mt_ldap_filter_escape(struct mt_buf *out, const char *value);

#endif
