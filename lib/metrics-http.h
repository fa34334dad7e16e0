/* metrics-http.h — the scrape endpoint: `GET /metrics` (and HEAD) over
 * HTTP/1.1 on the daemon's own event loop, answering with the registry's
 * text (lib/metrics.h); 404 for any other path, 405 for other methods.
 *
 * Bounds: request headers of at most MT_METRICS_HTTP_MAX_HEADERS bytes,
 * no request body, MT_METRICS_HTTP_TIMEOUT_SECS of silence closes a
 * connection. The number of open connections is not bounded yet (see
 * metrics-http.c).
 *
 * Trust boundary: whoever reaches metrics_listen (the operator puts it on
 * loopback or a management network; there is no authentication, as in
 * every Prometheus exporter). The request is parsed by libevent's evhttp.
 * RFC 9112 (HTTP/1.1), RFC 9110 15.5 (404, 405, 413, 431). */
#ifndef MT_METRICS_HTTP_H
#define MT_METRICS_HTTP_H

struct mt_hostport;
struct mt_loop;
struct mt_metrics;
struct mt_metrics_http;

#define MT_METRICS_HTTP_MAX_HEADERS 8192
#define MT_METRICS_HTTP_TIMEOUT_SECS 10

/* Serve m on the setting `what` = hp: NULL when hp is unset; otherwise
 * listening, logged as "listening what=host:port port=N", or the process
 * exits with "what listener on host:port: reason" (as every listener). */
struct mt_metrics_http *mt_metrics_http_start(struct mt_loop *loop, const char *what,
					      const struct mt_hostport *hp,
					      struct mt_metrics *m);
void mt_metrics_http_free(struct mt_metrics_http **http_p);

/* The bound port (after listening on port 0). */
unsigned int mt_metrics_http_port(const struct mt_metrics_http *http);

#endif
