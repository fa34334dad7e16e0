/* dirsvc-settings.h — the [directory] section: how every daemon reaches the
 * LDAP directory (libdirsvc). */
#ifndef MT_DIRSVC_SETTINGS_H
#define MT_DIRSVC_SETTINGS_H

#include "config.h"

enum mt_auth_method { MT_AUTH_BIND, MT_AUTH_HASH };

struct mt_directory_settings {
	struct mt_strlist uris;
	char *base_dn;
	char *bind_dn;
	char *bind_password_file;
	uint64_t timeout;		/* ms */
	uint64_t pool_size;
	uint64_t cache_ttl;		/* ms */
	uint64_t negative_cache_ttl;	/* ms */
	uint64_t cache_entries;
	unsigned int auth_method;	/* enum mt_auth_method */
	/* Read by mailtierctl only (provisioning). */
	char *admin_dn;
	char *admin_password_file;
	char *local_slapd_dir;
};

#endif
