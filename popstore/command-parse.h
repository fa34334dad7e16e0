/* command-parse.h — how mailtier-popstore's two protocols cut a command
 * line into its verb and argument and find the verb in their command
 * table: the verb is the text up to the first space, matched without
 * regard to case; the argument is everything after that one space ("" if
 * there is none), kept as sent. Shared by pop3-parse.c and lmtp-parse.c.
 *
 * Trust boundary: a client's command line, NUL-terminated, without CR or
 * LF (lib/lineio). Nothing is allocated; the argument points into line.
 * RFC 1939 3 ("keywords ... are case-insensitive", "a single SPACE
 * character" between keyword and argument), RFC 5321 4.1.1 (verbs are
 * case-insensitive), which LMTP keeps (RFC 2033 4). */
#ifndef MT_POPSTORE_COMMAND_PARSE_H
#define MT_POPSTORE_COMMAND_PARSE_H

#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* The index of line's verb in names[0..count), and its argument in
 * *arg_r (set whether or not the verb is known). */
static inline bool popstore_command_find(const char *line, const char *const *names,
					 unsigned int count, unsigned int *index_r,
					 const char **arg_r)
{
	size_t len = strcspn(line, " ");

	*arg_r = line[len] == ' ' ? line + len + 1 : "";
	for (unsigned int i = 0; i < count; i++) {
		if (strlen(names[i]) == len && strncasecmp(names[i], line, len) == 0) {
			*index_r = i;
			return true;
		}
	}
	return false;
}

#endif
