/* mta-settings.h — the [mta] section: mailtier-mta's listeners, policy,
 * queue and delivery tuning. */
#ifndef MT_MTA_SETTINGS_H
#define MT_MTA_SETTINGS_H

#include "config.h"
#include "cidr.h"

#include <stdbool.h>

enum mt_bare_newline_policy { MT_BARE_NEWLINE_REJECT, MT_BARE_NEWLINE_NORMALIZE };
/* Who gets a missing Date:/Message-ID: added (RFC 6409 8.2-8.3). */
enum mt_add_missing_headers {
	MT_ADD_HEADERS_SUBMISSION,		/* 587 and 465 */
	MT_ADD_HEADERS_SUBMISSION_MYNETWORKS,	/* and mynetworks clients on 25 */
	MT_ADD_HEADERS_NEVER,
};

struct mt_mta_settings {
	struct mt_hostport smtp_listen;
	struct mt_hostport submission_listen;
	struct mt_hostport submissions_listen;
	struct mt_hostport metrics_listen;
	char *hostname;
	struct mt_strlist local_domains;
	struct mt_strlist mynetworks;
	char *postmaster;		/* role mailbox; "" = postmaster@first domain */
	char *abuse;			/* role mailbox; "": abuse@ is not a role */
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
	/* Audit of issue #19. */
	bool forbid_unauth_pipelining;	/* content before DATA's 354: 554, close */
	unsigned int add_missing_headers;	/* enum mt_add_missing_headers */
	bool sender_login_check;	/* after AUTH: MAIL FROM must be the login's */
	bool received_auth_user;	/* Received: names the AUTH identity */
	/* Unknown recipients per client address (smtp-commands.c). */
	uint64_t rcpt_fail_delay;	/* ms, the first; 0: off */
	uint64_t rcpt_fail_limit;	/* then 450 4.7.1; 0: no limit */
	uint64_t rcpt_fail_window;	/* ms */
	/* Mail filters (milter-settings.h; smtp-milter.c). */
	struct mt_strlist smtpd_milters;	/* names of [milter.NAME]: port 25 */
	struct mt_strlist submission_milters;	/* 587 and 465 */
	unsigned int milter_default_action;	/* enum mt_milter_action */
	uint64_t milter_connect_timeout;	/* ms */
	uint64_t milter_command_timeout;	/* ms */
	uint64_t milter_content_timeout;	/* ms */
	/* Replicated shards (delivery-failover.c). */
	uint64_t shard_failover_budget;		/* ms; 0: no failover */
};

#endif
