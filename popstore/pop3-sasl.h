/* pop3-sasl.h — the pure parts of POP3 AUTH PLAIN: strict base64 and the
 * PLAIN message, so they can be unit-tested without a socket.
 *
 * Trust boundary: the input is the client's SASL response, anything at
 * all; nothing here trusts its length, padding or content.
 * RFC 4648 4 (base64), RFC 4616 2 (PLAIN: [authzid] NUL authcid NUL
 * passwd), RFC 5034 4 ("*" cancels; "=" is an empty initial response). */
#ifndef MT_POP3_SASL_H
#define MT_POP3_SASL_H

#include <stdbool.h>
#include <stddef.h>

/* RFC 4616 2: each of the three at most 255 octets of UTF-8; a longer
 * password is allowed here (libdirsvc takes up to 1024). */
#define POP3_SASL_ID_MAX 255
#define POP3_SASL_PASSWORD_MAX 1024

struct pop3_sasl_plain {
	char authzid[POP3_SASL_ID_MAX + 1];	/* "" when absent */
	char authcid[POP3_SASL_ID_MAX + 1];
	char passwd[POP3_SASL_PASSWORD_MAX + 1];
};

/* Decode strict base64 (the RFC 4648 alphabet, length a multiple of 4, "="
 * only as the final padding, no whitespace, no non-zero padding bits) into
 * out[0..*len_r) with out of at least (len / 4) * 3 octets. false on any
 * deviation. */
bool pop3_base64_decode(const char *in, size_t len, unsigned char *out,
			size_t out_size, size_t *len_r);

/* Parse a decoded PLAIN message. false with a reason (never quoting the
 * input) if it is not exactly three fields, a field is too long or holds
 * invalid UTF-8, or authcid or passwd is empty. Wipe *plain_r after use. */
bool pop3_sasl_plain_parse(const unsigned char *msg, size_t len,
			   struct pop3_sasl_plain *plain_r, const char **error_r);

/* Both in one: base64 text to fields. The decoded copy is wiped. */
bool pop3_sasl_plain_decode(const char *b64, struct pop3_sasl_plain *plain_r,
			    const char **error_r);

#endif
