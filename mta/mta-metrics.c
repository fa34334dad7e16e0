/* mta-metrics.c — mailtier-mta's metrics (see mta-metrics.h).
 *
 * Trust boundary: none. No RFC; the Prometheus text format through
 * lib/metrics. */
#include "mta-metrics.h"
#include "alloc.h"
#include "bdb-checkpoint.h"
#include "bdb-commit.h"
#include "command-metrics.h"
#include "conn-metrics.h"
#include "delivery.h"
#include "mta.h"
#include "metrics.h"
#include "queue.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static const char *const refusal_names[MTA_REFUSED_COUNT] = {
	"queue_error", "bare_newline", "too_big", "line_too_long", "nul", "bdat",
	"milter",
};
static const char *const rcpt_refusal_names[MTA_RCPT_COUNT] = {
	"unknown_user", "relay_denied", "too_many", "directory", "limited",
};
static const char *const destination_names[MTA_DEST_COUNT] = {
	[MTA_DEST_LOCAL] = "local", [MTA_DEST_REMOTE] = "remote",
};
static const char *const service_names[SMTP_SERVICE_COUNT] = {
	"smtp", "submission", "submissions",
};
static const char *const result_names[] = { "delivered", "deferred", "bounced" };
#define N_RESULTS (sizeof(result_names) / sizeof(result_names[0]))

/* RFC 3463 3.1-3.8: the enhanced status code's subject (x.N.x), index N;
 * 0 for a reply without one. */
static const char *const subject_names[] = {
	"other", "address", "mailbox", "system", "network", "protocol", "content",
	"security",
};
#define N_SUBJECTS (sizeof(subject_names) / sizeof(subject_names[0]))

/* Seconds from arrival to a recipient's final result: from a local
 * store's few milliseconds to a retried relay's hours. */
static const double latency_bounds[] = {
	0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 14400,
};

struct mta_metrics {
	struct mt_series *accepted;
	struct mt_series *refused[MTA_REFUSED_COUNT];
	struct mt_series *rcpt_refused[MTA_RCPT_COUNT];
	struct mt_series *rcpt_accepted[MTA_DEST_COUNT];
	struct mt_series *sessions[SMTP_SERVICE_COUNT];
	struct mt_series *deliveries[2][N_RESULTS];	/* [lmtp][result] */
	struct mt_series *latency[2];
	struct mt_series *deferrals[N_SUBJECTS];
	struct mt_series *dsns[2];	/* [to_postmaster] */
	struct mt_series *failovers[2];	/* [budget_spent] */
	struct mt_metric_family *milter_results;
	struct mt_command_metrics *commands;
	struct mt_conn_metrics *closed;
	/* Read by the collector. */
	struct mt_series *connections_open, *queue_messages, *queue_oldest_age;
	struct mt_series *flushes, *flushed_messages, *commit_seconds, *flush_seconds;
	struct mt_metrics *registry;
};

static double now_seconds(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void collect(void *context)
{
	struct mta *mta = context;
	struct mta_metrics *mm = mta->metrics;
	struct queue_stats qs;
	queue_get_stats(mta->queue, &qs);
	mt_series_set(mm->connections_open, smtp_server_count(mta->server));
	mt_series_set(mm->queue_messages, qs.messages);
	struct queue_msg *oldest = queue_first(mta->queue);
	mt_series_set(mm->queue_oldest_age, oldest == NULL ? 0 :
		      now_seconds() - (double)oldest->arrival / 1000.0);
	mt_series_store(mm->flushes, qs.flushes);
	mt_series_store(mm->flushed_messages, qs.flushed_jobs);
	mt_series_store_float(mm->commit_seconds, (double)qs.commit_usecs / 1e6);
	mt_series_store_float(mm->flush_seconds, (double)qs.flush_usecs / 1e6);
}

void mta_metrics_init(struct mta *mta, struct mt_metrics *m)
{
	struct mta_metrics *mm = mt_xcalloc(1, sizeof(*mm));
	mm->registry = m;
	mm->accepted = mt_metrics_counter_series(m, "mailtier_mta_messages_accepted_total",
		"Messages accepted (250 after DATA or BDAT LAST: on stable storage).");
	struct mt_metric_family *f = mt_metrics_counter(m,
		"mailtier_mta_messages_refused_total",
		"Messages refused at the end of their content, by reason.", "reason");
	for (unsigned int i = 0; i < MTA_REFUSED_COUNT; i++)
		mm->refused[i] = mt_metric_series1(f, refusal_names[i]);
	f = mt_metrics_counter(m, "mailtier_mta_recipients_refused_total",
		"Recipients refused at RCPT, by reason.", "reason");
	for (unsigned int i = 0; i < MTA_RCPT_COUNT; i++)
		mm->rcpt_refused[i] = mt_metric_series1(f, rcpt_refusal_names[i]);
	f = mt_metrics_counter(m, "mailtier_mta_recipients_total",
		"Recipients accepted at RCPT (the 250 that adds one to a transaction; a "
		"repeated address is not counted again; refused ones are "
		"mailtier_mta_recipients_refused_total), by destination: local (a user of "
		"local_domains found in the directory, delivered by LMTP to its store "
		"shard), remote (another domain, relayed by SMTP).", "destination");
	for (unsigned int i = 0; i < MTA_DEST_COUNT; i++)
		mm->rcpt_accepted[i] = mt_metric_series1(f, destination_names[i]);
	f = mt_metrics_counter(m, "mailtier_sessions_total",
		"Client sessions accepted, by listener.", "listener");
	for (unsigned int i = 0; i < SMTP_SERVICE_COUNT; i++)
		mm->sessions[i] = mt_metric_series1(f, service_names[i]);
	mm->closed = mt_conn_metrics_new(m, service_names, SMTP_SERVICE_COUNT);
	f = mt_metrics_counter(m, "mailtier_mta_deliveries_total",
		"Recipient delivery results, by destination kind (lmtp: a store; "
		"smtp: a relay or MX).", "destination,result");
	struct mt_metric_family *h = mt_metrics_histogram(m,
		"mailtier_mta_delivery_latency_seconds",
		"Seconds from a message's arrival to a recipient's delivery.",
		"destination", latency_bounds,
		sizeof(latency_bounds) / sizeof(latency_bounds[0]));
	for (unsigned int lmtp = 0; lmtp < 2; lmtp++) {
		const char *dest = lmtp ? "lmtp" : "smtp";
		for (unsigned int r = 0; r < N_RESULTS; r++)
			mm->deliveries[lmtp][r] = mt_metric_series2(f, dest, result_names[r]);
		mm->latency[lmtp] = mt_metric_series1(h, dest);
	}
	f = mt_metrics_counter(m, "mailtier_mta_deferrals_total",
		"Recipients deferred (a 4xx reply or a failed attempt), by the reply's "
		"enhanced status code subject (RFC 3463: network is x.4.x — no answer, "
		"bad connection, routing; system x.3.x; mailbox x.2.x; ...).", "reason");
	for (unsigned int i = 0; i < N_SUBJECTS; i++)
		mm->deferrals[i] = mt_metric_series1(f, subject_names[i]);
	f = mt_metrics_counter(m, "mailtier_mta_dsns_total",
		"Delivery status notifications queued (failure: to the sender; "
		"postmaster: for a message without a sender).", "kind");
	mm->dsns[0] = mt_metric_series1(f, "failure");
	mm->dsns[1] = mt_metric_series1(f, "postmaster");
	f = mt_metrics_counter(m, "mailtier_mta_shard_failovers_total",
		"LMTP jobs to a shard of several sites (a replication group) sent "
		"to its next site after a temporary failure (retry), and jobs "
		"whose shard_failover_budget ran out (budget_spent: deferred).",
		"result");
	mm->failovers[0] = mt_metric_series1(f, "retry");
	mm->failovers[1] = mt_metric_series1(f, "budget_spent");
	mm->milter_results = mt_metrics_counter(m, "mailtier_mta_milter_results_total",
		"Mail filters' words on messages, by filter ([milter.NAME]) and result: "
		"accept (passed it), reject, tempfail, discard, quarantine, failed "
		"(unreachable, timed out or broke the protocol: its default action "
		"applied).", "milter,result");
	mm->commands = mt_command_metrics_new(m, "smtp", &smtp_command_table);
	mm->connections_open = mt_metrics_gauge_series(m, "mailtier_connections_open",
		"Client connections open now.");
	mm->queue_messages = mt_metrics_gauge_series(m, "mailtier_mta_queue_messages",
		"Messages in the queue now.");
	mm->queue_oldest_age = mt_metrics_gauge_series(m, "mailtier_mta_queue_oldest_message_age_seconds",
		"Age of the oldest message in the queue (0: empty).");
	mm->flushes = mt_metrics_counter_series(m, "mailtier_mta_log_flushes_total",
		"Berkeley DB log flushes (group commits) of the queue.");
	mm->flushed_messages = mt_metrics_counter_series(m, "mailtier_mta_log_flushed_transactions_total",
		"Queue transactions made durable by those flushes "
		"(per flush: the ratio of the two).");
	mm->commit_seconds = mt_metrics_counter_series(m, "mailtier_mta_queue_commit_seconds_total",
		"Seconds the queue's storage threads spent in transactions.");
	mm->flush_seconds = mt_metrics_counter_series(m, "mailtier_mta_log_flush_seconds_total",
		"Seconds the queue's storage threads spent flushing the log.");
	queue_observe_commit_latency(mta->queue, mt_bdb_commit_latency_histogram(m,
		"mailtier_mta_queue_commit_latency_seconds",
		"Seconds from a queue write's submission (a message accepted, a delivery "
		"recorded) until the log flush that made it durable."));
	queue_observe_checkpoints(mta->queue, mt_bdb_checkpoint_duration_histogram(m,
		"mailtier_mta_checkpoint_duration_seconds",
		"Seconds each Berkeley DB checkpoint of the queue took (written ones: "
		"every 8 MiB of log or 60 s)."));
	smtp_server_export_metrics(mta->server, m);
	mta->metrics = mm;
	mt_metrics_add_collector(m, collect, mta);
}

void mta_metrics_free(struct mta *mta)
{
	struct mta_metrics *mm = mta->metrics;
	if (mm == NULL)
		return;
	mt_metrics_remove_collector(mm->registry, collect, mta);
	queue_observe_commit_latency(mta->queue, NULL);
	queue_observe_checkpoints(mta->queue, NULL);
	mt_command_metrics_free(&mm->commands);
	mt_conn_metrics_free(&mm->closed);
	free(mm);
	mta->metrics = NULL;
}

void mta_metrics_failover(struct mta *mta, bool budget_spent)
{
	if (mta->metrics != NULL)
		mt_series_add(mta->metrics->failovers[budget_spent ? 1 : 0], 1);
}

void mta_metrics_accepted(struct mta *mta)
{
	if (mta->metrics != NULL)
		mt_series_add(mta->metrics->accepted, 1);
}

void mta_metrics_refused(struct mta *mta, enum mta_refusal why)
{
	if (mta->metrics != NULL)
		mt_series_add(mta->metrics->refused[why], 1);
}

void mta_metrics_rcpt_refused(struct mta *mta, enum mta_rcpt_refusal why)
{
	if (mta->metrics != NULL)
		mt_series_add(mta->metrics->rcpt_refused[why], 1);
}

void mta_metrics_rcpt_accepted(struct mta *mta, enum mta_destination destination)
{
	if (mta->metrics != NULL)
		mt_series_add(mta->metrics->rcpt_accepted[destination], 1);
}

void mta_metrics_session(struct mta *mta, enum smtp_service service)
{
	if (mta->metrics != NULL)
		mt_series_add(mta->metrics->sessions[service], 1);
}

void mta_metrics_session_closed(struct mta *mta, enum smtp_service service,
				enum mt_conn_outcome outcome)
{
	if (mta->metrics != NULL)
		mt_conn_metrics_closed(mta->metrics->closed, service, outcome);
}

void mta_metrics_session_end(struct mta *mta, const struct mt_commands *commands)
{
	if (mta->metrics != NULL)
		mt_command_metrics_add(mta->metrics->commands, commands);
}

void mta_metrics_delivery(struct mta *mta, bool lmtp, const char *result,
			  double seconds)
{
	struct mta_metrics *mm = mta->metrics;
	if (mm == NULL)
		return;
	for (unsigned int r = 0; r < N_RESULTS; r++) {
		if (strcmp(result_names[r], result) == 0) {
			mt_series_add(mm->deliveries[lmtp][r], 1);
			break;
		}
	}
	if (strcmp(result, "delivered") == 0)
		mt_series_observe(mm->latency[lmtp], seconds);
}

/* "451 4.4.1 text" → 4 (network); 0 when the reply has no x.y.z. */
static unsigned int reply_subject(const char *reply)
{
	if (reply == NULL)
		return 0;
	const char *p = reply;
	while (*p >= '0' && *p <= '9')
		p++;
	while (*p == ' ' || *p == '-')
		p++;
	if ((p[0] == '4' || p[0] == '5' || p[0] == '2') && p[1] == '.' &&
	    p[2] >= '0' && p[2] <= '9' && (p[3] == '.' || (p[3] >= '0' && p[3] <= '9'))) {
		unsigned int subject = (unsigned int)(p[2] - '0');
		if (p[3] == '.' && subject < N_SUBJECTS)
			return subject;
	}
	return 0;
}

void mta_metrics_deferral(struct mta *mta, const char *reply)
{
	if (mta->metrics != NULL)
		mt_series_add(mta->metrics->deferrals[reply_subject(reply)], 1);
}

void mta_metrics_dsn(struct mta *mta, bool to_postmaster)
{
	if (mta->metrics != NULL)
		mt_series_add(mta->metrics->dsns[to_postmaster ? 1 : 0], 1);
}

void mta_metrics_milter(struct mta *mta, const char *milter, const char *result)
{
	if (mta->metrics != NULL)
		mt_series_add(mt_metric_series2(mta->metrics->milter_results, milter,
						result), 1);
}
