/* fuzz-mta-session.c — session-level libFuzzer target for the MTA's SMTP
 * server: the real session code of mailtier-mta (mta/smtp-*.c on
 * lib-mail's command engine, the dot codec, BDAT, AUTH) on an event loop,
 * a socketpair as the client, a real queue (Berkeley DB) in a temporary
 * directory and a real libdirsvc whose only directory refuses connections
 * (ldap://127.0.0.1:1): every local recipient and every login ends in the
 * directory-unavailable answer, and there is no delivery (nothing takes a
 * queued message further).
 *
 * Input: the first byte chooses the listener (bit 0: submission, else
 * smtp), the delivery (bit 1: a byte per write, else one write) and the
 * client (bit 2: an address in mynetworks, which may relay, so MAIL, RCPT
 * to a remote domain, DATA and BDAT run through to the queue); the rest
 * is what the client sends.
 *
 * Properties, beyond "no crash, no leak, no over-read" (ASan):
 *  - the client reads a 220 greeting first, then CRLF lines only, none
 *    over 512 octets, each a reply "DDD " or "DDD-" with a code from 2xx
 *    to 5xx;
 *  - no open relay: a client outside mynetworks never gets a message
 *    queued (every recipient needs the directory, which refuses, or
 *    relaying, which it may not);
 *  - once the client has closed, no session is left.
 * Trust boundary: SMTP client bytes (RFC 5321, 1870, 2920, 3030, 3207,
 * 4954, 6152, 6531). */
#include "fuzz-daemon.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "alloc.h"
#include "dirsvc.h"
#include "mta/mta.h"
#include "mta/mta-policy.h"
#include "mta/queue.h"
#include "mta/smtp-session.h"

static struct mta fixture;

/* The queue's environment is private (DB_PRIVATE): Berkeley DB takes its
 * region objects (cache buffers, transaction details) from the heap and
 * links them by self-relative offsets, which LeakSanitizer cannot follow,
 * so every buffer the cache gains during an input looks leaked. They are
 * freed when the environment closes (at exit, fixture_free). So
 * allocations by Berkeley DB's own allocator (__os_malloc: the fast
 * unwinder sees no further into libdb) are exempt; what the MTA's code
 * allocates itself is still checked. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:__os_malloc\n";
}

/* At exit, before the directory goes: close what the fixture opened. */
static void fixture_free(void)
{
	smtp_server_free(&fixture.server);
	queue_close(&fixture.queue);
	mt_dirsvc_client_free(&fixture.dir);
	mt_dirsvc_free(&fixture.dirsvc);
	mta_policy_free(&fixture.policy);
	mt_loop_free(&fixture.loop);
	free(fixture.hostname);
	mt_config_free(&fixture.config);
}

static struct mta *fixture_get(void)
{
	static bool ready;
	if (ready)
		return &fixture;
	const char *dir = fuzz_daemon_dir("fuzz-mta");
	atexit(fixture_free);
	char conf[1024];
	snprintf(conf, sizeof(conf),
		 "[mta]\nlocal_domains = example.test\nhostname = fuzz.test\n"
		 "queue_dir = %s/queue\nmynetworks = 127.0.0.2/32\n"
		 "max_errors = 10\nmax_recipients = 20\nmax_message_size = 64k\n"
		 "auth_fail_delay = 0\nrcpt_fail_delay = 0\nrcpt_fail_limit = 0\n"
		 "max_sessions_per_client = 1000\ncommand_timeout = 60s\n"
		 "[directory]\nuris = ldap://127.0.0.1:1\nbase_dn = dc=example,dc=test\n"
		 "timeout = 300ms\npool_size = 1\n", dir);
	fixture.config = fuzz_daemon_config(dir, conf);
	fixture.config_path = dir;
	fixture.set = mt_config_get(fixture.config, "mta", NULL);
	fixture.global = mt_config_get(fixture.config, "global", NULL);
	fixture.policy = mta_policy_new(fixture.set);
	fixture.hostname = mt_xstrdup("fuzz.test");
	const char *error;
	fixture.loop = mt_loop_new(&error);
	FUZZ_CHECK(fixture.loop != NULL, "loop: %s", error);
	fixture.queue = queue_open(fixture.set->queue_dir, fixture.loop, &error);
	FUZZ_CHECK(fixture.queue != NULL, "queue: %s", error);
	fixture.dirsvc = mt_dirsvc_new(mt_config_get(fixture.config, "directory", NULL),
				       fixture.config, &error);
	FUZZ_CHECK(fixture.dirsvc != NULL, "dirsvc: %s", error);
	fixture.dir = mt_dirsvc_client_new(fixture.dirsvc, fixture.loop);
	fixture.server = smtp_server_new(&fixture);
	ready = true;
	return &fixture;
}

/* Let the queue's writes in flight (a message a trusted client sent in an
 * earlier input) become durable and counted, so that the count compared
 * below is this input's alone. The commit thread stops counting a write
 * as pending just before it posts the completion that counts the message
 * (lib-bdb/bdb-commit.c): give that post a moment and run it. */
static void queue_settle(struct mta *mta)
{
	for (int i = 0; i < 2000; i++) {
		struct queue_stats qs;
		queue_get_stats(mta->queue, &qs);
		bool done = qs.pending_writes == 0;
		usleep(500);
		fuzz_daemon_spin(mta->loop);
		if (done)
			return;
	}
	FUZZ_CHECK(false, "the queue's writes did not finish");
}

static unsigned int session_count(void *context)
{
	return smtp_server_count(((struct mta *)context)->server);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct mta *mta = fixture_get();
	enum smtp_service service = (data[0] & 1) != 0 ? SMTP_SERVICE_SUBMISSION :
		SMTP_SERVICE_SMTP;
	bool bytewise = (data[0] & 2) != 0, trusted = (data[0] & 4) != 0;
	data++;
	size--;

	queue_settle(mta);
	unsigned int queued_before = queue_count(mta->queue);
	int sv[2];
	FUZZ_CHECK(test_peer_pair(sv), "socketpair");
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(1234),
				    .sin_addr.s_addr = htonl(trusted ? 0x7f000002 : 0x7f000001) };
	smtp_server_accept(mta->server, service, sv[0], (struct sockaddr *)&peer,
			   sizeof(peer));
	FUZZ_CHECK(smtp_server_count(mta->server) == 1, "session not started");
	struct fuzz_daemon_session fs = { mta->loop, session_count, mta };
	struct mt_buf got = MT_BUF_INIT;
	fuzz_daemon_client(&fs, sv[1], data, size, bytewise, &got);
	fuzz_check_lines(&got, "220 fuzz.test ", true);
	queue_settle(mta);
	if (!trusted)
		FUZZ_CHECK(queue_count(mta->queue) == queued_before,
			   "a message queued for a client outside mynetworks");
	mt_buf_free(&got);
	return 0;
}
