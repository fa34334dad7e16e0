/* report.c — the printed tables and the JSON results (see report.h).
 * Trust boundary: none; strings from the operator (domains, addresses) are
 * escaped in the JSON. */
#include "report.h"

#include "errors.h"
#include "alloc.h"
#include "buf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

static bool level_required(const struct lg_level_result *level)
{
	return level->pct <= LG_REQUIRED_LEVEL_MAX;
}

double lg_report_achieved(const struct lg_level_result *level)
{
	return level->measure_us == 0 ? 0 :
		(double)level->measure.counters.msgs_local_sent * 60e6 /
		(double)level->measure_us;
}

int lg_report_ramp_best(const struct lg_run_result *result)
{
	int best = -1;

	for (size_t i = 0; i < result->n_levels; i++) {
		const struct lg_level_result *level = &result->levels[i];
		if (level->complete && lg_stats_qos_met(&level->measure) &&
		    (best < 0 || level->pct > result->levels[best].pct))
			best = (int)i;
	}
	return best;
}

void lg_report_overall(const struct lg_stats *stats, double *mean_ms_r,
		       double *p95_ms_r)
{
	struct lg_hist *all = mt_xmalloc(sizeof(*all));

	lg_hist_init(all);
	for (int f = 0; f < LG_FN_COUNT; f++)
		if (f != LG_FN_DELIVERY)
			lg_hist_merge(all, &stats->fn[f].hist);
	*mean_ms_r = lg_hist_mean(all) / 1000;
	*p95_ms_r = (double)lg_hist_quantile(all, 0.95) / 1000;
	free(all);
}

bool lg_report_valid(const struct lg_run_settings *set,
		     const struct lg_run_result *result)
{
	bool any = false;

	if (set->ramp)
		return lg_report_ramp_best(result) >= 0;
	if (result->interrupted)
		return false;
	for (size_t i = 0; i < result->n_levels; i++) {
		const struct lg_level_result *level = &result->levels[i];
		if (!level_required(level))
			continue;
		if (!level->complete || !lg_stats_qos_met(&level->measure))
			return false;
		any = true;
	}
	return any;
}

enum lg_level_verdict lg_report_level_verdict(const struct lg_level_result *level)
{
	if (!level->complete)
		return level->measure_us == 0 ? LG_LEVEL_NOT_RUN : LG_LEVEL_PARTIAL;
	switch (lg_stats_qos(&level->measure)) {
	case LG_QOS_MET:
		return LG_LEVEL_MET;
	case LG_QOS_NOT_JUDGED:
		return LG_LEVEL_NOT_JUDGED;
	case LG_QOS_UNUSED:
	case LG_QOS_NOT_MET:
		break;
	}
	return LG_LEVEL_NOT_MET;
}

const char *lg_report_verdict_word(enum lg_level_verdict verdict)
{
	static const char *const words[LG_LEVEL_VERDICT_COUNT] = {
		[LG_LEVEL_MET] = "yes", [LG_LEVEL_NOT_MET] = "NO",
		[LG_LEVEL_NOT_JUDGED] = "too few", [LG_LEVEL_PARTIAL] = "partial",
		[LG_LEVEL_NOT_RUN] = "not run",
	};
	return words[verdict];
}

void lg_report_too_few(struct mt_buf *b, const struct lg_stats *stats)
{
	const char *sep = "";

	for (int f = 0; f < LG_FN_COUNT; f++) {
		if (!lg_functions[f].summary ||
		    lg_stats_fn_qos(stats, f) != LG_QOS_NOT_JUDGED)
			continue;
		mt_buf_appendf(b, "%s%s %" PRIu64, sep, lg_functions[f].label,
			       stats->fn[f].attempts);
		sep = ", ";
	}
	if (lg_stats_error_qos(stats) == LG_QOS_NOT_JUDGED)
		mt_buf_appendf(b, "%ssessions %" PRIu64, sep,
			       lg_stats_total_sessions(stats));
	mt_buf_appendf(b, "; %u needed each", LG_QOS_MIN_ATTEMPTS);
}

/* The required levels of one verdict, after "; " unless first. */
static bool append_levels(struct mt_buf *b, const struct lg_run_result *r,
			  enum lg_level_verdict verdict, bool first)
{
	static const char *const labels[LG_LEVEL_VERDICT_COUNT] = {
		[LG_LEVEL_MET] = "met", [LG_LEVEL_NOT_MET] = "not met",
		[LG_LEVEL_NOT_JUDGED] = "not judged", [LG_LEVEL_PARTIAL] = "partial",
		[LG_LEVEL_NOT_RUN] = "not run",
	};
	const char *sep = "";

	for (size_t i = 0; i < r->n_levels; i++) {
		const struct lg_level_result *level = &r->levels[i];
		if (!level_required(level) || lg_report_level_verdict(level) != verdict)
			continue;
		if (*sep == '\0')
			mt_buf_appendf(b, "%s%s at", first ? "QoS " : "; ", labels[verdict]);
		mt_buf_appendf(b, "%s %u%%", sep, level->pct);
		sep = ",";
	}
	if (*sep != '\0' && verdict == LG_LEVEL_NOT_JUDGED)
		mt_buf_append_str(b, " (" LG_REPORT_TOO_FEW ")");
	return first && *sep == '\0';
}

void lg_report_result_line(struct mt_buf *b, const struct lg_run_settings *set,
			   const struct lg_run_result *r)
{
	static const enum lg_level_verdict order[] = {
		LG_LEVEL_NOT_MET, LG_LEVEL_NOT_JUDGED, LG_LEVEL_PARTIAL,
		LG_LEVEL_NOT_RUN, LG_LEVEL_MET,
	};
	bool valid = lg_report_valid(set, r), first = true;

	mt_buf_append_str(b, valid ? "VALID: " : "NOT VALID: ");
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		first = append_levels(b, r, order[i], first);
	if (first)
		mt_buf_appendf(b, "no level up to %u%% was run", LG_REQUIRED_LEVEL_MAX);
	if (r->interrupted)
		mt_buf_append_str(b, " (interrupted)");
}

void lg_report_totals(const struct lg_run_result *result, struct lg_stats *totals)
{
	lg_stats_init(totals);
	for (size_t i = 0; i < result->n_levels; i++) {
		lg_stats_merge(totals, &result->levels[i].warmup);
		lg_stats_merge(totals, &result->levels[i].measure);
	}
	lg_stats_merge(totals, &result->probes);
}

/* ---- text ---- */

static double ms(uint64_t us) { return (double)us / 1000.0; }

static void print_pct(FILE *out, double pct)
{
	if (pct < 0)
		fprintf(out, " %9s", "n/a");
	else
		fprintf(out, " %8.2f%%", pct);
}

/* Under the Summary: each level with too few attempts to judge, why, and
 * what to do about it. */
static void print_too_few(FILE *out, const struct lg_run_result *r)
{
	struct mt_buf why = MT_BUF_INIT;

	for (size_t i = 0; i < r->n_levels; i++) {
		const struct lg_level_result *level = &r->levels[i];
		if (lg_report_level_verdict(level) != LG_LEVEL_NOT_JUDGED)
			continue;
		mt_buf_reset(&why);
		lg_report_too_few(&why, &level->measure);
		fprintf(out, "Not judged at %u%%: " LG_REPORT_TOO_FEW " (%s)\n",
			level->pct, mt_buf_cstr(&why));
	}
	mt_buf_free(&why);
}

static void print_summary(FILE *out, const struct lg_run_result *r, bool ramp)
{
	fprintf(out, "Summary Results\n");
	fprintf(out, "%-16s %10s %10s  %s\n", "Function", "Response", "Required",
		"Percentage Compliant");
	fprintf(out, "%-16s %10s %10s ", "", "limit (s)", "Percentage");
	for (size_t i = 0; i < r->n_levels; i++)
		fprintf(out, " %8u%%", r->levels[i].pct);
	fprintf(out, "\n");
	for (int f = 0; f < LG_FN_COUNT; f++) {
		if (!lg_functions[f].summary)
			continue;
		fprintf(out, "%-16s %10" PRIu64 " %10s ", lg_functions[f].label,
			lg_functions[f].limit_us / 1000000, ">95%");
		for (size_t i = 0; i < r->n_levels; i++)
			print_pct(out, lg_stats_pass_pct(&r->levels[i].measure, f));
		fprintf(out, "\n");
	}
	fprintf(out, "%-16s %10s %10s ", "Error Rate", "NA", "<1%");
	for (size_t i = 0; i < r->n_levels; i++)
		print_pct(out, lg_stats_error_rate_pct(&r->levels[i].measure));
	fprintf(out, "\n%-16s %10s %10s ", "QoS met", "", "");
	for (size_t i = 0; i < r->n_levels; i++)
		fprintf(out, " %9s",
			lg_report_verdict_word(lg_report_level_verdict(&r->levels[i])));
	fprintf(out, "\n");
	if (!ramp) {
		fprintf(out, "%-16s %10s %10s ", "", "", "");
		for (size_t i = 0; i < r->n_levels; i++)
			fprintf(out, " %9s", level_required(&r->levels[i]) ? "required" : "reported");
		fprintf(out, "\n");
	}
	print_too_few(out, r);
}

static void print_functions(FILE *out, const struct lg_stats *st)
{
	fprintf(out, "%-16s %9s %9s %8s %9s %9s %9s %9s %9s %9s\n", "Function",
		"Attempts", "Pass", "% Pass", "Min ms", "Mean ms", "Max ms",
		"p50 ms", "p95 ms", "p99 ms");
	for (int f = 0; f < LG_FN_COUNT; f++) {
		const struct lg_fn_stats *fs = &st->fn[f];
		const struct lg_hist *h = &fs->hist;
		double pct = lg_stats_pass_pct(st, f);

		fprintf(out, "%-16s %9" PRIu64 " %9" PRIu64, lg_functions[f].label,
			fs->attempts, fs->pass);
		if (pct < 0)
			fprintf(out, " %8s", "n/a");
		else
			fprintf(out, " %7.2f%%", pct);
		if (h->count == 0) {
			fprintf(out, "\n");
			continue;
		}
		fprintf(out, " %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n",
			ms(h->min), lg_hist_mean(h) / 1000.0, ms(h->max),
			ms(lg_hist_quantile(h, 0.50)), ms(lg_hist_quantile(h, 0.95)),
			ms(lg_hist_quantile(h, 0.99)));
	}
}

static void print_counters(FILE *out, const struct lg_stats *st)
{
	const struct lg_counters *c = &st->counters;
	double error = lg_stats_error_rate_pct(st);

	fprintf(out, "Sessions  ");
	for (int k = 0; k < LG_KIND_COUNT; k++)
		fprintf(out, " %s %" PRIu64 " (failed %" PRIu64 ")", lg_kind_names[k],
			st->sessions[k], st->sessions_failed[k]);
	fprintf(out, "\nErrors    ");
	for (int i = 0; i < LG_ERR_COUNT; i++)
		fprintf(out, " %s %" PRIu64, lg_error_names[i], st->errors[i]);
	fprintf(out, "  (error rate %.2f%%)\n", error < 0 ? 0 : error);
	fprintf(out, "Messages   local users sent %" PRIu64 ", remote servers sent %" PRIu64
		"; recipients to-local %" PRIu64 ", to-remote %" PRIu64 "\n",
		c->msgs_local_sent, c->msgs_remote_sent, c->rcpts_to_local,
		c->rcpts_to_remote);
	if (st->sessions[LG_KIND_IMAP_REPLY_SUBMIT] > 0)
		fprintf(out, "           IMAP replies submitted %" PRIu64 " (recipients to-local %"
			PRIu64 ", to-remote %" PRIu64 ", among those above)\n",
			c->msgs_submitted, c->submitted_rcpts_local, c->submitted_rcpts_remote);
	fprintf(out, "           retrieved %" PRIu64 ", deleted %" PRIu64
		"; local delivery probes %" PRIu64 "; deliveries late %" PRIu64
		", lost %" PRIu64 ", unresolved at end %" PRIu64 " (%" PRIu64
		" past the 60 s limit)\n", c->msgs_retrieved, c->msgs_deleted,
		c->probes_local, c->deliveries_late, c->deliveries_lost,
		c->deliveries_unresolved, c->deliveries_unresolved_late);
	uint64_t sent = c->msgs_local_sent + c->msgs_remote_sent + c->msgs_submitted;
	fprintf(out, "Sizes      up %.1f KiB (avg %.1f KiB/msg), down %.1f KiB (avg %.1f KiB/msg)\n",
		(double)c->bytes_up / 1024, sent ? (double)c->bytes_up / 1024 / (double)sent : 0,
		(double)c->bytes_down / 1024,
		c->msgs_retrieved ? (double)c->bytes_down / 1024 / (double)c->msgs_retrieved : 0);
}

/* The SPECsfs-style curve: achieved throughput against response time at
 * each load point, and the highest point still within QoS. */
static void print_ramp(FILE *out, const struct lg_run_result *r)
{
	int best = lg_report_ramp_best(r);

	fprintf(out, "\nRamp: throughput against response time (every SMTP and POP3 step)\n");
	fprintf(out, "%5s %6s %14s %16s %9s %9s %8s\n", "Point", "Load", "Target msg/min",
		"Achieved msg/min", "Mean ms", "p95 ms", "QoS");
	for (size_t i = 0; i < r->n_levels; i++) {
		const struct lg_level_result *level = &r->levels[i];
		double mean, p95;
		if (!level->complete && level->measure_us == 0) {
			fprintf(out, "%5zu %5u%% %14.1f %16s\n", i + 1, level->pct,
				level->target_msgs_per_min, "not run");
			continue;
		}
		lg_report_overall(&level->measure, &mean, &p95);
		fprintf(out, "%5zu %5u%% %14.1f %16.1f %9.2f %9.2f %8s\n", i + 1,
			level->pct, level->target_msgs_per_min,
			lg_report_achieved(level), mean, p95,
			lg_report_verdict_word(lg_report_level_verdict(level)));
	}
	if (best >= 0)
		fprintf(out, "\nResult: highest load point within QoS: %u%% (point %d), "
			"%.1f msgs/min achieved (target %.1f)%s\n", r->levels[best].pct,
			best + 1, lg_report_achieved(&r->levels[best]),
			r->levels[best].target_msgs_per_min,
			r->stopped_early ? "; stopped after points in a row missed QoS" : "");
	else
		fprintf(out, "\nResult: no load point met QoS%s\n",
			r->interrupted ? " (interrupted)" : "");
}

void lg_report_print(FILE *out, const struct lg_run_settings *set,
		     const struct lg_run_result *r)
{
	struct lg_stats *totals = mt_xmalloc(sizeof(*totals));

	fprintf(out, "\nmailtier-load %s: SPECmail2001-style run %016" PRIx64 "%s\n",
		PACKAGE_VERSION, r->run_id, r->interrupted ? " (INTERRUPTED)" : "");
	fprintf(out, "Users %" PRIu64 " @%s", set->wl.users, set->wl.domain);
	if (set->wl.load_users != 0)
		fprintf(out, " carrying the load of %" PRIu64 " users", set->wl.load_users);
	fprintf(out, " (%.2f SPECmail2001 msgs/min at 100%%), remote @%s; seed %" PRIu64
		"; warm-up %.0f s, measured %.0f s per level",
		lg_workload_msgs_per_min(&set->wl, 100), set->wl.remote_domain,
		set->seed, (double)set->warmup_ms / 1000, (double)set->duration_ms / 1000);
	if (r->generators > 1)
		fprintf(out, "; %u generator processes", r->generators);
	fprintf(out, "\n\n");
	print_summary(out, r, set->ramp);
	for (size_t i = 0; i < r->n_levels; i++) {
		const struct lg_level_result *level = &r->levels[i];
		if (!level->complete && level->measure_us == 0)
			continue;	/* never measured */
		fprintf(out, "\nDetailed Results %u%% load: target %.2f msgs/min, "
			"achieved %.2f msgs/min, measured %.1f s%s\n", level->pct,
			level->target_msgs_per_min, lg_report_achieved(level),
			(double)level->measure_us / 1e6,
			level->complete ? "" : " (partial)");
		print_functions(out, &level->measure);
		print_counters(out, &level->measure);
	}
	lg_report_totals(r, totals);
	fprintf(out, "\nRun totals (every phase, probes included)\n");
	print_counters(out, totals);
	if (r->have_sink)
		fprintf(out, "Sink       sessions %" PRIu64 ", messages %" PRIu64
			", recipients %" PRIu64 ", %.1f KiB, with our id %" PRIu64 "\n",
			r->sink.sessions, r->sink.transactions, r->sink.rcpts,
			(double)r->sink.octets / 1024, r->sink.with_id);
	fprintf(out, "Arrivals   timed %" PRIu64 ", untracked %" PRIu64 ", foreign %" PRIu64
		"; still awaited at the end %" PRIu64 "\n", r->tracker.tracked,
		r->tracker.untracked, r->tracker.foreign, r->undelivered);
	if (set->ramp) {
		print_ramp(out, r);
		free(totals);
		return;
	}
	struct mt_buf result = MT_BUF_INIT;
	lg_report_result_line(&result, set, r);
	fprintf(out, "\nResult: %s\n", mt_buf_cstr(&result));
	mt_buf_free(&result);
	free(totals);
}

/* ---- JSON ---- */

static void json_string(struct mt_buf *b, const char *s)
{
	mt_buf_append_char(b, '"');
	for (; s != NULL && *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			mt_buf_appendf(b, "\\%c", c);
		else if (c < 0x20)
			mt_buf_appendf(b, "\\u%04x", c);
		else
			mt_buf_append_char(b, (char)c);
	}
	mt_buf_append_char(b, '"');
}

static void json_number(struct mt_buf *b, double value)
{
	if (value < 0)
		mt_buf_append_str(b, "null");
	else
		mt_buf_appendf(b, "%.4f", value);
}

static void json_stats(struct mt_buf *b, const struct lg_stats *st)
{
	mt_buf_append_str(b, "{\"functions\":{");
	for (int f = 0; f < LG_FN_COUNT; f++) {
		const struct lg_fn_stats *fs = &st->fn[f];
		const struct lg_hist *h = &fs->hist;
		mt_buf_appendf(b, "%s\"%s\":{\"label\":\"%s\",\"limit_ms\":%" PRIu64
			",\"attempts\":%" PRIu64 ",\"pass\":%" PRIu64 ",\"fail\":%" PRIu64
			",\"answered\":%" PRIu64 ",\"pass_pct\":", f ? "," : "",
			lg_functions[f].key, lg_functions[f].label,
			lg_functions[f].limit_us / 1000, fs->attempts, fs->pass,
			fs->attempts - fs->pass, h->count);
		json_number(b, lg_stats_pass_pct(st, f));
		if (h->count > 0)
			mt_buf_appendf(b, ",\"min_ms\":%.3f,\"mean_ms\":%.3f,\"max_ms\":%.3f,"
				"\"p50_ms\":%.3f,\"p95_ms\":%.3f,\"p99_ms\":%.3f",
				ms(h->min), lg_hist_mean(h) / 1000, ms(h->max),
				ms(lg_hist_quantile(h, 0.5)), ms(lg_hist_quantile(h, 0.95)),
				ms(lg_hist_quantile(h, 0.99)));
		mt_buf_append_char(b, '}');
	}
	mt_buf_append_str(b, "},\"sessions\":{");
	for (int k = 0; k < LG_KIND_COUNT; k++)
		mt_buf_appendf(b, "%s\"%s\":{\"attempted\":%" PRIu64 ",\"failed\":%" PRIu64 "}",
			k ? "," : "", lg_kind_names[k], st->sessions[k],
			st->sessions_failed[k]);
	mt_buf_appendf(b, "},\"sessions_attempted\":%" PRIu64 ",\"sessions_failed\":%" PRIu64
		",\"error_rate_pct\":", lg_stats_total_sessions(st),
		lg_stats_total_failed(st));
	json_number(b, lg_stats_error_rate_pct(st));
	mt_buf_append_str(b, ",\"errors\":{");
	for (int i = 0; i < LG_ERR_COUNT; i++)
		mt_buf_appendf(b, "%s\"%s\":%" PRIu64, i ? "," : "", lg_error_names[i],
			       st->errors[i]);
	const struct lg_counters *c = &st->counters;
	mt_buf_appendf(b, "},\"counters\":{\"msgs_local_sent\":%" PRIu64
		",\"msgs_remote_sent\":%" PRIu64 ",\"rcpts_to_local\":%" PRIu64
		",\"rcpts_to_remote\":%" PRIu64 ",\"bytes_up\":%" PRIu64
		",\"bytes_down\":%" PRIu64 ",\"msgs_retrieved\":%" PRIu64
		",\"msgs_deleted\":%" PRIu64 ",\"probes_local\":%" PRIu64
		",\"deliveries_late\":%" PRIu64 ",\"deliveries_lost\":%" PRIu64
		",\"deliveries_unresolved\":%" PRIu64
		",\"deliveries_unresolved_late\":%" PRIu64
		",\"probe_sessions\":%" PRIu64 ",\"probe_session_errors\":%" PRIu64
		",\"msgs_submitted\":%" PRIu64 ",\"submitted_rcpts_local\":%" PRIu64
		",\"submitted_rcpts_remote\":%" PRIu64 "}}",
		c->msgs_local_sent, c->msgs_remote_sent, c->rcpts_to_local,
		c->rcpts_to_remote, c->bytes_up, c->bytes_down, c->msgs_retrieved,
		c->msgs_deleted, c->probes_local, c->deliveries_late,
		c->deliveries_lost, c->deliveries_unresolved,
		c->deliveries_unresolved_late, c->probe_sessions,
		c->probe_session_errors, c->msgs_submitted, c->submitted_rcpts_local,
		c->submitted_rcpts_remote);
}

static void json_run(struct mt_buf *b, const struct lg_run_settings *set,
		     const struct lg_run_result *r)
{
	struct lg_stats *totals = mt_xmalloc(sizeof(*totals));

	mt_buf_appendf(b, "{\"tool\":\"mailtier-load\",\"mode\":\"%s\",\"version\":\"%s\","
		"\"generators\":%u,"
		"\"run_id\":\"%016" PRIx64 "\",\"seed\":%" PRIu64 ",\"users\":%" PRIu64
		",\"load_users\":%" PRIu64 ",\"target_msgs_per_min_at_100\":%.4f,\"domain\":",
		set->ramp ? "ramp" : "run", PACKAGE_VERSION,
		r->generators > 0 ? r->generators : 1, r->run_id, set->seed,
		set->wl.users, set->wl.load_users ? set->wl.load_users : set->wl.users,
		lg_workload_msgs_per_min(&set->wl, 100));
	json_string(b, set->wl.domain);
	mt_buf_append_str(b, ",\"remote_domain\":");
	json_string(b, set->wl.remote_domain);
	mt_buf_append_str(b, ",\"smtp\":");
	json_string(b, set->smtp);
	mt_buf_append_str(b, ",\"pop\":");
	json_string(b, set->pop);
	mt_buf_append_str(b, ",\"imap\":");
	json_string(b, set->imap);
	mt_buf_appendf(b, ",\"protocol\":\"%s\"", lg_protocol_names[set->wl.protocol]);
	mt_buf_append_str(b, ",\"sink_listen\":");
	if (set->sink_listen != NULL)
		json_string(b, set->sink_listen);
	else
		mt_buf_append_str(b, "null");
	mt_buf_appendf(b, ",\"warmup_s\":%.3f,\"duration_s\":%.3f,\"cooldown_s\":%.3f,"
		"\"step_timeout_ms\":%u,\"elapsed_s\":%.3f,\"interrupted\":%s,"
		"\"valid\":%s,\"levels\":[", (double)set->warmup_ms / 1000,
		(double)set->duration_ms / 1000, (double)set->cooldown_ms / 1000,
		set->step_timeout_ms, r->elapsed_s, r->interrupted ? "true" : "false",
		lg_report_valid(set, r) ? "true" : "false");
	for (size_t i = 0; i < r->n_levels; i++) {
		const struct lg_level_result *level = &r->levels[i];
		double mean, p95;
		lg_report_overall(&level->measure, &mean, &p95);
		mt_buf_appendf(b, "%s{\"overall_mean_ms\":%.3f,\"overall_p95_ms\":%.3f,",
			       i ? "," : "", mean, p95);
		mt_buf_appendf(b, "\"pct\":%u,\"required\":%s,\"complete\":%s,"
			"\"qos_met\":%s,\"qos\":\"%s\",\"target_msgs_per_min\":%.4f,"
			"\"achieved_msgs_per_min\":%.4f,\"measured_s\":%.3f,"
			"\"primed_repeats\":%" PRIu64 ",\"measure\":",
			level->pct, level_required(level) ? "true" : "false",
			level->complete ? "true" : "false",
			lg_stats_qos_met(&level->measure) ? "true" : "false",
			lg_qos_names[lg_stats_qos(&level->measure)],
			level->target_msgs_per_min, lg_report_achieved(level),
			(double)level->measure_us / 1e6, level->primed_repeats);
		json_stats(b, &level->measure);
		/* What the text report says under the Summary of a level too
		 * small to judge, so no reader needs LG_QOS_MIN_ATTEMPTS. */
		mt_buf_append_str(b, ",\"too_few\":");
		if (lg_stats_qos(&level->measure) == LG_QOS_NOT_JUDGED) {
			struct mt_buf why = MT_BUF_INIT;
			lg_report_too_few(&why, &level->measure);
			json_string(b, mt_buf_cstr(&why));
			mt_buf_free(&why);
		} else {
			mt_buf_append_str(b, "null");
		}
		mt_buf_append_str(b, ",\"warmup\":");
		json_stats(b, &level->warmup);
		mt_buf_append_char(b, '}');
	}
	int best = lg_report_ramp_best(r);
	mt_buf_appendf(b, "],\"stopped_early\":%s,\"highest_compliant_pct\":",
		       r->stopped_early ? "true" : "false");
	if (best >= 0)
		mt_buf_appendf(b, "%u,\"highest_compliant_msgs_per_min\":%.4f",
			       r->levels[best].pct, lg_report_achieved(&r->levels[best]));
	else
		mt_buf_append_str(b, "null,\"highest_compliant_msgs_per_min\":null");
	mt_buf_append_str(b, ",\"probes\":");
	json_stats(b, &r->probes);
	lg_report_totals(r, totals);
	mt_buf_append_str(b, ",\"totals\":");
	json_stats(b, totals);
	if (r->have_sink)
		mt_buf_appendf(b, ",\"sink\":{\"sessions\":%" PRIu64 ",\"messages\":%" PRIu64
			",\"rcpts\":%" PRIu64 ",\"octets\":%" PRIu64 ",\"with_id\":%" PRIu64
			",\"bad_commands\":%" PRIu64 "}", r->sink.sessions,
			r->sink.transactions, r->sink.rcpts, r->sink.octets,
			r->sink.with_id, r->sink.bad_commands);
	else
		mt_buf_append_str(b, ",\"sink\":null");
	mt_buf_appendf(b, ",\"arrivals\":{\"tracked\":%" PRIu64 ",\"untracked\":%" PRIu64
		",\"foreign\":%" PRIu64 ",\"awaited_at_end\":%" PRIu64 "}}\n",
		r->tracker.tracked, r->tracker.untracked, r->tracker.foreign,
		r->undelivered);
	free(totals);
}

/* mkdir -p */
static bool make_dirs(const char *dir, const char **error_r)
{
	char *path = mt_xstrdup(dir);

	for (char *p = path + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST) {
			*error_r = lg_error_fmt("mkdir %s: %s", path, strerror(errno));
			free(path);
			return false;
		}
		*p = saved;
		if (saved == '\0')
			break;
	}
	free(path);
	return true;
}

bool lg_report_write_file(const char *dir, const char *name, const char *data,
			  size_t len, const char **error_r)
{
	char *path;
	FILE *f;
	bool ok;

	if (!make_dirs(dir, error_r))
		return false;
	path = mt_xasprintf("%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL) {
		*error_r = lg_error_fmt("%s: %s", path, strerror(errno));
		ok = false;
	} else {
		ok = fwrite(data, 1, len, f) == len;
		ok = fclose(f) == 0 && ok;
		if (!ok) {
			*error_r = lg_error_fmt("writing %s failed", path);
		}
	}
	free(path);
	return ok;
}

bool lg_report_write_json(const char *dir, const struct lg_run_settings *set,
			  const struct lg_run_result *result,
			  const char **error_r)
{
	struct mt_buf json = MT_BUF_INIT;
	bool ok;

	json_run(&json, set, result);
	ok = lg_report_write_file(dir, "results.json", json.data, json.len, error_r);
	mt_buf_free(&json);
	return ok;
}
