/* bdb-lock.c — the serving process's lock file (see bdb-lock.h). */
#include "bdb-lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

int mt_bdb_lock_take(const char *dir, const char *name, int *fd_r)
{
	char path[4096];
	*fd_r = -1;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return ENAMETOOLONG;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno;
		close(fd);
		return err;
	}
	*fd_r = fd;
	return 0;
}
