/* mt-echod.c — a trivial line echo daemon for the integration-test harness.
 * It is a daemon as the real tiers are: lib/loop listeners and signals,
 * lib/sdnotify readiness, reload and watchdog, lib/log session lines, a
 * graceful drain on SIGTERM, and optional worker threads (-w).
 *
 *	mt-echod -l host:port [-l host:port ...] [-w workers] [-t drain_secs]
 *	mt-echod -V	(prints "sd_notify=yes" or "sd_notify=no": built with
 *			libsystemd or not, so a test knows what to expect)
 *
 * Each CRLF- or LF-terminated line is sent back with CRLF; "QUIT" ends the
 * session. On SIGTERM every session gets "BYE shutting down" and is closed
 * once that is written; the daemon exits 0 when the last one is gone or when
 * the drain bound (-t, default 10 s) expires. SIGHUP logs "reload" and sends
 * RELOADING=1 then READY=1.
 *
 * Trust boundary: lines from any TCP client. Lines are limited to MAX_LINE
 * bytes, and reading pauses while more than OUTPUT_PAUSE bytes wait to be
 * sent, so a client that does not read cannot grow our memory. Not a mail
 * protocol; implements no RFC. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "alloc.h"
#include "loop.h"
#include "log.h"
#include "sdnotify.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#define MAX_LINE 1000
#define OUTPUT_PAUSE 65536
#define MAX_LISTENERS 8

/* The sessions of one loop: the main loop, or one worker's. */
struct echo_loop {
	struct mt_loop *loop;
	struct session *sessions;
	unsigned int count;
	bool is_main;
};

struct session {
	struct session *prev, *next;
	struct echo_loop *owner;
	struct bufferevent *bev;
	struct mt_logctx log;
	bool closing;		/* say nothing more; close once flushed */
};

static struct echo_loop main_el = { .is_main = true };
static struct mt_workers *workers;

static void session_free_cb(void *context) { free(context); }

static void session_close(struct session *s, const char *reason)
{
	struct echo_loop *el = s->owner;

	mt_slog(MT_LOG_INFO, &s->log, "disconnect reason=%s", reason);
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		el->sessions = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	bufferevent_free(s->bev);
	/* We may be inside s's own callback: free it from the loop. */
	mt_loop_post(el->loop, session_free_cb, s);
	if (--el->count == 0)
		mt_loop_drain_done(el->loop);
}

/* Stop reading; close when what is queued has been written. */
static void session_finish(struct session *s, const char *last_line)
{
	s->closing = true;
	bufferevent_disable(s->bev, EV_READ);
	evbuffer_add_printf(bufferevent_get_output(s->bev), "%s\r\n", last_line);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(bev);
	size_t len;
	char *line;

	while (!s->closing &&
	       (line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF)) != NULL) {
		if (strcmp(line, "QUIT") == 0)
			session_finish(s, "BYE");
		else if (len > MAX_LINE)
			session_finish(s, "ERR line too long");
		else {
			evbuffer_add(out, line, len);
			evbuffer_add(out, "\r\n", 2);
		}
		free(line);
	}
	if (!s->closing && evbuffer_get_length(in) > MAX_LINE)
		session_finish(s, "ERR line too long");
	if (!s->closing && evbuffer_get_length(out) > OUTPUT_PAUSE)
		bufferevent_disable(bev, EV_READ);	/* resumed in write_cb */
}

/* The output buffer is empty. */
static void write_cb(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;
	if (s->closing) {
		session_close(s, "done");
		return;
	}
	if ((bufferevent_get_enabled(bev) & EV_READ) == 0) {
		bufferevent_enable(bev, EV_READ);
		read_cb(bev, s);	/* lines that waited in the input */
	}
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	session_close(arg, (what & BEV_EVENT_EOF) != 0 ? "eof" : "error");
}

static void session_new(struct echo_loop *el, int fd, const struct sockaddr *peer)
{
	char addr[MT_SOCKADDR_STRLEN];
	struct session *s = mt_xcalloc(1, sizeof(*s));
	s->owner = el;
	s->log.session_id = mt_session_id_new();
	s->bev = bufferevent_socket_new(mt_loop_base(el->loop), fd,
					BEV_OPT_CLOSE_ON_FREE);
	if (s->bev == NULL)
		mt_panic("bufferevent_socket_new failed");
	bufferevent_setcb(s->bev, read_cb, write_cb, event_cb, s);
	bufferevent_enable(s->bev, EV_READ | EV_WRITE);
	s->next = el->sessions;
	if (s->next != NULL)
		s->next->prev = s;
	el->sessions = s;
	el->count++;
	mt_slog(MT_LOG_INFO, &s->log, "connect peer=%s",
		mt_sockaddr_str(peer, addr, sizeof(addr)));
	if (mt_loop_is_draining(el->loop))
		session_finish(s, "BYE shutting down");
}

static void free_sessions(struct echo_loop *el)
{
	while (el->sessions != NULL) {
		struct session *s = el->sessions;
		el->sessions = s->next;
		mt_slog(MT_LOG_WARNING, &s->log, "disconnect reason=shutdown");
		bufferevent_free(s->bev);
		free(s);
	}
	el->count = 0;
}

static void drain_cb(void *context)
{
	struct echo_loop *el = context;

	if (el->is_main) {
		mt_notify_stopping();
		if (workers != NULL) {
			/* Done when every worker loop has returned. */
			mt_workers_drain(workers);
			return;
		}
	}
	for (struct session *s = el->sessions; s != NULL; s = s->next)
		if (!s->closing)
			session_finish(s, "BYE shutting down");
	if (el->count == 0)
		mt_loop_drain_done(el->loop);
}

static void reload_cb(void *context)
{
	(void)context;
	mt_notify_reloading();
	mt_info("reload");	/* nothing to reload: the harness checks this */
	mt_notify_ready();
}

static void accept_cb(int fd, const struct sockaddr *peer, socklen_t peerlen,
		      void *context)
{
	if (workers != NULL)
		mt_workers_dispatch(workers, fd, peer, peerlen);
	else
		session_new(context, fd, peer);
}

static bool worker_init(struct mt_loop *loop, unsigned int index, void *context,
			void **worker_context_r, const char **error_r)
{
	struct echo_loop *el = mt_xcalloc(1, sizeof(*el));
	(void)index; (void)context; (void)error_r;
	el->loop = loop;
	mt_loop_set_drain(loop, 0, drain_cb, el);	/* main's bound */
	*worker_context_r = el;
	return true;
}

static void worker_conn(void *worker_context, int fd,
			const struct sockaddr *peer, socklen_t peerlen)
{
	(void)peerlen;
	session_new(worker_context, fd, peer);
}

static void worker_deinit(void *worker_context)
{
	free_sessions(worker_context);
	free(worker_context);
}

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: mt-echod -l host:port [-l host:port ...] "
		"[-w workers] [-t drain_secs] | -V\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addrs[MAX_LISTENERS];
	unsigned int naddrs = 0, nworkers = 0, drain_secs = 10;
	const char *error;
	char listening[MAX_LISTENERS * (MT_SOCKADDR_STRLEN + 1)] = "";
	int c;

	while ((c = getopt(argc, argv, "l:w:t:V")) != -1) {
		switch (c) {
		case 'V':
#ifdef HAVE_SYSTEMD
			printf("mt-echod sd_notify=yes\n");
#else
			printf("mt-echod sd_notify=no\n");
#endif
			return 0;
		case 'l':
			if (naddrs == MAX_LISTENERS)
				usage();
			addrs[naddrs++] = optarg;
			break;
		case 'w':
			nworkers = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 't':
			drain_secs = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (naddrs == 0 || optind != argc)
		usage();

	mt_log_init("mt-echod", MT_LOG_TARGET_STDERR);
	main_el.loop = mt_loop_new(&error);
	if (main_el.loop == NULL)
		mt_fatal("%s", error);
	for (unsigned int i = 0; i < naddrs; i++) {
		struct mt_listener *l = mt_listener_add(main_el.loop, addrs[i], 0,
							accept_cb, &main_el, &error);
		if (l == NULL)
			mt_fatal("%s", error);
		size_t n = strlen(listening);
		snprintf(listening + n, sizeof(listening) - n, "%s%s",
			 n > 0 ? "," : "", addrs[i]);
		mt_info("listening on %s port=%u", addrs[i], mt_listener_port(l));
	}
	mt_loop_set_drain(main_el.loop, drain_secs * 1000, drain_cb, &main_el);
	if (!mt_loop_handle_signals(main_el.loop, reload_cb, NULL, &error))
		mt_fatal("%s", error);
	if (nworkers > 0) {
		const struct mt_worker_settings set = {
			.count = nworkers, .init = worker_init,
			.conn = worker_conn, .deinit = worker_deinit,
		};
		workers = mt_workers_start(main_el.loop, &set, &error);
		if (workers == NULL)
			mt_fatal("%s", error);
	}
	struct mt_timer *watchdog = mt_notify_watchdog_start(main_el.loop);

	mt_info("ready workers=%u drain_secs=%u", nworkers, drain_secs);
	mt_notify_status("echoing on %s", listening);
	mt_notify_ready();
	int ret = mt_loop_run(main_el.loop);

	free_sessions(&main_el);	/* left when the drain bound expired */
	mt_workers_stop(&workers);
	mt_timer_free(&watchdog);
	mt_loop_free(&main_el.loop);
	mt_info("exit status=%d", ret == 0 ? 0 : 1);
	return ret == 0 ? 0 : 1;
}
