/* workload.h — the SPECmail2001-style workload model (loadgen/README.md,
 * "Workload"): users userK@domain with password secretK (K = 1..U, as
 * `mailtierctl users bulk` provisions them), the four session kinds and
 * their Poisson arrival rates scaled to U and the load level, message sizes
 * and recipient counts from the published distributions, local/remote
 * recipients and the repeat POP check chain. Pure functions of a seeded
 * lg_rng: no I/O, no clock.
 * Trust boundary: none (internal; inputs are the operator's flags). */
#ifndef LG_WORKLOAD_H
#define LG_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rng.h"

/* 1 SPECmail2001 message/minute = 200 users. */
#define LG_USERS_PER_MSG_PER_MIN 200u
#define LG_MAX_RCPTS 20u
/* Our choice: each recipient of a local user's message is remote with this
 * probability, which makes about 90% of all mail go to or come from remote
 * addresses (remote servers' sessions carry only local recipients). */
#define LG_REMOTE_RCPT_SHARE 0.90
/* After each POP check (first or repeat), another check by the same user
 * follows with this probability, 300-600 s later: 0.75 gives 3 repeats per
 * first check on average, i.e. 12.50/s repeats for 4.17/s first checks. */
#define LG_REPEAT_SHARE 0.75
#define LG_REPEAT_MIN_S 300.0
#define LG_REPEAT_MAX_S 600.0
/* Remote correspondents are userK@remote_domain, K = 1..this. */
#define LG_REMOTE_USERS 1000000u

enum lg_kind {
	LG_KIND_SMTP_LOCAL,	/* a local user sends (recipients local or remote) */
	LG_KIND_SMTP_REMOTE,	/* a remote server delivers (all recipients local) */
	LG_KIND_POP_FIRST,	/* a user's first mailbox check */
	LG_KIND_POP_REPEAT,	/* a check 300-600 s after the previous one */
	LG_KIND_IMAP_DESKTOP,	/* an IMAP desktop client (IDLE, per-message actions) */
	LG_KIND_IMAP_WEBMAIL,	/* an IMAP webmail/mobile poll (short) */
	/* A desktop client's reply submitted by SMTP: started by the IMAP
	 * session, not scheduled (its rate is 0). */
	LG_KIND_IMAP_REPLY_SUBMIT,
	LG_KIND_COUNT
};

extern const char *const lg_kind_names[LG_KIND_COUNT];
/* Sessions per second per 100,000 users at 100% load. */
extern const double lg_kind_rate_per_100k[LG_KIND_COUNT];

/* Which sessions a run makes (`--protocol`): the SPECmail2001 POP3
 * checks (the default), the SPECmail2009-style IMAP sessions instead, or
 * both at half their rates each (our choice). SMTP is the same in all. */
enum lg_protocol {
	LG_PROTOCOL_POP,
	LG_PROTOCOL_IMAP,
	LG_PROTOCOL_MIXED,
	LG_PROTOCOL_COUNT
};

extern const char *const lg_protocol_names[LG_PROTOCOL_COUNT];
/* "pop", "imap" or "mixed"; false on anything else. */
bool lg_protocol_parse(const char *name, enum lg_protocol *protocol_r);

/* The IMAP workload (WORKLOAD.md, "SPECmail2009-style"; our choices):
 * 4.8 IMAP sessions per user per peak hour, 80% desktop, 20% webmail. */
#define LG_IMAP_SESSIONS_PER_USER_HOUR 4.8
#define LG_IMAP_DESKTOP_SHARE 0.80
#define LG_IMAP_SESSION_MEAN_S 180.0	/* desktop session length, exponential */
#define LG_IMAP_VISIT_SHARE 0.50	/* SELECT a user folder + FETCH headers */
#define LG_IMAP_SEARCH_SHARE 0.30	/* SEARCH UNSEEN or a header SEARCH */
#define LG_IMAP_DELETE_SHARE 0.05	/* per new message: \Deleted + EXPUNGE */
#define LG_IMAP_MOVE_SHARE 0.05		/* per new message: UID MOVE to a folder */
#define LG_IMAP_REPLY_SHARE 0.20	/* per new message: APPEND to Sent, \Answered */
#define LG_IMAP_THINK_MIN_S 1.0		/* before each new message is read */
#define LG_IMAP_THINK_MAX_S 10.0
/* The folder model: INBOX and these (special-use first, RFC 6154). */
#define LG_IMAP_FOLDERS 9
#define LG_IMAP_SPECIAL_FOLDERS 4
#define LG_IMAP_FILL_FOLDER_MAX 100	/* user folders: 0..this messages */
#define LG_IMAP_FILL_SENT_MAX 50	/* Sent: 0..this */
#define LG_IMAP_FILL_INBOX_SCALE 10	/* INBOX: the SPECmail2001 fill x this */
extern const char *const lg_imap_folders[LG_IMAP_FOLDERS];

enum lg_imap_search {
	LG_IMAP_SEARCH_NONE,
	LG_IMAP_SEARCH_UNSEEN,
	LG_IMAP_SEARCH_HEADER,
};

/* What one IMAP session will do, drawn when it is scheduled; the draws
 * that depend on what the server shows (per new message) come from the
 * session's own stream, seeded by seed. */
struct lg_imap_plan {
	uint64_t seed;
	uint64_t length_ms;		/* desktop: LOGOUT after this long */
	bool visit_folder;
	enum lg_imap_search search;
};

/* One point of a discrete distribution; weights in basis points (1/100 %). */
struct lg_weighted {
	uint32_t value;
	uint32_t weight_bp;
};

/* Message size in KiB -> share (the published table; mean 24.53 KiB). */
extern const struct lg_weighted lg_size_table[];
extern const size_t lg_size_table_len;
/* Recipients per message -> share (published head, reconstructed tail). */
extern const struct lg_weighted lg_rcpt_table[];
extern const size_t lg_rcpt_table_len;

/* Account naming. Templates expand %K (the account number), %0NK (it
 * zero-padded to N digits), %D (the local domain) and %%. */
#define LG_DEFAULT_LOCAL_TEMPLATE "user%K"
#define LG_DEFAULT_LOGIN_TEMPLATE "user%K@%D"
#define LG_DEFAULT_PASSWORD_TEMPLATE "secret%K"

/* Messages in a mailbox before the run -> share (published head, our
 * reconstructed geometric tail; mean 3.34). */
extern const struct lg_weighted lg_mailbox_table[];
extern const size_t lg_mailbox_table_len;

struct lg_workload {
	uint64_t users;			/* U >= 1 mailboxes */
	/* The load is that of this many users (0: users). More than users
	 * gives small test set-ups a real rate; SPECmail2001 runs keep it 0. */
	uint64_t load_users;
	uint64_t first_user;		/* account number of user 1 (default 1) */
	const char *domain;		/* local users' domain */
	const char *remote_domain;	/* relayed by the MTA to the sink */
	const char *local_template;	/* address local part */
	const char *login_template;	/* POP3 USER argument */
	const char *password_template;	/* POP3 PASS argument */
	enum lg_protocol protocol;	/* which mailbox sessions (default POP) */
};

struct lg_rcpt {
	bool remote;
	uint64_t user;			/* K of userK@(remote_)domain */
};

struct lg_message_plan {
	bool from_remote;		/* sender userK@remote_domain */
	bool reply;			/* a desktop client's reply: "Re: " */
	bool probe;			/* a delivery probe (its Subject says so) */
	uint64_t sender;
	uint64_t size;			/* octets of the whole message */
	unsigned int n_rcpts, n_local, n_remote;
	struct lg_rcpt rcpts[LG_MAX_RCPTS];	/* distinct addresses */
};

/* false and a reason if a template has an unknown % sequence. */
bool lg_template_check(const char *template, const char **error_r);
/* userK@domain (or @remote_domain), the login and the password of user K
 * (1..users; remote correspondents 1..LG_REMOTE_USERS). */
void lg_format_address(char *out, size_t size, const struct lg_workload *wl,
		       bool remote, uint64_t user);
void lg_format_login(char *out, size_t size, const struct lg_workload *wl,
		     uint64_t user);
void lg_format_password(char *out, size_t size, const struct lg_workload *wl,
			uint64_t user);
/* The inverse of lg_format_address: whether local@domain is one of our
 * users (domain) or remote correspondents (remote_domain), and which
 * (*remote_r, *user_r). Any template with %K or %0NK: each run of digits
 * in local is tried and the address formatted back to compare. */
bool lg_parse_address(const struct lg_workload *wl, const char *local,
		      const char *domain, bool *remote_r, uint64_t *user_r);

/* Sessions/s of a kind at level_pct percent of the users' load. */
double lg_workload_rate(const struct lg_workload *wl, enum lg_kind kind,
			unsigned int level_pct);
/* Target SPECmail2001 msgs/min (local users' messages) at a level. */
double lg_workload_msgs_per_min(const struct lg_workload *wl,
				unsigned int level_pct);

/* Draw a value from a table. */
uint32_t lg_weighted_pick(const struct lg_weighted *table, size_t len,
			  struct lg_rng *rng);
/* The exact mean of a table. */
double lg_weighted_mean(const struct lg_weighted *table, size_t len);

uint64_t lg_workload_message_size(struct lg_rng *rng);	/* octets */
unsigned int lg_workload_rcpt_count(struct lg_rng *rng);
uint64_t lg_workload_pick_user(const struct lg_workload *wl,
			       struct lg_rng *rng);	/* 1..users */
/* A whole message: size, sender, distinct recipients. */
void lg_workload_plan_message(const struct lg_workload *wl,
			      struct lg_rng *rng, bool from_remote,
			      struct lg_message_plan *plan);
/* An IMAP session of kind (desktop or webmail). */
void lg_workload_plan_imap(struct lg_rng *rng, enum lg_kind kind,
			   struct lg_imap_plan *plan);
/* Whether another check by the same user follows, and after how long. */
bool lg_workload_repeat_follows(struct lg_rng *rng);
double lg_workload_repeat_delay(struct lg_rng *rng);	/* seconds */

#endif
