/* report.h — the run's report: on a stream, the SPECmail2001 result pages'
 * tables in the same shape (Summary: function, response time limit,
 * required and achieved percentage compliant per load level; Detailed
 * Results per level: attempts, passes, % pass, min/mean/max and
 * p50/p95/p99 times, counters, sizes), and the raw figures as JSON in the
 * report directory. Trust boundary: none (our own figures). */
#ifndef LG_REPORT_H
#define LG_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "engine.h"

/* Levels at or below this percentage must meet QoS for a valid run. */
#define LG_REQUIRED_LEVEL_MAX 100u
/* What the report says of a level with too few attempts to judge. */
#define LG_REPORT_TOO_FEW "too few attempts to judge: raise --users or --duration"

struct mt_buf;

/* A level's verdict as the report gives it. */
enum lg_level_verdict {
	LG_LEVEL_MET,
	LG_LEVEL_NOT_MET,
	LG_LEVEL_NOT_JUDGED,	/* too few attempts (stats.h's rule) */
	LG_LEVEL_PARTIAL,	/* its measured phase was cut short */
	LG_LEVEL_NOT_RUN,
	LG_LEVEL_VERDICT_COUNT
};

enum lg_level_verdict lg_report_level_verdict(const struct lg_level_result *level);
/* The Summary table's word for it: "yes", "NO", "too few", ... */
const char *lg_report_verdict_word(enum lg_level_verdict verdict);
/* Why a level is not judged: its rows with too few attempts and how many
 * they need ("POP Connect 3, sessions 5; 20 needed each"). */
void lg_report_too_few(struct mt_buf *b, const struct lg_stats *stats);
/* The run's one-line result (not a ramp's): "VALID: QoS met at 80%,
 * 100%" or "NOT VALID: " and the required levels by verdict. */
void lg_report_result_line(struct mt_buf *b, const struct lg_run_settings *set,
			   const struct lg_run_result *result);

/* A ramp: the highest load point that ran fully and met QoS, or -1. */
int lg_report_ramp_best(const struct lg_run_result *result);
/* Mean and p95 response time (ms) over every SMTP and POP3 step: the
 * single overall figure of a load point (SPECsfs-style). */
void lg_report_overall(const struct lg_stats *stats, double *mean_ms_r,
		       double *p95_ms_r);
/* Whether the run met QoS at every required level (80% and 100% in the
 * standard run); false as well if no required level completed. A ramp is
 * valid when at least one load point met QoS. */
bool lg_report_valid(const struct lg_run_settings *set,
		     const struct lg_run_result *result);
void lg_report_print(FILE *out, const struct lg_run_settings *set,
		     const struct lg_run_result *result);
/* Write DIR/results.json (creating DIR); false with a reason. */
bool lg_report_write_json(const char *dir, const struct lg_run_settings *set,
			  const struct lg_run_result *result,
			  const char **error_r);
/* Write DIR/report.html: one self-contained page with the tables and
 * inline SVG charts (throughput against response time per level, response
 * time distributions per function, msgs/min over time); and the figures as
 * CSV: DIR/functions.csv, DIR/timeline.csv. false with a reason. */
bool lg_report_write_html(const char *dir, const struct lg_run_settings *set,
			  const struct lg_run_result *result,
			  const char **error_r);
bool lg_report_write_csv(const char *dir, const struct lg_run_settings *set,
			 const struct lg_run_result *result,
			 const char **error_r);
/* DIR/NAME := data (DIR created as needed). */
bool lg_report_write_file(const char *dir, const char *name, const char *data,
			  size_t len, const char **error_r);
/* Achieved SPECmail2001 msgs/min of a level's measured phase. */
double lg_report_achieved(const struct lg_level_result *level);
/* Sum of every phase of every level and the probes. */
void lg_report_totals(const struct lg_run_result *result, struct lg_stats *totals);

#endif
