/* test-loadgen-clients.c — the SMTP and POP3 client state machines of
 * mailtier-load (loadgen/smtp-client.c, pop-client.c, session.c, reply.c)
 * against scripted servers on loopback sockets: a well-behaved server,
 * then one that answers garbage, closes mid-session, stalls past the step
 * timeout, refuses the connection, rejects a command or trickles its
 * replies a byte at a time. Each must end as the right kind of error, never
 * as a crash or hang. The same machine as an LMTP client (RFC 2033: LHLO,
 * a reply per recipient after the data, several transactions on one
 * connection) for `fill --lmtp`. The IMAP client (loadgen/imap-client.c,
 * imap-script.c, imap-response.c): a desktop session (AUTHENTICATE PLAIN
 * on a "+", CAPABILITY after login, new messages, a reply APPENDed with a
 * synchronising literal, IDLE woken by EXISTS and by the session's end),
 * a webmail poll with literals and literal8 trickled a byte at a time,
 * the fill of the folder model (CREATE, a NO for an existing folder,
 * APPEND with LITERAL+), and servers that misbehave: garbage, a BYE, a NO
 * on login, a close mid-literal, a stall, an oversized line or literal,
 * a tag not ours, a continuation not asked for. SMTP with --tls (RFC
 * 3207) against servers that do not offer STARTTLS or refuse it; a
 * desktop reply's submission (AUTH PLAIN as the user, its own rows and
 * counts) and submission servers that refuse it; the reply's recipient
 * read from the ENVELOPE; the delivery probe watcher (IDLE, and NOOP
 * polls without it: ids timed at their EXISTS, then deleted). Also the
 * SMTP sink (loadgen/sink.c) driven by a scripted client, and the reply
 * parsers. The scripted peer runs in a thread with blocking sockets; the
 * code under test runs in its event loop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "loop.h"
#include "imap-client.h"
#include "imap-response.h"
#include "pop-client.h"
#include "sink.h"
#include "smtp-client.h"
#include "tls.h"
#include "tracker.h"

/* ---- the scripted peer ---- */

enum op {
	SEND,		/* write text */
	TRICKLE,	/* write text one byte at a time */
	EXPECT,		/* read a line; it must start with text */
	BODY,		/* read SMTP message data up to CRLF.CRLF */
	LITERAL,	/* read an IMAP command line ending in {n} or {n+}
			 * starting with text ("+ go" for {n}), then n octets */
	STALL,		/* sleep ms */
	CLOSE,		/* close now */
	END,		/* read until the client closes */
};

struct step {
	enum op op;
	const char *text;
	int ms;
};

#define MAX_STEPS 40

/* Script steps (every field given: -Wmissing-field-initializers). */
#define S(text) { SEND, text, 0 }
#define T(text) { TRICKLE, text, 0 }
#define E(text) { EXPECT, text, 0 }
#define BODY_STEP { BODY, NULL, 0 }
#define L(text) { LITERAL, text, 0 }
#define CLOSE_STEP { CLOSE, NULL, 0 }
#define W(ms) { STALL, NULL, ms }

struct peer {
	struct step steps[MAX_STEPS];
	int fd;			/* listening (server) or connected (client) */
	bool is_client;
	pthread_t thread;
	/* results */
	char failure[256];
	size_t body_len;
	bool body_has_id;
	atomic_bool done;
};

static void peer_fail(struct peer *p, const char *fmt, ...)
{
	va_list ap;

	if (p->failure[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(p->failure, sizeof(p->failure), fmt, ap);
	va_end(ap);
}

/* One line (CRLF stripped) from a blocking socket; false on EOF/error. */
static bool read_line(int fd, char *line, size_t size)
{
	size_t len = 0;
	char c;

	for (;;) {
		ssize_t n = read(fd, &c, 1);
		if (n <= 0)
			return false;
		if (c == '\n')
			break;
		if (len + 1 < size)
			line[len++] = c;
	}
	if (len > 0 && line[len - 1] == '\r')
		len--;
	line[len] = '\0';
	return true;
}

/* An IMAP command with a literal: the line, "+ go" unless it is a
 * LITERAL+ one ({n+}), the n octets and the CRLF that ends the command. */
static void read_literal(struct peer *p, int fd, const char *text, int i,
			 char *line, size_t size)
{
	char *brace, *end;

	if (!read_line(fd, line, size)) {
		peer_fail(p, "step %d: EOF, expected '%s'", i, text);
		return;
	}
	brace = strrchr(line, '{');
	if (strncmp(line, text, strlen(text)) != 0 || brace == NULL) {
		peer_fail(p, "step %d: got '%s', expected '%s' {n}", i, line, text);
		return;
	}
	unsigned long n = strtoul(brace + 1, &end, 10);
	if (*end != '+' && write(fd, "+ go\r\n", 6) != 6)
		peer_fail(p, "step %d: write failed", i);
	for (unsigned long got = 0; got < n + 2;) {
		char chunk[4096];
		size_t want = n + 2 - got < sizeof(chunk) ? n + 2 - got : sizeof(chunk);
		ssize_t r = read(fd, chunk, want);
		if (r <= 0) {
			peer_fail(p, "step %d: EOF in the literal", i);
			return;
		}
		got += (unsigned long)r;
	}
	p->body_len = n;
}

static void run_steps(struct peer *p, int fd)
{
	char line[70000];

	for (int i = 0; i < MAX_STEPS && p->steps[i].op != END; i++) {
		const struct step *s = &p->steps[i];
		switch (s->op) {
		case SEND:
			if (write(fd, s->text, strlen(s->text)) < 0)
				peer_fail(p, "step %d: write: %s", i, strerror(errno));
			break;
		case TRICKLE:
			for (const char *c = s->text; *c != '\0'; c++) {
				if (write(fd, c, 1) != 1)
					peer_fail(p, "step %d: write failed", i);
				usleep(500);
			}
			break;
		case EXPECT:
			if (!read_line(fd, line, sizeof(line)))
				peer_fail(p, "step %d: EOF, expected '%s'", i, s->text);
			else if (strncmp(line, s->text, strlen(s->text)) != 0)
				peer_fail(p, "step %d: got '%s', expected '%s'", i, line, s->text);
			break;
		case BODY:
			for (;;) {
				if (!read_line(fd, line, sizeof(line))) {
					peer_fail(p, "step %d: EOF in message data", i);
					break;
				}
				if (strcmp(line, ".") == 0)
					break;
				p->body_len += strlen(line) + 2;
				if (strncmp(line, LG_ID_HEADER ": ", sizeof(LG_ID_HEADER) + 1) == 0)
					p->body_has_id = true;
			}
			break;
		case LITERAL:
			read_literal(p, fd, s->text, i, line, sizeof(line));
			break;
		case STALL:
			usleep((useconds_t)s->ms * 1000);
			break;
		case CLOSE:
			return;
		case END:
			break;
		}
	}
	/* Wait for the other side to close (bounded by SO_RCVTIMEO). */
	while (read(fd, line, sizeof(line)) > 0)
		;
}

static void set_timeout(int fd)
{
	struct timeval tv = { 5, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	int fd = p->fd;

	if (!p->is_client) {
		fd = accept(p->fd, NULL, NULL);
		if (fd < 0) {
			peer_fail(p, "accept: %s", strerror(errno));
			atomic_store(&p->done, true);
			return NULL;
		}
	}
	set_timeout(fd);
	run_steps(p, fd);
	close(fd);
	atomic_store(&p->done, true);
	return NULL;
}

/* Start a scripted server on a free loopback port. */
static void peer_serve(struct peer *p, struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);

	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	p->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(p->fd >= 0);
	assert_int_equal(bind(p->fd, (struct sockaddr *)addr, sizeof(*addr)), 0);
	assert_int_equal(listen(p->fd, 4), 0);
	assert_int_equal(getsockname(p->fd, (struct sockaddr *)addr, &len), 0);
	assert_int_equal(pthread_create(&p->thread, NULL, peer_main, p), 0);
}

static void peer_join(struct peer *p)
{
	pthread_join(p->thread, NULL);
	if (!p->is_client)
		close(p->fd);
	if (p->failure[0] != '\0')
		fail_msg("scripted peer: %s", p->failure);
}

/* ---- running one client session ---- */

struct outcome {
	struct lg_session *session;
	bool done;
	bool failed;
	enum lg_error error;
	char detail[160];
	uint64_t elapsed_ms;
};

static struct lg_workload wl = {
	.users = 10, .first_user = 1,
	.domain = "example.test", .remote_domain = "remote.test",
	.local_template = LG_DEFAULT_LOCAL_TEMPLATE,
	.login_template = LG_DEFAULT_LOGIN_TEMPLATE,
	.password_template = LG_DEFAULT_PASSWORD_TEMPLATE,
};

static void on_done(struct lg_session *s, void *context)
{
	struct outcome *o = context;

	o->done = true;
	o->failed = s->failed;
	o->error = s->error;
	snprintf(o->detail, sizeof(o->detail), "%s", s->detail);
	event_base_loopexit(s->env->base, NULL);
}

static const struct lg_message_plan plan_2rcpt = {
	.from_remote = false, .sender = 3, .size = 2048,
	.n_rcpts = 2, .n_local = 1, .n_remote = 1,
	.rcpts = { { false, 4 }, { true, 77 } },
};

/* When set, run_client() starts an IMAP session with these parameters. */
static const struct lg_imap_params *imap_client;
/* When set, run_client()'s SMTP session has these parameters and kind
 * (else plan_2rcpt as a local user's session). */
static const struct lg_smtp_params *smtp_client;
static enum lg_kind smtp_client_kind;
/* The sessions' environment: --tls, the client TLS context, the reply
 * submission hook and what it was handed. */
static bool client_starttls;
static struct mt_tls *client_tls;
static unsigned int replies_submitted;
static struct lg_message_plan reply_submitted;

static void record_reply(void *context, struct lg_stats *stats,
			 const struct lg_message_plan *plan)
{
	(void)context;
	(void)stats;
	replies_submitted++;
	reply_submitted = *plan;
}

/* The peer's address as the one address of a service. */
static struct lg_addrs one_addr(const struct sockaddr_in *addr)
{
	struct lg_addrs addrs = { .count = 1 };

	memcpy(&addrs.ss[0], addr, sizeof(*addr));
	addrs.len[0] = sizeof(*addr);
	return addrs;
}

/* Run an SMTP (pop_user == 0), POP3 or IMAP (imap_client) session. */
static void run_client(struct sockaddr_in *addr, uint64_t pop_user,
		       struct lg_stats *stats, struct lg_tracker *tracker,
		       unsigned int timeout_ms, struct outcome *o)
{
	struct event_base *base = event_base_new();
	struct lg_session_env env = {
		.base = base, .wl = &wl, .tracker = tracker,
		.step_timeout_ms = timeout_ms, .helo_name = "test.invalid",
		.starttls = client_starttls, .tls = client_tls,
		.submit_reply = record_reply,
	};
	struct lg_smtp_params params = { .plan = &plan_2rcpt, .seq = 1,
					 .track_remote = true };
	struct timeval guard = { 10, 0 };
	struct timespec t0, t1;
	struct lg_addrs addrs = one_addr(addr);

	memset(o, 0, sizeof(*o));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (imap_client != NULL)
		o->session = lg_imap_session_start(&env, LG_KIND_IMAP_DESKTOP, stats,
			&addrs, imap_client, on_done, o);
	else if (pop_user == 0)
		o->session = lg_smtp_session_start(&env, smtp_client != NULL ?
			smtp_client_kind : LG_KIND_SMTP_LOCAL, stats,
			&addrs, smtp_client != NULL ? smtp_client : &params, on_done, o);
	else
		o->session = lg_pop_session_start(&env, LG_KIND_POP_FIRST, stats,
			&addrs, pop_user, on_done, o);
	/* A hang would be a bug: the guard ends the loop regardless. */
	event_base_loopexit(base, &guard);
	if (!o->done)
		event_base_dispatch(base);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	o->elapsed_ms = (uint64_t)(((int64_t)t1.tv_sec - t0.tv_sec) * 1000 +
				   ((int64_t)t1.tv_nsec - t0.tv_nsec) / 1000000);
	assert_true(o->done);
	lg_session_free(&o->session);
	event_base_free(base);
}

static struct lg_stats *new_stats(void)
{
	struct lg_stats *st = malloc(sizeof(*st));

	lg_stats_init(st);
	return st;
}

/* Run a script as the server of one client session. */
static void scripted(const struct step *steps, size_t n, uint64_t pop_user,
		     unsigned int timeout_ms, struct lg_stats *stats,
		     struct lg_tracker *tracker, struct outcome *o,
		     struct peer *peer)
{
	struct sockaddr_in addr;

	memset(peer, 0, sizeof(*peer));
	memcpy(peer->steps, steps, n * sizeof(*steps));
	peer->steps[n].op = END;
	peer_serve(peer, &addr);
	run_client(&addr, pop_user, stats, tracker, timeout_ms, o);
	peer_join(peer);
}

#define SCRIPT(steps) steps, sizeof(steps) / sizeof(steps[0])

/* A scripted session the server turns away: it fails, as rejected. */
static void scripted_rejected(const struct step *steps, size_t n, struct lg_stats *st,
			      struct outcome *o, struct peer *peer)
{
	scripted(steps, n, 0, 2000, st, NULL, o, peer);
	assert_true(o->failed);
	assert_int_equal(o->error, LG_ERR_REJECTED);
}

/* ---- SMTP ---- */

static const struct step smtp_good[] = {
	S("220 test ESMTP\r\n"),
	E("EHLO test.invalid"),
	S("250-test\r\n250-PIPELINING\r\n250 8BITMIME\r\n"),
	E("MAIL FROM:<user3@example.test>"),
	S("250 ok\r\n"),
	E("RCPT TO:<user4@example.test>"),
	S("250 ok\r\n"),
	E("RCPT TO:<user77@remote.test>"),
	S("251 will forward\r\n"),
	E("DATA"),
	S("354 go ahead\r\n"),
	BODY_STEP,
	S("250 queued\r\n"),
	E("QUIT"),
	S("221 bye\r\n"),
};

static void test_smtp_good(void **state)
{
	struct lg_stats *st = new_stats();
	struct lg_tracker *tracker = lg_tracker_new(5, 60000000);
	struct outcome o;
	struct peer peer;

	scripted(SCRIPT(smtp_good), 0, 2000, st, tracker, &o, &peer);
	assert_false(o.failed);
	assert_int_equal(peer.body_len, 2048);
	assert_true(peer.body_has_id);
	assert_true(st->sessions[LG_KIND_SMTP_LOCAL] == 1);
	assert_true(st->sessions_failed[LG_KIND_SMTP_LOCAL] == 0);
	const enum lg_function fns[] = { LG_FN_SMTP_CONNECT, LG_FN_SMTP_EHLO,
		LG_FN_SMTP_MAIL, LG_FN_SMTP_DATA, LG_FN_SMTP_QUIT };
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		assert_true(st->fn[fns[i]].attempts == 1);
		assert_true(st->fn[fns[i]].pass == 1);
	}
	assert_true(st->fn[LG_FN_SMTP_RCPT].attempts == 2);
	assert_true(st->fn[LG_FN_SMTP_RCPT].pass == 2);
	assert_true(st->counters.msgs_local_sent == 1);
	assert_true(st->counters.rcpts_to_local == 1);
	assert_true(st->counters.rcpts_to_remote == 1);
	assert_true(st->counters.bytes_up == 2048);
	/* The remote copy is now awaited at the sink. */
	assert_true(lg_tracker_outstanding(tracker) == 1);
	assert_true(st->fn[LG_FN_DELIVERY].attempts == 1);
	lg_tracker_free(&tracker);
	free(st);
}

static const struct step smtp_helo_fallback[] = {
	T("220 old server\r\n"),
	E("EHLO"),
	S("502 what?\r\n"),
	E("HELO test.invalid"),
	S("250 hello\r\n"),
	E("MAIL"), T("250 ok\r\n"),
	E("RCPT"), S("250 ok\r\n"),
	E("RCPT"), S("250 ok\r\n"),
	E("DATA"), S("354 go\r\n"),
	BODY_STEP, T("250 ok\r\n"),
	E("QUIT"), S("221 bye\r\n"),
};

static void test_smtp_helo_fallback_trickled(void **state)
{
	struct lg_stats *st = new_stats();
	struct outcome o;
	struct peer peer;

	scripted(SCRIPT(smtp_helo_fallback), 0, 2000, st, NULL, &o, &peer);
	assert_false(o.failed);
	/* EHLO refused, HELO accepted: one hello step, passed. */
	assert_true(st->fn[LG_FN_SMTP_EHLO].attempts == 1);
	assert_true(st->fn[LG_FN_SMTP_EHLO].pass == 1);
	assert_true(st->counters.msgs_local_sent == 1);
	free(st);
}

struct smtp_fault {
	const char *name;
	struct step steps[10];
	size_t n;
	enum lg_error error;
	enum lg_function failed_step;	/* attempted, not passed */
};

static const struct smtp_fault smtp_faults[] = {
	{ "garbage greeting", { S("hello there, I am not SMTP\r\n") }, 1,
	  LG_ERR_PROTOCOL, LG_FN_SMTP_CONNECT },
	{ "binary garbage", { S("\x01\x02\x03\xff\r\n") }, 1,
	  LG_ERR_PROTOCOL, LG_FN_SMTP_CONNECT },
	{ "bare CR in reply", { S("220 a\rb\r\n") }, 1,
	  LG_ERR_PROTOCOL, LG_FN_SMTP_CONNECT },
	{ "code changes in multiline", { S("220 hi\r\n"), E("EHLO"),
	  S("250-a\r\n251 b\r\n") }, 3, LG_ERR_PROTOCOL, LG_FN_SMTP_EHLO },
	{ "554 greeting", { S("554 go away\r\n") }, 1,
	  LG_ERR_REJECTED, LG_FN_SMTP_CONNECT },
	{ "close after greeting", { S("220 hi\r\n"), E("EHLO"),
	  CLOSE_STEP }, 3, LG_ERR_DISCONNECT, LG_FN_SMTP_EHLO },
	{ "close before greeting", { CLOSE_STEP }, 1,
	  LG_ERR_DISCONNECT, LG_FN_SMTP_CONNECT },
	{ "close in the middle of a reply", { S("220 hi\r\n"), E("EHLO"),
	  S("250-a\r\n250-b"), CLOSE_STEP }, 4, LG_ERR_DISCONNECT, LG_FN_SMTP_EHLO },
	{ "RCPT refused", { S("220 hi\r\n"), E("EHLO"),
	  S("250 hi\r\n"), E("MAIL"), S("250 ok\r\n"),
	  E("RCPT"), S("550 no such user\r\n") }, 7,
	  LG_ERR_REJECTED, LG_FN_SMTP_RCPT },
	{ "stall after MAIL", { S("220 hi\r\n"), E("EHLO"),
	  S("250 hi\r\n"), E("MAIL"), W(700) }, 5,
	  LG_ERR_TIMEOUT, LG_FN_SMTP_MAIL },
	{ "stall before greeting", { W(700) }, 1,
	  LG_ERR_TIMEOUT, LG_FN_SMTP_CONNECT },
	{ "overlong reply line", { S("220 "), S(NULL) }, 2,
	  LG_ERR_PROTOCOL, LG_FN_SMTP_CONNECT },
};

/* One scripted fault of a table: the session (SMTP, POP3 for pop_user,
 * IMAP for imap) fails with f->error, counted once, as a failed session
 * of kind, at f->failed_step (attempted, not passed), within the step
 * timeout (a stall costs that, not more). A SEND step without text sends
 * an over-long line of line_max. The stats, for a caller's own checks. */
static struct lg_stats *run_fault(const struct smtp_fault *f, const char *proto,
				  uint64_t pop_user, const struct lg_imap_params *imap,
				  enum lg_kind kind, size_t line_max)
{
	char *long_line = malloc(line_max + 100);
	memset(long_line, 'x', line_max + 90);
	strcpy(long_line + line_max + 90, "\r\n");
	struct step steps[10];
	struct lg_stats *st = new_stats();
	struct outcome o;
	struct peer peer;

	memcpy(steps, f->steps, sizeof(steps));
	for (size_t k = 0; k < f->n; k++)
		if (steps[k].op == SEND && steps[k].text == NULL)
			steps[k].text = long_line;
	printf("%s: %s\n", proto, f->name);
	imap_client = imap;
	scripted(steps, f->n, pop_user, 300, st, NULL, &o, &peer);
	imap_client = NULL;
	printf("  -> %s after %llu ms: %s\n", lg_error_names[o.error],
	       (unsigned long long)o.elapsed_ms, o.detail);
	assert_true(o.failed);
	if (o.error != f->error)
		fail_msg("%s: error %s (%s), expected %s", f->name,
			 lg_error_names[o.error], o.detail, lg_error_names[f->error]);
	assert_true(st->errors[f->error] == 1);
	assert_true(st->sessions_failed[kind] == 1);
	if (st->fn[f->failed_step].attempts != 1 || st->fn[f->failed_step].pass != 0)
		fail_msg("%s: step %s attempts %llu pass %llu", f->name,
			 lg_functions[f->failed_step].key,
			 (unsigned long long)st->fn[f->failed_step].attempts,
			 (unsigned long long)st->fn[f->failed_step].pass);
	assert_true(o.elapsed_ms < 3000);
	free(long_line);
	return st;
}

static void test_smtp_faults(void **state)
{
	for (size_t i = 0; i < sizeof(smtp_faults) / sizeof(smtp_faults[0]); i++) {
		struct lg_stats *st = run_fault(&smtp_faults[i], "smtp", 0, NULL,
						LG_KIND_SMTP_LOCAL, LG_REPLY_LINE_MAX);
		assert_true(st->counters.msgs_local_sent == 0);
		free(st);
	}
}

static void test_connect_refused(void **state)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof(addr);
	struct lg_stats *st = new_stats();
	struct outcome o;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	/* A port that was free a moment ago and has no listener. */
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
	close(fd);
	run_client(&addr, 0, st, NULL, 1000, &o);
	assert_true(o.failed);
	assert_int_equal(o.error, LG_ERR_CONNECT);
	assert_true(st->fn[LG_FN_SMTP_CONNECT].attempts == 1);
	assert_true(st->fn[LG_FN_SMTP_CONNECT].pass == 0);
	run_client(&addr, 3, st, NULL, 1000, &o);
	assert_int_equal(o.error, LG_ERR_CONNECT);
	assert_true(st->errors[LG_ERR_CONNECT] == 2);
	free(st);
}

/* ---- SMTP with --tls, and a desktop client's reply submitted ---- */

/* A client TLS context as the engine makes it (no verification). */
static struct mt_tls *new_client_tls(void)
{
	static const struct mt_tls_settings client = { .cert_file = NULL };
	struct mt_tls *tls = mt_tls_new(MT_TLS_CLIENT);
	const char *error;

	if (!mt_tls_load(tls, &client, &error))
		fail_msg("client TLS context: %s", error);
	return tls;
}

/* --tls (RFC 3207): a server that does not offer STARTTLS, or answers
 * EHLO with an error (HELO offers nothing), fails the session as
 * rejected before any mail is sent; a refused STARTTLS is a failed
 * smtp_starttls step. */
static void test_smtp_tls_refused(void **state)
{
	static const struct step no_starttls[] = {
		S("220 test ESMTP\r\n"), E("EHLO test.invalid"),
		S("250-test\r\n250-PIPELINING\r\n250 8BITMIME\r\n"),
	};
	static const struct step helo_only[] = {
		S("220 old\r\n"), E("EHLO"), S("502 what?\r\n"),
		E("HELO test.invalid"), S("250 hi\r\n"),
	};
	static const struct step refused[] = {
		S("220 test ESMTP\r\n"), E("EHLO test.invalid"),
		T("250-test\r\n250 STARTTLS\r\n"), E("STARTTLS"),
		S("454 4.7.0 TLS not available\r\n"),
	};
	struct lg_stats *st = new_stats();
	struct outcome o;
	struct peer peer;

	client_starttls = true;
	client_tls = new_client_tls();
	scripted_rejected(SCRIPT(no_starttls), st, &o, &peer);
	assert_non_null(strstr(o.detail, "no STARTTLS offered"));
	assert_true(st->sessions_failed[LG_KIND_SMTP_LOCAL] == 1);
	assert_true(st->errors[LG_ERR_REJECTED] == 1);
	assert_true(st->fn[LG_FN_SMTP_EHLO].attempts == 1 && st->fn[LG_FN_SMTP_EHLO].pass == 1);
	assert_true(st->fn[LG_FN_SMTP_STARTTLS].attempts == 0);
	assert_true(st->fn[LG_FN_SMTP_MAIL].attempts == 0);

	lg_stats_init(st);
	scripted_rejected(SCRIPT(helo_only), st, &o, &peer);
	assert_true(st->fn[LG_FN_SMTP_MAIL].attempts == 0);

	lg_stats_init(st);
	scripted_rejected(SCRIPT(refused), st, &o, &peer);
	assert_true(st->fn[LG_FN_SMTP_STARTTLS].attempts == 1);
	assert_true(st->fn[LG_FN_SMTP_STARTTLS].pass == 0);
	assert_true(st->fn[LG_FN_SMTP_MAIL].attempts == 0);
	client_starttls = false;
	mt_tls_free(&client_tls);
	free(st);
}

/* A desktop client's reply to user77@remote.test, by user3. */
static const struct lg_message_plan reply_to_remote = {
	.from_remote = false, .reply = true, .sender = 3, .size = 1500,
	.n_rcpts = 1, .n_remote = 1, .rcpts = { { true, 77 } },
};

/* The reply's submission (RFC 6409, 4954): AUTH PLAIN as the sender with
 * its password, in the smtp_submit_* rows, counted as submitted (not in
 * the SPECmail2001 messages), its remote copy awaited at the sink; a
 * server without AUTH PLAIN, a 535, and one that offers AUTH only after
 * a STARTTLS it then refuses all fail it as rejected. */
static void test_smtp_submission(void **state)
{
	static const struct step good[] = {
		S("220 submit ESMTP\r\n"), E("EHLO test.invalid"),
		S("250-submit\r\n250-AUTH LOGIN PLAIN\r\n250 8BITMIME\r\n"),
		/* base64("\0user3@example.test\0secret3") */
		E("AUTH PLAIN AHVzZXIzQGV4YW1wbGUudGVzdABzZWNyZXQz"),
		S("235 2.7.0 Authentication successful\r\n"),
		E("MAIL FROM:<user3@example.test>"), S("250 ok\r\n"),
		E("RCPT TO:<user77@remote.test>"), S("250 ok\r\n"),
		E("DATA"), S("354 go\r\n"), BODY_STEP, S("250 queued\r\n"),
		E("QUIT"), S("221 bye\r\n"),
	};
	static const struct step no_auth[] = {
		S("220 hi\r\n"), E("EHLO"), S("250-hi\r\n250 8BITMIME\r\n"),
	};
	static const struct step auth_refused[] = {
		S("220 hi\r\n"), E("EHLO"), S("250-hi\r\n250 AUTH PLAIN\r\n"),
		E("AUTH PLAIN "), S("535 5.7.8 Authentication credentials invalid\r\n"),
	};
	static const struct step auth_after_tls[] = {
		S("220 hi\r\n"), E("EHLO"), S("250-hi\r\n250 STARTTLS\r\n"),
		E("STARTTLS"), S("454 4.7.0 not now\r\n"),
	};
	struct lg_smtp_params params = {
		.plan = &reply_to_remote, .seq = 1, .track_remote = true,
		.submission = true, .auth = true,
	};
	struct lg_tracker *tracker = lg_tracker_new(5, 60000000);
	struct lg_stats *st = new_stats();
	struct outcome o;
	struct peer peer;

	smtp_client = &params;
	smtp_client_kind = LG_KIND_IMAP_REPLY_SUBMIT;
	scripted(SCRIPT(good), 0, 2000, st, tracker, &o, &peer);
	if (o.failed)
		fail_msg("submission failed: %s", o.detail);
	const enum lg_function rows[] = { LG_FN_SUBMIT_CONNECT, LG_FN_SUBMIT_EHLO,
		LG_FN_SUBMIT_AUTH, LG_FN_SUBMIT_MAIL, LG_FN_SUBMIT_RCPT,
		LG_FN_SUBMIT_DATA, LG_FN_SUBMIT_QUIT };
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (st->fn[rows[i]].attempts != 1 || st->fn[rows[i]].pass != 1)
			fail_msg("%s: %llu attempts, %llu pass", lg_functions[rows[i]].key,
				 (unsigned long long)st->fn[rows[i]].attempts,
				 (unsigned long long)st->fn[rows[i]].pass);
	for (int f = LG_FN_SMTP_CONNECT; f <= LG_FN_SMTP_QUIT; f++)
		assert_true(st->fn[f].attempts == 0);
	assert_true(st->sessions[LG_KIND_IMAP_REPLY_SUBMIT] == 1);
	assert_true(st->sessions_failed[LG_KIND_IMAP_REPLY_SUBMIT] == 0);
	assert_true(st->counters.msgs_submitted == 1);
	assert_true(st->counters.msgs_local_sent == 0);
	assert_true(st->counters.submitted_rcpts_remote == 1);
	assert_true(st->counters.submitted_rcpts_local == 0);
	assert_true(st->counters.rcpts_to_remote == 1);
	assert_int_equal(peer.body_len, 1500);
	assert_true(peer.body_has_id);
	/* Its remote copy is awaited at the sink like any other. */
	assert_true(lg_tracker_outstanding(tracker) == 1);
	assert_true(st->fn[LG_FN_DELIVERY].attempts == 1);

	lg_stats_init(st);
	scripted_rejected(SCRIPT(no_auth), st, &o, &peer);
	assert_non_null(strstr(o.detail, "no AUTH PLAIN"));
	assert_true(st->sessions_failed[LG_KIND_IMAP_REPLY_SUBMIT] == 1);
	assert_true(st->fn[LG_FN_SUBMIT_AUTH].attempts == 0);
	assert_true(st->fn[LG_FN_SUBMIT_MAIL].attempts == 0);

	lg_stats_init(st);
	scripted_rejected(SCRIPT(auth_refused), st, &o, &peer);
	assert_true(st->fn[LG_FN_SUBMIT_AUTH].attempts == 1);
	assert_true(st->fn[LG_FN_SUBMIT_AUTH].pass == 0);

	lg_stats_init(st);
	client_tls = new_client_tls();
	scripted_rejected(SCRIPT(auth_after_tls), st, &o, &peer);
	assert_true(st->fn[LG_FN_SUBMIT_STARTTLS].attempts == 1);
	assert_true(st->fn[LG_FN_SUBMIT_STARTTLS].pass == 0);
	assert_true(st->fn[LG_FN_SMTP_STARTTLS].attempts == 0);
	mt_tls_free(&client_tls);
	smtp_client = NULL;
	lg_tracker_free(&tracker);
	free(st);
}

/* ---- LMTP (fill straight to the store shards) ---- */

static const struct lg_message_plan lmtp_plan_a = {
	.from_remote = true, .sender = 9, .size = 1500,
	.n_rcpts = 2, .n_local = 2,
	.rcpts = { { false, 4 }, { false, 5 } },
};
static const struct lg_message_plan lmtp_plan_b = {
	.from_remote = true, .sender = 8, .size = 1024,
	.n_rcpts = 1, .n_local = 1,
	.rcpts = { { false, 6 } },
};

struct lmtp_feed {
	unsigned int given;
};

static bool lmtp_next(void *context, struct lg_message_plan *plan, uint64_t *seq_r)
{
	struct lmtp_feed *feed = context;

	if (feed->given++ > 0)
		return false;
	*plan = lmtp_plan_b;
	*seq_r = 2;
	return true;
}

/* Run the LMTP session; the octets of message data the server read. */
static size_t run_lmtp(const struct step *steps, size_t n, struct lg_stats *st,
		       struct lmtp_feed *feed, struct outcome *o)
{
	struct event_base *base = event_base_new();
	struct lg_session_env env = {
		.base = base, .wl = &wl, .step_timeout_ms = 2000,
		.helo_name = "test.invalid",
	};
	struct lg_smtp_params params = {
		.plan = &lmtp_plan_a, .seq = 1, .lmtp = true,
		.next = lmtp_next, .next_context = feed,
	};
	struct timeval guard = { 10, 0 };
	struct sockaddr_in addr;
	struct peer peer;

	memset(&peer, 0, sizeof(peer));
	memcpy(peer.steps, steps, n * sizeof(*steps));
	peer.steps[n].op = END;
	peer_serve(&peer, &addr);
	struct lg_addrs addrs = one_addr(&addr);
	memset(o, 0, sizeof(*o));
	o->session = lg_smtp_session_start(&env, LG_KIND_SMTP_REMOTE, st,
		&addrs, &params, on_done, o);
	event_base_loopexit(base, &guard);
	if (!o->done)
		event_base_dispatch(base);
	assert_true(o->done);
	lg_session_free(&o->session);
	event_base_free(base);
	peer_join(&peer);
	return peer.body_len;
}

static const struct step lmtp_good[] = {
	S("220 lmtp ready\r\n"),
	E("LHLO test.invalid"), S("250-test\r\n250 PIPELINING\r\n"),
	E("MAIL FROM:<user9@remote.test>"), S("250 ok\r\n"),
	E("RCPT TO:<user4@example.test>"), S("250 ok\r\n"),
	E("RCPT TO:<user5@example.test>"), S("250 ok\r\n"),
	E("DATA"), S("354 go\r\n"), BODY_STEP,
	/* RFC 2033 4.2: one reply per recipient, in RCPT order */
	S("250 2.0.0 user4 ok\r\n"), T("250 2.0.0 user5 ok\r\n"),
	/* the next transaction on the same connection */
	E("MAIL FROM:<user8@remote.test>"), S("250 ok\r\n"),
	E("RCPT TO:<user6@example.test>"), S("250 ok\r\n"),
	E("DATA"), S("354 go\r\n"), BODY_STEP,
	S("250 2.0.0 user6 ok\r\n"),
	E("QUIT"), S("221 bye\r\n"),
};

static const struct step lmtp_one_refused[] = {
	S("220 lmtp ready\r\n"),
	E("LHLO"), S("250 test\r\n"),
	E("MAIL"), S("250 ok\r\n"),
	E("RCPT"), S("250 ok\r\n"),
	E("RCPT"), S("250 ok\r\n"),
	E("DATA"), S("354 go\r\n"), BODY_STEP,
	S("250 2.0.0 user4 ok\r\n"), S("452 4.2.2 user5 over quota\r\n"),
};

static const struct step lmtp_no_lhlo[] = {
	S("220 lmtp ready\r\n"),
	E("LHLO"), S("500 5.5.1 what\r\n"),
};

static void test_lmtp(void **state)
{
	struct lg_stats *st = new_stats();
	struct lmtp_feed feed = { 0 };
	struct outcome o;

	size_t octets = run_lmtp(SCRIPT(lmtp_good), st, &feed, &o);
	assert_false(o.failed);
	assert_int_equal(feed.given, 2);	/* asked again after the second */
	assert_int_equal(octets, 1500 + 1024);
	assert_true(st->sessions[LG_KIND_SMTP_REMOTE] == 1);
	assert_true(st->counters.msgs_remote_sent == 2);
	assert_true(st->counters.rcpts_to_local == 3);
	assert_true(st->fn[LG_FN_SMTP_EHLO].pass == 1);
	assert_true(st->fn[LG_FN_SMTP_DATA].attempts == 2);
	assert_true(st->fn[LG_FN_SMTP_DATA].pass == 2);
	assert_true(st->fn[LG_FN_SMTP_RCPT].pass == 3);

	/* A recipient's copy refused after the data: the message failed. */
	lg_stats_init(st);
	memset(&feed, 0, sizeof(feed));
	run_lmtp(SCRIPT(lmtp_one_refused), st, &feed, &o);
	assert_true(o.failed);
	assert_int_equal(o.error, LG_ERR_REJECTED);
	assert_true(st->counters.msgs_remote_sent == 0);
	assert_true(st->fn[LG_FN_SMTP_DATA].pass == 0);
	assert_int_equal(feed.given, 0);

	/* No HELO fallback in LMTP. */
	lg_stats_init(st);
	run_lmtp(SCRIPT(lmtp_no_lhlo), st, &feed, &o);
	assert_true(o.failed);
	assert_int_equal(o.error, LG_ERR_REJECTED);
	assert_true(st->fn[LG_FN_SMTP_EHLO].attempts == 1);
	free(st);
}

/* ---- POP3 ---- */

static char pop_message[512];

static const struct step pop_good[] = {
	S("+OK POP3 ready\r\n"),
	E("USER user3@example.test"), S("+OK\r\n"),
	E("PASS secret3"), S("+OK logged in\r\n"),
	E("STAT"), S("+OK 2 320\r\n"),
	E("RETR 1"), S(NULL),		/* pop_message */
	E("DELE 1"), S("+OK\r\n"),
	E("RETR 2"), T("+OK\r\nSubject: x\r\n\r\n..dot\r\n.\r\n"),
	E("DELE 2"), S("+OK\r\n"),
	E("QUIT"), S("+OK bye\r\n"),
};

static void test_pop_good(void **state)
{
	struct lg_stats *st = new_stats();
	struct lg_tracker *tracker = lg_tracker_new(0xabcULL, 60000000);
	struct step steps[sizeof(pop_good) / sizeof(pop_good[0])];
	char id[LG_ID_MAX];
	struct outcome o;
	struct peer peer;

	lg_tracker_expect(tracker, lg_tracker_next_seq(tracker), 1, st, lg_now_us());
	lg_tracker_format_id(tracker, 1, id);
	snprintf(pop_message, sizeof(pop_message),
		 "+OK 100 octets\r\nReceived: by test\r\n%s: %s\r\n\r\nbody\r\n"
		 "..stuffed line\r\n.\r\n", LG_ID_HEADER, id);
	memcpy(steps, pop_good, sizeof(steps));
	steps[8].text = pop_message;
	scripted(steps, sizeof(steps) / sizeof(steps[0]), 3, 2000, st, tracker,
		 &o, &peer);
	if (o.failed)
		fail_msg("pop session failed: %s", o.detail);
	const enum lg_function once[] = { LG_FN_POP_CONNECT, LG_FN_POP_USER,
		LG_FN_POP_PASS, LG_FN_POP_STAT, LG_FN_POP_QUIT };
	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++)
		assert_true(st->fn[once[i]].attempts == 1 && st->fn[once[i]].pass == 1);
	assert_true(st->fn[LG_FN_POP_RETR].attempts == 2 && st->fn[LG_FN_POP_RETR].pass == 2);
	assert_true(st->fn[LG_FN_POP_DELE].attempts == 2 && st->fn[LG_FN_POP_DELE].pass == 2);
	assert_true(st->counters.msgs_retrieved == 2);
	assert_true(st->counters.msgs_deleted == 2);
	/* Octets un-stuffed: the data lines of both messages with CRLF. */
	size_t first = strlen("Received: by test\r\n") + strlen(LG_ID_HEADER) + 2 +
		strlen(id) + 2 + 2 + 6 + strlen(".stuffed line\r\n");
	size_t second = strlen("Subject: x\r\n\r\n.dot\r\n");
	assert_true(st->counters.bytes_down == first + second);
	/* The probe was seen and timed. */
	assert_true(lg_tracker_outstanding(tracker) == 0);
	assert_true(st->fn[LG_FN_DELIVERY].pass == 1);
	lg_tracker_free(&tracker);
	free(st);
}

static const struct smtp_fault pop_faults[] = {
	{ "garbage greeting", { S("* OK IMAP4rev1\r\n") }, 1,
	  LG_ERR_PROTOCOL, LG_FN_POP_CONNECT },
	{ "bad password", { S("+OK\r\n"), E("USER"), S("+OK\r\n"),
	  E("PASS"), S("-ERR [AUTH] no\r\n") }, 5,
	  LG_ERR_REJECTED, LG_FN_POP_PASS },
	{ "STAT garbage", { S("+OK\r\n"), E("USER"), S("+OK\r\n"),
	  E("PASS"), S("+OK\r\n"), E("STAT"),
	  S("+OK lots of mail\r\n") }, 7, LG_ERR_PROTOCOL, LG_FN_POP_STAT },
	{ "close during RETR data", { S("+OK\r\n"), E("USER"), S("+OK\r\n"),
	  E("PASS"), S("+OK\r\n+OK 1 10\r\n"), E("STAT"),
	  E("RETR 1"), S("+OK\r\nSubject: half\r\n"), CLOSE_STEP }, 9,
	  LG_ERR_DISCONNECT, LG_FN_POP_RETR },
	{ "stall during RETR data", { S("+OK\r\n"), E("USER"), S("+OK\r\n"),
	  E("PASS"), S("+OK\r\n+OK 1 10\r\n"), E("STAT"),
	  S("+OK\r\nSubject: half\r\n"), W(800) }, 8,
	  LG_ERR_TIMEOUT, LG_FN_POP_RETR },
	{ "no such message", { S("+OK\r\n"), E("USER"), S("+OK\r\n"),
	  E("PASS"), S("+OK\r\n"), E("STAT"),
	  S("+OK 99999999 1\r\n"), S("-ERR no such message\r\n") }, 8,
	  LG_ERR_REJECTED, LG_FN_POP_RETR },
};

static void test_pop_faults(void **state)
{
	for (size_t i = 0; i < sizeof(pop_faults) / sizeof(pop_faults[0]); i++)
		free(run_fault(&pop_faults[i], "pop3", 3, NULL, LG_KIND_POP_FIRST,
			       LG_REPLY_LINE_MAX));
}

/* ---- IMAP ---- */

static const struct step imap_webmail_good[] = {
	S("* OK [CAPABILITY IMAP4rev2 LITERAL+ SASL-IR AUTH=PLAIN] ready\r\n"),
	E("A0001 LOGIN \"user3@example.test\" \"secret3\""),
	S("A0001 OK [CAPABILITY IMAP4rev2 CONDSTORE IDLE MOVE UIDPLUS] in\r\n"),
	E("A0002 SELECT INBOX (CONDSTORE)"),
	S("* 3 EXISTS\r\n* OK [UIDVALIDITY 1] v\r\n* FLAGS (\\Seen)\r\nA0002 OK [READ-WRITE] done\r\n"),
	E("A0003 UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1)"),
	S("* 1 FETCH (UID 1 FLAGS (\\Seen) MODSEQ (3))\r\n* 3 FETCH (UID 5 FLAGS ())\r\nA0003 OK\r\n"),
	E("A0004 FETCH 1:* (UID FLAGS RFC822.SIZE BODY.PEEK[HEADER.FIELDS (From To Subject Date)])"),
	S("* 1 FETCH (UID 1 FLAGS () BODY[HEADER.FIELDS (From)] {13}\r\nFrom: a@b\r\n\r\n)\r\n"
	  "* 2 FETCH (UID 2 BODY[HEADER.FIELDS (From)] {0}\r\n)\r\nA0004 OK\r\n"),
	E("A0005 FETCH 3 BODY.PEEK[]"),
	T("* 3 FETCH (BODY[] ~{20}\r\n0123456789\r\n12345678)\r\nA0005 OK\r\n"),
	E("A0006 LOGOUT"),
	S("* BYE bye\r\nA0006 OK\r\n"),
};

static const struct lg_imap_params webmail_params = {
	.profile = LG_IMAP_PROFILE_WEBMAIL, .user = 3, .plan = { .seed = 1 },
};

static void test_imap_webmail_trickled(void **state)
{
	struct lg_stats *st = new_stats();
	struct outcome o;
	struct peer peer;

	imap_client = &webmail_params;
	scripted(SCRIPT(imap_webmail_good), 0, 2000, st, NULL, &o, &peer);
	imap_client = NULL;
	if (o.failed)
		fail_msg("imap session failed: %s", o.detail);
	const enum lg_function once[] = { LG_FN_IMAP_CONNECT, LG_FN_IMAP_LOGIN,
		LG_FN_IMAP_SELECT, LG_FN_IMAP_FETCH_BODY, LG_FN_IMAP_LOGOUT };
	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++)
		assert_true(st->fn[once[i]].attempts == 1 && st->fn[once[i]].pass == 1);
	assert_true(st->fn[LG_FN_IMAP_FETCH_HEADERS].attempts == 2);
	assert_true(st->fn[LG_FN_IMAP_FETCH_HEADERS].pass == 2);
	/* The literal8's 20 octets (a CRLF among them) were counted. */
	assert_true(st->counters.msgs_retrieved == 1);
	assert_true(st->counters.bytes_down == 20);
	assert_true(st->sessions_failed[LG_KIND_IMAP_DESKTOP] == 0);
	free(st);
}

/* RFC 9051 7.1: a FETCH answered NO [EXPUNGEISSUED] (another session
 * expunged the message) is an answer: the session goes on. */
static void test_imap_expunge_issued(void **state)
{
	struct step steps[sizeof(imap_webmail_good) / sizeof(imap_webmail_good[0])];
	struct lg_stats *st = new_stats();
	struct outcome o;
	struct peer peer;

	memcpy(steps, imap_webmail_good, sizeof(steps));
	steps[10] = (struct step)S("A0005 NO [EXPUNGEISSUED] Some messages were expunged\r\n");
	imap_client = &webmail_params;
	scripted(steps, sizeof(steps) / sizeof(steps[0]), 0, 2000, st, NULL, &o, &peer);
	imap_client = NULL;
	if (o.failed)
		fail_msg("imap session failed: %s", o.detail);
	assert_true(st->fn[LG_FN_IMAP_FETCH_BODY].pass == 1);
	assert_true(st->counters.msgs_retrieved == 0);
	free(st);
}

/* A seed whose session reads its one new message and replies to it: the
 * draws are the think time, then the action (reply: 0.10 <= r < 0.30). */
static uint64_t seed_for_reply(uint64_t user)
{
	for (uint64_t seed = 1; seed < 1000; seed++) {
		struct lg_rng rng;
		lg_rng_seed(&rng, seed, user);
		(void)lg_rng_uniform(&rng);
		double r = lg_rng_uniform(&rng);
		if (r >= 0.10 && r < 0.30)
			return seed;
	}
	fail_msg("no seed gives a reply");
	return 0;
}

static struct step imap_desktop_good[] = {
	S("* OK [CAPABILITY IMAP4rev2 AUTH=PLAIN] ready\r\n"),
	E("A0001 AUTHENTICATE PLAIN"),
	S("+ \r\n"),
	E("AHVzZXIzQGV4YW1wbGUudGVzdABzZWNyZXQz"),
	S("A0001 OK done\r\n"),
	E("A0002 CAPABILITY"),
	S("* CAPABILITY IMAP4rev2 IDLE MOVE UIDPLUS SPECIAL-USE CONDSTORE\r\nA0002 OK\r\n"),
	E("A0003 LIST \"\" \"*\" RETURN (SPECIAL-USE)"),
	S("* LIST (\\Sent) \"/\" Sent\r\n* LIST () \"/\" {7}\r\nFolder1\r\nA0003 OK\r\n"),
	E("A0004 SELECT INBOX (CONDSTORE)"),
	S("* 2 EXISTS\r\nA0004 OK\r\n"),
	E("A0005 UID FETCH 1:* (UID FLAGS ENVELOPE BODYSTRUCTURE RFC822.SIZE)"),
	S("* 1 FETCH (UID 7 FLAGS (\\Seen) RFC822.SIZE 10)\r\n"
	  "* 2 FETCH (UID 9 FLAGS () RFC822.SIZE 10 ENVELOPE (NIL {5}\r\nhello NIL))\r\n"
	  "A0005 OK\r\n"),
	E("A0006 UID SEARCH UNSEEN"),
	S("* SEARCH 9\r\nA0006 OK\r\n"),
	E("A0007 UID FETCH 9 BODY.PEEK[]"),
	S("* 2 FETCH (UID 9 BODY[] {30}\r\n012345678901234567890123456789)\r\nA0007 OK\r\n"),
	E("A0008 UID STORE 9 +FLAGS (\\Seen)"),
	S("* 2 FETCH (UID 9 FLAGS (\\Seen))\r\nA0008 OK\r\n"),
	L("A0009 APPEND \"Sent\" (\\Seen) "),
	S("A0009 OK [APPENDUID 1 5] appended\r\n"),
	E("A0010 UID STORE 9 +FLAGS (\\Answered)"),
	S("A0010 OK\r\n"),
	E("A0011 IDLE"),
	S("+ idling\r\n"),
	W(100),
	S("* 3 EXISTS\r\n"),
	E("DONE"),
	S("A0011 OK\r\n"),
	E("A0012 UID FETCH 10:* "),
	S("* 3 FETCH (UID 10 FLAGS (\\Seen))\r\nA0012 OK\r\n"),
	E("A0013 IDLE"),
	S("+ idling\r\n"),
	E("DONE"),		/* the session's time is up */
	S("A0013 OK\r\n"),
	E("A0014 LOGOUT"),
	S("* BYE bye\r\nA0014 OK\r\n"),
};

static void test_imap_desktop(void **state)
{
	struct lg_imap_params params = {
		.profile = LG_IMAP_PROFILE_DESKTOP, .user = 3,
		.plan = { .seed = seed_for_reply(3), .length_ms = 1500,
			  .search = LG_IMAP_SEARCH_UNSEEN },
		.think_scale = 0.01,
	};
	struct lg_stats *st = new_stats();
	struct outcome o;
	struct peer peer;

	imap_client = &params;
	scripted(SCRIPT(imap_desktop_good), 0, 2000, st, NULL, &o, &peer);
	imap_client = NULL;
	if (o.failed)
		fail_msg("imap session failed: %s", o.detail);
	const enum lg_function once[] = { LG_FN_IMAP_CONNECT, LG_FN_IMAP_LIST,
		LG_FN_IMAP_SELECT, LG_FN_IMAP_SEARCH, LG_FN_IMAP_FETCH_BODY,
		LG_FN_IMAP_APPEND, LG_FN_IMAP_LOGOUT };
	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++)
		if (st->fn[once[i]].attempts != 1 || st->fn[once[i]].pass != 1)
			fail_msg("%s: %llu attempts, %llu pass", lg_functions[once[i]].key,
				 (unsigned long long)st->fn[once[i]].attempts,
				 (unsigned long long)st->fn[once[i]].pass);
	/* AUTHENTICATE and the CAPABILITY after it: the login's two steps. */
	assert_true(st->fn[LG_FN_IMAP_LOGIN].attempts == 2);
	assert_true(st->fn[LG_FN_IMAP_STORE].attempts == 2 && st->fn[LG_FN_IMAP_STORE].pass == 2);
	assert_true(st->fn[LG_FN_IMAP_FETCH_HEADERS].attempts == 2);
	assert_true(st->fn[LG_FN_IMAP_IDLE].attempts == 2 && st->fn[LG_FN_IMAP_IDLE].pass == 2);
	assert_true(st->fn[LG_FN_IMAP_IDLE_WAKE].attempts == 2 &&
		    st->fn[LG_FN_IMAP_IDLE_WAKE].pass == 2);
	assert_true(st->counters.bytes_down == 30);
	assert_true(peer.body_len > 0);	/* the reply's literal */
	/* The session ended at its length, not later. */
	assert_true(o.elapsed_ms >= 1400 && o.elapsed_ms < 3000);	/* length 1500 */
	free(st);
}

static const struct step imap_fill_good[] = {
	S("* OK [CAPABILITY IMAP4rev2 LITERAL+] ready\r\n"),
	E("A0001 LOGIN"), S("A0001 OK [CAPABILITY IMAP4rev2 LITERAL+] in\r\n"),
	E("A0002 CREATE \"Sent\""), S("A0002 NO [ALREADYEXISTS] there\r\n"),
	E("A0003 CREATE \"Drafts\""), S("A0003 OK\r\n"),
	E("A0004 CREATE \"Trash\""), S("A0004 OK\r\n"),
	E("A0005 CREATE \"Junk\""), S("A0005 OK\r\n"),
	E("A0006 CREATE \"Folder1\""), S("A0006 OK\r\n"),
	E("A0007 CREATE \"Folder2\""), S("A0007 OK\r\n"),
	E("A0008 CREATE \"Folder3\""), S("A0008 OK\r\n"),
	E("A0009 CREATE \"Folder4\""), S("A0009 OK\r\n"),
	E("A0010 CREATE \"Folder5\""), S("A0010 OK\r\n"),
	L("A0011 APPEND \"Folder2\" (\\Seen) "), S("A0011 OK\r\n"),
	E("A0012 LOGOUT"), S("* BYE\r\nA0012 OK\r\n"),
};

static void test_imap_fill(void **state)
{
	struct lg_imap_params params = {
		.profile = LG_IMAP_PROFILE_FILL, .user = 3, .plan = { .seed = 5 },
		.fill_counts = { [5] = 1 },
	};
	struct lg_stats *st = new_stats();
	struct outcome o;
	struct peer peer;

	imap_client = &params;
	scripted(SCRIPT(imap_fill_good), 0, 2000, st, NULL, &o, &peer);
	imap_client = NULL;
	if (o.failed)
		fail_msg("imap fill failed: %s", o.detail);
	assert_true(st->fn[LG_FN_IMAP_CREATE].attempts == 9 && st->fn[LG_FN_IMAP_CREATE].pass == 9);
	assert_true(st->fn[LG_FN_IMAP_APPEND].pass == 1);
	assert_true(peer.body_len >= 1024);
	free(st);
}

#define IMAP_HI S("* OK [CAPABILITY IMAP4rev2] hi\r\n")
#define IMAP_IN IMAP_HI, E("A0001 LOGIN"), S("A0001 OK [CAPABILITY IMAP4rev2] in\r\n")

static const struct smtp_fault imap_faults[] = {
	{ "POP3 greeting", { S("+OK POP3 ready\r\n") }, 1,
	  LG_ERR_PROTOCOL, LG_FN_IMAP_CONNECT },
	{ "binary garbage", { S("\x01\x02\xff\r\n") }, 1,
	  LG_ERR_PROTOCOL, LG_FN_IMAP_CONNECT },
	{ "BYE greeting", { S("* BYE too busy\r\n") }, 1,
	  LG_ERR_REJECTED, LG_FN_IMAP_CONNECT },
	{ "NO on login", { IMAP_HI, E("A0001 LOGIN"),
	  S("A0001 NO [AUTHENTICATIONFAILED] no\r\n") }, 3,
	  LG_ERR_REJECTED, LG_FN_IMAP_LOGIN },
	{ "BYE mid-session", { IMAP_IN, E("A0002 SELECT"),
	  S("* BYE shutting down\r\n"), CLOSE_STEP }, 6,
	  LG_ERR_REJECTED, LG_FN_IMAP_SELECT },
	{ "close mid-literal", { IMAP_IN, E("A0002 SELECT"),
	  S("* 1 EXISTS\r\nA0002 OK\r\n"), E("A0003 UID FETCH"),
	  S("* 1 FETCH (FLAGS () BODY[] {100}\r\nonly a part"), CLOSE_STEP }, 8,
	  LG_ERR_DISCONNECT, LG_FN_IMAP_FETCH_HEADERS },
	{ "stall", { IMAP_IN, E("A0002 SELECT"), W(800) }, 5,
	  LG_ERR_TIMEOUT, LG_FN_IMAP_SELECT },
	{ "stall mid-literal", { IMAP_IN, E("A0002 SELECT"),
	  S("* 1 EXISTS\r\n* 1 FETCH (BODY[] {10}\r\n12345"), W(800) }, 6,
	  LG_ERR_TIMEOUT, LG_FN_IMAP_SELECT },
	{ "oversized literal", { IMAP_IN, E("A0002 SELECT"),
	  S("* 1 FETCH (BODY[] {99999999999}\r\n") }, 5,
	  LG_ERR_PROTOCOL, LG_FN_IMAP_SELECT },
	{ "oversized line", { S("* OK "), S(NULL) }, 2,
	  LG_ERR_PROTOCOL, LG_FN_IMAP_CONNECT },
	{ "tag not ours", { IMAP_HI, E("A0001 LOGIN"), S("B0001 OK in\r\n") }, 3,
	  LG_ERR_PROTOCOL, LG_FN_IMAP_LOGIN },
	{ "continuation not asked for", { IMAP_HI, E("A0001 LOGIN"),
	  S("+ go on\r\n") }, 3, LG_ERR_PROTOCOL, LG_FN_IMAP_LOGIN },
	{ "neither OK, NO nor BAD", { IMAP_HI, E("A0001 LOGIN"),
	  S("A0001 MAYBE\r\n") }, 3, LG_ERR_PROTOCOL, LG_FN_IMAP_LOGIN },
	{ "BAD to SELECT", { IMAP_IN, E("A0002 SELECT"),
	  S("A0002 BAD what\r\n") }, 5, LG_ERR_REJECTED, LG_FN_IMAP_SELECT },
};

static void test_imap_faults(void **state)
{
	for (size_t i = 0; i < sizeof(imap_faults) / sizeof(imap_faults[0]); i++)
		free(run_fault(&imap_faults[i], "imap", 0, &webmail_params,
			       LG_KIND_IMAP_DESKTOP, LG_IMAP_LINE_MAX));
}

/* The From of a FETCH's ENVELOPE (RFC 9051 7.5.2): quoted strings with
 * escapes, a literal subject (its contents not kept), NIL, a group. */
static void test_imap_envelope_from(void **state)
{
	char m[32], h[32];

	assert_true(lg_imap_envelope_from("2 FETCH (UID 9 FLAGS () ENVELOPE (\"Mon, 1 Jan 2024\" "
		"\"a \\\"quoted\\\" \\\\ subject\" ((\"Name\" NIL \"user5\" \"example.test\")) "
		"NIL NIL NIL NIL NIL NIL NIL) RFC822.SIZE 10)", m, sizeof(m), h, sizeof(h)));
	assert_string_equal(m, "user5");
	assert_string_equal(h, "example.test");
	assert_true(lg_imap_envelope_from("1 FETCH (ENVELOPE (NIL {12} ((NIL NIL \"a\\\\b\" \"c\") "
		"(NIL NIL \"d\" \"e\")) NIL))", m, sizeof(m), h, sizeof(h)));
	assert_string_equal(m, "a\\b");
	assert_string_equal(h, "c");
	/* No From, a group, a literal mailbox, unterminated, too long, none. */
	static const char *const bad[] = {
		"1 FETCH (ENVELOPE (\"d\" \"s\" NIL NIL NIL NIL NIL NIL NIL NIL))",
		"1 FETCH (ENVELOPE (\"d\" \"s\" ((NIL NIL \"group\" NIL)) NIL))",
		"1 FETCH (ENVELOPE (\"d\" \"s\" ((NIL NIL {5} \"example.test\")) NIL))",
		"1 FETCH (ENVELOPE (\"d\" \"s\" ((NIL NIL \"user5",
		"1 FETCH (ENVELOPE (\"d\" \"s\" ((NIL NIL \"a-mailbox-longer-than-32-octets-here\" \"h\")) NIL))",
		"1 FETCH (UID 5 FLAGS (\\Seen))",
		"1 FETCH (BODY[HEADER.FIELDS (ENVELOPE)] {3})",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (lg_imap_envelope_from(bad[i], m, sizeof(m), h, sizeof(h)))
			fail_msg("read a From in: %s", bad[i]);
}

/* A desktop session's reply (WORKLOAD.md: APPEND to Sent, \Answered and
 * an SMTP submission) goes back to the sender the ENVELOPE names when it
 * is one of ours: a user (local) or a remote correspondent; otherwise as
 * a local user's message is addressed. The plan is handed to the
 * environment's submit_reply once, as the APPEND is sent. */
static void test_imap_reply_recipient(void **state)
{
	static const struct { const char *from; bool known, remote; uint64_t user; } cases[] = {
		{ "((NIL NIL \"user5\" \"example.test\"))", true, false, 5 },
		{ "((\"Far Away\" NIL \"USER77\" \"Remote.Test\"))", true, true, 77 },
		{ "((NIL NIL \"someone\" \"elsewhere.test\"))", false, false, 0 },
	};
	struct lg_imap_params params = {
		.profile = LG_IMAP_PROFILE_DESKTOP, .user = 3,
		.plan = { .seed = seed_for_reply(3), .length_ms = 1500,
			  .search = LG_IMAP_SEARCH_UNSEEN },
		.think_scale = 0.01,
	};
	struct step steps[sizeof(imap_desktop_good) / sizeof(imap_desktop_good[0])];
	char fetched[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lg_stats *st = new_stats();
		struct outcome o;
		struct peer peer;

		snprintf(fetched, sizeof(fetched),
			 "* 1 FETCH (UID 7 FLAGS (\\Seen) RFC822.SIZE 10)\r\n"
			 "* 2 FETCH (UID 9 FLAGS () RFC822.SIZE 10 ENVELOPE (\"Mon, 1 Jan 2024\" "
			 "\"hello\" %s NIL NIL NIL NIL NIL NIL NIL))\r\nA0005 OK\r\n", cases[i].from);
		memcpy(steps, imap_desktop_good, sizeof(steps));
		steps[12] = (struct step)S(fetched);
		replies_submitted = 0;
		imap_client = &params;
		scripted(steps, sizeof(steps) / sizeof(steps[0]), 0, 2000, st, NULL, &o, &peer);
		imap_client = NULL;
		if (o.failed)
			fail_msg("imap session failed: %s", o.detail);
		assert_int_equal(replies_submitted, 1);
		const struct lg_message_plan *r = &reply_submitted;
		assert_true(r->reply && !r->from_remote && r->sender == 3);
		assert_true(r->n_rcpts == 1 && r->n_local + r->n_remote == 1);
		assert_true(r->n_remote == (r->rcpts[0].remote ? 1u : 0u));
		assert_true(r->size >= 1024 && r->size <= 2675u * 1024);
		if (cases[i].known) {
			assert_true(r->rcpts[0].remote == cases[i].remote);
			assert_true(r->rcpts[0].user == cases[i].user);
		} else {
			assert_true(r->rcpts[0].user >= 1 &&
				    r->rcpts[0].user <= (r->rcpts[0].remote ? LG_REMOTE_USERS : wl.users));
		}
		assert_true(st->fn[LG_FN_IMAP_APPEND].pass == 1);
		free(st);
	}
}

/* ---- the IMAP delivery probe watcher ---- */

static void stop_session_cb(evutil_socket_t fd, short what, void *arg)
{
	struct outcome *o = arg;

	if (!o->done)
		lg_imap_session_stop(o->session);
}

struct stop_when_seen {
	struct outcome *o;
	struct lg_tracker *tracker;
	struct event *ev;
};

static void stop_when_seen_cb(evutil_socket_t fd, short what, void *arg)
{
	struct stop_when_seen *w = arg;
	struct timeval tick = { 0, 10000 };

	if (w->o->done)
		return;
	if (lg_tracker_outstanding(w->tracker) == 0)
		lg_imap_session_stop(w->o->session);
	else
		evtimer_add(w->ev, &tick);
}

/* Run the watcher against a script; stop it after stop_ms, or (0) as
 * soon as the tracker awaits nothing more. */
static void run_watcher(const struct step *steps, size_t n, unsigned int poll_ms,
			unsigned int stop_ms, struct lg_stats *st,
			struct lg_tracker *tracker, struct outcome *o)
{
	struct event_base *base = event_base_new();
	struct lg_session_env env = {
		.base = base, .wl = &wl, .tracker = tracker,
		.step_timeout_ms = 2000, .helo_name = "test.invalid",
	};
	struct lg_imap_params params = {
		.profile = LG_IMAP_PROFILE_PROBE, .user = 10, .poll_ms = poll_ms,
	};
	struct timeval guard = { 10, 0 };
	struct timeval stop = { stop_ms / 1000, (suseconds_t)(stop_ms % 1000) * 1000 };
	struct stop_when_seen when = { .o = o, .tracker = tracker };
	struct timespec t0, t1;
	struct sockaddr_in addr;
	struct peer peer;

	memset(&peer, 0, sizeof(peer));
	memcpy(peer.steps, steps, n * sizeof(*steps));
	peer.steps[n].op = END;
	peer_serve(&peer, &addr);
	memset(o, 0, sizeof(*o));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct lg_addrs addrs = one_addr(&addr);
	o->session = lg_imap_session_start(&env, LG_KIND_IMAP_DESKTOP, st,
		&addrs, &params, on_done, o);
	when.ev = evtimer_new(base, stop_ms > 0 ? stop_session_cb : stop_when_seen_cb,
			      stop_ms > 0 ? (void *)o : (void *)&when);
	evtimer_add(when.ev, &stop);
	event_base_loopexit(base, &guard);
	if (!o->done)
		event_base_dispatch(base);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	o->elapsed_ms = (uint64_t)(((int64_t)t1.tv_sec - t0.tv_sec) * 1000 +
				   ((int64_t)t1.tv_nsec - t0.tv_nsec) / 1000000);
	event_free(when.ev);
	assert_true(o->done);
	lg_session_free(&o->session);
	event_base_free(base);
	peer_join(&peer);
}

#define PROBE_ITEM "BODY[HEADER.FIELDS (X-MAILTIER-LOAD-ID)]"

/* "* seq FETCH (UID uid BODY[HEADER.FIELDS (...)] {n}" CRLF header ")" CRLF */
static void probe_fetch_response(char *out, size_t size, unsigned int seq,
				 unsigned int uid, const char *id)
{
	char header[128];

	snprintf(header, sizeof(header), "%s: %s\r\n\r\n", LG_ID_HEADER, id);
	snprintf(out, size, "* %u FETCH (UID %u " PROBE_ITEM " {%zu}\r\n%s)\r\n",
		 seq, uid, strlen(header), header);
}

static char watcher_round1[1024], watcher_round2[512];

static struct step watcher_idle[] = {
	S("* OK [CAPABILITY IMAP4rev2 IDLE UIDPLUS] ready\r\n"),
	E("A0001 LOGIN \"user10@example.test\" \"secret10\""),
	S("A0001 OK [CAPABILITY IMAP4rev2 IDLE UIDPLUS] in\r\n"),
	E("A0002 SELECT INBOX"),
	S("* 2 EXISTS\r\nA0002 OK\r\n"),
	E("A0003 UID FETCH 1:* (UID BODY.PEEK[HEADER.FIELDS (X-Mailtier-Load-Id)])"),
	S(NULL),	/* [6] watcher_round1: another run's message, probe 1 */
	E("A0004 UID STORE 6 +FLAGS.SILENT (\\Deleted)"),
	S("A0004 OK\r\n"),
	E("A0005 UID EXPUNGE 6"),
	S("* 2 EXPUNGE\r\nA0005 OK\r\n"),
	E("A0006 IDLE"),
	S("+ idling\r\n"),
	W(50),
	S("* 2 EXISTS\r\n"),	/* probe 2 arrives */
	E("DONE"),
	S("A0006 OK\r\n"),
	E("A0007 UID FETCH 7:* (UID BODY.PEEK"),
	W(400),			/* a slow FETCH: the time is the EXISTS's */
	S(NULL),		/* [19] watcher_round2: probe 2 */
	E("A0008 UID STORE 9 +FLAGS.SILENT (\\Deleted)"),
	S("A0008 OK\r\n"),
	E("A0009 UID EXPUNGE 9"),
	S("* 2 EXPUNGE\r\nA0009 OK\r\n"),
	E("A0010 IDLE"),
	S("+ idling\r\n"),
	E("DONE"),		/* stopped */
	S("A0010 OK\r\n"),
	E("A0011 LOGOUT"),
	S("* BYE\r\nA0011 OK\r\n"),
};

/* The watcher (WORKLOAD.md: LMTP 250 to EXISTS seen by an IDLE-ing
 * client): what is there at SELECT, then each EXISTS in IDLE; every id
 * of this run reported to the tracker, timed at the EXISTS that
 * announced the message (not at the slow FETCH after it), then
 * \Deleted and UID EXPUNGEd; another run's message left alone; LOGOUT
 * once stopped in IDLE. */
static void test_imap_probe_watcher(void **state)
{
	struct lg_tracker *tracker = lg_tracker_new(0xabcULL << 16, 60000000);
	struct lg_stats *st = new_stats();
	char foreign[LG_ID_MAX], id1[LG_ID_MAX], id2[LG_ID_MAX], part[512];
	struct outcome o;

	snprintf(foreign, sizeof(foreign), "00000000deadbeef.1");
	lg_tracker_format_id(tracker, 1, id1);
	lg_tracker_format_id(tracker, 2, id2);
	assert_true(lg_tracker_next_seq(tracker) == 1 && lg_tracker_next_seq(tracker) == 2);
	lg_tracker_expect(tracker, 1, 1, st, lg_now_us());
	lg_tracker_expect(tracker, 2, 1, st, lg_now_us());
	probe_fetch_response(watcher_round1, sizeof(watcher_round1), 1, 4, foreign);
	probe_fetch_response(part, sizeof(part), 2, 6, id1);
	strcat(watcher_round1, part);
	strcat(watcher_round1, "A0003 OK done\r\n");
	probe_fetch_response(watcher_round2, sizeof(watcher_round2), 2, 9, id2);
	strcat(watcher_round2, "A0007 OK done\r\n");
	watcher_idle[6].text = watcher_round1;
	watcher_idle[19].text = watcher_round2;

	run_watcher(SCRIPT(watcher_idle), 0, 1200, st, tracker, &o);
	if (o.failed)
		fail_msg("watcher failed: %s", o.detail);
	/* It ran until stopped, not until the probes were seen: libevent's
	 * timers run on CLOCK_MONOTONIC_COARSE (a tick of up to 10 ms), so
	 * the stop at 1200 ms may come that much early by our clock. */
	if (o.elapsed_ms < 1200 - 10)
		fail_msg("watcher ended after %llu ms, before its stop at 1200 ms",
			 (unsigned long long)o.elapsed_ms);
	assert_true(lg_tracker_outstanding(tracker) == 0);
	const struct lg_tracker_counts *c = lg_tracker_counts(tracker);
	assert_true(c->tracked == 2 && c->untracked == 0 && c->foreign == 1);
	assert_true(st->fn[LG_FN_DELIVERY].attempts == 2 && st->fn[LG_FN_DELIVERY].pass == 2);
	/* Probe 2's EXISTS came about 50 ms in, its FETCH 400 ms later. */
	if (st->fn[LG_FN_DELIVERY].hist.max >= 400000)
		fail_msg("delivery timed at the FETCH, not the EXISTS: %llu us",
			 (unsigned long long)st->fn[LG_FN_DELIVERY].hist.max);
	assert_true(st->fn[LG_FN_IMAP_FETCH_HEADERS].pass == 2);
	assert_true(st->fn[LG_FN_IMAP_STORE].pass == 2);
	assert_true(st->fn[LG_FN_IMAP_EXPUNGE].pass == 2);
	assert_true(st->fn[LG_FN_IMAP_IDLE].pass == 2 && st->fn[LG_FN_IMAP_IDLE_WAKE].pass == 2);
	assert_true(st->fn[LG_FN_IMAP_LOGOUT].pass == 1);
	lg_tracker_free(&tracker);
	free(st);
}

static char watcher_poll_round[512];

static struct step watcher_poll[] = {
	S("* OK [CAPABILITY IMAP4rev2] ready\r\n"),
	E("A0001 LOGIN"),
	S("A0001 OK [CAPABILITY IMAP4rev2] in\r\n"),
	E("A0002 SELECT INBOX"),
	S("* 0 EXISTS\r\nA0002 OK\r\n"),
	E("A0003 NOOP"),
	S("A0003 OK\r\n"),
	E("A0004 NOOP"),
	S("* 1 EXISTS\r\nA0004 OK\r\n"),
	E("A0005 UID FETCH 1:* "),
	S(NULL),		/* [10] watcher_poll_round: the probe */
	E("A0006 UID STORE 3 +FLAGS.SILENT (\\Deleted)"),
	S("A0006 OK\r\n"),
	E("A0007 EXPUNGE"),	/* no UIDPLUS */
	S("* 1 EXPUNGE\r\nA0007 OK\r\n"),
	E("A0008 LOGOUT"),	/* stopped once the probe was seen */
	S("* BYE\r\nA0008 OK\r\n"),
};

/* Without IDLE the watcher polls with NOOP every poll_ms. */
static void test_imap_probe_watcher_poll(void **state)
{
	struct lg_tracker *tracker = lg_tracker_new(0x123ULL << 16, 60000000);
	struct lg_stats *st = new_stats();
	char id[LG_ID_MAX];
	struct outcome o;

	lg_tracker_expect(tracker, lg_tracker_next_seq(tracker), 1, st, lg_now_us());
	lg_tracker_format_id(tracker, 1, id);
	probe_fetch_response(watcher_poll_round, sizeof(watcher_poll_round), 1, 3, id);
	strcat(watcher_poll_round, "A0005 OK\r\n");
	watcher_poll[10].text = watcher_poll_round;
	run_watcher(SCRIPT(watcher_poll), 300, 0, st, tracker, &o);
	if (o.failed)
		fail_msg("watcher failed: %s", o.detail);
	assert_true(st->fn[LG_FN_IMAP_NOOP].attempts == 2 && st->fn[LG_FN_IMAP_NOOP].pass == 2);
	assert_true(st->fn[LG_FN_DELIVERY].pass == 1);
	assert_true(st->fn[LG_FN_IMAP_IDLE].attempts == 0);
	/* Two polls of 300 ms, each timer up to a coarse tick early. */
	assert_true(o.elapsed_ms >= 600 - 20);
	lg_tracker_free(&tracker);
	free(st);
}

/* ---- the sink, driven by a scripted client ---- */

struct sink_run {
	struct peer *peer;
	struct mt_loop *loop;
};

static void poll_peer(void *context)
{
	struct sink_run *run = context;

	if (atomic_load(&run->peer->done))
		mt_loop_exit(run->loop);
}

static void exit_loop(void *context)
{
	mt_loop_exit(context);
}

static void test_sink(void **state)
{
	struct lg_tracker *tracker = lg_tracker_new(0x77ULL, 60000000);
	struct lg_stats *st = new_stats();
	struct peer peer = { 0 };
	struct sockaddr_in addr = { .sin_family = AF_INET };
	const char *error;
	char id[LG_ID_MAX], message[512];

	lg_tracker_expect(tracker, lg_tracker_next_seq(tracker), 2, st, lg_now_us());
	lg_tracker_format_id(tracker, 1, id);
	snprintf(message, sizeof(message),
		 "Received: by mta\r\n%s: %s\r\nSubject: t\r\n\r\nbody\r\n..dot\r\n.\r\n",
		 LG_ID_HEADER, id);
	const struct step steps[] = {
		E("220 "),
		S("MAIL FROM:<a@b>\r\n"), E("503"),	/* no EHLO yet */
		S("EHLO mta.test\r\n"), E("250-"), E("250-PIPELINING"),
		E("250 "),
		S("FOO\r\n"), E("502"),
		S("RCPT TO:<x@remote.test>\r\n"), E("503"),
		/* Pipelined (RFC 2920): everything up to DATA in one write. */
		S("MAIL FROM:<a@example.test>\r\nRCPT TO:<x@remote.test>\r\n"
			"RCPT TO:<y@remote.test>\r\nDATA\r\n"),
		E("250"), E("250"), E("250"), E("354"),
		S(message), E("250"),
		S("NOOP\r\nRSET\r\nQUIT\r\n"), E("250"), E("250"),
		E("221"),
	};
	struct mt_loop *loop = mt_loop_new(&error);
	assert_non_null(loop);
	struct lg_sink *sink = lg_sink_new(loop, "127.0.0.1:0", tracker, &error);
	assert_non_null(sink);

	memcpy(peer.steps, steps, sizeof(steps));
	peer.steps[sizeof(steps) / sizeof(steps[0])].op = END;
	peer.is_client = true;
	peer.fd = socket(AF_INET, SOCK_STREAM, 0);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons((uint16_t)lg_sink_port(sink));
	assert_int_equal(connect(peer.fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(pthread_create(&peer.thread, NULL, peer_main, &peer), 0);

	struct sink_run run = { &peer, loop };
	struct mt_timer *poll = mt_timer_add(loop, 10, true, poll_peer, &run);
	struct mt_timer *guard = mt_timer_add(loop, 10000, false, exit_loop, loop);
	mt_loop_run(loop);
	peer_join(&peer);
	/* Let the sink see the close and reap the session. */
	mt_timer_free(&poll);
	mt_timer_free(&guard);

	const struct lg_sink_counts *c = lg_sink_counts(sink);
	assert_true(c->sessions == 1);
	assert_true(c->transactions == 1);
	assert_true(c->rcpts == 2);
	assert_true(c->with_id == 1);
	assert_true(c->bad_commands == 3);
	size_t octets = strlen(message) - strlen(".\r\n") - 1;	/* minus a stuffed dot */
	assert_true(c->octets == octets);
	/* Both recipients' copies timed as delivered. */
	assert_true(lg_tracker_outstanding(tracker) == 0);
	assert_true(st->fn[LG_FN_DELIVERY].pass == 2);
	lg_sink_free(&sink);
	mt_loop_free(&loop);
	lg_tracker_free(&tracker);
	free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_smtp_good),
		cmocka_unit_test(test_smtp_helo_fallback_trickled),
		cmocka_unit_test(test_smtp_faults),
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_smtp_tls_refused),
		cmocka_unit_test(test_smtp_submission),
		cmocka_unit_test(test_lmtp),
		cmocka_unit_test(test_pop_good),
		cmocka_unit_test(test_pop_faults),
		cmocka_unit_test(test_imap_webmail_trickled),
		cmocka_unit_test(test_imap_expunge_issued),
		cmocka_unit_test(test_imap_desktop),
		cmocka_unit_test(test_imap_fill),
		cmocka_unit_test(test_imap_faults),
		cmocka_unit_test(test_imap_envelope_from),
		cmocka_unit_test(test_imap_reply_recipient),
		cmocka_unit_test(test_imap_probe_watcher),
		cmocka_unit_test(test_imap_probe_watcher_poll),
		cmocka_unit_test(test_sink),
	};

	/* A peer writing to a client that gave up must fail the test, not
	 * kill it. */
	signal(SIGPIPE, SIG_IGN);
	mt_log_init("test-loadgen-clients", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(MT_LOG_WARNING);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
