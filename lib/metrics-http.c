/* metrics-http.c — the scrape endpoint (see metrics-http.h for what it
 * answers and its bounds): a listener on the daemon's loop, one
 * bufferevent per connection, the request head parsed by
 * lib/http-request.c.
 *
 * Why not libevent's evhttp: evhttp 2.1 (Debian 12's) cannot bound the
 * number of connections (evhttp_set_max_connections came with 2.2) and its
 * timeout restarts on every byte, so a client sending one byte every few
 * seconds holds a connection for hours. Here a connection has
 * MT_METRICS_HTTP_TIMEOUT_SECS for each request and its answer, counted
 * from the connection's start or the previous answer's end, and at most
 * MT_METRICS_HTTP_MAX_CONNECTIONS are open (the next ones get a 503 and
 * are closed at once). A connection reads no further request while an
 * answer is being written (pipelined requests wait in the kernel).
 *
 * Trust boundary: the scraper's bytes, within the bounds above.
 * RFC 9112 (HTTP/1.1 messages, persistence), RFC 9110 (status codes, Date,
 * Allow). */
#include "metrics-http.h"
#include "alloc.h"
#include "buf.h"
#include "config.h"
#include "http-request.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct metrics_conn {
	struct mt_metrics_http *server;
	struct bufferevent *bev;
	struct mt_timer *deadline;
	bool writing;		/* an answer is in the output buffer */
	bool close_after;	/* close once it is written */
	struct metrics_conn *prev, *next;
};

struct mt_metrics_http {
	struct mt_loop *loop;
	struct mt_metrics *metrics;
	struct mt_listener *listener;
	struct metrics_conn *conns;
	unsigned int n_conns;
	struct mt_metric_family *requests;	/* by status code */
	struct mt_series *refused;
};

static const char REFUSED_REPLY[] =
	"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
	"Content-Length: 36\r\nConnection: close\r\n\r\n"
	"Too many connections to the metrics\n";

/* Connections */

static void conn_free(struct metrics_conn *c)
{
	struct mt_metrics_http *h = c->server;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	h->n_conns--;
	mt_timer_free(&c->deadline);
	/* Safe from the bufferevent's own callbacks: libevent defers it. */
	bufferevent_free(c->bev);
	free(c);
}

/* "Fri, 04 Dec 2026 06:10:00 GMT" (RFC 9110 5.6.7 IMF-fixdate). */
static void append_date(struct mt_buf *out)
{
	static const char days[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	mt_buf_appendf(out, "Date: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n",
		       days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900,
		       tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Queue one answer; reading waits until it has been written. */
static void conn_answer(struct metrics_conn *c, unsigned int code, const char *reason,
			const char *content_type, const char *extra_headers,
			const char *body, size_t body_len, bool send_body)
{
	char code_text[8];
	snprintf(code_text, sizeof(code_text), "%u", code);
	mt_series_add(mt_metric_series1(c->server->requests, code_text), 1);

	struct mt_buf head = MT_BUF_INIT;
	mt_buf_appendf(&head, "HTTP/1.1 %u %s\r\n", code, reason);
	append_date(&head);
	mt_buf_appendf(&head, "Content-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n",
		       content_type, body_len, extra_headers,
		       c->close_after ? "Connection: close\r\n" : "");
	struct evbuffer *out = bufferevent_get_output(c->bev);
	evbuffer_add(out, head.data, head.len);
	if (send_body && body_len > 0)
		evbuffer_add(out, body, body_len);
	mt_buf_free(&head);
	c->writing = true;
	bufferevent_disable(c->bev, EV_READ);
}

static void conn_answer_text(struct metrics_conn *c, unsigned int code, const char *reason,
			     const char *extra_headers, const char *text, bool send_body)
{
	conn_answer(c, code, reason, "text/plain; charset=utf-8", extra_headers, text,
		    strlen(text), send_body);
}

static const char *status_reason(unsigned int code)
{
	switch (code) {
	case 400: return "Bad Request";
	case 413: return "Content Too Large";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

static void conn_serve(struct metrics_conn *c, const struct mt_http_request *r)
{
	bool head = strcmp(r->method, "HEAD") == 0;
	if (!head && strcmp(r->method, "GET") != 0) {
		c->close_after = true;	/* it may be followed by a body */
		conn_answer_text(c, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n",
				 "Only GET and HEAD are served\n", true);
		return;
	}
	if (r->has_body) {
		c->close_after = true;
		conn_answer_text(c, 413, status_reason(413), "",
				 "A request body is not accepted\n", !head);
		return;
	}
	c->close_after = !r->keep_alive;
	if (r->path_too_long || strcmp(r->path, "/metrics") != 0) {
		conn_answer_text(c, 404, "Not Found", "",
				 "Not found: the metrics are at /metrics\n", !head);
		return;
	}
	struct mt_buf text = MT_BUF_INIT;
	mt_metrics_render(c->server->metrics, &text);
	conn_answer(c, 200, "OK", MT_METRICS_CONTENT_TYPE, "", text.data, text.len, !head);
	mt_buf_free(&text);
}

/* Parse what has arrived; answer a whole request head. */
static void conn_try_request(struct metrics_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	size_t len = evbuffer_get_length(in);
	if (len == 0)
		return;
	if (len > MT_METRICS_HTTP_MAX_HEADERS)
		len = MT_METRICS_HTTP_MAX_HEADERS;
	const char *data = (const char *)evbuffer_pullup(in, (ev_ssize_t)len);
	struct mt_http_request request;
	size_t head_len;
	unsigned int code;
	const char *error;
	switch (mt_http_request_parse(data, len, MT_METRICS_HTTP_MAX_HEADERS, &request,
				      &head_len, &code, &error)) {
	case MT_HTTP_PARSE_INCOMPLETE:
		return;
	case MT_HTTP_PARSE_ERROR: {
		c->close_after = true;
		char body[128];
		snprintf(body, sizeof(body), "%s\n", error);
		conn_answer_text(c, code, status_reason(code), "", body, true);
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	case MT_HTTP_PARSE_DONE:
		evbuffer_drain(in, head_len);
		conn_serve(c, &request);
		return;
	}
}

static void conn_read_cb(struct bufferevent *bev, void *context)
{
	(void)bev;
	struct metrics_conn *c = context;
	if (!c->writing)
		conn_try_request(c);
}

/* The answer has been written (the output buffer is empty). */
static void conn_write_cb(struct bufferevent *bev, void *context)
{
	(void)bev;
	struct metrics_conn *c = context;
	if (!c->writing)
		return;
	c->writing = false;
	if (c->close_after) {
		conn_free(c);
		return;
	}
	mt_timer_reset(c->deadline);
	bufferevent_enable(c->bev, EV_READ);
	conn_try_request(c);	/* a pipelined request already read */
}

static void conn_event_cb(struct bufferevent *bev, short what, void *context)
{
	(void)bev;
	struct metrics_conn *c = context;
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && c->writing) {
		/* The client shut its side after the request: finish the answer. */
		c->close_after = true;
		return;
	}
	conn_free(c);
}

static void conn_deadline_cb(void *context)
{
	struct metrics_conn *c = context;
	mt_info("metrics connection closed: no whole request within %u s",
		MT_METRICS_HTTP_TIMEOUT_SECS);
	conn_free(c);
}

static void accept_cb(int fd, const struct sockaddr *peer, socklen_t peerlen,
		      void *context)
{
	(void)peer;
	(void)peerlen;
	struct mt_metrics_http *h = context;
	if (h->n_conns >= MT_METRICS_HTTP_MAX_CONNECTIONS) {
		/* A fresh socket's buffer takes these few bytes at once. */
		ssize_t sent = send(fd, REFUSED_REPLY, sizeof(REFUSED_REPLY) - 1,
				    MSG_DONTWAIT | MSG_NOSIGNAL);
		(void)sent;
		close(fd);
		if (mt_series_value(h->refused) == 0)
			mt_warning("metrics connection refused: %u already open "
				   "(counted in mailtier_metrics_http_connections_refused_total)",
				   MT_METRICS_HTTP_MAX_CONNECTIONS);
		mt_series_add(h->refused, 1);
		return;
	}
	struct event_base *base = mt_loop_base(h->loop);
	struct bufferevent *bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		close(fd);
		return;
	}
	struct metrics_conn *c = mt_xcalloc(1, sizeof(*c));
	c->server = h;
	c->bev = bev;
	c->deadline = mt_timer_add(h->loop, MT_METRICS_HTTP_TIMEOUT_SECS * 1000u, false,
				   conn_deadline_cb, c);
	c->next = h->conns;
	if (h->conns != NULL)
		h->conns->prev = c;
	h->conns = c;
	h->n_conns++;
	bufferevent_setcb(bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_enable(bev, EV_READ);
}

/* Public */

struct mt_metrics_http *mt_metrics_http_start(struct mt_loop *loop, const char *what,
					      const struct mt_hostport *hp,
					      struct mt_metrics *m)
{
	if (hp->host == NULL)
		return NULL;
	struct mt_metrics_http *h = mt_xcalloc(1, sizeof(*h));
	h->loop = loop;
	h->metrics = m;
	h->requests = mt_metrics_counter(m, "mailtier_metrics_http_requests_total",
		"Requests to the metrics endpoint, by the status code answered.", "code");
	h->refused = mt_metrics_counter_series(m,
		"mailtier_metrics_http_connections_refused_total",
		"Connections to the metrics endpoint closed at once: too many were open.");
	h->listener = mt_listener_add_setting(loop, what, hp, 0, accept_cb, h);
	return h;
}

void mt_metrics_http_free(struct mt_metrics_http **http_p)
{
	struct mt_metrics_http *h = *http_p;
	if (h == NULL)
		return;
	*http_p = NULL;
	while (h->conns != NULL)
		conn_free(h->conns);
	mt_listener_free(&h->listener);
	free(h);
}

unsigned int mt_metrics_http_port(const struct mt_metrics_http *http)
{
	return mt_listener_port(http->listener);
}
