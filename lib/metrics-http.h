/* metrics-http.h — the scrape endpoint: `GET /metrics` (and HEAD) over
 * HTTP/1.1 on the daemon's own event loop, answering with the registry's
 * text (lib/metrics.h); 404 for any other path, 405 for other methods.
 *
 * Bounds: a request head of at most MT_METRICS_HTTP_MAX_HEADERS bytes
 * (431 beyond), no request body (413), MT_METRICS_HTTP_TIMEOUT_SECS for
 * each request and its answer (then the connection is closed, however
 * slowly bytes trickle in), at most MT_METRICS_HTTP_MAX_CONNECTIONS open
 * connections (the next get 503 and are closed). Persistent connections
 * (HTTP/1.1 keep-alive, what Prometheus uses) are served.
 *
 * Its own metrics: mailtier_metrics_http_requests_total{code} and
 * mailtier_metrics_http_connections_refused_total.
 *
 * Trust boundary: whoever reaches metrics_listen (the operator puts it on
 * loopback or a management network; there is no authentication, as in
 * every Prometheus exporter). The request head is parsed by
 * lib/http-request.c. RFC 9112 (HTTP/1.1), RFC 9110 15 (status codes). */
#ifndef MT_METRICS_HTTP_H
#define MT_METRICS_HTTP_H

struct mt_hostport;
struct mt_loop;
struct mt_metrics;
struct mt_metrics_http;

#define MT_METRICS_HTTP_MAX_HEADERS 8192
#define MT_METRICS_HTTP_TIMEOUT_SECS 10
#define MT_METRICS_HTTP_MAX_CONNECTIONS 16

/* Serve m on the setting `what` = hp: NULL when hp is unset; otherwise
 * listening, logged as "listening what=host:port port=N", or the process
 * exits with "what listener on host:port: reason" (as every listener).
 * The answers are rendered on loop's thread. */
struct mt_metrics_http *mt_metrics_http_start(struct mt_loop *loop, const char *what,
					      const struct mt_hostport *hp,
					      struct mt_metrics *m);
void mt_metrics_http_free(struct mt_metrics_http **http_p);

/* The bound port (after listening on port 0). */
unsigned int mt_metrics_http_port(const struct mt_metrics_http *http);

#endif
