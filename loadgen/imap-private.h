/* imap-private.h — the IMAP client session's state, shared by
 * imap-client.c (the protocol: tags, responses, continuations, literals,
 * IDLE, timing), imap-commands.c (the command table and writers),
 * imap-script.c (the profiles: which command follows which) and
 * imap-probe.c (the probe watcher's reading of what arrived). Not for
 * other files.
 * Trust boundary: none here (see imap-client.h). */
#ifndef LG_IMAP_PRIVATE_H
#define LG_IMAP_PRIVATE_H

#include "imap-client.h"
#include "imap-response.h"
#include "message.h"
#include "rng.h"

/* The commands of the client, and two pseudo-commands a profile may
 * answer with: wait (a timer is armed) and done (the session ends). */
enum imap_cmd {
	IC_GREETING,
	IC_CAPABILITY,
	IC_STARTTLS,
	IC_LOGIN,
	IC_AUTHENTICATE,
	IC_LIST,
	IC_SELECT_INBOX,
	IC_SELECT_FOLDER,
	IC_FETCH_NEW,		/* summaries of the unseen / newly arrived */
	IC_FETCH_FOLDER_HEADERS,
	IC_FETCH_CHANGED,	/* webmail: flags CHANGEDSINCE */
	IC_FETCH_NEWEST,	/* webmail: headers of the newest 20 */
	IC_FETCH_NEWEST_BODY,	/* webmail: one body */
	IC_FETCH_BODY,		/* desktop: a new message's body */
	IC_STORE_SEEN,
	IC_STORE_DELETED,
	IC_STORE_ANSWERED,
	IC_EXPUNGE,
	IC_MOVE,
	IC_APPEND_REPLY,	/* a reply into Sent */
	IC_APPEND_FILL,		/* fill: a message into a folder */
	IC_CREATE,
	IC_SEARCH,
	IC_IDLE,
	IC_PROBE_FETCH,		/* probe watcher: the id headers of the new */
	IC_PROBE_DELETE,	/* ... \Deleted on ours */
	IC_PROBE_EXPUNGE,	/* ... and gone */
	IC_NOOP,		/* ... polling, without IDLE */
	IC_LOGOUT,
	IC_COUNT,
	IC_WAIT = IC_COUNT,
	IC_DONE,
};

enum imap_cap {
	CAP_LITERAL_PLUS = 1u << 0,
	CAP_SASL_IR = 1u << 1,
	CAP_AUTH_PLAIN = 1u << 2,
	CAP_CONDSTORE = 1u << 3,
	CAP_IDLE = 1u << 4,
	CAP_MOVE = 1u << 5,
	CAP_SPECIAL_USE = 1u << 6,
	CAP_UIDPLUS = 1u << 7,
	CAP_LOGINDISABLED = 1u << 8,
	CAP_STARTTLS = 1u << 9,
};

enum imap_wait {
	WAIT_NONE,
	WAIT_THINK,		/* before reading the next new message */
	WAIT_END,		/* no IDLE: until the session's end */
	WAIT_POLL,		/* probe watcher without IDLE: until the next NOOP */
};

/* Who sent a new message (its ENVELOPE's From), if one of ours. */
struct imap_sender {
	bool known;		/* one of our users or remote correspondents */
	bool remote;
	uint64_t user;
};

/* The probe watcher: EXISTS counts and when they were seen, to time each
 * message at the EXISTS that announced it; at most this many kept. */
#define LG_IMAP_EXISTS_TIMES 16
/* Octets of a fetched header kept for the id (the rest is dropped). */
#define LG_IMAP_PROBE_HEADER_MAX 4096

struct lg_imap_session {
	struct lg_session base;
	enum lg_imap_profile profile;
	struct lg_imap_params params;
	struct lg_rng rng;		/* the session's own draws */
	uint64_t deadline_us;		/* desktop: LOGOUT from here on */

	enum imap_cmd cmd;		/* in flight, or the last one */
	unsigned int tag_no;
	char tag[16];
	struct lg_imap_reader reader;
	unsigned int caps;
	bool caps_known;		/* a CAPABILITY list was seen */
	bool caps_fresh;		/* ... since the login */
	bool logged_in;
	bool tls;			/* the connection is TLS (implicit or STARTTLS) */
	bool awaiting_continue;		/* AUTHENTICATE or APPEND wait for "+" */

	struct event *wait_timer;	/* think time, IDLE, the session end */
	enum imap_wait wait;
	bool idling;			/* after IDLE's "+", before DONE */
	bool done_sent;
	uint32_t idle_base;		/* EXISTS when the IDLE began */

	uint32_t exists;		/* of the selected mailbox */
	uint64_t known_max_uid;		/* highest UID of INBOX handled */
	uint64_t fetch_max_uid;		/* highest UID the last FETCH_NEW showed */
	uint64_t uids[LG_IMAP_MAX_NEW];	/* new messages to handle */
	struct imap_sender senders[LG_IMAP_MAX_NEW];	/* ... and their senders */
	unsigned int n_uids, uid_index;
	unsigned int folder;		/* a user folder (visit, move) */
	bool visited, searched;

	/* APPEND: the literal, generated as the socket drains */
	struct mt_buf append_headers;
	struct lg_body_gen append_body;
	bool appending;
	unsigned int fill_folder, fill_done;

	/* probe watcher (imap-probe.c): uids[] is the list to delete */
	struct mt_buf probe_header;	/* the fetched header, from the tap */
	struct { uint32_t count; uint64_t us; } exists_at[LG_IMAP_EXISTS_TIMES];
	unsigned int n_exists_at;
	bool exists_since_fetch;	/* an EXISTS rose since the last fetch */
	bool probe_more;		/* the delete list filled: fetch again */
	uint32_t probe_max_seq;		/* highest message handled this round */
};

/* imap-commands.c: one command of the client. */
struct imap_command {
	const char *name;
	enum lg_function fn;
	void (*send)(struct lg_imap_session *s);
	bool no_is_answer;	/* CREATE of a folder that is there already */
};

extern const struct imap_command lg_imap_commands[IC_COUNT];
/* The command's name (and "wait", "done"), for logs and failures. */
const char *lg_imap_cmd_name(enum imap_cmd cmd);
/* AUTHENTICATE PLAIN's response line, on the server's "+". */
void lg_imap_send_plain(struct lg_imap_session *s);
/* APPEND's literal: begin it (after "+", or at once with LITERAL+), and
 * queue more of it while the socket keeps up (the drained callback). */
void lg_imap_start_literal(struct lg_imap_session *s);
void lg_imap_fill_literal(struct lg_imap_session *s);

/* imap-script.c: the command after s->cmd completed (or after the wait
 * timer fired, s->wait saying which): a command, IC_WAIT or IC_DONE. */
enum imap_cmd lg_imap_script_next(struct lg_imap_session *s);
/* The reply to the message being read (its size, recipient), drawn from
 * the session's stream. */
void lg_imap_reply_plan(struct lg_imap_session *s, struct lg_message_plan *plan);

/* imap-probe.c: the probe watcher's reading of what arrived. */
/* Hook the reader's tap (again after STARTTLS renews the reader). */
void lg_imap_probe_attach(struct lg_imap_session *s);
/* An EXISTS of n (the count was old), an EXPUNGE of message seq. */
void lg_imap_probe_exists(struct lg_imap_session *s, uint32_t old, uint32_t n);
void lg_imap_probe_expunge(struct lg_imap_session *s, uint32_t seq);
/* IC_PROBE_FETCH is sent / one of its FETCH responses / it completed. */
void lg_imap_probe_round_begin(struct lg_imap_session *s);
void lg_imap_probe_fetch(struct lg_imap_session *s, uint32_t seq, const char *rest);
void lg_imap_probe_round_end(struct lg_imap_session *s);
/* A whole response was handled: drop the header kept from its literal. */
void lg_imap_probe_response_done(struct lg_imap_session *s);
/* imap-client.c: arm the wait timer (the script's IC_WAIT). */
void lg_imap_wait(struct lg_imap_session *s, enum imap_wait wait, uint64_t ms);
/* Milliseconds left until the deadline (0 when it has passed). */
uint64_t lg_imap_time_left_ms(const struct lg_imap_session *s);

#endif
