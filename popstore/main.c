/* main.c — mailtier-popstore, one message store shard, as a daemon
 * skeleton definition (daemon/daemon.h does the command line, config, TLS,
 * privilege drop, signals, sd-notify): the shard's section, the listeners,
 * the store with recovery (before READY=1), the directory client, periodic
 * counters, the SIGTERM drain, and the exit on a Berkeley DB panic.
 *
 *	mailtier-popstore [-c FILE] [-s SHARD] [-f|-F]
 *
 * -s names the shard ([popstore.SHARD], the users' mailHost); without it
 * [popstore] shard= does. SIGHUP reloads the certificate and the proxy
 * password and logs the counters as a "stats when=reload" line.
 *
 * Trust boundary: the config file and command line are the operator's;
 * the network is handled by lmtp-*.c and pop3-*.c. Everything here runs
 * before the first connection or on signals.
 * No protocol RFC. */
#include "popstore.h"
#include "daemon.h"
#include "dirsvc.h"
#include "log.h"
#include "loop.h"
#include "sdnotify.h"
#include "store/store.h"
#include "secret.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#define FAILED_CHECK_MSECS 1000

static struct popstore popstore;

/* Counters */

static void log_stats(struct popstore *ps, const char *when)
{
	struct mt_store_counters c;
	mt_store_counters_get(ps->store, &c);
	double per = c.deliveries > 0 ? (double)c.flushes / (double)c.deliveries : 0.0;
	mt_info("stats when=%s deliveries=%" PRIu64 " delivery_requests=%" PRIu64
		" flushes=%" PRIu64 " flushes_per_delivery=%.3f flushed_requests=%" PRIu64
		" max_batch=%" PRIu64 " expunges=%" PRIu64 " expunged=%" PRIu64
		" purged=%" PRIu64 " purge_txns=%" PRIu64 " chunk_writes=%" PRIu64
		" aborted=%" PRIu64 " swept=%" PRIu64
		" reads=%" PRIu64 " retries=%" PRIu64 " checkpoints=%" PRIu64
		" sessions=%u lmtp_connections=%" PRIu64 " pop3_connections=%" PRIu64
		" imap_connections=%" PRIu64
		" refused=%" PRIu64 " logins=%" PRIu64 " logins_failed=%" PRIu64,
		when, c.deliveries, c.delivery_requests, c.flushes, per,
		c.flushed_requests, c.max_batch, c.expunges, c.expunged, c.purged,
		c.purge_txns, c.chunk_writes, c.aborted, c.swept, c.reads,
		c.retries, c.checkpoints, ps->sessions, ps->lmtp_connections,
		ps->pop3_connections, ps->imap_connections, ps->refused_connections,
		ps->logins,
		ps->logins_failed);
}

/* A panic seen by a store thread while no session was asking. */
static void failed_check_cb(void *context)
{
	struct popstore *ps = context;
	if (mt_store_failed(ps->store))
		popstore_store_fatal(ps, "Berkeley DB panic (DB_RUNRECOVERY)");
	else if (mt_store_demoted(ps->store) && ps->daemon->exit_status == 0) {
		/* HA.md 5.3: close and restart as a replica (systemd's
		 * Restart=on-failure, or mailtierctl cluster up). */
		mt_warning("shard %s: this site is no longer the master: exiting (75) to "
			   "rejoin as a replica", ps->shard);
		mt_notify_status("shard %s: demoted, restarting", ps->shard);
		ps->daemon->exit_status = 75;
		mt_loop_exit(ps->loop);
	}
}

/* Signals */

static void reload(struct mt_daemon *d)
{
	struct popstore *ps = d->context;
	const char *error = NULL;
	if (ps->set->proxy_password_file[0] != '\0') {
		char *pw = mt_secret_read(ps->set->proxy_password_file, &error);
		if (pw != NULL) {
			mt_secret_free(&ps->proxy_password);
			ps->proxy_password = pw;
			mt_info("reload proxy_password_file=ok");
		} else
			mt_error("reload proxy_password_file failed (keeping the old one): %s",
				 error);
	}
	log_stats(ps, "reload");
}

static void drain(struct mt_daemon *d)
{
	struct popstore *ps = d->context;
	mt_info("draining sessions=%u", ps->sessions);
	lmtp_sessions_drain(ps);
	pop3_sessions_drain(ps);
	imap_sessions_drain(ps);
	if (ps->sessions == 0)
		mt_loop_drain_done(ps->loop);
}

static void lmtp_accept_cb(int fd, const struct sockaddr *peer, socklen_t len,
			   void *context)
{
	lmtp_session_accept(context, fd, peer);
}

static void pop3_accept_cb(int fd, const struct sockaddr *peer, socklen_t len,
			   void *context)
{
	pop3_session_accept(context, fd, peer, false);
}

static void pop3s_accept_cb(int fd, const struct sockaddr *peer, socklen_t len,
			    void *context)
{
	pop3_session_accept(context, fd, peer, true);
}

static void imap_accept_cb(int fd, const struct sockaddr *peer, socklen_t len,
			   void *context)
{
	imap_session_accept(context, fd, peer, false);
}

static void imaps_accept_cb(int fd, const struct sockaddr *peer, socklen_t len,
			    void *context)
{
	imap_session_accept(context, fd, peer, true);
}

/* Start-up */

/* This shard's settings: [popstore.NAME], or [popstore] itself if it
 * names the shard and no instance exists. */
static bool select_shard(struct popstore *ps, const char *path, const char *name,
			 const char **error_r)
{
	static _Thread_local char error[512];
	const struct mt_popstore_settings *base = mt_config_get(ps->config, "popstore", NULL);
	*error_r = error;
	if (name == NULL || name[0] == '\0')
		name = base->shard;
	if (name[0] == '\0') {
		snprintf(error, sizeof(error),
			 "%s: no shard given: use -s SHARD or set [popstore] shard", path);
		return false;
	}
	const struct mt_popstore_settings *set = mt_config_get(ps->config, "popstore", name);
	if (set == NULL) {
		if (strcmp(base->shard, name) != 0) {
			snprintf(error, sizeof(error),
				 "%s: no [popstore.%s] section for shard %s", path, name, name);
			return false;
		}
		set = base;
	}
	ps->set = set;
	ps->shard = set->shard[0] != '\0' ? set->shard : name;
	if (mt_config_map_get(ps->config, "shards", ps->shard) == NULL) {
		snprintf(error, sizeof(error), "%s: shard '%s' is not listed in [shards]",
			 path, ps->shard);
		return false;
	}
	const char *missing = set->db_home[0] == '\0' ? "db_home" :
		set->lmtp_listen.host == NULL ? "lmtp_listen" :
		set->pop3_listen.host == NULL ? "pop3_listen" : NULL;
	if (missing != NULL) {
		snprintf(error, sizeof(error), "%s: [popstore.%s] %s is required",
			 path, name, missing);
		return false;
	}
	return true;
}

static bool configure(struct mt_daemon *d, const char **error_r)
{
	struct popstore *ps = d->context;
	const char *error;
	ps->config = d->config;
	ps->global = d->global;
	ps->daemon = d;
	ps->create_group = d->create_group;
	if (!select_shard(ps, d->config_path, d->shard, error_r))
		return false;
	ps->hostname = mt_daemon_hostname(ps->set->hostname);
	ps->lmtp_clients = popstore_parse_cidrs(&ps->set->lmtp_clients, &ps->n_lmtp_clients);
	ps->proxy_addresses = popstore_parse_cidrs(&ps->set->proxy_addresses,
						   &ps->n_proxy_addresses);
	if (ps->set->proxy_password_file[0] != '\0' &&
	    (ps->proxy_password = mt_secret_read(ps->set->proxy_password_file,
						 &error)) == NULL)
		mt_fatal("[popstore] proxy_password_file %s", error);
	d->stats_interval_msecs = (unsigned int)ps->set->stats_interval;
	d->metrics_listen = &ps->set->metrics_listen;
	return true;
}

static void listen_all(struct mt_daemon *d)
{
	struct popstore *ps = d->context;
	ps->loop = d->loop;
	ps->tls = d->tls_server;
	if (ps->set->pop3s_listen.host != NULL && ps->tls == NULL)
		mt_fatal("[popstore] pop3s_listen needs [tls] cert_file and key_file");
	(void)mt_daemon_listen(d, "lmtp_listen", &ps->set->lmtp_listen, lmtp_accept_cb, ps);
	(void)mt_daemon_listen(d, "pop3_listen", &ps->set->pop3_listen, pop3_accept_cb, ps);
	(void)mt_daemon_listen(d, "pop3s_listen", &ps->set->pop3s_listen,
			       pop3s_accept_cb, ps);
	if (ps->set->imaps_listen.host != NULL && ps->tls == NULL)
		mt_fatal("[popstore] imaps_listen needs [tls] cert_file and key_file");
	(void)mt_daemon_listen(d, "imap_listen", &ps->set->imap_listen, imap_accept_cb, ps);
	(void)mt_daemon_listen(d, "imaps_listen", &ps->set->imaps_listen,
			       imaps_accept_cb, ps);
}

static void start(struct mt_daemon *d)
{
	struct popstore *ps = d->context;
	const char *error;
	/* As the unprivileged user, so the environment's files are its own.
	 * Recovery runs here, before READY=1. */
	popstore_open_store(ps);
	const struct mt_directory_settings *dirset = mt_config_get(ps->config, "directory", NULL);
	ps->dirsvc = mt_dirsvc_new(dirset, ps->config, &error);
	if (ps->dirsvc == NULL)
		mt_fatal("directory: %s", error);
	ps->dir = mt_dirsvc_client_new(ps->dirsvc, ps->loop);
	popstore_metrics_init(ps, d->metrics);
	mt_dirsvc_metrics(ps->dirsvc, d->metrics);
	ps->failed_check = mt_timer_add(ps->loop, FAILED_CHECK_MSECS, true,
					failed_check_cb, ps);
	char why[320] = "";
	bool serving = mt_store_serving(ps->store, why, sizeof(why));
	mt_info("ready shard=%s db_home=%s tls=%s proxy_logins=%s replication=%s%s%s",
		ps->shard, ps->set->db_home, ps->tls != NULL ? "yes" : "no",
		ps->proxy_password != NULL ? "yes" : "no",
		ps->set->replication_listen[0] != '\0' ? ps->set->replication_listen : "off",
		serving ? "" : " state=", serving ? "" : why);
	mt_notify_status("shard %s: %s", ps->shard, serving ? "serving" : why);
}

static void stop(struct mt_daemon *d, int status)
{
	struct popstore *ps = d->context;
	(void)status;
	if (ps->fatal) {
		/* Nothing more may touch the environment: no checkpoint, no
		 * close. systemd restarts us; the open runs recovery. */
		mt_error("exit status=1 reason=store-failed");
		_exit(1);
	}
	lmtp_sessions_free_all(ps);
	imap_sessions_free_all(ps);
	pop3_sessions_free_all(ps);
	/* Run the deferred frees the closes just posted. */
	event_base_loop(mt_loop_base(ps->loop), EVLOOP_NONBLOCK);
	log_stats(ps, "exit");
	popstore_metrics_free(ps);
	mt_timer_free(&ps->failed_check);
	mt_dirsvc_client_free(&ps->dir);
	mt_dirsvc_free(&ps->dirsvc);
	mt_store_port_free(&ps->port);
	mt_store_close(&ps->store);
	mt_secret_free(&ps->proxy_password);
	free(ps->watches);
	free(ps->lmtp_clients);
	free(ps->proxy_addresses);
	free(ps->hostname);
}

static void stats(struct mt_daemon *d)
{
	struct popstore *ps = d->context;
	log_stats(ps, "periodic");
	mt_dirsvc_log_stats(ps->dirsvc);
}

static const struct mt_daemon_def popstore_daemon = {
	.name = POPSTORE_NAME, .takes_shard = true,
	.configure = configure, .listen = listen_all, .start = start,
	.reload = reload, .drain = drain, .stats = stats, .stop = stop,
};

int main(int argc, char **argv)
{
	return mt_daemon_main(&popstore_daemon, &popstore, argc, argv);
}
