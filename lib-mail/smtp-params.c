/* smtp-params.c — MAIL FROM / RCPT TO arguments for every SMTP and LMTP
 * server tier (see smtp-params.h for the refusal rule, the trust boundary
 * and the RFCs). */
#include "smtp-params.h"
#include "xtext.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static bool refuse(struct mt_smtp_param_error *error_r, int code,
		   const char *text, const char *detail)
{
	error_r->code = code;
	error_r->text = text;
	error_r->detail = detail != NULL ? detail : "";
	error_r->rejected = code == 552 || code == 553;
	return false;
}

static bool unsupported(struct mt_smtp_param_error *error_r, const char *key)
{
	return refuse(error_r, 555, "5.5.4 Unsupported parameter ", key);
}

/* keyword ("FROM:" or "TO:", any case), then a path and its parameters.
 * lib/address refusing it: a keyword given twice is an invalid argument
 * (RFC 3463 3.6: X.5.4, 555 as the other parameter faults), anything
 * else a path syntax error with lib/address's reason. */
static bool parse_path(const char *args, const char *keyword, unsigned int flags,
		       struct mt_address *addr_r, struct mt_esmtp_params *params_r,
		       const char *syntax, const char *bad,
		       struct mt_smtp_param_error *error_r)
{
	size_t n = strlen(keyword);
	const char *error;
	if (strncasecmp(args, keyword, n) != 0)
		return refuse(error_r, 501, syntax, NULL);
	args += n;
	if (!mt_address_parse(args, strlen(args), flags, addr_r, params_r, &error)) {
		if (params_r->duplicate != NULL)
			return refuse(error_r, 555, "5.5.4 Duplicate parameter ",
				      params_r->duplicate);
		return refuse(error_r, 501, bad, error);
	}
	return true;
}

/* RFC 6531 3.4: a UTF-8 path is valid syntax where SMTPUTF8 is offered,
 * but only in a transaction that asked for it. */
static bool utf8_path_allowed(const char *addr, bool smtputf8,
			      struct mt_smtp_param_error *error_r)
{
	if (mt_has_8bit(addr, strlen(addr)) && !smtputf8)
		return refuse(error_r, 553, "5.6.7 Non-ASCII address needs SMTPUTF8",
			      NULL);
	return true;
}

/* RFC 1870: size-value = 1*20DIGIT; a value beyond 64 bits is only "too
 * big", so it saturates (552, not 501). */
static bool parse_size(const char *v, uint64_t *size_r)
{
	if (v == NULL || *v == '\0' || strlen(v) > 20)
		return false;
	uint64_t n = 0;
	for (const char *p = v; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return false;
		uint64_t d = (uint64_t)(*p - '0');
		n = n > (UINT64_MAX - d) / 10 ? UINT64_MAX : n * 10 + d;
	}
	*size_r = n;
	return true;
}

bool mt_smtp_queue_id_ok(const char *id)
{
	size_t len = strlen(id);
	if (len == 0 || len > MT_SMTP_QUEUE_ID_MAX)
		return false;
	for (const char *p = id; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && strchr(".-_", *p) == NULL)
			return false;
	return true;
}

/* One MAIL parameter the server offers; false (refused) if its value is
 * bad; *known_r false if it is none of them. */
static bool mail_param(struct mt_smtp_mail_args *m, unsigned int offered,
		       const char *key, const char *v, uint64_t max_size,
		       bool *known_r, struct mt_smtp_param_error *error_r)
{
	*known_r = true;
	if ((offered & MT_SMTP_OFFER_SIZE) != 0 && strcmp(key, "SIZE") == 0) {
		if (!parse_size(v, &m->size))
			return refuse(error_r, 501, "5.5.4 Bad SIZE parameter", NULL);
		if (m->size > max_size)
			return refuse(error_r, 552, "5.3.4 Message size exceeds fixed "
				      "maximum message size", NULL);
	} else if ((offered & MT_SMTP_OFFER_8BITMIME) != 0 && strcmp(key, "BODY") == 0) {
		if (v != NULL && strcasecmp(v, "8BITMIME") == 0)
			m->body_8bit = true;
		else if (v == NULL || strcasecmp(v, "7BIT") != 0)
			return refuse(error_r, 501, "5.5.4 BODY must be 7BIT or 8BITMIME",
				      NULL);
	} else if ((offered & MT_SMTP_OFFER_SMTPUTF8) != 0 &&
		   strcmp(key, "SMTPUTF8") == 0 && v == NULL) {
		m->smtputf8 = true;
	} else if ((offered & MT_SMTP_OFFER_DSN) != 0 && strcmp(key, "RET") == 0) {
		if (v != NULL && strcasecmp(v, "FULL") == 0)
			m->ret = MT_SMTP_RET_FULL;
		else if (v != NULL && strcasecmp(v, "HDRS") == 0)
			m->ret = MT_SMTP_RET_HDRS;
		else
			return refuse(error_r, 501, "5.5.4 Malformed RET parameter", NULL);
	} else if ((offered & MT_SMTP_OFFER_DSN) != 0 && strcmp(key, "ENVID") == 0) {
		/* RFC 3461 4.4: xtext, at most 100 octets. */
		if (v == NULL || !mt_xtext_valid(v, MT_SMTP_ENVID_MAX))
			return refuse(error_r, 501, "5.5.4 Malformed ENVID parameter", NULL);
		m->envid = v;
	} else if ((offered & MT_SMTP_OFFER_AUTH) != 0 && strcmp(key, "AUTH") == 0) {
		/* RFC 4954 5: accepted; we do not relay it on. */
		if (v == NULL)
			return refuse(error_r, 501, "5.5.4 Malformed AUTH parameter", NULL);
	} else if ((offered & MT_SMTP_OFFER_XQUEUEID) != 0 &&
		   strcmp(key, "XQUEUEID") == 0) {
		if (v == NULL || !mt_smtp_queue_id_ok(v))
			return refuse(error_r, 501, "5.5.4 Bad XQUEUEID parameter", NULL);
		m->queue_id = v;
	} else {
		*known_r = false;
	}
	return true;
}

bool mt_smtp_parse_mail(const char *args, unsigned int offered,
			unsigned int addr_flags, uint64_t max_size,
			struct mt_smtp_mail_args *m,
			struct mt_smtp_param_error *error_r)
{
	memset(m, 0, sizeof(*m));
	if ((offered & MT_SMTP_OFFER_SMTPUTF8) != 0)
		addr_flags |= MT_ADDR_SMTPUTF8;
	if (!parse_path(args, "FROM:", addr_flags, &m->addr, &m->params,
			"5.5.4 Syntax: MAIL FROM:<address>",
			"5.1.7 Bad sender address syntax: ", error_r))
		return false;
	/* In the order sent; the first bad one is refused. */
	for (size_t i = 0; i < m->params.count; i++) {
		const char *key = m->params.param[i].key, *v = m->params.param[i].value;
		bool known;
		if ((offered & MT_SMTP_OFFER_ESMTP) == 0)
			return refuse(error_r, 555, "5.5.4 Error: parameters need EHLO",
				      NULL);
		if (!mail_param(m, offered, key, v, max_size, &known, error_r))
			return false;
		if (!known)
			return unsupported(error_r, key);
	}
	return utf8_path_allowed(m->addr.addr, m->smtputf8, error_r);
}

/* NOTIFY=NEVER or a comma list of SUCCESS, FAILURE, DELAY (RFC 3461 4.1);
 * 0 if malformed. */
static unsigned int parse_notify(const char *v)
{
	if (v == NULL)
		return 0;
	if (strcasecmp(v, "NEVER") == 0)
		return MT_SMTP_NOTIFY_NEVER;
	unsigned int notify = 0;
	const char *p = v;
	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		if (len == 7 && strncasecmp(p, "SUCCESS", 7) == 0)
			notify |= MT_SMTP_NOTIFY_SUCCESS;
		else if (len == 7 && strncasecmp(p, "FAILURE", 7) == 0)
			notify |= MT_SMTP_NOTIFY_FAILURE;
		else if (len == 5 && strncasecmp(p, "DELAY", 5) == 0)
			notify |= MT_SMTP_NOTIFY_DELAY;
		else
			return 0;
		p += len;
		if (*p == ',' && *++p == '\0')
			return 0;
	}
	return notify;
}

bool mt_smtp_parse_rcpt(const char *args, unsigned int offered,
			unsigned int addr_flags, bool smtputf8,
			struct mt_smtp_rcpt_args *r,
			struct mt_smtp_param_error *error_r)
{
	memset(r, 0, sizeof(*r));
	if ((offered & MT_SMTP_OFFER_SMTPUTF8) != 0)
		addr_flags |= MT_ADDR_SMTPUTF8;
	if (!parse_path(args, "TO:", addr_flags, &r->addr, &r->params,
			"5.5.4 Syntax: RCPT TO:<address>",
			"5.1.3 Bad recipient address syntax: ", error_r))
		return false;
	for (size_t i = 0; i < r->params.count; i++) {
		const char *key = r->params.param[i].key, *v = r->params.param[i].value;
		if ((offered & MT_SMTP_OFFER_ESMTP) == 0)
			return refuse(error_r, 555, "5.5.4 Error: parameters need EHLO",
				      NULL);
		bool dsn = (offered & MT_SMTP_OFFER_DSN) != 0;
		if (dsn && strcmp(key, "NOTIFY") == 0) {
			if ((r->notify = parse_notify(v)) == 0)
				return refuse(error_r, 501, "5.5.4 Malformed NOTIFY parameter",
					      NULL);
		} else if (dsn && strcmp(key, "ORCPT") == 0) {
			/* RFC 3461 4.2: addr-type ";" xtext. */
			if (v == NULL || strchr(v, ';') == NULL ||
			    !mt_xtext_valid(strchr(v, ';') + 1, MT_SMTP_ORCPT_MAX))
				return refuse(error_r, 501, "5.5.4 Malformed ORCPT parameter",
					      NULL);
			r->orcpt = v;
		} else {
			return unsupported(error_r, key);
		}
	}
	return utf8_path_allowed(r->addr.addr, smtputf8, error_r);
}
