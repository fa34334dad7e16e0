/* mmp-phase-ops.c — the ops that tie lib-mail's login phases (the POP3
 * one, pop3-login.h, and the IMAP one, imap-login.h) to an MMP session,
 * the same for both protocols: replies, errors counted towards
 * max_errors, the plaintext and TLS policy, the SASL response line's
 * state, STLS/STARTTLS. Each front's ops table (mmp-commands.c,
 * mmp-imap.c) adds only its login and what its phase alone has.
 *
 * Trust boundary: none of its own; the lines are the phases' fixed texts. */
#include "mmp.h"

void mmp_phase_reply(void *context, const char *line)
{
	mmp_reply(context, "%s", line);
}

void mmp_phase_error(void *context, const char *line)
{
	struct mmp_session *sess = context;
	if (mmp_session_error(sess))
		mmp_reply(sess, "%s", line);
}

bool mmp_phase_plaintext_ok(void *context)
{
	const struct mmp_session *sess = context;
	return sess->tls || sess->worker->server->set->allow_plaintext_auth;
}

bool mmp_phase_tls_active(void *context)
{
	const struct mmp_session *sess = context;
	return sess->tls;
}

bool mmp_phase_tls_available(void *context)
{
	const struct mmp_session *sess = context;
	return sess->worker->server->tls != NULL;
}

void mmp_phase_sasl_wait(void *context, bool waiting)
{
	mmp_enter_state(context, waiting ? MMP_STATE_SASL : MMP_STATE_AUTHORIZATION);
}

void mmp_phase_starttls(void *context)
{
	mmp_session_starttls(context);
}
