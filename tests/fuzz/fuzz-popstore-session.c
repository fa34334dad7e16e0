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
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "alloc.h"
#include "buf.h"
#include "cidr.h"
#include "config.h"
#include "dirsvc.h"
#include "log.h"
#include "loop.h"
#include "mailtier-settings.h"
#include "popstore/popstore.h"
#include "store/store.h"
#include "tests/unit/test-peer.h"

#define REPLY_MAX 512

static struct popstore fixture;
static char fixture_dir[64];

/* At exit: close what the fixture opened and remove its directory (the
 * store's regions and reserve are tens of MB). */
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
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fixture_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", fixture_dir);
}

static struct popstore *fixture_get(void)
{
	static bool ready;
	if (ready)
		return &fixture;
	mt_log_set_min_level(MT_LOG_ERROR);
	signal(SIGPIPE, SIG_IGN);	/* as the daemon (mt_loop_handle_signals) */
	char dir[64] = "/tmp/fuzz-popstore.";
	size_t n = strlen(dir);
	memset(dir + n, 'X', 6);	/* mkdtemp's template */
	dir[n + 6] = '\0';
	FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
	snprintf(fixture_dir, sizeof(fixture_dir), "%s", dir);
	atexit(fixture_free);
	char path[128], conf[1024];
	snprintf(path, sizeof(path), "%s/mailtier.conf", dir);
	snprintf(conf, sizeof(conf),
		 "[shards]\ns1 = 127.0.0.1:1, 127.0.0.1:2\n[mta]\nlocal_domains = example.test\n"
		 "[directory]\nuris = ldap://127.0.0.1:1\nbase_dn = dc=example,dc=test\n"
		 "timeout = 300ms\npool_size = 1\n"
		 "[popstore]\nshard = s1\ndb_home = %s/store\ndb_cache_size = 4M\n"
		 "lmtp_listen = 127.0.0.1:1\npop3_listen = 127.0.0.1:1\n"
		 "lmtp_clients = 127.0.0.0/8\nmax_errors = 5\nauth_fail_delay = 0\n"
		 "idle_timeout = 60s\n", dir);
	FILE *fp = fopen(path, "w");
	FUZZ_CHECK(fp != NULL && fputs(conf, fp) >= 0 && fclose(fp) == 0, "config");
	char *errors = NULL;
	fixture.config = mt_mailtier_config_load(path, &errors);
	FUZZ_CHECK(fixture.config != NULL, "config: %s", errors);
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

static void spin(void *context)
{
	struct popstore *ps = context;
	for (int i = 0; i < 8; i++)
		event_base_loop(mt_loop_base(ps->loop), EVLOOP_NONBLOCK);
}

static bool lmtp_line_ok(const char *p, size_t len)
{
	return len >= 4 && p[0] >= '2' && p[0] <= '5' && p[1] >= '0' && p[1] <= '9' &&
		p[2] >= '0' && p[2] <= '9' && (p[3] == ' ' || p[3] == '-');
}

static void check_output(const struct mt_buf *got, bool pop3)
{
	const char *p = got->data, *end = got->data + got->len;
	const char *greeting = pop3 ? "+OK mailtier-popstore ready\r\n" : "220 fuzz.test LMTP";
	size_t glen = strlen(greeting);
	FUZZ_CHECK(got->len >= glen && memcmp(p, greeting, glen) == 0, "no greeting");
	while (p < end) {
		const char *lf = memchr(p, '\n', (size_t)(end - p));
		if (lf == NULL)
			break;	/* the rest may still be on its way */
		size_t len = (size_t)(lf - p) + 1;
		FUZZ_CHECK(lf > p && lf[-1] == '\r', "bare LF in a reply");
		FUZZ_CHECK(len <= REPLY_MAX, "reply of %zu octets", len);
		if (!pop3)
			FUZZ_CHECK(lmtp_line_ok(p, len - 2), "not an LMTP reply: %.*s",
				   (int)(len - 2), p);
		p = lf + 1;
	}
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
	spin(ps);
	struct mt_buf got = MT_BUF_INIT;
	bool eof = test_peer_feed(sv[1], data, size, bytewise, spin, ps, &got);
	/* The directory's refusals arrive from its thread. */
	for (int i = 0; i < 20 && !eof; i++) {
		usleep(500);
		spin(ps);
		eof = test_peer_read(sv[1], &got);
	}
	check_output(&got, pop3);
	close(sv[1]);
	for (int i = 0; i < 50 && ps->sessions > 0; i++) {
		spin(ps);
		if (ps->sessions > 0)
			usleep(1000);
	}
	FUZZ_CHECK(ps->sessions == 0, "%u sessions left", ps->sessions);
	FUZZ_CHECK(ps->lmtp_sessions.count == 0 && ps->pop3_sessions.count == 0,
		   "sessions still listed");
	mt_store_counters_get(ps->store, &after);
	FUZZ_CHECK(after.deliveries == before.deliveries, "a delivery without a recipient");
	mt_buf_free(&got);
	return 0;
}
