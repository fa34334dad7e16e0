/* imap-thread.c — THREAD's ORDEREDSUBJECT and REFERENCES algorithms over
 * message records (see imap-thread.h for the rules and bounds).
 *
 * Containers are array entries linked by index: node 0 is the root whose
 * children are the threads; a container without a message is a dummy.
 * Every walk is iterative.
 *
 * Trust boundary: header values from any sender, bounded as the header
 * says. RFCs: 5256 2.2 (ORDEREDSUBJECT), 2.3 (REFERENCES), 4 (THREAD
 * response); 5322 3.6.4 (msg-id, In-Reply-To, References). */
#include "imap-thread.h"
#include "alloc.h"
#include "imap-sort.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NONE (-1)
#define ROOT 0

struct thread_node {
	int32_t msg;			/* index into msgs, NONE: dummy */
	int32_t parent, first_child, last_child, next_sibling;
	int64_t key_date;		/* the sort key: own, or first child's */
	uint32_t key_order;
};

struct thread_subject {
	char *base;			/* casemapped base subject */
	bool reply;
};

struct thread_table {			/* string -> int32, open addressing */
	struct mt_buf arena;
	struct { size_t off, len; int32_t value; bool used; } *slots;
	size_t cap, used;
};

struct thread_ctx {
	const struct mt_imap_thread_msg *msgs;
	size_t count;
	struct thread_node *nodes;
	size_t node_count, node_cap;
	struct thread_subject *subjects;
};

bool mt_imap_thread_algorithm_parse(const struct mt_imap_arg *arg,
				    enum mt_imap_thread_algorithm *algorithm_r)
{
	if (mt_imap_arg_atom_is(arg, "ORDEREDSUBJECT"))
		*algorithm_r = MT_IMAP_THREAD_ORDEREDSUBJECT;
	else if (mt_imap_arg_atom_is(arg, "REFERENCES"))
		*algorithm_r = MT_IMAP_THREAD_REFERENCES;
	else
		return false;
	return true;
}

void mt_imap_thread_msgids(const char *value,
			   void (*each)(const char *id, size_t len, void *context),
			   void *context)
{
	if (value == NULL)
		return;
	char id[MT_IMAP_THREAD_ID_MAX + 1];
	const char *p = value;
	while ((p = strchr(p, '<')) != NULL) {
		size_t n = 0;
		bool valid = true;
		for (p++; *p != '\0' && *p != '>' && *p != '<'; p++) {
			if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
				continue;	/* folding inside a msg-id */
			if (n == MT_IMAP_THREAD_ID_MAX)
				valid = false;
			else
				id[n++] = *p;
		}
		if (*p != '>')
			continue;	/* '<' again, or the end */
		p++;
		if (valid && n > 0)
			each(id, n, context);
	}
}

bool mt_imap_thread_header_field(const char *header, size_t len, const char *name,
				 struct mt_buf *out)
{
	const size_t name_len = strlen(name);
	size_t i = 0;
	while (i < len) {
		const char *nl = memchr(header + i, '\n', len - i);
		size_t line_end = nl != NULL ? (size_t)(nl - header) + 1 : len;
		if (len - i > name_len && header[i + name_len] == ':' &&
		    strncasecmp(header + i, name, name_len) == 0) {
			size_t j = i + name_len + 1;
			for (;;) {
				size_t e = line_end;
				while (e > j && (header[e - 1] == '\n' || header[e - 1] == '\r'))
					e--;
				mt_buf_append(out, header + j, e - j);
				if (line_end >= len || (header[line_end] != ' ' && header[line_end] != '\t'))
					break;
				j = line_end;	/* a continuation line */
				nl = memchr(header + j, '\n', len - j);
				line_end = nl != NULL ? (size_t)(nl - header) + 1 : len;
			}
			return true;
		}
		i = line_end;
	}
	return false;
}

/* The string table. */

static uint64_t hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603u;	/* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211u;
	return h;
}

static void table_free(struct thread_table *t)
{
	mt_buf_free(&t->arena);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* The slot of key: found (used) or where it would go. */
static size_t table_slot(const struct thread_table *t, const char *key, size_t len)
{
	size_t i = (size_t)hash(key, len) & (t->cap - 1);
	while (t->slots[i].used && (t->slots[i].len != len ||
				    memcmp(t->arena.data + t->slots[i].off, key, len) != 0))
		i = (i + 1) & (t->cap - 1);
	return i;
}

static void table_grow(struct thread_table *t)
{
	struct thread_table old = *t;
	t->cap = old.cap == 0 ? 64 : old.cap * 2;
	t->slots = mt_xcalloc(t->cap, sizeof(*t->slots));
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.slots[i].used)
			continue;
		size_t j = (size_t)hash(t->arena.data + old.slots[i].off, old.slots[i].len) &
			   (t->cap - 1);
		while (t->slots[j].used)
			j = (j + 1) & (t->cap - 1);
		t->slots[j] = old.slots[i];
	}
	free(old.slots);
}

/* The value of key, or NONE. */
static int32_t table_get(const struct thread_table *t, const char *key, size_t len)
{
	if (t->cap == 0)
		return NONE;
	size_t i = table_slot(t, key, len);
	return t->slots[i].used ? t->slots[i].value : NONE;
}

static void table_set(struct thread_table *t, const char *key, size_t len, int32_t value)
{
	if ((t->used + 1) * 2 > t->cap)
		table_grow(t);
	size_t i = table_slot(t, key, len);
	if (!t->slots[i].used) {
		t->slots[i].used = true;
		t->slots[i].off = t->arena.len;
		t->slots[i].len = len;
		mt_buf_append(&t->arena, key, len);
		t->used++;
	}
	t->slots[i].value = value;
}

/* Containers. */

static int32_t node_new(struct thread_ctx *c)
{
	if (c->node_count == c->node_cap) {
		c->node_cap = c->node_cap == 0 ? 64 : c->node_cap * 2;
		c->nodes = mt_xrealloc(c->nodes, c->node_cap * sizeof(*c->nodes));
	}
	c->nodes[c->node_count] = (struct thread_node){
		.msg = NONE, .parent = NONE, .first_child = NONE, .last_child = NONE,
		.next_sibling = NONE,
	};
	return (int32_t)c->node_count++;
}

static void node_unlink(struct thread_ctx *c, int32_t n)
{
	struct thread_node *nodes = c->nodes;
	int32_t p = nodes[n].parent;
	if (p == NONE)
		return;
	int32_t *link = &nodes[p].first_child, prev = NONE;
	while (*link != n) {
		prev = *link;
		link = &nodes[*link].next_sibling;
	}
	*link = nodes[n].next_sibling;
	if (nodes[p].last_child == n)
		nodes[p].last_child = prev;
	nodes[n].parent = NONE;
	nodes[n].next_sibling = NONE;
}

/* n as the last child of p (n has no parent). */
static void node_append(struct thread_ctx *c, int32_t p, int32_t n)
{
	struct thread_node *nodes = c->nodes;
	if (nodes[p].last_child == NONE)
		nodes[p].first_child = n;
	else
		nodes[nodes[p].last_child].next_sibling = n;
	nodes[p].last_child = n;
	c->nodes[n].parent = p;
	c->nodes[n].next_sibling = NONE;
}

/* Linking child under parent would make a loop: child is parent or one of
 * its ancestors. */
static bool would_loop(const struct thread_ctx *c, int32_t parent, int32_t child)
{
	for (int32_t x = parent; x != NONE; x = c->nodes[x].parent)
		if (x == child)
			return true;
	return false;
}

struct refs {
	struct thread_ctx *c;
	struct thread_table *ids;
	int32_t *list;
	size_t count;
};

static int32_t id_node(struct thread_ctx *c, struct thread_table *ids, const char *id, size_t len)
{
	int32_t n = table_get(ids, id, len);
	if (n == NONE) {
		n = node_new(c);
		table_set(ids, id, len, n);
	}
	return n;
}

static void ref_add(const char *id, size_t len, void *context)
{
	struct refs *r = context;
	if (r->count == MT_IMAP_THREAD_REFS_MAX) {	/* keep the last ones */
		memmove(r->list, r->list + 1, (r->count - 1) * sizeof(*r->list));
		r->count--;
	}
	r->list[r->count++] = id_node(r->c, r->ids, id, len);
}

struct first_id {
	char id[MT_IMAP_THREAD_ID_MAX + 1];
	size_t len;
};

static void first_add(const char *id, size_t len, void *context)
{
	struct first_id *f = context;
	if (f->len == 0) {
		memcpy(f->id, id, len);
		f->len = len;
	}
}

/* RFC 5256 2.3 step 1: the containers and their links. */
static void references_link(struct thread_ctx *c)
{
	struct thread_table ids = { 0 };
	int32_t list[MT_IMAP_THREAD_REFS_MAX];
	for (size_t i = 0; i < c->count; i++) {
		const struct mt_imap_thread_msg *m = &c->msgs[i];
		struct first_id own = { .len = 0 };
		mt_imap_thread_msgids(m->message_id, first_add, &own);
		int32_t n = own.len > 0 ? id_node(c, &ids, own.id, own.len) : NONE;
		if (n == NONE || c->nodes[n].msg != NONE)
			n = node_new(c);	/* none, or a duplicate: its own */
		c->nodes[n].msg = (int32_t)i;
		struct refs r = { .c = c, .ids = &ids, .list = list };
		mt_imap_thread_msgids(m->references, ref_add, &r);
		if (r.count == 0) {
			struct first_id irt = { .len = 0 };
			mt_imap_thread_msgids(m->in_reply_to, first_add, &irt);
			if (irt.len > 0)
				list[r.count++] = id_node(c, &ids, irt.id, irt.len);
		}
		/* B: each reference the parent of the next, unless linked already
		 * or a loop. */
		for (size_t k = 1; k < r.count; k++) {
			int32_t parent = list[k - 1], child = list[k];
			if (c->nodes[child].parent == NONE && !would_loop(c, parent, child))
				node_append(c, parent, child);
		}
		/* C: the message's own parent is the last reference. */
		node_unlink(c, n);
		if (r.count > 0 && !would_loop(c, list[r.count - 1], n))
			node_append(c, list[r.count - 1], n);
	}
	table_free(&ids);
	for (size_t n = 1; n < c->node_count; n++)
		if (c->nodes[n].parent == NONE)
			node_append(c, ROOT, (int32_t)n);
}

/* The containers in level order from the root (children after parents):
 * walked backwards, every child before its parent. */
static int32_t *level_order(const struct thread_ctx *c, size_t *count_r)
{
	const struct thread_node *nodes = c->nodes;
	int32_t *order = mt_xcalloc(c->node_count + 1, sizeof(*order));
	size_t n = 0, done = 0;
	order[n++] = ROOT;
	for (; done < n; done++)
		for (int32_t k = nodes[order[done]].first_child; k != NONE; k = nodes[k].next_sibling)
			order[n++] = k;
	*count_r = n;
	return order;
}

/* Step 4: dummies pruned, bottom up: a dummy without children goes; one
 * with children is replaced by them, at the root only if it has one. */
static void references_prune(struct thread_ctx *c)
{
	struct thread_node *nodes = c->nodes;
	size_t n;
	int32_t *order = level_order(c, &n);
	for (size_t i = n; i-- > 0;) {
		int32_t p = order[i], prev = NONE;
		int32_t *link = &nodes[p].first_child;
		while (*link != NONE) {
			int32_t x = *link;
			int32_t kids = nodes[x].first_child;
			if (nodes[x].msg != NONE ||
			    (p == ROOT && kids != NONE && nodes[kids].next_sibling != NONE)) {
				prev = x;
				link = &nodes[x].next_sibling;
				continue;
			}
			if (kids == NONE) {
				*link = nodes[x].next_sibling;
				if (nodes[p].last_child == x)
					nodes[p].last_child = prev;
			} else {
				/* Its children (pruned already) take its place. */
				int32_t last = kids;
				for (int32_t k = kids; k != NONE; k = nodes[k].next_sibling) {
					nodes[k].parent = p;
					last = k;
				}
				nodes[last].next_sibling = nodes[x].next_sibling;
				if (nodes[p].last_child == x)
					nodes[p].last_child = last;
				*link = kids;
				nodes[x].first_child = NONE;
				nodes[x].last_child = NONE;
			}
			nodes[x].parent = NONE;
			nodes[x].next_sibling = NONE;
		}
	}
	free(order);
}

struct sort_item {
	int64_t date;
	uint32_t order;
	int32_t node;
};

static int sort_item_cmp(const void *a, const void *b)
{
	const struct sort_item *x = a, *y = b;
	if (x->date != y->date)
		return x->date < y->date ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Each set of siblings by sent date, the youngest (deepest) first; a
 * dummy sorts as its first child. */
static void sort_all(struct thread_ctx *c)
{
	struct thread_node *nodes = c->nodes;
	size_t n;
	int32_t *pre = level_order(c, &n);
	struct sort_item *items = NULL;
	size_t items_cap = 0;
	for (size_t i = n; i-- > 0;) {
		int32_t p = pre[i];
		size_t count = 0;
		for (int32_t k = nodes[p].first_child; k != NONE; k = nodes[k].next_sibling) {
			if (count == items_cap) {
				items_cap = items_cap == 0 ? 16 : items_cap * 2;
				items = mt_xrealloc(items, items_cap * sizeof(*items));
			}
			items[count++] = (struct sort_item){ nodes[k].key_date, nodes[k].key_order, k };
		}
		if (count > 1)
			qsort(items, count, sizeof(*items), sort_item_cmp);
		int32_t *link = &nodes[p].first_child;
		for (size_t k = 0; k < count; k++) {
			*link = items[k].node;
			link = &nodes[items[k].node].next_sibling;
		}
		*link = NONE;
		nodes[p].last_child = count > 0 ? items[count - 1].node : NONE;
		if (nodes[p].msg != NONE) {
			nodes[p].key_date = c->msgs[nodes[p].msg].date;
			nodes[p].key_order = c->msgs[nodes[p].msg].order;
		} else if (count > 0) {
			nodes[p].key_date = items[0].date;
			nodes[p].key_order = items[0].order;
		}
	}
	free(items);
	free(pre);
}

static void subjects_make(struct thread_ctx *c)
{
	c->subjects = mt_xcalloc(c->count + 1, sizeof(*c->subjects));
	for (size_t i = 0; i < c->count; i++) {
		const char *s = c->msgs[i].subject != NULL ? c->msgs[i].subject : "";
		struct mt_buf base = MT_BUF_INIT, key = MT_BUF_INIT;
		mt_imap_base_subject(&base, s, strlen(s), &c->subjects[i].reply);
		mt_imap_casemap(&key, mt_buf_cstr(&base), base.len);
		c->subjects[i].base = mt_buf_steal(&key);
		mt_buf_free(&base);
	}
}

/* A top-level container's subject: its message's, or its first child's. */
static const struct thread_subject *node_subject(const struct thread_ctx *c, int32_t n)
{
	if (c->nodes[n].msg == NONE)
		n = c->nodes[n].first_child;
	return n == NONE || c->nodes[n].msg == NONE ? NULL : &c->subjects[c->nodes[n].msg];
}

static bool is_dummy(const struct thread_ctx *c, int32_t n)
{
	return c->nodes[n].msg == NONE;
}

static bool is_reply(const struct thread_ctx *c, int32_t n)
{
	return !is_dummy(c, n) && c->subjects[c->nodes[n].msg].reply;
}

/* Step 6: threads of one base subject joined. */
static void references_subjects(struct thread_ctx *c)
{
	struct thread_table table = { 0 };
	size_t count = 0;
	for (int32_t k = c->nodes[ROOT].first_child; k != NONE; k = c->nodes[k].next_sibling)
		count++;
	int32_t *roots = mt_xcalloc(count + 1, sizeof(*roots));
	count = 0;
	for (int32_t k = c->nodes[ROOT].first_child; k != NONE; k = c->nodes[k].next_sibling)
		roots[count++] = k;
	for (size_t i = 0; i < count; i++) {
		int32_t x = roots[i];
		const struct thread_subject *s = node_subject(c, x);
		if (s == NULL || s->base[0] == '\0')
			continue;
		size_t len = strlen(s->base);
		int32_t e = table_get(&table, s->base, len);
		if (e == NONE || (is_dummy(c, x) && !is_dummy(c, e)) ||
		    (is_reply(c, e) && !is_reply(c, x) && !is_dummy(c, e)))
			table_set(&table, s->base, len, x);
	}
	for (size_t i = 0; i < count; i++) {
		int32_t x = roots[i];
		const struct thread_subject *s = node_subject(c, x);
		if (c->nodes[x].parent != ROOT || s == NULL || s->base[0] == '\0')
			continue;
		size_t len = strlen(s->base);
		int32_t e = table_get(&table, s->base, len);
		if (e == x || e == NONE)
			continue;
		if (is_dummy(c, e) && is_dummy(c, x)) {
			node_unlink(c, x);
			int32_t k;
			while ((k = c->nodes[x].first_child) != NONE) {
				node_unlink(c, k);
				node_append(c, e, k);
			}
		} else if (is_dummy(c, e)) {
			node_unlink(c, x);
			node_append(c, e, x);
		} else if (is_dummy(c, x)) {
			node_unlink(c, e);
			node_append(c, x, e);
			table_set(&table, s->base, len, x);
		} else if (!is_reply(c, e) && is_reply(c, x)) {
			node_unlink(c, x);
			node_append(c, e, x);
		} else {
			/* A new dummy in the table message's place, both under it. */
			int32_t d = node_new(c);
			struct thread_node *nodes = c->nodes;
			int32_t *link = &nodes[ROOT].first_child;
			while (*link != e)
				link = &nodes[*link].next_sibling;
			*link = d;
			nodes[d].parent = ROOT;
			nodes[d].next_sibling = nodes[e].next_sibling;
			if (nodes[ROOT].last_child == e)
				nodes[ROOT].last_child = d;
			nodes[e].parent = NONE;
			nodes[e].next_sibling = NONE;
			node_append(c, d, e);
			node_unlink(c, x);
			node_append(c, d, x);
			table_set(&table, s->base, len, d);
		}
	}
	free(roots);
	table_free(&table);
}

struct os_item {
	const char *subject;
	int64_t date;
	uint32_t order;
	size_t index;
};

static int os_cmp(const void *a, const void *b)
{
	const struct os_item *x = a, *y = b;
	int r = strcmp(x->subject, y->subject);
	if (r != 0)
		return r;
	if (x->date != y->date)
		return x->date < y->date ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* ORDEREDSUBJECT (2.2): by base subject then date; each subject one
 * thread, its first message the parent of the others. */
static void orderedsubject(struct thread_ctx *c)
{
	struct os_item *items = mt_xcalloc(c->count + 1, sizeof(*items));
	for (size_t i = 0; i < c->count; i++)
		items[i] = (struct os_item){ c->subjects[i].base, c->msgs[i].date,
					     c->msgs[i].order, i };
	qsort(items, c->count, sizeof(*items), os_cmp);
	int32_t parent = NONE;
	for (size_t i = 0; i < c->count; i++) {
		int32_t n = node_new(c);
		c->nodes[n].msg = (int32_t)items[i].index;
		if (parent != NONE && strcmp(c->subjects[c->nodes[parent].msg].base,
					     items[i].subject) == 0) {
			node_append(c, parent, n);
		} else {
			node_append(c, ROOT, n);
			parent = n;
		}
	}
	free(items);
}

/* RFC 5256 4: "(3 6 (4 23)(44 7 96))", iteratively. */
static void write_threads(struct mt_buf *out, const struct thread_ctx *c)
{
	const struct thread_node *nodes = c->nodes;
	int32_t *stack = mt_xcalloc(2 * c->node_count + 2, sizeof(*stack));
	size_t depth = 0;
	const int32_t close = -2;
	/* Roots pushed in reverse so the first is written first. */
	for (int32_t k = nodes[ROOT].first_child; k != NONE; k = nodes[k].next_sibling)
		depth++;
	size_t i = depth;
	for (int32_t k = nodes[ROOT].first_child; k != NONE; k = nodes[k].next_sibling)
		stack[--i] = k;
	while (depth > 0) {
		int32_t n = stack[--depth];
		if (n == close) {
			mt_buf_append_char(out, ')');
			continue;
		}
		mt_buf_append_char(out, '(');
		bool wrote = false;
		for (;;) {
			if (nodes[n].msg != NONE) {
				mt_buf_appendf(out, wrote ? " %u" : "%u", c->msgs[nodes[n].msg].id);
				wrote = true;
			}
			int32_t k = nodes[n].first_child;
			if (k == NONE) {
				mt_buf_append_char(out, ')');
				break;
			}
			if (nodes[k].next_sibling == NONE) {
				n = k;
				continue;
			}
			if (wrote)
				mt_buf_append_char(out, ' ');
			stack[depth++] = close;
			size_t kids = 0;
			for (int32_t s = k; s != NONE; s = nodes[s].next_sibling)
				kids++;
			size_t at = depth + kids;
			for (int32_t s = k; s != NONE; s = nodes[s].next_sibling)
				stack[--at] = s;
			depth += kids;
			break;
		}
	}
	free(stack);
}

void mt_imap_thread(struct mt_buf *out, enum mt_imap_thread_algorithm algorithm,
		    const struct mt_imap_thread_msg *msgs, size_t count)
{
	struct thread_ctx c = { .msgs = msgs, .count = count };
	(void)node_new(&c);	/* ROOT */
	subjects_make(&c);
	if (algorithm == MT_IMAP_THREAD_ORDEREDSUBJECT) {
		orderedsubject(&c);
		sort_all(&c);	/* threads by their first message's date */
	} else {
		references_link(&c);
		references_prune(&c);
		sort_all(&c);		/* step 5: the top level in date order */
		references_subjects(&c);
		sort_all(&c);		/* step 7 */
	}
	write_threads(out, &c);
	for (size_t i = 0; i < count; i++)
		free(c.subjects[i].base);
	free(c.subjects);
	free(c.nodes);
}
