/* mta-policy.c — local domains, mynetworks and next hops (see
 * mta-policy.h).
 *
 * Trust boundary: compares client-supplied domains and addresses against
 * the administrator's tables; nothing client-supplied is stored here.
 * transport_map keys match the domain itself or, written ".example.org",
 * any subdomain (the Postfix convention); the longest match wins. */
#include "mta-policy.h"
#include "alloc.h"
#include "cidr.h"
#include "mta-settings.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct transport_entry {
	char *domain;		/* lower-case; leading '.' = subdomains */
	struct mt_hostport hop;
};

struct mta_policy {
	char **local_domains;
	size_t n_local;
	struct mt_cidr *networks;
	size_t n_networks;
	struct transport_entry *transports;
	size_t n_transports;
	struct mt_hostport relayhost;	/* host NULL: none */
	char *postmaster;		/* the role mailboxes; abuse may be NULL */
	char *abuse;
};

static char *lower_dup(const char *s, size_t len)
{
	char *d = mt_xstrndup(s, len);
	for (char *p = d; *p != '\0'; p++)
		*p = (char)tolower((unsigned char)*p);
	/* "example.org." names the same domain as "example.org". */
	size_t n = strlen(d);
	if (n > 1 && d[n - 1] == '.')
		d[n - 1] = '\0';
	return d;
}

struct mta_policy *mta_policy_new(const struct mt_mta_settings *set)
{
	struct mta_policy *p = mt_xcalloc(1, sizeof(*p));
	const char *error;

	p->local_domains = mt_xcalloc(set->local_domains.count + 1, sizeof(char *));
	for (size_t i = 0; i < set->local_domains.count; i++) {
		const char *d = set->local_domains.items[i];
		p->local_domains[p->n_local++] = lower_dup(d, strlen(d));
	}
	p->networks = mt_xcalloc(set->mynetworks.count + 1, sizeof(*p->networks));
	for (size_t i = 0; i < set->mynetworks.count; i++)
		if (mt_cidr_parse(set->mynetworks.items[i],
				  &p->networks[p->n_networks], &error))
			p->n_networks++;
	p->transports = mt_xcalloc(set->transport_map.count + 1,
				   sizeof(*p->transports));
	for (size_t i = 0; i < set->transport_map.count; i++) {
		const char *entry = set->transport_map.items[i];
		const char *eq = strchr(entry, '=');
		struct transport_entry *t = &p->transports[p->n_transports];
		if (eq == NULL || !mt_parse_hostport(eq + 1, &t->hop, &error))
			continue;	/* the config check reported it */
		t->domain = lower_dup(entry, (size_t)(eq - entry));
		p->n_transports++;
	}
	if (set->relayhost.host != NULL) {
		p->relayhost.host = mt_xstrdup(set->relayhost.host);
		p->relayhost.port = set->relayhost.port;
	}
	p->postmaster = set->postmaster != NULL && set->postmaster[0] != '\0' ?
		mt_xstrdup(set->postmaster) :
		mt_xasprintf("postmaster@%s", mta_policy_primary_domain(p));
	if (set->abuse != NULL && set->abuse[0] != '\0')
		p->abuse = mt_xstrdup(set->abuse);
	return p;
}

void mta_policy_free(struct mta_policy **policy_p)
{
	struct mta_policy *p = *policy_p;
	if (p == NULL)
		return;
	*policy_p = NULL;
	for (size_t i = 0; i < p->n_local; i++)
		free(p->local_domains[i]);
	free(p->local_domains);
	free(p->networks);
	for (size_t i = 0; i < p->n_transports; i++) {
		free(p->transports[i].domain);
		mt_hostport_clear(&p->transports[i].hop);
	}
	free(p->transports);
	mt_hostport_clear(&p->relayhost);
	free(p->postmaster);
	free(p->abuse);
	free(p);
}

bool mta_policy_is_local_domain(const struct mta_policy *p, const char *domain)
{
	for (size_t i = 0; i < p->n_local; i++)
		if (strcasecmp(p->local_domains[i], domain) == 0)
			return true;
	return false;
}

const char *mta_policy_primary_domain(const struct mta_policy *p)
{
	return p->n_local > 0 ? p->local_domains[0] : "localhost";
}

const char *mta_policy_role_mailbox(const struct mta_policy *p,
				    const char *hostname,
				    const struct mt_address *addr)
{
	const char *local = addr->local, *domain = addr->domain;
	if (addr->is_null || addr->is_literal)
		return NULL;
	if (domain[0] == '\0')		/* <Postmaster>, the only bare form */
		return strcasecmp(local, "postmaster") == 0 ? p->postmaster : NULL;
	if (!mta_policy_is_local_domain(p, domain) &&
	    (hostname == NULL || strcasecmp(domain, hostname) != 0))
		return NULL;
	if (strcasecmp(local, "postmaster") == 0 ||
	    strcasecmp(local, "mailer-daemon") == 0)
		return p->postmaster;
	if (p->abuse != NULL && strcasecmp(local, "abuse") == 0)
		return p->abuse;
	return NULL;
}

const char *mta_policy_postmaster(const struct mta_policy *p)
{
	return p->postmaster;
}

bool mta_policy_is_trusted_client(const struct mta_policy *p,
				  const struct sockaddr *peer)
{
	/* lib/cidr: IPv4 clients on a dual-stack socket (::ffff:a.b.c.d)
	 * match IPv4 networks. */
	return mt_cidr_match(p->networks, p->n_networks, peer);
}

const struct mt_hostport *mta_policy_nexthop(const struct mta_policy *p,
					     const char *domain)
{
	const struct transport_entry *best = NULL;
	size_t best_len = 0, dlen = strlen(domain);

	for (size_t i = 0; i < p->n_transports; i++) {
		const struct transport_entry *t = &p->transports[i];
		size_t tlen = strlen(t->domain);
		bool match;
		if (t->domain[0] == '.')
			match = dlen > tlen &&
				strcasecmp(domain + dlen - tlen, t->domain) == 0;
		else
			match = strcasecmp(domain, t->domain) == 0;
		if (match && tlen > best_len) {
			best = t;
			best_len = tlen;
		}
	}
	if (best != NULL)
		return &best->hop;
	return p->relayhost.host != NULL ? &p->relayhost : NULL;
}
