/* fuzz-lmtp-cmd.c — libFuzzer target for mailtier-popstore's LMTP command
 * line parsers (popstore/lmtp-parse.c): the verb and its argument, the
 * LHLO name, MAIL FROM with SIZE, BODY, SMTPUTF8 and XQUEUEID, RCPT TO.
 *
 * Properties, beyond "no crash, no over-read":
 *  - the verb is found exactly when the text before the first space
 *    equals a command name regardless of case (a reference table written
 *    here); the argument is the line's tail after that one space;
 *  - LHLO names and XQUEUEID values are accepted exactly as reference
 *    checkers say (1..255 of letters, digits and . - _ : [ ]; 1..31 of
 *    letters, digits and . - _), so what reaches a Received: line or the
 *    32-octet queue id buffer is safe and fits;
 *  - a refusal is 501, 555, 552 or 553 (552/553 exactly when it is a
 *    rejection, not a client error) with an enhanced status of the same class, and
 *    the reply line (text + detail) holds no control octet, so a client
 *    cannot inject reply lines; the detail of a 555 is the parameter's
 *    keyword (letters, digits, '-');
 *  - an accepted MAIL has only SIZE, BODY (7BIT or 8BITMIME), SMTPUTF8
 *    (no value) and XQUEUEID parameters, SIZE equal to a reference saturating decimal parser and
 *    within the limit, the queue id equal to the XQUEUEID value; a larger
 *    limit never refuses it nor changes the sender; the sender has no
 *    control octet, an 8-bit one only with SMTPUTF8, is not longer than
 *    the argument, and parses back to itself as "FROM:<sender>";
 *  - an accepted RCPT has no parameters and a local@domain address with no
 *    control octet, an 8-bit one only in an SMTPUTF8 transaction (mode bit
 *    2); MAIL accepts the same path with the same normal form.
 *
 * Input: [mode] then lines split at LF (a CR before it is dropped, as
 * lib/lineio does); each line's argument, as the dispatcher cuts it, goes
 * to every parser. mode bits 0-1: the SIZE limit 0, 1000, 10 MiB,
 * 2^64-1; bit 2: RCPT in an SMTPUTF8 transaction.
 * Trust boundary: LMTP client command lines (RFC 2033 4.1, RFC 5321
 * 4.1.1-2, RFC 1870, RFC 6152, RFC 6531, RFC 3463). */
#include "fuzz.h"

#include <string.h>

#include "popstore/lmtp-parse.h"

/* The commands the table must hold, in enum order (RFC 2033 4; HELO and
 * EHLO only to be refused), written out here. */
static const char *const ref_names[] = {
	"LHLO", "MAIL", "RCPT", "DATA", "RSET", "NOOP", "QUIT", "HELO", "EHLO",
};
#define REF_COUNT (sizeof(ref_names) / sizeof(ref_names[0]))
_Static_assert(REF_COUNT == LMTP_VERB_COUNT, "the LMTP table changed");

static bool ref_alnum(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* Reference: 1..max octets, each alphanumeric or in extra. */
static bool ref_token(const char *s, size_t max, const char *extra)
{
	size_t len = strlen(s);
	if (len < 1 || len > max)
		return false;
	for (size_t i = 0; i < len; i++) {
		bool in_extra = false;
		for (const char *e = extra; *e != '\0'; e++)
			in_extra = in_extra || s[i] == *e;
		if (!ref_alnum(s[i]) && !in_extra)
			return false;
	}
	return true;
}

/* Reference SIZE: 1 or more digits; beyond 2^64-1 it is 2^64-1. */
static bool ref_size(const char *v, uint64_t *n_r)
{
	uint64_t n = 0;
	bool over = false;
	if (v == NULL || v[0] == '\0')
		return false;
	for (const char *p = v; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return false;
		unsigned int d = (unsigned int)(*p - '0');
		if (n > UINT64_MAX / 10 || n * 10 > UINT64_MAX - d)
			over = true;
		else
			n = n * 10 + d;
	}
	*n_r = over ? UINT64_MAX : n;
	return true;
}

static bool clean(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static void check_command(const char *line)
{
	enum lmtp_verb verb = LMTP_VERB_COUNT;
	const char *arg = NULL, *want_arg;
	bool ok = lmtp_parse_command(line, &verb, &arg);
	size_t want = fuzz_ref_command(line, ref_names, REF_COUNT, &want_arg);

	FUZZ_CHECK(ok == (want < REF_COUNT), "verb found %d, reference %zu", ok, want);
	if (ok)
		FUZZ_CHECK((size_t)verb == want && strcmp(lmtp_verb_name(verb), ref_names[want]) == 0,
			   "verb %d, reference %zu", verb, want);
	FUZZ_CHECK(want_arg != NULL ? arg == want_arg : arg[0] == '\0', "argument misplaced");
}

/* No control octet; 8-bit ones only when utf8 allows them. */
static bool clean_path(const char *s, bool utf8)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f ||
		    ((unsigned char)*s >= 0x80 && !utf8))
			return false;
	return true;
}

static void check_refusal(const struct mt_smtp_param_error *e, bool mail)
{
	FUZZ_CHECK(e->code == 501 || e->code == 555 || e->code == 553 ||
		   (mail && e->code == 552), "code %d", e->code);
	FUZZ_CHECK(e->rejected == (e->code == 552 || e->code == 553),
		   "rejected %d for %d", e->rejected, e->code);
	FUZZ_CHECK(e->text[0] == '5' && e->text[1] == '.' && e->text[0] == '0' + e->code / 100,
		   "status '%s' for %d", e->text, e->code);
	FUZZ_CHECK(clean(e->text) && clean(e->detail), "control or 8-bit octet in the reply");
	if (e->code == 555) {
		FUZZ_CHECK(e->detail[0] != '\0', "555 without the keyword");
		for (const char *p = e->detail; *p != '\0'; p++)
			FUZZ_CHECK(ref_alnum(*p) || *p == '-', "keyword octet 0x%02x",
				   (unsigned char)*p);
	}
}

static void check_mail(const char *arg, uint64_t max_size)
{
	static struct mt_smtp_mail_args m, again;
	struct mt_smtp_param_error e;

	if (!lmtp_parse_mail(arg, max_size, &m, &e)) {
		check_refusal(&e, true);
		return;
	}
	FUZZ_CHECK(strncasecmp(arg, "FROM:", 5) == 0, "MAIL without FROM:");
	FUZZ_CHECK(m.size <= max_size, "SIZE over the limit");
	bool have_size = false;
	const char *xqueueid = NULL;
	for (size_t i = 0; i < m.params.count; i++) {
		const char *key = m.params.param[i].key, *v = m.params.param[i].value;
		uint64_t n = 0;
		if (strcmp(key, "SIZE") == 0) {
			FUZZ_CHECK(ref_size(v, &n) && n == m.size, "SIZE %llu differs",
				   (unsigned long long)m.size);
			have_size = true;
		} else if (strcmp(key, "BODY") == 0) {
			FUZZ_CHECK(v != NULL && (strcasecmp(v, "7BIT") == 0 ||
						 strcasecmp(v, "8BITMIME") == 0), "BODY");
		} else if (strcmp(key, "SMTPUTF8") == 0) {
			FUZZ_CHECK(v == NULL && m.smtputf8, "SMTPUTF8");
		} else {
			FUZZ_CHECK(strcmp(key, "XQUEUEID") == 0, "parameter %s accepted", key);
			FUZZ_CHECK(v != NULL && ref_token(v, 31, ".-_"), "bad XQUEUEID accepted");
			xqueueid = v;
		}
	}
	FUZZ_CHECK(have_size || m.size == 0, "SIZE without the parameter");
	FUZZ_CHECK(m.queue_id == xqueueid, "queue id is not the XQUEUEID value");
	FUZZ_CHECK(m.queue_id == NULL || strlen(m.queue_id) <= MT_SMTP_QUEUE_ID_MAX,
		   "queue id does not fit");
	FUZZ_CHECK(clean_path(m.addr.addr, m.smtputf8),
		   "control or 8-bit octet in the sender");
	FUZZ_CHECK(m.addr.is_null == (m.addr.addr[0] == '\0'), "null sender");
	FUZZ_CHECK(strlen(m.addr.addr) + 5 <= strlen(arg), "sender longer than the argument");

	char sender[sizeof(m.addr.addr)];
	memcpy(sender, m.addr.addr, sizeof(sender));
	FUZZ_CHECK(lmtp_parse_mail(arg, UINT64_MAX, &again, &e),
		   "a larger limit refused it: %d %s%s", e.code, e.text, e.detail);
	FUZZ_CHECK(strcmp(again.addr.addr, sender) == 0, "sender changed");
	FUZZ_CHECK((again.queue_id == NULL) == (m.queue_id == NULL) &&
		   (m.queue_id == NULL || strcmp(again.queue_id, m.queue_id) == 0),
		   "queue id changed");

	/* The normal form parses back to itself. */
	char path[sizeof(sender) + 18];
	snprintf(path, sizeof(path), "FROM:<%s>%s", sender, m.smtputf8 ? " SMTPUTF8" : "");
	FUZZ_CHECK(lmtp_parse_mail(path, 0, &again, &e), "normal form '%s' refused: %s%s",
		   path, e.text, e.detail);
	FUZZ_CHECK(strcmp(again.addr.addr, sender) == 0, "normal form changed: '%s' '%s'",
		   sender, again.addr.addr);
}

static void check_rcpt(const char *arg, bool smtputf8)
{
	static struct mt_smtp_rcpt_args r;
	static struct mt_smtp_mail_args m;
	struct mt_smtp_param_error e;

	if (!lmtp_parse_rcpt(arg, smtputf8, &r, &e)) {
		check_refusal(&e, false);
		return;
	}
	FUZZ_CHECK(strncasecmp(arg, "TO:", 3) == 0, "RCPT without TO:");
	FUZZ_CHECK(r.params.count == 0, "RCPT parameters accepted");
	FUZZ_CHECK(clean_path(r.addr.addr, smtputf8),
		   "control or 8-bit octet in the recipient");
	FUZZ_CHECK(!r.addr.is_null && r.addr.local[0] != '\0' && r.addr.domain[0] != '\0' &&
		   strchr(r.addr.addr, '@') != NULL, "recipient '%s' is not local@domain",
		   r.addr.addr);

	/* MAIL takes the same path the same way. */
	char *mail = malloc(strlen(arg) + 12);
	FUZZ_CHECK(mail != NULL, "malloc");
	memcpy(mail, "FROM:", 5);
	memcpy(mail + 5, arg + 3, strlen(arg + 3) + 1);
	if (smtputf8)
		strcat(mail, " SMTPUTF8");
	FUZZ_CHECK(lmtp_parse_mail(mail, 0, &m, &e), "MAIL refused a RCPT path: %s%s",
		   e.text, e.detail);
	FUZZ_CHECK(strcmp(m.addr.addr, r.addr.addr) == 0, "MAIL and RCPT differ");
	free(mail);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t limits[4] = { 0, 1000, 10u * 1024 * 1024, UINT64_MAX };
	struct fuzz_input in = { data, size };
	unsigned int mode = fuzz_byte(&in);
	uint64_t max_size = limits[mode & 3];
	bool smtputf8 = (mode & 4) != 0;

	char *line;
	while ((line = fuzz_line(&in)) != NULL) {
		enum lmtp_verb verb;
		const char *arg;
		check_command(line);
		lmtp_parse_command(line, &verb, &arg);
		FUZZ_CHECK(lmtp_parse_lhlo(arg) == ref_token(arg, 255, ".-_:[]"), "LHLO '%s'",
			   arg);
		FUZZ_CHECK(mt_smtp_queue_id_ok(arg) == ref_token(arg, 31, ".-_"), "XQUEUEID '%s'",
			   arg);
		check_mail(arg, max_size);
		check_rcpt(arg, smtputf8);
		free(line);
	}
	return 0;
}
