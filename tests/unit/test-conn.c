/* test-conn.c — unit tests for lib-mail/conn.c, the connection core under
 * the session types, on a real event loop with socketpairs as peers: a
 * line-echo tier gets its input whole and a byte at a time; "close once
 * written" delivers the last reply, then EOF, with ops->closed once and
 * ops->free only after the closing callback returned; the idle timer
 * writes the goodbye and closes, but restarts while the tier says it is
 * busy; a new idle period takes effect; the total-session timer ends a
 * session that keeps talking; a tier that takes the bufferevent keeps the
 * session alive by touching it and its silence still ends it; the peer's
 * EOF reaches ops->eof; the session
 * list counts, visits and closes every session, and ops->closed sees the
 * list without the closing one. Every close's outcome reaches ops->closed
 * (mt_conn_outcome): the one given, "timeout" for the core's own timers
 * even when the tier's goodbye closes with another, the first decision
 * when a closing session is closed again, "shutdown" for close-all; the
 * outcome names are the metrics' label values. The quiet notice: a
 * session that keeps talking never goes quiet, a silent one does after
 * its period (once), is active again at its next byte (through the core's
 * read or a taken bufferevent's mt_conn_touch), quiet again after another
 * period, and is reported active before ops->closed or when the notice is
 * turned off. TCP_QUICKACK (#37 item 19), on a loopback TCP connection: a
 * session whose socket is in delayed-ACK (pingpong) mode leaves it only
 * once the reply queued with mt_conn_quickack() has been written (Linux
 * would enter it again at that write), and a socket with nothing queued
 * leaves it at once. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "buf.h"
#include "conn.h"
#include "lineio.h"
#include "loop.h"
#include "test-peer.h"

struct echo {
	struct mt_conn conn;
	struct mt_line_reader reader;
	struct mt_buf line;
	unsigned int lines, eofs, idles, busy_left, closed, visits, lifetimes;
	unsigned int list_count_at_close;
	bool eof_error;
	const char *reason;
	enum mt_conn_outcome outcome;	/* as ops->closed read it */
	bool *freed;		/* set by ops->free */
	bool closing_inside;	/* closing from inside ops->input */
	struct bufferevent *taken;	/* mt_conn_take_bev(): the relay's now */
	unsigned int relayed;		/* reads on the taken bufferevent */
	unsigned int quiet_on, quiet_off;	/* ops->quiet(true), (false) */
	bool quiet_at_close;		/* quiet when ops->closed ran */
};

static struct echo *owner(struct mt_conn *conn)
{
	return MT_CONN_OWNER(conn, struct echo, conn);
}

static void echo_input(struct mt_conn *conn)
{
	struct echo *e = owner(conn);
	const char *error;
	while (!mt_conn_is_closing(conn)) {
		enum mt_line_status st = mt_line_read(&e->reader, mt_conn_input(conn),
						      &e->line, &error);
		if (st == MT_LINE_NEED_MORE)
			return;
		e->lines++;
		if (strcmp(mt_buf_cstr(&e->line), "QUIT") == 0) {
			evbuffer_add_printf(mt_conn_output(conn), "bye\r\n");
			mt_conn_close_after(conn, MT_OUTCOME_QUIT, "quit");
		} else if (strcmp(mt_buf_cstr(&e->line), "DIE") == 0) {
			mt_conn_close(conn, MT_OUTCOME_ERROR, "die");
			/* Still here: the free waits for the loop. */
			e->closing_inside = !*e->freed;
			return;
		} else
			evbuffer_add_printf(mt_conn_output(conn), "got %s\r\n",
					    mt_buf_cstr(&e->line));
		e->line.len = 0;
	}
}

static void echo_eof(struct mt_conn *conn, bool error)
{
	struct echo *e = owner(conn);
	e->eofs++;
	e->eof_error = error;
	mt_conn_close(conn, error ? MT_OUTCOME_ERROR : MT_OUTCOME_CLIENT_CLOSED, "eof");
}

static bool echo_busy(struct mt_conn *conn)
{
	struct echo *e = owner(conn);
	if (e->busy_left == 0)
		return false;
	e->busy_left--;
	return true;
}

static void echo_idle(struct mt_conn *conn)
{
	struct echo *e = owner(conn);
	e->idles++;
	if (e->taken != NULL) {
		/* A relay says nothing; the core said why already. */
		mt_conn_close(conn, MT_OUTCOME_ERROR, "idle-relay");
		return;
	}
	evbuffer_add_printf(mt_conn_output(conn), "idle\r\n");
}

static void echo_closed(struct mt_conn *conn, const char *reason)
{
	struct echo *e = owner(conn);
	e->closed++;
	e->reason = reason;
	e->outcome = mt_conn_outcome(conn);
	e->quiet_at_close = e->quiet_on != e->quiet_off;
	e->list_count_at_close = conn->list->count;
	if (e->taken != NULL) {
		assert_null(conn->bev);	/* the tier's to free */
		bufferevent_free(e->taken);
		e->taken = NULL;
	} else {
		assert_non_null(conn->bev);	/* still there for the tier */
	}
}

static void echo_free(struct mt_conn *conn)
{
	struct echo *e = owner(conn);
	*e->freed = true;
	mt_buf_free(&e->line);
	/* The struct stays for the test to read; it frees it. */
}

static void echo_lifetime(struct mt_conn *conn)
{
	struct echo *e = owner(conn);
	e->lifetimes++;
	evbuffer_add_printf(mt_conn_output(conn), "time is up\r\n");
}

static void echo_quiet(struct mt_conn *conn, bool quiet)
{
	struct echo *e = owner(conn);
	/* Alternating, starting with true. */
	assert_int_equal(quiet, e->quiet_on == e->quiet_off);
	if (quiet)
		e->quiet_on++;
	else
		e->quiet_off++;
}

static const struct mt_conn_ops echo_ops = {
	.input = echo_input, .eof = echo_eof, .busy = echo_busy,
	.idle_timeout = echo_idle, .session_timeout = echo_lifetime,
	.quiet = echo_quiet, .closed = echo_closed, .free = echo_free,
};

struct fixture {
	struct mt_loop *loop;
	struct mt_conn_list list;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *error;
	f->loop = mt_loop_new(&error);
	assert_non_null(f->loop);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	mt_loop_free(&f->loop);
	free(f);
	return 0;
}

static void spin(struct fixture *f, int rounds)
{
	for (int i = 0; i < rounds; i++)
		event_base_loop(mt_loop_base(f->loop), EVLOOP_NONBLOCK);
}

/* A session on one end of a socketpair; *peer_r is the other end. */
static struct echo *echo_new(struct fixture *f, bool *freed, unsigned int idle_ms,
			     int *peer_r)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	struct echo *e = calloc(1, sizeof(*e));
	e->freed = freed;
	*freed = false;
	mt_line_reader_init(&e->reader, 64, MT_LINE_ACCEPT_LF);
	struct bufferevent *bev = bufferevent_socket_new(mt_loop_base(f->loop), sv[0],
							 BEV_OPT_CLOSE_ON_FREE);
	assert_non_null(bev);
	mt_conn_start(&e->conn, &f->list, f->loop, bev, &echo_ops, idle_ms, 4096, 0);
	*peer_r = sv[1];
	return e;
}

/* Let the loop run (and, if talk, keep writing a line) until the session
 * closes the peer's end or about half a second has passed; true on EOF. */
static bool wait_for_eof(struct fixture *f, int peer, bool talk, struct mt_buf *got)
{
	bool eof = false;
	for (int i = 0; i < 100 && !eof; i++) {
		if (talk) {
			ssize_t n = write(peer, "x\r\n", 3);
			(void)n;
		}
		usleep(5000);
		spin(f, 2);
		eof = test_peer_read(peer, got);
	}
	return eof;
}

static void test_input_and_close_after(void **state)
{
	struct fixture *f = *state;
	bool freed;
	int peer;
	struct echo *e = echo_new(f, &freed, 60000, &peer);
	assert_int_equal(f->list.count, 1);
	const char input[] = "one\r\ntwo\nQUIT\r\nthree\r\n";
	/* A byte at a time: lines come whole all the same. */
	size_t quit_end = strstr(input, "QUIT\r\n") - input + 6;
	for (size_t i = 0; i < sizeof(input) - 1; i++) {
		ssize_t n = write(peer, input + i, 1);
		/* After QUIT the session may be gone (EPIPE). */
		assert_true(n == 1 || (i >= quit_end && errno == EPIPE));
		spin(f, 2);
	}
	spin(f, 5);
	struct mt_buf got = MT_BUF_INIT;
	assert_true(test_peer_read(peer, &got));	/* closed once "bye" was out */
	assert_string_equal(mt_buf_cstr(&got), "got one\r\ngot two\r\nbye\r\n");
	assert_int_equal(e->lines, 3);		/* nothing after QUIT is read */
	assert_int_equal(e->closed, 1);
	assert_string_equal(e->reason, "quit");
	assert_int_equal(e->outcome, MT_OUTCOME_QUIT);
	assert_true(freed);
	assert_int_equal(f->list.count, 0);
	assert_null(f->list.head);
	mt_buf_free(&got);
	close(peer);
	free(e);
}

static void test_close_inside_a_callback(void **state)
{
	struct fixture *f = *state;
	bool freed;
	int peer;
	struct echo *e = echo_new(f, &freed, 60000, &peer);
	assert_int_equal(write(peer, "DIE\r\n", 5), 5);
	spin(f, 1);
	assert_true(e->closing_inside);		/* not freed inside the callback */
	spin(f, 2);
	assert_true(freed);
	assert_int_equal(e->closed, 1);
	assert_true(mt_conn_is_closed(&e->conn));
	mt_conn_close(&e->conn, MT_OUTCOME_LIMIT, "again");	/* idempotent */
	mt_conn_close_after(&e->conn, MT_OUTCOME_LIMIT, "again");
	assert_int_equal(e->closed, 1);
	assert_string_equal(e->reason, "die");
	assert_int_equal(e->outcome, MT_OUTCOME_ERROR);
	assert_int_equal(mt_conn_outcome(&e->conn), MT_OUTCOME_ERROR);
	struct mt_buf got = MT_BUF_INIT;
	assert_true(test_peer_read(peer, &got));
	mt_buf_free(&got);
	close(peer);
	free(e);
}

static void test_idle_busy_and_eof(void **state)
{
	struct fixture *f = *state;
	bool freed;
	int peer;
	/* Busy twice: the goodbye comes after three idle periods. */
	struct echo *e = echo_new(f, &freed, 30, &peer);
	e->busy_left = 2;
	struct mt_buf got = MT_BUF_INIT;
	assert_true(wait_for_eof(f, peer, false, &got));
	assert_int_equal(e->busy_left, 0);
	assert_int_equal(e->idles, 1);
	assert_string_equal(mt_buf_cstr(&got), "idle\r\n");
	assert_string_equal(e->reason, "idle-timeout");
	assert_int_equal(e->outcome, MT_OUTCOME_TIMEOUT);
	assert_true(freed);
	close(peer);
	free(e);

	/* The peer closes: ops->eof, not an error. */
	mt_buf_reset(&got);
	e = echo_new(f, &freed, 60000, &peer);
	assert_int_equal(write(peer, "x\r\n", 3), 3);
	spin(f, 2);
	shutdown(peer, SHUT_WR);
	spin(f, 4);
	assert_int_equal(e->eofs, 1);
	assert_false(e->eof_error);
	assert_string_equal(e->reason, "eof");
	assert_int_equal(e->outcome, MT_OUTCOME_CLIENT_CLOSED);
	assert_true(freed);
	(void)test_peer_read(peer, &got);
	assert_string_equal(mt_buf_cstr(&got), "got x\r\n");
	mt_buf_free(&got);
	close(peer);
	free(e);
}

/* A shorter idle period from now on; then a session that never idles
 * still ends at its lifetime. */
static void test_idle_period_and_lifetime(void **state)
{
	struct fixture *f = *state;
	bool freed;
	int peer;
	struct mt_buf got = MT_BUF_INIT;
	struct echo *e = echo_new(f, &freed, 60000, &peer);
	mt_conn_set_idle(&e->conn, 20);
	assert_true(wait_for_eof(f, peer, false, &got));
	assert_int_equal(e->idles, 1);
	assert_string_equal(e->reason, "idle-timeout");
	assert_int_equal(e->outcome, MT_OUTCOME_TIMEOUT);
	close(peer);
	free(e);

	mt_buf_reset(&got);
	e = echo_new(f, &freed, 60000, &peer);
	mt_conn_set_lifetime(&e->conn, 80);
	assert_true(wait_for_eof(f, peer, true, &got));	/* talking, never idle */
	assert_int_equal(e->lifetimes, 1);
	assert_int_equal(e->idles, 0);
	assert_string_equal(e->reason, "session-time");
	assert_int_equal(e->outcome, MT_OUTCOME_TIMEOUT);
	assert_non_null(strstr(mt_buf_cstr(&got), "time is up\r\n"));
	assert_true(e->lines > 3);
	assert_int_equal(e->list_count_at_close, 0);
	assert_true(freed);
	mt_buf_free(&got);
	close(peer);
	free(e);
}

/* The relay's read callback on the taken bufferevent. */
static void relay_read(struct bufferevent *bev, void *arg)
{
	struct echo *e = arg;
	evbuffer_drain(bufferevent_get_input(bev),
		       evbuffer_get_length(bufferevent_get_input(bev)));
	e->relayed++;
	mt_conn_touch(&e->conn);
}

/* A tier takes the bufferevent over (the MMP's relay): the session stays
 * on its list; the idle timer, lazily, sees only mt_conn_touch() as
 * activity, so a talking peer keeps it open past many periods and a
 * silent one ends it; a lifetime set to 0 is cancelled; closing leaves
 * the bufferevent to ops->closed. */
static void test_take_bev(void **state)
{
	struct fixture *f = *state;
	bool freed;
	int peer;
	struct mt_buf got = MT_BUF_INIT;
	struct echo *e = echo_new(f, &freed, 40, &peer);
	mt_conn_set_lifetime(&e->conn, 30);
	mt_conn_set_lifetime(&e->conn, 0);
	e->taken = mt_conn_take_bev(&e->conn);
	assert_non_null(e->taken);
	assert_null(e->conn.bev);
	bufferevent_setcb(e->taken, relay_read, NULL, NULL, e);
	bufferevent_enable(e->taken, EV_READ);

	for (int i = 0; i < 40; i++) {	/* 200 ms of talk, 5 idle periods */
		assert_int_equal(write(peer, "x", 1), 1);
		usleep(5000);
		spin(f, 2);
	}
	assert_int_equal(e->idles, 0);
	assert_int_equal(e->lifetimes, 0);
	assert_int_equal(e->closed, 0);
	assert_int_equal(f->list.count, 1);
	assert_true(e->relayed > 10);
	/* Silent now: the idle timer ends it, the taken bufferevent goes. */
	assert_true(wait_for_eof(f, peer, false, &got));
	assert_int_equal(e->idles, 1);
	assert_int_equal(e->closed, 1);
	assert_string_equal(e->reason, "idle-relay");
	assert_int_equal(e->outcome, MT_OUTCOME_TIMEOUT);	/* the core's */
	assert_null(e->taken);
	assert_int_equal(f->list.count, 0);
	spin(f, 2);
	assert_true(freed);
	mt_buf_free(&got);
	close(peer);
	free(e);
}

static void visit(struct mt_conn *conn)
{
	owner(conn)->visits++;
	if (owner(conn)->visits == 1 && owner(conn)->lines == 0)
		mt_conn_close(conn, MT_OUTCOME_LIMIT, "visited");	/* a visit may close it */
}

static void test_list(void **state)
{
	struct fixture *f = *state;
	enum { N = 5 };
	bool freed[N];
	int peers[N];
	struct echo *e[N];
	for (int i = 0; i < N; i++)
		e[i] = echo_new(f, &freed[i], 60000, &peers[i]);
	assert_int_equal(f->list.count, N);
	/* Two have said something: the visit leaves them open. */
	assert_int_equal(write(peers[1], "a\r\n", 3), 3);
	assert_int_equal(write(peers[3], "b\r\n", 3), 3);
	spin(f, 3);
	mt_conn_list_each(&f->list, visit);
	for (int i = 0; i < N; i++)
		assert_int_equal(e[i]->visits, 1);
	assert_int_equal(f->list.count, 2);
	mt_conn_list_close_all(&f->list, "shutdown");
	assert_int_equal(f->list.count, 0);
	spin(f, 2);
	for (int i = 0; i < N; i++) {
		assert_true(freed[i]);
		assert_int_equal(e[i]->closed, 1);
		assert_string_equal(e[i]->reason, i == 1 || i == 3 ? "shutdown" : "visited");
		assert_int_equal(e[i]->outcome, i == 1 || i == 3 ? MT_OUTCOME_SHUTDOWN :
				 MT_OUTCOME_LIMIT);
		close(peers[i]);
		free(e[i]);
	}
}

/* Closing while the goodbye waits for a peer that does not read: a later
 * close (a write error, the flush bound) keeps the first outcome. */
static void test_first_outcome_kept(void **state)
{
	struct fixture *f = *state;
	bool freed;
	int peer;
	struct echo *e = echo_new(f, &freed, 60000, &peer);
	static char big[1 << 20];
	memset(big, 'x', sizeof(big));
	evbuffer_add(mt_conn_output(&e->conn), big, sizeof(big));
	spin(f, 3);
	assert_true(mt_conn_output_pending(&e->conn) > 0);	/* more than the socket takes */
	mt_conn_close_after(&e->conn, MT_OUTCOME_LIMIT, "errors");
	assert_false(mt_conn_is_closed(&e->conn));
	mt_conn_close_after(&e->conn, MT_OUTCOME_QUIT, "quit");	/* closing already */
	mt_conn_close(&e->conn, MT_OUTCOME_ERROR, "write failed");
	assert_int_equal(e->closed, 1);
	assert_string_equal(e->reason, "write failed");
	assert_int_equal(e->outcome, MT_OUTCOME_LIMIT);
	spin(f, 2);
	assert_true(freed);
	close(peer);
	free(e);
}

/* Spin the loop for about ms milliseconds. */
static void spin_for(struct fixture *f, unsigned int ms)
{
	for (unsigned int i = 0; i < ms / 5; i++) {
		usleep(5000);
		spin(f, 2);
	}
}

static void test_quiet(void **state)
{
	struct fixture *f = *state;
	bool freed;
	int peer;
	struct echo *e = echo_new(f, &freed, 60000, &peer);
	mt_conn_set_quiet(&e->conn, 60);
	/* Talking (a line every 10 ms for 300 ms): never quiet. */
	for (int i = 0; i < 30; i++) {
		assert_int_equal(write(peer, "x\r\n", 3), 3);
		spin_for(f, 10);
	}
	assert_int_equal(e->quiet_on, 0);
	/* Silent: quiet once, however long. */
	spin_for(f, 250);
	assert_int_equal(e->quiet_on, 1);
	assert_int_equal(e->quiet_off, 0);
	/* A byte: active again at once; silent again: quiet again. */
	assert_int_equal(write(peer, "y\r\n", 3), 3);
	spin(f, 2);
	assert_int_equal(e->quiet_off, 1);
	spin_for(f, 250);
	assert_int_equal(e->quiet_on, 2);
	/* Turned off while quiet: reported active, no more notices. */
	mt_conn_set_quiet(&e->conn, 0);
	assert_int_equal(e->quiet_off, 2);
	spin_for(f, 150);
	assert_int_equal(e->quiet_on, 2);

	/* A taken bufferevent (the MMP's relay): mt_conn_touch is the
	 * activity; a session quiet at its close is reported active first. */
	mt_conn_set_quiet(&e->conn, 60);
	e->taken = mt_conn_take_bev(&e->conn);
	bufferevent_setcb(e->taken, relay_read, NULL, NULL, e);
	bufferevent_enable(e->taken, EV_READ);
	spin_for(f, 250);
	assert_int_equal(e->quiet_on, 3);
	assert_int_equal(write(peer, "z", 1), 1);
	spin(f, 2);
	assert_int_equal(e->relayed, 1);
	assert_int_equal(e->quiet_off, 3);
	spin_for(f, 250);
	assert_int_equal(e->quiet_on, 4);
	mt_conn_close(&e->conn, MT_OUTCOME_CLIENT_CLOSED, "gone");
	assert_int_equal(e->quiet_off, 4);
	assert_false(e->quiet_at_close);
	spin(f, 2);
	assert_true(freed);
	close(peer);
	free(e);
}

/* The label values: every outcome named, [a-z_], no two alike. */
/* A TCP connection on loopback: *server_r and *client_r. */
static void tcp_pair(int *server_r, int *client_r)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sin, &len), 0);
	*client_r = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*client_r, (struct sockaddr *)&sin, sizeof(sin)), 0);
	*server_r = accept(l, NULL, NULL);
	assert_true(*server_r >= 0);
	close(l);
}

/* Linux reads TCP_QUICKACK back as "not in delayed-ACK (pingpong) mode". */
static int quickack_mode(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);
	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &v, &len), 0);
	return v;
}

static void test_quickack(void **state)
{
	struct fixture *f = *state;
	struct mt_buf got = MT_BUF_INIT;
	bool freed;
	int fd, peer, zero = 0;

	tcp_pair(&fd, &peer);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	fcntl(peer, F_SETFL, O_NONBLOCK);
	struct echo *e = calloc(1, sizeof(*e));
	e->freed = &freed;
	freed = false;
	mt_line_reader_init(&e->reader, 64, MT_LINE_ACCEPT_LF);
	struct bufferevent *bev = bufferevent_socket_new(mt_loop_base(f->loop), fd,
							 BEV_OPT_CLOSE_ON_FREE);
	assert_non_null(bev);
	mt_conn_start(&e->conn, &f->list, f->loop, bev, &echo_ops, 10000, 4096, 0);

	/* Queued, not yet written: the mode is left only after the write. */
	assert_int_equal(setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero)), 0);
	assert_int_equal(quickack_mode(fd), 0);
	evbuffer_add_printf(mt_conn_output(&e->conn), "+ Ready for literal data\r\n");
	mt_conn_quickack(&e->conn);
	assert_int_equal(quickack_mode(fd), 0);
	for (int i = 0; i < 100 && got.len == 0; i++) {
		spin(f, 2);
		test_peer_read(peer, &got);
		if (got.len == 0)
			usleep(2000);
	}
	assert_string_equal(mt_buf_cstr(&got), "+ Ready for literal data\r\n");
	assert_int_equal(quickack_mode(fd), 1);

	/* Nothing queued: at once. */
	assert_int_equal(setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero)), 0);
	mt_conn_quickack(&e->conn);
	assert_int_equal(quickack_mode(fd), 1);
	/* A socket of no session. */
	assert_int_equal(setsockopt(peer, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero)), 0);
	assert_true(mt_conn_quickack_fd(peer));
	assert_int_equal(quickack_mode(peer), 1);
	assert_false(mt_conn_quickack_fd(-1));

	mt_conn_close(&e->conn, MT_OUTCOME_QUIT, "done");
	spin(f, 2);
	assert_true(freed);
	free(e);	/* echo_free leaves the struct to the test */
	close(peer);
	mt_buf_free(&got);
}

static void test_outcome_names(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < MT_OUTCOME_COUNT; i++) {
		const char *name = mt_conn_outcome_names[i];
		assert_non_null(name);
		assert_true(name[0] != '\0');
		assert_int_equal(strspn(name, "abcdefghijklmnopqrstuvwxyz_"), strlen(name));
		for (unsigned int j = 0; j < i; j++)
			assert_string_not_equal(name, mt_conn_outcome_names[j]);
	}
	assert_string_equal(mt_conn_outcome_names[MT_OUTCOME_QUIT], "quit");
	assert_string_equal(mt_conn_outcome_names[MT_OUTCOME_CLIENT_CLOSED], "client_closed");
	assert_string_equal(mt_conn_outcome_names[MT_OUTCOME_TIMEOUT], "timeout");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);	/* as the daemons (mt_loop_handle_signals) */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_input_and_close_after, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_inside_a_callback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_busy_and_eof, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_period_and_lifetime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_bev, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_outcome_kept, setup, teardown),
		cmocka_unit_test(test_outcome_names),
		cmocka_unit_test_setup_teardown(test_quiet, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quickack, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
