/* bdb-lock.h — one serving process per Berkeley DB environment: the
 * daemon that serves an environment (the MTA's queue, a message store)
 * holds an flock()ed lock file in its home for as long as it runs, so a
 * second daemon started on the same directory refuses to start instead of
 * handing out what the first one owns. Processes that only join the
 * environment (mailtierctl) do not take it. The kernel drops the lock when
 * the process dies, kill -9 included.
 *
 * Trust boundary: the directory comes from the administrator's config. */
#ifndef MT_BDB_LOCK_H
#define MT_BDB_LOCK_H

/* Open (create, mode 0600, close-on-exec) dir/name and lock it without
 * waiting. 0 and the locked fd in *fd_r (close it to unlock); EWOULDBLOCK
 * if another process holds the lock; else the errno of the open or flock,
 * with *fd_r -1. */
int mt_bdb_lock_take(const char *dir, const char *name, int *fd_r);

#endif
