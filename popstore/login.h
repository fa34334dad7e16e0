/* login.h — what a login means on this shard, for POP3 and IMAP alike
 * (pop3-auth.c, imap-auth.c): a user's own password verified by
 * libdirsvc, or the MMP's proxy credential acting for a user (an
 * authorization identity; only from proxy_addresses), the user's mailHost
 * checked to be this shard, and a failed login's answer held back by the
 * failure delay (lib/authfail.h). The protocol's login commands and
 * replies are the session's (lib-mail's login phases); this calls back
 * with the outcome.
 *
 * Trust boundary: names and passwords are the client's. Passwords go only
 * to libdirsvc or into a constant-time comparison with the proxy
 * credential, and are never kept or logged. Every failure that is the
 * client's ends in the same FAILED outcome, whether the user exists or
 * not.
 *
 * Failure timing: FAILED comes auth_fail_delay after the credentials
 * arrived, not when the directory answers, so a real user's slow password
 * hash and an unknown user's quick miss end at the same moment. The delay
 * doubles per failure from the client address within auth_fail_window
 * (lib/authfail.c, as the MTA's and the MMP's), at most 60 s. Two kinds of
 * client are treated otherwise, because they share one address:
 *   - the MMP's proxy logins (the proxy credential with the user as
 *     authzid, from proxy_addresses) are answered at once and never
 *     counted. The MMP checked the user's password itself, delays its own
 *     clients' failures per their real address and hides the directory's
 *     time from them; here all its users share its address, so counting
 *     would throttle every one of them for one guesser, and a delayed
 *     answer would outlast the MMP's backend_connect_timeout and mark this
 *     shard down. Whoever holds the proxy credential may open any mailbox
 *     anyway, so the timing of its failures tells nothing; guessing the
 *     credential itself is not: a wrong proxy credential (name,
 *     password, or from an address not in proxy_addresses) is delayed
 *     and counted per address like a user's wrong password, from
 *     proxy_addresses too, and its one warning line is written at most
 *     once a second per address (lib/loglimit.h). (The credential should
 *     be long and random all the same.)
 *   - a user's own password from proxy_addresses (a trusted local client)
 *     gets the first delay every time, not counted: its timing is hidden
 *     but no address-wide penalty grows against the MMP's host.
 * The delay's timer belongs to the login and is freed with it, so a client
 * that goes away during the delay leaves nothing to fire. */
#ifndef MT_POPSTORE_LOGIN_H
#define MT_POPSTORE_LOGIN_H

#include "popstore.h"
#include "log.h"

#include <stdbool.h>
#include <stdint.h>

struct event;
struct mt_dirsvc_request;

enum popstore_login_outcome {
	POPSTORE_LOGIN_OK,		/* address: the mailbox's owner */
	POPSTORE_LOGIN_FAILED,		/* the client's: after the delay */
	POPSTORE_LOGIN_WRONG_SHARD,	/* the user lives on another shard */
	POPSTORE_LOGIN_TEMPFAIL,	/* the directory could not answer */
};

/* The outcome; address valid during the call (OK only). May run inside
 * popstore_login_start (a refused proxy login is answered at once). */
typedef void popstore_login_cb_t(void *context,
				 enum popstore_login_outcome outcome,
				 const char *address);

struct popstore_login {
	struct popstore *ps;
	struct mt_logctx *log;
	const char *protocol;		/* "pop3", "imap": its log lines' word */
	bool from_proxy;		/* the peer is in proxy_addresses */
	const char *peer_ip;		/* the failure-delay key; "" if not IP */
	popstore_login_cb_t *cb;
	void *context;
	/* Private */
	char *user;
	char *authcid;			/* a refused proxy credential's name */
	bool credential_failed;		/* the proxy credential was refused */
	const char *method;
	uint64_t started_ms;
	struct event *delay_timer;
	bool delaying;
	struct mt_dirsvc_request *dir_req;
};

/* Verify: authzid "" (or NULL) for a user's own password, else the proxy
 * credential (authcid, password) acting for authzid. method names the
 * client's way ("user", "plain", "login") in log lines; a proxy login is
 * "proxy" (popstore_login_method). */
void popstore_login_start(struct popstore_login *login, const char *authzid,
			  const char *authcid, const char *password,
			  const char *method);
const char *popstore_login_method(const struct popstore_login *login);
/* Waiting on the directory or the failure delay. */
bool popstore_login_busy(const struct popstore_login *login);
/* Cancel what is in flight (no callback) and free what it holds. */
void popstore_login_free(struct popstore_login *login);

#endif
