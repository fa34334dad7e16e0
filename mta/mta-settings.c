/* mta-settings.c — the [mta] section table (see config.h). Timeouts default
 * to RFC 5321 section 4.5.3.2's values. */
#include "mta-settings.h"
#include "mailtier-settings.h"

#include <stddef.h>
#include <string.h>

#define M(field) offsetof(struct mt_mta_settings, field)
static const char *const bare_newline_policies[] = { "reject", "normalize", NULL };

static const struct mt_setting_def mta_settings[] = {
	{ .name = "smtp_listen", .type = MT_SETTING_HOSTPORT, .offset = M(smtp_listen),
	  .default_value = "*:25", .doc = "SMTP (MX) listener; empty: off." },
	{ .name = "submission_listen", .type = MT_SETTING_HOSTPORT,
	  .offset = M(submission_listen), .default_value = "*:587",
	  .doc = "Submission listener (STARTTLS, AUTH required); empty: off." },
	{ .name = "submissions_listen", .type = MT_SETTING_HOSTPORT,
	  .offset = M(submissions_listen), .default_value = "*:465",
	  .doc = "Submission over implicit TLS (RFC 8314); empty: off." },
	{ .name = "hostname", .type = MT_SETTING_STRING, .offset = M(hostname),
	  .doc = "Name in the greeting and Received: lines (empty: the system's host name)." },
	{ .name = "local_domains", .type = MT_SETTING_LIST, .offset = M(local_domains),
	  .flags = MT_SETTING_REQUIRED, .doc = "Domains whose users live in the directory." },
	{ .name = "mynetworks", .type = MT_SETTING_LIST, .offset = M(mynetworks),
	  .default_value = "127.0.0.0/8 ::1/128",
	  .doc = "Client networks (CIDR) allowed to relay without AUTH." },
	{ .name = "relayhost", .type = MT_SETTING_HOSTPORT, .offset = M(relayhost),
	  .doc = "Send all remote mail through this host:port (empty: DNS MX)." },
	{ .name = "transport_map", .type = MT_SETTING_LIST, .offset = M(transport_map),
	  .doc = "Per-domain next hops: domain=host:port, ..." },
	{ .name = "max_message_size", .type = MT_SETTING_SIZE,
	  .offset = M(max_message_size), .default_value = "50M", .min = 1024,
	  .doc = "Largest message accepted (SIZE, RFC 1870)." },
	{ .name = "max_recipients", .type = MT_SETTING_UINT, .offset = M(max_recipients),
	  .default_value = "1000", .min = 1, .max = 100000,
	  .doc = "Most recipients per message (452 4.5.3 beyond)." },
	{ .name = "max_sessions", .type = MT_SETTING_UINT, .offset = M(max_sessions),
	  .default_value = "1000", .min = 1, .max = 1000000,
	  .doc = "Most concurrent SMTP sessions." },
	{ .name = "max_sessions_per_client", .type = MT_SETTING_UINT,
	  .offset = M(max_sessions_per_client), .default_value = "50", .min = 1,
	  .doc = "Most concurrent sessions from one client address." },
	{ .name = "delivery_concurrency", .type = MT_SETTING_UINT,
	  .offset = M(delivery_concurrency), .default_value = "16", .min = 1, .max = 1000,
	  .doc = "LMTP connections per store shard." },
	{ .name = "remote_concurrency", .type = MT_SETTING_UINT,
	  .offset = M(remote_concurrency), .default_value = "20", .min = 1, .max = 1000,
	  .doc = "SMTP connections per remote destination." },
	{ .name = "retry_schedule", .type = MT_SETTING_DURATION_LIST,
	  .offset = M(retry_schedule), .default_value = "1m 5m 15m 30m 1h", .min = 1000,
	  .doc = "Delays between delivery attempts; the last repeats until max_queue_lifetime." },
	{ .name = "max_queue_lifetime", .type = MT_SETTING_DURATION,
	  .offset = M(max_queue_lifetime), .default_value = "5d", .min = 60000,
	  .doc = "After this a message still undelivered is bounced." },
	{ .name = "queue_dir", .type = MT_SETTING_STRING, .offset = M(queue_dir),
	  .default_value = LOCALSTATEDIR "/lib/mailtier/queue",
	  .doc = "Directory of the durable queue." },
	{ .name = "bare_newline_policy", .type = MT_SETTING_ENUM,
	  .offset = M(bare_newline_policy), .default_value = "reject",
	  .enum_values = bare_newline_policies,
	  .doc = "Bare LF or CR in DATA: reject the message (5xx) or normalize to CRLF." },
	{ .name = "require_tls_for_auth", .type = MT_SETTING_BOOL,
	  .offset = M(require_tls_for_auth), .default_value = "yes",
	  .doc = "Offer AUTH only after TLS." },
	{ .name = "max_hops", .type = MT_SETTING_UINT, .offset = M(max_hops),
	  .default_value = "50", .min = 1, .max = 1000,
	  .doc = "More Received: lines than this: bounced as a mail loop." },
	{ .name = "command_timeout", .type = MT_SETTING_DURATION,
	  .offset = M(command_timeout), .default_value = "5m", .min = 1000,
	  .doc = "Idle time allowed between commands (RFC 5321 4.5.3.2.7: 5 minutes)." },
	{ .name = "data_timeout", .type = MT_SETTING_DURATION, .offset = M(data_timeout),
	  .default_value = "10m", .min = 1000,
	  .doc = "Idle time allowed within DATA (RFC 5321 4.5.3.2.8: 10 minutes)." },
	{ .name = "max_errors", .type = MT_SETTING_UINT, .offset = M(max_errors),
	  .default_value = "10", .min = 1, .max = 1000,
	  .doc = "Bad or unknown commands before 421 and disconnect." },
	MT_SETTINGS_END,
};

static void mta_check(struct mt_config_checker *checker,
		      const struct mt_config *config,
		      const struct mt_section *section)
{
	const struct mt_mta_settings *set = section->settings;
	for (size_t i = 0; i < set->transport_map.count; i++) {
		const char *entry = set->transport_map.items[i];
		const char *eq = strchr(entry, '=');
		struct mt_hostport hp = { NULL, 0 };
		const char *error = "expected domain=host:port";
		if (eq == NULL || eq == entry ||
		    !mt_parse_hostport(eq + 1, &hp, &error))
			mt_config_check_error(checker, section, "transport_map",
					      "'%s': %s", entry, error);
		mt_hostport_clear(&hp);
	}
	if (set->retry_schedule.count == 0)
		mt_config_check_error(checker, section, "retry_schedule",
				      "at least one delay is needed");
}

const struct mt_section_def mt_mta_section = {
	.name = "mta", .kind = MT_SECTION_SINGLE, .readers = "mailtier-mta, mailtierctl",
	.doc = "The ESMTP server, its durable queue and delivery.",
	.struct_size = sizeof(struct mt_mta_settings),
	.settings = mta_settings, .check = mta_check,
};
