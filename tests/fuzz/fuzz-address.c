/* fuzz-address.c — libFuzzer target for lib/address.c, the RFC 5321 path
 * and ESMTP parameter parser behind MAIL FROM and RCPT TO.
 *
 * Every input is parsed under all 16 flag combinations, with and without
 * ESMTP parameters. Properties, beyond "no crash, no over-read":
 *  - a failure says why and leaves the result cleared;
 *  - a success yields a normal form that could go into a header or an
 *    LDAP lookup: no control octet, CR, LF or NUL; 8-bit only under
 *    SMTPUTF8 and then well-formed UTF-8; local part <= 64, domain <= 255
 *    (lower-case ASCII); addr is local@domain, "postmaster" or "";
 *  - the normal form, put back in <>, re-parses to itself (idempotence);
 *  - flags only ever allow more: what parses under some flags parses
 *    identically under every superset of them;
 *  - parameters: at most 16, keywords upper-case (ALPHA / DIGIT / "-"),
 *    unique, values non-empty without SP, "=" or controls; with no
 *    parameters present, parsing with and without params_r agrees.
 *
 * Input: the MAIL/RCPT argument text (after "FROM:" / "TO:"), as is.
 * Trust boundary: a client's command line (RFC 5321 4.1.2, 4.1.1.3, 4.1.3,
 * 4.5.3.1.1-3, C; RFC 6531 3.3). */
#include "fuzz.h"

#include <string.h>
#include <strings.h>

#include "address.h"

#define N_FLAGS 16

struct result {
	bool ok;
	const char *error;
	struct mt_address addr;
	struct mt_esmtp_params params;
};

static bool same_addr(const struct mt_address *a, const struct mt_address *b)
{
	return a->is_null == b->is_null && a->is_literal == b->is_literal &&
		strcmp(a->local, b->local) == 0 &&
		strcmp(a->domain, b->domain) == 0 &&
		strcmp(a->addr, b->addr) == 0;
}

static bool same_params(const struct mt_esmtp_params *a,
			const struct mt_esmtp_params *b)
{
	if (a->count != b->count)
		return false;
	for (size_t i = 0; i < a->count; i++) {
		const struct mt_esmtp_param *x = &a->param[i], *y = &b->param[i];

		if (strcmp(x->key, y->key) != 0 ||
		    (x->value == NULL) != (y->value == NULL) ||
		    (x->value != NULL && strcmp(x->value, y->value) != 0))
			return false;
	}
	return true;
}

static void check_text(const char *s, size_t max, unsigned int flags,
		       const char *what)
{
	size_t len = strlen(s);

	FUZZ_CHECK(len <= max, "%s of %zu octets", what, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		FUZZ_CHECK(c >= 0x20 && c != 0x7f, "control 0x%02x in %s", c,
			   what);
		FUZZ_CHECK(c < 0x80 || (flags & MT_ADDR_SMTPUTF8) != 0,
			   "8-bit in %s without SMTPUTF8", what);
	}
	FUZZ_CHECK(fuzz_utf8_valid((const uint8_t *)s, len),
		   "%s is not well-formed UTF-8", what);
}

static void check_success(const struct result *r, unsigned int flags,
			  bool with_params)
{
	const struct mt_address *a = &r->addr;
	char want[sizeof(a->addr)];

	check_text(a->local, MT_ADDR_LOCAL_MAX, flags, "local part");
	check_text(a->domain, MT_ADDR_DOMAIN_MAX, flags, "domain");
	check_text(a->addr, sizeof(a->addr) - 1, flags, "address");
	for (const char *d = a->domain; *d != '\0'; d++)
		FUZZ_CHECK(!(*d >= 'A' && *d <= 'Z') ||
			   (a->is_literal && d - a->domain < 6),
			   "upper case in domain %s", a->domain);
	if (a->is_null) {
		FUZZ_CHECK((flags & MT_ADDR_ALLOW_NULL) != 0, "<> not allowed");
		FUZZ_CHECK(a->local[0] == '\0' && a->domain[0] == '\0' &&
			   a->addr[0] == '\0' && !a->is_literal,
			   "<> with text");
	} else if (a->domain[0] == '\0') {
		FUZZ_CHECK((flags & MT_ADDR_ALLOW_POSTMASTER) != 0 &&
			   strcmp(a->local, "postmaster") == 0 &&
			   strcmp(a->addr, "postmaster") == 0,
			   "no domain but not <Postmaster>: %s", a->addr);
	} else {
		FUZZ_CHECK(a->local[0] != '\0', "empty local part");
		snprintf(want, sizeof(want), "%s@%s", a->local, a->domain);
		FUZZ_CHECK(strcmp(want, a->addr) == 0, "addr %s is not %s",
			   a->addr, want);
		FUZZ_CHECK(a->is_literal == (a->domain[0] == '['),
			   "literal flag wrong for %s", a->domain);
	}
	if (!with_params)
		return;

	const struct mt_esmtp_params *p = &r->params;

	FUZZ_CHECK(p->count <= MT_ESMTP_PARAMS_MAX, "%zu params", p->count);
	for (size_t i = 0; i < p->count; i++) {
		const char *k = p->param[i].key, *v = p->param[i].value;

		FUZZ_CHECK((k[0] >= 'A' && k[0] <= 'Z') ||
			   (k[0] >= '0' && k[0] <= '9'),
			   "keyword '%s' starts badly", k);
		for (const char *c = k; *c != '\0'; c++)
			FUZZ_CHECK((*c >= 'A' && *c <= 'Z') ||
				   (*c >= '0' && *c <= '9') || *c == '-',
				   "bad keyword '%s'", k);
		FUZZ_CHECK(mt_esmtp_param_find(p, k) == &p->param[i],
			   "keyword %s not unique", k);
		if (v == NULL)
			continue;
		FUZZ_CHECK(*v != '\0', "empty value for %s", k);
		FUZZ_CHECK(strchr(v, '=') == NULL && strchr(v, ' ') == NULL,
			   "SP or '=' in the value of %s", k);
		check_text(v, MT_ESMTP_STORE_SIZE, flags, "parameter value");
		/* The store keeps keys and values inside itself. */
		FUZZ_CHECK(v >= p->store && v < p->store + sizeof(p->store) &&
			   k >= p->store && k < p->store + sizeof(p->store),
			   "parameter outside the store");
	}
}

static void parse(const char *s, size_t len, unsigned int flags,
		  bool with_params, struct result *r)
{
	r->error = NULL;
	r->ok = mt_address_parse(s, len, flags, &r->addr,
				 with_params ? &r->params : NULL, &r->error);
	if (!r->ok) {
		static const struct mt_address zero;

		FUZZ_CHECK(r->error != NULL && *r->error != '\0',
			   "failure without a reason");
		FUZZ_CHECK(memcmp(&r->addr, &zero, sizeof(zero)) == 0,
			   "failure leaves an address behind");
		FUZZ_CHECK(!with_params || r->params.count == 0,
			   "failure leaves parameters behind");
		return;
	}
	check_success(r, flags, with_params);
}

/* The normal form in <> parses to the same address. */
static void check_reparse(const struct result *r, unsigned int flags)
{
	struct result again;
	char path[sizeof(r->addr.addr) + 2];
	int n = snprintf(path, sizeof(path), "<%s>", r->addr.addr);

	parse(path, (size_t)n, flags & ~(unsigned int)MT_ADDR_LENIENT, false,
	      &again);
	FUZZ_CHECK(again.ok, "normal form %s does not re-parse: %s", path,
		   again.error);
	FUZZ_CHECK(same_addr(&r->addr, &again.addr),
		   "normal form %s re-parses to %s", path, again.addr.addr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct result res[2][N_FLAGS];	/* [with params][flags] */
	const char *s = (const char *)data;

	for (unsigned int wp = 0; wp < 2; wp++)
		for (unsigned int f = 0; f < N_FLAGS; f++)
			parse(s, size, f, wp != 0, &res[wp][f]);

	for (unsigned int f = 0; f < N_FLAGS; f++) {
		const struct result *np = &res[0][f], *wp = &res[1][f];

		if (np->ok)
			check_reparse(np, f);
		/* Without params_r only spaces may follow the path; with it,
		 * that is the case of zero parameters. */
		FUZZ_CHECK(np->ok == (wp->ok && wp->params.count == 0),
			   "flags %u: without params %d, with %d (%zu params)",
			   f, np->ok, wp->ok, wp->params.count);
		if (np->ok)
			FUZZ_CHECK(same_addr(&np->addr, &wp->addr),
				   "params_r changes the address");
		for (unsigned int g = 0; g < N_FLAGS; g++) {
			if ((f & g) != f)
				continue;
			for (unsigned int w = 0; w < 2; w++) {
				const struct result *a = &res[w][f];
				const struct result *b = &res[w][g];

				if (!a->ok)
					continue;
				FUZZ_CHECK(b->ok,
					   "flags %u parse, superset %u fails: %s",
					   f, g, b->error);
				FUZZ_CHECK(same_addr(&a->addr, &b->addr),
					   "flags %u and %u differ: %s vs %s",
					   f, g, a->addr.addr, b->addr.addr);
				FUZZ_CHECK(!w || same_params(&a->params,
							     &b->params),
					   "flags %u and %u: params differ",
					   f, g);
			}
		}
	}
	return 0;
}
