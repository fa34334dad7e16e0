/* ctl-util.h — small helpers mailtierctl's commands share: running a
 * program, pid files, secret files, and the data directory. */
#ifndef MT_CTL_UTIL_H
#define MT_CTL_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Run argv (PATH search) and wait; the exit status, or -1 if it could not
 * start or died of a signal. */
int ctl_run(char *const argv[]);
/* The same with its stdout and stderr appended to log_path. */
int ctl_run_logged(char *const argv[], const char *log_path);

/* Start argv with a pipe on its stdin and its stdout on /dev/null (stderr
 * is kept); *to_child_r is the write end (with a large buffer). Finish with ctl_pipe_finish(), which closes it and waits. */
pid_t ctl_pipe_start(char *const argv[], FILE **to_child_r);
int ctl_pipe_finish(pid_t pid, FILE **to_child_p);

/* The pid in FILE if that process is alive, else 0. */
pid_t ctl_pidfile_alive(const char *path);
/* SIGTERM pid and wait up to timeout_ms for it to exit, SIGKILL after. */
bool ctl_stop_pid(pid_t pid, unsigned int timeout_ms);

/* Whole file as a NUL-terminated string (trailing newlines removed), or
 * NULL with *error_r. */
char *ctl_read_file(const char *path, const char **error_r);
/* Write text to path atomically with mode 0600 (no trailing newline). */
bool ctl_write_private(const char *path, const char *text, const char **error_r);
/* A random password of 24 characters [A-Za-z0-9]. */
char *ctl_random_password(void);

/* Path of a data file shipped with mailtier (e.g. "dirsvc/mailtier.schema"):
 * $MAILTIER_DATADIR, then the installed $(pkgdatadir), then the source tree
 * this mailtierctl was built from. Caller frees. */
char *ctl_data_path(const char *relative);

#endif
