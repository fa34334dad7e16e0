/* command-find.c — verb lookup in a command table (see command-find.h). */
#include "command-find.h"

#include <string.h>
#include <strings.h>

bool mt_command_find(const char *line, const char *const *first_name,
		     size_t count, size_t stride, unsigned int *index_r,
		     const char **arg_r)
{
	size_t len = strcspn(line, " ");
	const char *base = (const char *)first_name;

	*arg_r = line[len] == ' ' ? line + len + 1 : "";
	for (size_t i = 0; i < count; i++) {
		const char *name = *(const char *const *)(const void *)(base + i * stride);
		if (strlen(name) == len && strncasecmp(name, line, len) == 0) {
			*index_r = (unsigned int)i;
			return true;
		}
	}
	return false;
}
