/* mmp-shards.c — the store shards the MMP logs users in to: the [shards]
 * table resolved once at start-up, a "down" mark per shard, and the probe
 * that clears it.
 *
 * A shard that does not answer (connect refused or timed out, no greeting,
 * dropped connection) is marked down by the worker that saw it; logins for
 * it then fail at once with -ERR [SYS/TEMP] instead of each waiting for the
 * connect timeout. The main loop probes a down shard (connect, read the
 * +OK greeting within backend_connect_timeout, QUIT) 1 s after it was
 * marked down, then at doubling intervals up to shard_retry_interval, and
 * marks it up when it answers: a shard restarted by its service manager
 * is back in a second or two, one that stays dead costs a probe per
 * interval.
 *
 * Trust boundary: addresses come from the operator's config; a probe reads
 * one bounded line from the shard and only checks that it is +OK.
 * Threads: the table is read-only after start-up except the down mark
 * (atomic, any thread); probes run on the main loop only.
 * RFC 1939 section 4 (the greeting), section 6 (QUIT). */
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

struct mmp_shard {
	struct mmp_shards *shards;
	char *name;
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
		    const char **error_r)
{
	static _Thread_local char error[256];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char port[8];

	if (hp->host == NULL || strcmp(hp->host, "*") == 0) {
		snprintf(error, sizeof(error), "shard %s has no POP3 address",
			 shard->name);
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
	memcpy(&shard->addr, res->ai_addr, res->ai_addrlen);
	shard->addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	mt_sockaddr_str((struct sockaddr *)&shard->addr, shard->addr_str,
			sizeof(shard->addr_str));
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
		atomic_init(&shard->down, false);
		shards->count++;
		if (!resolve(&addrs->pop3, shard, error_r)) {
			mmp_shards_free(&shards);
			return NULL;
		}
	}
	return shards;
}

static void probe_end(struct mmp_shard *shard)
{
	if (shard->probe != NULL) {
		bufferevent_free(shard->probe);
		shard->probe = NULL;
	}
	if (shard->probe_timeout != NULL) {
		event_free(shard->probe_timeout);
		shard->probe_timeout = NULL;
	}
}

void mmp_shards_free(struct mmp_shards **shards_p)
{
	struct mmp_shards *shards = *shards_p;
	if (shards == NULL)
		return;
	*shards_p = NULL;
	for (size_t i = 0; i < shards->count; i++) {
		struct mmp_shard *shard = &shards->list[i];
		probe_end(shard);
		mt_timer_free(&shard->retry);
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

const char *mmp_shard_name(const struct mmp_shard *shard) { return shard->name; }

const char *mmp_shard_address(const struct mmp_shard *shard)
{
	return shard->addr_str;
}

const struct sockaddr *mmp_shard_sockaddr(const struct mmp_shard *shard,
					  socklen_t *len_r)
{
	*len_r = shard->addrlen;
	return (const struct sockaddr *)&shard->addr;
}

bool mmp_shard_is_down(struct mmp_shard *shard)
{
	return atomic_load_explicit(&shard->down, memory_order_relaxed);
}

/* Probes (main loop) */

static void probe_start(void *context);

/* The first probe of a down shard; later ones double up to the interval. */
#define FIRST_PROBE_MS UINT64_C(1000)

static void probe_schedule(void *context)
{
	struct mmp_shard *shard = context;
	if (shard->shards->stopping || shard->retry != NULL ||
	    shard->probe != NULL)
		return;
	uint64_t delay = shard->shards->retry_interval;
	if (shard->probes < 16 && (FIRST_PROBE_MS << shard->probes) < delay)
		delay = FIRST_PROBE_MS << shard->probes;
	shard->retry = mt_timer_add(shard->shards->main_loop, (unsigned int)delay,
				    false, probe_start, shard);
}

static void probe_failed(struct mmp_shard *shard, const char *why)
{
	probe_end(shard);
	shard->probes++;
	/* Once per down period at info; the rest would repeat every interval. */
	mt_log(shard->probes == 1 ? MT_LOG_INFO : MT_LOG_DEBUG,
	       "shard=%s address=%s event=probe_failed reason=%s",
	       shard->name, shard->addr_str, why);
	probe_schedule(shard);
}

static void probe_read_cb(struct bufferevent *bev, void *arg)
{
	struct mmp_shard *shard = arg;
	struct mt_buf line = MT_BUF_INIT;
	const char *error = NULL;

	enum mt_line_status st = mt_line_read(&shard->reader,
					      bufferevent_get_input(bev),
					      &line, &error);
	if (st == MT_LINE_NEED_MORE) {
		mt_buf_free(&line);
		return;
	}
	bool ok = st == MT_LINE_OK &&
		mt_pop3_status(line.data, line.len) == MT_POP3_OK;
	mt_buf_free(&line);
	if (!ok) {
		probe_failed(shard, "no +OK greeting");
		return;
	}
	/* RFC 1939 section 6: QUIT from AUTHORIZATION just ends the session.
	 * Best effort: written now if the socket takes it (it will). */
	evutil_socket_t fd = bufferevent_getfd(bev);
	if (write(fd, "QUIT\r\n", 6) < 0) {
		/* the shard answered: that is all the probe wanted */
	}
	probe_end(shard);
	shard->probes = 0;
	atomic_store(&shard->down, false);
	mt_info("shard=%s address=%s event=up", shard->name, shard->addr_str);
}

static void probe_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct mmp_shard *shard = arg;
	(void)bev;
	if ((what & BEV_EVENT_CONNECTED) != 0)
		return;
	probe_failed(shard, (what & BEV_EVENT_EOF) != 0 ? "closed" :
		     evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

static void probe_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what;
	probe_failed(arg, "timeout");
}

static void probe_start(void *context)
{
	struct mmp_shard *shard = context;
	struct event_base *base = mt_loop_base(shard->shards->main_loop);

	mt_timer_free(&shard->retry);	/* allowed from its own callback */
	shard->probe = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (shard->probe == NULL)
		mt_panic("bufferevent_socket_new failed");
	mt_line_reader_init(&shard->reader, MMP_RESPONSE_LINE_MAX,
			    MT_LINE_ACCEPT_LF);
	bufferevent_setcb(shard->probe, probe_read_cb, NULL, probe_event_cb,
			  shard);
	bufferevent_enable(shard->probe, EV_READ);
	shard->probe_timeout = evtimer_new(base, probe_timeout_cb, shard);
	if (shard->probe_timeout == NULL)
		mt_panic("evtimer_new failed");
	struct timeval tv = { (time_t)(shard->shards->probe_timeout / 1000),
			      (suseconds_t)(shard->shards->probe_timeout % 1000) * 1000 };
	evtimer_add(shard->probe_timeout, &tv);
	if (bufferevent_socket_connect(shard->probe,
				       (struct sockaddr *)&shard->addr,
				       (int)shard->addrlen) < 0)
		probe_failed(shard, strerror(errno));
}

void mmp_shard_failed(struct mmp_shard *shard, const char *reason)
{
	bool was_down = atomic_exchange(&shard->down, true);
	if (was_down)
		return;
	uint64_t first = shard->shards->retry_interval < FIRST_PROBE_MS ?
		shard->shards->retry_interval : FIRST_PROBE_MS;
	mt_warning("shard=%s address=%s event=down reason=%s probe_ms=%llu",
		   shard->name, shard->addr_str, reason, (unsigned long long)first);
	mt_loop_post(shard->shards->main_loop, probe_schedule, shard);
}

void mmp_shards_stop(struct mmp_shards *shards)
{
	shards->stopping = true;
	for (size_t i = 0; i < shards->count; i++) {
		probe_end(&shards->list[i]);
		mt_timer_free(&shards->list[i].retry);
	}
}
