/* mta.h — the mailtier-mta daemon's shared state: the config in force, the
 * policy compiled from it, and the parts main.c wires together (SMTP server
 * sessions, the durable queue, delivery, the admin socket). Each part keeps
 * its own state in its own files; this is only what they reach through.
 *
 * Trust boundary: none of its own. Threading: everything here belongs to the
 * main loop's thread (the queue's storage threads and dirsvc's LDAP threads
 * talk to it only through their completion calls on that loop). */
#ifndef MT_MTA_H
#define MT_MTA_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "mailtier-settings.h"
#include "mta-settings.h"

struct mt_loop;
struct mt_tls;
struct mt_dirsvc;
struct mt_dirsvc_client;
struct mta_policy;
struct queue;
struct delivery;
struct smtp_server;
struct mta_admin;
struct mta_milters;

#define MTA_NAME "mailtier-mta"

struct mta {
	const char *config_path;
	/* Replaced as a whole on SIGHUP; read through these on each use, never
	 * cached across a return to the loop. */
	struct mt_config *config;
	const struct mt_mta_settings *set;
	const struct mt_global_settings *global;
	struct mta_policy *policy;
	char *hostname;			/* set->hostname or the system's */

	struct mt_loop *loop;
	struct mt_tls *tls_server;	/* NULL: no certificate configured */
	struct mt_tls *tls_client;	/* outgoing STARTTLS (opportunistic) */
	struct mt_dirsvc *dirsvc;
	struct mt_dirsvc_client *dir;	/* on loop */
	struct queue *queue;
	struct delivery *delivery;
	struct smtp_server *server;
	struct mta_admin *admin;
	struct mta_metrics *metrics;	/* NULL: not counted (tests, fuzzing) */
	struct mta_milters *milters;	/* the mail filters of the config in force */
	bool draining;
};

/* Called by a part that has become idle while draining: when every part is,
 * the loop's drain ends. */
void mta_drain_check(struct mta *mta);


#endif
