/* popstore-settings.h — the [popstore] family: [popstore] holds values
 * shared by every shard, [popstore.NAME] one shard's own (NAME as in
 * [shards] and the users' mailHost). Also the client-address lists
 * (lmtp_clients, proxy_addresses: CIDR), checked at load and matched by
 * the daemon.
 * Trust boundary: operator's config; the address matched against a list is
 * the TCP peer's (not authenticated beyond what TCP gives). */
#ifndef MT_POPSTORE_SETTINGS_H
#define MT_POPSTORE_SETTINGS_H

#include "config.h"
#include "cidr.h"

#include <stdbool.h>
#include <sys/socket.h>

enum mt_popstore_bare_newline { MT_POPSTORE_BARE_REJECT, MT_POPSTORE_BARE_NORMALIZE };

struct mt_popstore_settings {
	char *shard;
	char *db_home;
	uint64_t db_cache_size;
	struct mt_hostport lmtp_listen;
	struct mt_hostport pop3_listen;
	struct mt_hostport pop3s_listen;
	struct mt_hostport metrics_listen;
	uint64_t max_sessions;
	uint64_t max_sessions_per_address, imap_max_user_sessions, max_mailbox_messages;
	uint64_t max_message_size;
	uint64_t default_quota;
	bool quota_temporary;
	uint64_t idle_timeout;
	struct mt_strlist proxy_addresses;
	struct mt_strlist lmtp_clients;
	char *proxy_user;
	char *proxy_password_file;
	/* Added with the daemon (all have defaults: older files still load). */
	bool allow_plaintext_auth;
	uint64_t max_errors;
	uint64_t max_recipients;
	unsigned int bare_newline_policy;	/* enum mt_popstore_bare_newline */
	char *hostname;
	uint64_t stats_interval;
	uint64_t commit_threads;
	uint64_t reader_threads;
	uint64_t purge_delay;		/* milliseconds */
	uint64_t redelivery_window;	/* milliseconds */
	uint64_t auth_fail_delay;	/* ms, the first failed login's; 0: off */
	uint64_t auth_fail_window;	/* ms */
	/* IMAP (all optional: older files still load). */
	struct mt_hostport imap_listen;
	struct mt_hostport imaps_listen;
	uint64_t imap_idle_timeout;	/* ms */
	uint64_t login_timeout;		/* ms: connect to login (POP3, IMAP) */
	uint64_t max_folders;
	uint64_t max_folder_name;	/* octets */
	uint64_t max_folder_depth;
	/* Replication (HA.md; all optional: off when
	 * replication_listen is empty). */
	char *replication_listen;	/* this site, "host:port" */
	struct mt_strlist replication_sites;	/* every site, this one too */
	uint64_t replication_priority;
	uint64_t replication_ack_timeout;	/* ms */
	uint64_t replication_log_retention;	/* ms */
	uint64_t replication_log_retention_size;
};

#endif
