/* utf8.h — the one check of well-formed UTF-8 (RFC 3629 section 4), for
 * every place a client's octets must be UTF-8: SASL PLAIN fields, SMTPUTF8
 * addresses, directory filter values, IMAP mailbox names and UTF8=ACCEPT
 * strings.
 *
 * Trust boundary: the input is untrusted client data of a given length
 * (NUL is a valid one-octet character here; callers that refuse NUL check
 * it themselves). Pure functions, no state.
 * RFC 3629 section 4 (UTF8-char: no overlong forms, no surrogates
 * U+D800..DFFF, nothing above U+10FFFF). */
#ifndef MT_UTF8_H
#define MT_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length (1 to 4) of the well-formed UTF-8 character at s, of which avail
 * octets are there; 0 if there is none (bad lead octet, bad continuation,
 * overlong, surrogate, above U+10FFFF, or cut off by avail). */
size_t mt_utf8_char_len(const unsigned char *s, size_t avail);

/* True if the len octets at s are well-formed UTF-8. */
bool mt_utf8_valid(const unsigned char *s, size_t len);

#endif
