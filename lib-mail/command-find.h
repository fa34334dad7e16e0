/* command-find.h — the one verb lookup of every line protocol here (the
 * MTA's SMTP, the store's LMTP and POP3, the MMP's POP3 login, the load
 * generator's sink): the verb is the text up to the first space, matched
 * against a command table's names without regard to case; the argument is
 * everything after that one space ("" if there is none), kept as sent.
 *
 * The table is any array whose elements hold the name as a `const char *`
 * at the same place: give the address of the first element's name and the
 * element size (for a plain array of names, sizeof(char *)).
 *
 * Trust boundary: a client's command line, NUL-terminated, without CR or
 * LF (lib/lineio). Nothing is allocated; the argument points into line.
 * RFC 5321 4.1.1 (verbs are case-insensitive; LMTP keeps that, RFC 2033
 * 4), RFC 1939 3 ("keywords ... are case-insensitive", "a single SPACE
 * character" between keyword and argument). */
#ifndef MT_COMMAND_FIND_H
#define MT_COMMAND_FIND_H

#include <stdbool.h>
#include <stddef.h>

/* The index of line's verb among the count names at first_name, stride
 * bytes apart (false when it is none of them); *arg_r is set either way. */
bool mt_command_find(const char *line, const char *const *first_name,
		     size_t count, size_t stride, unsigned int *index_r,
		     const char **arg_r);

#endif
