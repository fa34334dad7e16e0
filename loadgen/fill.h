/* fill.h — `mailtier-load fill`: put the published initial mailbox
 * contents into the store before a run (WORKLOAD.md: 0 messages 26.5%,
 * 1: 16.11%, 2: 12.25%, then a tail to 28), sized for the 100% level and
 * not changed between levels. Each user's count is drawn from the seeded
 * mailbox table, each message's size from the size table; the messages go
 * in by SMTP from remote senders, at most `concurrency` sessions at once.
 * Trust boundary: the server's replies (untrusted; see session.h). */
#ifndef LG_FILL_H
#define LG_FILL_H

#include <stdbool.h>
#include <stdint.h>

#include "stats.h"
#include "workload.h"

struct lg_fill_settings {
	struct lg_workload wl;
	const char *smtp;		/* HOST:PORT */
	uint64_t seed;
	unsigned int concurrency;	/* sessions open at once */
	unsigned int step_timeout_ms;
	unsigned int progress_ms;	/* 0: no progress lines */
};

struct lg_fill_result {
	uint64_t users;
	uint64_t messages_planned;	/* what the table gave all users */
	uint64_t messages_sent;		/* accepted by the server */
	uint64_t messages_failed;
	uint64_t octets;
	double elapsed_s;
	bool interrupted;
	struct lg_stats stats;		/* the SMTP steps, sessions, errors */
};

/* Fill every user's mailbox; false with a reason on a setup error. */
bool lg_fill_run(const struct lg_fill_settings *set,
		 struct lg_fill_result *result, const char **error_r);

#endif
