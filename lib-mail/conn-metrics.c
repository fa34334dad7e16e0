/* conn-metrics.c — mailtier_sessions_closed_total (see conn-metrics.h).
 *
 * Trust boundary: none. No RFC. */
#include "conn-metrics.h"
#include "alloc.h"
#include "metrics.h"

#include <stdlib.h>

#define CLOSED_HELP \
	"Client sessions ended, by listener and outcome: quit (the client's QUIT or " \
	"LOGOUT), client_closed (the client closed the connection without one), " \
	"timeout (idle period or total session time), error (socket or TLS error, a " \
	"store or write failure), limit (ended for the client's conduct: too many " \
	"errors, junk commands or failed logins, a protocol violation), refused " \
	"(turned away at connect by a connection limit or a blocked address; such a " \
	"connection is no session and not in mailtier_sessions_total), shutdown " \
	"(drain or stop), backend_closed (MMP only: the store ended a relayed " \
	"session, after the client's QUIT/LOGOUT or on its own timeout or error; " \
	"the MMP does not read relayed bytes, so one the client hangs up first is " \
	"client_closed)."

struct mt_conn_metrics {
	unsigned int n;
	struct mt_series *(*closed)[MT_OUTCOME_COUNT];	/* [listener][outcome] */
};

struct mt_conn_metrics *mt_conn_metrics_new(struct mt_metrics *m,
					    const char *const *listeners,
					    unsigned int n)
{
	struct mt_metric_family *f = mt_metrics_counter(m, "mailtier_sessions_closed_total",
							CLOSED_HELP, "listener,outcome");
	struct mt_conn_metrics *cm = mt_xcalloc(1, sizeof(*cm));
	cm->n = n;
	cm->closed = mt_xcalloc(n + 1, sizeof(*cm->closed));
	for (unsigned int l = 0; l < n; l++)
		for (unsigned int o = 0; o < MT_OUTCOME_COUNT; o++)
			cm->closed[l][o] = mt_metric_series2(f, listeners[l],
							     mt_conn_outcome_names[o]);
	return cm;
}

void mt_conn_metrics_free(struct mt_conn_metrics **cm_p)
{
	struct mt_conn_metrics *cm = *cm_p;
	if (cm == NULL)
		return;
	*cm_p = NULL;
	free(cm->closed);
	free(cm);
}

void mt_conn_metrics_closed(struct mt_conn_metrics *cm, unsigned int listener,
			    enum mt_conn_outcome outcome)
{
	if (cm == NULL || listener >= cm->n || (unsigned int)outcome >= MT_OUTCOME_COUNT)
		return;
	mt_series_add(cm->closed[listener][outcome], 1);
}
