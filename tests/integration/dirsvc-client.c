/* dirsvc-client.c — test driver for libdirsvc (not installed): reads
 * commands on stdin, asks the directory through the library on a libevent
 * loop, and prints one result line per command on stdout. Used by
 * tests/integration/test-dirsvc.py (also for its --bench figures).
 *
 *   dirsvc-client [-v] CONFIG          CONFIG: a mailtier.conf
 * Commands (one per line; an argument "hex:4142" is decoded first):
 *   lookup ADDRESS
 *   auth USER PASSWORD
 *   multi N ADDRESS          N lookups at once; the slowest one's time
 *   bench lookup|auth N CONC USERS DOMAIN
 *                            N requests, CONC at a time, for userK@DOMAIN
 *                            (password secretK), K = 1 + i % USERS
 *   threads T N USERS DOMAIN T threads, each with its own event loop and
 *                            client, ask N lookups at once, cancel every
 *                            third, and free their client when half the rest
 *                            have answered (the others still outstanding)
 *   stats                    mt_dirsvc_log_stats() (to stderr)
 * Every reply carries ms= (time to the callback) and maxgap= (the longest
 * the loop went without running its 2 ms ticker meanwhile: proof that the
 * caller's loop never blocks on the directory).
 * Trust boundary: test input from the test script. */
#include "alloc.h"
#include "buf.h"
#include "config.h"
#include "dirsvc.h"
#include "log.h"
#include "loop.h"
#include "mailtier-settings.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#define TICK_MS 2

struct driver {
	struct mt_loop *loop;
	struct event_base *base;
	struct mt_dirsvc *dirsvc;
	struct mt_dirsvc_client *client;
	struct event *stdin_ev, *tick_ev;
	struct mt_buf input;
	bool busy, eof;
	/* the command running */
	double started, last_tick, max_gap;
	unsigned int pending;
	char kind[16];
	/* multi/bench */
	unsigned long n, issued, conc, users, counts[8];
	char domain[128];
	double slowest;
};

static struct driver drv;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	double t = now_ms();
	if (drv.busy && t - drv.last_tick > drv.max_gap)
		drv.max_gap = t - drv.last_tick;
	drv.last_tick = t;
}

static void next_command(void);

static void command_done(void)
{
	fflush(stdout);
	drv.busy = false;
	next_command();
}

/* "hex:..." → bytes; anything else as it is. Modifies in place. */
static char *arg_decode(char *s)
{
	if (strncmp(s, "hex:", 4) != 0)
		return s;
	char *out = s, *in = s + 4;
	for (; in[0] != '\0' && in[1] != '\0'; in += 2) {
		char byte[3] = { in[0], in[1], '\0' };
		*out++ = (char)strtoul(byte, NULL, 16);
	}
	*out = '\0';
	return s;
}

static void print_str(const char *name, const char *value)
{
	if (value != NULL)
		printf(" %s=%s", name, value);
}

static void lookup_cb(const struct mt_dirsvc_recipient *r, void *context)
{
	double ms = now_ms() - drv.started;

	printf("lookup status=%s", mt_dirsvc_lookup_status_name(r->status));
	if (r->status == MT_DIRSVC_FOUND) {
		print_str("address", r->address);
		print_str("shard", r->shard);
		print_str("forward", r->forward);
		printf(" quota=%llu account=%s", (unsigned long long)r->quota,
		       mt_dirsvc_account_name(r->account));
	}
	printf(" cached=%d ms=%.1f maxgap=%.1f", r->cached, ms, drv.max_gap);
	if (r->reason != NULL)
		printf(" reason=\"%s\"", r->reason);
	printf("\n");
	command_done();
}

static void auth_cb(const struct mt_dirsvc_auth *a, void *context)
{
	double ms = now_ms() - drv.started;

	printf("auth status=%s", mt_dirsvc_auth_status_name(a->status));
	print_str("address", a->address);
	print_str("shard", a->shard);
	if (a->status == MT_DIRSVC_AUTH_DISABLED)
		printf(" account=%s", mt_dirsvc_account_name(a->account));
	printf(" cached=%d ms=%.1f maxgap=%.1f", a->cached, ms, drv.max_gap);
	if (a->reason != NULL)
		printf(" reason=\"%s\"", a->reason);
	printf("\n");
	command_done();
}

static void multi_cb(const struct mt_dirsvc_recipient *r, void *context)
{
	double ms = now_ms() - drv.started;

	drv.counts[r->status]++;
	if (ms > drv.slowest)
		drv.slowest = ms;
	if (--drv.pending > 0)
		return;
	printf("multi n=%lu found=%lu not_found=%lu invalid=%lu tempfail=%lu "
	       "slowest_ms=%.1f maxgap=%.1f\n", drv.n,
	       drv.counts[MT_DIRSVC_FOUND], drv.counts[MT_DIRSVC_NOT_FOUND],
	       drv.counts[MT_DIRSVC_INVALID], drv.counts[MT_DIRSVC_TEMPFAIL],
	       drv.slowest, drv.max_gap);
	command_done();
}

static void bench_issue(void);

static void bench_finish_one(bool ok)
{
	drv.counts[ok ? 0 : 1]++;
	drv.pending--;
	if (drv.issued < drv.n) {
		bench_issue();
		return;
	}
	if (drv.pending > 0)
		return;
	double s = (now_ms() - drv.started) / 1000.0;
	printf("bench kind=%s n=%lu conc=%lu seconds=%.3f per_sec=%.0f ok=%lu "
	       "fail=%lu maxgap=%.1f\n", drv.kind, drv.n, drv.conc, s,
	       (double)drv.n / s, drv.counts[0], drv.counts[1], drv.max_gap);
	command_done();
}

static void bench_lookup_cb(const struct mt_dirsvc_recipient *r, void *context)
{
	bench_finish_one(r->status == MT_DIRSVC_FOUND);
}

static void bench_auth_cb(const struct mt_dirsvc_auth *a, void *context)
{
	bench_finish_one(a->status == MT_DIRSVC_AUTH_OK);
}

static void bench_issue(void)
{
	unsigned long k = 1 + drv.issued++ % drv.users;
	char user[256], pw[64];

	snprintf(user, sizeof(user), "user%lu@%s", k, drv.domain);
	snprintf(pw, sizeof(pw), "secret%lu", k);
	drv.pending++;
	if (strcmp(drv.kind, "lookup") == 0)
		mt_dirsvc_lookup_recipient(drv.client, NULL, user,
					   bench_lookup_cb, NULL);
	else
		mt_dirsvc_authenticate(drv.client, NULL, user, pw,
				       bench_auth_cb, NULL);
}

/* threads: one loop per thread sharing drv.dirsvc. */
struct loop_thread {
	pthread_t thread;
	unsigned long n, users;
	const char *domain;
	struct mt_loop *loop;
	struct event_base *base;
	unsigned long want, answered, found;
	char cancel_tag;	/* the context of cancelled requests */
};

static _Atomic unsigned long cancelled_called;

static void thread_cb(const struct mt_dirsvc_recipient *r, void *context);
static void cancelled_cb(const struct mt_dirsvc_recipient *r, void *context)
{
	cancelled_called++;	/* never: the request was cancelled */
}

static void thread_cb(const struct mt_dirsvc_recipient *r, void *context)
{
	struct loop_thread *t = context;

	t->answered++;
	t->found += r->status == MT_DIRSVC_FOUND;
	if (t->answered == t->want)
		event_base_loopbreak(t->base);
}

static void *thread_main(void *arg)
{
	struct loop_thread *t = arg;
	char addr[256];

	const char *error;
	if ((t->loop = mt_loop_new(&error)) == NULL)
		mt_fatal("%s", error);
	t->base = mt_loop_base(t->loop);
	struct mt_dirsvc_client *client = mt_dirsvc_client_new(drv.dirsvc, t->loop);
	unsigned long kept = 0;
	for (unsigned long i = 0; i < t->n; i++) {
		snprintf(addr, sizeof(addr), "user%lu@%s", 1 + i % t->users,
			 t->domain);
		bool cancel = i % 3 == 0;
		struct mt_dirsvc_request *req = mt_dirsvc_lookup_recipient(
			client, NULL, addr, cancel ? cancelled_cb : thread_cb,
			cancel ? (void *)&t->cancel_tag : (void *)t);
		if (cancel)
			mt_dirsvc_request_cancel(&req);
		else
			kept++;
	}
	t->want = kept / 2;
	if (t->want > 0)
		event_base_dispatch(t->base);
	mt_dirsvc_client_free(&client);	/* the rest still outstanding */
	mt_loop_free(&t->loop);
	return NULL;
}

static void run_threads(unsigned long count, unsigned long n,
			unsigned long users, const char *domain)
{
	struct loop_thread *ts = mt_xcalloc(count, sizeof(*ts));
	unsigned long answered = 0, found = 0;

	cancelled_called = 0;
	for (unsigned long i = 0; i < count; i++) {
		ts[i] = (struct loop_thread){ .n = n, .users = users,
			.domain = domain };
		if (pthread_create(&ts[i].thread, NULL, thread_main, &ts[i]) != 0)
			mt_fatal("pthread_create failed");
	}
	for (unsigned long i = 0; i < count; i++) {
		pthread_join(ts[i].thread, NULL);
		answered += ts[i].answered;
		found += ts[i].found;
	}
	printf("threads t=%lu n=%lu answered=%lu found=%lu cancelled_called=%lu\n",
	       count, n, answered, found, (unsigned long)cancelled_called);
	free(ts);
	command_done();
}

static void run_command(char *line)
{
	char *argv[8];
	int argc = 0;
	char *save = NULL;

	for (char *t = strtok_r(line, " ", &save); t != NULL && argc < 8;
	     t = strtok_r(NULL, " ", &save))
		argv[argc++] = arg_decode(t);
	if (argc == 0) {
		command_done();
		return;
	}
	drv.busy = true;
	drv.max_gap = 0;
	drv.last_tick = drv.started = now_ms();
	memset(drv.counts, 0, sizeof(drv.counts));
	drv.slowest = 0;
	drv.pending = 0;
	drv.issued = 0;
	static struct mt_logctx log;
	log.session_id = mt_session_id_new();

	if (strcmp(argv[0], "lookup") == 0 && argc == 2) {
		mt_dirsvc_lookup_recipient(drv.client, &log, argv[1], lookup_cb, NULL);
	} else if (strcmp(argv[0], "auth") == 0 && argc == 3) {
		mt_dirsvc_authenticate(drv.client, &log, argv[1], argv[2], auth_cb,
				       NULL);
	} else if (strcmp(argv[0], "multi") == 0 && argc == 3) {
		drv.n = strtoul(argv[1], NULL, 10);
		for (unsigned long i = 0; i < drv.n; i++) {
			drv.pending++;
			mt_dirsvc_lookup_recipient(drv.client, &log, argv[2],
						   multi_cb, NULL);
		}
	} else if (strcmp(argv[0], "bench") == 0 && argc == 6) {
		snprintf(drv.kind, sizeof(drv.kind), "%s", argv[1]);
		drv.n = strtoul(argv[2], NULL, 10);
		drv.conc = strtoul(argv[3], NULL, 10);
		drv.users = strtoul(argv[4], NULL, 10);
		snprintf(drv.domain, sizeof(drv.domain), "%s", argv[5]);
		for (unsigned long i = 0; i < drv.conc && i < drv.n; i++)
			bench_issue();
	} else if (strcmp(argv[0], "threads") == 0 && argc == 5) {
		run_threads(strtoul(argv[1], NULL, 10), strtoul(argv[2], NULL, 10),
			    strtoul(argv[3], NULL, 10), argv[4]);
	} else if (strcmp(argv[0], "stats") == 0) {
		mt_dirsvc_log_stats(drv.dirsvc);
		printf("stats logged\n");
		command_done();
	} else {
		printf("error unknown command\n");
		command_done();
	}
}

/* Run the next complete line of input, if idle. */
static void next_command(void)
{
	if (drv.busy)
		return;
	char *nl = memchr(drv.input.data, '\n', drv.input.len);
	if (nl == NULL) {
		if (drv.eof)
			event_base_loopexit(drv.base, NULL);
		return;
	}
	size_t len = (size_t)(nl - drv.input.data);
	char *line = mt_xstrndup(drv.input.data, len);
	mt_buf_consume(&drv.input, len + 1);
	run_command(line);
	free(line);
}

static void stdin_cb(evutil_socket_t fd, short what, void *arg)
{
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n > 0) {
		mt_buf_append(&drv.input, buf, (size_t)n);
	} else if (n == 0 || errno != EAGAIN) {
		drv.eof = true;
		event_del(drv.stdin_ev);
	}
	next_command();
}

int main(int argc, char **argv)
{
	char *errors = NULL;
	const char *error;
	int i = 1;

	mt_log_init("dirsvc-client", MT_LOG_TARGET_STDERR);
	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		mt_log_set_min_level(MT_LOG_DEBUG);
		i++;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: dirsvc-client [-v] CONFIG\n");
		return 2;
	}
	struct mt_config *config = mt_mailtier_config_load(argv[i], &errors);
	if (config == NULL) {
		fprintf(stderr, "%s", errors);
		free(errors);
		return 1;
	}
	const struct mt_directory_settings *set =
		mt_config_get(config, "directory", NULL);
	drv.dirsvc = mt_dirsvc_new(set, config, &error);
	if (drv.dirsvc == NULL)
		mt_fatal("%s", error);
	mt_config_free(&config);	/* dirsvc keeps what it needs */

	if ((drv.loop = mt_loop_new(&error)) == NULL)
		mt_fatal("%s", error);
	drv.base = mt_loop_base(drv.loop);
	drv.client = mt_dirsvc_client_new(drv.dirsvc, drv.loop);
	mt_buf_init(&drv.input);
	drv.stdin_ev = event_new(drv.base, STDIN_FILENO, EV_READ | EV_PERSIST,
				 stdin_cb, NULL);
	event_add(drv.stdin_ev, NULL);
	drv.tick_ev = event_new(drv.base, -1, EV_PERSIST, tick_cb, NULL);
	struct timeval tick = { 0, TICK_MS * 1000 };
	event_add(drv.tick_ev, &tick);
	setvbuf(stdout, NULL, _IOLBF, 0);

	event_base_dispatch(drv.base);

	mt_dirsvc_client_free(&drv.client);
	mt_dirsvc_free(&drv.dirsvc);
	event_free(drv.stdin_ev);
	event_free(drv.tick_ev);
	mt_loop_free(&drv.loop);
	mt_buf_free(&drv.input);
	return 0;
}
