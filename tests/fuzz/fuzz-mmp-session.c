/* fuzz-mmp-session.c — session-level libFuzzer target for the MMP's POP3
 * and IMAP fronts before login: the real session code (mmp/mmp-session.c,
 * mmp-commands.c, mmp-imap.c, mmp-login.c) on an event loop, a socketpair as the
 * client, and a real libdirsvc whose only directory refuses connections
 * (ldap://127.0.0.1:1), so a login that gets that far ends in the
 * directory-unavailable answer or is abandoned when the client goes.
 *
 * Input: the first byte chooses the policy (bit 0: allow_plaintext_auth),
 * the delivery (bit 1: a byte per write, else one write) and the protocol
 * (bit 2: IMAP, else POP3); the rest is what the client sends.
 *
 * Properties, beyond "no crash, no leak, no over-read" (ASan):
 *  - what the client reads starts with the greeting and is CRLF lines only
 *    (no bare LF), none longer than 512 octets (RFC 1939 3; the IMAP
 *    front's lines are as short: fixed texts and a tag of at most 64);
 *  - once the client has closed, the worker has no session left and the
 *    connection and per-address slots are all given back (failure records
 *    expire with auth_fail_window).
 * Trust boundary: POP3 and IMAP client bytes before login (RFC 1939,
 * 2449, 2595, 5034, 4616; RFC 9051 6.1, 6.2, 4959, 7888, 2971). */
#include "fuzz-daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "buf.h"
#include "clock.h"
#include "dirsvc.h"
#include "dirsvc-settings.h"
#include "log.h"
#include "loop.h"
#include "mmp/mmp.h"
#include "tests/unit/test-peer.h"

#define GREETING "+OK mailtier POP3 proxy ready.\r\n"
/* No TLS context here: no STARTTLS; LOGINDISABLED or AUTH=PLAIN. */
#define IMAP_GREETING(auth) "* OK [CAPABILITY IMAP4rev2 IMAP4rev1 SASL-IR " \
	"LITERAL+ ID ENABLE " auth "] mailtier IMAP proxy ready.\r\n"

struct fixture {
	struct mt_mmp_settings set;
	struct mmp_server server;
	struct mmp_worker worker;
	struct mt_loop *loop;
};

static struct fixture *fixture_get(void)
{
	static struct fixture *f;
	if (f != NULL)
		return f;
	mt_log_set_min_level(MT_LOG_ERROR);
	/* As the daemon does (mt_loop_handle_signals): a write to a socket
	 * the other side closed is EPIPE, not the end of the process. */
	signal(SIGPIPE, SIG_IGN);
	f = calloc(1, sizeof(*f));
	const char *error = NULL;
	struct mmp_clients_settings cset = {
		.conn_limit_per_client = 100, .auth_fail_delay = 0,
		.auth_fail_limit = 1000, .auth_fail_window = 1000,
	};
	f->set.max_errors = 5;
	f->set.login_timeout = 60000;
	f->set.idle_timeout = 60000;
	f->set.backend_connect_timeout = 200;
	f->loop = mt_loop_new(&error);
	FUZZ_CHECK(f->loop != NULL, "loop: %s", error);
	static char uri[] = "ldap://127.0.0.1:1";
	static char *uris[] = { uri };
	static struct mt_directory_settings dset = {
		.uris = { uris, 1 }, .base_dn = "dc=example,dc=test",
		.timeout = 300, .pool_size = 1, .cache_ttl = 1000,
		.negative_cache_ttl = 1000, .cache_entries = 16,
	};
	f->server.dirsvc = mt_dirsvc_new(&dset, NULL, &error);
	FUZZ_CHECK(f->server.dirsvc != NULL, "dirsvc: %s", error);
	f->server.set = &f->set;
	f->server.clients = mmp_clients_new(&cset);
	f->worker.server = &f->server;
	f->worker.loop = f->loop;
	f->worker.base = mt_loop_base(f->loop);
	f->worker.dirsvc = mt_dirsvc_client_new(f->server.dirsvc, f->loop);
	f->worker.scratch = evbuffer_new();
	return f;
}

static void spin(void *context)
{
	struct fixture *f = context;
	for (int i = 0; i < 8; i++)
		event_base_loop(f->worker.base, EVLOOP_NONBLOCK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct fixture *f = fixture_get();
	f->set.allow_plaintext_auth = (data[0] & 1) != 0;
	bool bytewise = (data[0] & 2) != 0;
	bool imap = (data[0] & 4) != 0;
	data++;
	size--;

	int sv[2];
	FUZZ_CHECK(test_peer_pair(sv), "socketpair");
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(1234),
				    .sin_addr.s_addr = htonl(0xc0000201) };
	atomic_fetch_add(&f->server.conns, 1);
	FUZZ_CHECK(mmp_clients_admit(f->server.clients, (struct sockaddr *)&peer, 0) ==
		   MMP_ADMIT_OK, "admit");
	mmp_session_new(&f->worker, sv[0], (struct sockaddr *)&peer, sizeof(peer),
			imap ? MMP_LISTENER_IMAP : MMP_LISTENER_POP3, NULL);
	spin(f);
	struct mt_buf got = MT_BUF_INIT;
	bool eof = test_peer_feed(sv[1], data, size, bytewise, spin, f, &got);
	spin(f);
	if (!eof)
		(void)test_peer_read(sv[1], &got);
	fuzz_check_lines(&got, !imap ? GREETING : f->set.allow_plaintext_auth ?
			 IMAP_GREETING("AUTH=PLAIN") : IMAP_GREETING("LOGINDISABLED"), false);
	close(sv[1]);
	/* The session sees EOF and goes; a directory request still out is
	 * abandoned, its answer (a refused connection) comes meanwhile. */
	for (int i = 0; i < 50 && f->worker.sessions.count > 0; i++) {
		spin(f);
		if (f->worker.sessions.count > 0)
			usleep(1000);
	}
	FUZZ_CHECK(f->worker.sessions.count == 0 && f->worker.sessions.head == NULL,
		   "%u sessions left", f->worker.sessions.count);
	FUZZ_CHECK(atomic_load(&f->server.conns) == 0, "connection slots left");
	/* A failed login's record stays for auth_fail_window; once that has
	 * passed, only an address with a connection still counted (a leaked
	 * slot) would keep its entry. */
	mmp_clients_sweep(f->server.clients, mt_clock_ms() + 3600 * 1000);
	FUZZ_CHECK(mmp_clients_count(f->server.clients) == 0, "per-address slots left");
	mt_buf_free(&got);
	return 0;
}
