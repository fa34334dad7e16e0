/* imap-session.h — an IMAP connection of mailtier-popstore, shared by the
 * session code (imap-session.c: socket, TLS, reading commands and
 * literals, replies, life cycle), the login (imap-auth.c) and the
 * commands of the authenticated and selected states (imap-commands.c,
 * imap-mailbox.c, imap-message.c, imap-fetch.c).
 *
 * Trust boundary: every byte comes from an IMAP client — the MMP on a
 * proxy address, or a user directly. Commands are read by lib-mail's
 * imap-parse within the limits here (a line, a literal, a whole command,
 * list nesting, argument count); mailbox names are checked by
 * lib-mail/imap-mailbox before the store sees them; credentials go only
 * to login.c.
 * RFC 9051 (IMAP4rev2, IMAP4rev1 clients served as its Appendix E says),
 * RFC 7888 (LITERAL+), RFC 4959 (SASL-IR), RFC 2971 (ID), RFC 5161
 * (ENABLE), RFC 6154 (SPECIAL-USE), RFC 8314 (implicit TLS). */
#ifndef MT_IMAP_SESSION_H
#define MT_IMAP_SESSION_H

#include "popstore.h"
#include "authfail.h"
#include "buf.h"
#include "command.h"
#include "conn.h"
#include "imap-login.h"
#include "imap-parse.h"
#include "lineio.h"
#include "log.h"
#include "login.h"
#include "loop.h"
#include "store/store.h"
#include "watch.h"

#include <stdbool.h>
#include <stdint.h>


/* A command line (literals not counted): RFC 7162 4 asks for at least
 * 8192; long UID sets from clients that resynchronise need more. */
#define IMAP_LINE_MAX (64 * 1024)
/* A whole command other than APPEND's message, and its arguments. */
#define IMAP_COMMAND_MAX (256 * 1024)
/* One literal other than APPEND's message (a SEARCH string, a name). */
#define IMAP_LITERAL_MAX (64 * 1024)
#define IMAP_DEPTH_MAX 16
#define IMAP_ARGS_MAX 4096
/* AUTHENTICATE's response line. */
#define IMAP_SASL_LINE_MAX 2048
/* Replies are produced while the output holds less than this. */
#define IMAP_OUTPUT_LOW (64 * 1024)

/* RFC 9051 3: the connection's states, plus the moments it waits. */
enum imap_state {
	IMAP_STATE_NOT_AUTH,
	IMAP_STATE_SASL,	/* AUTHENTICATE: waiting for the response line */
	IMAP_STATE_LOGIN,	/* the credentials' check, the first-login folders */
	IMAP_STATE_STARTTLS,	/* tagged OK queued; TLS once it is written */
	IMAP_STATE_AUTH,
	IMAP_STATE_SELECTED,
	IMAP_STATE_WAIT,	/* a command waits on the store */
	IMAP_STATE_IDLE,	/* IDLE: updates pushed until DONE */
	IMAP_STATE_LOGOUT,	/* BYE queued; close once written */
	IMAP_STATE_COUNT
};

extern const char *const imap_state_names[IMAP_STATE_COUNT];

/* The selected mailbox: the store's snapshot and this session's view of
 * it (message sequence number n is snapshot index view[n - 1]; an
 * EXPUNGE takes entries out). */
struct imap_selected {
	struct mt_store_mailbox *mbox;
	char *name;			/* as the client named it (normal form) */
	bool read_only;			/* EXAMINE */
	unsigned int *view;
	unsigned int count;
};

struct imap_fetch;
struct imap_search_run;

struct imap_session {
	struct mt_conn conn;		/* socket, idle timer, list (lib-mail) */
	struct popstore *ps;
	struct mt_logctx log;
	char peer[MT_SOCKADDR_STRLEN];
	char peer_ip[MT_AUTHFAIL_KEY_MAX];	/* no port; "" if not IP */
	bool from_proxy;		/* peer is in proxy_addresses */
	bool user_counted;		/* in imap_max_user_sessions' count */
	bool tls;			/* TLS is on (STARTTLS done or implicit) */

	enum imap_state state;
	enum imap_state resume_state;	/* after IMAP_STATE_WAIT */
	struct mt_imap_parser parser;
	/* The parsed command is still running (it waits on the store or
	 * the directory): the parser is reset when it ends, not before, as
	 * its arguments point into the parser's buffers. */
	bool command_held;
	bool command_not_auth;		/* ... and is wiped then (a LOGIN) */
	bool dispatching;		/* in imap_command_dispatch */
	/* An APPEND's message as it arrives (imap-parse's STREAM): written
	 * into the store a chunk at a time, delivered by APPEND
	 * (imap_append_body_take) or aborted; a second streamed literal in
	 * one command is read and dropped (the command is refused). */
	struct mt_store_body *append_body;
	bool append_discard;
	struct mt_line_reader reader;	/* AUTHENTICATE's response line */
	struct mt_buf line;
	unsigned int errors;
	bool drain;
	bool input_eof;			/* the client closed its side */

	struct mt_imap_login login_phase;	/* imap-auth.c's ops */
	struct popstore_login verify;	/* the credentials' check (login.c) */
	char login_tag[MT_IMAP_TAG_MAX + 1];	/* LOGIN/AUTHENTICATE's */
	char *user;			/* the authenticated mailbox owner */
	uint64_t quota;			/* bytes (directory, or default_quota); 0: none */
	struct mt_dirsvc_request *dir_req;	/* the quota's lookup at login */
	bool utf8;			/* ENABLE UTF8=ACCEPT (or IMAP4rev2) */
	bool rev2;			/* ENABLE IMAP4rev2 */
	bool qresync;			/* ENABLE QRESYNC: VANISHED, not EXPUNGE */
	/* SELECT (QRESYNC (uidvalidity modseq [known-uids])): asked for. */
	bool qresync_select;
	uint32_t qresync_uidvalidity;
	uint64_t qresync_modseq;
	char *qresync_known;		/* known-uids set, or NULL */
	bool condstore;			/* RFC 7162 3.1: enabled (ENABLE, SELECT
					   (CONDSTORE), a MODSEQ item or
					   CHANGEDSINCE / UNCHANGEDSINCE) */

	/* The command waiting on the store, and what it needs after. */
	struct mt_store_req *store_req;
	/* Its own state (IMAP_STORE_CALL), freed here if the session closes
	 * first: a cancelled request is never called back. */
	struct imap_store_call {
		mt_store_cb_t *cb;
		void *op;
		void (*op_free)(void *op);
	} store_call;
	char tag[MT_IMAP_TAG_MAX + 1];
	char *arg_name;			/* its mailbox name (normal form) */
	unsigned int status_items;	/* STATUS: IMAP_STATUS_* */
	bool examine;

	struct imap_selected selected;
	/* Changes made elsewhere (imap-idle.c): the watch on the selected
	 * mailbox, a re-read of it in flight, NOOP/CHECK waiting for it,
	 * IDLE's tag and the state it returns to. */
	struct popstore_watch watch;
	bool stale;
	struct mt_store_req *refresh_req;
	bool noop_pending;
	/* The tagged OK's text (after "OK ") once the refresh is done:
	 * "NOOP completed.", an APPEND's "[APPENDUID v u] APPEND completed." */
	char refresh_reply[96];
	char idle_tag[MT_IMAP_TAG_MAX + 1];
	enum imap_state idle_from;
	struct imap_fetch *fetch;	/* a FETCH being streamed */
	struct imap_search_run *search;	/* a SEARCH reading messages */
	struct mt_commands commands;	/* lib-mail/command: counters */
};

/* imap-session.c */
void imap_enter_state(struct imap_session *s, enum imap_state state);
struct evbuffer *imap_output(struct imap_session *s);
/* One line (CRLF added); untagged lines start "* ". */
void imap_line(struct imap_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A tagged OK / NO / BAD (the command's final reply); a BAD through
 * imap_error counts towards max_errors, a NO does not (README: bad
 * commands and failed logins count). */
void imap_tagged(struct imap_session *s, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void imap_error(struct imap_session *s, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void imap_error_line(struct imap_session *s, const char *line);
/* NO [AUTHENTICATIONFAILED] for tag; counts towards max_errors. */
void imap_login_failed(struct imap_session *s, const char *tag);
void imap_close_after(struct imap_session *s, enum mt_conn_outcome outcome,
		      const char *reason);
/* A command waits on the store (or the directory): read nothing more. */
void imap_wait(struct imap_session *s);
/* It is done: back to the state it came from, go on with pipelined input. */
void imap_resume(struct imap_session *s);
void imap_resume_in(struct imap_session *s, enum imap_state state);
bool imap_plaintext_ok(const struct imap_session *s);
/* The APPEND's streamed message (the caller delivers or aborts it), or
 * NULL if none streamed. */
struct mt_store_body *imap_append_body_take(struct imap_session *s);
/* Logged in: the limits of the authenticated state from the next command
 * on (before it, lib-mail's mt_imap_login_limits), and imap_idle_timeout
 * instead of login_timeout. */
void imap_authenticated(struct imap_session *s);
/* Switch the socket to TLS once the tagged OK is written (STARTTLS). */
void imap_starttls_pending(struct imap_session *s);
/* The callback and context of s->store_req for a command whose state op
 * (heap) its callback cb frees: if the session closes before cb runs,
 * op_free(op) frees it instead.
 *	s->store_req = mt_store_copy(port, mbox, &args,
 *				     IMAP_STORE_CALL(s, copy_done, op, op_free));
 * Two arguments: the trampoline and the session it calls cb(req, op) for. */
#define IMAP_STORE_CALL(s, cb, op, op_free) \
	imap_store_call_back, imap_store_call_arm((s), (cb), (op), (op_free))
void imap_store_call_back(struct mt_store_req *req, void *session);
struct imap_session *imap_store_call_arm(struct imap_session *s, mt_store_cb_t *cb,
					 void *op, void (*op_free)(void *op));
/* The store failed: BYE, close, and the daemon exits for recovery. */
void imap_store_fatal(struct imap_session *s, const char *tag, const char *error);

/* imap-commands.c */
void imap_command_dispatch(struct imap_session *s, const struct mt_imap_command *cmd);
/* The post-login capabilities (a CAPABILITY response's list). */
const char *imap_capabilities_auth(const struct imap_session *s);

/* imap-mailbox.c (SELECT and the mailbox commands) */
void imap_cmd_select(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_examine(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_create(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_delete(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_rename(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_subscribe(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_unsubscribe(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_list(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_lsub(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_status(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_close(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_unselect(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_selected_reset(struct imap_session *s);
/* A mailbox name (normal form, UTF-8) as this client reads it. */
void imap_write_name(struct mt_buf *out, const struct imap_session *s,
		     const char *name);
/* The mailbox name argument in normal form into out (NUL-terminated);
 * false, and the refusal sent, if it is not one. */
bool imap_mailbox_arg(struct imap_session *s, const char *tag,
		      const struct mt_imap_arg *arg, struct mt_buf *out);
/* A store refusal as IMAP's response code (RFC 9051 7.1) for tag. */
void imap_store_failed(struct imap_session *s, const char *tag,
		       enum mt_store_status status, const char *error);

/* imap-fetch.c */
void imap_cmd_fetch(struct imap_session *s, const struct mt_imap_command *cmd,
		    bool uid);
/* Produce more of a FETCH if the output has room (write progress). */
void imap_fetch_continue(struct imap_session *s);
void imap_fetch_free(struct imap_session *s);
bool imap_fetch_busy(const struct imap_session *s);

/* imap-search.c */
void imap_cmd_search(struct imap_session *s, const struct mt_imap_command *cmd,
		     bool uid);
void imap_search_free(struct imap_session *s);
/* SORT's and THREAD's criteria: matched as SEARCH matches them, the
 * matches' view positions (ascending, taken by the callback) or a
 * failure's tagged reply text handed to done; async tells whether the
 * store was waited on. false, the refusal sent and context_free(context)
 * called, if args are not criteria. */
typedef void imap_search_done_t(struct imap_session *s, void *context, uint32_t *positions,
				unsigned int count, const char *failure, bool async);
bool imap_search_filter(struct imap_session *s, const char *tag,
			const struct mt_imap_arg *args, size_t count,
			imap_search_done_t *done, void *context,
			void (*context_free)(void *context));

/* imap-sort.c (SORT, THREAD) */
void imap_cmd_sort(struct imap_session *s, const struct mt_imap_command *cmd, bool uid);
void imap_cmd_thread(struct imap_session *s, const struct mt_imap_command *cmd, bool uid);
/* SORT's and THREAD's charset argument: false and the refusal sent if it
 * is not one this store reads (UTF-8, US-ASCII). */
bool imap_sort_charset(struct imap_session *s, const char *tag, const struct mt_imap_arg *arg);

/* imap-message.c (the selected state's other commands) */
/* The view's positions (0-based) named by a sequence set (uid: a UID set)
 * into *positions_r (freed by the caller), *count_r of them; false, and
 * BAD sent, if arg is not a set. */
bool imap_set_arg(struct imap_session *s, const char *tag,
		  const struct mt_imap_arg *arg, bool uid,
		  unsigned int **positions_r, unsigned int *count_r);
const struct mt_store_msg *imap_view_msg(const struct imap_session *s,
					 unsigned int position);
void imap_cmd_store(struct imap_session *s, const struct mt_imap_command *cmd,
		    bool uid);
void imap_cmd_copy(struct imap_session *s, const struct mt_imap_command *cmd,
		   bool uid, bool move);
void imap_cmd_expunge(struct imap_session *s, const struct mt_imap_command *cmd,
		      bool uid);
void imap_cmd_uid(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_append(struct imap_session *s, const struct mt_imap_command *cmd);
/* Where a message's header ends (after its empty line) in its first len
 * octets, or 0 if not within them. */
size_t imap_header_end(const char *p, size_t len);
/* " FLAGS (...)" of msg (its system flags and keywords) appended. */
void imap_flags_write(struct mt_buf *out, const struct mt_store_mailbox *mbox,
		      const struct mt_store_msg *msg);

/* Take the view's messages whose uid is gone out: "* n EXPUNGE" each,
 * highest first so every number is right when it is read, or one
 * "* VANISHED set" with QRESYNC (RFC 9051 7.5.1, RFC 7162 3.2.10). */
void imap_view_expunge(struct imap_session *s,
		       bool (*gone)(uint32_t uid, const void *context),
		       const void *context);
/* "* VANISHED [(EARLIER) ]set" of sorted uids (RFC 7162 3.2.10), or the
 * EXPUNGEs of sequence numbers when QRESYNC is not enabled. */
void imap_vanished_line(struct imap_session *s, bool earlier, const uint32_t *uids,
			unsigned int count);

/* imap-idle.c */
void imap_watch_start(struct imap_session *s);
void imap_watch_stop(struct imap_session *s);
/* Read the selected mailbox again and send what changed. */
void imap_refresh(struct imap_session *s);
/* Take fresh (the selected mailbox read again) as the view and send what
 * changed: EXPUNGE or VANISHED, FETCH FLAGS, FLAGS, EXISTS. Not while a
 * FETCH, STORE or SEARCH answers (RFC 9051 7.5.1). */
void imap_view_update(struct imap_session *s, struct mt_store_mailbox *fresh);
void imap_cmd_poll(struct imap_session *s, const struct mt_imap_command *cmd,
		   const char *verb);
void imap_cmd_idle(struct imap_session *s, const struct mt_imap_command *cmd);
/* IDLE's ending line. */
void imap_idle_line(struct imap_session *s, const char *line);
/* "* FLAGS" and PERMANENTFLAGS of mbox (imap-mailbox.c). */
void imap_flags_announce(struct imap_session *s, const struct mt_store_mailbox *mbox);
/* The selected mailbox (or user's folder) changed by this session: tell
 * the others watching it. */
void imap_changed(struct imap_session *s, const char *folder);

/* imap-quota.c (RFC 9208) */
void imap_cmd_getquotaroot(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_getquota(struct imap_session *s, const struct mt_imap_command *cmd);
void imap_cmd_setquota(struct imap_session *s, const struct mt_imap_command *cmd);

/* imap-auth.c */
void imap_login_init(struct imap_session *s);

#endif
