/* log.h — one line per event, key=value fields, one severity ladder.
 *
 * Targets: stderr with sd-daemon "<N>" priority prefixes when running under
 * systemd (JOURNAL_STREAM set), syslog otherwise, or plain stderr with a
 * timestamp when asked (foreground runs, tests, the local cluster).
 * Every line about a session carries session=ID and, once known, queue=ID:
 * use mt_slog() with a struct mt_logctx so one grep follows a message across
 * tiers. Thread-safe: each line is one write(2).
 * Trust boundary: messages may contain client data; control characters are
 * escaped so a client cannot forge log lines. */
#ifndef MT_LOG_H
#define MT_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mt_log_level {
	MT_LOG_DEBUG,
	MT_LOG_INFO,
	MT_LOG_WARNING,
	MT_LOG_ERROR,	/* recoverable */
	MT_LOG_FATAL,	/* clean exit(1) */
	MT_LOG_PANIC,	/* internal inconsistency: abort() */
};

enum mt_log_target {
	MT_LOG_TARGET_AUTO,	/* journal-style stderr under systemd, else syslog */
	MT_LOG_TARGET_STDERR,	/* timestamped lines on stderr */
	MT_LOG_TARGET_JOURNAL,	/* "<N>" prefixed lines on stderr */
	MT_LOG_TARGET_SYSLOG,
};

/* Per-session context prefixed to a line: session=%016x [queue=ID]. */
struct mt_logctx {
	uint64_t session_id;
	char queue_id[32];	/* empty until known */
};

void mt_log_init(const char *ident, enum mt_log_target target);
void mt_log_set_min_level(enum mt_log_level level);
/* Lines reach stderr (STDERR or JOURNAL), not only syslog. */
bool mt_log_to_stderr(void);
/* Parse "debug|info|warning|error"; false on anything else. */
bool mt_log_level_parse(const char *name, enum mt_log_level *level_r);

void mt_log(enum mt_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void mt_vlog(enum mt_log_level level, const struct mt_logctx *ctx,
	     const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
void mt_slog(enum mt_log_level level, const struct mt_logctx *ctx,
	     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define mt_debug(...) mt_log(MT_LOG_DEBUG, __VA_ARGS__)
#define mt_info(...) mt_log(MT_LOG_INFO, __VA_ARGS__)
#define mt_warning(...) mt_log(MT_LOG_WARNING, __VA_ARGS__)
#define mt_error(...) mt_log(MT_LOG_ERROR, __VA_ARGS__)

/* Log and exit(1). */
_Noreturn void mt_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Log and abort(): a bug, not an operating condition. */
_Noreturn void mt_panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

struct mt_buf;
/* Append " key=value" to out, the value (its first max_len octets) with
 * every octet that could end it or forge a field of a key=value line (a
 * space, '=', '\\', a control or 8-bit octet) written as \xNN: for values a
 * client chose (an ID field, a HELO name), so "1.2.3.4 user=admin" stays
 * one value. */
void mt_log_field(struct mt_buf *out, const char *key, const char *value,
		  size_t max_len);

/* A new process-unique 64-bit session id (random base + counter). */
uint64_t mt_session_id_new(void);

/* Test hook: send lines to this fd instead (-1 restores the target). */
void mt_log_redirect_fd(int fd);

#endif
