/* bdb-regions.c — region files backed by allocated blocks (see
 * bdb-regions.h). */
#include "bdb-regions.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One line of /proc/self/maps that maps a region file __db.NNN of home:
 * its path and the mapping's length. */
static bool region_mapping(const char *line, const char *home, size_t home_len,
			   char *path, size_t path_size, uint64_t *len_r)
{
	unsigned long long start, end;
	int pos = -1;
	if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &start, &end, &pos) < 2 ||
	    pos < 0 || end < start)
		return false;
	const char *p = line + pos;
	size_t n = strcspn(p, "\n");
	if (n >= path_size || n <= home_len + 1 ||
	    strncmp(p, home, home_len) != 0 || p[home_len] != '/' ||
	    strncmp(p + home_len + 1, "__db.", 5) != 0)
		return false;
	const char *suffix = p + home_len + 6;
	size_t digits = strspn(suffix, "0123456789");
	if (digits == 0 || (suffix[digits] != '\n' && suffix[digits] != '\0'))
		return false;	/* __db.register and the like are not regions */
	memcpy(path, p, n);
	path[n] = '\0';
	*len_r = end - start;
	return true;
}

int mt_bdb_prealloc_regions(const char *home, unsigned int *regions_r,
			    uint64_t *bytes_r, char *failed_path,
			    size_t failed_size)
{
	*regions_r = 0;
	*bytes_r = 0;
	if (failed_size > 0)
		failed_path[0] = '\0';
	char real[PATH_MAX];
	if (realpath(home, real) == NULL)
		return errno;
	FILE *maps = fopen("/proc/self/maps", "re");
	if (maps == NULL)
		return errno;
	const size_t home_len = strlen(real);
	char line[PATH_MAX + 256], path[PATH_MAX];
	int ret = 0;
	while (ret == 0 && fgets(line, sizeof(line), maps) != NULL) {
		uint64_t len;
		if (!region_mapping(line, real, home_len, path, sizeof(path), &len))
			continue;
		int fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0 || fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)len) < 0) {
			ret = errno;
			if (failed_size > 0)
				snprintf(failed_path, failed_size, "%s", path);
		} else {
			(*regions_r)++;
			*bytes_r += len;
		}
		if (fd >= 0)
			close(fd);
	}
	fclose(maps);
	return ret == 0 && *regions_r == 0 ? ENOENT : ret;
}
