/* ctl-metrics-scrape.c — GET /metrics from several daemons at once with
 * libevent's evhttp client, each reply parsed (ctl-metrics-parse.c).
 *
 * Every request has the caller's timeout (connect and reply), a body
 * bounded by CTL_METRICS_BODY_MAX and its header size bounded by
 * evhttp; a reply other than 200, a cut connection or a body that does
 * not parse is that target's error, never the others'.
 *
 * Trust boundary: the replies come over loopback from the cluster's
 * daemons and are read as untrusted (see ctl-metrics.h). RFC 9110, 9112. */
#include "ctl-metrics.h"
#include "alloc.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct scrape {
	struct ctl_metrics_target *target;
	struct evhttp_connection *conn;
	struct event_base *base;
	size_t *pending;
	struct timespec started;
	bool done;
	enum evhttp_request_error error;
	bool have_error;
};

static double seconds_since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static const char *request_error_text(enum evhttp_request_error e)
{
	switch (e) {
	case EVREQ_HTTP_TIMEOUT:
		return "no reply within the timeout";
	case EVREQ_HTTP_EOF:
		return "the connection closed before the reply ended";
	case EVREQ_HTTP_INVALID_HEADER:
		return "an invalid reply head";
	case EVREQ_HTTP_BUFFER_ERROR:
		return "a connection error (refused or reset)";
	case EVREQ_HTTP_REQUEST_CANCEL:
		return "the request was cancelled";
	case EVREQ_HTTP_DATA_TOO_LONG:
		return "the reply is larger than 4 MiB";
	}
	return "an unknown error";
}

static void finish(struct scrape *s)
{
	if (s->done)
		return;
	s->done = true;
	s->target->elapsed_s = seconds_since(&s->started);
	if (--*s->pending == 0)
		event_base_loopbreak(s->base);
}

static void on_error(enum evhttp_request_error error, void *context)
{
	struct scrape *s = context;
	s->error = error;
	s->have_error = true;
}

static void on_reply(struct evhttp_request *req, void *context)
{
	struct scrape *s = context;
	struct ctl_metrics_target *t = s->target;
	int code = req != NULL ? evhttp_request_get_response_code(req) : 0;
	if (code == 0) {
		/* libevent 2.1 calls no error callback when the connect itself
		 * fails (evhttp_connection_cb_cleanup): that is the one case
		 * without an error. */
		t->error = mt_xasprintf("%s:%u: %s", t->host, t->port,
					s->have_error ? request_error_text(s->error)
						      : "cannot connect (nothing listening there?)");
	} else if (code != 200) {
		t->error = mt_xasprintf("%s:%u: HTTP %d %s", t->host, t->port, code,
					evhttp_request_get_response_code_line(req));
	} else {
		struct evbuffer *body = evhttp_request_get_input_buffer(req);
		size_t len = evbuffer_get_length(body);
		const char *text = (const char *)evbuffer_pullup(body, -1);
		char *error = NULL;
		if (len > 0 && text == NULL) {
			t->error = mt_xasprintf("%s:%u: out of memory", t->host, t->port);
		} else if (!ctl_metrics_parse(&t->metrics, text != NULL ? text : "", len, &error)) {
			t->error = mt_xasprintf("%s:%u/metrics: %s", t->host, t->port, error);
			free(error);
			ctl_metrics_free(&t->metrics);
		} else {
			t->ok = true;
		}
	}
	finish(s);
}

void ctl_metrics_scrape(struct ctl_metrics_target *targets, size_t n, unsigned int timeout_ms)
{
	if (n == 0)
		return;
	struct event_base *base = event_base_new();
	struct scrape *scrapes = mt_xcalloc(n, sizeof(*scrapes));
	size_t pending = n;
	struct timeval timeout = { .tv_sec = timeout_ms / 1000,
				   .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000 };
	for (size_t i = 0; i < n; i++) {
		struct scrape *s = &scrapes[i];
		struct ctl_metrics_target *t = &targets[i];
		*s = (struct scrape){ .target = t, .base = base, .pending = &pending };
		t->ok = false;
		t->error = NULL;
		memset(&t->metrics, 0, sizeof(t->metrics));
		clock_gettime(CLOCK_MONOTONIC, &s->started);
		if (base == NULL) {
			t->error = mt_xasprintf("%s:%u: event_base_new() failed", t->host, t->port);
			continue;
		}
		s->conn = evhttp_connection_base_new(base, NULL, t->host, (unsigned short)t->port);
		if (s->conn == NULL) {
			t->error = mt_xasprintf("%s:%u: cannot make a connection", t->host, t->port);
			finish(s);
			continue;
		}
		evhttp_connection_set_timeout_tv(s->conn, &timeout);
		evhttp_connection_set_retries(s->conn, 0);
		evhttp_connection_set_max_body_size(s->conn, CTL_METRICS_BODY_MAX);
		evhttp_connection_set_max_headers_size(s->conn, 16384);
		struct evhttp_request *req = evhttp_request_new(on_reply, s);
		evhttp_request_set_error_cb(req, on_error);
		struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
		evhttp_add_header(headers, "Host", t->host);
		evhttp_add_header(headers, "User-Agent", "mailtierctl");
		evhttp_add_header(headers, "Connection", "close");
		if (evhttp_make_request(s->conn, req, EVHTTP_REQ_GET, "/metrics") != 0) {
			/* evhttp_make_request freed req. */
			t->error = mt_xasprintf("%s:%u: cannot send the request", t->host, t->port);
			finish(s);
		}
	}
	if (base != NULL && pending > 0)
		event_base_dispatch(base);
	for (size_t i = 0; i < n; i++) {
		if (scrapes[i].conn != NULL)
			evhttp_connection_free(scrapes[i].conn);
		if (!scrapes[i].done && targets[i].error == NULL && !targets[i].ok)
			targets[i].error = mt_xasprintf("%s:%u: no reply", targets[i].host,
							targets[i].port);
	}
	if (base != NULL)
		event_base_free(base);
	free(scrapes);
}

void ctl_metrics_target_clear(struct ctl_metrics_target *t)
{
	ctl_metrics_free(&t->metrics);
	free(t->error);
	t->error = NULL;
	t->ok = false;
}
