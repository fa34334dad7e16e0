/* test-http-request.c — unit tests for lib/http-request.c, the HTTP/1.x
 * request head parser of the metrics endpoint: the forms of request
 * target, persistence by version and Connection, bodies announced, every
 * refusal with its status code, and a head fed a byte at a time staying
 * INCOMPLETE until its empty line (RFC 9112). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "http-request.h"

#define MAX_HEAD 8192

static enum mt_http_parse parse(const char *text, struct mt_http_request *r,
				size_t *head_len, unsigned int *code)
{
	const char *error = NULL;
	*code = 0;
	enum mt_http_parse p = mt_http_request_parse(text, strlen(text), MAX_HEAD, r,
						     head_len, code, &error);
	if (p == MT_HTTP_PARSE_ERROR)
		assert_non_null(error);
	return p;
}

static void test_scrape_request(void **state)
{
	(void)state;
	const char *req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9100\r\n"
		"User-Agent: Prometheus/2.42.0\r\nAccept: text/plain;version=0.0.4\r\n"
		"X-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\nGET /next";
	struct mt_http_request r;
	size_t head_len;
	unsigned int code;
	assert_int_equal(parse(req, &r, &head_len, &code), MT_HTTP_PARSE_DONE);
	assert_string_equal(r.method, "GET");
	assert_string_equal(r.path, "/metrics");
	assert_int_equal(r.version_minor, 1);
	assert_true(r.keep_alive);
	assert_false(r.has_body);
	/* The pipelined next request is not part of this head. */
	assert_int_equal(head_len, strlen(req) - strlen("GET /next"));
}

static void test_targets(void **state)
{
	(void)state;
	struct mt_http_request r;
	size_t head_len;
	unsigned int code;
	assert_int_equal(parse("GET /metrics?name[]=x HTTP/1.1\r\n\r\n", &r, &head_len, &code),
			 MT_HTTP_PARSE_DONE);
	assert_string_equal(r.path, "/metrics");
	assert_int_equal(parse("GET http://host:9100/metrics HTTP/1.1\r\n\r\n", &r, &head_len,
			       &code), MT_HTTP_PARSE_DONE);
	assert_string_equal(r.path, "/metrics");
	assert_int_equal(parse("HEAD HTTPS://host HTTP/1.1\r\n\r\n", &r, &head_len, &code),
			 MT_HTTP_PARSE_DONE);
	assert_string_equal(r.method, "HEAD");
	assert_string_equal(r.path, "/");
	assert_int_equal(parse("OPTIONS * HTTP/1.1\r\n\r\n", &r, &head_len, &code),
			 MT_HTTP_PARSE_DONE);
	assert_string_equal(r.path, "*");
	assert_int_equal(parse("GET ftp://host/metrics HTTP/1.1\r\n\r\n", &r, &head_len, &code),
			 MT_HTTP_PARSE_ERROR);
	assert_int_equal(code, 400);
	assert_int_equal(parse("GET metrics HTTP/1.1\r\n\r\n", &r, &head_len, &code),
			 MT_HTTP_PARSE_ERROR);
	assert_int_equal(code, 400);

	char long_req[600];
	memset(long_req, 'a', sizeof(long_req));
	memcpy(long_req, "GET /", 5);
	strcpy(long_req + 500, " HTTP/1.1\r\n\r\n");
	assert_int_equal(parse(long_req, &r, &head_len, &code), MT_HTTP_PARSE_DONE);
	assert_true(r.path_too_long);
	assert_int_equal(strlen(r.path), MT_HTTP_PATH_MAX - 1);
}

static void test_persistence(void **state)
{
	(void)state;
	struct mt_http_request r;
	size_t head_len;
	unsigned int code;
	assert_int_equal(parse("GET /metrics HTTP/1.0\r\n\r\n", &r, &head_len, &code),
			 MT_HTTP_PARSE_DONE);
	assert_int_equal(r.version_minor, 0);
	assert_false(r.keep_alive);
	assert_int_equal(parse("GET /metrics HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &r,
			       &head_len, &code), MT_HTTP_PARSE_DONE);
	assert_true(r.keep_alive);
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nconnection: TE, close\r\n\r\n", &r,
			       &head_len, &code), MT_HTTP_PARSE_DONE);
	assert_false(r.keep_alive);
	/* "closed" is not the token "close". */
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nConnection: closed\r\n\r\n", &r,
			       &head_len, &code), MT_HTTP_PARSE_DONE);
	assert_true(r.keep_alive);
}

static void test_bodies(void **state)
{
	(void)state;
	struct mt_http_request r;
	size_t head_len;
	unsigned int code;
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nContent-Length: 000\r\n\r\n", &r,
			       &head_len, &code), MT_HTTP_PARSE_DONE);
	assert_false(r.has_body);
	assert_int_equal(parse("POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", &r,
			       &head_len, &code), MT_HTTP_PARSE_DONE);
	assert_true(r.has_body);
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &r,
			       &head_len, &code), MT_HTTP_PARSE_DONE);
	assert_true(r.has_body);
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nContent-Length: 5x\r\n\r\n", &r,
			       &head_len, &code), MT_HTTP_PARSE_ERROR);
	assert_int_equal(code, 400);
}

static void test_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		unsigned int code;
	} cases[] = {
		{ "GET /metrics\r\n\r\n", 400 },
		{ "GET  /metrics HTTP/1.1\r\n\r\n", 400 },
		{ "GET /metrics HTTP/1.1 \r\n\r\n", 400 },
		{ "GET /metrics HTTP/2.0\r\n\r\n", 505 },
		{ "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505 },
		{ "GET /metrics http/1.1\r\n\r\n", 400 },
		{ "G(T /metrics HTTP/1.1\r\n\r\n", 400 },
		{ "GET /met\x01rics HTTP/1.1\r\n\r\n", 400 },
		{ "GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n", 400 },
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400 },
		{ "GET /metrics HTTP/1.1\r\nNo colon here\r\n\r\n", 400 },
		{ "GET /metrics HTTP/1.1\r\nX: a\rb\r\n\r\n", 400 },
		{ "\r\n\r\n\r\n", 400 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_http_request r;
		size_t head_len;
		unsigned int code;
		enum mt_http_parse p = parse(cases[i].text, &r, &head_len, &code);
		if (p != MT_HTTP_PARSE_ERROR || code != cases[i].code)
			fail_msg("case %zu (%s): result %d code %u", i, cases[i].text, p, code);
	}
}

static void test_line_ends_and_leading_empty_lines(void **state)
{
	(void)state;
	struct mt_http_request r;
	size_t head_len;
	unsigned int code;
	const char *req = "\r\nGET /metrics HTTP/1.1\nHost: x\n\n";
	assert_int_equal(parse(req, &r, &head_len, &code), MT_HTTP_PARSE_DONE);
	assert_string_equal(r.path, "/metrics");
	assert_int_equal(head_len, strlen(req));
}

static void test_byte_at_a_time(void **state)
{
	(void)state;
	const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n";
	size_t len = strlen(req);
	struct mt_http_request r;
	size_t head_len;
	unsigned int code;
	const char *error;
	for (size_t n = 0; n < len; n++)
		assert_int_equal(mt_http_request_parse(req, n, MAX_HEAD, &r, &head_len, &code,
						       &error), MT_HTTP_PARSE_INCOMPLETE);
	assert_int_equal(mt_http_request_parse(req, len, MAX_HEAD, &r, &head_len, &code,
					       &error), MT_HTTP_PARSE_DONE);
	assert_int_equal(head_len, len);
}

static void test_head_too_large(void **state)
{
	(void)state;
	static char big[MAX_HEAD + 64];
	strcpy(big, "GET /metrics HTTP/1.1\r\nX-Big: ");
	size_t at = strlen(big);
	memset(big + at, 'a', sizeof(big) - at - 1);
	big[sizeof(big) - 1] = '\0';
	struct mt_http_request r;
	size_t head_len;
	unsigned int code;
	const char *error;
	/* Below the limit without an end: wait for more. */
	assert_int_equal(mt_http_request_parse(big, MAX_HEAD - 1, MAX_HEAD, &r, &head_len,
					       &code, &error), MT_HTTP_PARSE_INCOMPLETE);
	/* At the limit without an end: 431. */
	assert_int_equal(mt_http_request_parse(big, MAX_HEAD, MAX_HEAD, &r, &head_len, &code,
					       &error), MT_HTTP_PARSE_ERROR);
	assert_int_equal(code, 431);
	/* A whole head that ends past the limit: 431 too. */
	memcpy(big + MAX_HEAD + 10, "\r\n\r\n", 4);
	assert_int_equal(mt_http_request_parse(big, MAX_HEAD + 14, MAX_HEAD, &r, &head_len,
					       &code, &error), MT_HTTP_PARSE_ERROR);
	assert_int_equal(code, 431);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scrape_request),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_persistence),
		cmocka_unit_test(test_bodies),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_line_ends_and_leading_empty_lines),
		cmocka_unit_test(test_byte_at_a_time),
		cmocka_unit_test(test_head_too_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
