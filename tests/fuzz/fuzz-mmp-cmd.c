/* fuzz-mmp-cmd.c — libFuzzer target for the MMP's pre-login POP3 command
 * names (mmp/mmp-parse.c) and the login phase's parsers shared with the
 * store (lib-mail/pop3-login.c over lib/sasl): USER, AUTH and the AUTH
 * PLAIN response, as a user's and as the proxy's (authzid allowed).
 *
 * Properties, beyond "no crash, no over-read":
 *  - the command is found exactly when the text before the first space
 *    equals CAPA, USER, PASS, AUTH, STLS or QUIT regardless of case (a
 *    reference table written here); the argument is the line's tail after
 *    that one space;
 *  - USER is missing, too long or fine exactly by the reference rule
 *    (empty; over 254 octets); AUTH lists, refuses or takes PLAIN as a
 *    reference splitter does, and the initial response is the line's tail
 *    after "PLAIN ";
 *  - an accepted PLAIN response is not "=", has a non-empty authcid and
 *    password and names USER would take, and its base64 re-encodes to the
 *    very line (only canonical base64 passes); an authzid is kept only
 *    when it names someone other than the authcid (ignoring case), and a
 *    user's parse takes exactly the responses without one, the proxy's
 *    every response a user's takes, the same way; the same message with a
 *    different authzid is refused for a user (no user can act as another)
 *    and taken with that authzid for the proxy.
 *
 * Input: lines split at LF (a CR before it is dropped, as lib/lineio
 * does); each goes through every parser as a command line and as a SASL
 * response line, and an AUTH PLAIN initial response as a response too.
 * Trust boundary: POP3 client lines before login (RFC 1939 3, 7; RFC 5034
 * 4; RFC 4616). */
#include "fuzz.h"

#include <string.h>

#include "mmp/mmp-parse.h"
#include "pop3-login.h"
#include "sasl.h"
#include "buf.h"

/* Written out here, in the order of enum mmp_command_id. */
static const char *const ref_names[] = { "CAPA", "USER", "PASS", "AUTH", "STLS", "QUIT" };
#define REF_COUNT (sizeof(ref_names) / sizeof(ref_names[0]))
_Static_assert(REF_COUNT == MMP_CMD_UNKNOWN, "the MMP table changed");

static const char *check_command(const char *line)
{
	const char *args = NULL, *want_args;
	enum mmp_command_id id = mmp_parse_command(line, &args);
	size_t want = fuzz_ref_command(line, ref_names, REF_COUNT, &want_args);

	FUZZ_CHECK((size_t)id == want, "command %d, reference %zu", id, want);
	const char *keyword = mmp_command_keyword(id);
	FUZZ_CHECK(id == MMP_CMD_UNKNOWN ? keyword == NULL :
		   keyword != NULL && strcmp(keyword, ref_names[want]) == 0, "keyword");
	FUZZ_CHECK(want_args != NULL ? args == want_args : args[0] == '\0',
		   "argument misplaced");
	return args;
}

static void check_user(const char *args)
{
	size_t len = strlen(args);
	enum mt_pop3_user_status want = len == 0 ? MT_POP3_USER_MISSING :
		len > 254 ? MT_POP3_USER_TOO_LONG : MT_POP3_USER_OK;
	FUZZ_CHECK(mt_pop3_parse_user(args) == want, "USER status");
}

/* AUTH's argument: the initial response if it is PLAIN with one. */
static const char *check_auth(const char *args)
{
	const char *initial = args;
	enum mt_pop3_auth_kind kind = mt_pop3_parse_auth(args, &initial);
	size_t mlen = strcspn(args, " ");
	bool space = args[mlen] == ' ';
	enum mt_pop3_auth_kind want = args[0] == '\0' ? MT_POP3_AUTH_LIST :
		mlen == 5 && strncasecmp(args, "plain", 5) == 0 ? MT_POP3_AUTH_PLAIN :
		MT_POP3_AUTH_UNSUPPORTED;

	FUZZ_CHECK(kind == want, "AUTH kind %d, reference %d", kind, want);
	if (kind == MT_POP3_AUTH_PLAIN && space)
		FUZZ_CHECK(initial == args + 6, "initial response misplaced");
	else
		FUZZ_CHECK(initial == NULL, "initial response without one");
	return initial;
}

static void check_plain(const char *b64)
{
	struct mt_sasl_plain p, q;
	const char *error = NULL;
	bool taken = mt_pop3_parse_plain(b64, false, &p, &error);
	bool taken_proxy = mt_pop3_parse_plain(b64, true, &q, &error);

	/* What a user may send, a proxy may too, and the same way. */
	FUZZ_CHECK(!taken || (taken_proxy && strcmp(p.authcid, q.authcid) == 0 &&
			      strcmp(p.passwd, q.passwd) == 0 && q.authzid[0] == '\0'),
		   "the proxy's parse differs");
	if (!taken_proxy) {
		FUZZ_CHECK(error != NULL && error[0] != '\0', "refused without a reason");
		FUZZ_CHECK(p.authcid[0] == '\0' && q.authcid[0] == '\0', "not zeroed");
		return;
	}
	FUZZ_CHECK(strcmp(b64, "=") != 0, "\"=\" accepted");
	size_t zl = strlen(q.authzid), cl = strlen(q.authcid), pl = strlen(q.passwd);
	FUZZ_CHECK(cl > 0 && pl > 0, "empty authcid or password");
	FUZZ_CHECK(mt_pop3_parse_user(q.authcid) == MT_POP3_USER_OK && zl <= 254,
		   "name too long");
	/* An authzid is kept only when it names someone else, and a user's
	 * parse takes exactly the responses without one. */
	FUZZ_CHECK(zl == 0 || strcasecmp(q.authzid, q.authcid) != 0, "own authzid kept");
	FUZZ_CHECK(taken == (zl == 0), "acting as someone else");
	/* Only canonical base64 passes: the message re-encodes to the line. */
	unsigned char msg[MT_SASL_MESSAGE_MAX];
	size_t len;
	FUZZ_CHECK(mt_base64_decode(b64, strlen(b64), msg, sizeof(msg), &len, &error),
		   "accepted, but not base64");
	struct mt_buf enc = MT_BUF_INIT;
	mt_base64_encode(msg, len, &enc);
	FUZZ_CHECK(strcmp(mt_buf_cstr(&enc), b64) == 0, "not the canonical base64");

	/* The same login on behalf of another identity: refused for a user,
	 * taken with that identity for the proxy. */
	char other[MT_SASL_ID_MAX + 2];
	other[0] = '!';
	memcpy(other + 1, q.authcid, cl + 1);
	if (cl + 1 <= 254) {
		struct mt_sasl_plain r;
		mt_buf_reset(&enc);
		mt_sasl_plain_encode(&enc, other, q.authcid, q.passwd);
		FUZZ_CHECK(!mt_pop3_parse_plain(mt_buf_cstr(&enc), false, &r, &error),
			   "authzid '%s' for '%s' accepted", other, q.authcid);
		FUZZ_CHECK(mt_pop3_parse_plain(mt_buf_cstr(&enc), true, &r, &error) &&
			   strcmp(r.authzid, other) == 0, "the proxy's authzid lost");
		mt_sasl_plain_wipe(&r);
	}
	mt_buf_free(&enc);
	mt_sasl_plain_wipe(&p);
	mt_sasl_plain_wipe(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };

	char *line;
	while ((line = fuzz_line(&in)) != NULL) {
		const char *args = check_command(line);
		check_user(args);
		const char *initial = check_auth(args);
		if (initial != NULL)
			check_plain(initial);
		check_plain(line);
		free(line);
	}
	return 0;
}
