/* dns.h — asynchronous next-hop resolution for outgoing mail with c-ares on
 * the MTA's libevent loop: the MX hosts of a domain in preference order
 * (with the implicit MX of RFC 5321 5.1 when there are none), or one host,
 * each resolved to its IPv4/IPv6 addresses.
 *
 * Trust boundary: domains come from envelope recipients (client data,
 * already syntax-checked by lib/address); answers come from DNS servers and
 * are parsed by c-ares only. At most DNS_MAX_HOSTS MX hosts and
 * DNS_MAX_ADDRS addresses are kept.
 * RFCs: 5321 5.1 (MX order, implicit MX, try each address), 7505 (null MX
 * "." means no mail), 1035/3596 (MX, A, AAAA). */
#ifndef MT_MTA_DNS_H
#define MT_MTA_DNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"

struct event_base;
struct dns;
struct dns_req;

#define DNS_MAX_HOSTS 8
#define DNS_MAX_ADDRS 16

enum dns_status {
	DNS_OK,
	DNS_TEMPFAIL,	/* try again later (timeout, SERVFAIL) */
	DNS_PERMFAIL,	/* no such domain, null MX: bounce */
};

struct dns_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	char host[256];		/* the MX or host name it came from */
};

struct dns_result {
	enum dns_status status;
	const char *error;	/* DNS_TEMPFAIL/PERMFAIL: why */
	unsigned int count;
	struct dns_addr addrs[DNS_MAX_ADDRS];
};

/* Valid during the callback only. Never called from inside the call that
 * asked. */
typedef void dns_cb_t(const struct dns_result *result, void *context);

/* servers: "ip" or "ip:port" items, empty for /etc/resolv.conf. */
struct dns *dns_new(struct event_base *base, const struct mt_strlist *servers,
		    const char **error_r);
/* Pending requests end with their callbacks not called. */
void dns_free(struct dns **dns_p);

/* Addresses of domain's mail exchangers on port, in MX preference order. */
struct dns_req *dns_resolve_mx(struct dns *dns, const char *domain,
			       uint16_t port, dns_cb_t *cb, void *context);
/* Addresses of one host (a name or an IP literal) on port. */
struct dns_req *dns_resolve_host(struct dns *dns, const char *host,
				 uint16_t port, dns_cb_t *cb, void *context);
/* The callback will not be called; sets *req_p to NULL. */
void dns_cancel(struct dns_req **req_p);

#endif
