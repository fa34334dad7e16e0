/* ctl-spawn.h — starting a mailtier daemon in the background the way
 * systemd would (Type=notify): detached, its output appended to a log
 * file, readiness from its READY=1 on a notify socket we own. Used by
 * `mailtierctl cluster up`. */
#ifndef MT_CTL_SPAWN_H
#define MT_CTL_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

struct ctl_spawn {
	const char *name;		/* "mta", "shard1" — for messages */
	char *const *argv;		/* argv[0] is a path */
	const char *log_path;		/* stdout and stderr appended here */
	const char *pid_path;		/* written once the daemon is ready */
	unsigned int ready_timeout_ms;
};

/* Start s->argv in its own session and wait until it sends READY=1, exits,
 * or the timeout passes. On success the pid (also written to pid_path);
 * on failure 0 with *error_r set (the daemon, if still running, is
 * killed) — the log file's last lines tell why. */
pid_t ctl_spawn_daemon(const struct ctl_spawn *s, char **error_r);

/* The path of a program shipped with mailtier, e.g. ("mta",
 * "mailtier-mta"): $MAILTIER_SBINDIR/NAME, else DIR/NAME when this
 * mailtierctl runs from a build tree (its sibling directory DIR), else
 * SBINDIR/NAME. Caller frees. */
char *ctl_program_path(const char *dir, const char *name);

/* The running mailtierctl itself (for running its own subcommands). */
char *ctl_self_path(void);

#endif
