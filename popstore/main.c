/* main.c — mailtier-popstore: one message store shard. Start-up (config,
 * listeners, privilege drop, the store with recovery, the directory
 * client, TLS), sd-notify readiness and watchdog, SIGHUP reload, SIGTERM
 * drain, periodic counters, and the exit on a Berkeley DB panic.
 *
 *	mailtier-popstore [-c FILE] [-s SHARD] [-f|-F]
 *
 * (settings/daemon-args.c, as every daemon) -s names the shard
 * ([popstore.SHARD], the users' mailHost); without it [popstore] shard=
 * does. -f or -F logs to stderr (foreground, tests).
 * SIGHUP reloads the certificate and the proxy password and logs the
 * counters (deliveries, log flushes) as a "stats when=reload" line.
 *
 * Trust boundary: the config file and command line are the operator's;
 * the network is handled by lmtp-*.c and pop3-*.c. Everything here runs
 * before the first connection or on signals.
 * No protocol RFC; sd_notify(3) for systemd (Type=notify, WatchdogSec). */
#include "popstore.h"
#include "alloc.h"
#include "daemon-args.h"
#include "dirsvc.h"
#include "log.h"
#include "loop.h"
#include "privdrop.h"
#include "sdnotify.h"
#include "store/store.h"
#include "tls.h"
#include "secret.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
		" refused=%" PRIu64 " logins=%" PRIu64 " logins_failed=%" PRIu64,
		when, c.deliveries, c.delivery_requests, c.flushes, per,
		c.flushed_requests, c.max_batch, c.expunges, c.expunged, c.purged,
		c.purge_txns, c.chunk_writes, c.aborted, c.swept, c.reads,
		c.retries, c.checkpoints, ps->sessions, ps->lmtp_connections,
		ps->pop3_connections, ps->refused_connections, ps->logins,
		ps->logins_failed);
}

static void stats_cb(void *context)
{
	struct popstore *ps = context;
	log_stats(ps, "periodic");
	mt_dirsvc_log_stats(ps->dirsvc);
}

/* A panic seen by a store thread while no session was asking. */
static void failed_check_cb(void *context)
{
	struct popstore *ps = context;
	if (mt_store_failed(ps->store))
		popstore_store_fatal(ps, "Berkeley DB panic (DB_RUNRECOVERY)");
}

/* Signals */

static void reload_cb(void *context)
{
	struct popstore *ps = context;
	const char *error = NULL;

	mt_notify_reloading();
	if (ps->tls != NULL) {
		if (mt_tls_reload(ps->tls, &error))
			mt_info("reload tls=ok");
		else
			mt_error("reload tls failed (keeping the old certificate): %s", error);
	}
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
	mt_notify_ready();
}

static void drain_cb(void *context)
{
	struct popstore *ps = context;
	mt_notify_stopping();
	mt_info("draining sessions=%u", ps->sessions);
	lmtp_sessions_drain(ps);
	pop3_sessions_drain(ps);
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

/* Start-up */

/* This shard's settings: [popstore.NAME], or [popstore] itself if it
 * names the shard and no instance exists. */
static bool select_shard(struct popstore *ps, const char *path, const char *name)
{
	const struct mt_popstore_settings *base = mt_config_get(ps->config, "popstore", NULL);
	if (name == NULL || name[0] == '\0')
		name = base->shard;
	if (name[0] == '\0') {
		fprintf(stderr, "%s: no shard given: use -s SHARD or set [popstore] shard\n",
			path);
		return false;
	}
	const struct mt_popstore_settings *set = mt_config_get(ps->config, "popstore", name);
	if (set == NULL) {
		if (strcmp(base->shard, name) != 0) {
			fprintf(stderr, "%s: no [popstore.%s] section for shard %s\n",
				path, name, name);
			return false;
		}
		set = base;
	}
	ps->set = set;
	ps->shard = set->shard[0] != '\0' ? set->shard : name;
	if (mt_config_map_get(ps->config, "shards", ps->shard) == NULL) {
		fprintf(stderr, "%s: shard '%s' is not listed in [shards]\n", path, ps->shard);
		return false;
	}
	const char *missing = set->db_home[0] == '\0' ? "db_home" :
		set->lmtp_listen.host == NULL ? "lmtp_listen" :
		set->pop3_listen.host == NULL ? "pop3_listen" : NULL;
	if (missing != NULL) {
		fprintf(stderr, "%s: [popstore.%s] %s is required\n", path, name, missing);
		return false;
	}
	return true;
}

static void setup_tls(struct popstore *ps)
{
	const struct mt_tls_config *tc = mt_config_get(ps->config, "tls", NULL);
	if (tc->cert_file[0] == '\0')
		return;
	const struct mt_tls_settings ts = {
		.cert_file = tc->cert_file, .key_file = tc->key_file,
		.ca_file = NULL, .ciphers = tc->ciphers, .ciphersuites = tc->ciphersuites,
		.min_version = tc->min_version == MT_TLS_V1_3 ? TLS1_3_VERSION : TLS1_2_VERSION,
	};
	const char *error;
	ps->tls = mt_tls_new(MT_TLS_SERVER);
	if (!mt_tls_load(ps->tls, &ts, &error))
		mt_fatal("[tls]: %s", error);
}

int main(int argc, char **argv)
{
	struct popstore *ps = &popstore;
	const char *error;
	struct mt_daemon_args args;
	int status = mt_daemon_args_parse(argc, argv, POPSTORE_NAME, true, &args);
	if (status >= 0)
		return status;
	const char *config_path = args.config_path, *shard = args.shard;
	bool foreground = args.foreground;

	mt_log_init(POPSTORE_NAME, foreground ? MT_LOG_TARGET_STDERR : MT_LOG_TARGET_AUTO);
	char *errors = NULL;
	ps->config = mt_mailtier_config_load(config_path, &errors);
	if (ps->config == NULL) {
		fputs(errors, stderr);
		free(errors);
		return 1;
	}
	if (!select_shard(ps, config_path, shard)) {
		mt_config_free(&ps->config);
		return 1;
	}
	ps->global = mt_config_get(ps->config, "global", NULL);
	mt_log_set_min_level((enum mt_log_level)(MT_LOG_DEBUG + ps->global->log_level));

	if (ps->set->hostname[0] != '\0')
		ps->hostname = mt_xstrdup(ps->set->hostname);
	else {
		char name[256];
		if (gethostname(name, sizeof(name)) < 0)
			snprintf(name, sizeof(name), "localhost");
		name[sizeof(name) - 1] = '\0';
		ps->hostname = mt_xstrdup(name);
	}
	ps->lmtp_clients = popstore_parse_cidrs(&ps->set->lmtp_clients, &ps->n_lmtp_clients);
	ps->proxy_addresses = popstore_parse_cidrs(&ps->set->proxy_addresses, &ps->n_proxy_addresses);
	if (ps->set->proxy_password_file[0] != '\0' &&
	    (ps->proxy_password = mt_secret_read(ps->set->proxy_password_file,
						 &error)) == NULL)
		mt_fatal("[popstore] proxy_password_file %s", error);
	setup_tls(ps);
	if (ps->set->pop3s_listen.host != NULL && ps->tls == NULL)
		mt_fatal("[popstore] pop3s_listen needs [tls] cert_file and key_file");

	ps->loop = mt_loop_new(&error);
	if (ps->loop == NULL)
		mt_fatal("%s", error);
	(void)mt_listener_add_setting(ps->loop, "lmtp_listen", &ps->set->lmtp_listen, 0,
				      lmtp_accept_cb, ps);
	(void)mt_listener_add_setting(ps->loop, "pop3_listen", &ps->set->pop3_listen, 0,
				      pop3_accept_cb, ps);
	(void)mt_listener_add_setting(ps->loop, "pop3s_listen", &ps->set->pop3s_listen, 0,
				      pop3s_accept_cb, ps);
	if (!mt_privdrop(ps->global->user, ps->global->group, &error))
		mt_fatal("%s", error);

	/* As the unprivileged user, so the environment's files are its own.
	 * Recovery runs here, before READY=1. */
	popstore_open_store(ps);
	const struct mt_directory_settings *dirset = mt_config_get(ps->config, "directory", NULL);
	ps->dirsvc = mt_dirsvc_new(dirset, ps->config, &error);
	if (ps->dirsvc == NULL)
		mt_fatal("directory: %s", error);
	ps->dir = mt_dirsvc_client_new(ps->dirsvc, ps->loop);

	mt_loop_set_drain(ps->loop, (unsigned int)ps->global->drain_timeout, drain_cb, ps);
	if (!mt_loop_handle_signals(ps->loop, reload_cb, ps, &error))
		mt_fatal("%s", error);
	struct mt_timer *watchdog = mt_notify_watchdog_start(ps->loop);
	struct mt_timer *stats = ps->set->stats_interval == 0 ? NULL :
		mt_timer_add(ps->loop, (unsigned int)ps->set->stats_interval, true,
			     stats_cb, ps);
	struct mt_timer *failed_check = mt_timer_add(ps->loop, FAILED_CHECK_MSECS, true,
						     failed_check_cb, ps);

	mt_info("ready shard=%s db_home=%s tls=%s proxy_logins=%s", ps->shard,
		ps->set->db_home, ps->tls != NULL ? "yes" : "no",
		ps->proxy_password != NULL ? "yes" : "no");
	mt_notify_status("shard %s: serving", ps->shard);
	mt_notify_ready();
	int ret = mt_loop_run(ps->loop);

	if (ps->fatal) {
		/* Nothing more may touch the environment: no checkpoint, no
		 * close. systemd restarts us; the open runs recovery. */
		mt_error("exit status=1 reason=store-failed");
		_exit(1);
	}
	lmtp_sessions_free_all(ps);
	pop3_sessions_free_all(ps);
	/* Run the deferred frees the closes just posted. */
	event_base_loop(mt_loop_base(ps->loop), EVLOOP_NONBLOCK);
	log_stats(ps, "exit");
	mt_timer_free(&failed_check);
	mt_timer_free(&stats);
	mt_timer_free(&watchdog);
	mt_dirsvc_client_free(&ps->dir);
	mt_dirsvc_free(&ps->dirsvc);
	mt_store_port_free(&ps->port);
	mt_store_close(&ps->store);
	mt_tls_free(&ps->tls);
	mt_loop_free(&ps->loop);
	mt_secret_free(&ps->proxy_password);
	free(ps->lmtp_clients);
	free(ps->proxy_addresses);
	free(ps->hostname);
	mt_config_free(&ps->config);
	mt_info("exit status=%d", ret == 0 ? 0 : 1);
	return ret == 0 ? 0 : 1;
}
