/* sasl.c — strict base64 (over OpenSSL's EVP_DecodeBlock/EVP_EncodeBlock)
 * and the SASL PLAIN and LOGIN responses (see sasl.h).
 *
 * Trust boundary: bytes from the network, of any length and content.
 * EVP_DecodeBlock is lenient (it trims whitespace and decodes "=" anywhere
 * as zero bits), so the text is checked here first, character by
 * character, and OpenSSL only does the arithmetic on text already known to
 * be canonical. Output sizes are checked before every write; every decoded
 * copy made here is wiped before it goes out of scope.
 * RFC 4648 3.3, 3.5, 4; RFC 4616 2; RFC 3629 4. */
#include "sasl.h"
#include "buf.h"
#include "utf8.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

/* Is c in the RFC 4648 4 alphabet (not "=")? */
static bool b64_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		(c >= '0' && c <= '9') || c == '+' || c == '/';
}

/* The 6-bit value of an alphabet character. */
static unsigned int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return (unsigned int)(c - 'A');
	if (c >= 'a' && c <= 'z')
		return (unsigned int)(c - 'a' + 26);
	if (c >= '0' && c <= '9')
		return (unsigned int)(c - '0' + 52);
	return c == '+' ? 62 : 63;
}

/* Check the text; the number of padding characters (0-2), or -1. */
static int b64_check(const unsigned char *in, size_t len, const char **error_r)
{
	if (len > MT_BASE64_TEXT_MAX) {
		*error_r = "base64 text too long";
		return -1;
	}
	if (len % 4 != 0) {
		*error_r = "base64 length is not a multiple of 4";
		return -1;
	}
	int pad = 0;
	if (len > 0 && in[len - 1] == '=')
		pad = in[len - 2] == '=' ? 2 : 1;
	for (size_t i = 0; i < len - (size_t)pad; i++) {
		if (!b64_char(in[i])) {
			*error_r = "invalid base64 character";
			return -1;
		}
	}
	/* RFC 4648 3.5: the unused bits of the last group must be zero. */
	if ((pad == 1 && (b64_value(in[len - 2]) & 0x3) != 0) ||
	    (pad == 2 && (b64_value(in[len - 3]) & 0xf) != 0)) {
		*error_r = "non-canonical base64 padding";
		return -1;
	}
	return pad;
}

bool mt_base64_decode(const char *in, size_t in_len, unsigned char *out,
		      size_t out_size, size_t *len_r, const char **error_r)
{
	const unsigned char *text = (const unsigned char *)in;
	int pad = b64_check(text, in_len, error_r);
	if (pad < 0)
		return false;
	size_t len = in_len / 4 * 3 - (size_t)pad;
	if (len > out_size) {
		*error_r = "base64 data too long";
		return false;
	}
	*len_r = len;
	if (in_len == 0)
		return true;
	/* All groups but the last straight into out; the last (it may be
	 * padded, so decode to 3 octets) through a scratch copy. */
	size_t body = in_len - 4;
	if (body > 0 && EVP_DecodeBlock(out, text, (int)body) != (int)(body / 4 * 3)) {
		*error_r = "invalid base64";
		return false;
	}
	unsigned char last[4] = { 0 }, octets[3];
	memcpy(last, text + body, 4);
	for (int k = 4 - pad; k < 4; k++)
		last[k] = 'A';		/* zero bits, as "=" means */
	int n = EVP_DecodeBlock(octets, last, 4);
	if (n != 3) {
		explicit_bzero(octets, sizeof(octets));
		*error_r = "invalid base64";
		return false;
	}
	memcpy(out + body / 4 * 3, octets, 3 - (size_t)pad);
	explicit_bzero(octets, sizeof(octets));
	return true;
}

size_t mt_base64_encoded_len(size_t len)
{
	return (len + 2) / 3 * 4;
}

void mt_base64_encode(const void *data, size_t len, struct mt_buf *out)
{
	const unsigned char *p = data;
	unsigned char text[4 * 48 + 1];

	/* In pieces of 144 octets so no length reaches an int's limits. */
	while (len > 0) {
		size_t n = len < 144 ? len : 144;
		int k = EVP_EncodeBlock(text, p, (int)n);
		mt_buf_append(out, text, (size_t)k);
		p += n;
		len -= n;
	}
	explicit_bzero(text, sizeof(text));
}

/* RFC 3629 4 UTF-8 without NUL. */
static bool utf8_ok(const unsigned char *p, size_t len)
{
	return memchr(p, 0, len) == NULL && mt_utf8_valid(p, len);
}

static bool copy_field(char *dst, size_t dst_size, const unsigned char *src,
		       size_t len)
{
	if (len >= dst_size || !utf8_ok(src, len))
		return false;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return true;
}

enum mt_sasl_status mt_sasl_plain_parse(const unsigned char *msg, size_t len,
					struct mt_sasl_plain *plain_r,
					const char **error_r)
{
	memset(plain_r, 0, sizeof(*plain_r));
	const unsigned char *nul1 = len > 0 ? memchr(msg, '\0', len) : NULL;
	const unsigned char *nul2 = nul1 == NULL ? NULL :
		memchr(nul1 + 1, '\0', len - (size_t)(nul1 + 1 - msg));
	if (nul1 == NULL || nul2 == NULL) {
		*error_r = "PLAIN message lacks its NUL separators";
		return MT_SASL_BAD_MESSAGE;
	}
	const unsigned char *pw = nul2 + 1;
	size_t pw_len = len - (size_t)(pw - msg);
	if (memchr(pw, '\0', pw_len) != NULL) {
		*error_r = "PLAIN message has more than three fields";
		return MT_SASL_BAD_MESSAGE;
	}
	size_t authzid_len = (size_t)(nul1 - msg);
	size_t authcid_len = (size_t)(nul2 - nul1 - 1);
	if (authcid_len == 0 || pw_len == 0) {
		*error_r = "PLAIN message with an empty user name or password";
		return MT_SASL_BAD_FIELD;
	}
	if (!copy_field(plain_r->authzid, sizeof(plain_r->authzid), msg, authzid_len) ||
	    !copy_field(plain_r->authcid, sizeof(plain_r->authcid), nul1 + 1, authcid_len) ||
	    !copy_field(plain_r->passwd, sizeof(plain_r->passwd), pw, pw_len)) {
		mt_sasl_plain_wipe(plain_r);
		*error_r = "PLAIN field too long or not UTF-8";
		return MT_SASL_BAD_FIELD;
	}
	return MT_SASL_OK;
}

enum mt_sasl_status mt_sasl_plain_decode(const char *b64,
					 struct mt_sasl_plain *plain_r,
					 const char **error_r)
{
	unsigned char msg[MT_SASL_MESSAGE_MAX];
	size_t len;
	enum mt_sasl_status status;

	memset(plain_r, 0, sizeof(*plain_r));
	if (!mt_base64_decode(b64, strlen(b64), msg, sizeof(msg), &len, error_r))
		status = MT_SASL_BAD_BASE64;
	else
		status = mt_sasl_plain_parse(msg, len, plain_r, error_r);
	explicit_bzero(msg, sizeof(msg));
	return status;
}

void mt_sasl_plain_wipe(struct mt_sasl_plain *plain)
{
	explicit_bzero(plain, sizeof(*plain));
}

bool mt_sasl_plain_accept(const char *b64, size_t id_max, bool authzid_allowed,
			  struct mt_sasl_plain *plain_r, const char **error_r)
{
	if (strcmp(b64, "=") == 0) {
		/* RFC 5034 4, RFC 4959 3: "=" is an empty response, no valid
		 * PLAIN message. */
		memset(plain_r, 0, sizeof(*plain_r));
		*error_r = "empty response";
		return false;
	}
	if (mt_sasl_plain_decode(b64, plain_r, error_r) != MT_SASL_OK)
		return false;	/* zeroed */
	if (strlen(plain_r->authcid) > id_max || strlen(plain_r->authzid) > id_max) {
		mt_sasl_plain_wipe(plain_r);
		*error_r = "user name too long";
		return false;
	}
	/* RFC 4616 2: an authzid equal to the authcid asks for nothing more. */
	if (strcasecmp(plain_r->authzid, plain_r->authcid) == 0)
		plain_r->authzid[0] = '\0';
	if (plain_r->authzid[0] != '\0' && !authzid_allowed) {
		/* Users may not act as someone else. */
		mt_sasl_plain_wipe(plain_r);
		*error_r = "authorization identity not permitted";
		return false;
	}
	return true;
}

void mt_sasl_plain_encode(struct mt_buf *out, const char *authzid,
			  const char *authcid, const char *passwd)
{
	struct mt_buf msg = MT_BUF_INIT;

	mt_buf_append(&msg, authzid, strlen(authzid) + 1);
	mt_buf_append(&msg, authcid, strlen(authcid) + 1);
	mt_buf_append(&msg, passwd, strlen(passwd));
	mt_base64_encode(msg.data, msg.len, out);
	/* The message holds the password: wipe it before freeing. */
	explicit_bzero(msg.data, msg.cap);
	mt_buf_free(&msg);
}

enum mt_sasl_status mt_sasl_login_decode(const char *b64, char *out,
					 size_t out_size, const char **error_r)
{
	size_t len;

	if (out_size == 0) {
		*error_r = "no room for a LOGIN value";
		return MT_SASL_BAD_FIELD;
	}
	if (!mt_base64_decode(b64, strlen(b64), (unsigned char *)out,
			      out_size - 1, &len, error_r)) {
		explicit_bzero(out, out_size);
		return MT_SASL_BAD_BASE64;
	}
	if (memchr(out, '\0', len) != NULL) {
		explicit_bzero(out, out_size);
		*error_r = "LOGIN value holds a NUL";
		return MT_SASL_BAD_FIELD;
	}
	out[len] = '\0';
	return MT_SASL_OK;
}
