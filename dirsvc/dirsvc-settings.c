/* dirsvc-settings.c — the [directory] section table (see config.h). */
#include "dirsvc-settings.h"
#include "mailtier-settings.h"

#include <stddef.h>
#include <string.h>

#define D(field) offsetof(struct mt_directory_settings, field)
static const char *const auth_methods[] = { "bind", "hash", NULL };

static const struct mt_setting_def directory_settings[] = {
	{ .name = "uris", .type = MT_SETTING_LIST, .offset = D(uris),
	  .default_value = "ldap://127.0.0.1:389/",
	  .doc = "LDAP URIs tried in order (failover): ldap://, ldaps:// or ldapi://." },
	{ .name = "base_dn", .type = MT_SETTING_STRING, .offset = D(base_dn),
	  .flags = MT_SETTING_REQUIRED, .doc = "Search base for users, e.g. ou=people,dc=example,dc=test." },
	{ .name = "bind_dn", .type = MT_SETTING_STRING, .offset = D(bind_dn),
	  .readers = "mailtier-mta, mailtier-mmp, mailtier-popstore",
	  .doc = "Read-only service DN the daemons bind as (empty: anonymous)." },
	{ .name = "bind_password_file", .type = MT_SETTING_STRING,
	  .offset = D(bind_password_file),
	  .readers = "mailtier-mta, mailtier-mmp, mailtier-popstore",
	  .doc = "File holding the service DN's password (first line)." },
	{ .name = "timeout", .type = MT_SETTING_DURATION, .offset = D(timeout),
	  .default_value = "3s", .min = 10, .max = 600000,
	  .doc = "Network and operation timeout for one LDAP request." },
	{ .name = "pool_size", .type = MT_SETTING_UINT, .offset = D(pool_size),
	  .default_value = "4", .min = 1, .max = 256,
	  .readers = "mailtier-mta, mailtier-mmp, mailtier-popstore",
	  .doc = "LDAP connections per daemon." },
	{ .name = "cache_ttl", .type = MT_SETTING_DURATION, .offset = D(cache_ttl),
	  .default_value = "60s", .max = 86400000,
	  .readers = "mailtier-mta, mailtier-mmp, mailtier-popstore",
	  .doc = "How long a found entry is served from cache (0: no cache)." },
	{ .name = "negative_cache_ttl", .type = MT_SETTING_DURATION,
	  .offset = D(negative_cache_ttl), .default_value = "10s", .max = 86400000,
	  .readers = "mailtier-mta, mailtier-mmp, mailtier-popstore",
	  .doc = "How long a not-found answer is served from cache." },
	{ .name = "cache_entries", .type = MT_SETTING_UINT, .offset = D(cache_entries),
	  .default_value = "100000", .max = 100000000,
	  .readers = "mailtier-mta, mailtier-mmp, mailtier-popstore",
	  .doc = "Most entries in the lookup cache (least recently used evicted)." },
	{ .name = "auth_method", .type = MT_SETTING_ENUM, .offset = D(auth_method),
	  .default_value = "hash", .enum_values = auth_methods,
	  .readers = "mailtier-mta, mailtier-mmp, mailtier-popstore",
	  .doc = "Verify passwords by LDAP bind as the user, or by checking the stored hash." },
	{ .name = "admin_dn", .type = MT_SETTING_STRING, .offset = D(admin_dn),
	  .readers = "mailtierctl",
	  .doc = "DN mailtierctl binds as to add, change and delete users (never read by the daemons)." },
	{ .name = "admin_password_file", .type = MT_SETTING_STRING,
	  .offset = D(admin_password_file),
	  .readers = "mailtierctl",
	  .doc = "File holding admin_dn's password (its whole content, no newline)." },
	{ .name = "local_slapd_dir", .type = MT_SETTING_STRING,
	  .offset = D(local_slapd_dir),
	  .readers = "mailtierctl",
	  .doc = "State directory of a slapd run by `mailtierctl directory up` (empty: none); lets `users bulk` load it offline." },
	MT_SETTINGS_END,
};

static void directory_check(struct mt_config_checker *checker,
			    const struct mt_config *config,
			    const struct mt_section *section)
{
	const struct mt_directory_settings *set = section->settings;
	if (set->uris.count == 0)
		mt_config_check_error(checker, section, "uris", "at least one URI is needed");
	for (size_t i = 0; i < set->uris.count; i++) {
		const char *uri = set->uris.items[i];
		if (strncmp(uri, "ldap://", 7) != 0 && strncmp(uri, "ldaps://", 8) != 0 &&
		    strncmp(uri, "ldapi://", 8) != 0)
			mt_config_check_error(checker, section, "uris",
				"'%s' is not an ldap://, ldaps:// or ldapi:// URI", uri);
	}
	if (set->admin_dn[0] != '\0' && set->admin_password_file[0] == '\0')
		mt_config_check_error(checker, section, "admin_password_file",
				      "admin_dn is set but admin_password_file is not");
	if (set->bind_dn[0] != '\0' && set->bind_password_file[0] == '\0')
		mt_config_check_error(checker, section, "bind_password_file",
				      "bind_dn is set but bind_password_file is not");
}

const struct mt_section_def mt_directory_section = {
	.name = "directory", .kind = MT_SECTION_SINGLE,
	.readers = "mailtier-mta, mailtier-mmp, mailtier-popstore, mailtierctl",
	.doc = "The LDAP directory (OpenLDAP slapd) holding users, aliases and shard assignment.",
	.struct_size = sizeof(struct mt_directory_settings),
	.settings = directory_settings, .check = directory_check,
};
