/* mmp-sasl.c — base64 and SASL PLAIN messages for AUTH PLAIN from clients
 * and to the store shards, and the shape of a POP3 response line.
 *
 * Trust boundary: decoding sees client data (an AUTH PLAIN response) and
 * checks it strictly; encoding builds the proxy's own login from the
 * canonical address (from the directory) and the proxy credential.
 * RFCs: RFC 4648 section 4 (base64), RFC 4616 section 2 (PLAIN message),
 * RFC 5034 section 4 (POP3 AUTH: responses are base64, "=" is an empty
 * initial response), RFC 1939 section 3 (+OK/-ERR). */
#include "mmp.h"
#include "buf.h"

#include <string.h>

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The 6-bit value of c, or -1. */
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

bool mmp_base64_decode(const char *in, struct mt_buf *out, const char **error_r)
{
	size_t len = strlen(in);

	/* RFC 4648 section 3.2: padded to a multiple of 4. */
	if (len % 4 != 0) {
		*error_r = "base64 length is not a multiple of 4";
		return false;
	}
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		size_t pad = 0;
		for (size_t j = 0; j < 4; j++) {
			unsigned char c = (unsigned char)in[i + j];
			if (c == '=' && i + 4 == len && j >= 2) {
				v[j] = 0;
				pad++;
				continue;
			}
			if (pad > 0 || (v[j] = b64_value(c)) < 0) {
				*error_r = "invalid base64 character";
				return false;
			}
		}
		unsigned int n = (unsigned int)v[0] << 18 | (unsigned int)v[1] << 12 |
			(unsigned int)v[2] << 6 | (unsigned int)v[3];
		unsigned char bytes[3] = { (unsigned char)(n >> 16),
					   (unsigned char)(n >> 8),
					   (unsigned char)n };
		/* RFC 4648 section 3.5: the unused bits of the last group
		 * must be zero for a canonical encoding. */
		if ((pad == 1 && (n & 0xff) != 0) || (pad == 2 && (n & 0xffff) != 0)) {
			*error_r = "non-canonical base64 padding";
			return false;
		}
		mt_buf_append(out, bytes, 3 - pad);
	}
	return true;
}

void mmp_base64_encode(const void *data, size_t len, struct mt_buf *out)
{
	const unsigned char *p = data;
	char quad[4];

	for (size_t i = 0; i < len; i += 3) {
		size_t left = len - i;
		unsigned int n = (unsigned int)p[i] << 16;
		if (left > 1)
			n |= (unsigned int)p[i + 1] << 8;
		if (left > 2)
			n |= p[i + 2];
		quad[0] = b64_alphabet[(n >> 18) & 63];
		quad[1] = b64_alphabet[(n >> 12) & 63];
		quad[2] = left > 1 ? b64_alphabet[(n >> 6) & 63] : '=';
		quad[3] = left > 2 ? b64_alphabet[n & 63] : '=';
		mt_buf_append(out, quad, 4);
	}
}

bool mmp_sasl_plain_parse(struct mt_buf *buf, struct mmp_plain *plain_r,
			  const char **error_r)
{
	/* RFC 4616 section 2: message = [authzid] UTF8NUL authcid UTF8NUL
	 * passwd; authcid and passwd are 1*SAFE (no NUL). */
	char *data = buf->data;
	size_t len = buf->len;
	char *nul1 = data != NULL ? memchr(data, '\0', len) : NULL;
	char *nul2 = nul1 != NULL ?
		memchr(nul1 + 1, '\0', len - (size_t)(nul1 + 1 - data)) : NULL;

	if (nul1 == NULL || nul2 == NULL ||
	    memchr(nul2 + 1, '\0', len - (size_t)(nul2 + 1 - data)) != NULL) {
		*error_r = "a PLAIN message has exactly two NUL separators";
		return false;
	}
	plain_r->authzid = data;
	plain_r->authcid = nul1 + 1;
	plain_r->password = nul2 + 1;
	if (plain_r->authcid[0] == '\0' || plain_r->password[0] == '\0') {
		*error_r = "empty user name or password";
		return false;
	}
	if (strlen(plain_r->authcid) > MMP_USER_MAX ||
	    strlen(plain_r->authzid) > MMP_USER_MAX) {
		*error_r = "user name too long";
		return false;
	}
	return true;
}

void mmp_sasl_plain_encode(struct mt_buf *out, const char *authzid,
			   const char *authcid, const char *password)
{
	struct mt_buf msg = MT_BUF_INIT;

	mt_buf_append(&msg, authzid, strlen(authzid) + 1);
	mt_buf_append(&msg, authcid, strlen(authcid) + 1);
	mt_buf_append(&msg, password, strlen(password));
	mmp_base64_encode(msg.data, msg.len, out);
	/* The message holds the proxy password: wipe it before freeing. */
	explicit_bzero(msg.data, msg.cap);
	mt_buf_free(&msg);
}

enum mmp_response mmp_response_kind(const char *line)
{
	/* RFC 2449 section 3: status indicators are case sensitive. */
	if (strncmp(line, "+OK", 3) == 0 && (line[3] == '\0' || line[3] == ' '))
		return MMP_RESPONSE_OK;
	if (strncmp(line, "-ERR", 4) == 0 && (line[4] == '\0' || line[4] == ' '))
		return MMP_RESPONSE_ERR;
	/* RFC 5034 section 4: a continuation is "+" SP [base64]; some
	 * servers send a bare "+". */
	if (line[0] == '+' && (line[1] == ' ' || line[1] == '\0'))
		return MMP_RESPONSE_CONTINUE;
	return MMP_RESPONSE_BAD;
}
