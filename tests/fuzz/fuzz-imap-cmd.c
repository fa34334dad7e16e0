/* fuzz-imap-cmd.c — libFuzzer target for lib-mail/imap-parse.c, the IMAP
 * command reader every IMAP server tier uses (the store, the MMP's login
 * front), and its sequence-set reader.
 *
 * Properties, beyond "no crash, no over-read, no leak":
 *  - chunking never matters: the stream fed whole and fed in the input's
 *    chosen pieces (octet by octet, 1..7, random) gives the same results in
 *    the same order, the same octets used by each, the same number of "+"
 *    continuations, and the same tags, errors and argument trees;
 *  - a result uses only the octets of its command: each DONE, ERROR or
 *    FATAL ends exactly after a LF of the stream;
 *  - a command read is within the limits (arguments, nesting, every
 *    string NUL-terminated at its length, no NUL outside a literal8), and
 *    written back canonically (atoms bare, strings quoted with escapes,
 *    literals as {n+}) it reads back to the same tree;
 *  - an error's tag is empty or a valid tag; its code is "" or TOOBIG;
 *  - every atom that reads as a sequence set is contained where a
 *    reference check of its ranges says.
 *
 * Input: [mode] then the stream. mode bits 0-1: chunk strategy
 * (tests/fuzz/fuzz.h fuzz_chunk), bit 2: LITERAL+ offered, bits 3-4: the
 * limits (tight 64-octet lines and 2 levels, or roomy ones), bit 5: an
 * APPEND's message bounded apart (twice literal_max), bit 6: an APPEND's
 * message streamed (the caller takes its octets, in any chunking).
 * Trust boundary: IMAP client octets (RFC 9051 9, RFC 7888). */
#include "fuzz.h"

#include "alloc.h"
#include "buf.h"
#include "imap-parse.h"

#define RESULTS_MAX 64

struct trace {
	size_t count;
	enum mt_imap_parse result[RESULTS_MAX];
	size_t end[RESULTS_MAX];	/* stream offset after the result */
	unsigned int continuations;
	struct mt_buf shown;		/* every command and error, canonical */
};

static bool tag_valid(const char *tag)
{
	for (const char *p = tag; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;
		if (c <= 0x20 || c >= 0x7f || strchr("(){\"\\+%*", c) != NULL)
			return false;
	}
	return strlen(tag) <= MT_IMAP_TAG_MAX;
}

/* Canonical IMAP for args: parses back to the same tree. */
static void write_args(struct mt_buf *out, const struct mt_imap_arg *args, size_t count,
		       unsigned int depth, const struct mt_imap_limits *limits)
{
	FUZZ_CHECK(depth <= limits->depth_max, "nesting %u", depth);
	for (size_t i = 0; i < count; i++) {
		const struct mt_imap_arg *arg = &args[i];
		if (i > 0)
			mt_buf_append_char(out, ' ');
		if (arg->type != MT_IMAP_ARG_LIST) {
			FUZZ_CHECK(arg->str != NULL && arg->str[arg->len] == '\0', "unterminated");
			FUZZ_CHECK(arg->binary || memchr(arg->str, '\0', arg->len) == NULL,
				   "NUL in a %d", arg->type);
		}
		switch (arg->type) {
		case MT_IMAP_ARG_ATOM:
			FUZZ_CHECK(arg->len > 0, "empty atom");
			mt_buf_append(out, arg->str, arg->len);
			break;
		case MT_IMAP_ARG_QUOTED:
			mt_buf_append_char(out, '"');
			for (size_t k = 0; k < arg->len; k++) {
				FUZZ_CHECK(arg->str[k] != '\r' && arg->str[k] != '\n', "CR/LF quoted");
				if (arg->str[k] == '"' || arg->str[k] == '\\')
					mt_buf_append_char(out, '\\');
				mt_buf_append_char(out, arg->str[k]);
			}
			mt_buf_append_char(out, '"');
			break;
		case MT_IMAP_ARG_LITERAL:
			mt_buf_appendf(out, "%s{%zu+}\r\n", arg->binary ? "~" : "", arg->len);
			mt_buf_append(out, arg->str, arg->len);
			break;
		case MT_IMAP_ARG_LIST:
			mt_buf_append_char(out, '(');
			write_args(out, arg->list, arg->len, depth + 1, limits);
			mt_buf_append_char(out, ')');
			break;
		}
	}
}

static void write_command(struct mt_buf *out, const struct mt_imap_command *cmd,
			  const struct mt_imap_limits *limits)
{
	mt_buf_appendf(out, "%s %s", cmd->tag, cmd->name);
	if (cmd->count > 0) {
		mt_buf_append_char(out, ' ');
		write_args(out, cmd->args, cmd->count, 0, limits);
	}
	mt_buf_append_str(out, "\r\n");
}

/* Reference: a sequence set's membership for n, from the text itself. */
static bool ref_seq_number(const char **p, uint32_t largest, uint32_t *n_r)
{
	if (**p == '*') {
		(*p)++;
		*n_r = largest;
		return true;
	}
	uint64_t n = 0;
	if (**p < '1' || **p > '9')
		return false;
	while (**p >= '0' && **p <= '9') {
		n = n * 10 + (uint64_t)(**p - '0');
		if (n > 0xffffffffu)
			return false;
		(*p)++;
	}
	*n_r = (uint32_t)n;
	return true;
}

static int ref_seq_contains(const char *text, uint32_t n, uint32_t largest)
{
	const char *p = text;
	bool found = false;
	for (;;) {
		uint32_t a, b;
		if (!ref_seq_number(&p, largest, &a))
			return -1;
		b = a;
		if (*p == ':') {
			p++;
			if (!ref_seq_number(&p, largest, &b))
				return -1;
		}
		if ((n >= a && n <= b) || (n >= b && n <= a))
			found = true;
		if (*p == '\0')
			return found;
		if (*p++ != ',')
			return -1;
	}
}

static void check_seqsets(const struct mt_imap_arg *args, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (args[i].type == MT_IMAP_ARG_LIST) {
			check_seqsets(args[i].list, args[i].len);
			continue;
		}
		if (args[i].type != MT_IMAP_ARG_ATOM || strcmp(args[i].str, "$") == 0)
			continue;
		struct mt_imap_seq_range ranges[16];
		struct mt_imap_seqset set;
		bool ok = mt_imap_seqset_parse(args[i].str, &set, ranges, 16);
		static const uint32_t probes[] = { 1, 2, 3, 7, 100, 0xffffffffu };
		for (size_t k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
			int want = ref_seq_contains(args[i].str, probes[k], 7);
			if (!ok) {
				/* refused: not a set, or more than 16 ranges */
				FUZZ_CHECK(want < 0 || strchr(args[i].str, ',') != NULL,
					   "\"%s\" refused", args[i].str);
				continue;
			}
			FUZZ_CHECK(want >= 0, "\"%s\" taken", args[i].str);
			FUZZ_CHECK(mt_imap_seqset_contains(&set, probes[k], 7) == (want == 1),
				   "\"%s\" contains %u", args[i].str, probes[k]);
		}
	}
}

/* Parse the stream, in chunks by strategy; each result reset and the rest
 * fed on. check: the per-command properties (run once, on the whole feed). */
static void run(const uint8_t *data, size_t len, unsigned int strategy,
		const struct mt_imap_limits *limits, struct trace *trace, bool check)
{
	struct mt_imap_parser parser;
	uint32_t rng = (uint32_t)len * 2654435761u;
	mt_imap_parser_init(&parser, limits);
	size_t at = 0;
	while (at < len && trace->count < RESULTS_MAX) {
		size_t n = fuzz_chunk(strategy, &rng, len - at, 4096), used;
		enum mt_imap_parse r = mt_imap_parser_feed(&parser, data + at, n, &used);
		FUZZ_CHECK(used <= n, "used %zu of %zu", used, n);
		at += used;
		if (r == MT_IMAP_PARSE_LITERAL) {
			trace->continuations++;
			continue;
		}
		if (r == MT_IMAP_PARSE_STREAM) {
			/* An APPEND's message: its octets are ours, in any
			 * chunking; the parser takes exactly what is left. */
			if (parser.stream_sync)
				trace->continuations++;
			FUZZ_CHECK(used == 0 || data[at - 1] == '\n', "stream not after a LF");
			while (mt_imap_parser_stream_left(&parser) > 0 && at < len) {
				uint64_t left = mt_imap_parser_stream_left(&parser);
				size_t k = fuzz_chunk(strategy, &rng, len - at, 4096);
				size_t took = mt_imap_parser_stream(&parser, data + at, k);
				FUZZ_CHECK(took == (k < left ? k : (size_t)left), "stream took %zu of %zu",
					   took, k);
				at += took;
			}
			continue;
		}
		if (r == MT_IMAP_PARSE_MORE) {
			FUZZ_CHECK(used == n, "MORE with %zu of %zu used", used, n);
			continue;
		}
		FUZZ_CHECK(at > 0 && data[at - 1] == '\n', "result not after a LF");
		trace->result[trace->count] = r;
		trace->end[trace->count] = at;
		trace->count++;
		if (r == MT_IMAP_PARSE_DONE) {
			FUZZ_CHECK(parser.command.count <= limits->args_max, "too many args");
			size_t from = trace->shown.len;
			write_command(&trace->shown, &parser.command, limits);
			if (check) {
				check_seqsets(parser.command.args, parser.command.count);
				/* written back, it reads back the same */
				struct mt_imap_limits roomy = {
					.line_max = 1u << 20, .literal_max = 1u << 20,
					.command_max = 1u << 22, .depth_max = limits->depth_max,
					.args_max = limits->args_max, .literal_plus = true,
				};
				struct mt_imap_parser again;
				mt_imap_parser_init(&again, &roomy);
				size_t wlen = trace->shown.len - from, used2;
				char *written = mt_xmalloc(wlen);
				memcpy(written, trace->shown.data + from, wlen);
				enum mt_imap_parse r2 = mt_imap_parser_feed(&again, written, wlen, &used2);
				FUZZ_CHECK(r2 == MT_IMAP_PARSE_DONE && used2 == wlen,
					   "written back: %d, %zu of %zu", r2, used2, wlen);
				struct mt_buf rewritten = MT_BUF_INIT;
				write_command(&rewritten, &again.command, limits);
				FUZZ_CHECK(rewritten.len == wlen &&
					   memcmp(rewritten.data, written, wlen) == 0,
					   "round trip differs");
				mt_buf_free(&rewritten);
				free(written);
				mt_imap_parser_free(&again);
			}
		} else {
			FUZZ_CHECK(tag_valid(parser.tag), "bad tag kept");
			FUZZ_CHECK(strcmp(parser.error_code, "") == 0 ||
				   strcmp(parser.error_code, "TOOBIG") == 0, "code");
			FUZZ_CHECK(parser.error[0] != '\0', "no reason");
			mt_buf_appendf(&trace->shown, "%d %s|%s|%s\n", r, parser.tag,
				       parser.error_code, parser.error);
		}
		if (r == MT_IMAP_PARSE_FATAL)
			break;
		mt_imap_parser_reset(&parser);
	}
	mt_imap_parser_free(&parser);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	data++;
	size--;
	struct mt_imap_limits limits;
	if (mode & 0x18)
		limits = (struct mt_imap_limits){ .line_max = 1024, .literal_max = 4096,
						  .command_max = 8192, .depth_max = 8,
						  .args_max = 64 };
	else
		limits = (struct mt_imap_limits){ .line_max = 64, .literal_max = 100,
						  .command_max = 200, .depth_max = 2,
						  .args_max = 8 };
	limits.literal_plus = (mode & 4) != 0;
	/* An APPEND's literal may be bounded apart (the store's, after login). */
	if (mode & 0x20)
		limits.append_literal_max = limits.literal_max * 2;
	/* ... and streamed to the caller (the store's, after login). */
	if (mode & 0x40)
		limits.stream_literal_min = 1;

	struct trace whole = { .shown = MT_BUF_INIT }, chunked = { .shown = MT_BUF_INIT };
	run(data, size, 0, &limits, &whole, true);
	run(data, size, mode & 3, &limits, &chunked, false);
	FUZZ_CHECK(whole.count == chunked.count, "%zu results whole, %zu chunked",
		   whole.count, chunked.count);
	for (size_t i = 0; i < whole.count; i++)
		FUZZ_CHECK(whole.result[i] == chunked.result[i] && whole.end[i] == chunked.end[i],
			   "result %zu differs", i);
	FUZZ_CHECK(whole.continuations == chunked.continuations, "continuations differ");
	FUZZ_CHECK(whole.shown.len == chunked.shown.len &&
		   memcmp(mt_buf_cstr(&whole.shown), mt_buf_cstr(&chunked.shown), whole.shown.len) == 0,
		   "commands differ by chunking");
	mt_buf_free(&whole.shown);
	mt_buf_free(&chunked.shown);
	return 0;
}
