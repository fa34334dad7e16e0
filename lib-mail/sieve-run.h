/* sieve-run.h — running a checked Sieve script (sieve-parse.h,
 * sieve-check.h) over one message for one recipient: the tests evaluated
 * against the message through the caller's accessors, the actions the
 * script takes collected (not carried out: delivery does that, in the
 * store, within its own transaction), and whether the implicit keep
 * remains (RFC 5228 2.10.2).
 *
 * Run here: RFC 5228's control (if/elsif/else, stop), actions (keep,
 * discard, redirect) and tests (address, header, envelope, exists, size,
 * true, false, not, allof, anyof) with every comparator and match type
 * (sieve-match.h), and fileinto, copy, mailbox's :create, reject/ereject,
 * relational (:count, :value), subaddress (:user, :detail, "+" as the
 * separator) and imap4flags (the internal flag variable, setflag/addflag/
 * removeflag, hasflag, :flags, and the implicit keep's flags). The other
 * extensions the checker knows (vacation, variables, body, include,
 * mailboxexists) end a run with a runtime error for now, and so with the
 * implicit keep.
 *
 * Failure is never a lost message: a runtime error (a limit reached, an
 * action that cannot be combined with another, a construct not run here)
 * stops the run, drops the actions taken so far and leaves the implicit
 * keep, with the error for the log and the user (RFC 5228 2.10.6).
 *
 * Trust boundary: the script is a user's (checked, bounded by the
 * parser); header values and the envelope come from any sender. Steps,
 * actions and redirects are bounded per run. */
#ifndef MT_SIEVE_RUN_H
#define MT_SIEVE_RUN_H

#include "sieve-parse.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the script may read of the message. */
struct mt_sieve_message {
	/* Visit the bodies of every header field named name (any case), in
	 * order: unfolded, RFC 2047 words decoded (the caller's part). Stop
	 * when visit returns true; return whether it did. */
	bool (*header_each)(void *context, const char *name,
			    bool (*visit)(const char *value, size_t len, void *arg),
			    void *arg);
	void *context;
	const char *envelope_from;	/* MAIL FROM's address; "" for <> */
	const char *envelope_to;	/* this recipient's RCPT TO address */
	uint64_t size;			/* the message's octets */
};

enum mt_sieve_action_type {
	MT_SIEVE_ACTION_KEEP,
	MT_SIEVE_ACTION_FILEINTO,
	MT_SIEVE_ACTION_REDIRECT,
	MT_SIEVE_ACTION_DISCARD,
	MT_SIEVE_ACTION_REJECT,
	MT_SIEVE_ACTION_EREJECT,
};

struct mt_sieve_action {
	enum mt_sieve_action_type type;
	unsigned int line;		/* of the command that took it */
	char *target;			/* mailbox, address or reason; NULL else */
	bool copy, create;
	char **flags;			/* KEEP, FILEINTO: the flags to set */
	size_t n_flags;
};

struct mt_sieve_result {
	struct mt_sieve_action *actions;
	size_t n_actions;
	/* The implicit keep remains (no action cancelled it, or the run
	 * failed); it files into INBOX with keep_flags. */
	bool implicit_keep;
	char **keep_flags;
	size_t n_keep_flags;
	bool failed;
	char error[256];		/* a failed run's "line N: what" */
	uint64_t steps;			/* commands and tests evaluated */
};

struct mt_sieve_run_limits {
	uint64_t steps_max;		/* commands + tests evaluated */
	size_t actions_max;		/* explicit actions */
	size_t redirects_max;		/* redirects */
};
/* 10,000 steps, 32 actions, 4 redirects a message. */
extern const struct mt_sieve_run_limits mt_sieve_run_limits_default;

/* Run script (checked: mt_sieve_check) over msg into *result (free with
 * mt_sieve_result_free). true: the run completed; false: result->failed,
 * its error, and the implicit keep alone. */
bool mt_sieve_run(const struct mt_sieve_script *script, const struct mt_sieve_message *msg,
		  const struct mt_sieve_run_limits *limits, struct mt_sieve_result *result);
void mt_sieve_result_free(struct mt_sieve_result *result);

#endif
