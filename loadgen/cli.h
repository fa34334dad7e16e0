/* cli.h — what mailtier-load's commands share on the command line: the
 * exit statuses, the usage text, usage errors (exit 2), strict number and duration flags,
 * verbosity, and the config file (a whole mailtier.conf, or a generator
 * host's file with only [loadgen] and perhaps [shards]).
 * Trust boundary: the operator's flags and config file (checked strictly;
 * a bad value is a usage error, never a guess). */
#ifndef LG_CLI_H
#define LG_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 0: done and QoS met (or every message accepted, the sink's run ended). */
#define LG_EXIT_QOS_NOT_MET 1	/* or interrupted, or a level not judged */
#define LG_EXIT_USAGE 2		/* bad flag or config: nothing was tried */
/* The command could not be carried out: address in use, unresolvable
 * host, report directory not writable, a worker or agent failed (#37
 * item 20: 2 told a script to fix its flags when the machine was at fault). */
#define LG_EXIT_FAILED 3

struct mt_config;

void lg_usage(FILE *out);
_Noreturn void lg_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

uint64_t lg_cli_uint(const char *flag, const char *value, uint64_t min, uint64_t max);
/* Milliseconds from seconds ("30", "2.5") or a duration ("250ms", "5m"). */
uint64_t lg_cli_ms(const char *flag, const char *value);
void lg_cli_verbosity(int verbose, const char *ident);

/* Strings that live until the command ends (config values, copies). */
struct lg_strings {
	char **items;
	size_t n, cap;
};
const char *lg_strings_keep(struct lg_strings *strings, char *owned);
void lg_strings_free(struct lg_strings *strings);

/* Load FILE (exit 2 with every error on failure). */
struct mt_config *lg_cli_config_load(const char *path);
/* Call cb(name, value) for every [loadgen] key the file sets, with the
 * name in flag form ("sink-listen") and the value as text (lists joined
 * by ','); values are kept in strings. */
void lg_cli_config_each(const struct mt_config *config, struct lg_strings *strings,
			void (*cb)(const char *name, const char *value, void *context),
			void *context);
/* The value of "--config FILE" in argv, or NULL. */
const char *lg_cli_config_arg(int argc, char **argv);

#endif
