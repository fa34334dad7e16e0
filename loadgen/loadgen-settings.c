/* loadgen-settings.c — the [loadgen] section table (see config.h). The
 * QoS limits of WORKLOAD.md (5 s per step) are fixed in the generator;
 * these are the run's shape and the addresses. Defaults are those of the
 * command line. */
#include "loadgen-settings.h"
#include "mailtier-settings.h"

#include <stddef.h>
#include <stdlib.h>

#define L(field) offsetof(struct mt_loadgen_settings, field)

/* As loadgen/workload.c's lg_protocol_names (this table is linked
 * without the generator). */
static const char *const protocol_names[] = { "pop", "imap", "mixed", NULL };

static const struct mt_setting_def loadgen_settings[] = {
	{ .name = "smtp", .type = MT_SETTING_HOSTPORT, .offset = L(smtp),
	  .doc = "SMTP server under test." },
	{ .name = "pop", .type = MT_SETTING_HOSTPORT, .offset = L(pop),
	  .doc = "POP3 server under test." },
	{ .name = "imap", .type = MT_SETTING_HOSTPORT, .offset = L(imap),
	  .doc = "IMAP server under test (a store's imap_listen, or the MMP's IMAP front)." },
	{ .name = "submission", .type = MT_SETTING_HOSTPORT, .offset = L(submission),
	  .doc = "Where IMAP desktop clients submit their replies by SMTP, with AUTH "
		 "PLAIN as the user (after STARTTLS where AUTH is offered only then); "
		 "unset: to smtp without AUTH." },
	{ .name = "protocol", .type = MT_SETTING_ENUM, .offset = L(protocol),
	  .default_value = "pop", .enum_values = protocol_names,
	  .doc = "Mailbox sessions: pop (SPECmail2001 POP3 checks), imap "
		 "(SPECmail2009-style IMAP sessions) or mixed (both at half rate)." },
	{ .name = "tls", .type = MT_SETTING_BOOL, .offset = L(tls), .default_value = "no",
	  .doc = "STARTTLS in every SMTP session (after EHLO) and every IMAP session "
		 "on a plain port (before the login); no certificate verification." },
	{ .name = "imaps", .type = MT_SETTING_BOOL, .offset = L(imaps), .default_value = "no",
	  .doc = "IMAP sessions use implicit TLS: the imap port is a 993 kind." },
	{ .name = "sink_listen", .type = MT_SETTING_HOSTPORT, .offset = L(sink_listen),
	  .doc = "Where the SMTP sink listens for the MTA's remote deliveries." },
	{ .name = "users", .type = MT_SETTING_UINT, .offset = L(users),
	  .default_value = "1000", .min = 1, .max = 100000000,
	  .doc = "Users userK@domain, K = 1..users." },
	{ .name = "rate", .type = MT_SETTING_UINT, .offset = L(rate),
	  .default_value = "0", .max = 500000,
	  .doc = "SPECmail2001 msgs/min at 100% (users = rate x 200; with users "
		 "too, that many mailboxes carry this load); 0 = from users." },
	{ .name = "domain", .type = MT_SETTING_STRING, .offset = L(domain),
	  .default_value = "example.test", .doc = "Local mail domain of the users." },
	{ .name = "remote_domain", .type = MT_SETTING_STRING, .offset = L(remote_domain),
	  .default_value = "remote.test", .doc = "Domain the MTA relays to the sink." },
	{ .name = "first_user", .type = MT_SETTING_UINT, .offset = L(first_user),
	  .default_value = "1", .doc = "Account number of user 1." },
	{ .name = "address_template", .type = MT_SETTING_STRING,
	  .offset = L(address_template), .default_value = "user%K",
	  .doc = "Address local part: %K number, %0NK zero-padded, %D domain." },
	{ .name = "login_template", .type = MT_SETTING_STRING,
	  .offset = L(login_template), .default_value = "user%K@%D",
	  .doc = "POP3 USER argument (same % sequences)." },
	{ .name = "password_template", .type = MT_SETTING_STRING,
	  .offset = L(password_template), .default_value = "secret%K",
	  .doc = "POP3 PASS argument (same % sequences)." },
	{ .name = "levels", .type = MT_SETTING_LIST, .offset = L(levels),
	  .default_value = "80 100 120", .doc = "Load levels in percent of the users' rate." },
	{ .name = "warmup", .type = MT_SETTING_DURATION, .offset = L(warmup),
	  .default_value = "30s", .doc = "Unmeasured time at the start of each level." },
	{ .name = "duration", .type = MT_SETTING_DURATION, .offset = L(duration),
	  .default_value = "5m", .min = 1000, .doc = "Measured time of each level." },
	{ .name = "cooldown", .type = MT_SETTING_DURATION, .offset = L(cooldown),
	  .default_value = "65s",
	  .doc = "At most this long after the last level for open sessions and deliveries." },
	{ .name = "step_timeout", .type = MT_SETTING_DURATION, .offset = L(step_timeout),
	  .default_value = "60s", .min = 100,
	  .doc = "A step not answered within this is a failed session (QoS limit is 5 s)." },
	{ .name = "seed", .type = MT_SETTING_UINT, .offset = L(seed),
	  .default_value = "1", .doc = "Random seed: the same seed gives the same run." },
	{ .name = "probe_interval", .type = MT_SETTING_DURATION, .offset = L(probe_interval),
	  .default_value = "5s", .doc = "A local delivery probe this often; 0 = none." },
	{ .name = "probe_poll", .type = MT_SETTING_DURATION, .offset = L(probe_poll),
	  .default_value = "1s", .doc = "Poll the probe mailbox this often." },
	{ .name = "probe_user", .type = MT_SETTING_UINT, .offset = L(probe_user),
	  .default_value = "0", .doc = "User number of the probe mailbox; 0 = the last user." },
	{ .name = "max_sessions", .type = MT_SETTING_UINT, .offset = L(max_sessions),
	  .default_value = "20000", .min = 1, .max = 1000000,
	  .doc = "Sessions open at once (all generators); beyond, arrivals fail as "
		 "generator_overload." },
	{ .name = "progress", .type = MT_SETTING_DURATION, .offset = L(progress),
	  .default_value = "10s",
	  .doc = "Progress line interval, 0 = none (unset: 1 s on a terminal, else 10 s)." },
	{ .name = "report_dir", .type = MT_SETTING_STRING, .offset = L(report_dir),
	  .default_value = "mailtier-load-report",
	  .doc = "Directory for the HTML report and raw data (--report)." },
	{ .name = "points", .type = MT_SETTING_UINT, .offset = L(points),
	  .default_value = "10", .min = 1, .max = 32, .doc = "ramp: load points." },
	{ .name = "top", .type = MT_SETTING_UINT, .offset = L(top),
	  .default_value = "100", .min = 1, .max = 1000,
	  .doc = "ramp: the last point's load in percent." },
	{ .name = "stop_after_failures", .type = MT_SETTING_UINT,
	  .offset = L(stop_after_failures), .default_value = "2", .max = 32,
	  .doc = "ramp: stop after this many points in a row missed QoS; 0 = never." },
	{ .name = "workers", .type = MT_SETTING_UINT, .offset = L(workers),
	  .default_value = "1", .min = 1, .max = 256,
	  .doc = "Generator processes on this host (one per core); the users are "
		 "shared out, the load is the same." },
	{ .name = "agents", .type = MT_SETTING_LIST, .offset = L(agents),
	  .doc = "HOST:PORT of `mailtier-load agent`s that make the load instead "
		 "(this host only runs the sink and reports)." },
	{ .name = "agent_timeout", .type = MT_SETTING_DURATION, .offset = L(agent_timeout),
	  .default_value = "30s", .min = 1000,
	  .doc = "An agent or worker silent this long fails the run." },
	{ .name = "concurrency", .type = MT_SETTING_UINT, .offset = L(concurrency),
	  .default_value = "32", .min = 1, .max = 10000,
	  .doc = "fill: sessions at once per SMTP server or LMTP shard." },
	{ .name = "lmtp", .type = MT_SETTING_LIST, .offset = L(lmtp),
	  .doc = "fill: LMTP straight to the shards, NAME=HOST:PORT each (the user's "
		 "shard by dirsvc's rendezvous hash), or one HOST:PORT." },
	MT_SETTINGS_END,
};

static void loadgen_check(struct mt_config_checker *checker,
			  const struct mt_config *config,
			  const struct mt_section *section)
{
	const struct mt_loadgen_settings *set = section->settings;
	for (size_t i = 0; i < set->levels.count; i++) {
		char *end;
		long level = strtol(set->levels.items[i], &end, 10);
		if (*end != '\0' || level <= 0 || level > 1000)
			mt_config_check_error(checker, section, "levels",
				"'%s' is not a percentage 1-1000", set->levels.items[i]);
	}
	if (set->levels.count > 32)
		mt_config_check_error(checker, section, "levels", "at most 32 levels");
}

const struct mt_section_def mt_loadgen_section = {
	.name = "loadgen", .kind = MT_SECTION_SINGLE, .readers = "mailtier-load",
	.doc = "Defaults for the bundled SPECmail2001-style load generator.",
	.struct_size = sizeof(struct mt_loadgen_settings),
	.settings = loadgen_settings, .check = loadgen_check,
};
