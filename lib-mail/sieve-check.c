/* sieve-check.c — the commands, tests and tags of Sieve and its extensions
 * as tables (see sieve-check.h), and the one walk that checks a parsed
 * script against them.
 *
 * Trust boundary: the tree is a user's script (untrusted); the walk is
 * bounded by the parser's limits (its depth and nodes).
 * RFC 5228 2.6-2.7, 3-5; RFC 5429, 5230, 5232, 5229, 5173, 5231, 5233,
 * 3894, 6609, 5490, 4790. */
#include "sieve-check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const ext_names[] = {
	"fileinto", "envelope", "reject", "ereject", "vacation", "imap4flags",
	"variables", "body", "relational", "subaddress", "copy", "include",
	"mailbox", "comparator-i;ascii-numeric",
};
#define EXT_COUNT (sizeof(ext_names) / sizeof(ext_names[0]))

const char *mt_sieve_ext_name(uint32_t ext)
{
	for (size_t i = 0; i < EXT_COUNT; i++)
		if (ext == 1u << i)
			return ext_names[i];
	return NULL;
}

size_t mt_sieve_ext_list(uint32_t offered, char *buf, size_t size)
{
	size_t n = 0;
	if (size > 0)
		buf[0] = '\0';
	for (size_t i = 0; i < EXT_COUNT; i++) {
		if ((offered & 1u << i) == 0)
			continue;
		int w = snprintf(buf + n, n < size ? size - n : 0, "%s%s", n > 0 ? " " : "",
				 ext_names[i]);
		if (w > 0)
			n += (size_t)w;
	}
	return n;
}

enum value {
	VAL_NONE,
	VAL_STRING,		/* one string, not a list */
	VAL_STRINGS,		/* a string list (or one string) */
	VAL_NUMBER,
};

enum group {
	GROUP_OWN,		/* the tag alone: at most once */
	GROUP_MATCH,		/* :is :contains :matches :count :value */
	GROUP_COMPARATOR,
	GROUP_ADDRESS_PART,	/* :all :localpart :domain :user :detail */
	GROUP_BODY,		/* :raw :content :text */
	GROUP_SIZE,		/* :over :under, exactly one */
	GROUP_LOCATION,		/* include's :personal :global */
	GROUP_CASE,		/* set's :lower :upper */
	GROUP_FIRST,		/* set's :lowerfirst :upperfirst */
	GROUP_COUNT,
};

static const char *const group_names[GROUP_COUNT] = {
	"", "match type", "comparator", "address part", "body transform",
	":over or :under", ":personal or :global", ":lower or :upper",
	":lowerfirst or :upperfirst",
};

struct tag_spec {
	const char *name;
	uint32_t ext;
	enum value value;
	enum group group;
};

#define TAGS_END { NULL, 0, VAL_NONE, GROUP_OWN }
static const struct tag_spec tags_match[] = {
	{ "is", 0, VAL_NONE, GROUP_MATCH }, { "contains", 0, VAL_NONE, GROUP_MATCH },
	{ "matches", 0, VAL_NONE, GROUP_MATCH },
	{ "count", MT_SIEVE_EXT_RELATIONAL, VAL_STRING, GROUP_MATCH },
	{ "value", MT_SIEVE_EXT_RELATIONAL, VAL_STRING, GROUP_MATCH },
	{ "comparator", 0, VAL_STRING, GROUP_COMPARATOR }, TAGS_END,
};
static const struct tag_spec tags_address_part[] = {
	{ "all", 0, VAL_NONE, GROUP_ADDRESS_PART },
	{ "localpart", 0, VAL_NONE, GROUP_ADDRESS_PART },
	{ "domain", 0, VAL_NONE, GROUP_ADDRESS_PART },
	{ "user", MT_SIEVE_EXT_SUBADDRESS, VAL_NONE, GROUP_ADDRESS_PART },
	{ "detail", MT_SIEVE_EXT_SUBADDRESS, VAL_NONE, GROUP_ADDRESS_PART }, TAGS_END,
};
static const struct tag_spec tags_body[] = {
	{ "raw", 0, VAL_NONE, GROUP_BODY }, { "content", 0, VAL_STRINGS, GROUP_BODY },
	{ "text", 0, VAL_NONE, GROUP_BODY }, TAGS_END,
};
static const struct tag_spec tags_size[] = {
	{ "over", 0, VAL_NONE, GROUP_SIZE }, { "under", 0, VAL_NONE, GROUP_SIZE }, TAGS_END,
};
static const struct tag_spec tags_flags[] = {
	{ "flags", MT_SIEVE_EXT_IMAP4FLAGS, VAL_STRINGS, GROUP_OWN }, TAGS_END,
};
static const struct tag_spec tags_copy[] = {
	{ "copy", MT_SIEVE_EXT_COPY, VAL_NONE, GROUP_OWN }, TAGS_END,
};
static const struct tag_spec tags_create[] = {
	{ "create", MT_SIEVE_EXT_MAILBOX, VAL_NONE, GROUP_OWN }, TAGS_END,
};
static const struct tag_spec tags_vacation[] = {
	{ "days", 0, VAL_NUMBER, GROUP_OWN }, { "subject", 0, VAL_STRING, GROUP_OWN },
	{ "from", 0, VAL_STRING, GROUP_OWN }, { "addresses", 0, VAL_STRINGS, GROUP_OWN },
	{ "mime", 0, VAL_NONE, GROUP_OWN }, { "handle", 0, VAL_STRING, GROUP_OWN },
	TAGS_END,
};
static const struct tag_spec tags_include[] = {
	{ "personal", 0, VAL_NONE, GROUP_LOCATION }, { "global", 0, VAL_NONE, GROUP_LOCATION },
	{ "once", 0, VAL_NONE, GROUP_OWN }, { "optional", 0, VAL_NONE, GROUP_OWN }, TAGS_END,
};
static const struct tag_spec tags_set[] = {
	{ "lower", 0, VAL_NONE, GROUP_CASE }, { "upper", 0, VAL_NONE, GROUP_CASE },
	{ "lowerfirst", 0, VAL_NONE, GROUP_FIRST }, { "upperfirst", 0, VAL_NONE, GROUP_FIRST },
	{ "quotewildcard", 0, VAL_NONE, GROUP_OWN }, { "length", 0, VAL_NONE, GROUP_OWN },
	TAGS_END,
};

enum tests_taken { TESTS_NONE, TESTS_ONE, TESTS_LIST };

/* A command or a test. Positional arguments follow the tags, in order;
 * the first optional_first of them may be left out. */
struct spec {
	const char *name;
	uint32_t ext;			/* every bit must be required */
	const struct tag_spec *tags[4];
	enum value positional[3];
	unsigned int n_positional, optional_first;
	enum tests_taken tests;
	bool block;
	bool size_group_required;
};

static const struct spec commands[] = {
	{ "require", 0, { NULL }, { VAL_STRINGS }, 1, 0, TESTS_NONE, false, false },
	{ "if", 0, { NULL }, { VAL_NONE }, 0, 0, TESTS_ONE, true, false },
	{ "elsif", 0, { NULL }, { VAL_NONE }, 0, 0, TESTS_ONE, true, false },
	{ "else", 0, { NULL }, { VAL_NONE }, 0, 0, TESTS_NONE, true, false },
	{ "stop", 0, { NULL }, { VAL_NONE }, 0, 0, TESTS_NONE, false, false },
	{ "keep", 0, { tags_flags }, { VAL_NONE }, 0, 0, TESTS_NONE, false, false },
	{ "discard", 0, { NULL }, { VAL_NONE }, 0, 0, TESTS_NONE, false, false },
	{ "redirect", 0, { tags_copy }, { VAL_STRING }, 1, 0, TESTS_NONE, false, false },
	{ "fileinto", MT_SIEVE_EXT_FILEINTO, { tags_copy, tags_create, tags_flags },
	  { VAL_STRING }, 1, 0, TESTS_NONE, false, false },
	{ "reject", MT_SIEVE_EXT_REJECT, { NULL }, { VAL_STRING }, 1, 0, TESTS_NONE,
	  false, false },
	{ "ereject", MT_SIEVE_EXT_EREJECT, { NULL }, { VAL_STRING }, 1, 0, TESTS_NONE,
	  false, false },
	{ "vacation", MT_SIEVE_EXT_VACATION, { tags_vacation }, { VAL_STRING }, 1, 0,
	  TESTS_NONE, false, false },
	{ "setflag", MT_SIEVE_EXT_IMAP4FLAGS, { NULL }, { VAL_STRING, VAL_STRINGS }, 2, 1,
	  TESTS_NONE, false, false },
	{ "addflag", MT_SIEVE_EXT_IMAP4FLAGS, { NULL }, { VAL_STRING, VAL_STRINGS }, 2, 1,
	  TESTS_NONE, false, false },
	{ "removeflag", MT_SIEVE_EXT_IMAP4FLAGS, { NULL }, { VAL_STRING, VAL_STRINGS }, 2, 1,
	  TESTS_NONE, false, false },
	{ "set", MT_SIEVE_EXT_VARIABLES, { tags_set }, { VAL_STRING, VAL_STRING }, 2, 0,
	  TESTS_NONE, false, false },
	{ "include", MT_SIEVE_EXT_INCLUDE, { tags_include }, { VAL_STRING }, 1, 0,
	  TESTS_NONE, false, false },
	{ "return", MT_SIEVE_EXT_INCLUDE, { NULL }, { VAL_NONE }, 0, 0, TESTS_NONE, false,
	  false },
	{ "global", MT_SIEVE_EXT_INCLUDE | MT_SIEVE_EXT_VARIABLES, { NULL }, { VAL_STRINGS },
	  1, 0, TESTS_NONE, false, false },
};

static const struct spec tests[] = {
	{ "address", 0, { tags_match, tags_address_part }, { VAL_STRINGS, VAL_STRINGS }, 2, 0,
	  TESTS_NONE, false, false },
	{ "envelope", MT_SIEVE_EXT_ENVELOPE, { tags_match, tags_address_part },
	  { VAL_STRINGS, VAL_STRINGS }, 2, 0, TESTS_NONE, false, false },
	{ "header", 0, { tags_match }, { VAL_STRINGS, VAL_STRINGS }, 2, 0, TESTS_NONE,
	  false, false },
	{ "exists", 0, { NULL }, { VAL_STRINGS }, 1, 0, TESTS_NONE, false, false },
	{ "size", 0, { tags_size }, { VAL_NUMBER }, 1, 0, TESTS_NONE, false, true },
	{ "true", 0, { NULL }, { VAL_NONE }, 0, 0, TESTS_NONE, false, false },
	{ "false", 0, { NULL }, { VAL_NONE }, 0, 0, TESTS_NONE, false, false },
	{ "not", 0, { NULL }, { VAL_NONE }, 0, 0, TESTS_ONE, false, false },
	{ "allof", 0, { NULL }, { VAL_NONE }, 0, 0, TESTS_LIST, false, false },
	{ "anyof", 0, { NULL }, { VAL_NONE }, 0, 0, TESTS_LIST, false, false },
	{ "body", MT_SIEVE_EXT_BODY, { tags_match, tags_body }, { VAL_STRINGS }, 1, 0,
	  TESTS_NONE, false, false },
	{ "hasflag", MT_SIEVE_EXT_IMAP4FLAGS, { tags_match }, { VAL_STRINGS, VAL_STRINGS },
	  2, 1, TESTS_NONE, false, false },
	{ "string", MT_SIEVE_EXT_VARIABLES, { tags_match }, { VAL_STRINGS, VAL_STRINGS }, 2,
	  0, TESTS_NONE, false, false },
	{ "mailboxexists", MT_SIEVE_EXT_MAILBOX, { NULL }, { VAL_STRINGS }, 1, 0, TESTS_NONE,
	  false, false },
};

struct checker {
	uint32_t offered, required;
	char *error;
	size_t error_size;
	bool failed;
};

static bool fail(struct checker *c, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool fail(struct checker *c, unsigned int line, const char *fmt, ...)
{
	if (c->failed)
		return false;
	c->failed = true;
	va_list ap;
	va_start(ap, fmt);
	mt_sieve_error_write(c->error, c->error_size, line, fmt, ap);
	va_end(ap);
	return false;
}

/* "fileinto" needs require "fileinto" (the first extension ext lacks). */
static bool need(struct checker *c, uint32_t ext, unsigned int line, const char *what,
		 const char *name)
{
	uint32_t missing = ext & ~c->required;
	if (missing == 0)
		return true;
	uint32_t bit = missing & -missing;
	return fail(c, line, "%s \"%s\" needs require \"%s\"", what, name,
		    mt_sieve_ext_name(bit));
}

static const struct spec *spec_find(const struct spec *table, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

static bool value_is(const struct mt_sieve_arg *a, enum value v)
{
	switch (v) {
	case VAL_STRING:
		return a->type == MT_SIEVE_ARG_STRINGS && a->n_strings == 1 && !a->list;
	case VAL_STRINGS:
		return a->type == MT_SIEVE_ARG_STRINGS;
	case VAL_NUMBER:
		return a->type == MT_SIEVE_ARG_NUMBER;
	default:
		return false;
	}
}

static const char *value_name(enum value v)
{
	return v == VAL_STRING ? "a string" : v == VAL_STRINGS ? "a string list" :
		v == VAL_NUMBER ? "a number" : "nothing";
}

/* A tag's value that must be one of a known set. */
static bool tag_value_ok(struct checker *c, const char *tag, const struct mt_sieve_arg *v)
{
	if (strcasecmp(tag, "comparator") == 0) {
		const char *name = v->strings[0];
		if (strcasecmp(name, "i;octet") == 0 || strcasecmp(name, "i;ascii-casemap") == 0)
			return true;
		if (strcasecmp(name, "i;ascii-numeric") == 0)
			return need(c, MT_SIEVE_EXT_NUMERIC, v->line, "the comparator",
				    "i;ascii-numeric");
		return fail(c, v->line, "unknown comparator \"%s\" (i;octet, "
			    "i;ascii-casemap, i;ascii-numeric)", name);
	}
	if (strcasecmp(tag, "count") == 0 || strcasecmp(tag, "value") == 0) {
		static const char *const ops[] = { "gt", "ge", "lt", "le", "eq", "ne" };
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			if (strcasecmp(v->strings[0], ops[i]) == 0)
				return true;
		return fail(c, v->line, "unknown relational operator \"%s\" (gt, ge, lt, "
			    "le, eq, ne)", v->strings[0]);
	}
	if (strcasecmp(tag, "days") == 0 && v->number == 0)
		return fail(c, v->line, ":days must be at least 1");
	return true;
}

static bool check_test(struct checker *c, const struct mt_sieve_test *t);

/* The arguments and tests of a command or test against its spec. */
static bool check_args(struct checker *c, const struct spec *s, const char *what,
		       unsigned int line, const struct mt_sieve_arg *args, size_t n_args,
		       const struct mt_sieve_test *tests_in, size_t n_tests, bool test_list)
{
	bool seen[GROUP_COUNT] = { false };
	const char *match_tag = NULL, *comparator = NULL;
	size_t i = 0;
	for (; i < n_args && args[i].type == MT_SIEVE_ARG_TAG; i++) {
		const struct mt_sieve_arg *a = &args[i];
		const struct tag_spec *tag = NULL;
		for (size_t k = 0; tag == NULL && k < 4 && s->tags[k] != NULL; k++)
			for (const struct tag_spec *ts = s->tags[k]; ts->name != NULL; ts++)
				if (strcasecmp(ts->name, a->tag) == 0)
					tag = ts;
		if (tag == NULL)
			return fail(c, a->line, "%s \"%s\" takes no tag :%s", what, s->name,
				    a->tag);
		if (!need(c, tag->ext, a->line, "the tag", a->tag))
			return false;
		if (tag->group != GROUP_OWN) {
			if (seen[tag->group])
				return fail(c, a->line, "%s \"%s\": more than one %s", what,
					    s->name, group_names[tag->group]);
			seen[tag->group] = true;
			if (tag->group == GROUP_MATCH)
				match_tag = tag->name;
		} else {
			for (size_t k = 0; k < i; k++)
				if (args[k].type == MT_SIEVE_ARG_TAG &&
				    strcasecmp(args[k].tag, a->tag) == 0)
					return fail(c, a->line, "%s \"%s\": the tag :%s twice",
						    what, s->name, a->tag);
		}
		if (tag->value == VAL_NONE)
			continue;
		if (i + 1 >= n_args || !value_is(&args[i + 1], tag->value))
			return fail(c, a->line, "the tag :%s takes %s", a->tag,
				    value_name(tag->value));
		i++;
		if (!tag_value_ok(c, tag->name, &args[i]))
			return false;
		if (tag->group == GROUP_COMPARATOR)
			comparator = args[i].strings[0];
	}
	/* RFC 4790 9.1: i;ascii-numeric orders and equates, no substrings. */
	if (comparator != NULL && strcasecmp(comparator, "i;ascii-numeric") == 0 &&
	    match_tag != NULL && (strcmp(match_tag, "contains") == 0 ||
				  strcmp(match_tag, "matches") == 0))
		return fail(c, line, "the comparator i;ascii-numeric cannot do :%s (only "
			    ":is, :value and :count)", match_tag);
	if (s->size_group_required && !seen[GROUP_SIZE])
		return fail(c, line, "%s \"%s\" needs :over or :under", what, s->name);
	for (size_t k = i; k < n_args; k++)
		if (args[k].type == MT_SIEVE_ARG_TAG)
			return fail(c, args[k].line, "tags come before the other arguments "
				    "(:%s)", args[k].tag);
	size_t positional = n_args - i;
	if (positional > s->n_positional || positional + s->optional_first < s->n_positional)
		return fail(c, line, "%s \"%s\" takes %u argument%s, not %zu", what, s->name,
			    s->n_positional, s->n_positional == 1 ? "" : "s", positional);
	unsigned int skip = s->n_positional - (unsigned int)positional;
	for (size_t k = 0; i + k < n_args; k++) {
		const struct mt_sieve_arg *a = &args[i + k];
		enum value want = s->positional[skip + k];
		if (!value_is(a, want))
			return fail(c, a->line, "%s \"%s\": argument %zu must be %s", what,
				    s->name, skip + k + 1, value_name(want));
	}
	switch (s->tests) {
	case TESTS_NONE:
		if (n_tests != 0)
			return fail(c, tests_in[0].line, "%s \"%s\" takes no test", what,
				    s->name);
		break;
	case TESTS_ONE:
		if (n_tests != 1 || test_list)
			return fail(c, line, "%s \"%s\" takes one test", what, s->name);
		break;
	case TESTS_LIST:
		if (!test_list)
			return fail(c, line, "%s \"%s\" takes a test list ( ... )", what,
				    s->name);
		break;
	}
	for (size_t k = 0; k < n_tests; k++)
		if (!check_test(c, &tests_in[k]))
			return false;
	return true;
}

static bool check_test(struct checker *c, const struct mt_sieve_test *t)
{
	const struct spec *s = spec_find(tests, sizeof(tests) / sizeof(tests[0]), t->name);
	if (s == NULL)
		return fail(c, t->line, "unknown test \"%s\"", t->name);
	return need(c, s->ext, t->line, "the test", s->name) &&
		check_args(c, s, "the test", t->line, t->args, t->n_args, t->tests,
			   t->n_tests, t->test_list);
}

static bool check_require(struct checker *c, const struct mt_sieve_command *cmd)
{
	const struct mt_sieve_arg *a = &cmd->args[0];
	for (size_t i = 0; i < a->n_strings; i++) {
		uint32_t bit = 0;
		for (size_t k = 0; k < EXT_COUNT; k++)
			if (strcasecmp(a->strings[i], ext_names[k]) == 0)
				bit = 1u << k;
		if (bit == 0 || (c->offered & bit) == 0) {
			char list[512];
			mt_sieve_ext_list(c->offered, list, sizeof(list));
			return fail(c, a->line, "unsupported extension \"%s\" (this server "
				    "has: %s)", a->strings[i], list);
		}
		c->required |= bit;
	}
	return true;
}

static bool check_commands(struct checker *c, const struct mt_sieve_command *list, size_t n,
			   bool top)
{
	bool requires_allowed = top;
	const char *previous = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct mt_sieve_command *cmd = &list[i];
		const struct spec *s = spec_find(commands, sizeof(commands) / sizeof(commands[0]),
						 cmd->name);
		if (s == NULL)
			return fail(c, cmd->line, "unknown command \"%s\"", cmd->name);
		if (!need(c, s->ext, cmd->line, "the command", s->name) ||
		    !check_args(c, s, "the command", cmd->line, cmd->args, cmd->n_args,
				cmd->tests, cmd->n_tests, cmd->test_list))
			return false;
		if (s->block && !cmd->has_block)
			return fail(c, cmd->line, "the command \"%s\" needs a block { ... }",
				    s->name);
		if (!s->block && cmd->has_block)
			return fail(c, cmd->line, "the command \"%s\" takes no block", s->name);
		bool is_require = strcmp(s->name, "require") == 0;
		if (is_require) {
			if (!requires_allowed)
				return fail(c, cmd->line, "\"require\" comes before every other "
					    "command");
			if (!check_require(c, cmd))
				return false;
		} else {
			requires_allowed = false;
		}
		if ((strcmp(s->name, "elsif") == 0 || strcmp(s->name, "else") == 0) &&
		    (previous == NULL ||
		     (strcmp(previous, "if") != 0 && strcmp(previous, "elsif") != 0)))
			return fail(c, cmd->line, "\"%s\" must follow \"if\" or \"elsif\"",
				    s->name);
		if (cmd->has_block && !check_commands(c, cmd->block, cmd->n_block, false))
			return false;
		previous = s->name;
	}
	return true;
}

bool mt_sieve_check(const struct mt_sieve_script *script, uint32_t offered,
		    uint32_t *required_r, char *error, size_t error_size)
{
	struct checker c = { .offered = offered, .error = error, .error_size = error_size };
	if (error_size > 0)
		error[0] = '\0';
	*required_r = 0;
	if (!check_commands(&c, script->commands, script->n_commands, true))
		return false;
	*required_r = c.required;
	return true;
}
