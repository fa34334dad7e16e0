/* engine.h — one benchmark run in one process and one libevent loop: for
 * each load level, a warm-up then a measured phase of open-loop arrivals
 * (schedule.h) started as SMTP, POP3 and IMAP client sessions
 * (smtp-client.h, pop-client.h, imap-client.h), thousands at once without
 * threads, and the SMTP submissions of the IMAP desktop clients' replies;
 * delivery probes, looked for by POP3 polls or an IMAP watcher; the SMTP
 * sink in the same loop; a cool-down that waits (bounded) for the last
 * sessions and deliveries; progress on the terminal.
 *
 * A run can be one share of a bigger one (schedule.h: users K mod N): the
 * engine then starts only its users' sessions, and a coordinator (a
 * manager process, through the hooks) routes the sink's arrivals to it,
 * takes its heartbeats and decides when a ramp stops.
 * Trust boundary: the settings come from the operator; everything from the
 * system under test is handled by the sessions and the sink. */
#ifndef LG_ENGINE_H
#define LG_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "progress.h"
#include "resolve.h"
#include "schedule.h"
#include "sink.h"
#include "stats.h"
#include "tracker.h"
#include "workload.h"

#define LG_MAX_LEVELS 32

struct lg_run_settings {
	struct lg_workload wl;
	/* HOST:PORT of each server, or several, comma-separated (resolve.h:
	 * several MTAs or MMPs, tried in turn, the next after a failed
	 * connect). */
	const char *smtp;		/* the SMTP server(s) */
	const char *pop;		/* the POP3 server(s) (NULL: none) */
	const char *imap;		/* the IMAP server(s) (NULL: none) */
	/* Where desktop IMAP clients submit their replies, with AUTH PLAIN
	 * as the user (NULL: to smtp, without AUTH). */
	const char *submission;
	bool tls;			/* STARTTLS in SMTP and (plain-port) IMAP */
	bool imaps;			/* IMAP: implicit TLS (the 993 kind of port) */
	const char *sink_listen;	/* NULL: no sink, remote delivery untimed */
	const char *metrics_listen;	/* NULL: no live metrics (live-metrics.h) */
	unsigned int levels[LG_MAX_LEVELS];
	size_t n_levels;
	uint64_t warmup_ms, duration_ms, cooldown_ms;
	unsigned int step_timeout_ms;
	/* With several addresses for a service, a connect unanswered this
	 * long goes on to the next one (session.h). */
	unsigned int connect_timeout_ms;
	uint64_t seed;
	unsigned int probe_interval_ms;	/* 0: no local delivery probes */
	/* The probe mailbox is looked at by a POP3 poll this often (pop,
	 * mixed), or by an IMAP watcher in IDLE (imap: NOOP this often when
	 * the server has no IDLE, and a failed watcher started again). */
	unsigned int probe_poll_ms;
	uint64_t probe_user;		/* 1..users */
	unsigned int max_sessions;	/* open at once; beyond: overload errors */
	unsigned int progress_ms;	/* 0: no progress lines */
	/* ramp: the levels are load points; stop after this many points in a
	 * row missed QoS (0: run them all). */
	bool ramp;
	unsigned int stop_after_failures;
	/* This process's users (count <= 1: all of them). */
	struct lg_share share;
	/* 0: a new random one; else the run's base | the share's slot. */
	uint64_t run_id;
	/* A coordinator's sink times the remote copies (a worker has none). */
	bool remote_sink;
	/* NULL: no message ledger; else its file (ledger.h; one process). */
	const char *ledger;
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
	uint64_t undelivered;		/* arrivals still awaited at the end (unresolved) */
	bool interrupted;
	bool stopped_early;		/* ramp: points left out after failures */
	struct lg_sample *samples;	/* one a second */
	size_t n_samples, samples_cap;
	double elapsed_s;
	unsigned int generators;	/* processes that made the load */
};

struct lg_engine;
struct event_base;

/* A coordinated run (a worker of a manager): the coordinator's side. */
struct lg_engine_hooks {
	/* The loop is ready (before the first level): hook in. */
	bool (*attach)(struct lg_engine *engine, struct event_base *base,
		       void *context, const char **error_r);
	/* About once a second: where the run is. */
	void (*beat)(struct lg_engine *engine, const struct lg_progress *progress,
		     void *context);
	/* A level's measured phase ended (its figures so far). The engine
	 * goes on to the next level; a ramp stops on lg_engine_stop_levels(). */
	void (*measured)(struct lg_engine *engine, size_t level,
			 const struct lg_stats *measure, void *context);
	/* The run is over: unhook (before the loop is freed). */
	void (*detach)(struct lg_engine *engine, void *context);
	void *context;
};

/* Run; false with a reason on a setup error (bad address, port in use).
 * hooks: NULL for a run of its own (it prints its progress, decides its
 * ramp and runs the sink itself). */
bool lg_engine_run(const struct lg_run_settings *set,
		   const struct lg_engine_hooks *hooks,
		   struct lg_run_result *result, const char **error_r);
void lg_run_result_free(struct lg_run_result *result);
/* Set up result's levels for set (all counts zero). */
void lg_run_result_init(struct lg_run_result *result,
			const struct lg_run_settings *set);
/* Append a timeline sample. */
void lg_run_result_add_sample(struct lg_run_result *result, double t_s,
			      const struct lg_progress *progress);

/* For the coordinator, from the engine's loop: */
/* A message with this id arrived at the (manager's) sink. */
void lg_engine_arrival(struct lg_engine *engine, const char *id, size_t len,
		       unsigned int count);
/* The ramp stops: no more levels, cool down now. */
void lg_engine_stop_levels(struct lg_engine *engine);
/* Stop as on SIGINT: no new sessions, the open ones end, then the result. */
void lg_engine_interrupt(struct lg_engine *engine);

#endif
