/* imap-write.h — the one writer of IMAP strings in server responses, for
 * every tier that answers IMAP clients (the store's IMAP4rev2 server, the
 * MMP's IMAP login front): each string goes out as an atom, a quoted
 * string or a literal, whichever the grammar allows for its octets and
 * the session has enabled, so that no value (a header field in an
 * ENVELOPE, a mailbox name in LIST, a message part) can break a response's
 * syntax.
 *
 *   string   quoted ("..." with '"' and '\\' escaped) when every octet is a
 *            TEXT-CHAR (%x01-7F but CR and LF) — or, with
 *            MT_IMAP_WRITE_UTF8, well-formed UTF-8 beyond it (RFC 9051's
 *            QUOTED-CHAR takes UTF8-2/3/4; an IMAP4rev1 client must have
 *            enabled UTF8=ACCEPT, RFC 6855 3) — and it is at most
 *            MT_IMAP_QUOTED_MAX octets; else a literal "{n}\r\n" and the
 *            octets.
 *   nstring  NIL for a NULL value, else a string.
 *   astring  an atom when every octet is an ASTRING-CHAR other than '['
 *            (FETCH-section readers take it for a section) and it is not
 *            empty, else a string.
 *   literal  a NUL octet cannot be in a literal (CHAR8 is %x01-FF): it is
 *            written as 0x80, the length unchanged, as Dovecot does,
 *            unless MT_IMAP_WRITE_BINARY allows a literal8 "~{n}\r\n"
 *            (RFC 3516 / RFC 9051 BINARY[] responses), which is used only
 *            when the value holds a NUL.
 *
 * Trust boundary: the values are untrusted octets (message headers,
 * client-chosen names) of a given length; the output is always
 * syntactically one IMAP string. Pure functions over an mt_buf.
 * RFCs: 9051 4.1-4.5 and 9 (atom, ASTRING-CHAR, quoted, QUOTED-CHAR,
 * literal, literal8, nstring), 3501 9 (IMAP4rev1: 7-bit quoted only),
 * 6855 3 (UTF8=ACCEPT), 3516 4.2 (literal8). */
#ifndef MT_IMAP_WRITE_H
#define MT_IMAP_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Longest value written as a quoted string; longer ones are literals. */
#define MT_IMAP_QUOTED_MAX 1024

/* Flags of the session the response is for. */
#define MT_IMAP_WRITE_UTF8 0x1u		/* IMAP4rev2 or UTF8=ACCEPT enabled */
#define MT_IMAP_WRITE_BINARY 0x2u	/* a literal8 may carry NULs */

void mt_imap_write_string(struct mt_buf *out, const void *value, size_t len,
			  unsigned int flags);
void mt_imap_write_nstring(struct mt_buf *out, const void *value, size_t len,
			   unsigned int flags);
void mt_imap_write_astring(struct mt_buf *out, const void *value, size_t len,
			   unsigned int flags);

/* Just a literal's announcement, "{size}\r\n" or with binary "~{size}\r\n",
 * for a value the caller streams itself (a FETCH BODY[] of a large
 * message): it must then send exactly size octets, none of them NUL unless
 * binary. */
void mt_imap_write_literal_prefix(struct mt_buf *out, uint64_t size, bool binary);

/* Copy len octets into out as a literal's contents: NUL becomes 0x80 (for
 * the caller streaming after mt_imap_write_literal_prefix(.., false)). */
void mt_imap_write_literal_data(struct mt_buf *out, const void *data, size_t len);

/* data[0..len) as a literal, announcement and octets, whatever they are:
 * with binary (a FETCH BINARY[] response) a literal8 when they hold a NUL
 * and an ordinary literal when not (RFC 3516 4.3); else an ordinary
 * literal, each NUL 0x80. */
void mt_imap_write_literal(struct mt_buf *out, const void *data, size_t len, bool binary);

/* Sorted, distinct numbers (message numbers, UIDs) as a sequence set:
 * runs joined ("1:3,7"); nothing for none. */
void mt_imap_write_seqset(struct mt_buf *out, const uint32_t *numbers, size_t count);

#endif
