/* daemon-args.h — the one command line of every mailtier daemon
 * (mailtier-mta, mailtier-mmp, mailtier-popstore), so that they cannot
 * drift: -c/--config FILE, -f/-F/--foreground (log to stderr), -s/--shard
 * NAME for a daemon that serves one shard, -h/--help; nothing else, and no
 * operands. The usage text is built from the same table. The skeleton
 * (daemon.c) parses it; the default config path is the registry's.
 *
 * Trust boundary: the operator's command line (or systemd's unit). */
#ifndef MT_DAEMON_DAEMON_ARGS_H
#define MT_DAEMON_DAEMON_ARGS_H

#include <stdbool.h>
#include <stdio.h>

struct mt_daemon_args {
	const char *config_path;	/* MT_DEFAULT_CONFIG_FILE unless -c */
	bool foreground;		/* -f or -F: log to stderr */
	const char *shard;		/* -s, or NULL */
	/* --create-group (shard daemons): found the replication group. Once,
	 * on one site, never on a site whose data was lost. */
	bool create_group;
};

/* Parse argv for the daemon `name` (takes_shard: it accepts -s). Returns
 * -1 to go on, or the exit status for main to return: 0 after --help (the
 * usage on stdout), 2 after a bad command line (the usage on stderr). */
int mt_daemon_args_parse(int argc, char **argv, const char *name,
			 bool takes_shard, struct mt_daemon_args *args_r);
/* The usage text. */
void mt_daemon_args_usage(FILE *out, const char *name, bool takes_shard);

#endif
