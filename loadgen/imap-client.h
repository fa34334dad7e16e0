/* imap-client.h — one IMAP4rev2 client session of the workload
 * (WORKLOAD.md, "The IMAP workload (SPECmail2009-style)"): a desktop
 * client (LOGIN or AUTHENTICATE PLAIN, LIST with SPECIAL-USE, SELECT INBOX
 * with CONDSTORE, the new messages' summaries, then per new message the
 * body, \Seen and one action, IDLE between, a folder visit and a SEARCH
 * once a session, LOGOUT when its time is up; a reply is also handed to
 * the environment's submit_reply, which sends it by SMTP), a
 * webmail/mobile poll (LOGIN, SELECT INBOX, flags CHANGEDSINCE, the newest
 * 20 headers, one body, LOGOUT), the fill of the folder model (CREATE and
 * APPEND), or the delivery probe watcher (IDLE on INBOX, the new messages'
 * id headers to the tracker, then expunged).
 * Every command is a timed step with the step timeout; literals are read
 * and counted, never kept whole; the APPEND literal is generated as the
 * socket drains.
 * Trust boundary: the server's responses (untrusted; see session.h and
 * imap-response.h): anything that is not the response expected is a failed
 * step and a failed session of the right error kind, never a crash or a
 * hang. RFC 9051 (IMAP4rev2), 4959 (SASL-IR), 4616 (PLAIN), 7888
 * (LITERAL+), 2177 (IDLE), 6851 (MOVE), 7162 (CONDSTORE), 6154
 * (SPECIAL-USE), 4315 (UIDPLUS: UID EXPUNGE). */
#ifndef LG_IMAP_CLIENT_H
#define LG_IMAP_CLIENT_H

#include "session.h"

/* Our bound on the new messages handled after one FETCH of them. */
#define LG_IMAP_MAX_NEW 100u

enum lg_imap_profile {
	LG_IMAP_PROFILE_DESKTOP,
	LG_IMAP_PROFILE_WEBMAIL,
	LG_IMAP_PROFILE_FILL,
	/* The delivery probe watcher: logged in, INBOX selected, IDLE (NOOP
	 * every poll_ms without it); each new message's id header fetched and
	 * reported to the tracker, timed at the EXISTS that announced it; the
	 * messages of this run then \Deleted and expunged. Until stopped. */
	LG_IMAP_PROFILE_PROBE,
};

struct lg_imap_params {
	enum lg_imap_profile profile;
	uint64_t user;
	struct lg_imap_plan plan;	/* desktop, webmail */
	/* Desktop: LOGOUT by this monotonic time at the latest (0: only the
	 * plan's length): the run's end bounds a session. */
	uint64_t end_by_us;
	/* Desktop think times are the workload's 1-10 s times this (0: 1);
	 * the unit tests shorten them. */
	double think_scale;
	/* Fill: messages to APPEND to each of lg_imap_folders[]. */
	unsigned int fill_counts[LG_IMAP_FOLDERS];
	/* Probe watcher: NOOP this often without IDLE (0: 1 s). */
	unsigned int poll_ms;
};

struct lg_session *lg_imap_session_start(const struct lg_session_env *env,
					 enum lg_kind kind, struct lg_stats *stats,
					 struct lg_addrs *addrs,
					 const struct lg_imap_params *params,
					 lg_session_done_cb *done, void *context);
/* Log out now: the session's time is up (an IDLE or a wait ends; a
 * command in flight completes first). For the probe watcher, which has
 * no end of its own. */
void lg_imap_session_stop(struct lg_session *session);

#endif
