/* mime-decode.h — a MIME part's body decoded from its
 * Content-Transfer-Encoding, as IMAP's BINARY[part] and BINARY.SIZE
 * (RFC 3516, RFC 9051 6.4.5) send it: base64 and quoted-printable read
 * leniently, as mail readers read them (what real mail carries: long
 * lines, stray octets, missing padding), the identity encodings as they
 * are.
 *
 *   base64            octets outside the alphabet (line breaks, spaces,
 *                     junk) are skipped; '=' ends the data; a last partial
 *                     quantum gives the whole octets it holds.
 *   quoted-printable  "=" hex hex is the octet (either case); "=" before a
 *                     line end (optionally after spaces) is a soft break;
 *                     any other "=" is kept as it is; trailing white space
 *                     before a line end is dropped (RFC 2045 6.7 rule 3);
 *                     line ends come out as CRLF.
 *
 * Trust boundary: the body octets are untrusted (any sender); the output
 * is at most as long as the input (quoted-printable: plus one octet per
 * LF-only line end), and the decoders are pure functions over an mt_buf.
 * RFCs: 2045 6.7 (quoted-printable), 6.8 (base64). */
#ifndef MT_MIME_DECODE_H
#define MT_MIME_DECODE_H

#include <stddef.h>

#include "buf.h"

void mt_mime_decode_base64(struct mt_buf *out, const char *in, size_t len);
void mt_mime_decode_qp(struct mt_buf *out, const char *in, size_t len);

#endif
