/* mta-metrics.h — what mailtier-mta exports on its metrics_listen
 * (lib/metrics.h): messages accepted and refused by reason, recipients
 * accepted by destination kind and refused by reason, sessions by listener and how they ended (listener and
 * outcome, lib-mail/conn-metrics), SMTP commands by verb, the
 * queue's size and oldest message's age, deliveries by result and
 * destination kind, their latency from arrival, bounces, and the queue's
 * log flushes (messages per flush is the ratio of two counters). The
 * directory client's own metrics come from dirsvc (mt_dirsvc_metrics).
 *
 * Label values are the constants below, never an address or a user.
 * Trust boundary: none (counts of what the MTA did). */
#ifndef MTA_METRICS_H
#define MTA_METRICS_H

#include "smtp-session.h"

#include <stdbool.h>

struct mta;
struct mt_metrics;

/* Why a message was refused at the end of its content. */
enum mta_refusal {
	MTA_REFUSED_QUEUE_ERROR,	/* 451: the queue could not store it */
	MTA_REFUSED_BARE_NEWLINE,	/* bare_newline_policy=reject */
	MTA_REFUSED_TOO_BIG,		/* over max_message_size */
	MTA_REFUSED_LINE_TOO_LONG,
	MTA_REFUSED_NUL,
	MTA_REFUSED_BDAT,		/* a failed BDAT chunk */
	MTA_REFUSED_MILTER,		/* a mail filter rejected or tempfailed it */
	MTA_REFUSED_COUNT
};

/* Why a recipient was refused at RCPT. */
enum mta_rcpt_refusal {
	MTA_RCPT_UNKNOWN_USER,		/* 550 5.1.1 */
	MTA_RCPT_RELAY_DENIED,		/* 554 5.7.1 */
	MTA_RCPT_TOO_MANY,		/* 452: max_recipients */
	MTA_RCPT_DIRECTORY,		/* 451: the directory failed */
	MTA_RCPT_LIMITED,		/* 450: too many unknown recipients */
	MTA_RCPT_COUNT
};

/* Where an accepted recipient goes. */
enum mta_destination {
	MTA_DEST_LOCAL,		/* a user of local_domains: delivered by LMTP to its shard */
	MTA_DEST_REMOTE,	/* another domain: relayed by SMTP */
	MTA_DEST_COUNT
};

/* Register the families and the collector (after the queue, delivery and
 * SMTP server exist); mta_metrics_free before they go. */
void mta_metrics_init(struct mta *mta, struct mt_metrics *m);
void mta_metrics_free(struct mta *mta);

void mta_metrics_accepted(struct mta *mta);
void mta_metrics_refused(struct mta *mta, enum mta_refusal why);
void mta_metrics_rcpt_refused(struct mta *mta, enum mta_rcpt_refusal why);
/* A recipient accepted at RCPT (its 250; a repeated one is not counted). */
void mta_metrics_rcpt_accepted(struct mta *mta, enum mta_destination destination);
void mta_metrics_session(struct mta *mta, enum smtp_service service);
/* A session of service ended with outcome (lib-mail/conn.h); also a
 * connection turned away at accept (MT_OUTCOME_REFUSED, or SHUTDOWN while
 * draining), which was no session. */
void mta_metrics_session_closed(struct mta *mta, enum smtp_service service,
				enum mt_conn_outcome outcome);
/* A session's counters when it ends. */
void mta_metrics_session_end(struct mta *mta, const struct mt_commands *commands);
/* One recipient's delivery result: lmtp is a store, else SMTP (relay/MX);
 * result is "delivered", "deferred" or "bounced"; latency from arrival. */
void mta_metrics_delivery(struct mta *mta, bool lmtp, const char *result,
			  double seconds);
/* A recipient deferred with this reply ("451 4.4.1 ..."): counted by its
 * enhanced status code's subject (RFC 3463 3: address, mailbox, system,
 * network, protocol, content, security; "other" without one). */
void mta_metrics_deferral(struct mta *mta, const char *reply);
/* A delivery status notification (RFC 3464) queued, by kind (failure:
 * to the sender; postmaster: the copy of one that could not be sent). */
void mta_metrics_dsn(struct mta *mta, bool to_postmaster);
/* A job to a replicated shard sent to its next site, or (budget_spent)
 * given up on after shard_failover_budget (delivery-failover.c). */
void mta_metrics_failover(struct mta *mta, bool budget_spent);
/* A mail filter's word on a message (the [milter.NAME] name: the
 * operator's, a bounded set): "accept" (it passed the filter), "reject",
 * "tempfail", "discard", "quarantine", or "failed" (unreachable, timed
 * out, broke the protocol: its default action applied). */
void mta_metrics_milter(struct mta *mta, const char *milter, const char *result);

#endif
