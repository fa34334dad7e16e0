/* standalone-main.c — runs a fuzz target over files once, without libFuzzer,
 * so `make check` replays every seed corpus (and every crasher kept as a
 * regression seed) with the normal compiler, under ASan/UBSan in the
 * sanitizer build.
 *
 *   fuzz-NAME                 every file in $MT_SRCDIR/tests/fuzz/corpus/NAME
 *   fuzz-NAME FILE|DIR...     those files (reproduce a crash under gdb)
 *
 * Each input is copied into a buffer of exactly its size, as libFuzzer does,
 * so an over-read by one octet is an ASan error here too.
 * Trust boundary: the files are test data from the source tree. */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static unsigned int n_run;

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Read the whole file into a buffer of exactly its size (NULL for empty). */
static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	size_t len = 0, cap = 0, n;
	uint8_t chunk[4096];

	if (f == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (len + n > cap) {
			cap = (len + n) * 2;
			data = realloc(data, cap);
			if (data == NULL) {
				fprintf(stderr, "out of memory\n");
				exit(1);
			}
		}
		memcpy(data + len, chunk, n);
		len += n;
	}
	fclose(f);
	/* Exactly len octets, so ASan sees a read past the end. */
	uint8_t *exact = len > 0 ? malloc(len) : NULL;

	if (len > 0) {
		if (exact == NULL) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		memcpy(exact, data, len);
	}
	free(data);
	if (getenv("FUZZ_VERBOSE") != NULL)
		fprintf(stderr, "running %s (%zu octets)\n", path, len);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	n_run++;
	return 0;
}

/* Every regular file in dir, in name order (skips dot files). */
static int run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t count = 0;
	int ret = 0;

	if (d == NULL) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		names = realloc(names, (count + 1) * sizeof(*names));
		if (names == NULL || (names[count] = strdup(de->d_name)) == NULL) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		count++;
	}
	closedir(d);
	qsort(names, count, sizeof(*names), cmp_names);
	for (size_t i = 0; i < count; i++) {
		size_t plen = strlen(dir) + strlen(names[i]) + 2;
		char *path = malloc(plen);
		struct stat st;

		if (path == NULL) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		snprintf(path, plen, "%s/%s", dir, names[i]);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    run_file(path) < 0)
			ret = -1;
		free(path);
		free(names[i]);
	}
	free(names);
	return ret;
}

static int run_path(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	return S_ISDIR(st.st_mode) ? run_dir(path) : run_file(path);
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	int ret = 0;

	base = base != NULL ? base + 1 : argv[0];
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (run_path(argv[i]) < 0)
				ret = 1;
	} else {
		/* fuzz-NAME (or lt-fuzz-NAME) reads corpus/NAME. */
		const char *name = strstr(base, "fuzz-");
		const char *srcdir = getenv("MT_SRCDIR");
		char dir[4096];

		if (srcdir == NULL)
			srcdir = MT_SOURCE_DIR;
		if (name == NULL) {
			fprintf(stderr, "%s: cannot tell the target name\n", base);
			return 1;
		}
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", srcdir,
			 name + 5);
		if (run_dir(dir) < 0)
			ret = 1;
	}
	printf("%s: %u inputs, %s\n", base, n_run, ret == 0 ? "ok" : "errors");
	if (ret == 0 && n_run == 0) {
		fprintf(stderr, "%s: no inputs found\n", base);
		ret = 1;
	}
	return ret;
}
