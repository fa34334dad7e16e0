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

bool lg_resolve_list(const char *list, struct lg_addrs *addrs, const char **error_r)
{
	char one[320];

	addrs->count = 0;
	addrs->next = 0;
	for (const char *p = list;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
		while (n > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == 0 || n >= sizeof(one)) {
			*error_r = lg_error_fmt("'%s' is not a list of HOST:PORT", list);
			return false;
		}
		if (addrs->count == LG_ADDRS_MAX) {
			*error_r = lg_error_fmt("'%s': more than %d addresses", list,
						LG_ADDRS_MAX);
			return false;
		}
		memcpy(one, p, n);
		one[n] = '\0';
		if (!lg_resolve(one, &addrs->ss[addrs->count], &addrs->len[addrs->count],
				error_r))
			return false;
		addrs->count++;
		if (comma == NULL)
			return true;
		p = comma + 1;
	}
}

unsigned int lg_addrs_start(struct lg_addrs *addrs)
{
	return addrs->count > 1 ? addrs->next++ % (unsigned int)addrs->count : 0;
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
