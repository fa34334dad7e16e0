/* mmp-settings.h — the [mmp] section: the POP3 and IMAP proxy's listeners, limits and
 * login policy.
 * Trust boundary: the operator's config file, checked by the table. */
#ifndef MT_MMP_SETTINGS_H
#define MT_MMP_SETTINGS_H

#include "config.h"

struct mt_mmp_settings {
	struct mt_hostport pop3_listen;
	struct mt_hostport pop3s_listen;
	struct mt_hostport metrics_listen;
	uint64_t threads;
	uint64_t conn_limit;
	uint64_t conn_limit_per_client;
	uint64_t login_timeout;		/* ms */
	uint64_t idle_timeout;		/* ms */
	uint64_t auth_fail_delay;	/* ms */
	uint64_t auth_fail_limit;
	bool allow_plaintext_auth;
	char *proxy_user;
	char *proxy_password_file;
	uint64_t backend_connect_timeout;	/* ms */
	uint64_t shard_retry_interval;		/* ms */
	/* Added with the daemon (all have defaults: older files still load). */
	uint64_t auth_fail_window;	/* ms */
	uint64_t max_errors;
	bool relay_splice;
	uint64_t stats_interval;	/* ms; 0 = only at exit */
	/* IMAP (off unless set). */
	struct mt_hostport imap_listen;
	struct mt_hostport imaps_listen;
	uint64_t imap_idle_timeout;	/* ms */
	/* Metrics: a relayed session this long without a byte is idle. */
	uint64_t idle_session_threshold;	/* ms */
	/* Replicated shards: how long a login looks for a master. */
	uint64_t backend_failover_wait;		/* ms */
};

#endif
