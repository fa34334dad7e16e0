/* fuzz-imap-mailbox.c — libFuzzer target for lib-mail/imap-mailbox.c:
 * the check and normal form of a client's mailbox name, LIST's reference
 * joined to its pattern, and the '*' / '%' matcher.
 *
 * Properties, beyond "no crash, no over-read, no leak":
 *  - an accepted name is within the limits, has no control octet, no
 *    wildcard and no empty level, is well-formed UTF-8, its normal form is
 *    accepted again as itself, and it differs from the name only in the
 *    case of a first level INBOX; a refused one leaves the output as it was;
 *  - the matcher equals a reference backtracking matcher (run only with
 *    at most 3 wildcards and 64-octet names, where its cost is bounded);
 *  - a joined pattern is the pattern alone or reference + pattern.
 *
 * Input: three NUL-separated fields: a name (also the name matched), a
 * pattern, a reference; the first octet's low bits pick the depth limit.
 * Trust boundary: IMAP client octets (RFC 9051 5.1, 6.3.9). */
#include "fuzz.h"

#include "buf.h"
#include "imap-mailbox.h"
#include "utf8.h"

/* Reference: backtracking, from the rule's wording. */
static bool ref_match(const char *p, size_t pl, const char *n, size_t nl)
{
	if (pl == 0)
		return nl == 0;
	if (p[0] == '*' || p[0] == '%') {
		for (size_t k = 0; k <= nl; k++) {
			if (k > 0 && p[0] == '%' && n[k - 1] == '/')
				break;
			if (ref_match(p + 1, pl - 1, n + k, nl - k))
				return true;
		}
		return false;
	}
	return nl > 0 && p[0] == n[0] && ref_match(p + 1, pl - 1, n + 1, nl - 1);
}

static size_t field(struct fuzz_input *in, const char **f)
{
	const uint8_t *nul = memchr(in->data, 0, in->len);
	size_t len = nul != NULL ? (size_t)(nul - in->data) : in->len;
	*f = (const char *)in->data;
	in->data += len + (nul != NULL);
	in->len -= len + (nul != NULL);
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };
	const struct mt_imap_name_limits limits = {
		.length_max = 200, .depth_max = 1 + (size > 0 ? data[0] & 7u : 0),
	};
	const char *name, *pattern, *ref;
	size_t name_len = field(&in, &name);
	size_t pattern_len = field(&in, &pattern);
	size_t ref_len = field(&in, &ref);

	struct mt_buf out = MT_BUF_INIT, again = MT_BUF_INIT;
	mt_buf_append_str(&out, "p");
	const char *error = NULL;
	if (mt_imap_name_check(&out, name, name_len, &limits, &error)) {
		const char *norm = out.data + 1;
		const size_t len = out.len - 1;
		FUZZ_CHECK(len == name_len && len > 0 && len <= limits.length_max,
			   "length");
		unsigned int levels = 1;
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)norm[i];
			FUZZ_CHECK(c >= 0x20 && c != 0x7f && c != '%' && c != '*',
				   "octet %02x", c);
			if (c == '/') {
				FUZZ_CHECK(i > 0 && i + 1 < len && norm[i + 1] != '/',
					   "empty level");
				levels++;
			}
			if (c != (unsigned char)name[i])
				FUZZ_CHECK(i < 5 && strncasecmp(norm, "INBOX", 5) == 0 &&
					   (len == 5 || norm[5] == '/'), "changed");
		}
		FUZZ_CHECK(levels <= limits.depth_max, "depth");
		FUZZ_CHECK(mt_utf8_valid((const unsigned char *)norm, len), "UTF-8");
		FUZZ_CHECK(mt_imap_name_check(&again, norm, len, &limits, &error) &&
			   again.len == len && memcmp(again.data, norm, len) == 0,
			   "normal form not stable");
	} else {
		FUZZ_CHECK(error != NULL && out.len == 1, "refusal changed output");
	}

	unsigned int wildcards = 0;
	for (size_t i = 0; i < pattern_len; i++)
		wildcards += pattern[i] == '*' || pattern[i] == '%';
	if (wildcards <= 3 && name_len <= 64)
		FUZZ_CHECK(mt_imap_pattern_match(pattern, pattern_len, name, name_len) ==
			   ref_match(pattern, pattern_len, name, name_len),
			   "matcher differs from the reference");
	else
		(void)mt_imap_pattern_match(pattern, pattern_len, name, name_len);

	mt_buf_reset(&out);
	if (mt_imap_pattern_join(&out, ref, ref_len, pattern, pattern_len)) {
		bool alone = pattern_len > 0 && pattern[0] == '/';
		size_t want = alone ? pattern_len : ref_len + pattern_len;
		FUZZ_CHECK(out.len == want, "joined length");
		FUZZ_CHECK(out.len <= MT_IMAP_PATTERN_MAX, "joined too long");
	} else {
		FUZZ_CHECK(ref_len + pattern_len > MT_IMAP_PATTERN_MAX, "join refused");
	}
	mt_buf_free(&out);
	mt_buf_free(&again);
	return 0;
}
