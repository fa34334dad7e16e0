/* fuzz-dotcodec.c — libFuzzer target for lib/dotcodec.c, the streaming
 * dot-stuffing codec of SMTP/LMTP DATA and POP3 multi-line responses.
 *
 * Properties, beyond "no crash, no leak":
 *  - decoding in chunks of any shape (and from an evbuffer of many chains)
 *    agrees with decoding the whole input: same end, octets consumed, size,
 *    flags, longest line and (unless too big) output;
 *  - the end is found exactly where a strict receiver finds it: at the
 *    first CRLF "." CRLF counting the DATA command's own CRLF, and nowhere
 *    else (SMTP smuggling: LF.LF, CR.CR, LF.CRLF, CRLF.LF ... never end it);
 *  - the output, size, bare-newline flag, NUL flag and longest line equal
 *    those of a reference decoder written line by line from RFC 5321 4.5.2
 *    (NUL: any NUL octet in the input consumed, under either policy);
 *  - the verdict follows from the flags (too big, bare newline, NUL, long
 *    line);
 *  - encoding any message (in chunks) gives only CRLF line ends and stuffs
 *    every line that starts with a dot, so that no receiver, strict or
 *    lenient, can find the end before the real one; decoding that gives the
 *    message back with its line ends made CRLF;
 *  - a decoded message re-encoded and decoded again is unchanged.
 *
 * Input: [mode][sizes][chunk seed] data...; mode bit 0 = bare policy,
 * bits 1-2 = decode chunking, bits 3-4 = encode chunking, bit 5 = evbuffer
 * chains by reference; sizes low nibble = max_size, high nibble = max_line.
 * Trust boundary: the data is what an SMTP/LMTP client or a POP3 server
 * sends after DATA / +OK. */
#include "fuzz.h"

#include <event2/buffer.h>
#include <string.h>

#include "buf.h"
#include "dotcodec.h"

struct decoded {
	struct mt_buf out;
	size_t consumed;
	bool end, bare, nul, too_big;
	uint64_t size;
	size_t longest;
};

static void take_results(struct decoded *d, const struct mt_dot_decoder *dec,
			 size_t consumed)
{
	d->consumed = consumed;
	d->end = dec->end;
	d->bare = dec->bare_newline;
	d->nul = dec->nul;
	d->too_big = dec->too_big;
	d->size = dec->size;
	d->longest = dec->longest_line;
}

static void same(const struct decoded *a, const struct decoded *b,
		 const char *what)
{
	FUZZ_CHECK(a->end == b->end, "%s: end %d vs %d", what, a->end, b->end);
	FUZZ_CHECK(a->consumed == b->consumed, "%s: consumed %zu vs %zu", what,
		   a->consumed, b->consumed);
	FUZZ_CHECK(a->bare == b->bare, "%s: bare newline flag differs", what);
	FUZZ_CHECK(a->nul == b->nul, "%s: NUL flag differs", what);
	FUZZ_CHECK(a->too_big == b->too_big, "%s: too big flag differs", what);
	FUZZ_CHECK(a->size == b->size, "%s: size %llu vs %llu", what,
		   (unsigned long long)a->size, (unsigned long long)b->size);
	FUZZ_CHECK(a->longest == b->longest, "%s: longest line %zu vs %zu",
		   what, a->longest, b->longest);
	if (!a->too_big)
		FUZZ_CHECK(a->out.len == b->out.len &&
			   memcmp(mt_buf_cstr(&a->out), mt_buf_cstr(&b->out),
				  a->out.len) == 0,
			   "%s: output differs (%zu vs %zu octets)", what,
			   a->out.len, b->out.len);
}

/* The reference decoder: cut the input into lines at CRLF, bare CR and
 * bare LF; "." CRLF after a real CRLF (or at the very start) is the end; a
 * leading dot is removed when more follows on its line. A line still open
 * at the end of the input shows what the streaming decoder has released. */
static void reference(const uint8_t *p, size_t len,
		      enum mt_dot_bare_policy policy, struct decoded *d)
{
	bool after_crlf = true;
	size_t pos = 0;

	memset(d, 0, sizeof(*d));
	while (pos < len) {
		size_t j = pos, tlen;
		const uint8_t *c = p + pos;
		size_t clen;
		enum { CRLF, BARE_CR, BARE_LF, OPEN } term;

		while (j < len && p[j] != '\r' && p[j] != '\n')
			j++;
		clen = j - pos;
		if (j == len || (p[j] == '\r' && j + 1 == len)) {
			term = OPEN;
			tlen = len - j;
		} else if (p[j] == '\r' && p[j + 1] == '\n') {
			term = CRLF;
			tlen = 2;
		} else {
			term = p[j] == '\r' ? BARE_CR : BARE_LF;
			tlen = 1;
		}
		if (term == CRLF && after_crlf && clen == 1 && c[0] == '.') {
			d->end = true;
			pos = j + 2;
			break;
		}
		/* A lone "." on an open line may still become the end. */
		if (!(term == OPEN && clen == 1 && c[0] == '.')) {
			if (clen > 1 && c[0] == '.') {
				c++;
				clen--;
			}
			mt_buf_append(&d->out, c, clen);
			if (clen > d->longest)
				d->longest = clen;
		}
		if (term == CRLF) {
			mt_buf_append(&d->out, "\r\n", 2);
		} else if (term == BARE_CR || term == BARE_LF) {
			d->bare = true;
			if (policy == MT_DOT_BARE_NORMALIZE)
				mt_buf_append(&d->out, "\r\n", 2);
			else
				mt_buf_append_char(&d->out,
						   term == BARE_CR ? '\r' : '\n');
		}
		after_crlf = term == CRLF;
		pos = j + tlen;
	}
	d->consumed = pos;
	d->size = d->out.len;
	/* Every consumed octet is content, a line end or a leading dot. */
	d->nul = memchr(p, '\0', pos) != NULL;
}

static size_t strict_end(const uint8_t *p, size_t len)
{
	/* The DATA line's CRLF comes first: "." CRLF at the start ends. */
	if (len >= 3 && memcmp(p, ".\r\n", 3) == 0)
		return 3;
	for (size_t i = 0; i + 5 <= len; i++)
		if (memcmp(p + i, "\r\n.\r\n", 5) == 0)
			return i + 5;
	return 0;
}

static void decode_chunked(const uint8_t *p, size_t len, unsigned int strat,
			   uint32_t seed, struct mt_dot_decoder *dec,
			   struct decoded *d)
{
	size_t fed = 0, used = 0;

	while (fed < len && !dec->end) {
		size_t n = fuzz_chunk(strat, &seed, len - fed, 64);
		size_t u = mt_dot_decode(dec, p + fed, n, &d->out);

		FUZZ_CHECK(u == n || dec->end, "consumed %zu of %zu, no end",
			   u, n);
		FUZZ_CHECK(u <= n, "consumed more than given");
		used += u;
		fed += n;
	}
	take_results(d, dec, used);
}

static void decode_evbuffer(const uint8_t *p, size_t len, unsigned int strat,
			    uint32_t seed, bool by_ref,
			    struct mt_dot_decoder *dec, struct decoded *d)
{
	struct evbuffer *in = evbuffer_new();
	size_t fed = 0;

	while (fed < len && !dec->end) {
		size_t n = fuzz_chunk(strat, &seed, len - fed, 64);

		if (by_ref)
			evbuffer_add_reference(in, p + fed, n, NULL, NULL);
		else
			evbuffer_add(in, p + fed, n);
		fed += n;
		mt_dot_decode_evbuffer(dec, in, &d->out);
	}
	take_results(d, dec, fed - evbuffer_get_length(in));
	evbuffer_free(in);
}

static void check_verdict(const struct mt_dot_decoder *dec)
{
	const char *error = NULL;
	enum mt_dot_result r = mt_dot_decoder_result(dec, &error);
	enum mt_dot_result want =
		dec->too_big ? MT_DOT_RESULT_TOO_BIG :
		dec->bare_newline && dec->policy == MT_DOT_BARE_REJECT ?
		MT_DOT_RESULT_BARE_NEWLINE :
		dec->nul ? MT_DOT_RESULT_NUL :
		dec->max_line != 0 && dec->longest_line > dec->max_line ?
		MT_DOT_RESULT_LINE_TOO_LONG : MT_DOT_RESULT_OK;

	FUZZ_CHECK(r == want, "verdict %d, want %d", r, want);
	FUZZ_CHECK(r == MT_DOT_RESULT_OK || (error != NULL && *error != '\0'),
		   "verdict %d without a reason", r);
}

/* Encode msg (chunked), check the transparency of the result, decode it
 * back; *encoded_r gets the encoding. Returns the decoded message. */
static void encode_roundtrip(const uint8_t *msg, size_t len,
			     unsigned int strat, uint32_t seed,
			     struct mt_buf *encoded_r, struct mt_buf *decoded_r)
{
	struct mt_dot_encoder enc;
	struct mt_dot_decoder dec;
	size_t fed = 0;

	mt_dot_encoder_init(&enc);
	while (fed < len) {
		size_t n = fuzz_chunk(strat, &seed, len - fed, 64);

		mt_dot_encode(&enc, msg + fed, n, encoded_r);
		fed += n;
	}
	mt_dot_encode_finish(&enc, encoded_r);
	FUZZ_CHECK(enc.bol && !enc.cr_pending, "encoder not reset by finish");

	const char *e = mt_buf_cstr(encoded_r);
	size_t elen = encoded_r->len;

	FUZZ_CHECK(elen >= 3 && memcmp(e + elen - 3, ".\r\n", 3) == 0 &&
		   (elen == 3 || (elen >= 5 && e[elen - 5] == '\r' &&
				  e[elen - 4] == '\n')),
		   "encoding does not end in [CRLF] \".\" CRLF");
	for (size_t i = 0; i < elen; i++) {
		if (e[i] == '\r')
			FUZZ_CHECK(i + 1 < elen && e[i + 1] == '\n',
				   "bare CR at %zu in the encoding", i);
		if (e[i] == '\n')
			FUZZ_CHECK(i > 0 && e[i - 1] == '\r',
				   "bare LF at %zu in the encoding", i);
		/* Every line start: a stuffed dot, or the final "." line. */
		if ((i == 0 || e[i - 1] == '\n') && e[i] == '.')
			FUZZ_CHECK(i == elen - 3 || e[i + 1] == '.',
				   "unstuffed dot at %zu in the encoding", i);
	}

	mt_dot_decoder_init(&dec, MT_DOT_BARE_REJECT, 0, 0);
	size_t used = mt_dot_decode(&dec, e, elen, decoded_r);

	FUZZ_CHECK(dec.end && used == elen,
		   "decoding the encoding ended at %zu of %zu (end=%d)", used,
		   elen, dec.end);
	FUZZ_CHECK(!dec.bare_newline, "bare newline in the encoding");
}

/* msg with every CRLF, bare CR and bare LF as CRLF, and a CRLF after an
 * unterminated last line: what encode-then-decode must give back. */
static void normalize(const uint8_t *msg, size_t len, struct mt_buf *out)
{
	for (size_t i = 0; i < len; i++) {
		if (msg[i] == '\r' && i + 1 < len && msg[i + 1] == '\n')
			i++;
		if (msg[i] == '\r' || msg[i] == '\n')
			mt_buf_append(out, "\r\n", 2);
		else
			mt_buf_append_char(out, (char)msg[i]);
	}
	if (len > 0 && msg[len - 1] != '\r' && msg[len - 1] != '\n')
		mt_buf_append(out, "\r\n", 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t max_sizes[] = { 0, 0, 0, 0, 1, 2, 3, 5, 8, 13,
					      64, 100, 1000, 4096, 0, 0 };
	static const size_t max_lines[] = { 0, 0, 0, 0, 1, 2, 3, 4, 8, 16,
					    76, 78, 998, 1000, 0, 0 };
	struct fuzz_input in = { data, size };
	uint8_t mode = fuzz_byte(&in);
	uint8_t sizes = fuzz_byte(&in);
	uint32_t seed = fuzz_byte(&in);
	enum mt_dot_bare_policy policy = (mode & 1) != 0 ?
		MT_DOT_BARE_NORMALIZE : MT_DOT_BARE_REJECT;
	unsigned int dstrat = (mode >> 1) & 3, estrat = (mode >> 3) & 3;
	bool by_ref = (mode & 0x20) != 0;
	uint64_t max_size = max_sizes[sizes & 15];
	size_t max_line = max_lines[sizes >> 4];
	const uint8_t *p = in.data;
	size_t len = in.len;
	struct mt_dot_decoder dw, dc, de;
	struct decoded whole = { .out = MT_BUF_INIT },
		chunked = { .out = MT_BUF_INIT }, evb = { .out = MT_BUF_INIT },
		ref;

	/* Whole, chunked and evbuffer decodes agree. */
	mt_dot_decoder_init(&dw, policy, max_size, max_line);
	take_results(&whole, &dw, mt_dot_decode(&dw, p, len, &whole.out));
	mt_dot_decoder_init(&dc, policy, max_size, max_line);
	decode_chunked(p, len, dstrat, seed, &dc, &chunked);
	same(&whole, &chunked, "whole vs chunked");
	mt_dot_decoder_init(&de, policy, max_size, max_line);
	decode_evbuffer(p, len, dstrat ^ 1, seed, by_ref, &de, &evb);
	same(&whole, &evb, "whole vs evbuffer");

	/* The end is where a strict receiver sees it, and only there. */
	size_t send = strict_end(p, len);

	FUZZ_CHECK(whole.end == (send != 0) &&
		   (!whole.end || whole.consumed == send),
		   "end=%d consumed %zu, strict receiver ends at %zu",
		   whole.end, whole.consumed, send);

	/* The reference decoder, without limits. */
	reference(p, len, policy, &ref);
	FUZZ_CHECK(ref.end == whole.end && ref.consumed == whole.consumed,
		   "reference end=%d at %zu", ref.end, ref.consumed);
	FUZZ_CHECK(ref.size == whole.size, "size %llu, reference %llu",
		   (unsigned long long)whole.size,
		   (unsigned long long)ref.size);
	FUZZ_CHECK(ref.bare == whole.bare, "bare flag differs from reference");
	FUZZ_CHECK(ref.nul == whole.nul, "NUL flag differs from reference");
	FUZZ_CHECK(ref.longest == whole.longest,
		   "longest line %zu, reference %zu", whole.longest,
		   ref.longest);
	FUZZ_CHECK(whole.too_big == (max_size != 0 && ref.size > max_size),
		   "too big %d with size %llu, limit %llu", whole.too_big,
		   (unsigned long long)ref.size,
		   (unsigned long long)max_size);
	if (!whole.too_big)
		FUZZ_CHECK(ref.out.len == whole.out.len &&
			   memcmp(mt_buf_cstr(&ref.out),
				  mt_buf_cstr(&whole.out), ref.out.len) == 0,
			   "output differs from the reference");
	else
		FUZZ_CHECK(whole.out.len <= max_size,
			   "%zu octets out past the %llu limit", whole.out.len,
			   (unsigned long long)max_size);
	check_verdict(&dw);

	/* A complete, normalised message survives encode + decode. */
	if (whole.end && !whole.too_big &&
	    (policy == MT_DOT_BARE_NORMALIZE || !whole.bare)) {
		struct mt_buf enc = MT_BUF_INIT, dec = MT_BUF_INIT;

		encode_roundtrip((const uint8_t *)mt_buf_cstr(&whole.out),
				 whole.out.len, estrat, seed, &enc, &dec);
		FUZZ_CHECK(dec.len == whole.out.len &&
			   memcmp(mt_buf_cstr(&dec), mt_buf_cstr(&whole.out),
				  dec.len) == 0,
			   "decode(encode(decoded message)) differs");
		mt_buf_free(&enc);
		mt_buf_free(&dec);
	}

	/* Any octets as a message: encode, check, decode back. */
	{
		struct mt_buf enc = MT_BUF_INIT, dec = MT_BUF_INIT,
			norm = MT_BUF_INIT, enc1 = MT_BUF_INIT,
			dec1 = MT_BUF_INIT;

		encode_roundtrip(p, len, estrat, seed, &enc, &dec);
		normalize(p, len, &norm);
		FUZZ_CHECK(dec.len == norm.len &&
			   memcmp(mt_buf_cstr(&dec), mt_buf_cstr(&norm),
				  dec.len) == 0,
			   "decode(encode(m)) is not m with CRLF line ends");
		/* Chunking does not change the encoding. */
		encode_roundtrip(p, len, 0, 0, &enc1, &dec1);
		FUZZ_CHECK(enc.len == enc1.len &&
			   memcmp(mt_buf_cstr(&enc), mt_buf_cstr(&enc1),
				  enc.len) == 0,
			   "chunked encoding differs from whole");
		mt_buf_free(&enc);
		mt_buf_free(&dec);
		mt_buf_free(&norm);
		mt_buf_free(&enc1);
		mt_buf_free(&dec1);
	}

	mt_buf_free(&whole.out);
	mt_buf_free(&chunked.out);
	mt_buf_free(&evb.out);
	mt_buf_free(&ref.out);
	return 0;
}
