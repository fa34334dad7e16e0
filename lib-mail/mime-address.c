/* mime-address.c — RFC 5322 address lists as IMAP ENVELOPE address lists
 * (see mime-address.h).
 *
 * Trust boundary: the header field body is untrusted octets of a given
 * length; every read is bounded by the end pointer, every scan moves
 * forward (comments nest by a counter, not by recursion), and every
 * string goes out through imap-write.
 * RFCs: 5322 3.2.2-3.2.4, 3.4, 4.4 (obsolete syntax), 9051 7.5.2, 2047
 * (encoded-words kept as written).
 *
 * A tokenizer (atoms, quoted strings, domain literals, specials; CFWS
 * skipped and its last comment remembered) under a one-pass parser: an
 * item's words are read in two forms at once, as a display-name phrase
 * and as a local part, and the special that ends them says which they
 * were: ':' a group's name, '<' a display-name, '@' a local part, an
 * item's end a local part without a domain. */
#include "mime-address.h"
#include "imap-write.h"

#include <stdbool.h>

enum token_kind {
	TOKEN_END,
	TOKEN_ATOM,	/* 1*atext, and any other octet no special claims */
	TOKEN_QUOTED,	/* "..." as written, quotes included */
	TOKEN_LITERAL,	/* [...] as written, brackets included */
	TOKEN_SPECIAL,	/* one of < > : ; @ , . */
	TOKEN_JUNK,	/* a stray ) ] or \ : dropped */
};

struct token {
	enum token_kind kind;
	const unsigned char *start, *end;
	bool closed;		/* a quoted string's closing quote was there */
};

struct address_parser {
	const unsigned char *p, *end;
	bool (*visit)(const struct mt_mime_address *address, void *context);
	void *context;
	unsigned int written;	/* address structures so far */
	bool in_group, full;
	bool stopped;		/* visit said so: nothing more is visited */
	/* The last comment's contents, NULL when none since the item began. */
	const unsigned char *comment, *comment_end;
	struct mt_buf phrase, local, route, domain, name;
};

/* An IMAP ENVELOPE field: NULL for NIL. */
struct field {
	const void *value;
	size_t len;
};

static const struct field nil_field = { NULL, 0 };

static bool is_wsp(unsigned char c)
{
	/* SP and HTAB; a CR or LF left in an unfolded body counts as one. */
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Not whitespace, not a special, not the start of a comment, quoted
 * string or literal: part of an atom. NUL, controls and 8-bit octets are
 * kept in atoms as written; imap-write decides how they go out. */
static bool is_atom_octet(unsigned char c)
{
	switch (c) {
	case '(': case ')': case '<': case '>': case '[': case ']':
	case ':': case ';': case '@': case '\\': case ',': case '.':
	case '"':
		return false;
	default:
		return !is_wsp(c);
	}
}

/* Past the delimited run that starts at p (a quoted string, comment or
 * domain literal opened by *p): backslash escapes the next octet, a
 * comment nests. Stops at end when the run is not closed. */
static const unsigned char *
scan_delimited(const unsigned char *p, const unsigned char *end,
	       unsigned char close, bool nests, bool *closed_r)
{
	unsigned char open = *p++;
	size_t depth = 1;
	while (p < end) {
		unsigned char c = *p++;
		if (c == '\\') {
			if (p < end)
				p++;
		} else if (nests && c == open) {
			depth++;
		} else if (c == close && --depth == 0) {
			*closed_r = true;
			return p;
		}
	}
	*closed_r = false;
	return end;
}

/* Skip whitespace and comments; remember the last comment. Returns
 * whether anything was skipped. */
static bool skip_cfws(struct address_parser *ctx)
{
	const unsigned char *start = ctx->p;
	while (ctx->p < ctx->end) {
		if (is_wsp(*ctx->p)) {
			ctx->p++;
		} else if (*ctx->p == '(') {
			bool closed;
			const unsigned char *after =
				scan_delimited(ctx->p, ctx->end, ')', true, &closed);
			ctx->comment = ctx->p + 1;
			ctx->comment_end = closed ? after - 1 : after;
			ctx->p = after;
		} else {
			break;
		}
	}
	return ctx->p != start;
}

/* The next token after any CFWS, not consumed (ctx->p = t->end does).
 * Returns whether CFWS came before it. */
static bool next_token(struct address_parser *ctx, struct token *t)
{
	bool space = skip_cfws(ctx);
	const unsigned char *p = ctx->p;
	t->start = p;
	t->end = p;
	t->closed = true;
	if (p == ctx->end) {
		t->kind = TOKEN_END;
		return space;
	}
	if (is_atom_octet(*p)) {
		while (p < ctx->end && is_atom_octet(*p))
			p++;
		t->kind = TOKEN_ATOM;
		t->end = p;
		return space;
	}
	switch (*p) {
	case '"':
		t->kind = TOKEN_QUOTED;
		t->end = scan_delimited(p, ctx->end, '"', false, &t->closed);
		break;
	case '[':
		t->kind = TOKEN_LITERAL;
		t->end = scan_delimited(p, ctx->end, ']', false, &t->closed);
		break;
	case ')': case ']': case '\\':
		t->kind = TOKEN_JUNK;
		t->end = p + 1;
		break;
	default:
		t->kind = TOKEN_SPECIAL;
		t->end = p + 1;
		break;
	}
	return space;
}

/* The next token, for a caller that does not care about CFWS before it. */
static struct token peek_token(struct address_parser *ctx)
{
	struct token t;
	(void)next_token(ctx, &t);
	return t;
}

static bool is_special(const struct token *t, char c)
{
	return t->kind == TOKEN_SPECIAL && *t->start == (unsigned char)c;
}

/* Append s[0..len) with quoted-pairs unescaped ("\x" is "x"). */
static void append_unescaped(struct mt_buf *buf, const unsigned char *s,
			     size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && ++i == len)
			break;
		mt_buf_append_char(buf, (char)s[i]);
	}
}

/* A quoted string's contents, unescaped, for a display-name. */
static void append_unquoted(struct mt_buf *buf, const struct token *t)
{
	const unsigned char *s = t->start + 1;
	const unsigned char *e = t->closed ? t->end - 1 : t->end;
	append_unescaped(buf, s, (size_t)(e - s));
}

/* Read an item's words up to a special that ends them ('<' ':' ';' '@'
 * ',', and '>' inside an angle-addr) into ctx->phrase (display-name form:
 * quoted strings unquoted, CFWS between words one space) and ctx->local
 * (local-part form: as written, CFWS around dots dropped, one space
 * between two words that had CFWS between them). Stray '>', ')', ']'
 * and '\' are dropped as whitespace. Returns whether there was any. */
static bool read_words(struct address_parser *ctx, bool in_angle)
{
	bool any = false, after_word = false, pending_space = false;
	mt_buf_reset(&ctx->phrase);
	mt_buf_reset(&ctx->local);
	for (;;) {
		struct token t;
		bool space = next_token(ctx, &t) || pending_space;
		bool dot = is_special(&t, '.');
		if (t.kind == TOKEN_END || (t.kind == TOKEN_SPECIAL && !dot &&
					    (in_angle || *t.start != '>')))
			break;
		ctx->p = t.end;
		if (t.kind == TOKEN_JUNK || (t.kind == TOKEN_SPECIAL && !dot)) {
			/* A stray '>', ')', ']' or '\': a separator. */
			pending_space = true;
			continue;
		}
		pending_space = false;
		if (space && ctx->phrase.len > 0)
			mt_buf_append_char(&ctx->phrase, ' ');
		if (t.kind == TOKEN_QUOTED)
			append_unquoted(&ctx->phrase, &t);
		else
			mt_buf_append(&ctx->phrase, t.start, (size_t)(t.end - t.start));
		if (space && after_word && !dot)
			mt_buf_append_char(&ctx->local, ' ');
		mt_buf_append(&ctx->local, t.start, (size_t)(t.end - t.start));
		after_word = !dot;
		any = true;
	}
	return any;
}

/* A domain after its '@', appended to buf as written: a domain literal,
 * or atoms and dots with the CFWS between them dropped. */
static void read_domain(struct address_parser *ctx, struct mt_buf *buf)
{
	struct token t = peek_token(ctx);
	if (t.kind == TOKEN_LITERAL) {
		mt_buf_append(buf, t.start, (size_t)(t.end - t.start));
		ctx->p = t.end;
		return;
	}
	bool want_atom = true;
	for (;;) {
		if (t.kind == TOKEN_ATOM && want_atom)
			want_atom = false;
		else if (is_special(&t, '.'))
			want_atom = true;
		else
			break;
		mt_buf_append(buf, t.start, (size_t)(t.end - t.start));
		ctx->p = t.end;
		t = peek_token(ctx);
	}
}

/* obs-route = obs-domain-list ":", just after "<" and at its first '@':
 * "@a,@b" into ctx->route. False when no ':' ends it, as in "<@host>"
 * (the caller then rewinds and reads it as an addr-spec). */
static bool read_route(struct address_parser *ctx)
{
	struct token t = peek_token(ctx);
	while (is_special(&t, '@')) {
		ctx->p = t.end;
		if (ctx->route.len > 0)
			mt_buf_append_char(&ctx->route, ',');
		mt_buf_append_char(&ctx->route, '@');
		read_domain(ctx, &ctx->route);
		/* obs-domain-list = *(CFWS / ",") "@" domain
		 *                   *("," [CFWS] ["@" domain]) */
		for (t = peek_token(ctx); is_special(&t, ','); t = peek_token(ctx))
			ctx->p = t.end;
	}
	if (!is_special(&t, ':'))
		return false;
	ctx->p = t.end;
	return true;
}

static bool ends_item(const struct token *t)
{
	return t->kind == TOKEN_END || is_special(t, ',') || is_special(t, ';');
}

/* Drop tokens up to the end of the item: ',' or ';' (not consumed) or
 * the input's end. Comments on the way are remembered. */
static void skip_to_item_end(struct address_parser *ctx)
{
	for (struct token t = peek_token(ctx); !ends_item(&t); t = peek_token(ctx))
		ctx->p = t.end;
}

/* The rest of an angle-addr after "<": [obs-route] local-part ["@"
 * domain] up to its '>' (consumed), or, when it is not closed, up to the
 * item's ',' or ';' or the input's end. */
static void read_angle_addr(struct address_parser *ctx)
{
	const unsigned char *start = ctx->p;
	mt_buf_reset(&ctx->route);
	mt_buf_reset(&ctx->domain);
	struct token t = peek_token(ctx);
	if (is_special(&t, '@') && !read_route(ctx)) {
		/* Read once more as a local part and domain: linear still,
		 * a '<' is rewound to at most once. */
		ctx->p = start;
		mt_buf_reset(&ctx->route);
	}
	(void)read_words(ctx, true);
	t = peek_token(ctx);
	if (is_special(&t, '@')) {
		ctx->p = t.end;
		read_domain(ctx, &ctx->domain);
	}
	for (t = peek_token(ctx); !ends_item(&t); t = peek_token(ctx)) {
		ctx->p = t.end;
		if (is_special(&t, '>'))
			break;
	}
}

static struct field buf_field(const struct mt_buf *buf)
{
	struct field f = { buf->len > 0 ? buf->data : "", buf->len };
	return f;
}

static struct field nil_if_empty(const struct mt_buf *buf)
{
	return buf->len > 0 ? buf_field(buf) : nil_field;
}

/* The last comment as a name: unescaped, whitespace runs one space,
 * trimmed; NIL when there is none or it is blank. A nested comment stays
 * as written. */
static struct field comment_name(struct address_parser *ctx)
{
	mt_buf_reset(&ctx->name);
	if (ctx->comment == NULL)
		return nil_field;
	bool space = false;
	for (const unsigned char *p = ctx->comment; p < ctx->comment_end; p++) {
		if (*p == '\\' && ++p == ctx->comment_end)
			break;
		if (is_wsp(*p)) {
			space = true;
			continue;
		}
		if (space && ctx->name.len > 0)
			mt_buf_append_char(&ctx->name, ' ');
		space = false;
		mt_buf_append_char(&ctx->name, (char)*p);
	}
	return nil_if_empty(&ctx->name);
}

/* Room for n more address structures, keeping one for an open group's
 * end marker. */
static bool has_room(const struct address_parser *ctx, unsigned int n)
{
	unsigned int reserved = ctx->in_group ? 1 : 0;
	return ctx->written + reserved + n <= MT_MIME_ADDRESSES_MAX;
}

/* One address structure to the visitor; once it has said stop, the
 * parse ends (ctx->full) and nothing more is visited. */
static void write_address(struct address_parser *ctx, struct field name,
			  struct field adl, struct field mailbox,
			  struct field host)
{
	if (ctx->stopped)
		return;
	const struct mt_mime_address a = {
		.name = name.value, .name_len = name.len,
		.adl = adl.value, .adl_len = adl.len,
		.mailbox = mailbox.value, .mailbox_len = mailbox.len,
		.host = host.value, .host_len = host.len,
	};
	ctx->written++;
	if (ctx->visit(&a, ctx->context))
		ctx->stopped = ctx->full = true;
}

/* A mailbox, unless the limit is reached (then the list ends). */
static void write_mailbox(struct address_parser *ctx, struct field name,
			  struct field adl, struct field mailbox,
			  struct field host)
{
	if (!has_room(ctx, 1)) {
		ctx->full = true;
		return;
	}
	write_address(ctx, name, adl, mailbox, host);
}

/* RFC 9051 7.5.2: "start of group [is] marked with a NIL host name and
 * with the mailbox name field holding the group name phrase". */
static void start_group(struct address_parser *ctx)
{
	if (!has_room(ctx, 2)) {
		ctx->full = true;
		return;
	}
	write_address(ctx, nil_field, nil_field, buf_field(&ctx->phrase),
		      nil_field);
	ctx->in_group = true;
}

/* "end of group [is] marked by a NIL host name and a NIL mailbox". */
static void end_group(struct address_parser *ctx)
{
	write_address(ctx, nil_field, nil_field, nil_field, nil_field);
	ctx->in_group = false;
}

/* One item: a group's start, a name-addr or an addr-spec (with or
 * without its domain), ending before the item's ',' or ';'. */
static void parse_item(struct address_parser *ctx)
{
	ctx->comment = NULL;
	bool words = read_words(ctx, false);
	struct token t = peek_token(ctx);
	if (is_special(&t, ':')) {
		ctx->p = t.end;
		if (!ctx->in_group)
			start_group(ctx);
		else if (words)	/* no nested groups: a separator */
			write_mailbox(ctx, comment_name(ctx), nil_field,
				      buf_field(&ctx->local), buf_field(&ctx->domain));
	} else if (is_special(&t, '<')) {
		ctx->p = t.end;
		/* Keep the display-name: read_angle_addr reads words again. */
		struct mt_buf display_name = ctx->phrase;
		ctx->phrase = ctx->name;
		ctx->name = display_name;
		read_angle_addr(ctx);
		skip_to_item_end(ctx);
		write_mailbox(ctx, nil_if_empty(&ctx->name),
			      nil_if_empty(&ctx->route), buf_field(&ctx->local),
			      buf_field(&ctx->domain));
	} else if (is_special(&t, '@')) {
		ctx->p = t.end;
		read_domain(ctx, &ctx->domain);
		skip_to_item_end(ctx);
		write_mailbox(ctx, comment_name(ctx), nil_field,
			      buf_field(&ctx->local), buf_field(&ctx->domain));
	} else if (words) {
		write_mailbox(ctx, comment_name(ctx), nil_field,
			      buf_field(&ctx->local), buf_field(&ctx->domain));
	}
}

/* address-list = (address *("," address)) / obs-addr-list, with the
 * separators and group ends between the items. */
static void parse_list(struct address_parser *ctx)
{
	while (!ctx->full) {
		struct token t = peek_token(ctx);
		if (t.kind == TOKEN_END)
			break;
		if (is_special(&t, ',') || is_special(&t, ';') ||
		    (ctx->in_group && is_special(&t, ':'))) {
			ctx->p = t.end;
			if (ctx->in_group && is_special(&t, ';'))
				end_group(ctx);
			continue;
		}
		const unsigned char *start = ctx->p;
		mt_buf_reset(&ctx->domain);
		parse_item(ctx);
		if (ctx->p == start)	/* cannot happen; never loop on it */
			ctx->p++;
	}
	if (ctx->in_group)
		end_group(ctx);
}

bool mt_mime_addresses_each(const char *value, size_t len,
			    bool (*visit)(const struct mt_mime_address *address, void *context),
			    void *context)
{
	struct address_parser ctx = {
		.p = (const unsigned char *)value,
		.end = (const unsigned char *)value + len,
		.visit = visit, .context = context,
		.phrase = MT_BUF_INIT, .local = MT_BUF_INIT, .route = MT_BUF_INIT,
		.domain = MT_BUF_INIT, .name = MT_BUF_INIT,
	};
	parse_list(&ctx);
	mt_buf_free(&ctx.phrase);
	mt_buf_free(&ctx.local);
	mt_buf_free(&ctx.route);
	mt_buf_free(&ctx.domain);
	mt_buf_free(&ctx.name);
	return ctx.stopped;
}

struct envelope_writer {
	struct mt_buf *out;
	unsigned int flags;
	unsigned int written;
};

/* One "(name adl mailbox host)"; the list's "(" before the first. */
static bool envelope_address(const struct mt_mime_address *a, void *context)
{
	struct envelope_writer *w = context;
	const struct field fields[] = {
		{ a->name, a->name_len }, { a->adl, a->adl_len },
		{ a->mailbox, a->mailbox_len }, { a->host, a->host_len },
	};
	if (w->written++ == 0)
		mt_buf_append_char(w->out, '(');
	mt_buf_append_char(w->out, '(');
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (i > 0)
			mt_buf_append_char(w->out, ' ');
		mt_imap_write_nstring(w->out, fields[i].value, fields[i].len, w->flags);
	}
	mt_buf_append_char(w->out, ')');
	return false;
}

void mt_mime_write_addresses(struct mt_buf *out, const char *value, size_t len,
			     unsigned int flags)
{
	struct envelope_writer w = { .out = out, .flags = flags };
	(void)mt_mime_addresses_each(value, len, envelope_address, &w);
	if (w.written == 0)
		mt_buf_append_str(out, "NIL");
	else
		mt_buf_append_char(out, ')');
}
