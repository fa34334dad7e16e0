/* mmp-relay.c — after login: copy bytes between the client and the store
 * shard, both ways, until either side closes. Nothing is parsed or changed
 * (the store speaks POP3 to the client from here on); per read event the
 * proxy adds only the byte counts and the idle time stamp (which also
 * ends a quiet period: the idle-sessions gauge, lib-mail/conn).
 *
 * Two ways to move the bytes:
 *   bufferevents  the default, and always with TLS: evbuffer chains move
 *                 from one side's input to the other's output without a
 *                 copy in user space (evbuffer_add_buffer);
 *   splice(2)     relay_splice = yes and both sides plaintext: socket ->
 *                 pipe -> socket in the kernel. Pipes come from a small
 *                 per-worker pool and are held only while bytes are in
 *                 flight, so an idle session holds none.
 * One exception to "not looked at", in bufferevent mode: the last line of
 * what an IMAP store sends is checked for a continuation request ("+",
 * RFC 9051 2.2.1, 7.5). Once it is written to the client, the client's
 * socket is set to TCP_QUICKACK (lib-mail/conn.h): a client with Nagle on
 * (Python's imaplib) sends a literal and its CRLF in two writes, and the
 * CRLF waited for our delayed ACK of the literal, ~40 ms per literal (#37
 * item 19). The store side needs nothing: the MMP writes to it with
 * TCP_NODELAY. In splice mode the bytes are not seen, and this is not done.
 *
 * Either way a side that does not read makes the other side stop being
 * read once MMP_RELAY_HIGH_WATER bytes wait for it (bounded memory), and a
 * side that closes first has what is already on its way flushed to the
 * other (a QUIT sent just before the client hung up still reaches the
 * store, RFC 1939 section 6) before both are closed.
 *
 * Trust boundary: relayed bytes are the client's and the store's and are
 * not looked at, but for the tail of an IMAP store's (a copy of at most 64
 * bytes, for its first octet). RFCs: RFC 1939's session end; RFC 9051
 * 2.2.1 (continuation requests), for the quick ACK only. */
#include "mmp.h"
#include "clock.h"
#include "alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

/* Bytes asked of one splice(2) into a pipe (the default pipe size). */
#define SPLICE_CHUNK 65536
/* Idle pipes kept per worker. */
#define SPLICE_POOL_MAX 64

struct mmp_splice_pool {
	int (*pipes)[2];
	size_t count;
};

/* One direction of a spliced relay. */
struct splice_dir {
	struct mmp_relay *relay;
	int src, dst;
	int pipe[2];		/* -1 when no pipe is held */
	size_t in_pipe;
	struct event *rd;	/* src readable */
	struct event *wr;	/* dst writable (only while the pipe is full) */
	uint64_t *counter;
	const char *eof_end;	/* the session's end when src closes */
	enum mt_conn_outcome eof_outcome;
	bool eof;
};

struct mmp_relay {
	struct mmp_session *sess;
	struct bufferevent *client;	/* bufferevent mode: taken from sess->conn */
	struct bufferevent *backend;
	const char *closing_end;	/* one side closed: flush, then close */
	enum mt_conn_outcome closing_outcome;
	bool spliced;
	bool down_line_start;		/* the store's last byte ended a line */
	bool quickack;			/* TCP_QUICKACK once the client's output is written */
	int client_fd, backend_fd;	/* splice mode: we own them */
	struct splice_dir up, down;	/* client -> store, store -> client */
};

/* Pipe pool */

struct mmp_splice_pool *mmp_splice_pool_new(void)
{
	struct mmp_splice_pool *pool = mt_xcalloc(1, sizeof(*pool));
	pool->pipes = mt_xcalloc(SPLICE_POOL_MAX, sizeof(*pool->pipes));
	return pool;
}

void mmp_splice_pool_free(struct mmp_splice_pool **pool_p)
{
	struct mmp_splice_pool *pool = *pool_p;
	if (pool == NULL)
		return;
	*pool_p = NULL;
	for (size_t i = 0; i < pool->count; i++) {
		close(pool->pipes[i][0]);
		close(pool->pipes[i][1]);
	}
	free(pool->pipes);
	free(pool);
}

static bool pool_take(struct mmp_splice_pool *pool, int p[2])
{
	if (pool->count > 0) {
		pool->count--;
		p[0] = pool->pipes[pool->count][0];
		p[1] = pool->pipes[pool->count][1];
		return true;
	}
	return pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0;
}

/* Give an empty pipe back (or close it when the pool is full). */
static void pool_put(struct mmp_splice_pool *pool, int p[2])
{
	if (pool->count < SPLICE_POOL_MAX) {
		pool->pipes[pool->count][0] = p[0];
		pool->pipes[pool->count][1] = p[1];
		pool->count++;
	} else {
		close(p[0]);
		close(p[1]);
	}
	p[0] = p[1] = -1;
}

/* Common */

static void touch(struct mmp_relay *relay)
{
	mt_conn_touch(&relay->sess->conn);
}

void mmp_relay_free(struct mmp_relay **relay_p)
{
	struct mmp_relay *relay = *relay_p;
	if (relay == NULL)
		return;
	*relay_p = NULL;
	if (relay->client != NULL)
		bufferevent_free(relay->client);
	if (relay->backend != NULL)
		bufferevent_free(relay->backend);
	struct splice_dir *dirs[] = { &relay->up, &relay->down };
	for (size_t i = 0; i < 2; i++) {
		struct splice_dir *d = dirs[i];
		if (d->rd != NULL)
			event_free(d->rd);
		if (d->wr != NULL)
			event_free(d->wr);
		if (d->pipe[0] >= 0) {
			if (d->in_pipe == 0 && relay->sess->worker->pipes != NULL)
				pool_put(relay->sess->worker->pipes, d->pipe);
			else {
				close(d->pipe[0]);
				close(d->pipe[1]);
			}
		}
	}
	if (relay->client_fd >= 0)
		close(relay->client_fd);
	if (relay->backend_fd >= 0)
		close(relay->backend_fd);
	atomic_fetch_sub(&relay->sess->worker->server->stats.relays_open, 1);
	free(relay);
}

/* Splice mode */

static void splice_close(struct splice_dir *d, enum mt_conn_outcome outcome,
			 const char *end)
{
	mmp_session_close(d->relay->sess, outcome, end);
}

/* Move what is in the pipe to dst. false when the session was closed. */
static bool splice_flush(struct splice_dir *d)
{
	struct mmp_splice_pool *pool = d->relay->sess->worker->pipes;

	while (d->in_pipe > 0) {
		ssize_t n = splice(d->pipe[0], NULL, d->dst, NULL, d->in_pipe,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			d->in_pipe -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			/* dst is full: stop reading src until it drains. */
			event_del(d->rd);
			event_add(d->wr, NULL);
			return true;
		}
		splice_close(d, MT_OUTCOME_ERROR, "write_error");
		return false;
	}
	event_del(d->wr);
	if (d->pipe[0] >= 0)
		pool_put(pool, d->pipe);
	if (d->eof) {
		splice_close(d, d->eof_outcome, d->eof_end);
		return false;
	}
	event_add(d->rd, NULL);
	return true;
}

static void splice_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct splice_dir *d = arg;
	struct mmp_relay *relay = d->relay;
	(void)fd; (void)what;

	if (d->pipe[0] < 0 && !pool_take(relay->sess->worker->pipes, d->pipe)) {
		mt_slog(MT_LOG_ERROR, &relay->sess->log, "pipe2: %s",
			strerror(errno));
		splice_close(d, MT_OUTCOME_ERROR, "error");
		return;
	}
	ssize_t n = splice(d->src, NULL, d->pipe[1], NULL, SPLICE_CHUNK,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n > 0) {
		d->in_pipe += (size_t)n;
		*d->counter += (uint64_t)n;
		touch(relay);
	} else if (n == 0) {
		d->eof = true;	/* flushed (or closed at once) below */
	} else if (errno != EAGAIN && errno != EINTR) {
		d->eof = true;
		d->eof_end = d == &relay->up ? "client_error" : "backend_error";
		d->eof_outcome = MT_OUTCOME_ERROR;
	}
	splice_flush(d);
}

static void splice_write_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what;
	splice_flush(arg);
}

static void splice_dir_init(struct mmp_relay *relay, struct splice_dir *d,
			    int src, int dst, uint64_t *counter,
			    enum mt_conn_outcome eof_outcome, const char *eof_end)
{
	struct event_base *base = relay->sess->worker->base;
	d->relay = relay;
	d->src = src;
	d->dst = dst;
	d->pipe[0] = d->pipe[1] = -1;
	d->counter = counter;
	d->eof_end = eof_end;
	d->eof_outcome = eof_outcome;
	d->rd = event_new(base, src, EV_READ | EV_PERSIST, splice_read_cb, d);
	d->wr = event_new(base, dst, EV_WRITE | EV_PERSIST, splice_write_cb, d);
	if (d->rd == NULL || d->wr == NULL)
		mt_panic("event_new failed");
	event_add(d->rd, NULL);
}

/* Take both sockets out of their bufferevents (all buffers are empty). */
static void switch_to_splice(struct mmp_relay *relay)
{
	struct mmp_session *sess = relay->sess;
	struct bufferevent *bevs[] = { relay->client, relay->backend };
	int fds[2];

	for (size_t i = 0; i < 2; i++) {
		fds[i] = bufferevent_getfd(bevs[i]);
		bufferevent_disable(bevs[i], EV_READ | EV_WRITE);
		bufferevent_setfd(bevs[i], -1);
		bufferevent_free(bevs[i]);
	}
	relay->client = NULL;
	relay->backend = NULL;
	relay->client_fd = fds[0];
	relay->backend_fd = fds[1];
	relay->spliced = true;
	splice_dir_init(relay, &relay->up, fds[0], fds[1], &sess->bytes_in,
			MT_OUTCOME_CLIENT_CLOSED, "client_eof");
	splice_dir_init(relay, &relay->down, fds[1], fds[0], &sess->bytes_out,
			MT_OUTCOME_BACKEND_CLOSED, "backend_eof");
	mt_slog(MT_LOG_DEBUG, &sess->log, "relay: splice");
}

/* Bufferevent mode */

static bool buffers_empty(struct mmp_relay *relay)
{
	struct bufferevent *c = relay->client, *b = relay->backend;
	return evbuffer_get_length(bufferevent_get_input(c)) == 0 &&
		evbuffer_get_length(bufferevent_get_output(c)) == 0 &&
		evbuffer_get_length(bufferevent_get_input(b)) == 0 &&
		evbuffer_get_length(bufferevent_get_output(b)) == 0;
}

static void maybe_splice(struct mmp_relay *relay)
{
	struct mmp_session *sess = relay->sess;
	if (sess->worker->server->set->relay_splice && !sess->tls &&
	    !relay->spliced && relay->closing_end == NULL &&
	    sess->worker->pipes != NULL && buffers_empty(relay))
		switch_to_splice(relay);
}

/* Does what the store sent (n bytes in in) end with a continuation
 * request, a last line starting with "+"? Only its last 64 bytes are
 * looked at: the store's continuations are short ("+ Ready for literal
 * data", "+ idling"). Notes whether it ends a line for the next call. */
static bool ends_with_continuation(struct mmp_relay *relay, struct evbuffer *in,
				   size_t n)
{
	char tail[64];
	size_t take = n < sizeof(tail) ? n : sizeof(tail), i;
	struct evbuffer_ptr pos;
	bool line_start = relay->down_line_start;

	if (evbuffer_ptr_set(in, &pos, n - take, EVBUFFER_PTR_SET) != 0 ||
	    evbuffer_copyout_from(in, &pos, tail, take) != (ev_ssize_t)take)
		return false;
	relay->down_line_start = tail[take - 1] == '\n';
	if (!relay->down_line_start)
		return false;
	for (i = take - 1; i > 0 && tail[i - 1] != '\n'; i--)
		;
	if (i == 0 && !(take == n && line_start))
		return false;	/* the line began before what we looked at */
	return tail[i] == '+';
}

/* The client's socket: TCP_QUICKACK now if the continuation is written,
 * else once it is (client_write_cb). */
static void client_quickack(struct mmp_relay *relay)
{
	if (evbuffer_get_length(bufferevent_get_output(relay->client)) == 0)
		(void)mt_conn_quickack_fd(bufferevent_getfd(relay->client));
	else
		relay->quickack = true;
}

/* Move src's input to dst (a plaintext dst is written at once when
 * nothing is queued for it); pause src when dst is backed up. */
static void copy(struct mmp_relay *relay, struct bufferevent *src,
		 struct bufferevent *dst, uint64_t *counter)
{
	struct evbuffer *in = bufferevent_get_input(src);
	struct evbuffer *out = bufferevent_get_output(dst);
	size_t n = evbuffer_get_length(in);
	bool plain = dst == relay->backend || !relay->sess->tls;
	bool continuation;

	if (n == 0)
		return;
	*counter += n;
	touch(relay);
	continuation = dst == relay->client &&
		relay->sess->protocol == MMP_PROTO_IMAP &&
		ends_with_continuation(relay, in, n);
	mmp_bev_send(dst, plain, in);
	if (continuation)
		client_quickack(relay);
	if (evbuffer_get_length(out) >= MMP_RELAY_HIGH_WATER) {
		bufferevent_disable(src, EV_READ);
		bufferevent_setwatermark(dst, EV_WRITE, MMP_RELAY_HIGH_WATER / 2, 0);
	}
}

static void client_read_cb(struct bufferevent *bev, void *arg)
{
	struct mmp_relay *relay = arg;
	copy(relay, bev, relay->backend, &relay->sess->bytes_in);
}

static void backend_read_cb(struct bufferevent *bev, void *arg)
{
	struct mmp_relay *relay = arg;
	copy(relay, bev, relay->client, &relay->sess->bytes_out);
}

/* dst's output drained to its low watermark: resume src, or finish. */
static void drained(struct mmp_relay *relay, struct bufferevent *dst,
		    struct bufferevent *src)
{
	if (evbuffer_get_length(bufferevent_get_output(dst)) == 0 &&
	    relay->closing_end != NULL) {
		mmp_session_close(relay->sess, relay->closing_outcome, relay->closing_end);
		return;
	}
	if (relay->closing_end == NULL &&
	    (bufferevent_get_enabled(src) & EV_READ) == 0) {
		bufferevent_setwatermark(dst, EV_WRITE, 0, 0);
		bufferevent_enable(src, EV_READ);
	}
	maybe_splice(relay);
}

static void client_write_cb(struct bufferevent *bev, void *arg)
{
	struct mmp_relay *relay = arg;
	if (relay->quickack && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
		relay->quickack = false;
		(void)mt_conn_quickack_fd(bufferevent_getfd(bev));
	}
	drained(relay, bev, relay->backend);
}

static void backend_write_cb(struct bufferevent *bev, void *arg)
{
	struct mmp_relay *relay = arg;
	drained(relay, bev, relay->client);
}

/* One side closed (or failed): flush what is on its way to the other. */
static void side_closed(struct mmp_relay *relay, struct bufferevent *other,
			enum mt_conn_outcome outcome, const char *end)
{
	if (relay->closing_end != NULL)
		return;
	relay->closing_end = end;
	relay->closing_outcome = outcome;
	bufferevent_disable(relay->client, EV_READ);
	bufferevent_disable(relay->backend, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(other)) == 0) {
		mmp_session_close(relay->sess, outcome, end);
		return;
	}
	bufferevent_setwatermark(other, EV_WRITE, 0, 0);
	bufferevent_enable(other, EV_WRITE);
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct mmp_relay *relay = arg;
	(void)bev;
	if (relay->closing_end != NULL) {
		/* The side we were flushing to is gone too. */
		mmp_session_close(relay->sess, relay->closing_outcome, relay->closing_end);
		return;
	}
	/* Bytes read with the EOF are still to be passed on. */
	copy(relay, bev, relay->backend, &relay->sess->bytes_in);
	if ((what & BEV_EVENT_EOF) != 0)
		side_closed(relay, relay->backend, MT_OUTCOME_CLIENT_CLOSED, "client_eof");
	else
		side_closed(relay, relay->backend, MT_OUTCOME_ERROR, "client_error");
}

static void backend_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct mmp_relay *relay = arg;
	(void)bev;
	if (relay->closing_end != NULL) {
		mmp_session_close(relay->sess, relay->closing_outcome, relay->closing_end);
		return;
	}
	copy(relay, bev, relay->client, &relay->sess->bytes_out);
	/* The store ended it: after the client's QUIT or LOGOUT, or its own
	 * timeout or error (the relay does not read the stream to know). */
	if ((what & BEV_EVENT_EOF) != 0)
		side_closed(relay, relay->client, MT_OUTCOME_BACKEND_CLOSED, "backend_eof");
	else
		side_closed(relay, relay->client, MT_OUTCOME_ERROR, "backend_error");
}

void mmp_relay_start(struct mmp_session *sess, struct bufferevent *backend)
{
	struct mmp_relay *relay = mt_xcalloc(1, sizeof(*relay));
	struct bufferevent *client = mt_conn_take_bev(&sess->conn);

	relay->sess = sess;
	relay->client = client;
	relay->backend = backend;
	relay->down_line_start = true;
	relay->client_fd = relay->backend_fd = -1;
	relay->up.pipe[0] = relay->up.pipe[1] = -1;
	relay->down.pipe[0] = relay->down.pipe[1] = -1;
	sess->relay = relay;
	atomic_fetch_add(&sess->worker->server->stats.relays_open, 1);
	mmp_enter_state(sess, MMP_STATE_RELAY);
	/* From now on the session ends only when a side closes or after
	 * idle_timeout without a byte either way (the relay touches it). */
	mt_conn_set_lifetime(&sess->conn, 0);
	const struct mt_mmp_settings *set = sess->worker->server->set;
	mt_conn_set_idle(&sess->conn, sess->protocol == MMP_PROTO_IMAP ?
			 set->imap_idle_timeout : set->idle_timeout);
	/* The idle-sessions gauge: counted as it changes (mmp-session.c's
	 * quiet op), never by scanning the workers' sessions. */
	mt_conn_set_quiet(&sess->conn, set->idle_session_threshold);

	bufferevent_setcb(client, client_read_cb, client_write_cb,
			  client_event_cb, relay);
	bufferevent_setcb(backend, backend_read_cb, backend_write_cb,
			  backend_event_cb, relay);
	bufferevent_setwatermark(client, EV_READ | EV_WRITE, 0, 0);
	bufferevent_setwatermark(backend, EV_READ | EV_WRITE, 0, 0);
	bufferevent_enable(client, EV_READ | EV_WRITE);
	bufferevent_enable(backend, EV_READ | EV_WRITE);
	/* Commands the client pipelined after PASS/AUTH, and anything the
	 * store sent after its +OK. */
	copy(relay, client, backend, &sess->bytes_in);
	copy(relay, backend, client, &sess->bytes_out);
	/* The +OK went straight out: splice from the first byte, if asked. */
	maybe_splice(relay);
}
