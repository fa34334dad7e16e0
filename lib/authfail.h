/* authfail.h — one table per daemon of what it remembers per client
 * address: the sessions it has open (a per-client connection limit) and
 * its recent failed logins (the growing delay before a failure answer, and
 * optionally a block). The MTA (AUTH), the MMP (PASS, AUTH) and popstore
 * (its own USER/PASS, AUTH) share it, so the three answer a password guess
 * the same way.
 *
 * Delay for the n-th failure within window of the previous one:
 * delay * 2^(n-1), at most MT_AUTHFAIL_DELAY_MAX (the seed's "bad guy
 * penalty"). A caller answers the failure that long after the command
 * arrived (mt_authfail_wait_ms), not after the directory answered: a real
 * user's slow password hash and an unknown user's quick miss then end at
 * the same moment, and the time does not tell whether the user exists.
 * With block_after set, an address that reaches that many failures is
 * refused new sessions until window has passed since its last failure.
 * A caller that also counts the checks under way (mt_authfail_attempt_*)
 * lets no more than block_after - failures of them run at once, so logins
 * sent together on many connections cannot test more than block_after
 * passwords before the block: the rest wait for those to end.
 * A successful login does not clear the count (an attacker holding one
 * valid account could otherwise reset it between guesses). A daemon may
 * keep more than one table, one per kind of failure with its own limits
 * (the MTA: failed AUTHs, and unknown recipients at RCPT).
 *
 * Trust boundary: the key is the text of the TCP peer address (no port;
 * mt_authfail_key), which a client controls only as far as TCP lets it.
 * Limits are the operator's, passed on each call so a reloaded config
 * applies at once. Threading: thread-safe; one mutex inside, held for a
 * hash lookup (the MMP's workers and its main loop share one table; the
 * single-threaded MTA and popstore pay an uncontended lock). Times are
 * milliseconds of one monotonic clock (lib/clock.h mt_clock_ms), passed in (tests need no sleep).
 * No RFC applies (RFC 4954 section 6 and RFC 1939 section 13 leave
 * password-guessing defences to the server). */
#ifndef MT_AUTHFAIL_H
#define MT_AUTHFAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define MT_AUTHFAIL_DELAY_MAX 60000u	/* ms: the penalty stops growing */
#define MT_AUTHFAIL_KEY_MAX 48		/* an IPv6 address's text and NUL */

struct mt_authfail;

/* What a table has done since it was made (mt_authfail_get_stats; the
 * metrics of lib/authfail-metrics.c). Counts only, never an address. */
struct mt_authfail_stats {
	uint64_t failures;		/* mt_authfail_failed calls */
	uint64_t blocks;		/* an address reached block_after */
	uint64_t refused_blocked;	/* refused while blocked (session or request) */
	uint64_t refused_sessions;	/* refused at the per-address session limit */
	size_t addresses;		/* remembered now */
};

/* The operator's limits (each daemon fills them from its own settings). */
struct mt_authfail_limits {
	uint64_t delay;		/* ms: the first failure's; 0: no delay */
	uint64_t window;	/* ms: failures count until this long after the last */
	uint64_t block_after;	/* failures that block new sessions; 0: never */
	uint64_t sessions;	/* concurrent sessions per address; 0: no limit */
};

enum mt_authfail_admit {
	MT_AUTHFAIL_ADMIT_OK,		/* counted; mt_authfail_session_close later */
	MT_AUTHFAIL_ADMIT_SESSIONS,	/* limits->sessions open already */
	MT_AUTHFAIL_ADMIT_BLOCKED,	/* block_after failures within the window */
};

enum mt_authfail_attempt {
	MT_AUTHFAIL_ATTEMPT_OK,		/* counted; mt_authfail_attempt_done later */
	MT_AUTHFAIL_ATTEMPT_WAIT,	/* failures + attempts under way reach
					 * block_after: try again when one ends */
	MT_AUTHFAIL_ATTEMPT_BLOCKED,	/* block_after failures within the window */
};

struct mt_authfail *mt_authfail_new(void);
void mt_authfail_free(struct mt_authfail **af_p);

/* A new session from ip: counted unless a limit refuses it. */
enum mt_authfail_admit mt_authfail_session_open(struct mt_authfail *af,
						const char *ip,
						const struct mt_authfail_limits *limits,
						uint64_t now_ms);
/* A session admitted earlier has ended (one too many is harmless). */
void mt_authfail_session_close(struct mt_authfail *af, const char *ip);
/* A failed login from ip: the delay (ms) its answer is due after the
 * command's arrival; *blocked_r (may be NULL) when ip has now reached
 * block_after. Also forgets, at most once a window, every expired entry. */
uint64_t mt_authfail_failed(struct mt_authfail *af, const char *ip,
			    const struct mt_authfail_limits *limits,
			    uint64_t now_ms, bool *blocked_r);
/* Has ip reached limits->block_after failures within the window (false
 * when block_after is 0)? Counts nothing: for a caller that refuses a
 * request before it can fail (the MTA's RCPT after rcpt_fail_limit). */
bool mt_authfail_blocked(struct mt_authfail *af, const char *ip,
			 const struct mt_authfail_limits *limits, uint64_t now_ms);
/* A password check for ip is about to start (before the directory is
 * asked): may it, and is it counted? Always OK when block_after is 0. */
enum mt_authfail_attempt mt_authfail_attempt_start(struct mt_authfail *af,
						   const char *ip,
						   const struct mt_authfail_limits *limits,
						   uint64_t now_ms);
/* An attempt counted by mt_authfail_attempt_start has ended; a failure is
 * recorded (mt_authfail_failed) before this, so that none slips between. */
void mt_authfail_attempt_done(struct mt_authfail *af, const char *ip);
/* Forget failures older than the window; drop entries holding nothing. */
void mt_authfail_sweep(struct mt_authfail *af,
		       const struct mt_authfail_limits *limits, uint64_t now_ms);
/* The counts above, read at once. */
void mt_authfail_get_stats(struct mt_authfail *af, struct mt_authfail_stats *stats);
/* Addresses remembered (stats, tests). */
size_t mt_authfail_count(struct mt_authfail *af);

/* The delay for the n-th failure (n >= 1) when the first gets first_ms. */
uint64_t mt_authfail_delay(uint64_t first_ms, uint64_t n);
/* How long from now_ms until started_ms + delay_ms (0 if past). */
uint64_t mt_authfail_wait_ms(uint64_t started_ms, uint64_t delay_ms,
			     uint64_t now_ms);
/* The key for a peer: its address without the port, a v4-mapped IPv6
 * address as IPv4. false for what is not IP (AF_UNIX: not tracked). */
bool mt_authfail_key(const struct sockaddr *peer, char *buf, size_t size);

#endif
