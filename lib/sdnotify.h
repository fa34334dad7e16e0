/* sdnotify.h — systemd service notification (sd_notify(3)) for Type=notify
 * units: readiness, status text, reload and stop announcements, and the
 * watchdog keep-alive.
 *
 * Trust boundary: talks only to the service manager over $NOTIFY_SOCKET;
 * status text may quote config values, never client data.
 * Protocol: systemd's sd_notify datagrams (sd_notify(3)); no RFC.
 *
 * Built with HAVE_SYSTEMD these call libsystemd's sd_notify(); without it
 * every function is a no-op and no watchdog timer is started. With systemd
 * but no $NOTIFY_SOCKET (a run by hand) they are no-ops too. */
#ifndef MT_SDNOTIFY_H
#define MT_SDNOTIFY_H

struct mt_loop;
struct mt_timer;

/* READY=1: start-up is done (listeners bound, privileges dropped), or a
 * reload announced with mt_notify_reloading() has finished. */
void mt_notify_ready(void);
/* STATUS=text shown by systemctl status. */
void mt_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* RELOADING=1 with MONOTONIC_USEC (Type=notify-reload needs it); follow it
 * with mt_notify_ready() when the reload is over, failed or not. */
void mt_notify_reloading(void);
/* STOPPING=1: the drain has begun. */
void mt_notify_stopping(void);
/* If the unit has WatchdogSec= ($WATCHDOG_USEC for this process), send
 * WATCHDOG=1 from a periodic timer on loop at half the interval and return
 * the timer (free it with mt_timer_free() before the loop). NULL when there
 * is no watchdog. A stuck loop stops the keep-alives, which is the point. */
struct mt_timer *mt_notify_watchdog_start(struct mt_loop *loop);

#endif
