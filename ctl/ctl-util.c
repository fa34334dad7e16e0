/* ctl-util.c — process, pid-file and secret-file helpers for mailtierctl
 * (see ctl-util.h). Trust boundary: operator-run; paths come from the
 * operator's command line or config. */
#include "ctl-util.h"
#include "alloc.h"
#include "buf.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int wait_status(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int ctl_run(char *const argv[])
{
	pid_t pid;
	fflush(NULL);	/* our output first, then the child's */
	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		return -1;
	return wait_status(pid);
}

int ctl_run_logged(char *const argv[], const char *log_path)
{
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path,
					 O_WRONLY | O_CREAT | O_APPEND, 0640);
	posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	return rc != 0 ? -1 : wait_status(pid);
}

pid_t ctl_pipe_start(char *const argv[], FILE **to_child_r)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
	/* slapadd narrates every entry on stdout; errors go to stderr. */
	posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null",
					 O_WRONLY, 0);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	close(fds[0]);
	if (rc != 0) {
		close(fds[1]);
		return -1;
	}
	*to_child_r = fdopen(fds[1], "w");
	if (*to_child_r == NULL) {
		close(fds[1]);
		wait_status(pid);
		return -1;
	}
	setvbuf(*to_child_r, NULL, _IOFBF, 1 << 20);
	return pid;
}

int ctl_pipe_finish(pid_t pid, FILE **to_child_p)
{
	bool write_ok = true;
	if (*to_child_p != NULL) {
		write_ok = fclose(*to_child_p) == 0;
		*to_child_p = NULL;
	}
	int status = wait_status(pid);
	return write_ok ? status : (status == 0 ? -1 : status);
}

/* Alive and not a zombie: a daemon whose parent exited is reparented to
 * pid 1, and not every pid 1 (some containers') reaps it. */
static bool pid_running(pid_t pid)
{
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return false;
	char path[64], stat[256];
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return true;	/* no /proc: kill() said it exists */
	size_t n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = '\0';
	/* "PID (COMM) STATE ...": COMM may hold spaces and parentheses. */
	const char *close_paren = strrchr(stat, ')');
	return close_paren == NULL || close_paren[1] != ' ' || close_paren[2] != 'Z';
}

pid_t ctl_pidfile_alive(const char *path)
{
	const char *error;
	char *text = ctl_read_file(path, &error);
	if (text == NULL)
		return 0;
	char *end;
	long pid = strtol(text, &end, 10);
	bool valid = end != text && pid > 1 && (*end == '\0' || *end == '\n');
	free(text);
	if (!valid || !pid_running((pid_t)pid))
		return 0;
	return (pid_t)pid;
}

static bool pid_gone(pid_t pid)
{
	/* Reap it if it is our child; otherwise just probe. */
	if (waitpid(pid, NULL, WNOHANG) == pid)
		return true;
	return !pid_running(pid);
}

bool ctl_stop_pid(pid_t pid, unsigned int timeout_ms)
{
	if (kill(pid, SIGTERM) != 0)
		return errno == ESRCH;
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	for (unsigned int waited = 0; waited < timeout_ms; waited += 20) {
		if (pid_gone(pid))
			return true;
		nanosleep(&tick, NULL);
	}
	kill(pid, SIGKILL);
	for (int i = 0; i < 250; i++) {
		if (pid_gone(pid))
			break;
		nanosleep(&tick, NULL);
	}
	return false;
}

char *ctl_read_file(const char *path, const char **error_r)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*error_r = strerror(errno);
		return NULL;
	}
	struct mt_buf buf = MT_BUF_INIT;
	char chunk[4096];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		mt_buf_append(&buf, chunk, (size_t)n);
	int saved = errno;
	close(fd);
	if (n < 0) {
		mt_buf_free(&buf);
		*error_r = strerror(saved);
		return NULL;
	}
	while (buf.len > 0 && (buf.data[buf.len - 1] == '\n' || buf.data[buf.len - 1] == '\r'))
		buf.data[--buf.len] = '\0';
	return mt_buf_steal(&buf);
}

bool ctl_write_private(const char *path, const char *text, const char **error_r)
{
	char *tmp = mt_xasprintf("%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool ok = fd >= 0;
	if (ok) {
		size_t len = strlen(text);
		ok = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
		ok = close(fd) == 0 && ok;
	}
	ok = ok && rename(tmp, path) == 0;
	if (!ok) {
		*error_r = strerror(errno);
		unlink(tmp);
	}
	free(tmp);
	return ok;
}

char *ctl_random_password(void)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char raw[24];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		abort();	/* the kernel's CSPRNG does not fail this way */
	char *out = mt_xmalloc(sizeof(raw) + 1);
	for (size_t i = 0; i < sizeof(raw); i++)
		out[i] = alphabet[raw[i] % (sizeof(alphabet) - 1)];
	out[sizeof(raw)] = '\0';
	return out;
}

char *ctl_data_path(const char *relative)
{
	const char *env = getenv("MAILTIER_DATADIR");
	const char *bases[] = { env, PKGDATADIR, MT_SOURCE_DIR };
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		if (bases[i] == NULL || bases[i][0] == '\0')
			continue;
		char *path = mt_xasprintf("%s/%s", bases[i], relative);
		if (access(path, R_OK) == 0)
			return path;
		free(path);
	}
	return mt_xasprintf("%s/%s", PKGDATADIR, relative);
}
