/* wire.c — the manager/agent protocol's encoding (see wire.h).
 * Trust boundary: lines from the other end are parsed strictly; every
 * number is bounded by its field and every index checked. */
#include "wire.h"

#include "errors.h"
#include "alloc.h"
#include "run-options.h"
#include "session.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define N_COUNTERS (sizeof(struct lg_counters) / sizeof(uint64_t))
#define N_PROGRESS (sizeof(struct lg_progress) / sizeof(uint64_t))
_Static_assert(sizeof(struct lg_counters) % sizeof(uint64_t) == 0, "counters are uint64_t");
_Static_assert(sizeof(struct lg_progress) % sizeof(uint64_t) == 0, "progress is uint64_t");

/* Wait for fd to be ready for events until the deadline. */
static bool wait_fd(int fd, short events, uint64_t deadline_us, const char **error_r)
{
	for (;;) {
		uint64_t now = lg_now_us();
		struct pollfd pfd = { .fd = fd, .events = events };
		if (now >= deadline_us) {
			*error_r = "timed out";
			return false;
		}
		int ms = (int)((deadline_us - now + 999) / 1000);
		int rc = poll(&pfd, 1, ms > 1000 ? 1000 : ms);
		if (rc > 0)
			return true;
		if (rc < 0 && errno != EINTR) {
			*error_r = lg_error_keep(strerror(errno));
			return false;
		}
	}
}

bool lg_wire_read_line(int fd, struct mt_buf *line, uint64_t deadline_us,
		       const char **error_r)
{
	char chunk[4096];

	mt_buf_reset(line);
	/* Peek, and take only up to the LF: what follows stays in the
	 * socket for whoever reads next (the event loop). */
	for (;;) {
		if (!wait_fd(fd, POLLIN, deadline_us, error_r))
			return false;
		ssize_t n = recv(fd, chunk, sizeof(chunk), MSG_PEEK);
		if (n == 0) {
			*error_r = "connection closed";
			return false;
		}
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			*error_r = lg_error_keep(strerror(errno));
			return false;
		}
		char *lf = memchr(chunk, '\n', (size_t)n);
		size_t take = lf != NULL ? (size_t)(lf - chunk) + 1 : (size_t)n;
		if (recv(fd, chunk, take, 0) != (ssize_t)take) {
			*error_r = "short read";
			return false;
		}
		mt_buf_append(line, chunk, lf != NULL ? take - 1 : take);
		if (line->len > LG_WIRE_LINE_MAX) {
			*error_r = "line too long";
			return false;
		}
		if (lf != NULL)
			return true;
	}
}

bool lg_wire_write(int fd, const void *data, size_t len, uint64_t deadline_us,
		   const char **error_r)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				*error_r = lg_error_keep(strerror(errno));
				return false;
			}
			if (!wait_fd(fd, POLLOUT, deadline_us, error_r))
				return false;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return true;
}

void lg_wire_hello(struct mt_buf *out)
{
	mt_buf_appendf(out, "hello mailtier-load-agent %d %s %d %d %d %zu %zu\n",
		       LG_WIRE_VERSION, PACKAGE_VERSION, LG_FN_COUNT, LG_ERR_COUNT,
		       LG_KIND_COUNT, N_COUNTERS, N_PROGRESS);
}

bool lg_wire_hello_check(const char *line, const char **error_r)
{
	struct mt_buf mine = MT_BUF_INIT;
	bool ok;

	lg_wire_hello(&mine);
	mine.data[--mine.len] = '\0';	/* without the LF */
	ok = strcmp(line, mine.data) == 0;
	if (!ok) {
		*error_r = lg_error_fmt("not a matching mailtier-load "
				       "(we say '%s', it said '%.120s')", mine.data, line);
	}
	mt_buf_free(&mine);
	return ok;
}

void lg_wire_settings(struct mt_buf *out, const struct lg_run_settings *set)
{
	for (size_t i = 0; i < lg_run_options_count; i++) {
		const struct lg_run_option *opt = &lg_run_options[i];
		size_t mark = out->len;
		if ((opt->flags & LG_OPT_WIRE) == 0)
			continue;
		mt_buf_appendf(out, "set %s ", opt->name);
		if (lg_run_option_format(out, set, opt)) {
			mt_buf_append_char(out, '\n');
		} else {	/* unset: the agent's default */
			out->len = mark;
			out->data[mark] = '\0';
		}
	}
}

void lg_wire_stats(struct mt_buf *out, const char *tag, const struct lg_stats *st)
{
	mt_buf_appendf(out, "stats %s\n", tag);
	for (int f = 0; f < LG_FN_COUNT; f++) {
		const struct lg_fn_stats *fs = &st->fn[f];
		const struct lg_hist *h = &fs->hist;
		mt_buf_appendf(out, "fn %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			       " %" PRIu64 " %" PRIu64, f, fs->attempts, fs->pass,
			       h->count, h->sum, h->min, h->max);
		for (size_t i = 0; i < LG_HIST_BUCKETS && h->count > 0; i++)
			if (h->buckets[i] != 0)
				mt_buf_appendf(out, " %zu:%" PRIu64, i, h->buckets[i]);
		mt_buf_append_char(out, '\n');
	}
	mt_buf_append_str(out, "sessions");
	for (int k = 0; k < LG_KIND_COUNT; k++)
		mt_buf_appendf(out, " %" PRIu64 " %" PRIu64, st->sessions[k],
			       st->sessions_failed[k]);
	mt_buf_append_str(out, "\nerrors");
	for (int i = 0; i < LG_ERR_COUNT; i++)
		mt_buf_appendf(out, " %" PRIu64, st->errors[i]);
	mt_buf_append_str(out, "\ncounters");
	const uint64_t *c = (const uint64_t *)&st->counters;
	for (size_t i = 0; i < N_COUNTERS; i++)
		mt_buf_appendf(out, " %" PRIu64, c[i]);
	mt_buf_append_str(out, "\nend\n");
}

size_t lg_wire_word(const char *line, const char **rest_r)
{
	size_t len = strcspn(line, " ");
	const char *rest = line + len;

	while (*rest == ' ')
		rest++;
	*rest_r = rest;
	return len;
}

/* One number at *p (digits only), advancing past it and one blank. */
static bool number(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t n = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (n > (UINT64_MAX - d) / 10)
			return false;
		n = n * 10 + d;
	}
	if (*s == ' ')
		s++;
	else if (*s != '\0' && *s != ':')
		return false;
	*p = s;
	*out = n;
	return true;
}

bool lg_wire_numbers(const char *args, uint64_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!number(&args, &out[i]))
			return false;
	return *args == '\0';
}

static int bad(const char **error_r, const char *what)
{
	*error_r = what;
	return -1;
}

/* "fn F ATTEMPTS PASS COUNT SUM MIN MAX [B:C ...]" added into target. */
static int fn_line(struct lg_stats *target, const char *args, const char **error_r)
{
	uint64_t v[7];
	const char *p = args;
	struct lg_hist *h;

	for (size_t i = 0; i < 7; i++)
		if (!number(&p, &v[i]))
			return bad(error_r, "bad fn line");
	if (v[0] >= LG_FN_COUNT || v[2] > v[1])
		return bad(error_r, "bad fn line");
	h = mt_xmalloc(sizeof(*h));
	lg_hist_init(h);
	h->count = v[3];
	h->sum = v[4];
	h->min = v[5];
	h->max = v[6];
	uint64_t total = 0;
	while (*p != '\0') {
		uint64_t bucket, count;
		if (!number(&p, &bucket) || *p != ':' || bucket >= LG_HIST_BUCKETS) {
			free(h);
			return bad(error_r, "bad histogram bucket");
		}
		p++;
		if (!number(&p, &count) || count > UINT64_MAX - total) {
			free(h);
			return bad(error_r, "bad histogram count");
		}
		h->buckets[bucket] += count;
		total += count;
	}
	if (total != h->count) {
		free(h);
		return bad(error_r, "histogram buckets do not add up to its count");
	}
	target->fn[v[0]].attempts += v[1];
	target->fn[v[0]].pass += v[2];
	if (h->count > 0)
		lg_hist_merge(&target->fn[v[0]].hist, h);
	free(h);
	return 1;
}

int lg_wire_stats_line(struct lg_stats *target, const char *line,
		       const char **error_r)
{
	const char *args;
	size_t len = lg_wire_word(line, &args);
	uint64_t v[2 * LG_KIND_COUNT + LG_ERR_COUNT + N_COUNTERS];

#define IS(word) (len == sizeof(word) - 1 && strncmp(line, word, len) == 0)
	if (IS("end"))
		return 0;
	if (IS("fn"))
		return fn_line(target, args, error_r);
	if (IS("sessions")) {
		if (!lg_wire_numbers(args, v, 2 * LG_KIND_COUNT))
			return bad(error_r, "bad sessions line");
		for (int k = 0; k < LG_KIND_COUNT; k++) {
			target->sessions[k] += v[2 * k];
			target->sessions_failed[k] += v[2 * k + 1];
		}
		return 1;
	}
	if (IS("errors")) {
		if (!lg_wire_numbers(args, v, LG_ERR_COUNT))
			return bad(error_r, "bad errors line");
		for (int i = 0; i < LG_ERR_COUNT; i++)
			target->errors[i] += v[i];
		return 1;
	}
	if (IS("counters")) {
		uint64_t *c = (uint64_t *)&target->counters;
		if (!lg_wire_numbers(args, v, N_COUNTERS))
			return bad(error_r, "bad counters line");
		for (size_t i = 0; i < N_COUNTERS; i++)
			c[i] += v[i];
		return 1;
	}
#undef IS
	return bad(error_r, "unexpected line in a stats block");
}

void lg_wire_beat(struct mt_buf *out, const struct lg_progress *p)
{
	const uint64_t *v = (const uint64_t *)p;

	mt_buf_append_str(out, "beat");
	for (size_t i = 0; i < N_PROGRESS; i++)
		mt_buf_appendf(out, " %" PRIu64, v[i]);
	mt_buf_append_char(out, '\n');
}

bool lg_wire_beat_parse(const char *args, struct lg_progress *p)
{
	uint64_t v[N_PROGRESS];

	if (!lg_wire_numbers(args, v, N_PROGRESS) || v[2] > 2)
		return false;
	memcpy(p, v, sizeof(*p));
	return true;
}

void lg_wire_result(struct mt_buf *out, const struct lg_run_result *r)
{
	char tag[40];

	mt_buf_appendf(out, "result %zu\n", r->n_levels);
	for (size_t i = 0; i < r->n_levels; i++) {
		const struct lg_level_result *level = &r->levels[i];
		mt_buf_appendf(out, "level %zu %" PRIu64 " %d %" PRIu64 "\n", i,
			       level->measure_us, level->complete ? 1 : 0,
			       level->primed_repeats);
		snprintf(tag, sizeof(tag), "warmup %zu", i);
		lg_wire_stats(out, tag, &level->warmup);
		snprintf(tag, sizeof(tag), "measure %zu", i);
		lg_wire_stats(out, tag, &level->measure);
	}
	lg_wire_stats(out, "probes", &r->probes);
	mt_buf_appendf(out, "tracker %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
		       r->tracker.tracked, r->tracker.untracked, r->tracker.foreign);
	mt_buf_appendf(out, "summary %" PRIu64 " %d %d %" PRIu64 "\ndone\n",
		       r->undelivered, r->interrupted ? 1 : 0,
		       r->stopped_early ? 1 : 0, (uint64_t)(r->elapsed_s * 1000));
}
