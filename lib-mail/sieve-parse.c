/* sieve-parse.c — RFC 5228's grammar over a script's text (see
 * sieve-parse.h): a lexer that reads one token at a time, skipping white
 * space and comments and counting lines, and a recursive descent over
 * commands, arguments and tests, bounded in depth and nodes.
 *
 * Trust boundary: the text is a user's script (untrusted); see the header.
 * RFC 5228 2.2-2.6 (lexical), 8.1-8.2 (grammar). */
#include "sieve-parse.h"

#include "alloc.h"
#include "buf.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct mt_sieve_limits mt_sieve_limits_default = {
	.depth_max = 16, .nodes_max = 10000, .list_max = 1024,
};

enum token {
	TOK_EOF,
	TOK_IDENTIFIER,
	TOK_TAG,
	TOK_NUMBER,
	TOK_STRING,
	TOK_PUNCT,		/* [ ] ( ) { } , ; */
};

struct parser {
	const char *text;
	size_t len, pos;
	unsigned int line;
	const struct mt_sieve_limits *limits;
	size_t nodes;
	unsigned int depth;
	/* The token read ahead, its line, and its value. */
	enum token tok;
	unsigned int tok_line;
	char punct;
	uint64_t number;
	struct mt_buf value;	/* identifier, tag name or string */
	bool failed;
	char *error;
	size_t error_size;
};

static bool fail(struct parser *p, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void mt_sieve_error_write(char *error, size_t size, unsigned int line, const char *fmt,
			  va_list ap)
{
	if (size == 0)
		return;
	int n = snprintf(error, size, "line %u: ", line);
	if (n >= 0 && (size_t)n < size)
		vsnprintf(error + n, size - (size_t)n, fmt, ap);
}

static bool fail(struct parser *p, unsigned int line, const char *fmt, ...)
{
	if (p->failed)
		return false;
	p->failed = true;
	va_list ap;
	va_start(ap, fmt);
	mt_sieve_error_write(p->error, p->error_size, line, fmt, ap);
	va_end(ap);
	return false;
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int peek(const struct parser *p, size_t ahead)
{
	return p->pos + ahead < p->len ? (unsigned char)p->text[p->pos + ahead] : -1;
}

/* White space, line ends and comments before the next token. */
static bool skip_space(struct parser *p)
{
	for (;;) {
		int c = peek(p, 0);
		if (c == ' ' || c == '\t' || c == '\r') {
			p->pos++;
		} else if (c == '\n') {
			p->pos++;
			p->line++;
		} else if (c == '#') {
			while (p->pos < p->len && p->text[p->pos] != '\n')
				p->pos++;
		} else if (c == '/' && peek(p, 1) == '*') {
			unsigned int opened = p->line;
			p->pos += 2;
			for (;;) {
				if (p->pos + 1 >= p->len)
					return fail(p, opened, "a comment opened here is not "
						    "closed (*/)");
				if (p->text[p->pos] == '*' && p->text[p->pos + 1] == '/') {
					p->pos += 2;
					break;
				}
				if (p->text[p->pos] == '\n')
					p->line++;
				p->pos++;
			}
		} else {
			return true;
		}
	}
}

static bool read_quoted(struct parser *p)
{
	unsigned int opened = p->line;
	p->pos++;	/* the opening quote */
	for (;;) {
		if (p->pos >= p->len)
			return fail(p, opened, "a string opened here is not closed (\")");
		char c = p->text[p->pos++];
		if (c == '"')
			return true;
		if (c == '\\') {
			if (p->pos >= p->len)
				return fail(p, opened, "a string opened here is not closed (\")");
			c = p->text[p->pos++];	/* \" and \\; any other: the octet */
		}
		if (c == '\n')
			p->line++;
		mt_buf_append_char(&p->value, c);
	}
}

/* After "text:": white space, then a comment or the line end; lines up to
 * a line of one ".", each with its dot-stuffing undone and a CRLF. */
static bool read_multiline(struct parser *p)
{
	unsigned int opened = p->line;
	while (peek(p, 0) == ' ' || peek(p, 0) == '\t')
		p->pos++;
	if (peek(p, 0) == '#') {
		while (p->pos < p->len && p->text[p->pos] != '\n')
			p->pos++;
	} else if (peek(p, 0) == '\r' && peek(p, 1) == '\n') {
		p->pos++;
	}
	if (peek(p, 0) != '\n')
		return fail(p, opened, "\"text:\" must end its line (a multi-line string "
			    "starts on the next one)");
	p->pos++;
	p->line++;
	for (;;) {
		if (p->pos >= p->len)
			return fail(p, opened, "a multi-line string opened here has no "
				    "closing line of a single \".\"");
		size_t start = p->pos;
		while (p->pos < p->len && p->text[p->pos] != '\n')
			p->pos++;
		size_t end = p->pos;
		bool had_lf = p->pos < p->len;
		if (had_lf) {
			p->pos++;
			p->line++;
		}
		if (end > start && p->text[end - 1] == '\r')
			end--;
		if (end - start == 1 && p->text[start] == '.') {
			if (!had_lf)
				return fail(p, opened, "a multi-line string's closing \".\" "
					    "must end its line");
			return true;
		}
		if (end > start && p->text[start] == '.')
			start++;	/* dot-stuffing */
		if (!had_lf)
			return fail(p, opened, "a multi-line string opened here has no "
				    "closing line of a single \".\"");
		mt_buf_append(&p->value, p->text + start, end - start);
		mt_buf_append(&p->value, "\r\n", 2);
	}
}

static bool read_number(struct parser *p)
{
	uint64_t n = 0;
	while (p->pos < p->len && is_digit(p->text[p->pos])) {
		unsigned int d = (unsigned int)(p->text[p->pos++] - '0');
		if (n > (UINT64_C(1) << 63) / 10 || n * 10 + d > UINT64_C(1) << 63)
			return fail(p, p->line, "a number too large (at most 2^63)");
		n = n * 10 + d;
	}
	unsigned int shift = 0;
	switch (peek(p, 0)) {
	case 'K': case 'k': shift = 10; break;
	case 'M': case 'm': shift = 20; break;
	case 'G': case 'g': shift = 30; break;
	default: break;
	}
	if (shift != 0) {
		p->pos++;
		if (n > (UINT64_C(1) << 63) >> shift)
			return fail(p, p->line, "a number too large (at most 2^63)");
		n <<= shift;
	}
	if (p->pos < p->len && (is_alpha(p->text[p->pos]) || is_digit(p->text[p->pos])))
		return fail(p, p->line, "a number followed by \"%c\" (only K, M or G may "
			    "follow one)", p->text[p->pos]);
	p->number = n;
	return true;
}

/* Read the next token into p->tok (and its value). */
static bool next(struct parser *p)
{
	mt_buf_reset(&p->value);
	if (!skip_space(p))
		return false;
	p->tok_line = p->line;
	int c = peek(p, 0);
	if (c < 0) {
		p->tok = TOK_EOF;
		return true;
	}
	if (strchr("[](){},;", c) != NULL) {
		p->tok = TOK_PUNCT;
		p->punct = (char)c;
		p->pos++;
		return true;
	}
	if (c == '"') {
		p->tok = TOK_STRING;
		return read_quoted(p);
	}
	if (is_digit((char)c)) {
		p->tok = TOK_NUMBER;
		return read_number(p);
	}
	bool tag = c == ':';
	if (tag)
		p->pos++;
	if (p->pos >= p->len || !is_alpha(p->text[p->pos]))
		return fail(p, p->line, tag ? "\":\" must begin a tag (:name)" :
			    "unexpected \"%c\"", c >= 0x21 && c < 0x7f ? c : '?');
	size_t start = p->pos;
	while (p->pos < p->len && (is_alpha(p->text[p->pos]) || is_digit(p->text[p->pos])))
		p->pos++;
	mt_buf_append(&p->value, p->text + start, p->pos - start);
	if (!tag && p->pos - start == 4 && strncasecmp(p->text + start, "text", 4) == 0 &&
	    peek(p, 0) == ':') {
		p->pos++;
		mt_buf_reset(&p->value);
		p->tok = TOK_STRING;
		return read_multiline(p);
	}
	p->tok = tag ? TOK_TAG : TOK_IDENTIFIER;
	return true;
}

static bool is_punct(const struct parser *p, char c)
{
	return p->tok == TOK_PUNCT && p->punct == c;
}

static const char *token_name(const struct parser *p)
{
	switch (p->tok) {
	case TOK_EOF: return "the end of the script";
	case TOK_IDENTIFIER: return "an identifier";
	case TOK_TAG: return "a tag";
	case TOK_NUMBER: return "a number";
	case TOK_STRING: return "a string";
	default: break;
	}
	switch (p->punct) {
	case '[': return "\"[\"";
	case ']': return "\"]\"";
	case '(': return "\"(\"";
	case ')': return "\")\"";
	case '{': return "\"{\"";
	case '}': return "\"}\"";
	case ',': return "\",\"";
	default: return "\";\"";
	}
}

static bool count_node(struct parser *p)
{
	if (++p->nodes > p->limits->nodes_max)
		return fail(p, p->tok_line, "the script is too large (more than %zu "
			    "commands, tests and arguments)", p->limits->nodes_max);
	return true;
}

static bool enter(struct parser *p)
{
	if (++p->depth > p->limits->depth_max)
		return fail(p, p->tok_line, "nested too deeply (more than %u levels)",
			    p->limits->depth_max);
	return true;
}

static char *value_dup(const struct parser *p)
{
	return mt_xstrndup(p->value.data != NULL ? p->value.data : "", p->value.len);
}

static void *grow(void *array, size_t n, size_t size)
{
	/* Powers of two: room for element n (0-based). */
	if ((n & (n - 1)) == 0)
		array = mt_xrealloc(array, (n == 0 ? 1 : n * 2) * size);
	return array;
}

static bool string_list(struct parser *p, struct mt_sieve_arg *arg)
{
	arg->type = MT_SIEVE_ARG_STRINGS;
	if (p->tok == TOK_STRING) {
		arg->strings = mt_xcalloc(1, sizeof(*arg->strings));
		arg->strings[0] = value_dup(p);
		arg->n_strings = 1;
		return next(p);
	}
	arg->list = true;	/* at "[" */
	if (!next(p))
		return false;
	for (;;) {
		if (p->tok != TOK_STRING)
			return fail(p, p->tok_line, "a string list holds strings, not %s",
				    token_name(p));
		if (arg->n_strings == p->limits->list_max)
			return fail(p, p->tok_line, "more than %zu strings in one list",
				    p->limits->list_max);
		arg->strings = grow(arg->strings, arg->n_strings, sizeof(*arg->strings));
		arg->strings[arg->n_strings++] = value_dup(p);
		if (!next(p))
			return false;
		if (is_punct(p, ']'))
			return next(p);
		if (!is_punct(p, ','))
			return fail(p, p->tok_line, "expected \",\" or \"]\" in a string list, "
				    "not %s", token_name(p));
		if (!next(p))
			return false;
	}
}

static bool test(struct parser *p, struct mt_sieve_test *t);

/* *argument [test / test-list], into args and tests. */
static bool arguments(struct parser *p, struct mt_sieve_arg **args, size_t *n_args,
		      struct mt_sieve_test **tests, size_t *n_tests, bool *test_list)
{
	for (;;) {
		if (p->tok != TOK_STRING && p->tok != TOK_NUMBER && p->tok != TOK_TAG &&
		    !is_punct(p, '['))
			break;
		if (!count_node(p))
			return false;
		*args = grow(*args, *n_args, sizeof(**args));
		struct mt_sieve_arg *arg = &(*args)[(*n_args)++];
		memset(arg, 0, sizeof(*arg));
		arg->line = p->tok_line;
		if (p->tok == TOK_NUMBER) {
			arg->type = MT_SIEVE_ARG_NUMBER;
			arg->number = p->number;
			if (!next(p))
				return false;
		} else if (p->tok == TOK_TAG) {
			arg->type = MT_SIEVE_ARG_TAG;
			arg->tag = value_dup(p);
			if (!next(p))
				return false;
		} else if (!string_list(p, arg)) {
			return false;
		}
	}
	if (p->tok == TOK_IDENTIFIER) {
		*tests = mt_xcalloc(1, sizeof(**tests));
		*n_tests = 1;
		if (!enter(p))
			return false;
		bool ok = test(p, &(*tests)[0]);
		p->depth--;
		return ok;
	}
	if (!is_punct(p, '('))
		return true;
	*test_list = true;
	if (!enter(p) || !next(p))
		return false;
	for (;;) {
		if (p->tok != TOK_IDENTIFIER)
			return fail(p, p->tok_line, "a test list holds tests, not %s",
				    token_name(p));
		*tests = grow(*tests, *n_tests, sizeof(**tests));
		struct mt_sieve_test *t = &(*tests)[(*n_tests)++];
		memset(t, 0, sizeof(*t));
		if (!test(p, t))
			return false;
		if (is_punct(p, ')')) {
			p->depth--;
			return next(p);
		}
		if (!is_punct(p, ','))
			return fail(p, p->tok_line, "expected \",\" or \")\" in a test list, "
				    "not %s", token_name(p));
		if (!next(p))
			return false;
	}
}

/* At an identifier: the test and its arguments. */
static bool test(struct parser *p, struct mt_sieve_test *t)
{
	memset(t, 0, sizeof(*t));
	if (!count_node(p))
		return false;
	t->name = value_dup(p);
	t->line = p->tok_line;
	return next(p) &&
		arguments(p, &t->args, &t->n_args, &t->tests, &t->n_tests, &t->test_list);
}

static bool commands(struct parser *p, struct mt_sieve_command **list, size_t *n,
		     unsigned int block_line);

/* At an identifier: the command, its arguments, and ";" or its block. */
static bool command(struct parser *p, struct mt_sieve_command *c)
{
	if (!count_node(p))
		return false;
	c->name = value_dup(p);
	c->line = p->tok_line;
	if (!next(p) ||
	    !arguments(p, &c->args, &c->n_args, &c->tests, &c->n_tests, &c->test_list))
		return false;
	if (is_punct(p, ';'))
		return next(p);
	if (!is_punct(p, '{'))
		return fail(p, p->tok_line, "expected \";\" or a block after the command "
			    "\"%s\" (line %u), not %s", c->name, c->line, token_name(p));
	c->has_block = true;
	unsigned int brace = p->tok_line;
	if (!enter(p) || !next(p) || !commands(p, &c->block, &c->n_block, brace))
		return false;
	p->depth--;
	return next(p);	/* past "}" */
}

/* Commands up to the end (or, in a block opened on block_line, up to its
 * "}"; 0: the script's top level). */
static bool commands(struct parser *p, struct mt_sieve_command **list, size_t *n,
		     unsigned int block_line)
{
	for (;;) {
		if (p->tok == TOK_EOF) {
			if (block_line != 0)
				return fail(p, block_line, "a block opened here is not "
					    "closed (})");
			return true;
		}
		if (is_punct(p, '}')) {
			if (block_line == 0)
				return fail(p, p->tok_line, "\"}\" without a block to close");
			return true;
		}
		if (p->tok != TOK_IDENTIFIER)
			return fail(p, p->tok_line, "expected a command, not %s",
				    token_name(p));
		*list = grow(*list, *n, sizeof(**list));
		struct mt_sieve_command *c = &(*list)[(*n)++];
		memset(c, 0, sizeof(*c));
		if (!command(p, c))
			return false;
	}
}

static void args_free(struct mt_sieve_arg *args, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(args[i].tag);
		for (size_t k = 0; k < args[i].n_strings; k++)
			free(args[i].strings[k]);
		free(args[i].strings);
	}
	free(args);
}

static void tests_free(struct mt_sieve_test *tests, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(tests[i].name);
		args_free(tests[i].args, tests[i].n_args);
		tests_free(tests[i].tests, tests[i].n_tests);
	}
	free(tests);
}

static void commands_free(struct mt_sieve_command *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(list[i].name);
		args_free(list[i].args, list[i].n_args);
		tests_free(list[i].tests, list[i].n_tests);
		commands_free(list[i].block, list[i].n_block);
	}
	free(list);
}

void mt_sieve_script_free(struct mt_sieve_script **script_p)
{
	struct mt_sieve_script *script = *script_p;
	if (script == NULL)
		return;
	*script_p = NULL;
	commands_free(script->commands, script->n_commands);
	free(script);
}

/* The line of the first octet that is not UTF-8 (or a NUL), 0 if none. */
static unsigned int bad_octet_line(const char *text, size_t len, bool *nul_r)
{
	unsigned int line = 1;
	for (size_t i = 0; i < len;) {
		const unsigned char *s = (const unsigned char *)text + i;
		if (*s == '\0') {
			*nul_r = true;
			return line;
		}
		size_t n = mt_utf8_char_len(s, len - i);
		if (n == 0) {
			*nul_r = false;
			return line;
		}
		if (*s == '\n')
			line++;
		i += n;
	}
	return 0;
}

bool mt_sieve_parse(const char *text, size_t len, const struct mt_sieve_limits *limits,
		    struct mt_sieve_script **script_r, char *error, size_t error_size)
{
	struct parser p = {
		.text = text, .len = len, .line = 1, .error = error,
		.error_size = error_size,
		.limits = limits != NULL ? limits : &mt_sieve_limits_default,
	};
	*script_r = NULL;
	if (error_size > 0)
		error[0] = '\0';
	bool nul = false;
	unsigned int bad = bad_octet_line(text, len, &nul);
	if (bad != 0)
		return fail(&p, bad, nul ? "a NUL octet (a script is UTF-8 text)" :
			    "not UTF-8 (a script is UTF-8 text, RFC 5228 2.1)");
	mt_buf_init(&p.value);
	struct mt_sieve_script *script = mt_xcalloc(1, sizeof(*script));
	bool ok = next(&p) && commands(&p, &script->commands, &script->n_commands, 0);
	mt_buf_free(&p.value);
	if (!ok) {
		mt_sieve_script_free(&script);
		if (!p.failed)
			fail(&p, p.line, "cannot be read");
		return false;
	}
	script->nodes = p.nodes;
	*script_r = script;
	return true;
}
