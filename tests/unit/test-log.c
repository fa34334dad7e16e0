/* test-log.c — unit tests for the logger (lib/log.c): line format per
 * target, session/queue context, control-character escaping, level filter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static int pipe_fds[2];

static int setup(void **state)
{
	if (pipe(pipe_fds) != 0)
		return -1;
	mt_log_redirect_fd(pipe_fds[1]);
	mt_log_set_min_level(MT_LOG_INFO);
	return 0;
}

static int teardown(void **state)
{
	mt_log_redirect_fd(-1);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	return 0;
}

/* Read what was logged since the last call (lines are small). */
static char *drain(void)
{
	static char out[8192];
	mt_log(MT_LOG_ERROR, "%s", "--end--");
	size_t len = 0;
	for (;;) {
		ssize_t n = read(pipe_fds[0], out + len, sizeof(out) - 1 - len);
		assert_true(n > 0);
		len += (size_t)n;
		out[len] = '\0';
		if (strstr(out, "--end--\n") != NULL)
			break;
	}
	*strstr(out, "--end--") = '\0';
	char *nl = strrchr(out, '\n');
	if (nl != NULL)
		nl[1] = '\0';
	else
		out[0] = '\0';
	return out;
}

static void test_plain_line(void **state)
{
	mt_log_init("test-log", MT_LOG_TARGET_STDERR);
	mt_info("event=start port=%d", 25);
	char *out = drain();
	assert_non_null(strstr(out, " test-log["));
	assert_non_null(strstr(out, "] info: event=start port=25\n"));
	/* ISO 8601 UTC timestamp first. */
	assert_int_equal(out[4], '-');
	assert_int_equal(out[10], 'T');
}

static void test_session_context(void **state)
{
	struct mt_logctx ctx = { .session_id = 0x1234abcdULL };
	mt_slog(MT_LOG_WARNING, &ctx, "event=rcpt to=<a@b>");
	char *out = drain();
	assert_non_null(strstr(out, "warning: session=000000001234abcd event=rcpt to=<a@b>\n"));
	assert_null(strstr(out, "queue="));
	strcpy(ctx.queue_id, "Q42");
	mt_slog(MT_LOG_INFO, &ctx, "event=queued");
	out = drain();
	assert_non_null(strstr(out, "session=000000001234abcd queue=Q42 event=queued\n"));
}

static void test_escapes_control_characters(void **state)
{
	mt_info("helo=%s", "evil\r\nfake: line\x01");
	char *out = drain();
	assert_non_null(strstr(out, "helo=evil\\x0d\\x0afake: line\\x01\n"));
	/* Exactly one line came out. */
	assert_int_equal(strchr(out, '\n') - out + 1, (long)strlen(out));
}

static void test_level_filter(void **state)
{
	mt_debug("hidden=1");
	char *out = drain();
	assert_null(strstr(out, "hidden"));
	mt_log_set_min_level(MT_LOG_DEBUG);
	mt_debug("shown=1");
	out = drain();
	assert_non_null(strstr(out, "debug: shown=1"));
	mt_log_set_min_level(MT_LOG_INFO);

	enum mt_log_level level;
	assert_true(mt_log_level_parse("warning", &level));
	assert_int_equal(level, MT_LOG_WARNING);
	assert_false(mt_log_level_parse("loud", &level));
}

static void test_journal_prefix(void **state)
{
	mt_log_redirect_fd(-1);
	mt_log_init("test-log", MT_LOG_TARGET_JOURNAL);
	/* The journal target writes to stderr: point stderr at our pipe. */
	int saved = dup(2);
	dup2(pipe_fds[1], 2);
	mt_error("event=fail");
	mt_info("event=ok");
	dup2(saved, 2);
	close(saved);
	char out[512] = "";
	ssize_t n = read(pipe_fds[0], out, sizeof(out) - 1);
	assert_true(n > 0);
	out[n] = '\0';
	assert_string_equal(out, "<3>error: event=fail\n<6>info: event=ok\n");
	mt_log_redirect_fd(pipe_fds[1]);
	mt_log_init("test-log", MT_LOG_TARGET_STDERR);
}

static void test_session_ids_unique(void **state)
{
	uint64_t prev = mt_session_id_new();
	assert_int_not_equal(prev, 0);
	for (int i = 0; i < 1000; i++) {
		uint64_t id = mt_session_id_new();
		assert_int_not_equal(id, prev);
		prev = id;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_line),
		cmocka_unit_test(test_session_context),
		cmocka_unit_test(test_escapes_control_characters),
		cmocka_unit_test(test_level_filter),
		cmocka_unit_test(test_journal_prefix),
		cmocka_unit_test(test_session_ids_unique),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
