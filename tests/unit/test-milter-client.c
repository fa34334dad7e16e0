/* test-milter-client.c — unit tests for lib-mail/milter-client.c, one
 * MTA connection to one mail filter, against a fake filter in this
 * process: a listening Unix (or loopback TCP) socket the client connects
 * to, and the filter's side played by the test on the same mt_loop,
 * reading the client's packets and comparing their exact octets, and
 * writing each reply by hand. Covered:
 *  - address parsing (inet, inet6, unix, local, and the malformed ones);
 *  - the OPTNEG the client sends (version 6, the offered actions and
 *    steps), the filter's answer masked to that offer, versions 2 and 6
 *    taken, 0, 1, 7 and refusals (REJECT, TEMPFAIL, another reply, a
 *    short OPTNEG, a close) failing the client;
 *  - the macros before a stage: exact MACRO packets, the names the macro
 *    callback has no value for left out, no packet when none has one, the
 *    filter's SETSYMLIST lists used instead of the defaults only when
 *    SETSYMLIST was offered;
 *  - a command answered CONTINUE, REJECT, TEMPFAIL, ACCEPT, DISCARD,
 *    REPLYCODE (the text, and the status by its class), SKIP to BODY;
 *    a NO* step not sent (CONTINUE), an NR_* step sent and CONTINUE
 *    without an answer;
 *  - PROGRESS keeping a slow answer alive past its timeout; a timeout
 *    (connect, command, content) failing the client with a reason, every
 *    later call FAILED at once; the filter closing; a refused connect;
 *  - garbage failing the client: a length over the maximum or 0, an
 *    unknown code, a malformed reply, a modification or SKIP outside its
 *    place, a second answer to one command, a packet when nothing was
 *    asked (PROGRESS included);
 *  - end of message: modifications delivered in order, then the final
 *    answer; one not negotiated fails; the largest packet taken; a
 *    modification held back (the mod callback returning false) stops
 *    reading and its timer until mt_milter_client_resume(), which
 *    delivers the same one again;
 *  - mt_milter_client_abort() while an answer is awaited (no callback,
 *    ABORT once the answer is in, none when the answer ended the message),
 *    when idle in a message, outside one, and while a modification is held;
 *  - mt_milter_client_free(): QUIT when idle, none when busy.
 * Every answer must come from the loop, never from inside the call that
 * asked: each call sets a flag the callbacks check. Every wait is bounded
 * by a guard timer that leaves the loop.
 *
 * Trust boundary: none (test code; the fake filter is ours).
 * References: Sendmail libmilter (mfdef.h, engine.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "loop.h"
#include "milter-client.h"
#include "milter-proto.h"

#define S(literal) literal, sizeof(literal) - 1

/* The longest any one wait may take before the test fails. */
#define GUARD_MSECS 4000u

/* The steps the MTA offers (mta/smtp-milter.c). */
#define OFFERED (MT_MILTER_P_NOCONNECT | MT_MILTER_P_NOHELO | \
	MT_MILTER_P_NOMAIL | MT_MILTER_P_NORCPT | MT_MILTER_P_NOBODY | \
	MT_MILTER_P_NOHDRS | MT_MILTER_P_NOEOH | MT_MILTER_P_NR_HDR | \
	MT_MILTER_P_NOUNKNOWN | MT_MILTER_P_NODATA | MT_MILTER_P_SKIP | \
	MT_MILTER_P_NR_CONN | MT_MILTER_P_NR_HELO | MT_MILTER_P_NR_MAIL | \
	MT_MILTER_P_NR_RCPT | MT_MILTER_P_NR_DATA | MT_MILTER_P_NR_UNKN | \
	MT_MILTER_P_NR_EOH | MT_MILTER_P_NR_BODY | MT_MILTER_P_HDR_LEADSPC)

struct fake {
	struct mt_loop *loop;
	struct mt_milter_client_settings set;
	struct mt_milter_client *client;
	struct mt_logctx log;
	char dir[32];			/* for the Unix socket */
	char path[64];
	char address[128];
	int lfd;			/* the filter's listening socket */
	int fd;				/* its end of the connection, -1 until accepted */
	struct mt_buf in;		/* from the client, not yet expected */
	struct mt_buf out;		/* to the client, not yet written */
	bool eof;			/* the client closed */

	/* run_until() */
	bool (*until)(struct fake *f);
	size_t want_bytes;
	unsigned int want_answers;
	bool timed_out;

	/* Calls into the client and what came back. */
	bool in_call, in_resume;
	unsigned int nested;		/* callbacks run from inside a call */
	unsigned int answers, taken;
	enum mt_milter_status status;
	char *text, *error;
	unsigned int mods_at_answer;
	unsigned int mods;		/* deliveries to the mod callback */
	unsigned int hold_at;		/* it returns false at this delivery */
	struct mt_buf mod_log;
	size_t replbody_len;
};

/* ---- The fake filter's socket ---- */

static void filter_io(struct fake *f)
{
	if (f->fd < 0)
		return;
	while (f->out.len > 0) {
		ssize_t n = send(f->fd, f->out.data, f->out.len,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			mt_buf_reset(&f->out);	/* the client is gone */
		if (n <= 0)
			break;
		mt_buf_consume(&f->out, (size_t)n);
	}
	while (!f->eof) {
		char buf[65536];
		ssize_t n = recv(f->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			mt_buf_append(&f->in, buf, (size_t)n);
		else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			f->eof = true;
		else
			break;
	}
}

static void poll_cb(void *context)
{
	struct fake *f = context;

	if (f->fd < 0 && f->lfd >= 0)
		f->fd = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	filter_io(f);
	if (f->until != NULL && f->until(f))
		mt_loop_exit(f->loop);
}

static void guard_cb(void *context)
{
	struct fake *f = context;

	f->timed_out = true;
	mt_loop_exit(f->loop);
}

/* Run the loop (the client and the filter's side) until until(f) holds
 * or msecs pass (until NULL: for msecs); false if the time ran out. */
static bool run_until(struct fake *f, bool (*until)(struct fake *f),
		      unsigned int msecs)
{
	f->until = until;
	f->timed_out = false;
	struct mt_timer *poll = mt_timer_add(f->loop, 2, true, poll_cb, f);
	struct mt_timer *guard = mt_timer_add(f->loop, msecs, false, guard_cb, f);
	mt_loop_run(f->loop);
	mt_timer_free(&poll);
	mt_timer_free(&guard);
	f->until = NULL;
	return !f->timed_out;
}

static void run_for(struct fake *f, unsigned int msecs)
{
	(void)run_until(f, NULL, msecs);
}

static const char *hex(const void *data, size_t len, char *out, size_t size)
{
	const unsigned char *p = data;
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < len && at + 5 < size; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			out[at++] = (char)p[i];
		else
			at += (size_t)snprintf(out + at, size - at, "\\x%02x", p[i]);
	}
	out[at] = '\0';
	return out;
}

static bool until_bytes(struct fake *f)
{
	return f->in.len >= f->want_bytes || f->eof;
}

/* The client's next octets are exactly want[0..len). */
static void filter_expect(struct fake *f, const void *want, size_t len)
{
	char got_hex[2048], want_hex[2048];

	f->want_bytes = len;
	(void)run_until(f, until_bytes, GUARD_MSECS);
	if (f->in.len < len || memcmp(f->in.data, want, len) != 0)
		fail_msg("the filter got \"%s\", want \"%s\"",
			 hex(f->in.data, f->in.len, got_hex, sizeof(got_hex)),
			 hex(want, len, want_hex, sizeof(want_hex)));
	mt_buf_consume(&f->in, len);
}

#define FILTER_EXPECT(f, literal) filter_expect(f, S(literal))

/* A packet the test built (a command it gave the client). */
static void filter_expect_buf(struct fake *f, const struct mt_buf *want)
{
	filter_expect(f, want->data, want->len);
}

/* The client sends nothing more for msecs. */
static void filter_expect_quiet(struct fake *f, unsigned int msecs)
{
	char got_hex[2048];

	run_for(f, msecs);
	if (f->in.len != 0)
		fail_msg("the filter got \"%s\", want nothing",
			 hex(f->in.data, f->in.len, got_hex, sizeof(got_hex)));
}

static bool until_eof(struct fake *f)
{
	return f->eof;
}

/* The client closes the connection without sending anything more. */
static void filter_expect_eof(struct fake *f)
{
	char got_hex[2048];

	if (!run_until(f, until_eof, GUARD_MSECS))
		fail_msg("the client did not close the connection");
	if (f->in.len != 0)
		fail_msg("the filter got \"%s\" before the close",
			 hex(f->in.data, f->in.len, got_hex, sizeof(got_hex)));
}

/* Queue octets to the client; the loop writes them. */
static void filter_send(struct fake *f, const void *data, size_t len)
{
	mt_buf_append(&f->out, data, len);
	filter_io(f);
}

#define FILTER_SEND(f, literal) filter_send(f, S(literal))

/* A filter's packet by hand: 4-octet length, the code, the data. */
static void put_packet(struct mt_buf *out, char code, const void *data, size_t len)
{
	uint32_t n = (uint32_t)len + 1;
	unsigned char be[4] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16),
				(unsigned char)(n >> 8), (unsigned char)n };

	mt_buf_append(out, be, sizeof(be));
	mt_buf_append_char(out, code);
	if (len > 0)
		mt_buf_append(out, data, len);
}

#define PUT(out, code, literal) put_packet(out, code, S(literal))

static void put_be32(struct mt_buf *out, uint32_t v)
{
	unsigned char be[4] = { (unsigned char)(v >> 24), (unsigned char)(v >> 16),
				(unsigned char)(v >> 8), (unsigned char)v };

	mt_buf_append(out, be, sizeof(be));
}

/* A filter's OPTNEG: version, actions, steps, then (stage, list) pairs
 * for the stages whose list is not NULL. */
static void put_optneg(struct mt_buf *out, uint32_t version, uint32_t actions,
		       uint32_t protocol, const char *const *symlists)
{
	struct mt_buf data = MT_BUF_INIT;

	put_be32(&data, version);
	put_be32(&data, actions);
	put_be32(&data, protocol);
	for (uint32_t i = 0; symlists != NULL && i < MT_MILTER_STAGE_COUNT; i++) {
		if (symlists[i] == NULL)
			continue;
		put_be32(&data, i);
		mt_buf_append(&data, symlists[i], strlen(symlists[i]) + 1);
	}
	put_packet(out, MT_MILTER_R_OPTNEG, data.data, data.len);
	mt_buf_free(&data);
}

/* A reply with a 4-octet index first (INSHEADER, CHGHEADER). */
static void put_indexed(struct mt_buf *out, char code, uint32_t index,
			const char *data, size_t len)
{
	struct mt_buf d = MT_BUF_INIT;

	put_be32(&d, index);
	mt_buf_append(&d, data, len);
	put_packet(out, code, d.data, d.len);
	mt_buf_free(&d);
}

static void filter_send_buf(struct fake *f, struct mt_buf *packets)
{
	filter_send(f, packets->data, packets->len);
	mt_buf_free(packets);
}

static void filter_close(struct fake *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/* ---- The client's side: callbacks and calls ---- */

static const char *macro_cb(const char *name, void *context)
{
	static const struct { const char *name, *value; } macros[] = {
		{ "j", "mx.example" }, { "{daemon_name}", "mailtier" },
		{ "_", "client.example [192.0.2.1]" },
		{ "{client_addr}", "192.0.2.1" }, { "i", "4ABC" },
		{ "{mail_addr}", "a@example.org" },
		{ "{rcpt_addr}", "b@example.net" }, { "{empty}", "" },
	};

	(void)context;
	for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]); i++)
		if (strcmp(macros[i].name, name) == 0)
			return macros[i].value;
	return NULL;
}

static void answer_cb(const struct mt_milter_answer *answer, void *context)
{
	struct fake *f = context;

	if (f->in_call)
		f->nested++;
	f->answers++;
	f->status = answer->status;
	free(f->text);
	free(f->error);
	f->text = answer->text != NULL ? strdup(answer->text) : NULL;
	f->error = answer->error != NULL ? strdup(answer->error) : NULL;
	f->mods_at_answer = f->mods;
}

/* Logs each modification as "name fields|"; false at hold_at. */
static bool mod_cb(const struct mt_milter_reply *mod, void *context)
{
	struct fake *f = context;
	bool hold;

	if (f->in_call && !f->in_resume)
		f->nested++;
	f->mods++;
	hold = f->mods == f->hold_at;
	mt_buf_appendf(&f->mod_log, "%s", mt_milter_reply_name((char)mod->code));
	switch (mod->code) {
	case MT_MILTER_R_INSHEADER:
	case MT_MILTER_R_CHGHEADER:
		mt_buf_appendf(&f->mod_log, " %u", (unsigned int)mod->index);
		/* fall through */
	case MT_MILTER_R_ADDHEADER:
		mt_buf_appendf(&f->mod_log, " %s=%s", mod->name, mod->value);
		break;
	case MT_MILTER_R_ADDRCPT_PAR:
	case MT_MILTER_R_CHGFROM:
		mt_buf_appendf(&f->mod_log, " %s %s", mod->name,
			       mod->value != NULL ? mod->value : "-");
		break;
	case MT_MILTER_R_REPLBODY:
		f->replbody_len = mod->body_len;
		if (mod->body_len < 64)
			mt_buf_appendf(&f->mod_log, " %zu:%.*s", mod->body_len,
				       (int)mod->body_len, (const char *)mod->body);
		else
			mt_buf_appendf(&f->mod_log, " %zu", mod->body_len);
		break;
	default:
		mt_buf_appendf(&f->mod_log, " %s", mod->name);
		break;
	}
	mt_buf_append_str(&f->mod_log, hold ? " (held)|" : "|");
	return !hold;
}

static void client_ensure(struct fake *f)
{
	if (f->client == NULL)
		f->client = mt_milter_client_new(f->loop, &f->set, &f->log);
}

/* After a call: nothing was answered from inside it. */
static void call_done(struct fake *f, unsigned int answers_before)
{
	f->in_call = false;
	f->in_resume = false;
	assert_int_equal(f->answers, answers_before);
	assert_int_equal(f->nested, 0);
}

static void call_open(struct fake *f)
{
	unsigned int before = f->answers;

	client_ensure(f);
	f->in_call = true;
	mt_milter_client_open(f->client, answer_cb, f);
	call_done(f, before);
}

static void call_command(struct fake *f, enum mt_milter_cmd cmd,
			 const struct mt_buf *packet)
{
	unsigned int before = f->answers;

	f->in_call = true;
	mt_milter_client_command(f->client, cmd, packet, macro_cb, f, answer_cb, f);
	call_done(f, before);
}

static void call_eom(struct fake *f)
{
	unsigned int before = f->answers;

	f->in_call = true;
	mt_milter_client_eom(f->client, macro_cb, f, mod_cb, answer_cb, f);
	call_done(f, before);
}

static void call_resume(struct fake *f)
{
	unsigned int before = f->answers;

	f->in_call = true;
	f->in_resume = true;
	mt_milter_client_resume(f->client);
	call_done(f, before);
}

static void call_abort(struct fake *f)
{
	unsigned int before = f->answers, mods = f->mods;

	f->in_call = true;
	mt_milter_client_abort(f->client);
	call_done(f, before);
	assert_int_equal(f->mods, mods);
}

static bool until_answer(struct fake *f)
{
	return f->answers >= f->want_answers;
}

/* Run the loop until the next answer; its status. */
static enum mt_milter_status wait_answer(struct fake *f)
{
	f->want_answers = f->taken + 1;
	if (!run_until(f, until_answer, GUARD_MSECS))
		fail_msg("no answer within %u ms", GUARD_MSECS);
	assert_int_equal(f->answers, f->want_answers);
	assert_int_equal(f->nested, 0);
	f->taken = f->answers;
	return f->status;
}

/* No answer for msecs. */
static void expect_no_answer(struct fake *f, unsigned int msecs)
{
	run_for(f, msecs);
	assert_int_equal(f->answers, f->taken);
}

static void expect_failed(struct fake *f, const char *reason)
{
	assert_int_equal(wait_answer(f), MT_MILTER_FAILED);
	assert_non_null(f->error);
	if (strstr(f->error, reason) == NULL)
		fail_msg("error \"%s\", want \"%s\" in it", f->error, reason);
	assert_null(f->text);
	assert_true(mt_milter_client_failed(f->client));
}

/* The client's OPTNEG, as the settings make it. */
static void expect_optneg(struct fake *f)
{
	struct mt_buf want = MT_BUF_INIT;

	mt_buf_append(&want, "\0\0\0\x0d" "O" "\0\0\0\x06", 9);
	put_be32(&want, f->set.actions);
	put_be32(&want, f->set.protocol);
	filter_expect_buf(f, &want);
	mt_buf_free(&want);
}

/* Open; the filter answers OPTNEG version 6 with these; CONTINUE. */
static void negotiate(struct fake *f, uint32_t actions, uint32_t protocol,
		      const char *const *symlists)
{
	struct mt_buf reply = MT_BUF_INIT;

	call_open(f);
	expect_optneg(f);
	put_optneg(&reply, 6, actions, protocol, symlists);
	filter_send_buf(f, &reply);
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	assert_false(mt_milter_client_failed(f->client));
}

/* A command's packet, as the MTA writes it. */
static void packet_helo(struct mt_buf *p)
{
	static const char *const helo[] = { "client.example" };

	mt_buf_reset(p);
	mt_milter_put_strings(p, MT_MILTER_CMD_HELO, helo, 1);
}

static void packet_mail(struct mt_buf *p)
{
	static const char *const mail[] = { "<a@example.org>", "SIZE=100" };

	mt_buf_reset(p);
	mt_milter_put_strings(p, MT_MILTER_CMD_MAIL, mail, 2);
}

static void packet_rcpt(struct mt_buf *p)
{
	static const char *const rcpt[] = { "<b@example.net>" };

	mt_buf_reset(p);
	mt_milter_put_strings(p, MT_MILTER_CMD_RCPT, rcpt, 1);
}

/* A command and its packet as the filter gets it (no macros). */
static void command_sent(struct fake *f, enum mt_milter_cmd cmd,
			 const struct mt_buf *packet)
{
	call_command(f, cmd, packet);
	filter_expect_buf(f, packet);
}

/* HELO answered by reply: the status the caller gets. */
static enum mt_milter_status helo_answered(struct fake *f, const void *reply,
					   size_t len)
{
	struct mt_buf p = MT_BUF_INIT;

	packet_helo(&p);
	command_sent(f, MT_MILTER_CMD_HELO, &p);
	mt_buf_free(&p);
	filter_send(f, reply, len);
	return wait_answer(f);
}

/* MAIL, then RCPT, then DATA, each answered CONTINUE: a message begun. */
static void begin_message(struct fake *f)
{
	struct mt_buf p = MT_BUF_INIT;

	packet_mail(&p);
	command_sent(f, MT_MILTER_CMD_MAIL, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	mt_buf_free(&p);
}

/* ---- Set-up ---- */

static struct fake *fake_new(void)
{
	struct fake *f = calloc(1, sizeof(*f));
	const char *error;

	assert_non_null(f);
	f->loop = mt_loop_new(&error);
	assert_non_null(f->loop);
	f->lfd = -1;
	f->fd = -1;
	f->log.session_id = 0x17;
	f->set.name = "test";
	f->set.address = f->address;
	f->set.connect_timeout = 3000;
	f->set.command_timeout = 3000;
	f->set.content_timeout = 3000;
	f->set.actions = MT_MILTER_ACT_ALL;
	f->set.protocol = OFFERED;
	return f;
}

static int setup_unix(void **state)
{
	struct fake *f = fake_new();
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *error;

	strcpy(f->dir, "/tmp/mt-milter-XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/filter.sock", f->dir);
	snprintf(f->address, sizeof(f->address), "unix:%s", f->path);
	strcpy(sun.sun_path, f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sun, sizeof(sun)) != 0 ||
	    listen(f->lfd, 8) != 0)
		return -1;
	if (!mt_milter_address_parse(f->address, &f->set, &error))
		return -1;
	*state = f;
	return 0;
}

/* A loopback TCP socket on a free port: its port. */
static int listen_inet(int *fd_r, bool do_listen)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd_r = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (*fd_r < 0 || bind(*fd_r, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    (do_listen && listen(*fd_r, 8) != 0) ||
	    getsockname(*fd_r, (struct sockaddr *)&sin, &len) != 0)
		return -1;
	return ntohs(sin.sin_port);
}

static int setup_inet(void **state)
{
	struct fake *f = fake_new();
	const char *error;
	int port = listen_inet(&f->lfd, true);

	if (port <= 0)
		return -1;
	snprintf(f->address, sizeof(f->address), "inet:127.0.0.1:%d", port);
	if (!mt_milter_address_parse(f->address, &f->set, &error))
		return -1;
	*state = f;
	return 0;
}

/* A new client (and connection) for the next case of a table. */
static void fake_reconnect(struct fake *f)
{
	mt_milter_client_free(&f->client);
	filter_close(f);
	mt_buf_reset(&f->in);
	mt_buf_reset(&f->out);
	f->eof = false;
	f->mods = 0;
	f->hold_at = 0;
	mt_buf_reset(&f->mod_log);
}

static int teardown(void **state)
{
	struct fake *f = *state;

	if (f == NULL)
		return 0;
	mt_milter_client_free(&f->client);
	filter_close(f);
	if (f->lfd >= 0)
		close(f->lfd);
	if (f->path[0] != '\0')
		unlink(f->path);
	if (f->dir[0] != '\0')
		rmdir(f->dir);
	mt_loop_free(&f->loop);
	mt_buf_free(&f->in);
	mt_buf_free(&f->out);
	mt_buf_free(&f->mod_log);
	free(f->text);
	free(f->error);
	free(f);
	return 0;
}

/* ---- Addresses ---- */

static void test_address_parse(void **state)
{
	static const struct {
		const char *address;
		int family;		/* 0: refused */
		unsigned int port;
		const char *path;
	} cases[] = {
		{ "inet:127.0.0.1:8891", AF_INET, 8891, NULL },
		{ "inet:[127.0.0.1]:25", AF_INET, 25, NULL },
		{ "inet:[::1]:11332", AF_INET6, 11332, NULL },
		{ "inet6:[::1]:25", AF_INET6, 25, NULL },
		{ "unix:/run/opendkim/opendkim.sock", AF_UNIX, 0,
		  "/run/opendkim/opendkim.sock" },
		{ "local:/var/run/milter", AF_UNIX, 0, "/var/run/milter" },
		{ "inet:127.0.0.1", 0, 0, NULL },
		{ "inet:127.0.0.1:", 0, 0, NULL },
		{ "inet::25", 0, 0, NULL },
		{ "inet:127.0.0.1:smtp", 0, 0, NULL },
		{ "unix:", 0, 0, NULL },
		{ "unix:/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0, 0, NULL },
		{ "tcp:127.0.0.1:25", 0, 0, NULL },
		{ "/run/milter.sock", 0, 0, NULL },
		{ "", 0, 0, NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_milter_client_settings set;
		const char *error = NULL;
		bool ok;

		memset(&set, 0, sizeof(set));
		ok = mt_milter_address_parse(cases[i].address, &set, &error);
		if (ok != (cases[i].family != 0))
			fail_msg("%s: %s", cases[i].address, ok ? "taken" : error);
		if (!ok) {
			assert_non_null(error);
			continue;
		}
		assert_int_equal(set.sockaddr.ss_family, cases[i].family);
		if (cases[i].family == AF_INET) {
			const struct sockaddr_in *sin = (const void *)&set.sockaddr;
			assert_int_equal(ntohs(sin->sin_port), cases[i].port);
			assert_int_equal(ntohl(sin->sin_addr.s_addr), INADDR_LOOPBACK);
			assert_int_equal(set.sockaddr_len, sizeof(*sin));
		} else if (cases[i].family == AF_INET6) {
			const struct sockaddr_in6 *sin6 = (const void *)&set.sockaddr;
			assert_int_equal(ntohs(sin6->sin6_port), cases[i].port);
			assert_true(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
			assert_int_equal(set.sockaddr_len, sizeof(*sin6));
		} else {
			const struct sockaddr_un *sun = (const void *)&set.sockaddr;
			assert_string_equal(sun->sun_path, cases[i].path);
		}
	}
}

/* ---- Negotiation ---- */

static void test_negotiate(void **state)
{
	struct fake *f = *state;
	struct mt_buf reply = MT_BUF_INIT;

	f->set.actions = MT_MILTER_ACT_ADDHDRS | MT_MILTER_ACT_CHGHDRS |
		MT_MILTER_ACT_SETSYMLIST;
	f->set.protocol = MT_MILTER_P_NOHELO | MT_MILTER_P_NR_RCPT | MT_MILTER_P_SKIP;
	call_open(f);
	/* Version 6, actions 0x111, steps 0x8402: as offered, to the octet. */
	FILTER_EXPECT(f, "\0\0\0\x0d" "O" "\0\0\0\x06" "\0\0\x01\x11" "\0\0\x84\x02");
	filter_expect_quiet(f, 50);
	assert_int_equal(f->answers, 0);
	/* The filter asks for more than it was offered. */
	put_optneg(&reply, 6, 0xffffffffu, MT_MILTER_P_NOHELO | MT_MILTER_P_NOMAIL |
		   MT_MILTER_P_NR_RCPT | MT_MILTER_P_HDR_LEADSPC |
		   MT_MILTER_P_MDS_1M | MT_MILTER_P_NOCONNECT, NULL);
	filter_send_buf(f, &reply);
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	assert_null(f->error);
	assert_null(f->text);
	assert_false(mt_milter_client_failed(f->client));
	assert_string_equal(mt_milter_client_name(f->client), "test");
	/* Only what was offered holds: NOHELO yes, NOMAIL, NOCONNECT and
	 * HDR_LEADSPC no. */
	assert_false(mt_milter_client_wants(f->client, MT_MILTER_CMD_HELO));
	assert_true(mt_milter_client_wants(f->client, MT_MILTER_CMD_MAIL));
	assert_true(mt_milter_client_wants(f->client, MT_MILTER_CMD_CONNECT));
	assert_true(mt_milter_client_wants(f->client, MT_MILTER_CMD_DATA));
	assert_false(mt_milter_client_leadspc(f->client));
	/* Opening an open client: CONTINUE again, from the loop. */
	call_open(f);
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	filter_expect_quiet(f, 20);
}

static void test_negotiate_leadspc(void **state)
{
	struct fake *f = *state;

	negotiate(f, MT_MILTER_ACT_ALL, MT_MILTER_P_HDR_LEADSPC | MT_MILTER_P_NOHDRS,
		  NULL);
	assert_true(mt_milter_client_leadspc(f->client));
	assert_false(mt_milter_client_wants(f->client, MT_MILTER_CMD_HEADER));
	assert_true(mt_milter_client_wants(f->client, MT_MILTER_CMD_EOH));
}

/* The filter's OPTNEG answers: versions 2 to 6 taken, anything else
 * (or no OPTNEG at all) fails the client, which then stays failed. */
static void test_negotiate_versions(void **state)
{
	static const struct {
		const char *name;
		const char *reply;	/* NULL: OPTNEG of version */
		size_t len;
		uint32_t version;
		const char *error;	/* NULL: taken */
	} cases[] = {
		{ "version 6", NULL, 0, 6, NULL },
		{ "version 2", NULL, 0, 2, NULL },
		{ "version 1", NULL, 0, 1, "version 1" },
		{ "version 0", NULL, 0, 0, "version 0" },
		{ "version 7", NULL, 0, 7, "version 7" },
		{ "version 2^32-1", NULL, 0, 0xffffffffu, "version 4294967295" },
		{ "reject", S("\0\0\0\x01" "r"), 0, "refused the negotiation" },
		{ "tempfail", S("\0\0\0\x01" "t"), 0, "refused the negotiation" },
		{ "continue", S("\0\0\0\x01" "c"), 0, "continue instead of OPTNEG" },
		{ "short", S("\0\0\0\x09" "O" "\0\0\0\x06" "\0\0\0\0"), 0, "shorter" },
		{ "progress", S("\0\0\0\x01" "p"), 0, "progress instead of OPTNEG" },
		{ "close", S(""), 0, "closed the connection" },
	};
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_buf reply = MT_BUF_INIT;

		fake_reconnect(f);
		call_open(f);
		expect_optneg(f);
		if (cases[i].reply == NULL)
			put_optneg(&reply, cases[i].version, MT_MILTER_ACT_ALL, 0, NULL);
		else
			mt_buf_append(&reply, cases[i].reply, cases[i].len);
		if (reply.len > 0)
			filter_send_buf(f, &reply);
		else
			filter_close(f);
		if (cases[i].error == NULL) {
			assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
			/* DATA came with version 4. */
			assert_int_equal(mt_milter_client_wants(f->client, MT_MILTER_CMD_DATA),
					 cases[i].version >= 4);
			mt_buf_free(&reply);
			continue;
		}
		expect_failed(f, cases[i].error);
		if (cases[i].reply != NULL && cases[i].len > 0)
			filter_expect_eof(f);
		/* Failed for good: every call answers FAILED, from the loop. */
		assert_true(mt_milter_client_wants(f->client, MT_MILTER_CMD_HELO));
		packet_helo(&p);
		call_command(f, MT_MILTER_CMD_HELO, &p);
		expect_failed(f, cases[i].error);
		call_eom(f);
		expect_failed(f, cases[i].error);
		call_open(f);
		expect_failed(f, cases[i].error);
		call_abort(f);
		expect_no_answer(f, 10);
		mt_buf_free(&reply);
	}
	mt_buf_free(&p);
}

/* ---- Macros ---- */

/* The MACRO packet for cmd with data (name NUL value NUL ...). */
static void expect_macro(struct fake *f, char cmd, const char *data, size_t len)
{
	struct mt_buf want = MT_BUF_INIT;
	char cmds[2] = { 'D', cmd };

	put_be32(&want, (uint32_t)len + 2);
	mt_buf_append(&want, cmds, 2);
	mt_buf_append(&want, data, len);
	filter_expect_buf(f, &want);
	mt_buf_free(&want);
}

#define EXPECT_MACRO(f, cmd, literal) expect_macro(f, cmd, S(literal))

static void test_macros_default(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	f->set.macros[MT_MILTER_STAGE_CONNECT] = "j {daemon_name} {unset} _";
	f->set.macros[MT_MILTER_STAGE_MAIL] = "{unset} {other}";
	f->set.macros[MT_MILTER_STAGE_RCPT] = "{rcpt_addr}";
	f->set.macros[MT_MILTER_STAGE_DATA] = "i {empty}";
	f->set.macros[MT_MILTER_STAGE_EOM] = "i";
	/* SETSYMLIST offered but the filter sends no lists: the defaults. */
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);

	mt_milter_put_connect(&p, "client.example", '4', 25, "192.0.2.1");
	call_command(f, MT_MILTER_CMD_CONNECT, &p);
	/* {unset} has no value: left out. */
	FILTER_EXPECT(f, "\0\0\0\x43" "DC" "j\0" "mx.example\0" "{daemon_name}\0"
		      "mailtier\0" "_\0" "client.example [192.0.2.1]\0");
	filter_expect_buf(f, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	/* No list for HELO: no MACRO packet. */
	packet_helo(&p);
	call_command(f, MT_MILTER_CMD_HELO, &p);
	filter_expect_buf(f, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	/* No value for any name of the list: no MACRO packet either. */
	packet_mail(&p);
	call_command(f, MT_MILTER_CMD_MAIL, &p);
	filter_expect_buf(f, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	packet_rcpt(&p);
	call_command(f, MT_MILTER_CMD_RCPT, &p);
	FILTER_EXPECT(f, "\0\0\0\x1c" "DR" "{rcpt_addr}\0" "b@example.net\0");
	filter_expect_buf(f, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	/* An empty value is a value. */
	mt_buf_reset(&p);
	mt_milter_put_command(&p, MT_MILTER_CMD_DATA);
	call_command(f, MT_MILTER_CMD_DATA, &p);
	FILTER_EXPECT(f, "\0\0\0\x12" "DT" "i\0" "4ABC\0" "{empty}\0" "\0");
	FILTER_EXPECT(f, "\0\0\0\x01" "T");
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	/* HEADER has no stage: never macros. */
	mt_buf_reset(&p);
	mt_milter_put_header(&p, "Subject", "hi");
	command_sent(f, MT_MILTER_CMD_HEADER, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x09" "DE" "i\0" "4ABC\0");
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	FILTER_SEND(f, "\0\0\0\x01" "a");
	assert_int_equal(wait_answer(f), MT_MILTER_ACCEPT);

	/* Without a macro callback: no MACRO packet. */
	packet_mail(&p);
	f->in_call = true;
	mt_milter_client_command(f->client, MT_MILTER_CMD_RCPT, &p, NULL, NULL,
				 answer_cb, f);
	call_done(f, f->taken);
	filter_expect_buf(f, &p);
	filter_expect_quiet(f, 20);
	mt_buf_free(&p);
}

/* The filter's SETSYMLIST lists replace the defaults of their stages
 * (when SETSYMLIST was offered); other stages keep the defaults. */
static void test_macros_symlist(void **state)
{
	static const char *const symlists[MT_MILTER_STAGE_COUNT] = {
		[MT_MILTER_STAGE_CONNECT] = "{client_addr} {unknown} j",
		[MT_MILTER_STAGE_MAIL] = "{mail_addr}  i",
		[MT_MILTER_STAGE_EOM] = "",
	};
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	f->set.macros[MT_MILTER_STAGE_CONNECT] = "j _";
	f->set.macros[MT_MILTER_STAGE_MAIL] = "i";
	f->set.macros[MT_MILTER_STAGE_RCPT] = "{rcpt_addr}";
	f->set.macros[MT_MILTER_STAGE_EOM] = "i";
	negotiate(f, MT_MILTER_ACT_ALL, 0, symlists);

	mt_milter_put_connect(&p, "client.example", '4', 25, "192.0.2.1");
	call_command(f, MT_MILTER_CMD_CONNECT, &p);
	EXPECT_MACRO(f, 'C', "{client_addr}\0" "192.0.2.1\0" "j\0" "mx.example\0");
	filter_expect_buf(f, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	packet_mail(&p);
	call_command(f, MT_MILTER_CMD_MAIL, &p);
	EXPECT_MACRO(f, 'M', "{mail_addr}\0" "a@example.org\0" "i\0" "4ABC\0");
	filter_expect_buf(f, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	packet_rcpt(&p);
	call_command(f, MT_MILTER_CMD_RCPT, &p);
	EXPECT_MACRO(f, 'R', "{rcpt_addr}\0" "b@example.net\0");
	filter_expect_buf(f, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	/* An empty list: no macros at end of message. */
	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	/* SETSYMLIST not offered: the filter's lists are not used. */
	fake_reconnect(f);
	f->set.actions = MT_MILTER_ACT_ALL & ~MT_MILTER_ACT_SETSYMLIST;
	negotiate(f, MT_MILTER_ACT_ALL, 0, symlists);
	mt_milter_put_connect(&p, "client.example", '4', 25, "192.0.2.1");
	call_command(f, MT_MILTER_CMD_CONNECT, &p);
	EXPECT_MACRO(f, 'C', "j\0" "mx.example\0" "_\0" "client.example [192.0.2.1]\0");
	filter_expect_buf(f, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	mt_buf_free(&p);
}

/* ---- Answers ---- */

static void test_answers(void **state)
{
	static const struct {
		char code;
		const char *data;
		size_t len;
		enum mt_milter_status status;
		const char *text;
	} cases[] = {
		{ 'c', S(""), MT_MILTER_CONTINUE, NULL },
		{ 'r', S(""), MT_MILTER_REJECT, NULL },
		{ 't', S(""), MT_MILTER_TEMPFAIL, NULL },
		{ 'a', S(""), MT_MILTER_ACCEPT, NULL },
		{ 'd', S(""), MT_MILTER_DISCARD, NULL },
		{ 'y', S("550 5.7.1 Go away\0"), MT_MILTER_REJECT, "550 5.7.1 Go away" },
		{ 'y', S("451 4.7.1 Later\0"), MT_MILTER_TEMPFAIL, "451 4.7.1 Later" },
		{ 'y', S("421 Closing\0"), MT_MILTER_TEMPFAIL, "421 Closing" },
		{ 'y', S("554-5.7.1 one\r\n554 5.7.1 two\0"), MT_MILTER_REJECT,
		  "554-5.7.1 one\r\n554 5.7.1 two" },
		{ 'y', S("599\0"), MT_MILTER_REJECT, "599" },
		{ 'y', S("400 \0"), MT_MILTER_TEMPFAIL, "400 " },
	};
	struct fake *f = *state;

	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_buf reply = MT_BUF_INIT;

		put_packet(&reply, cases[i].code, cases[i].data, cases[i].len);
		assert_int_equal(helo_answered(f, reply.data, reply.len), cases[i].status);
		if (cases[i].text == NULL)
			assert_null(f->text);
		else
			assert_string_equal(f->text, cases[i].text);
		assert_null(f->error);
		assert_false(mt_milter_client_failed(f->client));
		mt_buf_free(&reply);
	}
	expect_no_answer(f, 20);
}

/* SKIP answers BODY when SKIP was negotiated, and nothing else. */
static void test_skip(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	negotiate(f, MT_MILTER_ACT_ALL, MT_MILTER_P_SKIP, NULL);
	begin_message(f);
	mt_milter_put_body(&p, S("body\r\n"));
	command_sent(f, MT_MILTER_CMD_BODY, &p);
	FILTER_SEND(f, "\0\0\0\x01" "s");
	assert_int_equal(wait_answer(f), MT_MILTER_SKIP);
	/* SKIP at end of message: not allowed. */
	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	FILTER_SEND(f, "\0\0\0\x01" "s");
	expect_failed(f, "SKIP");

	/* Not negotiated: SKIP to BODY fails. */
	fake_reconnect(f);
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	begin_message(f);
	command_sent(f, MT_MILTER_CMD_BODY, &p);
	FILTER_SEND(f, "\0\0\0\x01" "s");
	expect_failed(f, "SKIP");
	mt_buf_free(&p);
}

/* A NO* step is not sent and answers CONTINUE (from the loop). */
static void test_no_step(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	negotiate(f, MT_MILTER_ACT_ALL, MT_MILTER_P_NOHELO | MT_MILTER_P_NOUNKNOWN |
		  MT_MILTER_P_NODATA, NULL);
	packet_helo(&p);
	call_command(f, MT_MILTER_CMD_HELO, &p);
	assert_int_equal(f->answers, f->taken);
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	mt_buf_reset(&p);
	mt_milter_put_command(&p, MT_MILTER_CMD_DATA);
	call_command(f, MT_MILTER_CMD_DATA, &p);
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	filter_expect_quiet(f, 30);
	/* The next step is sent, alone. */
	packet_mail(&p);
	command_sent(f, MT_MILTER_CMD_MAIL, &p);
	FILTER_SEND(f, "\0\0\0\x01" "r");
	assert_int_equal(wait_answer(f), MT_MILTER_REJECT);
	filter_expect_quiet(f, 10);
	mt_buf_free(&p);
}

/* An NR_* step is sent and answers CONTINUE without waiting. */
static void test_nr_step(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	negotiate(f, MT_MILTER_ACT_ALL, MT_MILTER_P_NR_MAIL | MT_MILTER_P_NR_HDR, NULL);
	packet_mail(&p);
	call_command(f, MT_MILTER_CMD_MAIL, &p);
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	filter_expect_buf(f, &p);
	mt_buf_reset(&p);
	mt_milter_put_header(&p, "Subject", "hi");
	call_command(f, MT_MILTER_CMD_HEADER, &p);
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	filter_expect_buf(f, &p);
	/* RCPT is answered as usual. */
	packet_rcpt(&p);
	command_sent(f, MT_MILTER_CMD_RCPT, &p);
	expect_no_answer(f, 50);
	FILTER_SEND(f, "\0\0\0\x01" "t");
	assert_int_equal(wait_answer(f), MT_MILTER_TEMPFAIL);
	mt_buf_free(&p);
}

/* ---- Time ---- */

static void test_progress(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	f->set.command_timeout = 400;
	f->set.content_timeout = 400;
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	packet_helo(&p);
	command_sent(f, MT_MILTER_CMD_HELO, &p);
	/* 8 x 100 ms: twice the 400 ms, kept alive. */
	for (int i = 0; i < 8; i++) {
		expect_no_answer(f, 100);
		FILTER_SEND(f, "\0\0\0\x01" "p");
	}
	expect_no_answer(f, 100);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);

	/* At end of message too, between modifications. */
	begin_message(f);
	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	for (int i = 0; i < 4; i++) {
		struct mt_buf mod = MT_BUF_INIT;

		PUT(&mod, 'h', "X-Slow\0" "1\0");
		PUT(&mod, 'p', "");
		filter_send_buf(f, &mod);
		expect_no_answer(f, 200);
	}
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	assert_int_equal(f->mods, 4);
	assert_int_equal(f->mods_at_answer, 4);
	mt_buf_free(&p);
}

static void test_timeout(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	f->set.command_timeout = 200;
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	packet_helo(&p);
	command_sent(f, MT_MILTER_CMD_HELO, &p);
	expect_failed(f, "no answer within 200 ms");
	filter_expect_eof(f);
	/* Every later call: FAILED at once, nothing sent. */
	packet_mail(&p);
	call_command(f, MT_MILTER_CMD_MAIL, &p);
	expect_failed(f, "no answer within 200 ms");
	call_eom(f);
	expect_failed(f, "no answer within 200 ms");
	call_resume(f);
	call_abort(f);
	expect_no_answer(f, 20);
	/* A late answer changes nothing. */
	FILTER_SEND(f, "\0\0\0\x01" "c");
	expect_no_answer(f, 20);
	assert_true(mt_milter_client_failed(f->client));
	mt_buf_free(&p);
}

/* BODY and end of message wait content_timeout, not command_timeout. */
static void test_content_timeout(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	f->set.command_timeout = 60000;
	f->set.content_timeout = 200;
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	begin_message(f);
	mt_milter_put_body(&p, S("x"));
	command_sent(f, MT_MILTER_CMD_BODY, &p);
	expect_failed(f, "no answer within 200 ms");

	fake_reconnect(f);
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	begin_message(f);
	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	expect_failed(f, "no answer within 200 ms");
	mt_buf_free(&p);
}

/* A filter that takes the connection and never answers OPTNEG. */
static void test_connect_timeout(void **state)
{
	struct fake *f = *state;

	f->set.connect_timeout = 200;
	call_open(f);
	expect_optneg(f);
	expect_failed(f, "no connection or negotiation within 200 ms");
	filter_expect_eof(f);
}

/* ---- Connections ---- */

static void test_filter_closes(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	/* While an answer is awaited. */
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	packet_helo(&p);
	command_sent(f, MT_MILTER_CMD_HELO, &p);
	filter_close(f);
	expect_failed(f, "closed the connection");

	/* While idle: the next call is FAILED, nothing sent. */
	fake_reconnect(f);
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	shutdown(f->fd, SHUT_WR);
	expect_no_answer(f, 50);
	assert_true(mt_milter_client_failed(f->client));
	call_command(f, MT_MILTER_CMD_HELO, &p);
	expect_failed(f, "closed the connection");
	filter_expect_eof(f);
	mt_buf_free(&p);
}

static void test_connect_refused(void **state)
{
	struct fake *f = *state;
	const char *error;
	int fd;
	int port = listen_inet(&fd, false);

	/* A port where nothing listens. */
	assert_true(port > 0);
	close(fd);
	snprintf(f->address, sizeof(f->address), "inet:127.0.0.1:%d", port);
	assert_true(mt_milter_address_parse(f->address, &f->set, &error));
	call_open(f);
	expect_failed(f, "");
	assert_true(strlen(f->error) > 0);

	/* A Unix socket path where nothing is. */
	fake_reconnect(f);
	snprintf(f->address, sizeof(f->address), "unix:%s/none.sock", f->dir);
	assert_true(mt_milter_address_parse(f->address, &f->set, &error));
	call_open(f);
	expect_failed(f, "");
	assert_true(strlen(f->error) > 0);

	/* A Unix socket bound but not listening. */
	fake_reconnect(f);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/deaf.sock", f->dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	snprintf(f->address, sizeof(f->address), "unix:%s", sun.sun_path);
	assert_true(mt_milter_address_parse(f->address, &f->set, &error));
	call_open(f);
	expect_failed(f, "");
	assert_true(strlen(f->error) > 0);
	close(fd);
	unlink(sun.sun_path);
	assert_int_equal(f->taken, 3);
}

/* The whole path over loopback TCP. */
static void test_inet(void **state)
{
	struct fake *f = *state;

	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	assert_int_equal(helo_answered(f, S("\0\0\0\x01" "c")), MT_MILTER_CONTINUE);
	mt_milter_client_free(&f->client);
	FILTER_EXPECT(f, "\0\0\0\x01" "Q");
	filter_expect_eof(f);
}

/* ---- Garbage ---- */

static void test_garbage(void **state)
{
	static const struct {
		const char *name;
		const char *reply;
		size_t len;
		const char *error;
	} cases[] = {
		{ "length over the maximum", S("\0\x11\0\x01" "c"), "a packet of 1114113 octets" },
		{ "length of 2^32-1", S("\xff\xff\xff\xff"), "a packet of 4294967295 octets" },
		{ "length 0", S("\0\0\0\0"), "a packet of 0 octets" },
		{ "unknown code", S("\0\0\0\x01" "Z"), "unknown milter reply code" },
		{ "continue with data", S("\0\0\0\x02" "cx"), "data in a milter reply" },
		{ "reply text of class 2", S("\0\0\0\x08" "y250 ok\0"), "invalid reply text" },
		{ "enhanced code of another class",
		  S("\0\0\0\x0d" "y550 4.7.1 x\0"), "invalid reply text" },
		{ "reply text without NUL", S("\0\0\0\x07" "y550 no"), "invalid reply text" },
		{ "modification outside end of message",
		  S("\0\0\0\x09" "hX-A\0" "one\0"), "unexpected addheader" },
		{ "recipient outside end of message",
		  S("\0\0\0\x07" "+<a@b>\0"), "unexpected addrcpt" },
		{ "SKIP to HELO", S("\0\0\0\x01" "s"), "SKIP" },
		{ "OPTNEG again", S("\0\0\0\x0d" "O" "\0\0\0\x06" "\0\0\0\0" "\0\0\0\0"),
		  "unexpected optneg" },
		{ "SETSYMLIST", S("\0\0\0\x06" "l\0\0\0\0" "\0"), "SETSYMLIST" },
		{ "shutdown", S("\0\0\0\x01" "4"), "unexpected shutdown" },
	};
	struct fake *f = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_reconnect(f);
		negotiate(f, MT_MILTER_ACT_ALL, MT_MILTER_P_SKIP, NULL);
		if (helo_answered(f, cases[i].reply, cases[i].len) != MT_MILTER_FAILED)
			fail_msg("%s: taken", cases[i].name);
		if (strstr(f->error, cases[i].error) == NULL)
			fail_msg("%s: error \"%s\"", cases[i].name, f->error);
		assert_true(mt_milter_client_failed(f->client));
		filter_expect_eof(f);
	}
}

/* Packets when nothing was asked fail the client at once, whatever
 * arrives with or after an answer: a reply cannot be kept for the next
 * command, whose answer it would become. */
static void test_unsolicited(void **state)
{
	static const struct {
		const char *name;
		const char *packets;
		size_t len;
		const char *error;
	} cases[] = {
		{ "continue", S("\0\0\0\x01" "c"), "continue when nothing was asked" },
		{ "progress", S("\0\0\0\x01" "p"), "progress when nothing was asked" },
		{ "reject", S("\0\0\0\x01" "r"), "reject when nothing was asked" },
	};
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	f->set.command_timeout = 200;
	packet_mail(&p);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_reconnect(f);
		negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
		filter_send(f, cases[i].packets, cases[i].len);
		filter_expect_eof(f);
		assert_true(mt_milter_client_failed(f->client));
		call_command(f, MT_MILTER_CMD_MAIL, &p);
		expect_failed(f, cases[i].error);
	}

	/* Two answers to one command, in one write. */
	fake_reconnect(f);
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	command_sent(f, MT_MILTER_CMD_MAIL, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c" "\0\0\0\x01" "r");
	expect_failed(f, "reject when nothing was asked");
	filter_expect_eof(f);

	/* A NR_* step answered all the same. */
	fake_reconnect(f);
	negotiate(f, MT_MILTER_ACT_ALL, MT_MILTER_P_NR_MAIL, NULL);
	call_command(f, MT_MILTER_CMD_MAIL, &p);
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	filter_expect_buf(f, &p);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	filter_expect_eof(f);
	assert_true(mt_milter_client_failed(f->client));
	mt_buf_free(&p);
}

/* ---- End of message ---- */

static void test_eom_mods(void **state)
{
	struct fake *f = *state;
	struct mt_buf r = MT_BUF_INIT;

	f->set.macros[MT_MILTER_STAGE_EOM] = "i";
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	begin_message(f);
	call_eom(f);
	EXPECT_MACRO(f, 'E', "i\0" "4ABC\0");
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	/* Every kind of modification, then the answer, in one write. */
	PUT(&r, 'h', "X-A\0" "one\0");
	put_indexed(&r, 'i', 0, S("X-B\0" "two\n more\0"));
	put_indexed(&r, 'm', 2, S("Subject\0" "\0"));
	PUT(&r, '+', "<c@example.com>\0");
	PUT(&r, '2', "<d@example.com>\0" "NOTIFY=NEVER\0");
	PUT(&r, '-', "<b@example.net>\0");
	PUT(&r, 'e', "<e@example.org>\0" "SIZE=10\0");
	PUT(&r, 'e', "<f@example.org>\0");
	PUT(&r, 'b', "new body\r\n");
	PUT(&r, 'b', "");
	PUT(&r, 'q', "looks bad\0");
	PUT(&r, 'a', "");
	filter_send_buf(f, &r);
	assert_int_equal(wait_answer(f), MT_MILTER_ACCEPT);
	assert_string_equal(mt_buf_cstr(&f->mod_log),
			    "addheader X-A=one|insheader 0 X-B=two\n more|"
			    "chgheader 2 Subject=|addrcpt <c@example.com>|"
			    "addrcpt_par <d@example.com> NOTIFY=NEVER|"
			    "delrcpt <b@example.net>|chgfrom <e@example.org> SIZE=10|"
			    "chgfrom <f@example.org> -|replbody 10:new body\r\n|"
			    "replbody 0:|quarantine looks bad|");
	assert_int_equal(f->mods_at_answer, 11);
	expect_no_answer(f, 20);

	/* The next message: a modification per write, a REPLYCODE last. */
	mt_buf_reset(&f->mod_log);
	begin_message(f);
	call_eom(f);
	EXPECT_MACRO(f, 'E', "i\0" "4ABC\0");
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	PUT(&r, 'h', "X-1\0" "1\0");
	filter_send_buf(f, &r);
	expect_no_answer(f, 20);
	PUT(&r, 'h', "X-2\0" "2\0");
	filter_send_buf(f, &r);
	expect_no_answer(f, 20);
	PUT(&r, 'y', "550 5.7.0 spam\0");
	filter_send_buf(f, &r);
	assert_int_equal(wait_answer(f), MT_MILTER_REJECT);
	assert_string_equal(f->text, "550 5.7.0 spam");
	assert_string_equal(mt_buf_cstr(&f->mod_log), "addheader X-1=1|addheader X-2=2|");
	/* The client is ready for another message. */
	begin_message(f);
}

/* A modification needs its action offered and negotiated. */
static void test_mod_not_negotiated(void **state)
{
	static const struct {
		uint32_t offered, asked;
		char code;
		const char *data;
		size_t len;
		const char *error;
	} cases[] = {
		{ MT_MILTER_ACT_ADDHDRS, MT_MILTER_ACT_ALL, 'm',
		  S("\0\0\0\x01" "Subject\0" "x\0"), "chgheader without having negotiated it" },
		{ MT_MILTER_ACT_ALL, MT_MILTER_ACT_ADDHDRS, 'b', S("body"),
		  "replbody without having negotiated it" },
		{ MT_MILTER_ACT_ALL, MT_MILTER_ACT_ADDRCPT, '2', S("<a@b>\0"),
		  "addrcpt_par without having negotiated it" },
		{ MT_MILTER_ACT_ALL & ~MT_MILTER_ACT_QUARANTINE, MT_MILTER_ACT_ALL, 'q',
		  S("why\0"), "quarantine without having negotiated it" },
		{ MT_MILTER_ACT_ALL, 0, 'h', S("X-A\0" "v\0"),
		  "addheader without having negotiated it" },
	};
	struct fake *f = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_buf r = MT_BUF_INIT;

		fake_reconnect(f);
		f->set.actions = cases[i].offered;
		negotiate(f, cases[i].asked, 0, NULL);
		begin_message(f);
		call_eom(f);
		FILTER_EXPECT(f, "\0\0\0\x01" "E");
		if (cases[i].offered & cases[i].asked & MT_MILTER_ACT_ADDHDRS)
			PUT(&r, 'h', "X-Ok\0" "1\0");
		put_packet(&r, cases[i].code, cases[i].data, cases[i].len);
		PUT(&r, 'c', "");
		filter_send_buf(f, &r);
		expect_failed(f, cases[i].error);
		assert_int_equal(f->mods, (cases[i].offered & cases[i].asked &
					   MT_MILTER_ACT_ADDHDRS) != 0 ? 1 : 0);
		filter_expect_eof(f);
	}
}

/* The largest packet a filter may send is taken; one octet more is not. */
static void test_largest_packet(void **state)
{
	struct fake *f = *state;
	struct mt_buf r = MT_BUF_INIT;
	char *body = calloc(1, MT_MILTER_PACKET_MAX);

	assert_non_null(body);
	memset(body, 'x', MT_MILTER_PACKET_MAX);
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	begin_message(f);
	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	put_packet(&r, 'b', body, MT_MILTER_PACKET_MAX - 1);
	put_packet(&r, 'b', body, 3);
	PUT(&r, 'c', "");
	filter_send_buf(f, &r);
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	assert_int_equal(f->mods, 2);
	assert_string_equal(mt_buf_cstr(&f->mod_log), "replbody 1114111|replbody 3:xxx|");

	begin_message(f);
	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	put_packet(&r, 'b', body, MT_MILTER_PACKET_MAX);
	filter_send_buf(f, &r);
	expect_failed(f, "a packet of 1114113 octets");
	assert_int_equal(f->mods, 2);
	free(body);
}

/* The mod callback holds one back: nothing more is read (nor timed)
 * until resume, which delivers the same one again. */
static void test_mod_hold_resume(void **state)
{
	struct fake *f = *state;
	struct mt_buf r = MT_BUF_INIT;

	f->set.content_timeout = 200;
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	begin_message(f);
	f->hold_at = 2;
	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	PUT(&r, 'h', "X-1\0" "1\0");
	PUT(&r, 'h', "X-2\0" "2\0");
	PUT(&r, 'h', "X-3\0" "3\0");
	PUT(&r, 'c', "");
	filter_send_buf(f, &r);
	/* Held for longer than content_timeout: no answer, no failure. */
	expect_no_answer(f, 400);
	assert_int_equal(f->mods, 2);
	assert_false(mt_milter_client_failed(f->client));
	call_resume(f);
	/* The held one again, then the rest (from inside resume). */
	assert_string_equal(mt_buf_cstr(&f->mod_log),
			    "addheader X-1=1|addheader X-2=2 (held)|"
			    "addheader X-2=2|addheader X-3=3|");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	assert_int_equal(f->mods_at_answer, 4);
	/* Resume with nothing held: nothing. */
	call_resume(f);
	expect_no_answer(f, 20);

	/* Held before the rest has arrived; then the filter is slow: the
	 * timer runs again from the resume. */
	mt_buf_reset(&f->mod_log);
	f->mods = 0;
	f->hold_at = 1;
	begin_message(f);
	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	PUT(&r, 'h', "X-1\0" "1\0");
	filter_send_buf(f, &r);
	expect_no_answer(f, 300);
	call_resume(f);
	assert_string_equal(mt_buf_cstr(&f->mod_log),
			    "addheader X-1=1 (held)|addheader X-1=1|");
	expect_failed(f, "no answer within 200 ms");
}

/* ---- Abort ---- */

static void test_abort_waiting(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	/* MAIL awaited; the caller gives up on the message. */
	packet_mail(&p);
	command_sent(f, MT_MILTER_CMD_MAIL, &p);
	call_abort(f);
	filter_expect_quiet(f, 30);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	/* ABORT once the answer is in; no callback at all. */
	FILTER_EXPECT(f, "\0\0\0\x01" "A");
	expect_no_answer(f, 30);
	assert_false(mt_milter_client_failed(f->client));
	/* Ready for the next message. */
	begin_message(f);

	/* RCPT awaited in a message: the same. */
	packet_rcpt(&p);
	command_sent(f, MT_MILTER_CMD_RCPT, &p);
	call_abort(f);
	FILTER_SEND(f, "\0\0\0\x01" "r");
	FILTER_EXPECT(f, "\0\0\0\x01" "A");
	expect_no_answer(f, 30);

	/* An answer that ends the message itself: no ABORT after it. */
	packet_mail(&p);
	command_sent(f, MT_MILTER_CMD_MAIL, &p);
	call_abort(f);
	FILTER_SEND(f, "\0\0\0\x01" "r");
	filter_expect_quiet(f, 50);
	expect_no_answer(f, 1);
	/* Nor when the message had not begun (HELO awaited). */
	packet_helo(&p);
	command_sent(f, MT_MILTER_CMD_HELO, &p);
	call_abort(f);
	FILTER_SEND(f, "\0\0\0\x01" "c");
	filter_expect_quiet(f, 50);
	expect_no_answer(f, 1);
	assert_int_equal(helo_answered(f, S("\0\0\0\x01" "c")), MT_MILTER_CONTINUE);
	mt_buf_free(&p);
}

static void test_abort_idle(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	/* Outside a message: nothing. */
	call_abort(f);
	filter_expect_quiet(f, 20);
	assert_int_equal(helo_answered(f, S("\0\0\0\x01" "c")), MT_MILTER_CONTINUE);
	call_abort(f);
	filter_expect_quiet(f, 20);
	/* In a message: ABORT at once, once. */
	begin_message(f);
	call_abort(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "A");
	call_abort(f);
	filter_expect_quiet(f, 20);
	expect_no_answer(f, 1);
	/* After end of message: the message is over, nothing. */
	begin_message(f);
	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	FILTER_SEND(f, "\0\0\0\x01" "c");
	assert_int_equal(wait_answer(f), MT_MILTER_CONTINUE);
	call_abort(f);
	filter_expect_quiet(f, 20);
	mt_buf_free(&p);
}

/* Abort while a modification is held: the rest is read and dropped, the
 * final answer ends the message (no ABORT), nobody is called. */
static void test_abort_held(void **state)
{
	struct fake *f = *state;
	struct mt_buf r = MT_BUF_INIT;

	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	begin_message(f);
	f->hold_at = 1;
	call_eom(f);
	FILTER_EXPECT(f, "\0\0\0\x01" "E");
	PUT(&r, 'h', "X-1\0" "1\0");
	PUT(&r, 'h', "X-2\0" "2\0");
	filter_send_buf(f, &r);
	expect_no_answer(f, 50);
	assert_int_equal(f->mods, 1);
	call_abort(f);
	PUT(&r, 'h', "X-3\0" "3\0");
	PUT(&r, 'a', "");
	filter_send_buf(f, &r);
	filter_expect_quiet(f, 50);
	expect_no_answer(f, 1);
	assert_string_equal(mt_buf_cstr(&f->mod_log), "addheader X-1=1 (held)|");
	assert_false(mt_milter_client_failed(f->client));
	/* The client goes on with the next message. */
	begin_message(f);
}

/* ---- Free ---- */

static void test_free_quit(void **state)
{
	struct fake *f = *state;
	struct mt_buf p = MT_BUF_INIT;

	/* Idle: QUIT, then the close. */
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	mt_milter_client_free(&f->client);
	assert_null(f->client);
	FILTER_EXPECT(f, "\0\0\0\x01" "Q");
	filter_expect_eof(f);

	/* An answer awaited: no QUIT, and no callback after the free. */
	fake_reconnect(f);
	negotiate(f, MT_MILTER_ACT_ALL, 0, NULL);
	packet_helo(&p);
	command_sent(f, MT_MILTER_CMD_HELO, &p);
	mt_milter_client_free(&f->client);
	filter_expect_eof(f);
	expect_no_answer(f, 20);

	/* Freed with its answer pending in the loop: never delivered. */
	fake_reconnect(f);
	negotiate(f, MT_MILTER_ACT_ALL, MT_MILTER_P_NOHELO, NULL);
	call_command(f, MT_MILTER_CMD_HELO, &p);
	mt_milter_client_free(&f->client);
	expect_no_answer(f, 20);

	/* Never opened: nothing to say. */
	fake_reconnect(f);
	client_ensure(f);
	mt_milter_client_free(&f->client);
	mt_milter_client_free(&f->client);
	mt_buf_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_address_parse),
#define T(name) cmocka_unit_test_setup_teardown(name, setup_unix, teardown)
		T(test_negotiate),
		T(test_negotiate_leadspc),
		T(test_negotiate_versions),
		T(test_macros_default),
		T(test_macros_symlist),
		T(test_answers),
		T(test_skip),
		T(test_no_step),
		T(test_nr_step),
		T(test_progress),
		T(test_timeout),
		T(test_content_timeout),
		T(test_connect_timeout),
		T(test_filter_closes),
		T(test_connect_refused),
		cmocka_unit_test_setup_teardown(test_inet, setup_inet, teardown),
		T(test_garbage),
		T(test_unsolicited),
		T(test_eom_mods),
		T(test_mod_not_negotiated),
		T(test_largest_packet),
		T(test_mod_hold_resume),
		T(test_abort_waiting),
		T(test_abort_idle),
		T(test_abort_held),
		T(test_free_quit),
#undef T
	};
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

	/* Every log line is formatted (debug included) and thrown away;
	 * TEST_MILTER_LOG=1 shows them. */
	mt_log_init("test-milter-client", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(MT_LOG_DEBUG);
	if (getenv("TEST_MILTER_LOG") == NULL && devnull >= 0)
		mt_log_redirect_fd(devnull);
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	if (devnull >= 0) {
		mt_log_redirect_fd(-1);
		close(devnull);
	}
	return failed;
}
