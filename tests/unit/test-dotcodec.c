/* test-dotcodec.c — unit tests for lib/dotcodec.c: un-stuffing with every
 * chunking, the SMTP-smuggling end-of-data variants under both bare-newline
 * policies, NUL octets (flagged and refused under both), size and line
 * limits, pipelined input after the end, the
 * encoder, and randomised properties (end found exactly where a strict
 * receiver finds it; decode(encode(m)) == m with CRLF line ends). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <event2/buffer.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dotcodec.h"

struct dec_case {
	const char *name;
	const char *input;
	size_t input_len;	/* 0: strlen(input) */
	const char *out_reject;	/* output under MT_DOT_BARE_REJECT */
	const char *out_normal;	/* under MT_DOT_BARE_NORMALIZE; NULL: same */
	size_t out_len;		/* 0: strlen() of the output */
	bool end;
	const char *rest;	/* input left after the end */
	bool bare;
};

#define END "\r\n.\r\n"
#define Q "QUIT\r\n"

static const struct dec_case dec_cases[] = {
	{ "empty message", ".\r\n", 0, "", NULL, 0, true, "", false },
	{ "one line", "a\r\n.\r\n", 0, "a\r\n", NULL, 0, true, "", false },
	{ "pipelined rest", "a\r\n.\r\n" Q, 0, "a\r\n", NULL, 0, true, Q, false },
	{ "empty then rest", ".\r\nRSET\r\n", 0, "", NULL, 0, true, "RSET\r\n",
	  false },
	{ "stuffed dot", "..a\r\n.\r\n", 0, ".a\r\n", NULL, 0, true, "", false },
	{ "stuffed lone dot", "a\r\n..\r\n.\r\n", 0, "a\r\n.\r\n", NULL, 0, true,
	  "", false },
	{ "unstuffed dot deleted", ".a\r\n.\r\n", 0, "a\r\n", NULL, 0, true, "",
	  false },
	{ "dot in line", "a.b\r\n .\r\n.\r\n", 0, "a.b\r\n .\r\n", NULL, 0, true,
	  "", false },
	{ "no end yet", "a\r\nb\r\n", 0, "a\r\nb\r\n", NULL, 0, false, "", false },
	{ "pending dot CR", "a\r\n.\r", 0, "a\r\n", NULL, 0, false, "", false },
	{ "empty lines", "\r\n\r\n.\r\n", 0, "\r\n\r\n", NULL, 0, true, "",
	  false },
	/* NUL passes through, and the verdict refuses it (run_dec_case). */
	{ "NUL passes", "a\0b\r\n.\r\n", 8, "a\0b\r\n", NULL, 5, true, "",
	  false },
	/* SMTP smuggling: none of these end the data before END. */
	{ "LF.LF", "a\n.\nX" END Q, 0, "a\n.\nX\r\n",
	  "a\r\n.\r\nX\r\n", 0, true, Q, true },
	{ "CR.CR", "a\r.\rX" END Q, 0, "a\r.\rX\r\n",
	  "a\r\n.\r\nX\r\n", 0, true, Q, true },
	{ "LF.CRLF", "a\n.\r\nX" END Q, 0, "a\n.\r\nX\r\n",
	  "a\r\n.\r\nX\r\n", 0, true, Q, true },
	{ "CRLF.LF", "a\r\n.\nX" END Q, 0, "a\r\n.\nX\r\n",
	  "a\r\n.\r\nX\r\n", 0, true, Q, true },
	{ "CR.CRLF", "a\r.\r\nX" END Q, 0, "a\r.\r\nX\r\n",
	  "a\r\n.\r\nX\r\n", 0, true, Q, true },
	{ "CRLF.CR", "a\r\n.\rX" END Q, 0, "a\r\n.\rX\r\n",
	  "a\r\n.\r\nX\r\n", 0, true, Q, true },
	{ "LF.CR", "a\n.\rX" END Q, 0, "a\n.\rX\r\n", "a\r\n.\r\nX\r\n", 0,
	  true, Q, true },
	{ "CR.LF", "a\r.\nX" END Q, 0, "a\r.\nX\r\n", "a\r\n.\r\nX\r\n", 0,
	  true, Q, true },
	{ "first line bare LF", ".\nX" END, 0, ".\nX\r\n", ".\r\nX\r\n", 0,
	  true, "", true },
	{ "CRLF.CR CRLF", "a\r\n.\r\r\n.\r\n" Q, 0, "a\r\n.\r\r\n",
	  "a\r\n.\r\n\r\n", 0, true, Q, true },
	{ "CR CRLF.CRLF", "a\r\r\n.\r\n" Q, 0, "a\r\r\n", "a\r\n\r\n", 0, true,
	  Q, true },
	{ "stuffed after bare LF", "a\n..b\r\n.\r\n", 0, "a\n.b\r\n",
	  "a\r\n.b\r\n", 0, true, "", true },
	{ "space dot", "a\r\n .\r\nX" END, 0, "a\r\n .\r\nX\r\n", NULL, 0, true,
	  "", false },
	{ "dot NUL", "a\r\n.\0\r\nX" END, 13, "a\r\n\0\r\nX\r\n", NULL, 9,
	  true, "", false },
	{ "LF.LF only", "a\n.\n", 0, "a\n.\n", "a\r\n.\r\n", 0, false, "", true },
};

/* Decode `c` in chunks of `step` octets (0: whole); check everything. */
static void run_dec_case(const struct dec_case *c,
			 enum mt_dot_bare_policy policy, size_t step)
{
	size_t len = c->input_len ? c->input_len : strlen(c->input);
	const char *want = c->out_reject;
	size_t want_len, consumed = 0;
	struct mt_dot_decoder dec;
	struct mt_buf out = MT_BUF_INIT;
	const char *error = NULL;

	if (policy == MT_DOT_BARE_NORMALIZE && c->out_normal != NULL)
		want = c->out_normal;
	want_len = c->out_len ? c->out_len : strlen(want);

	mt_dot_decoder_init(&dec, policy, 0, 0);
	for (size_t off = 0; off < len && !dec.end;) {
		size_t n = step == 0 || len - off < step ? len - off : step;
		size_t used = mt_dot_decode(&dec, c->input + off, n, &out);

		if (!dec.end && used != n)
			fail_msg("%s: consumed %zu of %zu before the end",
				 c->name, used, n);
		consumed += used;
		off += n;
	}
	if (dec.end != c->end || out.len != want_len ||
	    memcmp(mt_buf_cstr(&out), want, want_len) != 0 ||
	    len - consumed != strlen(c->rest) ||
	    memcmp(c->input + consumed, c->rest, strlen(c->rest)) != 0 ||
	    dec.bare_newline != c->bare)
		fail_msg("case '%s' policy %d step %zu: end=%d out=%zu "
			 "consumed=%zu bare=%d", c->name, policy, step, dec.end,
			 out.len, consumed, dec.bare_newline);
	assert_int_equal(dec.size, out.len);
	/* A NUL anywhere in the message flags it, under either policy. */
	assert_int_equal(dec.nul, memchr(c->input, '\0', consumed) != NULL);
	if (c->end) {
		enum mt_dot_result r = mt_dot_decoder_result(&dec, &error);

		assert_int_equal(r, c->bare && policy == MT_DOT_BARE_REJECT ?
				 MT_DOT_RESULT_BARE_NEWLINE : dec.nul ?
				 MT_DOT_RESULT_NUL : MT_DOT_RESULT_OK);
		/* Once ended, the decoder takes nothing more. */
		assert_int_equal(mt_dot_decode(&dec, "x", 1, &out), 0);
	}
	mt_buf_free(&out);
}

static void test_decode_cases(void **state)
{
	static const size_t steps[] = { 0, 1, 2, 3, 4, 5, 7 };

	(void)state;
	for (size_t i = 0; i < sizeof(dec_cases) / sizeof(dec_cases[0]); i++)
		for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			run_dec_case(&dec_cases[i], MT_DOT_BARE_REJECT,
				     steps[s]);
			run_dec_case(&dec_cases[i], MT_DOT_BARE_NORMALIZE,
				     steps[s]);
		}
}

/* Decode a whole string with limits; return the verdict. */
static enum mt_dot_result decode_limits(const char *in, uint64_t max_size,
					size_t max_line,
					struct mt_dot_decoder *dec,
					struct mt_buf *out)
{
	const char *error = NULL;
	size_t len = strlen(in);
	enum mt_dot_result r;

	mt_buf_reset(out);
	mt_dot_decoder_init(dec, MT_DOT_BARE_REJECT, max_size, max_line);
	for (size_t i = 0; i < len && !dec->end; i++)
		mt_dot_decode(dec, in + i, 1, out);
	assert_true(dec->end);
	r = mt_dot_decoder_result(dec, &error);
	if (r != MT_DOT_RESULT_OK)
		assert_non_null(error);
	return r;
}

static void test_limits(void **state)
{
	struct mt_dot_decoder dec;
	struct mt_buf out = MT_BUF_INIT;

	(void)state;
	/* 10 octets fit in max_size 10; 12 do not, but the end is found. */
	assert_int_equal(decode_limits("01234567\r\n.\r\n", 10, 0, &dec, &out),
			 MT_DOT_RESULT_OK);
	assert_int_equal(out.len, 10);
	assert_int_equal(decode_limits("0123456789\r\n.\r\n", 10, 0, &dec,
				       &out), MT_DOT_RESULT_TOO_BIG);
	assert_true(dec.too_big);
	assert_int_equal(dec.size, 12);
	assert_true(out.len <= 10);
	assert_int_equal(decode_limits("0123456789\r\n" "0123456789\r\n"
				       "\n.\n\r\n.\r\n", 10, 0, &dec, &out),
			 MT_DOT_RESULT_TOO_BIG);
	assert_int_equal(dec.size, 29);

	/* Line limit: un-stuffed octets, CRLF not counted. */
	assert_int_equal(decode_limits("12345\r\n..345\r\n.\r\n", 0, 5, &dec,
				       &out), MT_DOT_RESULT_OK);
	assert_int_equal(dec.longest_line, 5);
	assert_int_equal(decode_limits("1\r\n123456\r\n1\r\n.\r\n", 0, 5, &dec,
				       &out), MT_DOT_RESULT_LINE_TOO_LONG);
	assert_int_equal(dec.longest_line, 6);
	assert_int_equal(decode_limits("1\n123456\n.\r\n" END, 0, 5, &dec,
				       &out), MT_DOT_RESULT_BARE_NEWLINE);
	mt_buf_free(&out);
}

/* Decode in[0..len) in steps; check the end and the verdict. */
static void check_nul(const char *in, size_t len, size_t step,
		      enum mt_dot_bare_policy policy, bool end,
		      enum mt_dot_result want)
{
	struct mt_dot_decoder dec;
	struct mt_buf out = MT_BUF_INIT;
	const char *error = NULL;

	mt_dot_decoder_init(&dec, policy, 0, 0);
	for (size_t off = 0; off < len && !dec.end; off += step)
		mt_dot_decode(&dec, in + off, len - off < step ? len - off : step,
			      &out);
	assert_int_equal(dec.end, end);
	if (!end)
		assert_true(dec.nul);
	else if (mt_dot_decoder_result(&dec, &error) != want)
		fail_msg("NUL case %zu octets step %zu policy %d: verdict %d, "
			 "want %d", len, step, policy,
			 mt_dot_decoder_result(&dec, &error), want);
	if (want != MT_DOT_RESULT_OK && end)
		assert_non_null(error);
	mt_buf_free(&out);
}

/* NUL octets: wherever they stand (line start, after a dot, next to a
 * line end, across chunk boundaries), the message is flagged and its
 * verdict is NUL unless a bare newline under reject comes first; the end
 * of data is still only CRLF "." CRLF, so CRLF NUL "." CRLF is content. */
static void test_nul(void **state)
{
	static const struct {
		const char *input;
		size_t len;
		bool end;
		enum mt_dot_result reject, normalize;
	} cases[] = {
#define IN(lit) lit, sizeof(lit) - 1
		{ IN("a\r\n\0.\r\nX\r\n.\r\n"), true,
		  MT_DOT_RESULT_NUL, MT_DOT_RESULT_NUL },
		{ IN("\0\r\n.\r\n"), true, MT_DOT_RESULT_NUL, MT_DOT_RESULT_NUL },
		{ IN("..\0\r\n.\r\n"), true, MT_DOT_RESULT_NUL, MT_DOT_RESULT_NUL },
		{ IN("a\r\n.\0\r\n.\r\n"), true, MT_DOT_RESULT_NUL,
		  MT_DOT_RESULT_NUL },
		{ IN("a\0\r\0\n\r\n.\r\n"), true, MT_DOT_RESULT_BARE_NEWLINE,
		  MT_DOT_RESULT_NUL },
		{ IN("a\n\0.\n\r\n.\r\n"), true, MT_DOT_RESULT_BARE_NEWLINE,
		  MT_DOT_RESULT_NUL },
		{ IN("a\r\n\0.\r\n"), false, MT_DOT_RESULT_NUL, MT_DOT_RESULT_NUL },
		{ IN("no NUL\r\n.\r\n\0"), true, MT_DOT_RESULT_OK,
		  MT_DOT_RESULT_OK },
#undef IN
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (size_t step = 1; step <= cases[i].len; step++) {
			check_nul(cases[i].input, cases[i].len, step,
				  MT_DOT_BARE_REJECT, cases[i].end,
				  cases[i].reject);
			check_nul(cases[i].input, cases[i].len, step,
				  MT_DOT_BARE_NORMALIZE, cases[i].end,
				  cases[i].normalize);
		}
}

/* The evbuffer wrapper drains exactly the message and leaves the rest. */
static void test_evbuffer(void **state)
{
	static const char *const parts[] = {
		"Subject: x\r\n\r\n", "..hidden\r", "\n.", "\r", "\n",
		"MAIL FROM:<a@b>\r\n",
	};
	struct evbuffer *in = evbuffer_new();
	struct mt_dot_decoder dec;
	struct mt_buf out = MT_BUF_INIT;

	(void)state;
	mt_dot_decoder_init(&dec, MT_DOT_BARE_REJECT, 0, 998);
	for (size_t i = 0; i < 6; i++) {
		/* Separate chains, so the wrapper has to walk them. */
		evbuffer_add_reference(in, parts[i], strlen(parts[i]), NULL,
				       NULL);
		if (i < 4)
			assert_false(mt_dot_decode_evbuffer(&dec, in, &out));
	}
	assert_true(mt_dot_decode_evbuffer(&dec, in, &out));
	assert_string_equal(mt_buf_cstr(&out), "Subject: x\r\n\r\n.hidden\r\n");
	assert_int_equal(evbuffer_get_length(in), 17);
	assert_memory_equal(evbuffer_pullup(in, -1), "MAIL FROM:<a@b>\r\n", 17);
	mt_buf_free(&out);
	evbuffer_free(in);
}

struct enc_case {
	const char *input, *output;
};

static const struct enc_case enc_cases[] = {
	{ "", ".\r\n" },
	{ "a", "a\r\n.\r\n" },
	{ "a\r\n", "a\r\n.\r\n" },
	{ ".", "..\r\n.\r\n" },
	{ ".a\r\n", "..a\r\n.\r\n" },
	{ "a.b\r\n", "a.b\r\n.\r\n" },
	{ "..\r\n", "...\r\n.\r\n" },
	{ "\r\n.\r\n", "\r\n..\r\n.\r\n" },
	{ "a\n.\nb", "a\r\n..\r\nb\r\n.\r\n" },
	{ "a\r.b\r", "a\r\n..b\r\n.\r\n" },
	{ "a\r\r\n.", "a\r\n\r\n..\r\n.\r\n" },
	{ "\n\n", "\r\n\r\n.\r\n" },
	{ "x\r", "x\r\n.\r\n" },
};

/* Encode in two pieces split at `cut`, or a byte at a time (cut == -1). */
static char *encode(const char *in, size_t len, long cut)
{
	struct mt_dot_encoder enc;
	struct mt_buf out = MT_BUF_INIT;

	mt_dot_encoder_init(&enc);
	if (cut < 0) {
		for (size_t i = 0; i < len; i++)
			mt_dot_encode(&enc, in + i, 1, &out);
	} else {
		mt_dot_encode(&enc, in, (size_t)cut, &out);
		mt_dot_encode(&enc, in + cut, len - (size_t)cut, &out);
	}
	mt_dot_encode_finish(&enc, &out);
	return mt_buf_steal(&out);
}

static void test_encode(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(enc_cases) / sizeof(enc_cases[0]); i++) {
		const char *in = enc_cases[i].input;
		size_t len = strlen(in);

		for (long cut = -1; cut <= (long)len; cut++) {
			char *s = encode(in, len, cut);

			if (strcmp(s, enc_cases[i].output) != 0)
				fail_msg("encode case %zu cut %ld: got '%s'",
					 i, cut, s);
			free(s);
		}
	}
}

/* Reference: where a strict receiver sees the end (octets consumed). */
static size_t ref_end(const char *in, size_t len, bool *found)
{
	char *s = malloc(len + 2);
	char *p;
	size_t pos = len;

	memcpy(s, "\r\n", 2);
	memcpy(s + 2, in, len);
	p = memmem(s, len + 2, END, 5);
	*found = p != NULL;
	if (p != NULL)
		pos = (size_t)(p - s) + 5 - 2;
	free(s);
	return pos;
}

/* Reference CRLF normalisation the encoder promises (plus final CRLF). */
static void ref_normalize(const char *in, size_t len, struct mt_buf *out)
{
	for (size_t i = 0; i < len; i++) {
		if (in[i] == '\r' && i + 1 < len && in[i + 1] == '\n')
			continue;
		if (in[i] == '\r' || in[i] == '\n')
			mt_buf_append(out, "\r\n", 2);
		else
			mt_buf_append_char(out, in[i]);
	}
	if (out->len > 0 && (out->len < 2 ||
	    memcmp(out->data + out->len - 2, "\r\n", 2) != 0))
		mt_buf_append(out, "\r\n", 2);
}

static void test_random(void **state)
{
	static const char alphabet[] = { '\r', '\n', '.', 'a', '\r', '\n' };
	char in[24];

	(void)state;
	srand(5321);
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = (size_t)rand() % sizeof(in), used = 0;
		struct mt_dot_decoder dec;
		struct mt_dot_encoder enc;
		struct mt_buf out = MT_BUF_INIT, wire = MT_BUF_INIT;
		struct mt_buf ref = MT_BUF_INIT;
		bool found;
		size_t want;

		for (size_t i = 0; i < len; i++)
			in[i] = alphabet[rand() % sizeof(alphabet)];

		/* The decoder ends exactly where a strict receiver does. */
		want = ref_end(in, len, &found);
		mt_dot_decoder_init(&dec, rand() % 2 ? MT_DOT_BARE_REJECT :
				    MT_DOT_BARE_NORMALIZE, 0, 0);
		for (size_t off = 0; off < len && !dec.end;) {
			size_t n = 1 + (size_t)rand() % 4;

			n = n > len - off ? len - off : n;
			used += mt_dot_decode(&dec, in + off, n, &out);
			off += n;
		}
		assert_int_equal(dec.end, found);
		assert_int_equal(used, want);

		/* Round trip: encode, then decode the wire form. */
		mt_dot_encoder_init(&enc);
		for (size_t off = 0; off < len;) {
			size_t n = 1 + (size_t)rand() % 4;

			n = n > len - off ? len - off : n;
			mt_dot_encode(&enc, in + off, n, &wire);
			off += n;
		}
		mt_dot_encode_finish(&enc, &wire);
		mt_buf_reset(&out);
		mt_dot_decoder_init(&dec, MT_DOT_BARE_REJECT, 0, 0);
		assert_int_equal(mt_dot_decode(&dec, wire.data, wire.len, &out),
				 wire.len);
		assert_true(dec.end);
		assert_false(dec.bare_newline);
		ref_normalize(in, len, &ref);
		assert_int_equal(out.len, ref.len);
		assert_memory_equal(mt_buf_cstr(&out), mt_buf_cstr(&ref),
				    ref.len);
		mt_buf_free(&out);
		mt_buf_free(&wire);
		mt_buf_free(&ref);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_cases),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_nul),
		cmocka_unit_test(test_evbuffer),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
