/* delivery-private.h — what the delivery files share:
 *   delivery.c       attempts: pick due recipients, route them, record
 *                    each one's fate in the queue, retries, expiry
 *   delivery-dest.c  destinations: per-next-hop job queues, concurrency
 *                    limits, the connection cache
 *   delivery-failover.c  a shard's sites (a replication group): the one
 *                    to connect to, a job's further tries while it fails over
 *   outbound.c       one LMTP/SMTP client connection running jobs
 *   bounce.c         DSNs (RFC 3464) for failed (and NOTIFY=SUCCESS) ones
 * Trust boundary: as delivery.h. */
#ifndef MT_MTA_DELIVERY_PRIVATE_H
#define MT_MTA_DELIVERY_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include "smtp-reply.h"
#include "config.h"
#include "delivery.h"
#include "dns.h"
#include "log.h"
#include "queue.h"

struct mta;
struct attempt;
struct dest;
struct conn;
struct mt_timer;

enum dest_proto { DEST_LMTP, DEST_SMTP };

/* A recipient's result from a delivery attempt. */
struct rcpt_result {
	int code;		/* reply code; 0: not yet known */
	char *text;		/* "250 2.0.0 Ok" as received, or our reason */
};

/* Recipients of one message to one destination: one transaction. */
struct job {
	struct job *next;
	struct attempt *attempt;
	struct dest *dest;
	unsigned int count;
	unsigned int *rcpt_index;	/* into the attempt's routes */
	unsigned int *msg_index;	/* into the message's rcpts */
	char **rcpt_address;		/* what to send in RCPT TO */
	struct rcpt_result *results;
	char *relay;			/* "host[addr]:port" that answered */
	/* A shard of several sites (delivery-failover.c). */
	unsigned int site;		/* the site it was last tried on */
	uint64_t failover_start;	/* ms (monotonic) of its first failed
					 * try; 0: none yet */
	unsigned int failover_tries;
	struct mt_timer *failover_timer;	/* its next try (in dest->waiting) */
};

struct delivery_stats {
	uint64_t attempts, delivered, deferred, bounced, dsns;
	uint64_t connections, transactions, reused;
};

struct delivery {
	struct mta *mta;
	struct dns *dns;
	struct attempt *attempts;	/* every attempt not yet finished */
	struct dest *dests;
	unsigned int n_dests;
	struct mt_timer *retry_timer;
	int64_t next_retry;		/* earliest deferred next_try seen */
	unsigned int attempts_active;	/* attempts not yet saved */
	unsigned int conns;		/* open outbound connections */
	bool draining;
	struct delivery_stats stats;
};

/* delivery.c: a job has every recipient's result. */
void delivery_job_done(struct job *job);
void job_set_result(struct job *job, unsigned int i, int code, const char *text);
/* The message a job carries. */
struct queue_msg *job_msg(const struct job *job);
void job_free(struct job *job);

/* delivery-dest.c */
struct dest *dest_get(struct delivery *d, enum dest_proto proto,
		      const char *name, const struct mt_hostport *fixed);
void dest_submit(struct dest *dest, struct job *job);
/* A connection is ready for work: give it the next job, or NULL. */
struct job *dest_next_job(struct dest *dest);
/* A connection is gone. failed: it never became ready; code and error say
 * why (451 "451 4.4.1 ...", or 5xx when the destination cannot exist). */
void dest_conn_gone(struct dest *dest, struct conn *conn, bool failed,
		    int code, const char *error);
void dest_conn_idle(struct dest *dest, struct conn *conn);
void dests_free(struct delivery *d);
/* Close idle connections (drain, or connection_cache_time 0). */
void dests_close_idle(struct delivery *d);
unsigned int dests_busy(const struct delivery *d);

struct dest {
	struct dest *next;
	struct delivery *delivery;
	enum dest_proto proto;
	char *name;			/* shard name, domain, or host:port */
	struct mt_hostport fixed;	/* a fixed next hop; host NULL: MX */
	struct job *jobs, **jobs_tail;
	unsigned int queued;
	struct conn *conns;		/* every connection of this dest */
	unsigned int n_conns;
	bool tls_failed;		/* skip STARTTLS (a handshake failed) */
	/* LMTP to a shard of several sites (delivery-failover.c). */
	unsigned int site;		/* where new connections go */
	unsigned int sites_failed;	/* bit per site logged as failed since
					 * the last success */
	struct job *waiting;		/* jobs waiting for their next try */
};

/* delivery-failover.c */
struct mt_shard_addresses;
/* The [shards] entry of an LMTP dest (NULL: SMTP, or not listed). */
const struct mt_shard_addresses *dest_shard(const struct dest *dest);
/* How many sites the dest has (1 for SMTP). */
unsigned int dest_sites(const struct dest *dest);
/* The LMTP address a new connection goes to, its site index, its connect
 * timeout and how long its greeting may take (a site of a group gets at
 * most 2 s and 5 s); NULL if the shard is not in [shards]. */
const struct mt_hostport *dest_site_lmtp(const struct dest *dest,
					 unsigned int *site_r,
					 uint64_t *connect_ms_r,
					 uint64_t *greeting_ms_r);
/* Is site where new connections go (always, for one site)? */
bool dest_site_current(const struct dest *dest, unsigned int site);
/* site failed (why: for the log): new connections go to the next one,
 * unless they have moved on already. */
void dest_site_failed(struct dest *dest, unsigned int site, const char *why);
/* site answered 2xx: new connections go there (the last known good). */
void dest_site_good(struct dest *dest, unsigned int site);
/* A result that sends the recipient to the shard's next site (421, 451:
 * the caller has taken out "not on this shard"). */
bool failover_retryable(const struct rcpt_result *r);
/* May job try another site (several sites, budget left, not draining)? */
bool failover_possible(const struct job *job);
/* Try job (its results still the last try's) again, on the next site, at
 * once or after its backoff: it waits in its dest's waiting list. */
void failover_again(struct job *job);
/* Draining: every waiting job is done now with its last results. */
void failover_flush(struct dest *dest);

/* outbound.c */
struct conn *conn_new(struct dest *dest);
/* Run job on an idle connection. */
void conn_run(struct conn *conn, struct job *job);
/* Close now; a running job fails with a temporary error. The connection
 * is unlinked from its dest (dest_conn_gone) before this returns. */
void conn_close(struct conn *conn, const char *why);
/* An idle connection: say QUIT, close when answered. */
void conn_quit(struct conn *conn);
bool conn_is_idle(const struct conn *conn);
/* Resolving, connecting, greeting, EHLO, STARTTLS: not ready yet. */
bool conn_is_starting(const struct conn *conn);
/* The site (of a shard of several) the connection goes to. */
unsigned int conn_site(const struct conn *conn);
struct conn *conn_next(const struct conn *conn);
void conn_set_next(struct conn *conn, struct conn *next);

/* bounce.c: a DSN (RFC 3464) about msg's recipients whose state was just
 * decided (delivered or bounced), addressed to its sender; NULL when none
 * is due (null sender, NOTIFY=NEVER, NOTIFY without FAILURE/SUCCESS). The
 * new message has its body (msg's body is quoted if loaded) and a fresh id. */
struct dsn_rcpt {
	unsigned int index;		/* into msg->rcpts */
	const char *remote_mta;		/* host that answered, or NULL */
	bool relayed;			/* delivered to a next hop, not a store */
};
struct queue_msg *bounce_create(struct mta *mta, const struct queue_msg *msg,
				const struct dsn_rcpt *rcpts, unsigned int count);

#endif
