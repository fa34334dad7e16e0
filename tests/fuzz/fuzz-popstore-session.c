/* fuzz-popstore-session.c — session-level libFuzzer target for the store's
 * two servers: the real LMTP and POP3 session code of mailtier-popstore
 * (popstore/lmtp-*.c, pop3-*.c on lib-mail's connection core and login
 * phase) on an event loop, a socketpair as the client, a real store in a
 * temporary directory and a real libdirsvc whose only directory refuses
 * connections (ldap://127.0.0.1:1): every recipient lookup and login ends
 * in the directory-unavailable answer, so the input drives the command
 * state machines, pipelining, DATA/the dot codec, SASL and the waits on
 * the directory, and nothing is ever delivered.
 *
 * Input: the first byte chooses the server (bit 0: POP3, else LMTP), the
 * delivery (bit 1: a byte per write, else one write) and, for POP3, the
 * client's standing (bit 2: a proxy address, so plaintext logins and the
 * proxy login are accepted); the rest is what the client sends.
 *
 * Properties, beyond "no crash, no leak, no over-read" (ASan):
 *  - the client reads the greeting first, then CRLF lines only, none over
 *    512 octets; LMTP's lines are replies "DDD " or "DDD-" with a code
 *    from 2xx to 5xx, POP3's start with "+OK", "-ERR", "+ " or are the
 *    lines of a multi-line answer;
 *  - the store is never written: a delivery needs a recipient the
 *    directory accepted;
 *  - once the client has closed, no session is left and the daemon's
 *    session count is back to zero.
 * Trust boundary: LMTP and POP3 client bytes (RFC 2033, 5321, 1939, 2449,
 * 5034, 4616). */
#include "fuzz-daemon.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "alloc.h"
#include "cidr.h"
#include "dirsvc.h"
#include "popstore/popstore.h"
#include "store/store.h"

static struct popstore fixture;

/* At exit, before the directory goes (the store's regions and reserve
 * are tens of MB): close what the fixture opened. */
static void fixture_free(void)
{
	mt_dirsvc_client_free(&fixture.dir);
	mt_dirsvc_free(&fixture.dirsvc);
	mt_store_port_free(&fixture.port);
	mt_store_close(&fixture.store);
	mt_loop_free(&fixture.loop);
	free(fixture.lmtp_clients);
	free(fixture.hostname);
	mt_config_free(&fixture.config);
}

static struct popstore *fixture_get(void)
{
	static bool ready;
	if (ready)
		return &fixture;
	const char *dir = fuzz_daemon_dir("fuzz-popstore");
	atexit(fixture_free);
	char conf[1024];
	snprintf(conf, sizeof(conf),
		 "[shards]\ns1 = 127.0.0.1:1, 127.0.0.1:2\n[mta]\nlocal_domains = example.test\n"
		 "[directory]\nuris = ldap://127.0.0.1:1\nbase_dn = dc=example,dc=test\n"
		 "timeout = 300ms\npool_size = 1\n"
		 "[popstore]\nshard = s1\ndb_home = %s/store\ndb_cache_size = 4M\n"
		 "lmtp_listen = 127.0.0.1:1\npop3_listen = 127.0.0.1:1\n"
		 "lmtp_clients = 127.0.0.0/8\nmax_errors = 5\nauth_fail_delay = 0\n"
		 "idle_timeout = 60s\n", dir);
	fixture.config = fuzz_daemon_config(dir, conf);
	fixture.set = mt_config_get(fixture.config, "popstore", NULL);
	fixture.global = mt_config_get(fixture.config, "global", NULL);
	fixture.shard = "s1";
	fixture.hostname = mt_xstrdup("fuzz.test");
	fixture.lmtp_clients = popstore_parse_cidrs(&fixture.set->lmtp_clients, &fixture.n_lmtp_clients);
	const char *error;
	fixture.loop = mt_loop_new(&error);
	FUZZ_CHECK(fixture.loop != NULL, "loop: %s", error);
	popstore_open_store(&fixture);
	fixture.dirsvc = mt_dirsvc_new(mt_config_get(fixture.config, "directory", NULL),
				  fixture.config, &error);
	FUZZ_CHECK(fixture.dirsvc != NULL, "dirsvc: %s", error);
	fixture.dir = mt_dirsvc_client_new(fixture.dirsvc, fixture.loop);
	ready = true;
	return &fixture;
}

static unsigned int session_count(void *context)
{
	return ((struct popstore *)context)->sessions;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct popstore *ps = fixture_get();
	bool pop3 = (data[0] & 1) != 0, bytewise = (data[0] & 2) != 0;
	static struct mt_cidr loopback;
	static bool loopback_parsed;
	const char *error;
	if (!loopback_parsed)
		FUZZ_CHECK(mt_cidr_parse("127.0.0.0/8", &loopback, &error), "cidr");
	loopback_parsed = true;
	ps->proxy_addresses = (data[0] & 4) != 0 ? &loopback : NULL;
	ps->n_proxy_addresses = (data[0] & 4) != 0 ? 1 : 0;
	data++;
	size--;

	struct mt_store_counters before, after;
	mt_store_counters_get(ps->store, &before);
	int sv[2];
	FUZZ_CHECK(test_peer_pair(sv), "socketpair");
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(1234),
				    .sin_addr.s_addr = htonl(0x7f000001) };
	if (pop3)
		pop3_session_accept(ps, sv[0], (struct sockaddr *)&peer, false);
	else
		lmtp_session_accept(ps, sv[0], (struct sockaddr *)&peer);
	FUZZ_CHECK(ps->sessions == 1, "session not started");
	struct fuzz_daemon_session fs = { ps->loop, session_count, ps };
	struct mt_buf got = MT_BUF_INIT;
	fuzz_daemon_client(&fs, sv[1], data, size, bytewise, &got);
	fuzz_check_lines(&got, pop3 ? "+OK mailtier-popstore ready\r\n" : "220 fuzz.test LMTP",
			 !pop3);
	FUZZ_CHECK(ps->lmtp_sessions.count == 0 && ps->pop3_sessions.count == 0,
		   "sessions still listed");
	mt_store_counters_get(ps->store, &after);
	FUZZ_CHECK(after.deliveries == before.deliveries, "a delivery without a recipient");
	mt_buf_free(&got);
	return 0;
}
