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
#include "fuzz.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "alloc.h"
#include "buf.h"
#include "config.h"
#include "dirsvc.h"
#include "log.h"
#include "loop.h"
#include "mailtier-settings.h"
#include "mta/mta.h"
#include "mta/mta-policy.h"
#include "mta/queue.h"
#include "mta/smtp-session.h"
#include "tests/unit/test-peer.h"

#define REPLY_MAX 512

static struct mta fixture;
static char fixture_dir[64];

/* At exit: close what the fixture opened and remove its directory. */
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
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fixture_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", fixture_dir);
}

static struct mta *fixture_get(void)
{
	static bool ready;
	if (ready)
		return &fixture;
	mt_log_set_min_level(MT_LOG_ERROR);
	signal(SIGPIPE, SIG_IGN);	/* as the daemon (mt_loop_handle_signals) */
	char dir[64] = "/tmp/fuzz-mta.";
	size_t n = strlen(dir);
	memset(dir + n, 'X', 6);	/* mkdtemp's template */
	dir[n + 6] = '\0';
	FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
	snprintf(fixture_dir, sizeof(fixture_dir), "%s", dir);
	atexit(fixture_free);
	char path[128], conf[1024];
	snprintf(path, sizeof(path), "%s/mailtier.conf", dir);
	snprintf(conf, sizeof(conf),
		 "[mta]\nlocal_domains = example.test\nhostname = fuzz.test\n"
		 "queue_dir = %s/queue\nmynetworks = 127.0.0.2/32\n"
		 "max_errors = 10\nmax_recipients = 20\nmax_message_size = 64k\n"
		 "auth_fail_delay = 0\nrcpt_fail_delay = 0\nrcpt_fail_limit = 0\n"
		 "max_sessions_per_client = 1000\ncommand_timeout = 60s\n"
		 "[directory]\nuris = ldap://127.0.0.1:1\nbase_dn = dc=example,dc=test\n"
		 "timeout = 300ms\npool_size = 1\n", dir);
	FILE *fp = fopen(path, "w");
	FUZZ_CHECK(fp != NULL && fputs(conf, fp) >= 0 && fclose(fp) == 0, "config");
	char *errors = NULL;
	fixture.config = mt_mailtier_config_load(path, &errors);
	FUZZ_CHECK(fixture.config != NULL, "config: %s", errors);
	fixture.config_path = fixture_dir;
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

static void spin(void *context)
{
	struct mta *mta = context;
	for (int i = 0; i < 8; i++)
		event_base_loop(mt_loop_base(mta->loop), EVLOOP_NONBLOCK);
}

static bool reply_line_ok(const char *p, size_t len)
{
	return len >= 4 && p[0] >= '2' && p[0] <= '5' && p[1] >= '0' && p[1] <= '9' &&
		p[2] >= '0' && p[2] <= '9' && (p[3] == ' ' || p[3] == '-');
}

static void check_output(const struct mt_buf *got)
{
	const char *p = got->data, *end = got->data + got->len;
	static const char greeting[] = "220 fuzz.test ";
	FUZZ_CHECK(got->len >= sizeof(greeting) - 1 &&
		   memcmp(p, greeting, sizeof(greeting) - 1) == 0, "no greeting");
	while (p < end) {
		const char *lf = memchr(p, '\n', (size_t)(end - p));
		if (lf == NULL)
			break;	/* the rest may still be on its way */
		size_t len = (size_t)(lf - p) + 1;
		FUZZ_CHECK(lf > p && lf[-1] == '\r', "bare LF in a reply");
		FUZZ_CHECK(len <= REPLY_MAX, "reply of %zu octets", len);
		FUZZ_CHECK(reply_line_ok(p, len - 2), "not an SMTP reply: %.*s",
			   (int)(len - 2), p);
		p = lf + 1;
	}
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

	unsigned int queued_before = queue_count(mta->queue);
	int sv[2];
	FUZZ_CHECK(test_peer_pair(sv), "socketpair");
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(1234),
				    .sin_addr.s_addr = htonl(trusted ? 0x7f000002 : 0x7f000001) };
	smtp_server_accept(mta->server, service, sv[0], (struct sockaddr *)&peer,
			   sizeof(peer));
	FUZZ_CHECK(smtp_server_count(mta->server) == 1, "session not started");
	spin(mta);
	struct mt_buf got = MT_BUF_INIT;
	bool eof = test_peer_feed(sv[1], data, size, bytewise, spin, mta, &got);
	/* The directory's refusals and the queue's commits arrive from
	 * their threads. */
	for (int i = 0; i < 20 && !eof; i++) {
		usleep(500);
		spin(mta);
		eof = test_peer_read(sv[1], &got);
	}
	check_output(&got);
	close(sv[1]);
	for (int i = 0; i < 100 && smtp_server_count(mta->server) > 0; i++) {
		spin(mta);
		if (smtp_server_count(mta->server) > 0)
			usleep(1000);
	}
	FUZZ_CHECK(smtp_server_count(mta->server) == 0, "%u sessions left",
		   smtp_server_count(mta->server));
	if (!trusted)
		FUZZ_CHECK(queue_count(mta->queue) == queued_before,
			   "a message queued for a client outside mynetworks");
	mt_buf_free(&got);
	return 0;
}
