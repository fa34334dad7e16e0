/* test-privdrop.c — unit tests for lib/privdrop: unknown names are errors,
 * an empty user is a no-op, and (when run as root) a forked child really
 * becomes `nobody`, loses root's groups and cannot get uid 0 back. */
#include "privdrop.h"
#include "log.h"

#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static void test_unknown_names(void **state)
{
	const char *error = NULL;
	(void)state;

	assert_false(mt_privdrop("no-such-user-mailtier", NULL, &error));
	assert_non_null(strstr(error, "unknown user 'no-such-user-mailtier'"));
	assert_false(mt_privdrop("nobody", "no-such-group-mailtier", &error));
	assert_non_null(strstr(error, "unknown group 'no-such-group-mailtier'"));
	/* Still who we were. */
	assert_int_equal(getuid(), geteuid());
}

static void test_refuses_root_user(void **state)
{
	const char *error = NULL;
	(void)state;
	assert_false(mt_privdrop("root", NULL, &error));
	assert_non_null(strstr(error, "uid 0"));
}

static void test_empty_user_is_noop(void **state)
{
	const char *error = "unset";
	uid_t uid = geteuid();
	(void)state;
	assert_true(mt_privdrop(NULL, NULL, &error));
	assert_true(mt_privdrop("", "", &error));
	assert_int_equal(geteuid(), uid);
	assert_string_equal(error, "unset");
}

static void test_not_root_is_noop(void **state)
{
	const char *error = NULL;
	(void)state;
	if (geteuid() == 0)
		skip();	/* covered by test_drop_to_nobody */
	uid_t uid = geteuid();
	assert_true(mt_privdrop("nobody", NULL, &error));
	assert_int_equal(geteuid(), uid);
}

/* In a child: drop, then report which check failed as the exit code. */
static int child_drop(const char *user, const char *group, uid_t want_uid,
		      gid_t want_gid)
{
	const char *error = NULL;
	if (!mt_privdrop(user, group, &error)) {
		fprintf(stderr, "mt_privdrop: %s\n", error);
		return 10;
	}
	if (getuid() != want_uid || geteuid() != want_uid)
		return 11;
	if (getgid() != want_gid || getegid() != want_gid)
		return 12;
	if (setuid(0) == 0 || seteuid(0) == 0 || setgid(0) == 0)
		return 13;
	gid_t groups[256];
	int n = getgroups(256, groups);
	if (n < 0)
		return 14;
	for (int i = 0; i < n; i++)
		if (groups[i] == 0)
			return 15;	/* root's supplementary group kept */
	return 0;
}

static void test_drop_to_nobody(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	struct passwd *pw = getpwnam("nobody");
	if (pw == NULL)
		skip();
	uid_t uid = pw->pw_uid;
	gid_t gid = pw->pw_gid;

	/* Give the parent a supplementary group 0 the child must lose. */
	gid_t root_group = 0;
	assert_int_equal(setgroups(1, &root_group), 0);

	struct {
		const char *group;
		gid_t want_gid;
	} cases[] = { { NULL, gid }, { "", gid }, { NULL, 0 } };
	/* An explicit group other than the user's primary one. */
	struct group *gr = getgrnam("daemon");
	int ncases = 2;
	if (gr != NULL && gr->gr_gid != 0) {
		cases[2].group = strdup(gr->gr_name);
		cases[2].want_gid = gr->gr_gid;
		ncases = 3;
	}
	for (int i = 0; i < ncases; i++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child_drop("nobody", cases[i].group, uid,
					 cases[i].want_gid));
		int status = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		if (WEXITSTATUS(status) != 0)
			fail_msg("case %d: child check %d failed", i,
				 WEXITSTATUS(status));
	}
	free((char *)cases[2].group);
	/* The parent is untouched. */
	assert_int_equal(geteuid(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unknown_names),
		cmocka_unit_test(test_refuses_root_user),
		cmocka_unit_test(test_empty_user_is_noop),
		cmocka_unit_test(test_not_root_is_noop),
		cmocka_unit_test(test_drop_to_nobody),
	};
	mt_log_init("test-privdrop", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(MT_LOG_WARNING);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
