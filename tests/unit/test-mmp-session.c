/* test-mmp-session.c — scenario tests for the MMP's session before login
 * (mmp/mmp-session.c, mmp/mmp-commands.c, mmp/mmp-imap.c): a real session
 * on a worker's
 * event loop, a socketpair as the client, and a table of client input and
 * the exact bytes expected back (greeting included), each case fed whole
 * and again a byte at a time. Covers CAPA with and without plaintext
 * logins, the plaintext refusal, USER/PASS argument checks, AUTH (list,
 * unsupported mechanism, continuation, "*", bad base64, foreign authzid),
 * STLS without TLS, QUIT (then EOF), unknown commands up to max_errors
 * (then EOF), overlong lines and pipelining; for IMAP the greeting's
 * capabilities, CAPABILITY, LOGIN refused before TLS, a synchronising
 * literal's continuation, ID, NOOP, commands of later states, LOGOUT,
 * AUTHENTICATE cancelled, a foreign authorization identity, STARTTLS
 * without TLS, max_errors and an unfollowable command. The login itself
 * (directory, store) is the integration tests' job. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "buf.h"
#include "loop.h"
#include "mmp.h"
#include "test-peer.h"

#define GREETING "+OK mailtier POP3 proxy ready.\r\n"
#define REFUSED "-ERR [AUTH] Plaintext authentication disallowed on " \
	"non-secure (SSL/TLS) connections.\r\n"
#define CAPA_BASE "+OK Capability list follows\r\nTOP\r\nUIDL\r\nRESP-CODES\r\n" \
	"AUTH-RESP-CODE\r\nPIPELINING\r\n"
#define EOF_MARK "<EOF>"
#define IMAP_CAPS "IMAP4rev2 IMAP4rev1 SASL-IR LITERAL+ ID ENABLE"
#define IMAP_GREETING(auth) "* OK [CAPABILITY " IMAP_CAPS " " auth \
	"] mailtier IMAP proxy ready.\r\n"
#define IMAP_PRIVACY "NO [PRIVACYREQUIRED] Plaintext authentication " \
	"disallowed on non-secure (SSL/TLS) connections."

struct scenario {
	const char *name;
	bool plaintext;		/* allow_plaintext_auth */
	bool imap;		/* the IMAP listener (else POP3) */
	const char *input;
	const char *expect;	/* everything the client reads; EOF_MARK at the end = closed */
};

static const struct scenario scenarios[] = {
	{ "greeting", false, false, "", GREETING },
	{ "CAPA before TLS", false, false, "CAPA\r\n", GREETING CAPA_BASE ".\r\n" },
	{ "CAPA, plaintext allowed", true, false, "CAPA\r\n",
	  GREETING CAPA_BASE "USER\r\nSASL PLAIN\r\n.\r\n" },
	{ "USER before TLS", false, false, "USER alice@example.test\r\n", GREETING REFUSED },
	{ "PASS before TLS", false, false, "PASS secret\r\n", GREETING REFUSED },
	{ "AUTH PLAIN before TLS", false, false, "AUTH PLAIN AGEAYg==\r\n",
	  GREETING REFUSED },
	{ "AUTH list before TLS", false, false, "AUTH\r\n", GREETING "+OK\r\n.\r\n" },
	{ "AUTH list", true, false, "AUTH\r\n", GREETING "+OK\r\nPLAIN\r\n.\r\n" },
	{ "QUIT", false, false, "QUIT\r\n", GREETING "+OK Logging out.\r\n" EOF_MARK },
	{ "quit, lower case", false, false, "quit\r\n",
	  GREETING "+OK Logging out.\r\n" EOF_MARK },
	{ "LF only", false, false, "QUIT\n", GREETING "+OK Logging out.\r\n" EOF_MARK },
	{ "pipelined", false, false, "CAPA\r\nNOOP\r\nQUIT\r\nCAPA\r\n",
	  GREETING CAPA_BASE ".\r\n-ERR Unknown command.\r\n"
	  "+OK Logging out.\r\n" EOF_MARK },
	{ "unknown commands up to max_errors", false, false, "A\r\nB\r\nC\r\nD\r\n",
	  GREETING "-ERR Unknown command.\r\n-ERR Unknown command.\r\n"
	  "-ERR Too many errors, closing the connection.\r\n" EOF_MARK },
	{ "overlong line", false, false,
	  "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"
	  "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"
	  "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"
	  "XXXXXXXXXXX\r\nQUIT\r\n",
	  GREETING "-ERR Line too long.\r\n+OK Logging out.\r\n" EOF_MARK },
	{ "STLS without TLS", false, false, "STLS\r\n", GREETING "-ERR TLS not available.\r\n" },
	{ "USER without a name", true, false, "USER\r\n",
	  GREETING "-ERR Missing user name.\r\n" },
	{ "PASS before USER", true, false, "PASS x\r\n",
	  GREETING "-ERR No user name given (USER first).\r\n" },
	{ "PASS without a password", true, false, "USER a\r\nPASS\r\n",
	  GREETING "+OK\r\n-ERR Missing password.\r\n" },
	{ "AUTH unsupported", true, false, "AUTH CRAM-MD5\r\n",
	  GREETING "-ERR Unsupported authentication mechanism.\r\n" },
	{ "AUTH PLAIN cancelled", true, false, "AUTH PLAIN\r\n*\r\n",
	  GREETING "+ \r\n-ERR Authentication cancelled.\r\n" },
	{ "AUTH PLAIN bad base64", true, false, "AUTH PLAIN ab*d\r\n",
	  GREETING "-ERR [AUTH] Invalid AUTH PLAIN response.\r\n" },
	{ "AUTH PLAIN empty", true, false, "AUTH PLAIN =\r\n",
	  GREETING "-ERR [AUTH] Invalid AUTH PLAIN response.\r\n" },
	/* "bob\0alice\0pw": bob may not act as alice. */
	{ "AUTH PLAIN foreign authzid", true, false, "AUTH PLAIN Ym9iAGFsaWNlAHB3\r\n",
	  GREETING "-ERR [AUTH] Invalid AUTH PLAIN response.\r\n" },
	{ "AUTH PLAIN continuation", true, false, "AUTH PLAIN\r\n",
	  GREETING "+ \r\n" },
	/* IMAP (RFC 9051 6.1, 6.2; no TLS context here: no STARTTLS). */
	{ "IMAP greeting", false, true, "", IMAP_GREETING("LOGINDISABLED") },
	{ "IMAP greeting, plaintext allowed", true, true, "", IMAP_GREETING("AUTH=PLAIN") },
	{ "IMAP CAPABILITY", false, true, "a CAPABILITY\r\n",
	  IMAP_GREETING("LOGINDISABLED") "* CAPABILITY " IMAP_CAPS " LOGINDISABLED\r\n"
	  "a OK CAPABILITY completed.\r\n" },
	{ "IMAP LOGIN before TLS", false, true, "a LOGIN alice pw\r\n",
	  IMAP_GREETING("LOGINDISABLED") "a " IMAP_PRIVACY "\r\n" },
	{ "IMAP literal continuation", false, true, "b LOGIN {5}\r\nalice {2}\r\npw\r\n",
	  IMAP_GREETING("LOGINDISABLED") "+ Ready for literal data\r\n"
	  "+ Ready for literal data\r\nb " IMAP_PRIVACY "\r\n" },
	{ "IMAP ID and NOOP", false, true, "c ID (\"name\" \"x\")\r\nd NOOP\r\n",
	  IMAP_GREETING("LOGINDISABLED") "* ID (\"name\" \"mailtier-mmp\" \"vendor\" "
	  "\"mailtier\")\r\nc OK ID completed.\r\nd OK NOOP completed.\r\n" },
	{ "IMAP SELECT before login", false, true, "e SELECT INBOX\r\n",
	  IMAP_GREETING("LOGINDISABLED")
	  "e BAD Unknown command, or not valid before login.\r\n" },
	{ "IMAP LOGOUT", false, true, "f LOGOUT\r\ng NOOP\r\n",
	  IMAP_GREETING("LOGINDISABLED") "* BYE Logging out\r\nf OK LOGOUT completed.\r\n"
	  EOF_MARK },
	{ "IMAP AUTHENTICATE cancelled", true, true, "h AUTHENTICATE PLAIN\r\n*\r\ni NOOP\r\n",
	  IMAP_GREETING("AUTH=PLAIN") "+ \r\nh BAD Authentication cancelled.\r\n"
	  "i OK NOOP completed.\r\n" },
	/* "bob\0alice\0pw": bob may not act as alice. */
	{ "IMAP AUTHENTICATE foreign authzid", true, true,
	  "j AUTHENTICATE PLAIN Ym9iAGFsaWNlAHB3\r\n", IMAP_GREETING("AUTH=PLAIN")
	  "j NO [AUTHENTICATIONFAILED] Invalid SASL PLAIN response.\r\n" },
	{ "IMAP STARTTLS without TLS", false, true, "k STARTTLS\r\n",
	  IMAP_GREETING("LOGINDISABLED") "k BAD STARTTLS is not available.\r\n" },
	{ "IMAP unknown commands up to max_errors", false, true, "l X\r\nm Y\r\nn Z\r\n",
	  IMAP_GREETING("LOGINDISABLED") "l BAD Unknown command, or not valid before login.\r\n"
	  "m BAD Unknown command, or not valid before login.\r\n"
	  "* BYE Too many errors, closing the connection.\r\n" EOF_MARK },
	{ "IMAP literal beyond the limit", false, true, "o LOGIN {99999999}\r\np NOOP\r\n",
	  IMAP_GREETING("LOGINDISABLED") "o BAD [TOOBIG] Literal too big\r\n"
	  "p OK NOOP completed.\r\n" },
};

struct fixture {
	struct mt_mmp_settings set;
	struct mmp_server server;
	struct mmp_worker worker;
	struct mt_loop *loop;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *error = NULL;
	struct mmp_clients_settings cset = {
		.conn_limit_per_client = 100, .auth_fail_delay = 1000,
		.auth_fail_limit = 10, .auth_fail_window = 60000,
	};
	f->set.max_errors = 3;
	f->set.login_timeout = 60000;
	f->set.idle_timeout = 60000;
	f->loop = mt_loop_new(&error);
	assert_non_null(f->loop);
	f->server.set = &f->set;
	f->server.clients = mmp_clients_new(&cset);
	f->worker.server = &f->server;
	f->worker.loop = f->loop;
	f->worker.base = mt_loop_base(f->loop);
	f->worker.scratch = evbuffer_new();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	mmp_sessions_free_all(&f->worker);
	evbuffer_free(f->worker.scratch);
	mmp_clients_free(&f->server.clients);
	mt_loop_free(&f->loop);
	free(f);
	return 0;
}

/* Let the loop run until nothing is pending. */
static void spin(struct fixture *f)
{
	for (int i = 0; i < 20; i++)
		event_base_loop(f->worker.base, EVLOOP_NONBLOCK);
}

/* What the client side can read now; appends EOF_MARK on EOF. */
static bool drain(int fd, struct mt_buf *got)
{
	if (!test_peer_read(fd, got))
		return false;
	mt_buf_append_str(got, EOF_MARK);
	return true;
}

static void run(struct fixture *f, const struct scenario *s, bool bytewise)
{
	int sv[2];
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(1234),
				    .sin_addr.s_addr = htonl(0xc0000201) };
	struct mt_buf got = MT_BUF_INIT;

	f->set.allow_plaintext_auth = s->plaintext;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	atomic_fetch_add(&f->server.conns, 1);
	assert_int_equal(mmp_clients_admit(f->server.clients,
					   (struct sockaddr *)&peer, 0), MMP_ADMIT_OK);
	mmp_session_new(&f->worker, sv[0], (struct sockaddr *)&peer,
			sizeof(peer), s->imap ? MMP_LISTENER_IMAP : MMP_LISTENER_POP3, NULL);
	spin(f);
	size_t len = strlen(s->input);
	bool eof = false;
	for (size_t i = 0; i < len && !eof; i += bytewise ? 1 : len) {
		size_t n = bytewise ? 1 : len;
		if (write(sv[1], s->input + i, n) < 0 && errno != EPIPE)
			fail_msg("write: %s", strerror(errno));
		spin(f);
		eof = drain(sv[1], &got);
	}
	spin(f);
	if (!eof)
		drain(sv[1], &got);
	if (strcmp(mt_buf_cstr(&got), s->expect) != 0)
		fail_msg("%s%s:\n got: %s\nwant: %s", s->name,
			 bytewise ? " (a byte at a time)" : "", mt_buf_cstr(&got),
			 s->expect);
	close(sv[1]);
	spin(f);	/* the session sees EOF and goes */
	mt_buf_free(&got);
}

static void test_scenarios(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		run(f, &scenarios[i], false);
		run(f, &scenarios[i], true);
	}
	/* Every session was closed and its slot given back. */
	assert_null(f->worker.sessions.head);
	assert_int_equal(f->worker.sessions.count, 0);
	assert_int_equal(atomic_load(&f->server.conns), 0);
	assert_int_equal(mmp_clients_count(f->server.clients), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_scenarios, setup, teardown),
	};
	mt_log_set_min_level(MT_LOG_WARNING);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
