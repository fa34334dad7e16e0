/* milter-client.h — one connection from an MTA to one mail filter (a
 * "milter": rspamd, OpenDKIM, ...), speaking lib-mail/milter-proto's
 * packets on the caller's event loop: connect (TCP or a Unix socket),
 * negotiate, then one command at a time with the macros its stage
 * carries, each answered (or not: the steps the filter asked not to get,
 * and those it will not answer) through a callback; at end of message
 * the modifications one by one, then the final answer.
 *
 *   open ──► OPTNEG ──► command(CONNECT) ─► answer ─► command(HELO) ...
 *   command(cmd, packet): [MACRO for the stage] + packet ─► answer
 *   eom: [MACRO] + BODYEOB ─► mod, mod, ... ─► answer
 *
 * A client that failed (no connection, a timeout, an I/O error, an
 * answer it could not read or one the negotiation did not allow) answers
 * MT_MILTER_FAILED with the reason and stays failed: the caller applies
 * its default action. Every answer is delivered from the loop, never
 * from inside the call that asked for it.
 *
 * Trust boundary: everything the filter sends (milter-proto.c checks each
 * packet's shape; here: only the replies a command allows, modifications
 * only at end of message and only those negotiated; one packet at most
 * MT_MILTER_PACKET_MAX, and reading stops while the caller holds a
 * modification back). Time: connect_timeout for the connection and
 * negotiation, command_timeout for each answer, content_timeout for body
 * chunks and the end of message; PROGRESS restarts the clock.
 * References: Sendmail libmilter (mfdef.h, engine.c), Postfix milter8.c,
 * draft-adams-milter-protocol-00.
 *
 * Threading: the loop's thread. */
#ifndef MT_MILTER_CLIENT_H
#define MT_MILTER_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "milter-proto.h"

struct mt_buf;
struct mt_loop;
struct mt_logctx;
struct mt_milter_client;

struct mt_milter_client_settings {
	const char *name;		/* for logs: milter=NAME */
	const char *address;		/* as configured, for logs */
	struct sockaddr_storage sockaddr;	/* resolved: AF_INET, AF_INET6, AF_UNIX */
	socklen_t sockaddr_len;
	uint64_t connect_timeout;	/* ms: connect and negotiation */
	uint64_t command_timeout;	/* ms: each answer to a command */
	uint64_t content_timeout;	/* ms: each answer to BODY and BODYEOB */
	uint32_t actions;		/* MT_MILTER_ACT_* we offer */
	uint32_t protocol;		/* MT_MILTER_P_* we offer */
	/* Per stage: the macro names sent when the filter names none
	 * (space separated), or NULL for none. */
	const char *macros[MT_MILTER_STAGE_COUNT];
};

/* Parse "inet:HOST:PORT" (HOST numeric, "[v6]" or a name resolved now),
 * "unix:PATH" or "local:PATH" into set->sockaddr. False with a static or
 * thread-local error. */
bool mt_milter_address_parse(const char *address,
			     struct mt_milter_client_settings *set,
			     const char **error_r);

enum mt_milter_status {
	MT_MILTER_CONTINUE,	/* go on (also a step the filter does not take) */
	MT_MILTER_ACCEPT,	/* accept; no more filtering of this message
				 * (of this connection, at CONNECT and HELO) */
	MT_MILTER_REJECT,	/* 5xx: text is the filter's reply or NULL */
	MT_MILTER_TEMPFAIL,	/* 4xx: likewise */
	MT_MILTER_DISCARD,	/* accept the message and drop it */
	MT_MILTER_SKIP,		/* (BODY) send no more of the body */
	MT_MILTER_FAILED,	/* error says why; the client stays failed */
};

struct mt_milter_answer {
	enum mt_milter_status status;
	const char *text;	/* REJECT/TEMPFAIL from REPLYCODE: "550 5.7.1 ..." */
	const char *error;	/* FAILED */
};

typedef void mt_milter_answer_cb_t(const struct mt_milter_answer *answer,
				   void *context);
/* A modification at end of message (its pointers valid during the
 * call). False holds it back: the client reads nothing more until
 * mt_milter_client_resume(), which delivers the same modification again. */
typedef bool mt_milter_mod_cb_t(const struct mt_milter_reply *mod, void *context);
/* A macro's value for the stage being sent, or NULL when it has none. */
typedef const char *mt_milter_macro_cb_t(const char *name, void *context);

struct mt_milter_client *mt_milter_client_new(struct mt_loop *loop,
					      const struct mt_milter_client_settings *set,
					      const struct mt_logctx *log);
/* Say QUIT if idle and connected, close, free; no callback runs after. */
void mt_milter_client_free(struct mt_milter_client **client_p);

/* Connect and negotiate; answer CONTINUE, or FAILED (also when the
 * filter refused the negotiation). */
void mt_milter_client_open(struct mt_milter_client *client,
			   mt_milter_answer_cb_t *cb, void *context);

/* Send cmd's packet (written by mt_milter_put_*), preceded by the macros
 * of its stage (CONNECT, HELO, MAIL, RCPT, DATA, EOH) taken from macro_cb;
 * answer when the filter has. A step the filter asked not to get is not
 * sent (CONTINUE); one it does not answer (NR_*) is CONTINUE once
 * written. BODY may answer SKIP. Not for BODYEOB (mt_milter_client_eom). */
void mt_milter_client_command(struct mt_milter_client *client,
			      enum mt_milter_cmd cmd, const struct mt_buf *packet,
			      mt_milter_macro_cb_t *macro_cb, void *macro_context,
			      mt_milter_answer_cb_t *cb, void *context);
/* End of message: the EOM macros, BODYEOB; each modification to mod_cb
 * (only those negotiated), then the final answer to cb. */
void mt_milter_client_eom(struct mt_milter_client *client,
			  mt_milter_macro_cb_t *macro_cb, void *macro_context,
			  mt_milter_mod_cb_t *mod_cb, mt_milter_answer_cb_t *cb,
			  void *context);
/* A modification held back by mod_cb can be taken now. */
void mt_milter_client_resume(struct mt_milter_client *client);
/* The message is over without an end (RSET, a refused message, the
 * session's end): ABORT, no answer. Nothing if no message was begun. */
void mt_milter_client_abort(struct mt_milter_client *client);

/* Does the filter take this step at all (not one of its NO* steps)? */
bool mt_milter_client_wants(const struct mt_milter_client *client,
			    enum mt_milter_cmd cmd);
/* Did it negotiate HDR_LEADSPC (header values with their leading space)? */
bool mt_milter_client_leadspc(const struct mt_milter_client *client);
bool mt_milter_client_failed(const struct mt_milter_client *client);
const char *mt_milter_client_name(const struct mt_milter_client *client);

#endif
