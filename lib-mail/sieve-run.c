/* sieve-run.c — the Sieve interpreter over a checked tree (see
 * sieve-run.h): commands in order with if/elsif/else chains and stop,
 * tests through sieve-match.h and the caller's message accessors,
 * actions collected with RFC 5228 2.10's rules (duplicates once, the
 * implicit keep cancelled by keep, discard, fileinto, redirect and reject
 * unless :copy), imap4flags' internal variable.
 *
 * Trust boundary: a checked user script and a message from any sender;
 * every run is bounded in steps, actions and redirects.
 * RFC 5228 2.7, 2.10, 3-5; RFC 3894; RFC 5232; RFC 5231; RFC 5233;
 * RFC 5429; RFC 5490 3. */
#include "sieve-run.h"

#include "alloc.h"
#include "buf.h"
#include "mime-address.h"
#include "sieve-check.h"
#include "sieve-match.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct mt_sieve_run_limits mt_sieve_run_limits_default = {
	.steps_max = 10000, .actions_max = 32, .redirects_max = 4,
};

enum address_part { PART_ALL, PART_LOCAL, PART_DOMAIN, PART_USER, PART_DETAIL };

/* A command's or test's tags and positional arguments, read leniently
 * (the checker has refused what does not fit). */
struct args {
	enum mt_sieve_comparator cmp;
	enum mt_sieve_match_type match;
	enum mt_sieve_relation rel;
	bool count;
	enum address_part part;
	bool over, under, copy, create;
	const struct mt_sieve_arg *flags;	/* :flags */
	const struct mt_sieve_arg *pos[3];
	size_t n_pos;
};

struct run {
	const struct mt_sieve_message *msg;
	const struct mt_sieve_run_limits *limits;
	struct mt_sieve_result *r;
	bool stop;
	bool cancelled;			/* the implicit keep */
	char **flags;			/* imap4flags' internal variable */
	size_t n_flags;
	size_t redirects;
};

static bool fail(struct run *x, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool fail(struct run *x, unsigned int line, const char *fmt, ...)
{
	if (x->r->failed)
		return false;
	x->r->failed = true;
	va_list ap;
	va_start(ap, fmt);
	mt_sieve_error_write(x->r->error, sizeof(x->r->error), line, fmt, ap);
	va_end(ap);
	return false;
}

static bool step(struct run *x, unsigned int line)
{
	if (++x->r->steps > x->limits->steps_max)
		return fail(x, line, "the script ran more than %" PRIu64 " steps",
			    x->limits->steps_max);
	return true;
}

static void read_args(const struct mt_sieve_arg *args, size_t n, struct args *a)
{
	memset(a, 0, sizeof(*a));
	a->cmp = MT_SIEVE_CMP_ASCII_CASEMAP;
	a->match = MT_SIEVE_MATCH_IS;
	for (size_t i = 0; i < n; i++) {
		const struct mt_sieve_arg *arg = &args[i];
		const struct mt_sieve_arg *value = i + 1 < n ? &args[i + 1] : NULL;
		if (arg->type != MT_SIEVE_ARG_TAG) {
			if (a->n_pos < 3)
				a->pos[a->n_pos++] = arg;
			continue;
		}
		const char *t = arg->tag;
		bool takes_string = value != NULL && value->type == MT_SIEVE_ARG_STRINGS &&
			value->n_strings > 0;
		if (strcasecmp(t, "is") == 0)
			a->match = MT_SIEVE_MATCH_IS;
		else if (strcasecmp(t, "contains") == 0)
			a->match = MT_SIEVE_MATCH_CONTAINS;
		else if (strcasecmp(t, "matches") == 0)
			a->match = MT_SIEVE_MATCH_MATCHES;
		else if ((strcasecmp(t, "value") == 0 || strcasecmp(t, "count") == 0) &&
			 takes_string) {
			a->match = MT_SIEVE_MATCH_VALUE;
			a->count = strcasecmp(t, "count") == 0;
			(void)mt_sieve_relation_parse(value->strings[0], &a->rel);
			i++;
		} else if (strcasecmp(t, "comparator") == 0 && takes_string) {
			(void)mt_sieve_comparator_parse(value->strings[0], &a->cmp);
			i++;
		} else if (strcasecmp(t, "all") == 0)
			a->part = PART_ALL;
		else if (strcasecmp(t, "localpart") == 0)
			a->part = PART_LOCAL;
		else if (strcasecmp(t, "domain") == 0)
			a->part = PART_DOMAIN;
		else if (strcasecmp(t, "user") == 0)
			a->part = PART_USER;
		else if (strcasecmp(t, "detail") == 0)
			a->part = PART_DETAIL;
		else if (strcasecmp(t, "over") == 0)
			a->over = true;
		else if (strcasecmp(t, "under") == 0)
			a->under = true;
		else if (strcasecmp(t, "copy") == 0)
			a->copy = true;
		else if (strcasecmp(t, "create") == 0)
			a->create = true;
		else if (strcasecmp(t, "flags") == 0 && value != NULL) {
			a->flags = value;
			i++;
		} else if (value != NULL && value->type != MT_SIEVE_ARG_TAG &&
			   (strcasecmp(t, "days") == 0 || strcasecmp(t, "subject") == 0 ||
			    strcasecmp(t, "from") == 0 || strcasecmp(t, "addresses") == 0 ||
			    strcasecmp(t, "handle") == 0 || strcasecmp(t, "content") == 0)) {
			i++;	/* a tag of a construct not run here */
		}
	}
}

/* ---- flags (RFC 5232: space-separated names, compared in any case) ---- */

static bool flag_has(char **flags, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(flags[i]) == len && strncasecmp(flags[i], name, len) == 0)
			return true;
	return false;
}

/* Each space-separated flag name of the list's strings, in turn. */
static void flags_each(const struct mt_sieve_arg *list,
		       void (*fn)(char ***flags, size_t *n, const char *name, size_t len),
		       char ***flags, size_t *n)
{
	for (size_t i = 0; list != NULL && i < list->n_strings; i++) {
		for (const char *s = list->strings[i]; *s != '\0';) {
			while (*s == ' ')
				s++;
			size_t len = strcspn(s, " ");
			if (len > 0)
				fn(flags, n, s, len);
			s += len;
		}
	}
}

static void flag_add(char ***flags, size_t *n, const char *name, size_t len)
{
	if (flag_has(*flags, *n, name, len))
		return;
	*flags = mt_xrealloc(*flags, (*n + 1) * sizeof(**flags));
	(*flags)[(*n)++] = mt_xstrndup(name, len);
}

static void flag_remove(char ***flags, size_t *n, const char *name, size_t len)
{
	for (size_t k = 0; k < *n; k++) {
		if (strlen((*flags)[k]) == len && strncasecmp((*flags)[k], name, len) == 0) {
			free((*flags)[k]);
			(*flags)[k] = (*flags)[--*n];
			return;
		}
	}
}

static void flags_add(char ***flags, size_t *n, const struct mt_sieve_arg *list)
{
	flags_each(list, flag_add, flags, n);
}

static void flags_free(char ***flags, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free((*flags)[i]);
	free(*flags);
	*flags = NULL;
	*n = 0;
}

static void flags_copy(char ***to, size_t *n_to, char **from, size_t n_from)
{
	*to = n_from > 0 ? mt_xcalloc(n_from, sizeof(**to)) : NULL;
	for (size_t i = 0; i < n_from; i++)
		(*to)[i] = mt_xstrdup(from[i]);
	*n_to = n_from;
}

/* ---- matching a test's values against its keys ---- */

struct matcher {
	const struct args *a;
	const struct mt_sieve_arg *keys;
	uint64_t count;
	bool hit;
};

/* One value: counted (:count) or matched against every key. true: done. */
static bool match_value(struct matcher *m, const char *v, size_t len)
{
	if (m->a->count) {
		m->count++;
		return false;
	}
	for (size_t i = 0; i < m->keys->n_strings; i++) {
		const char *k = m->keys->strings[i];
		if (mt_sieve_match(m->a->cmp, m->a->match, m->a->rel, v, len, k, strlen(k))) {
			m->hit = true;
			return true;
		}
	}
	return false;
}

/* The result: a hit, or (:count) the count against the keys. */
static bool matcher_result(struct matcher *m)
{
	if (!m->a->count)
		return m->hit;
	char text[24];
	int len = snprintf(text, sizeof(text), "%" PRIu64, m->count);
	for (size_t i = 0; i < m->keys->n_strings; i++) {
		const char *k = m->keys->strings[i];
		if (mt_sieve_match(m->a->cmp, MT_SIEVE_MATCH_VALUE, m->a->rel, text, (size_t)len,
				   k, strlen(k)))
			return true;
	}
	return false;
}

static bool header_visit(const char *value, size_t len, void *arg)
{
	return match_value(arg, value, len);
}

/* The part of local@domain an address test compares; false: none (a
 * :detail of an address without "+"). */
static bool address_part(enum address_part part, const char *local, size_t llen,
			 const char *domain, size_t dlen, struct mt_buf *out)
{
	mt_buf_reset(out);
	const char *plus = memchr(local, '+', llen);
	switch (part) {
	case PART_ALL:
		mt_buf_append(out, local, llen);
		if (dlen > 0) {
			mt_buf_append_char(out, '@');
			mt_buf_append(out, domain, dlen);
		}
		return true;
	case PART_LOCAL:
		mt_buf_append(out, local, llen);
		return true;
	case PART_DOMAIN:
		mt_buf_append(out, domain, dlen);
		return true;
	case PART_USER:
		mt_buf_append(out, local, plus != NULL ? (size_t)(plus - local) : llen);
		return true;
	default:
		if (plus == NULL)
			return false;
		mt_buf_append(out, plus + 1, llen - (size_t)(plus + 1 - local));
		return true;
	}
}

struct address_visit {
	struct matcher *m;
	struct mt_buf part;
};

static bool address_each(const struct mt_mime_address *addr, void *arg)
{
	struct address_visit *av = arg;
	if (addr->mailbox == NULL || addr->host == NULL)
		return false;	/* a group's start or end */
	if (!address_part(av->m->a->part, addr->mailbox, addr->mailbox_len, addr->host,
			  addr->host_len, &av->part))
		return false;
	return match_value(av->m, av->part.data != NULL ? av->part.data : "", av->part.len);
}

static bool address_header_visit(const char *value, size_t len, void *arg)
{
	return mt_mime_addresses_each(value, len, address_each, arg);
}

static bool exists_visit(const char *value, size_t len, void *arg)
{
	(void)value;
	(void)len;
	(void)arg;
	return true;
}

static bool test_eval(struct run *x, const struct mt_sieve_test *t, bool *result);

static bool test_headers(struct run *x, const struct args *a, bool address, bool *result)
{
	struct matcher m = { .a = a, .keys = a->pos[1] };
	struct address_visit av = { .m = &m };
	mt_buf_init(&av.part);
	for (size_t i = 0; i < a->pos[0]->n_strings && !m.hit; i++)
		(void)x->msg->header_each(x->msg->context, a->pos[0]->strings[i],
					  address ? address_header_visit : header_visit,
					  address ? (void *)&av : (void *)&m);
	mt_buf_free(&av.part);
	*result = matcher_result(&m);
	return true;
}

static bool test_envelope(struct run *x, const struct mt_sieve_test *t, const struct args *a,
			  bool *result)
{
	struct matcher m = { .a = a, .keys = a->pos[1] };
	struct mt_buf part;
	mt_buf_init(&part);
	for (size_t i = 0; i < a->pos[0]->n_strings && !m.hit; i++) {
		const char *name = a->pos[0]->strings[i];
		const char *addr;
		if (strcasecmp(name, "from") == 0)
			addr = x->msg->envelope_from;
		else if (strcasecmp(name, "to") == 0)
			addr = x->msg->envelope_to;
		else {
			mt_buf_free(&part);
			return fail(x, t->line, "envelope has no part \"%s\" (from, to)", name);
		}
		addr = addr != NULL ? addr : "";
		const char *at = strrchr(addr, '@');
		size_t llen = at != NULL ? (size_t)(at - addr) : strlen(addr);
		const char *domain = at != NULL ? at + 1 : "";
		if (address_part(a->part, addr, llen, domain, strlen(domain), &part))
			(void)match_value(&m, part.data != NULL ? part.data : "", part.len);
	}
	mt_buf_free(&part);
	*result = matcher_result(&m);
	return true;
}

static bool test_eval(struct run *x, const struct mt_sieve_test *t, bool *result)
{
	if (!step(x, t->line))
		return false;
	struct args a;
	read_args(t->args, t->n_args, &a);
	const char *n = t->name;
	if (strcasecmp(n, "true") == 0 || strcasecmp(n, "false") == 0) {
		*result = strcasecmp(n, "true") == 0;
		return true;
	}
	if (strcasecmp(n, "not") == 0) {
		if (!test_eval(x, &t->tests[0], result))
			return false;
		*result = !*result;
		return true;
	}
	if (strcasecmp(n, "allof") == 0 || strcasecmp(n, "anyof") == 0) {
		bool all = strcasecmp(n, "allof") == 0;
		for (size_t i = 0; i < t->n_tests; i++) {
			if (!test_eval(x, &t->tests[i], result))
				return false;
			if (*result != all)
				return true;	/* decided: short-circuit */
		}
		*result = all;
		return true;
	}
	if (strcasecmp(n, "header") == 0 && a.n_pos == 2)
		return test_headers(x, &a, false, result);
	if (strcasecmp(n, "address") == 0 && a.n_pos == 2)
		return test_headers(x, &a, true, result);
	if (strcasecmp(n, "envelope") == 0 && a.n_pos == 2)
		return test_envelope(x, t, &a, result);
	if (strcasecmp(n, "exists") == 0 && a.n_pos == 1) {
		*result = true;
		for (size_t i = 0; i < a.pos[0]->n_strings && *result; i++)
			*result = x->msg->header_each(x->msg->context, a.pos[0]->strings[i],
						      exists_visit, NULL);
		return true;
	}
	if (strcasecmp(n, "size") == 0 && a.n_pos == 1) {
		uint64_t limit = a.pos[0]->number;
		*result = a.over ? x->msg->size > limit : x->msg->size < limit;
		return true;
	}
	if (strcasecmp(n, "hasflag") == 0 && a.n_pos == 1) {
		struct matcher m = { .a = &a, .keys = a.pos[0] };
		for (size_t i = 0; i < x->n_flags && !match_value(&m, x->flags[i],
								 strlen(x->flags[i])); i++)
			;
		*result = matcher_result(&m);
		return true;
	}
	return fail(x, t->line, "the test \"%s\" is not run yet (this server checks it "
		    "but runs the implicit keep)", n);
}

/* ---- actions ---- */

static bool add_action(struct run *x, enum mt_sieve_action_type type, unsigned int line,
		       const char *target, const struct args *a)
{
	struct mt_sieve_result *r = x->r;
	for (size_t i = 0; i < r->n_actions; i++) {
		const struct mt_sieve_action *o = &r->actions[i];
		bool same = o->type == type &&
			(target == NULL || (o->target != NULL &&
					    (type == MT_SIEVE_ACTION_REDIRECT ?
					     strcasecmp(o->target, target) :
					     strcmp(o->target, target)) == 0));
		if (same)
			return true;	/* RFC 5228 2.10.3: once */
	}
	bool rejects = type == MT_SIEVE_ACTION_REJECT || type == MT_SIEVE_ACTION_EREJECT;
	for (size_t i = 0; i < r->n_actions; i++) {
		enum mt_sieve_action_type o = r->actions[i].type;
		bool other_rejects = o == MT_SIEVE_ACTION_REJECT || o == MT_SIEVE_ACTION_EREJECT;
		bool delivers = type == MT_SIEVE_ACTION_KEEP || type == MT_SIEVE_ACTION_FILEINTO ||
			type == MT_SIEVE_ACTION_REDIRECT;
		bool other_delivers = o == MT_SIEVE_ACTION_KEEP || o == MT_SIEVE_ACTION_FILEINTO ||
			o == MT_SIEVE_ACTION_REDIRECT;
		if ((rejects && (other_delivers || other_rejects)) || (delivers && other_rejects))
			return fail(x, line, "reject/ereject cannot be combined with keep, "
				    "fileinto, redirect or another reject (RFC 5429 2.1)");
	}
	if (r->n_actions == x->limits->actions_max)
		return fail(x, line, "more than %zu actions", x->limits->actions_max);
	if (type == MT_SIEVE_ACTION_REDIRECT && ++x->redirects > x->limits->redirects_max)
		return fail(x, line, "more than %zu redirects", x->limits->redirects_max);
	r->actions = mt_xrealloc(r->actions, (r->n_actions + 1) * sizeof(*r->actions));
	struct mt_sieve_action *act = &r->actions[r->n_actions++];
	memset(act, 0, sizeof(*act));
	act->type = type;
	act->line = line;
	act->target = target != NULL ? mt_xstrdup(target) : NULL;
	act->copy = a != NULL && a->copy;
	act->create = a != NULL && a->create;
	if (type == MT_SIEVE_ACTION_KEEP || type == MT_SIEVE_ACTION_FILEINTO) {
		if (a != NULL && a->flags != NULL)
			flags_add(&act->flags, &act->n_flags, a->flags);
		else
			flags_copy(&act->flags, &act->n_flags, x->flags, x->n_flags);
	}
	if (!act->copy)
		x->cancelled = true;
	return true;
}

static bool run_commands(struct run *x, const struct mt_sieve_command *list, size_t n)
{
	bool chain_taken = false;
	for (size_t i = 0; i < n && !x->stop; i++) {
		const struct mt_sieve_command *c = &list[i];
		const char *name = c->name;
		if (!step(x, c->line))
			return false;
		struct args a;
		read_args(c->args, c->n_args, &a);
		const char *target = a.n_pos > 0 && a.pos[a.n_pos - 1]->type ==
			MT_SIEVE_ARG_STRINGS ? a.pos[a.n_pos - 1]->strings[0] : NULL;
		if (strcasecmp(name, "require") == 0)
			continue;
		if (strcasecmp(name, "if") == 0 || strcasecmp(name, "elsif") == 0 ||
		    strcasecmp(name, "else") == 0) {
			bool taken = false;
			if (strcasecmp(name, "if") == 0)
				chain_taken = false;
			if (!chain_taken) {
				if (strcasecmp(name, "else") == 0)
					taken = true;
				else if (!test_eval(x, &c->tests[0], &taken))
					return false;
			}
			if (taken) {
				chain_taken = true;
				if (!run_commands(x, c->block, c->n_block))
					return false;
			}
			continue;
		}
		chain_taken = false;
		bool ok = true;
		if (strcasecmp(name, "stop") == 0)
			x->stop = true;
		else if (strcasecmp(name, "keep") == 0)
			ok = add_action(x, MT_SIEVE_ACTION_KEEP, c->line, NULL, &a);
		else if (strcasecmp(name, "discard") == 0)
			ok = add_action(x, MT_SIEVE_ACTION_DISCARD, c->line, NULL, &a);
		else if (strcasecmp(name, "fileinto") == 0 && target != NULL)
			ok = add_action(x, MT_SIEVE_ACTION_FILEINTO, c->line, target, &a);
		else if (strcasecmp(name, "redirect") == 0 && target != NULL)
			ok = add_action(x, MT_SIEVE_ACTION_REDIRECT, c->line, target, &a);
		else if (strcasecmp(name, "reject") == 0 && target != NULL)
			ok = add_action(x, MT_SIEVE_ACTION_REJECT, c->line, target, &a);
		else if (strcasecmp(name, "ereject") == 0 && target != NULL)
			ok = add_action(x, MT_SIEVE_ACTION_EREJECT, c->line, target, &a);
		else if ((strcasecmp(name, "setflag") == 0 || strcasecmp(name, "addflag") == 0 ||
			  strcasecmp(name, "removeflag") == 0) && a.n_pos == 1) {
			if (strcasecmp(name, "setflag") == 0)
				flags_free(&x->flags, &x->n_flags);
			if (strcasecmp(name, "removeflag") == 0)
				flags_each(a.pos[0], flag_remove, &x->flags, &x->n_flags);
			else
				flags_add(&x->flags, &x->n_flags, a.pos[0]);
		} else
			return fail(x, c->line, "the command \"%s\" is not run yet (this server "
				    "checks it but runs the implicit keep)", name);
		if (!ok)
			return false;
	}
	return true;
}

static void actions_free(struct mt_sieve_result *r)
{
	for (size_t i = 0; i < r->n_actions; i++) {
		free(r->actions[i].target);
		flags_free(&r->actions[i].flags, &r->actions[i].n_flags);
	}
	free(r->actions);
	r->actions = NULL;
	r->n_actions = 0;
}

bool mt_sieve_run(const struct mt_sieve_script *script, const struct mt_sieve_message *msg,
		  const struct mt_sieve_run_limits *limits, struct mt_sieve_result *result)
{
	memset(result, 0, sizeof(*result));
	struct run x = {
		.msg = msg, .r = result,
		.limits = limits != NULL ? limits : &mt_sieve_run_limits_default,
	};
	bool ok = run_commands(&x, script->commands, script->n_commands);
	if (!ok) {
		/* RFC 5228 2.10.6: an error at run time, the implicit keep. */
		actions_free(result);
		result->implicit_keep = true;
	} else {
		result->implicit_keep = !x.cancelled;
		if (result->implicit_keep)
			flags_copy(&result->keep_flags, &result->n_keep_flags, x.flags, x.n_flags);
	}
	flags_free(&x.flags, &x.n_flags);
	return ok;
}

void mt_sieve_result_free(struct mt_sieve_result *result)
{
	actions_free(result);
	flags_free(&result->keep_flags, &result->n_keep_flags);
}
