/* wire.h — the manager/agent protocol of mailtier-load: text lines over
 * one TCP connection (an agent) or a socketpair (a local worker).
 *
 *   manager                         agent
 *   hello mailtier-load-agent V ... hello mailtier-load-agent V ...
 *   set NAME VALUE   (run options, run-options.h)
 *   share INDEX COUNT RUNID
 *   prepare                         ready | error TEXT
 *   go                              beat N N ...        (about once a second)
 *   seen ID COUNT    (sink arrivals) measured LEVEL + a stats block
 *   stop             (ramp ends)    result LEVELS + blocks, then done
 *   interrupt        (SIGINT)       error TEXT          (any time)
 *
 * A stats block is "stats TAG", then "fn F ATTEMPTS PASS COUNT SUM MIN MAX
 * [BUCKET:COUNT ...]" per function (sparse log-linear histogram buckets),
 * "sessions", "errors", "counters" lines of numbers in enum order, "end".
 * Both ends must be the same protocol version and agree on the enum sizes
 * (checked in the hello), so a number's meaning is its position.
 * Trust boundary: each side parses the other's lines strictly (bounded
 * line length, numbers in range, indexes checked); a bad line ends the run
 * with an error, never a crash. The agent trusts the manager to name the
 * servers to load (it is a control connection: listen on a management
 * address only). */
#ifndef LG_WIRE_H
#define LG_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "engine.h"
#include "progress.h"
#include "stats.h"

#define LG_WIRE_VERSION 1
#define LG_WIRE_LINE_MAX (256 * 1024)

/* Blocking line I/O with a deadline (lg_now_us() clock), for the
 * handshake: read one line (without the LF) into line; write all. */
bool lg_wire_read_line(int fd, struct mt_buf *line, uint64_t deadline_us,
		       const char **error_r);
bool lg_wire_write(int fd, const void *data, size_t len, uint64_t deadline_us,
		   const char **error_r);

/* "hello ..." and its check against our own. */
void lg_wire_hello(struct mt_buf *out);
bool lg_wire_hello_check(const char *line, const char **error_r);

/* "set NAME VALUE" for every option an agent needs. */
void lg_wire_settings(struct mt_buf *out, const struct lg_run_settings *set);

void lg_wire_stats(struct mt_buf *out, const char *tag, const struct lg_stats *st);
/* One line of a stats block (after its "stats" line), added into target:
 * 1 more lines follow, 0 that was "end", -1 a bad line. */
int lg_wire_stats_line(struct lg_stats *target, const char *line,
		       const char **error_r);

void lg_wire_beat(struct mt_buf *out, const struct lg_progress *p);
bool lg_wire_beat_parse(const char *args, struct lg_progress *p);

/* A whole run's result, ended by "done". */
void lg_wire_result(struct mt_buf *out, const struct lg_run_result *r);

/* Split "word rest": the first word's length; *rest_r after the blanks. */
size_t lg_wire_word(const char *line, const char **rest_r);
/* Parse exactly n unsigned numbers separated by blanks. */
bool lg_wire_numbers(const char *args, uint64_t *out, size_t n);

#endif
