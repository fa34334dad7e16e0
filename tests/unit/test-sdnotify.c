/* test-sdnotify.c — unit tests for lib/sdnotify: plays the service manager
 * with an AF_UNIX datagram socket in $NOTIFY_SOCKET and checks what arrives
 * (READY=1, STATUS=, RELOADING=1 + MONOTONIC_USEC, STOPPING=1, periodic
 * WATCHDOG=1). Built without HAVE_SYSTEMD it checks that nothing is sent. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "sdnotify.h"
#include "loop.h"
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

static char sock_dir[64];
static char sock_path[96];
static int sock_fd = -1;

static int setup(void **state)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	(void)state;
	snprintf(sock_dir, sizeof(sock_dir), "/tmp/mt-test-notify-XXXXXX");
	if (mkdtemp(sock_dir) == NULL)
		return -1;
	snprintf(sock_path, sizeof(sock_path), "%s/notify", sock_dir);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	sock_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock_fd < 0 || bind(sock_fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		return -1;
	/* A stale value would make us talk to a real manager. */
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	setenv("NOTIFY_SOCKET", sock_path, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(sock_fd);
	unlink(sock_path);
	rmdir(sock_dir);
	return 0;
}

/* The next datagram, or NULL if none is queued. */
static const char *recv_msg(void)
{
	static char buf[1024];
	ssize_t n = recv(sock_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	if (n < 0) {
		assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

#ifdef HAVE_SYSTEMD

static void expect_msg(const char *want)
{
	const char *got = recv_msg();
	if (got == NULL)
		fail_msg("no datagram, expected '%s'", want);
	assert_string_equal(got, want);
}

static void test_states(void **state)
{
	(void)state;
	mt_notify_ready();
	expect_msg("READY=1");
	mt_notify_status("serving %d users on %s", 42, "127.0.0.1:110");
	expect_msg("STATUS=serving 42 users on 127.0.0.1:110");
	mt_notify_stopping();
	expect_msg("STOPPING=1");
	assert_null(recv_msg());
}

static void test_reloading(void **state)
{
	unsigned long long usec = 0;
	(void)state;
	mt_notify_reloading();
	const char *got = recv_msg();
	assert_non_null(got);
	assert_int_equal(sscanf(got, "RELOADING=1\nMONOTONIC_USEC=%llu", &usec), 1);
	assert_true(usec > 0);
	mt_notify_ready();
	expect_msg("READY=1");
}

static void stop_cb(void *context) { mt_loop_exit(context); }

static void test_watchdog(void **state)
{
	const char *error = NULL;
	(void)state;
	struct mt_loop *loop = mt_loop_new(&error);
	assert_non_null(loop);

	/* No WatchdogSec=: no timer, nothing sent. */
	assert_null(mt_notify_watchdog_start(loop));
	assert_null(recv_msg());

	/* WATCHDOG_PID of another process: not ours to feed. */
	setenv("WATCHDOG_USEC", "100000", 1);
	setenv("WATCHDOG_PID", "1", 1);
	assert_null(mt_notify_watchdog_start(loop));
	unsetenv("WATCHDOG_PID");

	/* 100 ms interval: a keep-alive at once and every 50 ms. */
	struct mt_timer *wd = mt_notify_watchdog_start(loop);
	assert_non_null(wd);
	struct mt_timer *stop = mt_timer_add(loop, 280, false, stop_cb, loop);
	assert_int_equal(mt_loop_run(loop), 0);
	int count = 0;
	const char *got;
	while ((got = recv_msg()) != NULL) {
		assert_string_equal(got, "WATCHDOG=1");
		count++;
	}
	if (count < 4 || count > 8)
		fail_msg("%d keep-alives in 280 ms at a 50 ms period", count);
	unsetenv("WATCHDOG_USEC");
	mt_timer_free(&wd);
	mt_timer_free(&stop);
	mt_loop_free(&loop);
}

static void test_no_socket(void **state)
{
	(void)state;
	/* Run by hand (no $NOTIFY_SOCKET): silent no-ops. */
	unsetenv("NOTIFY_SOCKET");
	mt_notify_ready();
	mt_notify_status("x");
	setenv("NOTIFY_SOCKET", sock_path, 1);
	assert_null(recv_msg());
}

#else /* !HAVE_SYSTEMD */

static void test_noop_build(void **state)
{
	const char *error = NULL;
	(void)state;
	struct mt_loop *loop = mt_loop_new(&error);
	setenv("WATCHDOG_USEC", "100000", 1);
	mt_notify_ready();
	mt_notify_status("x %d", 1);
	mt_notify_reloading();
	mt_notify_stopping();
	assert_null(mt_notify_watchdog_start(loop));
	assert_null(recv_msg());
	unsetenv("WATCHDOG_USEC");
	mt_loop_free(&loop);
}

#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
#ifdef HAVE_SYSTEMD
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_reloading),
		cmocka_unit_test(test_watchdog),
		cmocka_unit_test(test_no_socket),
#else
		cmocka_unit_test(test_noop_build),
#endif
	};
	mt_log_init("test-sdnotify", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(MT_LOG_WARNING);
	return cmocka_run_group_tests(tests, setup, teardown);
}
