/* resolve.h — the load generator's address and descriptor helpers:
 * resolving "host:port" for connecting, a service's list of addresses
 * ("HOST:PORT,HOST:PORT": several MTAs or MMPs), and raising the descriptor
 * limit (each open session holds one).
 * Trust boundary: operator-given addresses. */
#ifndef LG_RESOLVE_H
#define LG_RESOLVE_H

#include <stdbool.h>
#include <sys/socket.h>

/* Resolve "host:port" / "[v6]:port" for connecting; false with a reason. */
bool lg_resolve(const char *hostport, struct sockaddr_storage *ss,
		socklen_t *len_r, const char **error_r);
/* A service's addresses, tried the way a client of several servers (MX
 * records, several A records) tries them: a session starts at the next
 * one in turn (round robin, as DNS gives them out) and, when the connect
 * fails (refused, unreachable, or unanswered for the connect timeout),
 * goes on to the following one (session.c). */
#define LG_ADDRS_MAX 8
struct lg_addrs {
	size_t count;
	struct sockaddr_storage ss[LG_ADDRS_MAX];
	socklen_t len[LG_ADDRS_MAX];
	unsigned int next;		/* where the next session starts */
};
/* Resolve a comma-separated list of HOST:PORT (at most LG_ADDRS_MAX);
 * false with a reason. */
bool lg_resolve_list(const char *list, struct lg_addrs *addrs, const char **error_r);
/* The index a new session starts at (advances the turn). */
unsigned int lg_addrs_start(struct lg_addrs *addrs);
/* Raise the soft descriptor limit to the hard one; the limit now. */
unsigned int lg_raise_fd_limit(void);

#endif
