/* fuzz-config.c — libFuzzer target for lib/config.c and lib/config-values.c:
 * mt_config_load() on a file holding the input, through the real tables of
 * mailtier.conf (mt_mailtier_sections: [global], [directory], [shards],
 * [tls], [mta], [mmp], [popstore] + [popstore.NAME], [loadgen]) with their
 * value parsers and check functions.
 *
 * Properties, beyond "no crash, no leak":
 *  - exactly one of "a config" and "error text" comes back;
 *  - every error line reads "FILE:LINE: message" (or "FILE: message") with
 *    1 <= LINE <= the number of lines in the file;
 *  - a loaded config has every single section, and every family instance
 *    named in the file;
 *  - loading is deterministic: a second load gives the same errors.
 *
 * The file is an in-memory file (memfd) opened by its /proc/self/fd path,
 * so the real fopen() + getline() + inih path runs without touching disk.
 * Trust boundary: the operator's config file (trusted but checked). */
#include "fuzz.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "mailtier-settings.h"

static int memfd = -1;
static char path[64];

static void write_file(const uint8_t *data, size_t size)
{
	if (memfd < 0) {
		memfd = memfd_create("fuzz-config", 0);
		FUZZ_CHECK(memfd >= 0, "memfd_create failed");
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	}
	FUZZ_CHECK(ftruncate(memfd, 0) == 0, "ftruncate failed");
	for (size_t off = 0; off < size;) {
		ssize_t n = pwrite(memfd, data + off, size - off, (off_t)off);

		FUZZ_CHECK(n > 0, "pwrite failed");
		off += (size_t)n;
	}
}

static unsigned int count_lines(const uint8_t *data, size_t size)
{
	unsigned int lines = 0;

	for (size_t i = 0; i < size; i++)
		if (data[i] == '\n')
			lines++;
	if (size > 0 && data[size - 1] != '\n')
		lines++;
	return lines;
}

static void check_errors(const char *errors, unsigned int lines)
{
	size_t plen = strlen(path);
	const char *p = errors;

	FUZZ_CHECK(*p != '\0', "failure with empty error text");
	while (*p != '\0') {
		const char *nl = strchr(p, '\n');

		FUZZ_CHECK(nl != NULL, "error text does not end in a newline");
		FUZZ_CHECK(strncmp(p, path, plen) == 0 && p[plen] == ':',
			   "error line does not start with the file name: %.*s",
			   (int)(nl - p), p);
		const char *q = p + plen;	/* the ':' after the name */

		if (q[1] >= '0' && q[1] <= '9') {
			unsigned long line = strtoul(q + 1, (char **)&q, 10);

			FUZZ_CHECK(*q == ':' && line >= 1 && line <= lines,
				   "error line number %lu of %u lines: %.*s",
				   line, lines, (int)(nl - p), p);
		}
		FUZZ_CHECK(q[0] == ':' && q[1] == ' ' && q + 2 < nl,
			   "error line without a message: %.*s",
			   (int)(nl - p), p);
		p = nl + 1;
	}
}

static void check_config(const struct mt_config *config,
			 const uint8_t *data, size_t size)
{
	for (const struct mt_section_def *const *d = mt_mailtier_sections;
	     *d != NULL; d++) {
		if ((*d)->kind == MT_SECTION_MAP)
			continue;
		FUZZ_CHECK(mt_config_get(config, (*d)->name, NULL) != NULL,
			   "section [%s] missing from a loaded config",
			   (*d)->name);
	}
	/* Each [popstore.NAME] header at the start of a line has its
	 * instance (headers are only taken at the start, after blanks). */
	for (size_t i = 0; i < size; i++) {
		static const char hdr[] = "[popstore.";
		size_t hl = sizeof(hdr) - 1;

		if ((i != 0 && data[i - 1] != '\n') || size - i < hl + 2 ||
		    memcmp(data + i, hdr, hl) != 0)
			continue;
		const uint8_t *close = memchr(data + i + hl, ']',
					      size - i - hl);
		const uint8_t *nl = memchr(data + i, '\n', size - i);

		if (close == NULL || (nl != NULL && close > nl) ||
		    close == data + i + hl)
			continue;
		char name[256];
		size_t nlen = (size_t)(close - (data + i + hl));

		if (nlen >= sizeof(name) || memchr(data + i + hl, '\0', nlen))
			continue;
		memcpy(name, data + i + hl, nlen);
		name[nlen] = '\0';
		FUZZ_CHECK(mt_config_get(config, "popstore", name) != NULL,
			   "[popstore.%s] in the file but not in the config",
			   name);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *errors = NULL, *errors2 = NULL;
	struct mt_config *config, *config2;

	write_file(data, size);
	config = mt_config_load(path, mt_mailtier_sections, &errors);
	FUZZ_CHECK((config == NULL) != (errors == NULL),
		   "config %p with errors %p", (void *)config, (void *)errors);
	if (config != NULL)
		check_config(config, data, size);
	else
		check_errors(errors, count_lines(data, size));

	config2 = mt_config_load(path, mt_mailtier_sections, &errors2);
	FUZZ_CHECK((config2 == NULL) == (config == NULL) &&
		   (errors == NULL || strcmp(errors, errors2) == 0),
		   "second load differs");
	mt_config_free(&config);
	mt_config_free(&config2);
	FUZZ_CHECK(config == NULL, "mt_config_free did not clear the pointer");
	free(errors);
	free(errors2);
	return 0;
}
