/* mmp-sasl.c — base64 and SASL PLAIN messages for AUTH PLAIN from clients
 * and to the store shards (the MMP's buffer-based names over lib/sasl, the
 * one decoder every tier uses), and the shape of a POP3 response line.
 *
 * Trust boundary: decoding sees client data (an AUTH PLAIN response) and
 * checks it strictly; encoding builds the proxy's own login from the
 * canonical address (from the directory) and the proxy credential.
 * RFCs: RFC 4648 section 4 (base64), RFC 4616 section 2 (PLAIN message),
 * RFC 5034 section 4 (POP3 AUTH: responses are base64, "=" is an empty
 * initial response), RFC 1939 section 3 (+OK/-ERR). */
#include "mmp.h"
#include "buf.h"
#include "sasl.h"

#include <string.h>

bool mmp_base64_decode(const char *in, struct mt_buf *out, const char **error_r)
{
	unsigned char msg[MT_SASL_MESSAGE_MAX];
	size_t len;

	bool ok = mt_base64_decode(in, strlen(in), msg, sizeof(msg), &len, error_r);
	if (ok)
		mt_buf_append(out, msg, len);
	explicit_bzero(msg, sizeof(msg));
	return ok;
}

void mmp_base64_encode(const void *data, size_t len, struct mt_buf *out)
{
	mt_base64_encode(data, len, out);
}

bool mmp_sasl_plain_parse(struct mt_buf *buf, struct mmp_plain *plain_r,
			  const char **error_r)
{
	/* lib/sasl checks the message (RFC 4616 2: exactly two NULs, a
	 * non-empty authcid and passwd, UTF-8, lengths); the fields are then
	 * handed back as pointers into buf, which is NUL-terminated. */
	struct mt_sasl_plain plain;
	enum mt_sasl_status status = mt_sasl_plain_parse(
		(const unsigned char *)buf->data, buf->len, &plain, error_r);
	mt_sasl_plain_wipe(&plain);
	if (status != MT_SASL_OK)
		return false;
	plain_r->authzid = buf->data;
	plain_r->authcid = plain_r->authzid + strlen(plain_r->authzid) + 1;
	plain_r->password = plain_r->authcid + strlen(plain_r->authcid) + 1;
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
	mt_sasl_plain_encode(out, authzid, authcid, password);
}

