/* sieve-parse.h — the Sieve language's syntax (RFC 5228 section 8, with
 * section 2's lexical rules): a script's text into a tree of commands,
 * tests and arguments, each with its line. What the commands mean (which
 * exist, their arguments, `require` and the extensions) is not known here:
 * the checker and the interpreter that build on this tree do that.
 *
 *   command   = identifier *argument [test / test-list] (";" / block)
 *   argument  = string-list / number / tag
 *   test      = identifier *argument [test / test-list]
 *   test-list = "(" test *("," test) ")"
 *   block     = "{" *command "}"
 *   string    = quoted-string / multi-line ("text:" ... "." CRLF)
 *   number    = 1*DIGIT ["K" / "M" / "G"]
 *
 * Comments (# to the end of the line, and bracketed), white space and
 * line ends (CRLF, or a bare LF as scripts edited on Unix have) separate
 * tokens. Quoted strings lose their escapes (\" and \\; any other
 * backslash is dropped, RFC 5228 2.4.2); multi-line strings lose their
 * dot-stuffing and keep their lines' CRLF. Identifiers and tags are kept
 * as written (their comparison is case-insensitive: the checker's).
 *
 * Trust boundary: a script is a user's upload (ManageSieve PUTSCRIPT) and
 * is untrusted: the script must be UTF-8 without NUL, nesting (blocks,
 * test lists, tests in tests) is bounded, so are the nodes and the strings
 * of one list; a number past 2^63 is refused. Every refusal is a message
 * naming the line ("line 3: ..."), for a NO that the user can act on;
 * nothing in the input crashes or loops. */
#ifndef MT_SIEVE_PARSE_H
#define MT_SIEVE_PARSE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mt_sieve_arg_type {
	MT_SIEVE_ARG_NUMBER,
	MT_SIEVE_ARG_STRINGS,	/* one string, or a [ ] list of them */
	MT_SIEVE_ARG_TAG,	/* :name */
};

struct mt_sieve_arg {
	enum mt_sieve_arg_type type;
	unsigned int line;
	uint64_t number;	/* NUMBER, its quantifier applied */
	char *tag;		/* TAG: the name, without the ':' */
	char **strings;		/* STRINGS: NUL-terminated (no NUL inside) */
	size_t n_strings;
	bool list;		/* STRINGS: written as a [ ] list */
};

struct mt_sieve_test {
	char *name;
	unsigned int line;
	struct mt_sieve_arg *args;
	size_t n_args;
	/* Its own tests: a test-list's (test_list), or the one test it takes
	 * (not's): n_tests 1 and test_list false. */
	struct mt_sieve_test *tests;
	size_t n_tests;
	bool test_list;
};

struct mt_sieve_command {
	char *name;
	unsigned int line;
	struct mt_sieve_arg *args;
	size_t n_args;
	struct mt_sieve_test *tests;	/* as in a test (if's, elsif's) */
	size_t n_tests;
	bool test_list;
	bool has_block;			/* ended by a block, not ";" */
	struct mt_sieve_command *block;
	size_t n_block;
};

struct mt_sieve_script {
	struct mt_sieve_command *commands;
	size_t n_commands;
	size_t nodes;			/* commands, tests and arguments */
};

struct mt_sieve_limits {
	unsigned int depth_max;		/* blocks, test lists, nested tests */
	size_t nodes_max;		/* commands + tests + arguments */
	size_t list_max;		/* strings in one string list */
};
/* 16 levels, 10,000 nodes, 1,024 strings a list. */
extern const struct mt_sieve_limits mt_sieve_limits_default;

/* Parse text[0..len). true and *script_r (free with mt_sieve_script_free);
 * false and error ("line N: what", NUL-terminated, cut to error_size). */
bool mt_sieve_parse(const char *text, size_t len, const struct mt_sieve_limits *limits,
		    struct mt_sieve_script **script_r, char *error, size_t error_size);
void mt_sieve_script_free(struct mt_sieve_script **script_p);

/* Write "line N: " and the formatted text into error (cut to size, which
 * may be 0): the one form of every Sieve refusal (parse, check, run). */
void mt_sieve_error_write(char *error, size_t size, unsigned int line, const char *fmt,
			  va_list ap) __attribute__((format(printf, 4, 0)));

#endif
