/* cmd-run.c — `mailtier-load run` and `ramp`: the flags and the [loadgen]
 * defaults (one table, run-options.h), one process or several (--workers,
 * --agents: manager.h), the report and the exit status (0: QoS met at
 * every required level, 1: not met, 2: usage error, 3: the run could not
 * be made or its report not written: cli.h).
 * Trust boundary: the operator's flags and config file. */
#include "commands.h"

#include "cli.h"
#include "config.h"
#include "engine.h"
#include "manager.h"
#include "report.h"
#include "run-options.h"

#include "alloc.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_RATE = 256, OPT_REPORT, OPT_POINTS, OPT_TOP, OPT_WORKERS, OPT_AGENTS,
	OPT_AGENT_TIMEOUT, OPT_CONFIG, OPT_TABLE = 1000,
};

struct run_cli {
	struct lg_run_settings set;
	const char *report_dir;
	uint64_t rate;
	unsigned int points, top, workers;
	const char *agents;
	uint64_t agent_timeout_ms;
	bool users_given, levels_given, ramp_flags_given;
	bool from_config;
};

/* One flag or config key, by name. */
static void apply(struct run_cli *c, const char *name, const char *value)
{
	const struct lg_run_option *opt;
	const char *error;

	if (strcmp(name, "rate") == 0) {
		c->rate = lg_cli_uint("--rate", value, c->from_config ? 0 : 1, 500000);
	} else if (strcmp(name, "report") == 0) {
		c->report_dir = value;
	} else if (strcmp(name, "points") == 0) {
		c->points = (unsigned int)lg_cli_uint("--points", value, 1, LG_MAX_LEVELS);
	} else if (strcmp(name, "top") == 0) {
		c->top = (unsigned int)lg_cli_uint("--top", value, 1, 1000);
	} else if (strcmp(name, "workers") == 0) {
		c->workers = (unsigned int)lg_cli_uint("--workers", value, 1, 256);
	} else if (strcmp(name, "agents") == 0) {
		c->agents = value[0] != '\0' ? value : NULL;
	} else if (strcmp(name, "agent-timeout") == 0) {
		c->agent_timeout_ms = lg_cli_ms("--agent-timeout", value);
		if (c->agent_timeout_ms < 1000)
			lg_usage_error("--agent-timeout must be at least 1 s");
	} else if (strcmp(name, "concurrency") == 0 || strcmp(name, "lmtp") == 0) {
		/* fill's keys */
	} else if ((opt = lg_run_option_find(name)) != NULL &&
		   (opt->flags & LG_OPT_FLAG) != 0) {
		if (!lg_run_option_set(&c->set, opt, value, &error))
			lg_usage_error("--%s: %s", opt->name, error);
		if (strcmp(opt->name, "users") == 0)
			c->users_given = true;
		if (strcmp(opt->name, "stop-after-failures") == 0 && !c->from_config)
			c->ramp_flags_given = true;
		if (strcmp(opt->name, "levels") == 0 && !c->from_config)
			c->levels_given = true;
	} else {
		lg_usage_error("unknown setting '%s'", name);
	}
}

static void apply_config_key(const char *name, const char *value, void *context)
{
	apply(context, name, value);
}

static struct option *build_options(void)
{
	static const struct option specials[] = {
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "report", required_argument, NULL, OPT_REPORT },
		{ "points", required_argument, NULL, OPT_POINTS },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "workers", required_argument, NULL, OPT_WORKERS },
		{ "agents", required_argument, NULL, OPT_AGENTS },
		{ "agent-timeout", required_argument, NULL, OPT_AGENT_TIMEOUT },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
	};
	size_t n_special = sizeof(specials) / sizeof(specials[0]), n = 0;
	struct option *options = mt_xcalloc(lg_run_options_count + n_special + 1,
					    sizeof(*options));

	for (size_t i = 0; i < lg_run_options_count; i++)
		if (lg_run_options[i].flags & LG_OPT_FLAG)
			options[n++] = (struct option){ lg_run_options[i].name,
				/* a yes/no flag stands alone: --tls */
				lg_run_options[i].type == LG_OPT_BOOL ? no_argument :
				required_argument, NULL, OPT_TABLE + (int)i };
	memcpy(options + n, specials, sizeof(specials));
	return options;
}

static void parse(struct run_cli *c, int argc, char **argv, int *verbose)
{
	struct option *options = build_options();
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
		const char *name = NULL;
		switch (opt) {
		case OPT_RATE: name = "rate"; break;
		case OPT_REPORT: name = "report"; break;
		case OPT_POINTS: name = "points"; c->ramp_flags_given = true; break;
		case OPT_TOP: name = "top"; c->ramp_flags_given = true; break;
		case OPT_WORKERS: name = "workers"; break;
		case OPT_AGENTS: name = "agents"; break;
		case OPT_AGENT_TIMEOUT: name = "agent-timeout"; break;
		case OPT_CONFIG: break;	/* read first */
		case 'v': (*verbose)++; break;
		case 'h': lg_usage(stdout); exit(0);
		default:
			if (opt < OPT_TABLE || opt >= OPT_TABLE + (int)lg_run_options_count) {
				free(options);
				lg_usage_error("bad option");
			}
			name = lg_run_options[opt - OPT_TABLE].name;
			break;
		}
		if (name != NULL)
			apply(c, name, optarg != NULL ? optarg : "yes");
	}
	free(options);
	if (optind < argc)
		lg_usage_error("unexpected argument '%s'", argv[optind]);
}

/* The rules across flags; then the one run's settings are complete. */
static void finish_settings(struct run_cli *c, bool ramp)
{
	struct lg_run_settings *set = &c->set;
	const char *error;

	if (ramp) {
		if (c->levels_given)
			lg_usage_error("ramp: give --points and --top, not --levels");
		set->n_levels = c->points;
		for (unsigned int i = 1; i <= c->points; i++) {
			set->levels[i - 1] = (c->top * i + c->points / 2) / c->points;
			if (set->levels[i - 1] == 0)
				lg_usage_error("ramp: --top %u is too small for %u points",
					       c->top, c->points);
		}
	} else if (c->ramp_flags_given) {
		lg_usage_error("--points, --top and --stop-after-failures are for ramp");
	} else {
		set->stop_after_failures = 0;
	}
	/* --rate alone: U = rate x 200. With --users too: U mailboxes
	 * carrying the load of rate x 200 users (small test set-ups). */
	if (c->rate != 0 && c->users_given)
		set->wl.load_users = c->rate * LG_USERS_PER_MSG_PER_MIN;
	else if (c->rate != 0)
		set->wl.users = c->rate * LG_USERS_PER_MSG_PER_MIN;
	if (!lg_run_settings_check(set, &error))
		lg_usage_error("%s", error);
	if (c->agents != NULL && c->workers > 1)
		lg_usage_error("give --workers or --agents, not both");
	if (set->ledger != NULL && (c->agents != NULL || c->workers > 1))
		lg_usage_error("--ledger is for a run in one process (no --workers, --agents)");
}

/* "h:p,h:p" into a list (kept in strings). */
static const char **split_agents(const char *list, struct lg_strings *strings,
				 size_t *n_r)
{
	char *copy = (char *)lg_strings_keep(strings, mt_xstrdup(list)), *save = NULL;
	const char **agents = NULL;
	size_t n = 0;

	for (char *tok = strtok_r(copy, ", ", &save); tok != NULL;
	     tok = strtok_r(NULL, ", ", &save)) {
		if (n == LG_MAX_SLOTS)
			lg_usage_error("--agents: at most %u", LG_MAX_SLOTS);
		agents = mt_xrealloc(agents, (n + 1) * sizeof(*agents));
		agents[n++] = tok;
	}
	if (n == 0)
		lg_usage_error("--agents: no agent given");
	*n_r = n;
	return agents;
}

static int report(const struct run_cli *c, const struct lg_run_result *result)
{
	const char *error;
	int status;

	lg_report_print(stdout, &c->set, result);
	fflush(stdout);
	status = lg_report_valid(&c->set, result) ? 0 : LG_EXIT_QOS_NOT_MET;
	if (!lg_report_write_json(c->report_dir, &c->set, result, &error) ||
	    !lg_report_write_csv(c->report_dir, &c->set, result, &error) ||
	    !lg_report_write_html(c->report_dir, &c->set, result, &error)) {
		fprintf(stderr, "mailtier-load: %s\n", error);
		return LG_EXIT_FAILED;
	}
	fprintf(stderr, "mailtier-load: report in %s/report.html, raw figures in "
		"results.json, functions.csv, timeline.csv\n", c->report_dir);
	return status;
}

int lg_cmd_run(int argc, char **argv, bool ramp)
{
	struct run_cli c = {
		.report_dir = "mailtier-load-report", .points = 10, .top = 100,
		.workers = 1, .agent_timeout_ms = 30000,
	};
	struct lg_strings strings = { 0 };
	struct mt_config *config = NULL;
	const char *config_path = lg_cli_config_arg(argc, argv), *error;
	struct lg_run_result result;
	int verbose = 0, status;
	bool ok;

	lg_run_settings_defaults(&c.set, ramp);
	/* The config file first, so the flags override it wherever they are. */
	if (config_path != NULL) {
		config = lg_cli_config_load(config_path);
		c.from_config = true;
		lg_cli_config_each(config, &strings, apply_config_key, &c);
		c.from_config = false;
	}
	parse(&c, argc, argv, &verbose);
	finish_settings(&c, ramp);
	lg_cli_verbosity(verbose, "mailtier-load");

	if (c.agents != NULL || c.workers > 1) {
		struct lg_manager_settings mset = {
			.workers = c.workers, .agent_timeout_ms = c.agent_timeout_ms,
		};
		const char **agents = c.agents != NULL ?
			split_agents(c.agents, &strings, &mset.n_agents) : NULL;
		mset.agents = agents;
		ok = lg_manager_run(&c.set, &mset, &result, &error);
		free(agents);
	} else {
		ok = lg_engine_run(&c.set, NULL, &result, &error);
	}
	if (ok) {
		status = report(&c, &result);
	} else {
		/* kept for the process's life (errors.h): the engine's or the
		 * manager's teardown may have freed where it was made */
		fprintf(stderr, "mailtier-load: %s\n", error);
		status = LG_EXIT_FAILED;
	}
	lg_run_result_free(&result);
	lg_strings_free(&strings);
	mt_config_free(&config);
	return status;
}
