/* imap-sort.h — IMAP SORT (RFC 5256 3, RFC 5267 ESORT, RFC 5957
 * DISPLAYFROM / DISPLAYTO): the sort program read from a command's list,
 * each message's keys made once from the ENVELOPE its structure record
 * holds (rendered at delivery: imap-bodystructure.h), and a stable sort
 * over them. Also the two string rules SORT and THREAD share: the base
 * subject (RFC 5256 2.1) and the i;unicode-casemap collation (RFC 5051).
 *
 * i;unicode-casemap as implemented here (RFC 5051 2): a string is read as
 * UTF-8; each character is mapped to its Unicode simple titlecase and
 * then to its canonical decomposition, for ASCII (a-z to A-Z) and for the
 * Latin-1 Supplement and Latin Extended-A blocks (U+00C0..U+017F: "é" is
 * "E" U+0301, "ÿ" is "Y" U+0308, "ı" and "ſ" are "I" and "S"; letters
 * without a decomposition, "ß", "æ", "ø", "ł", are their titlecase alone).
 * Other characters compare as themselves (no titlecase mapping beyond
 * those blocks: Greek or Cyrillic letters of different case compare
 * unequal), and octets that are not UTF-8 compare as themselves; the
 * results are compared octet by octet, i.e. in code point order. This is
 * exact for Latin-script mail, a total order on every input.
 *
 * Encoded words (RFC 2047) in subjects and display names are decoded
 * for UTF-8, US-ASCII and ISO-8859-1 (and windows-1252 read as Latin-1);
 * others are kept as written.
 *
 * Trust boundary: the client's sort program (imap-parse arguments) and
 * the ENVELOPE strings, which hold any sender's header values; every key
 * is bounded (MT_IMAP_SORT_KEY_MAX octets compared), the ENVELOPE reader
 * stays within the record it is given. */
#ifndef MT_IMAP_SORT_H
#define MT_IMAP_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "imap-parse.h"

/* The octets of a string key compared (longer keys are cut). */
#define MT_IMAP_SORT_KEY_MAX 1024
/* Sort criteria in one program. */
#define MT_IMAP_SORT_CRITERIA_MAX 16

enum mt_imap_sort_key {
	MT_IMAP_SORT_ARRIVAL,
	MT_IMAP_SORT_CC,
	MT_IMAP_SORT_DATE,
	MT_IMAP_SORT_FROM,
	MT_IMAP_SORT_SIZE,
	MT_IMAP_SORT_SUBJECT,
	MT_IMAP_SORT_TO,
	MT_IMAP_SORT_DISPLAYFROM,
	MT_IMAP_SORT_DISPLAYTO,
	MT_IMAP_SORT_KEY_COUNT
};

struct mt_imap_sort_program {
	struct {
		enum mt_imap_sort_key key;
		bool reverse;
	} criteria[MT_IMAP_SORT_CRITERIA_MAX];
	unsigned int count;
	unsigned int keys;		/* bit per key used */
};

/* Read "(REVERSE DATE SUBJECT)": false with a reason (BAD) if it is not
 * a non-empty list of keys, each optionally after one REVERSE. */
bool mt_imap_sort_parse(struct mt_imap_sort_program *program,
			const struct mt_imap_arg *list, const char **error_r);

/* The ENVELOPE's parts SORT and THREAD use, read from its IMAP form
 * (quoted strings, literals, NIL, lists) and unescaped. */
struct mt_imap_envelope_str {
	size_t off, len;		/* in the envelope's text */
	bool nil;
};
struct mt_imap_envelope_addr {
	struct mt_imap_envelope_str name, mailbox, host;
};
struct mt_imap_envelope {
	struct mt_buf text;
	struct mt_imap_envelope_str date, subject, in_reply_to, message_id;
	struct mt_imap_envelope_addr from, to, cc;	/* the first of each */
};
/* false if env is not an ENVELOPE; the strings are in e->text (freed
 * with mt_imap_envelope_free, reused by another read). */
bool mt_imap_envelope_read(struct mt_imap_envelope *e, const char *env, size_t len);
void mt_imap_envelope_free(struct mt_imap_envelope *e);
const char *mt_imap_envelope_get(const struct mt_imap_envelope *e,
				 const struct mt_imap_envelope_str *str, size_t *len_r);

/* An RFC 5322 date-time ("Mon, 7 Feb 1994 21:52:25 -0800") as Unix time
 * (UTC); false if it cannot be read. */
bool mt_imap_sort_date_parse(const char *text, size_t len, int64_t *time_r);

/* RFC 2047 encoded words decoded (see above), appended to out. */
void mt_imap_sort_decode_words(struct mt_buf *out, const char *text, size_t len);
/* RFC 5256 2.1: the base subject of a Subject: value (encoded words
 * decoded) appended to out; *is_reply_r (may be NULL) tells whether a
 * "Re:" / "Fwd:" / "(fwd)" / "[fwd: ...]" was taken off. */
void mt_imap_base_subject(struct mt_buf *out, const char *subject, size_t len,
			  bool *is_reply_r);
/* RFC 5051: the i;unicode-casemap form of a UTF-8 string appended to
 * out; two strings are equal in the collation exactly when their forms
 * are, ordered as their forms compare with memcmp (shorter first). */
void mt_imap_casemap(struct mt_buf *out, const char *text, size_t len);

/* One message's sort keys, as a program needs them. */
struct mt_imap_sort_msg {
	uint32_t id;			/* what the answer names (seq or UID) */
	uint32_t order;			/* the last tie-break: sequence order */
	uint64_t size;
	int64_t arrival, date;
	/* Casemapped string keys, NUL-terminated ("" if absent). */
	char *str[MT_IMAP_SORT_KEY_COUNT];
};
/* Fill m's keys for program from env (the ENVELOPE, NULL if unknown: all
 * string keys empty, DATE the arrival). */
void mt_imap_sort_msg_fill(struct mt_imap_sort_msg *m,
			   const struct mt_imap_sort_program *program,
			   const struct mt_imap_envelope *env);
void mt_imap_sort_msg_free(struct mt_imap_sort_msg *m);
/* Order by the program, ties by order (RFC 5256 3: "sorted in the order
 * given by their message sequence numbers"). */
int mt_imap_sort_compare(const struct mt_imap_sort_program *program,
			 const struct mt_imap_sort_msg *a, const struct mt_imap_sort_msg *b);
void mt_imap_sort(const struct mt_imap_sort_program *program,
		  struct mt_imap_sort_msg *msgs, size_t count);

/* The answers: "* SORT 2 3 1" (RFC 5256 4) appended to out, or the ESORT
 * result data (RFC 5267 3.2) after "* ESEARCH (TAG ..) [UID]": MIN and
 * MAX the first and last in sort order, COUNT, ALL in sort order with
 * ascending runs written "a:b". returns are MT_IMAP_SEARCH_RETURN_*. */
void mt_imap_sort_write(struct mt_buf *out, const uint32_t *ids, size_t count);
void mt_imap_esort_write(struct mt_buf *out, unsigned int returns,
			 const uint32_t *ids, size_t count);

#endif
