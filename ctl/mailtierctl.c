/* mailtierctl.c — the admin tool: global options, the command table and
 * dispatch. Commands: see ctl_commands[] (each group in ctl-GROUP.c).
 * Trust boundary: run by the operator; arguments are checked, never trusted
 * to be well formed. */
#include "ctl.h"
#include "log.h"
#include "mailtier-settings.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const struct ctl_command ctl_commands[] = {
	{ "config", "check", "", "load the config through the daemons' tables; print every error as FILE:LINE: or 'ok'",
	  ctl_config_check },
	{ "config", "doc", "", "print the mailtier.conf(5) man page generated from the tables",
	  ctl_config_doc },
	{ "directory", "up", "--dir DIR --port PORT [--address ADDR] [--domain D] [--auth-method hash|bind]",
	  "start a local slapd for development and tests (writes DIR/directory.conf)",
	  ctl_directory_up },
	{ "directory", "down", "--dir DIR", "stop the local slapd started from DIR",
	  ctl_directory_down },
	{ "cluster", "up", "--dir DIR [--shards N] [--users U] [--base-port P] [--domain D] [--remote-domain R] [--sink HOST:PORT] [--milter none|rspamd] [--dns HOST:PORT] [--directory-providers 1|2|3]",
	  "start a whole cluster on 127.0.0.1 (slapd, users, shards, MTA, MMP; rspamd in front of the MTA with --milter rspamd); again: start what is missing",
	  ctl_cluster },
	{ "cluster", "status", "--dir DIR",
	  "each daemon of the cluster: pid, state, listeners, counters from its /metrics", ctl_cluster },
	{ "cluster", "top", "--dir DIR [--interval SECONDS] [--count N]",
	  "the daemons' metrics refreshed every interval (default 2 s): CPU, memory, connections, rates",
	  ctl_cluster },
	{ "cluster", "down", "--dir DIR", "stop every daemon of the cluster (SIGTERM, wait)", ctl_cluster },
	{ "cluster", "logs", "--dir DIR [--no-follow] [--lines N] [NAME]", "follow the daemons' logs",
	  ctl_cluster },
	{ "users", "add", "ADDRESS [--password-file F] [--shard S] [--quota SIZE] [--status S] [--alias A]... [--forward A]",
	  "add an account (password from the file or stdin; SHA-512 crypt)", ctl_users_add },
	{ "users", "del", "ADDRESS", "delete an account", ctl_users_del },
	{ "users", "show", "ADDRESS", "show an account (by address or alias)", ctl_users_show },
	{ "users", "passwd", "ADDRESS [--password-file F]", "set a new password", ctl_users_passwd },
	{ "users", "set-host", "ADDRESS SHARD [--wait SECONDS]",
	  "switch mailHost (a move's last step); done once every provider that answers returns it (default wait 5 s)",
	  ctl_users_set_host },
	{ "users", "bulk", "--count N [--domain D] [--shards S1,S2] [--first K] [--hash ssha512|crypt]",
	  "load-test accounts userK@D / secretK (offline slapadd when the local slapd is stopped)",
	  ctl_users_bulk },
	{ "queue", "list", "", "list the MTA queue (id, size, age, sender, recipients, status, last error)", ctl_queue },
	{ "queue", "show", "ID", "show one queued message: envelope and per-recipient state", ctl_queue },
	{ "queue", "flush", "[ID]", "retry deferred messages now (all, or ID)", ctl_queue },
	{ "queue", "hold", "ID", "keep a message from delivery until released", ctl_queue },
	{ "queue", "release", "ID", "release a held message", ctl_queue },
	{ "queue", "delete", "ID", "remove a message from the queue (no bounce)", ctl_queue },
	{ "queue", "stats", "", "queue and group-commit counters of the running MTA", ctl_queue },
	{ "store", "stat", "SHARD", "a store shard's mailboxes, messages, bytes, log and checkpoint state, flush counters",
	  ctl_store_stat },
	{ "store", "folders", "SHARD USER", "a user's mailboxes (INBOX and IMAP folders) with their counts, UIDVALIDITY, UIDNEXT, special use",
	  ctl_store_folders },
	{ "store", "messages", "SHARD USER [FOLDER]", "a user's folders (or one) with UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ, and each message's uid, MODSEQ, size, INTERNALDATE, UIDL and flags",
	  ctl_store_messages },
	{ "store", "backup", "SHARD DIR", "hot backup of a store shard into DIR (which then opens as a store)",
	  ctl_store_backup },
};

static void usage(FILE *out, const char *progname)
{
	fprintf(out, "usage: %s [-c FILE] COMMAND [ARGS]\n\n"
		"  -c FILE   config file (default %s)\n\ncommands:\n",
		progname, MT_DEFAULT_CONFIG_FILE);
	for (size_t i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]); i++) {
		const struct ctl_command *cmd = &ctl_commands[i];
		fprintf(out, "  %s %s%s%s\n      %s\n", cmd->group, cmd->name,
			cmd->usage[0] ? " " : "", cmd->usage, cmd->help);
	}
}

int main(int argc, char **argv)
{
	struct ctl_context ctx = {
		.config_path = MT_DEFAULT_CONFIG_FILE,
		.progname = "mailtierctl",
	};
	mt_log_init("mailtierctl", MT_LOG_TARGET_STDERR);

	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "+c:h", options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			ctx.config_path = optarg;
			break;
		case 'h':
			usage(stdout, ctx.progname);
			return CTL_EXIT_OK;
		default:
			usage(stderr, ctx.progname);
			return CTL_EXIT_USAGE;
		}
	}
	if (argc - optind < 2) {
		usage(stderr, ctx.progname);
		return CTL_EXIT_USAGE;
	}
	const char *group = argv[optind], *name = argv[optind + 1];
	for (size_t i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]); i++) {
		const struct ctl_command *cmd = &ctl_commands[i];
		if (strcmp(cmd->group, group) == 0 && strcmp(cmd->name, name) == 0) {
			/* The command sees argv[0] = its name, then its arguments. */
			return cmd->run(&ctx, argc - optind - 1, argv + optind + 1);
		}
	}
	fprintf(stderr, "%s: unknown command '%s %s'\n", ctx.progname, group, name);
	usage(stderr, ctx.progname);
	return CTL_EXIT_USAGE;
}
