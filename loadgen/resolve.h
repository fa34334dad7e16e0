/* resolve.h — the load generator's address and descriptor helpers:
 * resolving "host:port" for connecting, and raising the descriptor limit
 * (each open session holds one).
 * Trust boundary: operator-given addresses. */
#ifndef LG_RESOLVE_H
#define LG_RESOLVE_H

#include <stdbool.h>
#include <sys/socket.h>

/* Resolve "host:port" / "[v6]:port" for connecting; false with a reason. */
bool lg_resolve(const char *hostport, struct sockaddr_storage *ss,
		socklen_t *len_r, const char **error_r);
/* Raise the soft descriptor limit to the hard one; the limit now. */
unsigned int lg_raise_fd_limit(void);

#endif
