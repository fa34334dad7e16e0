/* pwhash.h — userPassword hashing and verification in the formats slapd
 * understands (RFC 3112 "{SCHEME}value" storage).
 *
 * Two schemes are written:
 *   {CRYPT}$6$rounds=N$salt$hash  SHA-512 crypt (libcrypt), the default for
 *                                 real accounts; N = MT_PW_CRYPT_ROUNDS_DEFAULT.
 *   {SSHA512}base64(sha512(pw+salt)+salt)  one salted SHA-512, fast; only for
 *                                 bulk load-test accounts (slapd needs
 *                                 "moduleload pw-sha2").
 * Verification also accepts {SSHA} (salted SHA-1, built into slapd) so that
 * entries made by other tools can be checked.
 * Trust boundary: the password is client data (from a POP/SMTP AUTH login);
 * the stored value comes from the directory. Comparison is constant-time. */
#ifndef MT_PWHASH_H
#define MT_PWHASH_H

#include <stdbool.h>

#include "buf.h"

enum mt_pw_scheme {
	MT_PW_SHA512_CRYPT,	/* "crypt": {CRYPT}$6$rounds=N$... */
	MT_PW_SSHA512,		/* "ssha512": {SSHA512}... */
};

/* SHA-512 crypt rounds for real accounts: about 23 ms per hash on the 2-core
 * development VM (glibc's default is 5000). See dirsvc/README.md. */
#define MT_PW_CRYPT_ROUNDS_DEFAULT 50000u
/* libcrypt's limits for the $6$ rounds= parameter. */
#define MT_PW_CRYPT_ROUNDS_MIN 1000u
#define MT_PW_CRYPT_ROUNDS_MAX 999999999u

/* "crypt" or "ssha512" (case-insensitive) to a scheme; false if unknown. */
bool mt_pw_scheme_parse(const char *name, enum mt_pw_scheme *scheme_r);
const char *mt_pw_scheme_name(enum mt_pw_scheme scheme);

/* Append the userPassword value for password to out, with a fresh random
 * salt. rounds is used by MT_PW_SHA512_CRYPT only (0 = the default). */
bool mt_pw_hash(enum mt_pw_scheme scheme, unsigned int rounds,
		const char *password, struct mt_buf *out, const char **error_r);

/* Check password against a stored userPassword value ({CRYPT}, {SSHA512} or
 * {SSHA}, scheme name case-insensitive). Returns false with *error_r on an
 * unknown scheme or a malformed value; otherwise true with *match_r. */
bool mt_pw_verify(const char *password, const char *stored, bool *match_r,
		  const char **error_r);

#endif
