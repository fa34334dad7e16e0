/* loop.c — event-loop glue over libevent 2.1 (see loop.h): listeners,
 * timers, a thread-safe mailbox per loop, graceful drain, signals and worker
 * threads.
 *
 * Trust boundary: listen addresses come from the administrator's config; the
 * peer address of an accepted connection is the client's and is only passed
 * on. No protocol data is read here.
 *
 * Threads: libevent is used without its locking (no evthread_use_pthreads):
 * each event_base is touched only by the thread that runs it. The one thing
 * shared is each loop's mailbox, a mutex-protected queue plus an eventfd that
 * wakes the loop; accepted fds, drain requests and stop requests all travel
 * through it. */
#include "loop.h"
#include "thread.h"
#include "config.h"
#include "alloc.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#define LISTEN_BACKLOG 511
/* After accept() fails with e.g. EMFILE the socket stays readable; pause
 * accepting for this long instead of spinning on it. */
#define ACCEPT_RETRY_MSECS 500

struct loop_post {
	struct loop_post *next;
	mt_loop_cb_t *fn;
	mt_loop_cb_t *discard;	/* called instead if the loop is freed first */
	void *context;
};

struct mt_listener {
	struct mt_listener *next;
	struct mt_loop *loop;
	struct evconnlistener *lev;
	struct event *retry;
	mt_accept_cb_t *cb;
	void *context;
	char name[MT_SOCKADDR_STRLEN];
};

struct mt_timer {
	struct event *ev;
	struct timeval tv;
	mt_loop_cb_t *cb;
	void *context;
};

struct mt_loop {
	struct event_base *base;
	struct mt_listener *listeners;

	int mailbox_fd;
	struct event *mailbox_ev;
	pthread_mutex_t mailbox_lock;
	struct loop_post *posts, **posts_tail;

	bool draining;
	unsigned int drain_msecs;
	mt_loop_cb_t *drain_cb;
	void *drain_context;
	struct event *drain_timer;

	struct event *signals[3];
	mt_loop_cb_t *reload_cb;
	void *reload_context;

	char *error;
};

static struct timeval msecs_to_tv(unsigned int msecs)
{
	struct timeval tv = { msecs / 1000, (msecs % 1000) * 1000 };
	return tv;
}

/* Format an error that the loop owns until its next failing call. */
static const char *loop_error(struct mt_loop *loop, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static const char *loop_error(struct mt_loop *loop, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	free(loop->error);
	loop->error = mt_xstrdup(msg);
	return loop->error;
}

/* Mailbox */

static void loop_post_full(struct mt_loop *loop, mt_loop_cb_t *fn,
			   mt_loop_cb_t *discard, void *context)
{
	struct loop_post *post = mt_xmalloc(sizeof(*post));
	*post = (struct loop_post){ NULL, fn, discard, context };
	pthread_mutex_lock(&loop->mailbox_lock);
	*loop->posts_tail = post;
	loop->posts_tail = &post->next;
	pthread_mutex_unlock(&loop->mailbox_lock);
	/* An eventfd counts: every write wakes the loop, none can block short
	 * of 2^64 unread posts. */
	uint64_t one = 1;
	while (write(loop->mailbox_fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

void mt_loop_post(struct mt_loop *loop, mt_loop_cb_t *fn, void *context)
{
	loop_post_full(loop, fn, NULL, context);
}

void mt_loop_post_discardable(struct mt_loop *loop, mt_loop_cb_t *fn,
			      mt_loop_cb_t *discard, void *context)
{
	loop_post_full(loop, fn, discard, context);
}

static struct loop_post *mailbox_take(struct mt_loop *loop)
{
	pthread_mutex_lock(&loop->mailbox_lock);
	struct loop_post *posts = loop->posts;
	loop->posts = NULL;
	loop->posts_tail = &loop->posts;
	pthread_mutex_unlock(&loop->mailbox_lock);
	return posts;
}

/* Run what is queued now; posts made meanwhile wait for the next wake-up. */
static void mailbox_run(struct mt_loop *loop)
{
	struct loop_post *post = mailbox_take(loop), *next;
	for (; post != NULL; post = next) {
		next = post->next;
		post->fn(post->context);
		free(post);
	}
}

static void mailbox_cb(evutil_socket_t fd, short what, void *arg)
{
	uint64_t count;
	(void)what;
	if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		mt_error("loop mailbox read: %s", strerror(errno));
	mailbox_run(arg);
}

/* Loops */

struct mt_loop *mt_loop_new(const char **error_r)
{
	struct mt_loop *loop = mt_xcalloc(1, sizeof(*loop));
	loop->base = event_base_new();
	if (loop->base == NULL) {
		free(loop);
		*error_r = "event_base_new() failed";
		return NULL;
	}
	loop->mailbox_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (loop->mailbox_fd < 0) {
		event_base_free(loop->base);
		free(loop);
		*error_r = "eventfd() failed";
		return NULL;
	}
	pthread_mutex_init(&loop->mailbox_lock, NULL);
	loop->posts_tail = &loop->posts;
	loop->mailbox_ev = event_new(loop->base, loop->mailbox_fd,
				     EV_READ | EV_PERSIST, mailbox_cb, loop);
	if (loop->mailbox_ev == NULL || event_add(loop->mailbox_ev, NULL) < 0)
		mt_panic("cannot add the loop mailbox event");
	return loop;
}

void mt_loop_free(struct mt_loop **loop_p)
{
	struct mt_loop *loop = *loop_p;
	if (loop == NULL)
		return;
	*loop_p = NULL;
	while (loop->listeners != NULL) {
		struct mt_listener *listener = loop->listeners;
		mt_listener_free(&listener);
	}
	for (size_t i = 0; i < sizeof(loop->signals) / sizeof(loop->signals[0]); i++)
		if (loop->signals[i] != NULL)
			event_free(loop->signals[i]);
	if (loop->drain_timer != NULL)
		event_free(loop->drain_timer);
	/* Posted after the loop last ran: drop it, releasing what it carries. */
	struct loop_post *post = mailbox_take(loop), *next;
	for (; post != NULL; post = next) {
		next = post->next;
		if (post->discard != NULL)
			post->discard(post->context);
		free(post);
	}
	event_free(loop->mailbox_ev);
	close(loop->mailbox_fd);
	pthread_mutex_destroy(&loop->mailbox_lock);
	event_base_free(loop->base);
	free(loop->error);
	free(loop);
}

struct event_base *mt_loop_base(struct mt_loop *loop) { return loop->base; }

int mt_loop_run(struct mt_loop *loop)
{
	int ret = event_base_dispatch(loop->base);
	/* Work posted from this loop's own callbacks (deferred frees) runs
	 * before the daemon starts tearing down. */
	mailbox_run(loop);
	return ret < 0 ? -1 : 0;
}

void mt_loop_exit(struct mt_loop *loop) { event_base_loopexit(loop->base, NULL); }

/* Graceful drain */

void mt_loop_set_drain(struct mt_loop *loop, unsigned int msecs,
		       mt_loop_cb_t *drain, void *context)
{
	loop->drain_msecs = msecs;
	loop->drain_cb = drain;
	loop->drain_context = context;
}

static void drain_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mt_loop *loop = arg;
	(void)fd; (void)what;
	mt_warning("drain time of %u ms is over; stopping with sessions open",
		   loop->drain_msecs);
	event_base_loopexit(loop->base, NULL);
}

void mt_loop_drain(struct mt_loop *loop)
{
	if (loop->draining)
		return;
	loop->draining = true;
	for (struct mt_listener *l = loop->listeners; l != NULL; l = l->next) {
		evconnlistener_disable(l->lev);
		evtimer_del(l->retry);
	}
	if (loop->drain_msecs == 0)
		loop->drain_msecs = MT_LOOP_DRAIN_DEFAULT_MSECS;
	struct timeval tv = msecs_to_tv(loop->drain_msecs);
	loop->drain_timer = evtimer_new(loop->base, drain_timeout_cb, loop);
	if (loop->drain_timer == NULL || evtimer_add(loop->drain_timer, &tv) < 0)
		mt_panic("cannot add the drain timer");
	if (loop->drain_cb == NULL)
		mt_loop_drain_done(loop);
	else
		loop->drain_cb(loop->drain_context);
}

bool mt_loop_is_draining(const struct mt_loop *loop) { return loop->draining; }

void mt_loop_drain_done(struct mt_loop *loop)
{
	if (loop->draining)
		event_base_loopexit(loop->base, NULL);
}

/* Signals */

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct mt_loop *loop = arg;
	(void)what;
	if (sig == SIGHUP) {
		mt_info("signal=SIGHUP action=reload");
		if (loop->reload_cb != NULL)
			loop->reload_cb(loop->reload_context);
		return;
	}
	const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
	if (loop->draining) {
		mt_warning("signal=%s action=exit (second signal while draining)",
			   name);
		event_base_loopexit(loop->base, NULL);
		return;
	}
	mt_info("signal=%s action=drain max_msecs=%u", name,
		loop->drain_msecs != 0 ? loop->drain_msecs :
		MT_LOOP_DRAIN_DEFAULT_MSECS);
	mt_loop_drain(loop);
}

bool mt_loop_handle_signals(struct mt_loop *loop, mt_loop_cb_t *reload,
			    void *context, const char **error_r)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct sigaction sa;

	/* A peer that closes early must give EPIPE on write, not kill us. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) < 0) {
		*error_r = "sigaction(SIGPIPE) failed";
		return false;
	}
	loop->reload_cb = reload;
	loop->reload_context = context;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		if (loop->signals[i] != NULL)
			continue;
		loop->signals[i] = evsignal_new(loop->base, sigs[i], signal_cb, loop);
		if (loop->signals[i] == NULL ||
		    evsignal_add(loop->signals[i], NULL) < 0) {
			*error_r = "cannot add a libevent signal handler";
			return false;
		}
	}
	return true;
}

/* Addresses */

bool mt_sockaddr_parse(const char *hostport, struct sockaddr_storage *ss,
		       socklen_t *len_r, const char **error_r)
{
	const char *colon = strrchr(hostport, ':');
	char host[INET6_ADDRSTRLEN + 1];

	if (colon == NULL || colon[1] == '\0') {
		*error_r = "missing :port";
		return false;
	}
	const char *start = hostport, *end = colon;
	if (*start == '[') {
		if (colon == hostport || colon[-1] != ']') {
			*error_r = "missing :port after [IPv6 address]";
			return false;
		}
		start++;
		end--;
	} else if (memchr(hostport, ':', (size_t)(colon - hostport)) != NULL) {
		*error_r = "write IPv6 addresses as [address]:port";
		return false;
	}
	if (end == start) {
		*error_r = "missing address (use *:port for all addresses)";
		return false;
	}
	if ((size_t)(end - start) >= sizeof(host)) {
		*error_r = "address too long";
		return false;
	}
	memcpy(host, start, (size_t)(end - start));
	host[end - start] = '\0';

	unsigned long port = 0;
	for (const char *p = colon + 1; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || port > 65535) {
			*error_r = "invalid port";
			return false;
		}
		port = port * 10 + (unsigned long)(*p - '0');
	}
	if (port > 65535) {
		*error_r = "invalid port";
		return false;
	}

	memset(ss, 0, sizeof(*ss));
	if (hostport[0] == '[') {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1) {
			*error_r = "invalid IPv6 address";
			return false;
		}
		*len_r = sizeof(*sin6);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		if (strcmp(host, "*") == 0)
			sin->sin_addr.s_addr = htonl(INADDR_ANY);
		else if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
			*error_r = "invalid IPv4 address";
			return false;
		}
		*len_r = sizeof(*sin);
	}
	return true;
}

const char *mt_sockaddr_str(const struct sockaddr *sa, char *buf, size_t size)
{
	char host[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(buf, size, "%s:%u", host, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		snprintf(buf, size, "[%s]:%u", host, ntohs(sin6->sin6_port));
	} else {
		snprintf(buf, size, "(family %d)", sa->sa_family);
	}
	return buf;
}

/* Listeners */

static void listener_accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
			       struct sockaddr *peer, int peerlen, void *arg)
{
	struct mt_listener *l = arg;
	(void)lev;
	l->cb(fd, peer, (socklen_t)peerlen, l->context);
}

static void listener_error_cb(struct evconnlistener *lev, void *arg)
{
	struct mt_listener *l = arg;
	int err = EVUTIL_SOCKET_ERROR();
	struct timeval tv = msecs_to_tv(ACCEPT_RETRY_MSECS);

	mt_error("accept on %s failed: %s; pausing accept for %u ms", l->name,
		 evutil_socket_error_to_string(err), ACCEPT_RETRY_MSECS);
	evconnlistener_disable(lev);
	evtimer_add(l->retry, &tv);
}

static void listener_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mt_listener *l = arg;
	(void)fd; (void)what;
	if (!l->loop->draining)
		evconnlistener_enable(l->lev);
}

struct mt_listener *mt_listener_add_setting(struct mt_loop *loop, const char *what,
					    const struct mt_hostport *hp, int flags,
					    mt_accept_cb_t *cb, void *context)
{
	if (hp->host == NULL)
		return NULL;
	const char *error;
	char *addr = mt_hostport_string(hp);
	struct mt_listener *l = mt_listener_add(loop, addr, flags, cb, context, &error);
	if (l == NULL)
		mt_fatal("%s listener on %s: %s", what, addr, error);
	mt_info("listening %s=%s port=%u", what, addr, mt_listener_port(l));
	free(addr);
	return l;
}

struct mt_listener *mt_listener_add(struct mt_loop *loop, const char *hostport,
				    int flags, mt_accept_cb_t *cb,
				    void *context, const char **error_r)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	const char *error;

	if (!mt_sockaddr_parse(hostport, &ss, &sslen, &error)) {
		*error_r = loop_error(loop, "listen %s: %s", hostport, error);
		return NULL;
	}
	unsigned int lev_flags = LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE |
		LEV_OPT_CLOSE_ON_EXEC;
	/* Server-speaks-first protocols: never LEV_OPT_DEFERRED_ACCEPT. */
	if (ss.ss_family == AF_INET6)
		lev_flags |= LEV_OPT_BIND_IPV6ONLY;	/* [::] and *: coexist */
	if ((flags & MT_LISTEN_REUSEPORT) != 0)
		lev_flags |= LEV_OPT_REUSEABLE_PORT;
	if (loop->draining)
		lev_flags |= LEV_OPT_DISABLED;

	struct mt_listener *l = mt_xcalloc(1, sizeof(*l));
	l->lev = evconnlistener_new_bind(loop->base, listener_accept_cb, l,
					 lev_flags, LISTEN_BACKLOG,
					 (struct sockaddr *)&ss, (int)sslen);
	if (l->lev == NULL) {
		int err = errno;
		free(l);
		*error_r = loop_error(loop, "listen %s: %s", hostport,
				      strerror(err));
		return NULL;
	}
	l->loop = loop;
	l->cb = cb;
	l->context = context;
	l->retry = evtimer_new(loop->base, listener_retry_cb, l);
	if (l->retry == NULL)
		mt_panic("evtimer_new failed");
	evconnlistener_set_error_cb(l->lev, listener_error_cb);
	sslen = sizeof(ss);
	if (getsockname(evconnlistener_get_fd(l->lev), (struct sockaddr *)&ss,
			&sslen) == 0)
		mt_sockaddr_str((struct sockaddr *)&ss, l->name, sizeof(l->name));
	else
		snprintf(l->name, sizeof(l->name), "%s", hostport);
	l->next = loop->listeners;
	loop->listeners = l;
	return l;
}

void mt_listener_free(struct mt_listener **listener_p)
{
	struct mt_listener *l = *listener_p;
	if (l == NULL)
		return;
	*listener_p = NULL;
	for (struct mt_listener **pp = &l->loop->listeners; *pp != NULL;
	     pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	evconnlistener_free(l->lev);
	event_free(l->retry);
	free(l);
}

unsigned int mt_listener_port(const struct mt_listener *listener)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(evconnlistener_get_fd(listener->lev),
			(struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/* Timers */

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mt_timer *timer = arg;
	(void)fd; (void)what;
	timer->cb(timer->context);
}

struct mt_timer *mt_timer_add(struct mt_loop *loop, unsigned int msecs,
			      bool periodic, mt_loop_cb_t *cb, void *context)
{
	struct mt_timer *timer = mt_xcalloc(1, sizeof(*timer));
	timer->tv = msecs_to_tv(msecs);
	timer->cb = cb;
	timer->context = context;
	timer->ev = event_new(loop->base, -1, periodic ? EV_PERSIST : 0,
			      timer_cb, timer);
	if (timer->ev == NULL || event_add(timer->ev, &timer->tv) < 0)
		mt_panic("cannot add a timer");
	return timer;
}

void mt_timer_reset(struct mt_timer *timer)
{
	if (event_add(timer->ev, &timer->tv) < 0)
		mt_panic("cannot re-add a timer");
}

void mt_timer_set(struct mt_timer *timer, unsigned int msecs)
{
	timer->tv = msecs_to_tv(msecs);
	mt_timer_reset(timer);
}

void mt_timer_free(struct mt_timer **timer_p)
{
	struct mt_timer *timer = *timer_p;
	if (timer == NULL)
		return;
	*timer_p = NULL;
	event_free(timer->ev);
	free(timer);
}

/* Worker threads */

struct worker {
	struct mt_workers *workers;
	unsigned int index;
	pthread_t thread;
	struct mt_loop *loop;	/* NULL if init failed */
	void *context;
};

struct mt_workers {
	struct mt_loop *main_loop;
	struct mt_worker_settings set;
	struct worker *list;
	unsigned int started;	/* threads created, to be joined */
	unsigned int exited;	/* loops returned, counted on the main loop */
	unsigned int next;	/* round robin */
	unsigned int drain_msecs;
	bool draining;

	/* start-up handshake with the thread being started */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool init_done, init_ok;
	char *init_error;
};

struct worker_conn {
	struct worker *worker;
	int fd;
	socklen_t peerlen;
	struct sockaddr_storage peer;
};

/* On the main loop: one worker loop has returned. */
static void worker_exited(void *arg)
{
	struct mt_workers *ws = ((struct worker *)arg)->workers;
	if (++ws->exited == ws->started && ws->draining)
		mt_loop_drain_done(ws->main_loop);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mt_workers *ws = w->workers;
	const char *error = "worker init failed";
	struct mt_loop *loop = mt_loop_new(&error);
	bool ok = loop != NULL;

	if (ok && ws->set.init != NULL)
		ok = ws->set.init(loop, w->index, ws->set.context, &w->context,
				  &error);
	pthread_mutex_lock(&ws->lock);
	if (!ok) {
		/* The error may be owned by the loop: copy it first. */
		ws->init_error = mt_xstrdup(error);
		mt_loop_free(&loop);
	}
	w->loop = loop;
	ws->init_ok = ok;
	ws->init_done = true;
	pthread_cond_signal(&ws->cond);
	pthread_mutex_unlock(&ws->lock);
	if (!ok)
		return NULL;

	if (mt_loop_run(loop) < 0)
		mt_error("worker %u: event loop failed", w->index);
	if (ws->set.deinit != NULL)
		ws->set.deinit(w->context);
	loop_post_full(ws->main_loop, worker_exited, NULL, w);
	return NULL;
}

struct mt_workers *mt_workers_start(struct mt_loop *main_loop,
				    const struct mt_worker_settings *set,
				    const char **error_r)
{
	if (set->count == 0) {
		*error_r = "worker count must be at least 1";
		return NULL;
	}
	struct mt_workers *ws = mt_xcalloc(1, sizeof(*ws));
	ws->main_loop = main_loop;
	ws->set = *set;
	ws->list = mt_xcalloc(set->count, sizeof(*ws->list));
	pthread_mutex_init(&ws->lock, NULL);
	pthread_cond_init(&ws->cond, NULL);

	/* The workers never take a signal (thread.h): libevent's handler
	 * always runs where it expects, on the main loop. */
	const char *error = NULL;
	for (unsigned int i = 0; i < set->count && error == NULL; i++) {
		struct worker *w = &ws->list[i];
		w->workers = ws;
		w->index = i;
		ws->init_done = false;
		int err = mt_thread_start(&w->thread, worker_main, w);
		if (err != 0) {
			error = loop_error(main_loop, "pthread_create: %s",
					   strerror(err));
			break;
		}
		ws->started++;
		pthread_mutex_lock(&ws->lock);
		while (!ws->init_done)
			pthread_cond_wait(&ws->cond, &ws->lock);
		pthread_mutex_unlock(&ws->lock);
		if (!ws->init_ok)
			error = loop_error(main_loop, "worker %u: %s", i,
					   ws->init_error);
	}
	if (error != NULL) {
		mt_workers_stop(&ws);
		*error_r = error;
		return NULL;
	}
	return ws;
}

static void worker_conn_run(void *arg)
{
	struct worker_conn *c = arg;
	struct worker *w = c->worker;
	w->workers->set.conn(w->context, c->fd, (struct sockaddr *)&c->peer,
			     c->peerlen);
	free(c);
}

static void worker_conn_discard(void *arg)
{
	struct worker_conn *c = arg;
	close(c->fd);
	free(c);
}

void mt_workers_dispatch(struct mt_workers *ws, int fd,
			 const struct sockaddr *peer, socklen_t peerlen)
{
	if (ws->set.conn == NULL)
		mt_panic("mt_workers_dispatch() without a conn callback");
	struct worker *w = &ws->list[ws->next++ % ws->started];
	struct worker_conn *c = mt_xcalloc(1, sizeof(*c));
	c->worker = w;
	c->fd = fd;
	if (peerlen > sizeof(c->peer))
		peerlen = sizeof(c->peer);
	memcpy(&c->peer, peer, peerlen);
	c->peerlen = peerlen;
	loop_post_full(w->loop, worker_conn_run, worker_conn_discard, c);
}

/* On a worker loop. */
static void worker_drain(void *arg)
{
	struct worker *w = arg;
	if (w->loop->drain_msecs == 0)
		w->loop->drain_msecs = w->workers->drain_msecs;
	mt_loop_drain(w->loop);
}

void mt_workers_drain(struct mt_workers *ws)
{
	if (ws->draining)
		return;
	ws->draining = true;
	ws->drain_msecs = ws->main_loop->drain_msecs != 0 ?
		ws->main_loop->drain_msecs : MT_LOOP_DRAIN_DEFAULT_MSECS;
	if (ws->exited == ws->started) {
		mt_loop_drain_done(ws->main_loop);
		return;
	}
	for (unsigned int i = 0; i < ws->started; i++)
		loop_post_full(ws->list[i].loop, worker_drain, NULL, &ws->list[i]);
}

unsigned int mt_workers_count(const struct mt_workers *ws) { return ws->started; }

struct mt_loop *mt_workers_loop(struct mt_workers *ws, unsigned int index)
{
	return index < ws->started ? ws->list[index].loop : NULL;
}

/* On a worker loop. */
static void worker_exit(void *arg) { mt_loop_exit(arg); }

void mt_workers_stop(struct mt_workers **workers_p)
{
	struct mt_workers *ws = *workers_p;
	if (ws == NULL)
		return;
	*workers_p = NULL;
	for (unsigned int i = 0; i < ws->started; i++)
		if (ws->list[i].loop != NULL)
			loop_post_full(ws->list[i].loop, worker_exit, NULL,
				       ws->list[i].loop);
	for (unsigned int i = 0; i < ws->started; i++)
		pthread_join(ws->list[i].thread, NULL);
	/* The workers' "exited" posts point at ws: take them now. */
	mailbox_run(ws->main_loop);
	for (unsigned int i = 0; i < ws->started; i++)
		mt_loop_free(&ws->list[i].loop);
	pthread_cond_destroy(&ws->cond);
	pthread_mutex_destroy(&ws->lock);
	free(ws->init_error);
	free(ws->list);
	free(ws);
}
