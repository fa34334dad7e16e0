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
	/* mailtier_replies_total by class; NULL where the protocol has no
	 * such class (its replies are counted under FAILURE's). */
	struct mt_series *replies[MT_REPLY_CLASSES];
};

/* Each protocol's names for the reply classes (enum mt_reply_class). */
static void reply_class_names(const char *protocol, const char *names[MT_REPLY_CLASSES])
{
	if (strcmp(protocol, "imap") == 0) {
		names[MT_REPLY_SUCCESS] = "ok";
		names[MT_REPLY_FAILURE] = "no";
		names[MT_REPLY_BAD] = "bad";
	} else if (strcmp(protocol, "pop3") == 0) {
		names[MT_REPLY_SUCCESS] = "ok";
		names[MT_REPLY_FAILURE] = "err";
	} else {	/* smtp, lmtp */
		names[MT_REPLY_SUCCESS] = "2xx";
		names[MT_REPLY_TEMPFAIL] = "4xx";
		names[MT_REPLY_FAILURE] = "5xx";
	}
}

struct mt_command_metrics *mt_command_metrics_new(struct mt_metrics *m,
						  const char *protocol,
						  const struct mt_command_table *table)
{
	struct mt_metric_family *f = mt_metrics_counter(m, "mailtier_commands_total",
		"Protocol commands by their final reply, counted when the session ends.",
		"protocol,command,result");
	struct mt_command_metrics *cm = mt_xcalloc(1, sizeof(*cm));
	struct mt_metric_family *replies = mt_metrics_counter(m, "mailtier_replies_total",
		"Final replies to commands by class (smtp/lmtp 2xx 4xx 5xx, pop3 ok err, "
		"imap ok no bad), counted when the session ends.", "protocol,class");
	const char *names[MT_REPLY_CLASSES] = { NULL };
	reply_class_names(protocol, names);
	for (size_t i = 0; i < MT_REPLY_CLASSES; i++) {
		if (names[i] != NULL)
			cm->replies[i] = mt_metric_series2(replies, protocol, names[i]);
	}
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
	for (size_t i = 0; i < MT_REPLY_CLASSES; i++) {
		if (c->replies[i] == 0)
			continue;
		struct mt_series *s = cm->replies[i] != NULL ? cm->replies[i]
							     : cm->replies[MT_REPLY_FAILURE];
		mt_series_add(s, c->replies[i]);
	}
	/* Unknown verbs: the engine's last slot. */
	if (c->total[c->count] != 0)
		mt_series_add(cm->failed[cm->count], c->total[c->count]);
}
