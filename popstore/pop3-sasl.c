/* pop3-sasl.c — strict base64 and the SASL PLAIN message (see pop3-sasl.h).
 *
 * Trust boundary: client input of any length and content. Output sizes are
 * checked before every write; decoded credentials are wiped by the caller
 * (and the intermediate copy here) after use.
 * RFC 4648 4, RFC 4616 2, RFC 3629 4 (UTF-8 syntax). */
#include "pop3-sasl.h"

#include <stdint.h>
#include <string.h>

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

bool pop3_base64_decode(const char *in, size_t len, unsigned char *out,
			size_t out_size, size_t *len_r)
{
	size_t n = 0;

	if (len % 4 != 0)
		return false;
	for (size_t i = 0; i < len; i += 4) {
		const unsigned char *q = (const unsigned char *)in + i;
		bool last = i + 4 == len;
		int pad = 0;
		if (last && q[3] == '=')
			pad = q[2] == '=' ? 2 : 1;
		int v[4];
		for (int k = 0; k < 4 - pad; k++) {
			if ((v[k] = b64_value(q[k])) < 0)
				return false;
		}
		uint32_t word = ((uint32_t)v[0] << 18) | ((uint32_t)v[1] << 12);
		if (pad < 2)
			word |= (uint32_t)v[2] << 6;
		if (pad < 1)
			word |= (uint32_t)v[3];
		/* Padding bits must be zero (RFC 4648 3.5: canonical). */
		if ((pad == 2 && (word & 0xffff) != 0) || (pad == 1 && (word & 0xff) != 0))
			return false;
		size_t bytes = 3 - (size_t)pad;
		if (n + bytes > out_size)
			return false;
		out[n++] = (unsigned char)(word >> 16);
		if (bytes > 1)
			out[n++] = (unsigned char)(word >> 8);
		if (bytes > 2)
			out[n++] = (unsigned char)word;
	}
	*len_r = n;
	return true;
}

/* RFC 3629 4 UTF-8, no NUL (the caller split on it), no overlongs or
 * surrogates. */
static bool utf8_ok(const unsigned char *p, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned char c = p[i];
		size_t need;
		uint32_t cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
		} else
			return false;
		for (size_t k = 1; k <= need; k++) {
			if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += need + 1;
	}
	return true;
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

bool pop3_sasl_plain_parse(const unsigned char *msg, size_t len,
			   struct pop3_sasl_plain *plain_r, const char **error_r)
{
	const unsigned char *nul1 = memchr(msg, '\0', len);
	memset(plain_r, 0, sizeof(*plain_r));
	if (nul1 == NULL) {
		*error_r = "PLAIN message lacks its separators";
		return false;
	}
	size_t rest = len - (size_t)(nul1 - msg) - 1;
	const unsigned char *nul2 = memchr(nul1 + 1, '\0', rest);
	if (nul2 == NULL) {
		*error_r = "PLAIN message lacks its second separator";
		return false;
	}
	const unsigned char *pw = nul2 + 1;
	size_t pw_len = len - (size_t)(pw - msg);
	if (memchr(pw, '\0', pw_len) != NULL) {
		*error_r = "PLAIN message has more than three fields";
		return false;
	}
	size_t authzid_len = (size_t)(nul1 - msg);
	size_t authcid_len = (size_t)(nul2 - nul1 - 1);
	if (authcid_len == 0 || pw_len == 0) {
		*error_r = "PLAIN message with an empty user or password";
		return false;
	}
	if (!copy_field(plain_r->authzid, sizeof(plain_r->authzid), msg, authzid_len) ||
	    !copy_field(plain_r->authcid, sizeof(plain_r->authcid), nul1 + 1, authcid_len) ||
	    !copy_field(plain_r->passwd, sizeof(plain_r->passwd), pw, pw_len)) {
		explicit_bzero(plain_r, sizeof(*plain_r));
		*error_r = "PLAIN field too long or not UTF-8";
		return false;
	}
	return true;
}

bool pop3_sasl_plain_decode(const char *b64, struct pop3_sasl_plain *plain_r,
			    const char **error_r)
{
	unsigned char msg[2 * POP3_SASL_ID_MAX + POP3_SASL_PASSWORD_MAX + 2];
	size_t len;
	bool ok;

	memset(plain_r, 0, sizeof(*plain_r));
	if (!pop3_base64_decode(b64, strlen(b64), msg, sizeof(msg), &len)) {
		*error_r = "invalid base64";
		ok = false;
	} else
		ok = pop3_sasl_plain_parse(msg, len, plain_r, error_r);
	explicit_bzero(msg, sizeof(msg));
	return ok;
}
