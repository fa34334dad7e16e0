/* popstore-settings.c — the [popstore] family table (see config.h) and the
 * CIDR lists it holds (lmtp_clients, proxy_addresses).
 * Trust boundary: the operator's config file; every value is checked here
 * so a mistake stops start-up with FILE:LINE. No RFC applies. */
#include "popstore-settings.h"
#include "mailtier-settings.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>

#define S(field) offsetof(struct mt_popstore_settings, field)

static const char *const bare_newline_policies[] = { "reject", "normalize", NULL };

static const struct mt_setting_def popstore_settings[] = {
	{ .name = "shard", .type = MT_SETTING_STRING, .offset = S(shard),
	  .readers = "mailtier-popstore, mailtierctl",
	  .doc = "Shard name (default: the NAME of [popstore.NAME]; mailtier-popstore -s overrides)." },
	{ .name = "db_home", .type = MT_SETTING_STRING, .offset = S(db_home),
	  .flags = MT_SETTING_REQUIRED,
	  .readers = "mailtier-popstore, mailtierctl",
	  .doc = "Berkeley DB environment directory of this shard." },
	{ .name = "db_cache_size", .type = MT_SETTING_SIZE, .offset = S(db_cache_size),
	  .default_value = "64M", .min = 1u << 20,
	  .readers = "mailtier-popstore, mailtierctl",
	  .doc = "Berkeley DB cache (the seed's store.dbcachesize)." },
	{ .name = "lmtp_listen", .type = MT_SETTING_HOSTPORT, .offset = S(lmtp_listen),
	  .flags = MT_SETTING_REQUIRED, .doc = "LMTP listener for the MTAs." },
	{ .name = "pop3_listen", .type = MT_SETTING_HOSTPORT, .offset = S(pop3_listen),
	  .flags = MT_SETTING_REQUIRED, .doc = "POP3 listener (STLS when [tls] has a certificate)." },
	{ .name = "pop3s_listen", .type = MT_SETTING_HOSTPORT, .offset = S(pop3s_listen),
	  .doc = "POP3 over implicit TLS (RFC 8314); empty: off. Needs [tls]." },
	{ .name = "metrics_listen", .type = MT_SETTING_HOSTPORT,
	  .offset = S(metrics_listen), .doc = "Prometheus scrape endpoint (GET /metrics, text format 0.0.4); empty: off. Put it on loopback or a management network: it has no authentication." },
	{ .name = "imap_listen", .type = MT_SETTING_HOSTPORT, .offset = S(imap_listen),
	  .doc = "IMAP listener (STARTTLS when [tls] has a certificate); empty: off." },
	{ .name = "imaps_listen", .type = MT_SETTING_HOSTPORT, .offset = S(imaps_listen),
	  .doc = "IMAP over implicit TLS (RFC 8314); empty: off. Needs [tls]." },
	{ .name = "imap_idle_timeout", .type = MT_SETTING_DURATION,
	  .offset = S(imap_idle_timeout), .default_value = "30m", .min = 30 * 60000,
	  .doc = "Idle time allowed in an IMAP session (RFC 9051 5.4: at least 30 minutes)." },
	{ .name = "max_folders", .type = MT_SETTING_UINT, .offset = S(max_folders),
	  .default_value = "1000", .min = 5, .max = 1000000,
	  .doc = "Most IMAP folders per user (besides INBOX; CREATE answers NO [LIMIT] beyond)." },
	{ .name = "max_folder_name", .type = MT_SETTING_UINT, .offset = S(max_folder_name),
	  .default_value = "255", .min = 16, .max = 1024,
	  .doc = "Longest IMAP folder name, in octets of UTF-8." },
	{ .name = "max_folder_depth", .type = MT_SETTING_UINT, .offset = S(max_folder_depth),
	  .default_value = "16", .min = 1, .max = 64,
	  .doc = "Most levels of an IMAP folder name (\"a/b/c\" has 3)." },
	{ .name = "max_sessions", .type = MT_SETTING_UINT, .offset = S(max_sessions),
	  .default_value = "1000", .min = 1,
	  .doc = "Most concurrent LMTP + POP3 + IMAP sessions; the last tenth of them is kept "
		 "for proxy_addresses and lmtp_clients (clients elsewhere cannot take the MMP's "
		 "and the MTAs' places)." },
	{ .name = "max_mailbox_messages", .type = MT_SETTING_UINT,
	  .offset = S(max_mailbox_messages), .default_value = "1000000", .min = 1,
	  .doc = "Most messages in one mailbox (INBOX or a folder): a delivery beyond "
		 "it is answered as over quota, an APPEND, COPY or MOVE NO [LIMIT]." },
	{ .name = "max_sessions_per_address", .type = MT_SETTING_UINT,
	  .offset = S(max_sessions_per_address), .default_value = "100", .min = 1,
	  .doc = "Most concurrent POP3 + IMAP sessions from one client address "
		 "(proxy_addresses are not counted: the MMP carries many users)." },
	{ .name = "imap_max_user_sessions", .type = MT_SETTING_UINT,
	  .offset = S(imap_max_user_sessions), .default_value = "20", .min = 1,
	  .doc = "Most IMAP sessions one user may have logged in at once "
		 "(a phone, a laptop and webmail need a few each)." },
	{ .name = "max_message_size", .type = MT_SETTING_SIZE,
	  .offset = S(max_message_size), .default_value = "50M", .min = 1024,
	  .doc = "Largest message accepted over LMTP (552 5.3.4 beyond)." },
	{ .name = "default_quota", .type = MT_SETTING_SIZE, .offset = S(default_quota),
	  .default_value = "0", .doc = "Mailbox quota when the directory sets none (0: unlimited)." },
	{ .name = "quota_temporary", .type = MT_SETTING_BOOL,
	  .offset = S(quota_temporary), .default_value = "no",
	  .doc = "Over quota answers 452 4.2.2 (retry) instead of 552 5.2.2." },
	{ .name = "login_timeout", .type = MT_SETTING_DURATION, .offset = S(login_timeout),
	  .default_value = "60s", .min = 1000, .max = 3600000,
	  .doc = "Time a POP3 or IMAP client has from connect to a completed login "
		 "(RFC 9051 5.4's 30 minutes are for a logged-in session)." },
	{ .name = "idle_timeout", .type = MT_SETTING_DURATION, .offset = S(idle_timeout),
	  .default_value = "10m", .min = 1000, .doc = "Idle time allowed in a session." },
	{ .name = "proxy_addresses", .type = MT_SETTING_LIST,
	  .offset = S(proxy_addresses), .default_value = "127.0.0.1 ::1",
	  .doc = "Client addresses (CIDR) allowed to log in with the proxy credential "
		 "(and to send plaintext passwords without TLS)." },
	{ .name = "lmtp_clients", .type = MT_SETTING_LIST, .offset = S(lmtp_clients),
	  .default_value = "127.0.0.1 ::1",
	  .doc = "Client addresses (CIDR) allowed to deliver over LMTP." },
	{ .name = "proxy_user", .type = MT_SETTING_STRING, .offset = S(proxy_user),
	  .default_value = "mmp", .doc = "Proxy credential name the MMP logs in with." },
	{ .name = "proxy_password_file", .type = MT_SETTING_STRING,
	  .offset = S(proxy_password_file),
	  .doc = "File holding the proxy credential's password (first line; empty: proxy logins refused). Re-read on SIGHUP." },
	{ .name = "allow_plaintext_auth", .type = MT_SETTING_BOOL,
	  .offset = S(allow_plaintext_auth), .default_value = "no",
	  .doc = "Accept USER/PASS and AUTH PLAIN without TLS from any client (else only from proxy_addresses)." },
	{ .name = "auth_fail_delay", .type = MT_SETTING_DURATION,
	  .offset = S(auth_fail_delay), .default_value = "2s", .max = 60000,
	  .doc = "Delay of the answer to a failed POP3 login, counted from the command, so an unknown "
		 "user and a wrong password answer at the same time; it doubles with each further failure "
		 "from the client address within auth_fail_window, up to 60s (0: no delay). Clients in "
		 "proxy_addresses get this first delay without growth, the MMP's proxy logins none "
		 "(the MMP delays its own clients' failures, as [mmp] auth_fail_delay)." },
	{ .name = "auth_fail_window", .type = MT_SETTING_DURATION,
	  .offset = S(auth_fail_window), .default_value = "5m", .min = 1000,
	  .max = 86400000,
	  .doc = "Failed POP3 logins from one address count (for auth_fail_delay) until this long after the last one." },
	{ .name = "max_errors", .type = MT_SETTING_UINT, .offset = S(max_errors),
	  .default_value = "10", .min = 1, .max = 1000,
	  .doc = "Bad commands and failed logins in one session before it is disconnected." },
	{ .name = "max_recipients", .type = MT_SETTING_UINT, .offset = S(max_recipients),
	  .default_value = "1000", .min = 1, .max = 100000,
	  .doc = "Most LMTP recipients per message (452 4.5.3 beyond)." },
	{ .name = "bare_newline_policy", .type = MT_SETTING_ENUM,
	  .offset = S(bare_newline_policy), .default_value = "reject",
	  .enum_values = bare_newline_policies,
	  .doc = "LMTP DATA with a bare CR or LF: reject (550 5.6.0 per recipient) or normalize to CRLF; "
		 "the same policy as [mta]. DATA ends only at CRLF.CRLF either way." },
	{ .name = "hostname", .type = MT_SETTING_STRING, .offset = S(hostname),
	  .doc = "Name in the greeting and Received: lines (empty: the system's host name)." },
	{ .name = "stats_interval", .type = MT_SETTING_DURATION,
	  .offset = S(stats_interval), .default_value = "60s", .max = 86400000,
	  .doc = "How often the store counters (deliveries, log flushes) are logged (0: only at exit)." },
	{ .name = "commit_threads", .type = MT_SETTING_UINT, .offset = S(commit_threads),
	  .default_value = "2", .max = 64,
	  .doc = "Store transaction executor threads (0: the store's default of 1)." },
	{ .name = "reader_threads", .type = MT_SETTING_UINT, .offset = S(reader_threads),
	  .default_value = "4", .max = 64,
	  .doc = "Store reader threads for mailbox opens and RETR (0: the store's default of 2)." },
	{ .name = "purge_delay", .type = MT_SETTING_DURATION, .offset = S(purge_delay),
	  .default_value = "50ms", .min = 1, .max = 3600000,
	  .doc = "How long the store lets expunged (POP3 QUIT) messages' bodies gather "
		 "before its background purger deletes them in batches." },
	{ .name = "redelivery_window", .type = MT_SETTING_DURATION,
	  .offset = S(redelivery_window), .default_value = "1h", .min = 1000,
	  .max = 7 * 86400000ull,
	  .doc = "How long the store remembers the id of each LMTP delivery that came "
		 "with XQUEUEID (the MTA's LHLO name and queue id): a second delivery with "
		 "the same id to the same mailbox within it (an MTA killed or cut off "
		 "after the store committed) stores no second copy." },
	{ .name = "replication_listen", .type = MT_SETTING_STRING,
	  .offset = S(replication_listen),
	  .doc = "This store site's Berkeley DB replication address (host:port, exactly as "
		 "in replication_sites); empty: no replication (a shard of one site). "
		 "Replication traffic is plaintext and unauthenticated (Berkeley DB 5.3): "
		 "a private network only." },
	{ .name = "replication_sites", .type = MT_SETTING_LIST,
	  .offset = S(replication_sites),
	  .doc = "Every site of this shard's replication group, this one included, the same "
		 "list on every site: one, or three or more (two cannot keep a quorum)." },
	{ .name = "replication_priority", .type = MT_SETTING_UINT,
	  .offset = S(replication_priority), .default_value = "100", .min = 1, .max = 1000000,
	  .doc = "Election priority of this site (higher wins among equally current sites)." },
	{ .name = "replication_ack_timeout", .type = MT_SETTING_DURATION,
	  .offset = S(replication_ack_timeout), .default_value = "1s", .min = 10,
	  .max = 60000,
	  .doc = "How long a commit waits for a replica's acknowledgement; without it the "
		 "answer is a temporary failure (LMTP 451, IMAP NO, POP3 -ERR)." },
	{ .name = "replication_log_retention", .type = MT_SETTING_DURATION,
	  .offset = S(replication_log_retention), .default_value = "6h", .min = 60000,
	  .doc = "Log files are kept this long, so a site away for less catches up from "
		 "the log instead of by a full copy." },
	{ .name = "replication_log_retention_size", .type = MT_SETTING_SIZE,
	  .offset = S(replication_log_retention_size), .default_value = "2G",
	  .doc = "...and at least this much of the newest log is kept." },
	MT_SETTINGS_END,
};

static void check_cidr_list(struct mt_config_checker *checker,
			    const struct mt_section *section, const char *key,
			    const struct mt_strlist *list)
{
	for (size_t i = 0; i < list->count; i++) {
		struct mt_cidr cidr;
		const char *error;
		if (!mt_cidr_parse(list->items[i], &cidr, &error))
			mt_config_check_error(checker, section, key, "'%s': %s",
					      list->items[i], error);
	}
}

/* replication_listen is one of replication_sites, listed once; the group
 * has one site or three or more (lib-bdb/bdb-repl.c checks the rest at
 * start: the addresses' form). */
static void check_replication(struct mt_config_checker *checker,
			      const struct mt_section *section,
			      const struct mt_popstore_settings *set)
{
	const struct mt_strlist *sites = &set->replication_sites;
	if (set->replication_listen[0] == '\0') {
		if (sites->count > 0)
			mt_config_check_error(checker, section, "replication_sites",
				"replication_sites needs replication_listen (this site)");
		return;
	}
	bool listed = false;
	for (size_t i = 0; i < sites->count; i++) {
		listed = listed || strcmp(sites->items[i], set->replication_listen) == 0;
		for (size_t j = 0; j < i; j++)
			if (strcmp(sites->items[i], sites->items[j]) == 0)
				mt_config_check_error(checker, section, "replication_sites",
					"'%s' is listed twice", sites->items[i]);
	}
	if (!listed)
		mt_config_check_error(checker, section, "replication_listen",
			"'%s' is not one of replication_sites", set->replication_listen);
	if (sites->count == 2)
		mt_config_check_error(checker, section, "replication_sites",
			"a group of two sites cannot keep a quorum when one is lost: "
			"use one site or three");
	if (sites->count > 15)
		mt_config_check_error(checker, section, "replication_sites",
			"at most 15 sites");
}

/* Run for each [popstore.NAME] (the config loader skips the base). */
static void popstore_check(struct mt_config_checker *checker,
			   const struct mt_config *config,
			   const struct mt_section *section)
{
	const struct mt_popstore_settings *set = section->settings;
	const char *name = set->shard[0] != '\0' ? set->shard : section->instance;
	if (name != NULL && mt_config_map_get(config, "shards", name) == NULL)
		mt_config_check_error(checker, section,
			set->shard[0] != '\0' ? "shard" : NULL,
			"shard '%s' is not listed in [shards]", name);
	check_cidr_list(checker, section, "lmtp_clients", &set->lmtp_clients);
	check_cidr_list(checker, section, "proxy_addresses", &set->proxy_addresses);
	const struct mt_tls_config *tls = mt_config_get(config, "tls", NULL);
	const bool no_cert = tls != NULL && tls->cert_file[0] == '\0';
	if (set->pop3s_listen.host != NULL && no_cert)
		mt_config_check_error(checker, section, "pop3s_listen",
			"pop3s_listen needs a certificate: set [tls] cert_file and key_file");
	if (set->imaps_listen.host != NULL && no_cert)
		mt_config_check_error(checker, section, "imaps_listen",
			"imaps_listen needs a certificate: set [tls] cert_file and key_file");
	check_replication(checker, section, set);
}

const struct mt_section_def mt_popstore_section = {
	.name = "popstore", .kind = MT_SECTION_FAMILY,
	.readers = "mailtier-popstore",
	.doc = "Message store shards: [popstore] for shared values, [popstore.NAME] per shard.",
	.struct_size = sizeof(struct mt_popstore_settings),
	.settings = popstore_settings, .check = popstore_check,
};
