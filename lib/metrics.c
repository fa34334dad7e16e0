/* metrics.c — the metrics registry and its text rendering (see metrics.h).
 *
 * Trust boundary: none; names, help and label values are the daemons' own.
 * Format: the Prometheus text exposition format 0.0.4. */
#include "metrics.h"
#include "alloc.h"
#include "buf.h"
#include "log.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

static const char *const metric_type_names[] = { "counter", "gauge", "histogram" };

struct mt_series {
	struct mt_series *next;
	struct mt_metric_family *family;
	char *label_values[MT_METRIC_LABELS_MAX];
	/* Counters: the count. Gauges: the value's bits. Histograms: the
	 * number of observations. */
	_Atomic uint64_t value;
	/* Histograms: the sum's bits. Counters: a fractional total's
	 * (mt_series_store_float), added to value. */
	_Atomic uint64_t sum_bits;
	_Atomic uint64_t *buckets;	/* histograms: per bound, not cumulative */
};

struct mt_metric_family {
	struct mt_metric_family *next;
	enum metric_type type;
	char *name, *help;
	unsigned int n_labels;
	char *label_names[MT_METRIC_LABELS_MAX];
	double bounds[MT_METRIC_BUCKETS_MAX];
	unsigned int n_bounds;
	struct mt_series *series, **series_tail;
	pthread_mutex_t *lock;		/* the registry's */
};

struct collector {
	mt_metrics_collect_cb_t *cb;
	void *context;
};

struct mt_metrics {
	pthread_mutex_t lock;
	struct mt_metric_family *families, **families_tail;
	struct collector *collectors;
	size_t n_collectors;
};

/* Bits of doubles */

static uint64_t double_bits(double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

static double bits_double(uint64_t bits)
{
	double v;
	memcpy(&v, &bits, sizeof(v));
	return v;
}

/* Registry */

struct mt_metrics *mt_metrics_new(void)
{
	struct mt_metrics *m = mt_xcalloc(1, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	m->families_tail = &m->families;
	return m;
}

static void series_free(struct mt_series *s, unsigned int n_labels)
{
	for (unsigned int i = 0; i < n_labels; i++)
		free(s->label_values[i]);
	free(s->buckets);
	free(s);
}

void mt_metrics_free(struct mt_metrics **metrics_p)
{
	struct mt_metrics *m = *metrics_p;
	if (m == NULL)
		return;
	*metrics_p = NULL;
	struct mt_metric_family *f = m->families;
	while (f != NULL) {
		struct mt_metric_family *next_family = f->next;
		struct mt_series *s = f->series;
		while (s != NULL) {
			struct mt_series *next = s->next;
			series_free(s, f->n_labels);
			s = next;
		}
		for (unsigned int i = 0; i < f->n_labels; i++)
			free(f->label_names[i]);
		free(f->name);
		free(f->help);
		free(f);
		f = next_family;
	}
	free(m->collectors);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static bool valid_name(const char *name, bool label)
{
	if (name[0] == '\0' || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (const char *p = name; *p != '\0'; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '_' || (c == ':' && !label);
		if (!ok)
			return false;
	}
	return true;
}

/* Split "a,b" into the family's label names. */
static void set_labels(struct mt_metric_family *f, const char *labels)
{
	if (labels == NULL || labels[0] == '\0')
		return;
	char *copy = mt_xstrdup(labels);
	for (char *save = NULL, *name = strtok_r(copy, ", ", &save); name != NULL;
	     name = strtok_r(NULL, ", ", &save)) {
		if (f->n_labels == MT_METRIC_LABELS_MAX || !valid_name(name, true) ||
		    strcmp(name, "le") == 0)
			mt_panic("metrics: %s: bad label list '%s'", f->name, labels);
		f->label_names[f->n_labels++] = mt_xstrdup(name);
	}
	free(copy);
}

static struct mt_metric_family *family_add(struct mt_metrics *m, enum metric_type type,
					   const char *name, const char *help,
					   const char *labels)
{
	if (!valid_name(name, false))
		mt_panic("metrics: bad metric name '%s'", name);
	pthread_mutex_lock(&m->lock);
	for (struct mt_metric_family *f = m->families; f != NULL; f = f->next) {
		if (strcmp(f->name, name) == 0) {
			pthread_mutex_unlock(&m->lock);
			if (f->type != type)
				mt_panic("metrics: %s registered with two types", name);
			return f;
		}
	}
	struct mt_metric_family *f = mt_xcalloc(1, sizeof(*f));
	f->type = type;
	f->name = mt_xstrdup(name);
	f->help = mt_xstrdup(help);
	f->series_tail = &f->series;
	f->lock = &m->lock;
	set_labels(f, labels);
	*m->families_tail = f;
	m->families_tail = &f->next;
	pthread_mutex_unlock(&m->lock);
	return f;
}

/* A family without labels has its one series from the start: a scrape
 * shows 0 rather than nothing until the first event. */
static struct mt_metric_family *with_unlabelled_series(struct mt_metric_family *f)
{
	if (f->n_labels == 0)
		(void)mt_metric_series(f, NULL);
	return f;
}

struct mt_metric_family *mt_metrics_counter(struct mt_metrics *m, const char *name,
					    const char *help, const char *labels)
{
	return with_unlabelled_series(family_add(m, METRIC_COUNTER, name, help, labels));
}

struct mt_metric_family *mt_metrics_gauge(struct mt_metrics *m, const char *name,
					  const char *help, const char *labels)
{
	return with_unlabelled_series(family_add(m, METRIC_GAUGE, name, help, labels));
}

struct mt_metric_family *mt_metrics_histogram(struct mt_metrics *m, const char *name,
					      const char *help, const char *labels,
					      const double *upper_bounds,
					      unsigned int n_bounds)
{
	if (n_bounds == 0 || n_bounds > MT_METRIC_BUCKETS_MAX)
		mt_panic("metrics: %s: %u buckets", name, n_bounds);
	for (unsigned int i = 1; i < n_bounds; i++)
		if (!(upper_bounds[i] > upper_bounds[i - 1]))
			mt_panic("metrics: %s: buckets not ascending", name);
	struct mt_metric_family *f = family_add(m, METRIC_HISTOGRAM, name, help, labels);
	pthread_mutex_lock(f->lock);
	if (f->n_bounds == 0) {
		memcpy(f->bounds, upper_bounds, n_bounds * sizeof(*upper_bounds));
		f->n_bounds = n_bounds;
	}
	pthread_mutex_unlock(f->lock);
	return with_unlabelled_series(f);
}

/* Series */

static bool series_matches(const struct mt_series *s, unsigned int n,
			   const char *const *values)
{
	for (unsigned int i = 0; i < n; i++)
		if (strcmp(s->label_values[i], values[i]) != 0)
			return false;
	return true;
}

struct mt_series *mt_metric_series(struct mt_metric_family *f,
				   const char *const *label_values)
{
	pthread_mutex_lock(f->lock);
	struct mt_series *s;
	for (s = f->series; s != NULL; s = s->next)
		if (series_matches(s, f->n_labels, label_values))
			break;
	if (s == NULL) {
		s = mt_xcalloc(1, sizeof(*s));
		s->family = f;
		for (unsigned int i = 0; i < f->n_labels; i++)
			s->label_values[i] = mt_xstrdup(label_values[i]);
		if (f->type == METRIC_HISTOGRAM)
			s->buckets = mt_xcalloc(f->n_bounds, sizeof(*s->buckets));
		if (f->type == METRIC_GAUGE)
			atomic_store(&s->value, double_bits(0.0));
		*f->series_tail = s;
		f->series_tail = &s->next;
	}
	pthread_mutex_unlock(f->lock);
	return s;
}

struct mt_series *mt_metrics_counter_series(struct mt_metrics *m, const char *name,
					    const char *help)
{
	return mt_metric_series(mt_metrics_counter(m, name, help, NULL), NULL);
}

struct mt_series *mt_metrics_gauge_series(struct mt_metrics *m, const char *name,
					  const char *help)
{
	return mt_metric_series(mt_metrics_gauge(m, name, help, NULL), NULL);
}

struct mt_series *mt_metric_series1(struct mt_metric_family *f, const char *v1)
{
	const char *values[] = { v1 };
	return mt_metric_series(f, values);
}

struct mt_series *mt_metric_series2(struct mt_metric_family *f, const char *v1,
				    const char *v2)
{
	const char *values[] = { v1, v2 };
	return mt_metric_series(f, values);
}

void mt_series_add(struct mt_series *s, uint64_t n)
{
	atomic_fetch_add_explicit(&s->value, n, memory_order_relaxed);
}

void mt_series_store(struct mt_series *s, uint64_t total)
{
	atomic_store_explicit(&s->value, total, memory_order_relaxed);
}

void mt_series_store_float(struct mt_series *s, double total)
{
	atomic_store_explicit(&s->sum_bits, double_bits(total), memory_order_relaxed);
}

void mt_series_set(struct mt_series *s, double value)
{
	atomic_store_explicit(&s->value, double_bits(value), memory_order_relaxed);
}

void mt_series_observe(struct mt_series *s, double value)
{
	const struct mt_metric_family *f = s->family;
	unsigned int i = 0;
	while (i < f->n_bounds && value > f->bounds[i])
		i++;
	if (i < f->n_bounds)
		atomic_fetch_add_explicit(&s->buckets[i], 1, memory_order_relaxed);
	uint64_t old = atomic_load_explicit(&s->sum_bits, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&s->sum_bits, &old,
			double_bits(bits_double(old) + value),
			memory_order_relaxed, memory_order_relaxed))
		;
	atomic_fetch_add_explicit(&s->value, 1, memory_order_relaxed);
}

double mt_series_value(const struct mt_series *s)
{
	uint64_t v = atomic_load_explicit(&s->value, memory_order_relaxed);
	if (s->family->type == METRIC_GAUGE)
		return bits_double(v);
	if (s->family->type == METRIC_COUNTER)
		return (double)v + bits_double(atomic_load_explicit(&s->sum_bits,
							      memory_order_relaxed));
	return (double)v;
}

/* Collectors */

void mt_metrics_add_collector(struct mt_metrics *m, mt_metrics_collect_cb_t *cb,
			      void *context)
{
	pthread_mutex_lock(&m->lock);
	m->collectors = mt_xrealloc(m->collectors,
				    (m->n_collectors + 1) * sizeof(*m->collectors));
	m->collectors[m->n_collectors++] = (struct collector){ cb, context };
	pthread_mutex_unlock(&m->lock);
}

void mt_metrics_remove_collector(struct mt_metrics *m, mt_metrics_collect_cb_t *cb,
				 void *context)
{
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_collectors; i++) {
		if (m->collectors[i].cb == cb && m->collectors[i].context == context) {
			memmove(&m->collectors[i], &m->collectors[i + 1],
				(m->n_collectors - i - 1) * sizeof(*m->collectors));
			m->n_collectors--;
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
}

/* Rendering */

/* A sample value: integers as integers, others in the shortest form that
 * reads back the same, infinities and NaN as the format spells them. */
static void append_number(struct mt_buf *out, double v)
{
	if (isnan(v))
		mt_buf_append_str(out, "NaN");
	else if (isinf(v))
		mt_buf_append_str(out, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		mt_buf_appendf(out, "%.0f", v);
	else
		mt_buf_appendf(out, "%.15g", v);
}

/* HELP text escapes \ and newline; label values also ". */
static void append_escaped(struct mt_buf *out, const char *s, bool quote)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			mt_buf_append_str(out, "\\\\");
		else if (*s == '\n')
			mt_buf_append_str(out, "\\n");
		else if (*s == '"' && quote)
			mt_buf_append_str(out, "\\\"");
		else
			mt_buf_append_char(out, *s);
	}
}

/* `name{a="x",b="y",le="0.5"}` — extra_label (le) may be NULL. */
static void append_sample_name(struct mt_buf *out, const struct mt_metric_family *f,
			       const struct mt_series *s, const char *suffix,
			       const char *le)
{
	mt_buf_append_str(out, f->name);
	mt_buf_append_str(out, suffix);
	if (f->n_labels == 0 && le == NULL)
		return;
	mt_buf_append_char(out, '{');
	for (unsigned int i = 0; i < f->n_labels; i++) {
		mt_buf_appendf(out, "%s%s=\"", i > 0 ? "," : "", f->label_names[i]);
		append_escaped(out, s->label_values[i], true);
		mt_buf_append_char(out, '"');
	}
	if (le != NULL)
		mt_buf_appendf(out, "%sle=\"%s\"", f->n_labels > 0 ? "," : "", le);
	mt_buf_append_char(out, '}');
}

static void render_histogram(struct mt_buf *out, const struct mt_metric_family *f,
			     const struct mt_series *s)
{
	/* Read the count first: the buckets then hold at least as many as
	 * it says, and +Inf is the count, so the series stays consistent
	 * while other threads observe. */
	uint64_t count = atomic_load_explicit(&s->value, memory_order_relaxed);
	uint64_t cumulative = 0;
	for (unsigned int i = 0; i < f->n_bounds; i++) {
		cumulative += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
		if (cumulative > count)
			cumulative = count;
		struct mt_buf le = MT_BUF_INIT;
		append_number(&le, f->bounds[i]);
		append_sample_name(out, f, s, "_bucket", mt_buf_cstr(&le));
		mt_buf_appendf(out, " %llu\n", (unsigned long long)cumulative);
		mt_buf_free(&le);
	}
	append_sample_name(out, f, s, "_bucket", "+Inf");
	mt_buf_appendf(out, " %llu\n", (unsigned long long)count);
	append_sample_name(out, f, s, "_sum", NULL);
	mt_buf_append_char(out, ' ');
	append_number(out, bits_double(atomic_load_explicit(&s->sum_bits,
							    memory_order_relaxed)));
	mt_buf_append_char(out, '\n');
	append_sample_name(out, f, s, "_count", NULL);
	mt_buf_appendf(out, " %llu\n", (unsigned long long)count);
}

static void render_family(struct mt_buf *out, const struct mt_metric_family *f)
{
	mt_buf_appendf(out, "# HELP %s ", f->name);
	append_escaped(out, f->help, false);
	mt_buf_appendf(out, "\n# TYPE %s %s\n", f->name, metric_type_names[f->type]);
	for (const struct mt_series *s = f->series; s != NULL; s = s->next) {
		if (f->type == METRIC_HISTOGRAM) {
			render_histogram(out, f, s);
			continue;
		}
		append_sample_name(out, f, s, "", NULL);
		mt_buf_append_char(out, ' ');
		append_number(out, mt_series_value(s));
		mt_buf_append_char(out, '\n');
	}
}

void mt_metrics_render(struct mt_metrics *m, struct mt_buf *out)
{
	/* Collectors may create series: they run outside the lock, on a
	 * copy of the list (one may remove itself). */
	pthread_mutex_lock(&m->lock);
	size_t n = m->n_collectors;
	struct collector *copy = NULL;
	if (n > 0) {
		copy = mt_xmalloc(n * sizeof(*copy));
		memcpy(copy, m->collectors, n * sizeof(*copy));
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < n; i++)
		copy[i].cb(copy[i].context);
	free(copy);

	pthread_mutex_lock(&m->lock);
	for (const struct mt_metric_family *f = m->families; f != NULL; f = f->next)
		render_family(out, f);
	pthread_mutex_unlock(&m->lock);
}
