/* popstore.h — what mailtier-popstore's parts share: the daemon object
 * (config, store, directory client, TLS, the session registry) that main.c
 * builds, and the entry points of the protocols, LMTP in
 * (lmtp-session.c), POP3 and IMAP out (pop3-session.c, imap-session.c).
 *
 * Trust boundary: none of its own; see each protocol's files. Everything
 * runs on the one main loop thread; the store and the directory do their
 * blocking work on their own threads and call back on this loop. */
#ifndef MT_POPSTORE_H
#define MT_POPSTORE_H

#include "popstore-settings.h"
#include "mailtier-settings.h"
#include "conn.h"
#include "loglimit.h"
#include "loop.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct mt_config;
struct mt_loop;
struct mt_store;
struct mt_store_port;
struct mt_dirsvc;
struct mt_dirsvc_client;
struct mt_timer;
struct mt_tls;
struct mt_authfail;
struct lmtp_session;
struct pop3_session;
struct popstore_watch;

#define POPSTORE_NAME "mailtier-popstore"

/* The protocols a shard serves: its listeners' label in the metrics and
 * the word in log lines (popstore_protocol_names: lmtp, pop3, imap; the
 * implicit-TLS listeners count with their protocol). */
enum popstore_protocol { POPSTORE_LMTP, POPSTORE_POP3, POPSTORE_IMAP, POPSTORE_PROTOCOL_COUNT };
extern const char *const popstore_protocol_names[POPSTORE_PROTOCOL_COUNT];

/* How many octets a session may leave in its output buffer before it
 * stops producing more (reading commands, reading message bodies), and
 * how many pipelined input octets it reads ahead of the command it runs. */
#define POPSTORE_OUTPUT_HIGH (128 * 1024)
#define POPSTORE_INPUT_HIGH (64 * 1024)

struct mt_daemon;

struct popstore {
	struct mt_config *config;
	const struct mt_popstore_settings *set;
	const struct mt_global_settings *global;
	const char *shard;		/* this shard's name (the users' mailHost) */
	char *hostname;			/* greeting and Received: */

	struct mt_loop *loop;
	struct mt_store *store;
	struct mt_store_port *port;
	struct mt_dirsvc *dirsvc;
	struct mt_dirsvc_client *dir;
	struct mt_tls *tls;		/* NULL: no certificate, no STLS/POP3S */

	struct mt_cidr *lmtp_clients, *proxy_addresses;
	size_t n_lmtp_clients, n_proxy_addresses;
	char *proxy_password;		/* NULL: proxy logins refused */

	unsigned int sessions;		/* LMTP + POP3 + IMAP now */
	struct mt_conn_list lmtp_sessions;	/* lib-mail/conn.h */
	struct mt_conn_list pop3_sessions;
	struct mt_conn_list imap_sessions;
	/* The IMAP sessions' selected mailboxes (watch.c; made at the first). */
	struct popstore_watch **watches;
	/* Failed POP3 logins per client address (pop3-auth.c; made on the
	 * first failure, freed by pop3_sessions_free_all). */
	struct mt_authfail *auth_failures;
	/* Refused proxy credentials' warnings, per address (login.c). */
	struct mt_loglimit proxy_log_limit;
	bool proxy_log_limit_ready;
	/* Open POP3/IMAP sessions per client address, and logged-in IMAP
	 * sessions per user (keyed by a digest of the name): popstore.c. */
	struct mt_authfail *address_sessions, *user_sessions;
	bool fatal;			/* the store failed: exit non-zero */
	/* Replication: --create-group; the daemon (its exit_status: 75 after
	 * a demotion, to restart as a replica). */
	bool create_group;
	struct mt_daemon *daemon;
	struct mt_timer *failed_check;	/* main.c: a panic seen off-session */

	/* Daemon-wide counters for the stats line. */
	uint64_t lmtp_connections, pop3_connections, imap_connections,
		refused_connections;
	uint64_t messages_delivered, logins, logins_failed;
	struct popstore_metrics *metrics;	/* popstore-metrics.c */
};

/* popstore.c (the daemon's shared glue; main.c starts it) */

/* A POP3/IMAP session from peer_ip ends: its per-address count (if it
 * was counted: not from proxy_addresses). */
void popstore_address_close(struct popstore *ps, const char *peer_ip, bool from_proxy);
/* An IMAP login of user: false if imap_max_user_sessions are logged in
 * already; else counted until popstore_user_close. */
bool popstore_user_open(struct popstore *ps, const char *user);
void popstore_user_close(struct popstore *ps, const char *user);
/* The tables go (at exit). */
void popstore_limits_free(struct popstore *ps);

/* Account for a new session; false (and nothing counted) if max_sessions
 * are open already, or, for a client that is not trusted (neither in
 * proxy_addresses nor an LMTP client), all but the tenth of them kept
 * for the trusted ones: the caller refuses the connection. */
bool popstore_session_add(struct popstore *ps, bool trusted);
/* A session is gone (its memory is freed from the loop later). */
void popstore_session_remove(struct popstore *ps);
/* The store reported MT_STORE_FATAL: log, stop the loop, exit non-zero so
 * systemd restarts the daemon into recovery. Nothing is acknowledged
 * after this. */
void popstore_store_fatal(struct popstore *ps, const char *error);
/* A replicated store that is not serving (a replica, no master yet, a
 * master without a quorum, demoted): refuse a new session of protocol
 * with its temporary refusal naming why and the master, fill line and
 * return false. True: serve it. */
bool popstore_store_serving(struct popstore *ps, enum popstore_protocol protocol,
			    char *line, size_t size);
/* Socket options for an accepted connection: TCP_NODELAY, because a reply
 * is often a status line and then data from the store a moment later, and
 * Nagle's algorithm would hold the second back for the client's delayed
 * ACK (40 ms per command). */
void popstore_socket_setup(int fd);
struct bufferevent;
struct mt_logctx;
/* An accepted POP3 or IMAP connection: the session count (when
 * max_sessions are open: busy written to a plain socket, fd closed), the
 * socket's options and its bufferevent (TLS for implicit_tls); addr gets
 * the peer's text. NULL when refused or failed (logged; counted only as
 * a session closed, refused or error). */
struct bufferevent *popstore_accept(struct popstore *ps, int fd,
				    const struct sockaddr *peer, bool implicit_tls,
				    enum popstore_protocol protocol, const char *busy,
				    const struct mt_logctx *log,
				    char addr[MT_SOCKADDR_STRLEN]);
/* A POP3 or IMAP session's TLS in its log (protocol: "pop3", "imap"):
 * the parameters once the handshake is done (nothing on a plaintext
 * connection), and why a TLS connection failed. */
void popstore_log_tls_up(struct bufferevent *bev, const struct mt_logctx *log,
			 const char *protocol);
void popstore_log_tls_error(struct bufferevent *bev, const struct mt_logctx *log,
			    const char *protocol);
/* Is peer allowed to log in with the proxy credential? */
bool popstore_is_proxy(const struct popstore *ps, const struct sockaddr *peer);
struct mt_strlist;
struct mt_cidr;
/* The CIDR list of a setting (checked at load); *count_r entries. */
struct mt_cidr *popstore_parse_cidrs(const struct mt_strlist *list, size_t *count_r);
/* Open the shard's store as set says (with recovery) and its completion
 * port on ps->loop; fatal on failure. */
void popstore_open_store(struct popstore *ps);

/* lmtp-session.c */

void lmtp_session_accept(struct popstore *ps, int fd, const struct sockaddr *peer);
/* SIGTERM: idle sessions say 421 and close, busy ones after their
 * transaction. */
void lmtp_sessions_drain(struct popstore *ps);
/* Shutdown after the loop has returned: free what is left. */
void lmtp_sessions_free_all(struct popstore *ps);

/* pop3-session.c */

void pop3_session_accept(struct popstore *ps, int fd, const struct sockaddr *peer,
			 bool implicit_tls);
void pop3_sessions_drain(struct popstore *ps);
void pop3_sessions_free_all(struct popstore *ps);

/* imap-session.c */

void imap_session_accept(struct popstore *ps, int fd, const struct sockaddr *peer,
			 bool implicit_tls);
void imap_sessions_drain(struct popstore *ps);
void imap_sessions_free_all(struct popstore *ps);

/* popstore-metrics.c: the counters on metrics_listen (read at scrapes). */
struct mt_commands;
struct mt_metrics;
void popstore_metrics_init(struct popstore *ps, struct mt_metrics *m);
/* A session ended with outcome (lib-mail/conn.h): count it and add its
 * command counters; commands NULL for a connection turned away at accept
 * (no session). */
void popstore_metrics_session_end(struct popstore *ps, enum popstore_protocol protocol,
				  enum mt_conn_outcome outcome,
				  const struct mt_commands *commands);
/* Before the store closes (after the sessions are freed). */
void popstore_metrics_free(struct popstore *ps);

#endif
