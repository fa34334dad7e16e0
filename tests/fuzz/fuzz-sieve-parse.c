/* fuzz-sieve-parse.c — libFuzzer target for lib-mail/sieve-parse.c, the
 * Sieve grammar that reads every script a user uploads, and for
 * lib-mail/sieve-check.c, which checks what the parsed tree means.
 *
 * Properties, beyond "no crash, no over-read, no UB, no leak":
 *  - a refusal's message begins with "line N: " with N a line of the
 *    input (1 to its line ends + 1);
 *  - a parsed tree has no more nodes than the limit, and its lines are
 *    lines of the input;
 *  - the tree written back as canonical Sieve (quoted strings, decimal
 *    numbers) parses, and writes back to the same text (the parser and
 *    the lexical rules agree with themselves);
 *  - the checker, with every extension offered and with none, either
 *    passes it (requiring only offered extensions) or names a line of
 *    the input; the same tree checks the same way twice;
 *  - a checked script runs (lib-mail/sieve-run.c) over a small message
 *    within the step limit; a failed run leaves no action and the
 *    implicit keep; a completed one drops the implicit keep only when an
 *    action without :copy was taken, never past the action limit.
 *
 * Input: the script's octets.
 * Trust boundary: a user's script (ManageSieve PUTSCRIPT). */
#include "fuzz.h"

#include "buf.h"
#include "sieve-check.h"
#include "sieve-parse.h"
#include "sieve-run.h"

#include <inttypes.h>

static unsigned int max_line;

static const char *const fields[] = {
	"From", "Ann <ann@example.com>", "To", "bob+lists@x.org, g:;",
	"Subject", "Invoice 42", "Received", "a", "Received", "b", NULL,
};

static bool header_each(void *context, const char *name,
			bool (*visit)(const char *value, size_t len, void *arg), void *arg)
{
	(void)context;
	for (size_t i = 0; fields[i] != NULL; i += 2)
		if (strcasecmp(fields[i], name) == 0 &&
		    visit(fields[i + 1], strlen(fields[i + 1]), arg))
			return true;
	return false;
}

static void check_run(const struct mt_sieve_script *s)
{
	const struct mt_sieve_message msg = {
		.header_each = header_each, .envelope_from = "ann@example.com",
		.envelope_to = "bob+lists@x.org", .size = 2048,
	};
	struct mt_sieve_result r;
	bool ok = mt_sieve_run(s, &msg, NULL, &r);
	FUZZ_CHECK(r.steps <= mt_sieve_run_limits_default.steps_max + 1, "%" PRIu64 " steps",
		   r.steps);
	FUZZ_CHECK(ok == !r.failed, "the run's answer and its result differ");
	if (!ok) {
		FUZZ_CHECK(r.implicit_keep && r.n_actions == 0 &&
			   strncmp(r.error, "line ", 5) == 0, "a failed run: %s", r.error);
	} else {
		bool cancels = false;
		for (size_t i = 0; i < r.n_actions; i++)
			cancels |= !r.actions[i].copy;
		FUZZ_CHECK(r.implicit_keep == !cancels, "the implicit keep is wrong");
		FUZZ_CHECK(r.n_actions <= mt_sieve_run_limits_default.actions_max,
			   "%zu actions", r.n_actions);
	}
	mt_sieve_result_free(&r);
}

static void write_args(struct mt_buf *out, const struct mt_sieve_arg *args, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct mt_sieve_arg *a = &args[i];
		FUZZ_CHECK(a->line >= 1 && a->line <= max_line, "argument line %u", a->line);
		if (a->type == MT_SIEVE_ARG_NUMBER) {
			mt_buf_appendf(out, " %" PRIu64, a->number);
		} else if (a->type == MT_SIEVE_ARG_TAG) {
			mt_buf_appendf(out, " :%s", a->tag);
		} else {
			FUZZ_CHECK(a->n_strings >= 1, "an empty string list");
			mt_buf_append_str(out, a->list ? " [" : " ");
			for (size_t k = 0; k < a->n_strings; k++) {
				mt_buf_append_str(out, k > 0 ? ", \"" : "\"");
				for (const char *c = a->strings[k]; *c != '\0'; c++) {
					if (*c == '"' || *c == '\\')
						mt_buf_append_char(out, '\\');
					mt_buf_append_char(out, *c);
				}
				mt_buf_append_char(out, '"');
			}
			if (a->list)
				mt_buf_append_char(out, ']');
		}
	}
}

static void write_tests(struct mt_buf *out, const struct mt_sieve_test *tests, size_t n,
			bool list)
{
	if (list)
		mt_buf_append_str(out, " (");
	for (size_t i = 0; i < n; i++) {
		const struct mt_sieve_test *t = &tests[i];
		FUZZ_CHECK(t->line >= 1 && t->line <= max_line, "test line %u", t->line);
		mt_buf_appendf(out, "%s%s", i > 0 ? ", " : " ", t->name);
		write_args(out, t->args, t->n_args);
		write_tests(out, t->tests, t->n_tests, t->test_list);
	}
	if (list)
		mt_buf_append_str(out, ")");
}

static void write_commands(struct mt_buf *out, const struct mt_sieve_command *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(c[i].line >= 1 && c[i].line <= max_line, "command line %u",
			   c[i].line);
		mt_buf_append_str(out, c[i].name);
		write_args(out, c[i].args, c[i].n_args);
		write_tests(out, c[i].tests, c[i].n_tests, c[i].test_list);
		if (c[i].has_block) {
			mt_buf_append_str(out, " {\n");
			write_commands(out, c[i].block, c[i].n_block);
			mt_buf_append_str(out, "}\n");
		} else {
			mt_buf_append_str(out, ";\n");
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct mt_sieve_script *s = NULL;
	char error[256];
	max_line = 1;
	for (size_t i = 0; i < size; i++)
		if (data[i] == '\n')
			max_line++;
	if (!mt_sieve_parse(text, size, NULL, &s, error, sizeof(error))) {
		unsigned int line = 0;
		FUZZ_CHECK(sscanf(error, "line %u: ", &line) == 1 && line >= 1 &&
			   line <= max_line, "refusal \"%s\" (%u lines)", error, max_line);
		FUZZ_CHECK(s == NULL, "a script with a refusal");
		return 0;
	}
	FUZZ_CHECK(s->nodes <= mt_sieve_limits_default.nodes_max, "%zu nodes", s->nodes);
	const uint32_t offers[2] = { MT_SIEVE_EXT_ALL, 0 };
	for (size_t k = 0; k < 2; k++) {
		uint32_t required = 0, again = 0;
		char error2[256];
		bool ok1 = mt_sieve_check(s, offers[k], &required, error, sizeof(error));
		bool ok2 = mt_sieve_check(s, offers[k], &again, error2, sizeof(error2));
		FUZZ_CHECK(ok1 == ok2 && required == again &&
			   (ok1 || strcmp(error, error2) == 0), "the check differs twice");
		unsigned int line = 0;
		FUZZ_CHECK(ok1 ? (required & ~offers[k]) == 0 :
			   sscanf(error, "line %u: ", &line) == 1 && line >= 1 &&
			   line <= max_line, "check \"%s\" (%u lines)", error, max_line);
		if (ok1 && k == 0)
			check_run(s);
	}
	struct mt_buf once = MT_BUF_INIT, twice = MT_BUF_INIT;
	write_commands(&once, s->commands, s->n_commands);
	mt_sieve_script_free(&s);
	max_line = 1;
	for (size_t i = 0; i < once.len; i++)
		if (once.data[i] == '\n')
			max_line++;
	bool ok = mt_sieve_parse(once.data != NULL ? once.data : "", once.len, NULL, &s,
				 error, sizeof(error));
	FUZZ_CHECK(ok, "the tree written back does not parse: %s\n%s", error,
		   mt_buf_cstr(&once));
	write_commands(&twice, s->commands, s->n_commands);
	FUZZ_CHECK(once.len == twice.len && memcmp(mt_buf_cstr(&once), mt_buf_cstr(&twice),
						   once.len) == 0,
		   "written back twice, it differs:\n%s\n---\n%s", mt_buf_cstr(&once),
		   mt_buf_cstr(&twice));
	mt_sieve_script_free(&s);
	mt_buf_free(&once);
	mt_buf_free(&twice);
	return 0;
}
