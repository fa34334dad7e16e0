/* mmp-backend.c — logging in to a store shard on a user's behalf: connect
 * to the address of one site of the shard for the session's protocol, read
 * the greeting (a replica of a replication group refuses with "-ERR
 * [SYS/TEMP] replica ..." / "* BYE [UNAVAILABLE] replica ...": a failure,
 * and mmp-login.c tries the shard's next site), log in with the user's
 * canonical address as authorization identity and the proxy's own
 * credential (proxy_user, proxy_password_file), read the answer. All of it
 * within the caller's bound (backend_connect_timeout, or less of it when
 * backend_failover_wait is nearly over). The connection, the
 * deadline and the line reading are here with the POP3 dialogue (AUTH
 * PLAIN); the IMAP dialogue is mmp-backend-imap.c's.
 *
 * Trust boundary: the shard is ours but may be down, slow or broken: every
 * step has the one deadline, every line is bounded (512 octets) and checked
 * for shape; an -ERR line is passed to the client unchanged (it carries the
 * store's response code, e.g. [IN-USE]). The proxy password is sent only
 * to shards from [shards] and never logged.
 * RFCs: RFC 1939 section 4 (greeting), RFC 5034 section 4 (AUTH; an
 * initial response that would make the command longer than 255 octets is
 * sent after the server's "+ " instead), RFC 4616 (PLAIN with authzid),
 * RFC 3206 and RFC 2449 section 8 (response codes, passed through). */
#include "mmp-backend.h"
#include "sasl.h"
#include "alloc.h"
#include "buf.h"
#include "pop3-status.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

void mmp_backend_free(struct mmp_backend **backend_p)
{
	struct mmp_backend *b = *backend_p;
	if (b == NULL)
		return;
	*backend_p = NULL;
	if (b->bev != NULL)
		bufferevent_free(b->bev);
	if (b->timer != NULL)
		event_free(b->timer);
	free(b->address);
	free(b);
}

struct bufferevent *mmp_backend_take(struct mmp_backend **backend_p)
{
	struct mmp_backend *b = *backend_p;
	struct bufferevent *bev = b->bev;
	b->bev = NULL;
	bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	mmp_backend_free(backend_p);
	return bev;
}

void mmp_backend_finish(struct mmp_backend *b, enum mmp_backend_status status,
			const char *line, const char *reason)
{
	evtimer_del(b->timer);
	b->cb(b->sess, status, line, reason);
}

void mmp_backend_send(struct mmp_backend *b, const char *prefix,
		      const struct mt_buf *response)
{
	struct evbuffer *out = b->sess->worker->scratch;
	evbuffer_add(out, prefix, strlen(prefix));
	if (response != NULL)
		evbuffer_add(out, response->data, response->len);
	evbuffer_add(out, "\r\n", 2);
	mmp_bev_send(b->bev, true, out);
}

void mmp_backend_plain_response(struct mmp_backend *b, struct mt_buf *out)
{
	const struct mmp_server *server = b->sess->worker->server;
	mt_sasl_plain_encode(out, b->address, server->proxy_user,
			      server->proxy_password);
}

/* The POP3 dialogue */

static void on_greeting(struct mmp_backend *b)
{
	struct mt_buf response = MT_BUF_INIT;

	mmp_backend_plain_response(b, &response);
	/* RFC 5034 section 4: the whole AUTH line with its initial response
	 * must fit in 255 octets (CRLF included); else wait for "+ ". */
	if (strlen("AUTH PLAIN ") + response.len + 2 <= MMP_COMMAND_LINE_MAX) {
		mmp_backend_send(b, "AUTH PLAIN ", &response);
		b->step = STEP_AUTH;
	} else {
		mmp_backend_send(b, "AUTH PLAIN", NULL);
		b->step = STEP_AUTH_CONTINUE;
	}
	explicit_bzero(response.data, response.cap);
	mt_buf_free(&response);
}

/* One POP3 response line from the shard; false when the backend is
 * finished (and possibly freed). */
static bool pop3_line(struct mmp_backend *b, const char *line, size_t len)
{
	enum mt_pop3_status kind = mt_pop3_status(line, len);
	struct mt_buf response = MT_BUF_INIT;

	switch (b->step) {
	case STEP_CONNECT:
		if (kind != MT_POP3_OK) {
			/* e.g. a replica's "-ERR [SYS/TEMP] replica of shard S,
			 * master is ...": the line goes to the log. */
			mmp_backend_finish(b, MMP_BACKEND_FAILED, line, "no +OK greeting");
			return false;
		}
		on_greeting(b);
		return true;
	case STEP_AUTH_CONTINUE:
		if (kind == MT_POP3_CONTINUE) {
			mmp_backend_plain_response(b, &response);
			mmp_backend_send(b, "", &response);
			explicit_bzero(response.data, response.cap);
			mt_buf_free(&response);
			b->step = STEP_AUTH;
			return true;
		}
		break;
	case STEP_AUTH:
	case STEP_IMAP_LOGIN:
		break;
	}
	if (kind == MT_POP3_OK)
		mmp_backend_finish(b, MMP_BACKEND_OK, line, NULL);
	else if (kind == MT_POP3_ERR)
		mmp_backend_finish(b, MMP_BACKEND_REFUSED, line, NULL);
	else
		mmp_backend_finish(b, MMP_BACKEND_FAILED, NULL, "unexpected answer to AUTH");
	return false;
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct mmp_backend *b = arg;
	struct mt_buf line = MT_BUF_INIT;
	bool more = true;

	while (more) {
		const char *error = NULL;
		enum mt_line_status st = mt_line_read(&b->reader,
						      bufferevent_get_input(bev),
						      &line, &error);
		if (st == MT_LINE_NEED_MORE)
			break;
		if (st != MT_LINE_OK) {
			mmp_backend_finish(b, MMP_BACKEND_FAILED, NULL, error);
			break;
		}
		more = b->protocol == MMP_PROTO_IMAP ?
			mmp_backend_imap_line(b, mt_buf_cstr(&line), line.len) :
			pop3_line(b, mt_buf_cstr(&line), line.len);
		mt_buf_reset(&line);
	}
	mt_buf_free(&line);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct mmp_backend *b = arg;
	if ((what & BEV_EVENT_CONNECTED) != 0) {
		int one = 1;
		(void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY,
				 &one, sizeof(one));
		return;
	}
	if ((what & BEV_EVENT_EOF) != 0) {
		mmp_backend_finish(b, MMP_BACKEND_FAILED, NULL, "connection closed");
		return;
	}
	int err = EVUTIL_SOCKET_ERROR();
	mmp_backend_finish(b, MMP_BACKEND_FAILED, NULL,
	       err != 0 ? evutil_socket_error_to_string(err) : "connection failed");
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mmp_backend *b = arg;
	(void)fd; (void)what;
	b->cb(b->sess, MMP_BACKEND_FAILED, NULL,
	      b->fail_reason != NULL ? b->fail_reason : "timeout");
}

struct mmp_backend *mmp_backend_login(struct mmp_session *sess,
				      struct mmp_shard *shard, unsigned int site,
				      uint64_t timeout_ms,
				      const char *address, mmp_backend_cb_t *cb)
{
	struct mmp_worker *worker = sess->worker;
	uint64_t ms = timeout_ms;
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
	struct mmp_backend *b = mt_xcalloc(1, sizeof(*b));
	socklen_t addrlen;
	const struct sockaddr *addr = mmp_shard_sockaddr(shard, site, sess->protocol,
							 &addrlen);

	b->sess = sess;
	b->protocol = sess->protocol;
	b->shard = shard;
	b->site = site;
	b->cb = cb;
	b->address = mt_xstrdup(address);
	/* POP3's lines are at most 512 octets (RFC 2449 section 4); an IMAP
	 * login's OK carries the store's capability list. */
	mt_line_reader_init(&b->reader, b->protocol == MMP_PROTO_IMAP ?
			    MMP_BACKEND_LINE_MAX : MMP_RESPONSE_LINE_MAX,
			    MT_LINE_ACCEPT_LF);
	b->timer = evtimer_new(worker->base, timer_cb, b);
	b->bev = bufferevent_socket_new(worker->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (b->timer == NULL || b->bev == NULL)
		mt_panic("cannot create the backend connection");
	bufferevent_setcb(b->bev, read_cb, NULL, event_cb, b);
	bufferevent_setwatermark(b->bev, EV_READ, 0, MMP_INPUT_MAX);
	bufferevent_enable(b->bev, EV_READ | EV_WRITE);
	evtimer_add(b->timer, &tv);
	if (bufferevent_socket_connect(b->bev, (struct sockaddr *)addr,
				       (int)addrlen) < 0) {
		/* Report it from the loop, never inside the caller's call. */
		b->fail_reason = "cannot connect";
		mt_slog(MT_LOG_DEBUG, &sess->log, "connect to %s: %s",
			mmp_shard_address(shard, site, b->protocol), strerror(errno));
		event_active(b->timer, EV_TIMEOUT, 0);
	}
	return b;
}
