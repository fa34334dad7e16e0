/* mmp-backend-imap.c — the MMP's IMAP login to a store shard: after the
 * shard's "* OK" greeting, one write of two pipelined commands:
 *
 *   m1 ID ("x-originating-ip" "192.0.2.7" "x-originating-port" "51234"
 *          "x-session-ext-id" "<the MMP's session id>")
 *   m2 AUTHENTICATE PLAIN <base64 of user NUL proxy_user NUL password>
 *
 * so the store's log lines and its view of the client name the real client
 * and the one session id an operator follows across tiers (Dovecot's proxy
 * sends the same ID fields). The answer to m2 decides: OK (its text, with
 * the store's [CAPABILITY ...], goes to the client under the client's own
 * tag), NO (passed on the same way: [AUTHENTICATIONFAILED], [LIMIT],
 * [UNAVAILABLE] are the store's to say), anything else a failure.
 *
 * Trust boundary: the shard is ours but may be broken: lines are bounded
 * (MMP_BACKEND_LINE_MAX), untagged ones before the answer are skipped, a
 * BAD, a BYE or an unknown tag fails the login. The ID values are the
 * TCP peer's numeric address and port and a hex number: nothing a client
 * chose. The proxy password is never logged.
 * RFCs: RFC 9051 7.1.1 (greeting), 6.2.2 (AUTHENTICATE), 7.1 (response
 * codes); RFC 4959 (SASL-IR, which the store offers); RFC 4616 (PLAIN
 * with an authorization identity); RFC 2971 (ID). */
#include "mmp-backend.h"
#include "authfail.h"
#include "buf.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>

#define ID_TAG "m1"
#define LOGIN_TAG "m2"

/* "m1 ID (...)" naming the client's address, port and session. */
static void id_command(const struct mmp_session *sess, struct mt_buf *out)
{
	char ip[MT_AUTHFAIL_KEY_MAX], port[NI_MAXSERV] = "0";
	if (!mt_authfail_key((const struct sockaddr *)&sess->peer, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "unknown");
	(void)getnameinfo((const struct sockaddr *)&sess->peer, sizeof(sess->peer),
			  NULL, 0, port, sizeof(port), NI_NUMERICSERV);
	mt_buf_appendf(out, ID_TAG " ID (\"x-originating-ip\" \"%s\" "
		      "\"x-originating-port\" \"%s\" \"x-session-ext-id\" \"%016llx\")",
		      ip, port, (unsigned long long)sess->log.session_id);
}

static void send_login(struct mmp_backend *b)
{
	struct mt_buf id = MT_BUF_INIT, response = MT_BUF_INIT;
	id_command(b->sess, &id);
	mmp_backend_send(b, mt_buf_cstr(&id), NULL);
	mt_buf_free(&id);
	mmp_backend_plain_response(b, &response);
	mmp_backend_send(b, LOGIN_TAG " AUTHENTICATE PLAIN ", &response);
	explicit_bzero(response.data, response.cap);
	mt_buf_free(&response);
	b->step = STEP_IMAP_LOGIN;
}

/* line starts with word and a space (or is just word). */
static const char *after_word(const char *line, size_t len, const char *word)
{
	size_t n = strlen(word);
	if (len < n || strncmp(line, word, n) != 0)
		return NULL;
	if (len == n)
		return line + n;
	return line[n] == ' ' ? line + n + 1 : NULL;
}

bool mmp_backend_imap_line(struct mmp_backend *b, const char *line, size_t len)
{
	if (b->step == STEP_CONNECT) {
		if (after_word(line, len, "*") == NULL ||
		    after_word(line + 2, len - 2, "OK") == NULL) {
			/* e.g. a replica's "* BYE [UNAVAILABLE] replica of
			 * shard S, master is ...": the line goes to the log. */
			mmp_backend_finish(b, MMP_BACKEND_FAILED, line, "no OK greeting");
			return false;
		}
		send_login(b);
		return true;
	}
	const char *rest;
	if (after_word(line, len, "*") != NULL) {
		/* "* ID ...", "* CAPABILITY ...": ours to skip; a BYE ends it. */
		if (after_word(line + 2, len - 2, "BYE") != NULL) {
			mmp_backend_finish(b, MMP_BACKEND_FAILED, NULL, "BYE before login");
			return false;
		}
		return true;
	}
	if ((rest = after_word(line, len, ID_TAG)) != NULL) {
		if (strncmp(rest, "OK", 2) != 0)
			mt_slog(MT_LOG_DEBUG, &b->sess->log, "shard %s answered ID: %.80s",
				mmp_shard_name(b->shard), rest);
		return true;
	}
	if (len >= 1 && line[0] == '+') {
		/* A store without SASL-IR asks for the response on its own. */
		struct mt_buf response = MT_BUF_INIT;
		mmp_backend_plain_response(b, &response);
		mmp_backend_send(b, "", &response);
		explicit_bzero(response.data, response.cap);
		mt_buf_free(&response);
		return true;
	}
	rest = after_word(line, len, LOGIN_TAG);
	if (rest != NULL && after_word(rest, strlen(rest), "OK") != NULL)
		mmp_backend_finish(b, MMP_BACKEND_OK, rest, NULL);
	else if (rest != NULL && after_word(rest, strlen(rest), "NO") != NULL)
		mmp_backend_finish(b, MMP_BACKEND_REFUSED, rest, NULL);
	else
		mmp_backend_finish(b, MMP_BACKEND_FAILED, NULL,
				   "unexpected answer to AUTHENTICATE");
	return false;
}
