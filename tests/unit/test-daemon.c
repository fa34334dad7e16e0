/* test-daemon.c — unit tests for daemon/daemon.c, the skeleton every
 * mailtier daemon's main is: a toy definition runs in a child process on a
 * real config file, a real listener on 127.0.0.1 and real signals, and
 * reports each hook it is called with on a pipe. Checked: the hooks' order
 * (configure, listen, start, stats, reload_config + reload on SIGHUP,
 * drain on SIGTERM, stop), that a broken config on SIGHUP keeps the
 * running one, that config errors stop start-up with FILE:LINE and status
 * 1, that a configure() refusal is logged and exits 1, and that the drain
 * timer ends a drain the daemon never finishes. */
#include "daemon.h"
#include "log.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64], conf[96], err_path[96];
static int events_fd = -1;		/* child: where hooks are reported */
static bool finish_drain = true;	/* child: drain() ends the drain */
static bool refuse_configure;
static struct mt_hostport listen_hp = { .host = (char *)"127.0.0.1", .port = 0 };

static void report(const char *fmt, ...)
{
	char line[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(events_fd, line, (size_t)n) != n)
		abort();
}

/* The toy daemon's hooks */

static bool toy_configure(struct mt_daemon *d, const char **error_r)
{
	report("configure");
	if (refuse_configure) {
		*error_r = "toy: configure said no";
		return false;
	}
	d->stats_interval_msecs = 100;
	return true;
}

static void toy_accept(int fd, const struct sockaddr *peer, socklen_t len, void *context)
{
	(void)peer; (void)len; (void)context;
	if (write(fd, "hello\r\n", 7) != 7)
		abort();
	close(fd);
}

static void toy_listen(struct mt_daemon *d)
{
	struct mt_listener *l = mt_daemon_listen(d, "toy_listen", &listen_hp, toy_accept, NULL);
	report("listen port=%u", mt_listener_port(l));
}

static void toy_start(struct mt_daemon *d) { (void)d; report("start"); }

static void toy_reload_config(struct mt_daemon *d, struct mt_config *next)
{
	const struct mt_global_settings *g = mt_config_get(next, "global", NULL);
	report("reload_config running=%llu next=%llu",
	       (unsigned long long)d->global->drain_timeout,
	       (unsigned long long)g->drain_timeout);
}

static void toy_reload(struct mt_daemon *d)
{
	report("reload drain_timeout=%llu", (unsigned long long)d->global->drain_timeout);
}

static void toy_drain(struct mt_daemon *d)
{
	report("drain");
	if (finish_drain)
		mt_loop_drain_done(d->loop);
}

static void toy_stats(struct mt_daemon *d) { (void)d; report("stats"); }

static void toy_stop(struct mt_daemon *d, int status)
{
	report("stop status=%d loop=%d", status, d->loop != NULL);
}

static const struct mt_daemon_def toy_daemon = {
	.name = "mailtier-toy",
	.configure = toy_configure, .listen = toy_listen, .start = toy_start,
	.reload_config = toy_reload_config, .reload = toy_reload,
	.drain = toy_drain, .stats = toy_stats, .stop = toy_stop,
};

/* The parent's side */

struct child {
	pid_t pid;
	int events;		/* read end */
	char buf[4096];
	size_t len;
};

static void write_conf(const char *text)
{
	FILE *f = fopen(conf, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void spawn(struct child *c)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		close(p[0]);
		events_fd = p[1];
		FILE *err = freopen(err_path, "w", stderr);
		if (err == NULL)
			_exit(99);
		char *argv[] = { (char *)"mailtier-toy", (char *)"-f", (char *)"-c", conf, NULL };
		exit(mt_daemon_main(&toy_daemon, NULL, 4, argv));
	}
	close(p[1]);
	c->events = p[0];
	c->len = 0;
}

/* The next event line (without "\n"), waiting up to 10 s; NULL at EOF. */
static char *next_event(struct child *c, char *out, size_t size)
{
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		if (nl != NULL) {
			size_t n = (size_t)(nl - c->buf);
			assert_true(n < size);
			memcpy(out, c->buf, n);
			out[n] = '\0';
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			return out;
		}
		struct pollfd pfd = { .fd = c->events, .events = POLLIN };
		if (poll(&pfd, 1, 10000) != 1)
			fail_msg("no event from the daemon within 10 s");
		ssize_t r = read(c->events, c->buf + c->len, sizeof(c->buf) - c->len);
		assert_true(r >= 0);
		if (r == 0)
			return NULL;
		c->len += (size_t)r;
	}
}

/* Skip "stats" events (the timer runs throughout); count them. */
static char *next_hook(struct child *c, char *out, size_t size, unsigned int *stats_r)
{
	while (next_event(c, out, size) != NULL) {
		if (strcmp(out, "stats") != 0)
			return out;
		(*stats_r)++;
	}
	return NULL;
}

static char *read_err(void);

/* The next hook must be `want`. */
static void expect_hook(struct child *c, const char *want, unsigned int *stats_r)
{
	char ev[256];
	if (next_hook(c, ev, sizeof(ev), stats_r) == NULL)
		fail_msg("the daemon exited before \"%s\"; its log:\n%s", want, read_err());
	assert_string_equal(ev, want);
}

static int reap(struct child *c)
{
	int status;
	close(c->events);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static char *read_err(void)
{
	static char text[16384];
	FILE *f = fopen(err_path, "r");
	assert_non_null(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	return text;
}

/* The registry's required keys, and the ones this test changes. */
#define REQUIRED "[directory]\nbase_dn = dc=example,dc=test\n" \
	"[mta]\nlocal_domains = example.test\n"
static const char good_conf[] =
	REQUIRED "[global]\nuser =\ndrain_timeout = 300ms\n";

static void test_lifecycle(void **state)
{
	(void)state;
	struct child c;
	char ev[256];
	unsigned int stats = 0, port = 0;
	write_conf(good_conf);
	finish_drain = true;
	spawn(&c);
	expect_hook(&c, "configure", &stats);
	assert_non_null(next_hook(&c, ev, sizeof(ev), &stats));
	assert_int_equal(sscanf(ev, "listen port=%u", &port), 1);
	assert_true(port > 0);
	expect_hook(&c, "start", &stats);

	/* The listener serves. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	char hello[16] = "";
	assert_int_equal(read(fd, hello, sizeof(hello) - 1), 7);
	assert_string_equal(hello, "hello\r\n");
	close(fd);

	/* SIGHUP: the config is re-read and handed over, then reload()
	 * sees the new one in force. */
	write_conf(REQUIRED "[global]\nuser =\ndrain_timeout = 400ms\n");
	kill(c.pid, SIGHUP);
	expect_hook(&c, "reload_config running=300 next=400", &stats);
	expect_hook(&c, "reload drain_timeout=400", &stats);

	/* A broken config on SIGHUP: nothing is handed over, the daemon
	 * goes on; the next good one is taken again. */
	write_conf(REQUIRED "[global]\nuser =\ndrain_timeout = soon\n");
	kill(c.pid, SIGHUP);
	usleep(300 * 1000);
	write_conf(good_conf);
	kill(c.pid, SIGHUP);
	expect_hook(&c, "reload_config running=400 next=300", &stats);
	expect_hook(&c, "reload drain_timeout=300", &stats);

	/* Let the 100 ms stats timer fire at least once more. */
	usleep(250 * 1000);
	kill(c.pid, SIGTERM);
	expect_hook(&c, "drain", &stats);
	expect_hook(&c, "stop status=0 loop=1", &stats);
	assert_null(next_hook(&c, ev, sizeof(ev), &stats));
	assert_true(stats >= 2);
	assert_int_equal(reap(&c), 0);

	const char *err = read_err();
	assert_non_null(strstr(err, "has errors; keeping the running config"));
	assert_non_null(strstr(err, "drain_timeout"));
	assert_non_null(strstr(err, "reload: done"));
	assert_non_null(strstr(err, "exit status=0"));
}

static void test_config_errors(void **state)
{
	(void)state;
	struct child c;
	char ev[256], want[128];
	write_conf(REQUIRED "[global]\nuser =\nfrobnicate = 1\n");
	spawn(&c);
	unsigned int stats = 0;
	assert_null(next_hook(&c, ev, sizeof(ev), &stats));	/* no hook ran */
	assert_int_equal(reap(&c), 1);
	const char *err = read_err();
	snprintf(want, sizeof(want), "%s:7:", conf);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "frobnicate"));
	assert_non_null(strstr(err, "not started"));
}

static void test_configure_refuses(void **state)
{
	(void)state;
	struct child c;
	char ev[256];
	unsigned int stats = 0;
	write_conf(good_conf);
	refuse_configure = true;
	spawn(&c);
	refuse_configure = false;
	expect_hook(&c, "configure", &stats);
	assert_null(next_hook(&c, ev, sizeof(ev), &stats));
	assert_int_equal(reap(&c), 1);
	assert_non_null(strstr(read_err(), "toy: configure said no"));
}

/* A drain the daemon never finishes ends at [global] drain_timeout. */
static void test_drain_timeout(void **state)
{
	(void)state;
	struct child c;
	char ev[256];
	unsigned int stats = 0;
	write_conf(good_conf);
	finish_drain = false;
	spawn(&c);
	finish_drain = true;
	expect_hook(&c, "configure", &stats);
	assert_non_null(next_hook(&c, ev, sizeof(ev), &stats));
	expect_hook(&c, "start", &stats);
	kill(c.pid, SIGTERM);
	expect_hook(&c, "drain", &stats);
	assert_non_null(next_hook(&c, ev, sizeof(ev), &stats));
	assert_non_null(strstr(ev, "stop status="));
	assert_null(next_hook(&c, ev, sizeof(ev), &stats));
	(void)reap(&c);
	assert_non_null(strstr(read_err(), "drain time of 300 ms is over"));
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/mt-test-daemon-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(conf, sizeof(conf), "%s/mailtier.conf", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(conf);
	unlink(err_path);
	rmdir(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_configure_refuses),
		cmocka_unit_test(test_drain_timeout),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
