/* cli.c — the command line shared by mailtier-load's commands (see cli.h).
 * Trust boundary: operator input, parsed strictly. */
#include "cli.h"

#include "alloc.h"
#include "buf.h"
#include "config.h"
#include "loadgen-settings.h"
#include "log.h"
#include "mailtier-settings.h"
#include "run-options.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
"usage: mailtier-load run --smtp HOST:PORT (--pop HOST:PORT | --imap HOST:PORT)\n"
"                         [--protocol pop|imap|mixed] [--sink-listen HOST:PORT]\n"
"                         (--users U | --rate MSGS_PER_MIN) [--domain D] [--remote-domain R]\n"
"                         [--levels 80,100,120] [--warmup S] [--duration S] [--cooldown S]\n"
"                         [--report DIR] [--seed N] [--workers N | --agents H:P,...] [options]\n"
"       mailtier-load ramp --points N [--top PCT] [--stop-after-failures K] (run's options)\n"
"       mailtier-load fill (--smtp HOST:PORT | --lmtp NAME=HOST:PORT,... | --lmtp-shards)\n"
"                          (--users U | --rate M) [--domain D] [--concurrency N] [--seed N]\n"
"                          [--protocol imap|mixed --imap HOST:PORT]   (INBOX x10, folders)\n"
"       mailtier-load agent --listen HOST:PORT [--once]\n"
"       mailtier-load sink --listen HOST:PORT [--duration S] [--quiet] [--ledger FILE]\n"
"       mailtier-load --help | --version\n"
"\n"
"run options:\n"
"  --smtp HOST:PORT          SMTP server under test; several, comma-separated\n"
"                            (HOST:PORT,HOST:PORT: several MTAs), are tried as\n"
"                            clients of several servers do: each session starts\n"
"                            at the next in turn and goes on to the following\n"
"                            one when the connect fails (refused, unreachable,\n"
"                            or unanswered for --connect-timeout)\n"
"  --pop HOST:PORT           POP3 server under test (several: as --smtp)\n"
"  --imap HOST:PORT          IMAP server under test (several: as --smtp)\n"
"  --connect-timeout S       with several addresses, a connect unanswered this\n"
"                            long goes on to the next address (5)\n"
"  --submission HOST:PORT    where IMAP desktop clients submit their replies,\n"
"                            AUTH PLAIN as the user (STARTTLS first where AUTH\n"
"                            is offered only after it); default: to --smtp,\n"
"                            without AUTH\n"
"  --tls                     STARTTLS in every SMTP session (after EHLO) and\n"
"                            every IMAP session on a plain port (before the\n"
"                            login); a server without it fails the session\n"
"  --imaps                   IMAP with implicit TLS (a 993 kind of port); TLS\n"
"                            is never verified (RFC 7435)\n"
"  --protocol P              mailbox sessions: pop (SPECmail2001 POP3 checks,\n"
"                            the default), imap (SPECmail2009-style IMAP\n"
"                            sessions) or mixed (both at half their rates)\n"
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
"  --probe-poll S            poll the probe mailbox by POP3 every S seconds (1);\n"
"                            --protocol imap: an IMAP session IDLEs on it\n"
"                            (NOOP every S seconds without IDLE)\n"
"  --probe-user K            the probe mailbox's user (U)\n"
"  --max-sessions N          sessions open at once; beyond, arrivals fail as\n"
"                            generator_overload (20000, shared by the workers)\n"
"  --ledger FILE             append a line per message sent, retrieved or sunk,\n"
"                            with its id and SHA-256 (loadgen/README.md)\n"
"  --workers N               N generator processes (one per core), user K in\n"
"                            process K mod N: the same sessions as one (1)\n"
"  --agents H:P,...          the load from `mailtier-load agent`s instead (agent i\n"
"                            of n takes users K mod n = i); this process runs the\n"
"                            sink and reports\n"
"  --agent-timeout S         a worker or agent silent this long fails the run (30)\n"
"  --progress S              progress line every S seconds, 0 = none (1 on a\n"
"                            terminal, else 10)\n"
"  --metrics-listen H:P      the run's figures live on http://H:P/metrics\n"
"                            (Prometheus text format, updated every second)\n"
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
"1: 16.11%, 2: 12.25%, ... 28: 0.02%; sizes from the size table) from remote\n"
"senders; the same seed fills the same mailboxes by either path. Exit 0 when\n"
"every message was accepted, else 1. Takes --users/--rate, --domain,\n"
"--remote-domain, --seed, --first-user, --address-template, --step-timeout,\n"
"--progress, --config, -v and\n"
"  --smtp HOST:PORT          by SMTP through the MTA, one message a session\n"
"  --lmtp NAME=H:P,...       by LMTP straight to the store shards, the user's\n"
"                            shard by dirsvc's rendezvous hash of the names\n"
"                            (one HOST:PORT: a single LMTP server); many\n"
"                            messages a connection\n"
"  --lmtp-shards             the shards of the config file's [shards] section\n"
"  --concurrency N           sessions at once per server or shard (32)\n"
"\n"
"agent: run a share of a manager's run (`run --agents`), then wait for the next\n"
"(--once: exit after one). It drives whatever servers the manager names: listen\n"
"on a management address only.\n"
"Seconds may carry a unit: 250ms, 30s, 5m, 1h.\n"
"Exit status: 0 QoS met at every level up to 100%, 1 not met, 2 usage or setup error.\n";

void lg_usage(FILE *out)
{
	fputs(usage_text, out);
}

void lg_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mailtier-load: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	lg_usage(stderr);
	exit(LG_EXIT_USAGE);
}

uint64_t lg_cli_uint(const char *flag, const char *value, uint64_t min, uint64_t max)
{
	const char *error;
	uint64_t n;

	if (!lg_parse_u64(value, min, max, &n, &error))
		lg_usage_error("%s: %s", flag, error);
	return n;
}

uint64_t lg_cli_ms(const char *flag, const char *value)
{
	const char *error;
	uint64_t ms;

	if (!lg_parse_ms(value, 0, 10000000ull * 1000, &ms, &error))
		lg_usage_error("%s: %s", flag, error);
	return ms;
}

void lg_cli_verbosity(int verbose, const char *ident)
{
	mt_log_init(ident, MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(verbose >= 2 ? MT_LOG_DEBUG :
			     verbose == 1 ? MT_LOG_INFO : MT_LOG_WARNING);
}

const char *lg_strings_keep(struct lg_strings *s, char *owned)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->items = mt_xrealloc(s->items, s->cap * sizeof(*s->items));
	}
	s->items[s->n++] = owned;
	return owned;
}

void lg_strings_free(struct lg_strings *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->items[i]);
	MT_FREE(&s->items);
	s->n = s->cap = 0;
}

struct mt_config *lg_cli_config_load(const char *path)
{
	static const struct mt_section_def *const generator_only[] = {
		&mt_loadgen_section, &mt_shards_section, NULL
	};
	char *errors = NULL, *errors_alone = NULL;
	/* A whole mailtier.conf, or a generator host's file with [loadgen]
	 * (and [shards]) only: the other sections' required keys absent. */
	struct mt_config *config = mt_mailtier_config_load(path, &errors);

	if (config == NULL)
		config = mt_config_load(path, generator_only, &errors_alone);
	if (config == NULL) {
		/* Report against the kind of file it looks like. */
		const char *shown = errors_alone != NULL &&
			strstr(errors_alone, "unknown section") == NULL ? errors_alone : errors;
		fprintf(stderr, "%s", shown != NULL ? shown : "config load failed\n");
		free(errors);
		free(errors_alone);
		exit(LG_EXIT_USAGE);
	}
	free(errors);
	return config;
}

/* A typed value of the [loadgen] table as the flag's text. */
static char *value_text(const struct mt_setting_def *def, const void *settings)
{
	const void *field = (const char *)settings + def->offset;
	struct mt_buf b = MT_BUF_INIT;

	switch (def->type) {
	case MT_SETTING_UINT:
	case MT_SETTING_SIZE:
		mt_buf_appendf(&b, "%llu", (unsigned long long)*(const uint64_t *)field);
		break;
	case MT_SETTING_DURATION:
		mt_buf_appendf(&b, "%llums", (unsigned long long)*(const uint64_t *)field);
		break;
	case MT_SETTING_HOSTPORT: {
		const struct mt_hostport *hp = field;
		if (hp->host != NULL)
			mt_buf_appendf(&b, strchr(hp->host, ':') ? "[%s]:%u" : "%s:%u",
				       hp->host, hp->port);
		break;
	}
	case MT_SETTING_LIST: {
		const struct mt_strlist *list = field;
		for (size_t i = 0; i < list->count; i++)
			mt_buf_appendf(&b, "%s%s", i ? "," : "", list->items[i]);
		break;
	}
	case MT_SETTING_BOOL:
		mt_buf_append_str(&b, *(const bool *)field ? "yes" : "no");
		break;
	case MT_SETTING_ENUM:
		mt_buf_append_str(&b, def->enum_values[*(const unsigned int *)field]);
		break;
	default:
		mt_buf_append_str(&b, *(char *const *)field);
		break;
	}
	char *text = mt_xstrdup(mt_buf_cstr(&b));
	mt_buf_free(&b);
	return text;
}

void lg_cli_config_each(const struct mt_config *config, struct lg_strings *strings,
			void (*cb)(const char *name, const char *value, void *context),
			void *context)
{
	const struct mt_section *sec = mt_config_section(config, "loadgen", NULL);

	if (sec == NULL)
		return;
	for (size_t i = 0; sec->def->settings[i].name != NULL; i++) {
		const struct mt_setting_def *def = &sec->def->settings[i];
		char name[64];
		if (sec->key_lines[i] == 0)
			continue;	/* not in the file: the flag's default */
		snprintf(name, sizeof(name), "%s", def->name);
		for (char *p = name; *p != '\0'; p++)
			if (*p == '_')
				*p = '-';
		if (strcmp(name, "report-dir") == 0)
			snprintf(name, sizeof(name), "report");
		cb(name, lg_strings_keep(strings, value_text(def, sec->settings)), context);
	}
}

const char *lg_cli_config_arg(int argc, char **argv)
{
	const char *path = NULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			path = argv[i] + 9;
	}
	return path;
}
