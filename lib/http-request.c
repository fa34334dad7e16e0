/* http-request.c — the HTTP/1.x request head parser (see http-request.h).
 *
 * The head is parsed whole each time more of it has arrived: it is at
 * most max_head bytes (8 KiB for the metrics endpoint), so re-reading it
 * costs less than keeping a parser's state between reads.
 *
 * Trust boundary: every byte here is the client's. RFC 9112. */
#include "http-request.h"

#include <string.h>
#include <strings.h>

/* RFC 9110 5.6.2: tchar. */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_token(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_tchar((unsigned char)s[i]))
			return false;
	return true;
}

/* A line's own bytes may not hold a CR (only as the CRLF's) or a NUL. */
static bool line_is_clean(const char *line, size_t len)
{
	return memchr(line, '\r', len) == NULL && memchr(line, '\0', len) == NULL;
}

static enum mt_http_parse fail(unsigned int status, const char *error,
			       unsigned int *status_r, const char **error_r)
{
	*status_r = status;
	*error_r = error;
	return MT_HTTP_PARSE_ERROR;
}

/* The path of a request-target (RFC 9112 3.2): origin-form, absolute-form
 * (its authority skipped) or the asterisk-form. */
static bool parse_target(const char *target, size_t len, struct mt_http_request *r)
{
	const char *path = target;
	size_t path_len = len;
	if (len == 1 && target[0] == '*') {
		/* asterisk-form: the path is "*" */
	} else if (target[0] != '/') {
		const char *scheme_end = memchr(target, ':', len);
		if (scheme_end == NULL || (size_t)(target + len - scheme_end) < 3 ||
		    memcmp(scheme_end, "://", 3) != 0)
			return false;
		size_t scheme_len = (size_t)(scheme_end - target);
		if (!((scheme_len == 4 && strncasecmp(target, "http", 4) == 0) ||
		      (scheme_len == 5 && strncasecmp(target, "https", 5) == 0)))
			return false;
		const char *authority = scheme_end + 3;
		const char *slash = memchr(authority, '/', (size_t)(target + len - authority));
		if (slash == NULL) {
			path = "/";
			path_len = 1;
		} else {
			path = slash;
			path_len = (size_t)(target + len - slash);
		}
	}
	const char *query = memchr(path, '?', path_len);
	if (query != NULL)
		path_len = (size_t)(query - path);
	if (path_len >= sizeof(r->path)) {
		r->path_too_long = true;
		path_len = sizeof(r->path) - 1;
	}
	memcpy(r->path, path, path_len);
	r->path[path_len] = '\0';
	return true;
}

/* request-line = method SP request-target SP HTTP-version (RFC 9112 3). */
static enum mt_http_parse parse_request_line(const char *line, size_t len,
					     struct mt_http_request *r,
					     unsigned int *status_r, const char **error_r)
{
	const char *sp1 = memchr(line, ' ', len);
	if (sp1 == NULL)
		return fail(400, "malformed request line", status_r, error_r);
	size_t method_len = (size_t)(sp1 - line);
	if (!is_token(line, method_len) || method_len >= sizeof(r->method))
		return fail(400, "malformed method", status_r, error_r);
	const char *target = sp1 + 1;
	const char *end = line + len;
	const char *sp2 = memchr(target, ' ', (size_t)(end - target));
	if (sp2 == NULL || sp2 == target)
		return fail(400, "malformed request line", status_r, error_r);
	size_t target_len = (size_t)(sp2 - target);
	for (size_t i = 0; i < target_len; i++)
		if ((unsigned char)target[i] <= ' ' || (unsigned char)target[i] >= 0x7f)
			return fail(400, "malformed request target", status_r, error_r);
	const char *version = sp2 + 1;
	size_t version_len = (size_t)(end - version);
	if (version_len != 8 || memcmp(version, "HTTP/", 5) != 0 ||
	    version[5] < '0' || version[5] > '9' || version[6] != '.' ||
	    version[7] < '0' || version[7] > '9')
		return fail(400, "malformed HTTP version", status_r, error_r);
	if (version[5] != '1')
		return fail(505, "only HTTP/1.x is served", status_r, error_r);
	memcpy(r->method, line, method_len);
	r->method[method_len] = '\0';
	r->version_minor = (unsigned int)(version[7] - '0');
	r->keep_alive = r->version_minor >= 1;
	if (!parse_target(target, target_len, r))
		return fail(400, "malformed request target", status_r, error_r);
	return MT_HTTP_PARSE_DONE;
}

/* Does a comma-separated list of tokens (Connection) hold this one? */
static bool list_has_token(const char *value, size_t len, const char *token)
{
	size_t token_len = strlen(token);
	size_t i = 0;
	while (i < len) {
		while (i < len && (value[i] == ' ' || value[i] == '\t' || value[i] == ','))
			i++;
		size_t start = i;
		while (i < len && value[i] != ',' && value[i] != ' ' && value[i] != '\t')
			i++;
		if (i - start == token_len && strncasecmp(value + start, token, token_len) == 0)
			return true;
	}
	return false;
}

/* field-line = field-name ":" OWS field-value OWS (RFC 9112 5). */
static enum mt_http_parse parse_field_line(const char *line, size_t len,
					   struct mt_http_request *r,
					   unsigned int *status_r, const char **error_r)
{
	if (line[0] == ' ' || line[0] == '\t')
		return fail(400, "obsolete line folding", status_r, error_r);
	const char *colon = memchr(line, ':', len);
	if (colon == NULL)
		return fail(400, "malformed header field", status_r, error_r);
	size_t name_len = (size_t)(colon - line);
	if (!is_token(line, name_len))
		return fail(400, "malformed header field name", status_r, error_r);
	const char *value = colon + 1;
	const char *end = line + len;
	while (value < end && (*value == ' ' || *value == '\t'))
		value++;
	while (end > value && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t value_len = (size_t)(end - value);

	if (name_len == 10 && strncasecmp(line, "Connection", 10) == 0) {
		if (list_has_token(value, value_len, "close"))
			r->keep_alive = false;
		else if (list_has_token(value, value_len, "keep-alive"))
			r->keep_alive = true;
	} else if (name_len == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
		if (value_len == 0)
			return fail(400, "malformed Content-Length", status_r, error_r);
		for (size_t i = 0; i < value_len; i++) {
			if (value[i] < '0' || value[i] > '9')
				return fail(400, "malformed Content-Length", status_r, error_r);
			if (value[i] != '0')
				r->has_body = true;
		}
	} else if (name_len == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
		r->has_body = true;
	}
	return MT_HTTP_PARSE_DONE;
}

enum mt_http_parse mt_http_request_parse(const char *data, size_t len, size_t max_head,
					 struct mt_http_request *request_r,
					 size_t *head_len_r, unsigned int *status_r,
					 const char **error_r)
{
	struct mt_http_request r;
	memset(&r, 0, sizeof(r));
	size_t pos = 0;
	/* RFC 9112 2.2: empty lines before the request line are ignored. */
	while (pos < len && pos < 4 && (data[pos] == '\r' || data[pos] == '\n'))
		pos++;
	bool first = true;
	for (;;) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		if (nl == NULL) {
			if (len >= max_head)
				return fail(431, "request header fields too large", status_r, error_r);
			return MT_HTTP_PARSE_INCOMPLETE;
		}
		size_t line_end = (size_t)(nl - data);
		if (line_end + 1 > max_head)
			return fail(431, "request header fields too large", status_r, error_r);
		size_t line_len = line_end - pos;
		if (line_len > 0 && data[line_end - 1] == '\r')
			line_len--;
		const char *line = data + pos;
		pos = line_end + 1;
		if (!line_is_clean(line, line_len))
			return fail(400, "stray CR or NUL in the request head", status_r, error_r);
		enum mt_http_parse result;
		if (first) {
			if (line_len == 0)
				return fail(400, "empty request line", status_r, error_r);
			result = parse_request_line(line, line_len, &r, status_r, error_r);
			first = false;
		} else if (line_len == 0) {
			*request_r = r;
			*head_len_r = pos;
			return MT_HTTP_PARSE_DONE;
		} else {
			result = parse_field_line(line, line_len, &r, status_r, error_r);
		}
		if (result != MT_HTTP_PARSE_DONE)
			return result;
	}
}
