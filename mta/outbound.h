/* outbound.h — what outbound.c (the connection: resolving, connecting,
 * greeting, LHLO/EHLO, STARTTLS, reading replies, closing) and
 * outbound-tx.c (a job's transaction: MAIL, RCPT, DATA, the body, the
 * replies) share about one LMTP/SMTP client connection.
 * Trust boundary: as outbound.c. */
#ifndef MT_MTA_OUTBOUND_H
#define MT_MTA_OUTBOUND_H

#include "delivery-private.h"
#include "dotcodec.h"
#include "lineio.h"

#include <event2/util.h>

#define REPLY_LINE_MAX 2048
#define BODY_CHUNK (64u * 1024u)
#define OUTPUT_LOW (64u * 1024u)
#define OUTPUT_HIGH (256u * 1024u)
#define QUIT_TIMEOUT_MSECS 5000u

struct bufferevent;
struct event;

enum conn_state {
	CS_RESOLVE, CS_CONNECT, CS_GREETING, CS_HELLO, CS_HELO, CS_STARTTLS,
	CS_TLS, CS_IDLE, CS_TRANSACTION, CS_BODY, CS_DOT, CS_RSET, CS_QUIT,
	CS_CLOSED,
};

extern const char *const conn_state_names[];

struct conn {
	struct conn *next;
	struct dest *dest;
	struct delivery *d;
	struct mt_logctx log;
	enum conn_state state;
	bool ready_once;		/* reached idle at least once */
	unsigned int site;		/* LMTP: the shard's site (0: the first) */
	uint64_t connect_ms;		/* connect timeout per address */
	uint64_t greeting_ms;		/* and for its greeting */
	struct bufferevent *bev;
	struct event *timer;
	struct event *soon;		/* deferred work (never call back inside) */
	struct dns_req *dns;
	struct dns_result addrs;
	unsigned int next_addr;
	char peer[320];			/* "host[addr]:port" */
	char sni[256];
	char last_error[512];
	struct mt_line_reader reader;
	struct mt_buf line, summary, out;
	struct mt_smtp_reply reply;
	struct mt_smtp_caps caps;
	bool tls;
	/* the job */
	struct job *job;
	unsigned int phase;		/* 0 MAIL, 1..n RCPT, n+1 DATA */
	bool pipelined, mail_failed;
	bool smtputf8;			/* this job's MAIL says SMTPUTF8 */
	unsigned int accepted, dot_left, dot_next;
	bool *rcpt_ok;
	bool discard_dot;
	struct queue_body *body;	/* the bytes being sent: the head, then
					 * each following piece in turn */
	size_t body_off;
	struct queue_read *piece_read;	/* the next piece, being read */
	struct mt_dot_encoder enc;
	unsigned int transactions;
	/* a deferred outcome */
	int soon_code;
	bool soon_job_done;
};

/* outbound.c */
const char *conn_proto(const struct conn *c);
void conn_enter(struct conn *c, enum conn_state state);
void conn_send(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void conn_set_timer(struct conn *c, uint64_t ms);
/* Idle and ready for the next job. */
void conn_ready(struct conn *c);
/* Hand the job back to delivery with whatever results it has. */
void conn_job_finish(struct conn *c);
/* A connection-level failure: the job (if any) is deferred, and closed. */
void conn_fail(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* outbound-tx.c */
/* The last reply on one line, for results and logs. */
const char *conn_reply_text(struct conn *c);
void conn_tx_reply(struct conn *c);		/* CS_TRANSACTION */
void conn_dot_reply(struct conn *c);		/* CS_DOT */
void conn_after_transaction(struct conn *c);	/* the job is over */
void conn_fill_body(struct conn *c);		/* CS_BODY: more output */

#endif
