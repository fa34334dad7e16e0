/* command-metrics.c — per-command counters into the metrics registry (see
 * command-metrics.h).
 *
 * Trust boundary: none. No RFC. */
#include "command-metrics.h"
#include "alloc.h"
#include "metrics.h"

#include <stdlib.h>
#include <string.h>

struct mt_command_metrics {
	size_t count;			/* the table's verbs; slot count is unknown */
	struct mt_series **ok, **failed;
};

struct mt_command_metrics *mt_command_metrics_new(struct mt_metrics *m,
						  const char *protocol,
						  const struct mt_command_table *table)
{
	struct mt_metric_family *f = mt_metrics_counter(m, "mailtier_commands_total",
		"Protocol commands by their final reply, counted when the session ends.",
		"protocol,command,result");
	struct mt_command_metrics *cm = mt_xcalloc(1, sizeof(*cm));
	cm->count = table->count;
	cm->ok = mt_xcalloc(table->count + 1, sizeof(*cm->ok));
	cm->failed = mt_xcalloc(table->count + 1, sizeof(*cm->failed));
	for (size_t i = 0; i <= table->count; i++) {
		char verb[32];
		const char *name = i == table->count ? "unknown" : mt_command_table_def(table, i)->name;
		size_t n = 0;
		for (; name[n] != '\0' && n < sizeof(verb) - 1; n++)
			verb[n] = (char)(name[n] >= 'A' && name[n] <= 'Z' ? name[n] | 0x20 : name[n]);
		verb[n] = '\0';
		const char *ok[] = { protocol, verb, "ok" };
		const char *failed[] = { protocol, verb, "failed" };
		/* An unknown verb never succeeds: no "ok" series for it. */
		if (i < table->count)
			cm->ok[i] = mt_metric_series(f, ok);
		cm->failed[i] = mt_metric_series(f, failed);
	}
	return cm;
}

void mt_command_metrics_free(struct mt_command_metrics **cm_p)
{
	struct mt_command_metrics *cm = *cm_p;
	if (cm == NULL)
		return;
	*cm_p = NULL;
	free(cm->ok);
	free(cm->failed);
	free(cm);
}

void mt_command_metrics_add(struct mt_command_metrics *cm, const struct mt_commands *c)
{
	if (cm == NULL || c->total == NULL)
		return;
	size_t n = c->count < cm->count ? c->count : cm->count;
	for (size_t i = 0; i < n; i++) {
		if (c->total[i] == 0)
			continue;
		if (c->ok[i] != 0)
			mt_series_add(cm->ok[i], c->ok[i]);
		if (c->total[i] > c->ok[i])
			mt_series_add(cm->failed[i], c->total[i] - c->ok[i]);
	}
	/* Unknown verbs: the engine's last slot. */
	if (c->total[c->count] != 0)
		mt_series_add(cm->failed[cm->count], c->total[c->count]);
}
