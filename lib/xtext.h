/* xtext.h — RFC 3461 section 4 "xtext", the encoding of the DSN
 * parameters ENVID and ORCPT on the SMTP wire: a printable US-ASCII
 * character other than '+' and '=' stands for itself, and any octet may
 * be written "+XX" (two upper-case hex digits).
 *
 * Trust boundary: the values are a client's (MAIL ENVID=, RCPT ORCPT=) or
 * come from the queue, which holds them as the client sent them. The
 * checker is strict (what we accept); the decoder also takes lower-case
 * hex, which older releases accepted and may have queued. A decoded value
 * can hold any octet, NUL, CR and LF included: a caller writing it into a
 * header line must check it (mt_xtext_printable). Pure functions, no
 * state; the encoder's output is always valid xtext.
 * RFC 3461 4 (xtext), 4.2 (ORCPT), 4.4 (ENVID); RFC 3464 2.2.1, 2.3.2
 * (the decoded values in a report). */
#ifndef MT_XTEXT_H
#define MT_XTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* s is 1..max octets of valid xtext:
 *   xtext = *( xchar / hexchar ), xchar = %d33-42 / %d44-60 / %d62-126,
 *   hexchar = "+" 2(%x30-39 / %x41-46). */
bool mt_xtext_valid(const char *s, size_t max);
/* Append the octets s stands for to out (out->len tells how many: a
 * "+00" is a NUL). A '+' without two hex digits is copied as is. */
void mt_xtext_decode(const char *s, struct mt_buf *out);
/* Append data[0..len) as xtext: xchars as themselves, every other octet
 * as "+XX". */
void mt_xtext_encode(const void *data, size_t len, struct mt_buf *out);
/* data[0..len) is printable US-ASCII (SP through '~') — what a header
 * field may hold as it is. */
bool mt_xtext_printable(const void *data, size_t len);

#endif
