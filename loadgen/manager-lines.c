/* manager-lines.c — what the generators of a multi-process run say (see
 * manager.h and wire.h): heartbeats, each point's measured figures (the
 * ramp's stop is decided on their sum), and the raw results, whose stats
 * blocks add straight into the run's result.
 * Trust boundary: the generators' lines, parsed strictly: a bad line, an
 * index out of range or a block out of place fails the run. */
#include "manager-private.h"

#include "alloc.h"
#include "log.h"
#include "session.h"
#include "wire.h"

#include <stdlib.h>
#include <string.h>

/* ---- the generators' lines ---- */

/* Every generator's figures of a ramp's point are in: go on or stop. */
static void point_measured(struct manager *m, size_t level)
{
	const struct lg_run_settings *set = m->set;
	enum lg_qos qos = lg_stats_qos(m->measured[level]);

	free(m->measured[level]);
	m->measured[level] = NULL;
	m->failed_in_a_row = lg_qos_misses_in_a_row(m->failed_in_a_row, qos);
	mt_info("level %u%%: QoS %s over all generators", set->levels[level],
		lg_qos_names[qos]);
	if (set->ramp && set->stop_after_failures > 0 &&
	    m->failed_in_a_row >= set->stop_after_failures &&
	    level + 1 < set->n_levels && !m->result->stopped_early) {
		m->result->stopped_early = true;
		lg_manager_send_all(m, "stop\n");
	}
}

static bool block_line(struct worker *w, const char *line)
{
	struct manager *m = w->m;
	const char *error;
	int rc;

	if (w->expect_header) {
		w->expect_header = false;
		if (strncmp(line, "stats ", 6) == 0)
			return true;
		lg_manager_fail(m, "%s: expected a stats block", w->name);
		return false;
	}
	if ((rc = lg_wire_stats_line(w->block, line, &error)) < 0) {
		lg_manager_fail(m, "%s: %s", w->name, error);
		return false;
	}
	if (rc == 0) {
		w->block = NULL;
		if (w->measured_level >= 0) {
			size_t level = (size_t)w->measured_level;
			w->measured_level = -1;
			if (++m->measured_count[level] == m->n)
				point_measured(m, level);
		}
	}
	return true;
}

/* A line of the result: the stats blocks add into the run's result. */
static bool result_line(struct worker *w, const char *line, const char *args)
{
	struct manager *m = w->m;
	struct lg_run_result *r = m->result;
	uint64_t v[4];

	if (strncmp(line, "level ", 6) == 0 && lg_wire_numbers(args, v, 4) &&
	    v[0] < r->n_levels && v[2] <= 1) {
		struct lg_level_result *level = &r->levels[v[0]];
		if (v[1] > level->measure_us)
			level->measure_us = v[1];
		if (v[3] > level->primed_repeats)
			level->primed_repeats = v[3];
		m->complete_votes[v[0]] += (unsigned int)v[2];
		return true;
	}
	if (strncmp(line, "stats ", 6) == 0) {
		const char *index_s;
		size_t len = lg_wire_word(args, &index_s);
		if (len == 6 && strncmp(args, "probes", 6) == 0 && *index_s == '\0') {
			w->block = &r->probes;
		} else if (lg_wire_numbers(index_s, v, 1) && v[0] < r->n_levels &&
			   (len == 6 || len == 7)) {
			w->block = strncmp(args, "warmup", len) == 0 ? &r->levels[v[0]].warmup :
				   strncmp(args, "measure", len) == 0 ? &r->levels[v[0]].measure : NULL;
		}
		if (w->block != NULL)
			return true;
	}
	if (strncmp(line, "tracker ", 8) == 0 && lg_wire_numbers(args, v, 3)) {
		r->tracker.tracked += v[0];
		r->tracker.untracked += v[1];
		r->tracker.foreign += v[2];
		return true;
	}
	if (strncmp(line, "summary ", 8) == 0 && lg_wire_numbers(args, v, 4) &&
	    v[1] <= 1 && v[2] <= 1) {
		r->undelivered += v[0];
		r->interrupted |= v[1] != 0;
		r->stopped_early |= v[2] != 0;
		if ((double)v[3] / 1000 > r->elapsed_s)
			r->elapsed_s = (double)v[3] / 1000;
		return true;
	}
	if (strcmp(line, "done") == 0) {
		w->state = W_DONE;
		if (++m->done == m->n)
			mt_loop_exit(m->loop);
		return true;
	}
	lg_manager_fail(m, "%s: bad result line: %.80s", w->name, line);
	return false;
}

bool lg_manager_worker_line(struct worker *w, const char *line)
{
	struct manager *m = w->m;
	const char *args;
	uint64_t level;

	w->last_heard_us = lg_now_us();
	if (w->block != NULL)
		return block_line(w, line);
	lg_wire_word(line, &args);
	if (strncmp(line, "error ", 6) == 0) {
		lg_manager_fail(m, "%s: %s", w->name, args);
		return false;
	}
	if (w->state == W_RESULT)
		return result_line(w, line, args);
	if (strncmp(line, "beat ", 5) == 0 && lg_wire_beat_parse(args, &w->beat)) {
		w->have_beat = true;
		return true;
	}
	if (strncmp(line, "measured ", 9) == 0 && lg_wire_numbers(args, &level, 1) &&
	    level < m->result->n_levels && m->measured_count[level] < m->n) {
		if (m->measured[level] == NULL) {
			m->measured[level] = mt_xmalloc(sizeof(struct lg_stats));
			lg_stats_init(m->measured[level]);
		}
		w->block = m->measured[level];
		w->expect_header = true;
		w->measured_level = (long)level;
		return true;
	}
	if (strncmp(line, "result ", 7) == 0 && lg_wire_numbers(args, &level, 1) &&
	    level == m->result->n_levels) {
		w->state = W_RESULT;
		return true;
	}
	lg_manager_fail(m, "%s: unexpected line: %.80s", w->name, line);
	return false;
}
