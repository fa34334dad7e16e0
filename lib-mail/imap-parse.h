/* imap-parse.h — the one reader of IMAP command input, for every tier that
 * is an IMAP server (the store's IMAP4rev2 server, the MMP's IMAP login
 * front): it takes the client's bytes as they arrive, any number at a
 * time, gathers one whole command (its lines and the literals between
 * them), says when a synchronising literal needs the server's "+"
 * continuation, and then splits the command into its tag, its name and a
 * tree of arguments (atoms, quoted strings, literals, parenthesised
 * lists). What an argument means for a command (a mailbox name, a
 * sequence set, a FETCH item) is the tier's; mt_imap_seqset_parse() is the
 * one sequence-set reader they share.
 *
 * Use:
 *	mt_imap_parser_init(&parser, &limits);
 *	on input: switch (mt_imap_parser_feed(&parser, data, len, &used)) {
 *	case MT_IMAP_PARSE_MORE:	everything used; wait for more bytes
 *	case MT_IMAP_PARSE_LITERAL:	write "+ Ready\r\n", feed the rest
 *	case MT_IMAP_PARSE_STREAM:	an APPEND's message (stream_literal_min):
 *					write "+ Ready\r\n" if stream_sync, hand
 *					its octets over with
 *					mt_imap_parser_stream() (they are the
 *					caller's to keep), then feed the rest
 *	case MT_IMAP_PARSE_DONE:	run parser.command, then
 *					mt_imap_parser_reset() and feed the rest
 *	case MT_IMAP_PARSE_ERROR:	"TAG BAD [code] text" (or "* BAD" when
 *					the tag is ""), reset, feed the rest
 *	case MT_IMAP_PARSE_FATAL:	"* BYE text", close: the stream cannot
 *					be followed any more (a non-synchronising
 *					literal the server will not take)
 *	}
 * The parser uses only the bytes of one command (used_r), so what follows
 * it stays with the caller (an IDLE's DONE, an AUTHENTICATE response, the
 * next command, TLS after STARTTLS).
 *
 * The argument tree and its strings live in the parser until the next
 * reset; every string is NUL-terminated, its length given too (a literal8
 * may hold NULs). Atoms are read as RFC 9051's astring / flag / list-mailbox
 * / sequence-set / fetch-att need them: '\\' only first (a flag), '%' and
 * '*' (list wildcards, "*" in sets), ']' (resp-specials), and a '[' right
 * after BODY, BODY.PEEK, BINARY, BINARY.PEEK or BINARY.SIZE opens a
 * section the atom keeps to its matching ']' with spaces, parentheses and
 * quotes inside (BODY.PEEK[HEADER.FIELDS (From "To")]<0.1024>); anywhere
 * else '[' is an ATOM-CHAR (a mailbox named "a[b").
 *
 * Limits (all the client's to push on, all enforced here): one line's
 * length, one literal's size, the whole command's size, list nesting and
 * argument count; an APPEND's literals (the message) may have a limit of
 * their own, so that no other command's literal is held whole up to the
 * message size. Over a limit: ERROR with code "TOOBIG" where the client
 * can still be followed (a line skipped to its end, a synchronising
 * literal not invited), FATAL where it cannot. LITERAL+ (RFC 7888) or,
 * without it, LITERAL-: a non-synchronising literal over 4096 octets is
 * FATAL.
 *
 * Trust boundary: arbitrary client octets (NUL, 8-bit, bare LF, lines of
 * any length). Nothing read is trusted past the limits; a line ends at LF
 * (a CR before it is dropped). Fuzzed by tests/fuzz/fuzz-imap-cmd.c.
 * RFCs: 9051 2.2, 4.3, 7.5 (continuation), 9 (command, tag, atom, astring,
 * quoted, literal, literal8 "~{n}", sequence-set, "$" of SEARCHRES), 3501
 * (IMAP4rev1 clients: the same syntax), 7888 (LITERAL+ / LITERAL-), 5182
 * ("$"). */
#ifndef MT_IMAP_PARSE_H
#define MT_IMAP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum mt_imap_arg_type {
	MT_IMAP_ARG_ATOM,	/* includes NIL: mt_imap_arg_is_nil() */
	MT_IMAP_ARG_QUOTED,	/* unescaped */
	MT_IMAP_ARG_LITERAL,	/* {n} or {n+}; literal8 (~{n}) has binary set */
	MT_IMAP_ARG_LIST,
};

/* A literal whose octets went to the caller, not into the parser
 * (MT_IMAP_PARSE_STREAM): its str is "" (len 0), streamed_size its size;
 * no string reader (mt_imap_arg_string/astring) takes it. */

struct mt_imap_arg {
	enum mt_imap_arg_type type;
	bool binary;			/* a literal8: may hold NUL */
	bool streamed;			/* a literal the caller took (see above) */
	uint64_t streamed_size;		/* ... its octets */
	const char *str;		/* NUL-terminated; NULL for a list */
	size_t len;			/* of str; for a list, its count */
	const struct mt_imap_arg *list;	/* a list's members */
};

struct mt_imap_command {
	const char *tag;
	const char *name;		/* as the client wrote it (any case) */
	const struct mt_imap_arg *args;	/* after the name */
	size_t count;
};

struct mt_imap_limits {
	size_t line_max;	/* one line, literals not counted */
	uint64_t literal_max;	/* one literal */
	uint64_t append_literal_max;	/* one literal of an APPEND (its message);
					   0: literal_max */
	uint64_t stream_literal_min;	/* an APPEND's literal of at least this
					   many octets is streamed; 0: never */
	uint64_t command_max;	/* lines and literals together */
	unsigned int depth_max;	/* list nesting */
	unsigned int args_max;	/* atoms, strings and lists in a command */
	bool literal_plus;	/* LITERAL+; false: LITERAL- */
};

/* RFC 7888 4: LITERAL-'s bound on a non-synchronising literal. */
#define MT_IMAP_LITERAL_MINUS_MAX 4096u
#define MT_IMAP_TAG_MAX 64

enum mt_imap_parse {
	MT_IMAP_PARSE_MORE,
	MT_IMAP_PARSE_LITERAL,
	MT_IMAP_PARSE_STREAM,
	MT_IMAP_PARSE_DONE,
	MT_IMAP_PARSE_ERROR,
	MT_IMAP_PARSE_FATAL,
};

struct mt_imap_parser {
	struct mt_imap_limits limits;
	/* After DONE */
	struct mt_imap_command command;
	/* After ERROR / FATAL: the command's tag ("" when it had none a
	 * reply could name), a response code ("" or e.g. "TOOBIG") and a
	 * reason for the client. */
	char tag[MT_IMAP_TAG_MAX + 1];
	const char *error_code;
	const char *error;

	/* Private. */
	int state;
	struct mt_buf input;	/* the command as received, plus a NUL after each literal */
	struct mt_buf strings;	/* the arguments' unescaped strings */
	struct mt_imap_arg *nodes, *stack;	/* grown as commands need, to args_max */
	size_t nodes_cap, stack_cap;
	size_t *frames;				/* depth_max + 1 */
	size_t line_start, line_len;
	uint64_t literal_left, command_len;
	bool skipping_sync;	/* an over-long line ended with a {n} */
	char tail[24];		/* the last bytes of a line being skipped */
	size_t tail_len;
	/* A streamed literal: octets still to come, whether it was
	 * synchronising and binary; where each streamed literal of the
	 * command sits in input, its size and whether it held a NUL. */
	uint64_t stream_left;
	bool stream_sync;
	struct mt_imap_streamed {
		size_t offset;
		uint64_t size;
		bool nul;
	} *streamed;
	size_t streamed_count, streamed_cap;
};

void mt_imap_parser_init(struct mt_imap_parser *parser,
			 const struct mt_imap_limits *limits);
void mt_imap_parser_free(struct mt_imap_parser *parser);
/* Ready for the next command (keeps its memory). */
void mt_imap_parser_reset(struct mt_imap_parser *parser);
/* New limits from the next command on (a login changes what a client may
 * send); call it between commands. */
void mt_imap_parser_set_limits(struct mt_imap_parser *parser,
			       const struct mt_imap_limits *limits);
enum mt_imap_parse mt_imap_parser_feed(struct mt_imap_parser *parser,
				       const void *data, size_t len, size_t *used_r);

/* After MT_IMAP_PARSE_STREAM: the first octets of data, up to what the
 * literal has left, are its own; returns how many (the caller keeps
 * them, the parser only checks them: a NUL outside a literal8 fails the
 * command once it is read). What follows is fed as usual. */
size_t mt_imap_parser_stream(struct mt_imap_parser *parser, const void *data,
			     size_t len);
/* Octets the streamed literal has still to come (0: none streams). */
uint64_t mt_imap_parser_stream_left(const struct mt_imap_parser *parser);

/* RFC 9051 9 ATOM-CHAR: any CHAR but atom-specials ("(" ")" "{" SP CTL
 * "%" "*" DQUOTE "\\" "]"); the one definition, for readers and writers. */
bool mt_imap_is_atom_char(unsigned char c);

bool mt_imap_arg_is_nil(const struct mt_imap_arg *arg);
/* An astring (atom, quoted or literal, RFC 9051 9) or a string (quoted or
 * literal): its text, or false. A literal8 is neither. */
bool mt_imap_arg_astring(const struct mt_imap_arg *arg, const char **str_r, size_t *len_r);
bool mt_imap_arg_string(const struct mt_imap_arg *arg, const char **str_r, size_t *len_r);
/* An atom equal to word, case-insensitively. */
bool mt_imap_arg_atom_is(const struct mt_imap_arg *arg, const char *word);

/* A sequence set (RFC 9051 9 sequence-set, RFC 5182 "$"): ranges low..high
 * in the client's order, each with low <= high as numbers, so a "*"
 * (MT_IMAP_SEQ_STAR, which the caller resolves against the mailbox) is
 * its range's low end. */
#define MT_IMAP_SEQ_STAR 0u	/* never a number: those start at 1 */
struct mt_imap_seq_range { uint32_t low, high; };
struct mt_imap_seqset {
	bool saved;		/* "$": the last SEARCH's result */
	size_t count;
	struct mt_imap_seq_range *ranges;	/* the caller's, max_ranges long */
};
/* false: not a sequence set, or more than max_ranges ranges. */
bool mt_imap_seqset_parse(const char *text, struct mt_imap_seqset *set,
			  struct mt_imap_seq_range *ranges, size_t max_ranges);
/* Is n (1..) in the set, with '*' meaning largest? */
bool mt_imap_seqset_contains(const struct mt_imap_seqset *set, uint32_t n,
			     uint32_t largest);

#endif
