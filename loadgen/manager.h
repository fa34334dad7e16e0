/* manager.h — one run made by several generator processes: N local
 * workers (`--workers N`, forked, each on a socketpair) or remote agents
 * (`--agents host:port,...`, each `mailtier-load agent`). Generator i of n
 * takes the users K mod n = i (schedule.h), so together they make exactly
 * the sessions of one process. The manager sends each its settings and
 * share, starts them together, runs the SMTP sink itself and routes each
 * arrival to the generator that sent the message (by the id's slot), adds
 * up their heartbeats for the progress line and the timeline, decides when
 * a ramp stops (on the merged figures of each point), and merges their raw
 * results (histograms and counters) into one run result for the report.
 * Trust boundary: the generators' lines (wire.h), parsed strictly. Every
 * wait is bounded: connecting (5 s), the handshake and silence during
 * the run (agent_timeout), the whole run (its planned length plus
 * margins). A generator that fails or goes silent fails the run (an
 * error, exit 2), never a hang. */
#ifndef LG_MANAGER_H
#define LG_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

struct lg_manager_settings {
	unsigned int workers;		/* local processes, when no agents */
	const char *const *agents;	/* HOST:PORT of each agent */
	size_t n_agents;
	uint64_t agent_timeout_ms;	/* silence that fails the run */
};

bool lg_manager_run(const struct lg_run_settings *set,
		    const struct lg_manager_settings *mset,
		    struct lg_run_result *result, const char **error_r);

#endif
