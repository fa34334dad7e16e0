/* daemon-args.c — the daemons' one command line (see daemon-args.h).
 *
 * Trust boundary: the operator's command line; getopt_long bounds it. */
#include "daemon-args.h"
#include "mailtier-settings.h"

#include <getopt.h>

void mt_daemon_args_usage(FILE *out, const char *name, bool takes_shard)
{
	fprintf(out, "usage: %s [-c FILE]%s [-f|-F]\n"
		"  -c, --config FILE     config file (default %s)\n", name,
		takes_shard ? " [-s SHARD] [--create-group]" : "", MT_DEFAULT_CONFIG_FILE);
	if (takes_shard)
		fprintf(out, "  -s, --shard SHARD     the shard to serve: "
			"[popstore.SHARD]\n"
			"  --create-group        found the shard's replication group: its very\n"
			"                        first start, on one site only (never on a site\n"
			"                        whose data was lost: it rejoins without)\n");
	fprintf(out, "  -f, -F, --foreground  log to stderr (foreground runs, "
		"tests)\n  -h, --help            this text\n");
}

int mt_daemon_args_parse(int argc, char **argv, const char *name,
			 bool takes_shard, struct mt_daemon_args *args_r)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "shard", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "create-group", no_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	args_r->config_path = MT_DEFAULT_CONFIG_FILE;
	args_r->foreground = false;
	args_r->shard = NULL;
	args_r->create_group = false;
	optind = 0;	/* glibc: start afresh (tests parse more than once) */
	int opt;
	while ((opt = getopt_long(argc, argv, takes_shard ? "c:s:fFh" : "c:fFh",
				  options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			args_r->config_path = optarg;
			break;
		case 's':
			if (!takes_shard) {
				mt_daemon_args_usage(stderr, name, takes_shard);
				return 2;
			}
			args_r->shard = optarg;
			break;
		case 'G':
			if (!takes_shard) {
				mt_daemon_args_usage(stderr, name, takes_shard);
				return 2;
			}
			args_r->create_group = true;
			break;
		case 'f':
		case 'F':
			args_r->foreground = true;
			break;
		case 'h':
			mt_daemon_args_usage(stdout, name, takes_shard);
			return 0;
		default:
			mt_daemon_args_usage(stderr, name, takes_shard);
			return 2;
		}
	}
	if (optind != argc) {
		mt_daemon_args_usage(stderr, name, takes_shard);
		return 2;
	}
	return -1;
}
