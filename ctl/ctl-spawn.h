/* ctl-spawn.h — starting a daemon in the background the way systemd
 * would: detached, its output appended to a log file, readiness from its
 * READY=1 on a notify socket we own (Type=notify: mailtier's daemons) or
 * from a probe the caller gives (a daemon that does not notify, such as
 * rspamd), optionally as another user (User=). Used by `mailtierctl
 * cluster up`. */
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
	/* When set, ready means probe(probe_context) returned true (asked
	 * every 100 ms; it must bound its own wait) instead of READY=1. */
	bool (*probe)(void *probe_context);
	void *probe_context;
	/* When uid is not 0: the daemon runs as uid and gid with no
	 * supplementary groups (we must be root for that). */
	uid_t uid;
	gid_t gid;
};

/* Start s->argv in its own session and wait until it is ready (READY=1
 * or s->probe), exits, or the timeout passes. On success the pid (also
 * written to pid_path); on failure 0 with *error_r set (the daemon, if
 * still running, is killed with its process group) — the log file's last
 * lines tell why. */
pid_t ctl_spawn_daemon(const struct ctl_spawn *s, char **error_r);

/* The same in two halves, for daemons that become ready only together
 * (the sites of a replication group elect a master once a majority of
 * them runs): start several, then wait for each. s must live until the
 * wait. ctl_spawn_start: false with *error_r set if nothing was started
 * (h is then empty); ctl_spawn_wait: as ctl_spawn_daemon, and h is done
 * with either way. The timeout counts from the start. */
struct ctl_spawned {
	const struct ctl_spawn *s;
	pid_t pid;
	int notify_fd;	/* -1 with a probe */
	long long deadline_ms;
};
bool ctl_spawn_start(const struct ctl_spawn *s, struct ctl_spawned *h, char **error_r);
pid_t ctl_spawn_wait(struct ctl_spawned *h, char **error_r);

/* The path of a program shipped with mailtier, e.g. ("mta",
 * "mailtier-mta"): $MAILTIER_SBINDIR/NAME, else DIR/NAME when this
 * mailtierctl runs from a build tree (its sibling directory DIR), else
 * SBINDIR/NAME. Caller frees. */
char *ctl_program_path(const char *dir, const char *name);

/* The running mailtierctl itself (for running its own subcommands). */
char *ctl_self_path(void);

#endif
