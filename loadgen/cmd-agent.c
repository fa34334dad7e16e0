/* cmd-agent.c — `mailtier-load agent --listen HOST:PORT`: wait for a
 * manager (`run --agents`), run its share of the users, send the result,
 * then wait for the next (--once: exit after one run; SIGINT/SIGTERM end
 * it between runs, and interrupt a run in progress). One manager at a
 * time: a second connection while a run is in progress waits in the
 * listen queue and is turned away by its own handshake deadline.
 * Trust boundary: whoever connects is a manager (agent.h): the port must
 * be on a management address. */
#include "commands.h"

#include "agent.h"
#include "cli.h"
#include "log.h"
#include "loop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { OPT_LISTEN = 256, OPT_ONCE };

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = sig;
}

static int listen_on(const char *hostport, unsigned int *port_r)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	const char *error;
	int fd, one = 1;

	if (!mt_sockaddr_parse(hostport, &ss, &len, &error))
		lg_usage_error("agent: --listen %s: %s", hostport, error);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 8) < 0) {
		fprintf(stderr, "mailtier-load: agent: listen on %s: %s\n", hostport,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	len = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	*port_r = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) :
		ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

int lg_cmd_agent(int argc, char **argv)
{
	static const struct option options[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	const char *listen_addr = NULL;
	bool once = false;
	int verbose = 0, opt, status = 0;
	unsigned int port = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
		switch (opt) {
		case OPT_LISTEN: listen_addr = optarg; break;
		case OPT_ONCE: once = true; break;
		case 'v': verbose++; break;
		case 'h': lg_usage(stdout); exit(0);
		default: lg_usage_error("bad option");
		}
	}
	if (optind < argc)
		lg_usage_error("unexpected argument '%s'", argv[optind]);
	if (listen_addr == NULL)
		lg_usage_error("agent: --listen is required");
	lg_cli_verbosity(verbose, "mailtier-load");
	int lfd = listen_on(listen_addr, &port);
	if (lfd < 0)
		return LG_EXIT_FAILED;
	/* No SA_RESTART: a signal ends the wait in poll(). */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	fprintf(stderr, "mailtier-load: agent listening on port %u\n", port);
	while (!stop_requested) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		struct sockaddr_storage peer;
		socklen_t peer_len = sizeof(peer);
		char name[MT_SOCKADDR_STRLEN];

		if (poll(&pfd, 1, 1000) <= 0)
			continue;	/* a timeout or a signal: look at the flag */
		int fd = accept4(lfd, (struct sockaddr *)&peer, &peer_len, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		mt_sockaddr_str((struct sockaddr *)&peer, name, sizeof(name));
		mt_info("agent: manager %s connected", name);
		int rc = lg_agent_serve(fd, name);
		if (once) {
			status = rc == 0 ? 0 : 1;
			break;
		}
	}
	close(lfd);
	return status;
}
