/* admin.c — the admin socket (see admin.h): one request line per
 * connection, answered from the queue's in-memory index, and the changes
 * (flush, hold, release, delete) applied through the queue and delivery like
 * any other, so the queue database keeps its one owner.
 *
 * Trust boundary: the socket is mode 0600 in the private queue_dir, so its
 * clients are root or the daemon's user (mailtierctl). Still, a request is
 * one line of at most REQUEST_MAX octets read within REQUEST_TIMEOUT_SECS,
 * ids must look like ids, and client-supplied strings in the queue
 * (addresses, errors) are sent with control characters replaced so each
 * record stays one line. No RFC applies (a private line protocol). */
#include "admin.h"
#include "clock.h"
#include "alloc.h"
#include "buf.h"
#include "delivery.h"
#include "log.h"
#include "loop.h"
#include "mta.h"
#include "queue.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#define REQUEST_MAX 512
#define REQUEST_TIMEOUT_SECS 10
#define LIST_RCPTS_SHOWN 5

struct mta_admin {
	struct mta *mta;
	struct evconnlistener *listener;
	char *path;
	struct admin_conn *conns;
	char error[600];
};

struct admin_conn {
	struct admin_conn *prev, *next;
	struct mta_admin *admin;
	struct bufferevent *bev;
	bool closing;
};

/* Replies */

/* Append s with control characters replaced (one record, one line). */
static void put_clean(struct mt_buf *out, const char *s)
{
	for (; s != NULL && *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		mt_buf_append_char(out, c < 0x20 || c == 0x7f ? '?' : (char)c);
	}
}

static const char *msg_status(const struct queue_msg *msg)
{
	if ((msg->flags & QUEUE_MSG_HELD) != 0)
		return "held";
	if (msg->delivery != NULL)
		return "active";
	for (unsigned int i = 0; i < msg->rcpt_count; i++)
		if (msg->rcpts[i].state == QUEUE_RCPT_DEFERRED)
			return "deferred";
	return "pending";
}

static const char *msg_last_error(const struct queue_msg *msg)
{
	for (unsigned int i = 0; i < msg->rcpt_count; i++)
		if (msg->rcpts[i].state == QUEUE_RCPT_DEFERRED &&
		    msg->rcpts[i].last_error != NULL)
			return msg->rcpts[i].last_error;
	return "";
}

/* LIST: id TAB size TAB arrival-ms TAB status TAB sender TAB recipients
 * (those still waiting, at most five, then "+N") TAB last error. */
static void cmd_list(struct mta_admin *a, struct mt_buf *out)
{
	struct queue *q = a->mta->queue;
	mt_buf_appendf(out, "+OK %u messages\n", queue_count(q));
	for (struct queue_msg *m = queue_first(q); m != NULL; m = queue_next(m)) {
		mt_buf_appendf(out, "%s\t%llu\t%lld\t%s\t", m->id,
			       (unsigned long long)m->size, (long long)m->arrival,
			       msg_status(m));
		put_clean(out, m->sender);
		mt_buf_append_char(out, '\t');
		unsigned int shown = 0, waiting = 0;
		for (unsigned int i = 0; i < m->rcpt_count; i++) {
			const struct queue_rcpt *r = &m->rcpts[i];
			if (r->state != QUEUE_RCPT_PENDING && r->state != QUEUE_RCPT_DEFERRED)
				continue;
			if (waiting++ >= LIST_RCPTS_SHOWN)
				continue;
			if (shown++ > 0)
				mt_buf_append_char(out, ',');
			put_clean(out, r->address);
		}
		if (waiting > shown)
			mt_buf_appendf(out, ",+%u", waiting - shown);
		mt_buf_append_char(out, '\t');
		put_clean(out, msg_last_error(m));
		mt_buf_append_char(out, '\n');
	}
	mt_buf_append_str(out, ".\n");
}

static void cmd_show(struct mta_admin *a, struct queue_msg *m, struct mt_buf *out)
{
	mt_buf_appendf(out, "+OK %s\nid: %s\nstatus: %s\nsize: %llu\n"
		       "arrival: %lld\nage-seconds: %lld\nflags:%s%s%s%s%s\nsender: <",
		       m->id, m->id, msg_status(m), (unsigned long long)m->size,
		       (long long)m->arrival,
		       (long long)((mt_wall_ms() - m->arrival) / 1000),
		       (m->flags & QUEUE_MSG_HELD) ? " held" : "",
		       (m->flags & QUEUE_MSG_LOOP) ? " loop" : "",
		       (m->flags & QUEUE_MSG_DSN) ? " dsn" : "",
		       (m->flags & QUEUE_MSG_8BIT) ? " 8bitmime" : "",
		       (m->flags & QUEUE_MSG_SMTPUTF8) ? " smtputf8" : "");
	put_clean(out, m->sender);
	mt_buf_append_str(out, ">\nclient: ");
	put_clean(out, m->client);
	mt_buf_append_char(out, '\n');
	if (m->envid != NULL) {
		mt_buf_append_str(out, "envid: ");
		put_clean(out, m->envid);
		mt_buf_append_char(out, '\n');
	}
	for (unsigned int i = 0; i < m->rcpt_count; i++) {
		const struct queue_rcpt *r = &m->rcpts[i];
		mt_buf_append_str(out, "rcpt: <");
		put_clean(out, r->address);
		mt_buf_appendf(out, "> state=%s attempts=%u", queue_rcpt_state_name(r->state),
			       r->attempts);
		if (r->state == QUEUE_RCPT_DEFERRED)
			mt_buf_appendf(out, " next_try_in=%llds",
				       (long long)((r->next_try - mt_wall_ms()) / 1000));
		if (r->last_error != NULL) {
			mt_buf_append_str(out, " last_error=");
			put_clean(out, r->last_error);
		}
		mt_buf_append_char(out, '\n');
	}
	mt_buf_append_str(out, ".\n");
}

static void cmd_stats(struct mta_admin *a, struct mt_buf *out)
{
	struct queue_stats s;
	queue_get_stats(a->mta->queue, &s);
	mt_buf_appendf(out, "+OK\nmessages: %u\nsubmitted: %llu\nsaved: %llu\n"
		       "removed: %llu\nbody_loads: %llu\nlog_flushes: %llu\n"
		       "lazy_log_flushes: %llu\n"
		       "flushed_writes: %llu\nmax_batch: %llu\npending_writes: %u\n"
		       "commit_usecs: %llu\nflush_usecs: %llu\ncompany_waits: %llu\n"
		       "spooled_pieces: %llu\nunfinished_bodies_deleted: %llu\n.\n",
		       s.messages, (unsigned long long)s.submitted,
		       (unsigned long long)s.saved, (unsigned long long)s.removed,
		       (unsigned long long)s.loads, (unsigned long long)s.flushes,
		       (unsigned long long)s.lazy_flushes,
		       (unsigned long long)s.flushed_jobs, (unsigned long long)s.max_batch,
		       s.pending_writes, (unsigned long long)s.commit_usecs,
		       (unsigned long long)s.flush_usecs,
		       (unsigned long long)s.company_waits,
		       (unsigned long long)s.spooled_pieces,
		       (unsigned long long)s.orphans);
}

static void execute(struct mta_admin *a, const char *line, struct mt_buf *out)
{
	struct mta *mta = a->mta;
	size_t verb_len = strcspn(line, " ");
	const char *arg = line[verb_len] == ' ' ? line + verb_len + 1 : "";
	struct queue_msg *m = arg[0] != '\0' ? queue_find(mta->queue, arg) : NULL;
#define IS(name) (verb_len == sizeof(name) - 1 && strncasecmp(line, name, verb_len) == 0)
	if (IS("LIST")) {
		cmd_list(a, out);
		return;
	}
	if (IS("STATS")) {
		cmd_stats(a, out);
		return;
	}
	if (IS("FLUSH") && arg[0] == '\0') {
		delivery_flush(mta->delivery, NULL);
		mt_info("admin: flush of the whole queue");
		mt_buf_appendf(out, "+OK flushing %u messages\n", queue_count(mta->queue));
		return;
	}
	if (!IS("SHOW") && !IS("FLUSH") && !IS("HOLD") && !IS("RELEASE") &&
	    !IS("DELETE")) {
		mt_buf_append_str(out, "-ERR unknown command\n");
		return;
	}
	if (m == NULL) {
		mt_buf_append_str(out, "-ERR no such message in the queue\n");
		return;
	}
	if (IS("SHOW")) {
		cmd_show(a, m, out);
	} else if (IS("FLUSH")) {
		mt_info("queue=%s admin: flush", m->id);
		delivery_flush(mta->delivery, m);
		mt_buf_appendf(out, "+OK flushing %s\n", m->id);
	} else if (IS("HOLD")) {
		mt_info("queue=%s admin: hold", m->id);
		m->flags |= QUEUE_MSG_HELD;
		queue_save(mta->queue, m, NULL);
		mt_buf_appendf(out, "+OK %s held\n", m->id);
	} else if (IS("RELEASE")) {
		mt_info("queue=%s admin: release", m->id);
		m->flags &= ~QUEUE_MSG_HELD;
		queue_save(mta->queue, m, NULL);
		delivery_flush(mta->delivery, m);
		mt_buf_appendf(out, "+OK %s released\n", m->id);
	} else {
		mt_info("queue=%s admin: delete", m->id);
		queue_remove(mta->queue, m);
		mt_buf_appendf(out, "+OK %s deleted\n", m->id);
	}
#undef IS
}

/* Connections */

static void conn_free(struct admin_conn *c)
{
	struct mta_admin *a = c->admin;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		a->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	bufferevent_free(c->bev);
	free(c);
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct admin_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	if (c->closing)
		return;
	size_t len;
	char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF);
	if (line == NULL) {
		if (evbuffer_get_length(in) > REQUEST_MAX) {
			conn_free(c);
		}
		return;
	}
	struct mt_buf out = MT_BUF_INIT;
	if (len > REQUEST_MAX || strlen(line) != len)
		mt_buf_append_str(&out, "-ERR bad request\n");
	else
		execute(c->admin, line, &out);
	free(line);
	c->closing = true;
	bufferevent_disable(bev, EV_READ);
	bufferevent_write(bev, out.data, out.len);
	mt_buf_free(&out);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct admin_conn *c = arg;
	if (c->closing)
		conn_free(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	conn_free(arg);
}

static void accept_cb(struct evconnlistener *listener, evutil_socket_t fd,
		      struct sockaddr *sa, int socklen, void *arg)
{
	struct mta_admin *a = arg;
	struct admin_conn *c = mt_xcalloc(1, sizeof(*c));
	c->admin = a;
	c->bev = bufferevent_socket_new(evconnlistener_get_base(listener), fd,
					BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		close(fd);
		free(c);
		return;
	}
	struct timeval tv = { REQUEST_TIMEOUT_SECS, 0 };
	bufferevent_set_timeouts(c->bev, &tv, &tv);
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->next = a->conns;
	if (c->next != NULL)
		c->next->prev = c;
	a->conns = c;
}

struct mta_admin *mta_admin_new(struct mta *mta, const char **error_r)
{
	static _Thread_local char error[600];
	struct mta_admin *a = mt_xcalloc(1, sizeof(*a));
	struct sockaddr_un sun;
	a->mta = mta;
	a->path = mt_xasprintf("%s/%s", mta->set->queue_dir, MTA_ADMIN_SOCKET);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(a->path) >= sizeof(sun.sun_path)) {
		snprintf(error, sizeof(error), "%s: path too long for a socket", a->path);
		goto fail;
	}
	strcpy(sun.sun_path, a->path);
	/* We hold the queue's lock: a socket file there is a dead one's. */
	(void)unlink(a->path);
	mode_t old = umask(0077);
	a->listener = evconnlistener_new_bind(mt_loop_base(mta->loop), accept_cb, a,
		LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 16,
		(struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (a->listener == NULL) {
		snprintf(error, sizeof(error), "%s: %s", a->path, strerror(errno));
		goto fail;
	}
	(void)chmod(a->path, 0600);
	return a;
fail:
	*error_r = error;
	free(a->path);
	free(a);
	return NULL;
}

void mta_admin_free(struct mta_admin **admin_p)
{
	struct mta_admin *a = *admin_p;
	if (a == NULL)
		return;
	*admin_p = NULL;
	while (a->conns != NULL)
		conn_free(a->conns);
	evconnlistener_free(a->listener);
	(void)unlink(a->path);
	free(a->path);
	free(a);
}
