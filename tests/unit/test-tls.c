/* test-tls.c — unit tests for lib/tls: throwaway certificates made with the
 * OpenSSL API at test time, real handshakes over socketpairs, TLS 1.1
 * refused, host name verification, clear load errors, reload keeping the old
 * context on failure, and the libevent helpers including STARTTLS dropping
 * plaintext injected after the command (RFC 3207 section 4.2). */
#include "tls.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cmocka.h>

static char tmpdir[64];
static char cert1[128], key1[128], cert2[128], key2[128], badkey[128],
	enckey[128], live_cert[128], live_key[128];
static X509 *cert1_x509, *cert2_x509;

/* Certificates */

static X509 *make_cert(EVP_PKEY *key, const char *cn)
{
	static long serial = 1;
	X509 *x = X509_new();
	assert_non_null(x);
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, key);
	X509_NAME *name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
				   (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, name);
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name,
						  "DNS:localhost,IP:127.0.0.1");
	assert_non_null(ext);
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	assert_true(X509_sign(x, key, EVP_sha256()) > 0);
	return x;
}

static void write_key(const char *path, EVP_PKEY *key, bool encrypt)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_PrivateKey(f, key,
		encrypt ? EVP_aes_128_cbc() : NULL,
		encrypt ? (unsigned char *)"secret" : NULL, encrypt ? 6 : 0,
		NULL, NULL), 1);
	fclose(f);
}

static void write_cert(const char *path, X509 *x)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, x), 1);
	fclose(f);
}

static void copy_file(const char *from, const char *to)
{
	char buf[8192];
	FILE *in = fopen(from, "r"), *out = fopen(to, "w");
	assert_non_null(in);
	assert_non_null(out);
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	fclose(out);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/mt-test-tls-XXXXXX");
	if (mkdtemp(tmpdir) == NULL)
		return -1;
#define P(var, name) snprintf(var, sizeof(var), "%s/%s", tmpdir, name)
	P(cert1, "cert1.pem"); P(key1, "key1.pem");
	P(cert2, "cert2.pem"); P(key2, "key2.pem");
	P(badkey, "bad.key"); P(enckey, "enc.key");
	P(live_cert, "live.crt"); P(live_key, "live.key");
#undef P
	EVP_PKEY *k1 = EVP_EC_gen("P-256"), *k2 = EVP_EC_gen("P-256");
	if (k1 == NULL || k2 == NULL)
		return -1;
	cert1_x509 = make_cert(k1, "one.test");
	cert2_x509 = make_cert(k2, "two.test");
	write_cert(cert1, cert1_x509);
	write_cert(cert2, cert2_x509);
	write_key(key1, k1, false);
	write_key(key2, k2, false);
	write_key(enckey, k1, true);
	FILE *f = fopen(badkey, "w");
	fputs("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n", f);
	fclose(f);
	EVP_PKEY_free(k1);
	EVP_PKEY_free(k2);
	return 0;
}

static int teardown(void **state)
{
	const char *files[] = { cert1, key1, cert2, key2, badkey, enckey,
				live_cert, live_key };
	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(files[i]);
	rmdir(tmpdir);
	X509_free(cert1_x509);
	X509_free(cert2_x509);
	return 0;
}

/* Contexts and in-memory handshakes */

static struct mt_tls *server_tls(const char *cert, const char *key)
{
	const struct mt_tls_settings set = { .cert_file = cert, .key_file = key };
	const char *error = NULL;
	struct mt_tls *tls = mt_tls_new(MT_TLS_SERVER);
	if (!mt_tls_load(tls, &set, &error))
		fail_msg("server load: %s", error);
	return tls;
}

static struct mt_tls *client_tls(const char *ca_file)
{
	const struct mt_tls_settings set = { .ca_file = ca_file };
	const char *error = NULL;
	struct mt_tls *tls = mt_tls_new(MT_TLS_CLIENT);
	if (!mt_tls_load(tls, &set, &error))
		fail_msg("client load: %s", error);
	return tls;
}

static SSL *new_ssl(struct mt_tls *tls, const char *host)
{
	const char *error = NULL;
	SSL *ssl = mt_tls_ssl_new(tls, &error);
	if (ssl == NULL)
		fail_msg("mt_tls_ssl_new: %s", error);
	if (host != NULL && !mt_tls_set_peer_name(ssl, host, &error))
		fail_msg("mt_tls_set_peer_name: %s", error);
	return ssl;
}

static bool ssl_step(SSL *ssl, int *ret_r, unsigned long *err_r)
{
	if (*ret_r == 1)
		return true;
	*ret_r = SSL_do_handshake(ssl);
	if (*ret_r == 1)
		return true;
	int e = SSL_get_error(ssl, *ret_r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return true;
	*err_r = ERR_peek_error();
	ERR_clear_error();
	return false;
}

/* Handshake client and server over a non-blocking socketpair, then send
 * "ping" through. true if both ends completed. */
static bool handshake(SSL *client, SSL *server, unsigned long *server_err_r)
{
	int sv[2];
	unsigned long client_err = 0, server_err = 0;
	int rc = 0, rs = 0;
	bool ok = false;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	SSL_set_fd(client, sv[0]);
	SSL_set_fd(server, sv[1]);
	SSL_set_connect_state(client);
	SSL_set_accept_state(server);
	for (int i = 0; i < 1000; i++) {
		if (!ssl_step(client, &rc, &client_err) ||
		    !ssl_step(server, &rs, &server_err))
			break;
		if (rc == 1 && rs == 1) {
			ok = true;
			break;
		}
	}
	if (ok) {
		char buf[8] = "";
		assert_int_equal(SSL_write(client, "ping", 4), 4);
		assert_int_equal(SSL_read(server, buf, sizeof(buf)), 4);
		assert_memory_equal(buf, "ping", 4);
	} else if (server_err == 0) {
		/* The client gave up first: let the server see its alert. */
		(void)ssl_step(server, &rs, &server_err);
	}
	if (server_err_r != NULL)
		*server_err_r = server_err;
	close(sv[0]);
	close(sv[1]);
	return ok;
}

static void test_handshake_verified(void **state)
{
	struct mt_tls *server = server_tls(cert1, key1);
	struct mt_tls *client = client_tls(cert1);
	char desc[128];
	(void)state;

	SSL *c = new_ssl(client, "localhost"), *s = new_ssl(server, NULL);
	assert_true(handshake(c, s, NULL));
	assert_int_equal(SSL_get_verify_result(c), X509_V_OK);
	assert_true(SSL_version(c) >= TLS1_2_VERSION);
	assert_int_equal(X509_cmp(SSL_get0_peer_certificate(c), cert1_x509), 0);
	assert_non_null(strstr(mt_tls_describe(c, desc, sizeof(desc)), "TLSv1."));
	/* The server offered no compression and the protocol is AEAD. */
	assert_null(SSL_get_current_compression(s));
	assert_true(SSL_CIPHER_is_aead(SSL_get_current_cipher(s)));
	SSL_free(c);
	SSL_free(s);

	/* IP literals: checked against the IP SAN, not sent as SNI. */
	c = new_ssl(client, "127.0.0.1");
	s = new_ssl(server, NULL);
	assert_true(handshake(c, s, NULL));
	assert_null(SSL_get_servername(s, TLSEXT_NAMETYPE_host_name));
	SSL_free(c);
	SSL_free(s);

	/* SNI reaches the server for names. */
	c = new_ssl(client, "localhost");
	s = new_ssl(server, NULL);
	assert_true(handshake(c, s, NULL));
	assert_string_equal(SSL_get_servername(s, TLSEXT_NAMETYPE_host_name),
			    "localhost");
	SSL_free(c);
	SSL_free(s);
	mt_tls_free(&server);
	mt_tls_free(&client);
	assert_null(server);
}

static void test_verify_failures(void **state)
{
	struct mt_tls *server = server_tls(cert1, key1);
	struct mt_tls *verifying = client_tls(cert2);	/* wrong CA */
	struct mt_tls *by_name = client_tls(cert1);
	struct mt_tls *opportunistic = client_tls(NULL);
	(void)state;

	const char *hosts[] = { "wrong.example", "10.0.0.1" };
	for (size_t i = 0; i < 2; i++) {
		SSL *c = new_ssl(by_name, hosts[i]), *s = new_ssl(server, NULL);
		if (handshake(c, s, NULL))
			fail_msg("host %s was accepted", hosts[i]);
		assert_int_equal(SSL_get_verify_result(c), i == 0 ?
				 X509_V_ERR_HOSTNAME_MISMATCH :
				 X509_V_ERR_IP_ADDRESS_MISMATCH);
		SSL_free(c);
		SSL_free(s);
	}
	SSL *c = new_ssl(verifying, "localhost"), *s = new_ssl(server, NULL);
	assert_false(handshake(c, s, NULL));
	SSL_free(c);
	SSL_free(s);

	/* Without a CA file the client encrypts without verifying. */
	c = new_ssl(opportunistic, "wrong.example");
	s = new_ssl(server, NULL);
	assert_true(handshake(c, s, NULL));
	SSL_free(c);
	SSL_free(s);
	mt_tls_free(&server);
	mt_tls_free(&verifying);
	mt_tls_free(&by_name);
	mt_tls_free(&opportunistic);
}

/* A client that can only speak TLS 1.0/1.1. */
static SSL_CTX *old_client_ctx(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_security_level(ctx, 0);
	SSL_CTX_set_min_proto_version(ctx, TLS1_VERSION);
	SSL_CTX_set_max_proto_version(ctx, TLS1_1_VERSION);
	assert_int_equal(SSL_CTX_set_cipher_list(ctx, "DEFAULT:@SECLEVEL=0"), 1);
	return ctx;
}

static void test_tls11_refused(void **state)
{
	SSL_CTX *old = old_client_ctx();
	unsigned long server_err = 0;
	(void)state;

	/* Control: a permissive server does speak TLS 1.1 with this client,
	 * so a failure below is our server refusing, not the client. */
	SSL_CTX *permissive = SSL_CTX_new(TLS_server_method());
	SSL_CTX_set_security_level(permissive, 0);
	SSL_CTX_set_min_proto_version(permissive, TLS1_VERSION);
	SSL_CTX_set_cipher_list(permissive, "DEFAULT:@SECLEVEL=0");
	assert_int_equal(SSL_CTX_use_certificate_chain_file(permissive, cert1), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey_file(permissive, key1,
						     SSL_FILETYPE_PEM), 1);
	SSL *c = SSL_new(old), *s = SSL_new(permissive);
	bool control = handshake(c, s, NULL);
	if (control)
		assert_int_equal(SSL_version(c), TLS1_1_VERSION);
	SSL_free(c);
	SSL_free(s);
	SSL_CTX_free(permissive);
	if (!control) {
		SSL_CTX_free(old);
		ERR_clear_error();
		print_message("this OpenSSL cannot speak TLS 1.1 at all\n");
		skip();
	}

	struct mt_tls *server = server_tls(cert1, key1);
	c = SSL_new(old);
	s = new_ssl(server, NULL);
	assert_false(handshake(c, s, &server_err));
	assert_int_equal(ERR_GET_LIB(server_err), ERR_LIB_SSL);
	assert_int_equal(ERR_GET_REASON(server_err), SSL_R_UNSUPPORTED_PROTOCOL);
	SSL_free(c);
	SSL_free(s);
	SSL_CTX_free(old);

	/* And it cannot be configured below TLS 1.2. */
	const struct mt_tls_settings set = { .cert_file = cert1, .key_file = key1,
					     .min_version = TLS1_1_VERSION };
	const char *error = NULL;
	assert_false(mt_tls_load(server, &set, &error));
	assert_non_null(strstr(error, "TLS 1.2"));
	mt_tls_free(&server);
}

static void test_load_errors(void **state)
{
	struct mt_tls *tls = mt_tls_new(MT_TLS_SERVER);
	const char *error = NULL;
	char missing[160];
	(void)state;

	snprintf(missing, sizeof(missing), "%s/missing.pem", tmpdir);
	struct {
		struct mt_tls_settings set;
		const char *want1, *want2;
	} cases[] = {
		{ { .cert_file = cert1, .key_file = key2 }, "does not match", key2 },
		{ { .cert_file = cert1, .key_file = key2 }, "does not match", cert1 },
		{ { .cert_file = missing, .key_file = key1 }, missing, "certificate" },
		{ { .cert_file = cert1, .key_file = missing }, missing, "key" },
		{ { .cert_file = cert1, .key_file = badkey }, badkey, "private key" },
		{ { .cert_file = cert1, .key_file = enckey }, enckey, "private key" },
		{ { .cert_file = key1, .key_file = key1 }, key1, "certificate" },
		{ { .cert_file = cert1 }, "key file", "server" },
		{ { .cert_file = cert1, .key_file = key1, .ca_file = missing },
		  missing, "CA" },
		{ { .cert_file = cert1, .key_file = key1, .ciphers = "NOPE" },
		  "NOPE", "cipher" },
		{ { .cert_file = cert1, .key_file = key1, .ciphersuites = "NOPE" },
		  "NOPE", "1.3" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (mt_tls_load(tls, &cases[i].set, &error))
			fail_msg("case %zu was accepted", i);
		if (strstr(error, cases[i].want1) == NULL ||
		    strstr(error, cases[i].want2) == NULL)
			fail_msg("case %zu: unclear error '%s'", i, error);
		assert_int_equal(ERR_peek_error(), 0);
	}
	/* Nothing was ever loaded. */
	assert_null(mt_tls_get_ctx(tls));
	assert_null(mt_tls_ssl_new(tls, &error));
	assert_false(mt_tls_reload(tls, &error));
	mt_tls_free(&tls);

	/* A client certificate needs its key too. */
	tls = mt_tls_new(MT_TLS_CLIENT);
	const struct mt_tls_settings half = { .cert_file = cert1 };
	assert_false(mt_tls_load(tls, &half, &error));
	mt_tls_free(&tls);
}

static void test_reload(void **state)
{
	const char *error = NULL;
	(void)state;

	copy_file(cert1, live_cert);
	copy_file(key1, live_key);
	struct mt_tls *server = server_tls(live_cert, live_key);
	struct mt_tls *client = client_tls(NULL);
	SSL_CTX *before = mt_tls_get_ctx(server);
	assert_non_null(before);
	SSL *old_session = new_ssl(server, NULL);

	/* A renewal gone wrong: the new key is garbage. */
	copy_file(badkey, live_key);
	assert_false(mt_tls_reload(server, &error));
	assert_non_null(strstr(error, live_key));
	SSL_CTX *after = mt_tls_get_ctx(server);
	assert_ptr_equal(after, before);
	SSL_CTX_free(after);
	/* The old context still serves new sessions with the old cert. */
	SSL *c = new_ssl(client, NULL), *s = new_ssl(server, NULL);
	assert_true(handshake(c, s, NULL));
	assert_int_equal(X509_cmp(SSL_get0_peer_certificate(c), cert1_x509), 0);
	SSL_free(c);
	SSL_free(s);

	/* A good renewal is swapped in... */
	copy_file(cert2, live_cert);
	copy_file(key2, live_key);
	if (!mt_tls_reload(server, &error))
		fail_msg("reload: %s", error);
	after = mt_tls_get_ctx(server);
	assert_ptr_not_equal(after, before);
	SSL_CTX_free(after);
	c = new_ssl(client, NULL);
	s = new_ssl(server, NULL);
	assert_true(handshake(c, s, NULL));
	assert_int_equal(X509_cmp(SSL_get0_peer_certificate(c), cert2_x509), 0);
	SSL_free(c);
	SSL_free(s);

	/* ...while a session made before it keeps the old context alive. */
	SSL_CTX_free(before);
	c = new_ssl(client, NULL);
	assert_true(handshake(c, old_session, NULL));
	assert_int_equal(X509_cmp(SSL_get0_peer_certificate(c), cert1_x509), 0);
	SSL_free(c);
	SSL_free(old_session);
	mt_tls_free(&server);
	mt_tls_free(&client);
}

/* Bufferevents */

struct bev_test {
	struct event_base *base;
	struct bufferevent *server, *client;
	int connected;
	int errors;
	char client_error[256];
	char got[64];
};

static void bev_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct bev_test *t = arg;
	if ((what & BEV_EVENT_CONNECTED) != 0) {
		t->connected++;
		if (bev == t->client)
			evbuffer_add_printf(bufferevent_get_output(bev), "hello\n");
	}
	if ((what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) != 0) {
		t->errors++;
		if (bev == t->client)
			mt_tls_bev_error(bev, t->client_error,
					 sizeof(t->client_error));
		if (t->errors == 2 || bev == t->client)
			event_base_loopexit(t->base, NULL);
	}
}

static void server_read_cb(struct bufferevent *bev, void *arg)
{
	(void)arg;
	char *line = evbuffer_readln(bufferevent_get_input(bev), NULL,
				     EVBUFFER_EOL_LF);
	if (line != NULL) {
		evbuffer_add_printf(bufferevent_get_output(bev), "echo %s\n", line);
		free(line);
	}
}

static void client_read_cb(struct bufferevent *bev, void *arg)
{
	struct bev_test *t = arg;
	char *line = evbuffer_readln(bufferevent_get_input(bev), NULL,
				     EVBUFFER_EOL_LF);
	if (line != NULL) {
		snprintf(t->got, sizeof(t->got), "%s", line);
		free(line);
		event_base_loopexit(t->base, NULL);
	}
}

static void run_bev_pair(struct bev_test *t, struct mt_tls *server,
			 struct mt_tls *client, const char *host)
{
	int sv[2];
	const char *error = NULL;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	t->base = event_base_new();
	t->server = mt_tls_bev_accept(server, t->base, sv[1], &error);
	t->client = mt_tls_bev_connect(client, t->base, sv[0], host, &error);
	assert_non_null(t->server);
	assert_non_null(t->client);
	bufferevent_setcb(t->server, server_read_cb, NULL, bev_event_cb, t);
	bufferevent_setcb(t->client, client_read_cb, NULL, bev_event_cb, t);
	bufferevent_enable(t->server, EV_READ | EV_WRITE);
	bufferevent_enable(t->client, EV_READ | EV_WRITE);
	struct timeval tv = { 5, 0 };
	event_base_loopexit(t->base, &tv);
	event_base_dispatch(t->base);
	bufferevent_free(t->server);
	bufferevent_free(t->client);
	event_base_free(t->base);
}

static void test_bev_implicit_tls(void **state)
{
	struct mt_tls *server = server_tls(cert1, key1);
	struct mt_tls *client = client_tls(cert1);
	const char *error = NULL;
	(void)state;

	struct bev_test ok = { 0 };
	run_bev_pair(&ok, server, client, "localhost");
	assert_int_equal(ok.connected, 2);
	assert_string_equal(ok.got, "echo hello");

	/* A verification failure surfaces as an error with a reason. */
	struct bev_test bad = { 0 };
	run_bev_pair(&bad, server, client, "wrong.example");
	assert_string_equal(bad.got, "");
	assert_true(bad.errors >= 1);
	if (strstr(bad.client_error, "certificate verify failed") == NULL)
		fail_msg("client error: %s", bad.client_error);

	/* Roles are checked, and the fd is closed on failure. */
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct event_base *base = event_base_new();
	assert_null(mt_tls_bev_accept(client, base, sv[0], &error));
	assert_int_equal(fcntl(sv[0], F_GETFD), -1);
	assert_null(mt_tls_bev_connect(server, base, sv[1], NULL, &error));
	assert_int_equal(fcntl(sv[1], F_GETFD), -1);
	event_base_free(base);
	mt_tls_free(&server);
	mt_tls_free(&client);
}

/* STARTTLS */

struct starttls_test {
	struct event_base *base;
	struct mt_tls *server_tls;
	struct bufferevent *bev;
	bool upgrade_pending, early_refused;
	size_t discarded;
	int lines_after_tls;
	char first_tls_line[64];
	/* client thread */
	int client_fd;
	struct mt_tls *client_tls;
	char client_got[64];
	bool client_ok;
};

static void tls_read_cb(struct bufferevent *bev, void *arg)
{
	struct starttls_test *t = arg;
	char *line;
	while ((line = evbuffer_readln(bufferevent_get_input(bev), NULL,
				       EVBUFFER_EOL_CRLF)) != NULL) {
		if (t->lines_after_tls++ == 0)
			snprintf(t->first_tls_line, sizeof(t->first_tls_line),
				 "%s", line);
		evbuffer_add_printf(bufferevent_get_output(bev), "got %s\r\n", line);
		free(line);
	}
}

static void tls_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct starttls_test *t = arg;
	(void)bev;
	if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) != 0)
		event_base_loopexit(t->base, NULL);
}

static void plain_write_cb(struct bufferevent *bev, void *arg)
{
	struct starttls_test *t = arg;
	const char *error = NULL;
	(void)bev;
	if (!t->upgrade_pending)
		return;
	t->upgrade_pending = false;
	struct bufferevent *tls = mt_tls_bev_starttls(t->server_tls, &t->bev, NULL,
						      &t->discarded, &error);
	if (tls == NULL)
		fail_msg("starttls: %s", error);
	assert_null(t->bev);
	t->bev = tls;
	bufferevent_setcb(tls, tls_read_cb, NULL, tls_event_cb, t);
	bufferevent_enable(tls, EV_READ | EV_WRITE);
}

static void plain_read_cb(struct bufferevent *bev, void *arg)
{
	struct starttls_test *t = arg;
	const char *error = NULL;
	size_t discarded = 0;
	char *line = evbuffer_readln(bufferevent_get_input(bev), NULL,
				     EVBUFFER_EOL_CRLF);
	if (line == NULL)
		return;
	assert_string_equal(line, "STARTTLS");
	free(line);
	evbuffer_add_printf(bufferevent_get_output(bev), "220 go ahead\r\n");
	/* Too early: the reply has not reached the socket yet. */
	struct bufferevent *plain = bev;
	t->early_refused = mt_tls_bev_starttls(t->server_tls, &plain, NULL,
					       &discarded, &error) == NULL &&
		plain == bev && strstr(error, "flushed") != NULL;
	/* Stop reading plaintext; upgrade once the reply is written. */
	bufferevent_disable(bev, EV_READ);
	t->upgrade_pending = true;
}

static void *starttls_client(void *arg)
{
	struct starttls_test *t = arg;
	char buf[64];
	size_t len = 0;
	const char *error = NULL;

	/* Read the plaintext reply byte by byte: nothing of TLS is ours yet. */
	while (len < sizeof(buf) - 1 && read(t->client_fd, buf + len, 1) == 1)
		if (buf[len++] == '\n')
			break;
	buf[len] = '\0';
	if (strcmp(buf, "220 go ahead\r\n") != 0)
		return NULL;
	SSL *ssl = mt_tls_ssl_new(t->client_tls, &error);
	SSL_set_fd(ssl, t->client_fd);
	if (SSL_connect(ssl) == 1 && SSL_write(ssl, "HELLO\r\n", 7) == 7) {
		int n = SSL_read(ssl, t->client_got, sizeof(t->client_got) - 1);
		t->client_ok = n > 0;
		if (n > 0)
			t->client_got[n] = '\0';
		SSL_shutdown(ssl);
	}
	SSL_free(ssl);
	ERR_clear_error();
	shutdown(t->client_fd, SHUT_RDWR);
	return NULL;
}

static void test_starttls_discards_plaintext(void **state)
{
	struct starttls_test t = { 0 };
	int sv[2];
	pthread_t thread;
	(void)state;

	t.server_tls = server_tls(cert1, key1);
	t.client_tls = client_tls(NULL);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	t.client_fd = sv[0];
	evutil_make_socket_nonblocking(sv[1]);
	t.base = event_base_new();
	t.bev = bufferevent_socket_new(t.base, sv[1], BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(t.bev, plain_read_cb, plain_write_cb, tls_event_cb, &t);
	bufferevent_enable(t.bev, EV_READ | EV_WRITE);

	/* The attack: a command pipelined behind STARTTLS in plaintext, in
	 * the same segment, so the server reads both in one go. */
	const char *inject = "STARTTLS\r\nRSET INJECTED\r\n";
	assert_int_equal(write(sv[0], inject, strlen(inject)), (ssize_t)strlen(inject));
	assert_int_equal(pthread_create(&thread, NULL, starttls_client, &t), 0);
	struct timeval tv = { 5, 0 };
	event_base_loopexit(t.base, &tv);
	event_base_dispatch(t.base);
	pthread_join(thread, NULL);

	assert_true(t.early_refused);
	assert_int_equal(t.discarded, strlen("RSET INJECTED\r\n"));
	assert_true(t.client_ok);
	assert_string_equal(t.first_tls_line, "HELLO");
	assert_int_equal(t.lines_after_tls, 1);
	assert_string_equal(t.client_got, "got HELLO\r\n");

	/* STARTTLS twice is refused. */
	const char *error = NULL;
	size_t discarded;
	struct bufferevent *again = t.bev;
	assert_null(mt_tls_bev_starttls(t.server_tls, &again, NULL, &discarded,
					&error));
	assert_ptr_equal(again, t.bev);

	bufferevent_free(t.bev);
	event_base_free(t.base);
	close(sv[0]);
	mt_tls_free(&t.server_tls);
	mt_tls_free(&t.client_tls);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake_verified),
		cmocka_unit_test(test_verify_failures),
		cmocka_unit_test(test_tls11_refused),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_bev_implicit_tls),
		cmocka_unit_test(test_starttls_discards_plaintext),
	};
	mt_log_init("test-tls", MT_LOG_TARGET_STDERR);
	return cmocka_run_group_tests(tests, setup, teardown);
}
