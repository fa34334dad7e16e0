/* mmp.h — what the files of mailtier-mmp share: the process-wide server
 * object, the worker loops, the session and the calls between the parts.
 *
 *   main.c           start-up: config, TLS, listeners, privilege drop,
 *                    workers, sd-notify, signals, the accept hand-off
 *   mmp-session.c    one client connection: states, timers, replies, the
 *                    end-of-session log line, deferred free
 *   mmp-commands.c   the POP3 command table and the AUTHORIZATION handlers
 *   mmp-parse.c      the pure parsing of those commands (fuzzed)
 *   mmp-imap.c       the IMAP front: the not-authenticated state's command
 *                    table over lib-mail/imap-login and imap-parse
 *   mmp-answers.c    each protocol's words for the answers the tiers share
 *   mmp-phase-ops.c  the login phases' ops on a session, for both fronts
 *   mmp-login.c      PASS/AUTH -> directory -> shard -> backend -> relay,
 *                    and the failed-login penalty
 *   mmp-backend.c    connecting and logging in to a store shard (the
 *                    POP3 dialogue; mmp-backend-imap.c the IMAP one)
 *   mmp-shards.c     the [shards] table, down marks and probes
 *   mmp-relay.c      relaying bytes after login (bufferevents or splice)
 *   mmp-clients.c    per client address: connection counts, failed logins
 *                    (lib/authfail.c keeps them)
 *
 * Threads: the main loop accepts and hands each connection to a worker
 * loop, which owns the session from then on. Shared between threads are
 * only the read-only settings, the atomic counters, the client table
 * (mutex) and the shards' down marks (atomic).
 *
 * Trust boundary: everything a client sends is untrusted (commands, user
 * names, passwords, relayed bytes); a store shard is trusted to speak POP3
 * and IMAP but its answers are still bounded and checked for shape. */
#ifndef MT_MMP_H
#define MT_MMP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "authfail.h"
#include "command.h"
#include "conn.h"
#include "lineio.h"
#include "log.h"
#include "loop.h"
#include "mmp-settings.h"
#include "pop3-login.h"
#include "imap-login.h"

struct bufferevent;
struct event;
struct evbuffer;
struct event_base;
struct mt_config;
struct mt_dirsvc;
struct mt_dirsvc_client;
struct mt_dirsvc_request;
struct mt_timer;
struct mt_tls;
struct mmp_backend;
struct mmp_clients;
struct mmp_relay;
struct mmp_shard;
struct mmp_shards;
struct mmp_splice_pool;
struct mmp_imap_front;

/* RFC 2449 section 4: "Keywords and arguments ... commands ... MUST NOT
 * exceed 255 octets, including the terminating CRLF". */
#define MMP_COMMAND_LINE_MAX 255
/* A SASL client response line (RFC 5034 section 4 lifts the 255-octet
 * limit for them): room for PLAIN with a 254-octet name and a long
 * password. */
#define MMP_SASL_LINE_MAX 1024
/* RFC 2449 section 4: response lines are at most 512 octets. */
#define MMP_RESPONSE_LINE_MAX 512
/* An IMAP shard's greeting and login OK carry its capability list. */
#define MMP_BACKEND_LINE_MAX 4096
/* dirsvc's limit on names (RFC 5321 path length). */
#define MMP_USER_MAX 254
/* Before login a client cannot make us buffer more than this. */
#define MMP_INPUT_MAX 4096
/* After login: stop reading from one side while more than this waits to
 * be written to the other (so a slow reader bounds our memory). */
#define MMP_RELAY_HIGH_WATER 65536

enum mmp_listener_kind {
	MMP_LISTENER_POP3,	/* plaintext, STLS offered (RFC 2595) */
	MMP_LISTENER_POP3S,	/* implicit TLS (RFC 8314) */
	MMP_LISTENER_IMAP,	/* plaintext, STARTTLS offered (RFC 9051 6.2.1) */
	MMP_LISTENER_IMAPS,	/* implicit TLS (RFC 8314) */
	MMP_LISTENER_COUNT
};

/* The protocol a listener speaks (and a shard's address for it). */
enum mmp_protocol {
	MMP_PROTO_POP3,
	MMP_PROTO_IMAP,
	MMP_PROTO_COUNT
};

/* mmp-answers.c */
extern const char *const mmp_listener_names[MMP_LISTENER_COUNT];
extern const char *const mmp_protocol_names[MMP_PROTO_COUNT];
enum mmp_protocol mmp_listener_protocol(enum mmp_listener_kind kind);
bool mmp_listener_implicit_tls(enum mmp_listener_kind kind);

/* What the MMP itself answers, each protocol in its own words. The login
 * answers are POP3 -ERR lines or IMAP tagged NO replies (to the login's
 * tag); the session ends are POP3 -ERR lines or IMAP untagged BYEs. */
enum mmp_answer {
	MMP_ANSWER_AUTH_FAILED,		/* wrong user or password */
	MMP_ANSWER_ACCOUNT_DISABLED,
	MMP_ANSWER_ACCOUNT_HOLD,
	MMP_ANSWER_DIRECTORY_DOWN,
	MMP_ANSWER_SHARD_DOWN,
	MMP_ANSWER_LOGIN_LAST = MMP_ANSWER_SHARD_DOWN,
	MMP_ANSWER_BYE_INACTIVITY,	/* login_timeout */
	MMP_ANSWER_BYE_LOGIN_TIME,	/* login_timeout during a failure's
					 * delay (POP3: the login's answer too) */
	MMP_ANSWER_BYE_ERRORS,		/* max_errors */
	MMP_ANSWER_BYE_SHUTDOWN,
	MMP_ANSWER_BYE_BLOCKED,		/* auth_fail_limit reached in this session
					 * (POP3: the login's answer too) */
	MMP_ANSWER_BYE_CONN_LIMIT,	/* refusals at accept */
	MMP_ANSWER_BYE_CLIENT_LIMIT,
	MMP_ANSWER_BYE_CLIENT_BLOCKED,
	MMP_ANSWER_COUNT
};

/* The answer's line for protocol (the IMAP login answers without the
 * tag). */
const char *mmp_answer_text(enum mmp_protocol protocol, enum mmp_answer answer);

/* Process-wide counters (atomic; logged by the stats timer). */
struct mmp_counters {
	atomic_uint_fast64_t connections;	/* accepted and admitted */
	atomic_uint_fast64_t refused_limit;	/* beyond conn_limit */
	atomic_uint_fast64_t refused_client;	/* beyond conn_limit_per_client */
	atomic_uint_fast64_t refused_blocked;	/* address over auth_fail_limit */
	atomic_uint_fast64_t logins;		/* relaying to a shard */
	atomic_uint_fast64_t auth_failed;	/* wrong user or password */
	atomic_uint_fast64_t tempfail;		/* directory or shard unavailable */
	atomic_uint_fast64_t backend_refused;	/* -ERR from the shard (IN-USE...) */
	atomic_uint_fast64_t bytes_in, bytes_out;
	atomic_uint_fast64_t relays_open;	/* logged in, relaying now */
	atomic_uint_fast64_t relays_idle;	/* of those, no byte for
						 * idle_session_threshold */
};

struct mmp_server {
	const struct mt_mmp_settings *set;
	struct mt_config *config;
	struct mt_tls *tls;		/* NULL: no STLS, no pop3s */
	struct mt_dirsvc *dirsvc;
	struct mmp_shards *shards;
	struct mmp_clients *clients;
	char *proxy_user;
	char *proxy_password;
	struct mt_loop *main_loop;
	struct mt_workers *workers;
	struct mmp_worker **worker_list;
	unsigned int n_workers;
	unsigned int next_worker;	/* main loop: round robin */
	struct mt_timer *sweep;		/* expires failed-login records */
	atomic_uint_fast64_t conns;	/* open client connections */
	atomic_uint_fast64_t rejects;	/* TLS refusals being answered */
	struct mmp_counters stats;
};

struct mmp_worker {
	struct mmp_server *server;
	unsigned int index;
	struct mt_loop *loop;
	struct event_base *base;
	struct mt_dirsvc_client *dirsvc;
	struct mt_conn_list sessions;	/* open ones (lib-mail/conn) */
	struct mmp_splice_pool *pipes;
	struct evbuffer *scratch;	/* a reply being sent; always left empty */
	bool draining;
};

/* Every change goes through mmp_enter_state(); mmp_state_names[] matches. */
enum mmp_state {
	MMP_STATE_NEW,			/* accepted, nothing said yet */
	MMP_STATE_TLS_HANDSHAKE,	/* implicit TLS, or after STLS */
	MMP_STATE_AUTHORIZATION,	/* reading commands (RFC 1939 section 4) */
	MMP_STATE_SASL,			/* AUTH / AUTHENTICATE PLAIN: waiting
					 * for the response line */
	MMP_STATE_STLS,			/* "+OK Begin TLS" / "OK Begin TLS"
					 * being flushed */
	MMP_STATE_LOGIN_WAIT,		/* the address has as many password
					 * checks under way as it may: waiting
					 * for one to end (mmp-clients.c) */
	MMP_STATE_DIRECTORY,		/* waiting for the directory */
	MMP_STATE_AUTH_DELAY,		/* failed login: the penalty delay */
	MMP_STATE_BACKEND,		/* connecting and logging in to the shard */
	MMP_STATE_RELAY,		/* logged in: copying bytes both ways */
	MMP_STATE_CLOSING,		/* last reply being flushed, then close */
	MMP_STATE_DEAD,			/* closed; freed after the callback */
	MMP_STATE_COUNT
};

extern const char *const mmp_state_names[MMP_STATE_COUNT];

/* Indexes into the command table, for the per-session counters. */
enum mmp_command_id {
	MMP_CMD_CAPA,
	MMP_CMD_USER,
	MMP_CMD_PASS,
	MMP_CMD_AUTH,
	MMP_CMD_STLS,
	MMP_CMD_QUIT,
	MMP_CMD_UNKNOWN,	/* not in the table, or not allowed here */
	MMP_CMD_COUNT
};

struct mmp_session {
	/* The client connection: its bufferevent until the relay takes it,
	 * the login deadline (lifetime), the idle timer (login_timeout
	 * before login, idle_timeout relaying, the flush bound closing), the
	 * worker's session list and the deferred free. */
	struct mt_conn conn;
	struct mmp_worker *worker;
	struct mmp_backend *backend;	/* logging in to the shard */
	struct mmp_relay *relay;	/* after login */
	struct mt_timer *login_timer;	/* LOGIN_WAIT's next try, or
					 * AUTH_DELAY's failure answer */
	struct mt_dirsvc_request *dirreq;
	struct mt_logctx log;
	struct mt_line_reader reader;
	struct sockaddr_storage peer;
	enum mmp_state state;
	enum mmp_listener_kind kind;
	enum mmp_protocol protocol;
	bool tls;			/* TLS is (being) negotiated */
	const char *reject;		/* refused: only say this and close */
	char *user;			/* USER name, then the canonical address */
	char *login_user;		/* the USER name, once user is canonical */
	bool rerouted;			/* this login's shard was looked up again */
	struct mmp_shard *shard;	/* after the directory answered */
	/* The shard's site being tried (mmp-login.c): for a shard of several
	 * sites, passes over them from the last master until one takes the
	 * login or backend_failover_wait is over. */
	unsigned int site;
	unsigned int site_first, site_tried, site_pass;
	uint64_t failover_deadline;	/* coarse monotonic ms */
	const char *result;		/* login outcome, for the log line */
	const char *end;		/* how the session ended */
	uint64_t start_ms;
	uint64_t login_started_ms;	/* PASS/AUTH/LOGIN/AUTHENTICATE */
	char *password;			/* kept only in LOGIN_WAIT; wiped */
	bool attempt;			/* counted as a check under way */
	uint64_t bytes_in, bytes_out;	/* from / to the client */
	uint32_t errors;
	struct mt_commands commands;	/* lib-mail/command: counters */
	struct mt_pop3_login login;	/* POP3: the login phase (mmp-commands.c) */
	struct mmp_imap_front *imap;	/* IMAP until login (mmp-imap.c) */
	char imap_tag[MT_IMAP_TAG_MAX + 1];	/* IMAP: the login command's */
};


/* mmp-session.c */

/* A connection from main: take fd (closing it on failure). reject: only
 * answer this -ERR line and close (a refused implicit-TLS client, which
 * needs the handshake to read it). */
void mmp_session_new(struct mmp_worker *worker, int fd,
		     const struct sockaddr *peer, socklen_t peerlen,
		     enum mmp_listener_kind kind, const char *reject);
void mmp_enter_state(struct mmp_session *sess, enum mmp_state state);
/* Queue one reply line to the client (CR/LF in the text are neutralised). */
void mmp_reply(struct mmp_session *sess, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Queue raw bytes (a multi-line reply, a backend line) to the client. */
void mmp_reply_raw(struct mmp_session *sess, const void *data, size_t len);
/* Send buf (drained) on bev: directly to the socket when direct (a
 * plaintext socket) and nothing is queued, else (the rest) queued. */
void mmp_bev_send(struct bufferevent *bev, bool direct, struct evbuffer *buf);
/* If the client's output is written out, do what waited for that
 * (STLS: start TLS; CLOSING: close). After a reply that may have gone
 * straight to the socket, so no write callback will come. */
void mmp_session_flushed_check(struct mmp_session *sess);
/* The MMP's own answer in the session's protocol (an IMAP login answer
 * tagged with the login's tag). */
void mmp_answer(struct mmp_session *sess, enum mmp_answer answer);
/* The last reply is queued already: close once it is written. */
void mmp_session_finish_queued(struct mmp_session *sess, enum mt_conn_outcome outcome,
			       const char *end);
/* mmp_session_finish() with an answer's line. */
void mmp_session_finish_answer(struct mmp_session *sess, enum mt_conn_outcome outcome,
			       const char *end, enum mmp_answer answer);
/* Last reply, then close once it is written (at once if it was: the
 * session may be closed when this returns). end is the log line's word,
 * outcome the metrics' (lib-mail/conn.h); the first of each is kept. */
void mmp_session_finish(struct mmp_session *sess, enum mt_conn_outcome outcome,
			const char *end, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Close now: log the session line, release everything but the struct,
 * which is freed after the current callback. Idempotent. */
void mmp_session_close(struct mmp_session *sess, enum mt_conn_outcome outcome,
		       const char *end);
/* Read and run the client's command lines until the state leaves
 * AUTHORIZATION/SASL or the input runs dry. */
void mmp_session_input(struct mmp_session *sess);
/* A status line queued for the client: count it as its command's reply
 * (POP3 +OK/-ERR, an IMAP tagged line). */
void mmp_session_count_reply(struct mmp_session *sess, const char *line,
			     size_t len);
/* The TLS switch after STLS/STARTTLS: read nothing more in plaintext, and
 * start TLS once the reply is written. */
void mmp_session_starttls(struct mmp_session *sess);
/* The login's timer (LOGIN_WAIT's next try, the failed-login penalty):
 * mmp_login_timer_fired() at deadline_ms (coarse monotonic clock). */
void mmp_session_login_timer_at(struct mmp_session *sess, uint64_t deadline_ms);
/* Back to AUTHORIZATION after a login attempt; runs pipelined input. */
void mmp_session_resume(struct mmp_session *sess);
/* One error (bad command, failed login): false if that was one too many
 * and the session is now finishing. */
bool mmp_session_error(struct mmp_session *sess);
/* name for a key=value log field: spaces escaped (\x20), as log.c does
 * for control characters. Thread-local buffer, valid until the next call. */
const char *mmp_log_name(const char *name);
/* Worker drain: end pre-login sessions, let relaying ones finish. */
void mmp_sessions_drain(struct mmp_worker *worker);
/* Worker exit: close every session (freed with the worker's loop). */
void mmp_sessions_free_all(struct mmp_worker *worker);

/* mmp-commands.c */

/* Set up the session's login phase (lib-mail/pop3-login.h). */
void mmp_commands_init(struct mmp_session *sess);
/* One command line in AUTHORIZATION. */
void mmp_command_run(struct mmp_session *sess, const char *line);
/* One SASL response line (state SASL). */
void mmp_command_sasl_response(struct mmp_session *sess, const char *line);

/* mmp-phase-ops.c: the login phases' ops on a session (context), shared
 * by the POP3 and IMAP fronts' ops tables. */
void mmp_phase_reply(void *context, const char *line);
void mmp_phase_error(void *context, const char *line);
bool mmp_phase_plaintext_ok(void *context);
bool mmp_phase_tls_active(void *context);
bool mmp_phase_tls_available(void *context);
void mmp_phase_sasl_wait(void *context, bool waiting);
void mmp_phase_starttls(void *context);

/* mmp-imap.c: the IMAP front before login. */

extern const struct mt_command_table mmp_imap_command_table;
/* Set up the session's IMAP front (parser, login phase). */
void mmp_imap_init(struct mmp_session *sess);
/* Release it (at relay start and on close). */
void mmp_imap_free(struct mmp_session *sess);
/* The greeting ("* OK [CAPABILITY ...] ..."). */
void mmp_imap_greet(struct mmp_session *sess);
/* Run the client's commands until the state leaves AUTHORIZATION/SASL or
 * the input runs dry. */
void mmp_imap_input(struct mmp_session *sess);
/* STARTTLS done: forget what came before (RFC 9051 6.2.1). */
void mmp_imap_tls_started(struct mmp_session *sess);

/* mmp-login.c */

/* Check user/password and, if right, log in to the user's shard. The
 * password is wiped by the caller after this returns (dirsvc copies it). */
void mmp_login_start(struct mmp_session *sess, const char *user,
		     const char *password);
/* The login's timer fired: in LOGIN_WAIT try again, in AUTH_DELAY give
 * the delayed answer (in any other state: nothing, the session ended). */
void mmp_login_timer_fired(struct mmp_session *sess);
/* The session must end in AUTH_DELAY (login_timeout, shutdown): the
 * login's answer now, then bye (or, for a blocked address, the block's
 * answer) as its last line. */
void mmp_login_delay_cut(struct mmp_session *sess, enum mt_conn_outcome outcome,
			 const char *end, enum mmp_answer bye);
/* Release what a login in progress holds (on close). */
void mmp_login_abort(struct mmp_session *sess);

/* mmp-backend.c: the outcome of a backend login. */
enum mmp_backend_status {
	MMP_BACKEND_OK,		/* +OK / tagged OK: relay from now on */
	MMP_BACKEND_REFUSED,	/* -ERR line / tagged NO from the store: pass it on */
	MMP_BACKEND_FAILED,	/* unreachable, timeout, protocol error */
	MMP_BACKEND_STATUS_COUNT
};

typedef void mmp_backend_cb_t(struct mmp_session *sess,
			      enum mmp_backend_status status,
			      const char *line, const char *reason);

/* Connect to the address of shard's site for the session's protocol and
 * log in with AUTH PLAIN / AUTHENTICATE PLAIN (authzid = address, authcid
 * = proxy_user; IMAP first tells the store the client's address with ID),
 * all within timeout_ms. cb runs once, from the loop, with the store's
 * answer line (for IMAP without its tag; for a failure, the refusing
 * greeting if there was one, else NULL); after an OK the connected
 * bufferevent is taken with mmp_backend_take(). */
struct mmp_backend *mmp_backend_login(struct mmp_session *sess,
				      struct mmp_shard *shard, unsigned int site,
				      uint64_t timeout_ms,
				      const char *address, mmp_backend_cb_t *cb);
/* The logged-in connection (the backend object is freed). */
struct bufferevent *mmp_backend_take(struct mmp_backend **backend_p);
void mmp_backend_free(struct mmp_backend **backend_p);

/* mmp-shards.c */

struct mmp_shards *mmp_shards_new(const struct mt_config *config,
				  struct mt_loop *main_loop,
				  const struct mt_mmp_settings *set,
				  const char **error_r);
/* Main loop: stop probing (before the loop ends). */
void mmp_shards_stop(struct mmp_shards *shards);
/* Main loop, after the workers have stopped. */
void mmp_shards_free(struct mmp_shards **shards_p);
struct mmp_shard *mmp_shards_find(const struct mmp_shards *shards,
				  const char *name);
/* Does every shard have an address for protocol? (else *name_r: one
 * that has none) */
bool mmp_shards_serve(const struct mmp_shards *shards, enum mmp_protocol protocol,
		      const char **name_r);
const char *mmp_shard_name(const struct mmp_shard *shard);
/* Its sites: 1, or the sites of its replication group ([shards] order). */
unsigned int mmp_shard_sites(const struct mmp_shard *shard);
/* The site that last took a login (the group's master, as last seen). */
unsigned int mmp_shard_master(const struct mmp_shard *shard);
/* Each site's protocol address has its own down mark and probe (one store
 * process serves both, but a listener of it can fail alone). */
const char *mmp_shard_address(const struct mmp_shard *shard, unsigned int site,
			      enum mmp_protocol protocol);
const struct sockaddr *mmp_shard_sockaddr(const struct mmp_shard *shard,
					  unsigned int site,
					  enum mmp_protocol protocol,
					  socklen_t *len_r);
bool mmp_shard_site_is_down(const struct mmp_shard *shard, unsigned int site,
			    enum mmp_protocol protocol);
/* Every site of the shard is marked down for protocol. */
bool mmp_shard_is_down(const struct mmp_shard *shard, enum mmp_protocol protocol);
/* Any thread: the site did not answer or refused the session (a replica);
 * mark it down and probe it from the main loop until it answers. */
void mmp_shard_failed(struct mmp_shard *shard, unsigned int site,
		      enum mmp_protocol protocol, const char *reason);
/* Any thread: a login succeeded on site: it is up, and tried first. */
void mmp_shard_site_ok(struct mmp_shard *shard, unsigned int site,
		       enum mmp_protocol protocol);
/* Any thread: count one backend login's outcome (metrics). */
void mmp_shard_count_login(struct mmp_shard *shard, enum mmp_protocol protocol,
			   enum mmp_backend_status status);
/* For the metrics: the shards in [shards] order, whether one has an
 * address for protocol, and its backend logins by status so far. */
size_t mmp_shards_count(const struct mmp_shards *shards);
struct mmp_shard *mmp_shards_get(const struct mmp_shards *shards, size_t index);
bool mmp_shard_has(const struct mmp_shard *shard, enum mmp_protocol protocol);
uint64_t mmp_shard_logins(const struct mmp_shard *shard, enum mmp_protocol protocol,
			  enum mmp_backend_status status);

/* mmp-relay.c */

/* Logged in: relay between the client (the bufferevent is taken from
 * sess->conn) and backend (taken) until either closes. Pipelined client
 * input is forwarded first. */
void mmp_relay_start(struct mmp_session *sess, struct bufferevent *backend);
void mmp_relay_free(struct mmp_relay **relay_p);
struct mmp_splice_pool *mmp_splice_pool_new(void);
void mmp_splice_pool_free(struct mmp_splice_pool **pool_p);

/* mmp-clients.c: per client address (IPv4, or IPv6 /128; a v4-mapped
 * address counts as IPv4), kept by lib/authfail.c. Thread-safe. */

enum mmp_admit {
	MMP_ADMIT_OK,
	MMP_ADMIT_PER_CLIENT,	/* conn_limit_per_client reached */
	MMP_ADMIT_BLOCKED,	/* auth_fail_limit failures in the window */
};

enum mmp_attempt {
	MMP_ATTEMPT_OK,
	MMP_ATTEMPT_WAIT,	/* failures + checks under way reach auth_fail_limit */
	MMP_ATTEMPT_BLOCKED,	/* auth_fail_limit failures in the window */
};

struct mmp_clients_settings {
	uint64_t conn_limit_per_client;
	uint64_t auth_fail_delay;	/* ms, for the first failure */
	uint64_t auth_fail_limit;
	uint64_t auth_fail_window;	/* ms */
};

#define MMP_AUTH_FAIL_DELAY_MAX MT_AUTHFAIL_DELAY_MAX	/* ms: the penalty stops growing */

struct mmp_clients *mmp_clients_new(const struct mmp_clients_settings *set);
void mmp_clients_free(struct mmp_clients **clients_p);
/* One more connection from peer (counted when OK). */
enum mmp_admit mmp_clients_admit(struct mmp_clients *clients,
				 const struct sockaddr *peer, uint64_t now_ms);
/* A connection admitted earlier has ended. */
void mmp_clients_release(struct mmp_clients *clients,
			 const struct sockaddr *peer);
/* A failed login from peer: the delay before answering it (ms), growing
 * with the address's recent failures; *blocked_r when it has reached
 * auth_fail_limit. */
uint64_t mmp_clients_auth_failed(struct mmp_clients *clients,
				 const struct sockaddr *peer, uint64_t now_ms,
				 bool *blocked_r);
/* A login from peer is about to ask the directory: OK (counted as under
 * way until mmp_clients_attempt_done), WAIT (auth_fail_limit - failures
 * checks are under way already: try again shortly) or BLOCKED (refuse it,
 * right or wrong). */
enum mmp_attempt mmp_clients_attempt_start(struct mmp_clients *clients,
					   const struct sockaddr *peer, uint64_t now_ms);
/* That check has ended (after mmp_clients_auth_failed for a failure). */
void mmp_clients_attempt_done(struct mmp_clients *clients, const struct sockaddr *peer);
/* Forget failures older than the window (periodic). */
void mmp_clients_sweep(struct mmp_clients *clients, uint64_t now_ms);

/* mmp-metrics.c: the counters on metrics_listen (read at scrapes). */
struct mt_metrics;
void mmp_metrics_init(struct mmp_server *server, struct mt_metrics *m);
/* Any thread: a connection admitted on a listener of kind (the main
 * loop's accept), and one that ended with outcome (a worker's session,
 * or a connection refused at accept: MT_OUTCOME_REFUSED). */
void mmp_metrics_session(enum mmp_listener_kind kind);
void mmp_metrics_session_closed(enum mmp_listener_kind kind, enum mt_conn_outcome outcome);
/* Before the shards are freed. */
void mmp_metrics_free(struct mmp_server *server, struct mt_metrics *m);
/* Addresses tracked (tests, stats). */
size_t mmp_clients_count(struct mmp_clients *clients);
/* The table's metrics (lib/authfail-metrics.h, table "client"), removed
 * by mmp_clients_free. */
void mmp_clients_export_metrics(struct mmp_clients *clients, struct mt_metrics *m);

#endif
