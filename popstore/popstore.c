/* popstore.c — what the daemon's parts share besides its main(): the
 * session count against max_sessions, a replica's refusal of new sessions
 * (naming the master), the exit on a failed store, socket
 * options, the proxy address check, the CIDR lists and the store's open
 * from the settings. In a file of its own so that the session-level fuzz
 * target (tests/fuzz/fuzz-popstore-session.c) runs the daemon's very code.
 *
 * Trust boundary: the settings are the operator's (checked at load); a
 * peer address is only compared. No protocol RFC. */
#include "popstore.h"
#include "alloc.h"
#include "authfail.h"
#include "clock.h"
#include "log.h"
#include "loop.h"
#include "sdnotify.h"
#include "store/store.h"
#include "tls.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/sha.h>

#define FATAL_EXIT_MSECS 200

const char *const popstore_protocol_names[POPSTORE_PROTOCOL_COUNT] = {
	[POPSTORE_LMTP] = "lmtp", [POPSTORE_POP3] = "pop3", [POPSTORE_IMAP] = "imap",
};

bool popstore_session_add(struct popstore *ps, bool trusted)
{
	uint64_t max = ps->set->max_sessions;
	if (!trusted)
		max -= max / 10;
	if (ps->sessions >= max)
		return false;
	ps->sessions++;
	return true;
}

void popstore_session_remove(struct popstore *ps)
{
	if (ps->sessions > 0 && --ps->sessions == 0)
		mt_loop_drain_done(ps->loop);
}

void popstore_socket_setup(int fd)
{
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* max_sessions_per_address: false if peer (not a proxy) has that many. */
static bool address_open(struct popstore *ps, const struct sockaddr *peer)
{
	char key[MT_AUTHFAIL_KEY_MAX];
	if (popstore_is_proxy(ps, peer) || !mt_authfail_key(peer, key, sizeof(key)))
		return true;
	if (ps->address_sessions == NULL)
		ps->address_sessions = mt_authfail_new();
	const struct mt_authfail_limits limits = { .sessions = ps->set->max_sessions_per_address };
	return mt_authfail_session_open(ps->address_sessions, key, &limits, mt_clock_ms()) ==
		MT_AUTHFAIL_ADMIT_OK;
}

void popstore_address_close(struct popstore *ps, const char *peer_ip, bool from_proxy)
{
	if (!from_proxy && peer_ip[0] != '\0' && ps->address_sessions != NULL)
		mt_authfail_session_close(ps->address_sessions, peer_ip);
}

/* A user's key in the per-user table: "u" and 40 hex digits of the
 * name's SHA-256 (names are longer than the table's keys). */
static void user_key(const char *user, char key[MT_AUTHFAIL_KEY_MAX])
{
	unsigned char digest[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)user, strlen(user), digest);
	key[0] = 'u';
	for (int i = 0; i < 20; i++)
		snprintf(key + 1 + 2 * i, 3, "%02x", digest[i]);
}

bool popstore_user_open(struct popstore *ps, const char *user)
{
	char key[MT_AUTHFAIL_KEY_MAX];
	user_key(user, key);
	if (ps->user_sessions == NULL)
		ps->user_sessions = mt_authfail_new();
	const struct mt_authfail_limits limits = { .sessions = ps->set->imap_max_user_sessions };
	return mt_authfail_session_open(ps->user_sessions, key, &limits, mt_clock_ms()) ==
		MT_AUTHFAIL_ADMIT_OK;
}

void popstore_user_close(struct popstore *ps, const char *user)
{
	char key[MT_AUTHFAIL_KEY_MAX];
	if (ps->user_sessions == NULL)
		return;
	user_key(user, key);
	mt_authfail_session_close(ps->user_sessions, key);
}

void popstore_limits_free(struct popstore *ps)
{
	mt_authfail_free(&ps->address_sessions);
	mt_authfail_free(&ps->user_sessions);
}

struct bufferevent *popstore_accept(struct popstore *ps, int fd,
				    const struct sockaddr *peer, bool implicit_tls,
				    enum popstore_protocol protocol, const char *busy,
				    const struct mt_logctx *log,
				    char addr[MT_SOCKADDR_STRLEN])
{
	const char *proto = popstore_protocol_names[protocol];
	const char *error;
	char refusal[512];
	mt_sockaddr_str(peer, addr, MT_SOCKADDR_STRLEN);
	if (!popstore_store_serving(ps, protocol, refusal, sizeof(refusal))) {
		mt_slog(MT_LOG_INFO, log, "%s refused peer=%s reason=not-serving", proto, addr);
		ps->refused_connections++;
		popstore_metrics_session_end(ps, protocol, MT_OUTCOME_REFUSED, NULL);
		if (!implicit_tls)
			(void)send(fd, refusal, strlen(refusal), MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		return NULL;
	}
	if (!popstore_session_add(ps, popstore_is_proxy(ps, peer))) {
		mt_slog(MT_LOG_WARNING, log,
			"%s refused peer=%s reason=max-sessions limit=%llu", proto, addr,
			(unsigned long long)ps->set->max_sessions);
		ps->refused_connections++;
		popstore_metrics_session_end(ps, protocol, MT_OUTCOME_REFUSED, NULL);
		if (!implicit_tls)
			(void)send(fd, busy, strlen(busy), MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		return NULL;
	}
	if (!address_open(ps, peer)) {
		mt_slog(MT_LOG_WARNING, log,
			"%s refused peer=%s reason=max-sessions-per-address limit=%llu", proto,
			addr, (unsigned long long)ps->set->max_sessions_per_address);
		ps->refused_connections++;
		popstore_metrics_session_end(ps, protocol, MT_OUTCOME_REFUSED, NULL);
		popstore_session_remove(ps);
		if (!implicit_tls)
			(void)send(fd, busy, strlen(busy), MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		return NULL;
	}
	popstore_socket_setup(fd);
	struct bufferevent *bev;
	if (implicit_tls)
		bev = mt_tls_bev_accept(ps->tls, mt_loop_base(ps->loop), fd, &error);
	else {
		bev = bufferevent_socket_new(mt_loop_base(ps->loop), fd,
					     BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
		error = "bufferevent_socket_new failed";
	}
	if (bev == NULL) {
		mt_slog(MT_LOG_ERROR, log, "%s peer=%s: %s", proto, addr, error);
		char key[MT_AUTHFAIL_KEY_MAX];
		if (mt_authfail_key(peer, key, sizeof(key)))
			popstore_address_close(ps, key, popstore_is_proxy(ps, peer));
		popstore_session_remove(ps);
		popstore_metrics_session_end(ps, protocol, MT_OUTCOME_ERROR, NULL);
	}
	return bev;
}

void popstore_log_tls_up(struct bufferevent *bev, const struct mt_logctx *log,
			 const char *protocol)
{
	char buf[256];
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	if (ssl != NULL)
		mt_slog(MT_LOG_INFO, log, "%s tls=\"%s\"", protocol,
			mt_tls_describe(ssl, buf, sizeof(buf)));
}

void popstore_log_tls_error(struct bufferevent *bev, const struct mt_logctx *log,
			    const char *protocol)
{
	char buf[256];
	mt_slog(MT_LOG_INFO, log, "%s tls error: %s", protocol,
		mt_tls_bev_error(bev, buf, sizeof(buf)));
}

bool popstore_is_proxy(const struct popstore *ps, const struct sockaddr *peer)
{
	return mt_cidr_match(ps->proxy_addresses, ps->n_proxy_addresses, peer);
}

static void fatal_exit_cb(void *context)
{
	struct popstore *ps = context;
	mt_loop_exit(ps->loop);
}

void popstore_store_fatal(struct popstore *ps, const char *error)
{
	if (ps->fatal)
		return;
	ps->fatal = true;
	mt_error("store failed: %s; exiting so that the restart runs recovery",
		 error != NULL ? error : "Berkeley DB panic");
	mt_notify_status("store failed: restart needed for recovery");
	/* A moment for the temporary-failure replies already queued to reach
	 * their clients; every store request fails meanwhile. */
	(void)mt_timer_add(ps->loop, FATAL_EXIT_MSECS, false, fatal_exit_cb, ps);
}

bool popstore_store_serving(struct popstore *ps, enum popstore_protocol protocol,
			    char *line, size_t size)
{
	char why[320];
	if (ps->store == NULL || mt_store_serving(ps->store, why, sizeof(why)))
		return true;
	static const char *const codes[POPSTORE_PROTOCOL_COUNT] = {
		[POPSTORE_LMTP] = "421 4.3.2", [POPSTORE_POP3] = "-ERR [SYS/TEMP]",
		[POPSTORE_IMAP] = "* BYE [UNAVAILABLE]",
	};
	snprintf(line, size, "%s %s %s (shard %s), try another site\r\n", codes[protocol],
		 ps->hostname, why, ps->shard);
	return false;
}

struct mt_cidr *popstore_parse_cidrs(const struct mt_strlist *list, size_t *count_r)
{
	struct mt_cidr *cidrs = mt_xcalloc(list->count + 1, sizeof(*cidrs));
	const char *error;
	for (size_t i = 0; i < list->count; i++)
		if (!mt_cidr_parse(list->items[i], &cidrs[i], &error))
			mt_fatal("'%s': %s", list->items[i], error);	/* checked at load */
	*count_r = list->count;
	return cidrs;
}

void popstore_open_store(struct popstore *ps)
{
	struct mt_store_settings ss = {
		.home = ps->set->db_home, .mode = MT_STORE_MODE_SERVE, .create = true,
		.cache_size = ps->set->db_cache_size,
		.commit_threads = (unsigned int)ps->set->commit_threads,
		.reader_threads = (unsigned int)ps->set->reader_threads,
		.purge_delay_msecs = (unsigned int)ps->set->purge_delay,
		.redelivery_window_secs = (unsigned int)(ps->set->redelivery_window / 1000),
		.max_mailbox_messages = ps->set->max_mailbox_messages,
	};
	char name[128];
	snprintf(name, sizeof(name), "store %s", ps->shard);
	const struct mt_popstore_settings *set = ps->set;
	const struct mt_store_replication repl = {
		.listen = set->replication_listen,
		.sites = (const char *const *)set->replication_sites.items,
		.site_count = set->replication_sites.count,
		.priority = (unsigned int)set->replication_priority,
		.ack_timeout_ms = (unsigned int)set->replication_ack_timeout,
		.create_group = ps->create_group,
		.log_retention_secs = set->replication_log_retention / 1000,
		.log_retention_bytes = set->replication_log_retention_size,
		.name = name,
	};
	if (set->replication_listen[0] != '\0')
		ss.replication = &repl;
	const char *error;
	enum mt_store_status status = mt_store_open(&ss, &ps->store, &error);
	if (status != MT_STORE_OK)
		mt_fatal("store %s: %s: %s", ps->set->db_home,
			 mt_store_status_name(status), error);
	ps->port = mt_store_port_new(ps->store, ps->loop, &error);
	if (ps->port == NULL)
		mt_fatal("%s", error);
}
