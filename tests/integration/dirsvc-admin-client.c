/* dirsvc-admin-client.c — test driver for libdirsvc's admin API
 * (dirsvc-admin.h; not installed): one command per run, against the
 * [directory] section of CONFIG, as its admin_dn. Used by
 * tests/integration/test-dirsvc-admin.py.
 *
 *   dirsvc-admin-client CONFIG add ADDRESS PASSWORD SHARD [ALIAS...]
 *   dirsvc-admin-client CONFIG find ADDRESS
 *   dirsvc-admin-client CONFIG passwd ADDRESS PASSWORD
 *   dirsvc-admin-client CONFIG del ADDRESS
 * Prints "ok" (find: "found N" and then "dn: ..." / "attr: value" lines)
 * and exits 0, or prints "error: MESSAGE" and exits 1; 2 on a usage error.
 * Trust boundary: test input from the test script. */
#include "config.h"
#include "dirsvc-admin.h"
#include "mailtier-settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
	fprintf(stderr, "usage: dirsvc-admin-client CONFIG add ADDRESS PASSWORD SHARD [ALIAS...]\n"
		"       dirsvc-admin-client CONFIG find|del ADDRESS\n"
		"       dirsvc-admin-client CONFIG passwd ADDRESS PASSWORD\n");
	return 2;
}

static bool add(struct mt_dirsvc_admin *admin, int argc, char **argv,
		const char **error_r)
{
	struct mt_buf hash = MT_BUF_INIT;
	struct mt_account acct = {
		.address = argv[0],
		.mail_host = argv[2],
		.aliases = (const char *const *)argv + 3,
		.n_aliases = (size_t)(argc - 3),
		.status = MT_ACCOUNT_ACTIVE,
	};
	bool ok = mt_pw_hash(MT_PW_SHA512_CRYPT, 0, argv[1], &hash, error_r);
	if (ok) {
		acct.password_hash = mt_buf_cstr(&hash);
		ok = mt_dirsvc_admin_add_user(admin, &acct, error_r);
	}
	mt_buf_free(&hash);
	return ok;
}

static bool find(struct mt_dirsvc_admin *admin, const char *address,
		 const char **error_r)
{
	const struct mt_dirsvc_admin_entry *entries;
	int n = mt_dirsvc_admin_find_user(admin, address, &entries, error_r);
	if (n < 0)
		return false;
	printf("found %d\n", n);
	for (int i = 0; i < n; i++) {
		printf("dn: %s\n", entries[i].dn);
		for (size_t j = 0; j < entries[i].n_values; j++)
			printf("%s: %s\n", entries[i].values[j].attr,
			       entries[i].values[j].value);
	}
	return true;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return usage();
	const char *verb = argv[2];
	int nargs = argc - 3;
	char **args = argv + 3;
	if ((strcmp(verb, "add") == 0 && nargs < 3) ||
	    ((strcmp(verb, "find") == 0 || strcmp(verb, "del") == 0) && nargs != 1) ||
	    (strcmp(verb, "passwd") == 0 && nargs != 2))
		return usage();

	char *errors = NULL;
	struct mt_config *config = mt_mailtier_config_load(argv[1], &errors);
	if (config == NULL) {
		fprintf(stderr, "%s", errors);
		free(errors);
		return 1;
	}
	const struct mt_directory_settings *set = mt_config_get(config, "directory", NULL);
	struct mt_dirsvc_admin *admin = mt_dirsvc_admin_new(set);
	const char *error = NULL;
	bool ok = mt_dirsvc_admin_connect(admin, &error);
	if (ok && strcmp(verb, "add") == 0)
		ok = add(admin, nargs, args, &error);
	else if (ok && strcmp(verb, "find") == 0)
		ok = find(admin, args[0], &error);
	else if (ok && strcmp(verb, "passwd") == 0)
		ok = mt_dirsvc_admin_set_password(admin, args[0], args[1],
						  MT_PW_SHA512_CRYPT, &error);
	else if (ok && strcmp(verb, "del") == 0)
		ok = mt_dirsvc_admin_delete_user(admin, args[0], &error);
	else if (ok) {
		ok = false;
		error = "unknown command";
	}
	if (ok && strcmp(verb, "find") != 0)
		printf("ok\n");
	else if (!ok)
		printf("error: %s\n", error);
	mt_dirsvc_admin_free(&admin);
	mt_config_free(&config);
	return ok ? 0 : 1;
}
