/* mime-address.h — a message's address header fields (From, Sender,
 * Reply-To, To, Cc, Bcc) as the address lists of an IMAP ENVELOPE, for
 * the store's FETCH ENVELOPE, and the same addresses one by one for
 * SEARCH FROM / TO / CC / BCC, which match the envelope's addresses
 * (RFC 9051 6.4.4), so that the two never read a field differently.
 *
 * Each address is written "(name adl mailbox host)", four nstrings through
 * imap-write (so no octet can break the response), the addresses one
 * after another inside "(" ")", or NIL when the field holds none:
 *   name     the display-name phrase as written: quoted strings unquoted,
 *            CFWS between words one space, encoded-words kept raw (RFC
 *            2047 decoding is the client's). Without a phrase, a comment
 *            in or after an addr-spec ("user@host (Joe)") is the name,
 *            unescaped, its whitespace runs one space; else NIL.
 *   adl      the obsolete source route "<@a,@b:user@host>" as "@a,@b",
 *            else NIL.
 *   mailbox  the local part as written, CFWS around its dots dropped (a
 *            quoted one keeps its quotes).
 *   host     the domain as written (a "[1.2.3.4]" literal too).
 * A missing local part or domain ("<user>", "undisclosed-recipients",
 * "@x") is written as "", never NIL: RFC 9051 7.5.2 reserves a NIL host
 * for group syntax, so NIL would turn a broken address into a group
 * marker. (Dovecot's parser gives "" too; its envelope writer then fills
 * in "MISSING_MAILBOX" / "MISSING_DOMAIN", which we do not invent.)
 * A group "G: a@x;" is (NIL NIL "G" NIL), its members, then
 * (NIL NIL NIL NIL); a group left open ends with the input.
 *
 * Trust boundary: the value is a message's header field body (unfolded),
 * untrusted octets of a given length, not NUL-terminated: any octet (NUL,
 * 8-bit, CR, LF) may appear, and quotes, comments, literals and angle
 * brackets may be unbalanced. Malformed parts are skipped up to the next
 * ',' or ';'; empty items are skipped; the output is always NIL or a
 * well-formed list, with groups balanced. Work is linear in len, and at
 * most MT_MIME_ADDRESSES_MAX address structures (group markers included)
 * are written (or visited). Pure functions: the writer over an mt_buf,
 * the visitor over the caller's callback.
 *
 * RFCs: 5322 3.4 (address-list, mailbox, name-addr, angle-addr, group,
 * addr-spec, display-name) and 3.2.2-3.2.4 (CFWS, comments, quoted
 * strings), 5322 4.4 (obsolete syntax: obs-route, obs-domain-list,
 * obs-local-part, obs-phrase), 9051 7.5.2 (ENVELOPE address structure,
 * group markers), 9051 6.4.4 (SEARCH's address keys), 2047
 * (encoded-words: not decoded). */
#ifndef MT_MIME_ADDRESS_H
#define MT_MIME_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* Most address structures written for one header field. */
#define MT_MIME_ADDRESSES_MAX 1000

/* Write the RFC 5322 address list in value[0..len) -- an unfolded header
 * field body of From, Sender, Reply-To, To, Cc or Bcc, untrusted octets --
 * as an IMAP ENVELOPE address list (RFC 9051 7.5.2, env-from etc.):
 * "(" 1*address ")" or NIL when it holds no address. flags are
 * imap-write's MT_IMAP_WRITE_* flags, passed through to it. */
void mt_mime_write_addresses(struct mt_buf *out, const char *value, size_t len,
			     unsigned int flags);

/* One address structure as the ENVELOPE has it, each field NULL for NIL
 * (else len octets, not NUL-terminated): a group's start has a NULL host
 * and the group's name as mailbox, its end a NULL mailbox and host. */
struct mt_mime_address {
	const char *name, *adl, *mailbox, *host;
	size_t name_len, adl_len, mailbox_len, host_len;
};

/* Visit the address structures of the list in value[0..len) in turn,
 * exactly those mt_mime_write_addresses writes (the same parse, the same
 * limit); the fields live until visit returns. Stops at the first visit
 * that returns true, and returns whether one did. */
bool mt_mime_addresses_each(const char *value, size_t len,
			    bool (*visit)(const struct mt_mime_address *address,
					  void *context),
			    void *context);

#endif
