/* ctl-spawn.c — start a daemon detached and wait for its sd_notify
 * READY=1 (see ctl-spawn.h).
 *
 * The notify socket is an abstract-namespace datagram socket named after
 * this process and the daemon, so nothing is left on disk and two
 * `cluster up`s never share one. Once we exit, the daemon's next
 * notification (RELOADING=1, STATUS=, STOPPING=1) finds nobody bound to
 * the name, and the daemon stops notifying (lib/sdnotify.c) — as a
 * daemon started by hand never notifies.
 *
 * A daemon that does not notify (rspamd) gets no NOTIFY_SOCKET; the
 * caller's probe says when it is ready instead. One that must not run as
 * root gets its user and group in the child before exec, as a unit's
 * User= does.
 *
 * Trust boundary: the messages come from a daemon we started; only
 * "READY=1" is looked for, anything else is ignored. */
#include "ctl-spawn.h"
#include "clock.h"
#include "alloc.h"
#include "ctl-util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int notify_socket(const char *name, char **env_value_r)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int len = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
			   "mailtierctl-%ld-%s", (long)getpid(), name);
	if (len < 0 || (size_t)len >= sizeof(sun.sun_path) - 1)
		return -1;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
	if (bind(fd, (struct sockaddr *)&sun, alen) != 0) {
		close(fd);
		return -1;
	}
	*env_value_r = mt_xasprintf("@%s", sun.sun_path + 1);
	return fd;
}

/* The child: s->uid if set (no supplementary groups, then the group,
 * then the user); false with errno set. */
static bool drop_privileges(const struct ctl_spawn *s)
{
	if (s->uid == 0)
		return true;
	return setgroups(0, NULL) == 0 && setgid(s->gid) == 0 && setuid(s->uid) == 0;
}

/* The child: own session, stdin from /dev/null, output to the log, the
 * notify socket (when there is one) in NOTIFY_SOCKET. */
static _Noreturn void exec_daemon(const struct ctl_spawn *s, const char *notify, int log_fd)
{
	setsid();
	int null_fd = open("/dev/null", O_RDONLY);
	if (null_fd >= 0)
		dup2(null_fd, STDIN_FILENO);
	dup2(log_fd, STDOUT_FILENO);
	dup2(log_fd, STDERR_FILENO);
	if (notify != NULL)
		setenv("NOTIFY_SOCKET", notify, 1);
	else
		unsetenv("NOTIFY_SOCKET");
	/* As the units' LimitNOFILE= does: the MMP sizes itself by it. */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	signal(SIGPIPE, SIG_DFL);
	if (!drop_privileges(s)) {
		fprintf(stderr, "cannot become uid %ld gid %ld: %s\n", (long)s->uid,
			(long)s->gid, strerror(errno));
		_exit(126);
	}
	execv(s->argv[0], s->argv);
	fprintf(stderr, "cannot run %s: %s\n", s->argv[0], strerror(errno));
	_exit(127);
}

static bool has_ready(const char *msg)
{
	for (const char *line = msg; line != NULL; ) {
		if (strncmp(line, "READY=1", 7) == 0 && (line[7] == '\n' || line[7] == '\0'))
			return true;
		line = strchr(line, '\n');
		if (line != NULL)
			line++;
	}
	return false;
}

/* Wait until pid is ready: READY=1 on fd, or s->probe (fd is -1 then);
 * "" on success, else why not. */
static const char *wait_ready(const struct ctl_spawn *s, int fd, pid_t pid,
			      long long deadline)
{
	for (;;) {
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? "exited before it was ready" :
				"died of a signal before it was ready";
		long long left = deadline - ((long long)mt_clock_ms());
		if (left <= 0)
			return "not ready within the timeout";
		struct pollfd p = { .fd = fd, .events = POLLIN };
		/* Short polls: an exit shows up through waitpid, not the socket. */
		if (poll(&p, fd >= 0 ? 1 : 0, left < 100 ? (int)left : 100) < 0)
			continue;
		if (s->probe != NULL) {
			if (s->probe(s->probe_context))
				return "";
			continue;
		}
		if ((p.revents & POLLIN) == 0)
			continue;
		char msg[4096];
		ssize_t n = recv(fd, msg, sizeof(msg) - 1, 0);
		if (n <= 0)
			continue;
		msg[n] = '\0';
		if (has_ready(msg))
			return "";
	}
}

static bool write_pid(const char *path, pid_t pid)
{
	char text[32];
	snprintf(text, sizeof(text), "%ld\n", (long)pid);
	const char *error;
	return ctl_write_private(path, text, &error);
}

bool ctl_spawn_start(const struct ctl_spawn *s, struct ctl_spawned *h, char **error_r)
{
	*h = (struct ctl_spawned){ .s = s, .notify_fd = -1 };
	char *notify = NULL;
	int fd = -1;
	if (s->probe == NULL && (fd = notify_socket(s->name, &notify)) < 0) {
		*error_r = mt_xasprintf("notify socket: %s", strerror(errno));
		return false;
	}
	int log_fd = open(s->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (log_fd < 0) {
		*error_r = mt_xasprintf("%s: %s", s->log_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(notify);
		return false;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		exec_daemon(s, notify, log_fd);
	close(log_fd);
	free(notify);
	if (pid < 0) {
		*error_r = mt_xasprintf("fork: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	h->pid = pid;
	h->notify_fd = fd;
	h->deadline_ms = ((long long)mt_clock_ms()) + s->ready_timeout_ms;
	return true;
}

pid_t ctl_spawn_wait(struct ctl_spawned *h, char **error_r)
{
	const struct ctl_spawn *s = h->s;
	pid_t pid = h->pid;
	const char *why = wait_ready(s, h->notify_fd, pid, h->deadline_ms);
	if (h->notify_fd >= 0)
		close(h->notify_fd);
	h->notify_fd = -1;
	h->pid = 0;
	if (why[0] != '\0') {
		if (kill(pid, 0) == 0)
			ctl_stop_pid(pid, 5000);
		/* And whatever it forked (rspamd's workers): its session's
		 * process group, whose id cannot be reused while one lives. */
		kill(-pid, SIGKILL);
		*error_r = mt_xasprintf("%s %s (see %s)", s->name, why, s->log_path);
		return 0;
	}
	if (!write_pid(s->pid_path, pid)) {
		*error_r = mt_xasprintf("%s: cannot write", s->pid_path);
		ctl_stop_pid(pid, 5000);
		return 0;
	}
	return pid;
}

pid_t ctl_spawn_daemon(const struct ctl_spawn *s, char **error_r)
{
	struct ctl_spawned h;
	if (!ctl_spawn_start(s, &h, error_r))
		return 0;
	return ctl_spawn_wait(&h, error_r);
}

char *ctl_self_path(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (n <= 0)
		return mt_xstrdup(SBINDIR "/mailtierctl");
	path[n] = '\0';
	return mt_xstrdup(path);
}

char *ctl_program_path(const char *dir, const char *name)
{
	const char *env = getenv("MAILTIER_SBINDIR");
	if (env != NULL && env[0] != '\0')
		return mt_xasprintf("%s/%s", env, name);
	/* A build tree: BUILD/ctl/mailtierctl next to BUILD/DIR/NAME. */
	char *self = ctl_self_path();
	char *slash = strrchr(self, '/');
	if (slash != NULL) {
		*slash = '\0';
		slash = strrchr(self, '/');
	}
	if (slash != NULL && strcmp(slash, "/ctl") == 0) {
		*slash = '\0';
		char *path = mt_xasprintf("%s/%s/%s", self, dir, name);
		if (access(path, X_OK) == 0) {
			free(self);
			return path;
		}
		free(path);
	}
	free(self);
	return mt_xasprintf("%s/%s", SBINDIR, name);
}
