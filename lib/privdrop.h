/* privdrop.h — drop root privileges after the listeners are bound.
 *
 * Trust boundary: the user and group names come from the administrator's
 * config; nothing from the network reaches here. No RFC applies. Call it once, in the main
 * thread, before starting worker threads. */
#ifndef MT_PRIVDROP_H
#define MT_PRIVDROP_H

#include <stdbool.h>

/* Become user (and group, or the user's primary group when group is NULL or
 * empty), with the user's supplementary groups, then check that root cannot
 * be regained. A no-op with a log line when user is NULL or empty, or when
 * not running as root (after checking the names exist). false with a static
 * error (valid until the next call) on an unknown user or group, a user
 * with uid 0, or a failed or incomplete switch: the caller must not go on. */
bool mt_privdrop(const char *user, const char *group, const char **error_r);

#endif
