/* fill.h — `mailtier-load fill`: put the published initial mailbox
 * contents into the store before a run (WORKLOAD.md: 0 messages 26.5%,
 * 1: 16.11%, 2: 12.25%, then a tail to 28), sized for the 100% level and
 * not changed between levels. Each user's messages (how many, and each
 * one's size and remote sender) come from that user's own seeded stream,
 * so the same seed fills the same mailboxes whichever way they go in:
 *   - by SMTP through the MTA, one message a session, `concurrency`
 *     sessions at once;
 *   - by LMTP straight to the store shards (faster: no MTA queue, many
 *     messages a connection), `concurrency` connections per shard, each
 *     user to the shard dirsvc's rendezvous hash gives its address among
 *     the shard names (shard.h), or to the one LMTP server given.
 * For the IMAP workload (`--protocol imap|mixed`), INBOX gets the
 * published distribution x10 (WORKLOAD.md: mean ~33), and with `--imap`
 * each user's folder model goes in by IMAP (one session a user,
 * `concurrency` at once): CREATE Sent, Drafts, Trash, Junk and Folder1-5
 * (one that is there already is fine), then APPENDs: Sent 0-50 messages,
 * each user folder 0-100 (uniform; Drafts, Trash and Junk empty, our
 * choice), from the user's own stream too.
 * Trust boundary: the servers' replies (untrusted; see session.h). */
#ifndef LG_FILL_H
#define LG_FILL_H

#include <stdbool.h>
#include <stdint.h>

#include "stats.h"
#include "workload.h"

#define LG_FILL_MAX_TARGETS 64

struct lg_fill_target {
	const char *name;		/* shard name (the users' mailHost); NULL: the only one */
	const char *hostport;
};

struct lg_fill_settings {
	struct lg_workload wl;
	const char *smtp;		/* HOST:PORT; NULL when by LMTP */
	const struct lg_fill_target *lmtp; /* LMTP servers (shards) */
	size_t n_lmtp;
	const char *imap;		/* HOST:PORT: the folder model by IMAP */
	unsigned int inbox_scale;	/* INBOX: the table's count x this (0: 1) */
	uint64_t seed;
	unsigned int concurrency;	/* sessions at once per server */
	unsigned int step_timeout_ms;
	unsigned int progress_ms;	/* 0: no progress lines */
};

struct lg_fill_result {
	uint64_t users;
	uint64_t messages_planned;	/* what the table gave all users */
	uint64_t messages_sent;		/* accepted by the servers */
	uint64_t messages_failed;	/* handed to a session, not accepted */
	uint64_t octets;
	uint64_t folder_users;		/* users whose folders were filled by IMAP */
	uint64_t folder_users_failed;	/* ... whose IMAP session failed */
	uint64_t folder_messages_planned;
	uint64_t folder_messages_sent;	/* in sessions that completed */
	double elapsed_s;
	bool interrupted;
	uint64_t target_messages[LG_FILL_MAX_TARGETS];	/* planned per server */
	uint64_t target_users[LG_FILL_MAX_TARGETS];
	struct lg_stats stats;		/* the SMTP/LMTP steps, sessions, errors */
};

/* How many messages user K gets, and each one's plan, from the user's
 * own stream: the same for any path and any order of users. */
struct lg_fill_user {
	struct lg_rng rng;
	uint64_t user;
	unsigned int left;
};
void lg_fill_user_begin(struct lg_fill_user *u, uint64_t seed, uint64_t user);
/* The user's next message; false when it has none left. */
bool lg_fill_user_next(struct lg_fill_user *u, struct lg_message_plan *plan);

/* How many messages each of lg_imap_folders[] gets for user K, and the
 * seed of their sizes: from the user's own stream. */
void lg_fill_folders(uint64_t seed, uint64_t user,
		     unsigned int counts[LG_IMAP_FOLDERS], uint64_t *size_seed_r);

/* Fill every user's mailbox; false with a reason on a setup error. */
bool lg_fill_run(const struct lg_fill_settings *set,
		 struct lg_fill_result *result, const char **error_r);

#endif
