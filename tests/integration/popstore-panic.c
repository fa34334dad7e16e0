/* popstore-panic.c — test helper: put a running store's Berkeley DB
 * environment into the panic state (DB_ENV->set_flags(DB_PANIC_ENVIRONMENT)),
 * as a failed write or corrupted log would, so the test can check that
 * mailtier-popstore answers temporary errors, logs it and exits non-zero
 * (and recovers at the next start).
 *
 *	popstore-panic DB_HOME
 *
 * Trust boundary: test code run on a scratch store. No RFC applies. */
#include <db.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	DB_ENV *env;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: popstore-panic DB_HOME\n");
		return 2;
	}
	if ((ret = db_env_create(&env, 0)) != 0) {
		fprintf(stderr, "db_env_create: %s\n", db_strerror(ret));
		return 1;
	}
	/* Join the environment the daemon created (no DB_CREATE, no recovery). */
	ret = env->open(env, argv[1], DB_JOINENV | DB_INIT_MPOOL | DB_INIT_LOCK |
			DB_INIT_LOG | DB_INIT_TXN | DB_THREAD, 0);
	if (ret != 0) {
		fprintf(stderr, "DB_ENV->open(%s): %s\n", argv[1], db_strerror(ret));
		return 1;
	}
	ret = env->set_flags(env, DB_PANIC_ENVIRONMENT, 1);
	printf("panic set: %s\n", db_strerror(ret));
	/* No close: the environment is in panic; just leave. */
	return ret == 0 ? 0 : 1;
}
