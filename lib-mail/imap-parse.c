/* imap-parse.c — IMAP command input: gathering a command's lines and
 * literals as the bytes arrive, then splitting it into tag, name and an
 * argument tree; and the sequence-set reader (see imap-parse.h for the
 * contract, the limits, the trust boundary and the RFCs).
 *
 * How a command is held: each line is appended to `input` with its line
 * end made one '\n'; a literal's octets follow the '\n' of the line that
 * announced it, then one '\0' of ours (so a literal is a C string in
 * place). Only a line that ends in "{n}", "{n+}" or "~{n}" announces a
 * literal (RFC 9051 4.3: the literal's CRLF follows its "}"), so gathering
 * needs no tokenizing; the tokenizer then reads the whole command once,
 * and meets each literal exactly where gathering stored it. */
#include "imap-parse.h"
#include "alloc.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum parser_state {
	STATE_LINE,		/* gathering a line */
	STATE_LITERAL,		/* gathering a literal's octets */
	STATE_SKIP,		/* an over-limit line: read to its end, keep nothing */
	STATE_STREAM,		/* a literal's octets go to the caller */
	STATE_END,		/* a result was given; waiting for reset */
};

void mt_imap_parser_init(struct mt_imap_parser *parser,
			 const struct mt_imap_limits *limits)
{
	memset(parser, 0, sizeof(*parser));
	parser->limits = *limits;
	if (parser->limits.args_max == 0)
		parser->limits.args_max = 1;
	mt_buf_init(&parser->input);
	mt_buf_init(&parser->strings);
	/* The argument arrays grow with the commands (an idle session holds
	 * a few hundred octets of them, not args_max nodes). */
	parser->frames = mt_xcalloc(parser->limits.depth_max + 1, sizeof(*parser->frames));
	mt_imap_parser_reset(parser);
}

void mt_imap_parser_set_limits(struct mt_imap_parser *parser,
			       const struct mt_imap_limits *limits)
{
	if (limits->depth_max != parser->limits.depth_max) {
		free(parser->frames);
		parser->frames = mt_xcalloc(limits->depth_max + 1, sizeof(*parser->frames));
	}
	parser->limits = *limits;
	if (parser->limits.args_max == 0)
		parser->limits.args_max = 1;
}

void mt_imap_parser_free(struct mt_imap_parser *parser)
{
	mt_buf_free(&parser->input);
	mt_buf_free(&parser->strings);
	free(parser->nodes);
	free(parser->stack);
	free(parser->frames);
	free(parser->streamed);
	parser->streamed = NULL;
	parser->streamed_cap = 0;
	parser->nodes = parser->stack = NULL;
	parser->frames = NULL;
}

/* Arrays and buffers a large command grew are given back after it. */
#define PARSER_KEEP_NODES 64
#define PARSER_KEEP_OCTETS 16384

void mt_imap_parser_reset(struct mt_imap_parser *parser)
{
	if (parser->nodes_cap > PARSER_KEEP_NODES) {
		MT_FREE(&parser->nodes);
		parser->nodes_cap = 0;
	}
	if (parser->stack_cap > PARSER_KEEP_NODES) {
		MT_FREE(&parser->stack);
		parser->stack_cap = 0;
	}
	if (parser->input.cap > PARSER_KEEP_OCTETS)
		mt_buf_free(&parser->input);
	if (parser->strings.cap > PARSER_KEEP_OCTETS)
		mt_buf_free(&parser->strings);
	mt_buf_reset(&parser->input);
	mt_buf_reset(&parser->strings);
	memset(&parser->command, 0, sizeof(parser->command));
	parser->tag[0] = '\0';
	parser->error_code = "";
	parser->error = "";
	parser->state = STATE_LINE;
	parser->line_start = parser->line_len = 0;
	parser->literal_left = parser->command_len = 0;
	parser->skipping_sync = false;
	parser->tail_len = 0;
	parser->stream_left = 0;
	parser->stream_sync = false;
	parser->streamed_count = 0;
}

/* ---- characters (RFC 9051 9) ---- */

static bool is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

bool mt_imap_is_atom_char(unsigned char c)
{
	/* atom-specials: "(" ")" "{" SP CTL list-wildcards quoted-specials
	 * resp-specials. */
	if (c <= 0x20 || c >= 0x7f)
		return false;
	return strchr("(){%*\"\\]", c) == NULL;
}

/* ATOM-CHAR plus what astring, flag, list-mailbox and sequence-set add:
 * '%' '*' (list-wildcards), ']' (resp-specials). */
static bool is_atom_char(unsigned char c)
{
	return mt_imap_is_atom_char(c) || c == '%' || c == '*' || c == ']';
}

/* tag = 1*<any ASTRING-CHAR except "+"> */
static bool is_tag_char(unsigned char c)
{
	return is_atom_char(c) && c != '+' && c != '%' && c != '*';
}

/* The tag at the start of the command, for an error reply: "" unless it
 * is a whole valid tag followed by a space. */
static void note_tag(struct mt_imap_parser *parser, const char *text, size_t len)
{
	size_t n = 0;
	while (n < len && n <= MT_IMAP_TAG_MAX && is_tag_char((unsigned char)text[n]))
		n++;
	if (n == 0 || n > MT_IMAP_TAG_MAX || n >= len || text[n] != ' ')
		return;
	memcpy(parser->tag, text, n);
	parser->tag[n] = '\0';
}

static enum mt_imap_parse fail(struct mt_imap_parser *parser, enum mt_imap_parse result,
			       const char *code, const char *error)
{
	if (parser->tag[0] == '\0' && parser->input.len > 0)
		note_tag(parser, parser->input.data, parser->input.len);
	parser->error_code = code;
	parser->error = error;
	parser->state = STATE_END;
	return result;
}

/* ---- literal announcements at a line's end ---- */

struct literal_mark {
	uint64_t size;		/* UINT64_MAX: more digits than fit */
	size_t start;		/* where "{" (or "~{") is in its line */
	bool sync;
	bool binary;
};

/* Does text[0..len) (a line without its end) end with "{n}", "{n+}" or
 * "~{n}"/"~{n+}" (RFC 9051 9 literal, literal8; RFC 7888)? */
static bool literal_mark(const char *text, size_t len, struct literal_mark *mark_r)
{
	size_t i = len;
	if (i == 0 || text[i - 1] != '}')
		return false;
	i--;
	mark_r->sync = true;
	if (i > 0 && text[i - 1] == '+') {
		mark_r->sync = false;
		i--;
	}
	size_t digits_end = i;
	while (i > 0 && text[i - 1] >= '0' && text[i - 1] <= '9')
		i--;
	if (i == digits_end || i == 0 || text[i - 1] != '{')
		return false;
	uint64_t size = 0;
	for (size_t k = i; k < digits_end; k++) {
		unsigned int digit = (unsigned int)(text[k] - '0');
		if (size > (UINT64_MAX - digit) / 10) {
			size = UINT64_MAX;
			break;
		}
		size = size * 10 + digit;
	}
	mark_r->size = size;
	mark_r->binary = i >= 2 && text[i - 2] == '~';
	mark_r->start = i - 1 - (mark_r->binary ? 1 : 0);
	return true;
}

/* ---- gathering ---- */

static void keep_tail(struct mt_imap_parser *parser, const char *data, size_t len)
{
	size_t cap = sizeof(parser->tail);
	if (len >= cap) {
		memcpy(parser->tail, data + len - cap, cap);
		parser->tail_len = cap;
		return;
	}
	if (parser->tail_len + len > cap) {
		size_t drop = parser->tail_len + len - cap;
		memmove(parser->tail, parser->tail + drop, parser->tail_len - drop);
		parser->tail_len -= drop;
	}
	memcpy(parser->tail + parser->tail_len, data, len);
	parser->tail_len += len;
}

/* The line being gathered (with data[0..len) of its rest) is over a limit:
 * note the tag, drop what was kept of the line and read on to its end. */
static void start_skip(struct mt_imap_parser *parser, const char *data, size_t len)
{
	parser->tail_len = 0;
	if (parser->input.len > parser->line_start)
		keep_tail(parser, parser->input.data + parser->line_start,
			  parser->input.len - parser->line_start);
	/* (the rest, data, is kept by STATE_SKIP as it reads on) */
	if (parser->line_start == 0 && parser->tag[0] == '\0') {
		mt_buf_append(&parser->input, data, len < 80 ? len : 80);
		note_tag(parser, parser->input.data, parser->input.len);
	}
	parser->input.len = parser->line_start;
	if (parser->input.data != NULL)
		parser->input.data[parser->input.len] = '\0';
	parser->state = STATE_SKIP;
}

/* The end of a skipped line: the client can still be followed unless the
 * line announced a non-synchronising literal it is now sending. */
static enum mt_imap_parse end_skip(struct mt_imap_parser *parser)
{
	struct literal_mark mark;
	size_t n = parser->tail_len;
	if (n > 0 && parser->tail[n - 1] == '\r')
		n--;
	if (literal_mark(parser->tail, n, &mark) && !mark.sync)
		return fail(parser, MT_IMAP_PARSE_FATAL, "TOOBIG", "Command line too long");
	return fail(parser, MT_IMAP_PARSE_ERROR, "TOOBIG", "Command line too long");
}

static enum mt_imap_parse tokenize(struct mt_imap_parser *parser);

#define APPEND_WORD "APPEND "

/* Is the command being gathered an APPEND ("tag SP APPEND SP ...": its
 * first line is at the start of input)? Its arguments start at *args_r. */
static bool command_is_append(const struct mt_imap_parser *parser, size_t *args_r)
{
	const size_t word = sizeof(APPEND_WORD) - 1;
	const char *text = parser->input.data;
	const char *space = memchr(text, ' ', parser->input.len);
	if (space == NULL)
		return false;
	size_t at = (size_t)(space + 1 - text);
	*args_r = at + word;
	return parser->input.len - at >= word &&
		strncasecmp(space + 1, APPEND_WORD, word) == 0;
}

/* Is the literal just announced an APPEND's message: any literal of an
 * APPEND but its first argument (the mailbox name, RFC 9051 6.3.12)? */
static bool append_message(const struct mt_imap_parser *parser,
			   const struct literal_mark *mark)
{
	size_t args;
	if (!command_is_append(parser, &args))
		return false;
	return parser->line_start != 0 || mark->start != args;
}

/* The largest literal the command being gathered may send here. */
static uint64_t literal_limit(const struct mt_imap_parser *parser,
			      const struct literal_mark *mark)
{
	const struct mt_imap_limits *limits = &parser->limits;
	if (limits->append_literal_max != 0 && append_message(parser, mark))
		return limits->append_literal_max;
	return limits->literal_max;
}

/* An APPEND's message: its octets go to the caller (the literal keeps
 * its place in input, empty). */
static enum mt_imap_parse start_stream(struct mt_imap_parser *parser,
				       const struct literal_mark *mark)
{
	if (parser->streamed_count == parser->streamed_cap) {
		parser->streamed_cap = parser->streamed_cap == 0 ? 2 : parser->streamed_cap * 2;
		parser->streamed = mt_xrealloc(parser->streamed,
					       parser->streamed_cap * sizeof(*parser->streamed));
	}
	parser->streamed[parser->streamed_count++] = (struct mt_imap_streamed){
		.offset = parser->input.len, .size = mark->size, .nul = false,
	};
	parser->literal_left = 0;
	parser->stream_left = mark->size;
	parser->stream_sync = mark->sync;
	parser->state = STATE_STREAM;
	return MT_IMAP_PARSE_STREAM;
}

size_t mt_imap_parser_stream(struct mt_imap_parser *parser, const void *data,
			     size_t len)
{
	if (parser->state != STATE_STREAM)
		return 0;
	size_t n = parser->stream_left < len ? (size_t)parser->stream_left : len;
	struct mt_imap_streamed *st = &parser->streamed[parser->streamed_count - 1];
	if (n > 0 && memchr(data, '\0', n) != NULL)
		st->nul = true;
	parser->stream_left -= n;
	if (parser->stream_left == 0) {
		/* The literal's place: no octets, our '\0'. */
		mt_buf_append_char(&parser->input, '\0');
		parser->line_start = parser->input.len;
		parser->line_len = 0;
		parser->state = STATE_LINE;
	}
	return n;
}

uint64_t mt_imap_parser_stream_left(const struct mt_imap_parser *parser)
{
	return parser->state == STATE_STREAM ? parser->stream_left : 0;
}

/* A whole line is in input from line_start, ending in '\n'. */
static enum mt_imap_parse end_line(struct mt_imap_parser *parser)
{
	struct literal_mark mark;
	const char *line = parser->input.data + parser->line_start;
	size_t len = parser->input.len - parser->line_start - 1;
	if (!literal_mark(line, len, &mark))
		return tokenize(parser);
	const struct mt_imap_limits *limits = &parser->limits;
	bool too_big = mark.size > literal_limit(parser, &mark) ||
		mark.size > limits->command_max - parser->command_len;
	if (!mark.sync && !limits->literal_plus && mark.size > MT_IMAP_LITERAL_MINUS_MAX)
		return fail(parser, MT_IMAP_PARSE_FATAL, "TOOBIG",
			    "Non-synchronizing literal over 4096 octets");
	if (too_big)
		return fail(parser, mark.sync ? MT_IMAP_PARSE_ERROR : MT_IMAP_PARSE_FATAL,
			    "TOOBIG", "Literal too big");
	parser->literal_left = mark.size;
	parser->command_len += mark.size;
	if (limits->stream_literal_min != 0 && mark.size >= limits->stream_literal_min &&
	    append_message(parser, &mark))
		return start_stream(parser, &mark);
	parser->state = STATE_LITERAL;
	if (mark.size == 0) {
		mt_buf_append_char(&parser->input, '\0');
		parser->line_start = parser->input.len;
		parser->line_len = 0;
		parser->state = STATE_LINE;
	} else {
		mt_buf_reserve(&parser->input, mark.size + 1);
	}
	return mark.sync ? MT_IMAP_PARSE_LITERAL : MT_IMAP_PARSE_MORE;
}

enum mt_imap_parse mt_imap_parser_feed(struct mt_imap_parser *parser,
				       const void *data, size_t len, size_t *used_r)
{
	const char *bytes = data;
	size_t used = 0;
	*used_r = 0;
	while (used < len) {
		const char *chunk = bytes + used;
		size_t avail = len - used;
		if (parser->state == STATE_END) {
			break;
		} else if (parser->state == STATE_STREAM) {
			*used_r = used;
			return MT_IMAP_PARSE_STREAM;
		} else if (parser->state == STATE_LITERAL) {
			size_t n = parser->literal_left < avail ? (size_t)parser->literal_left : avail;
			mt_buf_append(&parser->input, chunk, n);
			used += n;
			parser->literal_left -= n;
			if (parser->literal_left == 0) {
				mt_buf_append_char(&parser->input, '\0');
				parser->line_start = parser->input.len;
				parser->line_len = 0;
				parser->state = STATE_LINE;
			}
			continue;
		}
		const char *lf = memchr(chunk, '\n', avail);
		size_t n = lf != NULL ? (size_t)(lf - chunk) : avail;
		if (parser->state == STATE_SKIP) {
			keep_tail(parser, chunk, n);
			used += n;
			if (lf == NULL)
				continue;
			used++;
			*used_r = used;
			return end_skip(parser);
		}
		/* STATE_LINE */
		const struct mt_imap_limits *limits = &parser->limits;
		size_t line_end = lf != NULL ? 1 : 0;
		if (parser->line_len + n > limits->line_max ||
		    parser->command_len + n + line_end > limits->command_max) {
			start_skip(parser, chunk, n);
			continue;
		}
		mt_buf_append(&parser->input, chunk, n);
		parser->line_len += n;
		parser->command_len += n + line_end;
		used += n;
		if (lf == NULL)
			continue;
		used++;
		if (parser->input.len > parser->line_start &&
		    parser->input.data[parser->input.len - 1] == '\r') {
			parser->input.len--;
			parser->input.data[parser->input.len] = '\0';
		}
		mt_buf_append_char(&parser->input, '\n');
		enum mt_imap_parse result = end_line(parser);
		if (result != MT_IMAP_PARSE_MORE) {
			*used_r = used;
			return result;
		}
	}
	*used_r = used;
	return MT_IMAP_PARSE_MORE;
}

/* ---- tokenizing a whole command ---- */

struct scan {
	struct mt_imap_parser *parser;
	const char *p, *end;
	size_t pushed;		/* nodes on the stack */
	size_t kept;		/* nodes in the arena */
	size_t total;		/* nodes made */
	const char *error;
	const char *code;
};

static bool scan_error(struct scan *scan, const char *code, const char *error)
{
	if (scan->error == NULL) {
		scan->code = code;
		scan->error = error;
	}
	return false;
}

static const char *keep_string(struct scan *scan, const char *text, size_t len)
{
	struct mt_buf *strings = &scan->parser->strings;
	const char *at = strings->data + strings->len;
	mt_buf_append(strings, text, len);
	mt_buf_append_char(strings, '\0');
	return at;
}

static struct mt_imap_arg *push(struct scan *scan, enum mt_imap_arg_type type)
{
	if (scan->total >= scan->parser->limits.args_max) {
		scan_error(scan, "TOOBIG", "Too many arguments");
		return NULL;
	}
	scan->total++;
	struct mt_imap_parser *parser = scan->parser;
	if (scan->pushed == parser->stack_cap) {
		parser->stack_cap = parser->stack_cap == 0 ? 16 : parser->stack_cap * 2;
		parser->stack = mt_xrealloc(parser->stack, parser->stack_cap * sizeof(*parser->stack));
	}
	struct mt_imap_arg *arg = &parser->stack[scan->pushed++];
	memset(arg, 0, sizeof(*arg));
	arg->type = type;
	return arg;
}

/* Move stack[from..pushed) into the arena; returns the index they went
 * to. The arena may move as it grows: until the command is complete a
 * list's member pointer holds that index (see link_lists). */
static size_t keep_nodes(struct scan *scan, size_t from)
{
	struct mt_imap_parser *parser = scan->parser;
	size_t n = scan->pushed - from, at = scan->kept;
	if (at + n > parser->nodes_cap) {
		size_t cap = parser->nodes_cap == 0 ? 16 : parser->nodes_cap;
		while (cap < at + n)
			cap *= 2;
		parser->nodes = mt_xrealloc(parser->nodes, cap * sizeof(*parser->nodes));
		parser->nodes_cap = cap;
	}
	if (n > 0)
		memcpy(parser->nodes + at, parser->stack + from, n * sizeof(*parser->nodes));
	scan->kept += n;
	scan->pushed = from;
	return at;
}

/* The arena is final: list member indexes become pointers. */
static void link_lists(struct mt_imap_parser *parser, size_t kept)
{
	for (size_t i = 0; i < kept; i++)
		if (parser->nodes[i].type == MT_IMAP_ARG_LIST)
			parser->nodes[i].list = parser->nodes + (uintptr_t)parser->nodes[i].list;
}

/* Does the atom text[0..len) name a FETCH item that takes a section
 * (RFC 9051 9 fetch-att "BODY" ["PEEK"] section, "BINARY" ["PEEK"] /
 * ".SIZE" section-binary)? Only there does a '[' open one: anywhere else
 * it is an ATOM-CHAR like any other (a mailbox "a[b", RFC 9051 9
 * atom-specials do not hold it). */
static bool opens_section(const char *text, size_t len)
{
	static const char *const items[] = {
		"BODY", "BODY.PEEK", "BINARY", "BINARY.PEEK", "BINARY.SIZE",
	};
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
		if (strlen(items[i]) == len && strncasecmp(text, items[i], len) == 0)
			return true;
	return false;
}

/* An atom; a '[' after a FETCH item's name keeps everything to its
 * matching ']' (a section, with spaces, quotes and lists inside). */
static bool scan_atom(struct scan *scan)
{
	const char *start = scan->p, *p = scan->p;
	unsigned int brackets = 0;
	if (p < scan->end && *p == '\\')
		p++;
	while (p < scan->end) {
		unsigned char c = (unsigned char)*p;
		if (brackets > 0) {
			if (c == '\n' || c == '{' || c >= 0x80 || (is_ctl(c) && c != '\t'))
				break;
			if (c == '[')
				brackets++;
			else if (c == ']')
				brackets--;
			p++;
			continue;
		}
		if (!is_atom_char(c))
			break;
		if (c == '[' && opens_section(start, (size_t)(p - start)))
			brackets++;
		p++;
	}
	if (brackets > 0)
		return scan_error(scan, "", "Missing ']'");
	if (p == start || (p == start + 1 && *start == '\\'))
		return scan_error(scan, "", "Invalid characters in atom");
	struct mt_imap_arg *arg = push(scan, MT_IMAP_ARG_ATOM);
	if (arg == NULL)
		return false;
	arg->len = (size_t)(p - start);
	arg->str = keep_string(scan, start, arg->len);
	scan->p = p;
	return true;
}

/* quoted = DQUOTE *QUOTED-CHAR DQUOTE; QUOTED-CHAR includes 8-bit UTF-8
 * (RFC 9051 9), escapes only for DQUOTE and '\\'. */
static bool scan_quoted(struct scan *scan)
{
	const char *p = scan->p + 1;
	struct mt_buf *strings = &scan->parser->strings;
	size_t at = strings->len;
	for (;;) {
		if (p >= scan->end || *p == '\n' || *p == '\0')
			return scan_error(scan, "", "Unterminated quoted string");
		if (*p == '"')
			break;
		if (*p == '\\') {
			p++;
			if (p >= scan->end || (*p != '"' && *p != '\\'))
				return scan_error(scan, "", "Invalid escape in quoted string");
		} else if (*p == '\r') {
			return scan_error(scan, "", "CR in quoted string");
		}
		mt_buf_append_char(strings, *p);
		p++;
	}
	mt_buf_append_char(strings, '\0');
	struct mt_imap_arg *arg = push(scan, MT_IMAP_ARG_QUOTED);
	if (arg == NULL)
		return false;
	arg->str = strings->data + at;
	arg->len = strings->len - at - 1;
	scan->p = p + 1;
	return true;
}

/* "~"? "{" digits "+"? "}" '\n', the octets, our '\0'. Gathering stored it
 * so only at a line's end; anywhere else it is a syntax error. */
/* The streamed literal whose place in input is offset, or NULL. */
static const struct mt_imap_streamed *streamed_at(const struct mt_imap_parser *parser,
						  size_t offset)
{
	for (size_t i = 0; i < parser->streamed_count; i++)
		if (parser->streamed[i].offset == offset)
			return &parser->streamed[i];
	return NULL;
}

static bool scan_literal(struct scan *scan)
{
	const char *p = scan->p;
	bool binary = *p == '~';
	if (binary)
		p++;
	if (p >= scan->end || *p != '{')
		return scan_error(scan, "", "Invalid characters in atom");
	p++;
	uint64_t size = 0;
	const char *digits = p;
	while (p < scan->end && *p >= '0' && *p <= '9') {
		unsigned int digit = (unsigned int)(*p - '0');
		if (size > (UINT64_MAX - digit) / 10)
			return scan_error(scan, "TOOBIG", "Literal too big");
		size = size * 10 + digit;
		p++;
	}
	if (p == digits)
		return scan_error(scan, "", "Invalid literal");
	if (p < scan->end && *p == '+')
		p++;
	if (p + 1 >= scan->end || p[0] != '}' || p[1] != '\n')
		return scan_error(scan, "", "Literal must end its line");
	p += 2;
	const struct mt_imap_streamed *st = streamed_at(scan->parser,
						       (size_t)(p - scan->parser->input.data));
	if (st != NULL) {
		if (st->nul && !binary)
			return scan_error(scan, "", "NUL in literal");
		struct mt_imap_arg *arg = push(scan, MT_IMAP_ARG_LITERAL);
		if (arg == NULL)
			return false;
		arg->binary = binary;
		arg->streamed = true;
		arg->str = p;		/* our '\0': "" */
		arg->len = 0;
		arg->streamed_size = st->size;
		scan->p = p + 1;
		return true;
	}
	if (size >= (uint64_t)(scan->end - p))
		return scan_error(scan, "", "Literal cut short");
	if (!binary && memchr(p, '\0', (size_t)size) != NULL)
		return scan_error(scan, "", "NUL in literal");
	struct mt_imap_arg *arg = push(scan, MT_IMAP_ARG_LITERAL);
	if (arg == NULL)
		return false;
	arg->binary = binary;
	arg->str = p;
	arg->len = (size_t)size;
	scan->p = p + size + 1;	/* past our '\0' */
	return true;
}

static bool scan_token(struct scan *scan)
{
	char c = *scan->p;
	if (c == '"')
		return scan_quoted(scan);
	if (c == '{' || (c == '~' && scan->p + 1 < scan->end && scan->p[1] == '{'))
		return scan_literal(scan);
	return scan_atom(scan);
}

/* args after "tag SP name SP": tokens separated by one SP, lists nested to
 * depth_max, up to the command's final '\n'. */
static bool scan_args(struct scan *scan, size_t *frames)
{
	unsigned int depth = 0;
	bool want_token = true;
	for (;;) {
		if (scan->p >= scan->end)
			return scan_error(scan, "", "Command cut short");
		char c = *scan->p;
		if (want_token) {
			if (c == '(') {
				if (depth >= scan->parser->limits.depth_max)
					return scan_error(scan, "TOOBIG", "Lists nested too deep");
				frames[depth++] = scan->pushed;
				scan->p++;
				if (scan->p < scan->end && *scan->p == ')')
					want_token = false;	/* "()" */
				continue;
			}
			if (c == ' ' || c == ')' || c == '\n')
				return scan_error(scan, "", "Missing argument (extra space?)");
			if (!scan_token(scan))
				return false;
			want_token = false;
			continue;
		}
		if (c == ' ') {
			scan->p++;
			want_token = true;
		} else if (c == ')') {
			if (depth == 0)
				return scan_error(scan, "", "Unexpected ')'");
			size_t from = frames[--depth];
			size_t count = scan->pushed - from;
			size_t members = keep_nodes(scan, from);
			struct mt_imap_arg *list = push(scan, MT_IMAP_ARG_LIST);
			if (list == NULL)
				return false;
			list->list = (const struct mt_imap_arg *)(uintptr_t)members;
			list->len = count;
			scan->p++;
		} else if (c == '\n') {
			if (depth > 0)
				return scan_error(scan, "", "Missing ')'");
			if (scan->p + 1 != scan->end)
				return scan_error(scan, "", "Command cut short");
			return true;
		} else {
			return scan_error(scan, "", "Missing space between arguments");
		}
	}
}

static enum mt_imap_parse tokenize(struct mt_imap_parser *parser)
{
	struct mt_buf *input = &parser->input;
	struct scan scan = { .parser = parser, .p = input->data,
			     .end = input->data + input->len };
	note_tag(parser, input->data, input->len);
	/* Every string fits its raw octets plus a NUL: reserving that once
	 * means no string moves while the tree is built. */
	mt_buf_reset(&parser->strings);
	mt_buf_reserve(&parser->strings, input->len + parser->limits.args_max + 2);

	const char *p = scan.p;
	while (p < scan.end && is_tag_char((unsigned char)*p))
		p++;
	if (p == scan.p || p >= scan.end || *p != ' ' || p - scan.p > MT_IMAP_TAG_MAX)
		return fail(parser, MT_IMAP_PARSE_ERROR, "",
			    scan.p[0] == '\n' ? "Empty command line" : "Missing or invalid tag");
	const char *tag = keep_string(&scan, scan.p, (size_t)(p - scan.p));
	scan.p = ++p;
	while (p < scan.end && is_atom_char((unsigned char)*p) && *p != '[' && *p != ']' &&
	       *p != '%' && *p != '*')
		p++;
	if (p == scan.p || p >= scan.end || (*p != ' ' && *p != '\n'))
		return fail(parser, MT_IMAP_PARSE_ERROR, "", "Missing or invalid command name");
	const char *name = keep_string(&scan, scan.p, (size_t)(p - scan.p));
	scan.p = p;
	if (*p == ' ') {
		scan.p++;
		if (!scan_args(&scan, parser->frames))
			return fail(parser, MT_IMAP_PARSE_ERROR, scan.code, scan.error);
	} else if (p + 1 != scan.end) {
		return fail(parser, MT_IMAP_PARSE_ERROR, "", "Command cut short");
	}
	parser->command.tag = tag;
	parser->command.name = name;
	parser->command.count = scan.pushed;
	size_t args = keep_nodes(&scan, 0);
	link_lists(parser, scan.kept);
	parser->command.args = parser->nodes != NULL ? parser->nodes + args : NULL;
	parser->state = STATE_END;
	return MT_IMAP_PARSE_DONE;
}

/* ---- arguments ---- */

bool mt_imap_arg_is_nil(const struct mt_imap_arg *arg)
{
	return mt_imap_arg_atom_is(arg, "NIL");
}

bool mt_imap_arg_atom_is(const struct mt_imap_arg *arg, const char *word)
{
	return arg->type == MT_IMAP_ARG_ATOM && strcasecmp(arg->str, word) == 0;
}

bool mt_imap_arg_string(const struct mt_imap_arg *arg, const char **str_r, size_t *len_r)
{
	if (arg->type != MT_IMAP_ARG_QUOTED &&
	    (arg->type != MT_IMAP_ARG_LITERAL || arg->binary || arg->streamed))
		return false;
	*str_r = arg->str;
	*len_r = arg->len;
	return true;
}

/* ASTRING-CHAR = ATOM-CHAR / resp-specials: no '%' '*' (list-wildcards),
 * no leading '\\', nothing a FETCH section holds ('[' itself is an
 * ATOM-CHAR: "a[b" is an astring). */
bool mt_imap_arg_astring(const struct mt_imap_arg *arg, const char **str_r, size_t *len_r)
{
	if (arg->type != MT_IMAP_ARG_ATOM)
		return mt_imap_arg_string(arg, str_r, len_r);
	if (strpbrk(arg->str, "%*\\ ()\"{") != NULL)
		return false;
	*str_r = arg->str;
	*len_r = arg->len;
	return true;
}

/* ---- sequence sets ---- */

/* seq-number = nz-number / "*"; nz-number fits 32 bits (RFC 9051 9). */
static const char *seq_number(const char *p, uint32_t *n_r)
{
	if (*p == '*') {
		*n_r = MT_IMAP_SEQ_STAR;
		return p + 1;
	}
	if (*p < '1' || *p > '9')
		return NULL;
	uint64_t n = 0;
	while (*p >= '0' && *p <= '9') {
		n = n * 10 + (uint64_t)(*p - '0');
		if (n > UINT32_MAX)
			return NULL;
		p++;
	}
	*n_r = (uint32_t)n;
	return p;
}

bool mt_imap_seqset_parse(const char *text, struct mt_imap_seqset *set,
			  struct mt_imap_seq_range *ranges, size_t max_ranges)
{
	set->saved = false;
	set->count = 0;
	set->ranges = ranges;
	if (strcmp(text, "$") == 0) {
		set->saved = true;
		return true;
	}
	const char *p = text;
	for (;;) {
		uint32_t low, high;
		p = seq_number(p, &low);
		if (p == NULL)
			return false;
		high = low;
		if (*p == ':') {
			p = seq_number(p + 1, &high);
			if (p == NULL)
				return false;
		}
		if (set->count >= max_ranges)
			return false;
		ranges[set->count].low = low < high ? low : high;
		ranges[set->count].high = low < high ? high : low;
		set->count++;
		if (*p == '\0')
			return true;
		if (*p != ',')
			return false;
		p++;
	}
}

bool mt_imap_seqset_contains(const struct mt_imap_seqset *set, uint32_t n,
			     uint32_t largest)
{
	for (size_t i = 0; i < set->count; i++) {
		uint32_t low = set->ranges[i].low, high = set->ranges[i].high;
		if (low == MT_IMAP_SEQ_STAR)
			low = largest;
		if (high == MT_IMAP_SEQ_STAR)
			high = largest;
		if (low > high) {
			uint32_t t = low;
			low = high;
			high = t;
		}
		if (n >= low && n <= high)
			return true;
	}
	return false;
}
