/* test-imap-parse.c — unit tests for lib-mail/imap-parse.c, the IMAP
 * command reader: tags, names, atoms (flags, wildcards, FETCH sections),
 * quoted strings, synchronising and non-synchronising literals and
 * literal8, nested lists; the same command fed whole and one byte at a
 * time; where a command ends in the caller's input; every limit (line,
 * literal, command, depth, arguments, LITERAL-) with the reply the client
 * gets and whether the stream can still be followed; and sequence sets. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "imap-parse.h"

static const struct mt_imap_limits limits = {
	.line_max = 200, .literal_max = 10000, .command_max = 20000,
	.depth_max = 4, .args_max = 40, .literal_plus = true,
};

/* The command's arguments written back in one canonical form: atoms bare,
 * strings as "text", literals as {len:text}, lists in parentheses. */
static void show_args(struct mt_buf *out, const struct mt_imap_arg *args, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		const struct mt_imap_arg *arg = &args[i];
		if (i > 0)
			mt_buf_append_char(out, ' ');
		switch (arg->type) {
		case MT_IMAP_ARG_ATOM:
			mt_buf_append_str(out, arg->str);
			break;
		case MT_IMAP_ARG_QUOTED:
			mt_buf_appendf(out, "\"%s\"", arg->str);
			break;
		case MT_IMAP_ARG_LITERAL:
			mt_buf_appendf(out, "%s{%zu:", arg->binary ? "~" : "", arg->len);
			mt_buf_append(out, arg->str, arg->len);
			mt_buf_append_char(out, '}');
			break;
		case MT_IMAP_ARG_LIST:
			mt_buf_append_char(out, '(');
			show_args(out, arg->list, arg->len);
			mt_buf_append_char(out, ')');
			break;
		}
	}
}

struct outcome {
	enum mt_imap_parse result;
	size_t used;
	unsigned int continuations;	/* LITERAL results on the way */
	char shown[512];		/* "tag name args" or "tag|code|error" */
};

/* Feed input in pieces of step octets (0: whole) until a final result. */
static void run(const char *input, size_t len, size_t step,
		const struct mt_imap_limits *lim, struct outcome *out)
{
	struct mt_imap_parser parser;
	mt_imap_parser_init(&parser, lim);
	memset(out, 0, sizeof(*out));
	size_t at = 0;
	enum mt_imap_parse result = MT_IMAP_PARSE_MORE;
	while (at < len) {
		size_t n = step == 0 || len - at < step ? len - at : step, used;
		result = mt_imap_parser_feed(&parser, input + at, n, &used);
		assert_true(used <= n);
		at += used;
		if (result == MT_IMAP_PARSE_LITERAL) {
			out->continuations++;
			continue;
		}
		if (result != MT_IMAP_PARSE_MORE)
			break;
		assert_int_equal(used, n);
	}
	out->result = result;
	out->used = at;
	struct mt_buf shown = MT_BUF_INIT;
	if (result == MT_IMAP_PARSE_DONE) {
		mt_buf_appendf(&shown, "%s %s", parser.command.tag, parser.command.name);
		if (parser.command.count > 0) {
			mt_buf_append_char(&shown, ' ');
			show_args(&shown, parser.command.args, parser.command.count);
		}
	} else if (result == MT_IMAP_PARSE_ERROR || result == MT_IMAP_PARSE_FATAL) {
		mt_buf_appendf(&shown, "%s|%s|%s", parser.tag, parser.error_code, parser.error);
	}
	snprintf(out->shown, sizeof(out->shown), "%s", mt_buf_cstr(&shown));
	mt_buf_free(&shown);
	mt_imap_parser_free(&parser);
}

static void run_text(const char *input, const struct mt_imap_limits *lim,
		     struct outcome *out)
{
	run(input, strlen(input), 0, lim, out);
}

struct parse_case {
	const char *input;
	size_t len;
	enum mt_imap_parse result;
	const char *shown;
	unsigned int continuations;
};

#define S(literal) literal, sizeof(literal) - 1
#define DONE MT_IMAP_PARSE_DONE
#define ERROR MT_IMAP_PARSE_ERROR
#define FATAL MT_IMAP_PARSE_FATAL

static const struct parse_case cases[] = {
	{ S("a1 NOOP\r\n"), DONE, "a1 NOOP", 0 },
	{ S("a1 noop\n"), DONE, "a1 noop", 0 },	/* bare LF */
	{ S("x LOGIN user \"pa\\\"s\\\\s\"\r\n"), DONE, "x LOGIN user \"pa\"s\\s\"", 0 },
	{ S("A003 FETCH 1:*,7 (FLAGS BODY.PEEK[HEADER.FIELDS (From \"To\")]<0.100>)\r\n"), DONE,
	  "A003 FETCH 1:*,7 (FLAGS BODY.PEEK[HEADER.FIELDS (From \"To\")]<0.100>)", 0 },
	{ S("a STORE 2 +FLAGS.SILENT (\\Seen \\Deleted $Junk)\r\n"), DONE,
	  "a STORE 2 +FLAGS.SILENT (\\Seen \\Deleted $Junk)", 0 },
	{ S("a LIST \"\" %/*\r\n"), DONE, "a LIST \"\" %/*", 0 },
	{ S("a SEARCH () (()) NIL\r\n"), DONE, "a SEARCH () (()) NIL", 0 },
	{ S("a LOGIN {4}\r\nuser {3+}\r\npwd\r\n"), DONE, "a LOGIN {4:user} {3:pwd}", 1 },
	{ S("a APPEND INBOX (\\Seen) {12}\r\nHello\r\nWorld\r\n"), DONE,
	  "a APPEND INBOX (\\Seen) {12:Hello\r\nWorld}", 1 },
	{ S("a APPEND INBOX ~{3}\r\nA\0B\r\n"), DONE, "a APPEND INBOX ~{3:A\0B}", 1 },
	{ S("a LOGIN {0}\r\n {0+}\r\n\r\n"), DONE, "a LOGIN {0:} {0:}", 1 },
	{ S("a SELECT \"Entw\xc3\xbcrfe\"\r\n"), DONE, "a SELECT \"Entw\xc3\xbcrfe\"", 0 },
	/* syntax errors: the tag when there is one, the stream followed */
	{ S("a LOGIN \"user\r\n"), ERROR, "a||Unterminated quoted string", 0 },
	{ S("a LOGIN \"u\\x\"\r\n"), ERROR, "a||Invalid escape in quoted string", 0 },
	{ S("a LOGIN  user\r\n"), ERROR, "a||Missing argument (extra space?)", 0 },
	{ S("a NOOP \r\n"), ERROR, "a||Missing argument (extra space?)", 0 },
	{ S("a FETCH 1 (FLAGS\r\n"), ERROR, "a||Missing ')'", 0 },
	{ S("a FETCH 1 FLAGS)\r\n"), ERROR, "a||Unexpected ')'", 0 },
	{ S("a FETCH 1 (A)(B)\r\n"), ERROR, "a||Missing space between arguments", 0 },
	{ S("a FETCH 1 BODY[1\r\n"), ERROR, "a||Missing ']'", 0 },
	{ S("a FETCH 1 (body.peek[1 2] BINARY.SIZE[1])\r\n"), DONE,
	  "a FETCH 1 (body.peek[1 2] BINARY.SIZE[1])", 0 },
	/* '[' is an ATOM-CHAR outside a FETCH section (RFC 9051 9) */
	{ S("a SELECT a[b\r\n"), DONE, "a SELECT a[b", 0 },
	{ S("a LIST \"\" a[b%\r\n"), DONE, "a LIST \"\" a[b%", 0 },
	{ S("a CREATE [x] y]\r\n"), DONE, "a CREATE [x] y]", 0 },
	{ S("a SELECT XBODY[1 2]\r\n"), DONE, "a SELECT XBODY[1 2]", 0 },
	{ S("a LOGIN {3} x\r\n"), ERROR, "a||Literal must end its line", 0 },
	{ S("a LOGIN \xc3\xa9\r\n"), ERROR, "a||Invalid characters in atom", 0 },
	{ S("a LOGIN {3}\r\nA\0B\r\n"), ERROR, "a||NUL in literal", 1 },
	{ S("\r\n"), ERROR, "||Empty command line", 0 },
	{ S("+ NOOP\r\n"), ERROR, "||Missing or invalid tag", 0 },
	{ S("a\r\n"), ERROR, "||Missing or invalid tag", 0 },
	{ S("a (NOOP)\r\n"), ERROR, "a||Missing or invalid command name", 0 },
	{ S("a X (((((1)))))\r\n"), ERROR, "a|TOOBIG|Lists nested too deep", 0 },
	{ S("a X ((((1))))\r\n"), DONE, "a X ((((1))))", 0 },
	/* limits */
	{ S("a LOGIN {10001}\r\n"), ERROR, "a|TOOBIG|Literal too big", 0 },
	{ S("a LOGIN {10001+}\r\n"), FATAL, "a|TOOBIG|Literal too big", 0 },
	{ S("a LOGIN {99999999999999999999999}\r\n"), ERROR, "a|TOOBIG|Literal too big", 0 },
};

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct parse_case *c = &cases[i];
		size_t len = c->len;
		for (size_t step = 0; step <= 1; step++) {
			struct outcome out;
			run(c->input, len, step, &limits, &out);
			if (out.result != c->result ||
			    memcmp(out.shown, c->shown, strlen(c->shown) + 1) != 0)
				fail_msg("case %zu (step %zu) %s: got %d \"%s\"", i, step,
					 c->input, out.result, out.shown);
			assert_int_equal(out.continuations, c->continuations);
			assert_int_equal(out.used, len);
		}
	}
}

/* A literal8's NUL survives (its length says where it ends). */
static void test_binary_literal(void **state)
{
	(void)state;
	static const char in[] = "a APPEND INBOX ~{3}\r\nA\0B\r\n";
	struct mt_imap_parser parser;
	mt_imap_parser_init(&parser, &limits);
	size_t used;
	assert_int_equal(mt_imap_parser_feed(&parser, in, sizeof(in) - 1, &used),
			 MT_IMAP_PARSE_LITERAL);
	assert_int_equal(mt_imap_parser_feed(&parser, in + used, sizeof(in) - 1 - used, &used),
			 MT_IMAP_PARSE_DONE);
	const struct mt_imap_arg *arg = &parser.command.args[1];
	assert_int_equal(arg->type, MT_IMAP_ARG_LITERAL);
	assert_true(arg->binary);
	assert_int_equal(arg->len, 3);
	assert_memory_equal(arg->str, "A\0B", 4);
	const char *s;
	size_t n;
	assert_false(mt_imap_arg_string(arg, &s, &n));
	mt_imap_parser_free(&parser);
}

/* The parser takes one command and leaves the next in the caller's input;
 * after reset the next parses on its own. */
static void test_command_boundary(void **state)
{
	(void)state;
	static const char in[] = "a NOOP\r\nb IDLE\r\nDONE\r\n";
	struct mt_imap_parser parser;
	mt_imap_parser_init(&parser, &limits);
	size_t used, at = 0;
	assert_int_equal(mt_imap_parser_feed(&parser, in, sizeof(in) - 1, &used),
			 MT_IMAP_PARSE_DONE);
	assert_int_equal(used, 8);
	assert_string_equal(parser.command.name, "NOOP");
	/* DONE again until reset */
	at = used;
	assert_int_equal(mt_imap_parser_feed(&parser, in + at, sizeof(in) - 1 - at, &used),
			 MT_IMAP_PARSE_MORE);
	assert_int_equal(used, 0);
	mt_imap_parser_reset(&parser);
	assert_int_equal(mt_imap_parser_feed(&parser, in + at, sizeof(in) - 1 - at, &used),
			 MT_IMAP_PARSE_DONE);
	assert_string_equal(parser.command.tag, "b");
	assert_string_equal(parser.command.name, "IDLE");
	assert_string_equal(in + at + used, "DONE\r\n");
	mt_imap_parser_free(&parser);
}

/* Over-long lines are skipped to their end with the tag kept; the next
 * command is read as usual. A skipped line that announced a
 * non-synchronising literal cannot be followed. */
static void test_long_line(void **state)
{
	(void)state;
	struct mt_buf in = MT_BUF_INIT;
	mt_buf_append_str(&in, "t7 LOGIN ");
	for (int i = 0; i < 500; i++)
		mt_buf_append_char(&in, 'x');
	mt_buf_append_str(&in, "\r\nt8 NOOP\r\n");
	for (size_t step = 0; step <= 7; step += 7) {
		struct mt_imap_parser parser;
		mt_imap_parser_init(&parser, &limits);
		size_t at = 0, used;
		enum mt_imap_parse r = MT_IMAP_PARSE_MORE;
		while (r == MT_IMAP_PARSE_MORE && at < in.len) {
			size_t n = step == 0 || in.len - at < step ? in.len - at : step;
			r = mt_imap_parser_feed(&parser, in.data + at, n, &used);
			at += used;
		}
		assert_int_equal(r, MT_IMAP_PARSE_ERROR);
		assert_string_equal(parser.tag, "t7");
		assert_string_equal(parser.error_code, "TOOBIG");
		assert_string_equal(in.data + at, "t8 NOOP\r\n");
		mt_imap_parser_reset(&parser);
		assert_int_equal(mt_imap_parser_feed(&parser, in.data + at, in.len - at, &used),
				 MT_IMAP_PARSE_DONE);
		assert_string_equal(parser.command.tag, "t8");
		mt_imap_parser_free(&parser);
	}
	mt_buf_reset(&in);
	mt_buf_append_str(&in, "t9 APPEND ");
	for (int i = 0; i < 500; i++)
		mt_buf_append_char(&in, 'x');
	mt_buf_append_str(&in, " {5+}\r\nhello\r\n");
	struct outcome out;
	run(in.data, in.len, 3, &limits, &out);
	assert_int_equal(out.result, MT_IMAP_PARSE_FATAL);
	assert_string_equal(out.shown, "t9|TOOBIG|Command line too long");
	mt_buf_free(&in);
}

/* A synchronising literal refused is not sent by the client: the next
 * line is a new command. LITERAL- (RFC 7888 4) bounds the other kind. */
static void test_literal_limits(void **state)
{
	(void)state;
	struct mt_imap_parser parser;
	mt_imap_parser_init(&parser, &limits);
	static const char in[] = "a LOGIN {20000}\r\nb NOOP\r\n";
	size_t used;
	assert_int_equal(mt_imap_parser_feed(&parser, in, sizeof(in) - 1, &used),
			 MT_IMAP_PARSE_ERROR);
	assert_string_equal(in + used, "b NOOP\r\n");
	mt_imap_parser_reset(&parser);
	assert_int_equal(mt_imap_parser_feed(&parser, in + used, 8, &used), MT_IMAP_PARSE_DONE);
	mt_imap_parser_free(&parser);

	struct mt_imap_limits minus = limits;
	minus.literal_plus = false;
	struct outcome out;
	run("a APPEND X {4097+}\r\n", 20, 0, &minus, &out);
	assert_int_equal(out.result, MT_IMAP_PARSE_FATAL);
	assert_string_equal(out.shown, "a|TOOBIG|Non-synchronizing literal over 4096 octets");
	run("a APPEND X {4097+}\r\n", 20, 0, &limits, &out);
	assert_int_equal(out.result, MT_IMAP_PARSE_MORE);
	run("a APPEND X {4097}\r\n", 19, 0, &minus, &out);
	assert_int_equal(out.continuations, 1);

	/* an APPEND's message may have a bound of its own, above every
	 * other literal's (issue 37: a SEARCH literal held whole) */
	struct mt_imap_limits append = limits;
	append.literal_max = 100;
	append.append_literal_max = 5000;
	run_text("a APPEND INBOX {4000}\r\n", &append, &out);
	assert_int_equal(out.continuations, 1);
	run_text("a append INBOX (\\Seen) {4000+}\r\n", &append, &out);
	assert_int_equal(out.result, MT_IMAP_PARSE_MORE);
	run_text("a APPEND INBOX {5001}\r\n", &append, &out);
	assert_string_equal(out.shown, "a|TOOBIG|Literal too big");
	run_text("a SEARCH TEXT {101}\r\n", &append, &out);
	assert_string_equal(out.shown, "a|TOOBIG|Literal too big");
	run_text("a APPENDX INBOX {101}\r\n", &append, &out);
	assert_string_equal(out.shown, "a|TOOBIG|Literal too big");
	run_text("a SEARCH TEXT {100}\r\n", &append, &out);
	assert_int_equal(out.continuations, 1);

	/* new limits from the next command on (a login) */
	mt_imap_parser_init(&parser, &limits);
	static const char big[] = "a LOGIN {5000}\r\n";
	assert_int_equal(mt_imap_parser_feed(&parser, big, sizeof(big) - 1, &used),
			 MT_IMAP_PARSE_LITERAL);
	mt_imap_parser_reset(&parser);
	struct mt_imap_limits tight = limits;
	tight.literal_max = 10;
	tight.depth_max = 1;
	mt_imap_parser_set_limits(&parser, &tight);
	assert_int_equal(mt_imap_parser_feed(&parser, big, sizeof(big) - 1, &used),
			 MT_IMAP_PARSE_ERROR);
	mt_imap_parser_reset(&parser);
	static const char nested[] = "a X ((1))\r\n";
	assert_int_equal(mt_imap_parser_feed(&parser, nested, sizeof(nested) - 1, &used),
			 MT_IMAP_PARSE_ERROR);
	assert_string_equal(parser.error, "Lists nested too deep");
	mt_imap_parser_free(&parser);

	/* the whole command's bound counts literals too */
	struct mt_imap_limits small = limits;
	small.command_max = 40;
	run("a LOGIN {10}\r\n0123456789 {20}\r\n", 32, 0, &small, &out);
	assert_int_equal(out.result, MT_IMAP_PARSE_ERROR);
	assert_string_equal(out.shown, "a|TOOBIG|Literal too big");
	/* and the argument count */
	struct mt_imap_limits few = limits;
	few.args_max = 3;
	run("a X 1 2 3\r\n", 11, 0, &few, &out);
	assert_int_equal(out.result, MT_IMAP_PARSE_DONE);
	run("a X 1 (2 3)\r\n", 13, 0, &few, &out);
	assert_string_equal(out.shown, "a|TOOBIG|Too many arguments");
}

/* An APPEND's message streams to the caller (stream_literal_min): the
 * parser keeps none of its octets, checks them for NUL, and the command
 * reads with the literal in its place (streamed, len its size); the
 * mailbox name, even as a literal, is gathered as usual. */
static void test_stream(void **state)
{
	(void)state;
	struct mt_imap_limits lim = limits;
	lim.literal_max = 100;
	lim.append_literal_max = 100000;
	lim.stream_literal_min = 1;
	static const struct {
		const char *head, *message, *tail;
		size_t mlen;
		bool sync;
		enum mt_imap_parse result;
		const char *shown;
	} stream_cases[] = {
		{ "a APPEND INBOX (\\Seen) {12}\r\n", "Hello\r\nWorld", "\r\n", 12, true, DONE,
		  "a APPEND INBOX (\\Seen) {0:}" },
		{ "a APPEND INBOX ~{3+}\r\n", "A\0B", "\r\n", 3, false, DONE,
		  "a APPEND INBOX ~{0:}" },
		{ "a APPEND INBOX {3}\r\n", "A\0B", "\r\n", 3, true, ERROR,
		  "a||NUL in literal" },
		{ "a APPEND INBOX {3}\r\n", "abc", " extra\r\n", 3, true, DONE,
		  "a APPEND INBOX {0:} extra" },
	};
	for (size_t i = 0; i < sizeof(stream_cases) / sizeof(stream_cases[0]); i++) {
		for (size_t step = 0; step <= 1; step++) {
			struct mt_imap_parser parser;
			mt_imap_parser_init(&parser, &lim);
			size_t used, len = strlen(stream_cases[i].head);
			assert_int_equal(mt_imap_parser_feed(&parser, stream_cases[i].head, len, &used),
					 MT_IMAP_PARSE_STREAM);
			assert_int_equal(used, len);
			assert_true(parser.stream_sync == stream_cases[i].sync);
			const char *m = stream_cases[i].message;
			size_t mlen = stream_cases[i].mlen;
			assert_int_equal(mt_imap_parser_stream_left(&parser), mlen);
			/* the stream takes its octets and no more */
			if (step == 0) {
				char piece[32];
				memcpy(piece, m, mlen);
				memcpy(piece + mlen, "next", 4);
				assert_int_equal(mt_imap_parser_stream(&parser, piece, mlen + 4),
						 mlen);
			} else {
				for (size_t k = 0; k < mlen; k++)
					assert_int_equal(mt_imap_parser_stream(&parser, m + k, 1), 1);
			}
			assert_int_equal(mt_imap_parser_stream_left(&parser), 0);
			assert_int_equal(mt_imap_parser_stream(&parser, "x", 1), 0);
			const char *tail = stream_cases[i].tail;
			enum mt_imap_parse r = mt_imap_parser_feed(&parser, tail, strlen(tail), &used);
			assert_int_equal(r, stream_cases[i].result);
			struct mt_buf shown = MT_BUF_INIT;
			if (r == DONE) {
				mt_buf_appendf(&shown, "%s %s ", parser.command.tag, parser.command.name);
				show_args(&shown, parser.command.args, parser.command.count);
				const struct mt_imap_arg *last = NULL;
				for (size_t k = 0; k < parser.command.count; k++)
					if (parser.command.args[k].type == MT_IMAP_ARG_LITERAL)
						last = &parser.command.args[k];
				assert_non_null(last);
				assert_true(last->streamed);
				assert_int_equal(last->len, 0);
				assert_int_equal(last->streamed_size, mlen);
				const char *str;
				size_t slen;
				assert_false(mt_imap_arg_string(last, &str, &slen));
			} else {
				mt_buf_appendf(&shown, "%s|%s|%s", parser.tag, parser.error_code,
					       parser.error);
			}
			assert_string_equal(mt_buf_cstr(&shown), stream_cases[i].shown);
			mt_buf_free(&shown);
			/* the next command reads as usual */
			mt_imap_parser_reset(&parser);
			assert_int_equal(mt_imap_parser_feed(&parser, "b NOOP\r\n", 8, &used), DONE);
			mt_imap_parser_free(&parser);
		}
	}

	/* The mailbox name as a literal is no message: gathered, and bound
	 * by literal_max. */
	struct outcome out;
	run_text("a APPEND {5}\r\nDraft {4}\r\n", &lim, &out);
	assert_int_equal(out.result, MT_IMAP_PARSE_STREAM);
	assert_int_equal(out.continuations, 1);
	run_text("a APPEND {101}\r\n", &lim, &out);
	assert_string_equal(out.shown, "a|TOOBIG|Literal too big");
	/* other commands never stream */
	run_text("a SEARCH TEXT {10}\r\n", &lim, &out);
	assert_int_equal(out.continuations, 1);
	assert_int_equal(out.result, MT_IMAP_PARSE_LITERAL);
}

static void test_arg_helpers(void **state)
{
	(void)state;
	struct mt_imap_parser parser;
	mt_imap_parser_init(&parser, &limits);
	static const char in[] = "a X nil abc \"q\" %x \\Seen BODY[1] BODY[1 2] a[b\r\n";
	size_t used;
	assert_int_equal(mt_imap_parser_feed(&parser, in, sizeof(in) - 1, &used),
			 MT_IMAP_PARSE_DONE);
	const struct mt_imap_arg *a = parser.command.args;
	const char *s;
	size_t n;
	assert_int_equal(parser.command.count, 8);
	assert_true(mt_imap_arg_is_nil(&a[0]));
	assert_false(mt_imap_arg_is_nil(&a[1]));
	assert_true(mt_imap_arg_astring(&a[1], &s, &n));
	assert_string_equal(s, "abc");
	assert_false(mt_imap_arg_string(&a[1], &s, &n));
	assert_true(mt_imap_arg_string(&a[2], &s, &n));
	assert_int_equal(n, 1);
	assert_false(mt_imap_arg_astring(&a[3], &s, &n));
	assert_false(mt_imap_arg_astring(&a[4], &s, &n));
	assert_true(mt_imap_arg_atom_is(&a[4], "\\seen"));
	/* '[' and ']' are astring characters (RFC 9051 9); a section's space
	 * is not */
	assert_true(mt_imap_arg_astring(&a[5], &s, &n));
	assert_false(mt_imap_arg_astring(&a[6], &s, &n));
	assert_true(mt_imap_arg_astring(&a[7], &s, &n));
	assert_string_equal(s, "a[b");
	mt_imap_parser_free(&parser);
}

static void test_seqset(void **state)
{
	(void)state;
	struct mt_imap_seq_range ranges[4];
	struct mt_imap_seqset set;
	assert_true(mt_imap_seqset_parse("1,3:5,9:*", &set, ranges, 4));
	assert_int_equal(set.count, 3);
	assert_false(set.saved);
	assert_true(mt_imap_seqset_contains(&set, 1, 20));
	assert_false(mt_imap_seqset_contains(&set, 2, 20));
	assert_true(mt_imap_seqset_contains(&set, 4, 20));
	assert_true(mt_imap_seqset_contains(&set, 20, 20));
	assert_false(mt_imap_seqset_contains(&set, 8, 20));
	/* "9:*" with 6 messages is 6:9 (RFC 9051 9: order does not matter) */
	assert_true(mt_imap_seqset_contains(&set, 6, 6));
	assert_true(mt_imap_seqset_parse("5:2", &set, ranges, 4));
	assert_int_equal(ranges[0].low, 2);
	assert_int_equal(ranges[0].high, 5);
	assert_true(mt_imap_seqset_parse("*", &set, ranges, 4));
	assert_true(mt_imap_seqset_contains(&set, 7, 7));
	assert_false(mt_imap_seqset_contains(&set, 6, 7));
	assert_true(mt_imap_seqset_parse("$", &set, ranges, 4));
	assert_true(set.saved);
	/* the largest UID is a number, not "*" */
	assert_true(mt_imap_seqset_parse("4294967295", &set, ranges, 4));
	assert_false(mt_imap_seqset_contains(&set, 7, 7));
	assert_true(mt_imap_seqset_contains(&set, 4294967295u, 7));
	static const char *const bad[] = {
		"", "0", "01", "1:", ":1", "1,", ",1", "1:2:3", "4294967296", "1 2", "$,1",
		"a", "1,2,3,4,5",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (mt_imap_seqset_parse(bad[i], &set, ranges, 4))
			fail_msg("\"%s\" taken as a sequence set", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_binary_literal),
		cmocka_unit_test(test_command_boundary),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_literal_limits),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_arg_helpers),
		cmocka_unit_test(test_seqset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
