/* daemon.c — the daemon skeleton (see daemon.h for the order of start-up,
 * reload and stop, and the hooks a daemon supplies).
 *
 * Trust boundary: the operator's command line and config file.
 * No protocol RFC; sd_notify(3) for systemd (Type=notify, WatchdogSec). */
#include "daemon.h"
#include "alloc.h"
#include "daemon-args.h"
#include "log.h"
#include "metrics.h"
#include "metrics-http.h"
#include "privdrop.h"
#include "sdnotify.h"
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Metrics every daemon exports */

/* TLS handshakes, from OpenSSL's counters of the daemon's contexts. */
struct tls_series {
	struct mt_daemon *d;
	struct mt_series *started[2], *completed[2];	/* [server, client] */
};

static void tls_collect(void *context)
{
	struct tls_series *ts = context;
	struct mt_tls *tls[2] = { ts->d->tls_server, ts->d->tls_client };
	for (unsigned int i = 0; i < 2; i++) {
		if (tls[i] == NULL)
			continue;
		struct mt_tls_counts c;
		mt_tls_get_counts(tls[i], &c);
		mt_series_store(ts->started[i], c.started);
		mt_series_store(ts->completed[i], c.completed);
	}
}

static void tls_metrics_init(struct mt_daemon *d, struct tls_series *ts)
{
	struct mt_metric_family *started = mt_metrics_counter(d->metrics,
		"mailtier_tls_handshakes_started_total",
		"TLS handshakes begun, by side (server: with clients, implicit TLS and "
		"STARTTLS; client: to other servers).", "side");
	struct mt_metric_family *completed = mt_metrics_counter(d->metrics,
		"mailtier_tls_handshakes_completed_total",
		"TLS handshakes completed, by side; started minus completed: failed, or "
		"still in progress.", "side");
	static const char *const sides[2] = { "server", "client" };
	ts->d = d;
	for (unsigned int i = 0; i < 2; i++) {
		ts->started[i] = mt_metric_series1(started, sides[i]);
		ts->completed[i] = mt_metric_series1(completed, sides[i]);
	}
	mt_metrics_add_collector(d->metrics, tls_collect, ts);
}

/* Config */

/* Load the config; on errors log one "FILE:LINE: message" line each (and
 * also print them when the log goes to syslog only: an operator running
 * the daemon by hand sees why it did not start) and return NULL. */
static struct mt_config *load_config(const char *path)
{
	char *errors = NULL;
	struct mt_config *config = mt_mailtier_config_load(path, &errors);
	if (config != NULL)
		return config;
	if (!mt_log_to_stderr())
		fputs(errors, stderr);
	for (char *line = strtok(errors, "\n"); line != NULL; line = strtok(NULL, "\n"))
		mt_error("%s", line);
	free(errors);
	return NULL;
}

static void use_config(struct mt_daemon *d, struct mt_config *config)
{
	d->config = config;
	d->global = mt_config_get(config, "global", NULL);
	mt_log_set_min_level((enum mt_log_level)d->global->log_level);
}

/* TLS */

/* (Re)load the contexts from d->config's [tls]: the server one when a
 * certificate is configured, the client one when the daemon asks. */
static bool load_tls(struct mt_daemon *d, const char **error_r)
{
	const struct mt_tls_config *tc = mt_config_get(d->config, "tls", NULL);
	struct mt_tls_settings ts = {
		.cert_file = tc->cert_file, .key_file = tc->key_file,
		.ciphers = tc->ciphers, .ciphersuites = tc->ciphersuites,
		.min_version = tc->min_version == MT_TLS_V1_3 ? TLS1_3_VERSION :
			TLS1_2_VERSION,
	};
	if (tc->cert_file[0] != '\0') {
		if (d->tls_server == NULL)
			d->tls_server = mt_tls_new(MT_TLS_SERVER);
		if (!mt_tls_load(d->tls_server, &ts, error_r))
			return false;
	}
	if (!d->def->tls_client)
		return true;
	/* Outgoing: opportunistic (RFC 7435) unless a CA file is given. */
	struct mt_tls_settings cs = ts;
	cs.cert_file = cs.key_file = NULL;
	cs.ca_file = tc->ca_file;
	if (d->tls_client == NULL)
		d->tls_client = mt_tls_new(MT_TLS_CLIENT);
	return mt_tls_load(d->tls_client, &cs, error_r);
}

/* Signals */

static void drain_cb(void *context)
{
	struct mt_daemon *d = context;
	mt_notify_stopping();
	d->def->drain(d);
}

static void reload_cb(void *context)
{
	struct mt_daemon *d = context;
	const char *error;
	mt_notify_reloading();
	if (d->def->reload_config != NULL) {
		struct mt_config *next = load_config(d->config_path);
		if (next == NULL) {
			mt_error("reload: %s has errors; keeping the running config",
				 d->config_path);
			mt_notify_ready();
			return;
		}
		struct mt_config *old = d->config;
		d->def->reload_config(d, next);
		use_config(d, next);
		mt_config_free(&old);
	}
	if (!load_tls(d, &error))
		mt_error("reload: TLS kept as it was: %s", error);
	else if (d->tls_server != NULL)
		mt_info("reload: TLS certificate and key reloaded");
	if (d->def->reload != NULL)
		d->def->reload(d);
	mt_info("reload: done (config %s)", d->config_path);
	mt_notify_ready();
}

static void stats_cb(void *context)
{
	struct mt_daemon *d = context;
	d->def->stats(d);
}

/* Public */

struct mt_listener *mt_daemon_listen(struct mt_daemon *d, const char *key,
				     const struct mt_hostport *hp,
				     mt_accept_cb_t *cb, void *context)
{
	return mt_listener_add_setting(d->loop, key, hp, 0, cb, context);
}

char *mt_daemon_hostname(const char *configured)
{
	if (configured[0] != '\0')
		return mt_xstrdup(configured);
	char name[256];
	if (gethostname(name, sizeof(name)) < 0 || name[0] == '\0')
		snprintf(name, sizeof(name), "localhost");
	name[sizeof(name) - 1] = '\0';
	return mt_xstrdup(name);
}

int mt_daemon_main(const struct mt_daemon_def *def, void *context,
		   int argc, char **argv)
{
	struct mt_daemon_args args;
	int status = mt_daemon_args_parse(argc, argv, def->name, def->takes_shard, &args);
	if (status >= 0)
		return status;
	struct mt_daemon d = {
		.def = def, .context = context,
		.config_path = args.config_path, .shard = args.shard,
		.create_group = args.create_group,
	};
	const char *error = NULL;

	mt_log_init(def->name, args.foreground ? MT_LOG_TARGET_STDERR : MT_LOG_TARGET_AUTO);
	d.metrics = mt_metrics_new();
	mt_metrics_add_process(d.metrics);
	mt_series_set(mt_metric_series2(mt_metrics_gauge(d.metrics, "mailtier_build_info",
		"The daemon and its version (always 1).", "daemon,version"),
		def->name, PACKAGE_VERSION), 1);
	struct mt_config *config = load_config(d.config_path);
	if (config == NULL)
		mt_fatal("%s: not started (config errors above)", d.config_path);
	use_config(&d, config);
	if (!def->configure(&d, &error))
		mt_fatal("%s", error);
	if (!load_tls(&d, &error))
		mt_fatal("%s: [tls]: %s", d.config_path, error);
	struct tls_series tls_series;
	tls_metrics_init(&d, &tls_series);

	if ((d.loop = mt_loop_new(&error)) == NULL)
		mt_fatal("%s", error);
	def->listen(&d);
	if (d.metrics_listen != NULL)
		d.metrics_http = mt_metrics_http_start(d.loop, "metrics_listen",
						       d.metrics_listen, d.metrics);
	d.metrics_listen = NULL;	/* read once: a reload frees the config */
	if (!mt_privdrop(d.global->user, d.global->group, &error))
		mt_fatal("privilege drop: %s", error);
	/* Before start(): a signal that arrives while it runs (a long
	 * recovery) waits for the loop instead of killing the daemon. */
	mt_loop_set_drain(d.loop, (unsigned int)d.global->drain_timeout, drain_cb, &d);
	if (!mt_loop_handle_signals(d.loop, reload_cb, &d, &error))
		mt_fatal("%s", error);
	def->start(&d);
	struct mt_timer *watchdog = mt_notify_watchdog_start(d.loop);
	struct mt_timer *stats = def->stats == NULL || d.stats_interval_msecs == 0 ? NULL :
		mt_timer_add(d.loop, d.stats_interval_msecs, true, stats_cb, &d);
	mt_notify_ready();

	status = mt_loop_run(d.loop) == 0 ? d.exit_status : 1;
	mt_info("stopping");
	mt_timer_free(&stats);
	mt_timer_free(&watchdog);
	/* Before stop(): no scrape may read the state it frees. */
	mt_metrics_http_free(&d.metrics_http);
	def->stop(&d, status);
	mt_metrics_remove_collector(d.metrics, tls_collect, &tls_series);
	mt_tls_free(&d.tls_server);
	mt_tls_free(&d.tls_client);
	mt_loop_free(&d.loop);
	mt_config_free(&d.config);
	mt_metrics_free(&d.metrics);
	mt_info("exit status=%d", status);
	return status;
}
