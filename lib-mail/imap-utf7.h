/* imap-utf7.h — IMAP4rev1's modified UTF-7 for mailbox names (RFC 3501
 * 5.1.3), to and from the UTF-8 names the store keeps (RFC 9051 5.1): an
 * IMAP4rev2 or UTF8=ACCEPT session sends and gets names in UTF-8, an
 * IMAP4rev1 one in modified UTF-7, and the server converts at its edge.
 *
 *   printable US-ASCII (0x20-0x7E) but '&' stands for itself; '&' is "&-";
 *   any other run of characters is "&" + their UTF-16BE code units in
 *   modified BASE64 (',' for '/', no '=' padding) + "-".
 *
 * Trust boundary: both directions take untrusted octets (a client's name,
 * a stored name) and check them: the encoder wants well-formed UTF-8 with
 * no control character, the decoder a strict modified UTF-7 (RFC 3501:
 * no encoded printable ASCII, no empty, unterminated or back-to-back
 * shifts, no bits left over, surrogates paired), so that one name has one spelling in each.
 * RFCs: 3501 5.1.3, 2152 (UTF-7), 9051 5.1 and Appendix E, 6855 3. */
#ifndef MT_IMAP_UTF7_H
#define MT_IMAP_UTF7_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* Append the modified UTF-7 spelling of the UTF-8 name; false (out
 * unchanged) if it is not well-formed UTF-8 or holds a control character. */
bool mt_imap_utf7_encode(struct mt_buf *out, const char *utf8, size_t len);

/* Append the UTF-8 name a modified UTF-7 spelling stands for; false (out
 * unchanged) with a static reason if it is not strict modified UTF-7. */
bool mt_imap_utf7_decode(struct mt_buf *out, const char *utf7, size_t len,
			 const char **error_r);

#endif
