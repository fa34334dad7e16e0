/* cidr.h — one parser and matcher for the client-network lists every
 * daemon checks peers against ([mta] mynetworks, [popstore] lmtp_clients
 * and proxy_addresses). */
#ifndef MT_CIDR_H
#define MT_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* address/prefix (a bare address is a /32 or /128). */
struct mt_cidr {
	int family;			/* AF_INET or AF_INET6 */
	unsigned char addr[16];		/* network byte order, host bits cleared */
	unsigned int prefix;
};

/* Parse "a.b.c.d/n", "v6addr/n" or a bare address; false and a static error
 * on bad input. */
bool mt_cidr_parse(const char *text, struct mt_cidr *cidr_r, const char **error_r);
/* Is peer (AF_INET or AF_INET6; a v4-mapped v6 address counts as v4) in one
 * of the count entries? */
bool mt_cidr_match(const struct mt_cidr *list, size_t count,
		   const struct sockaddr *peer);

#endif
