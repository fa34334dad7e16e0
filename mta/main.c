/* main.c — mailtier-mta as a daemon skeleton definition (daemon/daemon.h
 * does the command line, config, TLS, privilege drop, signals, sd-notify):
 * listeners for smtp/submission/submissions, the queue with recovery, the
 * directory, delivery, the admin socket; SIGHUP re-reads the config (the
 * policy, hostname, commit delay, delivery settings; listeners and
 * queue_dir need a restart); the SIGTERM drain lets sessions finish their
 * transaction and deliveries in flight finish, then the queue is
 * checkpointed and closed.
 *
 *	mailtier-mta [-c FILE] [-f|-F]
 *
 * Trust boundary: the config file is the administrator's; everything the
 * network sends is handled by the session and delivery code.
 * RFCs: 5321 (the daemon's protocol), 6409 (submission on 587), 8314
 * (implicit TLS on 465). */
#include "mta.h"
#include "admin.h"
#include "alloc.h"
#include "daemon.h"
#include "delivery.h"
#include "dirsvc.h"
#include "log.h"
#include "loop.h"
#include "mta-metrics.h"
#include "mta-policy.h"
#include "queue.h"
#include "sdnotify.h"
#include "smtp-milter.h"
#include "smtp-session.h"

#include <stdlib.h>
#include <string.h>

#define STATS_INTERVAL_MSECS 60000u

struct listener_ctx {
	struct mta *mta;
	enum smtp_service service;
};

static struct listener_ctx listener_ctxs[SMTP_SERVICE_COUNT];

/* Config */

/* Use config from now on (start-up, or a reload that loaded cleanly). */
static void use_config(struct mta *mta, struct mt_config *config)
{
	mta->config = config;
	mta->set = mt_config_get(config, "mta", NULL);
	mta->global = mt_config_get(config, "global", NULL);
	mta_policy_free(&mta->policy);
	mta->policy = mta_policy_new(mta->set);
	free(mta->hostname);
	mta->hostname = mt_daemon_hostname(mta->set->hostname);
}

static bool configure(struct mt_daemon *d, const char **error_r)
{
	struct mta *mta = d->context;
	(void)error_r;
	mta->config_path = d->config_path;
	use_config(mta, d->config);
	if ((mta->milters = mta_milters_new(d->config, mta->set, error_r)) == NULL)
		return false;
	d->stats_interval_msecs = STATS_INTERVAL_MSECS;
	d->metrics_listen = &mta->set->metrics_listen;
	return true;
}

/* Listeners */

static void accept_cb(int fd, const struct sockaddr *peer, socklen_t peerlen,
		      void *context)
{
	struct listener_ctx *ctx = context;
	smtp_server_accept(ctx->mta->server, ctx->service, fd, peer, peerlen);
}

static void listen_service(struct mt_daemon *d, enum smtp_service service,
			   const struct mt_hostport *hp, const char *key)
{
	struct mta *mta = d->context;
	if (hp->host == NULL)
		return;
	if (service == SMTP_SERVICE_SUBMISSIONS && d->tls_server == NULL)
		mt_fatal("%s: [mta] %s needs a certificate ([tls] cert_file)",
			 mta->config_path, key);
	listener_ctxs[service] = (struct listener_ctx){ mta, service };
	(void)mt_daemon_listen(d, key, hp, accept_cb, &listener_ctxs[service]);
}

static void listen_all(struct mt_daemon *d)
{
	struct mta *mta = d->context;
	mta->loop = d->loop;
	mta->tls_server = d->tls_server;
	mta->tls_client = d->tls_client;
	listen_service(d, SMTP_SERVICE_SMTP, &mta->set->smtp_listen, "smtp_listen");
	listen_service(d, SMTP_SERVICE_SUBMISSION, &mta->set->submission_listen,
		       "submission_listen");
	listen_service(d, SMTP_SERVICE_SUBMISSIONS, &mta->set->submissions_listen,
		       "submissions_listen");
}

/* Start-up, drain, reload, stats, stop */

static void start(struct mt_daemon *d)
{
	struct mta *mta = d->context;
	const char *error;
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
	mta_metrics_init(mta, d->metrics);
	mt_dirsvc_metrics(mta->dirsvc, d->metrics);
	queue_announce_all(mta->queue);
	mt_info("started hostname=%s queue=%u", mta->hostname, queue_count(mta->queue));
	mt_notify_status("accepting mail; %u queued", queue_count(mta->queue));
}

static void drain(struct mt_daemon *d)
{
	struct mta *mta = d->context;
	mta->draining = true;
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

static void reload_config(struct mt_daemon *d, struct mt_config *next_config)
{
	struct mta *mta = d->context;
	const struct mt_mta_settings *next = mt_config_get(next_config, "mta", NULL);
	if (!same_hostport(&next->smtp_listen, &mta->set->smtp_listen) ||
	    !same_hostport(&next->submission_listen, &mta->set->submission_listen) ||
	    !same_hostport(&next->submissions_listen, &mta->set->submissions_listen) ||
	    strcmp(next->queue_dir, mta->set->queue_dir) != 0)
		mt_warning("reload: listener and queue_dir changes need a restart");
	const char *error;
	struct mta_milters *milters = mta_milters_new(next_config, next, &error);
	if (milters == NULL)
		mt_error("reload: mail filters: %s (the sessions to come keep the "
			 "filters they had)", error);
	else {
		mta_milters_unref(&mta->milters);
		mta->milters = milters;
	}
	use_config(mta, next_config);
}

static void reload(struct mt_daemon *d)
{
	struct mta *mta = d->context;
	/* A certificate configured only now: new sessions offer STARTTLS. */
	mta->tls_server = d->tls_server;
	queue_set_commit_delay(mta->queue, (unsigned int)mta->set->commit_delay * 1000u);
	delivery_reload(mta->delivery);
}

static void stats(struct mt_daemon *d)
{
	struct mta *mta = d->context;
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

static void stop(struct mt_daemon *d, int status)
{
	struct mta *mta = d->context;
	(void)status;
	mta_metrics_free(mta);
	mta_admin_free(&mta->admin);
	smtp_server_free(&mta->server);
	delivery_free(&mta->delivery);
	/* Runs the loop once more for the last completions. */
	queue_close(&mta->queue);
	mt_dirsvc_client_free(&mta->dir);
	mt_dirsvc_free(&mta->dirsvc);
	mta_policy_free(&mta->policy);
	mta_milters_unref(&mta->milters);
	free(mta->hostname);
}

static const struct mt_daemon_def mta_daemon = {
	.name = MTA_NAME, .tls_client = true,
	.configure = configure, .listen = listen_all, .start = start,
	.reload_config = reload_config, .reload = reload, .drain = drain,
	.stats = stats, .stop = stop,
};

int main(int argc, char **argv)
{
	static struct mta mta;
	return mt_daemon_main(&mta_daemon, &mta, argc, argv);
}
