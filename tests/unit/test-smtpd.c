/* test-smtpd.c — unit tests for lib-mail/smtpd.c and smtpd-content.c, the
 * SMTP/LMTP server session engine, on a real event loop with a socketpair
 * as the client. A small tier (its own command table and hooks, as the
 * MTA's and the store's) receives: pipelined commands fed a byte at a
 * time, answered in order with the counters in the summary; DATA
 * dot-decoded and handed over in pieces, with back-pressure while the
 * tier does not take a piece (nothing more is decoded, the idle timer
 * does not run down) and the rest at the end; flagged content (a NUL)
 * read to its end but not handed over; BDAT chunks across writes, and a
 * refused one read and discarded; a command that waits holds the
 * pipelined ones back until its completion; bad lines reach the tier with
 * their status; a penalty-delayed reply comes after its delay with no
 * command run meanwhile; the idle timeout; the last reply then close,
 * with the outcome each path gives (the 221 to QUIT "quit", the junk
 * limit's 421 "limit", the idle timeout's 421 "timeout"; the log's
 * reason "done" for all three). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "buf.h"
#include "clock.h"
#include "loop.h"
#include "smtpd.h"
#include "test-peer.h"

/* The tier under test */

struct sink {
	struct mt_smtpd smtpd;
	struct mt_logctx log;
	struct mt_buf content;		/* what the tier took, in order */
	unsigned int pieces, refuse_pieces, data_ends, bdat_ends, bad_lines;
	enum mt_line_status bad_status;
	bool bad_error_null;
	enum mt_dot_result verdict;
	bool waiting;			/* a WAIT command is pending */
	bool closed;
	const char *reason;
	enum mt_conn_outcome outcome;
	bool *freed;
	struct mt_buf summary;
};

#define SINK(d) MT_SMTPD_OWNER(d, struct sink, smtpd)

enum { CMD_NOOP, CMD_MAIL, CMD_DATA, CMD_BDAT, CMD_WAIT, CMD_SLOW, CMD_QUIT };
static const struct mt_command_def sink_defs[] = {
	[CMD_NOOP] = { "NOOP", MT_CMD_JUNK }, [CMD_MAIL] = { "MAIL", 0 },
	[CMD_DATA] = { "DATA", MT_CMD_GROUP_END }, [CMD_BDAT] = { "BDAT", 0 },
	[CMD_WAIT] = { "WAIT", 0 }, [CMD_SLOW] = { "SLOW", 0 },
	[CMD_QUIT] = { "QUIT", MT_CMD_GROUP_END },
};
static const struct mt_command_table sink_table = MT_COMMAND_DEFS(sink_defs);

static void sink_greet(struct mt_smtpd *d)
{
	mt_smtpd_reply(d, 220, "test ready");
}

static void sink_gate(struct mt_smtpd *d, struct mt_command_gate *gate)
{
	(void)d;
	gate->max_junk = 3;
}

static void sink_run(struct mt_smtpd *d, unsigned int index, const char *arg)
{
	struct sink *k = SINK(d);
	switch (index) {
	case CMD_NOOP:
	case CMD_MAIL:
		mt_smtpd_reply(d, 250, "ok %s", sink_defs[index].name);
		break;
	case CMD_DATA:
		mt_smtpd_reply(d, 354, "go");
		mt_smtpd_data_begin(d, 1000, 0);
		break;
	case CMD_BDAT: {
		/* "BDAT n" or "BDAT n LAST"; "BDAT n BAD" is refused. */
		char *end;
		unsigned long long n = strtoull(arg, &end, 10);
		mt_smtpd_bdat_chunk(d, n, strcmp(end, " LAST") == 0,
				    strcmp(end, " BAD") == 0, 1000);
		break;
	}
	case CMD_WAIT:
		k->waiting = true;
		mt_smtpd_enter_state(d, MT_SMTPD_WAIT);
		break;
	case CMD_SLOW:
		assert_true(mt_smtpd_reply_delayed(d, 60, 550, "slow no"));
		break;
	case CMD_QUIT:
		mt_smtpd_finish(d, MT_OUTCOME_QUIT, 221, "bye");
		break;
	}
}

static void sink_refuse(struct mt_smtpd *d, enum mt_command_verdict verdict,
			const struct mt_command_call *call, const char *line)
{
	(void)call;
	(void)line;
	if (verdict == MT_COMMAND_TOO_MUCH_JUNK)
		mt_smtpd_finish(d, MT_OUTCOME_LIMIT, 421, "junk");
	else
		mt_smtpd_reply(d, 500, "unknown");
}

static void sink_bad_line(struct mt_smtpd *d, enum mt_line_status status,
			  const char *error)
{
	struct sink *k = SINK(d);
	k->bad_lines++;
	k->bad_status = status;
	k->bad_error_null = error == NULL;
	mt_smtpd_reply(d, 500, "bad line");
}

static bool sink_content(struct mt_smtpd *d)
{
	struct sink *k = SINK(d);
	/* A piece is handed over only once it is full. */
	assert_true(d->content.body.len >= d->set->piece_size);
	if (k->refuse_pieces > 0) {
		k->refuse_pieces--;
		return false;
	}
	k->pieces++;
	mt_buf_append(&k->content, d->content.body.data, d->content.body.len);
	mt_buf_reset(&d->content.body);
	return true;
}

static void sink_data_end(struct mt_smtpd *d, enum mt_dot_result verdict,
			  const char *error)
{
	struct sink *k = SINK(d);
	(void)error;
	k->data_ends++;
	k->verdict = verdict;
	mt_buf_append(&k->content, d->content.body.data, d->content.body.len);
	mt_smtpd_reply(d, verdict == MT_DOT_RESULT_OK ? 250 : 550, "data %llu",
		       (unsigned long long)mt_smtpd_content_size(d));
	mt_smtpd_content_reset(d);
}

static void sink_bdat_end(struct mt_smtpd *d)
{
	struct sink *k = SINK(d);
	k->bdat_ends++;
	if (d->content.bdat_discard) {
		mt_smtpd_reply(d, 503, "refused chunk");
		return;
	}
	if (!d->content.bdat_last) {
		mt_smtpd_reply(d, 250, "chunk %llu", (unsigned long long)d->content.bdat_size);
		return;
	}
	k->verdict = mt_smtpd_bdat_finish(d, 0);
	mt_buf_append(&k->content, d->content.body.data, d->content.body.len);
	mt_smtpd_reply(d, 250, "bdat %llu", (unsigned long long)mt_smtpd_content_size(d));
	mt_smtpd_content_reset(d);
}

static void sink_eof(struct mt_smtpd *d, bool error)
{
	mt_smtpd_close(d, error ? MT_OUTCOME_ERROR : MT_OUTCOME_CLIENT_CLOSED, "eof");
}

static void sink_idle(struct mt_smtpd *d)
{
	mt_smtpd_finish(d, MT_OUTCOME_TIMEOUT, 421, "idle");
}

static void sink_closed(struct mt_smtpd *d, const char *reason)
{
	struct sink *k = SINK(d);
	k->closed = true;
	k->reason = reason;
	k->outcome = mt_conn_outcome(&d->conn);
	mt_commands_summary(&sink_table, &d->commands, "", &k->summary);
}

static void sink_free(struct mt_smtpd *d)
{
	*SINK(d)->freed = true;		/* the test frees the struct */
}

static const struct mt_smtpd_hooks sink_hooks = {
	.greet = sink_greet, .gate = sink_gate, .run = sink_run,
	.refuse = sink_refuse, .bad_line = sink_bad_line,
	.content = sink_content, .data_end = sink_data_end,
	.bdat_end = sink_bdat_end, .eof = sink_eof, .idle_timeout = sink_idle,
	.closed = sink_closed, .free = sink_free,
};
static const struct mt_smtpd_def sink_def = { &sink_table, &sink_hooks };

/* Fixture */

struct fixture {
	struct mt_loop *loop;
	struct mt_conn_list list;
	struct mt_smtpd_settings set;
	struct sink *sink;
	bool freed;
	int peer;
	struct mt_buf got;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *error;
	f->loop = mt_loop_new(&error);
	assert_non_null(f->loop);
	f->set = (struct mt_smtpd_settings){
		.max_line_length = 64,
		.bare_newlines = MT_DOT_BARE_REJECT, .command_timeout = 60000,
		.data_timeout = 60000, .input_high = 4096, .output_high = 65536,
		.piece_size = 16, .reject_log = MT_LOG_DEBUG, .log_prefix = "test ",
	};
	*state = f;
	return 0;
}

static void spin(void *context)
{
	struct fixture *f = context;
	for (int i = 0; i < 3; i++)
		event_base_loop(mt_loop_base(f->loop), EVLOOP_NONBLOCK);
}

static void start(struct fixture *f)
{
	int sv[2];
	assert_true(test_peer_pair(sv));
	f->sink = calloc(1, sizeof(*f->sink));
	f->sink->freed = &f->freed;
	f->freed = false;
	f->sink->smtpd.log = &f->sink->log;
	f->sink->smtpd.peer_name = "peer";
	struct bufferevent *bev = bufferevent_socket_new(mt_loop_base(f->loop), sv[0],
							 BEV_OPT_CLOSE_ON_FREE);
	assert_non_null(bev);
	mt_smtpd_start(&f->sink->smtpd, &sink_def, &f->set, &f->list, f->loop, bev, false);
	f->peer = sv[1];
	mt_buf_reset(&f->got);
	spin(f);
	(void)test_peer_read(f->peer, &f->got);
	assert_string_equal(mt_buf_cstr(&f->got), "220 test ready\r\n");
	mt_buf_reset(&f->got);
}

/* Send text (a byte at a time if bytewise); true once the session closed. */
static bool feed(struct fixture *f, const char *text, bool bytewise)
{
	return test_peer_feed(f->peer, (const uint8_t *)text, strlen(text), bytewise,
			      spin, f, &f->got);
}

static void stop(struct fixture *f)
{
	if (!f->freed) {
		mt_smtpd_close(&f->sink->smtpd, MT_OUTCOME_SHUTDOWN, "test");
		spin(f);
	}
	assert_true(f->freed);
	close(f->peer);
	mt_buf_free(&f->sink->content);
	mt_buf_free(&f->sink->summary);
	free(f->sink);
	f->sink = NULL;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	mt_buf_free(&f->got);
	mt_loop_free(&f->loop);
	free(f);
	return 0;
}

/* Tests */

static void test_pipelined_bytewise(void **state)
{
	struct fixture *f = *state;
	start(f);
	/* Dot-stuffing undone; the content is 40 octets, so two pieces of 16
	 * go over as they fill and the rest at the end. */
	const char *input = "noop\r\nMAIL x\r\nDATA\r\n"
		"..first line of the message\r\nsecond\r\n.\r\nQUIT\r\n";
	assert_true(feed(f, input, true));
	assert_string_equal(mt_buf_cstr(&f->got), "250 ok NOOP\r\n250 ok MAIL\r\n"
			    "354 go\r\n250 data 36\r\n221 bye\r\n");
	struct sink *k = f->sink;
	assert_int_equal(k->data_ends, 1);
	assert_int_equal(k->verdict, MT_DOT_RESULT_OK);
	assert_int_equal(k->pieces, 2);
	assert_string_equal(mt_buf_cstr(&k->content), ".first line of the message\r\nsecond\r\n");
	assert_true(k->closed);
	assert_string_equal(k->reason, "done");
	assert_int_equal(k->outcome, MT_OUTCOME_QUIT);
	assert_string_equal(mt_buf_cstr(&k->summary),
			    " noop=1 mail=1 data=1 quit=1 commands=4");
	stop(f);
}

static void test_back_pressure(void **state)
{
	struct fixture *f = *state;
	f->set.command_timeout = f->set.data_timeout = 40;
	start(f);
	struct sink *k = f->sink;
	k->refuse_pieces = 1000;	/* the tier takes nothing for now */
	assert_false(feed(f, "DATA\r\n0123456789abcdefghij0123456789abcdefghij\r\n.\r\nNOOP\r\n",
			  true));
	assert_true(f->sink->smtpd.content.paused);
	assert_int_equal(f->sink->smtpd.state, MT_SMTPD_DATA);
	/* Nothing more was decoded than the piece that waits. */
	assert_true(k->smtpd.content.body.len < 2 * f->set.piece_size);
	/* Waiting on the tier is not the client's idleness: no 421. */
	for (int i = 0; i < 8; i++) {
		usleep(20000);
		spin(f);
	}
	assert_false(k->closed);
	k->refuse_pieces = 0;
	mt_smtpd_resume(&k->smtpd);
	spin(f);
	(void)test_peer_read(f->peer, &f->got);
	assert_string_equal(mt_buf_cstr(&f->got), "354 go\r\n250 data 42\r\n250 ok NOOP\r\n");
	assert_string_equal(mt_buf_cstr(&k->content),
			    "0123456789abcdefghij0123456789abcdefghij\r\n");
	/* The waiting piece, then the rest (all in the input by now) at the end. */
	assert_int_equal(k->pieces, 1);
	/* Idle now: the timer runs again. */
	for (int i = 0; i < 20 && !k->closed; i++) {
		usleep(10000);
		spin(f);
	}
	assert_true(k->closed);
	assert_string_equal(k->reason, "done");
	assert_int_equal(k->outcome, MT_OUTCOME_TIMEOUT);
	(void)test_peer_read(f->peer, &f->got);
	assert_non_null(strstr(mt_buf_cstr(&f->got), "421 idle\r\n"));
	stop(f);
	f->set.command_timeout = f->set.data_timeout = 60000;
}

static void test_flagged_content_not_handed_over(void **state)
{
	struct fixture *f = *state;
	start(f);
	static const char input[] = "DATA\r\nab\0cdefghijklmnopqrstuvwxyz0123456789\r\n.\r\n";
	assert_false(test_peer_feed(f->peer, (const uint8_t *)input, sizeof(input) - 1,
				    false, spin, f, &f->got));
	struct sink *k = f->sink;
	assert_int_equal(k->data_ends, 1);
	assert_int_equal(k->verdict, MT_DOT_RESULT_NUL);
	assert_int_equal(k->pieces, 0);
	assert_int_equal(k->content.len, 0);
	assert_true(strncmp(mt_buf_cstr(&f->got), "354 go\r\n550 data ", 16) == 0);
	assert_int_equal(k->smtpd.errors, 1);	/* the 5xx counted */
	stop(f);
}

static void test_bdat(void **state)
{
	struct fixture *f = *state;
	start(f);
	struct sink *k = f->sink;
	/* A refused chunk is read whole and discarded; the next command
	 * follows its octets. */
	assert_false(feed(f, "BDAT 5 BAD\r\nhelloNOOP\r\n", false));
	assert_false(feed(f, "BDAT 20\r\n0123456789", true));
	assert_false(feed(f, "abcdefghijBDAT 5 LAST\r\nxyz\r\n", false));
	assert_string_equal(mt_buf_cstr(&f->got),
			    "503 refused chunk\r\n250 ok NOOP\r\n250 chunk 20\r\n250 bdat 25\r\n");
	assert_int_equal(k->bdat_ends, 3);
	assert_int_equal(k->pieces, 1);
	assert_int_equal(k->verdict, MT_DOT_RESULT_OK);
	assert_string_equal(mt_buf_cstr(&k->content), "0123456789abcdefghijxyz\r\n");
	stop(f);
}

static void test_wait_holds_pipelined_commands(void **state)
{
	struct fixture *f = *state;
	start(f);
	struct sink *k = f->sink;
	assert_false(feed(f, "WAIT\r\nNOOP\r\nMAIL\r\n", false));
	assert_true(k->waiting);
	assert_int_equal(f->got.len, 0);	/* NOOP not run meanwhile */
	mt_smtpd_reply(&k->smtpd, 250, "waited");
	mt_smtpd_enter_state(&k->smtpd, MT_SMTPD_COMMAND);
	mt_smtpd_resume(&k->smtpd);
	spin(f);
	(void)test_peer_read(f->peer, &f->got);
	assert_string_equal(mt_buf_cstr(&f->got), "250 waited\r\n250 ok NOOP\r\n250 ok MAIL\r\n");
	stop(f);
}

static void test_bad_lines_and_junk(void **state)
{
	struct fixture *f = *state;
	start(f);
	struct sink *k = f->sink;
	char longline[100];
	memset(longline, 'x', sizeof(longline));
	longline[sizeof(longline) - 3] = '\r';
	longline[sizeof(longline) - 2] = '\n';
	longline[sizeof(longline) - 1] = '\0';
	assert_false(feed(f, longline, false));
	assert_int_equal(k->bad_lines, 1);
	assert_true(k->bad_error_null);
	assert_false(feed(f, "NOOP\n", false));
	assert_int_equal(k->bad_lines, 2);
	assert_int_equal(k->bad_status, MT_LINE_BARE_LF);
	assert_false(k->bad_error_null);
	assert_false(feed(f, "FOO\r\n", false));
	/* The fourth junk command is one too many. */
	assert_true(feed(f, "NOOP\r\nNOOP\r\nNOOP\r\nNOOP\r\nNOOP\r\n", false));
	assert_string_equal(mt_buf_cstr(&f->got), "500 bad line\r\n500 bad line\r\n"
			    "500 unknown\r\n250 ok NOOP\r\n250 ok NOOP\r\n250 ok NOOP\r\n421 junk\r\n");
	assert_int_equal(k->smtpd.errors, 3);
	assert_true(k->closed);
	assert_string_equal(k->reason, "done");
	assert_int_equal(k->outcome, MT_OUTCOME_LIMIT);
	stop(f);
}

static void test_delayed_reply(void **state)
{
	struct fixture *f = *state;
	start(f);
	uint64_t t0 = mt_clock_ms();
	assert_false(feed(f, "SLOW\r\nNOOP\r\n", false));
	assert_int_equal(f->got.len, 0);
	assert_int_equal(f->sink->smtpd.state, MT_SMTPD_WAIT);
	while (f->got.len < 30 && mt_clock_ms() - t0 < 2000) {
		usleep(5000);
		spin(f);
		(void)test_peer_read(f->peer, &f->got);
	}
	assert_true(mt_clock_ms() - t0 >= 60);
	assert_string_equal(mt_buf_cstr(&f->got), "550 slow no\r\n250 ok NOOP\r\n");
	stop(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pipelined_bytewise, setup, teardown),
		cmocka_unit_test_setup_teardown(test_back_pressure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flagged_content_not_handed_over, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bdat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_holds_pipelined_commands, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_lines_and_junk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delayed_reply, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
