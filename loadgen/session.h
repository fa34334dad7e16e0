/* session.h — what the SMTP and POP3 client sessions share: one outbound
 * TCP connection (a libevent bufferevent), a CRLF line reader for the
 * server's replies, per-step timing with a step timeout, and the one way a
 * session ends (success, or failure with an error kind). The protocol
 * specific parts (smtp-client.c, pop-client.c) embed struct lg_session first
 * and drive it from their command tables.
 *
 * Trust boundary: everything read from the connection comes from the system
 * under test and is untrusted: a reply that cannot be parsed is a protocol
 * error, a close is a disconnect, silence is a timeout, a refused connect is
 * a connect error. None of them may crash or hang the generator: each step
 * is bounded in time and each loop over server data in count. */
#ifndef LG_SESSION_H
#define LG_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "buf.h"
#include "lineio.h"
#include "resolve.h"
#include "log.h"
#include "stats.h"
#include "tracker.h"
#include "workload.h"

struct event_base;
struct bufferevent;
struct event;
struct lg_session;
struct lg_ledger;
struct mt_tls;

/* What every session of a run shares. */
struct lg_session_env {
	struct event_base *base;
	const struct lg_workload *wl;
	struct lg_tracker *tracker;	/* NULL: no delivery tracking */
	struct lg_ledger *ledger;	/* NULL: no ledger (ledger.h) */
	unsigned int step_timeout_ms;	/* a step unanswered for this long fails */
	/* A connect unanswered for this long goes on to the service's next
	 * address, when it has several (0: only the step timeout). */
	unsigned int connect_timeout_ms;
	const char *helo_name;		/* our EHLO argument */
	/* The generator's one client TLS context, for SMTP and IMAP alike
	 * (no verification: the system under test's certificate is its own
	 * business, RFC 7435); NULL: no TLS. */
	struct mt_tls *tls;
	/* --tls: STARTTLS in every SMTP session (after EHLO, RFC 3207) and
	 * every IMAP session on a plain port (before the login). */
	bool starttls;
	bool imap_implicit_tls;		/* IMAP: TLS from the start (993) */
	/* A desktop client replied to a message: submit the reply by SMTP
	 * (its steps and counts into stats). NULL: no submission. */
	void (*submit_reply)(void *context, struct lg_stats *stats,
			     const struct lg_message_plan *plan);
	void *submit_context;
};

typedef void lg_session_done_cb(struct lg_session *session, void *context);

struct lg_session_proto {
	const char *name;
	/* New input is in the connection's input buffer. */
	void (*input)(struct lg_session *session);
	/* The output buffer drained below the low watermark (may be NULL). */
	void (*drained)(struct lg_session *session);
	/* Free the protocol part (the base is freed by lg_session_free). */
	void (*destroy)(struct lg_session *session);
};

struct lg_session {
	const struct lg_session_proto *proto;
	const struct lg_session_env *env;
	enum lg_kind kind;
	bool probe;			/* a probe send/poll: not in the tables */
	struct lg_stats *stats;		/* steps, session and error counts */
	struct lg_stats *delivery_stats; /* delivery times of what it sends */
	lg_session_done_cb *done;
	void *done_context;
	struct mt_logctx log;

	struct bufferevent *bev;
	struct event *timer;
	/* The service's addresses (resolve.h): the one tried first, how many
	 * after it, and the timer of one connect when there are several. */
	struct lg_addrs *addrs;
	unsigned int addr_first, addr_tried;
	bool connect_tls, connected;
	struct event *connect_timer;
	struct mt_line_reader reader;
	struct mt_buf line;		/* the reply line being handled */

	enum lg_function step;		/* the step being timed */
	bool step_open;
	uint64_t step_start_us;
	uint64_t started_us;

	bool finished;
	bool failed;
	enum lg_error error;
	char detail[160];

	struct lg_session *prev, *next;	/* for the owner's list */
};

/* Monotonic microseconds. */
static inline uint64_t lg_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#define LG_REPLY_LINE_MAX 4096	/* our tolerance for one reply line */

/* Set up the base and count the session as attempted in stats. */
void lg_session_init(struct lg_session *session,
		     const struct lg_session_proto *proto,
		     const struct lg_session_env *env, enum lg_kind kind,
		     struct lg_stats *stats, lg_session_done_cb *done,
		     void *done_context);
/* Connect to one of addrs and begin the connect step (fn): the address
 * whose turn it is, then, while a connect fails (refused, unreachable, or
 * unanswered for env->connect_timeout_ms), the next ones; the step's time
 * is all of it. A connect that fails at once to every address ends the
 * session (done is called before this returns). */
void lg_session_connect(struct lg_session *session, struct lg_addrs *addrs,
			enum lg_function fn);
/* The same over TLS from the first octet (env->tls; implicit TLS). */
void lg_session_connect_tls(struct lg_session *session, struct lg_addrs *addrs,
			    enum lg_function fn);
/* STARTTLS: the plaintext answer has been read and nothing of ours is
 * queued; go on over TLS on the same connection (whatever the server sent
 * after its answer in plaintext is dropped). false: the session has failed. */
bool lg_session_starttls(struct lg_session *session);
/* Begin a timed step: one attempt, start the clock and the step timeout. */
void lg_session_step_begin(struct lg_session *session, enum lg_function fn);
/* The step's answer arrived: record its time; ok = the expected answer. */
void lg_session_step_end(struct lg_session *session, bool ok);
/* The connection's buffers. */
struct evbuffer *lg_session_input(struct lg_session *session);
struct evbuffer *lg_session_output(struct lg_session *session);
/* Append a command line (CRLF added). */
void lg_session_send(struct lg_session *session, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Read one reply line into session->line. true: a line is there; false:
 * wait for more input, or the session has failed (check ->finished). */
bool lg_session_read_line(struct lg_session *session);

/* End the session as failed: the open step stays an attempt without a pass,
 * the error is counted, the connection closed, done called. */
void lg_session_fail(struct lg_session *session, enum lg_error error,
		     const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* End the session successfully. */
void lg_session_finish(struct lg_session *session);
/* Free a finished session (never from inside its own callbacks: the owner
 * frees it from the loop afterwards). */
void lg_session_free(struct lg_session **session_p);

#endif
