/* agent.h — the generator side of a managed run: one connection from a
 * manager (`run --agents`, or a local `--workers` process on a
 * socketpair) gives the run's settings and this generator's share of the
 * users; the agent runs the engine on that share, sends heartbeats and
 * the figures of each measured phase while it runs, takes the sink's
 * arrivals and the ramp's stop from the manager, and at the end sends its
 * raw result (histograms and counters) for the manager to merge. The
 * protocol is in wire.h.
 * Trust boundary: the manager's lines are parsed strictly (run-options.h
 * for the settings); every wait on the manager has a deadline, and a
 * manager that goes away interrupts the run. */
#ifndef LG_AGENT_H
#define LG_AGENT_H

/* Serve one manager on the connected socket fd (closed on return).
 * 0: a run was done and its result sent; -1: not (the reason is logged). */
int lg_agent_serve(int fd, const char *peer);

#endif
