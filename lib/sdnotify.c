/* sdnotify.c — sd_notify(3) glue (see sdnotify.h).
 *
 * Trust boundary: writes to the service manager's $NOTIFY_SOCKET only.
 * Implements the sd_notify protocol by calling libsystemd; without
 * HAVE_SYSTEMD everything is a no-op.
 *
 * A socket nobody is bound to any more (ECONNREFUSED, or ENOENT for a
 * path) means whoever started us has gone: `mailtierctl cluster up`
 * listens only until READY=1 (ctl/ctl-spawn.c), and systemd's socket does
 * not go away while its service runs. Notifying then stops for good
 * (one info line says so), as for a daemon started by hand; any other
 * failure is a warning, once. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "sdnotify.h"
#include "clock.h"
#include "loop.h"
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

/* The text of state up to its first line end (no MONOTONIC_USEC=). */
static int first_line_len(const char *state)
{
	size_t n = strcspn(state, "\n");
	return n > 64 ? 64 : (int)n;
}

/* The daemons notify from their loop thread only: no lock. */
static void notify(const char *state)
{
	static bool warned, manager_gone;
	if (manager_gone)
		return;
	int ret = sd_notify(0, state);
	if (ret == -ECONNREFUSED || ret == -ENOENT) {
		manager_gone = true;
		mt_info("sd_notify(%.*s): nobody listens on NOTIFY_SOCKET any more "
			"(the process that started us is gone); notifications off",
			first_line_len(state), state);
		return;
	}
	if (ret < 0 && !warned) {
		warned = true;
		mt_warning("sd_notify(%s) failed: error=%d (further failures not logged)",
			   state, -ret);
	}
}

void mt_notify_ready(void) { notify("READY=1"); }

void mt_notify_status(const char *fmt, ...)
{
	char state[512];
	va_list ap;
	int n = snprintf(state, sizeof(state), "STATUS=");
	va_start(ap, fmt);
	vsnprintf(state + n, sizeof(state) - (size_t)n, fmt, ap);
	va_end(ap);
	notify(state);
}

void mt_notify_reloading(void)
{
	char state[96];
	snprintf(state, sizeof(state), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)mt_clock_us());
	notify(state);
}

void mt_notify_stopping(void) { notify("STOPPING=1"); }

static void watchdog_cb(void *context)
{
	(void)context;
	notify("WATCHDOG=1");
}

struct mt_timer *mt_notify_watchdog_start(struct mt_loop *loop)
{
	uint64_t usec = 0;
	/* > 0 only if WATCHDOG_USEC is set and WATCHDOG_PID, if set, is us. */
	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
		return NULL;
	unsigned int msecs = (unsigned int)(usec / 2000);
	if (msecs == 0)
		msecs = 1;
	mt_info("watchdog interval_usec=%llu keepalive_msecs=%u",
		(unsigned long long)usec, msecs);
	watchdog_cb(NULL);
	return mt_timer_add(loop, msecs, true, watchdog_cb, NULL);
}

#else /* !HAVE_SYSTEMD */

void mt_notify_ready(void) { }
void mt_notify_status(const char *fmt, ...) { (void)fmt; }
void mt_notify_reloading(void) { }
void mt_notify_stopping(void) { }
struct mt_timer *mt_notify_watchdog_start(struct mt_loop *loop)
{
	(void)loop;
	return NULL;
}

#endif
