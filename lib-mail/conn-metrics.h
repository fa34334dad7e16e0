/* conn-metrics.h — how a daemon's client sessions ended, in the process's
 * metrics (lib/metrics.h), one family for every daemon:
 *
 *	mailtier_sessions_closed_total{listener="smtp",outcome="quit"}
 *
 * listener is the daemon's own listener names (the same values as its
 * mailtier_sessions_total), outcome lib-mail/conn.h's enum
 * mt_conn_outcome, recorded where the session's end was decided and read
 * by the tier's ops->closed; a connection turned away before it became a
 * session is counted here too ("refused" for a limit at accept, "shutdown"
 * while draining, "error" when its socket could not be set up), though
 * mailtier_sessions_total does not count it. Every listener × outcome
 * series exists from the start, so a rate over any of them is defined from
 * the first scrape.
 *
 * Trust boundary: none (counts the daemon's own decisions).
 * Threading: mt_conn_metrics_closed from any thread (atomics). */
#ifndef MT_CONN_METRICS_H
#define MT_CONN_METRICS_H

#include "conn.h"

struct mt_metrics;
struct mt_conn_metrics;

/* listeners: the daemon's listener label values, n of them. */
struct mt_conn_metrics *mt_conn_metrics_new(struct mt_metrics *m,
					    const char *const *listeners,
					    unsigned int n);
void mt_conn_metrics_free(struct mt_conn_metrics **cm_p);

/* One session (or refused connection) of listener (an index into the
 * names given) ended with outcome. cm may be NULL (metrics off). */
void mt_conn_metrics_closed(struct mt_conn_metrics *cm, unsigned int listener,
			    enum mt_conn_outcome outcome);

#endif
