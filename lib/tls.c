/* tls.c — OpenSSL 3 server and client contexts, reload, and libevent
 * OpenSSL bufferevents (see tls.h).
 *
 * Trust boundary: certificate, key and CA files are the administrator's;
 * handshakes and records are the peer's and are parsed by OpenSSL only.
 * RFCs: RFC 8314, RFC 3207 section 4.2, RFC 2595 section 4, RFC 6066
 * section 3, RFC 9325 (recommendations for TLS use). */
#include "tls.h"
#include "alloc.h"
#include "log.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

/* Sessions kept for resumption by id; TLS 1.3 and ticket resumption need no
 * server memory, so this stays small. */
#define SESSION_CACHE_SIZE 1024
#define SESSION_ID_CONTEXT "mailtier"

struct tls_conf {
	char *cert_file, *key_file, *ca_file, *ciphers, *ciphersuites;
	int min_version;
};

struct mt_tls {
	enum mt_tls_role role;
	pthread_mutex_t lock;	/* guards ctx: workers read, reload swaps */
	SSL_CTX *ctx;		/* NULL until the first successful load */
	struct tls_conf conf;	/* what ctx was built from */
	char *error;
	/* Handshakes counted by contexts a reload replaced (under lock). */
	struct mt_tls_counts retired;
};

/* OpenSSL's own per-context counters (SSL_CTX_sess_accept(3)). */
static void ctx_counts(const struct mt_tls *tls, SSL_CTX *ctx, struct mt_tls_counts *c)
{
	if (ctx == NULL)
		return;
	if (tls->role == MT_TLS_SERVER) {
		c->started += (uint64_t)SSL_CTX_sess_accept(ctx);
		c->completed += (uint64_t)SSL_CTX_sess_accept_good(ctx);
	} else {
		c->started += (uint64_t)SSL_CTX_sess_connect(ctx);
		c->completed += (uint64_t)SSL_CTX_sess_connect_good(ctx);
	}
}

/* An unset setting may come as NULL or as "" from the config file. */
static char *dup_or_null(const char *s)
{
	return s != NULL && s[0] != '\0' ? mt_xstrdup(s) : NULL;
}

static void conf_free(struct tls_conf *c)
{
	MT_FREE(&c->cert_file);
	MT_FREE(&c->key_file);
	MT_FREE(&c->ca_file);
	MT_FREE(&c->ciphers);
	MT_FREE(&c->ciphersuites);
}

/* The first (root-cause) error on OpenSSL's queue, which is then cleared. */
static const char *openssl_reason(char *buf, size_t size)
{
	unsigned long err = ERR_get_error();
	ERR_clear_error();
	if (err == 0)
		return "unknown error";
	const char *reason = ERR_reason_error_string(err);
	if (reason != NULL)
		snprintf(buf, size, "%s", reason);
	else
		ERR_error_string_n(err, buf, size);
	return buf;
}

/* Format an error owned by tls; with_openssl appends OpenSSL's reason. */
static const char *tls_error(struct mt_tls *tls, bool with_openssl,
			     const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static const char *tls_error(struct mt_tls *tls, bool with_openssl,
			     const char *fmt, ...)
{
	char msg[512], reason[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (with_openssl && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s",
			 openssl_reason(reason, sizeof(reason)));
	ERR_clear_error();
	free(tls->error);
	tls->error = mt_xstrdup(msg);
	return tls->error;
}

/* Never prompt on a terminal for a pass phrase: encrypted keys just fail. */
static int no_passphrase_cb(char *buf, int size, int rwflag, void *userdata)
{
	(void)buf; (void)size; (void)rwflag; (void)userdata;
	return 0;
}

static bool load_cert_key(struct mt_tls *tls, SSL_CTX *ctx,
			  const struct tls_conf *c, const char **error_r)
{
	if (SSL_CTX_use_certificate_chain_file(ctx, c->cert_file) != 1) {
		*error_r = tls_error(tls, true, "cannot load certificate chain %s",
				     c->cert_file);
		return false;
	}
	BIO *bio = BIO_new_file(c->key_file, "r");
	if (bio == NULL) {
		*error_r = tls_error(tls, true, "cannot open private key %s",
				     c->key_file);
		return false;
	}
	EVP_PKEY *pkey = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase_cb, NULL);
	BIO_free(bio);
	if (pkey == NULL) {
		*error_r = tls_error(tls, true, "cannot read private key %s "
				     "(unencrypted PEM expected)", c->key_file);
		return false;
	}
	/* Check the pair ourselves so the error names both files. */
	X509 *cert = SSL_CTX_get0_certificate(ctx);
	if (X509_check_private_key(cert, pkey) != 1) {
		EVP_PKEY_free(pkey);
		*error_r = tls_error(tls, false, "private key %s does not match "
				     "certificate %s", c->key_file, c->cert_file);
		return false;
	}
	bool ok = SSL_CTX_use_PrivateKey(ctx, pkey) == 1 &&
		SSL_CTX_check_private_key(ctx) == 1;
	EVP_PKEY_free(pkey);
	if (!ok) {
		*error_r = tls_error(tls, true, "cannot use private key %s",
				     c->key_file);
		return false;
	}
	if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0)
		mt_warning("tls certificate %s has expired", c->cert_file);
	return true;
}

static bool setup_verify(struct mt_tls *tls, SSL_CTX *ctx,
			 const struct tls_conf *c, const char **error_r)
{
	if (SSL_CTX_load_verify_locations(ctx, c->ca_file, NULL) != 1) {
		*error_r = tls_error(tls, true, "cannot load CA file %s",
				     c->ca_file);
		return false;
	}
	if (tls->role == MT_TLS_SERVER) {
		/* Tell clients which CAs we accept; verify what they send. */
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(c->ca_file);
		if (names == NULL) {
			*error_r = tls_error(tls, true, "cannot read CA names "
					     "from %s", c->ca_file);
			return false;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	return true;
}

static SSL_CTX *build_ctx(struct mt_tls *tls, const struct tls_conf *c,
			  const char **error_r)
{
	bool server = tls->role == MT_TLS_SERVER;
	int min_version = c->min_version != 0 ? c->min_version : TLS1_2_VERSION;

	ERR_clear_error();
	if (min_version != TLS1_2_VERSION && min_version != TLS1_3_VERSION) {
		*error_r = tls_error(tls, false, "TLS minimum version must be "
				     "TLS 1.2 or TLS 1.3");
		return NULL;
	}
	if (server && (c->cert_file == NULL || c->key_file == NULL)) {
		*error_r = tls_error(tls, false, "a TLS server needs both a "
				     "certificate file and a key file");
		return NULL;
	}
	if ((c->cert_file == NULL) != (c->key_file == NULL)) {
		*error_r = tls_error(tls, false, "a TLS client certificate needs "
				     "both a certificate file and a key file");
		return NULL;
	}
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() :
				   TLS_client_method());
	if (ctx == NULL) {
		*error_r = tls_error(tls, true, "SSL_CTX_new failed");
		return NULL;
	}
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase_cb);
	SSL_CTX_set_min_proto_version(ctx, min_version);
	/* RFC 9325: no compression (CRIME), no renegotiation. */
	uint64_t options = SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION;
	if (server)
		options |= SSL_OP_CIPHER_SERVER_PREFERENCE;
	SSL_CTX_set_options(ctx, options);
	/* Idle connections give their 2 x 16 kB record buffers back. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);

	const char *ciphers = c->ciphers != NULL ? c->ciphers : MT_TLS_DEFAULT_CIPHERS;
	if (SSL_CTX_set_cipher_list(ctx, ciphers) != 1) {
		*error_r = tls_error(tls, true, "invalid TLS cipher list '%s'",
				     ciphers);
		goto fail;
	}
	if (c->ciphersuites != NULL &&
	    SSL_CTX_set_ciphersuites(ctx, c->ciphersuites) != 1) {
		*error_r = tls_error(tls, true, "invalid TLS 1.3 ciphersuites '%s'",
				     c->ciphersuites);
		goto fail;
	}
	if (server) {
		SSL_CTX_set_dh_auto(ctx, 1);
		SSL_CTX_sess_set_cache_size(ctx, SESSION_CACHE_SIZE);
		SSL_CTX_set_session_id_context(ctx,
			(const unsigned char *)SESSION_ID_CONTEXT,
			sizeof(SESSION_ID_CONTEXT) - 1);
	}
	if (c->cert_file != NULL && !load_cert_key(tls, ctx, c, error_r))
		goto fail;
	if (c->ca_file != NULL && !setup_verify(tls, ctx, c, error_r))
		goto fail;
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

struct mt_tls *mt_tls_new(enum mt_tls_role role)
{
	struct mt_tls *tls = mt_xcalloc(1, sizeof(*tls));
	tls->role = role;
	pthread_mutex_init(&tls->lock, NULL);
	return tls;
}

void mt_tls_free(struct mt_tls **tls_p)
{
	struct mt_tls *tls = *tls_p;
	if (tls == NULL)
		return;
	*tls_p = NULL;
	SSL_CTX_free(tls->ctx);	/* live sessions hold their own reference */
	conf_free(&tls->conf);
	pthread_mutex_destroy(&tls->lock);
	free(tls->error);
	free(tls);
}

bool mt_tls_load(struct mt_tls *tls, const struct mt_tls_settings *set,
		 const char **error_r)
{
	struct tls_conf conf = {
		.cert_file = dup_or_null(set->cert_file),
		.key_file = dup_or_null(set->key_file),
		.ca_file = dup_or_null(set->ca_file),
		.ciphers = dup_or_null(set->ciphers),
		.ciphersuites = dup_or_null(set->ciphersuites),
		.min_version = set->min_version,
	};
	SSL_CTX *ctx = build_ctx(tls, &conf, error_r);
	if (ctx == NULL) {
		conf_free(&conf);
		return false;
	}
	pthread_mutex_lock(&tls->lock);
	SSL_CTX *old = tls->ctx;
	tls->ctx = ctx;
	ctx_counts(tls, old, &tls->retired);
	pthread_mutex_unlock(&tls->lock);
	/* Drops only our reference: sessions made from old keep it alive. */
	SSL_CTX_free(old);
	conf_free(&tls->conf);
	tls->conf = conf;
	return true;
}

bool mt_tls_reload(struct mt_tls *tls, const char **error_r)
{
	if (tls->ctx == NULL) {
		*error_r = "TLS was never loaded";
		return false;
	}
	const struct mt_tls_settings set = {
		.cert_file = tls->conf.cert_file,
		.key_file = tls->conf.key_file,
		.ca_file = tls->conf.ca_file,
		.ciphers = tls->conf.ciphers,
		.ciphersuites = tls->conf.ciphersuites,
		.min_version = tls->conf.min_version,
	};
	return mt_tls_load(tls, &set, error_r);
}

void mt_tls_get_counts(struct mt_tls *tls, struct mt_tls_counts *counts_r)
{
	pthread_mutex_lock(&tls->lock);
	*counts_r = tls->retired;
	ctx_counts(tls, tls->ctx, counts_r);
	pthread_mutex_unlock(&tls->lock);
}

SSL_CTX *mt_tls_get_ctx(struct mt_tls *tls)
{
	pthread_mutex_lock(&tls->lock);
	SSL_CTX *ctx = tls->ctx;
	if (ctx != NULL)
		SSL_CTX_up_ref(ctx);
	pthread_mutex_unlock(&tls->lock);
	return ctx;
}

SSL *mt_tls_ssl_new(struct mt_tls *tls, const char **error_r)
{
	SSL *ssl = NULL;
	pthread_mutex_lock(&tls->lock);
	if (tls->ctx != NULL)
		ssl = SSL_new(tls->ctx);	/* takes its own ctx reference */
	pthread_mutex_unlock(&tls->lock);
	if (ssl == NULL) {
		ERR_clear_error();
		*error_r = tls->ctx == NULL ? "TLS is not configured" :
			"SSL_new failed";
	}
	return ssl;
}

bool mt_tls_set_peer_name(SSL *ssl, const char *host, const char **error_r)
{
	unsigned char addr[sizeof(struct in6_addr)];
	bool literal = inet_pton(AF_INET, host, addr) == 1 ||
		inet_pton(AF_INET6, host, addr) == 1;

	/* RFC 6066 section 3: "Literal IPv4 and IPv6 addresses are not
	 * permitted in HostName." */
	if (!literal && SSL_set_tlsext_host_name(ssl, host) != 1) {
		ERR_clear_error();
		*error_r = "cannot set the TLS SNI host name";
		return false;
	}
	if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) == 0)
		return true;
	X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
	X509_VERIFY_PARAM_set_hostflags(param,
					X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(param, host) :
		SSL_set1_host(ssl, host);
	if (ok != 1) {
		ERR_clear_error();
		*error_r = "cannot set the TLS host name to verify";
		return false;
	}
	return true;
}

const char *mt_tls_describe(const SSL *ssl, char *buf, size_t size)
{
	snprintf(buf, size, "%s %s", SSL_get_version(ssl),
		 SSL_get_cipher_name(ssl));
	return buf;
}

/* Bufferevents */

static struct bufferevent *bev_new(struct mt_tls *tls, struct event_base *base,
				   int fd, const char *host,
				   const char **error_r)
{
	SSL *ssl = mt_tls_ssl_new(tls, error_r);
	if (ssl == NULL) {
		close(fd);
		return NULL;
	}
	if (host != NULL && !mt_tls_set_peer_name(ssl, host, error_r)) {
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	struct bufferevent *bev = bufferevent_openssl_socket_new(base, fd, ssl,
		tls->role == MT_TLS_SERVER ? BUFFEREVENT_SSL_ACCEPTING :
		BUFFEREVENT_SSL_CONNECTING,
		BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL) {
		/* libevent 2.1 frees the SSL on this path, not the fd. */
		close(fd);
		*error_r = "bufferevent_openssl_socket_new failed";
		return NULL;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

struct bufferevent *mt_tls_bev_accept(struct mt_tls *tls,
				      struct event_base *base, int fd,
				      const char **error_r)
{
	if (tls->role != MT_TLS_SERVER) {
		close(fd);
		*error_r = "not a TLS server context";
		return NULL;
	}
	return bev_new(tls, base, fd, NULL, error_r);
}

struct bufferevent *mt_tls_bev_connect(struct mt_tls *tls,
				       struct event_base *base, int fd,
				       const char *host, const char **error_r)
{
	if (tls->role != MT_TLS_CLIENT) {
		close(fd);
		*error_r = "not a TLS client context";
		return NULL;
	}
	return bev_new(tls, base, fd, host, error_r);
}

struct bufferevent *mt_tls_bev_starttls(struct mt_tls *tls,
					struct bufferevent **plain_p,
					const char *host, size_t *discarded_r,
					const char **error_r)
{
	struct bufferevent *plain = *plain_p;

	if (bufferevent_openssl_get_ssl(plain) != NULL) {
		*error_r = "TLS is already active";
		return NULL;
	}
	if (evbuffer_get_length(bufferevent_get_output(plain)) != 0) {
		*error_r = "the plaintext reply to STARTTLS is not flushed yet";
		return NULL;
	}
	int fd = bufferevent_getfd(plain);
	if (fd < 0) {
		*error_r = "the bufferevent has no socket";
		return NULL;
	}
	struct event_base *base = bufferevent_get_base(plain);
	/* RFC 3207 section 4.2: whatever arrived in plaintext after the
	 * command goes, unread, with the plain bufferevent. Detach the fd
	 * first so freeing it does not close the socket. */
	*discarded_r = evbuffer_get_length(bufferevent_get_input(plain));
	bufferevent_disable(plain, EV_READ | EV_WRITE);
	bufferevent_setfd(plain, -1);
	bufferevent_free(plain);
	*plain_p = NULL;
	return bev_new(tls, base, fd, host, error_r);
}

const char *mt_tls_bev_error(struct bufferevent *bev, char *buf, size_t size)
{
	/* libevent hands errors back last first, mixed with bare SSL_get_error()
	 * codes (no library part): keep the earliest real one, the root cause. */
	unsigned long err = 0;
	for (unsigned long e; (e = bufferevent_get_openssl_error(bev)) != 0;)
		if (ERR_GET_LIB(e) != 0)
			err = e;
	if (err == 0) {
		snprintf(buf, size, "connection closed or reset");
		return buf;
	}
	const char *reason = ERR_reason_error_string(err);
	if (reason != NULL)
		snprintf(buf, size, "%s", reason);
	else
		ERR_error_string_n(err, buf, size);
	return buf;
}
