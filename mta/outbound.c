/* outbound.c — one client connection to a destination: LMTP to a store
 * shard (RFC 2033) or SMTP to a remote host (RFC 5321), reused for one job
 * after another. Resolve (dns.c), connect to each address in turn, read the
 * greeting, LHLO/EHLO (HELO if EHLO is refused), opportunistic STARTTLS for
 * SMTP (RFC 3207, RFC 7435), then hand the connection to its destination
 * for jobs (run by outbound-tx.c); idle ones are kept connection_cache_time.
 * An LMTP connection goes to one site of its shard (delivery-failover.c
 * picks it; a shard of several sites is a replication group whose replicas
 * greet 421 and close: conn_fail, and the job goes to the next site).
 *
 * Trust boundary: everything the server sends. Replies go through
 * lib/lineio (bounded lines) and lib-mail/smtp-reply.c (bounded replies); only
 * their codes and texts are used. After STARTTLS the plaintext bufferevent
 * and whatever it buffered are dropped (lib/tls).
 * RFCs: 5321 3.1, 4.1.1.1 (EHLO/HELO), 4.5.3.2 (timeouts), 5.1 (try each
 * address); 2033 4.1 (LHLO); 3207; 7435 (opportunistic security). */
#include "outbound.h"
#include "alloc.h"
#include "loop.h"
#include "mta.h"
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

const char *const conn_state_names[] = {
	"resolve", "connect", "greeting", "hello", "helo", "starttls", "tls",
	"idle", "transaction", "body", "end of data", "rset", "quit", "closed",
};

static void read_cb(struct bufferevent *bev, void *arg);
static void write_cb(struct bufferevent *bev, void *arg);
static void event_cb(struct bufferevent *bev, short what, void *arg);
static void connect_next(struct conn *c);
static void timer_cb(evutil_socket_t fd, short what, void *arg);

struct conn *conn_next(const struct conn *c) { return c->next; }
void conn_set_next(struct conn *c, struct conn *next) { c->next = next; }
bool conn_is_idle(const struct conn *c) { return c->state == CS_IDLE; }
bool conn_is_starting(const struct conn *c) { return c->state < CS_IDLE; }
unsigned int conn_site(const struct conn *c) { return c->site; }

const char *conn_proto(const struct conn *c)
{
	return c->dest->proto == DEST_LMTP ? "LMTP" : "SMTP";
}

void conn_set_timer(struct conn *c, uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
	evtimer_add(c->timer, &tv);
}

void conn_send(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void conn_send(struct conn *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mt_line_vwrite(bufferevent_get_output(c->bev), fmt, ap);
	va_end(ap);
}

void conn_enter(struct conn *c, enum conn_state state)
{
	mt_slog(MT_LOG_DEBUG, &c->log, "%s %s: %s -> %s", conn_proto(c), c->peer,
		conn_state_names[c->state], conn_state_names[state]);
	c->state = state;
}

/* Closing */

static void conn_free_cb(void *context)
{
	struct conn *c = context;
	mt_buf_free(&c->line);
	mt_buf_free(&c->summary);
	mt_buf_free(&c->out);
	free(c->rcpt_ok);
	free(c);
}

/* Hand the job back with whatever results it has. */
void conn_job_finish(struct conn *c)
{
	struct job *job = c->job;
	if (job == NULL)
		return;
	c->job = NULL;
	free(c->rcpt_ok);
	c->rcpt_ok = NULL;
	queue_read_cancel(&c->piece_read);
	queue_body_unref(&c->body);
	if (job->relay == NULL)
		job->relay = mt_xstrdup(c->peer);
	c->log.queue_id[0] = '\0';
	delivery_job_done(job);
}

static void close_now(struct conn *c, bool failed, int code, const char *error)
{
	if (c->state == CS_CLOSED)
		return;
	conn_enter(c, CS_CLOSED);
	dns_cancel(&c->dns);
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	c->bev = NULL;
	event_free(c->timer);
	event_free(c->soon);
	if (c->job != NULL) {
		for (unsigned int i = 0; i < c->job->count; i++)
			job_set_result(c->job, i, code, error);
		conn_job_finish(c);
	}
	dest_conn_gone(c->dest, c, failed, code, error);
	mt_loop_post(c->d->mta->loop, conn_free_cb, c);
}

void conn_close(struct conn *c, const char *why)
{
	char error[1100];
	snprintf(error, sizeof(error), "451 4.4.2 %s connection to %s closed: %s",
		 conn_proto(c), c->peer, why);
	close_now(c, false, 451, error);
}

/* A connection-level failure: the job (if any) is deferred. */
void conn_fail(struct conn *c, const char *fmt, ...)
{
	char why[400], error[1100];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(error, sizeof(error), "451 4.4.2 %s %s: %s", conn_proto(c),
		 c->peer[0] != '\0' ? c->peer : c->dest->name, why);
	/* A site of a replicated shard: its failure is the next site's
	 * turn, logged once as event=site_failed (delivery-failover.c). */
	mt_slog(dest_sites(c->dest) > 1 ? MT_LOG_DEBUG : MT_LOG_WARNING,
		&c->log, "%s to %s failed in state %s: %s",
		conn_proto(c), c->peer[0] != '\0' ? c->peer : c->dest->name,
		conn_state_names[c->state], why);
	close_now(c, !c->ready_once, 451, error);
}

void conn_quit(struct conn *c)
{
	if (c->state != CS_IDLE) {
		conn_close(c, "closing");
		return;
	}
	conn_enter(c, CS_QUIT);
	conn_send(c, "QUIT");
	conn_set_timer(c, QUIT_TIMEOUT_MSECS);
}

/* Deferred outcomes */

static void soon_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	if (c->soon_job_done) {
		c->soon_job_done = false;
		conn_job_finish(c);
		conn_ready(c);
		return;
	}
	/* A failure found before there was anything to wait for. */
	close_now(c, true, c->soon_code, c->last_error);
}

static void fail_soon(struct conn *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail_soon(struct conn *c, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
	va_end(ap);
	c->soon_code = code;
	static const struct timeval zero = { 0, 0 };
	evtimer_add(c->soon, &zero);
}

/* Setting up */

void conn_ready(struct conn *c)
{
	conn_enter(c, CS_IDLE);
	if (!c->ready_once) {
		c->ready_once = true;
		mt_slog(MT_LOG_INFO, &c->log, "%s connected to %s tls=%s pipelining=%s",
			conn_proto(c), c->peer, c->tls ? "yes" : "no",
			c->caps.pipelining ? "yes" : "no");
	}
	uint64_t cache = c->d->mta->set->connection_cache_time;
	conn_set_timer(c, cache > 0 ? cache : 1);
	dest_conn_idle(c->dest, c);
}

static void dns_done(const struct dns_result *result, void *context)
{
	struct conn *c = context;
	c->dns = NULL;
	if (result->status != DNS_OK) {
		/* A shard's address is the operator's: never a bounce. */
		bool perm = result->status == DNS_PERMFAIL &&
			c->dest->proto != DEST_LMTP;
		snprintf(c->last_error, sizeof(c->last_error), "%s %s: %s",
			 perm ? "550 5.1.2" : "451 4.4.3", c->dest->name, result->error);
		mt_slog(MT_LOG_WARNING, &c->log, "resolving %s: %s", c->dest->name,
			result->error);
		close_now(c, true, perm ? 550 : 451, c->last_error);
		return;
	}
	c->addrs = *result;
	c->next_addr = 0;
	connect_next(c);
}

static void connect_next(struct conn *c)
{
	struct event_base *base = mt_loop_base(c->d->mta->loop);
	while (c->next_addr < c->addrs.count) {
		const struct dns_addr *a = &c->addrs.addrs[c->next_addr++];
		char addr[MT_SOCKADDR_STRLEN];
		mt_sockaddr_str((const struct sockaddr *)&a->ss, addr, sizeof(addr));
		if (c->dest->proto == DEST_LMTP)
			snprintf(c->peer, sizeof(c->peer), "%s[%s]", c->dest->name, addr);
		else if (strcmp(a->host, addr) == 0 || strchr(addr, '[') != NULL ||
			 strncmp(a->host, addr, strlen(a->host)) == 0)
			snprintf(c->peer, sizeof(c->peer), "%s", addr);
		else
			snprintf(c->peer, sizeof(c->peer), "%s[%s]", a->host, addr);
		unsigned char bin[16];
		bool literal = inet_pton(AF_INET, a->host, bin) == 1 ||
			inet_pton(AF_INET6, a->host, bin) == 1;
		snprintf(c->sni, sizeof(c->sni), "%s", literal ? "" : a->host);
		if (c->bev != NULL)
			bufferevent_free(c->bev);
		c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
		if (c->bev == NULL)
			mt_panic("bufferevent_socket_new failed");
		bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
		bufferevent_enable(c->bev, EV_READ | EV_WRITE);
		conn_enter(c, CS_CONNECT);
		if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&a->ss,
					       (int)a->len) == 0) {
			conn_set_timer(c, c->connect_ms);
			return;
		}
		snprintf(c->last_error, sizeof(c->last_error), "connect to %s: %s",
			 c->peer, strerror(errno));
	}
	if (c->last_error[0] == '\0')
		snprintf(c->last_error, sizeof(c->last_error), "no address to connect to");
	conn_fail(c, "%s", c->last_error);
}

struct conn *conn_new(struct dest *dest)
{
	struct delivery *d = dest->delivery;
	struct event_base *base = mt_loop_base(d->mta->loop);
	struct conn *c = mt_xcalloc(1, sizeof(*c));
	c->dest = dest;
	c->d = d;
	c->log.session_id = mt_session_id_new();
	c->state = CS_RESOLVE;
	mt_smtp_reply_reset(&c->reply);
	mt_line_reader_init(&c->reader, REPLY_LINE_MAX, MT_LINE_ACCEPT_LF);
	c->timer = evtimer_new(base, timer_cb, c);
	c->soon = evtimer_new(base, soon_cb, c);
	if (c->timer == NULL || c->soon == NULL)
		mt_panic("evtimer_new failed");
	conn_set_timer(c, d->mta->set->connect_timeout + 10000);

	c->connect_ms = d->mta->set->connect_timeout;
	c->greeting_ms = d->mta->set->client_timeout;
	const struct mt_hostport *hop = dest->fixed.host != NULL ? &dest->fixed : NULL;
	if (dest->proto == DEST_LMTP) {
		/* The shard's site new connections go to (a replication
		 * group's last known master: delivery-failover.c). */
		hop = dest_site_lmtp(dest, &c->site, &c->connect_ms,
				     &c->greeting_ms);
		if (hop == NULL) {
			fail_soon(c, 451, "451 4.3.5 shard %s is not in [shards]",
				  dest->name);
			return c;
		}
	}
	if (hop != NULL)
		c->dns = dns_resolve_host(d->dns, hop->host, hop->port, dns_done, c);
	else
		c->dns = dns_resolve_mx(d->dns, dest->name, 25, dns_done, c);
	return c;
}

/* Events */

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	switch (c->state) {
	case CS_CONNECT:
		snprintf(c->last_error, sizeof(c->last_error),
			 "connect to %s timed out", c->peer);
		connect_next(c);
		break;
	case CS_IDLE:
		conn_quit(c);
		break;
	case CS_QUIT:
		close_now(c, false, 451, "451 4.4.2 closed");
		break;
	default:
		conn_fail(c, "timeout in state %s", conn_state_names[c->state]);
		break;
	}
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	if ((what & BEV_EVENT_CONNECTED) != 0) {
		if (c->state == CS_TLS) {
			SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
			char desc[128] = "";
			if (ssl != NULL)
				mt_tls_describe(ssl, desc, sizeof(desc));
			c->tls = true;
			mt_slog(MT_LOG_INFO, &c->log, "TLS with %s: %s", c->peer, desc);
			conn_enter(c, CS_HELLO);
			conn_send(c, "EHLO %s", c->d->mta->hostname);
			conn_set_timer(c, c->d->mta->set->client_timeout);
		} else {
			conn_enter(c, CS_GREETING);
			conn_set_timer(c, c->greeting_ms);
		}
		return;
	}
	if (c->state == CS_CONNECT) {
		snprintf(c->last_error, sizeof(c->last_error), "connect to %s: %s",
			 c->peer, evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		mt_slog(MT_LOG_INFO, &c->log, "%s", c->last_error);
		connect_next(c);
		return;
	}
	if (c->state == CS_QUIT || c->state == CS_IDLE) {
		/* A cached connection the server closed: nothing was lost. */
		mt_slog(MT_LOG_DEBUG, &c->log, "%s %s closed the connection",
			conn_proto(c), c->peer);
		close_now(c, false, 451, "451 4.4.2 closed");
		return;
	}
	if (c->state == CS_TLS) {
		char why[128];
		c->dest->tls_failed = true;
		conn_fail(c, "TLS handshake failed: %s (next connection without TLS)",
			  mt_tls_bev_error(bev, why, sizeof(why)));
		return;
	}
	conn_fail(c, "lost connection in state %s", conn_state_names[c->state]);
}

/* Output */

static void write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	if (c->state == CS_BODY) {
		conn_set_timer(c, c->d->mta->set->client_timeout);
		conn_fill_body(c);
	}
}

/* Replies */

static void hello_reply(struct conn *c)
{
	int code = c->reply.code;
	bool ok = code >= 200 && code < 300;
	if (!ok && c->state == CS_HELLO && c->dest->proto == DEST_SMTP) {
		/* An old server: HELO, no extensions. */
		conn_enter(c, CS_HELO);
		conn_send(c, "HELO %s", c->d->mta->hostname);
		return;
	}
	if (!ok) {
		conn_fail(c, "%s refused: %s", c->state == CS_HELO ? "HELO" :
			  c->dest->proto == DEST_LMTP ? "LHLO" : "EHLO", conn_reply_text(c));
		return;
	}
	if (c->state == CS_HELLO)
		mt_smtp_caps_parse(&c->reply, &c->caps);
	else
		memset(&c->caps, 0, sizeof(c->caps));
	if (c->dest->proto == DEST_SMTP && c->caps.starttls && !c->tls &&
	    c->d->mta->tls_client != NULL && !c->dest->tls_failed) {
		conn_enter(c, CS_STARTTLS);
		conn_send(c, "STARTTLS");
		return;
	}
	conn_ready(c);
}

static void starttls_reply(struct conn *c)
{
	if (c->reply.code != 220) {
		/* Opportunistic: carry on in plaintext (RFC 7435). */
		conn_ready(c);
		return;
	}
	size_t discarded = 0;
	const char *error;
	struct bufferevent *bev = mt_tls_bev_starttls(c->d->mta->tls_client, &c->bev,
		c->sni[0] != '\0' ? c->sni : NULL, &discarded, &error);
	if (bev == NULL) {
		c->dest->tls_failed = true;
		conn_fail(c, "STARTTLS: %s", error);
		return;
	}
	c->bev = bev;
	mt_line_reader_reset(&c->reader);
	conn_enter(c, CS_TLS);
	bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void handle_reply(struct conn *c)
{
	int code = c->reply.code;
	switch (c->state) {
	case CS_GREETING:
		if (code != 220) {
			conn_fail(c, "greeting: %s", conn_reply_text(c));
			return;
		}
		conn_enter(c, CS_HELLO);
		conn_send(c, "%s %s", c->dest->proto == DEST_LMTP ? "LHLO" : "EHLO",
			  c->d->mta->hostname);
		break;
	case CS_HELLO:
	case CS_HELO:
		hello_reply(c);
		return;
	case CS_STARTTLS:
		starttls_reply(c);
		return;
	case CS_TRANSACTION:
		conn_tx_reply(c);
		return;
	case CS_DOT:
		conn_dot_reply(c);
		return;
	case CS_RSET:
		if (code < 200 || code >= 300) {
			conn_fail(c, "RSET: %s", conn_reply_text(c));
			return;
		}
		conn_after_transaction(c);
		return;
	case CS_QUIT:
		close_now(c, false, 451, "451 4.4.2 closed");
		return;
	default:
		/* e.g. a 421 while idle: the server is going away. */
		conn_fail(c, "unexpected reply in state %s: %s",
			  conn_state_names[c->state], conn_reply_text(c));
		return;
	}
	conn_set_timer(c, c->d->mta->set->client_timeout);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	while (c->state != CS_CLOSED && c->bev == bev) {
		const char *error;
		enum mt_line_status status = mt_line_read(&c->reader, in, &c->line,
							  &error);
		if (status == MT_LINE_NEED_MORE)
			return;
		if (status != MT_LINE_OK) {
			conn_fail(c, "bad reply line: %s", error);
			return;
		}
		enum mt_smtp_reply_status rs = mt_smtp_reply_feed(&c->reply,
			mt_buf_cstr(&c->line), c->line.len, &error);
		if (rs == MT_SMTP_REPLY_BAD) {
			conn_fail(c, "%s", error);
			return;
		}
		if (rs == MT_SMTP_REPLY_DONE)
			handle_reply(c);
	}
}

