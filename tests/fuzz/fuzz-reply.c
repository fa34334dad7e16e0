/* fuzz-reply.c — libFuzzer target for lib-mail's readers of what a server
 * answers a client, the one copy the MTA's outbound connections (stores and
 * the Internet), the MMP's backend logins and mailtier-load all use:
 * SMTP/LMTP replies (lib-mail/smtp-reply.c, single and multi-line) and POP3
 * status and STAT lines (lib-mail/pop3-status.c).
 *
 * The input is cut into lines at LF (a CR before it dropped, as the line
 * reader does) and every line goes to all three parsers. Properties:
 *  - mt_smtp_reply_feed() agrees with a reference written from RFC 5321
 *    4.2 and 4.2.1: DONE on "NNN" / "NNN text", MORE on "NNN-text", BAD on
 *    anything else, on a code that changes within a reply, or past
 *    MT_SMTP_REPLY_MAX_LINES lines; code 200..559 once a line is in; the
 *    kept text is at most MT_SMTP_REPLY_TEXT_MAX octets, NUL-terminated at
 *    text_len, with no control octet but the "\n" between lines, and is
 *    the line's text (after "NNN" and its separator) while it fits;
 *  - mt_pop3_status() is +OK / -ERR exactly as RFC 1939 3 writes them, and
 *    a continuation "+" [SP ...] as RFC 5034 4;
 *  - mt_pop3_parse_stat() accepts exactly "+OK" SP 1*19DIGIT SP 1*19DIGIT
 *    [SP ...] and returns the numbers written.
 *
 * Input: lines separated by LF. Trust boundary: replies from the system
 * under test, untrusted (RFC 5321 4.2; RFC 1939 3, 5). */
#include "fuzz.h"

#include <string.h>

#include "pop3-status.h"
#include "smtp-reply.h"

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

static enum mt_smtp_reply_status smtp_reference(int *code, unsigned int *lines,
					   const char *l, size_t len)
{
	int c;

	if (len < 3 || l[0] < '2' || l[0] > '5' || l[1] < '0' || l[1] > '5' ||
	    !digit(l[2]) || (len > 3 && l[3] != ' ' && l[3] != '-'))
		return MT_SMTP_REPLY_BAD;
	c = (l[0] - '0') * 100 + (l[1] - '0') * 10 + l[2] - '0';
	if (*lines > 0 && c != *code)
		return MT_SMTP_REPLY_BAD;
	*code = c;
	if (++*lines > MT_SMTP_REPLY_MAX_LINES)
		return MT_SMTP_REPLY_BAD;
	return len > 3 && l[3] == '-' ? MT_SMTP_REPLY_MORE : MT_SMTP_REPLY_DONE;
}

/* "+OK" SP number SP number [SP anything]: the numbers, or false. */
static bool stat_reference(const char *l, size_t len, uint64_t *a,
			   uint64_t *b)
{
	size_t i = 4, start;
	uint64_t *out[2] = { a, b };

	if (len < 4 || memcmp(l, "+OK ", 4) != 0)
		return false;
	for (int k = 0; k < 2; k++) {
		*out[k] = 0;
		start = i;
		while (i < len && digit(l[i]))
			*out[k] = *out[k] * 10 + (uint64_t)(l[i++] - '0');
		if (i == start || i - start > 19)
			return false;
		if (k == 0 && (i >= len || l[i++] != ' '))
			return false;
	}
	return i == len || l[i] == ' ';
}

static void check_line(struct mt_smtp_reply *reply, int *code,
		       unsigned int *lines, const char *l, size_t len)
{
	const char *error = NULL;
	enum mt_smtp_reply_status want = smtp_reference(code, lines, l, len);
	enum mt_smtp_reply_status got = mt_smtp_reply_feed(reply, l, len, &error);

	FUZZ_CHECK(got == want, "SMTP status %d, reference %d for '%.*s'",
		   got, want, (int)len, l);
	FUZZ_CHECK(got != MT_SMTP_REPLY_BAD || (error != NULL && *error != '\0'),
		   "BAD without a reason");
	if (got != MT_SMTP_REPLY_BAD) {
		FUZZ_CHECK(reply->code == *code && reply->code >= 200 &&
			   reply->code <= 559 && reply->lines == *lines,
			   "code %d lines %u, reference %d %u", reply->code,
			   reply->lines, *code, *lines);
		FUZZ_CHECK(reply->text_len <= MT_SMTP_REPLY_TEXT_MAX &&
			   reply->text[reply->text_len] == '\0' &&
			   strlen(reply->text) == reply->text_len, "text not bounded");
		for (size_t i = 0; i < reply->text_len; i++)
			FUZZ_CHECK((unsigned char)reply->text[i] >= 0x20 ?
				   reply->text[i] != 0x7f : reply->text[i] == '\n',
				   "control octet 0x%02x kept", (unsigned char)reply->text[i]);
		if (*lines == 1 && len > 4 && len - 4 <= MT_SMTP_REPLY_TEXT_MAX) {
			for (size_t i = 4; i < len; i++)
				FUZZ_CHECK(reply->text[i - 4] == l[i] ||
					   reply->text[i - 4] == '?', "text differs");
			FUZZ_CHECK(reply->text_len == len - 4, "text length");
		}
	}
	if (got != MT_SMTP_REPLY_MORE) {
		mt_smtp_reply_reset(reply);
		*code = 0;
		*lines = 0;
	}

	enum mt_pop3_status pop = mt_pop3_status(l, len);
	enum mt_pop3_status pwant =
		len >= 3 && memcmp(l, "+OK", 3) == 0 &&
		(len == 3 || l[3] == ' ') ? MT_POP3_OK :
		len >= 4 && memcmp(l, "-ERR", 4) == 0 &&
		(len == 4 || l[4] == ' ') ? MT_POP3_ERR :
		len >= 1 && l[0] == '+' && (len == 1 || l[1] == ' ') ? MT_POP3_CONTINUE :
		MT_POP3_BAD;

	FUZZ_CHECK(pop == pwant, "POP status %d, reference %d", pop, pwant);

	/* STAT takes a C string: give it the line up to any NUL. */
	char *s = malloc(len + 1);
	uint64_t n1 = 7, n2 = 7, w1, w2;

	memcpy(s, l, len);
	s[len] = '\0';
	bool ok = mt_pop3_parse_stat(s, &n1, &n2);
	bool wok = stat_reference(s, strlen(s), &w1, &w2);

	FUZZ_CHECK(ok == wok, "STAT %d, reference %d for '%s'", ok, wok, s);
	if (ok)
		FUZZ_CHECK(n1 == w1 && n2 == w2, "STAT numbers differ");
	FUZZ_CHECK(!ok || pop == MT_POP3_OK || memchr(l, '\0', len) != NULL,
		   "STAT accepted a line that is not +OK");
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mt_smtp_reply reply;
	int code = 0;
	unsigned int lines = 0;
	size_t start = 0;

	mt_smtp_reply_reset(&reply);
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != '\n')
			continue;
		size_t len = i - start;

		if (i < size && len > 0 && data[i - 1] == '\r')
			len--;
		/* An exact-size copy, so any over-read is caught. */
		char *l = malloc(len > 0 ? len : 1);

		if (len > 0)
			memcpy(l, data + start, len);
		check_line(&reply, &code, &lines, l, len);
		free(l);
		start = i + 1;
	}
	return 0;
}
