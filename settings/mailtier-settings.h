/* mailtier-settings.h — the sections of mailtier.conf that every tier
 * shares ([global], [tls], [shards]) and the registry of all sections, so
 * each daemon and `mailtierctl config check` load the file through the very
 * same tables (an unknown key is an error everywhere, for everyone).
 * Each daemon's own table lives in its directory (*-settings.c). */
#ifndef MT_MAILTIER_SETTINGS_H
#define MT_MAILTIER_SETTINGS_H

#include "config.h"

#define MT_DEFAULT_CONFIG_FILE SYSCONFDIR "/mailtier/mailtier.conf"

struct mt_global_settings {
	char *user;		/* drop privileges to this user after binding */
	char *group;
	unsigned int log_level;	/* index into mt_log_level_names */
	uint64_t drain_timeout;	/* ms: SIGTERM drain bound */
};

enum mt_tls_min_version { MT_TLS_V1_2, MT_TLS_V1_3 };

struct mt_tls_config {
	char *cert_file;
	char *key_file;
	char *ca_file;
	char *ciphers;
	char *ciphersuites;
	unsigned int min_version;	/* enum mt_tls_min_version */
};

/* One site of a shard: LMTP_ADDRESS, POP3_ADDRESS[, IMAP_ADDRESS]
 * (imap.host NULL when the site has none). */
struct mt_shard_site {
	struct mt_hostport lmtp;
	struct mt_hostport pop3;
	struct mt_hostport imap;
};

/* The most sites a shard may list (a replication group is 1 or 3; a few
 * more leave room for a site being added or replaced). */
#define MT_SHARD_SITES_MAX 7

/* One [shards] entry: NAME = SITE | SITE | ..., each SITE
 * LMTP_ADDRESS, POP3_ADDRESS[, IMAP_ADDRESS]. One site is a shard on one
 * host; several are the sites of its replication group, in the order
 * tried first (the MTA and the MMP then follow whichever is master).
 * Either every site has an IMAP address or none has. */
struct mt_shard_addresses {
	unsigned int n_sites;		/* 1..MT_SHARD_SITES_MAX */
	struct mt_shard_site *sites;
};

extern const struct mt_section_def mt_global_section;
extern const struct mt_section_def mt_tls_section;
extern const struct mt_section_def mt_shards_section;

/* Defined in each tier's *-settings.c. */
extern const struct mt_section_def mt_directory_section;
extern const struct mt_section_def mt_mta_section;
extern const struct mt_section_def mt_mmp_section;
extern const struct mt_section_def mt_popstore_section;
extern const struct mt_section_def mt_loadgen_section;
extern const struct mt_section_def mt_milter_section;

/* Every section of mailtier.conf, NULL-terminated. */
extern const struct mt_section_def *const mt_mailtier_sections[];

/* Load FILE with all sections; NULL and *errors_r on any problem. */
struct mt_config *mt_mailtier_config_load(const char *path, char **errors_r);

#endif
