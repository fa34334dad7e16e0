/* engine.h — one benchmark run in one process and one libevent loop: for
 * each load level, a warm-up then a measured phase of open-loop arrivals
 * (schedule.h) started as SMTP and POP3 client sessions (smtp-client.h,
 * pop-client.h), thousands at once without threads; delivery probes; the
 * SMTP sink in the same loop; a cool-down that waits (bounded) for the last
 * sessions and deliveries; progress on the terminal.
 * Trust boundary: the settings come from the operator; everything from the
 * system under test is handled by the sessions and the sink. */
#ifndef LG_ENGINE_H
#define LG_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "sink.h"
#include "stats.h"
#include "tracker.h"
#include "workload.h"

#define LG_MAX_LEVELS 32

struct lg_run_settings {
	struct lg_workload wl;
	const char *smtp;		/* HOST:PORT of the SMTP server */
	const char *pop;		/* HOST:PORT of the POP3 server */
	const char *sink_listen;	/* NULL: no sink, remote delivery untimed */
	unsigned int levels[LG_MAX_LEVELS];
	size_t n_levels;
	uint64_t warmup_ms, duration_ms, cooldown_ms;
	unsigned int step_timeout_ms;
	uint64_t seed;
	unsigned int probe_interval_ms;	/* 0: no local delivery probes */
	unsigned int probe_poll_ms;
	uint64_t probe_user;		/* 1..users */
	unsigned int max_sessions;	/* open at once; beyond: overload errors */
	unsigned int progress_ms;	/* 0: no progress lines */
	/* ramp: the levels are load points; stop after this many points in a
	 * row missed QoS (0: run them all). */
	bool ramp;
	unsigned int stop_after_failures;
};

struct lg_level_result {
	unsigned int pct;
	double target_msgs_per_min;
	struct lg_stats warmup;
	struct lg_stats measure;
	uint64_t measure_us;		/* length of the measured phase */
	uint64_t primed_repeats;
	bool complete;			/* the measured phase ran its full length */
};

/* One second of the run, for the msgs/min-over-time chart. */
struct lg_sample {
	double t_s;			/* since the run started */
	unsigned int level;		/* index */
	unsigned int phase;		/* 0 warm-up, 1 measure, 2 cool-down */
	uint64_t msgs_local;		/* local users' messages accepted so far */
	uint64_t sessions_failed;	/* so far */
	uint64_t open;			/* sessions open now */
};

struct lg_run_result {
	struct lg_level_result *levels;
	size_t n_levels;
	struct lg_stats probes;		/* the probe sessions' own steps */
	bool have_sink;
	struct lg_sink_counts sink;
	struct lg_tracker_counts tracker;
	uint64_t run_id;
	uint64_t undelivered;		/* expected arrivals given up at the end */
	bool interrupted;
	bool stopped_early;		/* ramp: points left out after failures */
	struct lg_sample *samples;	/* one a second */
	size_t n_samples, samples_cap;
	double elapsed_s;
};

/* Run; false with a reason on a setup error (bad address, port in use). */
bool lg_engine_run(const struct lg_run_settings *set,
		   struct lg_run_result *result, const char **error_r);
void lg_run_result_free(struct lg_run_result *result);

/* Resolve "host:port" / "[v6]:port" for connecting. */
bool lg_resolve(const char *hostport, struct sockaddr_storage *ss,
		socklen_t *len_r, const char **error_r);

#endif
