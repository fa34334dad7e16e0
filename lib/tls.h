/* tls.h — TLS contexts with OpenSSL 3 for servers (implicit TLS on 995/465,
 * STARTTLS/STLS) and clients (relaying, proxying to shards), reloadable at
 * run time, plus libevent OpenSSL bufferevent helpers.
 *
 * Trust boundary: certificate, key and CA files come from the administrator;
 * everything on the wire is the peer's and is handled by OpenSSL. After
 * STARTTLS nothing received in plaintext may be trusted: see
 * mt_tls_bev_starttls().
 *
 * RFCs: RFC 8314 (implicit TLS for mail), RFC 3207 (SMTP STARTTLS),
 * RFC 2595 section 4 (POP3 STLS), RFC 6066 section 3 (SNI), RFC 6125
 * (host name checks, done by OpenSSL), RFC 7525/9325 (TLS >= 1.2, AEAD
 * ciphers, no compression, no renegotiation).
 *
 * Threading: one struct mt_tls may be shared by worker threads; new SSL
 * objects and reloads are serialised on a mutex, and OpenSSL's reference
 * counts keep a replaced context alive for the sessions that use it. */
#ifndef MT_TLS_H
#define MT_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

struct bufferevent;
struct event_base;

/* NULL or "" leaves a setting unset. */
struct mt_tls_settings {
	/* PEM: the certificate followed by its chain. Required for a server,
	 * optional for a client (a client certificate). */
	const char *cert_file;
	const char *key_file;	/* PEM, unencrypted */
	/* Server: request client certificates and verify those sent against
	 * it. Client: verify the server against it (plus the host name given
	 * to mt_tls_set_peer_name()); NULL means no verification
	 * (opportunistic TLS, RFC 7435). */
	const char *ca_file;
	const char *ciphers;	/* TLS 1.2 list; NULL = MT_TLS_DEFAULT_CIPHERS */
	const char *ciphersuites;	/* TLS 1.3; NULL = OpenSSL's (all AEAD) */
	int min_version;	/* TLS1_2_VERSION (default when 0) or TLS1_3_VERSION */
};

/* ECDHE/DHE key exchange with AEAD ciphers only. */
#define MT_TLS_DEFAULT_CIPHERS \
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:" \
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:" \
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:" \
	"DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:" \
	"DHE-RSA-CHACHA20-POLY1305"

enum mt_tls_role {
	MT_TLS_SERVER,
	MT_TLS_CLIENT,
};

struct mt_tls;

/* An empty context holder: mt_tls_load() fills it. */
struct mt_tls *mt_tls_new(enum mt_tls_role role);
void mt_tls_free(struct mt_tls **tls_p);
/* Build a context from set (copied) and swap it in only on success. On
 * failure the previous context, if any, stays in use and error_r names the
 * file and what is wrong with it (owned by tls, valid until its next load).
 * Main thread. */
bool mt_tls_load(struct mt_tls *tls, const struct mt_tls_settings *set,
		 const char **error_r);
/* mt_tls_load() again from the same files (SIGHUP: renewed certificates). */
bool mt_tls_reload(struct mt_tls *tls, const char **error_r);
/* The current context, with a reference the caller must SSL_CTX_free(). */
SSL_CTX *mt_tls_get_ctx(struct mt_tls *tls);

/* Handshakes begun and completed with this object's contexts (those a
 * reload replaced: until the reload; as OpenSSL counts them, SSL_CTX_sess_accept(3) and
 * _connect(3)). started - completed: failed, or still in progress. Any
 * thread. */
struct mt_tls_counts {
	uint64_t started, completed;
};
void mt_tls_get_counts(struct mt_tls *tls, struct mt_tls_counts *counts_r);
/* A new SSL on the current context. Thread-safe; static error. */
SSL *mt_tls_ssl_new(struct mt_tls *tls, const char **error_r);
/* Client side: send host as SNI (not for IP literals, RFC 6066 section 3)
 * and, when the context verifies, require the certificate to match it. */
bool mt_tls_set_peer_name(SSL *ssl, const char *host, const char **error_r);
/* "TLSv1.3 TLS_AES_256_GCM_SHA384" for the session's log line. */
const char *mt_tls_describe(const SSL *ssl, char *buf, size_t size);

/* Bufferevents. Each takes ownership of the fd: on failure it is closed and
 * NULL is returned with a static error. The bufferevent has
 * BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS, starts its handshake at
 * once (BEV_EVENT_CONNECTED reports the end of it) and accepts a peer that
 * closes without close_notify as EOF: mail protocols mark their own ends
 * (QUIT, CRLF.CRLF), so a truncation cannot pass for a complete message. */

/* Implicit TLS on an accepted fd (POP3S 995, submissions 465). */
struct bufferevent *mt_tls_bev_accept(struct mt_tls *tls,
				      struct event_base *base, int fd,
				      const char **error_r);
/* A client connection on a connected (or connecting) fd; host may be NULL. */
struct bufferevent *mt_tls_bev_connect(struct mt_tls *tls,
				       struct event_base *base, int fd,
				       const char *host, const char **error_r);
/* STARTTLS / STLS: replace the plain socket bufferevent *plain_p by a TLS one
 * on the same fd, in tls's role (host: SNI for a client, else NULL).
 *
 * It re-wraps the fd (bufferevent_openssl_socket_new) rather than stacking a
 * filter on the plain bufferevent: one layer per connection costs less
 * memory and copying for tens of thousands of connections, and freeing the
 * plain bufferevent drops every byte the peer sent after the STARTTLS command
 * in plaintext. That is required: RFC 3207 section 4.2 (the server "MUST
 * discard any knowledge obtained from the client" before TLS) and section 6,
 * RFC 2595 section 4 for STLS — a man in the middle can append commands to the
 * plaintext "STARTTLS" line, and a server that kept them would run them as if
 * they came over TLS (CVE-2011-0411 and the bug class since). The count of
 * dropped bytes is returned in *discarded_r, for the log.
 *
 * Precondition: the plaintext reply ("220 Ready to start TLS", "+OK Begin
 * TLS") must already be written to the socket, i.e. call this from the write
 * callback once the output buffer is empty; otherwise it fails and leaves
 * *plain_p alone. On success *plain_p is freed and set to NULL; the new
 * bufferevent needs its callbacks set and reading enabled. */
struct bufferevent *mt_tls_bev_starttls(struct mt_tls *tls,
					struct bufferevent **plain_p,
					const char *host, size_t *discarded_r,
					const char **error_r);
/* Why a TLS bufferevent failed (after BEV_EVENT_ERROR), for the log. */
const char *mt_tls_bev_error(struct bufferevent *bev, char *buf, size_t size);

#endif
