/* secret.c — secrets from files (see secret.h). */
#include "secret.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static _Thread_local char error_buf[512];

static const char *error_msg(const char *path, const char *reason)
{
	snprintf(error_buf, sizeof(error_buf), "%s: %s", path, reason);
	return error_buf;
}

char *mt_secret_read(const char *path, const char **error_r)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;

	if (f == NULL) {
		*error_r = error_msg(path, strerror(errno));
		return NULL;
	}
	ssize_t n = getline(&line, &cap, f);
	int read_errno = errno;
	bool failed = ferror(f) != 0;
	fclose(f);
	if (n <= 0) {
		free(line);
		*error_r = error_msg(path, failed ? strerror(read_errno) : "empty");
		return NULL;
	}
	line[strcspn(line, "\r\n")] = '\0';
	if (line[0] == '\0') {
		mt_secret_free(&line);
		*error_r = error_msg(path, "the first line is empty");
		return NULL;
	}
	return line;
}

void mt_secret_free(char **secret_p)
{
	char *secret = *secret_p;
	if (secret == NULL)
		return;
	*secret_p = NULL;
	explicit_bzero(secret, strlen(secret));
	free(secret);
}
