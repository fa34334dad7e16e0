/* test-lineio.c — unit tests for lib/lineio.c: line reading under every
 * policy, fed whole, a byte at a time and in odd splits; overlong lines;
 * bare LF/CR; NUL; and the reply writer's refusal to split a line. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <event2/buffer.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lineio.h"

#define MAX_RESULTS 8

struct result {
	enum mt_line_status status;
	const char *line;	/* content (raw for errors); "" for TOO_LONG */
	size_t line_len;	/* 0: use strlen(line) */
};

struct line_case {
	const char *name;
	const char *input;
	size_t input_len;	/* 0: strlen(input) */
	size_t max_len;
	enum mt_line_policy policy;
	struct result expect[MAX_RESULTS];
	size_t n_expect;
	const char *rest;	/* input left over after the last result */
};

#define S MT_LINE_STRICT_CRLF
#define L MT_LINE_ACCEPT_LF

static const struct line_case cases[] = {
	{ "one line", "HELO x\r\n", 0, 512, S,
	  { { MT_LINE_OK, "HELO x", 0 } }, 1, "" },
	{ "empty line", "\r\n", 0, 512, S, { { MT_LINE_OK, "", 0 } }, 1, "" },
	{ "pipelined", "MAIL FROM:<a@b>\r\nRCPT TO:<c@d>\r\nDATA\r\n", 0, 512,
	  S, { { MT_LINE_OK, "MAIL FROM:<a@b>", 0 },
	       { MT_LINE_OK, "RCPT TO:<c@d>", 0 }, { MT_LINE_OK, "DATA", 0 } },
	  3, "" },
	{ "partial tail stays", "A\r\nBC", 0, 512, S,
	  { { MT_LINE_OK, "A", 0 } }, 1, "BC" },
	{ "CR at the end waits", "A\r", 0, 512, S, { { 0, NULL, 0 } }, 0,
	  "A\r" },
	{ "bare LF strict", "A\nB\r\n", 0, 512, S,
	  { { MT_LINE_BARE_LF, "A", 0 }, { MT_LINE_OK, "B", 0 } }, 2, "" },
	{ "bare LF accepted", "A\nB\r\n", 0, 512, L,
	  { { MT_LINE_OK, "A", 0 }, { MT_LINE_OK, "B", 0 } }, 2, "" },
	{ "bare CR strict", "A\rB\r\nC\r\n", 0, 512, S,
	  { { MT_LINE_BARE_CR, "A\rB", 0 }, { MT_LINE_OK, "C", 0 } }, 2, "" },
	{ "bare CR lenient", "A\rB\r\nC\r\n", 0, 512, L,
	  { { MT_LINE_BARE_CR, "A\rB", 0 }, { MT_LINE_OK, "C", 0 } }, 2, "" },
	{ "CR CR LF", "A\r\r\n", 0, 512, S,
	  { { MT_LINE_BARE_CR, "A\r", 0 } }, 1, "" },
	{ "CR never ends a line", "RCPT TO:<a@b>\rDATA\r\n", 0, 512, L,
	  { { MT_LINE_BARE_CR, "RCPT TO:<a@b>\rDATA", 0 } }, 1, "" },
	{ "NUL", "A\0B\r\nC\r\n", 8, 512, S,
	  { { MT_LINE_NUL, "A\0B", 3 }, { MT_LINE_OK, "C", 0 } }, 2, "" },
	{ "longest allowed", "123456\r\n", 0, 8, S,
	  { { MT_LINE_OK, "123456", 0 } }, 1, "" },
	{ "one over", "1234567\r\nQUIT\r\n", 0, 8, S,
	  { { MT_LINE_TOO_LONG, "", 0 }, { MT_LINE_OK, "QUIT", 0 } }, 2, "" },
	{ "LF line counts as CRLF", "1234567\n123456\n", 0, 8, L,
	  { { MT_LINE_TOO_LONG, "", 0 }, { MT_LINE_OK, "123456", 0 } }, 2,
	  "" },
	{ "far too long", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
	  "QUIT\r\n", 0, 10, S,
	  { { MT_LINE_TOO_LONG, "", 0 }, { MT_LINE_OK, "QUIT", 0 } }, 2, "" },
	{ "too long ends at bare LF", "aaaaaaaaaaaaaaaa\nB\r\n", 0, 8, S,
	  { { MT_LINE_TOO_LONG, "", 0 }, { MT_LINE_OK, "B", 0 } }, 2, "" },
	{ "too long, end not yet seen", "aaaaaaaaaaaaaaaaaaaaaaaa\r", 0, 8, S,
	  { { 0, NULL, 0 } }, 0, "" },
	{ "two overlong lines", "aaaaaaaaaa\r\nbbbbbbbbbbbb\r\nC\r\n", 0, 8,
	  S, { { MT_LINE_TOO_LONG, "", 0 }, { MT_LINE_TOO_LONG, "", 0 },
	       { MT_LINE_OK, "C", 0 } }, 3, "" },
	{ "too long beats bare LF", "12345678\nX\r\n", 0, 8, S,
	  { { MT_LINE_TOO_LONG, "", 0 }, { MT_LINE_OK, "X", 0 } }, 2, "" },
};

/* Call mt_line_read until NEED_MORE, appending results to got[]. */
static void read_all(struct mt_line_reader *r, struct evbuffer *in,
		     struct result *got, char **lines, size_t *n_got)
{
	struct mt_buf line = MT_BUF_INIT;
	enum mt_line_status st;
	const char *error = NULL;

	while ((st = mt_line_read(r, in, &line, &error)) != MT_LINE_NEED_MORE) {
		assert_true(*n_got < MAX_RESULTS);
		if (st == MT_LINE_OK)
			assert_memory_equal(mt_buf_cstr(&line) + line.len, "", 1);
		else
			assert_non_null(error);
		got[*n_got].status = st;
		got[*n_got].line_len = line.len;
		lines[*n_got] = malloc(line.len + 1);
		memcpy(lines[*n_got], mt_buf_cstr(&line), line.len + 1);
		(*n_got)++;
	}
	mt_buf_free(&line);
}

/* Feed the case in pieces of `step` octets (0: all at once) and check. */
static void run_case(const struct line_case *c, size_t step)
{
	size_t len = c->input_len ? c->input_len : strlen(c->input);
	struct evbuffer *in = evbuffer_new();
	struct mt_line_reader r;
	struct result got[MAX_RESULTS];
	char *lines[MAX_RESULTS];
	size_t n_got = 0;

	mt_line_reader_init(&r, c->max_len, c->policy);
	for (size_t off = 0; off < len;) {
		size_t n = step == 0 || len - off < step ? len - off : step;

		evbuffer_add(in, c->input + off, n);
		off += n;
		read_all(&r, in, got, lines, &n_got);
	}
	bool ok = n_got == c->n_expect;
	for (size_t i = 0; i < n_got; i++) {
		size_t want = 0;

		if (ok) {
			want = c->expect[i].line_len ? c->expect[i].line_len :
				strlen(c->expect[i].line);
			ok = got[i].status == c->expect[i].status &&
				got[i].line_len == want &&
				memcmp(lines[i], c->expect[i].line, want) == 0;
		}
		free(lines[i]);
	}
	if (!ok)
		fail_msg("case '%s' (step %zu): results differ", c->name, step);
	assert_int_equal(evbuffer_get_length(in), strlen(c->rest));
	assert_memory_equal(evbuffer_pullup(in, -1), c->rest, strlen(c->rest));
	evbuffer_free(in);
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run_case(&cases[i], 0);
		run_case(&cases[i], 1);
		run_case(&cases[i], 2);
		run_case(&cases[i], 3);
		run_case(&cases[i], 7);
	}
}

/* A peer trickling an endless line holds at most max_len octets. */
static void test_overlong_memory_bounded(void **state)
{
	struct evbuffer *in = evbuffer_new();
	struct mt_line_reader r;
	struct mt_buf line = MT_BUF_INIT;
	const char *error = NULL;

	(void)state;
	mt_line_reader_init(&r, 64, MT_LINE_STRICT_CRLF);
	for (int i = 0; i < 10000; i++) {
		evbuffer_add(in, "xxxxxxxxxxxxxxxx", 16);
		assert_int_equal(mt_line_read(&r, in, &line, &error),
				 MT_LINE_NEED_MORE);
		assert_true(evbuffer_get_length(in) < 64);
	}
	evbuffer_add(in, "\r\nNOOP\r\n", 8);
	assert_int_equal(mt_line_read(&r, in, &line, &error),
			 MT_LINE_TOO_LONG);
	assert_string_equal(error, "line too long");
	assert_int_equal(mt_line_read(&r, in, &line, &error), MT_LINE_OK);
	assert_string_equal(mt_buf_cstr(&line), "NOOP");
	mt_buf_free(&line);
	evbuffer_free(in);
}

/* A byte at a time, each byte is scanned once: the scan offset advances. */
static void test_trickle_is_linear(void **state)
{
	const size_t n = 200000;
	struct evbuffer *in = evbuffer_new();
	struct mt_line_reader r;
	struct mt_buf line = MT_BUF_INIT;
	const char *error = NULL;

	(void)state;
	mt_line_reader_init(&r, n + 2, MT_LINE_STRICT_CRLF);
	for (size_t i = 0; i < n; i++) {
		evbuffer_add(in, "y", 1);
		assert_int_equal(mt_line_read(&r, in, &line, &error),
				 MT_LINE_NEED_MORE);
		assert_int_equal(r.scanned, i + 1);
	}
	evbuffer_add(in, "\r\n", 2);
	assert_int_equal(mt_line_read(&r, in, &line, &error), MT_LINE_OK);
	assert_int_equal(line.len, n);
	assert_int_equal(r.scanned, 0);
	mt_buf_free(&line);
	evbuffer_free(in);
}

/* Input taken away behind the reader's back must not confuse it. */
static void test_external_drain(void **state)
{
	struct evbuffer *in = evbuffer_new();
	struct mt_line_reader r;
	struct mt_buf line = MT_BUF_INIT;
	const char *error = NULL;

	(void)state;
	mt_line_reader_init(&r, 512, MT_LINE_STRICT_CRLF);
	evbuffer_add(in, "abcdef", 6);
	assert_int_equal(mt_line_read(&r, in, &line, &error),
			 MT_LINE_NEED_MORE);
	evbuffer_drain(in, 6);
	evbuffer_add(in, "A\r\n", 3);
	assert_int_equal(mt_line_read(&r, in, &line, &error), MT_LINE_OK);
	assert_string_equal(mt_buf_cstr(&line), "A");
	mt_buf_free(&line);
	evbuffer_free(in);
}

static char *take_output(struct evbuffer *out)
{
	size_t len = evbuffer_get_length(out);
	char *s = malloc(len + 1);

	evbuffer_remove(out, s, len);
	s[len] = '\0';
	return s;
}

static void test_write(void **state)
{
	struct evbuffer *out = evbuffer_new();
	char *s;

	(void)state;
	mt_line_write(out, "+OK %d messages (%s)", 2, "320 octets");
	s = take_output(out);
	assert_string_equal(s, "+OK 2 messages (320 octets)\r\n");
	free(s);

	/* Peer data with CRLF cannot add a second reply line. */
	mt_line_write(out, "550 5.1.1 <%s>: unknown", "a\r\n250 OK\rb\nc");
	s = take_output(out);
	assert_string_equal(s, "550 5.1.1 <a??250 OK?b?c>: unknown\r\n");
	free(s);

	mt_line_write(out, "x%cy\tz\x7f", 0);
	assert_int_equal(evbuffer_get_length(out), 8);
	s = take_output(out);
	assert_memory_equal(s, "x?y\tz?\r\n", 8);
	free(s);

	mt_line_reply(out, 250, true, "mail.example.org");
	mt_line_reply(out, 250, true, "SIZE %u", 10240000u);
	mt_line_reply(out, 250, false, "PIPELINING");
	s = take_output(out);
	assert_string_equal(s, "250-mail.example.org\r\n250-SIZE 10240000\r\n"
			    "250 PIPELINING\r\n");
	free(s);

	mt_line_reply(out, 554, false, "%s", "no\r\n250 yes");
	s = take_output(out);
	assert_string_equal(s, "554 no??250 yes\r\n");
	free(s);
	evbuffer_free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_overlong_memory_bounded),
		cmocka_unit_test(test_trickle_is_linear),
		cmocka_unit_test(test_external_drain),
		cmocka_unit_test(test_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
