/* imap-script.c — the IMAP session profiles (WORKLOAD.md, "The IMAP
 * workload (SPECmail2009-style)"): which command follows the one that
 * just completed, for the desktop client, the webmail/mobile poll, the
 * fill of the folder model and the delivery probe watcher. The draws that
 * depend on what the server showed (per new message: think time, action,
 * reply size and recipient; the folder visited) come from the session's
 * own stream in the order the messages come, so a run is repeatable
 * against the same mailboxes.
 * Trust boundary: counts and UIDs from the server (capped by
 * imap-client.c) only choose among our commands.
 * RFC 9051 (the commands), RFC 2177 (IDLE), RFC 6851 (MOVE). */
#include "imap-private.h"

/* Login, after the greeting and a CAPABILITY where it was needed. A
 * desktop client uses AUTHENTICATE PLAIN where it is offered (as
 * Thunderbird does), webmail and the fill LOGIN. */
static enum imap_cmd login(struct lg_imap_session *s)
{
	if (!s->caps_known && s->cmd != IC_CAPABILITY)
		return IC_CAPABILITY;
	if (s->base.env->starttls && !s->tls) {
		if (s->caps & CAP_STARTTLS)
			return IC_STARTTLS;
		lg_session_fail(&s->base, LG_ERR_REJECTED, "--tls: no STARTTLS offered");
		return IC_DONE;
	}
	if (s->caps & CAP_LOGINDISABLED) {
		/* RFC 9051 6.2.3: no LOGIN (nor PLAIN) without TLS here. */
		lg_session_fail(&s->base, LG_ERR_REJECTED, "server says LOGINDISABLED");
		return IC_DONE;
	}
	return s->profile == LG_IMAP_PROFILE_DESKTOP && (s->caps & CAP_AUTH_PLAIN) ?
		IC_AUTHENTICATE : IC_LOGIN;
}

/* The first command of the profile once logged in. */
static enum imap_cmd first(struct lg_imap_session *s)
{
	switch (s->profile) {
	case LG_IMAP_PROFILE_DESKTOP:
		return IC_LIST;
	case LG_IMAP_PROFILE_WEBMAIL:
		return IC_SELECT_INBOX;
	case LG_IMAP_PROFILE_FILL:
		s->fill_folder = 0;
		return IC_CREATE;
	case LG_IMAP_PROFILE_PROBE:
		return IC_SELECT_INBOX;
	}
	return IC_LOGOUT;
}

/* Login and the capabilities that come with it (RFC 9051 6.2.2: a server
 * may list them in the tagged OK; else we ask). */
static enum imap_cmd after_login(struct lg_imap_session *s)
{
	return s->caps_fresh ? first(s) : IC_CAPABILITY;
}

/* ---- desktop ---- */

static double uniform(struct lg_rng *rng, double lo, double hi)
{
	return lo + (hi - lo) * lg_rng_uniform(rng);
}

/* The next new message after a think time, or IDLE when none is left,
 * or LOGOUT when the session's time is up. */
static enum imap_cmd next_message(struct lg_imap_session *s)
{
	uint64_t left = lg_imap_time_left_ms(s);

	if (left == 0)
		return IC_LOGOUT;
	if (s->uid_index < s->n_uids) {
		double scale = s->params.think_scale > 0 ? s->params.think_scale : 1;
		uint64_t think = (uint64_t)(uniform(&s->rng, LG_IMAP_THINK_MIN_S,
						    LG_IMAP_THINK_MAX_S) * scale * 1000);
		lg_imap_wait(s, WAIT_THINK, think < left ? think : left);
		return IC_WAIT;
	}
	if (s->caps & CAP_IDLE)
		return IC_IDLE;
	/* Our choice: without IDLE the client stays connected, idle, until
	 * its time is up. */
	lg_imap_wait(s, WAIT_END, left);
	return IC_WAIT;
}

static enum imap_cmd message_done(struct lg_imap_session *s)
{
	s->uid_index++;
	return next_message(s);
}

/* One action per message read (WORKLOAD.md: delete 5%, move 5%, reply
 * 20%); a move where MOVE is not offered does nothing. */
static enum imap_cmd action(struct lg_imap_session *s)
{
	double r = lg_rng_uniform(&s->rng);

	if (r < LG_IMAP_DELETE_SHARE)
		return IC_STORE_DELETED;
	r -= LG_IMAP_DELETE_SHARE;
	if (r < LG_IMAP_MOVE_SHARE) {
		s->folder = LG_IMAP_SPECIAL_FOLDERS +
			(unsigned int)lg_rng_below(&s->rng, LG_IMAP_FOLDERS - LG_IMAP_SPECIAL_FOLDERS);
		return s->caps & CAP_MOVE ? IC_MOVE : message_done(s);
	}
	r -= LG_IMAP_MOVE_SHARE;
	if (r < LG_IMAP_REPLY_SHARE)
		return IC_APPEND_REPLY;
	return message_done(s);
}

/* Our choice (WORKLOAD.md: "reply ... and an SMTP submission"): the
 * reply goes back to the message's sender when that is one of our users
 * or remote correspondents (its ENVELOPE's From); otherwise it is
 * addressed as a local user's message is, to a remote correspondent with
 * LG_REMOTE_RCPT_SHARE (90%), else to one of our users. Its size is from
 * the size table. Draws in a fixed order whatever the sender: size,
 * correspondent, the remote share, a user. */
void lg_imap_reply_plan(struct lg_imap_session *s, struct lg_message_plan *plan)
{
	uint64_t size = lg_workload_message_size(&s->rng);
	uint64_t other = 1 + lg_rng_below(&s->rng, LG_REMOTE_USERS);
	bool remote = lg_rng_uniform(&s->rng) < LG_REMOTE_RCPT_SHARE;
	uint64_t local = lg_workload_pick_user(s->base.env->wl, &s->rng);
	struct lg_rcpt to = { .remote = remote, .user = remote ? other : local };

	if (s->uid_index < s->n_uids && s->senders[s->uid_index].known)
		to = (struct lg_rcpt){ .remote = s->senders[s->uid_index].remote,
				       .user = s->senders[s->uid_index].user };
	*plan = (struct lg_message_plan){
		.from_remote = false, .reply = true, .sender = s->params.user,
		.size = size, .n_rcpts = 1,
		.n_local = to.remote ? 0 : 1, .n_remote = to.remote ? 1 : 0,
		.rcpts = { to },
	};
}

static enum imap_cmd after_new(struct lg_imap_session *s)
{
	if (s->fetch_max_uid > s->known_max_uid)
		s->known_max_uid = s->fetch_max_uid;
	if (s->params.plan.search != LG_IMAP_SEARCH_NONE && !s->searched) {
		s->searched = true;
		return IC_SEARCH;
	}
	return next_message(s);
}

static enum imap_cmd desktop_next(struct lg_imap_session *s, enum imap_wait woke)
{
	if (woke == WAIT_THINK)
		return lg_imap_time_left_ms(s) > 0 ? IC_FETCH_BODY : IC_LOGOUT;
	if (woke == WAIT_END)
		return IC_LOGOUT;
	switch (s->cmd) {
	case IC_LIST:
		if (!s->params.plan.visit_folder)
			return IC_SELECT_INBOX;
		s->folder = LG_IMAP_SPECIAL_FOLDERS +
			(unsigned int)lg_rng_below(&s->rng, LG_IMAP_FOLDERS - LG_IMAP_SPECIAL_FOLDERS);
		return IC_SELECT_FOLDER;
	case IC_SELECT_FOLDER:
		return s->exists > 0 ? IC_FETCH_FOLDER_HEADERS : IC_SELECT_INBOX;
	case IC_FETCH_FOLDER_HEADERS:
		return IC_SELECT_INBOX;
	case IC_SELECT_INBOX:
		s->n_uids = s->uid_index = 0;
		return s->exists > 0 ? IC_FETCH_NEW : after_new(s);
	case IC_FETCH_NEW:
		return after_new(s);
	case IC_SEARCH:
		return next_message(s);
	case IC_FETCH_BODY:
		return IC_STORE_SEEN;
	case IC_STORE_SEEN:
		return action(s);
	case IC_STORE_DELETED:
		return IC_EXPUNGE;
	case IC_APPEND_REPLY:
		return IC_STORE_ANSWERED;
	case IC_EXPUNGE:
	case IC_MOVE:
	case IC_STORE_ANSWERED:
		return message_done(s);
	case IC_IDLE:
		/* Woken by new mail, or the session's time is up. */
		return lg_imap_time_left_ms(s) > 0 ? IC_FETCH_NEW : IC_LOGOUT;
	default:
		return IC_LOGOUT;
	}
}

/* ---- webmail / mobile ---- */

static enum imap_cmd webmail_next(struct lg_imap_session *s)
{
	switch (s->cmd) {
	case IC_SELECT_INBOX:
		return s->exists > 0 ? IC_FETCH_CHANGED : IC_LOGOUT;
	case IC_FETCH_CHANGED:
		return IC_FETCH_NEWEST;
	case IC_FETCH_NEWEST:
		return IC_FETCH_NEWEST_BODY;
	default:
		return IC_LOGOUT;
	}
}

/* ---- the probe watcher: INBOX selected, each round the id headers of
 * what is new, ours deleted, then IDLE (or NOOP every poll) until more
 * arrives; LOGOUT once stopped ---- */

static enum imap_cmd probe_wait(struct lg_imap_session *s)
{
	if (lg_imap_time_left_ms(s) == 0)
		return IC_LOGOUT;
	if (s->exists_since_fetch || s->probe_more)
		return IC_PROBE_FETCH;
	if (s->caps & CAP_IDLE)
		return IC_IDLE;
	lg_imap_wait(s, WAIT_POLL, s->params.poll_ms > 0 ? s->params.poll_ms : 1000);
	return IC_WAIT;
}

static enum imap_cmd probe_next(struct lg_imap_session *s, enum imap_wait woke)
{
	if (woke == WAIT_POLL)
		return lg_imap_time_left_ms(s) > 0 ? IC_NOOP : IC_LOGOUT;
	switch (s->cmd) {
	case IC_SELECT_INBOX:
		/* Whatever is there (probes delivered while no watcher ran). */
		return s->exists > 0 ? IC_PROBE_FETCH : probe_wait(s);
	case IC_PROBE_FETCH:
		lg_imap_probe_round_end(s);
		return s->n_uids > 0 ? IC_PROBE_DELETE : probe_wait(s);
	case IC_PROBE_DELETE:
		return IC_PROBE_EXPUNGE;
	default:	/* IC_PROBE_EXPUNGE, IC_NOOP, IC_IDLE */
		return probe_wait(s);
	}
}

/* ---- fill: CREATE each folder (one that is there is fine), then the
 * planned APPENDs to each ---- */

static enum imap_cmd next_append(struct lg_imap_session *s)
{
	while (s->fill_folder < LG_IMAP_FOLDERS &&
	       s->fill_done >= s->params.fill_counts[s->fill_folder]) {
		s->fill_folder++;
		s->fill_done = 0;
	}
	return s->fill_folder < LG_IMAP_FOLDERS ? IC_APPEND_FILL : IC_LOGOUT;
}

static enum imap_cmd fill_next(struct lg_imap_session *s)
{
	switch (s->cmd) {
	case IC_CREATE:
		if (++s->fill_folder < LG_IMAP_FOLDERS)
			return IC_CREATE;
		s->fill_folder = 0;
		s->fill_done = 0;
		return next_append(s);
	case IC_APPEND_FILL:
		s->fill_done++;
		return next_append(s);
	default:
		return IC_LOGOUT;
	}
}

enum imap_cmd lg_imap_script_next(struct lg_imap_session *s)
{
	enum imap_wait woke = s->wait;

	s->wait = WAIT_NONE;
	switch (s->cmd) {
	case IC_GREETING:
		return s->logged_in ? after_login(s) : login(s);
	case IC_CAPABILITY:
		return s->logged_in ? first(s) : login(s);
	case IC_STARTTLS:
		return IC_CAPABILITY;
	case IC_LOGIN:
	case IC_AUTHENTICATE:
		return after_login(s);
	case IC_LOGOUT:
		return IC_DONE;
	default:
		break;
	}
	switch (s->profile) {
	case LG_IMAP_PROFILE_DESKTOP:
		return desktop_next(s, woke);
	case LG_IMAP_PROFILE_WEBMAIL:
		return webmail_next(s);
	case LG_IMAP_PROFILE_FILL:
		return fill_next(s);
	case LG_IMAP_PROFILE_PROBE:
		return probe_next(s, woke);
	}
	return IC_LOGOUT;
}
