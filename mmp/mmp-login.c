/* mmp-login.c — from PASS or AUTH PLAIN (POP3), LOGIN or AUTHENTICATE
 * PLAIN (IMAP) to a relayed session: ask the
 * directory (libdirsvc, cached) whether the password is right, find the
 * user's shard, log in to it (mmp-backend.c) and hand the connection to
 * the relay. Each step that waits is split into a start here and a
 * completion callback run from the loop.
 *
 * Answers (POP3: RFC 3206 response codes, RFC 2449 section 8; IMAP: RFC
 * 9051 7.1 and RFC 5530 codes in a tagged NO; mmp-answers.c has both):
 *   address blocked          -ERR [SYS/TEMP] / * BYE [UNAVAILABLE] Too many
 *                            failed logins from your address, at once, and
 *                            the connection closes: the address has reached
 *                            auth_fail_limit (mmp-clients.c), so the login
 *                            is refused right or wrong, before the
 *                            directory is asked (the connection may have
 *                            been opened before the block). An address has
 *                            at most auth_fail_limit - failures passwords
 *                            checked at once; a login beyond that waits
 *                            (LOGIN_WAIT) until one ends, so logins sent
 *                            together on many connections test no more
 *                            than auth_fail_limit passwords a window
 *   wrong user or password   -ERR [AUTH] / NO [AUTHENTICATIONFAILED], after
 *                            a delay that grows with the
 *                            address's recent failures (mmp-clients.c),
 *                            counted from the PASS so that the directory's
 *                            time does not tell whether the user exists;
 *                            the connection closes when the address has
 *                            reached auth_fail_limit, and the last line
 *                            says so (POP3: in the -ERR; IMAP: a BYE after
 *                            the NO). A session that must end during the
 *                            delay (login_timeout, shutdown) gets the
 *                            answer at once and a last line saying why
 *   account disabled         -ERR [SYS/PERM] / NO [CONTACTADMIN] (the
 *                            password was right)
 *   account on hold          -ERR [SYS/TEMP] / NO [UNAVAILABLE]
 *   directory unavailable    the same, at once
 *   shard down or silent     the same, at once if marked down, else
 *                            within backend_connect_timeout; a shard of
 *                            several sites (a replication group) is tried
 *                            site by site, the last master first, the
 *                            others next (a replica refuses at its
 *                            greeting: the next site at once), then every
 *                            250 ms, for up to backend_failover_wait
 *                            before this answer
 *   shard says -ERR / NO     that line, unchanged (e.g. [IN-USE], [LIMIT]),
 *                            under the client's tag for IMAP
 *   shard says the mailbox   our lookup is stale (a mailbox move, a lagging
 *   is not on it             cache or directory replica): the user's cached
 *                            entries are dropped (mt_dirsvc_forget) and the
 *                            shard is looked up again, once; another shard
 *                            gets the login, else -ERR [SYS/TEMP] / NO
 *                            [UNAVAILABLE] as for a shard that is down
 *   shard says +OK / OK      that line (IMAP: with the store's
 *                            [CAPABILITY ...]), then relaying
 *
 * Trust boundary: the user name and password are the client's; they reach
 * the directory only through libdirsvc (which checks and escapes them) and
 * the password is never logged, and kept only while its login waits for
 * its turn (then wiped). The directory's answer (canonical
 * address, mailHost) is trusted. */
#include "mmp.h"
#include "clock.h"
#include "alloc.h"
#include "dirsvc.h"

#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

/* LOGIN_WAIT: how often a login waiting for its turn looks again. */
#define LOGIN_WAIT_MSECS 10
/* A shard of several sites: how often a login that found none taking it
 * tries them again, and the least time a try gets. */
#define FAILOVER_POLL_MSECS 250
#define FAILOVER_TRY_MIN_MSECS 250

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

/* A failed login: counted against the address, answered after its delay. */
static void auth_failed(struct mmp_session *sess, const char *reason)
{
	struct mmp_server *server = sess->worker->server;
	bool blocked = false;

	atomic_fetch_add(&server->stats.auth_failed, 1);
	uint64_t delay = mmp_clients_auth_failed(server->clients,
						 (struct sockaddr *)&sess->peer,
						 mt_clock_coarse_ms(), &blocked);
	sess->result = blocked ? "auth_failed_blocked" : "auth_failed";
	mt_slog(MT_LOG_INFO, &sess->log,
		"login user=%s result=%s reason=%s delay_ms=%llu",
		mmp_log_name(sess->user), sess->result, reason,
		(unsigned long long)delay);
	/* The delay runs from the PASS, not from the directory's answer: a
	 * real user's password hash takes the directory longer than an
	 * unknown user's lookup, and that time must not show (the same
	 * answer at the same time either way). */
	mmp_enter_state(sess, MMP_STATE_AUTH_DELAY);
	mmp_session_login_timer_at(sess, sess->login_started_ms + delay);
}

/* Log in on site of the user's shard, within timeout_ms. */
static void backend_try(struct mmp_session *sess, unsigned int site,
			uint64_t timeout_ms)
{
	sess->site = site;
	mmp_enter_state(sess, MMP_STATE_BACKEND);
	sess->backend = mmp_backend_login(sess, sess->shard, site, timeout_ms,
					  sess->user, backend_done);
}

/* A shard of several sites: the next site of this pass (from the last
 * master round the list; the first pass skips sites marked down, later
 * ones try every site, since a replica may have been elected since its
 * mark), or, the pass over, the next pass POLL_MSECS later, or the
 * temporary failure once backend_failover_wait is over. */
static void site_next(struct mmp_session *sess)
{
	const struct mt_mmp_settings *set = sess->worker->server->set;
	unsigned int n = mmp_shard_sites(sess->shard);
	uint64_t now = mt_clock_coarse_ms();
	while (sess->site_tried < n) {
		unsigned int site = (sess->site_first + sess->site_tried++) % n;
		if (sess->site_pass == 0 &&
		    mmp_shard_site_is_down(sess->shard, site, sess->protocol))
			continue;
		uint64_t left = sess->failover_deadline > now ?
			sess->failover_deadline - now : 0;
		uint64_t timeout = set->backend_connect_timeout;
		if (left < timeout)
			timeout = left > FAILOVER_TRY_MIN_MSECS ? left :
				FAILOVER_TRY_MIN_MSECS;
		backend_try(sess, site, timeout);
		return;
	}
	if (now >= sess->failover_deadline || sess->worker->draining) {
		tempfail(sess, "tempfail_shard", MMP_ANSWER_SHARD_DOWN,
			 "no site took the login within backend_failover_wait");
		return;
	}
	sess->site_pass++;
	sess->site_tried = 0;
	sess->site_first = mmp_shard_master(sess->shard);
	mmp_enter_state(sess, MMP_STATE_BACKEND);
	/* The last pass at the deadline. */
	uint64_t next = now + FAILOVER_POLL_MSECS;
	mmp_session_login_timer_at(sess, next < sess->failover_deadline ?
				   next : sess->failover_deadline);
}

/* sess->shard is the user's: log in there. One site: at once, unless it
 * is marked down. Several (a replication group): the last master first,
 * then the others, for up to backend_failover_wait. */
static void backend_start(struct mmp_session *sess)
{
	const struct mt_mmp_settings *set = sess->worker->server->set;
	if (mmp_shard_sites(sess->shard) > 1) {
		sess->failover_deadline = mt_clock_coarse_ms() +
			set->backend_failover_wait;
		sess->site_pass = 0;
		sess->site_tried = 0;
		sess->site_first = mmp_shard_master(sess->shard);
		site_next(sess);
		return;
	}
	if (mmp_shard_is_down(sess->shard, sess->protocol)) {
		tempfail(sess, "tempfail_shard", MMP_ANSWER_SHARD_DOWN,
			 "shard marked down");
		return;
	}
	backend_try(sess, 0, set->backend_connect_timeout);
}

/* The check counted for the address (mmp_clients_attempt_start) is over. */
static void attempt_end(struct mmp_session *sess)
{
	if (!sess->attempt)
		return;
	sess->attempt = false;
	mmp_clients_attempt_done(sess->worker->server->clients,
				 (struct sockaddr *)&sess->peer);
}

static void auth_done(const struct mt_dirsvc_auth *r, void *context)
{
	struct mmp_session *sess = context;
	struct mmp_server *server = sess->worker->server;

	sess->dirreq = NULL;
	if (r->status == MT_DIRSVC_AUTH_BAD_CREDENTIALS) {
		/* Counted before the check ends: a login waiting for its
		 * turn then sees the failure, never a free slot first. */
		auth_failed(sess, r->reason != NULL ? r->reason : "-");
		attempt_end(sess);
		return;
	}
	attempt_end(sess);
	switch (r->status) {
	case MT_DIRSVC_AUTH_OK:
		break;
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

	/* Right password: from now on the canonical address is the user;
	 * the name given is kept for mt_dirsvc_forget() (its cache key). */
	free(sess->login_user);
	sess->login_user = sess->user;
	sess->user = mt_xstrdup(r->address);
	sess->shard = r->shard != NULL ?
		mmp_shards_find(server->shards, r->shard) : NULL;
	if (sess->shard == NULL) {
		tempfail(sess, "tempfail_shard", MMP_ANSWER_SHARD_DOWN,
			 "mailHost not in [shards]");
		return;
	}
	backend_start(sess);
}

/* A kept password (LOGIN_WAIT) is wiped and freed. */
static void password_forget(struct mmp_session *sess)
{
	if (sess->password == NULL)
		return;
	explicit_bzero(sess->password, strlen(sess->password));
	MT_FREE(&sess->password);
}

/* The address may have auth_fail_limit - failures passwords checked at
 * once (mmp-clients.c): ask the directory if this login has a turn, wait
 * for one if not, refuse it if the address is blocked. */
static void login_try(struct mmp_session *sess, const char *password)
{
	struct mmp_server *server = sess->worker->server;
	uint64_t now = mt_clock_coarse_ms();

	switch (mmp_clients_attempt_start(server->clients,
					  (struct sockaddr *)&sess->peer, now)) {
	case MMP_ATTEMPT_BLOCKED:
		/* Checked at accept and here again: a connection opened before
		 * the block must not go on guessing. Right or wrong, the
		 * directory is not asked; the refusal says why and the
		 * connection closes. */
		password_forget(sess);
		sess->result = "refused_blocked";
		mt_slog(MT_LOG_INFO, &sess->log, "login user=%s result=%s",
			mmp_log_name(sess->user), sess->result);
		mmp_session_finish_answer(sess, MT_OUTCOME_LIMIT, "auth_blocked",
					  MMP_ANSWER_BYE_CLIENT_BLOCKED);
		return;
	case MMP_ATTEMPT_WAIT:
		/* The checks under way end within the directory's timeout;
		 * one may block the address. Polled: the turn may come from
		 * another worker's session. */
		if (sess->password == NULL)
			sess->password = mt_xstrdup(password);
		mmp_enter_state(sess, MMP_STATE_LOGIN_WAIT);
		mmp_session_login_timer_at(sess, now + LOGIN_WAIT_MSECS);
		return;
	case MMP_ATTEMPT_OK:
	default:
		break;
	}
	sess->attempt = true;
	mmp_enter_state(sess, MMP_STATE_DIRECTORY);
	sess->dirreq = mt_dirsvc_authenticate(sess->worker->dirsvc, &sess->log,
					      sess->user, password, auth_done, sess);
	/* dirsvc has its own copy. */
	password_forget(sess);
}

void mmp_login_start(struct mmp_session *sess, const char *user,
		     const char *password)
{
	/* The failure's delay runs from here, also through LOGIN_WAIT. */
	sess->login_started_ms = mt_clock_coarse_ms();
	sess->result = NULL;
	sess->shard = NULL;
	sess->rerouted = false;
	if (sess->user != user) {
		free(sess->user);
		sess->user = mt_xstrdup(user);
	}
	login_try(sess, password);
}

/* Did this failure bring the address to auth_fail_limit? */
static bool failure_blocked(const struct mmp_session *sess)
{
	return strcmp(sess->result, "auth_failed_blocked") == 0;
}

/* The failed login's answer, and the session's end with why: IMAP answers
 * the tag, then says why in its BYE; POP3 has one line for the PASS/AUTH,
 * and bye's says both. An address that reached auth_fail_limit hears
 * that, whatever else ends the session. */
static void delay_end(struct mmp_session *sess, enum mt_conn_outcome outcome,
		      const char *end, enum mmp_answer bye)
{
	if (failure_blocked(sess)) {
		outcome = MT_OUTCOME_LIMIT;
		end = "auth_blocked";
		bye = MMP_ANSWER_BYE_BLOCKED;
	}
	if (sess->protocol == MMP_PROTO_IMAP)
		mmp_answer(sess, MMP_ANSWER_AUTH_FAILED);
	mmp_session_finish_answer(sess, outcome, end, bye);
}

/* The delay is over: the answer, and on to the next command, or the end. */
static void delay_done(struct mmp_session *sess)
{
	if (failure_blocked(sess)) {
		delay_end(sess, MT_OUTCOME_LIMIT, "auth_blocked", MMP_ANSWER_BYE_BLOCKED);
		return;
	}
	mmp_answer(sess, MMP_ANSWER_AUTH_FAILED);
	if (mmp_session_error(sess))
		mmp_session_resume(sess);
}

void mmp_login_delay_cut(struct mmp_session *sess, enum mt_conn_outcome outcome,
			 const char *end, enum mmp_answer bye)
{
	/* The delay only slows the next guess, and this session makes none:
	 * answering now tells the client nothing a right password's OK,
	 * given at once, would not have told it already. */
	mt_timer_free(&sess->login_timer);
	delay_end(sess, outcome, end, bye);
}

void mmp_login_timer_fired(struct mmp_session *sess)
{
	if (sess->state == MMP_STATE_LOGIN_WAIT)
		login_try(sess, sess->password);
	else if (sess->state == MMP_STATE_AUTH_DELAY)
		delay_done(sess);
	else if (sess->state == MMP_STATE_BACKEND && sess->backend == NULL)
		site_next(sess);	/* the next pass over the shard's sites */
	/* else the session ended meanwhile (drain, login_timeout) */
}

/* The store's answer to the login, as the client's (IMAP: its tag). */
static void pass_answer(struct mmp_session *sess, const char *line)
{
	if (sess->protocol == MMP_PROTO_IMAP)
		mmp_reply(sess, "%s %s", sess->imap_tag, line);
	else
		mmp_reply(sess, "%s", line);
}

/* The store's refusal of a user whose mailHost is another shard
 * (popstore: "-ERR [SYS/TEMP] This mailbox is not on this server", "NO
 * [UNAVAILABLE] This mailbox is not on this server."; older stores said
 * [SYS/PERM]: the text decides). */
static bool refused_wrong_shard(const char *line)
{
	return strstr(line, "is not on this server") != NULL;
}

/* The directory's second answer: the shard to try instead. */
static void reroute_done(const struct mt_dirsvc_recipient *r, void *context)
{
	struct mmp_session *sess = context;
	struct mmp_shard *stale = sess->shard;

	sess->dirreq = NULL;
	if (r->status != MT_DIRSVC_FOUND || r->account != MT_DIRSVC_ACTIVE) {
		tempfail(sess, "tempfail_route", MMP_ANSWER_SHARD_DOWN,
			 r->reason != NULL ? r->reason : "not an active account");
		return;
	}
	sess->shard = mmp_shards_find(sess->worker->server->shards, r->shard);
	if (sess->shard == NULL || sess->shard == stale) {
		tempfail(sess, "tempfail_route", MMP_ANSWER_SHARD_DOWN,
			 sess->shard == NULL ? "mailHost not in [shards]" :
			 "the directory still names the shard that refused it");
		return;
	}
	backend_start(sess);
}

/* The shard says the user is not its own: the lookup that sent the login
 * there is stale. Drop the user's cached entries (by both names) and ask
 * the directory for the shard again; the password was checked already and
 * is not kept, so a recipient lookup. Once per login. */
static void route_again(struct mmp_session *sess, const char *line)
{
	struct mt_dirsvc_client *dir = sess->worker->dirsvc;

	sess->rerouted = true;
	mt_slog(MT_LOG_INFO, &sess->log, "login user=%s shard=%s route=stale "
		"answer=%s: looking the user up again", sess->user,
		mmp_shard_name(sess->shard), line);
	mt_dirsvc_forget(dir, sess->user);
	if (sess->login_user != NULL)
		mt_dirsvc_forget(dir, sess->login_user);
	mmp_enter_state(sess, MMP_STATE_DIRECTORY);
	sess->dirreq = mt_dirsvc_lookup_recipient(dir, &sess->log, sess->user,
						  reroute_done, sess);
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
		mmp_shard_site_ok(sess->shard, sess->site, sess->protocol);
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
		if (refused_wrong_shard(line)) {
			/* A routing condition: never a permanent answer. */
			if (!sess->rerouted)
				route_again(sess, line);
			else
				tempfail(sess, "tempfail_route", MMP_ANSWER_SHARD_DOWN,
					 "not on this shard either");
			return;
		}
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
		mmp_shard_failed(sess->shard, sess->site, sess->protocol, reason);
		if (mmp_shard_sites(sess->shard) > 1) {
			/* Down, or a replica's refusal: the next site. */
			/* The first pass at info; the polling after it would
			 * repeat every 250 ms. */
			mt_slog(sess->site_pass == 0 ? MT_LOG_INFO : MT_LOG_DEBUG,
				&sess->log, "login user=%s shard=%s "
				"site=%u result=site_failed reason=%s answer=%s",
				mmp_log_name(sess->user), mmp_shard_name(sess->shard),
				sess->site + 1, reason, line != NULL ? line : "-");
			site_next(sess);
			return;
		}
		tempfail(sess, "tempfail_shard", MMP_ANSWER_SHARD_DOWN, reason);
		return;
	}
}

void mmp_login_abort(struct mmp_session *sess)
{
	mt_dirsvc_request_cancel(&sess->dirreq);
	attempt_end(sess);
	password_forget(sess);
	mmp_backend_free(&sess->backend);
}
