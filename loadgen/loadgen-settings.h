/* loadgen-settings.h — the [loadgen] section: defaults for mailtier-load
 * runs against a cluster (every value can also be given on its command line). */
#ifndef MT_LOADGEN_SETTINGS_H
#define MT_LOADGEN_SETTINGS_H

#include "config.h"

struct mt_loadgen_settings {
	struct mt_hostport smtp;
	struct mt_hostport pop;
	struct mt_hostport sink_listen;
	uint64_t users;
	char *domain;
	char *remote_domain;
	struct mt_strlist levels;
	uint64_t warmup;	/* ms */
	uint64_t duration;	/* ms */
	uint64_t step_timeout;	/* ms */
	uint64_t seed;
	char *report_dir;
};

#endif
