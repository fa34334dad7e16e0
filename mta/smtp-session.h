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
#include "log.h"
#include "loop.h"
#include "queue.h"
#include "smtp-milter.h"
#include "smtpd.h"

struct bufferevent;
struct event;
struct mta;
struct mt_dirsvc_request;
struct mt_metrics;
struct smtp_milters;

/* Which listener accepted the connection. */
enum smtp_service {
	SMTP_SERVICE_SMTP,		/* 25: MX and trusted relay clients */
	SMTP_SERVICE_SUBMISSION,	/* 587: AUTH required (RFC 6409) */
	SMTP_SERVICE_SUBMISSIONS,	/* 465: implicit TLS, AUTH required */
	SMTP_SERVICE_COUNT
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
	/* Content: our Received: line (and added header fields) in prefix;
	 * the client's message is decoded by the engine (smtpd.content.body)
	 * and goes to the queue (spool) a piece at a time as it arrives. */
	struct mt_buf prefix;
	struct queue_spool *spool;	/* NULL until the first piece */
	bool head_checked;		/* header section looked at: */
	unsigned int head_hops;		/* its Received: fields */
	unsigned int head_fields;	/* SMTP_HEADER_* present */
	const char *bdat_error;		/* reply for this chunk, once read */
	char *mail_params;		/* MAIL's ESMTP parameters as sent (filters) */
	bool quarantined;		/* a filter asked: queued held */
	size_t queued_size;		/* body octets handed to the queue */
	uint64_t queued_at;		/* monotonic usecs of the hand-over */
};

/* A recipient waiting for its directory answer. */
struct smtp_pending_rcpt {
	char *address;
	char *orcpt;
	unsigned int notify;
	char *params;			/* RCPT's ESMTP parameters as sent (filters) */
};

struct smtp_session {
	struct mt_smtpd smtpd;		/* lib-mail/smtpd: the session engine */
	struct mt_smtpd_settings smtpd_settings;	/* its settings from [mta] */
	struct mta *mta;
	enum smtp_service service;
	struct mt_logctx log;
	struct sockaddr_storage peer;
	char peer_ip[MT_SOCKADDR_STRLEN];	/* "a.b.c.d" or "v6addr" */
	char peer_name[MT_SOCKADDR_STRLEN];	/* "a.b.c.d:port" for logs */
	bool trusted;			/* client address in mynetworks */

	/* Connection state, reset by STARTTLS (RFC 3207 4.2). */
	char *helo;
	bool esmtp;
	bool authenticated;
	char *auth_user;
	const char *auth_type;		/* "PLAIN" or "LOGIN" once authenticated */

	struct smtp_tx tx;
	struct smtp_pending_rcpt pending_rcpt;
	bool pending_rcpt_local;	/* a local domain's (metrics: its destination) */
	struct mt_dirsvc_request *dir_req;
	struct queue_op *queue_op;
	struct smtp_milters *milter;	/* the listener's mail filters, or NULL */
	/* A filter refused the connection: the answer to every command. */
	struct smtp_milter_verdict milter_denied;
	char *milter_denied_text;
	/* AUTH in progress */
	int auth_mech;			/* 0 none, 1 PLAIN, 2 LOGIN */
	const char *auth_trying;	/* the mechanism being checked */
	char *auth_login_user;		/* LOGIN: the user, awaiting password */
	uint64_t auth_started_ms;	/* credentials complete (monotonic) */
	uint64_t rcpt_started_ms;	/* the RCPT arrived (monotonic) */
	/* Counters */
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
/* The per-address tables' metrics (lib/authfail-metrics.h: table
 * "client" for sessions and failed AUTHs, "rcpt" for unknown recipients),
 * removed by smtp_server_free. */
void smtp_server_export_metrics(struct smtp_server *server, struct mt_metrics *m);
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
void smtp_session_close(struct smtp_session *s, enum mt_conn_outcome outcome,
			const char *reason);
/* Drain: an idle session says 421 and closes; a busy one after its reply. */
void smtp_session_drain(struct smtp_session *s);
/* The client's address without the port ("192.0.2.1", "2001:db8::1"). */
void smtp_format_peer_ip(const struct sockaddr *peer, char *buf, size_t size);
/* The session is closing (off the list already): release its limits. */
void smtp_server_session_closed(struct smtp_server *server,
				struct smtp_session *s);

/* For the handlers (smtp-session.c). Replies, states, the delayed reply
 * and resuming are the engine's (lib-mail/smtpd.h) on &s->smtpd; a
 * handler's session from the engine's is SMTP_SESSION(d). */
#define SMTP_SESSION(d) MT_SMTPD_OWNER(d, struct smtp_session, smtpd)

/* Is AUTH on offer in this session now? */
bool smtp_auth_offered(const struct smtp_session *s);
/* Does this service require AUTH before mail? */
bool smtp_auth_required(const struct smtp_session *s);
/* Is the server shutting down (sessions end after their transaction)? */
bool smtp_server_draining(const struct smtp_session *s);

/* Transaction (smtp-commands.c). */
void smtp_tx_reset(struct smtp_session *s);
/* Add a recipient (pending's strings taken) unless it is there already;
 * remove every recipient equal to address (case-insensitive): how many. */
void smtp_tx_add_rcpt(struct smtp_session *s, struct smtp_pending_rcpt *pending);
unsigned int smtp_tx_del_rcpt(struct smtp_session *s, const char *address);
/* MAIL's proceed half: the sender in s->tx is acceptable; the transaction
 * starts (queue id, log line), and the 250 goes out now, or once the
 * mail filters have answered (true: the session waits for them). */
bool smtp_mail_accept(struct smtp_session *s);

/* Handlers */
smtp_cmd_handler_t smtp_cmd_ehlo, smtp_cmd_helo, smtp_cmd_mail, smtp_cmd_rcpt,
	smtp_cmd_rset, smtp_cmd_noop, smtp_cmd_quit, smtp_cmd_vrfy,
	smtp_cmd_help, smtp_cmd_starttls, smtp_cmd_not_implemented;
/* smtp-auth.c */
smtp_cmd_handler_t smtp_cmd_auth;
/* An AUTH continuation line (engine state MT_SMTPD_LINE). */
void smtp_auth_continue(struct smtp_session *s, const char *line);
/* MAIL's check half after AUTH (sender_login_check): may the login user
 * send as s->tx.sender? Runs smtp_mail_accept() at once or once the
 * directory has answered (MT_SMTPD_WAIT meanwhile), or refuses and
 * resets the transaction. */
void smtp_auth_check_sender(struct smtp_session *s);
/* smtp-data.c */
smtp_cmd_handler_t smtp_cmd_data, smtp_cmd_bdat;
/* The engine's content hooks (lib-mail/smtpd.h): a piece to the queue,
 * the end of DATA, the end of a BDAT chunk. */
bool smtp_data_piece(struct mt_smtpd *d);
void smtp_data_end(struct mt_smtpd *d, enum mt_dot_result verdict, const char *error);
void smtp_bdat_end(struct mt_smtpd *d);
/* The transaction's spool, made on first use. */
struct queue_spool *smtp_data_spool(struct smtp_session *s);
/* The MTA's checks of the client's header section head[0..len) (its
 * Received: count, Date:/Message-ID:) and the fields it adds to
 * tx.prefix (add_missing_headers). */
void smtp_data_head_checks(struct smtp_session *s, const char *head, size_t len);

#endif
