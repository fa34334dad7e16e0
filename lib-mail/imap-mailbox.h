/* imap-mailbox.h — IMAP mailbox names and LIST patterns, the protocol's
 * rules once for every IMAP server tier: which names a client may create
 * (RFC 9051 5.1), their one normal form (INBOX in any case is "INBOX"),
 * and the LIST wildcards '*' and '%' (RFC 9051 6.3.9).
 *
 * Names here are UTF-8 (RFC 9051 5.1; an IMAP4rev1 session's modified
 * UTF-7 is converted at its edge, imap-utf7.h) with '/' as the one
 * hierarchy delimiter.
 *
 * Trust boundary: names and patterns are a client's octets (CREATE,
 * RENAME, LIST, SELECT, ...). A name that passes the check has no control
 * octet, no wildcard, no empty level, is well-formed UTF-8 and within the
 * configured length and depth, so it can be a database key and be written
 * back in any response. Pattern matching costs at most
 * O(name length x pattern length), the pattern bounded by
 * MT_IMAP_PATTERN_MAX: no backtracking a client can make exponential.
 * RFCs: 9051 5.1 (names, INBOX), 5.1.1 (hierarchy), 6.3.9 (LIST reference
 * and wildcards), 3501 5.1 (the same for IMAP4rev1). */
#ifndef MT_IMAP_MAILBOX_H
#define MT_IMAP_MAILBOX_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define MT_IMAP_DELIMITER '/'
/* Longest LIST pattern (after the reference is joined) matched. */
#define MT_IMAP_PATTERN_MAX 1024

struct mt_imap_name_limits {
	size_t length_max;		/* octets of the whole name (UTF-8) */
	unsigned int depth_max;		/* levels: "a/b/c" has 3 */
};

/* Check a client's mailbox name and append its normal form to out (the
 * first level "INBOX" in upper case when it is INBOX in any case). false
 * with a static reason if it is refused; out is then unchanged. */
bool mt_imap_name_check(struct mt_buf *out, const char *name, size_t len,
			const struct mt_imap_name_limits *limits,
			const char **error_r);

/* True if name is INBOX itself (any case). */
bool mt_imap_name_is_inbox(const char *name, size_t len);

/* LIST's reference and pattern as one pattern (RFC 9051 6.3.9): the
 * pattern alone if the reference is empty or the pattern starts with the
 * delimiter, else the two concatenated; its first level INBOX in upper
 * case when it is INBOX in any case. false if longer than
 * MT_IMAP_PATTERN_MAX. */
bool mt_imap_pattern_join(struct mt_buf *out, const char *reference,
			  size_t reference_len, const char *pattern,
			  size_t pattern_len);

/* Does the (normal form) name match the joined pattern? '*' matches any
 * octets, '%' any but the delimiter; all else matches itself. */
bool mt_imap_pattern_match(const char *pattern, size_t pattern_len,
			   const char *name, size_t name_len);

#endif
