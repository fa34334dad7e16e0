/* cidr.c — client networks (mynetworks, lmtp_clients, proxy_addresses):
 * parsing "a.b.c.d[/n]" and "v6addr[/n]" and matching a peer against a list
 * (see cidr.h). Trust boundary: entries come from the operator's config;
 * peers are kernel-supplied addresses. */
#include "cidr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

bool mt_cidr_parse(const char *text, struct mt_cidr *cidr_r, const char **error_r)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(text, '/');
	size_t len = slash != NULL ? (size_t)(slash - text) : strlen(text);

	memset(cidr_r, 0, sizeof(*cidr_r));
	if (len == 0 || len >= sizeof(addr)) {
		*error_r = "expected address/prefix";
		return false;
	}
	memcpy(addr, text, len);
	addr[len] = '\0';
	unsigned int max;
	if (inet_pton(AF_INET, addr, cidr_r->addr) == 1) {
		cidr_r->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, addr, cidr_r->addr) == 1) {
		cidr_r->family = AF_INET6;
		max = 128;
	} else {
		*error_r = "invalid IP address in network";
		return false;
	}
	unsigned int prefix = max;
	if (slash != NULL) {
		const char *p = slash + 1;
		if (*p == '\0' || strlen(p) > 3) {
			*error_r = "invalid prefix length";
			return false;
		}
		prefix = 0;
		for (; *p != '\0'; p++) {
			if (*p < '0' || *p > '9') {
				*error_r = "invalid prefix length";
				return false;
			}
			prefix = prefix * 10 + (unsigned int)(*p - '0');
		}
		if (prefix > max) {
			*error_r = "prefix length too large for the address";
			return false;
		}
	}
	cidr_r->prefix = prefix;
	/* Clear host bits so matching is a plain comparison. */
	for (unsigned int bit = prefix; bit < max; bit++)
		cidr_r->addr[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
	return true;
}

static bool prefix_equal(const unsigned char *a, const unsigned char *net,
			 unsigned int prefix)
{
	unsigned int bytes = prefix / 8, bits = prefix % 8;
	if (memcmp(a, net, bytes) != 0)
		return false;
	if (bits == 0)
		return true;
	unsigned char mask = (unsigned char)(0xffu << (8 - bits));
	return (a[bytes] & mask) == net[bytes];
}

bool mt_cidr_match(const struct mt_cidr *list, size_t count,
		   const struct sockaddr *peer)
{
	unsigned char v4[4], v6[16];
	bool have4 = false, have6 = false;

	if (peer->sa_family == AF_INET) {
		memcpy(v4, &((const struct sockaddr_in *)peer)->sin_addr, 4);
		have4 = true;
	} else if (peer->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)peer)->sin6_addr;
		memcpy(v6, a, 16);
		have6 = true;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			memcpy(v4, v6 + 12, 4);
			have4 = true;
		}
	}
	for (size_t i = 0; i < count; i++) {
		const struct mt_cidr *c = &list[i];
		if (c->family == AF_INET && have4 && prefix_equal(v4, c->addr, c->prefix))
			return true;
		if (c->family == AF_INET6 && have6 && prefix_equal(v6, c->addr, c->prefix))
			return true;
	}
	return false;
}

