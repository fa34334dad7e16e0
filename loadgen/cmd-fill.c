/* cmd-fill.c — `mailtier-load fill`: the flags (and [loadgen] defaults,
 * and a config file's [shards] for --lmtp-shards), the fill (fill.h) and
 * its one-line summary; exit 0 when every planned message was accepted.
 * Trust boundary: the operator's flags and config file. */
#include "commands.h"

#include "cli.h"
#include "config.h"
#include "fill.h"
#include "mailtier-settings.h"
#include "run-options.h"

#include "alloc.h"

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	OPT_SMTP = 256, OPT_LMTP, OPT_LMTP_SHARDS, OPT_USERS, OPT_RATE, OPT_DOMAIN,
	OPT_REMOTE, OPT_SEED, OPT_FIRST_USER, OPT_ADDRESS_T, OPT_CONCURRENCY,
	OPT_STEP_TIMEOUT, OPT_PROGRESS, OPT_CONFIG, OPT_IMAP, OPT_PROTOCOL,
	OPT_LOGIN_T, OPT_PASSWORD_T,
};

struct fill_cli {
	struct lg_fill_settings set;
	const char *lmtp;		/* NAME=HOST:PORT,... or HOST:PORT */
	bool lmtp_shards;
	enum lg_protocol protocol;
	uint64_t rate;
	struct lg_strings strings;
};

static void apply(struct fill_cli *c, const char *name, const char *value)
{
	struct lg_fill_settings *set = &c->set;

	if (strcmp(name, "smtp") == 0)
		set->smtp = value[0] != '\0' ? value : NULL;
	else if (strcmp(name, "lmtp") == 0)
		c->lmtp = value[0] != '\0' ? value : NULL;
	else if (strcmp(name, "users") == 0)
		set->wl.users = lg_cli_uint("--users", value, 1, 100000000);
	else if (strcmp(name, "rate") == 0)
		c->rate = lg_cli_uint("--rate", value, 0, 500000);
	else if (strcmp(name, "domain") == 0)
		set->wl.domain = value;
	else if (strcmp(name, "remote-domain") == 0)
		set->wl.remote_domain = value;
	else if (strcmp(name, "seed") == 0)
		set->seed = lg_cli_uint("--seed", value, 0, UINT64_MAX);
	else if (strcmp(name, "first-user") == 0)
		set->wl.first_user = lg_cli_uint("--first-user", value, 0, UINT64_MAX / 2);
	else if (strcmp(name, "address-template") == 0)
		set->wl.local_template = value;
	else if (strcmp(name, "login-template") == 0)
		set->wl.login_template = value;
	else if (strcmp(name, "password-template") == 0)
		set->wl.password_template = value;
	else if (strcmp(name, "imap") == 0)
		set->imap = value[0] != '\0' ? value : NULL;
	else if (strcmp(name, "protocol") == 0 && !lg_protocol_parse(value, &c->protocol))
		lg_usage_error("--protocol: '%s' is not pop, imap or mixed", value);
	else if (strcmp(name, "concurrency") == 0)
		set->concurrency = (unsigned int)lg_cli_uint("--concurrency", value, 1, 10000);
	else if (strcmp(name, "step-timeout") == 0)
		set->step_timeout_ms = (unsigned int)lg_cli_ms("--step-timeout", value);
	else if (strcmp(name, "progress") == 0)
		set->progress_ms = (unsigned int)lg_cli_ms("--progress", value);
	/* the other [loadgen] keys are run's */
}

static void apply_config_key(const char *name, const char *value, void *context)
{
	apply(context, name, value);
}

/* --lmtp: "NAME=HOST:PORT,..." (shards by name) or one "HOST:PORT". */
static struct lg_fill_target *parse_lmtp(struct fill_cli *c, size_t *n_r)
{
	char *copy = (char *)lg_strings_keep(&c->strings, mt_xstrdup(c->lmtp)), *save = NULL;
	struct lg_fill_target *targets = NULL;
	size_t n = 0;

	for (char *tok = strtok_r(copy, ", ", &save); tok != NULL;
	     tok = strtok_r(NULL, ", ", &save)) {
		char *eq = strchr(tok, '=');
		if (n == LG_FILL_MAX_TARGETS)
			lg_usage_error("--lmtp: at most %d shards", LG_FILL_MAX_TARGETS);
		targets = mt_xrealloc(targets, (n + 1) * sizeof(*targets));
		if (eq != NULL) {
			*eq = '\0';
			targets[n] = (struct lg_fill_target){ tok, eq + 1 };
		} else {
			targets[n] = (struct lg_fill_target){ NULL, tok };
		}
		if ((targets[n].name == NULL || targets[n].name[0] == '\0') && n > 0)
			lg_usage_error("--lmtp: several servers need NAME=HOST:PORT each");
		n++;
	}
	if (n == 0)
		lg_usage_error("--lmtp: no server given");
	if (n > 1 && targets[0].name == NULL)
		lg_usage_error("--lmtp: several servers need NAME=HOST:PORT each");
	*n_r = n;
	return targets;
}

/* A site's LMTP greeting is 220 (a replica says 421 and closes): one
 * connect and one read, each within PROBE_MS. */
#define PROBE_MS 2000
static bool site_greets(const struct mt_hostport *hp)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char port[8], reply[4] = "";
	snprintf(port, sizeof(port), "%u", hp->port);
	if (getaddrinfo(hp->host, port, &hints, &res) != 0 || res == NULL)
		return false;
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	bool ok = false;
	if (fd >= 0 && (connect(fd, res->ai_addr, res->ai_addrlen) == 0 ||
			errno == EINPROGRESS)) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		if (poll(&pfd, 1, PROBE_MS) == 1 && (pfd.revents & POLLOUT) != 0) {
			pfd.events = POLLIN;
			ok = poll(&pfd, 1, PROBE_MS) == 1 &&
				read(fd, reply, 3) == 3 && memcmp(reply, "220", 3) == 0;
		}
	}
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return ok;
}

/* The site of a shard to fill: the only one, or (a replication group)
 * the first that greets as master; the first if none does (the fill then
 * reports its refusals). */
static unsigned int fill_master_site(const struct mt_shard_addresses *shard)
{
	for (unsigned int i = 0; shard->n_sites > 1 && i < shard->n_sites; i++)
		if (site_greets(&shard->sites[i].lmtp))
			return i;
	return 0;
}

/* --lmtp-shards: the config file's [shards]: NAME = LMTP, POP3
 * (of each shard's master site). */
static struct lg_fill_target *config_shards(struct fill_cli *c,
					    const struct mt_config *config, size_t *n_r)
{
	const struct mt_section *sec = config != NULL ?
		mt_config_section(config, "shards", NULL) : NULL;
	struct lg_fill_target *targets;

	if (sec == NULL || sec->n_entries == 0)
		lg_usage_error("--lmtp-shards: the config file has no [shards]");
	if (sec->n_entries > LG_FILL_MAX_TARGETS)
		lg_usage_error("--lmtp-shards: at most %d shards", LG_FILL_MAX_TARGETS);
	targets = mt_xcalloc(sec->n_entries, sizeof(*targets));
	for (size_t i = 0; i < sec->n_entries; i++) {
		const struct mt_shard_addresses *shard = sec->entries[i].value;
		const struct mt_hostport *hp = &shard->sites[fill_master_site(shard)].lmtp;
		targets[i].name = sec->entries[i].key;
		targets[i].hostport = lg_strings_keep(&c->strings,
						      mt_hostport_string(hp));
	}
	*n_r = sec->n_entries;
	return targets;
}

static int print_result(const struct lg_fill_settings *set,
			const struct lg_fill_result *r)
{
	printf("fill: users %" PRIu64 ", messages planned %" PRIu64 ", accepted %" PRIu64
	       ", failed %" PRIu64 ", %.1f MiB in %.1f s (%.0f msgs/s)%s\n",
	       r->users, r->messages_planned, r->messages_sent, r->messages_failed,
	       (double)r->octets / 1048576, r->elapsed_s, r->elapsed_s > 0 ?
	       (double)r->messages_sent / r->elapsed_s : 0,
	       r->interrupted ? " (INTERRUPTED)" : "");
	for (size_t i = 0; set->smtp == NULL && i < set->n_lmtp; i++)
		printf("fill: shard %s (%s): users %" PRIu64 ", messages %" PRIu64 "\n",
		       set->lmtp[i].name != NULL ? set->lmtp[i].name : "-",
		       set->lmtp[i].hostport, r->target_users[i], r->target_messages[i]);
	if (set->imap != NULL)
		printf("fill: folders by IMAP (%s): users %" PRIu64 " (failed %" PRIu64
		       "), messages planned %" PRIu64 ", appended %" PRIu64 "\n",
		       set->imap, r->folder_users, r->folder_users_failed,
		       r->folder_messages_planned, r->folder_messages_sent);
	for (int i = 0; i < LG_ERR_COUNT; i++)
		if (r->stats.errors[i] > 0)
			printf("fill: %s errors %" PRIu64 "\n", lg_error_names[i],
			       r->stats.errors[i]);
	return r->messages_failed == 0 && !r->interrupted &&
		r->messages_sent == r->messages_planned && r->folder_users_failed == 0 ?
		0 : LG_EXIT_QOS_NOT_MET;
}

int lg_cmd_fill(int argc, char **argv)
{
	static const struct option options[] = {
		{ "smtp", required_argument, NULL, OPT_SMTP },
		{ "lmtp", required_argument, NULL, OPT_LMTP },
		{ "lmtp-shards", no_argument, NULL, OPT_LMTP_SHARDS },
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
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "imap", required_argument, NULL, OPT_IMAP },
		{ "protocol", required_argument, NULL, OPT_PROTOCOL },
		{ "login-template", required_argument, NULL, OPT_LOGIN_T },
		{ "password-template", required_argument, NULL, OPT_PASSWORD_T },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct fill_cli c = {
		.set = {
			.wl = {
				.first_user = 1,
				.domain = "example.test", .remote_domain = "remote.test",
				.local_template = LG_DEFAULT_LOCAL_TEMPLATE,
				.login_template = LG_DEFAULT_LOGIN_TEMPLATE,
				.password_template = LG_DEFAULT_PASSWORD_TEMPLATE,
			},
			.seed = 1, .concurrency = 32, .step_timeout_ms = 60000,
			.progress_ms = isatty(STDERR_FILENO) ? 1000 : 10000,
		},
	};
	const char *config_path = lg_cli_config_arg(argc, argv), *error;
	struct mt_config *config = NULL;
	struct lg_fill_target *targets = NULL;
	int verbose = 0, opt, status;
	bool smtp_flag = false;

	if (config_path != NULL) {
		config = lg_cli_config_load(config_path);
		lg_cli_config_each(config, &c.strings, apply_config_key, &c);
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
		const char *name = NULL;
		for (size_t i = 0; options[i].name != NULL; i++)
			if (options[i].val == opt)
				name = options[i].name;
		switch (opt) {
		case OPT_LMTP_SHARDS: c.lmtp_shards = true; break;
		case OPT_SMTP: smtp_flag = true; apply(&c, name, optarg); break;
		case OPT_CONFIG: break;	/* read first */
		case 'v': verbose++; break;
		case 'h': lg_usage(stdout); exit(0);
		case '?': lg_usage_error("bad option");
		default: apply(&c, name, optarg); break;
		}
	}
	if (optind < argc)
		lg_usage_error("unexpected argument '%s'", argv[optind]);
	if (c.set.wl.users == 0 && c.rate != 0)
		c.set.wl.users = c.rate * LG_USERS_PER_MSG_PER_MIN;
	if (c.lmtp_shards)
		targets = config_shards(&c, config, &c.set.n_lmtp);
	else if (c.lmtp != NULL)
		targets = parse_lmtp(&c, &c.set.n_lmtp);
	c.set.lmtp = targets;
	if (targets != NULL && smtp_flag)
		lg_usage_error("fill: give --smtp or --lmtp, not both");
	if (targets != NULL)
		c.set.smtp = NULL;	/* LMTP given: it wins over a config's smtp */
	if (c.set.wl.users == 0 || (c.set.smtp == NULL && targets == NULL))
		lg_usage_error("fill: --smtp or --lmtp, and --users (or --rate), are required");
	if (c.protocol != LG_PROTOCOL_POP) {
		/* WORKLOAD.md: the IMAP workload's INBOX is the SPECmail2001
		 * fill x10; its folders need an IMAP server. */
		c.set.inbox_scale = LG_IMAP_FILL_INBOX_SCALE;
		if (c.set.imap == NULL)
			lg_usage_error("fill --protocol %s: --imap HOST:PORT is required",
				       lg_protocol_names[c.protocol]);
	} else {
		c.set.imap = NULL;	/* a config's imap key: only with IMAP */
	}
	if (c.set.step_timeout_ms < 100)
		lg_usage_error("--step-timeout must be at least 100 ms");
	if (!lg_template_check(c.set.wl.local_template, &error))
		lg_usage_error("--address-template '%s': %s", c.set.wl.local_template, error);
	lg_cli_verbosity(verbose, "mailtier-load");
	struct lg_fill_result *result = mt_xmalloc(sizeof(*result));
	if (!lg_fill_run(&c.set, result, &error)) {
		fprintf(stderr, "mailtier-load: fill: %s\n", error);
		status = LG_EXIT_FAILED;
	} else {
		status = print_result(&c.set, result);
	}
	free(result);
	free(targets);
	lg_strings_free(&c.strings);
	mt_config_free(&config);
	return status;
}
