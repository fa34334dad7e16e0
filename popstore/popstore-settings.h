/* popstore-settings.h — the [popstore] family: [popstore] holds values
 * shared by every shard, [popstore.NAME] one shard's own (NAME as in
 * [shards] and the users' mailHost). */
#ifndef MT_POPSTORE_SETTINGS_H
#define MT_POPSTORE_SETTINGS_H

#include "config.h"

struct mt_popstore_settings {
	char *shard;
	char *db_home;
	uint64_t db_cache_size;
	struct mt_hostport lmtp_listen;
	struct mt_hostport pop3_listen;
	struct mt_hostport pop3s_listen;
	uint64_t max_sessions;
	uint64_t max_message_size;
	uint64_t default_quota;
	bool quota_temporary;
	uint64_t idle_timeout;
	struct mt_strlist proxy_addresses;
	struct mt_strlist lmtp_clients;
	char *proxy_user;
	char *proxy_password_file;
};

#endif
