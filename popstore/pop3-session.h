/* pop3-session.h — a POP3 connection of mailtier-popstore, shared by the
 * session code (pop3-session.c: socket, TLS, reading, life cycle), the
 * login commands (pop3-auth.c), the mailbox commands (pop3-commands.c)
 * and the streamed multi-line replies (pop3-fetch.c).
 *
 * Trust boundary: every byte comes from a POP3 client — the MMP on a
 * proxy address, or a user directly. Command lines are bounded to 255
 * octets (RFC 2449 4), message numbers are checked against the mailbox
 * snapshot, and credentials go only to libdirsvc (or are compared with the
 * proxy credential in constant time).
 * RFC 1939 (POP3), RFC 2449 (CAPA, RESP-CODES), RFC 3206 (AUTH, SYS/TEMP,
 * SYS/PERM codes), RFC 5034 (AUTH), RFC 4616 (PLAIN), RFC 2595 (STLS),
 * RFC 8314 (implicit TLS). */
#ifndef MT_POP3_SESSION_H
#define MT_POP3_SESSION_H

#include "popstore.h"
#include "authfail.h"
#include "buf.h"
#include "command.h"
#include "lineio.h"
#include "log.h"
#include "loop.h"
#include "conn.h"
#include "pop3-login.h"
#include "login.h"

#include <stdbool.h>
#include <stdint.h>

struct bufferevent;
struct event;
struct mt_dirsvc_request;
struct mt_store_req;
struct mt_store_mailbox;
struct pop3_fetch;
struct pop3_prefetch;

/* RFC 2449 4: "command lines ... limited to 255 octets, including the
 * terminating CRLF". A SASL response line may be longer (RFC 5034 4 puts
 * no such limit on it): up to this. */
#define POP3_LINE_MAX 255
#define POP3_SASL_LINE_MAX 2048
#define POP3_USER_MAX 254
/* Message bytes read from the store per request while streaming. */
#define POP3_READ_CHUNK (64 * 1024)
/* Streaming goes on while the output holds less than this. */
#define POP3_OUTPUT_LOW (64 * 1024)

/* Connection state (RFC 1939 3: AUTHORIZATION, TRANSACTION, UPDATE, plus
 * the moments the session waits for someone). */
enum pop3_state {
	POP3_STATE_AUTHORIZATION,
	POP3_STATE_SASL,	/* AUTH PLAIN: waiting for the response line */
	POP3_STATE_LOGIN,	/* waiting on the directory, a failed login's
				   delay (login.h) or the mailbox open */
	POP3_STATE_STLS,	/* "+OK Begin TLS" queued; TLS once it is written */
	POP3_STATE_TRANSACTION,
	POP3_STATE_UPDATE,	/* QUIT: the deletions are being made durable */
	POP3_STATE_CLOSING,	/* last reply queued; close once written */
	POP3_STATE_COUNT
};

extern const char *const pop3_state_names[POP3_STATE_COUNT];

struct pop3_session;

/* The opened mailbox and what this session did to it (the POP3 transaction
 * state, reset when the session logs out or dies). */
struct pop3_maildrop {
	struct mt_store_mailbox *mbox;
	char *name;
	unsigned int count;		/* messages in the snapshot */
	bool *deleted;			/* marked by DELE */
	unsigned int deleted_count;
	uint64_t deleted_bytes;
	uint64_t retrieved, retrieved_bytes;
};

struct pop3_session {
	struct mt_conn conn;		/* socket, idle timer, list (lib-mail) */
	struct popstore *ps;
	struct mt_logctx log;
	char peer[MT_SOCKADDR_STRLEN];
	char peer_ip[MT_AUTHFAIL_KEY_MAX];	/* no port; "" if not IP */
	bool from_proxy;		/* peer is in proxy_addresses */
	bool tls;			/* TLS is on (STLS done or implicit) */
	bool implicit_tls;

	enum pop3_state state;
	struct mt_line_reader reader;
	struct mt_buf line;
	unsigned int errors;
	bool drain;
	bool input_eof;			/* the client closed its side */

	struct mt_pop3_login login_phase;	/* pop3-auth.c's ops */
	struct popstore_login verify;	/* the credentials' check (login.c) */
	char *user;			/* from USER, until PASS */
	char *login;			/* the authenticated mailbox owner */
	struct mt_store_req *store_req;	/* open or expunge */
	struct pop3_maildrop drop;
	struct pop3_fetch *fetch;	/* a multi-line reply being streamed */
	struct pop3_prefetch *prefetch;	/* the next message, read ahead */

	struct mt_commands commands;	/* lib-mail/command: counters */
};

/* pop3-session.c */
void pop3_enter_state(struct pop3_session *s, enum pop3_state state);
void pop3_ok(struct pop3_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void pop3_err(struct pop3_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* -ERR that counts towards max_errors (which ends the session). */
void pop3_error(struct pop3_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same with the whole line given ("-ERR ..."). */
void pop3_error_line(struct pop3_session *s, const char *line);
void pop3_close_after(struct pop3_session *s, enum mt_conn_outcome outcome,
		      const char *reason);
/* An async step finished: go on with pipelined input. */
void pop3_resume(struct pop3_session *s);
/* Plaintext passwords are accepted on this connection. */
bool pop3_plaintext_ok(const struct pop3_session *s);
/* Switch the socket to TLS once "+OK Begin TLS" is written (STLS). */
void pop3_starttls_pending(struct pop3_session *s);
struct evbuffer *pop3_output(struct pop3_session *s);

/* pop3-commands.c */
void pop3_command_dispatch(struct pop3_session *s, char *line);
void pop3_maildrop_reset(struct pop3_maildrop *drop);

/* pop3-auth.c */
/* Set up the session's login phase (lib-mail/pop3-login.h). */
void pop3_login_init(struct pop3_session *s);
void pop3_cmd_user(struct pop3_session *s, const char *arg);
void pop3_cmd_pass(struct pop3_session *s, const char *arg);
void pop3_cmd_auth(struct pop3_session *s, const char *arg);
/* The SASL response line in POP3_STATE_SASL. */
void pop3_sasl_response(struct pop3_session *s, char *line);

/* pop3-fetch.c (multi-line replies streamed with flow control) */
void pop3_fetch_list(struct pop3_session *s, bool uidl);
void pop3_fetch_message(struct pop3_session *s, unsigned int index, bool top,
			uint64_t lines);
/* Produce more output if there is room; called on write progress. */
void pop3_fetch_continue(struct pop3_session *s);
void pop3_fetch_free(struct pop3_session *s);
/* A store read is in flight (the session waits on us, not the client). */
bool pop3_fetch_busy(const struct pop3_session *s);
/* Read message 1 ahead (after login); forget message index if it was
 * read ahead (DELE). */
void pop3_prefetch_start(struct pop3_session *s);
void pop3_prefetch_forget(struct pop3_session *s, unsigned int index);

#endif
