/* errors.h — the load generator's one rule for the messages its functions
 * hand back through `const char **error_r` (STYLE.md: the caller decides
 * whether a message is printed, logged or sent to the manager).
 *
 * The rule: a message handed back by a loadgen function lives until the
 * process exits. It is a string literal, or text kept by lg_error_fmt() or
 * lg_error_keep() below; never a pointer into an object that the callee,
 * or its caller, may free before the message is used, nor a static buffer
 * that the next failure overwrites. So a caller may print it after tearing
 * down whatever failed: lg_engine_run() frees its loop before cmd-run.c
 * prints the error, and a loop's own messages (mt_listener_add's "listen
 * HOST:PORT: Address already in use") went with it (#37 item 20: bytes
 * of freed memory printed instead of the reason).
 *
 * lib/'s messages, and strerror()'s, are valid only until the next call
 * into the module that made them (lib/secret.h): where a loadgen function
 * receives one and hands it on, it keeps it first (lg_error_keep). Each
 * distinct text is kept once, so the memory is bounded by the kinds of
 * failure (a handful per run), not by how often one recurs.
 *
 * Trust boundary: none of its own; a message may quote what a server, an
 * agent or the operator sent (quoted, bounded by the caller's format). */
#ifndef LG_ERRORS_H
#define LG_ERRORS_H

#include <stdbool.h>

/* message, kept for the process's life (the same text: the same copy). */
const char *lg_error_keep(const char *message);
/* A formatted message, kept as lg_error_keep() does (at most
 * LG_ERROR_MAX - 1 bytes: longer text is cut). */
#define LG_ERROR_MAX 512
const char *lg_error_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Keep *error_r in place (a message received from lib/) and return false:
 * `return lg_error_kept(error_r);` after a failed call into lib/. */
bool lg_error_kept(const char **error_r);

#endif
