/* daemon.h — the daemon skeleton: one `main` for every mailtier daemon,
 * driven by a definition, as Postfix's single_server_main is. A daemon
 * (mailtier-mta, mailtier-mmp, mailtier-popstore) is a struct mt_daemon_def
 * of hooks and its own state; the skeleton does everything that is the same
 * for all of them, in this order:
 *
 *	the command line (daemon-args: -c, -f/-F, -s, -h)
 *	logging (stderr with -f, else the journal under systemd, else syslog)
 *	the config, with one "FILE:LINE: message" per problem, and the log level
 *	configure()   the daemon picks its sections, checks them, reads secrets
 *	[tls]         the server context (and a client one if the daemon asks)
 *	the loop
 *	listen()      listeners from mt_hostport settings (mt_daemon_listen)
 *	metrics       the scrape endpoint on d->metrics_listen, if configure()
 *	              pointed it at a set metrics_listen (lib/metrics-http)
 *	privilege drop ([global] user/group)
 *	signals: SIGTERM/SIGINT drain ([global] drain_timeout) -> drain();
 *	         SIGHUP reload -> reload_config() (if the daemon re-reads its
 *	         config), the TLS certificate and key again, then reload();
 *	         handled once the loop runs (one during start() waits)
 *	start()       state that the unprivileged user owns: stores, queues,
 *	              the directory, worker threads, the daemon's own timers
 *	the sd-notify watchdog, the stats timer -> stats(), READY=1
 *	the loop runs
 *	stop(status)  the daemon frees its state (the loop still exists)
 *	the skeleton frees TLS, the loop and the config
 *
 * Every message the skeleton logs is the same in every daemon: "reload:
 * TLS certificate and key reloaded", "reload: done", "exit status=N".
 *
 * Trust boundary: the command line and the config file are the operator's.
 * Nothing here reads the network. No protocol RFC; sd_notify(3). */
#ifndef MT_DAEMON_DAEMON_H
#define MT_DAEMON_DAEMON_H

#include "config.h"
#include "loop.h"
#include "metrics.h"
#include "mailtier-settings.h"
#include "tls.h"

#include <stdbool.h>

struct mt_daemon;

struct mt_daemon_def {
	const char *name;		/* "mailtier-mta": log ident and usage */
	bool takes_shard;		/* accepts -s SHARD */
	bool tls_client;		/* also build a client context from [tls] */

	/* The config is loaded: select and check the daemon's sections,
	 * read secret files, set d->stats_interval_msecs. false with
	 * *error_r stops start-up (logged as is). */
	bool (*configure)(struct mt_daemon *d, const char **error_r);
	/* Before the privilege drop: add the listeners (mt_daemon_listen). */
	void (*listen)(struct mt_daemon *d);
	/* After the drop: open what the unprivileged user owns, start
	 * threads and timers, log the "started" line. */
	void (*start)(struct mt_daemon *d);
	/* SIGHUP with a config that loaded cleanly: adopt next (the skeleton
	 * then frees the old one). NULL: the daemon does not re-read its
	 * config; only TLS and reload() are reloaded. */
	void (*reload_config)(struct mt_daemon *d, struct mt_config *next);
	/* SIGHUP, after TLS: secrets, the daemon's own reloadable parts. */
	void (*reload)(struct mt_daemon *d);
	/* SIGTERM: listeners are closed; finish sessions, then call
	 * mt_loop_drain_done(d->loop) (the drain timer bounds it). */
	void (*drain)(struct mt_daemon *d);
	/* Every d->stats_interval_msecs (0: never): the counters line. */
	void (*stats)(struct mt_daemon *d);
	/* The loop has returned (status 0, 1 or the daemon's exit_status): free the daemon's state.
	 * The loop, config and TLS contexts are still there. */
	void (*stop)(struct mt_daemon *d, int status);
};

struct mt_daemon {
	const struct mt_daemon_def *def;
	void *context;			/* the daemon's own state */
	const char *config_path;
	const char *shard;		/* -s, or NULL */
	bool create_group;		/* --create-group */
	/* The exit status when the loop ends normally (0; a daemon sets
	 * another before mt_loop_exit(), e.g. 75 to be restarted). */
	int exit_status;
	struct mt_config *config;
	const struct mt_global_settings *global;
	struct mt_loop *loop;
	/* From [tls]: NULL without cert_file (server) or unless the def
	 * asks (client). Reloaded in place on SIGHUP. */
	struct mt_tls *tls_server;
	struct mt_tls *tls_client;
	unsigned int stats_interval_msecs;
	/* The process's metrics (with process_* and mailtier_build_info),
	 * there from before configure(): the daemon registers its own. */
	struct mt_metrics *metrics;
	/* Set by configure() to the daemon's metrics_listen setting; read
	 * once after listen() (a change needs a restart, as listeners do). */
	const struct mt_hostport *metrics_listen;
	struct mt_metrics_http *metrics_http;
};

/* The daemon's whole main: returns the exit status. */
int mt_daemon_main(const struct mt_daemon_def *def, void *context,
		   int argc, char **argv);

/* Listen on the setting `key` (no-op when unset); fatal if it cannot. */
struct mt_listener *mt_daemon_listen(struct mt_daemon *d, const char *key,
				     const struct mt_hostport *hp,
				     mt_accept_cb_t *cb, void *context);

/* The name a daemon greets with: `configured` if set, else gethostname(),
 * else "localhost". The caller frees it. */
char *mt_daemon_hostname(const char *configured);

#endif
