/* pwhash.c — userPassword hashing and verification (see pwhash.h).
 *
 * Formats, as slapd reads them (slapd.conf(5) "password-hash", slapd's
 * contrib/slapd-modules/passwd/sha2/README):
 *   {CRYPT}<crypt(3) string>     checked by slapd with the system crypt(3)
 *   {SSHA512}<base64(SHA512(password || salt) || salt)>
 *   {SSHA}<base64(SHA1(password || salt) || salt)>
 * Base64 is RFC 4648 section 4 (with padding).
 * Trust boundary: password is client data; stored values come from the
 * directory and are parsed defensively (length checks before decoding). */
#include "pwhash.h"

#include "alloc.h"
#include "log.h"

#include <crypt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#define SSHA512_SALT_LEN 16
#define CRYPT_SALT_CHARS 16	/* the most $6$ uses */
/* Longest salt we accept from a stored salted-SHA value. */
#define SSHA_SALT_MAX 64

static const char crypt_alphabet[] =
	"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

bool mt_pw_scheme_parse(const char *name, enum mt_pw_scheme *scheme_r)
{
	if (strcasecmp(name, "crypt") == 0 ||
	    strcasecmp(name, "sha512-crypt") == 0)
		*scheme_r = MT_PW_SHA512_CRYPT;
	else if (strcasecmp(name, "ssha512") == 0)
		*scheme_r = MT_PW_SSHA512;
	else
		return false;
	return true;
}

const char *mt_pw_scheme_name(enum mt_pw_scheme scheme)
{
	return scheme == MT_PW_SSHA512 ? "ssha512" : "crypt";
}

static bool random_bytes(unsigned char *p, size_t n, const char **error_r)
{
	if (RAND_bytes(p, (int)n) != 1) {
		*error_r = "RAND_bytes() failed: no randomness for the salt";
		return false;
	}
	return true;
}

/* Append the RFC 4648 base64 of data to out. */
static void append_base64(struct mt_buf *out, const unsigned char *data,
			  size_t len)
{
	size_t b64len = 4 * ((len + 2) / 3);

	mt_buf_reserve(out, b64len);
	EVP_EncodeBlock((unsigned char *)out->data + out->len, data, (int)len);
	out->len += b64len;
	out->data[out->len] = '\0';
}

static bool hash_sha512_crypt(unsigned int rounds, const char *password,
			      struct mt_buf *out, const char **error_r)
{
	unsigned char rnd[CRYPT_SALT_CHARS];
	char setting[64];
	size_t pos;

	if (rounds == 0)
		rounds = MT_PW_CRYPT_ROUNDS_DEFAULT;
	if (rounds < MT_PW_CRYPT_ROUNDS_MIN || rounds > MT_PW_CRYPT_ROUNDS_MAX) {
		*error_r = "SHA-512 crypt rounds out of range (1000..999999999)";
		return false;
	}
	if (!random_bytes(rnd, sizeof(rnd), error_r))
		return false;
	pos = (size_t)snprintf(setting, sizeof(setting), "$6$rounds=%u$", rounds);
	/* 64 symbols: 6 random bits each, uniform. */
	for (size_t i = 0; i < sizeof(rnd); i++)
		setting[pos++] = crypt_alphabet[rnd[i] & 63];
	setting[pos] = '\0';

	/* struct crypt_data is ~32 KiB: heap, not stack. The hash itself takes
	 * milliseconds, so the allocation does not matter. */
	struct crypt_data *cd = mt_xcalloc(1, sizeof(*cd));
	const char *h = crypt_r(password, setting, cd);
	bool ok = h != NULL && h[0] == '$';
	if (ok) {
		mt_buf_append_str(out, "{CRYPT}");
		mt_buf_append_str(out, h);
	} else {
		*error_r = "crypt_r() does not support SHA-512 crypt ($6$)";
	}
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	return ok;
}

/* digest_r = md(password || salt). */
static bool salted_digest(const EVP_MD *md, const char *password,
			  const unsigned char *salt, size_t salt_len,
			  unsigned char *digest_r, const char **error_r)
{
	unsigned int dlen;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (ctx == NULL)
		mt_panic("EVP_MD_CTX_new: out of memory");
	bool ok = EVP_DigestInit_ex(ctx, md, NULL) == 1 &&
		EVP_DigestUpdate(ctx, password, strlen(password)) == 1 &&
		EVP_DigestUpdate(ctx, salt, salt_len) == 1 &&
		EVP_DigestFinal_ex(ctx, digest_r, &dlen) == 1;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		*error_r = "OpenSSL digest failed";
	return ok;
}

static bool hash_ssha512(const char *password, struct mt_buf *out,
			 const char **error_r)
{
	unsigned char raw[64 + SSHA512_SALT_LEN];
	unsigned char *salt = raw + 64;

	if (!random_bytes(salt, SSHA512_SALT_LEN, error_r) ||
	    !salted_digest(EVP_sha512(), password, salt, SSHA512_SALT_LEN,
			   raw, error_r))
		return false;
	mt_buf_append_str(out, "{SSHA512}");
	append_base64(out, raw, sizeof(raw));
	return true;
}

bool mt_pw_hash(enum mt_pw_scheme scheme, unsigned int rounds,
		const char *password, struct mt_buf *out, const char **error_r)
{
	switch (scheme) {
	case MT_PW_SHA512_CRYPT:
		return hash_sha512_crypt(rounds, password, out, error_r);
	case MT_PW_SSHA512:
		return hash_ssha512(password, out, error_r);
	}
	*error_r = "unknown password scheme";
	return false;
}

static bool verify_crypt(const char *password, const char *setting,
			 bool *match_r, const char **error_r)
{
	/* The stored value picks its own cost: accept only SHA-512/SHA-256
	 * crypt with a bounded rounds count, so a hostile or mistaken entry
	 * cannot make one login take minutes (bcrypt, scrypt, yescrypt and
	 * DES variants are refused). */
	if (strncmp(setting, "$6$", 3) != 0 && strncmp(setting, "$5$", 3) != 0) {
		*error_r = "stored {CRYPT} value is not SHA-512 or SHA-256 crypt";
		return false;
	}
	if (strncmp(setting + 3, "rounds=", 7) == 0) {
		char *end;
		unsigned long rounds = strtoul(setting + 10, &end, 10);
		if (*end != '$' || rounds > 10ul * MT_PW_CRYPT_ROUNDS_DEFAULT) {
			*error_r = "stored {CRYPT} value asks for too many rounds";
			return false;
		}
	}
	struct crypt_data *cd = mt_xcalloc(1, sizeof(*cd));
	const char *h = crypt_r(password, setting, cd);
	bool ok = h != NULL && h[0] != '*';

	if (ok) {
		size_t len = strlen(setting);
		*match_r = strlen(h) == len && CRYPTO_memcmp(h, setting, len) == 0;
	} else {
		*error_r = "stored {CRYPT} value is not a hash this libcrypt knows";
	}
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	return ok;
}

/* {SSHA512} / {SSHA}: base64(digest || salt), digest of password || salt. */
static bool verify_salted(const char *password, const char *b64,
			  const EVP_MD *md, bool *match_r, const char **error_r)
{
	unsigned char raw[EVP_MAX_MD_SIZE + SSHA_SALT_MAX + 3];
	unsigned char digest[EVP_MAX_MD_SIZE];
	size_t mdlen = (size_t)EVP_MD_get_size(md);
	size_t b64len = strlen(b64);

	if (b64len == 0 || b64len % 4 != 0 || b64len / 4 * 3 > sizeof(raw)) {
		*error_r = "stored salted-SHA value has a bad length";
		return false;
	}
	/* RFC 4648 section 4: the base64 alphabet, then at most two '=' at
	 * the very end (EVP_DecodeBlock also takes '=' elsewhere, and blanks). */
	size_t pad = 0;
	while (pad < 2 && b64[b64len - 1 - pad] == '=')
		pad++;
	if (strspn(b64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		   "0123456789+/") != b64len - pad) {
		*error_r = "stored salted-SHA value is not base64";
		return false;
	}
	int n = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)b64len);
	if (n < 0 || (size_t)n < pad) {
		*error_r = "stored salted-SHA value is not base64";
		return false;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	size_t rawlen = (size_t)n - pad;
	if (rawlen <= mdlen) {
		*error_r = "stored salted-SHA value has no salt";
		return false;
	}

	if (!salted_digest(md, password, raw + mdlen, rawlen - mdlen, digest,
			   error_r))
		return false;
	*match_r = CRYPTO_memcmp(digest, raw, mdlen) == 0;
	return true;
}

bool mt_pw_verify(const char *password, const char *stored, bool *match_r,
		  const char **error_r)
{
	*match_r = false;
	if (strncasecmp(stored, "{CRYPT}", 7) == 0)
		return verify_crypt(password, stored + 7, match_r, error_r);
	if (strncasecmp(stored, "{SSHA512}", 9) == 0)
		return verify_salted(password, stored + 9, EVP_sha512(),
				     match_r, error_r);
	if (strncasecmp(stored, "{SSHA}", 6) == 0)
		return verify_salted(password, stored + 6, EVP_sha1(),
				     match_r, error_r);
	*error_r = "unsupported userPassword scheme";
	return false;
}
