/* thread.h — the one rule for the threads a daemon starts besides its event
 * loops' own (Berkeley DB executors, flushers, checkpointers, readers, the
 * directory's workers, worker loops): they take no signal. Every signal is
 * blocked in them, so libevent's handlers always run where they expect, on
 * the main loop's thread, and a write to a socket the peer closed gives
 * EPIPE there instead of killing the process.
 *
 * Trust boundary: none (the daemon's own code). */
#ifndef MT_THREAD_H
#define MT_THREAD_H

#include <pthread.h>

/* pthread_create() with every signal blocked in the new thread (the
 * caller's mask is unchanged). 0 or the error pthread_create() returned. */
int mt_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif
