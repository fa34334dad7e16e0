/* popstore-settings.c — the [popstore] family table (see config.h). */
#include "popstore-settings.h"
#include "mailtier-settings.h"

#include <stddef.h>
#include <string.h>

#define S(field) offsetof(struct mt_popstore_settings, field)

static const struct mt_setting_def popstore_settings[] = {
	{ .name = "shard", .type = MT_SETTING_STRING, .offset = S(shard),
	  .doc = "Shard name (default: the NAME of [popstore.NAME])." },
	{ .name = "db_home", .type = MT_SETTING_STRING, .offset = S(db_home),
	  .flags = MT_SETTING_REQUIRED,
	  .doc = "Berkeley DB environment directory of this shard." },
	{ .name = "db_cache_size", .type = MT_SETTING_SIZE, .offset = S(db_cache_size),
	  .default_value = "64M", .min = 1u << 20,
	  .doc = "Berkeley DB cache (the seed's store.dbcachesize)." },
	{ .name = "lmtp_listen", .type = MT_SETTING_HOSTPORT, .offset = S(lmtp_listen),
	  .flags = MT_SETTING_REQUIRED, .doc = "LMTP listener for the MTAs." },
	{ .name = "pop3_listen", .type = MT_SETTING_HOSTPORT, .offset = S(pop3_listen),
	  .flags = MT_SETTING_REQUIRED, .doc = "POP3 listener (STLS)." },
	{ .name = "pop3s_listen", .type = MT_SETTING_HOSTPORT, .offset = S(pop3s_listen),
	  .doc = "POP3 over implicit TLS; empty: off." },
	{ .name = "max_sessions", .type = MT_SETTING_UINT, .offset = S(max_sessions),
	  .default_value = "1000", .min = 1, .doc = "Most concurrent LMTP + POP3 sessions." },
	{ .name = "max_message_size", .type = MT_SETTING_SIZE,
	  .offset = S(max_message_size), .default_value = "50M", .min = 1024,
	  .doc = "Largest message accepted over LMTP (552 5.3.4 beyond)." },
	{ .name = "default_quota", .type = MT_SETTING_SIZE, .offset = S(default_quota),
	  .default_value = "0", .doc = "Mailbox quota when the directory sets none (0: unlimited)." },
	{ .name = "quota_temporary", .type = MT_SETTING_BOOL,
	  .offset = S(quota_temporary), .default_value = "no",
	  .doc = "Over quota answers 452 4.2.2 (retry) instead of 552 5.2.2." },
	{ .name = "idle_timeout", .type = MT_SETTING_DURATION, .offset = S(idle_timeout),
	  .default_value = "10m", .min = 1000, .doc = "Idle time allowed in a session." },
	{ .name = "proxy_addresses", .type = MT_SETTING_LIST,
	  .offset = S(proxy_addresses), .default_value = "127.0.0.1 ::1",
	  .doc = "Client addresses (CIDR) allowed to log in with the proxy credential." },
	{ .name = "lmtp_clients", .type = MT_SETTING_LIST, .offset = S(lmtp_clients),
	  .default_value = "127.0.0.1 ::1",
	  .doc = "Client addresses (CIDR) allowed to deliver over LMTP." },
	{ .name = "proxy_user", .type = MT_SETTING_STRING, .offset = S(proxy_user),
	  .default_value = "mmp", .doc = "Proxy credential name the MMP logs in with." },
	{ .name = "proxy_password_file", .type = MT_SETTING_STRING,
	  .offset = S(proxy_password_file),
	  .doc = "File holding the proxy credential's password (empty: proxy logins refused)." },
	MT_SETTINGS_END,
};

static void popstore_check(struct mt_config_checker *checker,
			   const struct mt_config *config,
			   const struct mt_section *section)
{
	const struct mt_popstore_settings *set = section->settings;
	const char *name = set->shard[0] != '\0' ? set->shard : section->instance;
	if (mt_config_map_get(config, "shards", name) == NULL)
		mt_config_check_error(checker, section,
			set->shard[0] != '\0' ? "shard" : NULL,
			"shard '%s' is not listed in [shards]", name);
}

const struct mt_section_def mt_popstore_section = {
	.name = "popstore", .kind = MT_SECTION_FAMILY,
	.readers = "mailtier-popstore, mailtierctl",
	.doc = "Message store shards: [popstore] for shared values, [popstore.NAME] per shard.",
	.struct_size = sizeof(struct mt_popstore_settings),
	.settings = popstore_settings, .check = popstore_check,
};
