/* sasl.h — the one SASL decoder every tier uses: strict base64 both ways
 * and the PLAIN (RFC 4616) and LOGIN mechanisms' client responses, for SMTP
 * AUTH (mta), POP3 AUTH (popstore, mmp) and the MMP's own PLAIN login to
 * the store shards.
 *
 * Trust boundary: bytes from the network. A response is a client's base64
 * line of any length and content; nothing here trusts its length, padding
 * or what it decodes to. Every output is bounded (the limits below), every
 * rejection comes with a static reason that never quotes the input (it may
 * hold a password), and decoded copies are wiped. What an authorization
 * identity means (refused, same user, proxy login) is the caller's choice.
 * RFC 4648 4 (base64; 3.5 canonical padding), RFC 4616 2 (PLAIN message:
 * [authzid] UTF8NUL authcid UTF8NUL passwd, each UTF-8 without NUL),
 * RFC 3629 4 (UTF-8), draft-murchison-sasl-login (LOGIN: user name, then
 * password, each a base64 response). The protocol forms of an empty
 * response ("=" in RFC 4954 4 and RFC 5034 4) and of cancelling ("*") are
 * the callers' to recognise; here "" is the empty base64 text. */
#ifndef MT_SASL_H
#define MT_SASL_H

#include <stdbool.h>
#include <stddef.h>

struct mt_buf;

/* RFC 4616 2: authzid and authcid are at most 255 octets; passwords up to
 * 1024 octets (what libdirsvc accepts). */
#define MT_SASL_ID_MAX 255
#define MT_SASL_PASSWD_MAX 1024
/* The longest PLAIN message, and the longest base64 text accepted. */
#define MT_SASL_MESSAGE_MAX (2 * MT_SASL_ID_MAX + MT_SASL_PASSWD_MAX + 2)
#define MT_BASE64_TEXT_MAX 2048		/* = 4 * MT_SASL_MESSAGE_MAX / 3 */

/* Why a response was refused: the callers' replies differ by class. */
enum mt_sasl_status {
	MT_SASL_OK = 0,
	MT_SASL_BAD_BASE64,	/* not strict base64, or longer than the bound */
	MT_SASL_BAD_MESSAGE,	/* PLAIN: not exactly two NUL separators */
	MT_SASL_BAD_FIELD,	/* empty authcid/passwd, too long, not UTF-8,
				 * or a LOGIN value holding a NUL */
};

/* Strict base64: the RFC 4648 alphabet only (no whitespace, no base64url),
 * a length that is a multiple of 4, "=" only as one or two final padding
 * characters with zero padding bits, in_len <= MT_BASE64_TEXT_MAX. Decodes
 * into out[0..*len_r); false with a reason on any deviation or if the
 * result does not fit in out_size octets. "" decodes to nothing. */
bool mt_base64_decode(const char *in, size_t in_len, unsigned char *out,
		      size_t out_size, size_t *len_r, const char **error_r);
/* Octets of base64 text for len octets of data (without a NUL). */
size_t mt_base64_encoded_len(size_t len);
/* Append the padded base64 of data[0..len) to out. */
void mt_base64_encode(const void *data, size_t len, struct mt_buf *out);

/* A parsed PLAIN message; wipe it with mt_sasl_plain_wipe() after use. */
struct mt_sasl_plain {
	char authzid[MT_SASL_ID_MAX + 1];	/* "" when absent */
	char authcid[MT_SASL_ID_MAX + 1];
	char passwd[MT_SASL_PASSWD_MAX + 1];
};

/* Split a decoded PLAIN message msg[0..len): exactly two NULs, a non-empty
 * authcid and passwd, fields within the limits and valid UTF-8. On failure
 * *plain_r is zeroed. */
enum mt_sasl_status mt_sasl_plain_parse(const unsigned char *msg, size_t len,
					struct mt_sasl_plain *plain_r,
					const char **error_r);
/* Both steps: base64 text (NUL-terminated) to fields; the decoded
 * intermediate copy is wiped. */
enum mt_sasl_status mt_sasl_plain_decode(const char *b64,
					 struct mt_sasl_plain *plain_r,
					 const char **error_r);
void mt_sasl_plain_wipe(struct mt_sasl_plain *plain);
/* A client's PLAIN response as a server takes it (the POP3 and IMAP login
 * phases): not "=" (an empty response), strict base64, an RFC 4616
 * message whose names fit id_max octets; an authorization identity equal
 * to the authentication identity (ignoring case) is dropped, another one
 * refused unless authzid_allowed. On success *plain_r holds the fields
 * (wipe it); on failure it is zeroed and *error_r says why (never quoting
 * the input). */
bool mt_sasl_plain_accept(const char *b64, size_t id_max, bool authzid_allowed,
			  struct mt_sasl_plain *plain_r, const char **error_r);
/* Append base64(authzid NUL authcid NUL passwd) to out (a client's PLAIN
 * response; the intermediate copy holding the password is wiped). */
void mt_sasl_plain_encode(struct mt_buf *out, const char *authzid,
			  const char *authcid, const char *passwd);

/* One LOGIN step: a base64 response decoding to a value (user name or
 * password) without NUL, of at most out_size - 1 octets, into out as a
 * C string. Empty values are the caller's to judge. On failure out is
 * wiped (all of it). */
enum mt_sasl_status mt_sasl_login_decode(const char *b64, char *out,
					 size_t out_size, const char **error_r);

#endif
