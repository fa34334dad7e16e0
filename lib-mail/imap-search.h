/* imap-search.h — IMAP SEARCH criteria (RFC 9051 6.4.4): read from a
 * command's arguments into a tree once, then matched against each message
 * by the tier, which hands over what it has (flags, sizes, dates, and —
 * when the tree asks for them — the header and the body). A match that
 * needs the header or the body before it can be decided says so, so the
 * tier reads them only for the messages and the criteria that need them.
 *
 * Every RFC 9051 search key: ALL, ANSWERED, BCC, BEFORE, BODY, CC, DELETED,
 * DRAFT, FLAGGED, FROM, HEADER, KEYWORD, LARGER, NOT, ON, OR, SEEN,
 * SENTBEFORE, SENTON, SENTSINCE, SINCE, SMALLER, SUBJECT, TEXT, TO, UID,
 * UNANSWERED, UNDELETED, UNDRAFT, UNFLAGGED, UNKEYWORD, UNSEEN, a sequence
 * set and a parenthesised list; CONDSTORE's MODSEQ (RFC 7162 3.1.5, its
 * optional flag entry name and type read and, as the store keeps one
 * MODSEQ per message, not told apart); IMAP4rev1's NEW, OLD and RECENT (no message
 * is \Recent here), and CHARSET US-ASCII / UTF-8 (others: BADCHARSET).
 * Strings match as RFC 9051 says: case-insensitive substrings (ASCII case
 * folding; other octets compare as they are), header fields by name with
 * their folded lines joined; FROM, TO, CC and BCC also match an address
 * of the field as the ENVELOPE has it (its name, or "mailbox@host"
 * without the comments and whitespace it may be written with); SENT*
 * compare the Date: field's day, BEFORE / ON / SINCE the INTERNALDATE's
 * day in UTC.
 *
 * Trust boundary: the client's arguments (as imap-parse read them: bounded
 * strings). The tree is bounded in nodes (the arguments' count) and in
 * depth (limits.depth_max, the evaluator's recursion); message data comes
 * from the store and is read within the lengths given. */
#ifndef MT_IMAP_SEARCH_H
#define MT_IMAP_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "imap-parse.h"

enum mt_imap_search_kind {
	MT_IMAP_SEARCH_ALL,
	MT_IMAP_SEARCH_NONE,		/* RECENT, NEW: never here */
	MT_IMAP_SEARCH_AND,		/* a list, or keys side by side */
	MT_IMAP_SEARCH_OR,
	MT_IMAP_SEARCH_NOT,
	MT_IMAP_SEARCH_SEQSET,
	MT_IMAP_SEARCH_UIDSET,
	MT_IMAP_SEARCH_FLAG,		/* system flag bits set */
	MT_IMAP_SEARCH_KEYWORD,
	MT_IMAP_SEARCH_LARGER,
	MT_IMAP_SEARCH_SMALLER,
	MT_IMAP_SEARCH_BEFORE,		/* INTERNALDATE's day */
	MT_IMAP_SEARCH_ON,
	MT_IMAP_SEARCH_SINCE,
	MT_IMAP_SEARCH_SENTBEFORE,	/* the Date: field's day */
	MT_IMAP_SEARCH_SENTON,
	MT_IMAP_SEARCH_SENTSINCE,
	MT_IMAP_SEARCH_HEADER,		/* field name, substring of its value */
	MT_IMAP_SEARCH_ADDRESS,		/* FROM/TO/CC/BCC: of the value or of
					   one of its envelope addresses */
	MT_IMAP_SEARCH_BODY,
	MT_IMAP_SEARCH_TEXT,		/* header or body */
	MT_IMAP_SEARCH_MODSEQ,		/* RFC 7162 3.1.5: MODSEQ >= number */
};

struct mt_imap_search_node {
	enum mt_imap_search_kind kind;
	unsigned int first, count;	/* AND/OR/NOT: children, in nodes */
	uint64_t number;		/* flag bits, size, day (+ 2^31) */
	const char *name;		/* HEADER's field, KEYWORD's keyword */
	const char *value;		/* the substring */
	size_t value_len;
	struct mt_imap_seqset set;	/* SEQSET, UIDSET (ranges in the tree) */
};

struct mt_imap_search_limits {
	unsigned int depth_max;		/* NOT / OR / list nesting */
	unsigned int ranges_max;	/* ranges of all sets together */
};

struct mt_imap_search {
	struct mt_imap_search_node *nodes;
	unsigned int count, root;
	struct mt_imap_seq_range *ranges;
	size_t ranges_used, ranges_max;
	bool needs_header, needs_body;
	bool uses_saved;		/* "$": refused (no SEARCHRES) */
	bool uses_modseq;		/* a MODSEQ key: the answer names a
					   MODSEQ (mt_imap_search_write_*) */
};

/* Read the criteria from args[0..count) (after SEARCH's RETURN, if any):
 * an optional CHARSET, then keys, ANDed. The tree points into the
 * arguments' strings (keep the parser until done). false with a reason
 * for BAD, or with *badcharset_r set for NO [BADCHARSET]. */
bool mt_imap_search_parse(struct mt_imap_search *search,
			  const struct mt_imap_arg *args, size_t count,
			  const struct mt_imap_search_limits *limits,
			  bool *badcharset_r, const char **error_r);
void mt_imap_search_free(struct mt_imap_search *search);

/* What the tier knows of one message. header/body are NULL until read
 * (needs_header / needs_body say whether they ever are). */
struct mt_imap_search_msg {
	uint32_t seq, uid;		/* seq 1..; largest_* for '*' */
	uint32_t largest_seq, largest_uid;
	uint32_t flags;			/* the system flags as bits: */
	uint64_t size;
	int64_t internaldate;		/* Unix time */
	uint64_t modseq;
	/* Does the message carry this keyword (case-insensitive)? */
	bool (*keyword)(void *context, const char *name);
	void *context;
	const char *header;		/* up to and with its empty line */
	size_t header_len;
	const char *body;		/* after it */
	size_t body_len;
};

/* The flag bits MT_IMAP_SEARCH_FLAG tests (a tier maps its own to them). */
#define MT_IMAP_SEARCH_SEEN 0x01u
#define MT_IMAP_SEARCH_ANSWERED 0x02u
#define MT_IMAP_SEARCH_FLAGGED 0x04u
#define MT_IMAP_SEARCH_DELETED 0x08u
#define MT_IMAP_SEARCH_DRAFT 0x10u
/* In number's high bits: the test is for the flags' absence (UNSEEN...). */
#define MT_IMAP_SEARCH_FLAG_UNSET (UINT64_C(1) << 32)

enum mt_imap_search_match {
	MT_IMAP_SEARCH_NO,
	MT_IMAP_SEARCH_YES,
	MT_IMAP_SEARCH_NEED_HEADER,	/* give the header and ask again */
	MT_IMAP_SEARCH_NEED_BODY,	/* the body too */
};
enum mt_imap_search_match mt_imap_search_match(const struct mt_imap_search *search,
					       const struct mt_imap_search_msg *msg);

/* RFC 4731 3.1 result options: SEARCH RETURN (MIN MAX COUNT ALL). */
#define MT_IMAP_SEARCH_RETURN_MIN 0x1u
#define MT_IMAP_SEARCH_RETURN_MAX 0x2u
#define MT_IMAP_SEARCH_RETURN_COUNT 0x4u
#define MT_IMAP_SEARCH_RETURN_ALL 0x8u

/* A SEARCH's answer for its hits ids[0..count) (message numbers or UIDs,
 * ascending) with their MODSEQs, modseqs NULL when the criteria had no
 * MODSEQ key. mt_imap_search_write_esearch appends the ESEARCH result data
 * after "* ESEARCH (TAG ..) [UID]" (" MIN 2 MAX 9 COUNT 3 ALL 2,5,9
 * MODSEQ 917"); mt_imap_search_write_search IMAP4rev1's "* SEARCH 2 5 9
 * (MODSEQ 917)". The MODSEQ is the highest of the messages returned (RFC
 * 4731 3.2): of MIN's or MAX's message when only those are asked for,
 * else of every hit (RFC 7162 3.1.5); none without hits. */
void mt_imap_search_write_esearch(struct mt_buf *out, unsigned int returns,
				  const uint32_t *ids, const uint64_t *modseqs,
				  size_t count);
void mt_imap_search_write_search(struct mt_buf *out, const uint32_t *ids,
				 const uint64_t *modseqs, size_t count);

#endif
