/* command-metrics.h — a protocol's command counters in the process's
 * metrics (lib/metrics.h): when a session ends, its per-command counts
 * (lib-mail/command, the same ones its log line summarises) are added to
 *
 *	mailtier_commands_total{protocol="smtp",command="rcpt",result="ok"}
 *
 * result is "ok" or "failed" (the command's final reply), command the
 * lower-case verb or "unknown", so the labels stay the table's own and
 * bounded; and its final replies by class to
 *
 *	mailtier_replies_total{protocol="smtp",class="4xx"}
 *
 * (smtp/lmtp 2xx 4xx 5xx, pop3 ok err, imap ok no bad). One per protocol
 * and table; the series exist from the start.
 *
 * Trust boundary: none (counts the engine already made).
 * Threading: mt_command_metrics_add from any thread (atomics). */
#ifndef MT_COMMAND_METRICS_H
#define MT_COMMAND_METRICS_H

#include "command.h"

struct mt_metrics;
struct mt_command_metrics;

struct mt_command_metrics *mt_command_metrics_new(struct mt_metrics *m,
						  const char *protocol,
						  const struct mt_command_table *table);
void mt_command_metrics_free(struct mt_command_metrics **cm_p);

/* Add one ended session's counters. */
void mt_command_metrics_add(struct mt_command_metrics *cm, const struct mt_commands *c);

#endif
