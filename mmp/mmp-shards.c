/* mmp-shards.c — the store shards the MMP logs users in to: the [shards]
 * table resolved once at start-up (each site's POP3 and, if given, IMAP
 * address; a shard has one site, or several: the sites of its replication
 * group, of which only the master takes logins), the site that last took a
 * login (tried first), a "down" mark per site and protocol, and the probe
 * that clears it.
 *
 * A site that does not answer (connect refused or timed out, no OK
 * greeting — a replica's refusal included —, dropped connection) is
 * marked down by the worker that saw it; for a one-site shard its logins
 * then fail at once (-ERR [SYS/TEMP], NO [UNAVAILABLE]) instead of each
 * waiting for the connect timeout, and a shard of several sites tries the
 * others first (mmp-login.c). The main loop probes a down site (connect,
 * read the +OK or "* OK" greeting within backend_connect_timeout, QUIT or
 * LOGOUT) 1 s after it was marked down, then at doubling intervals up to
 * shard_retry_interval, and marks it up when it answers (or when a login
 * there succeeds): a store restarted by its service manager is back in a
 * second or two, one that stays dead costs a probe per interval.
 *
 * Trust boundary: addresses come from the operator's config; a probe reads
 * one bounded line from the shard and only checks that it is +OK.
 * Threads: the table is read-only after start-up except the down marks,
 * the last master and the counters (atomic, any thread); probes run on the
 * main loop only.
 * RFC 1939 section 4 (the greeting), section 6 (QUIT); RFC 9051 7.1.1
 * (the greeting's OK), 6.1.3 (LOGOUT). */
#include "mmp.h"
#include "alloc.h"
#include "buf.h"
#include "pop3-status.h"
#include "mailtier-settings.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

/* One protocol's address of one site of a shard. */
struct shard_endpoint {
	struct mmp_shard *shard;
	unsigned int site;
	enum mmp_protocol protocol;
	bool configured;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char addr_str[MT_SOCKADDR_STRLEN];
	atomic_bool down;
	/* main loop only */
	struct mt_timer *retry;
	struct bufferevent *probe;
	struct event *probe_timeout;
	struct mt_line_reader reader;
	unsigned int probes;	/* failed probes since marked down */
};

/* One site: a store process (of a replication group, or the only one). */
struct shard_site {
	struct shard_endpoint endpoints[MMP_PROTO_COUNT];
};

struct mmp_shard {
	struct mmp_shards *shards;
	char *name;
	unsigned int n_sites;
	struct shard_site *sites;
	/* The site that last took a login (its master, for a group). */
	atomic_uint master;
	atomic_uint_fast64_t logins[MMP_PROTO_COUNT][MMP_BACKEND_STATUS_COUNT];
};

struct mmp_shards {
	struct mmp_shard *list;
	size_t count;
	struct mt_loop *main_loop;
	uint64_t retry_interval;	/* ms */
	uint64_t probe_timeout;		/* ms */
	bool stopping;
};

/* Resolve host:port once (a name may be used in [shards]). */
static bool resolve(const struct mt_hostport *hp, struct mmp_shard *shard,
		    struct shard_endpoint *ep, const char **error_r)
{
	static _Thread_local char error[256];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char port[8];

	if (hp->host == NULL && ep->protocol == MMP_PROTO_IMAP)
		return true;	/* optional: the IMAP listeners check for it */
	if (hp->host == NULL || strcmp(hp->host, "*") == 0) {
		snprintf(error, sizeof(error), "shard %s has no %s address",
			 shard->name, ep->protocol == MMP_PROTO_IMAP ? "IMAP" : "POP3");
		*error_r = error;
		return false;
	}
	snprintf(port, sizeof(port), "%u", hp->port);
	int err = getaddrinfo(hp->host, port, &hints, &res);
	if (err != 0 || res == NULL) {
		snprintf(error, sizeof(error), "shard %s: cannot resolve %s: %s",
			 shard->name, hp->host, gai_strerror(err));
		*error_r = error;
		return false;
	}
	memcpy(&ep->addr, res->ai_addr, res->ai_addrlen);
	ep->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	mt_sockaddr_str((struct sockaddr *)&ep->addr, ep->addr_str,
			sizeof(ep->addr_str));
	ep->configured = true;
	return true;
}

struct mmp_shards *mmp_shards_new(const struct mt_config *config,
				  struct mt_loop *main_loop,
				  const struct mt_mmp_settings *set,
				  const char **error_r)
{
	const struct mt_section *section =
		mt_config_section(config, "shards", NULL);
	struct mmp_shards *shards = mt_xcalloc(1, sizeof(*shards));

	shards->main_loop = main_loop;
	shards->retry_interval = set->shard_retry_interval;
	shards->probe_timeout = set->backend_connect_timeout;
	size_t n = section != NULL ? section->n_entries : 0;
	shards->list = mt_xcalloc(n > 0 ? n : 1, sizeof(*shards->list));
	for (size_t i = 0; i < n; i++) {
		const struct mt_map_entry *entry = &section->entries[i];
		const struct mt_shard_addresses *addrs = entry->value;
		struct mmp_shard *shard = &shards->list[i];
		shard->shards = shards;
		shard->name = mt_xstrdup(entry->key);
		shard->n_sites = addrs->n_sites;
		shard->sites = mt_xcalloc(addrs->n_sites, sizeof(*shard->sites));
		atomic_init(&shard->master, 0);
		shards->count++;
		for (unsigned int s = 0; s < addrs->n_sites; s++) {
			const struct mt_hostport *hps[MMP_PROTO_COUNT] = {
				[MMP_PROTO_POP3] = &addrs->sites[s].pop3,
				[MMP_PROTO_IMAP] = &addrs->sites[s].imap,
			};
			for (int p = 0; p < MMP_PROTO_COUNT; p++) {
				struct shard_endpoint *ep = &shard->sites[s].endpoints[p];
				ep->shard = shard;
				ep->site = s;
				ep->protocol = (enum mmp_protocol)p;
				atomic_init(&ep->down, false);
				if (!resolve(hps[p], shard, ep, error_r)) {
					mmp_shards_free(&shards);
					return NULL;
				}
			}
		}
	}
	return shards;
}

static void probe_end(struct shard_endpoint *ep)
{
	if (ep->probe != NULL) {
		bufferevent_free(ep->probe);
		ep->probe = NULL;
	}
	if (ep->probe_timeout != NULL) {
		event_free(ep->probe_timeout);
		ep->probe_timeout = NULL;
	}
}

/* Main loop: no probe and no retry timer left. */
static void endpoint_stop(struct shard_endpoint *ep)
{
	probe_end(ep);
	mt_timer_free(&ep->retry);
}

void mmp_shards_free(struct mmp_shards **shards_p)
{
	struct mmp_shards *shards = *shards_p;
	if (shards == NULL)
		return;
	*shards_p = NULL;
	for (size_t i = 0; i < shards->count; i++) {
		struct mmp_shard *shard = &shards->list[i];
		for (unsigned int s = 0; s < shard->n_sites; s++)
			for (int p = 0; p < MMP_PROTO_COUNT; p++)
				endpoint_stop(&shard->sites[s].endpoints[p]);
		free(shard->sites);
		free(shard->name);
	}
	free(shards->list);
	free(shards);
}

struct mmp_shard *mmp_shards_find(const struct mmp_shards *shards,
				  const char *name)
{
	for (size_t i = 0; i < shards->count; i++)
		if (strcmp(shards->list[i].name, name) == 0)
			return &shards->list[i];
	return NULL;
}

size_t mmp_shards_count(const struct mmp_shards *shards)
{
	return shards->count;
}

struct mmp_shard *mmp_shards_get(const struct mmp_shards *shards, size_t index)
{
	return index < shards->count ? &shards->list[index] : NULL;
}

bool mmp_shard_has(const struct mmp_shard *shard, enum mmp_protocol protocol)
{
	/* Every site has the protocol's address or none has ([shards]). */
	return shard->sites[0].endpoints[protocol].configured;
}

void mmp_shard_count_login(struct mmp_shard *shard, enum mmp_protocol protocol,
			   enum mmp_backend_status status)
{
	if (status < MMP_BACKEND_STATUS_COUNT)
		atomic_fetch_add_explicit(&shard->logins[protocol][status], 1,
					  memory_order_relaxed);
}

uint64_t mmp_shard_logins(const struct mmp_shard *shard, enum mmp_protocol protocol,
			  enum mmp_backend_status status)
{
	return atomic_load_explicit(&shard->logins[protocol][status],
				    memory_order_relaxed);
}

bool mmp_shards_serve(const struct mmp_shards *shards, enum mmp_protocol protocol,
		      const char **name_r)
{
	for (size_t i = 0; i < shards->count; i++) {
		if (!mmp_shard_has(&shards->list[i], protocol)) {
			*name_r = shards->list[i].name;
			return false;
		}
	}
	return true;
}

const char *mmp_shard_name(const struct mmp_shard *shard) { return shard->name; }

unsigned int mmp_shard_sites(const struct mmp_shard *shard) { return shard->n_sites; }

unsigned int mmp_shard_master(const struct mmp_shard *shard)
{
	unsigned int site = atomic_load_explicit(&shard->master, memory_order_relaxed);
	return site < shard->n_sites ? site : 0;
}

const char *mmp_shard_address(const struct mmp_shard *shard, unsigned int site,
			      enum mmp_protocol protocol)
{
	return shard->sites[site].endpoints[protocol].addr_str;
}

const struct sockaddr *mmp_shard_sockaddr(const struct mmp_shard *shard,
					  unsigned int site,
					  enum mmp_protocol protocol,
					  socklen_t *len_r)
{
	const struct shard_endpoint *ep = &shard->sites[site].endpoints[protocol];
	*len_r = ep->addrlen;
	return (const struct sockaddr *)&ep->addr;
}

bool mmp_shard_site_is_down(const struct mmp_shard *shard, unsigned int site,
			    enum mmp_protocol protocol)
{
	/* A shard without this protocol's address is never reachable. */
	const struct shard_endpoint *ep = &shard->sites[site].endpoints[protocol];
	return !ep->configured || atomic_load_explicit(&ep->down, memory_order_relaxed);
}

bool mmp_shard_is_down(const struct mmp_shard *shard, enum mmp_protocol protocol)
{
	for (unsigned int s = 0; s < shard->n_sites; s++)
		if (!mmp_shard_site_is_down(shard, s, protocol))
			return false;
	return true;
}

void mmp_shard_site_ok(struct mmp_shard *shard, unsigned int site,
		       enum mmp_protocol protocol)
{
	struct shard_endpoint *ep = &shard->sites[site].endpoints[protocol];
	/* Read first: a login per shard must not write a shared line. */
	unsigned int was = atomic_load_explicit(&shard->master, memory_order_relaxed);
	if (was != site)
		atomic_store(&shard->master, site);
	if (atomic_load_explicit(&ep->down, memory_order_relaxed) &&
	    atomic_exchange(&ep->down, false))
		mt_info("shard=%s protocol=%s site=%u address=%s event=up reason=login",
			shard->name, mmp_protocol_names[protocol], site + 1, ep->addr_str);
	if (was != site && shard->n_sites > 1)
		mt_info("shard=%s site=%u address=%s event=master: logins go there first",
			shard->name, site + 1, ep->addr_str);
}

/* Probes (main loop) */

static void probe_start(void *context);

/* The first probe of a down shard; later ones double up to the interval. */
#define FIRST_PROBE_MS UINT64_C(1000)

static void probe_schedule(void *context)
{
	struct shard_endpoint *ep = context;
	struct mmp_shards *shards = ep->shard->shards;
	if (shards->stopping || ep->retry != NULL || ep->probe != NULL)
		return;
	uint64_t delay = shards->retry_interval;
	if (ep->probes < 16 && (FIRST_PROBE_MS << ep->probes) < delay)
		delay = FIRST_PROBE_MS << ep->probes;
	ep->retry = mt_timer_add(shards->main_loop, (unsigned int)delay,
				 false, probe_start, ep);
}

static void probe_failed(struct shard_endpoint *ep, const char *why)
{
	probe_end(ep);
	ep->probes++;
	/* Once per down period at info; the rest would repeat every interval. */
	mt_log(ep->probes == 1 ? MT_LOG_INFO : MT_LOG_DEBUG,
	       "shard=%s protocol=%s site=%u address=%s event=probe_failed reason=%s",
	       ep->shard->name, mmp_protocol_names[ep->protocol], ep->site + 1,
	       ep->addr_str, why);
	probe_schedule(ep);
}

/* The greeting the store's listener for the protocol says it is ready
 * with, and how the probe ends the session it opened. */
static bool probe_greeting_ok(const struct shard_endpoint *ep, const char *line,
			      size_t len)
{
	if (ep->protocol == MMP_PROTO_IMAP)
		return len >= 4 && strncmp(line, "* OK", 4) == 0;
	return mt_pop3_status(line, len) == MT_POP3_OK;
}

static void probe_read_cb(struct bufferevent *bev, void *arg)
{
	struct shard_endpoint *ep = arg;
	struct mt_buf line = MT_BUF_INIT;
	const char *error = NULL;

	enum mt_line_status st = mt_line_read(&ep->reader,
					      bufferevent_get_input(bev),
					      &line, &error);
	if (st == MT_LINE_NEED_MORE) {
		mt_buf_free(&line);
		return;
	}
	bool ok = st == MT_LINE_OK && probe_greeting_ok(ep, line.data, line.len);
	mt_buf_free(&line);
	if (!ok) {
		probe_failed(ep, "no OK greeting");
		return;
	}
	/* RFC 1939 section 6 / RFC 9051 6.1.3: QUIT or LOGOUT before login
	 * just ends the session. Best effort: written now if the socket
	 * takes it (it will). */
	const char *bye = ep->protocol == MMP_PROTO_IMAP ? "p LOGOUT\r\n" : "QUIT\r\n";
	if (write(bufferevent_getfd(bev), bye, strlen(bye)) < 0) {
		/* the shard answered: that is all the probe wanted */
	}
	probe_end(ep);
	ep->probes = 0;
	atomic_store(&ep->down, false);
	mt_info("shard=%s protocol=%s site=%u address=%s event=up", ep->shard->name,
		mmp_protocol_names[ep->protocol], ep->site + 1, ep->addr_str);
}

static void probe_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct shard_endpoint *ep = arg;
	(void)bev;
	if ((what & BEV_EVENT_CONNECTED) != 0)
		return;
	probe_failed(ep, (what & BEV_EVENT_EOF) != 0 ? "closed" :
		     evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

static void probe_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what;
	probe_failed(arg, "timeout");
}

static void probe_start(void *context)
{
	struct shard_endpoint *ep = context;
	struct mmp_shards *shards = ep->shard->shards;
	struct event_base *base = mt_loop_base(shards->main_loop);

	mt_timer_free(&ep->retry);	/* allowed from its own callback */
	if (!atomic_load(&ep->down)) {
		/* A login found it up meanwhile (mmp_shard_site_ok). */
		ep->probes = 0;
		return;
	}
	ep->probe = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (ep->probe == NULL)
		mt_panic("bufferevent_socket_new failed");
	/* An IMAP greeting may carry the capability list. */
	mt_line_reader_init(&ep->reader, MMP_BACKEND_LINE_MAX, MT_LINE_ACCEPT_LF);
	bufferevent_setcb(ep->probe, probe_read_cb, NULL, probe_event_cb, ep);
	bufferevent_enable(ep->probe, EV_READ);
	ep->probe_timeout = evtimer_new(base, probe_timeout_cb, ep);
	if (ep->probe_timeout == NULL)
		mt_panic("evtimer_new failed");
	struct timeval tv = { (time_t)(shards->probe_timeout / 1000),
			      (suseconds_t)(shards->probe_timeout % 1000) * 1000 };
	evtimer_add(ep->probe_timeout, &tv);
	if (bufferevent_socket_connect(ep->probe, (struct sockaddr *)&ep->addr,
				       (int)ep->addrlen) < 0)
		probe_failed(ep, strerror(errno));
}

void mmp_shard_failed(struct mmp_shard *shard, unsigned int site,
		      enum mmp_protocol protocol, const char *reason)
{
	struct shard_endpoint *ep = &shard->sites[site].endpoints[protocol];
	bool was_down = atomic_exchange(&ep->down, true);
	if (was_down)
		return;
	uint64_t first = shard->shards->retry_interval < FIRST_PROBE_MS ?
		shard->shards->retry_interval : FIRST_PROBE_MS;
	mt_warning("shard=%s protocol=%s site=%u address=%s event=down reason=%s "
		   "probe_ms=%llu", shard->name, mmp_protocol_names[protocol], site + 1,
		   ep->addr_str, reason, (unsigned long long)first);
	mt_loop_post(shard->shards->main_loop, probe_schedule, ep);
}

void mmp_shards_stop(struct mmp_shards *shards)
{
	shards->stopping = true;
	for (size_t i = 0; i < shards->count; i++)
		for (unsigned int s = 0; s < shards->list[i].n_sites; s++)
			for (int p = 0; p < MMP_PROTO_COUNT; p++)
				endpoint_stop(&shards->list[i].sites[s].endpoints[p]);
}
