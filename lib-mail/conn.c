/* conn.c — the connection core (see conn.h): bufferevent callbacks, the
 * idle timer (also the lifetime and the quiet period), close-after-flush,
 * close with its outcome and the deferred free, session lists, and
 * TCP_QUICKACK after a reply the peer answers with bulk data.
 *
 * Trust boundary: none of its own (the peer's bytes are left to the tier).
 * The one timer (idle period and lifetime) bounds how long a peer may hold
 * a connection.
 * Guarantee: ops->free runs exactly once, from the loop, after ops->closed
 * and after the callback that closed the session has returned. */
#include "conn.h"
#include "clock.h"
#include "loop.h"

#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

const char *const mt_conn_outcome_names[MT_OUTCOME_COUNT] = {
	[MT_OUTCOME_QUIT] = "quit",
	[MT_OUTCOME_CLIENT_CLOSED] = "client_closed",
	[MT_OUTCOME_TIMEOUT] = "timeout",
	[MT_OUTCOME_ERROR] = "error",
	[MT_OUTCOME_LIMIT] = "limit",
	[MT_OUTCOME_REFUSED] = "refused",
	[MT_OUTCOME_SHUTDOWN] = "shutdown",
	[MT_OUTCOME_BACKEND_CLOSED] = "backend_closed",
};

/* The first decision to end the session is how it ended. */
static void record_outcome(struct mt_conn *c, enum mt_conn_outcome outcome)
{
	if (c->outcome_set)
		return;
	c->outcome = outcome;
	c->outcome_set = true;
}

static void conn_unlink(struct mt_conn *c)
{
	struct mt_conn_list *list = c->list;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		list->head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	list->count--;
}

static void conn_free_cb(void *context)
{
	struct mt_conn *c = context;
	c->ops->free(c);
}

void mt_conn_close(struct mt_conn *c, enum mt_conn_outcome outcome,
		   const char *reason)
{
	if (c->closed)
		return;
	record_outcome(c, outcome);
	c->closed = true;
	c->close_reason = reason;
	if (c->quiet) {		/* the tier's count of quiet sessions */
		c->quiet = false;
		c->ops->quiet(c, false);
	}
	conn_unlink(c);		/* ops->closed sees the list without c */
	c->ops->closed(c, reason);
	if (c->bev != NULL)	/* NULL: taken by the tier, or lost to STARTTLS */
		bufferevent_free(c->bev);
	c->bev = NULL;
	mt_timer_free(&c->timer);
	/* Also when the loop is freed before it runs again (shutdown). */
	mt_loop_post_discardable(c->loop, conn_free_cb, conn_free_cb, c);
}

void mt_conn_close_after(struct mt_conn *c, enum mt_conn_outcome outcome,
			 const char *reason)
{
	if (c->closed || c->closing)
		return;
	record_outcome(c, outcome);
	c->closing = true;
	c->close_reason = reason;
	if (c->bev != NULL)
		bufferevent_disable(c->bev, EV_READ);
	if (mt_conn_output_pending(c) == 0)
		mt_conn_close(c, c->outcome, reason);
}

enum mt_conn_outcome mt_conn_outcome(const struct mt_conn *c)
{
	/* Set by every close; ERROR only for a session not closed yet. */
	return c->outcome_set ? c->outcome : MT_OUTCOME_ERROR;
}

static void timer_arm(struct mt_conn *c, uint64_t now);

/* Activity: stamp the clock; a quiet session is active again (and its
 * next quiet period is timed from now). */
static void conn_active(struct mt_conn *c)
{
	c->active_ms = mt_clock_coarse_ms();
	if (c->quiet) {
		c->quiet = false;
		c->ops->quiet(c, false);
		timer_arm(c, c->active_ms);
	}
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct mt_conn *c = arg;
	(void)bev;
	conn_active(c);
	c->ops->input(c);
}

static void write_cb(struct bufferevent *bev, void *arg)
{
	struct mt_conn *c = arg;
	conn_active(c);
	if (c->quickack && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
		c->quickack = false;
		(void)mt_conn_quickack_fd(bufferevent_getfd(bev));
	}
	if (c->closing) {
		if (mt_conn_output_pending(c) == 0)
			mt_conn_close(c, c->outcome, c->close_reason);
		return;
	}
	if (c->ops->output != NULL)
		c->ops->output(c);
	else
		c->ops->input(c);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct mt_conn *c = arg;
	if ((what & BEV_EVENT_CONNECTED) != 0) {
		if (c->ops->connected != NULL)
			c->ops->connected(c);
		return;
	}
	if (c->closing) {
		/* The goodbye's write failed, or the peer left meanwhile: the
		 * session still ended the way it was ending. */
		mt_conn_close(c, c->outcome, c->close_reason);
		return;
	}
	bufferevent_disable(bev, EV_READ);
	c->ops->eof(c, (what & BEV_EVENT_EOF) == 0 || (what & BEV_EVENT_ERROR) != 0);
}

/* Arm the timer for the nearest of the idle period's end (from the last
 * activity), the lifetime's and, unless it is quiet already, the quiet
 * period's. */
static void timer_arm(struct mt_conn *c, uint64_t now)
{
	uint64_t wake = c->active_ms + c->idle_msecs;
	if (c->life_end_ms != 0 && c->life_end_ms < wake)
		wake = c->life_end_ms;
	if (c->quiet_msecs != 0 && !c->quiet && c->active_ms + c->quiet_msecs < wake)
		wake = c->active_ms + c->quiet_msecs;
	uint64_t ms = wake > now ? wake - now : 0;
	mt_timer_set(c->timer, ms > UINT_MAX ? UINT_MAX : (unsigned int)ms);
}

static void timer_cb(void *arg)
{
	struct mt_conn *c = arg;
	uint64_t now = mt_clock_coarse_ms();
	bool life_over = c->life_end_ms != 0 && now >= c->life_end_ms;
	bool idle_over = now - c->active_ms >= c->idle_msecs;
	const char *reason;

	if (c->quiet_msecs != 0 && !c->quiet && !c->closing &&
	    now - c->active_ms >= c->quiet_msecs) {
		c->quiet = true;
		c->ops->quiet(c, true);
	}

	if (!life_over && !idle_over) {
		timer_arm(c, now);	/* active meanwhile: wait for the rest */
		return;
	}
	if (c->closing) {
		/* The peer does not read its last reply. */
		mt_conn_close(c, c->outcome, c->close_reason);
		return;
	}
	if (life_over) {
		c->life_end_ms = 0;
		record_outcome(c, MT_OUTCOME_TIMEOUT);
		c->ops->session_timeout(c);
		reason = "session-time";
	} else if (c->ops->busy != NULL && c->ops->busy(c)) {
		c->active_ms = now;	/* waiting on us, not on the peer */
		timer_arm(c, now);
		return;
	} else {
		/* Recorded first: the tier's goodbye may close with words of
		 * its own ("done"), but this is why. */
		record_outcome(c, MT_OUTCOME_TIMEOUT);
		c->ops->idle_timeout(c);
		reason = "idle-timeout";
	}
	mt_conn_close_after(c, MT_OUTCOME_TIMEOUT, reason);
	if (!c->closed) {
		/* The goodbye has one more idle period to be written. */
		c->active_ms = now;
		timer_arm(c, now);
	}
}

static void conn_setup_bev(struct mt_conn *c)
{
	bufferevent_setwatermark(c->bev, EV_READ, 0, c->input_high);
	bufferevent_setwatermark(c->bev, EV_WRITE, c->output_low, 0);
	bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

void mt_conn_start(struct mt_conn *c, struct mt_conn_list *list,
		   struct mt_loop *loop, struct bufferevent *bev,
		   const struct mt_conn_ops *ops, uint64_t idle_msecs,
		   size_t input_high, size_t output_low)
{
	c->list = list;
	c->loop = loop;
	c->ops = ops;
	c->bev = bev;
	c->input_high = input_high;
	c->output_low = output_low;
	c->closing = false;
	c->closed = false;
	c->close_reason = NULL;
	c->outcome_set = false;
	c->quiet_msecs = 0;
	c->quiet = false;
	c->quickack = false;
	c->life_end_ms = 0;
	c->idle_msecs = idle_msecs;
	c->active_ms = mt_clock_coarse_ms();
	conn_setup_bev(c);
	c->timer = mt_timer_add(loop, 0, false, timer_cb, c);
	timer_arm(c, c->active_ms);
	c->prev = NULL;
	c->next = list->head;
	if (c->next != NULL)
		c->next->prev = c;
	list->head = c;
	list->count++;
}

void mt_conn_set_bev(struct mt_conn *c, struct bufferevent *bev)
{
	c->bev = bev;
	conn_setup_bev(c);
}

struct evbuffer *mt_conn_input(struct mt_conn *c)
{
	return bufferevent_get_input(c->bev);
}

struct evbuffer *mt_conn_output(struct mt_conn *c)
{
	return bufferevent_get_output(c->bev);
}

size_t mt_conn_output_pending(struct mt_conn *c)
{
	return c->bev != NULL ? evbuffer_get_length(bufferevent_get_output(c->bev)) : 0;
}

void mt_conn_touch(struct mt_conn *c)
{
	conn_active(c);
}

void mt_conn_set_idle(struct mt_conn *c, uint64_t msecs)
{
	if (c->closed)
		return;
	c->idle_msecs = msecs;
	c->active_ms = mt_clock_coarse_ms();
	timer_arm(c, c->active_ms);
}

void mt_conn_set_quiet(struct mt_conn *c, uint64_t msecs)
{
	if (c->closed)
		return;
	if (msecs == 0 && c->quiet) {
		c->quiet = false;
		c->ops->quiet(c, false);
	}
	c->quiet_msecs = msecs;
	timer_arm(c, mt_clock_coarse_ms());
}

void mt_conn_set_lifetime(struct mt_conn *c, uint64_t msecs)
{
	if (c->closed)
		return;
	uint64_t now = mt_clock_coarse_ms();
	c->life_end_ms = msecs > 0 ? now + msecs : 0;
	timer_arm(c, now);
}

/* MAILTIER_TCP_QUICKACK=no (or 0): off. Read once; any thread. */
static bool quickack_enabled(void)
{
	static _Atomic int enabled = -1;
	int e = atomic_load_explicit(&enabled, memory_order_relaxed);
	if (e < 0) {
		const char *v = getenv("MAILTIER_TCP_QUICKACK");
		e = v == NULL || (strcmp(v, "no") != 0 && strcmp(v, "0") != 0);
		atomic_store_explicit(&enabled, e, memory_order_relaxed);
	}
	return e != 0;
}

bool mt_conn_quickack_fd(int fd)
{
#ifdef TCP_QUICKACK
	int one = 1;
	return fd >= 0 && quickack_enabled() &&
		setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one)) == 0;
#else
	(void)fd;
	return false;
#endif
}

void mt_conn_quickack(struct mt_conn *c)
{
	if (c->bev == NULL || c->closed)
		return;
	/* Written already (a tier that writes straight to the socket when
	 * nothing is queued): now; else when the write callback says so. */
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		(void)mt_conn_quickack_fd(bufferevent_getfd(c->bev));
	else
		c->quickack = true;
}

struct bufferevent *mt_conn_take_bev(struct mt_conn *c)
{
	struct bufferevent *bev = c->bev;
	if (bev != NULL)
		bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	c->bev = NULL;
	return bev;
}

bool mt_conn_is_closed(const struct mt_conn *c)
{
	return c->closed;
}

bool mt_conn_is_closing(const struct mt_conn *c)
{
	return c->closing || c->closed;
}

void mt_conn_list_each(struct mt_conn_list *list, void (*fn)(struct mt_conn *conn))
{
	struct mt_conn *c, *next;
	for (c = list->head; c != NULL; c = next) {
		next = c->next;		/* c may close (and unlink) */
		fn(c);
	}
}

void mt_conn_list_close_all(struct mt_conn_list *list, const char *reason)
{
	while (list->head != NULL)
		mt_conn_close(list->head, MT_OUTCOME_SHUTDOWN, reason);
}
