/* command.h — the command-table engine under every line protocol server
 * here (the MTA's SMTP, the store's LMTP and POP3, the MMP's POP3 login):
 * a tier's command table, the checks every protocol makes before running
 * a command, and the per-command counters summarised in the one
 * end-of-session log line.
 *
 * A tier's table is an array of its own struct whose first member is a
 * struct mt_command_def (the name and the flags), followed by its typed
 * handler; MT_COMMAND_TABLE() describes it to the engine:
 *
 *	struct pop3_command { struct mt_command_def def; pop3_handler *run; };
 *	static const struct pop3_command cmds[] = { { { "USER", AUTHZ }, cmd_user }, ... };
 *	static const struct mt_command_table table = MT_COMMAND_TABLE(cmds);
 *
 *	struct mt_command_call call;
 *	switch (mt_command_check(&table, &s->commands, &gate, line, &call)) {
 *	case MT_COMMAND_RUN: cmds[call.index].run(s, call.arg); break;
 *	case MT_COMMAND_UNKNOWN: ...the protocol's own reply...
 *	}
 *
 * mt_command_check() looks the verb up (lib-mail/command-find: case-
 * insensitive, the argument after one space), counts it (unknown verbs in
 * their own slot), and checks it against the session's gate in this
 * order: too many junk commands (MT_CMD_JUNK, above gate.max_junk), TLS
 * required first (commands without MT_CMD_PRE_TLS), authentication
 * required first (without MT_CMD_PRE_AUTH), the protocol state (a
 * command's MT_CMD_STATE() bits must include gate.state when it has any).
 * Each verdict is the tier's to answer in its protocol's words.
 *
 * Commands that wait (a directory lookup, a store request): the handler
 * is the check half; it replies at once, or starts the request and puts
 * the session in its protocol's waiting state (the tier's input loop runs
 * no further command there), and the request's completion is the proceed
 * half, which gives the final reply. The command stays current until
 * mt_commands_reply() closes it with that final reply (success or not),
 * so its outcome is counted once however long it waited.
 *
 * The summary: " ehlo=1 mail=1 rcpt=1/2 data=1 quit=1 commands=4/5" —
 * lower-case verbs, "ok/total" where some failed, unknown verbs as
 * "unknown" (Postfix's smtpd does the same). A protocol whose verbs would
 * collide with the line's other keys (POP3's USER and user=) gives them a
 * prefix: " cmd_user=1 cmd_pass=0/1 commands=1/2".
 *
 * Trust boundary: the client's command line, NUL-terminated, without CR or
 * LF (lib/lineio); nothing is allocated per line. RFC 5321 4.1.1, RFC
 * 2033 4, RFC 1939 3 (verbs are case-insensitive), RFC 2920 3.1 (commands
 * that end a pipelining group), RFC 3207 4 (530 before STARTTLS), RFC 4954
 * (530 before AUTH). */
#ifndef MT_COMMAND_H
#define MT_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

struct mt_buf;

/* The engine's flags (the low byte); a tier's states above them. */
#define MT_CMD_PRE_TLS		0x01u	/* allowed before TLS where TLS is required */
#define MT_CMD_PRE_AUTH		0x02u	/* allowed before authentication where required */
#define MT_CMD_GROUP_END	0x04u	/* ends a pipelining group (RFC 2920 3.1) */
#define MT_CMD_JUNK		0x08u	/* counts towards gate.max_junk */
#define MT_CMD_SECRET		0x10u	/* the line holds a credential: wiped after use */
/* Allowed in the tier's state n (0..23). */
#define MT_CMD_STATE(n)		(1u << (8 + (n)))
#define MT_CMD_STATE_MASK	0xffffff00u

struct mt_command_def {
	const char *name;	/* the verb, upper case as the RFC writes it */
	unsigned int flags;
};

struct mt_command_table {
	const struct mt_command_def *first;
	size_t count;
	size_t stride;		/* sizeof the tier's element */
};

#define MT_COMMAND_TABLE(array) { &(array)[0].def, \
	sizeof(array) / sizeof((array)[0]), sizeof((array)[0]) }
/* A table of plain definitions (the handlers in an array of their own,
 * indexed alike: the store keeps its grammar apart from its sessions). */
#define MT_COMMAND_DEFS(array) { &(array)[0], \
	sizeof(array) / sizeof((array)[0]), sizeof((array)[0]) }

/* The table's i-th definition (i < count). */
const struct mt_command_def *mt_command_table_def(const struct mt_command_table *t,
						 size_t i);

/* The session's side of the checks, filled per command. */
struct mt_command_gate {
	bool tls_required;	/* TLS is required and not yet in place */
	bool auth_required;	/* authentication is required and not done */
	unsigned int state;	/* MT_CMD_STATE(n) of the session, 0: none */
	unsigned int max_junk;	/* junk commands allowed (0: no limit) */
};

enum mt_command_verdict {
	MT_COMMAND_RUN,
	MT_COMMAND_UNKNOWN,	/* no such verb (also an empty line) */
	MT_COMMAND_TOO_MUCH_JUNK,
	MT_COMMAND_NEEDS_TLS,
	MT_COMMAND_NEEDS_AUTH,
	MT_COMMAND_BAD_STATE,
};

struct mt_command_call {
	unsigned int index;		/* into the tier's table (when known) */
	const struct mt_command_def *def;	/* NULL when unknown */
	const char *arg;		/* after the verb and one space; "" */
};

/* The class of a command's final reply, as each protocol has them: SMTP
 * and LMTP 2xx (and 3xx) / 4xx / 5xx (RFC 5321 4.2.1), POP3 +OK / -ERR
 * (RFC 1939 3), IMAP OK / NO / BAD (RFC 9051 7.1). */
enum mt_reply_class {
	MT_REPLY_SUCCESS,	/* 2xx, +OK, OK */
	MT_REPLY_TEMPFAIL,	/* 4xx */
	MT_REPLY_FAILURE,	/* 5xx, -ERR, NO */
	MT_REPLY_BAD,		/* IMAP BAD */
};
#define MT_REPLY_CLASSES 4

/* One session's counters and the command in progress. */
struct mt_commands {
	unsigned int *total, *ok;	/* count + 1 slots: the last is unknown */
	size_t count;
	int current;			/* slot of the command awaiting its reply, or -1 */
	unsigned int flags;		/* the last checked command's (0: unknown) */
	unsigned int junk;
	unsigned int replies[MT_REPLY_CLASSES];	/* final replies by class */
};

void mt_commands_init(struct mt_commands *c, const struct mt_command_table *table);
void mt_commands_free(struct mt_commands *c);

/* Look up, count and check one command line (see above). */
enum mt_command_verdict mt_command_check(const struct mt_command_table *table,
					 struct mt_commands *c,
					 const struct mt_command_gate *gate,
					 const char *line, struct mt_command_call *call_r);
/* A line that is no command at all (too long, bad bytes): nothing is
 * awaiting a reply. */
void mt_commands_forget(struct mt_commands *c);
/* The same, counted as an unknown command (its error reply closes it). */
void mt_commands_unknown(struct mt_commands *c);
/* The final reply to the current command: counted as ok or not; then no
 * command is current. No-op when none is current. */
void mt_commands_reply(struct mt_commands *c, bool ok);
/* The same with the reply's class (ok: MT_REPLY_SUCCESS), counted in
 * replies[] too. mt_commands_reply(c, ok) is SUCCESS or FAILURE. */
void mt_commands_reply_class(struct mt_commands *c, enum mt_reply_class cls);
/* An SMTP/LMTP reply code's class (3xx counts as success: 354 and 334
 * are not final, a final 3xx does not exist). */
enum mt_reply_class mt_reply_class_smtp(int code);
/* An IMAP tagged reply's class from its status word ("OK ...", "NO ...",
 * "BAD ..."; anything else is BAD). */
enum mt_reply_class mt_reply_class_imap(const char *status, size_t len);
/* The current command's verb as the table writes it ("MAIL"), "unknown",
 * or "-" when none is current (for reject log lines). */
const char *mt_commands_current_name(const struct mt_command_table *table,
				     const struct mt_commands *c);
/* Commands seen (all slots). */
unsigned int mt_commands_total(const struct mt_commands *c);
/* Append " PREFIXverb=N ... commands=N" (see above) to out. */
void mt_commands_summary(const struct mt_command_table *table,
			 const struct mt_commands *c, const char *prefix,
			 struct mt_buf *out);

#endif
