/* mailtier-settings.c — shared sections of mailtier.conf ([global], [tls],
 * [shards]) and the registry of every section (see mailtier-settings.h). */
#include "mailtier-settings.h"
#include "alloc.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define G(field) offsetof(struct mt_global_settings, field)
static const char *const log_levels[] = { "debug", "info", "warning", "error", NULL };

static const struct mt_setting_def global_settings[] = {
	{ .name = "user", .type = MT_SETTING_STRING, .offset = G(user),
	  .default_value = "mailtier",
	  .doc = "Unprivileged user the daemons switch to after binding their ports (empty: stay)." },
	{ .name = "group", .type = MT_SETTING_STRING, .offset = G(group),
	  .default_value = "mailtier", .doc = "Group for the same." },
	{ .name = "log_level", .type = MT_SETTING_ENUM, .offset = G(log_level),
	  .default_value = "info", .enum_values = log_levels,
	  .doc = "Lowest severity logged: debug, info, warning or error." },
	{ .name = "drain_timeout", .type = MT_SETTING_DURATION,
	  .offset = G(drain_timeout), .default_value = "10s", .min = 0,
	  .max = 3600000, .doc = "On SIGTERM, how long sessions may take to finish before the daemon exits." },
	MT_SETTINGS_END,
};

const struct mt_section_def mt_global_section = {
	.name = "global", .kind = MT_SECTION_SINGLE, .readers = "all daemons",
	.doc = "Settings every daemon reads.",
	.struct_size = sizeof(struct mt_global_settings),
	.settings = global_settings,
};

#define T(field) offsetof(struct mt_tls_config, field)
static const char *const tls_versions[] = { "TLSv1.2", "TLSv1.3", NULL };

static const struct mt_setting_def tls_settings[] = {
	{ .name = "cert_file", .type = MT_SETTING_STRING, .offset = T(cert_file),
	  .doc = "PEM certificate chain for the TLS listeners and STARTTLS/STLS." },
	{ .name = "key_file", .type = MT_SETTING_STRING, .offset = T(key_file),
	  .doc = "PEM private key matching cert_file." },
	{ .name = "ca_file", .type = MT_SETTING_STRING, .offset = T(ca_file),
	  .readers = "mailtier-mta (to verify the servers it relays to)",
	  .doc = "PEM CA bundle for verifying peers (outgoing SMTP); empty: no verification." },
	{ .name = "ciphers", .type = MT_SETTING_STRING, .offset = T(ciphers),
	  .default_value = "ECDHE+AESGCM:ECDHE+CHACHA20:DHE+AESGCM",
	  .doc = "OpenSSL cipher list for TLS 1.2." },
	{ .name = "ciphersuites", .type = MT_SETTING_STRING, .offset = T(ciphersuites),
	  .default_value = "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256",
	  .doc = "OpenSSL TLS 1.3 cipher suites." },
	{ .name = "min_version", .type = MT_SETTING_ENUM, .offset = T(min_version),
	  .default_value = "TLSv1.2", .enum_values = tls_versions,
	  .doc = "Lowest TLS version accepted: TLSv1.2 or TLSv1.3." },
	MT_SETTINGS_END,
};

static void tls_check(struct mt_config_checker *checker,
		      const struct mt_config *config,
		      const struct mt_section *section)
{
	const struct mt_tls_config *tls = section->settings;
	if ((tls->cert_file[0] == '\0') != (tls->key_file[0] == '\0'))
		mt_config_check_error(checker, section,
			tls->cert_file[0] == '\0' ? "key_file" : "cert_file",
			"cert_file and key_file must be set together");
}

const struct mt_section_def mt_tls_section = {
	.name = "tls", .kind = MT_SECTION_SINGLE,
	.readers = "mailtier-mta, mailtier-mmp, mailtier-popstore",
	.doc = "Certificate and protocol policy for every TLS listener (reloaded on SIGHUP).",
	.struct_size = sizeof(struct mt_tls_config),
	.settings = tls_settings, .check = tls_check,
};

static void free_shard(void *entry)
{
	struct mt_shard_addresses *shard = entry;
	for (unsigned int i = 0; i < shard->n_sites; i++) {
		mt_hostport_clear(&shard->sites[i].lmtp);
		mt_hostport_clear(&shard->sites[i].pop3);
		mt_hostport_clear(&shard->sites[i].imap);
	}
	free(shard->sites);
	free(shard);
}

static bool valid_shard_name(const char *name)
{
	if (*name == '\0' || strlen(name) > 64)
		return false;
	for (const char *p = name; *p != '\0'; p++) {
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			return false;
	}
	return true;
}

/* One comma-separated address of a [shards] site into out: false (and
 * *error_r) if it is not host:port. */
static bool shard_address(const char *start, const char *end,
			  struct mt_hostport *out, const char **error_r)
{
	while (start < end && isspace((unsigned char)*start))
		start++;
	while (end > start && isspace((unsigned char)end[-1]))
		end--;
	char *text = mt_xstrndup(start, (size_t)(end - start));
	bool ok = mt_parse_hostport(text, out, error_r);
	free(text);
	return ok;
}

/* One SITE, [start, end): LMTP_ADDRESS, POP3_ADDRESS[, IMAP_ADDRESS]. */
static bool shard_site(const char *start, const char *end,
		       struct mt_shard_site *site, const char **error_r)
{
	const char *first = memchr(start, ',', (size_t)(end - start));
	const char *second = first != NULL ?
		memchr(first + 1, ',', (size_t)(end - first - 1)) : NULL;
	if (first == NULL || (second != NULL &&
			      memchr(second + 1, ',', (size_t)(end - second - 1)) != NULL)) {
		*error_r = "expected 'LMTP_ADDRESS, POP3_ADDRESS[, IMAP_ADDRESS]' "
			"(several sites: separated by '|')";
		return false;
	}
	return shard_address(start, first, &site->lmtp, error_r) &&
		shard_address(first + 1, second != NULL ? second : end,
			      &site->pop3, error_r) &&
		(second == NULL ||
		 shard_address(second + 1, end, &site->imap, error_r));
}

/* Two sites of one shard with the same address for a protocol. */
static bool same_address(const struct mt_hostport *a, const struct mt_hostport *b)
{
	return a->host != NULL && b->host != NULL && a->port == b->port &&
		strcmp(a->host, b->host) == 0;
}

/* The sites as a whole: no address twice, IMAP on all or none. */
static bool shard_sites_check(const struct mt_shard_addresses *shard,
			      const char **error_r)
{
	for (unsigned int i = 0; i < shard->n_sites; i++) {
		const struct mt_shard_site *a = &shard->sites[i];
		if ((a->imap.host == NULL) != (shard->sites[0].imap.host == NULL)) {
			*error_r = "either every site has an IMAP_ADDRESS or none has";
			return false;
		}
		for (unsigned int k = 0; k < i; k++) {
			const struct mt_shard_site *b = &shard->sites[k];
			if (same_address(&a->lmtp, &b->lmtp) ||
			    same_address(&a->pop3, &b->pop3) ||
			    same_address(&a->imap, &b->imap)) {
				*error_r = "two sites have the same address";
				return false;
			}
		}
	}
	return true;
}

/* NAME = SITE | SITE | ..., each SITE LMTP_ADDRESS, POP3_ADDRESS[,
 * IMAP_ADDRESS]; one site is the single-host syntax. */
static void *parse_shard(const char *key, const char *value, const char **error_r)
{
	if (!valid_shard_name(key)) {
		*error_r = "shard names are 1-64 letters, digits, '-' or '_'";
		return NULL;
	}
	unsigned int n = 1;
	for (const char *p = value; *p != '\0'; p++)
		if (*p == '|')
			n++;
	if (n > MT_SHARD_SITES_MAX) {
		*error_r = "too many sites (at most 7, separated by '|')";
		return NULL;
	}
	struct mt_shard_addresses *shard = mt_xcalloc(1, sizeof(*shard));
	shard->sites = mt_xcalloc(n, sizeof(*shard->sites));
	const char *start = value;
	bool ok = true;
	while (ok && shard->n_sites < n) {
		const char *bar = strchr(start, '|');
		const char *end = bar != NULL ? bar : start + strlen(start);
		ok = shard_site(start, end, &shard->sites[shard->n_sites++], error_r);
		start = end + 1;
	}
	if (!ok || !shard_sites_check(shard, error_r)) {
		free_shard(shard);
		return NULL;
	}
	return shard;
}

const struct mt_section_def mt_shards_section = {
	.name = "shards", .kind = MT_SECTION_MAP,
	.readers = "mailtier-mta, mailtier-mmp, mailtier-popstore, mailtierctl, mailtier-load",
	.doc = "One line per store shard: NAME = LMTP_ADDRESS, POP3_ADDRESS[, "
	       "IMAP_ADDRESS]. NAME is the value of the users' mailHost attribute; "
	       "the MMP's IMAP listeners need every shard's IMAP address. A shard "
	       "that is a replication group lists each of its sites, separated by "
	       "'|' (at most 7): NAME = SITE | SITE | SITE, each SITE "
	       "LMTP_ADDRESS, POP3_ADDRESS[, IMAP_ADDRESS], in the order tried "
	       "first; the MTA and the MMP follow whichever site is master "
	       "([mta] shard_failover_budget, [mmp] backend_failover_wait).",
	.parse_entry = parse_shard, .free_entry = free_shard,
};

const struct mt_section_def *const mt_mailtier_sections[] = {
	&mt_global_section, &mt_directory_section, &mt_shards_section,
	&mt_tls_section, &mt_mta_section, &mt_mmp_section,
	&mt_popstore_section, &mt_loadgen_section, &mt_milter_section, NULL,
};

struct mt_config *mt_mailtier_config_load(const char *path, char **errors_r)
{
	return mt_config_load(path, mt_mailtier_sections, errors_r);
}
