/* fuzz-smtp-cmd.c — libFuzzer target for the MTA's command argument
 * parsers: EHLO/HELO and BDAT (mta/smtp-parse.c), MAIL FROM and RCPT TO
 * with the ESMTP parameters the MTA offers (SIZE, BODY, SMTPUTF8, RET,
 * ENVID, AUTH=, NOTIFY, ORCPT: lib-mail/smtp-params.c).
 *
 * Properties, beyond "no crash, no over-read":
 *  - a refusal is a 5xx code whose enhanced status has the same class,
 *    and the reply line (text + detail) holds no control octet, so a
 *    client cannot inject reply lines;
 *  - an accepted MAIL has no parameters without EHLO, SIZE within the
 *    limit and equal to a reference decimal parser (one beyond 64 bits
 *    saturates: accepted only under a 2^64-1 limit), ENVID valid xtext
 *    (reference checker: upper-case hex only, RFC 3461 4); "501 5.5.4
 *    Malformed ENVID" only for an ENVID the reference refuses; a non-ASCII path only with SMTPUTF8; raising the
 *    size limit or saying EHLO never refuses what was accepted, nor changes
 *    the path;
 *  - an accepted RCPT has NOTIFY equal to a reference list parser (NEVER
 *    alone, or a non-empty list of SUCCESS/FAILURE/DELAY), ORCPT "type;"
 *    plus valid xtext; SMTPUTF8 never refuses what was accepted without it;
 *  - BDAT and HELO arguments are accepted exactly as reference parsers say.
 *
 * Input: [mode] then lines split at LF (a CR before it is dropped, as
 * lib/lineio does); each line's arguments (after the verb and one space,
 * as smtp-session.c's dispatch cuts them) go to every parser. mode bit 0:
 * EHLO said; bit 1: the transaction is SMTPUTF8; bits 2-3: the SIZE limit
 * 0, 1000, 10 MiB, 2^64-1.
 * Trust boundary: client command lines (RFC 5321 4.1, RFC 1870, 3461,
 * 3030, 6531). */
#include "fuzz.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "mta/smtp-parse.h"

static void check_reply(const struct mt_smtp_param_error *e)
{
	FUZZ_CHECK(e->code >= 500 && e->code <= 599, "code %d", e->code);
	FUZZ_CHECK(e->text[0] == '5' && e->text[1] == '.', "status '%s'", e->text);
	const char *parts[2] = { e->text, e->detail };
	for (int k = 0; k < 2; k++)
		for (const char *p = parts[k]; *p != '\0'; p++)
			FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f,
				   "control octet 0x%02x in the reply", (unsigned char)*p);
}

static bool upper_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* Reference xtext (RFC 3461 4): 1..max of (printable but not '+' '=') or
 * '+' and two upper-case hex digits. */
static bool ref_xtext(const char *v, size_t max)
{
	size_t len = strlen(v);
	if (len == 0 || len > max)
		return false;
	for (size_t i = 0; i < len;) {
		if (v[i] == '+') {
			if (i + 2 >= len || !upper_hex(v[i + 1]) || !upper_hex(v[i + 2]))
				return false;
			i += 3;
		} else if (v[i] >= '!' && v[i] <= '~' && v[i] != '=') {
			i++;
		} else {
			return false;
		}
	}
	return true;
}

/* Reference unsigned decimal of 1..20 digits that fits 64 bits. */
static bool ref_u64(const char *v, size_t len, uint64_t *n_r)
{
	uint64_t n = 0;
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		unsigned int d = (unsigned int)(v[i] - '0');
		if (n > UINT64_MAX / 10 || n * 10 > UINT64_MAX - d)
			return false;
		n = n * 10 + d;
	}
	*n_r = n;
	return true;
}

static bool has_ctl(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static void check_mail(const char *args, bool esmtp, uint64_t max_size)
{
	static struct mt_smtp_mail_args m, again;
	struct mt_smtp_param_error e;

	if (!mt_smtp_parse_mail(args, esmtp ? SMTP_OFFERED : 0, SMTP_MAIL_ADDR_FLAGS,
				max_size, &m, &e)) {
		check_reply(&e);
		if (e.code == 501 && strstr(e.text, "Malformed ENVID") != NULL) {
			const struct mt_esmtp_param *envid =
				mt_esmtp_param_find(&m.params, "ENVID");
			FUZZ_CHECK(envid != NULL && (envid->value == NULL ||
				   !ref_xtext(envid->value, MT_SMTP_ENVID_MAX)),
				   "a valid ENVID refused as malformed");
		}
		return;
	}
	FUZZ_CHECK(esmtp || m.params.count == 0, "parameters without EHLO");
	FUZZ_CHECK(m.size <= max_size, "SIZE over the limit");
	FUZZ_CHECK(!has_ctl(m.addr.addr), "control octet in the path");
	const struct mt_esmtp_param *size = mt_esmtp_param_find(&m.params, "SIZE");
	uint64_t n;
	FUZZ_CHECK(size == NULL ? m.size == 0 :
		   size->value != NULL &&
		   (ref_u64(size->value, strlen(size->value), &n) ? n == m.size :
		    m.size == UINT64_MAX), "SIZE differs from the reference");
	FUZZ_CHECK(m.envid == NULL || ref_xtext(m.envid, MT_SMTP_ENVID_MAX), "ENVID not xtext");
	for (const char *p = m.addr.addr; *p != '\0'; p++)
		FUZZ_CHECK((unsigned char)*p < 0x80 || m.smtputf8, "8-bit path without SMTPUTF8");
	char path[sizeof(m.addr.addr)];
	memcpy(path, m.addr.addr, sizeof(path));
	FUZZ_CHECK(mt_smtp_parse_mail(args, SMTP_OFFERED, SMTP_MAIL_ADDR_FLAGS,
				      UINT64_MAX, &again, &e),
		   "EHLO or a larger limit refused it: %d %s%s", e.code, e.text, e.detail);
	FUZZ_CHECK(strcmp(again.addr.addr, path) == 0, "path changed");
}

/* Reference NOTIFY: NEVER, or a comma list of SUCCESS, FAILURE, DELAY. */
static bool ref_notify(const char *v, unsigned int *notify_r)
{
	unsigned int notify = 0;
	if (strcasecmp(v, "NEVER") == 0) {
		*notify_r = MT_SMTP_NOTIFY_NEVER;
		return true;
	}
	const char *p = v;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (len == 7 && strncasecmp(p, "success", 7) == 0)
			notify |= MT_SMTP_NOTIFY_SUCCESS;
		else if (len == 7 && strncasecmp(p, "failure", 7) == 0)
			notify |= MT_SMTP_NOTIFY_FAILURE;
		else if (len == 5 && strncasecmp(p, "delay", 5) == 0)
			notify |= MT_SMTP_NOTIFY_DELAY;
		else
			return false;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	*notify_r = notify;
	return true;
}

static void check_rcpt(const char *args, bool esmtp, bool smtputf8)
{
	static struct mt_smtp_rcpt_args r, again;
	struct mt_smtp_param_error e;

	if (!mt_smtp_parse_rcpt(args, esmtp ? SMTP_OFFERED : 0, SMTP_RCPT_ADDR_FLAGS,
				smtputf8, &r, &e)) {
		check_reply(&e);
		return;
	}
	FUZZ_CHECK(esmtp || r.params.count == 0, "parameters without EHLO");
	FUZZ_CHECK(!has_ctl(r.addr.addr), "control octet in the path");
	const struct mt_esmtp_param *notify = mt_esmtp_param_find(&r.params, "NOTIFY");
	unsigned int want = 0;
	FUZZ_CHECK(notify == NULL ? r.notify == 0 :
		   notify->value != NULL && ref_notify(notify->value, &want) &&
		   want == r.notify, "NOTIFY %u, reference %u", r.notify, want);
	if (r.orcpt != NULL) {
		const char *semi = strchr(r.orcpt, ';');
		FUZZ_CHECK(semi != NULL && ref_xtext(semi + 1, MT_SMTP_ORCPT_MAX),
			   "ORCPT not type;xtext");
	}
	char path[sizeof(r.addr.addr)];
	memcpy(path, r.addr.addr, sizeof(path));
	FUZZ_CHECK(mt_smtp_parse_rcpt(args, esmtp ? SMTP_OFFERED : 0, SMTP_RCPT_ADDR_FLAGS,
				      true, &again, &e),
		   "SMTPUTF8 refused it: %d %s%s", e.code, e.text, e.detail);
	FUZZ_CHECK(strcmp(again.addr.addr, path) == 0, "path changed");
}

static void check_bdat(const char *args)
{
	uint64_t size = 0, want = 0;
	bool last = false;
	size_t digits = strspn(args, "0123456789");
	const char *rest = args + digits;
	bool want_ok = ref_u64(args, digits, &want) &&
		(*rest == '\0' || strcasecmp(rest, " last") == 0);
	bool ok = smtp_parse_bdat(args, &size, &last);
	FUZZ_CHECK(ok == want_ok, "BDAT '%s': %d, reference %d", args, ok, want_ok);
	if (ok)
		FUZZ_CHECK(size == want && last == (*rest != '\0'), "BDAT values differ");
}

static void check_helo(const char *args)
{
	size_t len = 0, want = strcspn(args, " ");
	bool want_ok = want >= 1 && want <= 255;
	for (size_t i = 0; i < want; i++)
		if (!((unsigned char)args[i] > ' ' && (unsigned char)args[i] < 0x7f))
			want_ok = false;
	bool ok = smtp_parse_helo(args, &len);
	FUZZ_CHECK(ok == want_ok, "HELO %d, reference %d", ok, want_ok);
	if (ok)
		FUZZ_CHECK(len == want, "HELO length");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t limits[4] = { 0, 1000, 10u * 1024 * 1024, UINT64_MAX };
	struct fuzz_input in = { data, size };
	uint8_t mode = fuzz_byte(&in);
	bool esmtp = mode & 1, smtputf8 = mode & 2;
	uint64_t max_size = limits[(mode >> 2) & 3];

	char *line;
	while ((line = fuzz_line(&in)) != NULL) {
		size_t verb_len = strcspn(line, " ");
		const char *args = line + verb_len + (line[verb_len] == ' ' ? 1 : 0);
		check_mail(args, esmtp, max_size);
		check_rcpt(args, esmtp, smtputf8);
		check_bdat(args);
		check_helo(args);
		free(line);
	}
	return 0;
}
