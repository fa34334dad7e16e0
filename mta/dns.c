/* dns.c — c-ares on libevent for MX and host resolution (see dns.h).
 *
 * c-ares tells us which sockets to watch (ARES_OPT_SOCK_STATE_CB); each
 * gets a persistent libevent event that calls ares_process_fd(), and one
 * timer follows ares_timeout(). A request may be cancelled at any time:
 * c-ares still calls back, so a request lives until its last c-ares
 * callback has run and only then is freed.
 *
 * Trust boundary: DNS answers are parsed by c-ares (ares_parse_mx_reply,
 * ares_getaddrinfo); we copy at most DNS_MAX_HOSTS names of at most 255
 * octets and DNS_MAX_ADDRS addresses.
 * RFCs: 5321 5.1, 7505, 1035, 3596. */
#include "dns.h"
#include "alloc.h"
#include "buf.h"
#include "log.h"

#include <arpa/inet.h>
#include <ares.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#ifndef T_MX
#define T_MX 15
#endif
#ifndef C_IN
#define C_IN 1
#endif

struct dns_watch {
	struct dns_watch *next;
	ares_socket_t fd;
	struct event *ev;
	short what;
};

struct dns {
	struct event_base *base;
	ares_channel channel;
	struct event *timer;
	struct dns_watch *watches;
};

struct host_slot {
	char name[256];
	unsigned short preference;
	bool done;
	int status;			/* ARES_* of its address lookup */
	unsigned int count;
	struct dns_addr addrs[DNS_MAX_ADDRS];
};

struct dns_req {
	struct dns *dns;
	dns_cb_t *cb;
	void *context;
	uint16_t port;
	bool cancelled, finished;
	bool in_call;			/* inside dns_resolve_*(): defer answers */
	unsigned int pending;		/* c-ares callbacks still to come */
	bool implicit_mx;
	char domain[256];
	unsigned int n_hosts;
	struct host_slot hosts[DNS_MAX_HOSTS];
	struct event *immediate;	/* for answers known without DNS */
	struct dns_result result;
};

/* Socket watching */

static void update_timer(struct dns *dns)
{
	struct timeval tv, *tvp = ares_timeout(dns->channel, NULL, &tv);
	if (tvp != NULL)
		evtimer_add(dns->timer, tvp);
	else
		evtimer_del(dns->timer);
}

static void watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns *dns = arg;
	ares_process_fd(dns->channel,
			(what & EV_READ) != 0 ? fd : ARES_SOCKET_BAD,
			(what & EV_WRITE) != 0 ? fd : ARES_SOCKET_BAD);
	update_timer(dns);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns *dns = arg;
	ares_process_fd(dns->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	update_timer(dns);
}

static void sock_state_cb(void *data, ares_socket_t fd, int readable, int writable)
{
	struct dns *dns = data;
	struct dns_watch **pp = &dns->watches;
	while (*pp != NULL && (*pp)->fd != fd)
		pp = &(*pp)->next;
	struct dns_watch *w = *pp;
	short what = (short)((readable ? EV_READ : 0) | (writable ? EV_WRITE : 0));
	if (w != NULL && (what == 0 || what != w->what)) {
		event_free(w->ev);
		*pp = w->next;
		free(w);
		w = NULL;
	}
	if (what == 0 || w != NULL)
		return;
	w = mt_xcalloc(1, sizeof(*w));
	w->fd = fd;
	w->what = what;
	w->ev = event_new(dns->base, fd, what | EV_PERSIST, watch_cb, dns);
	if (w->ev == NULL || event_add(w->ev, NULL) < 0)
		mt_panic("dns: cannot watch a socket");
	w->next = dns->watches;
	dns->watches = w;
}

/* Set up */

static bool set_servers(struct dns *dns, const struct mt_strlist *servers,
			const char **error_r)
{
	if (servers == NULL || servers->count == 0)
		return true;
	struct mt_buf csv = MT_BUF_INIT;
	for (size_t i = 0; i < servers->count; i++)
		mt_buf_appendf(&csv, "%s%s", i > 0 ? "," : "", servers->items[i]);
	int ret = ares_set_servers_ports_csv(dns->channel, mt_buf_cstr(&csv));
	mt_buf_free(&csv);
	if (ret != ARES_SUCCESS) {
		*error_r = "dns_servers: c-ares refused the server list";
		return false;
	}
	return true;
}

struct dns *dns_new(struct event_base *base, const struct mt_strlist *servers,
		    const char **error_r)
{
	static bool library_ready;
	if (!library_ready) {
		if (ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS) {
			*error_r = "ares_library_init failed";
			return NULL;
		}
		library_ready = true;
	}
	struct dns *dns = mt_xcalloc(1, sizeof(*dns));
	dns->base = base;
	struct ares_options options;
	memset(&options, 0, sizeof(options));
	options.sock_state_cb = sock_state_cb;
	options.sock_state_cb_data = dns;
	options.timeout = 2000;
	options.tries = 3;
	int ret = ares_init_options(&dns->channel, &options,
				    ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS |
				    ARES_OPT_TRIES);
	if (ret != ARES_SUCCESS) {
		free(dns);
		*error_r = "c-ares: cannot set up a resolver (resolv.conf?)";
		return NULL;
	}
	if (!set_servers(dns, servers, error_r)) {
		ares_destroy(dns->channel);
		free(dns);
		return NULL;
	}
	dns->timer = evtimer_new(base, timer_cb, dns);
	if (dns->timer == NULL)
		mt_panic("evtimer_new failed");
	return dns;
}

void dns_free(struct dns **dns_p)
{
	struct dns *dns = *dns_p;
	if (dns == NULL)
		return;
	*dns_p = NULL;
	/* Calls every pending callback with ARES_EDESTRUCTION: requests
	 * free themselves there (their users have cancelled them). */
	ares_destroy(dns->channel);
	while (dns->watches != NULL) {
		struct dns_watch *w = dns->watches;
		dns->watches = w->next;
		event_free(w->ev);
		free(w);
	}
	event_free(dns->timer);
	free(dns);
}

/* Requests: a request is freed once it is finished (answered or
 * cancelled), no c-ares callback is outstanding and no immediate answer is
 * scheduled. An answer found while the asking call is still running (IP
 * literals, /etc/hosts, cached names) is delivered from the loop instead. */

static void req_free(struct dns_req *req)
{
	if (req->immediate != NULL)
		event_free(req->immediate);
	free(req);
}

static void maybe_free(struct dns_req *req)
{
	if (req->pending == 0 && req->finished && req->immediate == NULL)
		req_free(req);
}

static void immediate_cb(evutil_socket_t fd, short what, void *arg);

static void req_finish(struct dns_req *req)
{
	if (req->finished)
		return;
	if (req->in_call) {
		static const struct timeval zero = { 0, 0 };
		if (req->immediate == NULL) {
			req->immediate = evtimer_new(req->dns->base, immediate_cb, req);
			if (req->immediate == NULL ||
			    evtimer_add(req->immediate, &zero) < 0)
				mt_panic("dns: cannot schedule an answer");
		}
		return;
	}
	req->finished = true;
	if (!req->cancelled)
		req->cb(&req->result, req->context);
}

static void immediate_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dns_req *req = arg;
	event_free(req->immediate);
	req->immediate = NULL;
	req_finish(req);
	maybe_free(req);
}

/* One c-ares callback of the request has run. */
static void req_release(struct dns_req *req)
{
	req->pending--;
	maybe_free(req);
}

void dns_cancel(struct dns_req **req_p)
{
	struct dns_req *req = *req_p;
	if (req == NULL)
		return;
	*req_p = NULL;
	req->cancelled = true;
	req->finished = true;
	if (req->immediate != NULL) {
		event_free(req->immediate);
		req->immediate = NULL;
	}
	maybe_free(req);
}

static void fail(struct dns_req *req, enum dns_status status, const char *error)
{
	req->result.status = status;
	req->result.error = error;
	req->result.count = 0;
	req_finish(req);
}

/* All hosts' addresses are in: assemble them in host order. */
static void assemble(struct dns_req *req)
{
	struct dns_result *r = &req->result;
	bool all_not_found = true;
	r->count = 0;
	for (unsigned int i = 0; i < req->n_hosts; i++) {
		struct host_slot *h = &req->hosts[i];
		if (h->status != ARES_ENOTFOUND && h->status != ARES_ENODATA)
			all_not_found = false;
		for (unsigned int k = 0; k < h->count && r->count < DNS_MAX_ADDRS; k++)
			r->addrs[r->count++] = h->addrs[k];
	}
	if (r->count > 0) {
		r->status = DNS_OK;
		req_finish(req);
	} else if (all_not_found && req->implicit_mx) {
		fail(req, DNS_PERMFAIL, "domain has no MX and no address records");
	} else if (all_not_found) {
		fail(req, DNS_PERMFAIL, "mail exchanger host not found");
	} else {
		fail(req, DNS_TEMPFAIL, "cannot resolve the mail exchanger's address");
	}
}

struct addr_cb_ctx {
	struct dns_req *req;
	unsigned int slot;
};

static void addr_cb(void *arg, int status, int timeouts, struct ares_addrinfo *ai)
{
	struct addr_cb_ctx *ctx = arg;
	struct dns_req *req = ctx->req;
	struct host_slot *h = &req->hosts[ctx->slot];
	free(ctx);
	h->done = true;
	h->status = status;
	if (status == ARES_SUCCESS && ai != NULL) {
		for (struct ares_addrinfo_node *n = ai->nodes;
		     n != NULL && h->count < DNS_MAX_ADDRS; n = n->ai_next) {
			if ((n->ai_family != AF_INET && n->ai_family != AF_INET6) ||
			    n->ai_addrlen > sizeof(struct sockaddr_storage))
				continue;
			struct dns_addr *a = &h->addrs[h->count++];
			memcpy(&a->ss, n->ai_addr, n->ai_addrlen);
			a->len = (socklen_t)n->ai_addrlen;
			memcpy(a->host, h->name, sizeof(a->host));
		}
	}
	if (ai != NULL)
		ares_freeaddrinfo(ai);
	bool all = true;
	for (unsigned int i = 0; i < req->n_hosts; i++)
		all = all && req->hosts[i].done;
	if (status == ARES_EDESTRUCTION)
		req->finished = true;
	else if (all)
		assemble(req);
	req_release(req);
}

static void lookup_hosts(struct dns_req *req)
{
	char port[8];
	snprintf(port, sizeof(port), "%u", req->port);
	struct ares_addrinfo_hints hints;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = ARES_AI_NUMERICSERV;
	unsigned int n = req->n_hosts;
	struct dns *dns = req->dns;
	/* One more than the callbacks: c-ares may answer inside the call. */
	req->pending += n + 1;
	for (unsigned int i = 0; i < n; i++) {
		struct addr_cb_ctx *ctx = mt_xmalloc(sizeof(*ctx));
		ctx->req = req;
		ctx->slot = i;
		ares_getaddrinfo(dns->channel, req->hosts[i].name, port, &hints,
				 addr_cb, ctx);
	}
	req_release(req);
	update_timer(dns);
}

static int cmp_pref(const void *a, const void *b)
{
	const struct host_slot *x = a, *y = b;
	return (int)x->preference - (int)y->preference;
}

static void mx_cb(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
	struct dns_req *req = arg;
	struct ares_mx_reply *mx = NULL;
	bool failed = false;
	if (req->finished || status == ARES_EDESTRUCTION) {
		req->finished = true;
		req_release(req);
		return;
	}
	if (req->cancelled) {
		req_release(req);
		return;
	}
	if (status == ARES_SUCCESS)
		status = ares_parse_mx_reply(abuf, alen, &mx);
	if (status == ARES_ENODATA || (status == ARES_SUCCESS && mx == NULL)) {
		/* RFC 5321 5.1: no MX records, the domain is its own MX. */
		req->implicit_mx = true;
		req->n_hosts = 1;
		snprintf(req->hosts[0].name, sizeof(req->hosts[0].name), "%s",
			 req->domain);
	} else if (status == ARES_ENOTFOUND) {
		failed = true;
		fail(req, DNS_PERMFAIL, "domain not found");
	} else if (status != ARES_SUCCESS) {
		failed = true;
		fail(req, DNS_TEMPFAIL, ares_strerror(status));
	} else {
		for (struct ares_mx_reply *m = mx; m != NULL && req->n_hosts < DNS_MAX_HOSTS;
		     m = m->next) {
			struct host_slot *h = &req->hosts[req->n_hosts];
			if (m->host == NULL || m->host[0] == '\0' ||
			    strcmp(m->host, ".") == 0)
				continue;
			snprintf(h->name, sizeof(h->name), "%s", m->host);
			h->preference = m->priority;
			req->n_hosts++;
		}
		failed = req->n_hosts == 0;
		if (failed)
			fail(req, DNS_PERMFAIL, "domain does not accept mail (null MX, RFC 7505)");
		else
			qsort(req->hosts, req->n_hosts, sizeof(req->hosts[0]), cmp_pref);
	}
	if (mx != NULL)
		ares_free_data(mx);
	if (!failed && !req->finished)
		lookup_hosts(req);
	req_release(req);
}

static struct dns_req *req_new(struct dns *dns, const char *name, uint16_t port,
			       dns_cb_t *cb, void *context)
{
	struct dns_req *req = mt_xcalloc(1, sizeof(*req));
	req->dns = dns;
	req->cb = cb;
	req->context = context;
	req->port = port;
	snprintf(req->domain, sizeof(req->domain), "%s", name);
	return req;
}

struct dns_req *dns_resolve_mx(struct dns *dns, const char *domain,
			       uint16_t port, dns_cb_t *cb, void *context)
{
	struct dns_req *req = req_new(dns, domain, port, cb, context);
	req->in_call = true;
	req->pending = 2;	/* mx_cb, and this call */
	ares_query(dns->channel, domain, C_IN, T_MX, mx_cb, req);
	req->in_call = false;
	update_timer(dns);
	req_release(req);
	return req;
}

/* An IP literal: the answer is known; still give it from the loop. */
static bool literal_address(struct dns_req *req, const char *host, uint16_t port)
{
	struct dns_addr *a = &req->result.addrs[0];
	struct sockaddr_in *sin = (struct sockaddr_in *)&a->ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a->ss;
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		a->len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		a->len = sizeof(*sin6);
	} else {
		return false;
	}
	snprintf(a->host, sizeof(a->host), "%s", host);
	req->result.status = DNS_OK;
	req->result.count = 1;
	return true;
}

struct dns_req *dns_resolve_host(struct dns *dns, const char *host,
				 uint16_t port, dns_cb_t *cb, void *context)
{
	struct dns_req *req = req_new(dns, host, port, cb, context);
	req->in_call = true;
	if (literal_address(req, host, port)) {
		req_finish(req);	/* scheduled: in_call */
	} else {
		req->n_hosts = 1;
		snprintf(req->hosts[0].name, sizeof(req->hosts[0].name), "%s", host);
		lookup_hosts(req);
	}
	req->in_call = false;
	return req;
}
