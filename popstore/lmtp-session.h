/* lmtp-session.h — an LMTP connection of mailtier-popstore, shared by the
 * session code (lmtp-session.c: the socket, reading, replies, life cycle),
 * the DATA phase (lmtp-data.c: the message streamed into the store) and
 * the command handlers (lmtp-commands.c).
 *
 * Trust boundary: every byte comes from an LMTP client (an MTA on a host in
 * lmtp_clients); commands are parsed and bounded before use.
 * RFC 2033 (LMTP), RFC 5321 (the SMTP it is based on), RFC 2920
 * (PIPELINING), RFC 2034 (ENHANCEDSTATUSCODES), RFC 6152 (8BITMIME),
 * RFC 1870 (SIZE). */
#ifndef MT_LMTP_SESSION_H
#define MT_LMTP_SESSION_H

#include "popstore.h"
#include "buf.h"
#include "dotcodec.h"
#include "lineio.h"
#include "log.h"
#include "address.h"
#include "loop.h"
#include "lmtp-parse.h"	/* LMTP_LHLO_MAX */

#include <stdbool.h>
#include <stdint.h>

struct bufferevent;
struct mt_dirsvc_request;
struct mt_store_body;
struct mt_store_req;

/* RFC 2033 4.1: command lines are at most 512 octets with the CRLF. */
#define LMTP_LINE_MAX 512

/* Where the connection is. Transaction state (what MAIL/RCPT gathered)
 * lives apart in struct lmtp_tx. */
enum lmtp_state {
	LMTP_STATE_COMMAND,	/* reading commands */
	LMTP_STATE_RCPT_WAIT,	/* a RCPT waits for the directory */
	LMTP_STATE_DATA,	/* reading the message after 354 */
	LMTP_STATE_DELIVER,	/* the store is making the message durable */
	LMTP_STATE_CLOSING,	/* last reply queued; close once written */
	LMTP_STATE_COUNT
};

extern const char *const lmtp_state_names[LMTP_STATE_COUNT];

struct lmtp_session;

/* One accepted recipient. */
struct lmtp_rcpt {
	char *address;		/* as given in RCPT TO (normal form) */
	char *mailbox;		/* the directory's canonical address */
	uint64_t quota;
	unsigned int slot;	/* index of its mailbox in the delivery */
};

/* The mail transaction: MAIL FROM to the end of DATA (or RSET). */
struct lmtp_tx {
	bool active;		/* MAIL FROM accepted */
	bool smtputf8;		/* MAIL asked for SMTPUTF8 (RFC 6531) */
	char *sender;		/* normal form; "" for <> */
	char queue_id[32];	/* the MTA's, or our own */
	/* "LHLO-NAME QUEUE-ID" when the client gave XQUEUEID, else NULL: the
	 * store's delivery id (a redelivery stores no second copy). */
	char *delivery_id;
	struct lmtp_rcpt *rcpts;
	unsigned int rcpt_count, rcpt_alloc;
	struct mt_dot_decoder dec;
	/* DATA (lmtp-data.c): decoded octets not yet handed to the store, the
	 * body being written, and whether reading waits for its writes. */
	struct mt_buf body;
	struct mt_store_body *store_body;
	bool paused;
};

struct lmtp_session {
	struct mt_conn conn;		/* socket, idle timer, list (lib-mail) */
	struct popstore *ps;
	struct mt_logctx log;
	char peer[MT_SOCKADDR_STRLEN];
	char peer_ip[MT_SOCKADDR_STRLEN];

	enum lmtp_state state;
	char *lhlo;			/* NULL until LHLO */
	struct mt_line_reader reader;
	struct mt_buf line;
	unsigned int errors;
	unsigned int tx_count;		/* transactions begun */
	bool drain;			/* close at the next idle moment */

	struct lmtp_tx tx;
	struct mt_dirsvc_request *dir_req;
	struct mt_store_req *store_req;
	char *rcpt_pending;		/* the address a lookup is for */

	struct mt_commands commands;	/* lib-mail/command: counters */
	uint64_t delivered, rejected;
};

/* lmtp-session.c */
void lmtp_enter_state(struct lmtp_session *s, enum lmtp_state state);
/* One reply line (or the last of a multi-line reply). */
void lmtp_reply(struct lmtp_session *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void lmtp_reply_more(struct lmtp_session *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A bad command: counts towards max_errors, which ends the session. */
void lmtp_error(struct lmtp_session *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Queue the last reply and close once it is written. */
void lmtp_close_after(struct lmtp_session *s, const char *reason);
/* The async part of a command finished: go on with pipelined input. */
void lmtp_resume(struct lmtp_session *s);
void lmtp_tx_reset(struct lmtp_session *s);

/* lmtp-data.c */
/* Start the DATA phase (after 354 is queued): a new store body. */
void lmtp_data_begin(struct lmtp_session *s);
/* Decode what the input holds into the store body; true once the end of
 * the data was seen, false when more input is needed or reading waits for
 * the store (it resumes the session by itself). */
bool lmtp_data_read(struct lmtp_session *s);

/* lmtp-commands.c */
/* Run one command line. */
void lmtp_command_dispatch(struct lmtp_session *s, const char *line);
/* The whole message is in: verdict, delivery. */
void lmtp_data_end(struct lmtp_session *s);
/* "lhlo=1 mail=1 rcpt=2 data=1 quit=1 commands=6" for the summary line. */

#endif
