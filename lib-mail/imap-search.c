/* imap-search.c — SEARCH criteria read and matched (see imap-search.h):
 * a recursive-descent reader over imap-parse's arguments into a node tree,
 * and a three-valued matcher (no / yes / needs more of the message) so
 * that AND, OR and NOT decide what they can from flags, sizes and dates
 * before a header or a body is read.
 *
 * Trust boundary: the client's arguments; recursion is bounded by
 * limits.depth_max, the tree by the arguments' count, the sets by
 * limits.ranges_max. Message text is read within the lengths given.
 * RFC 9051 6.4.4 (the keys; FROM, TO, CC and BCC over the envelope's
 * addresses, read by mime-address), 9 (search-key grammar), 2.3.2
 * (flags); RFC 5322 3.3 (the Date: field SENT* read), 3.4 (addresses). */
#include "imap-search.h"
#include "alloc.h"
#include "buf.h"
#include "imap-date.h"
#include "imap-write.h"
#include "mime-address.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DAY_BIAS (UINT64_C(1) << 31)

struct reader {
	struct mt_imap_search *s;
	const struct mt_imap_search_limits *limits;
	unsigned int *kids;		/* children's node indexes */
	unsigned int kids_used, kids_cap;
	unsigned int nodes_cap;
	const char *error;
	bool badcharset;
};

static unsigned int node_new(struct reader *r, enum mt_imap_search_kind kind)
{
	struct mt_imap_search *s = r->s;
	if (s->count == r->nodes_cap) {
		r->nodes_cap = r->nodes_cap == 0 ? 16 : r->nodes_cap * 2;
		s->nodes = mt_xrealloc(s->nodes, r->nodes_cap * sizeof(*s->nodes));
	}
	struct mt_imap_search_node *n = &s->nodes[s->count];
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	return s->count++;
}

static bool fail(struct reader *r, const char *error)
{
	if (r->error == NULL)
		r->error = error;
	return false;
}

static bool string_arg(const struct mt_imap_arg *a, const char **str_r, size_t *len_r)
{
	return mt_imap_arg_astring(a, str_r, len_r) && memchr(*str_r, '\0', *len_r) == NULL;
}

static bool number_arg(const struct mt_imap_arg *a, uint64_t *n_r)
{
	if (a->type != MT_IMAP_ARG_ATOM || a->len == 0 || a->len > 19)
		return false;
	uint64_t n = 0;
	for (size_t i = 0; i < a->len; i++) {
		if (a->str[i] < '0' || a->str[i] > '9')
			return false;
		n = n * 10 + (uint64_t)(a->str[i] - '0');
	}
	*n_r = n;
	return true;
}

static bool set_arg(struct reader *r, const struct mt_imap_arg *a,
		    struct mt_imap_seqset *set)
{
	struct mt_imap_search *s = r->s;
	size_t room = s->ranges_max - s->ranges_used;
	if (a->type != MT_IMAP_ARG_ATOM || room == 0 ||
	    !mt_imap_seqset_parse(a->str, set, s->ranges + s->ranges_used, room))
		return false;
	s->ranges_used += set->count;
	s->uses_saved |= set->saved;
	return true;
}

static const struct {
	const char *name;
	uint64_t bits;
} flag_keys[] = {
	{ "ANSWERED", MT_IMAP_SEARCH_ANSWERED }, { "DELETED", MT_IMAP_SEARCH_DELETED },
	{ "DRAFT", MT_IMAP_SEARCH_DRAFT }, { "FLAGGED", MT_IMAP_SEARCH_FLAGGED },
	{ "SEEN", MT_IMAP_SEARCH_SEEN },
	{ "UNANSWERED", MT_IMAP_SEARCH_ANSWERED | MT_IMAP_SEARCH_FLAG_UNSET },
	{ "UNDELETED", MT_IMAP_SEARCH_DELETED | MT_IMAP_SEARCH_FLAG_UNSET },
	{ "UNDRAFT", MT_IMAP_SEARCH_DRAFT | MT_IMAP_SEARCH_FLAG_UNSET },
	{ "UNFLAGGED", MT_IMAP_SEARCH_FLAGGED | MT_IMAP_SEARCH_FLAG_UNSET },
	{ "UNSEEN", MT_IMAP_SEARCH_SEEN | MT_IMAP_SEARCH_FLAG_UNSET },
};

static const struct {
	const char *name;
	const char *field;
	enum mt_imap_search_kind kind;
} header_keys[] = {
	{ "BCC", "Bcc", MT_IMAP_SEARCH_ADDRESS }, { "CC", "Cc", MT_IMAP_SEARCH_ADDRESS },
	{ "FROM", "From", MT_IMAP_SEARCH_ADDRESS },
	{ "SUBJECT", "Subject", MT_IMAP_SEARCH_HEADER },
	{ "TO", "To", MT_IMAP_SEARCH_ADDRESS },
};

static const struct {
	const char *name;
	enum mt_imap_search_kind kind;
} date_keys[] = {
	{ "BEFORE", MT_IMAP_SEARCH_BEFORE }, { "ON", MT_IMAP_SEARCH_ON },
	{ "SINCE", MT_IMAP_SEARCH_SINCE }, { "SENTBEFORE", MT_IMAP_SEARCH_SENTBEFORE },
	{ "SENTON", MT_IMAP_SEARCH_SENTON }, { "SENTSINCE", MT_IMAP_SEARCH_SENTSINCE },
};

static bool keys_read(struct reader *r, const struct mt_imap_arg *args, size_t count,
		      size_t *i, unsigned int depth, bool one, unsigned int *node_r);

/* One search-key at args[*i]. */
static bool key_read(struct reader *r, const struct mt_imap_arg *args, size_t count,
		     size_t *i, unsigned int depth, unsigned int *node_r)
{
	if (*i >= count)
		return fail(r, "search key expected");
	if (depth > r->limits->depth_max)
		return fail(r, "search keys nested too deeply");
	const struct mt_imap_arg *a = &args[(*i)++];
	if (a->type == MT_IMAP_ARG_LIST) {
		size_t k = 0;
		if (a->len == 0)
			return fail(r, "empty search key list");
		return keys_read(r, a->list, a->len, &k, depth + 1, false, node_r) ||
			fail(r, "bad search key list");
	}
	if (a->type != MT_IMAP_ARG_ATOM)
		return fail(r, "search key expected");
	const char *k = a->str;
	const struct mt_imap_arg *next = *i < count ? &args[*i] : NULL;
	unsigned int n;
	if (strcasecmp(k, "ALL") == 0 || strcasecmp(k, "OLD") == 0) {
		*node_r = node_new(r, MT_IMAP_SEARCH_ALL);
		return true;
	}
	if (strcasecmp(k, "RECENT") == 0 || strcasecmp(k, "NEW") == 0) {
		*node_r = node_new(r, MT_IMAP_SEARCH_NONE);
		return true;
	}
	for (size_t f = 0; f < sizeof(flag_keys) / sizeof(flag_keys[0]); f++) {
		if (strcasecmp(k, flag_keys[f].name) == 0) {
			n = node_new(r, MT_IMAP_SEARCH_FLAG);
			r->s->nodes[n].number = flag_keys[f].bits;
			*node_r = n;
			return true;
		}
	}
	for (size_t h = 0; h < sizeof(header_keys) / sizeof(header_keys[0]); h++) {
		if (strcasecmp(k, header_keys[h].name) == 0) {
			const char *v;
			size_t len;
			if (next == NULL || !string_arg(next, &v, &len))
				return fail(r, "string expected");
			(*i)++;
			n = node_new(r, header_keys[h].kind);
			r->s->nodes[n].name = header_keys[h].field;
			r->s->nodes[n].value = v;
			r->s->nodes[n].value_len = len;
			r->s->needs_header = true;
			*node_r = n;
			return true;
		}
	}
	for (size_t d = 0; d < sizeof(date_keys) / sizeof(date_keys[0]); d++) {
		if (strcasecmp(k, date_keys[d].name) == 0) {
			const char *v;
			size_t len;
			int32_t days;
			if (next == NULL || !string_arg(next, &v, &len) ||
			    !mt_imap_date_parse(v, len, &days))
				return fail(r, "date expected (d-Mon-yyyy)");
			(*i)++;
			n = node_new(r, date_keys[d].kind);
			r->s->nodes[n].number = (uint64_t)((int64_t)days + (int64_t)DAY_BIAS);
			if (date_keys[d].kind >= MT_IMAP_SEARCH_SENTBEFORE)
				r->s->needs_header = true;
			*node_r = n;
			return true;
		}
	}
	if (strcasecmp(k, "HEADER") == 0) {
		const char *name, *v;
		size_t name_len, len;
		if (*i + 1 >= count || !string_arg(next, &name, &name_len) || name_len == 0 ||
		    !string_arg(&args[*i + 1], &v, &len))
			return fail(r, "HEADER takes a field name and a string");
		*i += 2;
		n = node_new(r, MT_IMAP_SEARCH_HEADER);
		r->s->nodes[n].name = name;
		r->s->nodes[n].value = v;
		r->s->nodes[n].value_len = len;
		r->s->needs_header = true;
		*node_r = n;
		return true;
	}
	if (strcasecmp(k, "BODY") == 0 || strcasecmp(k, "TEXT") == 0) {
		const char *v;
		size_t len;
		if (next == NULL || !string_arg(next, &v, &len))
			return fail(r, "string expected");
		(*i)++;
		n = node_new(r, k[0] == 'B' || k[0] == 'b' ? MT_IMAP_SEARCH_BODY :
			     MT_IMAP_SEARCH_TEXT);
		r->s->nodes[n].value = v;
		r->s->nodes[n].value_len = len;
		r->s->needs_body = true;
		r->s->needs_header |= r->s->nodes[n].kind == MT_IMAP_SEARCH_TEXT;
		*node_r = n;
		return true;
	}
	if (strcasecmp(k, "KEYWORD") == 0 || strcasecmp(k, "UNKEYWORD") == 0) {
		if (next == NULL || next->type != MT_IMAP_ARG_ATOM || next->len == 0)
			return fail(r, "keyword expected");
		(*i)++;
		n = node_new(r, MT_IMAP_SEARCH_KEYWORD);
		r->s->nodes[n].name = next->str;
		if (k[0] == 'U' || k[0] == 'u') {
			unsigned int not = node_new(r, MT_IMAP_SEARCH_NOT);
			r->s->nodes[not].first = r->kids_used;
			r->s->nodes[not].count = 1;
			if (r->kids_used == r->kids_cap) {
				r->kids_cap = r->kids_cap == 0 ? 16 : r->kids_cap * 2;
				r->kids = mt_xrealloc(r->kids, r->kids_cap * sizeof(*r->kids));
			}
			r->kids[r->kids_used++] = n;
			n = not;
		}
		*node_r = n;
		return true;
	}
	if (strcasecmp(k, "LARGER") == 0 || strcasecmp(k, "SMALLER") == 0) {
		uint64_t v;
		if (next == NULL || !number_arg(next, &v))
			return fail(r, "number expected");
		(*i)++;
		n = node_new(r, k[0] == 'L' || k[0] == 'l' ? MT_IMAP_SEARCH_LARGER :
			     MT_IMAP_SEARCH_SMALLER);
		r->s->nodes[n].number = v;
		*node_r = n;
		return true;
	}
	if (strcasecmp(k, "MODSEQ") == 0) {
		/* MODSEQ [entry-name entry-type-req] mod-sequence-value, the
		 * entry name is a quoted "/flags/..." string. */
		uint64_t v;
		if (*i + 2 < count && args[*i].type != MT_IMAP_ARG_ATOM) {
			const char *entry;
			size_t len;
			const struct mt_imap_arg *type = &args[*i + 1];
			if (!string_arg(&args[*i], &entry, &len) ||
			    !(mt_imap_arg_atom_is(type, "priv") ||
			      mt_imap_arg_atom_is(type, "shared") ||
			      mt_imap_arg_atom_is(type, "all")))
				return fail(r, "MODSEQ entry name and type expected");
			*i += 2;
		}
		if (*i >= count || !number_arg(&args[*i], &v))
			return fail(r, "MODSEQ value expected");
		(*i)++;
		n = node_new(r, MT_IMAP_SEARCH_MODSEQ);
		r->s->nodes[n].number = v;
		r->s->uses_modseq = true;
		*node_r = n;
		return true;
	}
	if (strcasecmp(k, "UID") == 0) {
		struct mt_imap_seqset set;
		if (next == NULL || !set_arg(r, next, &set))
			return fail(r, "UID set expected");
		(*i)++;
		n = node_new(r, MT_IMAP_SEARCH_UIDSET);
		r->s->nodes[n].set = set;
		*node_r = n;
		return true;
	}
	if (strcasecmp(k, "NOT") == 0 || strcasecmp(k, "OR") == 0) {
		const bool or = k[0] == 'O' || k[0] == 'o';
		unsigned int kid[2];
		for (unsigned int c = 0; c < (or ? 2u : 1u); c++)
			if (!key_read(r, args, count, i, depth + 1, &kid[c]))
				return false;
		n = node_new(r, or ? MT_IMAP_SEARCH_OR : MT_IMAP_SEARCH_NOT);
		r->s->nodes[n].first = r->kids_used;
		r->s->nodes[n].count = or ? 2 : 1;
		for (unsigned int c = 0; c < (or ? 2u : 1u); c++) {
			if (r->kids_used == r->kids_cap) {
				r->kids_cap = r->kids_cap == 0 ? 16 : r->kids_cap * 2;
				r->kids = mt_xrealloc(r->kids, r->kids_cap * sizeof(*r->kids));
			}
			r->kids[r->kids_used++] = kid[c];
		}
		*node_r = n;
		return true;
	}
	/* A sequence set. */
	struct mt_imap_seqset set;
	if (!set_arg(r, a, &set))
		return fail(r, "unknown search key");
	n = node_new(r, MT_IMAP_SEARCH_SEQSET);
	r->s->nodes[n].set = set;
	*node_r = n;
	return true;
}

/* Keys to the end of args, ANDed (one: just one key). */
static bool keys_read(struct reader *r, const struct mt_imap_arg *args, size_t count,
		      size_t *i, unsigned int depth, bool one, unsigned int *node_r)
{
	unsigned int *mine = NULL, n_mine = 0;
	bool ok = true;
	while (ok && *i < count) {
		unsigned int kid;
		if (!(ok = key_read(r, args, count, i, depth, &kid)))
			break;
		mine = mt_xrealloc(mine, (n_mine + 1) * sizeof(*mine));
		mine[n_mine++] = kid;
		if (one)
			break;
	}
	if (ok && n_mine == 0)
		ok = fail(r, "search key expected");
	if (ok && n_mine == 1)
		*node_r = mine[0];
	else if (ok) {
		unsigned int n = node_new(r, MT_IMAP_SEARCH_AND);
		r->s->nodes[n].first = r->kids_used;
		r->s->nodes[n].count = n_mine;
		for (unsigned int c = 0; c < n_mine; c++) {
			if (r->kids_used == r->kids_cap) {
				r->kids_cap = r->kids_cap == 0 ? 16 : r->kids_cap * 2;
				r->kids = mt_xrealloc(r->kids, r->kids_cap * sizeof(*r->kids));
			}
			r->kids[r->kids_used++] = mine[c];
		}
		*node_r = n;
	}
	free(mine);
	return ok;
}

bool mt_imap_search_parse(struct mt_imap_search *s, const struct mt_imap_arg *args,
			  size_t count, const struct mt_imap_search_limits *limits,
			  bool *badcharset_r, const char **error_r)
{
	memset(s, 0, sizeof(*s));
	*badcharset_r = false;
	s->ranges_max = limits->ranges_max;
	s->ranges = mt_xmalloc((limits->ranges_max + 1) * sizeof(*s->ranges));
	struct reader r = { .s = s, .limits = limits };
	size_t i = 0;
	if (count >= 2 && mt_imap_arg_atom_is(&args[0], "CHARSET")) {
		const char *cs;
		size_t len;
		if (!string_arg(&args[1], &cs, &len) ||
		    (strcasecmp(cs, "US-ASCII") != 0 && strcasecmp(cs, "UTF-8") != 0)) {
			*badcharset_r = true;
			*error_r = "unsupported charset";
			mt_imap_search_free(s);
			return false;
		}
		i = 2;
	}
	unsigned int root;
	bool ok = keys_read(&r, args, count, &i, 0, false, &root);
	if (ok) {
		/* The children's indexes live in the nodes' array's tail. */
		unsigned int base = s->count;
		s->nodes = mt_xrealloc(s->nodes, (s->count + r.kids_used + 1) * sizeof(*s->nodes));
		for (unsigned int k = 0; k < r.kids_used; k++) {
			memset(&s->nodes[base + k], 0, sizeof(s->nodes[0]));
			s->nodes[base + k].number = r.kids[k];
		}
		for (unsigned int k = 0; k < base; k++) {
			enum mt_imap_search_kind kind = s->nodes[k].kind;
			if (kind == MT_IMAP_SEARCH_AND || kind == MT_IMAP_SEARCH_OR ||
			    kind == MT_IMAP_SEARCH_NOT)
				s->nodes[k].first += base;
		}
		s->root = root;
	}
	free(r.kids);
	if (!ok) {
		*error_r = r.error != NULL ? r.error : "bad search criteria";
		mt_imap_search_free(s);
	}
	return ok;
}

void mt_imap_search_free(struct mt_imap_search *s)
{
	free(s->nodes);
	free(s->ranges);
	memset(s, 0, sizeof(*s));
}

/* Matching */

static bool contains(const char *hay, size_t hay_len, const char *needle, size_t len)
{
	if (len == 0)
		return true;
	if (len > hay_len)
		return false;
	const unsigned char first = (unsigned char)tolower((unsigned char)needle[0]);
	for (size_t i = 0; i + len <= hay_len; i++) {
		if ((unsigned char)tolower((unsigned char)hay[i]) != first)
			continue;
		size_t k = 1;
		while (k < len && tolower((unsigned char)hay[i + k]) ==
		       tolower((unsigned char)needle[k]))
			k++;
		if (k == len)
			return true;
	}
	return false;
}

/* Each field named name: its value unfolded into out, one at a time,
 * to visit; true as soon as visit says so. */
static bool fields_each(const char *header, size_t len, const char *name,
			bool (*visit)(const char *value, size_t len, const void *ctx),
			const void *ctx)
{
	const size_t name_len = strlen(name);
	struct mt_buf value = MT_BUF_INIT;
	bool hit = false;
	for (size_t i = 0; i < len && !hit;) {
		const char *nl = memchr(header + i, '\n', len - i);
		size_t end = nl != NULL ? (size_t)(nl - header) + 1 : len;
		const char *line = header + i;
		size_t line_len = end - i;
		i = end;
		if (line_len <= 2 && (line[0] == '\r' || line[0] == '\n'))
			break;
		if (line_len <= name_len || line[name_len] != ':' ||
		    strncasecmp(line, name, name_len) != 0)
			continue;
		mt_buf_reset(&value);
		mt_buf_append(&value, line + name_len + 1, line_len - name_len - 1);
		/* Its continuation lines. */
		while (i < len && (header[i] == ' ' || header[i] == '\t')) {
			const char *nl2 = memchr(header + i, '\n', len - i);
			size_t end2 = nl2 != NULL ? (size_t)(nl2 - header) + 1 : len;
			while (value.len > 0 && (value.data[value.len - 1] == '\n' ||
						 value.data[value.len - 1] == '\r'))
				value.len--;
			mt_buf_append(&value, header + i, end2 - i);
			i = end2;
		}
		while (value.len > 0 && (value.data[value.len - 1] == '\n' ||
					 value.data[value.len - 1] == '\r'))
			value.len--;
		hit = visit(value.data != NULL ? value.data : "", value.len, ctx);
	}
	mt_buf_free(&value);
	return hit;
}

static bool visit_contains(const char *value, size_t len, const void *ctx)
{
	const struct mt_imap_search_node *n = ctx;
	return contains(value, len, n->value, n->value_len);
}

struct address_match {
	const struct mt_imap_search_node *node;
	struct mt_buf spec;	/* "mailbox@host" */
};

/* One envelope address: its name, or its addr-spec as the ENVELOPE has
 * it (comments and folding whitespace gone), holds the string. */
static bool address_contains(const struct mt_mime_address *a, void *context)
{
	struct address_match *am = context;
	const struct mt_imap_search_node *n = am->node;
	if (a->name != NULL && contains(a->name, a->name_len, n->value, n->value_len))
		return true;
	if (a->mailbox == NULL)
		return false;	/* a group's end */
	mt_buf_reset(&am->spec);
	mt_buf_append(&am->spec, a->mailbox, a->mailbox_len);
	if (a->host != NULL) {
		mt_buf_append_char(&am->spec, '@');
		mt_buf_append(&am->spec, a->host, a->host_len);
	}
	return contains(am->spec.data != NULL ? am->spec.data : "", am->spec.len,
			n->value, n->value_len);
}

/* FROM, TO, CC, BCC: RFC 9051 6.4.4, "Messages that contain the
 * specified string in the envelope structure's FROM field": each
 * address's name and its addr-spec as the ENVELOPE has them, so an
 * address written with comments or folding ("<user (c)@ (c)
 * domain.org>") is found as user@domain.org. The field's text as written
 * is searched too, so that what matched before still does (a string
 * across name and address as written, "Smith <j", or in a comment). */
static bool visit_address(const char *value, size_t len, const void *ctx)
{
	const struct mt_imap_search_node *n = ctx;
	if (contains(value, len, n->value, n->value_len))
		return true;
	struct address_match am = { .node = n, .spec = MT_BUF_INIT };
	bool hit = mt_mime_addresses_each(value, len, address_contains, &am);
	mt_buf_free(&am.spec);
	return hit;
}

/* The Date: field's day ("Thu, 3 Dec 2026 ..."): into *days_r. */
struct sent_day {
	int32_t days;
	bool found;
};

static bool visit_date(const char *value, size_t len, const void *ctx)
{
	struct sent_day *d = (struct sent_day *)ctx;
	char text[64];
	size_t i = 0, n = 0;
	while (i < len && (value[i] == ' ' || value[i] == '\t'))
		i++;
	const char *comma = memchr(value + i, ',', len - i);
	if (comma != NULL && comma - (value + i) <= 9)
		i = (size_t)(comma - value) + 1;
	/* day SP month SP year */
	for (int field = 0; field < 3 && n + 6 < sizeof(text); field++) {
		while (i < len && (value[i] == ' ' || value[i] == '\t'))
			i++;
		size_t start = i;
		while (i < len && value[i] != ' ' && value[i] != '\t' && i - start < 8)
			i++;
		if (i == start)
			return false;
		if (field > 0)
			text[n++] = '-';
		memcpy(text + n, value + start, i - start);
		n += i - start;
	}
	d->found = mt_imap_date_parse(text, n, &d->days);
	return d->found;
}

static enum mt_imap_search_match and3(enum mt_imap_search_match a,
				      enum mt_imap_search_match b)
{
	if (a == MT_IMAP_SEARCH_NO || b == MT_IMAP_SEARCH_NO)
		return MT_IMAP_SEARCH_NO;
	if (a == MT_IMAP_SEARCH_YES)
		return b;
	if (b == MT_IMAP_SEARCH_YES)
		return a;
	return a > b ? a : b;	/* the more it needs */
}

static enum mt_imap_search_match or3(enum mt_imap_search_match a,
				     enum mt_imap_search_match b)
{
	if (a == MT_IMAP_SEARCH_YES || b == MT_IMAP_SEARCH_YES)
		return MT_IMAP_SEARCH_YES;
	if (a == MT_IMAP_SEARCH_NO)
		return b;
	if (b == MT_IMAP_SEARCH_NO)
		return a;
	return a > b ? a : b;
}

static enum mt_imap_search_match yes(bool b)
{
	return b ? MT_IMAP_SEARCH_YES : MT_IMAP_SEARCH_NO;
}

static int64_t day_of(int64_t time)
{
	return time >= 0 ? time / 86400 : -((-time + 86399) / 86400);
}

static enum mt_imap_search_match node_match(const struct mt_imap_search *s,
					    unsigned int index,
					    const struct mt_imap_search_msg *m)
{
	const struct mt_imap_search_node *n = &s->nodes[index];
	const int64_t day = (int64_t)n->number - (int64_t)DAY_BIAS;
	switch (n->kind) {
	case MT_IMAP_SEARCH_ALL:
		return MT_IMAP_SEARCH_YES;
	case MT_IMAP_SEARCH_NONE:
		return MT_IMAP_SEARCH_NO;
	case MT_IMAP_SEARCH_AND:
	case MT_IMAP_SEARCH_OR: {
		const bool and = n->kind == MT_IMAP_SEARCH_AND;
		enum mt_imap_search_match r = and ? MT_IMAP_SEARCH_YES : MT_IMAP_SEARCH_NO;
		for (unsigned int k = 0; k < n->count; k++) {
			unsigned int kid = (unsigned int)s->nodes[n->first + k].number;
			enum mt_imap_search_match one = node_match(s, kid, m);
			r = and ? and3(r, one) : or3(r, one);
			if (r == (and ? MT_IMAP_SEARCH_NO : MT_IMAP_SEARCH_YES))
				break;
		}
		return r;
	}
	case MT_IMAP_SEARCH_NOT: {
		enum mt_imap_search_match r =
			node_match(s, (unsigned int)s->nodes[n->first].number, m);
		return r == MT_IMAP_SEARCH_YES ? MT_IMAP_SEARCH_NO :
			r == MT_IMAP_SEARCH_NO ? MT_IMAP_SEARCH_YES : r;
	}
	case MT_IMAP_SEARCH_SEQSET:
		return yes(mt_imap_seqset_contains(&n->set, m->seq, m->largest_seq));
	case MT_IMAP_SEARCH_UIDSET:
		return yes(mt_imap_seqset_contains(&n->set, m->uid, m->largest_uid));
	case MT_IMAP_SEARCH_FLAG: {
		uint32_t bits = (uint32_t)(n->number & 0xffffffffu);
		bool set = (m->flags & bits) == bits;
		return yes((n->number & MT_IMAP_SEARCH_FLAG_UNSET) ? (m->flags & bits) == 0 : set);
	}
	case MT_IMAP_SEARCH_KEYWORD:
		return yes(m->keyword != NULL && m->keyword(m->context, n->name));
	case MT_IMAP_SEARCH_LARGER:
		return yes(m->size > n->number);
	case MT_IMAP_SEARCH_SMALLER:
		return yes(m->size < n->number);
	case MT_IMAP_SEARCH_MODSEQ:
		return yes(m->modseq >= n->number);
	case MT_IMAP_SEARCH_BEFORE:
		return yes(day_of(m->internaldate) < day);
	case MT_IMAP_SEARCH_ON:
		return yes(day_of(m->internaldate) == day);
	case MT_IMAP_SEARCH_SINCE:
		return yes(day_of(m->internaldate) >= day);
	case MT_IMAP_SEARCH_SENTBEFORE:
	case MT_IMAP_SEARCH_SENTON:
	case MT_IMAP_SEARCH_SENTSINCE: {
		if (m->header == NULL)
			return MT_IMAP_SEARCH_NEED_HEADER;
		struct sent_day d = { 0 };
		(void)fields_each(m->header, m->header_len, "Date", visit_date, &d);
		if (!d.found)
			return MT_IMAP_SEARCH_NO;	/* no readable Date: */
		return yes(n->kind == MT_IMAP_SEARCH_SENTBEFORE ? d.days < day :
			   n->kind == MT_IMAP_SEARCH_SENTON ? d.days == day : d.days >= day);
	}
	case MT_IMAP_SEARCH_HEADER:
		if (m->header == NULL)
			return MT_IMAP_SEARCH_NEED_HEADER;
		return yes(fields_each(m->header, m->header_len, n->name, visit_contains, n));
	case MT_IMAP_SEARCH_ADDRESS:
		if (m->header == NULL)
			return MT_IMAP_SEARCH_NEED_HEADER;
		return yes(fields_each(m->header, m->header_len, n->name, visit_address, n));
	case MT_IMAP_SEARCH_TEXT:
		if (m->header == NULL)
			return MT_IMAP_SEARCH_NEED_HEADER;
		if (contains(m->header, m->header_len, n->value, n->value_len))
			return MT_IMAP_SEARCH_YES;
		if (m->body == NULL)
			return MT_IMAP_SEARCH_NEED_BODY;
		return yes(contains(m->body, m->body_len, n->value, n->value_len));
	case MT_IMAP_SEARCH_BODY:
		if (m->body == NULL)
			return MT_IMAP_SEARCH_NEED_BODY;
		return yes(contains(m->body, m->body_len, n->value, n->value_len));
	}
	return MT_IMAP_SEARCH_NO;
}

enum mt_imap_search_match mt_imap_search_match(const struct mt_imap_search *s,
					       const struct mt_imap_search_msg *m)
{
	return node_match(s, s->root, m);
}

/* Answers */

/* The highest of modseqs[0..n). */
static uint64_t highest_modseq(const uint64_t *modseqs, size_t n)
{
	uint64_t highest = 0;
	for (size_t i = 0; i < n; i++)
		if (modseqs[i] > highest)
			highest = modseqs[i];
	return highest;
}

void mt_imap_search_write_esearch(struct mt_buf *out, unsigned int returns,
				  const uint32_t *ids, const uint64_t *modseqs,
				  size_t count)
{
	if ((returns & MT_IMAP_SEARCH_RETURN_MIN) && count > 0)
		mt_buf_appendf(out, " MIN %u", ids[0]);
	if ((returns & MT_IMAP_SEARCH_RETURN_MAX) && count > 0)
		mt_buf_appendf(out, " MAX %u", ids[count - 1]);
	if (returns & MT_IMAP_SEARCH_RETURN_COUNT)
		mt_buf_appendf(out, " COUNT %zu", count);
	if ((returns & MT_IMAP_SEARCH_RETURN_ALL) && count > 0) {
		mt_buf_append_str(out, " ALL ");
		mt_imap_write_seqset(out, ids, count);
	}
	if (modseqs == NULL || count == 0)
		return;
	/* RFC 4731 3.2: "If the SEARCH/UID SEARCH command contained a single
	 * MIN or MAX result option, the MODSEQ result option contains the
	 * mod-sequence for the found message. If [it] contained both MIN and
	 * MAX result options and no ALL/COUNT option, the MODSEQ result
	 * option contains the highest mod-sequence for the two returned
	 * messages. Otherwise the MODSEQ result option contains the highest
	 * mod-sequence for all messages being returned." */
	uint64_t modseq;
	if (returns & (MT_IMAP_SEARCH_RETURN_ALL | MT_IMAP_SEARCH_RETURN_COUNT))
		modseq = highest_modseq(modseqs, count);
	else if (returns == MT_IMAP_SEARCH_RETURN_MIN)
		modseq = modseqs[0];
	else if (returns == MT_IMAP_SEARCH_RETURN_MAX)
		modseq = modseqs[count - 1];
	else
		modseq = modseqs[0] > modseqs[count - 1] ? modseqs[0] : modseqs[count - 1];
	mt_buf_appendf(out, " MODSEQ %" PRIu64, modseq);
}

void mt_imap_search_write_search(struct mt_buf *out, const uint32_t *ids,
				 const uint64_t *modseqs, size_t count)
{
	mt_buf_append_str(out, "* SEARCH");
	for (size_t i = 0; i < count; i++)
		mt_buf_appendf(out, " %u", ids[i]);
	/* RFC 7162 3.1.5: the highest mod-sequence of all messages being
	 * returned (without hits there is none to name). */
	if (modseqs != NULL && count > 0)
		mt_buf_appendf(out, " (MODSEQ %" PRIu64 ")", highest_modseq(modseqs, count));
}
