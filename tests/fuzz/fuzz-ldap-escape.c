/* fuzz-ldap-escape.c — libFuzzer target for dirsvc/ldap-escape.c: the check
 * and the RFC 4515 escaping that every client-supplied value (an address
 * from RCPT TO, a user name from POP3 USER/AUTH) passes before it goes into
 * an LDAP search filter.
 *
 * Properties, beyond "no crash, no over-read":
 *  - the escaped value holds no unescaped special octet: no '*', '(', ')',
 *    NUL or control octet, and every '\' starts a "\xx" hex escape — so
 *    "(mail=" + escaped + ")" is always exactly one assertion;
 *  - un-escaping it gives the value back (nothing lost or added);
 *  - mt_utf8_valid() agrees with an independent RFC 3629 decoder;
 *  - mt_ldap_value_check() accepts exactly the non-empty values of at most
 *    max_len octets with no C0/DEL octet that are well-formed UTF-8.
 *
 * Input: [max_len selector] value... (the value may hold NULs: the C-string
 * API sees the part before the first one; the UTF-8 check sees it all).
 * Trust boundary: untrusted client data (RFC 4515 3, RFC 3629 4). */
#include "fuzz.h"

#include <string.h>

#include "buf.h"
#include "ldap-escape.h"
#include "utf8.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void check_escape(const char *value)
{
	struct mt_buf out = MT_BUF_INIT, back = MT_BUF_INIT;
	const char *e;

	mt_buf_append_str(&out, "(mail=");
	mt_ldap_filter_escape(&out, value);
	mt_buf_append_char(&out, ')');
	e = mt_buf_cstr(&out);
	FUZZ_CHECK(strlen(e) == out.len, "NUL inside the escaped filter");
	for (size_t i = 6; i < out.len - 1; i++) {
		unsigned char c = (unsigned char)e[i];

		FUZZ_CHECK(c != '*' && c != '(' && c != ')' && c >= 0x20 &&
			   c != 0x7f, "unescaped 0x%02x at %zu in %s", c, i, e);
		if (c == '\\') {
			int hi = hexval(e[i + 1]), lo = hexval(e[i + 2]);

			FUZZ_CHECK(i + 2 < out.len - 1 && hi >= 0 && lo >= 0,
				   "'\\' at %zu is not a hex escape in %s", i,
				   e);
			mt_buf_append_char(&back, (char)(hi << 4 | lo));
			i += 2;
		} else {
			mt_buf_append_char(&back, (char)c);
		}
	}
	FUZZ_CHECK(back.len == strlen(value) &&
		   memcmp(mt_buf_cstr(&back), value, back.len) == 0,
		   "un-escaping does not give the value back");
	mt_buf_free(&out);
	mt_buf_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t max_lens[] = { MT_LDAP_VALUE_MAX, 1, 4, 64 };
	struct fuzz_input in = { data, size };
	size_t max_len = max_lens[fuzz_byte(&in) & 3];
	char *value = malloc(in.len + 1);

	if (in.len > 0)
		memcpy(value, in.data, in.len);
	value[in.len] = '\0';

	/* The UTF-8 validator over all octets, NULs included. */
	FUZZ_CHECK(mt_utf8_valid(in.data, in.len) ==
		   fuzz_utf8_valid(in.data, in.len),
		   "mt_utf8_valid disagrees with the reference");

	size_t len = strlen(value);
	bool ctl = false;

	for (size_t i = 0; i < len; i++)
		if ((unsigned char)value[i] < 0x20 || value[i] == 0x7f)
			ctl = true;
	bool want = len > 0 && len <= max_len && !ctl &&
		fuzz_utf8_valid((const uint8_t *)value, len);
	const char *error = NULL;
	bool ok = mt_ldap_value_check(value, max_len, &error);

	FUZZ_CHECK(ok == want, "value check %d, reference %d", ok, want);
	FUZZ_CHECK(ok || (error != NULL && *error != '\0'),
		   "refusal without a reason");

	check_escape(value);
	free(value);
	return 0;
}
