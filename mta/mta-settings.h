/* mta-settings.h — the [mta] section: mailtier-mta's listeners, policy,
 * queue and delivery tuning. */
#ifndef MT_MTA_SETTINGS_H
#define MT_MTA_SETTINGS_H

#include "config.h"
#include "cidr.h"

#include <stdbool.h>

enum mt_bare_newline_policy { MT_BARE_NEWLINE_REJECT, MT_BARE_NEWLINE_NORMALIZE };

struct mt_mta_settings {
	struct mt_hostport smtp_listen;
	struct mt_hostport submission_listen;
	struct mt_hostport submissions_listen;
	char *hostname;
	struct mt_strlist local_domains;
	struct mt_strlist mynetworks;
	struct mt_hostport relayhost;
	struct mt_strlist transport_map;
	uint64_t max_message_size;
	uint64_t max_recipients;
	uint64_t max_sessions;
	uint64_t max_sessions_per_client;
	uint64_t delivery_concurrency;
	uint64_t remote_concurrency;
	struct mt_duration_list retry_schedule;
	uint64_t max_queue_lifetime;
	char *queue_dir;
	unsigned int bare_newline_policy;
	bool require_tls_for_auth;
	uint64_t max_hops;
	uint64_t command_timeout;
	uint64_t data_timeout;
	uint64_t max_errors;
	/* Added with the MTA itself. */
	uint64_t max_junk_commands;
	uint64_t max_line_length;
	uint64_t max_session_time;
	uint64_t connect_timeout;
	uint64_t client_timeout;
	uint64_t connection_cache_time;
	struct mt_strlist dns_servers;
	uint64_t commit_delay;
	/* Failed AUTH penalty per client address (smtp-auth.c). */
	uint64_t auth_fail_delay;	/* ms, the first failure; 0: off */
	uint64_t auth_fail_window;	/* ms */
	/* Unknown recipients per client address (smtp-commands.c). */
	uint64_t rcpt_fail_delay;	/* ms, the first; 0: off */
	uint64_t rcpt_fail_limit;	/* then 450 4.7.1; 0: no limit */
	uint64_t rcpt_fail_window;	/* ms */
};

#endif
