/* log.c — line logger (see log.h). Builds each line in a fixed buffer, escapes
 * control characters, and emits it with one write(2) or syslog(3) call. */
#include "log.h"
#include "buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 4096

static const char *log_ident = "mailtier";
static enum mt_log_target log_target = MT_LOG_TARGET_STDERR;
static enum mt_log_level log_min_level = MT_LOG_INFO;
static int log_redirect_fd = -1;

static const char *const level_names[] = {
	[MT_LOG_DEBUG] = "debug", [MT_LOG_INFO] = "info",
	[MT_LOG_WARNING] = "warning", [MT_LOG_ERROR] = "error",
	[MT_LOG_FATAL] = "fatal", [MT_LOG_PANIC] = "panic",
};

/* syslog(3)/sd-daemon priorities for each level. */
static const int level_priority[] = {
	[MT_LOG_DEBUG] = LOG_DEBUG, [MT_LOG_INFO] = LOG_INFO,
	[MT_LOG_WARNING] = LOG_WARNING, [MT_LOG_ERROR] = LOG_ERR,
	[MT_LOG_FATAL] = LOG_CRIT, [MT_LOG_PANIC] = LOG_ALERT,
};

void mt_log_init(const char *ident, enum mt_log_target target)
{
	log_ident = ident;
	if (target == MT_LOG_TARGET_AUTO)
		target = getenv("JOURNAL_STREAM") != NULL ?
			MT_LOG_TARGET_JOURNAL : MT_LOG_TARGET_SYSLOG;
	log_target = target;
	if (target == MT_LOG_TARGET_SYSLOG)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_MAIL);
}

void mt_log_set_min_level(enum mt_log_level level) { log_min_level = level; }

bool mt_log_to_stderr(void) { return log_target != MT_LOG_TARGET_SYSLOG; }

bool mt_log_level_parse(const char *name, enum mt_log_level *level_r)
{
	for (int i = MT_LOG_DEBUG; i <= MT_LOG_ERROR; i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*level_r = (enum mt_log_level)i;
			return true;
		}
	}
	return false;
}

void mt_log_redirect_fd(int fd) { log_redirect_fd = fd; }

/* Append src to line[*pos..max), escaping control bytes as \xNN. */
static void append_escaped(char *line, size_t *pos, size_t max, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	for (; *src != '\0' && *pos + 4 < max; src++) {
		unsigned char c = (unsigned char)*src;
		if (c < 0x20 || c == 0x7f) {
			line[(*pos)++] = '\\';
			line[(*pos)++] = 'x';
			line[(*pos)++] = hex[c >> 4];
			line[(*pos)++] = hex[c & 15];
		} else {
			line[(*pos)++] = (char)c;
		}
	}
}

static void write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		data += n;
		len -= (size_t)n;
	}
}

void mt_vlog(enum mt_log_level level, const struct mt_logctx *ctx,
	     const char *fmt, va_list ap)
{
	if (level < log_min_level)
		return;
	int saved_errno = errno;
	char msg[LOG_LINE_MAX];
	vsnprintf(msg, sizeof(msg), fmt, ap);

	char line[LOG_LINE_MAX + 256];
	size_t pos = 0;
	enum mt_log_target target = log_redirect_fd >= 0 ?
		MT_LOG_TARGET_STDERR : log_target;
	if (target == MT_LOG_TARGET_JOURNAL) {
		pos += (size_t)snprintf(line, sizeof(line), "<%d>%s: ",
					level_priority[level], level_names[level]);
	} else if (target == MT_LOG_TARGET_STDERR) {
		struct timespec ts;
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		pos += strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
		pos += (size_t)snprintf(line + pos, sizeof(line) - pos,
					".%03ldZ %s[%ld] %s: ", ts.tv_nsec / 1000000,
					log_ident, (long)getpid(), level_names[level]);
	} else {
		pos += (size_t)snprintf(line, sizeof(line), "%s: ",
					level_names[level]);
	}
	if (ctx != NULL) {
		pos += (size_t)snprintf(line + pos, sizeof(line) - pos,
					"session=%016llx ",
					(unsigned long long)ctx->session_id);
		if (ctx->queue_id[0] != '\0') {
			pos += (size_t)snprintf(line + pos, sizeof(line) - pos,
						"queue=");
			append_escaped(line, &pos, sizeof(line) - 2, ctx->queue_id);
			line[pos++] = ' ';
		}
	}
	append_escaped(line, &pos, sizeof(line) - 2, msg);
	if (target == MT_LOG_TARGET_SYSLOG) {
		line[pos] = '\0';
		syslog(level_priority[level], "%s", line);
	} else {
		line[pos++] = '\n';
		write_all(log_redirect_fd >= 0 ? log_redirect_fd : STDERR_FILENO,
			  line, pos);
	}
	errno = saved_errno;
}

void mt_log(enum mt_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mt_vlog(level, NULL, fmt, ap);
	va_end(ap);
}

void mt_slog(enum mt_log_level level, const struct mt_logctx *ctx,
	     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mt_vlog(level, ctx, fmt, ap);
	va_end(ap);
}

void mt_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mt_vlog(MT_LOG_FATAL, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}

void mt_panic(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	mt_vlog(MT_LOG_PANIC, NULL, fmt, ap);
	va_end(ap);
	abort();
}

uint64_t mt_session_id_new(void)
{
	static _Atomic uint64_t counter;
	static _Atomic uint64_t base;
	uint64_t b = atomic_load(&base);
	if (b == 0) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		r |= 1;	/* never zero */
		uint64_t expected = 0;
		if (!atomic_compare_exchange_strong(&base, &expected, r))
			r = expected;
		b = r;
	}
	/* A random base plus a counter: unique for the life of the process. */
	return b + atomic_fetch_add(&counter, 1);
}

void mt_log_field(struct mt_buf *out, const char *key, const char *value,
		  size_t max_len)
{
	static const char hex[] = "0123456789abcdef";
	mt_buf_appendf(out, " %s=", key);
	for (size_t i = 0; value[i] != '\0' && i < max_len; i++) {
		unsigned char c = (unsigned char)value[i];
		if (c <= 0x20 || c >= 0x7f || c == '=' || c == '\\') {
			char esc[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
			mt_buf_append(out, esc, sizeof(esc));
		} else {
			mt_buf_append_char(out, (char)c);
		}
	}
}
