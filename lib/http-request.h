/* http-request.h — the head of an HTTP/1.x request (request line and
 * header fields), parsed from bytes as they arrive, for the small
 * read-only endpoints the daemons serve (the metrics scrape).
 *
 * What it accepts: origin-form ("/path?query") and absolute-form
 * ("http://host/path") targets, HTTP/1.0 and HTTP/1.1, CRLF or a bare LF
 * as the line end (RFC 9112 2.2 allows a recipient to take LF alone),
 * header lines of any field; it reports the method, the path without its
 * query, whether the connection persists (RFC 9112 9.3) and whether the
 * request announces a body (Content-Length other than 0, or any
 * Transfer-Encoding, RFC 9112 6.3).
 *
 * What it refuses, each with the status code to answer (and then close):
 * a head longer than the caller's limit (431), a malformed request line
 * or header line, a space before a field's colon, an obs-fold (400), an
 * HTTP version other than 1.x (505).
 *
 * Trust boundary: the bytes come from whoever reaches the listener; the
 * parser reads only within [data, data + len) and copies what it keeps
 * into the request's fixed fields. RFC 9112 2-3, 5, 6.3, 9.3. */
#ifndef MT_HTTP_REQUEST_H
#define MT_HTTP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#define MT_HTTP_METHOD_MAX 16
#define MT_HTTP_PATH_MAX 256

enum mt_http_parse {
	MT_HTTP_PARSE_INCOMPLETE,	/* the head has not ended yet */
	MT_HTTP_PARSE_DONE,		/* *request_r filled, *head_len_r set */
	MT_HTTP_PARSE_ERROR,		/* answer *status_r and close */
};

struct mt_http_request {
	char method[MT_HTTP_METHOD_MAX];
	/* The target's path, without the query; a longer path is cut and
	 * marked (it can only be answered 404 or 414). */
	char path[MT_HTTP_PATH_MAX];
	bool path_too_long;
	unsigned int version_minor;	/* HTTP/1.<minor> */
	bool keep_alive;
	bool has_body;
};

/* Parse the head at the start of data[0..len). max_head is the longest
 * head accepted: INCOMPLETE while len is below it and no empty line has
 * come, ERROR with 431 beyond it. On ERROR *status_r is the status code
 * and *error_r a short static reason for the log and the reply. */
enum mt_http_parse mt_http_request_parse(const char *data, size_t len, size_t max_head,
					 struct mt_http_request *request_r,
					 size_t *head_len_r, unsigned int *status_r,
					 const char **error_r);

#endif
