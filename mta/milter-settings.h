/* milter-settings.h — the [milter] family of mailtier.conf: one
 * [milter.NAME] section per mail filter (its address and what overrides
 * the [mta] defaults), named by [mta] smtpd_milters and
 * submission_milters. */
#ifndef MT_MILTER_SETTINGS_H
#define MT_MILTER_SETTINGS_H

#include "config.h"

/* What a filter that failed (unreachable, timed out, broke the protocol)
 * means for the mail of the session: the order of the names below. */
enum mt_milter_action {
	MT_MILTER_ACTION_TEMPFAIL,	/* 451 4.7.1 */
	MT_MILTER_ACTION_ACCEPT,	/* go on without the filter */
	MT_MILTER_ACTION_REJECT,	/* 550 5.7.1 */
	MT_MILTER_ACTION_INHERIT,	/* [milter.NAME]: [mta] milter_default_action */
};

/* "tempfail", "accept", "reject" ([mta] milter_default_action). */
extern const char *const mt_milter_action_names[];

struct mt_milter_settings {
	char *address;			/* inet:HOST:PORT, unix:PATH */
	unsigned int default_action;	/* enum mt_milter_action */
	uint64_t connect_timeout;	/* ms; 0: [mta] milter_connect_timeout */
	uint64_t command_timeout;	/* ms; 0: [mta] milter_command_timeout */
	uint64_t content_timeout;	/* ms; 0: [mta] milter_content_timeout */
};

extern const struct mt_section_def mt_milter_section;

#endif
