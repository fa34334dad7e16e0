/* ctl-queue.c — `mailtierctl queue list|show ID|flush [ID]|hold ID|
 * release ID|delete ID|stats`: the MTA's queue, through the admin socket
 * that mailtier-mta serves in its queue_dir ([mta] queue_dir of the config
 * given with -c), so the queue database is only ever opened by its owner.
 * The protocol is mta/admin.h's: one request line, a "+OK"/"-ERR" line,
 * data lines, "." alone.
 *
 * Trust boundary: the operator's command line (ids are checked for shape
 * before they are sent); the reply comes from the daemon and is printed,
 * its control characters already replaced by the daemon. No RFC applies. */
#include "ctl.h"
#include "mailtier-settings.h"
#include "mta/mta-settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define ADMIN_SOCKET "admin.sock"
#define QUEUE_ID_LEN 16
#define REPLY_MAX (64u * 1024u * 1024u)

int ctl_queue(struct ctl_context *ctx, int argc, char **argv);

static bool valid_id(const char *id)
{
	return strlen(id) == QUEUE_ID_LEN &&
		strspn(id, "0123456789ABCDEF") == QUEUE_ID_LEN;
}

char *ctl_admin_ask(const char *queue_dir, const char *request)
{
	struct sockaddr_un sun;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%s", queue_dir,
			     ADMIN_SOCKET) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "queue_dir %s: path too long\n", queue_dir);
		return NULL;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		fprintf(stderr, "cannot reach mailtier-mta at %s: %s (is it running?)\n",
			sun.sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	size_t len = strlen(request);
	if (write(fd, request, len) != (ssize_t)len || write(fd, "\n", 1) != 1) {
		fprintf(stderr, "%s: write: %s\n", sun.sun_path, strerror(errno));
		close(fd);
		return NULL;
	}
	size_t cap = 4096, used = 0;
	char *reply = malloc(cap);
	for (;;) {
		if (reply == NULL || used + 1 >= REPLY_MAX) {
			fprintf(stderr, "reply too large\n");
			free(reply);
			close(fd);
			return NULL;
		}
		if (cap - used < 1024) {
			cap *= 2;
			char *grown = realloc(reply, cap);
			if (grown == NULL) {
				free(reply);
				close(fd);
				return NULL;
			}
			reply = grown;
		}
		ssize_t n = read(fd, reply + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "%s: read: %s\n", sun.sun_path, strerror(errno));
			free(reply);
			close(fd);
			return NULL;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	reply[used] = '\0';
	return reply;
}

static void format_age(long long seconds, char *buf, size_t size)
{
	if (seconds < 120)
		snprintf(buf, size, "%llds", seconds);
	else if (seconds < 7200)
		snprintf(buf, size, "%lldm", seconds / 60);
	else if (seconds < 172800)
		snprintf(buf, size, "%lldh", seconds / 3600);
	else
		snprintf(buf, size, "%lldd", seconds / 86400);
}

/* LIST's tab-separated records as a table. */
static void print_list(char *data)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	long long now_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	unsigned int count = 0;
	printf("%-16s %9s %5s %-8s %-28s %-30s %s\n", "ID", "SIZE", "AGE", "STATUS",
	       "SENDER", "RECIPIENTS", "LAST ERROR");
	for (char *line = strtok(data, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		if (strcmp(line, ".") == 0)
			break;
		char *field[7] = { 0 };
		char *p = line;
		for (int i = 0; i < 7 && p != NULL; i++) {
			field[i] = p;
			p = strchr(p, '\t');
			if (p != NULL)
				*p++ = '\0';
		}
		if (field[6] == NULL)
			continue;
		char age[32], sender[300];
		format_age((now_ms - atoll(field[2])) / 1000, age, sizeof(age));
		snprintf(sender, sizeof(sender), "<%s>", field[4]);
		printf("%-16s %9s %5s %-8s %-28s %-30s %s\n", field[0], field[1], age,
		       field[3], sender, field[5], field[6]);
		count++;
	}
	printf("-- %u message%s\n", count, count == 1 ? "" : "s");
}

static void usage(void)
{
	fprintf(stderr, "usage: mailtierctl queue list | show ID | flush [ID] | "
		"hold ID | release ID | delete ID | stats\n");
}

int ctl_queue(struct ctl_context *ctx, int argc, char **argv)
{
	const char *cmd = argv[0];
	const char *id = argc > 1 ? argv[1] : NULL;
	bool needs_id = strcmp(cmd, "show") == 0 || strcmp(cmd, "hold") == 0 ||
		strcmp(cmd, "release") == 0 || strcmp(cmd, "delete") == 0;
	bool no_arg = strcmp(cmd, "list") == 0 || strcmp(cmd, "stats") == 0;
	if ((needs_id && argc != 2) || (no_arg && argc != 1) ||
	    (strcmp(cmd, "flush") == 0 && argc > 2) || argc > 2) {
		usage();
		return CTL_EXIT_USAGE;
	}
	if (id != NULL && !valid_id(id)) {
		fprintf(stderr, "%s: not a queue id (16 hex digits)\n", id);
		return CTL_EXIT_USAGE;
	}
	char *errors = NULL;
	struct mt_config *config = mt_mailtier_config_load(ctx->config_path, &errors);
	if (config == NULL) {
		fputs(errors, stderr);
		free(errors);
		return CTL_EXIT_FAIL;
	}
	const struct mt_mta_settings *set = mt_config_get(config, "mta", NULL);
	char request[64];
	snprintf(request, sizeof(request), "%s%s%s", cmd, id != NULL ? " " : "",
		 id != NULL ? id : "");
	for (char *p = request; *p != '\0' && *p != ' '; p++)
		*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
	char *reply = ctl_admin_ask(set->queue_dir, request);
	mt_config_free(&config);
	if (reply == NULL)
		return CTL_EXIT_FAIL;
	int status = CTL_EXIT_OK;
	char *body = strchr(reply, '\n');
	if (strncmp(reply, "+OK", 3) != 0) {
		fprintf(stderr, "%s\n", strncmp(reply, "-ERR ", 5) == 0 ? reply + 5 : reply);
		status = CTL_EXIT_FAIL;
	} else if (strcmp(cmd, "list") == 0) {
		print_list(body != NULL ? body + 1 : reply + strlen(reply));
	} else if (strcmp(cmd, "show") == 0 || strcmp(cmd, "stats") == 0) {
		for (char *line = body != NULL ? strtok(body + 1, "\n") : NULL;
		     line != NULL && strcmp(line, ".") != 0; line = strtok(NULL, "\n"))
			printf("%s\n", line);
	} else {
		if (body != NULL)
			*body = '\0';
		printf("%s\n", reply[3] == ' ' ? reply + 4 : reply);
	}
	free(reply);
	return status;
}
