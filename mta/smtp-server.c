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
 * The same per-address table (lib/authfail.c) remembers failed AUTHs
 * (smtp-auth.c): the n-th failure within auth_fail_window of the previous
 * one is answered after auth_fail_delay * 2^(n-1), at most 60 s, across
 * connections (as the MMP and popstore; RFC 4954's security
 * considerations leave the defence against password guessing to the
 * server). An entry with failures outlives its sessions until the window
 * has passed (smtp_server_sweep).
 *
 * A second table of the same kind counts RCPTs of unknown local users per
 * client address (smtp-commands.c): the n-th within rcpt_fail_window is
 * answered after rcpt_fail_delay * 2^(n-1), at most 60 s, and from
 * rcpt_fail_limit on the address's RCPTs get 450 4.7.1 for the window, so
 * the directory cannot be enumerated at full speed over many connections
 * (Postfix's anvil recipient rate, with smtpd_error_sleep_time's delay). */
#include "smtp-session.h"
#include "clock.h"
#include "alloc.h"
#include "authfail.h"
#include "authfail-metrics.h"
#include "log.h"
#include "mta-metrics.h"
#include "mta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct smtp_server {
	struct mta *mta;
	struct mt_conn_list sessions;	/* lib-mail/conn: the live sessions */
	unsigned int receiving;		/* sessions in DATA or BDAT */
	bool draining;
	struct mt_authfail *clients;	/* per address: sessions, failed AUTHs */
	struct mt_authfail *rcpt_fails;	/* per address: unknown recipients */
	struct mt_authfail_metrics *clients_metrics, *rcpt_fails_metrics;
};

/* The per-address limits of the config in force (read on each use: a
 * reload applies at once). */
static struct mt_authfail_limits client_limits(const struct smtp_server *server)
{
	const struct mt_mta_settings *set = server->mta->set;
	return (struct mt_authfail_limits){
		.delay = set->auth_fail_delay,
		.window = set->auth_fail_window,
		.sessions = set->max_sessions_per_client,
	};
}

static struct mt_authfail_limits rcpt_limits(const struct smtp_server *server)
{
	const struct mt_mta_settings *set = server->mta->set;
	return (struct mt_authfail_limits){
		.delay = set->rcpt_fail_delay,
		.window = set->rcpt_fail_window,
		.block_after = set->rcpt_fail_limit,
	};
}

uint64_t smtp_server_rcpt_failed(struct smtp_server *server, const char *ip,
				 bool *limit_reached_r)
{
	struct mt_authfail_limits limits = rcpt_limits(server);
	return mt_authfail_failed(server->rcpt_fails, ip, &limits,
				  mt_clock_ms(), limit_reached_r);
}

bool smtp_server_rcpt_limited(struct smtp_server *server, const char *ip)
{
	struct mt_authfail_limits limits = rcpt_limits(server);
	return mt_authfail_blocked(server->rcpt_fails, ip, &limits,
				   mt_clock_ms());
}

uint64_t smtp_server_auth_failed(struct smtp_server *server, const char *ip)
{
	struct mt_authfail_limits limits = client_limits(server);
	return mt_authfail_failed(server->clients, ip, &limits,
				  mt_clock_ms(), NULL);
}

void smtp_server_sweep(struct smtp_server *server)
{
	struct mt_authfail_limits limits = client_limits(server);
	mt_authfail_sweep(server->clients, &limits, mt_clock_ms());
	limits = rcpt_limits(server);
	mt_authfail_sweep(server->rcpt_fails, &limits, mt_clock_ms());
}

struct smtp_server *smtp_server_new(struct mta *mta)
{
	struct smtp_server *server = mt_xcalloc(1, sizeof(*server));
	server->mta = mta;
	server->clients = mt_authfail_new();
	server->rcpt_fails = mt_authfail_new();
	return server;
}

void smtp_server_free(struct smtp_server **server_p)
{
	struct smtp_server *server = *server_p;
	if (server == NULL)
		return;
	mt_conn_list_close_all(&server->sessions, "shutdown");
	*server_p = NULL;
	mt_authfail_metrics_free(&server->clients_metrics);
	mt_authfail_metrics_free(&server->rcpt_fails_metrics);
	mt_authfail_free(&server->clients);
	mt_authfail_free(&server->rcpt_fails);
	free(server);
}

void smtp_server_export_metrics(struct smtp_server *server, struct mt_metrics *m)
{
	server->clients_metrics = mt_authfail_metrics_new(m, "client", &server->clients);
	server->rcpt_fails_metrics = mt_authfail_metrics_new(m, "rcpt", &server->rcpt_fails);
}

unsigned int smtp_server_count(const struct smtp_server *server)
{
	return server->sessions.count;
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
		mta_metrics_session_closed(server->mta, service, MT_OUTCOME_SHUTDOWN);
		close(fd);
		return;
	}
	if (server->sessions.count >= set->max_sessions) {
		mt_warning("reject connect from %s: max_sessions=%u reached", ip,
			   (unsigned int)set->max_sessions);
		snprintf(line, sizeof(line), "421 4.3.2 %s Too many connections, "
			 "try again later\r\n", server->mta->hostname);
		mta_metrics_session_closed(server->mta, service, MT_OUTCOME_REFUSED);
		refuse(fd, service, line);
		return;
	}
	struct mt_authfail_limits limits = client_limits(server);
	if (mt_authfail_session_open(server->clients, ip, &limits,
				     mt_clock_ms()) != MT_AUTHFAIL_ADMIT_OK) {
		mt_warning("reject connect from %s: max_sessions_per_client=%u reached",
			   ip, (unsigned int)set->max_sessions_per_client);
		snprintf(line, sizeof(line), "421 4.7.0 %s Too many connections "
			 "from your address, try again later\r\n",
			 server->mta->hostname);
		mta_metrics_session_closed(server->mta, service, MT_OUTCOME_REFUSED);
		refuse(fd, service, line);
		return;
	}
	struct smtp_session *s = smtp_session_new(server->mta, &server->sessions, service,
						  fd, peer, peerlen);
	if (s == NULL)
		mt_authfail_session_close(server->clients, ip);
}

void smtp_server_session_closed(struct smtp_server *server,
				struct smtp_session *s)
{
	mt_authfail_session_close(server->clients, s->peer_ip);
}

static void drain_session(struct mt_conn *conn)
{
	smtp_session_drain(SMTP_SESSION(MT_CONN_OWNER(conn, struct mt_smtpd, conn)));
}

void smtp_server_drain(struct smtp_server *server)
{
	server->draining = true;
	mt_conn_list_each(&server->sessions, drain_session);
	if (server->sessions.count == 0)
		mta_drain_check(server->mta);
}
