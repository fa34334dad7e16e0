/* report-html.c — the report as one self-contained HTML page (tables and
 * inline SVG charts: no scripts, no external files, readable offline) and
 * the figures as CSV (see report.h).
 * Trust boundary: none; operator strings (domains, addresses) are escaped
 * for HTML and CSV. */
#include "report.h"

#include "alloc.h"
#include "buf.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define W 720.0		/* chart size and plot margins */
#define H 330.0
#define LEFT 64.0
#define RIGHT 170.0
#define TOP 34.0
#define BOTTOM 46.0

static const char *const colors[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
};

struct series {
	const char *name;
	double *x, *y;
	size_t n, cap;
	bool dashed;
};

struct chart {
	const char *title, *x_label, *y_label;
	bool log_x;
	struct series series[8];
	size_t n_series;
};

static struct series *add_series(struct chart *c, const char *name, bool dashed)
{
	struct series *s = &c->series[c->n_series++];

	*s = (struct series){ .name = name, .dashed = dashed };
	return s;
}

static void add_point(struct series *s, double x, double y)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->x = mt_xrealloc(s->x, s->cap * sizeof(double));
		s->y = mt_xrealloc(s->y, s->cap * sizeof(double));
	}
	s->x[s->n] = x;
	s->y[s->n] = y;
	s->n++;
}

static void free_chart(struct chart *c)
{
	for (size_t i = 0; i < c->n_series; i++) {
		free(c->series[i].x);
		free(c->series[i].y);
	}
}

static void html_text(struct mt_buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '<': mt_buf_append_str(b, "&lt;"); break;
		case '>': mt_buf_append_str(b, "&gt;"); break;
		case '&': mt_buf_append_str(b, "&amp;"); break;
		case '"': mt_buf_append_str(b, "&quot;"); break;
		default: mt_buf_append_char(b, *s); break;
		}
	}
}

/* A "nice" tick step for a range (1, 2 or 5 times a power of ten). */
static double nice_step(double range, int ticks)
{
	double raw = range / ticks, mag = pow(10, floor(log10(raw)));
	double norm = raw / mag;

	return (norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10) * mag;
}

/* An SVG line chart of the chart's series; an empty note without data. */
static void svg_chart(struct mt_buf *b, const struct chart *c)
{
	double x0 = INFINITY, x1 = -INFINITY, y1 = 0;
	size_t points = 0;

	for (size_t i = 0; i < c->n_series; i++)
		for (size_t k = 0; k < c->series[i].n; k++) {
			double x = c->series[i].x[k];
			if (c->log_x && x <= 0)
				continue;
			x0 = fmin(x0, x);
			x1 = fmax(x1, x);
			y1 = fmax(y1, c->series[i].y[k]);
			points++;
		}
	mt_buf_append_str(b, "<figure><figcaption>");
	html_text(b, c->title);
	mt_buf_append_str(b, "</figcaption>\n");
	if (points == 0) {
		mt_buf_append_str(b, "<p class=note>no data</p></figure>\n");
		return;
	}
	if (c->log_x) {
		x0 = pow(10, floor(log10(x0)));
		x1 = pow(10, ceil(log10(x1)));
		if (x1 <= x0)
			x1 = x0 * 10;
	} else {
		if (x0 > 0 && x0 < x1 / 3)
			x0 = 0;
		if (x1 <= x0)
			x1 = x0 + 1;
	}
	double ystep = nice_step(y1 > 0 ? y1 : 1, 5);
	y1 = ystep * ceil((y1 > 0 ? y1 : 1) / ystep);
	double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
#define PX(x) (LEFT + (c->log_x ? (log10(x) - log10(x0)) / (log10(x1) - log10(x0)) \
				: ((x) - x0) / (x1 - x0)) * pw)
#define PY(y) (TOP + ph - (y) / y1 * ph)
	mt_buf_appendf(b, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
		       "viewBox='0 0 %.0f %.0f' font-family='sans-serif' font-size='11'>\n",
		       W, H, W, H);
	mt_buf_appendf(b, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' "
		       "stroke='#999'/>\n", LEFT, TOP, pw, ph);
	for (double y = 0; y <= y1 + ystep / 2; y += ystep)
		mt_buf_appendf(b, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#eee'/>"
			       "<text x='%.1f' y='%.1f' text-anchor='end'>%g</text>\n",
			       LEFT, LEFT + pw, PY(y), PY(y), LEFT - 4, PY(y) + 4, y);
	if (c->log_x) {
		for (double x = x0; x <= x1 * 1.001; x *= 10)
			mt_buf_appendf(b, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#eee'/>"
				       "<text x='%.1f' y='%.1f' text-anchor='middle'>%g</text>\n",
				       PX(x), PX(x), TOP, TOP + ph, PX(x), TOP + ph + 14, x);
	} else {
		double xstep = nice_step(x1 - x0, 6);
		for (double x = ceil(x0 / xstep) * xstep; x <= x1 + xstep / 1000; x += xstep)
			mt_buf_appendf(b, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#eee'/>"
				       "<text x='%.1f' y='%.1f' text-anchor='middle'>%g</text>\n",
				       PX(x), PX(x), TOP, TOP + ph, PX(x), TOP + ph + 14, x);
	}
	mt_buf_appendf(b, "<text x='%.1f' y='%.1f' text-anchor='middle'>", LEFT + pw / 2, H - 8);
	html_text(b, c->x_label);
	mt_buf_appendf(b, "</text><text transform='translate(14 %.1f) rotate(-90)' "
		       "text-anchor='middle'>", TOP + ph / 2);
	html_text(b, c->y_label);
	mt_buf_append_str(b, "</text>\n");
	for (size_t i = 0; i < c->n_series; i++) {
		const struct series *s = &c->series[i];
		const char *color = colors[i % (sizeof(colors) / sizeof(colors[0]))];
		mt_buf_appendf(b, "<polyline fill='none' stroke='%s' stroke-width='1.5'%s points='",
			       color, s->dashed ? " stroke-dasharray='5 3'" : "");
		for (size_t k = 0; k < s->n; k++)
			if (!c->log_x || s->x[k] > 0)
				mt_buf_appendf(b, "%.1f,%.1f ", PX(s->x[k]), PY(s->y[k]));
		mt_buf_append_str(b, "'/>\n");
		if (s->n <= 40)
			for (size_t k = 0; k < s->n; k++)
				if (!c->log_x || s->x[k] > 0)
					mt_buf_appendf(b, "<circle cx='%.1f' cy='%.1f' r='3' fill='%s'/>\n",
						       PX(s->x[k]), PY(s->y[k]), color);
		mt_buf_appendf(b, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='%s' "
			       "stroke-width='2'/><text x='%.1f' y='%.1f'>", W - RIGHT + 12,
			       W - RIGHT + 30, TOP + 10 + 16.0 * (double)i, TOP + 10 + 16.0 * (double)i,
			       color, W - RIGHT + 34, TOP + 14 + 16.0 * (double)i);
		html_text(b, s->name);
		mt_buf_append_str(b, "</text>\n");
	}
#undef PX
#undef PY
	mt_buf_append_str(b, "</svg></figure>\n");
}

static bool measured(const struct lg_level_result *level)
{
	return level->complete || level->measure_us > 0;
}

static void pct_cell(struct mt_buf *b, double pct, bool good)
{
	if (pct < 0)
		mt_buf_append_str(b, "<td>n/a</td>");
	else
		mt_buf_appendf(b, "<td class=%s>%.2f%%</td>", good ? "ok" : "bad", pct);
}

/* Under the Summary: each level with too few attempts to judge. */
static void too_few_notes(struct mt_buf *b, const struct lg_run_result *r)
{
	for (size_t i = 0; i < r->n_levels; i++) {
		const struct lg_level_result *level = &r->levels[i];
		if (lg_report_level_verdict(level) != LG_LEVEL_NOT_JUDGED)
			continue;
		mt_buf_appendf(b, "<p class=note>Not judged at %u%%: " LG_REPORT_TOO_FEW
			       " (", level->pct);
		lg_report_too_few(b, &level->measure);
		mt_buf_append_str(b, ").</p>\n");
	}
}

static void summary_table(struct mt_buf *b, const struct lg_run_result *r)
{
	mt_buf_append_str(b, "<h2>Summary Results</h2>\n<table><tr><th>Function</th>"
			  "<th>Response time limit (s)</th><th>Required</th>");
	for (size_t i = 0; i < r->n_levels; i++)
		mt_buf_appendf(b, "<th>%u%%</th>", r->levels[i].pct);
	mt_buf_append_str(b, "</tr>\n");
	for (int f = 0; f < LG_FN_COUNT; f++) {
		if (!lg_functions[f].summary)
			continue;
		mt_buf_appendf(b, "<tr><td>%s</td><td>%" PRIu64 "</td><td>&gt;95%%</td>",
			       lg_functions[f].label, lg_functions[f].limit_us / 1000000);
		for (size_t i = 0; i < r->n_levels; i++) {
			double pct = lg_stats_pass_pct(&r->levels[i].measure, f);
			pct_cell(b, pct, pct > LG_QOS_REQUIRED_PCT);
		}
		mt_buf_append_str(b, "</tr>\n");
	}
	mt_buf_append_str(b, "<tr><td>Error Rate</td><td>NA</td><td>&lt;1%</td>");
	for (size_t i = 0; i < r->n_levels; i++) {
		double pct = lg_stats_error_rate_pct(&r->levels[i].measure);
		pct_cell(b, pct, pct < LG_QOS_MAX_ERROR_PCT);
	}
	mt_buf_append_str(b, "</tr>\n<tr><td>QoS met</td><td></td><td></td>");
	for (size_t i = 0; i < r->n_levels; i++) {
		enum lg_level_verdict verdict = lg_report_level_verdict(&r->levels[i]);
		mt_buf_appendf(b, "<td class=%s>%s</td>",
			       verdict == LG_LEVEL_MET ? "ok" :
			       verdict == LG_LEVEL_NOT_JUDGED ? "note" : "bad",
			       lg_report_verdict_word(verdict));
	}
	mt_buf_append_str(b, "</tr></table>\n");
	too_few_notes(b, r);
}

static void detail_table(struct mt_buf *b, const struct lg_level_result *level)
{
	const struct lg_stats *st = &level->measure;
	const struct lg_counters *c = &st->counters;

	mt_buf_appendf(b, "<h3>Detailed Results %u%% load</h3>\n<p>target %.2f msgs/min, "
		       "achieved %.2f msgs/min, measured %.1f s%s</p>\n<table><tr>"
		       "<th>Function</th><th>Attempts</th><th>Pass</th><th>%% Pass</th>"
		       "<th>Min ms</th><th>Mean ms</th><th>Max ms</th><th>p50 ms</th>"
		       "<th>p95 ms</th><th>p99 ms</th></tr>\n", level->pct,
		       level->target_msgs_per_min, lg_report_achieved(level),
		       (double)level->measure_us / 1e6, level->complete ? "" : " (partial)");
	for (int f = 0; f < LG_FN_COUNT; f++) {
		const struct lg_hist *h = &st->fn[f].hist;
		double pct = lg_stats_pass_pct(st, f);
		mt_buf_appendf(b, "<tr><td>%s</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td>",
			       lg_functions[f].label, st->fn[f].attempts, st->fn[f].pass);
		pct_cell(b, pct, pct > LG_QOS_REQUIRED_PCT);
		if (h->count > 0)
			mt_buf_appendf(b, "<td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td>"
				       "<td>%.2f</td><td>%.2f</td>", (double)h->min / 1000,
				       lg_hist_mean(h) / 1000, (double)h->max / 1000,
				       (double)lg_hist_quantile(h, 0.5) / 1000,
				       (double)lg_hist_quantile(h, 0.95) / 1000,
				       (double)lg_hist_quantile(h, 0.99) / 1000);
		else
			mt_buf_append_str(b, "<td colspan=6></td>");
		mt_buf_append_str(b, "</tr>\n");
	}
	mt_buf_append_str(b, "</table>\n<p>Sessions:");
	for (int k = 0; k < LG_KIND_COUNT; k++)
		mt_buf_appendf(b, " %s %" PRIu64 " (failed %" PRIu64 ")", lg_kind_names[k],
			       st->sessions[k], st->sessions_failed[k]);
	mt_buf_append_str(b, ".<br>Errors:");
	for (int i = 0; i < LG_ERR_COUNT; i++)
		mt_buf_appendf(b, " %s %" PRIu64, lg_error_names[i], st->errors[i]);
	mt_buf_appendf(b, ".<br>Messages: local users sent %" PRIu64 ", remote servers sent %" PRIu64
		       ", IMAP replies submitted %" PRIu64
		       "; recipients to-local %" PRIu64 ", to-remote %" PRIu64 "; retrieved %" PRIu64
		       ", deleted %" PRIu64 "; up %.1f KiB, down %.1f KiB; deliveries late %" PRIu64
		       ", lost %" PRIu64 ", unresolved at end %" PRIu64 " (%" PRIu64
		       " past the 60 s limit).</p>\n", c->msgs_local_sent, c->msgs_remote_sent,
		       c->msgs_submitted, c->rcpts_to_local, c->rcpts_to_remote, c->msgs_retrieved, c->msgs_deleted,
		       (double)c->bytes_up / 1024, (double)c->bytes_down / 1024,
		       c->deliveries_late, c->deliveries_lost, c->deliveries_unresolved,
		       c->deliveries_unresolved_late);
}

/* Achieved throughput against overall mean and p95 response time. */
static void curve_chart(struct mt_buf *b, const struct lg_run_result *r)
{
	struct chart c = { .title = "Throughput against response time (every SMTP and POP3 step)",
			   .x_label = "achieved SPECmail2001 msgs/min",
			   .y_label = "response time (ms)" };
	struct series *mean = add_series(&c, "mean", false);
	struct series *p95 = add_series(&c, "95th percentile", true);

	for (size_t i = 0; i < r->n_levels; i++) {
		double m, p;
		if (!measured(&r->levels[i]))
			continue;
		lg_report_overall(&r->levels[i].measure, &m, &p);
		add_point(mean, lg_report_achieved(&r->levels[i]), m);
		add_point(p95, lg_report_achieved(&r->levels[i]), p);
	}
	svg_chart(b, &c);
	free_chart(&c);
}

/* Share of answers within x ms, per Summary function, for one level. */
static void distribution_chart(struct mt_buf *b, const struct lg_level_result *level)
{
	char title[96];
	struct chart c = { .title = title, .x_label = "response time (ms, log scale)",
			   .y_label = "% answered within", .log_x = true };

	snprintf(title, sizeof(title), "Response time distribution, %u%% load", level->pct);
	for (int f = 0; f < LG_FN_COUNT && c.n_series < 8; f++) {
		const struct lg_hist *h = &level->measure.fn[f].hist;
		if (!lg_functions[f].summary || h->count == 0)
			continue;
		struct series *s = add_series(&c, lg_functions[f].label, f == LG_FN_DELIVERY);
		uint64_t seen = 0;
		for (size_t i = 0; i < LG_HIST_BUCKETS; i++) {
			if (h->buckets[i] == 0)
				continue;
			seen += h->buckets[i];
			uint64_t high = lg_hist_bucket_high(i);
			double x = (double)(high < h->max ? high : h->max) / 1000;
			add_point(s, x > 0.001 ? x : 0.001, 100.0 * (double)seen / (double)h->count);
		}
	}
	svg_chart(b, &c);
	free_chart(&c);
}

/* msgs/min in each second of the run, and the target of its level. */
static void timeline_chart(struct mt_buf *b, const struct lg_run_result *r)
{
	struct chart c = { .title = "SPECmail2001 msgs/min over time",
			   .x_label = "seconds since the start", .y_label = "msgs/min" };
	struct series *achieved = add_series(&c, "achieved", false);
	struct series *target = add_series(&c, "target", true);

	for (size_t i = 1; i < r->n_samples; i++) {
		const struct lg_sample *a = &r->samples[i - 1], *s = &r->samples[i];
		double dt = s->t_s - a->t_s;
		if (dt <= 0)
			continue;
		add_point(achieved, s->t_s, (double)(s->msgs_local - a->msgs_local) * 60 / dt);
		add_point(target, s->t_s, s->phase == 2 ? 0 :
			  r->levels[s->level].target_msgs_per_min);
	}
	svg_chart(b, &c);
	free_chart(&c);
}

bool lg_report_write_html(const char *dir, const struct lg_run_settings *set,
			  const struct lg_run_result *r, const char **error_r)
{
	struct mt_buf b = MT_BUF_INIT;
	int best = lg_report_ramp_best(r);
	bool valid = lg_report_valid(set, r);

	mt_buf_appendf(&b, "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
		"<title>mailtier-load %016" PRIx64 "</title><style>"
		"body{font-family:sans-serif;max-width:980px;margin:1em auto;color:#222}"
		"table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;"
		"padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
		".ok{background:#e6f4e6}.bad{background:#fbe3e3}.note{color:#777}"
		"figure{margin:1em 0}figcaption{font-weight:bold}</style></head><body>\n"
		"<h1>mailtier-load: SPECmail2001-style %s</h1>\n<p>", r->run_id,
		set->ramp ? "ramp" : "run");
	mt_buf_appendf(&b, "Run %016" PRIx64 ", mailtier-load %s. Users %" PRIu64 " @",
		       r->run_id, PACKAGE_VERSION, set->wl.users);
	html_text(&b, set->wl.domain);
	mt_buf_appendf(&b, " (%.2f msgs/min at 100%%), SMTP ", lg_workload_msgs_per_min(&set->wl, 100));
	html_text(&b, set->smtp);
	mt_buf_append_str(&b, ", POP3 ");
	html_text(&b, set->pop != NULL ? set->pop : "-");
	mt_buf_appendf(&b, ", IMAP ");
	html_text(&b, set->imap != NULL ? set->imap : "-");
	mt_buf_appendf(&b, " (protocol %s)", lg_protocol_names[set->wl.protocol]);
	mt_buf_appendf(&b, "; seed %" PRIu64 "; warm-up %.0f s, measured %.0f s per level.</p>\n",
		       set->seed, (double)set->warmup_ms / 1000, (double)set->duration_ms / 1000);
	if (set->ramp && best >= 0)
		mt_buf_appendf(&b, "<p class=ok><b>Highest load point within QoS: %u%%, "
			       "%.1f msgs/min achieved.</b></p>\n", r->levels[best].pct,
			       lg_report_achieved(&r->levels[best]));
	else if (set->ramp)
		mt_buf_append_str(&b, "<p class=bad><b>No load point met QoS.</b></p>\n");
	else {
		struct mt_buf result = MT_BUF_INIT;
		lg_report_result_line(&result, set, r);
		mt_buf_appendf(&b, "<p class=%s><b>%s.</b></p>\n", valid ? "ok" : "bad",
			       mt_buf_cstr(&result));
		mt_buf_free(&result);
	}
	summary_table(&b, r);
	curve_chart(&b, r);
	timeline_chart(&b, r);
	for (size_t i = 0; i < r->n_levels; i++) {
		if (!measured(&r->levels[i]))
			continue;
		detail_table(&b, &r->levels[i]);
		distribution_chart(&b, &r->levels[i]);
	}
	mt_buf_append_str(&b, "<p class=note>Raw figures: results.json, functions.csv, "
			  "timeline.csv.</p></body></html>\n");
	bool ok = lg_report_write_file(dir, "report.html", b.data, b.len, error_r);
	mt_buf_free(&b);
	return ok;
}

bool lg_report_write_csv(const char *dir, const struct lg_run_settings *set,
			 const struct lg_run_result *r, const char **error_r)
{
	struct mt_buf b = MT_BUF_INIT;
	bool ok;

	mt_buf_append_str(&b, "level_pct,phase,function,limit_ms,attempts,pass,fail,pass_pct,"
			  "min_ms,mean_ms,max_ms,p50_ms,p95_ms,p99_ms\n");
	for (size_t i = 0; i < r->n_levels; i++) {
		for (int phase = 0; phase < 2; phase++) {
			const struct lg_stats *st = phase ? &r->levels[i].measure : &r->levels[i].warmup;
			for (int f = 0; f < LG_FN_COUNT; f++) {
				const struct lg_hist *h = &st->fn[f].hist;
				double pct = lg_stats_pass_pct(st, f);
				mt_buf_appendf(&b, "%u,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",",
					r->levels[i].pct, phase ? "measure" : "warmup",
					lg_functions[f].key, lg_functions[f].limit_us / 1000,
					st->fn[f].attempts, st->fn[f].pass,
					st->fn[f].attempts - st->fn[f].pass);
				if (pct >= 0)
					mt_buf_appendf(&b, "%.4f", pct);
				if (h->count > 0)
					mt_buf_appendf(&b, ",%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
						(double)h->min / 1000, lg_hist_mean(h) / 1000,
						(double)h->max / 1000,
						(double)lg_hist_quantile(h, 0.5) / 1000,
						(double)lg_hist_quantile(h, 0.95) / 1000,
						(double)lg_hist_quantile(h, 0.99) / 1000);
				else
					mt_buf_append_str(&b, ",,,,,,\n");
			}
		}
	}
	ok = lg_report_write_file(dir, "functions.csv", b.data, b.len, error_r);
	mt_buf_reset(&b);
	mt_buf_append_str(&b, "t_s,level_pct,phase,msgs_local_accepted,sessions_failed,open_sessions\n");
	for (size_t i = 0; ok && i < r->n_samples; i++) {
		const struct lg_sample *s = &r->samples[i];
		static const char *const phases[] = { "warmup", "measure", "cooldown" };
		mt_buf_appendf(&b, "%.3f,%u,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", s->t_s,
			       r->levels[s->level].pct, phases[s->phase], s->msgs_local,
			       s->sessions_failed, s->open);
	}
	ok = ok && lg_report_write_file(dir, "timeline.csv", b.data, b.len, error_r);
	mt_buf_free(&b);
	return ok;
}
