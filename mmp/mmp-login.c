/* mmp-login.c — from PASS or AUTH PLAIN (POP3), LOGIN or AUTHENTICATE
 * PLAIN (IMAP) to a relayed session: ask the
 * directory (libdirsvc, cached) whether the password is right, find the
 * user's shard, log in to it (mmp-backend.c) and hand the connection to
 * the relay. Each step that waits is split into a start here and a
 * completion callback run from the loop.
 *
 * Answers (POP3: RFC 3206 response codes, RFC 2449 section 8; IMAP: RFC
 * 9051 7.1 and RFC 5530 codes in a tagged NO; mmp-answers.c has both):
 *   wrong user or password   -ERR [AUTH] / NO [AUTHENTICATIONFAILED], after
 *                            a delay that grows with the
 *                            address's recent failures (mmp-clients.c),
 *                            counted from the PASS so that the directory's
 *                            time does not tell whether the user exists;
 *                            the connection closes when the address has
 *                            reached auth_fail_limit
 *   account disabled         -ERR [SYS/PERM] / NO [CONTACTADMIN] (the
 *                            password was right)
 *   account on hold          -ERR [SYS/TEMP] / NO [UNAVAILABLE]
 *   directory unavailable    the same, at once
 *   shard down or silent     the same, at once if marked down, else
 *                            within backend_connect_timeout
 *   shard says -ERR / NO     that line, unchanged (e.g. [IN-USE], [LIMIT]),
 *                            under the client's tag for IMAP
 *   shard says +OK / OK      that line (IMAP: with the store's
 *                            [CAPABILITY ...]), then relaying
 *
 * Trust boundary: the user name and password are the client's; they reach
 * the directory only through libdirsvc (which checks and escapes them) and
 * the password is never logged or kept. The directory's answer (canonical
 * address, mailHost) is trusted. */
#include "mmp.h"
#include "clock.h"
#include "alloc.h"
#include "dirsvc.h"

#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

static void backend_done(struct mmp_session *sess,
			 enum mmp_backend_status status, const char *line,
			 const char *reason);

/* A temporary failure: answer at once and go back to AUTHORIZATION. */
static void tempfail(struct mmp_session *sess, const char *result,
		     enum mmp_answer answer, const char *reason)
{
	struct mmp_server *server = sess->worker->server;
	atomic_fetch_add(&server->stats.tempfail, 1);
	sess->result = result;
	mt_slog(MT_LOG_INFO, &sess->log, "login user=%s result=%s reason=%s",
		mmp_log_name(sess->user), result, reason);
	mmp_answer(sess, answer);
	mmp_session_resume(sess);
}

static void auth_done(const struct mt_dirsvc_auth *r, void *context)
{
	struct mmp_session *sess = context;
	struct mmp_server *server = sess->worker->server;
	bool blocked = false;
	uint64_t delay;

	sess->dirreq = NULL;
	switch (r->status) {
	case MT_DIRSVC_AUTH_OK:
		break;
	case MT_DIRSVC_AUTH_BAD_CREDENTIALS:
		atomic_fetch_add(&server->stats.auth_failed, 1);
		delay = mmp_clients_auth_failed(server->clients,
						(struct sockaddr *)&sess->peer,
						mt_clock_coarse_ms(), &blocked);
		sess->result = blocked ? "auth_failed_blocked" : "auth_failed";
		mt_slog(MT_LOG_INFO, &sess->log,
			"login user=%s result=%s reason=%s delay_ms=%llu",
			mmp_log_name(sess->user), sess->result,
			r->reason != NULL ? r->reason : "-",
			(unsigned long long)delay);
		/* The delay runs from the PASS, not from the directory's
		 * answer: a real user's password hash takes the directory
		 * longer than an unknown user's lookup, and that time must
		 * not show (the same answer at the same time either way). */
		mmp_enter_state(sess, MMP_STATE_AUTH_DELAY);
		mmp_session_penalty_at(sess, sess->login_started_ms + delay);
		return;
	case MT_DIRSVC_AUTH_DISABLED:
		sess->result = r->account == MT_DIRSVC_HOLD ? "account_hold" :
			"account_disabled";
		mt_slog(MT_LOG_INFO, &sess->log, "login user=%s result=%s",
			mmp_log_name(sess->user), sess->result);
		if (mmp_session_error(sess)) {
			mmp_answer(sess, r->account == MT_DIRSVC_HOLD ?
				   MMP_ANSWER_ACCOUNT_HOLD : MMP_ANSWER_ACCOUNT_DISABLED);
			mmp_session_resume(sess);
		}
		return;
	case MT_DIRSVC_AUTH_TEMPFAIL:
	default:
		tempfail(sess, "tempfail_directory", MMP_ANSWER_DIRECTORY_DOWN,
			 r->reason != NULL ? r->reason : "-");
		return;
	}

	/* Right password: from now on the canonical address is the user. */
	free(sess->user);
	sess->user = mt_xstrdup(r->address);
	sess->shard = r->shard != NULL ?
		mmp_shards_find(server->shards, r->shard) : NULL;
	if (sess->shard == NULL) {
		tempfail(sess, "tempfail_shard", MMP_ANSWER_SHARD_DOWN,
			 "mailHost not in [shards]");
		return;
	}
	if (mmp_shard_is_down(sess->shard, sess->protocol)) {
		tempfail(sess, "tempfail_shard", MMP_ANSWER_SHARD_DOWN,
			 "shard marked down");
		return;
	}
	mmp_enter_state(sess, MMP_STATE_BACKEND);
	sess->backend = mmp_backend_login(sess, sess->shard, sess->user,
					  backend_done);
}

void mmp_login_start(struct mmp_session *sess, const char *user,
		     const char *password)
{
	mmp_enter_state(sess, MMP_STATE_DIRECTORY);
	sess->login_started_ms = mt_clock_coarse_ms();
	sess->result = NULL;
	sess->shard = NULL;
	sess->dirreq = mt_dirsvc_authenticate(sess->worker->dirsvc, &sess->log,
					      user, password, auth_done, sess);
}

void mmp_login_delay_done(struct mmp_session *sess)
{
	if (strcmp(sess->result, "auth_failed_blocked") == 0) {
		/* POP3 says it in its last line; IMAP answers the tag, then BYE. */
		if (sess->protocol == MMP_PROTO_IMAP)
			mmp_answer(sess, MMP_ANSWER_AUTH_FAILED);
		mmp_session_finish_answer(sess, MT_OUTCOME_LIMIT, "auth_blocked",
					  MMP_ANSWER_BYE_BLOCKED);
		return;
	}
	mmp_answer(sess, MMP_ANSWER_AUTH_FAILED);
	if (mmp_session_error(sess))
		mmp_session_resume(sess);
}

/* The store's answer to the login, as the client's (IMAP: its tag). */
static void pass_answer(struct mmp_session *sess, const char *line)
{
	if (sess->protocol == MMP_PROTO_IMAP)
		mmp_reply(sess, "%s %s", sess->imap_tag, line);
	else
		mmp_reply(sess, "%s", line);
}

static void backend_done(struct mmp_session *sess,
			 enum mmp_backend_status status, const char *line,
			 const char *reason)
{
	struct mmp_server *server = sess->worker->server;

	mmp_shard_count_login(sess->shard, sess->protocol, status);
	switch (status) {
	case MMP_BACKEND_OK: {
		struct bufferevent *bev = mmp_backend_take(&sess->backend);
		atomic_fetch_add(&server->stats.logins, 1);
		sess->result = "ok";
		mt_slog(MT_LOG_DEBUG, &sess->log, "login user=%s shard=%s result=ok",
			sess->user, mmp_shard_name(sess->shard));
		pass_answer(sess, line);
		mmp_imap_free(sess);
		mmp_relay_start(sess, bev);
		return;
	}
	case MMP_BACKEND_REFUSED:
		mmp_backend_free(&sess->backend);
		atomic_fetch_add(&server->stats.backend_refused, 1);
		sess->result = "backend_refused";
		mt_slog(MT_LOG_INFO, &sess->log,
			"login user=%s shard=%s result=backend_refused answer=%s",
			sess->user, mmp_shard_name(sess->shard), line);
		/* The store's own answer, response code and all. */
		pass_answer(sess, line);
		mmp_session_resume(sess);
		return;
	case MMP_BACKEND_FAILED:
	default:
		mmp_backend_free(&sess->backend);
		mmp_shard_failed(sess->shard, sess->protocol, reason);
		tempfail(sess, "tempfail_shard", MMP_ANSWER_SHARD_DOWN, reason);
		return;
	}
}

void mmp_login_abort(struct mmp_session *sess)
{
	mt_dirsvc_request_cancel(&sess->dirreq);
	mmp_backend_free(&sess->backend);
}
