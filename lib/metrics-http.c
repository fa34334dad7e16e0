/* metrics-http.c — the scrape endpoint on libevent's evhttp (see
 * metrics-http.h for the bounds).
 *
 * Not bounded yet: the number of open connections. libevent 2.1's evhttp
 * has no limit of its own (evhttp_set_max_connections came with 2.2), and
 * counting them through a pass-through filter bufferevent
 * (evhttp_set_bevcb) crashed libevent 2.1.12 on a connection's second
 * request, so that was taken out.
 *
 * Trust boundary: the scraper's HTTP request, parsed by evhttp within the
 * bounds set here. RFC 9112, RFC 9110. */
#include "metrics-http.h"
#include "alloc.h"
#include "buf.h"
#include "config.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct mt_metrics_http {
	struct mt_metrics *metrics;
	struct evhttp *http;
	struct evconnlistener *listener;	/* owned by http once bound */
	unsigned int port;
};

/* Requests */

static void reply_text(struct evhttp_request *req, int code, const char *reason,
		       const char *body)
{
	struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
	evhttp_add_header(headers, "Content-Type", "text/plain; charset=utf-8");
	struct evbuffer *out = evbuffer_new();
	if (out == NULL) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	evbuffer_add(out, body, strlen(body));
	evhttp_send_reply(req, code, reason, out);
	evbuffer_free(out);
}

static void request_cb(struct evhttp_request *req, void *context)
{
	struct mt_metrics_http *h = context;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	if (path == NULL || strcmp(path, "/metrics") != 0) {
		reply_text(req, HTTP_NOTFOUND, "Not Found",
			   "Not found: the metrics are at /metrics\n");
		return;
	}
	struct mt_buf text = MT_BUF_INIT;
	mt_metrics_render(h->metrics, &text);
	struct evbuffer *out = evbuffer_new();
	if (out == NULL) {
		mt_buf_free(&text);
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	evbuffer_add(out, text.data != NULL ? text.data : "", text.len);
	mt_buf_free(&text);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  MT_METRICS_CONTENT_TYPE);
	/* HEAD: evhttp sends the headers (Content-Length too) without the body. */
	evhttp_send_reply(req, HTTP_OK, "OK", out);
	evbuffer_free(out);
}

/* Public */

struct mt_metrics_http *mt_metrics_http_start(struct mt_loop *loop, const char *what,
					      const struct mt_hostport *hp,
					      struct mt_metrics *m)
{
	if (hp->host == NULL)
		return NULL;
	char *addr = mt_hostport_string(hp);
	struct sockaddr_storage ss;
	socklen_t sslen;
	const char *error;
	if (!mt_sockaddr_parse(addr, &ss, &sslen, &error))
		mt_fatal("%s listener on %s: %s", what, addr, error);

	struct mt_metrics_http *h = mt_xcalloc(1, sizeof(*h));
	h->metrics = m;
	struct event_base *base = mt_loop_base(loop);
	if ((h->http = evhttp_new(base)) == NULL)
		mt_panic("evhttp_new failed");
	unsigned int flags = LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE |
		LEV_OPT_CLOSE_ON_EXEC;
	if (ss.ss_family == AF_INET6)
		flags |= LEV_OPT_BIND_IPV6ONLY;
	h->listener = evconnlistener_new_bind(base, NULL, NULL, flags | LEV_OPT_DISABLED,
					      16, (struct sockaddr *)&ss, (int)sslen);
	if (h->listener == NULL)
		mt_fatal("%s listener on %s: %s", what, addr, strerror(errno));
	if (evhttp_bind_listener(h->http, h->listener) == NULL)
		mt_panic("evhttp_bind_listener failed");
	evconnlistener_enable(h->listener);

	evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_max_headers_size(h->http, MT_METRICS_HTTP_MAX_HEADERS);
	evhttp_set_max_body_size(h->http, 0);
	evhttp_set_timeout(h->http, MT_METRICS_HTTP_TIMEOUT_SECS);
	evhttp_set_gencb(h->http, request_cb, h);

	sslen = sizeof(ss);
	if (getsockname(evconnlistener_get_fd(h->listener), (struct sockaddr *)&ss,
			&sslen) == 0)
		h->port = ntohs(ss.ss_family == AF_INET6 ?
				((struct sockaddr_in6 *)&ss)->sin6_port :
				((struct sockaddr_in *)&ss)->sin_port);
	mt_info("listening %s=%s port=%u", what, addr, h->port);
	free(addr);
	return h;
}

void mt_metrics_http_free(struct mt_metrics_http **http_p)
{
	struct mt_metrics_http *h = *http_p;
	if (h == NULL)
		return;
	*http_p = NULL;
	/* Frees the connections and the bound listener. */
	evhttp_free(h->http);
	free(h);
}

unsigned int mt_metrics_http_port(const struct mt_metrics_http *http)
{
	return http->port;
}
