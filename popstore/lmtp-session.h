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
#include "log.h"
#include "smtpd.h"
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
/* The engine hands decoded content to the store once this much is
 * buffered (a store chunk is ~64 KiB). */
#define LMTP_DATA_BUFFER (64u * 1024)

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
	/* DATA (lmtp-data.c): the body being written to the store (the
	 * engine decodes the content and hands it over in pieces). */
	struct mt_store_body *store_body;
};

struct lmtp_session {
	struct mt_smtpd smtpd;		/* lib-mail/smtpd: the session engine */
	struct mt_smtpd_settings smtpd_settings;
	struct popstore *ps;
	struct mt_logctx log;
	char peer[MT_SOCKADDR_STRLEN];
	char peer_ip[MT_SOCKADDR_STRLEN];

	char *lhlo;			/* NULL until LHLO */
	unsigned int errors;		/* client errors (lmtp_error) */
	unsigned int tx_count;		/* transactions begun */
	bool drain;			/* close at the next idle moment */

	struct lmtp_tx tx;
	struct mt_dirsvc_request *dir_req;
	struct mt_store_req *store_req;
	char *rcpt_pending;		/* the address a lookup is for */

	uint64_t delivered, rejected;
};

#define LMTP_SESSION(d) MT_SMTPD_OWNER(d, struct lmtp_session, smtpd)

/* lmtp-session.c. Replies and states are the engine's (lib-mail/smtpd.h)
 * on &s->smtpd. */
/* A bad command: counts towards max_errors, which ends the session. */
void lmtp_error(struct lmtp_session *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Queue the last reply and close once it is written. */
void lmtp_close_after(struct lmtp_session *s, enum mt_conn_outcome outcome,
		      const char *reason);
void lmtp_tx_reset(struct lmtp_session *s);

/* lmtp-data.c */
/* Start the DATA phase (after 354 is queued): a new store body. */
void lmtp_data_begin(struct lmtp_session *s);
/* The engine's content hook: a piece to the store, or not yet. */
bool lmtp_data_piece(struct mt_smtpd *d);
/* The engine's end-of-DATA hook: the rest to the store, then the verdict
 * and the delivery (lmtp_data_end). */
void lmtp_data_done(struct mt_smtpd *d, enum mt_dot_result verdict, const char *error);

/* lmtp-commands.c */
/* Run command verb with its argument (the engine's run hook). */
void lmtp_command_run(struct lmtp_session *s, unsigned int verb, const char *arg);
/* The whole message is in: verdict, delivery. */
void lmtp_data_end(struct lmtp_session *s, enum mt_dot_result verdict, const char *error);
/* "lhlo=1 mail=1 rcpt=2 data=1 quit=1 commands=6" for the summary line. */

#endif
