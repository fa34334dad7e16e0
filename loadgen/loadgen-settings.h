/* loadgen-settings.h — the [loadgen] section: defaults for mailtier-load
 * (`run`, `ramp`, `fill`). Every key is also a flag of the same name
 * ('_' written '-'; report_dir is --report); a flag overrides the file,
 * and only the keys the file sets are applied. */
#ifndef MT_LOADGEN_SETTINGS_H
#define MT_LOADGEN_SETTINGS_H

#include "config.h"

struct mt_loadgen_settings {
	struct mt_hostport smtp;
	struct mt_hostport pop;
	struct mt_hostport imap;
	struct mt_hostport submission;
	unsigned int protocol;	/* index into "pop", "imap", "mixed" */
	bool tls;
	bool imaps;
	struct mt_hostport sink_listen;
	uint64_t users;
	uint64_t rate;
	char *domain;
	char *remote_domain;
	uint64_t first_user;
	char *address_template;
	char *login_template;
	char *password_template;
	struct mt_strlist levels;
	uint64_t warmup;	/* ms */
	uint64_t duration;	/* ms */
	uint64_t cooldown;	/* ms */
	uint64_t step_timeout;	/* ms */
	uint64_t seed;
	uint64_t probe_interval; /* ms, 0 = no probes */
	uint64_t probe_poll;	/* ms */
	uint64_t probe_user;	/* 0 = the last user */
	uint64_t max_sessions;
	uint64_t progress;	/* ms, 0 = none */
	char *report_dir;
	uint64_t points;
	uint64_t top;
	uint64_t stop_after_failures;
	uint64_t workers;
	struct mt_strlist agents;
	uint64_t agent_timeout;	/* ms */
	uint64_t concurrency;
	struct mt_strlist lmtp;
};

#endif
