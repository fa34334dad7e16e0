/* main.c — mailtier-mta: start-up (config with FILE:LINE errors, TLS,
 * listeners for smtp/submission/submissions, privilege drop after binding,
 * the queue with recovery, the directory, delivery, the admin socket),
 * sd-notify readiness and watchdog, SIGHUP reload of config and TLS, and the
 * SIGTERM drain: sessions finish their transaction, deliveries in flight
 * finish, the queue is checkpointed and closed.
 *
 *	mailtier-mta [-c FILE] [-f|-F]
 *
 * (settings/daemon-args.c, as every daemon) -f logs to stderr with
 * timestamps (foreground, tests); otherwise to the journal under systemd,
 * else syslog.
 *
 * Trust boundary: the config file is the administrator's; everything the
 * network sends is handled by the session and delivery code.
 * RFCs: 5321 (the daemon's protocol), 6409 (submission on 587), 8314
 * (implicit TLS on 465). */
#include "mta.h"
#include "daemon-args.h"
#include "clock.h"
#include "admin.h"
#include "alloc.h"
#include "delivery.h"
#include "dirsvc.h"
#include "log.h"
#include "loop.h"
#include "mta-policy.h"
#include "privdrop.h"
#include "queue.h"
#include "sdnotify.h"
#include "smtp-session.h"
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STATS_INTERVAL_MSECS 60000u

struct listener_ctx {
	struct mta *mta;
	enum smtp_service service;
};

static struct listener_ctx listener_ctxs[SMTP_SERVICE_COUNT];

/* Config */

static struct mt_config *load_config(const char *path)
{
	char *errors = NULL;
	struct mt_config *config = mt_mailtier_config_load(path, &errors);
	if (config == NULL) {
		/* One "FILE:LINE: message" per line; each becomes a log line. */
		for (char *line = strtok(errors, "\n"); line != NULL;
		     line = strtok(NULL, "\n"))
			mt_error("%s", line);
		free(errors);
	}
	return config;
}

static char *pick_hostname(const struct mt_mta_settings *set)
{
	if (set->hostname[0] != '\0')
		return mt_xstrdup(set->hostname);
	char name[256];
	if (gethostname(name, sizeof(name)) < 0 || name[0] == '\0')
		snprintf(name, sizeof(name), "localhost");
	name[sizeof(name) - 1] = '\0';
	return mt_xstrdup(name);
}

/* Use config from now on (start-up, or a reload that loaded cleanly). */
static void apply_config(struct mta *mta, struct mt_config *config)
{
	struct mt_config *old = mta->config;
	mta->config = config;
	mta->set = mt_config_get(config, "mta", NULL);
	mta->global = mt_config_get(config, "global", NULL);
	mta_policy_free(&mta->policy);
	mta->policy = mta_policy_new(mta->set);
	free(mta->hostname);
	mta->hostname = pick_hostname(mta->set);
	mt_log_set_min_level((enum mt_log_level)mta->global->log_level);
	mt_config_free(&old);
}

static bool load_tls(struct mta *mta, const char **error_r)
{
	const struct mt_tls_config *tc = mt_config_get(mta->config, "tls", NULL);
	struct mt_tls_settings ts = {
		.cert_file = tc->cert_file, .key_file = tc->key_file,
		.ciphers = tc->ciphers, .ciphersuites = tc->ciphersuites,
		.min_version = tc->min_version == MT_TLS_V1_3 ? TLS1_3_VERSION :
			TLS1_2_VERSION,
	};
	if (tc->cert_file[0] != '\0') {
		if (mta->tls_server == NULL)
			mta->tls_server = mt_tls_new(MT_TLS_SERVER);
		if (!mt_tls_load(mta->tls_server, &ts, error_r))
			return false;
	}
	/* Outgoing: opportunistic (RFC 7435) unless a CA file is given. */
	struct mt_tls_settings cs = ts;
	cs.cert_file = cs.key_file = NULL;
	cs.ca_file = tc->ca_file;
	if (mta->tls_client == NULL)
		mta->tls_client = mt_tls_new(MT_TLS_CLIENT);
	return mt_tls_load(mta->tls_client, &cs, error_r);
}

/* Listeners */

static void accept_cb(int fd, const struct sockaddr *peer, socklen_t peerlen,
		      void *context)
{
	struct listener_ctx *ctx = context;
	smtp_server_accept(ctx->mta->server, ctx->service, fd, peer, peerlen);
}

static void listen_service(struct mta *mta, enum smtp_service service,
			   const struct mt_hostport *hp, const char *key)
{
	if (hp->host == NULL)
		return;
	if (service == SMTP_SERVICE_SUBMISSIONS && mta->tls_server == NULL)
		mt_fatal("%s: [mta] %s needs a certificate ([tls] cert_file)",
			 mta->config_path, key);
	listener_ctxs[service] = (struct listener_ctx){ mta, service };
	(void)mt_listener_add_setting(mta->loop, key, hp, 0, accept_cb,
				      &listener_ctxs[service]);
}

/* Drain, reload, stats */

void mta_drain_check(struct mta *mta)
{
	if (!mta->draining || mta->server == NULL || mta->delivery == NULL)
		return;
	if (smtp_server_count(mta->server) == 0 && delivery_idle(mta->delivery))
		mt_loop_drain_done(mta->loop);
}

static void drain_cb(void *context)
{
	struct mta *mta = context;
	mta->draining = true;
	mt_notify_stopping();
	mt_info("draining: sessions=%u", smtp_server_count(mta->server));
	smtp_server_drain(mta->server);
	delivery_drain(mta->delivery);
	mta_drain_check(mta);
}

static bool same_hostport(const struct mt_hostport *a, const struct mt_hostport *b)
{
	if (a->host == NULL || b->host == NULL)
		return a->host == b->host;
	return a->port == b->port && strcmp(a->host, b->host) == 0;
}

static void reload_cb(void *context)
{
	struct mta *mta = context;
	const char *error;
	mt_notify_reloading();
	struct mt_config *config = load_config(mta->config_path);
	if (config == NULL) {
		mt_error("reload: %s has errors; keeping the running config",
			 mta->config_path);
		mt_notify_ready();
		return;
	}
	const struct mt_mta_settings *next = mt_config_get(config, "mta", NULL);
	if (!same_hostport(&next->smtp_listen, &mta->set->smtp_listen) ||
	    !same_hostport(&next->submission_listen, &mta->set->submission_listen) ||
	    !same_hostport(&next->submissions_listen, &mta->set->submissions_listen) ||
	    strcmp(next->queue_dir, mta->set->queue_dir) != 0)
		mt_warning("reload: listener and queue_dir changes need a restart");
	apply_config(mta, config);
	queue_set_commit_delay(mta->queue, (unsigned int)mta->set->commit_delay * 1000u);
	if (!load_tls(mta, &error))
		mt_error("reload: TLS: %s; keeping the previous certificate", error);
	delivery_reload(mta->delivery);
	mt_info("reload: done (config %s)", mta->config_path);
	mt_notify_ready();
}

static void stats_cb(void *context)
{
	struct mta *mta = context;
	struct queue_stats qs;
	queue_get_stats(mta->queue, &qs);
	mt_info("stats: sessions=%u queue=%u submitted=%llu flushes=%llu "
		"flushed_jobs=%llu max_batch=%llu pending_writes=%u",
		smtp_server_count(mta->server), qs.messages,
		(unsigned long long)qs.submitted, (unsigned long long)qs.flushes,
		(unsigned long long)qs.flushed_jobs,
		(unsigned long long)qs.max_batch, qs.pending_writes);
	delivery_log_stats(mta->delivery);
	mt_dirsvc_log_stats(mta->dirsvc);
	smtp_server_sweep(mta->server);
}

/* Start-up and shutdown */

static void start(struct mta *mta)
{
	const char *error;
	if ((mta->loop = mt_loop_new(&error)) == NULL)
		mt_fatal("%s", error);
	if (!load_tls(mta, &error))
		mt_fatal("%s: [tls]: %s", mta->config_path, error);
	listen_service(mta, SMTP_SERVICE_SMTP, &mta->set->smtp_listen, "smtp_listen");
	listen_service(mta, SMTP_SERVICE_SUBMISSION, &mta->set->submission_listen,
		       "submission_listen");
	listen_service(mta, SMTP_SERVICE_SUBMISSIONS, &mta->set->submissions_listen,
		       "submissions_listen");
	if (!mt_privdrop(mta->global->user, mta->global->group, &error))
		mt_fatal("privilege drop: %s", error);
	if ((mta->queue = queue_open(mta->set->queue_dir, mta->loop, &error)) == NULL)
		mt_fatal("%s", error);
	queue_set_commit_delay(mta->queue, (unsigned int)mta->set->commit_delay * 1000u);
	const struct mt_directory_settings *dir =
		mt_config_get(mta->config, "directory", NULL);
	if ((mta->dirsvc = mt_dirsvc_new(dir, mta->config, &error)) == NULL)
		mt_fatal("%s", error);
	mta->dir = mt_dirsvc_client_new(mta->dirsvc, mta->loop);
	mta->server = smtp_server_new(mta);
	if ((mta->delivery = delivery_new(mta, &error)) == NULL)
		mt_fatal("delivery: %s", error);
	if ((mta->admin = mta_admin_new(mta, &error)) == NULL)
		mt_fatal("admin socket: %s", error);
	mt_loop_set_drain(mta->loop, (unsigned int)mta->global->drain_timeout,
			  drain_cb, mta);
	if (!mt_loop_handle_signals(mta->loop, reload_cb, mta, &error))
		mt_fatal("%s", error);
}

static void stop(struct mta *mta)
{
	mta_admin_free(&mta->admin);
	smtp_server_free(&mta->server);
	delivery_free(&mta->delivery);
	/* Runs the loop once more for the last completions. */
	queue_close(&mta->queue);
	mt_dirsvc_client_free(&mta->dir);
	mt_dirsvc_free(&mta->dirsvc);
	mt_tls_free(&mta->tls_server);
	mt_tls_free(&mta->tls_client);
	mta_policy_free(&mta->policy);
	mt_loop_free(&mta->loop);
	mt_config_free(&mta->config);
	free(mta->hostname);
}

int main(int argc, char **argv)
{
	struct mta mta = { .config_path = MT_DEFAULT_CONFIG_FILE };
	struct mt_daemon_args args;
	int status = mt_daemon_args_parse(argc, argv, MTA_NAME, false, &args);
	if (status >= 0)
		return status;
	mta.config_path = args.config_path;
	mt_log_init(MTA_NAME, args.foreground ? MT_LOG_TARGET_STDERR : MT_LOG_TARGET_AUTO);
	struct mt_config *config = load_config(mta.config_path);
	if (config == NULL)
		mt_fatal("%s: not started (config errors above)", mta.config_path);
	apply_config(&mta, config);

	start(&mta);
	struct mt_timer *watchdog = mt_notify_watchdog_start(mta.loop);
	struct mt_timer *stats = mt_timer_add(mta.loop, STATS_INTERVAL_MSECS, true,
					      stats_cb, &mta);
	queue_announce_all(mta.queue);
	mt_info("started hostname=%s queue=%u", mta.hostname, queue_count(mta.queue));
	mt_notify_status("accepting mail; %u queued", queue_count(mta.queue));
	mt_notify_ready();

	int ret = mt_loop_run(mta.loop);
	mt_info("stopping");
	mt_timer_free(&stats);
	mt_timer_free(&watchdog);
	stop(&mta);
	mt_info("stopped");
	return ret == 0 ? 0 : 1;
}
