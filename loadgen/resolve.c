/* resolve.c — address resolution and the descriptor limit (see resolve.h).
 * Trust boundary: operator-given addresses; getaddrinfo does the parsing. */
#include "resolve.h"

#include "errors.h"
#include "loop.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

bool lg_resolve(const char *hostport, struct sockaddr_storage *ss,
		socklen_t *len_r, const char **error_r)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	const char *colon = strrchr(hostport, ':');
	char host[256];
	int rc;

	if (mt_sockaddr_parse(hostport, ss, len_r, error_r) &&
	    strncmp(hostport, "*:", 2) != 0)
		return true;
	if (colon == NULL || colon == hostport || colon[1] == '\0' ||
	    (size_t)(colon - hostport) >= sizeof(host)) {
		*error_r = lg_error_fmt("'%s' is not HOST:PORT", hostport);
		return false;
	}
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = '\0';
	if ((rc = getaddrinfo(host, colon + 1, &hints, &res)) != 0) {
		*error_r = lg_error_fmt("'%s': %s", hostport, gai_strerror(rc));
		return false;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len_r = res->ai_addrlen;
	freeaddrinfo(res);
	return true;
}

unsigned int lg_raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur > 1000000 ? 1000000 : (unsigned int)rl.rlim_cur;
}
