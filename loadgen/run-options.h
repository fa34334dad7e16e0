/* run-options.h — the settings of a run as one table: name, type, bounds
 * and the field of struct lg_run_settings each fills. The same table reads
 * the command line (`--name value`), the [loadgen] section of a config
 * file (`name = value`, '-' written '_') and the settings a manager sends
 * its agents (`set name value`), so the three cannot drift apart.
 * Trust boundary: values come from the operator (flags, config file) or
 * from a manager over the agent connection; each is parsed strictly with
 * its bounds, and lg_run_settings_check() applies the rules that join
 * several of them. */
#ifndef LG_RUN_OPTIONS_H
#define LG_RUN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "engine.h"

enum lg_opt_type {
	LG_OPT_STRING,		/* const char * (the value string itself) */
	LG_OPT_U64,		/* uint64_t */
	LG_OPT_UINT,		/* unsigned int */
	LG_OPT_MS64,		/* uint64_t ms: seconds ("2.5") or "250ms", "5m" */
	LG_OPT_MS,		/* unsigned int ms, the same */
	LG_OPT_LEVELS,		/* levels[] and n_levels: "80,100,120" */
	LG_OPT_BOOL,		/* bool: yes/no */
	LG_OPT_PROTOCOL,	/* enum lg_protocol: pop, imap, mixed */
};

#define LG_OPT_FLAG 0x1u	/* a flag of `run` and `ramp` */
#define LG_OPT_WIRE 0x2u	/* sent by a manager to its agents */

struct lg_run_option {
	const char *name;	/* flag and wire name; config key with '_' */
	enum lg_opt_type type;
	size_t offset;		/* in struct lg_run_settings */
	uint64_t min, max;	/* numbers; ms for durations */
	unsigned int flags;
};

extern const struct lg_run_option lg_run_options[];
extern const size_t lg_run_options_count;

/* The option called name ('_' and '-' alike), or NULL. */
const struct lg_run_option *lg_run_option_find(const char *name);
/* Parse value into set. STRING options keep the pointer: the caller keeps
 * value alive as long as set. false with a reason. */
bool lg_run_option_set(struct lg_run_settings *set, const struct lg_run_option *opt,
		       const char *value, const char **error_r);
/* Append the option's value in set, as lg_run_option_set() reads it;
 * false when it has none (a NULL string). */
bool lg_run_option_format(struct mt_buf *out, const struct lg_run_settings *set,
			  const struct lg_run_option *opt);

/* The defaults of `run` (ramp: `ramp`). */
void lg_run_settings_defaults(struct lg_run_settings *set, bool ramp);
/* The rules across options (users given, probe user among them, templates
 * valid, ...); fills in the probe user's default. false with a reason. */
bool lg_run_settings_check(struct lg_run_settings *set, const char **error_r);

/* Shared number parsers: false with a reason. */
bool lg_parse_u64(const char *value, uint64_t min, uint64_t max, uint64_t *out,
		  const char **error_r);
bool lg_parse_ms(const char *value, uint64_t min, uint64_t max, uint64_t *out,
		 const char **error_r);

#endif
