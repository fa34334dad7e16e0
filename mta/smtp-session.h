/* smtp-session.h — one ESMTP server connection (smtp-session.c), its
 * command handlers (smtp-commands.c, smtp-auth.c, smtp-data.c) and the
 * server that holds the sessions and their limits.
 *
 * Connection state (struct smtp_session) and transaction state (struct
 * smtp_tx, from MAIL to the end of DATA) are separate objects with their own
 * reset. Commands that wait on the directory or the queue split into a check
 * half that runs at once and a proceed half run by the completion; meanwhile
 * the session is in SMTP_STATE_WAIT and reads no further commands (pipelined
 * ones wait in the input buffer, RFC 2920 3.1).
 *
 * Trust boundary: everything read from the socket is the client's. Lines
 * are bounded (max_line_length), message content is decoded only by
 * lib/dotcodec (CRLF.CRLF ends DATA, nothing else), and every client-driven
 * count (errors, junk commands, recipients, size, idle and total time) has a
 * limit from [mta].
 * RFCs: 5321 (ESMTP), 1870 (SIZE), 2920 (PIPELINING), 3030 (CHUNKING),
 * 6152 (8BITMIME), 2034/3463 (enhanced status codes), 3207 (STARTTLS),
 * 4954 (AUTH), 4616 (PLAIN), 6531 (SMTPUTF8), 8314 (implicit TLS). */
#ifndef MT_MTA_SMTP_SESSION_H
#define MT_MTA_SMTP_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "buf.h"
#include "command.h"
#include "conn.h"
#include "dotcodec.h"
#include "lineio.h"
#include "log.h"
#include "loop.h"
#include "queue.h"
#include "smtp-content.h"

struct bufferevent;
struct event;
struct mta;
struct mt_dirsvc_request;

/* Which listener accepted the connection. */
enum smtp_service {
	SMTP_SERVICE_SMTP,		/* 25: MX and trusted relay clients */
	SMTP_SERVICE_SUBMISSION,	/* 587: AUTH required (RFC 6409) */
	SMTP_SERVICE_SUBMISSIONS,	/* 465: implicit TLS, AUTH required */
	SMTP_SERVICE_COUNT
};

enum smtp_state {
	SMTP_STATE_HANDSHAKE,	/* implicit TLS handshake, before the greeting */
	SMTP_STATE_COMMAND,	/* reading command lines */
	SMTP_STATE_AUTH,	/* reading an AUTH continuation line */
	SMTP_STATE_DATA,	/* reading DATA content up to CRLF.CRLF */
	SMTP_STATE_BDAT,	/* reading a BDAT chunk of known size */
	SMTP_STATE_WAIT,	/* waiting for the directory or the queue */
	SMTP_STATE_STARTTLS,	/* 220 queued; TLS starts once it is sent */
	SMTP_STATE_CLOSING,	/* last reply queued; close once it is sent */
	SMTP_STATE_COUNT
};

/* The command table (smtp-commands.c), on lib-mail's command engine:
 * MT_CMD_PRE_TLS / PRE_AUTH where TLS or AUTH is required first, JUNK
 * against max_junk_commands, GROUP_END for RFC 2920 3.1. */
struct smtp_session;
typedef void smtp_cmd_handler_t(struct smtp_session *s, const char *args);

struct smtp_command {
	struct mt_command_def def;
	smtp_cmd_handler_t *handler;
};

extern const struct smtp_command smtp_commands[];
extern const struct mt_command_table smtp_command_table;

struct smtp_rcpt {
	char *address;		/* as accepted, normal form */
	char *orcpt;		/* DSN ORCPT or NULL */
	unsigned int notify;	/* QUEUE_NOTIFY_* */
};

/* One mail transaction: MAIL FROM .. end of DATA/BDAT LAST, or RSET. */
struct smtp_tx {
	bool active;			/* MAIL FROM accepted */
	char queue_id[QUEUE_ID_LEN + 1];
	char *sender;			/* "" for <> */
	uint64_t declared_size;		/* SIZE=, 0 if none */
	bool body_8bit, smtputf8;
	enum queue_ret ret;
	char *envid;
	struct smtp_rcpt *rcpts;
	unsigned int rcpt_count;
	/* Content: our Received: line (and added header fields) in prefix,
	 * the client's message in body until it fills a piece, which goes to
	 * the queue (spool) while the rest arrives. */
	struct mt_buf prefix;
	struct mt_buf body;
	struct queue_spool *spool;	/* NULL until the first piece */
	bool spool_paused;		/* input waits for a piece write */
	bool head_checked;		/* header section looked at: */
	unsigned int head_hops;		/* its Received: fields */
	unsigned int head_fields;	/* SMTP_HEADER_* present */
	struct mt_dot_decoder dec;	/* DATA */
	bool bdat_used;			/* BDAT seen: DATA now refused */
	uint64_t bdat_chunk;		/* size of the current chunk */
	uint64_t bdat_left;		/* octets of the current chunk to read */
	bool bdat_last;
	const char *bdat_error;		/* reply for this chunk, once read */
	struct smtp_chunk_decoder chunk;	/* BDAT content (smtp-content.c) */
	size_t queued_size;		/* body octets handed to the queue */
	uint64_t queued_at;		/* monotonic usecs of the hand-over */
};

/* A recipient waiting for its directory answer. */
struct smtp_pending_rcpt {
	char *address;
	char *orcpt;
	unsigned int notify;
};

struct smtp_session {
	struct mt_conn conn;		/* lib-mail/conn: socket, timers, close */
	struct mta *mta;
	enum smtp_service service;
	struct mt_logctx log;
	struct sockaddr_storage peer;
	char peer_ip[MT_SOCKADDR_STRLEN];	/* "a.b.c.d" or "v6addr" */
	char peer_name[MT_SOCKADDR_STRLEN];	/* "a.b.c.d:port" for logs */
	bool trusted;			/* client address in mynetworks */

	enum smtp_state state;
	struct mt_line_reader reader;
	struct mt_buf line;
	bool greeted;			/* the 220 greeting was sent */
	bool input_paused;		/* output backlog: resume on drain */

	/* Connection state, reset by STARTTLS (RFC 3207 4.2). */
	char *helo;
	bool esmtp;
	bool tls;
	char tls_info[128];
	bool authenticated;
	char *auth_user;

	struct smtp_tx tx;
	struct smtp_pending_rcpt pending_rcpt;
	struct mt_dirsvc_request *dir_req;
	struct queue_op *queue_op;
	/* AUTH in progress */
	int auth_mech;			/* 0 none, 1 PLAIN, 2 LOGIN */
	char *auth_login_user;		/* LOGIN: the user, awaiting password */
	uint64_t auth_started_ms;	/* credentials complete (monotonic) */
	uint64_t rcpt_started_ms;	/* the RCPT arrived (monotonic) */
	/* A penalty-delayed final reply (smtp_reply_delayed) */
	struct event *delay_timer;
	int delayed_code;
	char *delayed_text;

	/* Limits and counters */
	unsigned int errors;
	struct mt_commands commands;	/* counters, the command awaiting its reply */
	unsigned int messages;
	unsigned int unknown_rcpts;	/* RCPTs of unknown local users */
	unsigned int limited_rcpts;	/* refused: rcpt_fail_limit reached */
};

/* The server: every session, and the limits across them. */
struct smtp_server *smtp_server_new(struct mta *mta);
/* Close every session now (shutdown after the drain). */
void smtp_server_free(struct smtp_server **server_p);
/* A new connection from a listener (takes fd). */
void smtp_server_accept(struct smtp_server *server, enum smtp_service service,
			int fd, const struct sockaddr *peer, socklen_t peerlen);
/* SIGTERM: say 421 to idle sessions, let the others finish their
 * transaction; mta_drain_check() when the last one is gone. */
void smtp_server_drain(struct smtp_server *server);
unsigned int smtp_server_count(const struct smtp_server *server);
/* A failed AUTH from ip: the delay (ms) before its 535 answer, counted
 * from the AUTH (lib/authfail.h; its clock is lib/clock's mt_clock_ms). */
uint64_t smtp_server_auth_failed(struct smtp_server *server, const char *ip);
/* An unknown local recipient from ip: the delay (ms) before its 550,
 * counted from the RCPT; *limit_reached_r when ip has now reached
 * rcpt_fail_limit. */
uint64_t smtp_server_rcpt_failed(struct smtp_server *server, const char *ip,
				 bool *limit_reached_r);
/* Has ip reached rcpt_fail_limit within rcpt_fail_window? */
bool smtp_server_rcpt_limited(struct smtp_server *server, const char *ip);
/* Drop per-address entries whose failures have expired (stats timer). */
void smtp_server_sweep(struct smtp_server *server);
/* Sessions receiving message content now (DATA or BDAT): others about to
 * commit, for the queue's group commit (commit_delay). */
unsigned int smtp_server_receiving(const struct smtp_server *server);
/* A session started (+1) or stopped (-1) receiving content. */
void smtp_server_note_receiving(struct smtp_server *server, int delta);

/* Between smtp-server.c and smtp-session.c. */

/* A session on an accepted fd (taken), added to list; NULL if it could
 * not be set up. */
struct smtp_session *smtp_session_new(struct mta *mta, struct mt_conn_list *list,
				      enum smtp_service service, int fd,
				      const struct sockaddr *peer, socklen_t peerlen);
/* Close now: log the summary, cancel what is pending, free from the loop. */
void smtp_session_close(struct smtp_session *s, const char *reason);
/* Drain: an idle session says 421 and closes; a busy one after its reply. */
void smtp_session_drain(struct smtp_session *s);
/* The client's address without the port ("192.0.2.1", "2001:db8::1"). */
void smtp_format_peer_ip(const struct sockaddr *peer, char *buf, size_t size);
/* The session is closing (off the list already): release its limits. */
void smtp_server_session_closed(struct smtp_server *server,
				struct smtp_session *s);

/* For the handlers (smtp-session.c). */

/* The final or only line of a reply: "250 2.1.0 Ok". text starts with the
 * enhanced status code. Counts the command done (2xx/3xx) and errors (5xx). */
void smtp_reply(struct smtp_session *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The final reply, delay_ms from now (0: at once, false returned). For
 * penalty delays (a failed AUTH, an unknown recipient): the session reads
 * nothing meanwhile (SMTP_STATE_WAIT) and a timer sends the reply and
 * resumes reading, so the loop is never blocked. True if delayed: the
 * caller must not resume the session itself. */
bool smtp_reply_delayed(struct smtp_session *s, uint64_t delay_ms, int code,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A non-final line of a multi-line reply ("250-..."). */
void smtp_reply_more(struct smtp_session *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void smtp_enter_state(struct smtp_session *s, enum smtp_state state);
/* Resume reading input after an asynchronous step finished. */
void smtp_session_resume(struct smtp_session *s);
/* Queue a last reply (421/221) and close once it is written. */
void smtp_session_finish(struct smtp_session *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Is AUTH on offer in this session now? */
bool smtp_auth_offered(const struct smtp_session *s);
/* Does this service require AUTH before mail? */
bool smtp_auth_required(const struct smtp_session *s);
/* Is the server shutting down (sessions end after their transaction)? */
bool smtp_server_draining(const struct smtp_session *s);

/* Transaction (smtp-commands.c). */
void smtp_tx_reset(struct smtp_session *s);
/* MAIL's proceed half: the sender in s->tx is acceptable; the transaction
 * starts (queue id, log line, 250). */
void smtp_mail_accept(struct smtp_session *s);

/* Handlers */
smtp_cmd_handler_t smtp_cmd_ehlo, smtp_cmd_helo, smtp_cmd_mail, smtp_cmd_rcpt,
	smtp_cmd_rset, smtp_cmd_noop, smtp_cmd_quit, smtp_cmd_vrfy,
	smtp_cmd_help, smtp_cmd_starttls, smtp_cmd_not_implemented;
/* smtp-auth.c */
smtp_cmd_handler_t smtp_cmd_auth;
/* An AUTH continuation line (state SMTP_STATE_AUTH). */
void smtp_auth_continue(struct smtp_session *s, const char *line);
/* MAIL's check half after AUTH (sender_login_check): may the login user
 * send as s->tx.sender? Runs smtp_mail_accept() at once or once the
 * directory has answered (SMTP_STATE_WAIT meanwhile), or refuses and
 * resets the transaction. */
void smtp_auth_check_sender(struct smtp_session *s);
/* smtp-data.c */
smtp_cmd_handler_t smtp_cmd_data, smtp_cmd_bdat;
/* Consume DATA or BDAT content from the input; false when it needs more. */
bool smtp_data_input(struct smtp_session *s);
bool smtp_bdat_input(struct smtp_session *s);

#endif
