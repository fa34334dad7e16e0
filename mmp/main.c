/* main.c — mailtier-mmp, the POP3 and IMAP multiplexor proxy: start-up (config,
 * TLS, the directory client, the shard table, listeners, privilege drop,
 * worker loops), the accept hand-off with the connection limits, stats
 * and the SIGTERM drain, as a daemon skeleton definition (daemon/daemon.h
 * does the command line, config, TLS and its SIGHUP reload, privilege
 * drop, signals, sd-notify).
 *
 *	mailtier-mmp [-c FILE] [-f|-F]
 *
 * The main loop accepts on pop3_listen, pop3s_listen, imap_listen and
 * imaps_listen and checks the limits there, one count for all four
 * (conn_limit, conn_limit_per_client, a blocked address): a refused
 * plaintext client gets its -ERR [SYS/TEMP] or * BYE [UNAVAILABLE] line
 * written at once
 * and the socket closed; a refused implicit-TLS client needs the handshake
 * to read it, so it goes to a worker as a refusal (at most
 * TLS_REFUSALS_MAX at a time, beyond that the socket is just closed).
 * Admitted connections go round robin to the `threads` worker loops, each
 * with its own libdirsvc client.
 *
 * Trust boundary: the config and the proxy password file are the
 * operator's; the TCP peer address is the client's (used for limits and
 * logs). Everything else is in the session files.
 * RFCs: RFC 2595 (pop3_listen with STLS), RFC 9051 6.2.1 (imap_listen
 * with STARTTLS), RFC 8314 (pop3s_listen, imaps_listen). */
#include "mmp.h"
#include "clock.h"
#include "alloc.h"
#include "daemon.h"
#include "dirsvc.h"
#include "mailtier-settings.h"
#include "sdnotify.h"
#include "tls.h"
#include "secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

/* Implicit-TLS refusals being answered at once, at most. */
#define TLS_REFUSALS_MAX 256
/* Descriptors the process needs besides its connections. */
#define FD_RESERVE 64
/* How often failed-login records are expired. */
#define SWEEP_MSECS 10000


static struct mmp_server server;

/* Each connection needs a descriptor, two once logged in. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			mt_warning("cannot raise RLIMIT_NOFILE to %llu: %s",
				   (unsigned long long)rl.rlim_max, strerror(errno));
	}
	uint64_t need = server.set->conn_limit * 2 + FD_RESERVE;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need)
		mt_warning("open-file limit %llu is below the %llu that conn_limit=%llu "
			   "needs when every session is logged in (LimitNOFILE= in the "
			   "systemd unit)", (unsigned long long)rl.rlim_cur,
			   (unsigned long long)need,
			   (unsigned long long)server.set->conn_limit);
}

/* Accept hand-off (main loop) */

struct conn_post {
	struct mmp_worker *worker;
	int fd;
	enum mmp_listener_kind kind;
	const char *reject;
	socklen_t peerlen;
	struct sockaddr_storage peer;
};

static void conn_run(void *context)
{
	struct conn_post *c = context;
	mmp_session_new(c->worker, c->fd, (struct sockaddr *)&c->peer,
			c->peerlen, c->kind, c->reject);
	free(c);
}

static void dispatch(int fd, const struct sockaddr *peer, socklen_t peerlen,
		     enum mmp_listener_kind kind, const char *reject)
{
	struct conn_post *c = mt_xcalloc(1, sizeof(*c));
	c->worker = server.worker_list[server.next_worker++ % server.n_workers];
	c->fd = fd;
	c->kind = kind;
	c->reject = reject;
	if (peerlen > sizeof(c->peer))
		peerlen = sizeof(c->peer);
	memcpy(&c->peer, peer, peerlen);
	c->peerlen = peerlen;
	mt_loop_post(c->worker->loop, conn_run, c);
}

static void refuse(int fd, const struct sockaddr *peer, socklen_t peerlen,
		   enum mmp_listener_kind kind, enum mmp_answer answer,
		   const char *reason)
{
	char addr[MT_SOCKADDR_STRLEN];
	const char *reply = mmp_answer_text(mmp_listener_protocol(kind), answer);

	mt_info("refused client=%s listener=%s reason=%s",
		mt_sockaddr_str(peer, addr, sizeof(addr)), mmp_listener_names[kind],
		reason);
	/* Counted here, also when a worker answers it (implicit TLS). */
	mmp_metrics_session_closed(kind, MT_OUTCOME_REFUSED);
	if (mmp_listener_implicit_tls(kind)) {
		if (atomic_load(&server.rejects) < TLS_REFUSALS_MAX) {
			atomic_fetch_add(&server.rejects, 1);
			dispatch(fd, peer, peerlen, kind, reply);
			return;
		}
		close(fd);
		return;
	}
	/* A fresh socket's buffer always takes one short line. */
	char line[160];
	int n = snprintf(line, sizeof(line), "%s\r\n", reply);
	if (write(fd, line, (size_t)n) < 0) {
		/* the client is gone already */
	}
	close(fd);
}

static void accept_conn(int fd, const struct sockaddr *peer, socklen_t peerlen,
			enum mmp_listener_kind kind)
{
	if (atomic_load(&server.conns) >= server.set->conn_limit) {
		atomic_fetch_add(&server.stats.refused_limit, 1);
		refuse(fd, peer, peerlen, kind, MMP_ANSWER_BYE_CONN_LIMIT, "conn_limit");
		return;
	}
	switch (mmp_clients_admit(server.clients, peer, mt_clock_coarse_ms())) {
	case MMP_ADMIT_OK:
		break;
	case MMP_ADMIT_PER_CLIENT:
		atomic_fetch_add(&server.stats.refused_client, 1);
		refuse(fd, peer, peerlen, kind, MMP_ANSWER_BYE_CLIENT_LIMIT, "conn_limit_per_client");
		return;
	case MMP_ADMIT_BLOCKED:
		atomic_fetch_add(&server.stats.refused_blocked, 1);
		refuse(fd, peer, peerlen, kind, MMP_ANSWER_BYE_CLIENT_BLOCKED, "auth_fail_limit");
		return;
	}
	atomic_fetch_add(&server.conns, 1);
	atomic_fetch_add(&server.stats.connections, 1);
	mmp_metrics_session(kind);
	dispatch(fd, peer, peerlen, kind, NULL);
}

static void accept_pop3(int fd, const struct sockaddr *peer, socklen_t peerlen,
			void *context)
{
	(void)context;
	accept_conn(fd, peer, peerlen, MMP_LISTENER_POP3);
}

static void accept_pop3s(int fd, const struct sockaddr *peer, socklen_t peerlen,
			 void *context)
{
	(void)context;
	accept_conn(fd, peer, peerlen, MMP_LISTENER_POP3S);
}

static void accept_imap(int fd, const struct sockaddr *peer, socklen_t peerlen,
			void *context)
{
	(void)context;
	accept_conn(fd, peer, peerlen, MMP_LISTENER_IMAP);
}

static void accept_imaps(int fd, const struct sockaddr *peer, socklen_t peerlen,
			 void *context)
{
	(void)context;
	accept_conn(fd, peer, peerlen, MMP_LISTENER_IMAPS);
}

/* Workers (each in its own thread) */

static void worker_drain(void *context)
{
	mmp_sessions_drain(context);
}

static bool worker_init(struct mt_loop *loop, unsigned int index,
			void *context, void **worker_context_r,
			const char **error_r)
{
	struct mmp_worker *w = mt_xcalloc(1, sizeof(*w));
	(void)context; (void)error_r;
	w->server = &server;
	w->index = index;
	w->loop = loop;
	w->base = mt_loop_base(loop);
	w->dirsvc = mt_dirsvc_client_new(server.dirsvc, w->loop);
	w->scratch = evbuffer_new();
	if (w->scratch == NULL)
		mt_panic("evbuffer_new failed");
	if (server.set->relay_splice)
		w->pipes = mmp_splice_pool_new();
	mt_loop_set_drain(loop, 0, worker_drain, w);
	server.worker_list[index] = w;
	*worker_context_r = w;
	return true;
}

static void worker_deinit(void *context)
{
	struct mmp_worker *w = context;
	mmp_sessions_free_all(w);
	evbuffer_free(w->scratch);
	mt_dirsvc_client_free(&w->dirsvc);
	mmp_splice_pool_free(&w->pipes);
	free(w);
}

/* Main loop: drain, stats */

static void drain(struct mt_daemon *d)
{
	(void)d;
	mmp_shards_stop(server.shards);
	mt_workers_drain(server.workers);
}

#define STAT(name) ((unsigned long long)atomic_load(&server.stats.name))

static void log_stats(void)
{
	mt_info("stats conns=%llu connections=%llu refused_limit=%llu "
		"refused_client=%llu refused_blocked=%llu logins=%llu "
		"auth_failed=%llu tempfail=%llu backend_refused=%llu "
		"bytes_in=%llu bytes_out=%llu clients=%zu",
		(unsigned long long)atomic_load(&server.conns), STAT(connections),
		STAT(refused_limit), STAT(refused_client), STAT(refused_blocked),
		STAT(logins), STAT(auth_failed), STAT(tempfail),
		STAT(backend_refused), STAT(bytes_in), STAT(bytes_out),
		mmp_clients_count(server.clients));
	mt_dirsvc_log_stats(server.dirsvc);
}

static void stats(struct mt_daemon *d)
{
	(void)d;
	log_stats();
	/* Only this often: sd_notify() blocks when the service manager
	 * does not read (a test harness, say), and the main loop accepts. */
	mt_notify_status("%llu connections, %llu logins",
			 (unsigned long long)atomic_load(&server.conns),
			 STAT(logins));
}

static void sweep_cb(void *context)
{
	(void)context;
	mmp_clients_sweep(server.clients, mt_clock_coarse_ms());
}

/* Start-up */

static bool configure(struct mt_daemon *d, const char **error_r)
{
	const char *error = NULL;
	(void)error_r;
	server.config = d->config;
	server.set = mt_config_get(d->config, "mmp", NULL);
	const struct mt_mmp_settings *set = server.set;
	if (set->proxy_password_file[0] == '\0')
		mt_fatal("[mmp] proxy_password_file is not set");
	server.proxy_password = mt_secret_read(set->proxy_password_file, &error);
	if (server.proxy_password == NULL)
		mt_fatal("[mmp] proxy_password_file: %s", error);
	server.proxy_user = set->proxy_user;
	if (set->pop3_listen.host == NULL && set->pop3s_listen.host == NULL &&
	    set->imap_listen.host == NULL && set->imaps_listen.host == NULL)
		mt_fatal("[mmp] none of pop3_listen, pop3s_listen, imap_listen and "
			 "imaps_listen is set");
	d->stats_interval_msecs = (unsigned int)set->stats_interval;
	d->metrics_listen = &set->metrics_listen;
	return true;
}

static void listen_all(struct mt_daemon *d)
{
	const struct mt_mmp_settings *set = server.set;
	const char *error = NULL;
	server.tls = d->tls_server;
	server.main_loop = d->loop;
	if (set->pop3s_listen.host != NULL && server.tls == NULL)
		mt_fatal("[mmp] pop3s_listen needs [tls] cert_file and key_file "
			 "(or set pop3s_listen empty)");
	if (set->imaps_listen.host != NULL && server.tls == NULL)
		mt_fatal("[mmp] imaps_listen needs [tls] cert_file and key_file "
			 "(or set imaps_listen empty)");
	if (server.tls == NULL && !set->allow_plaintext_auth &&
	    (set->pop3_listen.host != NULL || set->imap_listen.host != NULL))
		mt_warning("pop3_listen/imap_listen without [tls] and "
			   "allow_plaintext_auth = no: no one can log in there");
	raise_fd_limit();
	server.shards = mmp_shards_new(server.config, server.main_loop, set, &error);
	if (server.shards == NULL)
		mt_fatal("[shards]: %s", error);
	const char *no_imap = NULL;
	if ((set->imap_listen.host != NULL || set->imaps_listen.host != NULL) &&
	    !mmp_shards_serve(server.shards, MMP_PROTO_IMAP, &no_imap))
		mt_fatal("[shards] %s has no IMAP address (NAME = LMTP_ADDRESS, "
			 "POP3_ADDRESS, IMAP_ADDRESS), which imap_listen and "
			 "imaps_listen need", no_imap);
	struct mmp_clients_settings cset = {
		.conn_limit_per_client = set->conn_limit_per_client,
		.auth_fail_delay = set->auth_fail_delay,
		.auth_fail_limit = set->auth_fail_limit,
		.auth_fail_window = set->auth_fail_window,
	};
	server.clients = mmp_clients_new(&cset);
	(void)mt_daemon_listen(d, "pop3_listen", &set->pop3_listen, accept_pop3, NULL);
	(void)mt_daemon_listen(d, "pop3s_listen", &set->pop3s_listen, accept_pop3s, NULL);
	(void)mt_daemon_listen(d, "imap_listen", &set->imap_listen, accept_imap, NULL);
	(void)mt_daemon_listen(d, "imaps_listen", &set->imaps_listen, accept_imaps, NULL);
}

static void start(struct mt_daemon *d)
{
	const struct mt_mmp_settings *set = server.set;
	const char *error = NULL;
	/* After the drop, as in the other daemons: its threads then start
	 * with the dropped credentials and bounding set (both per thread). */
	server.dirsvc = mt_dirsvc_new(mt_config_get(d->config, "directory", NULL),
				      d->config, &error);
	if (server.dirsvc == NULL)
		mt_fatal("[directory]: %s", error);
	mmp_metrics_init(&server, d->metrics);
	mt_dirsvc_metrics(server.dirsvc, d->metrics);

	server.n_workers = (unsigned int)set->threads;
	server.worker_list = mt_xcalloc(server.n_workers, sizeof(*server.worker_list));
	struct mt_worker_settings wset = {
		.count = server.n_workers, .init = worker_init,
		.deinit = worker_deinit, .context = &server,
	};
	server.workers = mt_workers_start(server.main_loop, &wset, &error);
	if (server.workers == NULL)
		mt_fatal("%s", error);
	server.sweep = mt_timer_add(server.main_loop, SWEEP_MSECS, true, sweep_cb, NULL);
	mt_info("started pop3=%s:%u pop3s=%s:%u imap=%s:%u imaps=%s:%u threads=%u "
		"conn_limit=%llu conn_limit_per_client=%llu tls=%s splice=%s",
		set->pop3_listen.host != NULL ? set->pop3_listen.host : "-",
		set->pop3_listen.port,
		set->pop3s_listen.host != NULL ? set->pop3s_listen.host : "-",
		set->pop3s_listen.port,
		set->imap_listen.host != NULL ? set->imap_listen.host : "-",
		set->imap_listen.port,
		set->imaps_listen.host != NULL ? set->imaps_listen.host : "-",
		set->imaps_listen.port, server.n_workers,
		(unsigned long long)set->conn_limit,
		(unsigned long long)set->conn_limit_per_client,
		server.tls != NULL ? "yes" : "no", set->relay_splice ? "yes" : "no");
	mt_notify_status("0 connections");
}

static void stop(struct mt_daemon *d, int status)
{
	(void)status;
	mmp_shards_stop(server.shards);
	mt_workers_stop(&server.workers);
	mt_timer_free(&server.sweep);
	log_stats();
	mt_dirsvc_free(&server.dirsvc);
	mmp_metrics_free(&server, d->metrics);
	mmp_shards_free(&server.shards);
	mmp_clients_free(&server.clients);
	mt_secret_free(&server.proxy_password);
	free(server.worker_list);
}

static const struct mt_daemon_def mmp_daemon = {
	.name = "mailtier-mmp",
	.configure = configure, .listen = listen_all, .start = start,
	.drain = drain, .stats = stats, .stop = stop,
};

int main(int argc, char **argv)
{
	return mt_daemon_main(&mmp_daemon, &server, argc, argv);
}
