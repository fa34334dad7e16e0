/* mta-drain.c — the end of mailtier-mta's SIGTERM drain: main.c's drain
 * hook sets mta->draining and tells the SMTP server and delivery to finish;
 * each calls mta_drain_check() once it has become idle, and when both are
 * the loop's drain is done. Here in libmta (not main.c) so that whatever
 * runs the server without the daemon's main (the session fuzz target)
 * runs the same code.
 *
 * Trust boundary: none (daemon state only). No protocol RFC. */
#include "mta.h"
#include "delivery.h"
#include "loop.h"
#include "smtp-session.h"

void mta_drain_check(struct mta *mta)
{
	if (!mta->draining || mta->server == NULL || mta->delivery == NULL)
		return;
	if (smtp_server_count(mta->server) == 0 && delivery_idle(mta->delivery))
		mt_loop_drain_done(mta->loop);
}
