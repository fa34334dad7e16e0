/* imap-response.h — the framing of IMAP server responses for
 * mailtier-load's IMAP client: one response at a time out of the
 * connection's input, its lines joined and its literals ({n}, and
 * literal8 ~{n}) read and counted but never kept (a 2.6 MB BODY[] costs
 * its octets' count, not its size in memory), then classified: a
 * continuation request ("+ "), an untagged response ("* "), a tagged
 * completion (TAG OK/NO/BAD) or garbage. The text kept is the response
 * with each literal's contents left out (its "{n}" marker stays), so the
 * caller can read FETCH's UID and FLAGS, EXISTS counts, SEARCH results and
 * CAPABILITY lists from it.
 *
 * Trust boundary: every octet comes from the server under test. Each line
 * is bounded (LG_IMAP_LINE_MAX), each literal (LG_IMAP_LITERAL_MAX), the
 * kept text of one response (LG_IMAP_TEXT_MAX) and the literals in one
 * response (LG_IMAP_LITERALS_MAX); over a bound, or a bare CR or NUL in a
 * line, is a protocol error, never a guess. Literal octets may be anything.
 * RFC 9051 2.2.1-2.2.2 (tagged, untagged and continuation responses), 4.3
 * (literal, literal8), 7 (responses), 7.5.2 (ENVELOPE), 9 (the response
 * grammar). */
#ifndef LG_IMAP_RESPONSE_H
#define LG_IMAP_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "lineio.h"

struct evbuffer;

#define LG_IMAP_LINE_MAX (64 * 1024)		/* one line, CRLF included */
#define LG_IMAP_LITERAL_MAX (64u * 1024 * 1024)	/* octets of one literal */
#define LG_IMAP_TEXT_MAX (256 * 1024)		/* kept text of one response */
#define LG_IMAP_LITERALS_MAX 1000		/* literals in one response */

enum lg_imap_kind {
	LG_IMAP_CONTINUE,	/* "+" [SP text] */
	LG_IMAP_UNTAGGED,	/* "* " ... */
	LG_IMAP_TAGGED,		/* tag SP OK|NO|BAD ... */
};

enum lg_imap_status {
	LG_IMAP_STATUS_OK,
	LG_IMAP_STATUS_NO,
	LG_IMAP_STATUS_BAD,
};

enum lg_imap_read {
	LG_IMAP_READ_MORE,	/* wait for more input */
	LG_IMAP_READ_DONE,	/* a whole response is in the reader */
	LG_IMAP_READ_ERROR,	/* the stream cannot be followed: *error_r */
};

struct lg_imap_reader {
	struct mt_line_reader lines;
	struct mt_buf line;		/* the segment just read */
	struct mt_buf text;		/* the response so far, literals left out */
	uint64_t literal_left;		/* octets of the current literal to skip */
	unsigned int n_literals;
	bool complete;			/* the last read ended a response */
	uint64_t literal_octets;	/* all literal octets of this response */
	/* When set, every literal octet is also handed here (as it arrives;
	 * a literal may come in many pieces). */
	void (*tap)(void *context, const void *data, size_t len);
	void *tap_context;

	/* The response, after LG_IMAP_READ_DONE: */
	enum lg_imap_kind kind;
	const char *tag;		/* TAGGED: the tag (NUL-terminated) */
	enum lg_imap_status status;	/* TAGGED: the completion */
	const char *rest;		/* after "* ", "+ " or "TAG STATUS " */
	char tag_buf[64];
};

void lg_imap_reader_init(struct lg_imap_reader *reader);
void lg_imap_reader_free(struct lg_imap_reader *reader);
/* Take input until one response is whole (DONE), the input runs out
 * (MORE: what was read is kept) or the stream is broken (ERROR). */
enum lg_imap_read lg_imap_read(struct lg_imap_reader *reader,
			       struct evbuffer *in, const char **error_r);

/* Helpers over a response's text (NUL-terminated, case-insensitive). */
/* "N WORD..." (an untagged "* 5 EXISTS"): N and true when WORD follows. */
bool lg_imap_number_then(const char *rest, const char *word, uint32_t *n_r);
/* The number after "WORD " anywhere in text ("UID 17", "[UIDNEXT 9]"). */
bool lg_imap_find_number(const char *text, const char *word, uint64_t *n_r);
/* Whether text holds atom as a whole word (a capability, a flag). */
bool lg_imap_has_word(const char *text, const char *atom);
/* Whether rest begins with word followed by a space, ']' or its end. */
bool lg_imap_starts_with(const char *rest, const char *word);
/* The first From address of a FETCH's "ENVELOPE (date subject ((name adl
 * mailbox host) ...) ...)" in text (RFC 9051 7.5.2, 9: envelope, address):
 * its mailbox and host, unquoted, NUL-terminated. false when there is no
 * ENVELOPE, its From is NIL or a group, a part is a literal (its contents
 * are not kept) or too long for the buffer. */
bool lg_imap_envelope_from(const char *text, char *mailbox, size_t mailbox_size,
			   char *host, size_t host_size);

#endif
