/* lmtp-parse.c — the pure parsers of LMTP command lines (see
 * lmtp-parse.h): the command table's names, LHLO, MAIL FROM and RCPT TO
 * with SIZE, BODY and XQUEUEID.
 *
 * Trust boundary: an LMTP client's command arguments. Paths go through
 * lib/address (RFC 5321 4.1.2); every read here stays inside the
 * NUL-terminated argument. RFC 2033 4.1, RFC 5321 4.1.1, RFC 1870,
 * RFC 6152, RFC 6531 3.4 (SMTPUTF8: UTF-8 paths only when MAIL asks),
 * RFC 3463 3.6 (X.5.4 for a repeated parameter). */
#include "lmtp-parse.h"
#include "command-find.h"

#include <string.h>
#include <strings.h>

/* The name is the enum's own suffix, so the two cannot disagree. */
#define VERB(name) [LMTP_VERB_##name] = #name
static const char *const verb_names[LMTP_VERB_COUNT] = {
	VERB(LHLO), VERB(MAIL), VERB(RCPT), VERB(DATA), VERB(RSET),
	VERB(NOOP), VERB(QUIT), VERB(HELO), VERB(EHLO),
};
#undef VERB

bool lmtp_parse_command(const char *line, enum lmtp_verb *verb_r, const char **arg_r)
{
	unsigned int index;

	if (!mt_command_find(line, verb_names, LMTP_VERB_COUNT, sizeof(verb_names[0]),
			     &index, arg_r))
		return false;
	*verb_r = (enum lmtp_verb)index;
	return true;
}

const char *lmtp_verb_name(enum lmtp_verb verb)
{
	return (unsigned int)verb < LMTP_VERB_COUNT ? verb_names[verb] : "?";
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* 1..max octets, each alphanumeric or one of extra. */
static bool token_ok(const char *s, size_t max, const char *extra)
{
	size_t len = strlen(s);

	if (len == 0 || len > max)
		return false;
	for (const char *p = s; *p != '\0'; p++)
		if (!is_alnum(*p) && strchr(extra, *p) == NULL)
			return false;
	return true;
}

bool lmtp_parse_lhlo(const char *arg)
{
	return token_ok(arg, LMTP_LHLO_MAX, ".-_:[]");
}

bool lmtp_queue_id_ok(const char *id)
{
	return token_ok(id, LMTP_QUEUE_ID_MAX, ".-_");
}

static bool refuse(struct lmtp_parse_error *error_r, int code, const char *text,
		   const char *detail)
{
	error_r->code = code;
	error_r->text = text;
	error_r->detail = detail != NULL ? detail : "";
	error_r->rejected = false;
	return false;
}

/* RFC 1870 size-value: digits only; a value beyond 64 bits is only "too
 * big", so it saturates (552, not 501). */
static bool parse_size(const char *v, uint64_t *size_r)
{
	uint64_t n = 0;

	if (v == NULL || *v == '\0')
		return false;
	for (const char *p = v; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return false;
		uint64_t d = (uint64_t)(*p - '0');
		n = n > (UINT64_MAX - d) / 10 ? UINT64_MAX : n * 10 + d;
	}
	*size_r = n;
	return true;
}

/* MAIL parameters, in the order sent; the first bad one is refused. */
static bool mail_params(struct lmtp_mail_args *m, uint64_t max_size,
			struct lmtp_parse_error *error_r)
{
	for (size_t i = 0; i < m->params.count; i++) {
		const char *key = m->params.param[i].key, *v = m->params.param[i].value;
		if (strcmp(key, "SIZE") == 0) {
			if (!parse_size(v, &m->size))
				return refuse(error_r, 501, "5.5.4 Bad SIZE parameter", NULL);
			if (m->size > max_size) {
				refuse(error_r, 552, "5.3.4 Message size exceeds fixed "
				       "maximum message size", NULL);
				error_r->rejected = true;
				return false;
			}
		} else if (strcmp(key, "BODY") == 0) {
			if (v == NULL || (strcasecmp(v, "7BIT") != 0 &&
					  strcasecmp(v, "8BITMIME") != 0))
				return refuse(error_r, 501, "5.5.4 BODY must be 7BIT or 8BITMIME",
					      NULL);
		} else if (strcmp(key, "SMTPUTF8") == 0 && v == NULL) {
			m->smtputf8 = true;
		} else if (strcmp(key, "XQUEUEID") == 0) {
			if (v == NULL || !lmtp_queue_id_ok(v))
				return refuse(error_r, 501, "5.5.4 Bad XQUEUEID parameter", NULL);
			m->queue_id = v;
		} else {
			return refuse(error_r, 555, "5.5.4 Unsupported parameter ", key);
		}
	}
	return true;
}

/* keyword ("FROM:" or "TO:", any case), then a path and its parameters;
 * 501 with syntax or bad (and lib/address's reason) when not. */
static bool parse_path(const char *arg, const char *keyword, unsigned int flags,
		       struct mt_address *addr_r, struct mt_esmtp_params *params_r,
		       const char *syntax, const char *bad, struct lmtp_parse_error *error_r)
{
	size_t n = strlen(keyword);
	const char *error;

	if (strncasecmp(arg, keyword, n) != 0)
		return refuse(error_r, 501, syntax, NULL);
	arg += n;
	if (!mt_address_parse(arg, strlen(arg), flags, addr_r, params_r, &error)) {
		/* A keyword given twice: invalid arguments (RFC 3463 3.6,
		 * X.5.4), 555 as the other parameter faults. */
		if (params_r->duplicate != NULL)
			return refuse(error_r, 555, "5.5.4 Duplicate parameter ",
				      params_r->duplicate);
		return refuse(error_r, 501, bad, error);
	}
	return true;
}

/* RFC 6531 3.4: a UTF-8 path is valid syntax (lib/address checks it is
 * UTF-8), but only in a transaction that asked for SMTPUTF8. */
static bool utf8_path_allowed(const char *addr, bool smtputf8,
			      struct lmtp_parse_error *error_r)
{
	if (mt_has_8bit(addr, strlen(addr)) && !smtputf8) {
		refuse(error_r, 553, "5.6.7 Non-ASCII address needs SMTPUTF8", NULL);
		error_r->rejected = true;
		return false;
	}
	return true;
}

bool lmtp_parse_mail(const char *arg, uint64_t max_size, struct lmtp_mail_args *m,
		     struct lmtp_parse_error *error_r)
{
	memset(m, 0, sizeof(*m));
	return parse_path(arg, "FROM:", MT_ADDR_ALLOW_NULL | MT_ADDR_SMTPUTF8,
			  &m->addr, &m->params, "5.5.4 Syntax: MAIL FROM:<address>",
			  "5.1.7 Bad sender address: ", error_r) &&
		mail_params(m, max_size, error_r) &&
		utf8_path_allowed(m->addr.addr, m->smtputf8, error_r);
}

bool lmtp_parse_rcpt(const char *arg, bool smtputf8, struct lmtp_rcpt_args *r,
		     struct lmtp_parse_error *error_r)
{
	memset(r, 0, sizeof(*r));
	if (!parse_path(arg, "TO:", MT_ADDR_SMTPUTF8, &r->addr, &r->params,
			"5.5.4 Syntax: RCPT TO:<address>", "5.1.3 Bad recipient address: ",
			error_r))
		return false;
	if (!utf8_path_allowed(r->addr.addr, smtputf8, error_r))
		return false;
	if (r->params.count > 0)
		return refuse(error_r, 555, "5.5.4 Unsupported parameter ",
			      r->params.param[0].key);
	return true;
}
