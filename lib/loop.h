/* loop.h — event-loop glue over libevent 2.1 shared by every daemon: TCP
 * listeners from "host:port" strings, timers, graceful drain on SIGTERM/SIGINT,
 * reload on SIGHUP, and worker threads that each run their own loop.
 *
 * Trust boundary: listen addresses come from the administrator's config; the
 * accepted peer address is the client's (not authenticated, only logged and
 * used for limits). No protocol data passes through here, so no RFC applies.
 *
 * Threading: a loop is used by one thread only. mt_loop_post() is the one
 * call that is safe from any thread; it is how work (and accepted fds) cross
 * from the main loop to worker loops.
 *
 * A daemon's main() in brief:
 *
 *	struct mt_loop *loop = mt_loop_new(&error);
 *	if (mt_listener_add(loop, "0.0.0.0:110", 0, accept_cb, ctx, &error) == NULL)
 *		mt_fatal("%s", error);
 *	mt_loop_set_drain(loop, 10000, drain_cb, ctx);
 *	if (!mt_loop_handle_signals(loop, reload_cb, ctx, &error))
 *		mt_fatal("%s", error);
 *	mt_notify_ready();
 *	mt_loop_run(loop);
 *	... free sessions ...
 *	mt_loop_free(&loop);
 *
 * drain_cb asks every session to finish (say goodbye, close when idle) and
 * the daemon calls mt_loop_drain_done() when its last session is gone; the
 * loop then returns from mt_loop_run(), or when the drain bound expires. */
#ifndef MT_LOOP_H
#define MT_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct event_base;
struct mt_hostport;
struct mt_loop;
struct mt_listener;
struct mt_timer;
struct mt_workers;

/* The one callback shape for drain, reload, timers and posted work. */
typedef void mt_loop_cb_t(void *context);

/* An accepted connection: fd is non-blocking and close-on-exec, and now
 * belongs to the callback (close it or hand it on). */
typedef void mt_accept_cb_t(int fd, const struct sockaddr *peer,
			    socklen_t peerlen, void *context);

#define MT_LOOP_DRAIN_DEFAULT_MSECS 10000u

/* Loops */

/* A new loop with its own event_base. NULL and a static error on failure. */
struct mt_loop *mt_loop_new(const char **error_r);
/* Free listeners, signal handlers and the base; timers must be freed first.
 * Work posted after the loop last ran is dropped (an fd handed to a worker
 * that has stopped is closed). */
void mt_loop_free(struct mt_loop **loop_p);
/* The libevent base, for bufferevents and the like. */
struct event_base *mt_loop_base(struct mt_loop *loop);
/* Run until mt_loop_exit(), a finished drain, or a drain timeout; work
 * posted from the loop's own callbacks (deferred frees) has run when it
 * returns. 0 on a normal exit, -1 if libevent failed. */
int mt_loop_run(struct mt_loop *loop);
/* Leave mt_loop_run() after the current callbacks (no drain). */
void mt_loop_exit(struct mt_loop *loop);
/* Run fn(context) on the loop's own thread soon. Safe from any thread.
 * This is the one way a thread hands a result back to an event loop
 * (lib-bdb's completions, the store's ports, worker hand-offs). */
void mt_loop_post(struct mt_loop *loop, mt_loop_cb_t *fn, void *context);
/* The same, but if the loop is freed before fn ran, discard(context) runs
 * instead (on the freeing thread) to release what the post carries. */
void mt_loop_post_discardable(struct mt_loop *loop, mt_loop_cb_t *fn,
			      mt_loop_cb_t *discard, void *context);

/* Graceful drain */

/* What draining this loop means: drain is called once when draining starts
 * (may be NULL: the loop then exits at once), and the loop exits after at
 * most msecs (0 = MT_LOOP_DRAIN_DEFAULT_MSECS) even if sessions remain. */
void mt_loop_set_drain(struct mt_loop *loop, unsigned int msecs,
		       mt_loop_cb_t *drain, void *context);
/* Stop accepting on all of the loop's listeners, call the drain callback and
 * start the drain timer. SIGTERM/SIGINT do this; idempotent. */
void mt_loop_drain(struct mt_loop *loop);
bool mt_loop_is_draining(const struct mt_loop *loop);
/* The daemon has no sessions left: leave mt_loop_run(). A no-op unless the
 * loop is draining, so call it whenever the session count reaches zero. */
void mt_loop_drain_done(struct mt_loop *loop);

/* Main loop only: SIGTERM and SIGINT start a drain (a second one exits at
 * once), SIGHUP calls reload(context) (may be NULL), SIGPIPE is ignored. */
bool mt_loop_handle_signals(struct mt_loop *loop, mt_loop_cb_t *reload,
			    void *context, const char **error_r);

/* Listeners */

/* Several sockets (e.g. one per worker loop) may share the port. */
#define MT_LISTEN_REUSEPORT 0x01

/* Listen on "a.b.c.d:port", "[v6addr]:port" or "*:port" (all IPv4
 * addresses); port 0 picks a free port (see mt_listener_port()). The listener
 * belongs to the loop and is freed with it. NULL and an error owned by the
 * loop (valid until its next failing call) on failure. */
struct mt_listener *mt_listener_add(struct mt_loop *loop, const char *hostport,
				    int flags, mt_accept_cb_t *cb,
				    void *context, const char **error_r);
/* A listener a config setting asks for ([section] what = host:port, see
 * lib/config.h): NULL when the setting is unset; otherwise listening, with
 * "listening what=host:port port=N" logged, or the process exits with
 * "what listener on host:port: reason". The one way the daemons turn their
 * listen settings into sockets. */
struct mt_listener *mt_listener_add_setting(struct mt_loop *loop, const char *what,
					    const struct mt_hostport *hp, int flags,
					    mt_accept_cb_t *cb, void *context);
void mt_listener_free(struct mt_listener **listener_p);
/* The bound port (useful after listening on port 0). */
unsigned int mt_listener_port(const struct mt_listener *listener);

/* Addresses */

#define MT_SOCKADDR_STRLEN 64	/* "[v6addr]:port" and NUL */

/* Parse a numeric "a.b.c.d:port", "[v6addr]:port" or "*:port". The port is
 * required. false and a static error on bad input. */
bool mt_sockaddr_parse(const char *hostport, struct sockaddr_storage *ss,
		       socklen_t *len_r, const char **error_r);
/* Format an address as "a.b.c.d:port" or "[v6addr]:port" into buf. */
const char *mt_sockaddr_str(const struct sockaddr *sa, char *buf, size_t size);

/* Timers */

/* Call cb(context) after msecs, once or (periodic) every msecs until freed.
 * Timers belong to the caller and must be freed before their loop. A timer
 * may be freed from its own callback. */
struct mt_timer *mt_timer_add(struct mt_loop *loop, unsigned int msecs,
			      bool periodic, mt_loop_cb_t *cb, void *context);
/* Restart the countdown from now (e.g. an idle timeout after activity). */
void mt_timer_reset(struct mt_timer *timer);
/* A new period, counted from now. */
void mt_timer_set(struct mt_timer *timer, unsigned int msecs);
void mt_timer_free(struct mt_timer **timer_p);

/* Worker threads: each runs its own loop. Connections reach them either by
 * mt_workers_dispatch() from a listener on the main loop, or from the
 * workers' own MT_LISTEN_REUSEPORT listeners added in init. */

struct mt_worker_settings {
	unsigned int count;
	/* In the worker thread, before its loop runs: set *worker_context_r,
	 * add listeners, set the drain callback. false stops the start. */
	bool (*init)(struct mt_loop *loop, unsigned int index, void *context,
		     void **worker_context_r, const char **error_r);
	/* In the worker thread: a connection from mt_workers_dispatch(). */
	void (*conn)(void *worker_context, int fd, const struct sockaddr *peer,
		     socklen_t peerlen);
	/* In the worker thread after its loop has returned: free sessions. */
	void (*deinit)(void *worker_context);
	void *context;
};

/* Start count threads and wait for each init. On failure the started ones
 * are stopped and the error is owned by the main loop. Signals are blocked
 * in the workers so they are all handled by the main loop. */
struct mt_workers *mt_workers_start(struct mt_loop *main_loop,
				    const struct mt_worker_settings *set,
				    const char **error_r);
/* Hand an accepted fd to the next worker (round robin). Main loop only. */
void mt_workers_dispatch(struct mt_workers *workers, int fd,
			 const struct sockaddr *peer, socklen_t peerlen);
/* Drain every worker loop (call it from the main drain callback). Each
 * worker loop uses its own drain callback, with the main loop's bound unless
 * it set one. When every worker loop has returned, mt_loop_drain_done() is
 * called on the main loop. */
void mt_workers_drain(struct mt_workers *workers);
unsigned int mt_workers_count(const struct mt_workers *workers);
/* Worker index's loop, e.g. to mt_loop_post() a reload to it. */
struct mt_loop *mt_workers_loop(struct mt_workers *workers, unsigned int index);
/* Make every worker loop exit now, join the threads, free everything.
 * From the main loop's thread, before mt_loop_free() of the main loop. */
void mt_workers_stop(struct mt_workers **workers_p);

#endif
