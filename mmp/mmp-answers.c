/* mmp-answers.c — the words of the MMP's own answers in each protocol it
 * proxies, so that the login steps (mmp-login.c), the session's timers and
 * limits (mmp-session.c) and the accept-time refusals (main.c) say one
 * thing in POP3 and IMAP alike; and the listeners' names and protocols.
 * Every session the MMP ends while it speaks to the client ends with one
 * of these lines, which says why: an IMAP client gets a BYE (after the
 * login's tagged answer, when a login ends it), a POP3 client an -ERR
 * (one line: when a login ends the session, its answer says both).
 *
 * Trust boundary: none; fixed texts that quote nothing of any client.
 * RFCs: RFC 2449 section 8 and RFC 3206 (POP3 response codes [AUTH],
 * [SYS/TEMP], [SYS/PERM]); RFC 9051 7.1 (IMAP's AUTHENTICATIONFAILED,
 * UNAVAILABLE, BYE), RFC 5530 (CONTACTADMIN). */
#include "mmp.h"

const char *const mmp_listener_names[MMP_LISTENER_COUNT] = {
	[MMP_LISTENER_POP3] = "pop3", [MMP_LISTENER_POP3S] = "pop3s",
	[MMP_LISTENER_IMAP] = "imap", [MMP_LISTENER_IMAPS] = "imaps",
};

const char *const mmp_protocol_names[MMP_PROTO_COUNT] = {
	[MMP_PROTO_POP3] = "pop3", [MMP_PROTO_IMAP] = "imap",
};

enum mmp_protocol mmp_listener_protocol(enum mmp_listener_kind kind)
{
	return kind == MMP_LISTENER_IMAP || kind == MMP_LISTENER_IMAPS ?
		MMP_PROTO_IMAP : MMP_PROTO_POP3;
}

bool mmp_listener_implicit_tls(enum mmp_listener_kind kind)
{
	return kind == MMP_LISTENER_POP3S || kind == MMP_LISTENER_IMAPS;
}

static const char *const answers[MMP_PROTO_COUNT][MMP_ANSWER_COUNT] = {
	[MMP_PROTO_POP3] = {
		[MMP_ANSWER_AUTH_FAILED] = "-ERR [AUTH] Authentication failed.",
		[MMP_ANSWER_ACCOUNT_DISABLED] = "-ERR [SYS/PERM] Account disabled.",
		[MMP_ANSWER_ACCOUNT_HOLD] =
			"-ERR [SYS/TEMP] Account temporarily unavailable.",
		[MMP_ANSWER_DIRECTORY_DOWN] =
			"-ERR [SYS/TEMP] Directory unavailable, try again later.",
		[MMP_ANSWER_SHARD_DOWN] =
			"-ERR [SYS/TEMP] Mailbox server unavailable, try again later.",
		[MMP_ANSWER_BYE_INACTIVITY] = "-ERR Disconnected for inactivity.",
		[MMP_ANSWER_BYE_ERRORS] = "-ERR Too many errors, closing the connection.",
		[MMP_ANSWER_BYE_SHUTDOWN] = "-ERR [SYS/TEMP] Server shutting down.",
		[MMP_ANSWER_BYE_BLOCKED] = "-ERR [AUTH] Authentication failed; too many "
			"failed logins from your address, closing the connection.",
		[MMP_ANSWER_BYE_LOGIN_TIME] = "-ERR [AUTH] Authentication failed; the "
			"login time is over, closing the connection.",
		[MMP_ANSWER_BYE_CONN_LIMIT] =
			"-ERR [SYS/TEMP] Too many connections, try again later.",
		[MMP_ANSWER_BYE_CLIENT_LIMIT] = "-ERR [SYS/TEMP] Too many connections "
			"from your address, try again later.",
		[MMP_ANSWER_BYE_CLIENT_BLOCKED] = "-ERR [SYS/TEMP] Too many failed "
			"logins from your address, try again later.",
	},
	[MMP_PROTO_IMAP] = {
		[MMP_ANSWER_AUTH_FAILED] = "NO [AUTHENTICATIONFAILED] Authentication failed.",
		[MMP_ANSWER_ACCOUNT_DISABLED] = "NO [CONTACTADMIN] Account disabled.",
		[MMP_ANSWER_ACCOUNT_HOLD] =
			"NO [UNAVAILABLE] Account temporarily unavailable.",
		[MMP_ANSWER_DIRECTORY_DOWN] =
			"NO [UNAVAILABLE] Directory unavailable, try again later.",
		[MMP_ANSWER_SHARD_DOWN] =
			"NO [UNAVAILABLE] Mailbox server unavailable, try again later.",
		[MMP_ANSWER_BYE_INACTIVITY] = "* BYE Disconnected for inactivity.",
		[MMP_ANSWER_BYE_ERRORS] = "* BYE Too many errors, closing the connection.",
		[MMP_ANSWER_BYE_SHUTDOWN] = "* BYE [UNAVAILABLE] Server shutting down.",
		[MMP_ANSWER_BYE_BLOCKED] = "* BYE Too many failed logins.",
		[MMP_ANSWER_BYE_LOGIN_TIME] = "* BYE The login time is over.",
		[MMP_ANSWER_BYE_CONN_LIMIT] =
			"* BYE [UNAVAILABLE] Too many connections, try again later.",
		[MMP_ANSWER_BYE_CLIENT_LIMIT] = "* BYE [UNAVAILABLE] Too many "
			"connections from your address, try again later.",
		[MMP_ANSWER_BYE_CLIENT_BLOCKED] = "* BYE [UNAVAILABLE] Too many failed "
			"logins from your address, try again later.",
	},
};

const char *mmp_answer_text(enum mmp_protocol protocol, enum mmp_answer answer)
{
	return answers[protocol][answer];
}
