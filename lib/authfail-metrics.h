/* authfail-metrics.h — a per-address table's counts (lib/authfail.h) as
 * metrics, the same in every daemon that keeps one (the MTA's clients and
 * RCPT failures, the MMP's clients, the store's sessions and logins):
 *
 *	mailtier_address_failures_total{table}        failures recorded
 *	mailtier_address_blocks_total{table}          an address reached the block limit
 *	mailtier_address_refusals_total{table,limit}  refused: blocked | sessions
 *	mailtier_addresses_tracked{table}             addresses remembered now
 *
 * table is the daemon's constant name for the table; no address is ever
 * a label. Read by a collector at each render.
 *
 * Trust boundary: none (the daemon's own counts). No RFC. */
#ifndef MT_AUTHFAIL_METRICS_H
#define MT_AUTHFAIL_METRICS_H

struct mt_authfail;
struct mt_authfail_metrics;
struct mt_metrics;

/* *table_p is read at each render (NULL: a table not made yet, nothing
 * counted); it must outlive the returned handle. */
struct mt_authfail_metrics *mt_authfail_metrics_new(struct mt_metrics *m, const char *table,
						    struct mt_authfail *const *table_p);
/* Removes the collector (before the table is freed). NULL is a no-op. */
void mt_authfail_metrics_free(struct mt_authfail_metrics **am_p);

#endif
