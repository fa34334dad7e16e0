/* delivery.h — the delivery side of the MTA: takes queued messages, routes
 * each recipient (local: the directory's mailHost shard over LMTP; remote:
 * transport_map, relayhost or DNS MX over SMTP), runs the attempts with
 * per-destination concurrency and cached connections, records each
 * recipient's fate in the queue, retries by retry_schedule until
 * max_queue_lifetime and bounces permanent failures (RFC 3464).
 *
 * Trust boundary: replies from LMTP/SMTP servers are peer data: parsed by
 * lib-mail/smtp-reply.c, bounded, and only their codes decide; DNS answers are
 * parsed by c-ares. Queue contents are ours.
 * Threading: the main loop only. */
#ifndef MT_MTA_DELIVERY_H
#define MT_MTA_DELIVERY_H

#include <stdbool.h>

struct mta;
struct queue_msg;
struct delivery;

/* Hooks the queue's arrival callback; call queue_announce_all() after. */
struct delivery *delivery_new(struct mta *mta, const char **error_r);
void delivery_free(struct delivery **delivery_p);
/* SIGTERM: start nothing new; mta_drain_check() once idle. Attempts in
 * flight finish (or are cut off by the drain bound: then tried again after
 * the restart). */
void delivery_drain(struct delivery *delivery);
bool delivery_idle(const struct delivery *delivery);
/* The config changed (SIGHUP): pick up limits and routes. */
void delivery_reload(struct delivery *delivery);
/* Try msg (NULL: every message) now, whatever its retry time. */
void delivery_flush(struct delivery *delivery, struct queue_msg *msg);
/* One stats line: attempts, deliveries, deferrals, bounces, connections. */
void delivery_log_stats(struct delivery *delivery);

#endif
