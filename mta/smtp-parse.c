/* smtp-parse.c — the pure parsers of SMTP command arguments (see
 * smtp-parse.h): EHLO/HELO, MAIL FROM and RCPT TO with their ESMTP
 * parameters, BDAT.
 *
 * Trust boundary: command arguments are the client's. Paths and the
 * parameter syntax are lib/address's (RFC 5321 4.1.2 grammar and length
 * limits); here each parameter we implement is checked against its own
 * RFC (a malformed ENVID or ORCPT xtext: 501 5.5.4, lib/xtext), anything
 * else is refused with 555. Nothing is allocated; results
 * point into the caller's struct.
 * RFCs: 5321 4.1.1.1-3, 4.1.2; 1870 (SIZE); 6152 (8BITMIME); 6531
 * (SMTPUTF8); 3461 4 (DSN parameters, xtext); 4954 5 (AUTH=); 3030 (BDAT);
 * 3463 3.6 (X.5.4 for a repeated parameter). */
#include "smtp-parse.h"
#include "xtext.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static bool refuse(struct smtp_parse_error *error_r, int code, const char *text,
		   const char *detail)
{
	error_r->code = code;
	error_r->text = text;
	error_r->detail = detail != NULL ? detail : "";
	return false;
}

/* lib/address refused a MAIL/RCPT argument: a keyword given twice is an
 * invalid argument (RFC 3463 3.6: X.5.4, answered 555 as the other
 * parameter faults; RFC 5321 4.1.1.11), anything else a path syntax
 * error with lib/address's reason. */
static bool refuse_path(struct smtp_parse_error *error_r,
			const struct mt_esmtp_params *params, const char *text,
			const char *reason)
{
	if (params->duplicate != NULL)
		return refuse(error_r, 555, "5.5.4 Duplicate parameter ",
			      params->duplicate);
	return refuse(error_r, 501, text, reason);
}

bool smtp_parse_helo(const char *args, size_t *len_r)
{
	size_t len = strcspn(args, " ");
	if (len == 0 || len > SMTP_HELO_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (args[i] <= 32 || args[i] >= 127)
			return false;
	*len_r = len;
	return true;
}

/* n = n * 10 + digit, false if that does not fit 64 bits. */
static bool add_digit(uint64_t *n, char digit)
{
	uint64_t d = (uint64_t)(digit - '0');
	if (*n > (UINT64_MAX - d) / 10)
		return false;
	*n = *n * 10 + d;
	return true;
}

/* RFC 1870: size-value = 1*20DIGIT, without overflow. */
static bool parse_size(const char *v, uint64_t *size_r)
{
	if (v == NULL || *v == '\0' || strlen(v) > 20)
		return false;
	uint64_t n = 0;
	for (const char *p = v; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || !add_digit(&n, *p))
			return false;
	}
	*size_r = n;
	return true;
}

/* MAIL parameters, in the order sent; the first bad one is refused. */
static bool mail_params(struct smtp_mail_args *m, bool esmtp, uint64_t max_size,
			struct smtp_parse_error *error_r)
{
	for (size_t i = 0; i < m->params.count; i++) {
		const char *key = m->params.param[i].key, *v = m->params.param[i].value;
		if (!esmtp)
			return refuse(error_r, 555, "5.5.4 Error: parameters need EHLO", NULL);
		if (strcmp(key, "SIZE") == 0) {
			if (!parse_size(v, &m->size))
				return refuse(error_r, 501, "5.5.4 Bad SIZE parameter", NULL);
			if (m->size > max_size)
				return refuse(error_r, 552, "5.3.4 Message size exceeds "
					      "fixed maximum message size", NULL);
		} else if (strcmp(key, "BODY") == 0) {
			if (v != NULL && strcasecmp(v, "8BITMIME") == 0)
				m->body_8bit = true;
			else if (v == NULL || strcasecmp(v, "7BIT") != 0)
				return refuse(error_r, 555, "5.5.4 Unsupported BODY parameter",
					      NULL);
		} else if (strcmp(key, "SMTPUTF8") == 0 && v == NULL) {
			m->smtputf8 = true;
		} else if (strcmp(key, "RET") == 0 && v != NULL &&
			   (strcasecmp(v, "FULL") == 0 || strcasecmp(v, "HDRS") == 0)) {
			m->ret = toupper((unsigned char)v[0]) == 'F' ?
				QUEUE_RET_FULL : QUEUE_RET_HDRS;
		} else if (strcmp(key, "ENVID") == 0) {
			/* RFC 3461 4.4: xtext, at most 100 octets. */
			if (v == NULL || !mt_xtext_valid(v, SMTP_ENVID_MAX))
				return refuse(error_r, 501, "5.5.4 Malformed ENVID parameter",
					      NULL);
			m->envid = v;
		} else if (strcmp(key, "AUTH") == 0 && v != NULL) {
			/* RFC 4954 5: accepted; we do not relay it on. */
		} else {
			return refuse(error_r, 555, "5.5.4 Unsupported parameter ", key);
		}
	}
	return true;
}

bool smtp_parse_mail(const char *args, bool esmtp, uint64_t max_size,
		     struct smtp_mail_args *m, struct smtp_parse_error *error_r)
{
	const char *error;

	memset(m, 0, sizeof(*m));
	if (strncasecmp(args, "FROM:", 5) != 0)
		return refuse(error_r, 501, "5.5.4 Syntax: MAIL FROM:<address>", NULL);
	args += 5;
	unsigned int flags = MT_ADDR_ALLOW_NULL | MT_ADDR_LENIENT |
		(esmtp ? MT_ADDR_SMTPUTF8 : 0);
	if (!mt_address_parse(args, strlen(args), flags, &m->addr, &m->params, &error))
		return refuse_path(error_r, &m->params, "5.1.7 Bad sender address syntax: ",
				   error);
	if (!mail_params(m, esmtp, max_size, error_r))
		return false;
	if (mt_has_8bit(m->addr.addr, strlen(m->addr.addr)) && !m->smtputf8)
		return refuse(error_r, 553, "5.6.7 Non-ASCII address needs SMTPUTF8", NULL);
	return true;
}

/* NOTIFY=NEVER or a comma list of SUCCESS, FAILURE, DELAY (RFC 3461 4.1). */
static unsigned int parse_notify(const char *v, bool *ok_r)
{
	unsigned int notify = 0;
	*ok_r = false;
	if (v == NULL)
		return 0;
	if (strcasecmp(v, "NEVER") == 0) {
		*ok_r = true;
		return QUEUE_NOTIFY_NEVER;
	}
	const char *p = v;
	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		if (len == 7 && strncasecmp(p, "SUCCESS", 7) == 0)
			notify |= QUEUE_NOTIFY_SUCCESS;
		else if (len == 7 && strncasecmp(p, "FAILURE", 7) == 0)
			notify |= QUEUE_NOTIFY_FAILURE;
		else if (len == 5 && strncasecmp(p, "DELAY", 5) == 0)
			notify |= QUEUE_NOTIFY_DELAY;
		else
			return 0;
		p += len;
		if (*p == ',' && *++p == '\0')
			return 0;
	}
	*ok_r = notify != 0;
	return notify;
}

bool smtp_parse_rcpt(const char *args, bool esmtp, bool smtputf8,
		     struct smtp_rcpt_args *r, struct smtp_parse_error *error_r)
{
	const char *error;

	memset(r, 0, sizeof(*r));
	if (strncasecmp(args, "TO:", 3) != 0)
		return refuse(error_r, 501, "5.5.4 Syntax: RCPT TO:<address>", NULL);
	args += 3;
	unsigned int flags = MT_ADDR_ALLOW_POSTMASTER | MT_ADDR_LENIENT |
		(smtputf8 ? MT_ADDR_SMTPUTF8 : 0);
	if (!mt_address_parse(args, strlen(args), flags, &r->addr, &r->params, &error))
		return refuse_path(error_r, &r->params,
				   "5.1.3 Bad recipient address syntax: ", error);
	for (size_t i = 0; i < r->params.count; i++) {
		const char *key = r->params.param[i].key, *v = r->params.param[i].value;
		bool ok = esmtp;
		if (ok && strcmp(key, "NOTIFY") == 0) {
			r->notify = parse_notify(v, &ok);
		} else if (ok && strcmp(key, "ORCPT") == 0) {
			/* RFC 3461 4.2: addr-type ";" xtext. */
			if (v == NULL || strchr(v, ';') == NULL ||
			    !mt_xtext_valid(strchr(v, ';') + 1, SMTP_ORCPT_MAX))
				return refuse(error_r, 501, "5.5.4 Malformed ORCPT parameter",
					      NULL);
			r->orcpt = v;
		} else {
			ok = false;
		}
		if (!ok)
			return refuse(error_r, 555, "5.5.4 Unsupported or bad parameter ", key);
	}
	return true;
}

bool smtp_parse_bdat(const char *args, uint64_t *size_r, bool *last_r)
{
	const char *p = args;
	uint64_t n = 0;
	if (!isdigit((unsigned char)*p))
		return false;
	for (; isdigit((unsigned char)*p); p++)
		if (!add_digit(&n, *p))
			return false;
	*last_r = false;
	if (*p == ' ' && strcasecmp(p + 1, "LAST") == 0)
		*last_r = true;
	else if (*p != '\0')
		return false;
	*size_r = n;
	return true;
}
