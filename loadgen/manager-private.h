/* manager-private.h — a multi-process run's state, shared by manager.c
 * (starting the generators, the loop, the end) and manager-lines.c (what
 * the generators say: heartbeats, measured points, results). Not for
 * other files. Trust boundary: none (internal). */
#ifndef LG_MANAGER_PRIVATE_H
#define LG_MANAGER_PRIVATE_H

#include "manager.h"

#include "loop.h"
#include "sink.h"

#include <sys/types.h>

struct bufferevent;

enum worker_state { W_RUN, W_RESULT, W_DONE };

struct manager;

struct worker {
	struct manager *m;
	unsigned int index;
	char name[300];
	int fd;
	pid_t pid;			/* a local worker we forked, else 0 */
	struct bufferevent *bev;
	enum worker_state state;
	struct lg_stats *block;		/* the stats block being read */
	bool expect_header;		/* its "stats" line is next */
	long measured_level;		/* the block is level's measured figures */
	uint64_t last_heard_us;
	struct lg_progress beat;
	bool have_beat;
};

struct manager {
	const struct lg_run_settings *set;
	const struct lg_manager_settings *mset;
	struct lg_run_result *result;
	struct worker *w;
	size_t n, done;
	struct mt_loop *loop;
	struct lg_sink *sink;
	struct lg_live_metrics *live;	/* --metrics-listen */
	struct mt_timer *tick;
	uint64_t base_run_id;
	struct lg_stats **measured;	/* per level: the sum so far */
	unsigned int *measured_count;	/* per level: generators reported */
	unsigned int *complete_votes;	/* per level */
	unsigned int failed_in_a_row;
	uint64_t foreign, late;		/* arrivals not routed */
	uint64_t start_us, deadline_us, last_sample_us, last_progress_us;
	char error[400];
	bool failed;
};

/* The run fails: stop the loop (the first reason is kept). */
void lg_manager_fail(struct manager *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Queue text to every generator still running. */
void lg_manager_send_all(struct manager *m, const char *text);
/* A line from w (bounded, without the LF); false when it failed the run. */
bool lg_manager_worker_line(struct worker *w, const char *line);

#endif
