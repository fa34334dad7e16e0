/* loadgen-settings.c — the [loadgen] section table (see config.h). The
 * QoS limits of WORKLOAD.md (5 s per step) are defaults here. */
#include "loadgen-settings.h"
#include "mailtier-settings.h"

#include <stddef.h>
#include <stdlib.h>

#define L(field) offsetof(struct mt_loadgen_settings, field)

static const struct mt_setting_def loadgen_settings[] = {
	{ .name = "smtp", .type = MT_SETTING_HOSTPORT, .offset = L(smtp),
	  .doc = "SMTP server under test." },
	{ .name = "pop", .type = MT_SETTING_HOSTPORT, .offset = L(pop),
	  .doc = "POP3 server under test." },
	{ .name = "sink_listen", .type = MT_SETTING_HOSTPORT, .offset = L(sink_listen),
	  .doc = "Where the SMTP sink listens for the MTA's remote deliveries." },
	{ .name = "users", .type = MT_SETTING_UINT, .offset = L(users),
	  .default_value = "1000", .min = 1, .max = 100000000,
	  .doc = "Users userK@domain, K = 1..users." },
	{ .name = "domain", .type = MT_SETTING_STRING, .offset = L(domain),
	  .default_value = "example.test", .doc = "Local mail domain of the users." },
	{ .name = "remote_domain", .type = MT_SETTING_STRING, .offset = L(remote_domain),
	  .default_value = "remote.test", .doc = "Domain the MTA relays to the sink." },
	{ .name = "levels", .type = MT_SETTING_LIST, .offset = L(levels),
	  .default_value = "80 100 120", .doc = "Load levels in percent of the users' rate." },
	{ .name = "warmup", .type = MT_SETTING_DURATION, .offset = L(warmup),
	  .default_value = "30s", .doc = "Unmeasured time at the start of each level." },
	{ .name = "duration", .type = MT_SETTING_DURATION, .offset = L(duration),
	  .default_value = "5m", .min = 1000, .doc = "Measured time of each level." },
	{ .name = "step_timeout", .type = MT_SETTING_DURATION, .offset = L(step_timeout),
	  .default_value = "60s", .min = 100,
	  .doc = "A step not answered within this is a failed session (QoS limit is 5 s)." },
	{ .name = "seed", .type = MT_SETTING_UINT, .offset = L(seed),
	  .default_value = "1", .doc = "Random seed: the same seed gives the same run." },
	{ .name = "report_dir", .type = MT_SETTING_STRING, .offset = L(report_dir),
	  .default_value = "mailtier-load-report",
	  .doc = "Directory for the HTML report and raw data." },
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
}

const struct mt_section_def mt_loadgen_section = {
	.name = "loadgen", .kind = MT_SECTION_SINGLE, .readers = "mailtier-load",
	.doc = "Defaults for the bundled SPECmail2001-style load generator.",
	.struct_size = sizeof(struct mt_loadgen_settings),
	.settings = loadgen_settings, .check = loadgen_check,
};
