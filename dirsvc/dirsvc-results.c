/* dirsvc-results.c — libdirsvc's results: the strings a request's answer
 * points into (one fixed room per request, no allocation), its reason, the
 * encodings of answers in the lookup cache (dircache.h), and status names.
 * Cache values:
 *   recipient  quota (8 bytes, host order), account (1), has_forward (1),
 *              then "address\0shard\0forward\0"; NOT_FOUND is a negative
 *              entry with the negative TTL
 *   auth       account (1), then "address\0shard\0"; successes only, under
 *              the HMAC of the password (dircache.c)
 * Trust boundary: values come from the directory (through the cache) and
 * are length-checked when decoded. */
#include "dirsvc-private.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *mt_dirsvc_req_strdup(struct mt_dirsvc_request *req,
				 const char *s, size_t len)
{
	if (len + 1 > sizeof(req->strings) - req->strings_len)
		return NULL;
	char *p = req->strings + req->strings_len;
	memcpy(p, s, len);
	p[len] = '\0';
	req->strings_len += len + 1;
	return p;
}

void mt_dirsvc_req_reason(struct mt_dirsvc_request *req, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(req->reason, sizeof(req->reason), fmt, ap);
	va_end(ap);
	if (req->kind == DIRSVC_LOOKUP)
		req->result.recipient.reason = req->reason;
	else
		req->result.auth.reason = req->reason;
}

/* Cache encodings */

/* Recipient: quota (8 bytes), account (1), has_forward (1), then
 * "address\0shard\0forward\0". */
#define RCPT_HEADER 10

void mt_dirsvc_cache_recipient(struct mt_dirsvc *d, struct mt_dirsvc_request *req)
{
	const struct mt_dirsvc_recipient *r = &req->result.recipient;
	unsigned char value[RCPT_HEADER + MT_DIRSVC_STRINGS_MAX];
	size_t len = RCPT_HEADER;

	if (d->cache == NULL)
		return;
	if (r->status == MT_DIRSVC_NOT_FOUND) {
		mt_dircache_put(d->cache, req->key, strlen(req->key), NULL, 0,
				true, d->negative_ttl);
		return;
	}
	memcpy(value, &r->quota, 8);
	value[8] = (unsigned char)r->account;
	value[9] = r->forward != NULL;
	const char *parts[3] = { r->address, r->shard, r->forward ? r->forward : "" };
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(parts[i]) + 1;
		if (len + n > sizeof(value))
			return;
		memcpy(value + len, parts[i], n);
		len += n;
	}
	mt_dircache_put(d->cache, req->key, strlen(req->key), value, len,
			false, d->cache_ttl);
}

/* Split n NUL-terminated strings from the front of data into req's room. */
static bool take_strings(struct mt_dirsvc_request *req, const char *data,
			 size_t len, const char **out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *nul = memchr(data, '\0', len);
		if (nul == NULL)
			return false;
		size_t l = (size_t)(nul - data);
		if ((out[i] = mt_dirsvc_req_strdup(req, data, l)) == NULL)
			return false;
		data += l + 1;
		len -= l + 1;
	}
	return true;
}

bool mt_dirsvc_recipient_from_cache(struct mt_dirsvc *d,
				     struct mt_dirsvc_request *req)
{
	unsigned char value[RCPT_HEADER + MT_DIRSVC_STRINGS_MAX];
	struct mt_dirsvc_recipient *r = &req->result.recipient;
	size_t len = 0;
	const char *s[3];

	if (d->cache == NULL)
		return false;
	switch (mt_dircache_get(d->cache, req->key, strlen(req->key), value,
				sizeof(value), &len)) {
	case MT_DIRCACHE_MISS:
		return false;
	case MT_DIRCACHE_NEGATIVE:
		r->status = MT_DIRSVC_NOT_FOUND;
		r->cached = true;
		mt_dirsvc_req_reason(req, "no such address (cached)");
		return true;
	case MT_DIRCACHE_POSITIVE:
		break;
	}
	if (len < RCPT_HEADER || len > sizeof(value) ||
	    !take_strings(req, (const char *)value + RCPT_HEADER,
			  len - RCPT_HEADER, s, 3))
		return false;
	memcpy(&r->quota, value, 8);
	r->account = (enum mt_dirsvc_account)value[8];
	r->address = s[0];
	r->shard = s[1];
	r->forward = value[9] ? s[2] : NULL;
	r->status = MT_DIRSVC_FOUND;
	r->cached = true;
	return true;
}

/* Auth: account (1), then "address\0shard\0". */
void mt_dirsvc_cache_auth(struct mt_dirsvc *d, struct mt_dirsvc_request *req)
{
	const struct mt_dirsvc_auth *a = &req->result.auth;
	char value[1 + MT_DIRSVC_STRINGS_MAX];
	size_t alen = strlen(a->address) + 1, slen = strlen(a->shard) + 1;

	if (d->cache == NULL || a->status != MT_DIRSVC_AUTH_OK ||
	    1 + alen + slen > sizeof(value))
		return;
	value[0] = (char)a->account;
	memcpy(value + 1, a->address, alen);
	memcpy(value + 1 + alen, a->shard, slen);
	mt_dircache_auth_put(d->cache, req->key, req->password, value,
			     1 + alen + slen, d->cache_ttl);
}

bool mt_dirsvc_auth_from_cache(struct mt_dirsvc *d, struct mt_dirsvc_request *req)
{
	char value[1 + MT_DIRSVC_STRINGS_MAX];
	struct mt_dirsvc_auth *a = &req->result.auth;
	size_t len = 0;
	const char *s[2];

	if (d->cache == NULL || d->cache_ttl == 0 ||
	    mt_dircache_auth_get(d->cache, req->key, req->password, value,
				 sizeof(value), &len) != MT_DIRCACHE_POSITIVE ||
	    len < 1 || len > sizeof(value) ||
	    !take_strings(req, value + 1, len - 1, s, 2))
		return false;
	a->status = MT_DIRSVC_AUTH_OK;
	a->account = (enum mt_dirsvc_account)value[0];
	a->address = s[0];
	a->shard = s[1];
	a->cached = true;
	return true;
}

/* Names */

const char *mt_dirsvc_lookup_status_name(enum mt_dirsvc_lookup_status status)
{
	static const char *const names[] = {
		[MT_DIRSVC_FOUND] = "found", [MT_DIRSVC_NOT_FOUND] = "not_found",
		[MT_DIRSVC_INVALID] = "invalid", [MT_DIRSVC_TEMPFAIL] = "tempfail",
	};
	return (size_t)status < sizeof(names) / sizeof(names[0]) ?
		names[status] : "?";
}

const char *mt_dirsvc_auth_status_name(enum mt_dirsvc_auth_status status)
{
	static const char *const names[] = {
		[MT_DIRSVC_AUTH_OK] = "ok",
		[MT_DIRSVC_AUTH_BAD_CREDENTIALS] = "bad_credentials",
		[MT_DIRSVC_AUTH_DISABLED] = "disabled",
		[MT_DIRSVC_AUTH_TEMPFAIL] = "tempfail",
	};
	return (size_t)status < sizeof(names) / sizeof(names[0]) ?
		names[status] : "?";
}

const char *mt_dirsvc_account_name(enum mt_dirsvc_account account)
{
	static const char *const names[] = {
		[MT_DIRSVC_ACTIVE] = "active", [MT_DIRSVC_DISABLED] = "disabled",
		[MT_DIRSVC_HOLD] = "hold",
	};
	return (size_t)account < sizeof(names) / sizeof(names[0]) ?
		names[account] : "?";
}
