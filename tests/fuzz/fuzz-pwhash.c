/* fuzz-pwhash.c — libFuzzer target for dirsvc/pwhash.c: mt_pw_verify() on
 * hostile stored userPassword values ({CRYPT}, {SSHA512}, {SSHA}, unknown
 * schemes, bad base64, wrong lengths, odd padding), and hash/verify round
 * trips.
 *
 * Properties, beyond "no crash, no over-read, no leak":
 *  - verify either fails with a reason (and match false) or succeeds;
 *  - on {SSHA512} and {SSHA} values it agrees with a strict reference
 *    (RFC 4648 base64, padding only at the end, a salt present): malformed
 *    values are refused, well-formed ones match exactly when they should;
 *  - a value built here from the input's password and salt, in each salted
 *    scheme, verifies as a match; with one digest bit flipped, or another
 *    password, it does not;
 *  - mt_pw_hash() output verifies for its password and not for another.
 *
 * {CRYPT} values go to libxcrypt, whose cost parameters a stored value
 * chooses; values that would run longer than a few milliseconds ($6$ with
 * rounds > 5000, bcrypt, yescrypt, scrypt, extended DES...) are skipped
 * here, see the note in tests/fuzz/README.md.
 *
 * Input: [mode] password NUL stored-value (a missing NUL: all password).
 * Trust boundary: the password is client data; the stored value comes from
 * the directory (RFC 3112; RFC 4648 4 base64). */
#include "fuzz.h"

#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "buf.h"
#include "pwhash.h"

/* Would crypt_r() on this setting finish quickly? */
static bool crypt_cheap(const char *setting)
{
	if (setting[0] != '$')
		return setting[0] != '_';	/* DES; '_' = extended DES */
	if (strncmp(setting, "$1$", 3) != 0 && strncmp(setting, "$5$", 3) != 0 &&
	    strncmp(setting, "$6$", 3) != 0)
		return false;
	if (strncmp(setting + 3, "rounds=", 7) == 0) {
		const char *p = setting + 10;
		unsigned long rounds = 0;

		while (*p >= '0' && *p <= '9' && rounds <= 5000)
			rounds = rounds * 10 + (unsigned long)(*p++ - '0');
		return rounds <= 5000;
	}
	return true;
}

/* Reference check of a salted value, decoding base64 strictly (RFC 4648
 * 4: alphabet, then at most two '=' at the end): -1 when the value is
 * malformed (bad base64, too long, no salt), else whether it matches. */
static int salted_reference(const char *password, const char *b64,
			    const EVP_MD *md)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char raw[512], digest[EVP_MAX_MD_SIZE];
	size_t len = strlen(b64), pad = 0, rawlen = 0, mdlen;
	uint32_t acc = 0;
	unsigned int dlen;

	if (len == 0 || len % 4 != 0 || len / 4 * 3 > sizeof(raw))
		return -1;
	while (pad < 2 && b64[len - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < len; i++) {
		const char *c = i < len - pad ? strchr(abc, b64[i]) : abc;

		if (c == NULL || *c == '\0')
			return -1;
		acc = acc << 6 | (uint32_t)(c - abc);
		if (i % 4 == 3) {
			raw[rawlen++] = (unsigned char)(acc >> 16);
			raw[rawlen++] = (unsigned char)(acc >> 8);
			raw[rawlen++] = (unsigned char)acc;
			acc = 0;
		}
	}
	rawlen -= pad;
	mdlen = (size_t)EVP_MD_get_size(md);
	/* pwhash.c's own bound: digest + 64 octets of salt + 3. */
	if (rawlen <= mdlen || len / 4 * 3 > EVP_MAX_MD_SIZE + 64 + 3)
		return -1;

	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	FUZZ_CHECK(ctx != NULL && EVP_DigestInit_ex(ctx, md, NULL) == 1 &&
		   EVP_DigestUpdate(ctx, password, strlen(password)) == 1 &&
		   EVP_DigestUpdate(ctx, raw + mdlen, rawlen - mdlen) == 1 &&
		   EVP_DigestFinal_ex(ctx, digest, &dlen) == 1, "digest failed");
	EVP_MD_CTX_free(ctx);
	return memcmp(digest, raw, mdlen) == 0;
}

static void verify(const char *password, const char *stored, bool *match_r,
		   bool *ok_r)
{
	const char *error = NULL;
	int want = -2;

	*match_r = true;
	*ok_r = mt_pw_verify(password, stored, match_r, &error);
	FUZZ_CHECK(*ok_r || (error != NULL && *error != '\0' && !*match_r),
		   "failure without a reason, or with a match");
	if (strncasecmp(stored, "{SSHA512}", 9) == 0)
		want = salted_reference(password, stored + 9, EVP_sha512());
	else if (strncasecmp(stored, "{SSHA}", 6) == 0)
		want = salted_reference(password, stored + 6, EVP_sha1());
	if (want != -2)
		FUZZ_CHECK(want == -1 ? !*ok_r : *ok_r && *match_r == want,
			   "verify ok=%d match=%d, strict reference %d for %s",
			   *ok_r, *match_r, want, stored);
}

static void b64(struct mt_buf *out, const unsigned char *p, size_t len)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		mt_buf_append_char(out, abc[v >> 18 & 63]);
		mt_buf_append_char(out, abc[v >> 12 & 63]);
		mt_buf_append_char(out, i + 1 < len ? abc[v >> 6 & 63] : '=');
		mt_buf_append_char(out, i + 2 < len ? abc[v & 63] : '=');
	}
}

/* Build {SCHEME}base64(md(password || salt) || salt) and check it. */
static void salted_roundtrip(const char *scheme, const EVP_MD *md,
			     const char *password, const uint8_t *salt,
			     size_t salt_len)
{
	unsigned char raw[EVP_MAX_MD_SIZE + 64];
	unsigned int dlen;
	struct mt_buf stored = MT_BUF_INIT;
	bool match, ok;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	FUZZ_CHECK(ctx != NULL && EVP_DigestInit_ex(ctx, md, NULL) == 1 &&
		   EVP_DigestUpdate(ctx, password, strlen(password)) == 1 &&
		   EVP_DigestUpdate(ctx, salt, salt_len) == 1 &&
		   EVP_DigestFinal_ex(ctx, raw, &dlen) == 1, "digest failed");
	EVP_MD_CTX_free(ctx);
	memcpy(raw + dlen, salt, salt_len);

	mt_buf_append_str(&stored, scheme);
	b64(&stored, raw, dlen + salt_len);
	verify(password, mt_buf_cstr(&stored), &match, &ok);
	FUZZ_CHECK(ok && match, "%s with a %zu-octet salt does not verify",
		   scheme, salt_len);

	raw[salt[0] % dlen] ^= 1;
	mt_buf_reset(&stored);
	mt_buf_append_str(&stored, scheme);
	b64(&stored, raw, dlen + salt_len);
	verify(password, mt_buf_cstr(&stored), &match, &ok);
	FUZZ_CHECK(ok && !match, "%s with a flipped bit still matches",
		   scheme);
	mt_buf_free(&stored);
}

static void hash_roundtrip(enum mt_pw_scheme scheme, const char *password)
{
	struct mt_buf stored = MT_BUF_INIT;
	const char *error = NULL;
	bool match, ok;

	FUZZ_CHECK(mt_pw_hash(scheme, MT_PW_CRYPT_ROUNDS_MIN, password,
			      &stored, &error), "mt_pw_hash: %s", error);
	verify(password, mt_buf_cstr(&stored), &match, &ok);
	FUZZ_CHECK(ok && match, "fresh %s hash does not verify",
		   mt_pw_scheme_name(scheme));
	/* Another password: append one octet (still a C string). */
	size_t len = strlen(password);
	char *other = malloc(len + 2);

	memcpy(other, password, len);
	other[len] = 'x';
	other[len + 1] = '\0';
	verify(other, mt_buf_cstr(&stored), &match, &ok);
	FUZZ_CHECK(ok && !match, "fresh %s hash matches another password",
		   mt_pw_scheme_name(scheme));
	free(other);
	mt_buf_free(&stored);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };
	uint8_t mode = fuzz_byte(&in);
	const uint8_t *nul = memchr(in.data, '\0', in.len);
	size_t plen = nul != NULL ? (size_t)(nul - in.data) : in.len;
	size_t slen = nul != NULL ? in.len - plen - 1 : 0;
	char *password = malloc(plen + 1), *stored = malloc(slen + 1);
	bool match, ok;

	if (plen > 0)
		memcpy(password, in.data, plen);
	password[plen] = '\0';
	if (slen > 0)
		memcpy(stored, nul + 1, slen);
	stored[slen] = '\0';

	/* The hostile stored value. */
	if (strncasecmp(stored, "{CRYPT}", 7) != 0 || crypt_cheap(stored + 7))
		verify(password, stored, &match, &ok);

	/* Values built here must verify; the salt comes from the value. */
	if (slen > 0 && (mode & 1) != 0) {
		size_t salt_len = slen < 64 ? slen : 64;

		salted_roundtrip("{SSHA512}", EVP_sha512(), password,
				 (const uint8_t *)nul + 1, salt_len);
		salted_roundtrip("{ssha}", EVP_sha1(), password,
				 (const uint8_t *)nul + 1, salt_len);
	}
	if ((mode & 6) == 2)
		hash_roundtrip(MT_PW_SSHA512, password);
	if ((mode & 0xfe) == 0x80)	/* 1000 rounds: keep it rare */
		hash_roundtrip(MT_PW_SHA512_CRYPT, password);
	free(password);
	free(stored);
	return 0;
}
