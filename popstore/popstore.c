/* popstore.c — what the daemon's parts share besides its main(): the
 * session count against max_sessions, the exit on a failed store, socket
 * options, the proxy address check, the CIDR lists and the store's open
 * from the settings. In a file of its own so that the session-level fuzz
 * target (tests/fuzz/fuzz-popstore-session.c) runs the daemon's very code.
 *
 * Trust boundary: the settings are the operator's (checked at load); a
 * peer address is only compared. No protocol RFC. */
#include "popstore.h"
#include "alloc.h"
#include "log.h"
#include "loop.h"
#include "sdnotify.h"
#include "store/store.h"
#include "tls.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>

#define FATAL_EXIT_MSECS 200

bool popstore_session_add(struct popstore *ps)
{
	if (ps->sessions >= ps->set->max_sessions)
		return false;
	ps->sessions++;
	return true;
}

void popstore_session_remove(struct popstore *ps)
{
	if (ps->sessions > 0 && --ps->sessions == 0)
		mt_loop_drain_done(ps->loop);
}

void popstore_socket_setup(int fd)
{
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

struct bufferevent *popstore_accept(struct popstore *ps, int fd,
				    const struct sockaddr *peer, bool implicit_tls,
				    const char *proto, const char *busy,
				    const struct mt_logctx *log,
				    char addr[MT_SOCKADDR_STRLEN])
{
	const char *error;
	mt_sockaddr_str(peer, addr, MT_SOCKADDR_STRLEN);
	if (!popstore_session_add(ps)) {
		mt_slog(MT_LOG_WARNING, log,
			"%s refused peer=%s reason=max-sessions limit=%llu", proto, addr,
			(unsigned long long)ps->set->max_sessions);
		ps->refused_connections++;
		if (!implicit_tls)
			(void)send(fd, busy, strlen(busy), MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		return NULL;
	}
	popstore_socket_setup(fd);
	struct bufferevent *bev;
	if (implicit_tls)
		bev = mt_tls_bev_accept(ps->tls, mt_loop_base(ps->loop), fd, &error);
	else {
		bev = bufferevent_socket_new(mt_loop_base(ps->loop), fd,
					     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
		error = "bufferevent_socket_new failed";
	}
	if (bev == NULL) {
		mt_slog(MT_LOG_ERROR, log, "%s peer=%s: %s", proto, addr, error);
		popstore_session_remove(ps);
	}
	return bev;
}

bool popstore_is_proxy(const struct popstore *ps, const struct sockaddr *peer)
{
	return mt_cidr_match(ps->proxy_addresses, ps->n_proxy_addresses, peer);
}

static void fatal_exit_cb(void *context)
{
	struct popstore *ps = context;
	mt_loop_exit(ps->loop);
}

void popstore_store_fatal(struct popstore *ps, const char *error)
{
	if (ps->fatal)
		return;
	ps->fatal = true;
	mt_error("store failed: %s; exiting so that the restart runs recovery",
		 error != NULL ? error : "Berkeley DB panic");
	mt_notify_status("store failed: restart needed for recovery");
	/* A moment for the temporary-failure replies already queued to reach
	 * their clients; every store request fails meanwhile. */
	(void)mt_timer_add(ps->loop, FATAL_EXIT_MSECS, false, fatal_exit_cb, ps);
}

struct mt_cidr *popstore_parse_cidrs(const struct mt_strlist *list, size_t *count_r)
{
	struct mt_cidr *cidrs = mt_xcalloc(list->count + 1, sizeof(*cidrs));
	const char *error;
	for (size_t i = 0; i < list->count; i++)
		if (!mt_cidr_parse(list->items[i], &cidrs[i], &error))
			mt_fatal("'%s': %s", list->items[i], error);	/* checked at load */
	*count_r = list->count;
	return cidrs;
}

void popstore_open_store(struct popstore *ps)
{
	const struct mt_store_settings ss = {
		.home = ps->set->db_home, .mode = MT_STORE_MODE_SERVE, .create = true,
		.cache_size = ps->set->db_cache_size,
		.commit_threads = (unsigned int)ps->set->commit_threads,
		.reader_threads = (unsigned int)ps->set->reader_threads,
		.purge_delay_msecs = (unsigned int)ps->set->purge_delay,
		.redelivery_window_secs = (unsigned int)(ps->set->redelivery_window / 1000),
	};
	const char *error;
	enum mt_store_status status = mt_store_open(&ss, &ps->store, &error);
	if (status != MT_STORE_OK)
		mt_fatal("store %s: %s: %s", ps->set->db_home,
			 mt_store_status_name(status), error);
	ps->port = mt_store_port_new(ps->store, ps->loop, &error);
	if (ps->port == NULL)
		mt_fatal("%s", error);
}
