/* main.c — mailtier-load's command line: `run` (the benchmark), `sink`
 * (the SMTP sink alone). Flags, an optional [loadgen] section of
 * mailtier.conf for defaults, usage errors (exit 2), the report and the
 * exit status (0: QoS met at every required level, 1: not met).
 * Trust boundary: the operator's flags and config file (checked strictly;
 * a bad value is a usage error, never a guess). */
#include "engine.h"
#include "fill.h"
#include "report.h"
#include "sink.h"

#include "alloc.h"
#include "config.h"
#include "loadgen-settings.h"
#include "log.h"
#include "loop.h"
#include "mailtier-settings.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define EXIT_QOS_NOT_MET 1
#define EXIT_USAGE 2

static const char usage_text[] =
"usage: mailtier-load run --smtp HOST:PORT --pop HOST:PORT [--sink-listen HOST:PORT]\n"
"                         (--users U | --rate MSGS_PER_MIN) [--domain D] [--remote-domain R]\n"
"                         [--levels 80,100,120] [--warmup S] [--duration S] [--cooldown S]\n"
"                         [--report DIR] [--seed N] [options]\n"
"       mailtier-load ramp --points N [--top PCT] [--stop-after-failures K] (run's options)\n"
"       mailtier-load fill --smtp HOST:PORT (--users U | --rate M) [--domain D]\n"
"                          [--concurrency N] [--seed N]\n"
"       mailtier-load sink --listen HOST:PORT [--duration S] [--quiet]\n"
"       mailtier-load --help | --version\n"
"\n"
"run options:\n"
"  --smtp HOST:PORT          SMTP server under test\n"
"  --pop HOST:PORT           POP3 server under test\n"
"  --sink-listen HOST:PORT   SMTP sink for the MTA's remote deliveries (remote\n"
"                            delivery time is measured only with it)\n"
"  --users U                 users userK@D, K = 1..U (password secretK)\n"
"  --rate M                  SPECmail2001 msgs/min at 100%: U = M x 200; with\n"
"                            --users too: U mailboxes carrying that load\n"
"  --domain D                local domain (example.test)\n"
"  --remote-domain R         domain the MTA relays to the sink (remote.test)\n"
"  --levels L,L,...          load levels in % of the users' load (80,100,120)\n"
"  --warmup S --duration S   unmeasured and measured time per level (30, 300)\n"
"  --cooldown S              at most this long for the last deliveries (65)\n"
"  --step-timeout S          a step unanswered this long fails (60)\n"
"  --report DIR              write DIR/report.html, results.json, functions.csv,\n"
"                            timeline.csv (mailtier-load-report)\n"
"  --seed N                  the same seed gives the same sessions (1)\n"
"  --first-user N            account number of user 1 (1)\n"
"  --address-template T      address local part (user%K); %K number,\n"
"                            %0NK zero-padded, %D domain\n"
"  --login-template T        POP3 USER (user%K@%D)\n"
"  --password-template T     POP3 PASS (secret%K)\n"
"  --probe-interval S        a local delivery probe every S seconds, 0 = none (5)\n"
"  --probe-poll S            poll the probe mailbox every S seconds (1)\n"
"  --probe-user K            the probe mailbox's user (U)\n"
"  --max-sessions N          sessions open at once; beyond, arrivals fail as\n"
"                            generator_overload (20000)\n"
"  --progress S              progress line every S seconds, 0 = none (1 on a\n"
"                            terminal, else 10)\n"
"  --config FILE             defaults from FILE's [loadgen] section\n"
"  -v, --verbose             log more (twice: debug)\n"
"\n"
"ramp: load points at TOP x i / N percent (i = 1..N) of the users' load, each\n"
"with its warm-up and measured time; prints throughput against response time\n"
"and the highest point within QoS (exit 0 if one met QoS, else 1).\n"
"  --points N                load points, 1-32 (10)\n"
"  --top PCT                 the last point's load in percent (100)\n"
"  --stop-after-failures K   stop after K points in a row missed QoS, 0 = never (2)\n"
"\n"
"fill: the initial mailbox contents for the 100% level (0 messages 26.5%,\n"
"1: 16.11%, 2: 12.25%, ... 28: 0.02%; sizes from the size table) by SMTP from\n"
"remote senders; exit 0 when every message was accepted, else 1. Takes --smtp,\n"
"--users/--rate, --domain, --remote-domain, --seed, --first-user,\n"
"--address-template, --step-timeout, --progress, -v and\n"
"  --concurrency N           SMTP sessions at once (32)\n"
"Seconds may carry a unit: 250ms, 30s, 5m, 1h.\n"
"Exit status: 0 QoS met at every level up to 100%, 1 not met, 2 usage or setup error.\n";

static void usage(FILE *out)
{
	fputs(usage_text, out);
}

_Noreturn static void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

_Noreturn static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mailtier-load: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	usage(stderr);
	exit(EXIT_USAGE);
}

static uint64_t parse_uint(const char *flag, const char *value, uint64_t min,
			   uint64_t max)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || value[0] == '-' ||
	    n < min || n > max)
		usage_error("%s: '%s' is not a number %" PRIu64 "..%" PRIu64,
			    flag, value, min, max);
	return n;
}

/* Seconds ("30", "2.5") or a duration with a unit ("250ms", "5m"). */
static uint64_t parse_seconds(const char *flag, const char *value)
{
	const char *error;
	uint64_t ms;
	char *end;
	double s;

	errno = 0;
	s = strtod(value, &end);
	if (end != value && *end == '\0' && errno == 0 && s >= 0 && s <= 1e7)
		return (uint64_t)(s * 1000 + 0.5);
	if (!mt_parse_duration(value, &ms, &error))
		usage_error("%s: '%s': %s", flag, value, error);
	return ms;
}

static void parse_levels(const char *value, struct lg_run_settings *set)
{
	char *copy = mt_xstrdup(value), *save = NULL;

	set->n_levels = 0;
	for (char *tok = strtok_r(copy, ", ", &save); tok != NULL;
	     tok = strtok_r(NULL, ", ", &save)) {
		if (set->n_levels == LG_MAX_LEVELS)
			usage_error("--levels: at most %d levels", LG_MAX_LEVELS);
		set->levels[set->n_levels++] =
			(unsigned int)parse_uint("--levels", tok, 1, 1000);
	}
	free(copy);
	if (set->n_levels == 0)
		usage_error("--levels: no level given");
}

static void check_template(const char *flag, const char *template)
{
	const char *error;

	if (!lg_template_check(template, &error))
		usage_error("%s '%s': %s", flag, template, error);
}

static char *hostport_str(const struct mt_hostport *hp)
{
	if (hp->host == NULL)
		return NULL;
	return strchr(hp->host, ':') != NULL ?
		mt_xasprintf("[%s]:%u", hp->host, hp->port) :
		mt_xasprintf("%s:%u", hp->host, hp->port);
}

/* Defaults from a [loadgen] section; the flags parsed later override. */
static struct mt_config *load_config(const char *path, struct lg_run_settings *set,
				     const char **report_r, char **owned, size_t *n_owned)
{
	static const struct mt_section_def *const loadgen_only[] = {
		&mt_loadgen_section, NULL
	};
	char *errors = NULL, *errors_alone = NULL;
	/* A whole mailtier.conf, or a generator host's file with only a
	 * [loadgen] section (the other sections' required keys absent). */
	struct mt_config *config = mt_mailtier_config_load(path, &errors);

	if (config == NULL)
		config = mt_config_load(path, loadgen_only, &errors_alone);
	if (config == NULL) {
		/* Report against the kind of file it looks like. */
		const char *shown = errors_alone != NULL &&
			strstr(errors_alone, "unknown section") == NULL ? errors_alone : errors;
		fprintf(stderr, "%s", shown != NULL ? shown : "config load failed\n");
		free(errors);
		free(errors_alone);
		exit(EXIT_USAGE);
	}
	free(errors);
	const struct mt_loadgen_settings *ls = mt_config_get(config, "loadgen", NULL);
	owned[(*n_owned)++] = (char *)(set->smtp = hostport_str(&ls->smtp));
	owned[(*n_owned)++] = (char *)(set->pop = hostport_str(&ls->pop));
	owned[(*n_owned)++] = (char *)(set->sink_listen = hostport_str(&ls->sink_listen));
	set->wl.users = ls->users;
	set->wl.domain = ls->domain;
	set->wl.remote_domain = ls->remote_domain;
	set->n_levels = 0;
	for (size_t i = 0; i < ls->levels.count && i < LG_MAX_LEVELS; i++)
		set->levels[set->n_levels++] = (unsigned int)strtoul(ls->levels.items[i], NULL, 10);
	set->warmup_ms = ls->warmup;
	set->duration_ms = ls->duration;
	set->step_timeout_ms = (unsigned int)ls->step_timeout;
	set->seed = ls->seed;
	*report_r = ls->report_dir;
	return config;
}

enum {
	OPT_SMTP = 256, OPT_POP, OPT_SINK, OPT_USERS, OPT_RATE, OPT_DOMAIN,
	OPT_REMOTE, OPT_LEVELS, OPT_WARMUP, OPT_DURATION, OPT_COOLDOWN,
	OPT_STEP_TIMEOUT, OPT_REPORT, OPT_SEED, OPT_FIRST_USER, OPT_ADDRESS_T,
	OPT_LOGIN_T, OPT_PASSWORD_T, OPT_PROBE_INTERVAL, OPT_PROBE_POLL,
	OPT_PROBE_USER, OPT_MAX_SESSIONS, OPT_PROGRESS, OPT_CONFIG, OPT_LISTEN,
	OPT_QUIET, OPT_POINTS, OPT_TOP, OPT_STOP_AFTER, OPT_CONCURRENCY,
};

static const struct option run_options[] = {
	{ "smtp", required_argument, NULL, OPT_SMTP },
	{ "pop", required_argument, NULL, OPT_POP },
	{ "sink-listen", required_argument, NULL, OPT_SINK },
	{ "users", required_argument, NULL, OPT_USERS },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "domain", required_argument, NULL, OPT_DOMAIN },
	{ "remote-domain", required_argument, NULL, OPT_REMOTE },
	{ "levels", required_argument, NULL, OPT_LEVELS },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "cooldown", required_argument, NULL, OPT_COOLDOWN },
	{ "step-timeout", required_argument, NULL, OPT_STEP_TIMEOUT },
	{ "report", required_argument, NULL, OPT_REPORT },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "first-user", required_argument, NULL, OPT_FIRST_USER },
	{ "address-template", required_argument, NULL, OPT_ADDRESS_T },
	{ "login-template", required_argument, NULL, OPT_LOGIN_T },
	{ "password-template", required_argument, NULL, OPT_PASSWORD_T },
	{ "probe-interval", required_argument, NULL, OPT_PROBE_INTERVAL },
	{ "probe-poll", required_argument, NULL, OPT_PROBE_POLL },
	{ "probe-user", required_argument, NULL, OPT_PROBE_USER },
	{ "max-sessions", required_argument, NULL, OPT_MAX_SESSIONS },
	{ "progress", required_argument, NULL, OPT_PROGRESS },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "points", required_argument, NULL, OPT_POINTS },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "stop-after-failures", required_argument, NULL, OPT_STOP_AFTER },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void set_verbosity(int verbose)
{
	mt_log_init("mailtier-load", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(verbose >= 2 ? MT_LOG_DEBUG :
			     verbose == 1 ? MT_LOG_INFO : MT_LOG_WARNING);
}

/* `run` and `ramp` (ramp: the levels are evenly spaced load points). */
static int cmd_run(int argc, char **argv, bool ramp)
{
	struct lg_run_settings set = {
		.wl = {
			.users = 0, .first_user = 1,
			.domain = "example.test", .remote_domain = "remote.test",
			.local_template = LG_DEFAULT_LOCAL_TEMPLATE,
			.login_template = LG_DEFAULT_LOGIN_TEMPLATE,
			.password_template = LG_DEFAULT_PASSWORD_TEMPLATE,
		},
		.levels = { 80, 100, 120 }, .n_levels = 3,
		.warmup_ms = 30000, .duration_ms = 300000, .cooldown_ms = 65000,
		.step_timeout_ms = 60000, .seed = 1,
		.probe_interval_ms = 5000, .probe_poll_ms = 1000,
		.max_sessions = 20000,
		.progress_ms = isatty(STDERR_FILENO) ? 1000 : 10000,
		.stop_after_failures = ramp ? 2 : 0,
	};
	const char *report_dir = "mailtier-load-report";
	struct mt_config *config = NULL;
	char *owned[4] = { NULL };
	size_t n_owned = 0;
	uint64_t rate = 0;
	int verbose = 0, opt;
	bool users_given = false, levels_given = false;
	unsigned int points = 10, top = 100;
	const char *error;

	/* The config file first, so the flags override it wherever they are. */
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--config") == 0)
			config = load_config(argv[i + 1], &set, &report_dir, owned, &n_owned);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "vh", run_options, NULL)) != -1) {
		switch (opt) {
		case OPT_SMTP: set.smtp = optarg; break;
		case OPT_POP: set.pop = optarg; break;
		case OPT_SINK: set.sink_listen = optarg; break;
		case OPT_USERS:
			set.wl.users = parse_uint("--users", optarg, 1, 100000000);
			users_given = true;
			break;
		case OPT_RATE: rate = parse_uint("--rate", optarg, 1, 500000); break;
		case OPT_DOMAIN: set.wl.domain = optarg; break;
		case OPT_REMOTE: set.wl.remote_domain = optarg; break;
		case OPT_LEVELS: parse_levels(optarg, &set); levels_given = true; break;
		case OPT_POINTS:
			points = (unsigned int)parse_uint("--points", optarg, 1, LG_MAX_LEVELS);
			break;
		case OPT_TOP: top = (unsigned int)parse_uint("--top", optarg, 1, 1000); break;
		case OPT_STOP_AFTER:
			set.stop_after_failures =
				(unsigned int)parse_uint("--stop-after-failures", optarg, 0, LG_MAX_LEVELS);
			break;
		case OPT_WARMUP: set.warmup_ms = parse_seconds("--warmup", optarg); break;
		case OPT_DURATION: set.duration_ms = parse_seconds("--duration", optarg); break;
		case OPT_COOLDOWN: set.cooldown_ms = parse_seconds("--cooldown", optarg); break;
		case OPT_STEP_TIMEOUT:
			set.step_timeout_ms = (unsigned int)parse_seconds("--step-timeout", optarg);
			break;
		case OPT_REPORT: report_dir = optarg; break;
		case OPT_SEED: set.seed = parse_uint("--seed", optarg, 0, UINT64_MAX); break;
		case OPT_FIRST_USER:
			set.wl.first_user = parse_uint("--first-user", optarg, 0, UINT64_MAX / 2);
			break;
		case OPT_ADDRESS_T: set.wl.local_template = optarg; break;
		case OPT_LOGIN_T: set.wl.login_template = optarg; break;
		case OPT_PASSWORD_T: set.wl.password_template = optarg; break;
		case OPT_PROBE_INTERVAL:
			set.probe_interval_ms = (unsigned int)parse_seconds("--probe-interval", optarg);
			break;
		case OPT_PROBE_POLL:
			set.probe_poll_ms = (unsigned int)parse_seconds("--probe-poll", optarg);
			break;
		case OPT_PROBE_USER:
			set.probe_user = parse_uint("--probe-user", optarg, 1, UINT64_MAX);
			break;
		case OPT_MAX_SESSIONS:
			set.max_sessions = (unsigned int)parse_uint("--max-sessions", optarg, 1, 1000000);
			break;
		case OPT_PROGRESS:
			set.progress_ms = (unsigned int)parse_seconds("--progress", optarg);
			break;
		case OPT_CONFIG: break;	/* read above */
		case 'v': verbose++; break;
		case 'h': usage(stdout); exit(0);
		default: usage_error("bad option");
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (ramp) {
		if (levels_given)
			usage_error("ramp: give --points and --top, not --levels");
		set.ramp = true;
		set.n_levels = points;
		for (unsigned int i = 1; i <= points; i++) {
			set.levels[i - 1] = (top * i + points / 2) / points;
			if (set.levels[i - 1] == 0)
				usage_error("ramp: --top %u is too small for %u points", top, points);
		}
	} else if (set.stop_after_failures != 0 || points != 10 || top != 100) {
		usage_error("--points, --top and --stop-after-failures are for ramp");
	}
	/* --rate alone: U = rate x 200. With --users too: U mailboxes
	 * carrying the load of rate x 200 users (small test set-ups). */
	if (rate != 0 && set.wl.users != 0 && users_given)
		set.wl.load_users = rate * LG_USERS_PER_MSG_PER_MIN;
	else if (rate != 0)
		set.wl.users = rate * LG_USERS_PER_MSG_PER_MIN;
	if (set.wl.users == 0)
		usage_error("--users or --rate is required");
	if (set.smtp == NULL || set.pop == NULL)
		usage_error("--smtp and --pop are required");
	if (set.duration_ms < 1000)
		usage_error("--duration must be at least 1 s");
	if (set.step_timeout_ms < 100)
		usage_error("--step-timeout must be at least 100 ms");
	if (set.probe_interval_ms > 0 && (set.probe_poll_ms < 100 || set.probe_interval_ms < 100))
		usage_error("--probe-interval and --probe-poll must be at least 100 ms");
	if (set.probe_user == 0)
		set.probe_user = set.wl.users;
	if (set.probe_user > set.wl.users)
		usage_error("--probe-user must be one of the users (1..%" PRIu64 ")", set.wl.users);
	if (set.wl.domain[0] == '\0' || set.wl.remote_domain[0] == '\0')
		usage_error("--domain and --remote-domain must not be empty");
	check_template("--address-template", set.wl.local_template);
	check_template("--login-template", set.wl.login_template);
	check_template("--password-template", set.wl.password_template);
	set_verbosity(verbose);

	struct lg_run_result result;
	if (!lg_engine_run(&set, &result, &error)) {
		fprintf(stderr, "mailtier-load: %s\n", error);
		lg_run_result_free(&result);
		mt_config_free(&config);
		return EXIT_USAGE;
	}
	lg_report_print(stdout, &set, &result);
	fflush(stdout);
	int status = lg_report_valid(&set, &result) ? 0 : EXIT_QOS_NOT_MET;
	if (!lg_report_write_json(report_dir, &set, &result, &error) ||
	    !lg_report_write_csv(report_dir, &set, &result, &error) ||
	    !lg_report_write_html(report_dir, &set, &result, &error)) {
		fprintf(stderr, "mailtier-load: %s\n", error);
		status = EXIT_USAGE;
	} else {
		fprintf(stderr, "mailtier-load: report in %s/report.html, raw figures in "
			"results.json, functions.csv, timeline.csv\n", report_dir);
	}
	lg_run_result_free(&result);
	for (size_t i = 0; i < n_owned; i++)
		free(owned[i]);
	mt_config_free(&config);
	return status;
}

/* ---- fill ---- */

static int cmd_fill(int argc, char **argv)
{
	static const struct option options[] = {
		{ "smtp", required_argument, NULL, OPT_SMTP },
		{ "users", required_argument, NULL, OPT_USERS },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "domain", required_argument, NULL, OPT_DOMAIN },
		{ "remote-domain", required_argument, NULL, OPT_REMOTE },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "first-user", required_argument, NULL, OPT_FIRST_USER },
		{ "address-template", required_argument, NULL, OPT_ADDRESS_T },
		{ "concurrency", required_argument, NULL, OPT_CONCURRENCY },
		{ "step-timeout", required_argument, NULL, OPT_STEP_TIMEOUT },
		{ "progress", required_argument, NULL, OPT_PROGRESS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct lg_fill_settings set = {
		.wl = {
			.first_user = 1,
			.domain = "example.test", .remote_domain = "remote.test",
			.local_template = LG_DEFAULT_LOCAL_TEMPLATE,
			.login_template = LG_DEFAULT_LOGIN_TEMPLATE,
			.password_template = LG_DEFAULT_PASSWORD_TEMPLATE,
		},
		.seed = 1, .concurrency = 32, .step_timeout_ms = 60000,
		.progress_ms = isatty(STDERR_FILENO) ? 1000 : 10000,
	};
	struct lg_fill_result *result = mt_xmalloc(sizeof(*result));
	const char *error;
	uint64_t rate = 0;
	int verbose = 0, opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
		switch (opt) {
		case OPT_SMTP: set.smtp = optarg; break;
		case OPT_USERS: set.wl.users = parse_uint("--users", optarg, 1, 100000000); break;
		case OPT_RATE: rate = parse_uint("--rate", optarg, 1, 500000); break;
		case OPT_DOMAIN: set.wl.domain = optarg; break;
		case OPT_REMOTE: set.wl.remote_domain = optarg; break;
		case OPT_SEED: set.seed = parse_uint("--seed", optarg, 0, UINT64_MAX); break;
		case OPT_FIRST_USER:
			set.wl.first_user = parse_uint("--first-user", optarg, 0, UINT64_MAX / 2);
			break;
		case OPT_ADDRESS_T: set.wl.local_template = optarg; break;
		case OPT_CONCURRENCY:
			set.concurrency = (unsigned int)parse_uint("--concurrency", optarg, 1, 10000);
			break;
		case OPT_STEP_TIMEOUT:
			set.step_timeout_ms = (unsigned int)parse_seconds("--step-timeout", optarg);
			break;
		case OPT_PROGRESS:
			set.progress_ms = (unsigned int)parse_seconds("--progress", optarg);
			break;
		case 'v': verbose++; break;
		case 'h': usage(stdout); exit(0);
		default: usage_error("bad option");
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (set.wl.users == 0 && rate != 0)
		set.wl.users = rate * LG_USERS_PER_MSG_PER_MIN;
	if (set.wl.users == 0 || set.smtp == NULL)
		usage_error("fill: --smtp and --users (or --rate) are required");
	if (set.step_timeout_ms < 100)
		usage_error("--step-timeout must be at least 100 ms");
	check_template("--address-template", set.wl.local_template);
	set_verbosity(verbose);
	if (!lg_fill_run(&set, result, &error)) {
		fprintf(stderr, "mailtier-load: fill: %s\n", error);
		free(result);
		return EXIT_USAGE;
	}
	printf("fill: users %" PRIu64 ", messages planned %" PRIu64 ", accepted %" PRIu64
	       ", failed %" PRIu64 ", %.1f MiB in %.1f s (%.0f msgs/s)%s\n",
	       result->users, result->messages_planned, result->messages_sent,
	       result->messages_failed, (double)result->octets / 1048576,
	       result->elapsed_s, result->elapsed_s > 0 ?
	       (double)result->messages_sent / result->elapsed_s : 0,
	       result->interrupted ? " (INTERRUPTED)" : "");
	for (int i = 0; i < LG_ERR_COUNT; i++)
		if (result->stats.errors[i] > 0)
			printf("fill: %s errors %" PRIu64 "\n", lg_error_names[i],
			       result->stats.errors[i]);
	int status = result->messages_failed == 0 && !result->interrupted &&
		result->messages_sent == result->messages_planned ? 0 : EXIT_QOS_NOT_MET;
	free(result);
	return status;
}

/* ---- sink ---- */

struct sink_main {
	struct mt_loop *loop;
	struct lg_sink *sink;
	bool quiet;
};

static void sink_print(FILE *out, const struct lg_sink *sink)
{
	const struct lg_sink_counts *c = lg_sink_counts(sink);

	fprintf(out, "sink: sessions %" PRIu64 " (open %" PRIu64 "), messages %" PRIu64
		", recipients %" PRIu64 ", octets %" PRIu64 ", with id %" PRIu64
		", bad commands %" PRIu64 "\n", c->sessions, c->active,
		c->transactions, c->rcpts, c->octets, c->with_id, c->bad_commands);
}

static void sink_tick(void *context)
{
	struct sink_main *m = context;

	if (!m->quiet)
		sink_print(stderr, m->sink);
}

static void sink_stop(void *context)
{
	mt_loop_exit(((struct sink_main *)context)->loop);
}

static int cmd_sink(int argc, char **argv)
{
	static const struct option options[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sink_main m = { 0 };
	const char *listen = NULL, *error;
	uint64_t duration_ms = 0;
	int verbose = 0, opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
		switch (opt) {
		case OPT_LISTEN: listen = optarg; break;
		case OPT_DURATION: duration_ms = parse_seconds("--duration", optarg); break;
		case OPT_QUIET: m.quiet = true; break;
		case 'v': verbose++; break;
		case 'h': usage(stdout); exit(0);
		default: usage_error("bad option");
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (listen == NULL)
		usage_error("sink: --listen is required");
	set_verbosity(verbose);
	if ((m.loop = mt_loop_new(&error)) == NULL ||
	    (m.sink = lg_sink_new(m.loop, listen, NULL, &error)) == NULL) {
		fprintf(stderr, "mailtier-load: sink: %s\n", error);
		mt_loop_free(&m.loop);
		return EXIT_USAGE;
	}
	mt_loop_set_drain(m.loop, 1000, sink_stop, &m);
	if (!mt_loop_handle_signals(m.loop, NULL, NULL, &error)) {
		fprintf(stderr, "mailtier-load: sink: %s\n", error);
		return EXIT_USAGE;
	}
	struct mt_timer *tick = mt_timer_add(m.loop, 10000, true, sink_tick, &m);
	struct mt_timer *end = duration_ms > 0 ?
		mt_timer_add(m.loop, (unsigned int)duration_ms, false, sink_stop, &m) : NULL;
	fprintf(stderr, "mailtier-load: sink listening on port %u\n", lg_sink_port(m.sink));
	int rc = mt_loop_run(m.loop);
	sink_print(stdout, m.sink);
	mt_timer_free(&tick);
	mt_timer_free(&end);
	lg_sink_free(&m.sink);
	mt_loop_free(&m.loop);
	return rc == 0 ? 0 : EXIT_USAGE;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage_error("a command is required");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("mailtier-load %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 1, argv + 1, false);
	if (strcmp(argv[1], "ramp") == 0)
		return cmd_run(argc - 1, argv + 1, true);
	if (strcmp(argv[1], "fill") == 0)
		return cmd_fill(argc - 1, argv + 1);
	if (strcmp(argv[1], "sink") == 0)
		return cmd_sink(argc - 1, argv + 1);
	usage_error("unknown command '%s'", argv[1]);
}
