/* fuzz-sasl.c — libFuzzer target for lib/sasl.c: strict base64, the RFC
 * 4616 PLAIN message and the LOGIN steps, as a client sends them after SMTP
 * AUTH (mta) and POP3 AUTH (popstore, mmp).
 *
 * Properties, beyond "no crash, no over-read, no leak":
 *  - mt_base64_decode() accepts exactly the canonical base64 texts up to
 *    MT_BASE64_TEXT_MAX whose decoding fits the output: a reference
 *    decoder written here (lenient, then "does encoding give the text
 *    back?") agrees; what it accepts re-encodes to the input with
 *    mt_base64_encode(), 3 octets per 4 characters less the padding;
 *  - mt_sasl_plain_parse() on any octets (the decoded line, and the raw
 *    data) gives the status a reference splitter predicts: BAD_MESSAGE
 *    unless exactly two NULs, else BAD_FIELD for an empty authcid/passwd, an
 *    over-long field or non-UTF-8 (fuzz_utf8_valid), else OK with the three
 *    fields equal to the reference split; a refusal has a reason, zeroed
 *    fields; mt_sasl_plain_encode() of the fields decodes to them again;
 *  - mt_sasl_plain_decode() equals decode-then-parse;
 *  - mt_sasl_login_decode() is OK exactly when the text decodes within the
 *    bound and holds no NUL, and then gives those octets.
 *
 * Input: [out_size] line. out_size (0..255) bounds the base64 and LOGIN
 * outputs; the line ends at its first NUL for the functions that take C
 * strings (lineio never passes a NUL on). Trust boundary: client data
 * (RFC 4648 4, RFC 4616 2, RFC 4954 4, RFC 5034 4). */
#include "fuzz.h"

#include <string.h>

#include "buf.h"
#include "sasl.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Reference: is text (len octets) canonical base64? Decoded into out. */
static bool ref_base64(const char *text, size_t len, unsigned char *out,
		       size_t *len_r)
{
	if (len % 4 != 0 || len > MT_BASE64_TEXT_MAX)
		return false;
	size_t pad = 0;
	while (pad < 2 && pad < len && text[len - 1 - pad] == '=')
		pad++;
	unsigned int acc = 0, bits = 0;
	size_t n = 0;
	for (size_t i = 0; i < len - pad; i++) {
		const char *p = text[i] != '\0' ? strchr(alphabet, text[i]) : NULL;
		if (p == NULL)
			return false;
		acc = (acc << 6 | (unsigned int)(p - alphabet)) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
		}
	}
	*len_r = n;
	/* Canonical exactly when the encoding gives the text back. */
	struct mt_buf enc = MT_BUF_INIT;
	mt_base64_encode(out, n, &enc);
	bool same = enc.len == len && memcmp(enc.data != NULL ? enc.data : "",
					     text, len) == 0;
	mt_buf_free(&enc);
	return same;
}

/* Reference PLAIN split of msg[0..len). */
static enum mt_sasl_status ref_plain(const unsigned char *msg, size_t len,
				     size_t field_off[3], size_t field_len[3])
{
	size_t nuls = 0, start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || msg[i] == '\0') {
			if (nuls < 3) {
				field_off[nuls] = start;
				field_len[nuls] = i - start;
			}
			if (i < len)
				nuls++;
			start = i + 1;
		}
	}
	if (nuls != 2)
		return MT_SASL_BAD_MESSAGE;
	if (field_len[1] == 0 || field_len[2] == 0 ||
	    field_len[0] > MT_SASL_ID_MAX || field_len[1] > MT_SASL_ID_MAX ||
	    field_len[2] > MT_SASL_PASSWD_MAX)
		return MT_SASL_BAD_FIELD;
	for (int k = 0; k < 3; k++)
		if (!fuzz_utf8_valid(msg + field_off[k], field_len[k]))
			return MT_SASL_BAD_FIELD;
	return MT_SASL_OK;
}

static void check_plain(const unsigned char *msg, size_t len)
{
	struct mt_sasl_plain p;
	const char *error = NULL;
	size_t off[3] = { 0, 0, 0 }, flen[3] = { 0, 0, 0 };
	enum mt_sasl_status want = ref_plain(msg, len, off, flen);
	enum mt_sasl_status got = mt_sasl_plain_parse(msg, len, &p, &error);

	FUZZ_CHECK(got == want, "PLAIN status %d, reference %d", (int)got, (int)want);
	if (got != MT_SASL_OK) {
		FUZZ_CHECK(error != NULL, "refused without a reason");
		FUZZ_CHECK(p.authzid[0] == '\0' && p.authcid[0] == '\0' &&
			   p.passwd[0] == '\0', "fields left after a refusal");
		return;
	}
	const char *fields[3] = { p.authzid, p.authcid, p.passwd };
	for (int k = 0; k < 3; k++)
		FUZZ_CHECK(strlen(fields[k]) == flen[k] &&
			   memcmp(fields[k], msg + off[k], flen[k]) == 0,
			   "field %d differs", k);
	struct mt_buf enc = MT_BUF_INIT;
	struct mt_sasl_plain again;
	mt_sasl_plain_encode(&enc, p.authzid, p.authcid, p.passwd);
	FUZZ_CHECK(mt_sasl_plain_decode(mt_buf_cstr(&enc), &again, &error) == MT_SASL_OK,
		   "re-encoded PLAIN refused: %s", error);
	FUZZ_CHECK(strcmp(again.authzid, p.authzid) == 0 &&
		   strcmp(again.authcid, p.authcid) == 0 &&
		   strcmp(again.passwd, p.passwd) == 0, "PLAIN round trip differs");
	mt_buf_free(&enc);
	mt_sasl_plain_wipe(&p);
	mt_sasl_plain_wipe(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };
	size_t out_size = fuzz_byte(&in);
	char *line = malloc(in.len + 1);
	unsigned char *ref = malloc(in.len + 1), *out = malloc(MT_SASL_MESSAGE_MAX);
	const char *error = NULL;

	FUZZ_CHECK(line != NULL && ref != NULL && out != NULL, "malloc");
	if (in.len > 0)
		memcpy(line, in.data, in.len);
	line[in.len] = '\0';
	size_t len = strlen(line), ref_len = 0, dec_len = 0;

	/* Base64 against the reference, bounded by out_size and unbounded. */
	bool ref_ok = ref_base64(line, len, ref, &ref_len);
	bool ok = mt_base64_decode(line, len, out, out_size, &dec_len, &error);
	FUZZ_CHECK(ok == (ref_ok && ref_len <= out_size),
		   "decode %d, reference %d (%zu octets, bound %zu)", ok, ref_ok,
		   ref_len, out_size);
	ok = mt_base64_decode(line, len, out, MT_SASL_MESSAGE_MAX, &dec_len, &error);
	FUZZ_CHECK(ok == ref_ok, "decode %d, reference %d", ok, ref_ok);
	if (ok) {
		FUZZ_CHECK(dec_len == ref_len && memcmp(out, ref, dec_len) == 0,
			   "decoded octets differ from the reference");
		check_plain(out, dec_len);
	} else {
		FUZZ_CHECK(error != NULL, "base64 refused without a reason");
	}

	/* The parser on the raw octets too (NULs and all). */
	check_plain(in.data, in.len);

	/* Decode-then-parse in one call. */
	struct mt_sasl_plain p;
	enum mt_sasl_status status = mt_sasl_plain_decode(line, &p, &error);
	if (!ref_ok)
		FUZZ_CHECK(status == MT_SASL_BAD_BASE64, "plain_decode %d", (int)status);
	else {
		size_t off[3], flen[3];
		FUZZ_CHECK(status == ref_plain(ref, ref_len, off, flen),
			   "plain_decode %d", (int)status);
	}
	mt_sasl_plain_wipe(&p);

	/* LOGIN: a value without NUL, at most out_size - 1 octets. */
	char login[256];
	status = mt_sasl_login_decode(line, login, out_size, &error);
	bool want = ref_ok && ref_len < out_size && memchr(ref, '\0', ref_len) == NULL;
	FUZZ_CHECK((status == MT_SASL_OK) == want, "login %d", (int)status);
	if (want)
		FUZZ_CHECK(strlen(login) == ref_len && memcmp(login, ref, ref_len) == 0,
			   "LOGIN value differs");

	free(line);
	free(ref);
	free(out);
	return 0;
}
