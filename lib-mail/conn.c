/* conn.c — the connection core (see conn.h): bufferevent callbacks, the
 * idle timer, close-after-flush, close and the deferred free, session
 * lists.
 *
 * Trust boundary: none of its own (the peer's bytes are left to the tier).
 * The two timers bound how long a peer may hold a connection.
 * Guarantee: ops->free runs exactly once, from the loop, after ops->closed
 * and after the callback that closed the session has returned. */
#include "conn.h"
#include "loop.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

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

void mt_conn_close(struct mt_conn *c, const char *reason)
{
	if (c->bev == NULL)
		return;		/* closed already */
	c->close_reason = reason;
	conn_unlink(c);		/* ops->closed sees the list without c */
	c->ops->closed(c, reason);
	bufferevent_free(c->bev);
	c->bev = NULL;
	mt_timer_free(&c->idle);
	mt_timer_free(&c->life);
	mt_loop_post(c->loop, conn_free_cb, c);
}

void mt_conn_close_after(struct mt_conn *c, const char *reason)
{
	if (c->bev == NULL || c->closing)
		return;
	c->closing = true;
	c->close_reason = reason;
	bufferevent_disable(c->bev, EV_READ);
	if (mt_conn_output_pending(c) == 0)
		mt_conn_close(c, reason);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct mt_conn *c = arg;
	(void)bev;
	mt_timer_reset(c->idle);
	c->ops->input(c);
}

static void write_cb(struct bufferevent *bev, void *arg)
{
	struct mt_conn *c = arg;
	(void)bev;
	mt_timer_reset(c->idle);
	if (c->closing) {
		if (mt_conn_output_pending(c) == 0)
			mt_conn_close(c, c->close_reason);
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
		mt_conn_close(c, c->close_reason);
		return;
	}
	bufferevent_disable(bev, EV_READ);
	c->ops->eof(c, (what & BEV_EVENT_EOF) == 0 || (what & BEV_EVENT_ERROR) != 0);
}

static void idle_cb(void *arg)
{
	struct mt_conn *c = arg;
	if (c->closing) {
		/* The peer does not read its last reply. */
		mt_conn_close(c, c->close_reason);
		return;
	}
	if (c->ops->busy != NULL && c->ops->busy(c)) {
		mt_timer_reset(c->idle);	/* waiting on us, not on the peer */
		return;
	}
	c->ops->idle_timeout(c);
	mt_conn_close_after(c, "idle-timeout");
}

static void life_cb(void *arg)
{
	struct mt_conn *c = arg;
	if (c->closing) {
		mt_conn_close(c, c->close_reason);
		return;
	}
	c->ops->session_timeout(c);
	mt_conn_close_after(c, "session-time");
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
		   const struct mt_conn_ops *ops, unsigned int idle_msecs,
		   size_t input_high, size_t output_low)
{
	c->list = list;
	c->loop = loop;
	c->ops = ops;
	c->bev = bev;
	c->input_high = input_high;
	c->output_low = output_low;
	c->closing = false;
	c->close_reason = NULL;
	c->life = NULL;
	conn_setup_bev(c);
	c->idle = mt_timer_add(loop, idle_msecs, false, idle_cb, c);
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
	if (c->idle != NULL)
		mt_timer_reset(c->idle);
}

void mt_conn_set_idle(struct mt_conn *c, unsigned int msecs)
{
	if (c->idle != NULL)
		mt_timer_set(c->idle, msecs);
}

void mt_conn_set_lifetime(struct mt_conn *c, unsigned int msecs)
{
	if (c->bev == NULL)
		return;
	mt_timer_free(&c->life);
	c->life = mt_timer_add(c->loop, msecs, false, life_cb, c);
}

bool mt_conn_is_closed(const struct mt_conn *c)
{
	return c->bev == NULL;
}

bool mt_conn_is_closing(const struct mt_conn *c)
{
	return c->closing || c->bev == NULL;
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
		mt_conn_close(list->head, reason);
}
