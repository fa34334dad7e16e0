/* ctl-metrics-parse.c — the Prometheus text exposition format (0.0.4)
 * read into samples, and their sums by name and labels (ctl-metrics.h).
 *
 * A line is blank, a comment ("# HELP", "# TYPE" or any other "#"), or a
 * sample: NAME [ "{" LABEL="VALUE" {"," LABEL="VALUE"} [","] "}" ] VALUE
 * [TIMESTAMP], where NAME is [a-zA-Z_:][a-zA-Z0-9_:]*, a label name
 * [a-zA-Z_][a-zA-Z0-9_]*, a label value is escaped with \\, \" and \n,
 * and VALUE is a float, +Inf, -Inf or NaN.
 *
 * Trust boundary: the text is a daemon's HTTP reply, read as untrusted:
 * every byte is checked, reading stays within [text, text + len), a line
 * that does not fit the grammar is an error with its line number. */
#include "ctl-metrics.h"
#include "alloc.h"
#include "buf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_name_start(char c, bool colon_ok)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (colon_ok && c == ':');
}

static bool is_name_char(char c, bool colon_ok)
{
	return is_name_start(c, colon_ok) || (c >= '0' && c <= '9');
}

/* The name at *p within [*p, end); NULL if there is none. */
static char *take_name(const char **p, const char *end, bool colon_ok)
{
	const char *start = *p;
	if (start >= end || !is_name_start(*start, colon_ok))
		return NULL;
	const char *q = start + 1;
	while (q < end && is_name_char(*q, colon_ok))
		q++;
	*p = q;
	return mt_xstrndup(start, (size_t)(q - start));
}

/* A quoted label value at *p (just after the '"'), unescaped. */
static char *take_label_value(const char **p, const char *end, const char **why_r)
{
	struct mt_buf value = MT_BUF_INIT;
	const char *q = *p;
	for (; q < end && *q != '"'; q++) {
		if (*q != '\\') {
			mt_buf_append_char(&value, *q);
			continue;
		}
		if (++q >= end)
			break;
		if (*q == 'n')
			mt_buf_append_char(&value, '\n');
		else if (*q == '\\' || *q == '"')
			mt_buf_append_char(&value, *q);
		else {
			*why_r = "unknown escape in a label value (only \\\\, \\\" and \\n)";
			mt_buf_free(&value);
			return NULL;
		}
	}
	if (q >= end) {
		*why_r = "label value without its closing quote";
		mt_buf_free(&value);
		return NULL;
	}
	*p = q + 1;
	return mt_buf_steal(&value);
}

static bool parse_labels(struct ctl_metric_sample *s, const char **p, const char *end,
			 const char **why_r)
{
	const char *q = *p;	/* after '{' */
	while (q < end && *q != '}') {
		if (s->n_labels == CTL_METRICS_LABELS_MAX) {
			*why_r = "more labels than this reader keeps (8)";
			return false;
		}
		char *name = take_name(&q, end, false);
		if (name == NULL) {
			*why_r = "bad label name";
			return false;
		}
		s->labels[s->n_labels].name = name;
		if (q + 1 >= end || q[0] != '=' || q[1] != '"') {
			s->n_labels++;
			*why_r = "a label name without =\"value\"";
			return false;
		}
		q += 2;
		char *value = take_label_value(&q, end, why_r);
		s->labels[s->n_labels++].value = value;
		if (value == NULL)
			return false;
		if (q < end && *q == ',')
			q++;
		else if (q < end && *q != '}') {
			*why_r = "labels not separated by ','";
			return false;
		}
	}
	if (q >= end) {
		*why_r = "labels without their closing '}'";
		return false;
	}
	*p = q + 1;
	return true;
}

static bool parse_value(const char *token, size_t len, double *value_r)
{
	char text[64];
	if (len == 0 || len >= sizeof(text))
		return false;
	memcpy(text, token, len);
	text[len] = '\0';
	if (strcmp(text, "+Inf") == 0 || strcmp(text, "Inf") == 0) {
		*value_r = INFINITY;
		return true;
	}
	if (strcmp(text, "-Inf") == 0) {
		*value_r = -INFINITY;
		return true;
	}
	if (strcmp(text, "NaN") == 0) {
		*value_r = NAN;
		return true;
	}
	/* strtod would also take "inf", "nan(...)" and hex: the format has
	 * only decimal floats besides the three words above. */
	for (size_t i = 0; i < len; i++) {
		if (strchr("0123456789+-.eE", text[i]) == NULL)
			return false;
	}
	char *stop;
	errno = 0;
	*value_r = strtod(text, &stop);
	return *stop == '\0' && errno != EINVAL;
}

static void sample_clear(struct ctl_metric_sample *s)
{
	free(s->name);
	for (size_t i = 0; i < s->n_labels; i++) {
		free(s->labels[i].name);
		free(s->labels[i].value);
	}
	memset(s, 0, sizeof(*s));
}

/* One sample line [p, end), no line end. */
static bool parse_sample(struct ctl_metric_sample *s, const char *p, const char *end,
			 const char **why_r)
{
	s->name = take_name(&p, end, true);
	if (s->name == NULL) {
		*why_r = "not a metric name";
		return false;
	}
	if (p < end && *p == '{') {
		p++;
		if (!parse_labels(s, &p, end, why_r))
			return false;
	}
	if (p >= end || (*p != ' ' && *p != '\t')) {
		*why_r = "no space before the value";
		return false;
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	const char *token = p;
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	if (!parse_value(token, (size_t)(p - token), &s->value)) {
		*why_r = "the value is not a number";
		return false;
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p < end) {	/* a timestamp: an integer of milliseconds */
		if (*p == '-')
			p++;
		const char *digits = p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		bool has_digits = p > digits;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p < end || !has_digits) {
			*why_r = "something after the value that is not a timestamp";
			return false;
		}
	}
	return true;
}

bool ctl_metrics_parse(struct ctl_metrics *m, const char *text, size_t len, char **error_r)
{
	const char *p = text, *end = text + len;
	unsigned long line_no = 0;
	while (p < end) {
		line_no++;
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol != NULL ? eol : end;
		const char *next = eol != NULL ? eol + 1 : end;
		if (line_end > p && line_end[-1] == '\r')
			line_end--;
		if (memchr(p, '\0', (size_t)(line_end - p)) != NULL) {
			*error_r = mt_xasprintf("line %lu: a NUL byte", line_no);
			return false;
		}
		if (line_end == p || *p == '#') {
			p = next;
			continue;
		}
		if (m->n_samples == m->alloc) {
			m->alloc = m->alloc == 0 ? 256 : m->alloc * 2;
			m->samples = mt_xrealloc(m->samples, m->alloc * sizeof(*m->samples));
		}
		struct ctl_metric_sample *s = &m->samples[m->n_samples];
		memset(s, 0, sizeof(*s));
		const char *why = NULL;
		if (!parse_sample(s, p, line_end, &why)) {
			sample_clear(s);
			*error_r = mt_xasprintf("line %lu: %s", line_no, why);
			return false;
		}
		m->n_samples++;
		p = next;
	}
	return true;
}

void ctl_metrics_free(struct ctl_metrics *m)
{
	for (size_t i = 0; i < m->n_samples; i++)
		sample_clear(&m->samples[i]);
	free(m->samples);
	memset(m, 0, sizeof(*m));
}

static const char *label_value(const struct ctl_metric_sample *s, const char *name,
			       size_t name_len)
{
	for (size_t i = 0; i < s->n_labels; i++) {
		if (strlen(s->labels[i].name) == name_len &&
		    memcmp(s->labels[i].name, name, name_len) == 0)
			return s->labels[i].value;
	}
	return NULL;
}

/* Does the sample carry every k=v of match? */
static bool labels_match(const struct ctl_metric_sample *s, const char *match)
{
	const char *p = match;
	while (p != NULL && *p != '\0') {
		const char *comma = strchr(p, ',');
		const char *pair_end = comma != NULL ? comma : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(pair_end - p));
		if (eq == NULL)
			return false;
		const char *have = label_value(s, p, (size_t)(eq - p));
		size_t want_len = (size_t)(pair_end - eq - 1);
		if (have == NULL || strlen(have) != want_len || memcmp(have, eq + 1, want_len) != 0)
			return false;
		p = comma != NULL ? comma + 1 : NULL;
	}
	return true;
}

double ctl_metrics_sum(const struct ctl_metrics *m, const char *name, const char *match,
		       bool *found_r)
{
	double sum = 0;
	bool found = false;
	for (size_t i = 0; i < m->n_samples; i++) {
		const struct ctl_metric_sample *s = &m->samples[i];
		if (strcmp(s->name, name) == 0 && labels_match(s, match)) {
			sum += s->value;
			found = true;
		}
	}
	if (found_r != NULL)
		*found_r = found;
	return sum;
}
