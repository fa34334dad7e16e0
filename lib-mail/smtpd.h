/* smtpd.h — the SMTP/LMTP server session engine: what the MTA's SMTP
 * server and the store's LMTP server share, once. A tier's session embeds
 * a struct mt_smtpd (which embeds lib-mail's connection core) and gives
 * the engine a definition: its settings, its command table with a run hook
 * per command, and the hooks below. The engine owns the input loop,
 * command lines (lib/lineio) and their dispatch through the command table
 * (lib-mail/command), replies and their counters, the protocol states and
 * their timeouts, a penalty-delayed reply, the switch to TLS (STARTTLS and
 * implicit TLS), and message content: DATA through lib/dotcodec and BDAT
 * chunks through lib-mail/smtp-content, handed to the tier in pieces with
 * back-pressure. The tier owns the envelope commands and what a message
 * becomes (the MTA's queue, the store's mailboxes).
 *
 *   input ─► line ─► gate hook ─► mt_command_check ─► run hook (handler)
 *                                                 └─► refuse hook (verdict)
 *   DATA:  handler replies 354, mt_smtpd_data_begin ─► decoded pieces ─►
 *          content hook (take it, or not yet: mt_smtpd_resume later) ─►
 *          at CRLF.CRLF content_end hook (the verdict; the tier replies)
 *   BDAT:  handler parses, mt_smtpd_bdat_chunk ─► pieces as DATA ─►
 *          bdat_end hook once the chunk's octets are read
 *   waits: a handler puts the session in MT_SMTPD_WAIT (no further
 *          command is read: pipelined ones stay in the input, RFC 2920
 *          3.1) and the completion replies and calls mt_smtpd_resume
 *
 * Trust boundary: every byte from the socket is the client's. Command
 * lines are bounded (settings.max_line_length), CRLF only unless
 * accept_bare_lf, no NUL; content ends only where lib/dotcodec says
 * (CRLF.CRLF) or after BDAT's counted octets; input is read at most
 * input_high ahead and command processing pauses while more than
 * output_high of replies wait, so a client that pipelines without reading
 * cannot grow our memory; content is held a piece or two at a time.
 * RFCs: 5321 (3.1 greeting, 4.1.1.4 DATA, 4.2 replies, 4.5.3.2 timeouts),
 * 2033 (LMTP), 2920 (PIPELINING), 3030 (CHUNKING), 3207 4.2 (STARTTLS:
 * pipelined plaintext discarded), 8314 (implicit TLS).
 *
 * Threading: the loop's thread. */
#ifndef MT_SMTPD_H
#define MT_SMTPD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "command.h"
#include "conn.h"
#include "dotcodec.h"
#include "lineio.h"
#include "log.h"
#include "smtp-content.h"

struct bufferevent;
struct event;
struct mt_loop;
struct mt_tls;

enum mt_smtpd_state {
	MT_SMTPD_HANDSHAKE,	/* implicit TLS handshake, before the greeting */
	MT_SMTPD_COMMAND,	/* reading command lines */
	MT_SMTPD_LINE,		/* reading a continuation line (AUTH) */
	MT_SMTPD_DATA,		/* reading DATA content up to CRLF.CRLF */
	MT_SMTPD_BDAT,		/* reading a BDAT chunk of known size */
	MT_SMTPD_WAIT,		/* waiting for the daemon (directory, queue, store) */
	MT_SMTPD_STARTTLS,	/* 220 queued; TLS starts once it is sent */
	MT_SMTPD_CLOSING,	/* last reply queued; close once it is sent */
	MT_SMTPD_STATE_COUNT
};

extern const char *const mt_smtpd_state_names[MT_SMTPD_STATE_COUNT];

struct mt_smtpd_settings {
	size_t max_line_length;		/* command lines, CRLF included */
	bool accept_bare_lf;		/* command lines may end in LF */
	enum mt_dot_bare_policy bare_newlines;	/* in content (DATA and BDAT) */
	uint64_t command_timeout;	/* idle msecs reading commands */
	uint64_t data_timeout;		/* idle msecs reading content */
	uint64_t max_session_time;	/* msecs, 0: none */
	size_t input_high;		/* input read ahead at most */
	size_t output_high;		/* replies pending above which: pause */
	size_t piece_size;		/* content handed over in pieces this big */
	enum mt_log_level reject_log;	/* level of the "reject cmd=" lines */
	const char *log_prefix;		/* before the engine's log lines ("" or "lmtp ") */
};

struct mt_smtpd;

struct mt_smtpd_hooks {
	/* The greeting (220) and any other first words; run at once, or once
	 * an implicit TLS handshake is done. */
	void (*greet)(struct mt_smtpd *d);
	/* Fill the command gate for the session as it is now. */
	void (*gate)(struct mt_smtpd *d, struct mt_command_gate *gate);
	/* Run command index of the table with its argument. */
	void (*run)(struct mt_smtpd *d, unsigned int index, const char *arg);
	/* Answer a verdict other than MT_COMMAND_RUN (call.def may be NULL). */
	void (*refuse)(struct mt_smtpd *d, enum mt_command_verdict verdict,
		       const struct mt_command_call *call, const char *line);
	/* A bad line: too long (error NULL), or bad octets (lib/lineio's
	 * status and text). */
	void (*bad_line)(struct mt_smtpd *d, enum mt_line_status status,
			 const char *error);
	/* Optional: a continuation line in MT_SMTPD_LINE; NULL when the line
	 * was bad (the exchange is over: bad_line answers it). */
	void (*line)(struct mt_smtpd *d, const char *line);
	/* Optional: before a command line is read; false stops the loop
	 * (the hook replied and closes: drain, too many errors). */
	bool (*next_command)(struct mt_smtpd *d);
	/* d->content.body holds a piece (piece_size octets or more) of
	 * acceptable content: take it (true; the body is emptied or
	 * consumed), or not yet (false: reading waits until mt_smtpd_resume). */
	bool (*content)(struct mt_smtpd *d);
	/* DATA's end was read; state is MT_SMTPD_COMMAND. verdict from
	 * lib/dotcodec (error its text); what is not yet handed over is in
	 * d->content.body. The tier replies (or waits and replies). */
	void (*data_end)(struct mt_smtpd *d, enum mt_dot_result verdict, const char *error);
	/* Optional: a BDAT chunk's octets were read; state is COMMAND. */
	void (*bdat_end)(struct mt_smtpd *d);
	/* Optional: the state changed (the MTA counts sessions receiving). */
	void (*state_changed)(struct mt_smtpd *d, enum mt_smtpd_state old);
	/* Optional: the session waits on the daemon beyond MT_SMTPD_WAIT. */
	bool (*busy)(struct mt_smtpd *d);
	/* The TLS handshake is done (d->tls, d->tls_info set). Optional. */
	void (*tls_started)(struct mt_smtpd *d);
	/* The peer closed (error false) or the socket failed. */
	void (*eof)(struct mt_smtpd *d, bool error);
	void (*idle_timeout)(struct mt_smtpd *d);
	/* Needed with max_session_time. */
	void (*session_timeout)(struct mt_smtpd *d);
	/* Closing: the summary line, cancel requests (as mt_conn_ops). */
	void (*closed)(struct mt_smtpd *d, const char *reason);
	/* After the engine freed its own parts: free the tier's session. */
	void (*free)(struct mt_smtpd *d);
};

struct mt_smtpd_def {
	const struct mt_command_table *table;
	const struct mt_smtpd_hooks *hooks;
};

/* Message content of the transaction (DATA or BDAT). */
struct mt_smtpd_content {
	struct mt_buf body;		/* decoded, not yet handed over */
	struct mt_dot_decoder dec;	/* DATA */
	struct mt_smtp_chunk_decoder chunk;	/* BDAT, across the chunks */
	bool paused;			/* a piece waits for the tier */
	bool bdat_used;			/* BDAT seen: the chunk decoder is set up */
	bool bdat_last;
	uint64_t bdat_size;		/* of the current chunk */
	uint64_t bdat_left;		/* octets of it still to read */
	bool bdat_discard;		/* the chunk is read but not kept */
};

struct mt_smtpd {
	struct mt_conn conn;		/* socket, timers, close (lib-mail/conn) */
	const struct mt_smtpd_def *def;
	const struct mt_smtpd_settings *set;
	struct mt_logctx *log;		/* the tier's */
	const char *peer_name;		/* "a.b.c.d:port", the tier's */
	struct mt_tls *tls_server;	/* NULL: no STARTTLS, no implicit TLS */

	enum mt_smtpd_state state;
	struct mt_line_reader reader;
	struct mt_buf line;
	struct mt_commands commands;	/* counters, the command awaiting its reply */
	unsigned int errors;		/* 5xx replies */
	bool greeted;
	bool input_paused;		/* output backlog: resume once drained */
	bool tls;
	char tls_info[128];
	struct mt_smtpd_content content;

	/* A penalty-delayed final reply (mt_smtpd_reply_delayed). */
	struct event *delay_timer;
	int delayed_code;
	char *delayed_text;
};

/* The tier's session that embeds d as member. */
#define MT_SMTPD_OWNER(d, type, member) \
	((type *)((char *)(d) - offsetof(type, member)))

/* Start the session on bev (taken), added to list: greets at once, or
 * after the handshake when implicit_tls (bev is then a TLS bev). */
void mt_smtpd_start(struct mt_smtpd *d, const struct mt_smtpd_def *def,
		    const struct mt_smtpd_settings *set, struct mt_conn_list *list,
		    struct mt_loop *loop, struct bufferevent *bev, bool implicit_tls);

/* Replies. The final (or only) line counts the command done (2xx/3xx ok,
 * 4xx/5xx not; 334 and 354 ask for more) and a 5xx as an error. */
void mt_smtpd_reply(struct mt_smtpd *d, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void mt_smtpd_vreply(struct mt_smtpd *d, int code, bool more, const char *fmt,
		     va_list ap) __attribute__((format(printf, 4, 0)));
/* A non-final line of a multi-line reply ("250-..."). */
void mt_smtpd_reply_more(struct mt_smtpd *d, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The final reply, delay_ms from now (0: at once, false returned). For
 * penalty delays: the session reads nothing meanwhile (MT_SMTPD_WAIT, the
 * idle timer does not run down) and a timer sends the reply and resumes,
 * so the loop is never blocked. True if delayed: the caller must not
 * resume the session itself. */
bool mt_smtpd_reply_delayed(struct mt_smtpd *d, uint64_t delay_ms, int code,
			    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A last reply (421/221): nothing more is read; close once it is sent,
 * or at the idle timeout if the client does not take it. The log's
 * reason is "done"; outcome says why (lib-mail/conn.h: the 221 to QUIT
 * MT_OUTCOME_QUIT, a 421 TIMEOUT, LIMIT or SHUTDOWN). */
void mt_smtpd_finish(struct mt_smtpd *d, enum mt_conn_outcome outcome, int code,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void mt_smtpd_vfinish(struct mt_smtpd *d, enum mt_conn_outcome outcome, int code,
		      const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

void mt_smtpd_enter_state(struct mt_smtpd *d, enum mt_smtpd_state state);
/* An asynchronous step finished (or a piece was taken): read on. */
void mt_smtpd_resume(struct mt_smtpd *d);
/* Close now (ops closed, then free from the loop). */
void mt_smtpd_close(struct mt_smtpd *d, enum mt_conn_outcome outcome,
		    const char *reason);
bool mt_smtpd_is_closed(const struct mt_smtpd *d);
/* The 220 to STARTTLS is queued: wrap the socket in TLS once it is sent;
 * pipelined plaintext is discarded (RFC 3207 4.2, CVE-2011-0411). */
void mt_smtpd_starttls(struct mt_smtpd *d);
/* Input already waiting behind the current command (RFC 2920 3.1). */
size_t mt_smtpd_input_pending(struct mt_smtpd *d);

/* Content (smtpd-content.c) */

/* DATA's 354 is queued: decode content up to CRLF.CRLF, at most max_size
 * octets and lines of max_line (0: any). */
void mt_smtpd_data_begin(struct mt_smtpd *d, uint64_t max_size, size_t max_line);
/* A BDAT chunk of size octets follows; discard: read it but keep none
 * (a refused BDAT, answered once it is read: RFC 3030 2). The first kept
 * chunk sets up the chunk decoder with max_size. Size 0 calls bdat_end
 * at once. */
void mt_smtpd_bdat_chunk(struct mt_smtpd *d, uint64_t size, bool last,
			 bool discard, uint64_t max_size);
/* After BDAT LAST's chunk: a CR held back is bare; the verdict (too big,
 * bare newline, NUL, a line over max_line). */
enum mt_dot_result mt_smtpd_bdat_finish(struct mt_smtpd *d, size_t max_line);
/* Content octets accepted so far (DATA or BDAT). */
uint64_t mt_smtpd_content_size(const struct mt_smtpd *d);
/* The transaction is over: forget its content. */
void mt_smtpd_content_reset(struct mt_smtpd *d);

/* Between smtpd.c and smtpd-content.c */
bool mt_smtpd_data_input(struct mt_smtpd *d);
bool mt_smtpd_bdat_input(struct mt_smtpd *d);

#endif
