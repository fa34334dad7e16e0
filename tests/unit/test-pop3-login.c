/* test-pop3-login.c — unit tests for lib-mail/pop3-login.c, the POP3
 * AUTHORIZATION phase the MMP and the store share: its parsers (USER,
 * AUTH, an AUTH PLAIN response with and without a permitted authorization
 * identity, names over the limit) and the phase's answers through a tier's
 * ops, recorded here: CAPA before and after login and with and without
 * plaintext logins and STLS, the plaintext refusal, USER/PASS argument
 * errors, AUTH list/unsupported/continuation/cancel, STLS, and which
 * credentials reach the login. The tiers' own sessions are tested with
 * them (test-mmp-session, the POP3 integration tests). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "pop3-login.h"
#include "sasl.h"

#define REFUSED "-ERR [AUTH] Plaintext authentication disallowed on " \
	"non-secure (SSL/TLS) connections.\r\n"
#define INVALID "-ERR [AUTH] Invalid AUTH PLAIN response.\r\n"

/* A tier as the phase sees it: what it was told, and its state. */
struct tier {
	struct mt_buf out;
	unsigned int errors, starttls, logins;
	bool plaintext, tls, tls_available, sasl;
	char *user;
	char method[16], authzid[300], authcid[300], password[1100];
};

static void t_reply(void *context, const char *line)
{
	struct tier *t = context;
	mt_buf_appendf(&t->out, "%s\r\n", line);
}

static void t_reply_raw(void *context, const char *data, size_t len)
{
	struct tier *t = context;
	mt_buf_append(&t->out, data, len);
}

static void t_error(void *context, const char *line)
{
	struct tier *t = context;
	t->errors++;
	t_reply(t, line);
}

static bool t_plaintext_ok(void *context)
{
	return ((struct tier *)context)->plaintext;
}

static bool t_tls_active(void *context)
{
	return ((struct tier *)context)->tls;
}

static bool t_tls_available(void *context)
{
	return ((struct tier *)context)->tls_available;
}

static void t_sasl_wait(void *context, bool waiting)
{
	((struct tier *)context)->sasl = waiting;
}

static void t_starttls(void *context)
{
	((struct tier *)context)->starttls++;
}

static void t_login(void *context, const struct mt_pop3_credentials *cred)
{
	struct tier *t = context;
	t->logins++;
	snprintf(t->method, sizeof(t->method), "%s", cred->method);
	snprintf(t->authzid, sizeof(t->authzid), "%s", cred->authzid);
	snprintf(t->authcid, sizeof(t->authcid), "%s", cred->authcid);
	snprintf(t->password, sizeof(t->password), "%s", cred->password);
}

static const struct mt_pop3_login_ops ops = {
	.reply = t_reply, .reply_raw = t_reply_raw, .error = t_error,
	.plaintext_ok = t_plaintext_ok, .tls_active = t_tls_active,
	.tls_available = t_tls_available, .sasl_wait = t_sasl_wait,
	.starttls = t_starttls, .login = t_login,
};

static void tier_init(struct tier *t, struct mt_pop3_login *l, bool plaintext,
		      bool authzid_allowed)
{
	memset(t, 0, sizeof(*t));
	mt_buf_init(&t->out);
	t->plaintext = plaintext;
	t->tls_available = true;
	*l = (struct mt_pop3_login){
		.ops = &ops, .context = t, .user = &t->user,
		.authzid_allowed = authzid_allowed,
	};
}

static void tier_free(struct tier *t)
{
	mt_buf_free(&t->out);
	free(t->user);
}

/* What the phase wrote since the last call; the buffer is emptied. */
static void expect_out(struct tier *t, const char *want)
{
	assert_string_equal(mt_buf_cstr(&t->out), want);
	mt_buf_reset(&t->out);
}

static void test_parse_user_auth(void **state)
{
	(void)state;
	char name[MT_POP3_USER_MAX + 2];
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(mt_pop3_parse_user(name), MT_POP3_USER_TOO_LONG);
	name[MT_POP3_USER_MAX] = '\0';
	assert_int_equal(mt_pop3_parse_user(name), MT_POP3_USER_OK);
	assert_int_equal(mt_pop3_parse_user(""), MT_POP3_USER_MISSING);
	assert_int_equal(mt_pop3_parse_user("a b@c"), MT_POP3_USER_OK);

	const char *ir;
	assert_int_equal(mt_pop3_parse_auth("", &ir), MT_POP3_AUTH_LIST);
	assert_null(ir);
	assert_int_equal(mt_pop3_parse_auth("plain", &ir), MT_POP3_AUTH_PLAIN);
	assert_null(ir);
	assert_int_equal(mt_pop3_parse_auth("PLAIN AGEAYg==", &ir), MT_POP3_AUTH_PLAIN);
	assert_string_equal(ir, "AGEAYg==");
	assert_int_equal(mt_pop3_parse_auth("PLAINX", &ir), MT_POP3_AUTH_UNSUPPORTED);
	assert_int_equal(mt_pop3_parse_auth("CRAM-MD5", &ir), MT_POP3_AUTH_UNSUPPORTED);
}

static void test_parse_plain(void **state)
{
	(void)state;
	struct mt_sasl_plain p;
	const char *error;

	/* "\0alice\0pw" */
	assert_true(mt_pop3_parse_plain("AGFsaWNlAHB3", false, &p, &error));
	assert_string_equal(p.authzid, "");
	assert_string_equal(p.authcid, "alice");
	assert_string_equal(p.passwd, "pw");
	/* "ALICE\0alice\0pw": one's own identity asks for nothing more. */
	assert_true(mt_pop3_parse_plain("QUxJQ0UAYWxpY2UAcHc=", false, &p, &error));
	assert_string_equal(p.authzid, "");
	/* "bob\0alice\0pw": alice acting as bob, only for a proxy. */
	assert_false(mt_pop3_parse_plain("Ym9iAGFsaWNlAHB3", false, &p, &error));
	assert_string_equal(error, "authorization identity not permitted");
	assert_string_equal(p.authcid, "");
	assert_true(mt_pop3_parse_plain("Ym9iAGFsaWNlAHB3", true, &p, &error));
	assert_string_equal(p.authzid, "bob");
	assert_string_equal(p.authcid, "alice");
	/* "=", bad base64, no password, a 255-octet name. */
	assert_false(mt_pop3_parse_plain("=", true, &p, &error));
	assert_false(mt_pop3_parse_plain("ab*d", true, &p, &error));
	assert_false(mt_pop3_parse_plain("AGFsaWNlAA==", true, &p, &error));
	char name[MT_POP3_USER_MAX + 2];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	struct mt_buf b64 = MT_BUF_INIT;
	mt_sasl_plain_encode(&b64, "", name, "pw");
	assert_false(mt_pop3_parse_plain(mt_buf_cstr(&b64), true, &p, &error));
	assert_string_equal(error, "user name too long");
	mt_buf_reset(&b64);
	name[MT_POP3_USER_MAX] = '\0';
	mt_sasl_plain_encode(&b64, "", name, "pw");
	assert_true(mt_pop3_parse_plain(mt_buf_cstr(&b64), true, &p, &error));
	mt_sasl_plain_wipe(&p);
	mt_buf_free(&b64);
}

static void test_before_tls(void **state)
{
	(void)state;
	struct tier t;
	struct mt_pop3_login l;
	tier_init(&t, &l, false, false);
	l.capa_extra = "IMPLEMENTATION test\r\n";
	mt_pop3_login_capa(&l, false);
	expect_out(&t, "+OK Capability list follows\r\nTOP\r\nUIDL\r\nRESP-CODES\r\n"
		   "AUTH-RESP-CODE\r\nPIPELINING\r\nSTLS\r\nIMPLEMENTATION test\r\n.\r\n");
	mt_pop3_login_user(&l, "alice");
	mt_pop3_login_pass(&l, "pw");
	mt_pop3_login_auth(&l, "PLAIN AGFsaWNlAHB3");
	expect_out(&t, REFUSED REFUSED REFUSED);
	assert_int_equal(t.errors, 3);
	assert_null(t.user);
	mt_pop3_login_auth(&l, "");
	expect_out(&t, "+OK\r\n.\r\n");
	assert_int_equal(t.logins, 0);
	/* STLS: arguments refused, then the switch. */
	mt_pop3_login_stls(&l, "now");
	expect_out(&t, "-ERR STLS takes no arguments.\r\n");
	mt_pop3_login_stls(&l, "");
	expect_out(&t, "+OK Begin TLS negotiation now.\r\n");
	assert_int_equal(t.starttls, 1);
	t.tls = true;
	t.plaintext = true;
	mt_pop3_login_stls(&l, "");
	expect_out(&t, "-ERR Command not permitted when TLS active.\r\n");
	mt_pop3_login_capa(&l, false);
	expect_out(&t, "+OK Capability list follows\r\nTOP\r\nUIDL\r\nRESP-CODES\r\n"
		   "AUTH-RESP-CODE\r\nPIPELINING\r\nUSER\r\nSASL PLAIN\r\n"
		   "IMPLEMENTATION test\r\n.\r\n");
	mt_pop3_login_capa(&l, true);
	expect_out(&t, "+OK Capability list follows\r\nTOP\r\nUIDL\r\nRESP-CODES\r\n"
		   "AUTH-RESP-CODE\r\nPIPELINING\r\nIMPLEMENTATION test\r\n.\r\n");
	t.tls_available = false;
	t.tls = false;
	mt_pop3_login_stls(&l, "");
	expect_out(&t, "-ERR TLS not available.\r\n");
	tier_free(&t);
}

static void test_user_pass(void **state)
{
	(void)state;
	struct tier t;
	struct mt_pop3_login l;
	tier_init(&t, &l, true, false);
	mt_pop3_login_pass(&l, "pw");
	expect_out(&t, "-ERR No user name given (USER first).\r\n");
	mt_pop3_login_user(&l, "");
	expect_out(&t, "-ERR Missing user name.\r\n");
	char name[MT_POP3_USER_MAX + 2];
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	mt_pop3_login_user(&l, name);
	expect_out(&t, "-ERR User name too long.\r\n");
	assert_int_equal(t.errors, 3);
	mt_pop3_login_user(&l, "alice@example.test");
	expect_out(&t, "+OK\r\n");
	assert_string_equal(t.user, "alice@example.test");
	mt_pop3_login_pass(&l, "");
	expect_out(&t, "-ERR Missing password.\r\n");
	/* RFC 1939 7: the password is the rest of the line. */
	mt_pop3_login_pass(&l, "two words ");
	expect_out(&t, "");
	assert_int_equal(t.logins, 1);
	assert_string_equal(t.method, "user");
	assert_string_equal(t.authzid, "");
	assert_string_equal(t.authcid, "alice@example.test");
	assert_string_equal(t.password, "two words ");
	tier_free(&t);
}

static void test_auth_plain(void **state)
{
	(void)state;
	struct tier t;
	struct mt_pop3_login l;
	tier_init(&t, &l, true, false);
	mt_pop3_login_auth(&l, "");
	expect_out(&t, "+OK\r\nPLAIN\r\n.\r\n");
	mt_pop3_login_auth(&l, "CRAM-MD5");
	expect_out(&t, "-ERR Unsupported authentication mechanism.\r\n");
	/* Continuation, cancelled: not an error of the client's. */
	mt_pop3_login_auth(&l, "PLAIN");
	expect_out(&t, "+ \r\n");
	assert_true(t.sasl);
	mt_pop3_login_sasl_response(&l, "*");
	expect_out(&t, "-ERR Authentication cancelled.\r\n");
	assert_false(t.sasl);
	assert_int_equal(t.errors, 1);
	/* Continuation, a bad response, then a good one. */
	mt_pop3_login_auth(&l, "PLAIN");
	mt_pop3_login_sasl_response(&l, "ab*d");
	expect_out(&t, "+ \r\n" INVALID);
	assert_false(t.sasl);
	mt_pop3_login_auth(&l, "PLAIN =");
	mt_pop3_login_auth(&l, "PLAIN Ym9iAGFsaWNlAHB3");	/* bob\0alice\0pw */
	expect_out(&t, INVALID INVALID);
	assert_int_equal(t.logins, 0);
	mt_pop3_login_auth(&l, "PLAIN");
	mt_pop3_login_sasl_response(&l, "AGFsaWNlAHB3");
	expect_out(&t, "+ \r\n");
	assert_int_equal(t.logins, 1);
	assert_string_equal(t.method, "plain");
	assert_string_equal(t.authcid, "alice");
	assert_string_equal(t.password, "pw");
	assert_string_equal(t.user, "alice");
	tier_free(&t);

	/* A proxy's login for another identity, where the tier allows it. */
	tier_init(&t, &l, true, true);
	mt_pop3_login_auth(&l, "PLAIN Ym9iAGFsaWNlAHB3");
	expect_out(&t, "");
	assert_int_equal(t.logins, 1);
	assert_string_equal(t.authzid, "bob");
	assert_string_equal(t.authcid, "alice");
	tier_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_user_auth),
		cmocka_unit_test(test_parse_plain),
		cmocka_unit_test(test_before_tls),
		cmocka_unit_test(test_user_pass),
		cmocka_unit_test(test_auth_plain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
