/* fuzz-pop3-cmd.c — libFuzzer target for mailtier-popstore's POP3 command
 * line parsers (popstore/pop3-parse.c): the verb and its argument, the
 * message numbers of LIST/UIDL/RETR/DELE and TOP's "msg n".
 *
 * Properties, beyond "no crash, no over-read":
 *  - the verb is found exactly when the text before the first space
 *    equals a command name regardless of case (a reference table written
 *    here), and the argument is the line's own tail after that one space
 *    ("" without one), so it lies within the line; the same line in upper
 *    case names the same command;
 *  - a message number is accepted exactly when a reference parser
 *    (1..10 ASCII digits, value 1..count) says so, its index is below the
 *    mailbox's count, and a larger mailbox never refuses it nor moves it;
 *  - TOP gives SYNTAX, NO_SUCH or OK exactly as a reference splitter does
 *    (one space, n of 1..10 digits checked first, then msg), with the same
 *    index and line count (at most 9999999999).
 *
 * Input: [mode] then lines split at LF (a CR before it is dropped, as
 * lib/lineio does); each line goes through every parser, its argument as
 * the dispatcher cuts it. mode bits 0-2: the mailbox's message count
 * 0, 1, 2, 9, 10, 100, 1000, 4294967295.
 * Trust boundary: POP3 client command lines (RFC 1939 3, 5, 7). */
#include "fuzz.h"

#include <ctype.h>
#include <string.h>

#include "popstore/pop3-parse.h"

/* The commands the table must hold, in enum order (RFC 1939, 2449, 2595,
 * 5034): written out here, not taken from the code under test. */
static const char *const ref_names[] = {
	"CAPA", "USER", "PASS", "AUTH", "STLS", "STAT", "LIST", "UIDL", "TOP",
	"RETR", "DELE", "NOOP", "RSET", "QUIT",
};
#define REF_COUNT (sizeof(ref_names) / sizeof(ref_names[0]))
_Static_assert(REF_COUNT == POP3_VERB_COUNT, "the POP3 table changed");

/* Reference: 1..10 ASCII digits in s[0..len). */
static bool ref_number(const char *s, size_t len, uint64_t *n_r)
{
	uint64_t n = 0;
	if (len < 1 || len > 10)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!(s[i] >= '0' && s[i] <= '9'))
			return false;
		n = n * 10 + (uint64_t)(s[i] - '0');
	}
	*n_r = n;
	return true;
}

static void check_command(const char *line)
{
	enum pop3_verb verb = POP3_VERB_COUNT;
	const char *arg = NULL, *want_arg;
	bool ok = pop3_parse_command(line, &verb, &arg);
	size_t want = fuzz_ref_command(line, ref_names, REF_COUNT, &want_arg);
	size_t vlen = strcspn(line, " ");

	FUZZ_CHECK(ok == (want < REF_COUNT), "verb found %d, reference %zu", ok, want);
	if (ok)
		FUZZ_CHECK((size_t)verb == want && strcmp(pop3_verb_name(verb), ref_names[want]) == 0,
			   "verb %d '%s', reference %zu", verb, pop3_verb_name(verb), want);
	FUZZ_CHECK(arg != NULL && (want_arg != NULL ? arg == want_arg : arg[0] == '\0'),
		   "argument misplaced");
	FUZZ_CHECK(arg[0] == '\0' || (arg > line && arg + strlen(arg) == line + strlen(line)),
		   "argument outside the line");

	/* Case never matters for the verb. */
	char *upper = strdup(line);
	FUZZ_CHECK(upper != NULL, "strdup");
	for (size_t i = 0; i < vlen; i++)
		upper[i] = (char)toupper((unsigned char)upper[i]);
	enum pop3_verb verb2 = POP3_VERB_COUNT;
	const char *arg2;
	FUZZ_CHECK(pop3_parse_command(upper, &verb2, &arg2) == ok && (!ok || verb2 == verb),
		   "upper case names another command");
	FUZZ_CHECK(want_arg == NULL ? arg2[0] == '\0' : arg2 == upper + vlen + 1,
		   "upper case moved the argument");
	free(upper);
}

static void check_msg(const char *arg, size_t len, unsigned int count)
{
	unsigned int index = 0, again = 0;
	uint64_t n = 0;
	bool want = ref_number(arg, len, &n) && n >= 1 && n <= count;
	bool ok = pop3_parse_msg(arg, len, count, &index);

	FUZZ_CHECK(ok == want, "msg '%.*s' of %u: %d, reference %d", (int)len, arg, count,
		   ok, want);
	if (!ok)
		return;
	FUZZ_CHECK(index < count && (uint64_t)index + 1 == n, "index %u of %u", index, count);
	FUZZ_CHECK(pop3_parse_msg(arg, len, UINT32_MAX, &again) && again == index,
		   "a larger mailbox refused or moved it");
}

static void check_top(const char *arg, unsigned int count)
{
	unsigned int index = 0;
	uint64_t lines = 0, want_lines = 0, n = 0;
	enum pop3_arg_status want;
	const char *space = strchr(arg, ' ');

	if (space == NULL || !ref_number(space + 1, strlen(space + 1), &want_lines))
		want = POP3_ARG_SYNTAX;
	else if (!ref_number(arg, (size_t)(space - arg), &n) || n == 0 || n > count)
		want = POP3_ARG_NO_SUCH;
	else
		want = POP3_ARG_OK;
	enum pop3_arg_status st = pop3_parse_top(arg, count, &index, &lines);
	FUZZ_CHECK(st == want, "TOP '%s' of %u: %d, reference %d", arg, count, st, want);
	if (st != POP3_ARG_OK)
		return;
	FUZZ_CHECK(index < count && (uint64_t)index + 1 == n, "TOP index %u of %u", index,
		   count);
	FUZZ_CHECK(lines == want_lines && lines <= 9999999999ull, "TOP lines");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned int counts[8] = { 0, 1, 2, 9, 10, 100, 1000, UINT32_MAX };
	struct fuzz_input in = { data, size };
	unsigned int count = counts[fuzz_byte(&in) & 7];

	char *line;
	while ((line = fuzz_line(&in)) != NULL) {
		enum pop3_verb verb;
		const char *arg;
		check_command(line);
		pop3_parse_command(line, &verb, &arg);
		check_msg(arg, strlen(arg), count);
		check_top(arg, count);
		free(line);
	}
	return 0;
}
