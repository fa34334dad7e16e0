/* smtp-server.c — the SMTP server's sessions as a whole: accepting a
 * connection within max_sessions and max_sessions_per_client, the list of
 * live sessions, and the drain on SIGTERM.
 *
 * Trust boundary: the peer address of an accepted connection (the
 * client's, used only to count and to log). A client over a limit gets one
 * plaintext 421 line (RFC 5321 3.1: "421 Service not available") written
 * without waiting, then the connection is closed; over implicit TLS it is
 * just closed, as no TLS session exists yet to say it in.
 *
 * The same per-address table remembers failed AUTHs (smtp-auth.c): the
 * n-th failure within auth_fail_window of the previous one is answered
 * after auth_fail_delay * 2^(n-1), at most AUTH_FAIL_DELAY_MAX, across
 * connections (as the MMP's mmp-clients.c; RFC 4954's security
 * considerations leave the defence against password guessing to the
 * server). An entry with failures
 * outlives its sessions until the window has passed (smtp_server_sweep). */
#include "smtp-session.h"
#include "alloc.h"
#include "log.h"
#include "mta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CLIENT_BUCKETS 1024
#define AUTH_FAIL_DELAY_MAX 60000u	/* ms: the penalty stops growing */

struct client_count {
	struct client_count *next;
	unsigned int sessions;
	unsigned int auth_failures;	/* within auth_fail_window */
	uint64_t last_auth_failure_ms;
	char ip[MT_SOCKADDR_STRLEN];
};

struct smtp_server {
	struct mta *mta;
	struct smtp_session *sessions;
	unsigned int count;
	unsigned int receiving;		/* sessions in DATA or BDAT */
	bool draining;
	struct client_count *clients[CLIENT_BUCKETS];
};

static size_t ip_hash(const char *ip)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *p = ip; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return (size_t)(h % CLIENT_BUCKETS);
}

static struct client_count **client_find(struct smtp_server *server,
					 const char *ip)
{
	struct client_count **pp = &server->clients[ip_hash(ip)];
	while (*pp != NULL && strcmp((*pp)->ip, ip) != 0)
		pp = &(*pp)->next;
	return pp;
}

uint64_t smtp_monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Forget failures older than the window; drop an entry holding nothing. */
static void client_maybe_free(struct smtp_server *server,
			      struct client_count **pp, uint64_t now_ms)
{
	struct client_count *c = *pp;
	if (c->auth_failures != 0 &&
	    now_ms - c->last_auth_failure_ms >= server->mta->set->auth_fail_window)
		c->auth_failures = 0;
	if (c->sessions == 0 && c->auth_failures == 0) {
		*pp = c->next;
		free(c);
	}
}

uint64_t smtp_server_auth_failed(struct smtp_server *server, const char *ip)
{
	const struct mt_mta_settings *set = server->mta->set;
	uint64_t now = smtp_monotonic_ms(), delay = set->auth_fail_delay;
	struct client_count **pp = client_find(server, ip);
	if (*pp == NULL) {
		/* The session's own entry is there; be safe anyway. */
		*pp = mt_xcalloc(1, sizeof(**pp));
		snprintf((*pp)->ip, sizeof((*pp)->ip), "%s", ip);
	}
	struct client_count *c = *pp;
	if (c->auth_failures != 0 &&
	    now - c->last_auth_failure_ms >= set->auth_fail_window)
		c->auth_failures = 0;
	if (c->auth_failures < UINT32_MAX)
		c->auth_failures++;
	c->last_auth_failure_ms = now;
	for (unsigned int i = 1; i < c->auth_failures && delay < AUTH_FAIL_DELAY_MAX; i++)
		delay *= 2;
	return delay < AUTH_FAIL_DELAY_MAX ? delay : AUTH_FAIL_DELAY_MAX;
}

void smtp_server_sweep(struct smtp_server *server)
{
	uint64_t now = smtp_monotonic_ms();
	for (size_t i = 0; i < CLIENT_BUCKETS; i++) {
		struct client_count **pp = &server->clients[i];
		while (*pp != NULL) {
			struct client_count *c = *pp;
			client_maybe_free(server, pp, now);
			if (*pp == c)
				pp = &c->next;
		}
	}
}

struct smtp_server *smtp_server_new(struct mta *mta)
{
	struct smtp_server *server = mt_xcalloc(1, sizeof(*server));
	server->mta = mta;
	return server;
}

void smtp_server_free(struct smtp_server **server_p)
{
	struct smtp_server *server = *server_p;
	if (server == NULL)
		return;
	while (server->sessions != NULL)
		smtp_session_close(server->sessions, "shutdown");
	*server_p = NULL;
	for (size_t i = 0; i < CLIENT_BUCKETS; i++) {
		for (struct client_count *c = server->clients[i], *next; c != NULL; c = next) {
			next = c->next;
			free(c);
		}
	}
	free(server);
}

unsigned int smtp_server_count(const struct smtp_server *server)
{
	return server->count;
}

unsigned int smtp_server_receiving(const struct smtp_server *server)
{
	return server->receiving;
}

void smtp_server_note_receiving(struct smtp_server *server, int delta)
{
	server->receiving = (unsigned int)((int)server->receiving + delta);
}

bool smtp_server_draining(const struct smtp_session *s)
{
	return s->mta->server->draining;
}

/* The peer's address without the port, for the per-client table. */
void smtp_format_peer_ip(const struct sockaddr *peer, char *buf, size_t size)
{
	char full[MT_SOCKADDR_STRLEN];
	mt_sockaddr_str(peer, full, sizeof(full));
	char *colon = strrchr(full, ':');
	if (colon != NULL)
		*colon = '\0';
	const char *start = full;
	if (full[0] == '[') {
		start++;
		size_t n = strlen(start);
		if (n > 0 && start[n - 1] == ']')
			full[n] = '\0';	/* start[n - 1] is full[n] */
	}
	snprintf(buf, size, "%s", start);
}

static void refuse(int fd, enum smtp_service service, const char *line)
{
	if (service != SMTP_SERVICE_SUBMISSIONS) {
		/* Best effort: a fresh socket's buffer takes one line. */
		ssize_t n = send(fd, line, strlen(line), MSG_DONTWAIT | MSG_NOSIGNAL);
		(void)n;
	}
	close(fd);
}

void smtp_server_accept(struct smtp_server *server, enum smtp_service service,
			int fd, const struct sockaddr *peer, socklen_t peerlen)
{
	const struct mt_mta_settings *set = server->mta->set;
	char ip[MT_SOCKADDR_STRLEN], line[512];

	smtp_format_peer_ip(peer, ip, sizeof(ip));
	if (server->draining) {
		close(fd);
		return;
	}
	if (server->count >= set->max_sessions) {
		mt_warning("reject connect from %s: max_sessions=%u reached", ip,
			   (unsigned int)set->max_sessions);
		snprintf(line, sizeof(line), "421 4.3.2 %s Too many connections, "
			 "try again later\r\n", server->mta->hostname);
		refuse(fd, service, line);
		return;
	}
	struct client_count **pp = client_find(server, ip);
	if (*pp != NULL && (*pp)->sessions >= set->max_sessions_per_client) {
		mt_warning("reject connect from %s: max_sessions_per_client=%u reached",
			   ip, (unsigned int)set->max_sessions_per_client);
		snprintf(line, sizeof(line), "421 4.7.0 %s Too many connections "
			 "from your address, try again later\r\n",
			 server->mta->hostname);
		refuse(fd, service, line);
		return;
	}
	struct smtp_session *s = smtp_session_new(server->mta, service, fd, peer,
						  peerlen);
	if (s == NULL)
		return;
	if (*pp == NULL) {
		*pp = mt_xcalloc(1, sizeof(**pp));
		snprintf((*pp)->ip, sizeof((*pp)->ip), "%s", ip);
	}
	(*pp)->sessions++;
	s->next = server->sessions;
	if (s->next != NULL)
		s->next->prev = s;
	server->sessions = s;
	server->count++;
}

void smtp_server_session_closed(struct smtp_server *server,
				struct smtp_session *s)
{
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		server->sessions = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	server->count--;
	struct client_count **pp = client_find(server, s->peer_ip);
	if (*pp != NULL && (*pp)->sessions > 0)
		(*pp)->sessions--;
	if (*pp != NULL)
		client_maybe_free(server, pp, smtp_monotonic_ms());
	if (server->draining && server->count == 0)
		mta_drain_check(server->mta);
}

void smtp_server_drain(struct smtp_server *server)
{
	server->draining = true;
	for (struct smtp_session *s = server->sessions, *next; s != NULL; s = next) {
		next = s->next;
		smtp_session_drain(s);
	}
	if (server->count == 0)
		mta_drain_check(server->mta);
}
