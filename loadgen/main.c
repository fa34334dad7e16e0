/* main.c — mailtier-load: the SPECmail2001-style load generator, its SMTP
 * sink, the initial mailbox fill and the agent of a distributed run. This
 * file only picks the command (commands.h); each lives in its cmd-*.c.
 * Exit status: 0 QoS met (or the command did its job), 1 not met, 2 usage
 * or set-up error. Trust boundary: the operator's command line. */
#include "cli.h"
#include "commands.h"

#include <stdio.h>
#include <string.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

int main(int argc, char **argv)
{
	if (argc < 2)
		lg_usage_error("a command is required");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		lg_usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("mailtier-load %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "run") == 0)
		return lg_cmd_run(argc - 1, argv + 1, false);
	if (strcmp(argv[1], "ramp") == 0)
		return lg_cmd_run(argc - 1, argv + 1, true);
	if (strcmp(argv[1], "fill") == 0)
		return lg_cmd_fill(argc - 1, argv + 1);
	if (strcmp(argv[1], "sink") == 0)
		return lg_cmd_sink(argc - 1, argv + 1);
	if (strcmp(argv[1], "agent") == 0)
		return lg_cmd_agent(argc - 1, argv + 1);
	lg_usage_error("unknown command '%s'", argv[1]);
}
