/* address.c — RFC 5321 path and ESMTP parameter parser (see address.h).
 *
 * Trust boundary: client command arguments. Every read goes through the
 * cursor's bounds check (peek() returns -1 at the end); every write into a
 * fixed buffer is checked against the RFC limit before it happens.
 *
 * RFC 5321 4.1.2, 4.1.1.3, 4.1.3, 4.5.3.1.1-3, C; RFC 6531 3.3. */
#include "address.h"
#include "utf8.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define LITERAL_MAX 64	/* "IPv6:" + the longest IPv6 text, with room */

struct cursor {
	const unsigned char *s;
	size_t len, pos;
	unsigned int flags;
};

/* The next octet, or -1 at the end of the input. */
static int peek(const struct cursor *c)
{
	return c->pos < c->len ? c->s[c->pos] : -1;
}

static bool is_alnum(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		(ch >= '0' && ch <= '9');
}

/* RFC 5322 atext, as RFC 5321 4.1.2 uses it for Atom. */
static bool is_atext(int ch)
{
	return is_alnum(ch) ||
		(ch > 0 && strchr("!#$%&'*+-/=?^_`{|}~", ch) != NULL);
}

static int lower(int ch)
{
	return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch;
}

/* Length of the well-formed UTF-8 sequence at the cursor (RFC 3629 4),
 * 0 if there is none. */
static size_t utf8_len(const struct cursor *c)
{
	return mt_utf8_char_len(c->s + c->pos, c->len - c->pos);
}

/* Non-ASCII text allowed here? Returns its length, or 0. */
static size_t utf8_here(const struct cursor *c)
{
	if ((c->flags & MT_ADDR_SMTPUTF8) == 0 || peek(c) < 0x80)
		return 0;
	return utf8_len(c);
}

enum where { W_LOCAL, W_DOMAIN, W_LITERAL, W_PARAM };

/* Why the octet ch cannot appear where the parser stopped. */
static const char *bad_char(const struct cursor *c, int ch, enum where w)
{
	static const char *const other[] = {
		[W_LOCAL] = "invalid character in local part",
		[W_DOMAIN] = "invalid character in domain",
		[W_LITERAL] = "invalid character in address literal",
		[W_PARAM] = "invalid character in ESMTP parameter",
	};
	bool param = w == W_PARAM;

	if (ch < 0)
		return param ? "unexpected end of ESMTP parameter" :
			"unexpected end of address";
	if (ch == 0)
		return param ? "NUL in ESMTP parameter" : "NUL in address";
	if (ch == '\r' || ch == '\n')
		return param ? "CR or LF in ESMTP parameter" :
			"CR or LF in address";
	if (ch < 0x20 || ch == 0x7f)
		return param ? "control character in ESMTP parameter" :
			"control character in address";
	if (ch >= 0x80)
		return (c->flags & MT_ADDR_SMTPUTF8) != 0 ?
			"invalid or misplaced UTF-8" :
			"8-bit character without SMTPUTF8";
	if (ch == ' ')
		return "space in address";
	return other[w];
}

/* Is raw[0..len) a Dot-string (so it needs no quotes)? Non-ASCII octets in
 * raw were validated as UTF-8 under SMTPUTF8 already. */
static bool is_dot_string(const char *raw, size_t len)
{
	if (len == 0 || raw[0] == '.' || raw[len - 1] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		int ch = (unsigned char)raw[i];

		if (ch == '.' ? raw[i + 1] == '.' : !is_atext(ch) && ch < 0x80)
			return false;
	}
	return true;
}

/* Quoted-string -> raw content; RFC 5321 qtextSMTP / quoted-pairSMTP. */
static bool parse_quoted(struct cursor *c, char *raw, size_t *rlen_r,
			 const char **error_r)
{
	size_t start = c->pos++, rlen = 0, n;

	for (;;) {
		int ch = peek(c);

		if (ch == '"')
			break;
		if (ch == '\\') {
			c->pos++;
			ch = peek(c);
			if (ch < 32 || ch > 126) {
				*error_r = ch < 0 ?
					"unterminated quoted local part" :
					bad_char(c, ch, W_LOCAL);
				return false;
			}
			n = 1;
		} else if (ch >= 32 && ch <= 126) {
			n = 1;
		} else if ((n = utf8_here(c)) == 0) {
			*error_r = ch < 0 ? "unterminated quoted local part" :
				bad_char(c, ch, W_LOCAL);
			return false;
		}
		if (c->pos + n - start > MT_ADDR_LOCAL_MAX) {
			*error_r = "local part longer than 64 octets";
			return false;
		}
		memcpy(raw + rlen, c->s + c->pos, n);
		rlen += n;
		c->pos += n;
	}
	c->pos++;
	if (c->pos - start > MT_ADDR_LOCAL_MAX) {
		*error_r = "local part longer than 64 octets";
		return false;
	}
	*rlen_r = rlen;
	return true;
}

/* Dot-string: Atom *("." Atom). */
static bool parse_dot_string(struct cursor *c, char *raw, size_t *rlen_r,
			     const char **error_r)
{
	size_t rlen = 0, n;
	bool need_atom = true;

	for (;;) {
		int ch = peek(c);

		if (ch == '.') {
			if (rlen == 0) {
				*error_r = "local part starts with a dot";
				return false;
			}
			if (need_atom) {
				*error_r = "consecutive dots in local part";
				return false;
			}
			need_atom = true;
			n = 1;
		} else if (is_atext(ch)) {
			need_atom = false;
			n = 1;
		} else if ((n = utf8_here(c)) != 0) {
			need_atom = false;
		} else {
			break;
		}
		if (rlen + n > MT_ADDR_LOCAL_MAX) {
			*error_r = "local part longer than 64 octets";
			return false;
		}
		memcpy(raw + rlen, c->s + c->pos, n);
		rlen += n;
		c->pos += n;
	}
	if (rlen > 0 && need_atom) {
		*error_r = "local part ends with a dot";
		return false;
	}
	*rlen_r = rlen;
	return true;
}

/* Local-part into its normal form; raw and *rlen_r get its content. */
static bool parse_local(struct cursor *c, char *local, char *raw,
			size_t *rlen_r, const char **error_r)
{
	bool quoted = peek(c) == '"';
	size_t rlen, o = 0;

	if (!(quoted ? parse_quoted(c, raw, &rlen, error_r) :
	      parse_dot_string(c, raw, &rlen, error_r)))
		return false;
	raw[rlen] = '\0';
	*rlen_r = rlen;
	if (!quoted && rlen == 0) {
		*error_r = peek(c) == '@' ? "empty local part" :
			bad_char(c, peek(c), W_LOCAL);
		return false;
	}
	if (is_dot_string(raw, rlen)) {
		memcpy(local, raw, rlen + 1);
		return true;
	}
	/* Re-quote with minimal escapes: never longer than what was sent,
	 * which had to escape at least these octets too. */
	local[o++] = '"';
	for (size_t i = 0; i < rlen; i++) {
		bool esc = raw[i] == '"' || raw[i] == '\\';

		/* this octet, its escape, the closing quote and the NUL */
		if (o + esc + 3 > MT_ADDR_LOCAL_MAX + 1) {
			*error_r = "local part longer than 64 octets";
			return false;
		}
		if (esc)
			local[o++] = '\\';
		local[o++] = raw[i];
	}
	local[o++] = '"';
	local[o] = '\0';
	return true;
}

/* address-literal: "[" IPv4 / "IPv6:" IPv6 "]", checked with inet_pton. */
static bool parse_literal(struct cursor *c, char *domain,
			  const char **error_r)
{
	char text[LITERAL_MAX + 1];
	unsigned char bin[16];
	size_t n = 0;
	int ch;

	c->pos++;
	while ((ch = peek(c)) >= 33 && ch <= 126 && ch != '[' && ch != ']' &&
	       ch != '\\') {
		if (n == LITERAL_MAX) {
			*error_r = "address literal too long";
			return false;
		}
		text[n++] = (char)ch;
		c->pos++;
	}
	if (ch != ']') {
		*error_r = ch < 0 ? "unterminated address literal" :
			bad_char(c, ch, W_LITERAL);
		return false;
	}
	c->pos++;
	text[n] = '\0';
	if (strncasecmp(text, "IPv6:", 5) == 0) {
		if (inet_pton(AF_INET6, text + 5, bin) != 1) {
			*error_r = "invalid IPv6 address literal";
			return false;
		}
		for (size_t i = 5; i < n; i++)
			text[i] = (char)lower(text[i]);
		snprintf(domain, MT_ADDR_DOMAIN_MAX + 1, "[IPv6:%s]", text + 5);
	} else if (strchr(text, ':') != NULL) {
		*error_r = "unsupported address literal (IPv4 or IPv6 only)";
		return false;
	} else if (inet_pton(AF_INET, text, bin) != 1) {
		*error_r = "invalid IPv4 address literal";
		return false;
	} else {
		snprintf(domain, MT_ADDR_DOMAIN_MAX + 1, "[%s]", text);
	}
	return true;
}

/* Domain: LDH labels (RFC 5321 4.1.2 sub-domain), lower-cased, or a
 * literal. domain has room for MT_ADDR_DOMAIN_MAX + 1 octets. */
static bool parse_domain(struct cursor *c, char *domain, bool *literal_r,
			 const char **error_r)
{
	size_t o = 0, label = 0, n;
	int ch, prev = -1;

	*literal_r = peek(c) == '[';
	if (*literal_r)
		return parse_literal(c, domain, error_r);
	for (;; prev = ch, c->pos += n) {
		ch = peek(c);
		n = 1;
		if (ch == '.') {
			*error_r = o == 0 ? "domain starts with a dot" :
				label == 0 ? "consecutive dots in domain" :
				prev == '-' ? "domain label ends with a hyphen" :
				NULL;
			if (*error_r != NULL)
				return false;
		} else if (ch == '-' && label == 0) {
			*error_r = "domain label starts with a hyphen";
			return false;
		} else if (!is_alnum(ch) && ch != '-' &&
			   (n = utf8_here(c)) == 0) {
			break;
		}
		if (o + n > MT_ADDR_DOMAIN_MAX) {
			*error_r = "domain longer than 255 octets";
			return false;
		}
		if (ch == '.') {
			domain[o++] = '.';
			label = 0;
			continue;
		}
		if (label + n > 63) {
			*error_r = "domain label longer than 63 octets";
			return false;
		}
		for (size_t i = 0; i < n; i++)
			domain[o++] = (char)lower(c->s[c->pos + i]);
		label += n;
	}
	domain[o] = '\0';
	*error_r = o == 0 ? (ch < 0 || ch == '>' ? "empty domain" :
			     bad_char(c, ch, W_DOMAIN)) :
		label == 0 ? "domain ends with a dot" :
		prev == '-' ? "domain label ends with a hyphen" : NULL;
	return *error_r == NULL;
}

/* A-d-l ":" — source route, checked and thrown away (RFC 5321 C). */
static bool parse_route(struct cursor *c, const char **error_r)
{
	char domain[MT_ADDR_DOMAIN_MAX + 1];
	bool literal;

	while (peek(c) == '@') {
		c->pos++;
		if (!parse_domain(c, domain, &literal, error_r))
			return false;
		if (peek(c) == ':') {
			c->pos++;
			return true;
		}
		if (peek(c) != ',') {
			*error_r = peek(c) == '>' ? "empty local part" :
				"invalid source route";
			return false;
		}
		c->pos++;
	}
	*error_r = "invalid source route";
	return false;
}

/* Mailbox, or a bare Postmaster when allowed. */
static bool parse_mailbox(struct cursor *c, struct mt_address *a,
			  bool bracketed, const char **error_r)
{
	char raw[MT_ADDR_LOCAL_MAX + 1];
	size_t rlen = 0;
	bool at_end;
	int ch;

	if (!parse_local(c, a->local, raw, &rlen, error_r))
		return false;
	ch = peek(c);
	if (ch == '@') {
		c->pos++;
		return parse_domain(c, a->domain, &a->is_literal, error_r);
	}
	at_end = bracketed ? ch == '>' : ch < 0 || ch == ' ';
	if (at_end && (c->flags & MT_ADDR_ALLOW_POSTMASTER) != 0 &&
	    strcasecmp(raw, "postmaster") == 0) {
		strcpy(a->local, "postmaster");
		return true;
	}
	*error_r = at_end || ch == '>' || ch < 0 ? "missing @ in address" :
		bad_char(c, ch, W_LOCAL);
	return false;
}

/* The path: "<>", "<" [A-d-l ":"] Mailbox ">", or a bare Mailbox. */
static bool parse_path(struct cursor *c, struct mt_address *a,
		       const char **error_r)
{
	size_t start = c->pos;
	bool bracketed = peek(c) == '<';

	if (!bracketed) {
		if ((c->flags & MT_ADDR_LENIENT) == 0) {
			*error_r = peek(c) < 0 ? "empty address" :
				"address must be enclosed in <>";
			return false;
		}
		if (!parse_mailbox(c, a, false, error_r))
			return false;
	} else if (c->pos + 1 < c->len && c->s[c->pos + 1] == '>') {
		if ((c->flags & MT_ADDR_ALLOW_NULL) == 0) {
			*error_r = "null address <> not allowed here";
			return false;
		}
		a->is_null = true;
		c->pos += 2;
	} else {
		c->pos++;
		if (peek(c) == '@' && !parse_route(c, error_r))
			return false;
		if (!parse_mailbox(c, a, true, error_r))
			return false;
		if (peek(c) != '>') {
			*error_r = peek(c) < 0 ? "missing > after address" :
				bad_char(c, peek(c), W_DOMAIN);
			return false;
		}
		c->pos++;
	}
	/* A bare mailbox counts as if it had its angle brackets, so its
	 * normal form always fits in a path. */
	if (c->pos - start + (bracketed ? 0 : 2) > MT_ADDR_PATH_MAX) {
		*error_r = "path longer than 256 octets";
		return false;
	}
	if (peek(c) >= 0 && peek(c) != ' ') {
		*error_r = bracketed ? "unexpected text after address" :
			bad_char(c, peek(c), W_DOMAIN);
		return false;
	}
	return true;
}

/* Append n octets to the parameter store, keeping room for a NUL. */
static bool store_put(struct mt_esmtp_params *p, size_t *o, const void *data,
		      size_t n, const char **error_r)
{
	if (n >= MT_ESMTP_STORE_SIZE - *o) {
		*error_r = "ESMTP parameters too long";
		return false;
	}
	memcpy(p->store + *o, data, n);
	*o += n;
	return true;
}

/* esmtp-keyword = (ALPHA / DIGIT) *(ALPHA / DIGIT / "-"), upper-cased. */
static bool parse_keyword(struct cursor *c, struct mt_esmtp_params *p,
			  size_t *o, const char **error_r)
{
	int ch = peek(c);

	if (!is_alnum(ch)) {
		*error_r = bad_char(c, ch, W_PARAM);
		return false;
	}
	for (; is_alnum(ch) || ch == '-'; ch = peek(c)) {
		char u = (char)(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);

		if (!store_put(p, o, &u, 1, error_r))
			return false;
		c->pos++;
	}
	return store_put(p, o, "", 1, error_r);
}

/* esmtp-value = 1*(%d33-60 / %d62-126) (RFC 6531: or UTF-8). */
static bool parse_value(struct cursor *c, struct mt_esmtp_params *p,
			size_t *o, const char **error_r)
{
	size_t start = *o, n;

	for (;; c->pos += n) {
		int ch = peek(c);

		n = 1;
		if ((ch < 33 || ch > 126 || ch == '=') &&
		    (n = utf8_here(c)) == 0)
			break;
		if (!store_put(p, o, c->s + c->pos, n, error_r))
			return false;
	}
	if (*o == start) {
		*error_r = peek(c) < 0 || peek(c) == ' ' ?
			"empty ESMTP parameter value" :
			bad_char(c, peek(c), W_PARAM);
		return false;
	}
	return store_put(p, o, "", 1, error_r);
}

/* Mail-parameters = esmtp-param *(SP esmtp-param). */
static bool parse_params(struct cursor *c, struct mt_esmtp_params *p,
			 const char **error_r)
{
	size_t o = 0;

	for (;;) {
		struct mt_esmtp_param *param = &p->param[p->count];

		while (peek(c) == ' ')
			c->pos++;
		if (peek(c) < 0)
			return true;
		if (p->count == MT_ESMTP_PARAMS_MAX) {
			*error_r = "too many ESMTP parameters";
			return false;
		}
		param->key = p->store + o;
		param->value = NULL;
		if (!parse_keyword(c, p, &o, error_r))
			return false;
		if (peek(c) == '=') {
			c->pos++;
			param->value = p->store + o;
			if (!parse_value(c, p, &o, error_r))
				return false;
		}
		if (peek(c) >= 0 && peek(c) != ' ') {
			*error_r = bad_char(c, peek(c), W_PARAM);
			return false;
		}
		if (mt_esmtp_param_find(p, param->key) != NULL) {
			p->duplicate = param->key;
			*error_r = "duplicate ESMTP parameter";
			return false;
		}
		p->count++;
	}
}

bool mt_address_parse(const char *s, size_t len, unsigned int flags,
		      struct mt_address *addr_r,
		      struct mt_esmtp_params *params_r, const char **error_r)
{
	struct cursor c = { (const unsigned char *)s, len, 0, flags };

	memset(addr_r, 0, sizeof(*addr_r));
	if (params_r != NULL) {
		params_r->count = 0;
		params_r->duplicate = NULL;
	}
	if ((flags & MT_ADDR_LENIENT) != 0)
		while (peek(&c) == ' ')
			c.pos++;
	if (!parse_path(&c, addr_r, error_r))
		goto fail;
	if (addr_r->is_null)
		addr_r->addr[0] = '\0';
	else if (addr_r->domain[0] == '\0')
		strcpy(addr_r->addr, addr_r->local);
	else
		snprintf(addr_r->addr, sizeof(addr_r->addr), "%s@%s",
			 addr_r->local, addr_r->domain);
	if (params_r != NULL) {
		if (!parse_params(&c, params_r, error_r))
			goto fail;
	} else {
		while (peek(&c) == ' ')
			c.pos++;
		if (peek(&c) >= 0) {
			*error_r = "unexpected text after address";
			goto fail;
		}
	}
	return true;
fail:
	memset(addr_r, 0, sizeof(*addr_r));
	if (params_r != NULL)
		params_r->count = 0;
	return false;
}

const struct mt_esmtp_param *
mt_esmtp_param_find(const struct mt_esmtp_params *params, const char *key)
{
	for (size_t i = 0; i < params->count; i++)
		if (strcasecmp(params->param[i].key, key) == 0)
			return &params->param[i];
	return NULL;
}

bool mt_has_8bit(const void *s, size_t len)
{
	const unsigned char *p = s;
	for (size_t i = 0; i < len; i++)
		if (p[i] >= 0x80)
			return true;
	return false;
}
