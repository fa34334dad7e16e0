/* commands.h — mailtier-load's commands, one file each: run and ramp
 * (cmd-run.c), fill (cmd-fill.c), sink (cmd-sink.c), agent (cmd-agent.c).
 * Each takes its argv (argv[0] is the command name) and returns the exit
 * status. Trust boundary: the operator's flags (cli.h). */
#ifndef LG_COMMANDS_H
#define LG_COMMANDS_H

#include <stdbool.h>

int lg_cmd_run(int argc, char **argv, bool ramp);
int lg_cmd_fill(int argc, char **argv);
int lg_cmd_sink(int argc, char **argv);
int lg_cmd_agent(int argc, char **argv);

#endif
