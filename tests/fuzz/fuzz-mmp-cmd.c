/* fuzz-mmp-cmd.c — libFuzzer target for the MMP's pre-login POP3 command
 * parsers (mmp/mmp-parse.c, over mmp/mmp-sasl.c and lib/sasl): the
 * command and its argument, USER, AUTH and the AUTH PLAIN response.
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
 *  - an accepted PLAIN response is not "=", decodes to exactly
 *    authzid NUL authcid NUL password inside the buffer, with a non-empty
 *    authcid and password, names USER would take, an authzid that is
 *    empty or the authcid (ignoring case), and re-encodes to the very
 *    line (only canonical base64 passes); the same message with a
 *    different authzid is refused, so no user can act as another.
 *
 * Input: lines split at LF (a CR before it is dropped, as lib/lineio
 * does); each goes through every parser as a command line and as a SASL
 * response line, and an AUTH PLAIN initial response as a response too.
 * Trust boundary: POP3 client lines before login (RFC 1939 3, 7; RFC 5034
 * 4; RFC 4616). */
#include "fuzz.h"

#include <string.h>

#include "mmp/mmp-parse.h"

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
	enum mmp_user_status want = len == 0 ? MMP_USER_MISSING :
		len > 254 ? MMP_USER_TOO_LONG : MMP_USER_OK;
	FUZZ_CHECK(mmp_parse_user(args) == want, "USER status");
}

/* AUTH's argument: the initial response if it is PLAIN with one. */
static const char *check_auth(const char *args)
{
	const char *initial = args;
	enum mmp_auth_kind kind = mmp_parse_auth(args, &initial);
	size_t mlen = strcspn(args, " ");
	bool space = args[mlen] == ' ';
	enum mmp_auth_kind want = args[0] == '\0' ? MMP_AUTH_LIST :
		mlen == 5 && strncasecmp(args, "plain", 5) == 0 ? MMP_AUTH_PLAIN :
		MMP_AUTH_UNSUPPORTED;

	FUZZ_CHECK(kind == want, "AUTH kind %d, reference %d", kind, want);
	if (kind == MMP_AUTH_PLAIN && space)
		FUZZ_CHECK(initial == args + 6, "initial response misplaced");
	else
		FUZZ_CHECK(initial == NULL, "initial response without one");
	return initial;
}

static void check_plain(const char *b64)
{
	struct mt_buf msg = MT_BUF_INIT, again = MT_BUF_INIT, enc = MT_BUF_INIT;
	struct mmp_plain p, q;
	const char *error = NULL;

	if (!mmp_parse_plain_response(b64, &msg, &p, &error)) {
		FUZZ_CHECK(error != NULL && error[0] != '\0', "refused without a reason");
		mt_buf_free(&msg);
		return;
	}
	FUZZ_CHECK(strcmp(b64, "=") != 0, "\"=\" accepted");
	/* authzid NUL authcid NUL password, all of msg. */
	size_t zl = strlen(p.authzid), cl = strlen(p.authcid), pl = strlen(p.password);
	FUZZ_CHECK(p.authzid == msg.data && p.authcid == p.authzid + zl + 1 &&
		   p.password == p.authcid + cl + 1 && zl + cl + pl + 2 == msg.len,
		   "fields are not the message");
	FUZZ_CHECK(cl > 0 && pl > 0, "empty authcid or password");
	FUZZ_CHECK(mmp_parse_user(p.authcid) == MMP_USER_OK && zl <= 254, "name too long");
	FUZZ_CHECK(zl == 0 || strcasecmp(p.authzid, p.authcid) == 0,
		   "acting as someone else");
	mmp_base64_encode(msg.data, msg.len, &enc);
	FUZZ_CHECK(strcmp(mt_buf_cstr(&enc), b64) == 0, "not the canonical base64");

	/* The same login on behalf of another identity is refused. */
	char *other = malloc(cl + 2);
	FUZZ_CHECK(other != NULL, "malloc");
	other[0] = '!';
	memcpy(other + 1, p.authcid, cl + 1);
	mt_buf_reset(&enc);
	mmp_sasl_plain_encode(&enc, other, p.authcid, p.password);
	bool taken = mmp_parse_plain_response(mt_buf_cstr(&enc), &again, &q, &error);
	FUZZ_CHECK(!taken, "authzid '%s' for '%s' accepted", other, p.authcid);
	free(other);
	mt_buf_free(&again);
	mt_buf_free(&enc);
	mt_buf_free(&msg);
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
