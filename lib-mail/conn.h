/* conn.h — the connection core under every session type (the MTA's SMTP
 * sessions, the store's LMTP and POP3 sessions, the MMP's client
 * sessions): the bufferevent and its watermarks,
 * the idle timer (which does not run down while the session waits on the
 * daemon; its period can change with the protocol state), the total-session
 * timer, "close once the last reply is written", closing with the
 * tier's release hook, the deferred free (after the callback that closed
 * it has returned, never inside it), the hand-over of the bufferevent to
 * a tier that relays bytes itself (the MMP after login), the notice that
 * a session has gone quiet (no byte for a while: a gauge of idle sessions
 * without a scan), and the list of a daemon's sessions of one kind with
 * its drain and close-all.
 *
 * One timer per session serves every bound, lazily: activity only stamps
 * the coarse clock (no timer is re-armed per read or write); when the
 * timer runs out before a bound is reached, it is armed again for the
 * nearest one. So a relay touching the session on every read costs a
 * clock read, and thousands of idle sessions cost one timer each, never a
 * poll. A goodbye queued by a timeout gets one more idle period to be
 * written before the connection goes regardless.
 *
 *   bufferevent ──read──► ops->input ───(the tier reads lines, replies)
 *               ──write─► ops->output (or ops->input): go on
 *               ──EOF───► ops->eof (the tier finishes pipelined input or closes)
 *   idle timer ─────────► ops->busy? restart : ops->idle_timeout, close
 *                         once written (the period may change per state)
 *   session timer ──────► ops->session_timeout, close once written
 *   mt_conn_close ──────► ops->closed (log line, cancel requests), the
 *                         bufferevent freed (unless taken), unlinked,
 *                         ops->free posted
 *   mt_conn_take_bev ───► the tier has the bufferevent (its callbacks, its
 *                         free); timers, list and close stay the core's
 *   quiet period ───────► ops->quiet(true) after that long without
 *                         activity; ops->quiet(false) at the next activity
 *                         or at close
 *   mt_conn_quickack ───► once the output is written: TCP_QUICKACK, the
 *                         peer's next segments ACKed at once
 *
 * Every close names its outcome (enum mt_conn_outcome: how the session
 * ended, for the metrics) beside its reason (free text for the log line).
 * The first decision to end the session is the one kept: a QUIT whose
 * goodbye is then cut off by a write error stays "quit"; the core's own
 * timers record "timeout" before they ask the tier for its goodbye. The
 * tier reads it with mt_conn_outcome() in ops->closed.
 *
 * A tier's session embeds a struct mt_conn and gets back to itself with
 * MT_CONN_OWNER(). The core does not read lines itself: protocols differ
 * in what a line may hold (lib/lineio reads them, a tier's process loop
 * runs the commands, lib/dotcodec and literal readers take message data).
 *
 * Trust boundary: the peer's bytes stay in the bufferevent's input, which
 * holds at most input_high octets before reading pauses (the tier's
 * pipelining bound); output that the peer does not read stops the tier's
 * processing above its own high mark (the tier checks
 * mt_conn_output_pending()). No protocol data is interpreted here.
 *
 * Threading: one loop's thread, as the bufferevent. */
#ifndef MT_CONN_H
#define MT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bufferevent;
struct evbuffer;
struct mt_conn;
struct mt_loop;
struct mt_timer;

/* How a session ended: mailtier_sessions_closed_total's outcome label
 * (mt_conn_outcome_names), one small set for every daemon and protocol.
 * Chosen where the decision to end the session is made, never derived
 * from the log line's reason. */
enum mt_conn_outcome {
	MT_OUTCOME_QUIT,		/* the client's QUIT or LOGOUT */
	MT_OUTCOME_CLIENT_CLOSED,	/* the client closed the connection
					 * without one (EOF, also mid-command) */
	MT_OUTCOME_TIMEOUT,		/* idle period or total session time */
	MT_OUTCOME_ERROR,		/* socket or TLS error, a store or
					 * write failure on our side */
	MT_OUTCOME_LIMIT,		/* ended by us for the client's conduct:
					 * too many errors, junk commands or
					 * failed logins, a protocol violation */
	MT_OUTCOME_REFUSED,		/* turned away at connect (connection
					 * limits, a blocked address) */
	MT_OUTCOME_SHUTDOWN,		/* the daemon's drain or stop */
	MT_OUTCOME_BACKEND_CLOSED,	/* a proxy's relayed session that the
					 * backend (the store) ended: after the
					 * client's QUIT/LOGOUT, or the store's
					 * own timeout or error — the proxy does
					 * not read the relayed stream */
	MT_OUTCOME_COUNT
};

extern const char *const mt_conn_outcome_names[MT_OUTCOME_COUNT];

/* The session struct that embeds conn as its member. */
#define MT_CONN_OWNER(conn, type, member) \
	((type *)((char *)(conn) - offsetof(type, member)))

struct mt_conn_ops {
	/* Input arrived, or output the tier waited for drained: run what
	 * the input holds. */
	void (*input)(struct mt_conn *conn);
	/* Optional: the output drained to output_low (all of it when 0):
	 * stream more of a long reply, or switch to TLS once nothing is
	 * pending. Without it, input runs. */
	void (*output)(struct mt_conn *conn);
	/* Optional: the TLS handshake has completed. */
	void (*connected)(struct mt_conn *conn);
	/* The peer closed its side (error false) or the socket failed;
	 * reading has stopped. The tier closes, or first runs what was
	 * pipelined before the end. */
	void (*eof)(struct mt_conn *conn, bool error);
	/* Optional: the idle timer ran out while the session waits on the
	 * daemon (a directory or store request), not on the peer: true
	 * restarts the timer. */
	bool (*busy)(struct mt_conn *conn);
	/* The peer was idle too long: queue the goodbye; the core then
	 * closes once it is written (reason "idle-timeout", unless the tier
	 * closed with its own). */
	void (*idle_timeout)(struct mt_conn *conn);
	/* Optional (with mt_conn_set_lifetime): the session has lasted its
	 * whole allowed time; as idle_timeout (reason "session-time"). */
	void (*session_timeout)(struct mt_conn *conn);
	/* Optional (with mt_conn_set_quiet): true once the session has gone
	 * its quiet period without activity, false at its next activity or
	 * when it closes (before closed): every true is followed by one false. */
	void (*quiet)(struct mt_conn *conn, bool quiet);
	/* Closing: the end-of-session log line, cancel what is in flight.
	 * The session is off its list already; the bufferevent is still
	 * there (and freed right after); mt_conn_outcome() says how it
	 * ended. */
	void (*closed)(struct mt_conn *conn, const char *reason);
	/* After the callback that closed the session has returned; for a
	 * session closed at shutdown, as late as the loop's own free, after
	 * the daemon's stop: release the session's own memory only. */
	void (*free)(struct mt_conn *conn);
};

/* A daemon's sessions of one kind. */
struct mt_conn_list {
	struct mt_conn *head;
	unsigned int count;
};

struct mt_conn {
	struct mt_conn *prev, *next;
	struct mt_conn_list *list;
	struct mt_loop *loop;
	const struct mt_conn_ops *ops;
	struct bufferevent *bev;	/* NULL once closed or taken */
	struct mt_timer *timer;		/* the idle period and the lifetime */
	uint64_t life_end_ms;		/* coarse clock; 0: no lifetime */
	uint64_t active_ms;		/* last activity (coarse clock) */
	uint64_t idle_msecs;		/* the idle period */
	uint64_t quiet_msecs;		/* the quiet period; 0: none */
	size_t input_high, output_low;
	const char *close_reason;
	enum mt_conn_outcome outcome;	/* once outcome_set */
	bool outcome_set;
	bool quiet;			/* ops->quiet(true) said, false not yet */
	bool quickack;			/* TCP_QUICKACK once the output is written */
	bool closing;			/* close once the output is written */
	bool closed;
};

/* Take bev (its callbacks become the core's), add conn to list, start the
 * idle timer. input_high: the most input read ahead (0: no bound);
 * output_low: the write callback's mark (0: when all is written). */
void mt_conn_start(struct mt_conn *conn, struct mt_conn_list *list,
		   struct mt_loop *loop, struct bufferevent *bev,
		   const struct mt_conn_ops *ops, uint64_t idle_msecs,
		   size_t input_high, size_t output_low);
/* STARTTLS gave the connection a new bufferevent (the old one is the TLS
 * layer's now): the same callbacks and marks on it. */
void mt_conn_set_bev(struct mt_conn *conn, struct bufferevent *bev);
struct evbuffer *mt_conn_input(struct mt_conn *conn);
struct evbuffer *mt_conn_output(struct mt_conn *conn);
size_t mt_conn_output_pending(struct mt_conn *conn);
/* Activity the core does not see (a reply sent, bytes relayed by a tier
 * that took the bufferevent): the idle period counts from now. Cheap: a
 * coarse clock read. */
void mt_conn_touch(struct mt_conn *conn);
/* The idle period from now on (a protocol state with its own timeout,
 * RFC 5321 4.5.3.2); restarts the countdown. */
void mt_conn_set_idle(struct mt_conn *conn, uint64_t msecs);
/* End the session msecs from now whatever it does (ops->session_timeout);
 * 0: no such bound (any set before is cancelled). */
void mt_conn_set_lifetime(struct mt_conn *conn, uint64_t msecs);
/* Tell ops->quiet when the session has gone msecs without activity (a
 * byte read or written by the core, or mt_conn_touch) and when it is
 * active again: the count of quiet sessions is kept as they change, never
 * by a scan. The idle timer serves it (one wake-up per quiet period of
 * an active session). 0: no more (a quiet session is reported active
 * first). */
void mt_conn_set_quiet(struct mt_conn *conn, uint64_t msecs);
/* The tier takes the bufferevent over (a relay with callbacks of its own,
 * or splice(2) on its socket): the core no longer touches it, and closing
 * does not free it (ops->closed releases it). The session stays open, on
 * its list, with its timers; activity is reported with mt_conn_touch().
 * Not while closing. */
struct bufferevent *mt_conn_take_bev(struct mt_conn *conn);
/* A reply was queued that the peer answers with bulk data it may send in
 * two writes with Nagle on (an IMAP continuation request: Python's
 * imaplib sends a literal and then its CRLF): once the reply is written,
 * set TCP_QUICKACK on the socket so that the kernel ACKs the peer's
 * segments as we read them instead of delaying the ACK up to 40 ms in
 * the hope of a reply to carry it, which the peer's Nagle waits for
 * (RFC 1122 4.2.3.2 delayed ACK, RFC 896). Linux leaves quick-ACK mode
 * again whenever we send soon after receiving, so it is set after the
 * write, and anew for each such reply (Dovecot does the same after its
 * "+ OK"). No effect on other sockets (UNIX) or other systems; the
 * environment's MAILTIER_TCP_QUICKACK=no turns it off (to measure it). */
void mt_conn_quickack(struct mt_conn *conn);
/* The same for a socket that is not a session's (a relay's, a filter's),
 * at once: call it after the write. false when it was not set. */
bool mt_conn_quickack_fd(int fd);

/* Stop reading; close once the queued output is written (at once if it
 * is, so conn may be closed when this returns). Idempotent; outcome is
 * kept unless one was recorded before. */
void mt_conn_close_after(struct mt_conn *conn, enum mt_conn_outcome outcome,
			 const char *reason);
/* Close now: ops->closed, free the bufferevent and the timer, unlink,
 * post ops->free. Idempotent; outcome as mt_conn_close_after. */
void mt_conn_close(struct mt_conn *conn, enum mt_conn_outcome outcome,
		   const char *reason);
/* How the session ended (the first outcome recorded; ops->closed reads
 * it). */
enum mt_conn_outcome mt_conn_outcome(const struct mt_conn *conn);
bool mt_conn_is_closed(const struct mt_conn *conn);
bool mt_conn_is_closing(const struct mt_conn *conn);

/* Call fn for every session of list (fn may close it). */
void mt_conn_list_each(struct mt_conn_list *list, void (*fn)(struct mt_conn *conn));
/* Close every session of list now (shutdown: MT_OUTCOME_SHUTDOWN). */
void mt_conn_list_close_all(struct mt_conn_list *list, const char *reason);

#endif
