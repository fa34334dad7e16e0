/* fuzz-smtp-data.c — libFuzzer target for the MTA's content reader
 * (mta/smtp-content.c, with lib/dotcodec as smtp-data.c uses it): the BDAT
 * chunk decoder's bare CR/LF policy, line lengths and size limit, the
 * Received: count that detects mail loops, and DATA against BDAT.
 *
 * Properties, beyond "no crash, no over-read":
 *  - the chunk decoder agrees with a whole-input reference model written
 *    here: a line ends at CRLF, at a bare CR or at a bare LF (a CR as the
 *    last octet is bare); under normalize every end becomes CRLF, under
 *    reject the octets pass as sent and bare_newline is set; nul is set
 *    exactly when the input holds a NUL octet (either policy); longest_line
 *    is the longest line without its end; too_big exactly when the output
 *    would pass max_size, and then the output is a prefix of at most
 *    max_size octets; the verdict is too big, then bare newline (reject
 *    only), then NUL, then a line over 998 octets, else OK;
 *  - none of that depends on where the input is cut (BDAT chunks, and
 *    reads inside a chunk, at random places);
 *  - under normalize the output has no bare CR or LF;
 *  - mt_smtp_count_received() and mt_smtp_header_fields() (Date:, Message-ID:)
 *    on the normalized message (as stored: CRLF only) equal a reference
 *    header-section scanner;
 *  - DATA and BDAT give the same message: the normalized content, dot-
 *    encoded and read back by the DATA decoder (mt_dot_decode), is the
 *    BDAT output plus a final CRLF if it lacked one, with the same longest
 *    line, and the DATA decoder ends exactly at the encoder's end.
 *
 * Input: [mode][limit][chunk seed] content. mode bit 0: normalize (else
 * reject); bits 1-2: chunking (whole, octet, 1-7, random). limit: low 3
 * bits select max_size 0, 1, 16, 100, 1000, 998 + 2, 65536, unlimited.
 * Trust boundary: message content from an SMTP client (RFC 3030 2, RFC
 * 5321 2.3.8, 4.5.2, 6.3, RFC 5322 2.1.1). */
#include "fuzz.h"

#include <string.h>
#include <strings.h>

#include "dotcodec.h"
#include "lib-mail/smtp-content.h"

struct ref {
	struct mt_buf out;	/* the whole output, no size limit */
	bool bare, nul;
	size_t longest;
};

static void ref_decode(const uint8_t *p, size_t len, bool normalize, struct ref *r)
{
	size_t line = 0;
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < len; i++) {
		bool crlf = p[i] == '\r' && i + 1 < len && p[i + 1] == '\n';
		if (p[i] != '\r' && p[i] != '\n') {
			if (p[i] == '\0')
				r->nul = true;
			mt_buf_append_char(&r->out, (char)p[i]);
			line++;
			if (line > r->longest)
				r->longest = line;
			continue;
		}
		if (crlf) {
			mt_buf_append(&r->out, "\r\n", 2);
			i++;
		} else {
			r->bare = true;
			if (normalize)
				mt_buf_append(&r->out, "\r\n", 2);
			else
				mt_buf_append_char(&r->out, (char)p[i]);
		}
		line = 0;
	}
}

/* Received: fields before the first empty line of CRLF-only text. */
/* The references' walk over the header section of CRLF-only text: the
 * next line at *p (its length in *l_r), advancing *p; false at the first
 * empty line or at end. */
static bool ref_next_line(const char **p, const char *end, const char **line_r,
			  size_t *l_r)
{
	if (*p >= end)
		return false;
	const char *eol = memmem(*p, (size_t)(end - *p), "\r\n", 2);
	size_t l = eol != NULL ? (size_t)(eol - *p) : (size_t)(end - *p);
	if (l == 0)
		return false;
	*line_r = *p;
	*l_r = l;
	*p += l + 2;
	return true;
}

static unsigned int ref_received(const char *p, size_t len)
{
	unsigned int n = 0;
	if (len == 0)
		return 0;	/* p may be NULL: no pointer arithmetic on it */
	const char *end = p + len, *line;
	size_t l;
	while (ref_next_line(&p, end, &line, &l))
		if (l >= 9 && strncasecmp(line, "received:", 9) == 0)
			n++;
	return n;
}

/* Is p[0..l) the field name (any case), then spaces/tabs, then ':'? */
static bool ref_field(const char *p, size_t l, const char *name)
{
	size_t n = strlen(name), k;
	if (l < n + 1)
		return false;
	for (k = 0; k < n; k++)
		if ((p[k] | 0x20) != (name[k] | 0x20))
			return false;
	while (k < l && (p[k] == ' ' || p[k] == '\t'))
		k++;
	return k < l && p[k] == ':';
}

/* Date: and Message-ID: before the first empty line of CRLF-only text. */
static unsigned int ref_fields(const char *p, size_t len)
{
	unsigned int found = 0;
	if (len == 0)
		return 0;
	const char *end = p + len, *line;
	size_t l;
	while (ref_next_line(&p, end, &line, &l)) {
		if (ref_field(line, l, "date"))
			found |= MT_SMTP_HEADER_DATE;
		if (ref_field(line, l, "message-id"))
			found |= MT_SMTP_HEADER_MESSAGE_ID;
	}
	return found;
}

/* Run the chunk decoder over data cut by strategy; the verdict. */
static enum mt_dot_result run_chunks(struct mt_smtp_chunk_decoder *d, bool normalize,
				     uint64_t max, const uint8_t *data, size_t len,
				     unsigned int strategy, uint32_t seed,
				     struct mt_buf *out)
{
	mt_smtp_chunk_init(d, normalize, max);
	size_t done = 0;
	while (done < len) {
		size_t n = fuzz_chunk(strategy, &seed, len - done, 64);
		mt_smtp_chunk_decode(d, (const char *)data + done, n, out);
		done += n;
	}
	mt_smtp_chunk_finish(d, out);
	return mt_smtp_chunk_result(d, MT_SMTP_LINE_MAX_OCTETS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t limits[8] = { 0, 1, 16, 100, 1000, 1000,
					    65536, UINT64_MAX };
	struct fuzz_input in = { data, size };
	uint8_t mode = fuzz_byte(&in);
	uint64_t max = limits[fuzz_byte(&in) & 7];
	uint32_t seed = fuzz_byte(&in);
	bool normalize = mode & 1;
	unsigned int strategy = (mode >> 1) & 3;

	struct ref ref;
	ref_decode(in.data, in.len, normalize, &ref);

	/* The chunk decoder, whole and cut, against the reference. */
	struct mt_smtp_chunk_decoder whole, cut;
	struct mt_buf out_whole = MT_BUF_INIT, out_cut = MT_BUF_INIT;
	enum mt_dot_result r_whole = run_chunks(&whole, normalize, max, in.data,
						in.len, 0, seed, &out_whole);
	enum mt_dot_result r_cut = run_chunks(&cut, normalize, max, in.data, in.len,
					      strategy, seed, &out_cut);
	bool too_big = ref.out.len > max;
	FUZZ_CHECK(r_whole == r_cut, "verdict depends on the chunking: %d %d",
		   (int)r_whole, (int)r_cut);
	const struct mt_smtp_chunk_decoder *ds[2] = { &whole, &cut };
	const struct mt_buf *outs[2] = { &out_whole, &out_cut };
	for (int k = 0; k < 2; k++) {
		const struct mt_smtp_chunk_decoder *d = ds[k];
		const struct mt_buf *out = outs[k];
		FUZZ_CHECK(d->too_big == too_big, "too_big %d, reference %zu > %llu",
			   d->too_big, ref.out.len, (unsigned long long)max);
		FUZZ_CHECK(d->bare_newline == ref.bare, "bare_newline %d", d->bare_newline);
		FUZZ_CHECK(d->nul == ref.nul, "nul %d", d->nul);
		FUZZ_CHECK(d->longest_line == ref.longest, "longest %zu, reference %zu",
			   d->longest_line, ref.longest);
		FUZZ_CHECK(out->len <= max && out->len == d->size, "output %zu octets",
			   out->len);
		FUZZ_CHECK(out->len <= ref.out.len &&
			   (out->len == 0 || memcmp(out->data, ref.out.data, out->len) == 0),
			   "output is not a prefix of the reference");
		if (!too_big)
			FUZZ_CHECK(out->len == ref.out.len, "output shorter than the reference");
	}
	enum mt_dot_result want = too_big ? MT_DOT_RESULT_TOO_BIG :
		ref.bare && !normalize ? MT_DOT_RESULT_BARE_NEWLINE :
		ref.nul ? MT_DOT_RESULT_NUL :
		ref.longest > MT_SMTP_LINE_MAX_OCTETS ? MT_DOT_RESULT_LINE_TOO_LONG :
		MT_DOT_RESULT_OK;
	FUZZ_CHECK(r_whole == want, "verdict %d, reference %d", (int)r_whole, (int)want);
	if (r_whole != MT_DOT_RESULT_OK) {
		int code;
		const char *text;
		mt_smtp_content_refusal(r_whole, &code, &text);
		FUZZ_CHECK(code >= 500 && code <= 599 && text[0] == '5', "refusal %d", code);
	}

	/* Normalized output: only CRLF line ends. */
	if (normalize)
		for (size_t i = 0; i < out_whole.len; i++) {
			if (out_whole.data[i] == '\r')
				FUZZ_CHECK(i + 1 < out_whole.len && out_whole.data[i + 1] == '\n',
					   "bare CR at %zu", i);
			if (out_whole.data[i] == '\n')
				FUZZ_CHECK(i > 0 && out_whole.data[i - 1] == '\r',
					   "bare LF at %zu", i);
		}

	/* DATA against BDAT: the normalized content, dot-encoded, then read
	 * by the DATA decoder in chunks. */
	struct ref norm;
	ref_decode(in.data, in.len, true, &norm);
	/* The Received: count on a message as stored (CRLF only). */
	FUZZ_CHECK(mt_smtp_count_received(norm.out.data, norm.out.len) ==
		   ref_received(norm.out.data, norm.out.len), "Received: count");
	FUZZ_CHECK(mt_smtp_header_fields(norm.out.data, norm.out.len) ==
		   ref_fields(norm.out.data, norm.out.len), "Date:/Message-ID: fields");
	struct mt_dot_encoder enc;
	struct mt_buf wire = MT_BUF_INIT, body = MT_BUF_INIT;
	mt_dot_encoder_init(&enc);
	mt_dot_encode(&enc, in.data, in.len, &wire);
	mt_dot_encode_finish(&enc, &wire);
	struct mt_dot_decoder dec;
	mt_dot_decoder_init(&dec, MT_DOT_BARE_REJECT, 0, MT_SMTP_LINE_MAX_OCTETS);
	size_t done = 0, used = 0;
	uint32_t seed2 = seed;
	while (done < wire.len && !dec.end) {
		size_t n = fuzz_chunk(strategy, &seed2, wire.len - done, 64);
		used = mt_dot_decode(&dec, wire.data + done, n, &body);
		done += used;
		if (used < n)
			break;
	}
	FUZZ_CHECK(dec.end && done == wire.len, "DATA did not end at the encoder's end");
	FUZZ_CHECK(!dec.bare_newline, "bare newline after encoding");
	FUZZ_CHECK(dec.nul == norm.nul, "DATA NUL %d, BDAT %d", dec.nul, norm.nul);
	size_t want_len = norm.out.len;
	bool add_crlf = norm.out.len > 0 && (norm.out.len < 2 ||
		memcmp(norm.out.data + norm.out.len - 2, "\r\n", 2) != 0);
	FUZZ_CHECK(body.len == want_len + (add_crlf ? 2 : 0) &&
		   (want_len == 0 || memcmp(body.data, norm.out.data, want_len) == 0),
		   "DATA gives %zu octets, BDAT %zu", body.len, want_len);
	FUZZ_CHECK(dec.longest_line == norm.longest, "DATA longest %zu, BDAT %zu",
		   dec.longest_line, norm.longest);

	mt_buf_free(&ref.out);
	mt_buf_free(&norm.out);
	mt_buf_free(&out_whole);
	mt_buf_free(&out_cut);
	mt_buf_free(&wire);
	mt_buf_free(&body);
	return 0;
}
