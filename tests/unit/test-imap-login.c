/* test-imap-login.c — lib-mail's IMAP not-authenticated state: commands
 * read by the real imap-parse, answered through recording ops.
 * CAPABILITY as TLS and the plaintext policy allow, LOGIN and its
 * refusal before TLS ([PRIVACYREQUIRED]), AUTHENTICATE PLAIN with SASL-IR
 * and on a continuation line (cancel, bad base64, an authorization
 * identity where allowed and where not), STARTTLS in each state, ID's
 * grammar and limits, LOGOUT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "imap-login.h"
#include "imap-parse.h"
#include "buf.h"
#include "sasl.h"

#include <stdio.h>
#include <string.h>

struct rec {
	struct mt_buf out;		/* every line, "\n"-separated */
	unsigned int errors;
	bool plaintext, tls, tls_available, waiting, starttls;
	unsigned int logins;
	char tag[64], method[16], authzid[300], authcid[300], password[300];
	unsigned int id_pairs;
	char id_first[64];
};

static void op_reply(void *context, const char *line)
{
	struct rec *r = context;
	mt_buf_append_str(&r->out, line);
	mt_buf_append_str(&r->out, "\n");
}

static void op_error(void *context, const char *line)
{
	struct rec *r = context;
	r->errors++;
	op_reply(context, line);
}

static bool op_plaintext_ok(void *context) { return ((struct rec *)context)->plaintext; }
static bool op_tls_active(void *context) { return ((struct rec *)context)->tls; }
static bool op_tls_available(void *context) { return ((struct rec *)context)->tls_available; }

static void op_sasl_wait(void *context, bool waiting)
{
	((struct rec *)context)->waiting = waiting;
}

static void op_starttls(void *context)
{
	((struct rec *)context)->starttls = true;
}

static void op_login(void *context, const char *tag,
		     const struct mt_imap_credentials *cred)
{
	struct rec *r = context;
	r->logins++;
	snprintf(r->tag, sizeof(r->tag), "%s", tag);
	snprintf(r->method, sizeof(r->method), "%s", cred->method);
	snprintf(r->authzid, sizeof(r->authzid), "%s", cred->authzid);
	snprintf(r->authcid, sizeof(r->authcid), "%s", cred->authcid);
	snprintf(r->password, sizeof(r->password), "%s", cred->password);
}

static void op_id(void *context, const char *const *names,
		  const char *const *values, size_t count)
{
	struct rec *r = context;
	r->id_pairs = (unsigned int)count;
	snprintf(r->id_first, sizeof(r->id_first), "%s=%s", names[0],
		 values[0] != NULL ? values[0] : "NIL");
}

static const struct mt_imap_login_ops ops = {
	.reply = op_reply, .error = op_error, .plaintext_ok = op_plaintext_ok,
	.tls_active = op_tls_active, .tls_available = op_tls_available,
	.sasl_wait = op_sasl_wait, .starttls = op_starttls, .login = op_login,
	.id = op_id,
};

static struct rec rec;
static struct mt_imap_login login;
static struct mt_imap_parser parser;

static int setup(void **state)
{
	(void)state;
	memset(&rec, 0, sizeof(rec));
	rec.plaintext = true;
	login = (struct mt_imap_login){
		.ops = &ops, .context = &rec, .authzid_allowed = false,
		.capabilities = "IMAP4rev2 IMAP4rev1 SASL-IR ID",
		.id_reply = "(\"name\" \"mailtier\")",
	};
	/* The one bound the store and the MMP keep before login. */
	mt_imap_parser_init(&parser, &mt_imap_login_limits);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mt_buf_free(&rec.out);
	mt_imap_parser_free(&parser);
	return 0;
}

/* Parse one command line (CRLF added) and run its handler; the output
 * since the last call. */
static const char *run(const char *line)
{
	mt_buf_reset(&rec.out);
	struct mt_buf text = MT_BUF_INIT;
	mt_buf_appendf(&text, "%s\r\n", line);
	size_t used;
	mt_imap_parser_reset(&parser);
	enum mt_imap_parse st = mt_imap_parser_feed(&parser, text.data, text.len, &used);
	mt_buf_free(&text);
	assert_int_equal(st, MT_IMAP_PARSE_DONE);
	const struct mt_imap_command *cmd = &parser.command;
	const char *n = cmd->name;
	if (strcasecmp(n, "CAPABILITY") == 0)
		mt_imap_login_capability(&login, cmd);
	else if (strcasecmp(n, "NOOP") == 0)
		mt_imap_login_noop(&login, cmd);
	else if (strcasecmp(n, "LOGOUT") == 0)
		mt_imap_login_logout(&login, cmd);
	else if (strcasecmp(n, "STARTTLS") == 0)
		mt_imap_login_starttls(&login, cmd);
	else if (strcasecmp(n, "LOGIN") == 0)
		mt_imap_login_login(&login, cmd);
	else if (strcasecmp(n, "AUTHENTICATE") == 0)
		mt_imap_login_authenticate(&login, cmd);
	else if (strcasecmp(n, "ID") == 0)
		mt_imap_login_id(&login, cmd);
	else
		fail_msg("no handler for %s", n);
	return mt_buf_cstr(&rec.out);
}

static const char *sasl(const char *line)
{
	mt_buf_reset(&rec.out);
	assert_true(rec.waiting);
	mt_imap_login_sasl_response(&login, line);
	assert_false(rec.waiting);
	return mt_buf_cstr(&rec.out);
}

static void test_capability(void **state)
{
	(void)state;
	assert_string_equal(run("a CAPABILITY"),
			    "* CAPABILITY IMAP4rev2 IMAP4rev1 SASL-IR ID AUTH=PLAIN\n"
			    "a OK CAPABILITY completed.\n");
	/* Before TLS where plaintext is refused: STARTTLS, LOGINDISABLED. */
	rec.plaintext = false;
	rec.tls_available = true;
	assert_string_equal(run("b capability"),
			    "* CAPABILITY IMAP4rev2 IMAP4rev1 SASL-IR ID STARTTLS "
			    "LOGINDISABLED\nb OK CAPABILITY completed.\n");
	rec.tls = true;
	rec.plaintext = true;
	assert_string_equal(run("c CAPABILITY"),
			    "* CAPABILITY IMAP4rev2 IMAP4rev1 SASL-IR ID AUTH=PLAIN\n"
			    "c OK CAPABILITY completed.\n");
	assert_string_equal(run("d CAPABILITY x"), "d BAD CAPABILITY takes no arguments.\n");
	assert_int_equal(rec.errors, 1);
	assert_string_equal(run("e NOOP"), "e OK NOOP completed.\n");
	assert_string_equal(run("f LOGOUT"), "* BYE Logging out\nf OK LOGOUT completed.\n");
}

static void test_login(void **state)
{
	(void)state;
	assert_string_equal(run("a LOGIN alice@example.org \"pass word\""), "");
	assert_int_equal(rec.logins, 1);
	assert_string_equal(rec.tag, "a");
	assert_string_equal(rec.method, "login");
	assert_string_equal(rec.authcid, "alice@example.org");
	assert_string_equal(rec.password, "pass word");
	assert_string_equal(rec.authzid, "");
	/* A literal password (synchronising literals are the tier's). */
	assert_string_equal(run("b LOGIN bob {3+}\r\np\"w"), "");
	assert_string_equal(rec.password, "p\"w");
	/* Malformed. */
	assert_string_equal(run("c LOGIN alice"),
			    "c BAD LOGIN takes a user name and a password.\n");
	assert_string_equal(run("d LOGIN (a) b"),
			    "d BAD LOGIN takes a user name and a password.\n");
	assert_string_equal(run("e LOGIN \"\" b"),
			    "e NO [AUTHENTICATIONFAILED] Authentication failed.\n");
	char longname[400];
	memset(longname, 'x', 300);
	longname[300] = '\0';
	char line[512];
	snprintf(line, sizeof(line), "f LOGIN %s pw", longname);
	assert_string_equal(run(line), "f NO [AUTHENTICATIONFAILED] Authentication failed.\n");
	assert_int_equal(rec.logins, 2);
	/* Before TLS where plaintext is refused. */
	rec.plaintext = false;
	assert_string_equal(run("g LOGIN alice pw"),
			    "g NO [PRIVACYREQUIRED] Plaintext authentication "
			    "disallowed on non-secure (SSL/TLS) connections.\n");
	assert_int_equal(rec.logins, 2);
	assert_int_equal(rec.errors, 5);
}

static const char *plain_b64(const char *authzid, const char *authcid,
			     const char *passwd)
{
	static struct mt_buf b = MT_BUF_INIT;
	mt_buf_reset(&b);
	mt_sasl_plain_encode(&b, authzid, authcid, passwd);
	return mt_buf_cstr(&b);
}

static void test_authenticate(void **state)
{
	(void)state;
	char line[600];
	/* SASL-IR. */
	snprintf(line, sizeof(line), "a AUTHENTICATE PLAIN %s",
		 plain_b64("", "alice", "secret"));
	assert_string_equal(run(line), "");
	assert_int_equal(rec.logins, 1);
	assert_string_equal(rec.method, "plain");
	assert_string_equal(rec.authcid, "alice");
	assert_string_equal(rec.password, "secret");
	/* On a continuation line; the mechanism in any case. */
	assert_string_equal(run("b authenticate plain"), "+ \n");
	assert_string_equal(sasl(plain_b64("ALICE", "alice", "pw")), "");
	assert_int_equal(rec.logins, 2);
	assert_string_equal(rec.tag, "b");
	assert_string_equal(rec.authzid, "");	/* equal to authcid: dropped */
	/* Cancelled, bad base64, empty. */
	run("c AUTHENTICATE PLAIN");
	assert_string_equal(sasl("*"), "c BAD Authentication cancelled.\n");
	run("d AUTHENTICATE PLAIN");
	assert_string_equal(sasl("not base64!"),
			    "d NO [AUTHENTICATIONFAILED] Invalid SASL PLAIN response.\n");
	assert_string_equal(run("e AUTHENTICATE PLAIN ="),
			    "e NO [AUTHENTICATIONFAILED] Invalid SASL PLAIN response.\n");
	/* Another identity: refused here, allowed for the store's proxy. */
	snprintf(line, sizeof(line), "f AUTHENTICATE PLAIN %s",
		 plain_b64("bob", "proxy", "pw"));
	assert_string_equal(run(line),
			    "f NO [AUTHENTICATIONFAILED] Invalid SASL PLAIN response.\n");
	login.authzid_allowed = true;
	line[0] = 'g';
	assert_string_equal(run(line), "");
	assert_string_equal(rec.authzid, "bob");
	assert_string_equal(rec.authcid, "proxy");
	assert_int_equal(rec.logins, 3);
	/* Other mechanisms, bad arguments, before TLS. */
	assert_string_equal(run("h AUTHENTICATE CRAM-MD5"),
			    "h NO [CANNOT] Unsupported authentication mechanism.\n");
	assert_string_equal(run("i AUTHENTICATE"),
			    "i BAD AUTHENTICATE takes a mechanism and an optional "
			    "initial response.\n");
	rec.plaintext = false;
	assert_string_equal(run("j AUTHENTICATE PLAIN"),
			    "j NO [PRIVACYREQUIRED] Plaintext authentication "
			    "disallowed on non-secure (SSL/TLS) connections.\n");
	assert_false(rec.waiting);
	assert_int_equal(rec.logins, 3);
}

static void test_starttls(void **state)
{
	(void)state;
	assert_string_equal(run("a STARTTLS"), "a BAD STARTTLS is not available.\n");
	rec.tls_available = true;
	assert_string_equal(run("b STARTTLS x"), "b BAD STARTTLS takes no arguments.\n");
	assert_false(rec.starttls);
	assert_string_equal(run("c STARTTLS"), "c OK Begin TLS negotiation now.\n");
	assert_true(rec.starttls);
	rec.tls = true;
	assert_string_equal(run("d STARTTLS"), "d BAD TLS is already active.\n");
}

static void test_id(void **state)
{
	(void)state;
	assert_string_equal(run("a ID NIL"), "* ID (\"name\" \"mailtier\")\na OK ID completed.\n");
	assert_int_equal(rec.id_pairs, 0);
	assert_string_equal(run("b ID (\"name\" \"imaplib\" \"x-originating-ip\" "
				"\"192.0.2.1\" \"version\" NIL)"),
			    "* ID (\"name\" \"mailtier\")\nb OK ID completed.\n");
	assert_int_equal(rec.id_pairs, 3);
	assert_string_equal(rec.id_first, "name=imaplib");
	const char *bad[] = {
		"c ID", "c ID (\"name\")", "c ID (\"a\" \"1\" \"A\" \"2\")",
		"c ID (NIL \"x\")", "c ID (\"name\" (\"x\"))", "c ID name",
		"c ID (\"0123456789012345678901234567890\" \"x\")",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_string_equal(run(bad[i]), "c BAD ID takes NIL or a list of up "
				    "to 30 field and value pairs.\n");
	/* 31 pairs. */
	struct mt_buf big = MT_BUF_INIT;
	mt_buf_append_str(&big, "d ID (");
	for (unsigned int i = 0; i < 31; i++) {
		char pair[32];
		snprintf(pair, sizeof(pair), "%s\"f%u\" \"v\"", i > 0 ? " " : "", i);
		mt_buf_append_str(&big, pair);
	}
	mt_buf_append_str(&big, ")");
	assert_string_equal(run(mt_buf_cstr(&big)), "d BAD ID takes NIL or a list of "
			    "up to 30 field and value pairs.\n");
	mt_buf_free(&big);

	/* RFC 2971's largest ID (30 pairs, 30-octet names, 1024-octet values,
	 * every value's octets needing an escape) fits the login limits, so
	 * the MMP passes what the store takes (issue 37 item 18). */
	mt_buf_append_str(&big, "e ID (");
	for (unsigned int i = 0; i < 30; i++) {
		mt_buf_appendf(&big, "%s\"field-%02u-67890123456789012345\" \"", i > 0 ? " " : "", i);
		for (unsigned int k = 0; k < 1024; k++)
			mt_buf_append_str(&big, k % 2 == 0 ? "\\\"" : "\\\\");
		mt_buf_append_char(&big, '"');
	}
	mt_buf_append_char(&big, ')');
	assert_true(big.len > 60000);
	assert_string_equal(run(mt_buf_cstr(&big)), "* ID (\"name\" \"mailtier\")\n"
			    "e OK ID completed.\n");
	assert_int_equal(rec.id_pairs, 30);
	mt_buf_free(&big);
}

/* Before login nothing large is held: a literal over 4 KiB is not
 * invited, or (LITERAL+) ends the stream. */
static void test_prelogin_bound(void **state)
{
	(void)state;
	size_t used;
	static const char sync[] = "a LOGIN {4097}\r\n";
	mt_imap_parser_reset(&parser);
	assert_int_equal(mt_imap_parser_feed(&parser, sync, sizeof(sync) - 1, &used),
			 MT_IMAP_PARSE_ERROR);
	assert_string_equal(parser.error_code, "TOOBIG");
	static const char plus[] = "a LOGIN {20971520+}\r\n";
	mt_imap_parser_reset(&parser);
	assert_int_equal(mt_imap_parser_feed(&parser, plus, sizeof(plus) - 1, &used),
			 MT_IMAP_PARSE_FATAL);
	static const char fits[] = "a LOGIN {4096}\r\n";
	mt_imap_parser_reset(&parser);
	assert_int_equal(mt_imap_parser_feed(&parser, fits, sizeof(fits) - 1, &used),
			 MT_IMAP_PARSE_LITERAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_capability, setup, teardown),
		cmocka_unit_test_setup_teardown(test_login, setup, teardown),
		cmocka_unit_test_setup_teardown(test_authenticate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_starttls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prelogin_bound, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
