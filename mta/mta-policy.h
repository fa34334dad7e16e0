/* mta-policy.h — the MTA's routing and relay policy, compiled from [mta]:
 * which domains are local, which clients may relay (mynetworks), and the
 * next hop of a remote domain (transport_map, relayhost, else DNS MX).
 *
 * Trust boundary: the tables come from the administrator's config (already
 * checked by mta-settings.c); the domains and client addresses asked about
 * are the client's, compared only, never interpreted.
 * RFC 5321 2.3.5 (domain names compare case-insensitively), 4.5.1
 * (postmaster), 5.1 (the next hop of a domain); RFC 2142 (abuse). */
#ifndef MT_MTA_POLICY_H
#define MT_MTA_POLICY_H

#include <stdbool.h>
#include <sys/socket.h>

#include "address.h"
#include "config.h"

struct mt_mta_settings;
struct mta_policy;

struct mta_policy *mta_policy_new(const struct mt_mta_settings *set);
void mta_policy_free(struct mta_policy **policy_p);

/* Is domain (lower-case, as mt_address_parse() gives it) one of ours? */
bool mta_policy_is_local_domain(const struct mta_policy *policy,
				const char *domain);
/* The first local domain (the default [mta] postmaster is postmaster@ it). */
const char *mta_policy_primary_domain(const struct mta_policy *policy);
/* Role addresses (RFC 5321 4.5.1, RFC 2142): for <Postmaster>, and for
 * postmaster@, mailer-daemon@ (where our DSNs come from) and, when [mta]
 * abuse is set, abuse@ each local domain or hostname (local part in any
 * case), the configured mailbox that receives it; NULL for any other
 * address. Such mail is accepted from anyone. */
const char *mta_policy_role_mailbox(const struct mta_policy *policy,
				    const char *hostname,
				    const struct mt_address *addr);
/* Where postmaster mail goes ([mta] postmaster, else postmaster@ the first
 * local domain): also the postmaster copy of an undeliverable bounce. */
const char *mta_policy_postmaster(const struct mta_policy *policy);
/* Is the client's address in mynetworks? */
bool mta_policy_is_trusted_client(const struct mta_policy *policy,
				  const struct sockaddr *peer);

/* Where mail for a remote domain goes: a fixed host:port (the transport_map
 * entry for the domain or a parent domain, else the relayhost), or NULL when
 * the domain's MX records decide. */
const struct mt_hostport *mta_policy_nexthop(const struct mta_policy *policy,
					     const char *domain);

#endif
