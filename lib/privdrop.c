/* privdrop.c — switch from root to the configured unprivileged user (see
 * privdrop.h): supplementary groups, then gid, then uid — the order matters,
 * since after setuid() we could no longer change groups — and finally a check
 * that uid 0 cannot be regained. Before that the capability bounding set is
 * emptied and afterwards no_new_privs set, so that not even an exec could
 * give anything back (a daemon started by hand has no unit to do it).
 *
 * Trust boundary: names from the administrator's config only. */
#include "privdrop.h"
#include "log.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

/* Start-up runs this once, in one thread: a static buffer is enough. */
static _Thread_local char privdrop_error[256];

static const char *fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(privdrop_error, sizeof(privdrop_error), fmt, ap);
	va_end(ap);
	return privdrop_error;
}

static bool lookup(const char *user, const char *group, uid_t *uid_r,
		   gid_t *gid_r, const char **error_r)
{
	errno = 0;
	struct passwd *pw = getpwnam(user);
	if (pw == NULL) {
		*error_r = errno == 0 ? fail("unknown user '%s'", user) :
			fail("getpwnam(%s): %s", user, strerror(errno));
		return false;
	}
	*uid_r = pw->pw_uid;
	*gid_r = pw->pw_gid;
	if (group != NULL && group[0] != '\0') {
		errno = 0;
		struct group *gr = getgrnam(group);
		if (gr == NULL) {
			*error_r = errno == 0 ? fail("unknown group '%s'", group) :
				fail("getgrnam(%s): %s", group, strerror(errno));
			return false;
		}
		*gid_r = gr->gr_gid;
	}
	if (*uid_r == 0) {
		*error_r = fail("user '%s' has uid 0; configure an unprivileged user",
				user);
		return false;
	}
	return true;
}

/* Empty the bounding set (needs CAP_SETPCAP, which root has; where a
 * container withholds it, the set is left and that is logged). */
static void drop_bounding_set(void)
{
	int last = 63;
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
	if (f != NULL) {
		if (fscanf(f, "%d", &last) != 1 || last < 0 || last > 63)
			last = 63;
		fclose(f);
	}
	int failed = 0;
	for (int cap = 0; cap <= last; cap++) {
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
			failed++;
	}
	if (failed > 0)
		mt_warning("privdrop: %d capabilities left in the bounding set: %s",
			   failed, strerror(errno));
}

bool mt_privdrop(const char *user, const char *group, const char **error_r)
{
	uid_t uid;
	gid_t gid;

	if (user == NULL || user[0] == '\0') {
		mt_info("privdrop=skipped reason=\"no user configured\" uid=%u",
			(unsigned int)geteuid());
		return true;
	}
	if (!lookup(user, group, &uid, &gid, error_r))
		return false;
	if (geteuid() != 0) {
		mt_info("privdrop=skipped reason=\"not running as root\" uid=%u "
			"user=%s", (unsigned int)geteuid(), user);
		return true;
	}

	drop_bounding_set();
	/* Supplementary groups first: the user's own, plus gid. */
	if (initgroups(user, gid) < 0) {
		*error_r = fail("initgroups(%s): %s", user, strerror(errno));
		return false;
	}
	if (setresgid(gid, gid, gid) < 0) {
		*error_r = fail("setresgid(%u): %s", (unsigned int)gid,
				strerror(errno));
		return false;
	}
	/* glibc applies set*id() to every thread of the process. */
	if (setresuid(uid, uid, uid) < 0) {
		*error_r = fail("setresuid(%u): %s", (unsigned int)uid,
				strerror(errno));
		return false;
	}

	/* Trust, but verify: all three ids changed and root is out of reach. */
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	if (getresuid(&ruid, &euid, &suid) < 0 ||
	    getresgid(&rgid, &egid, &sgid) < 0 ||
	    ruid != uid || euid != uid || suid != uid ||
	    rgid != gid || egid != gid || sgid != gid) {
		*error_r = fail("privilege drop to %s left other ids in place", user);
		return false;
	}
	if (setuid(0) == 0 || seteuid(0) == 0) {
		*error_r = fail("uid 0 can be regained after dropping to %s", user);
		return false;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		*error_r = fail("prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
		return false;
	}
	mt_info("privdrop=done user=%s uid=%u gid=%u", user, (unsigned int)uid,
		(unsigned int)gid);
	return true;
}
