/* popstore-load.c — closed-loop LMTP and POP3 load for bench/popstore.py:
 * the same client measures mailtier-popstore and Dovecot (lmtpd, pop3d).
 *
 *   popstore-load lmtp --port P [--host H] [--conc C] [--duration S]
 *        [--size BYTES] [--first K] [--count N] [--per-user M]
 *        [--user-format user%lu@example.test]
 *   popstore-load pop  --port P [--host H] [--conc C] [--duration S]
 *        [--first K] [--count N] [--user-format user%lu@example.test]
 *        [--password-format secret%lu]
 *
 * lmtp: C connections, each delivering messages of about BYTES (one
 *   recipient, user K of [K, K+N) in turn, named by --user-format) back to back
 *   over one LMTP session (MAIL, RCPT, DATA pipelined as RFC 2920 allows,
 *   then the body), for S seconds — or, with --per-user M, exactly M
 *   messages to each of the N users (to fill mailboxes).
 * pop: C clients, each running sessions USER/PASS, STAT, RETR every
 *   message, DELE every message, QUIT — one command at a time, as poplib
 *   and /work/shared/peers/popload.py do — each on the next unused user,
 *   for S seconds or until every user had its session.
 *   popstore-load imap      (options as pop)
 *   popstore-load imap-prep (options as pop)
 *   popstore-load imap-idle (options as pop; --conc sessions)
 *
 * imap: C clients, each running sessions on the next unused user, one
 *   command at a time (issue 15's mix): LOGIN, SELECT INBOX, FETCH 1:*
 *   (FLAGS ENVELOPE), FETCH 1:2 BODY.PEEK[], STORE 1:2 +FLAGS.SILENT
 *   (\Seen), MOVE 1 Archive, STORE 1 +FLAGS.SILENT (\Deleted), EXPUNGE,
 *   LOGOUT — two of the mailbox's messages used (fill it with 4).
 * imap-prep: LOGIN, CREATE Archive (an existing one is fine), LOGOUT for
 *   every user: the first login's work (Dovecot's maildir, the store's
 *   special-use folders) done before the measured sessions.
 * imap-idle: --conc sessions, one after another, LOGIN, SELECT INBOX,
 *   IDLE; once all idle prints "idle=N" and waits --duration seconds (for
 *   the caller to measure the server), then DONE and LOGOUT each.
 * Prints one line: mode=... conc=... elapsed_s=... ok=... errors=...
 *   per_s=... (deliveries or sessions per second) p50_ms=... p95_ms=...
 *   and for pop and imap the mean time per session of each step.
 *
 * Trust boundary: benchmark tool for loopback servers we run; replies are
 * parsed defensively (bounded lines) but not trusted to be well-formed.
 * RFC 2033 (LMTP), RFC 1939 (POP3), RFC 9051 (IMAP: only what the mix
 * sends, literals skipped by their size). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum mode { MODE_LMTP, MODE_POP, MODE_IMAP, MODE_IMAP_PREP, MODE_IMAP_IDLE };
static const char *const mode_names[] = { "lmtp", "pop", "imap", "imap-prep", "imap-idle" };

struct opts {
	enum mode mode;
	const char *host;
	int port;
	unsigned int conc;
	double duration;
	size_t size;
	unsigned long first, count;
	const char *user_fmt;		/* printf format of a user's login, %lu = K */
	const char *pw_fmt;		/* and of its password */
	unsigned int per_user;
};

static struct opts o = {
	.host = "127.0.0.1", .conc = 8, .duration = 10, .size = 24576,
	.first = 1, .count = 1000,
	.user_fmt = "user%lu@example.test", .pw_fmt = "secret%lu",
};

static atomic_ulong next_job;		/* user index or message number */
static atomic_ulong n_ok, n_err, n_msgs, n_bytes;
static double t_end;
static char *body;			/* the LMTP message, dot-safe, CRLF */
static size_t body_len;

#define MAX_SAMPLES 2000000
static double *samples;
static atomic_ulong n_samples;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct conn {
	int fd;
	char buf[65536];
	size_t start, end;
};

static bool conn_open(struct conn *c)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o.port) };
	inet_pton(AF_INET, o.host, &sin.sin_addr);
	c->start = c->end = 0;
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0)
		return false;
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct timeval tv = { 30, 0 };
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(c->fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(c->fd);
		c->fd = -1;
		return false;
	}
	return true;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static bool send_all(struct conn *c, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static bool sendf(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool sendf(struct conn *c, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return n > 0 && (size_t)n < sizeof(line) && send_all(c, line, (size_t)n);
}

/* More octets into an empty buffer; false at EOF or an error. */
static bool conn_fill(struct conn *c)
{
	for (;;) {
		ssize_t r = recv(c->fd, c->buf, sizeof(c->buf), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		c->start = 0;
		c->end = (size_t)r;
		return true;
	}
}

/* One line without CRLF into line (truncated to size). */
static bool read_line(struct conn *c, char *line, size_t size)
{
	size_t n = 0;
	for (;;) {
		while (c->start < c->end) {
			char ch = c->buf[c->start++];
			if (ch == '\n') {
				if (n > 0 && line[n - 1] == '\r')
					n--;
				line[n < size ? n : size - 1] = '\0';
				return true;
			}
			if (n < size - 1)
				line[n++] = ch;
		}
		if (!conn_fill(c))
			return false;
	}
}

/* Skip a multi-line response body up to "." CRLF; its octets. */
static bool read_multiline(struct conn *c, uint64_t *bytes_r)
{
	char line[2048];
	*bytes_r = 0;
	for (;;) {
		if (!read_line(c, line, sizeof(line)))
			return false;
		if (strcmp(line, ".") == 0)
			return true;
		*bytes_r += strlen(line) + 2;
	}
}

/* A user's login or password from its printf format (operator's). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static const char *name(const char *fmt, unsigned long k, char *buf, size_t size)
{
	snprintf(buf, size, fmt, k);
	return buf;
}
#pragma GCC diagnostic pop

static void sample(double dt)
{
	unsigned long i = atomic_fetch_add(&n_samples, 1);
	if (i < MAX_SAMPLES)
		samples[i] = dt;
}

/* LMTP */

static bool lmtp_reply(struct conn *c, char first)
{
	char line[1024];
	do {
		if (!read_line(c, line, sizeof(line)))
			return false;
	} while (strlen(line) > 3 && line[3] == '-');
	return line[0] == first;
}

static void *lmtp_worker(void *arg)
{
	struct conn c = { .fd = -1 };
	unsigned long total = o.per_user ? o.per_user * o.count : 0;
	while (now() < t_end || o.per_user) {
		if (c.fd < 0) {
			if (!conn_open(&c) || !lmtp_reply(&c, '2') ||
			    !sendf(&c, "LHLO load.test\r\n") || !lmtp_reply(&c, '2')) {
				atomic_fetch_add(&n_err, 1);
				conn_close(&c);
				usleep(100000);
				continue;
			}
		}
		unsigned long job = atomic_fetch_add(&next_job, 1);
		if (o.per_user && job >= total)
			break;
		unsigned long user = o.first + job % o.count;
		double t0 = now();
		char who[256];
		bool ok = sendf(&c, "MAIL FROM:<load@remote.test>\r\nRCPT TO:<%s>\r\nDATA\r\n",
				name(o.user_fmt, user, who, sizeof(who))) &&
			lmtp_reply(&c, '2') && lmtp_reply(&c, '2') && lmtp_reply(&c, '3') &&
			sendf(&c, "Subject: load %lu\r\nMessage-ID: <%lu.%lu@load.test>\r\n",
			      job, job, (unsigned long)t0) &&
			send_all(&c, body, body_len) && lmtp_reply(&c, '2');
		if (ok) {
			atomic_fetch_add(&n_ok, 1);
			sample(now() - t0);
		} else {
			atomic_fetch_add(&n_err, 1);
			conn_close(&c);
		}
	}
	if (c.fd >= 0) {
		sendf(&c, "QUIT\r\n");
		conn_close(&c);
	}
	return NULL;
}

/* POP3 */

static bool pop_ok(struct conn *c, char *line, size_t size)
{
	return read_line(c, line, size) && strncmp(line, "+OK", 3) == 0;
}

/* Where a POP3 session's time goes (seconds, summed over sessions). */
enum { PH_CONNECT, PH_LOGIN, PH_STAT, PH_RETR, PH_DELE, PH_QUIT, PH_COUNT };
static const char *const phase_names[PH_COUNT] = {
	"connect", "login", "stat", "retr", "dele", "quit" };
static double phase_sum[PH_COUNT];
static pthread_mutex_t phase_lock = PTHREAD_MUTEX_INITIALIZER;

static bool pop_session(unsigned long user, uint64_t *msgs_r, uint64_t *bytes_r)
{
	struct conn c = { .fd = -1 };
	char line[1024], who[256];
	double t[PH_COUNT + 1];
	t[0] = now();
	bool ok = conn_open(&c) && pop_ok(&c, line, sizeof(line));
	t[PH_LOGIN] = now();
	ok = ok && sendf(&c, "USER %s\r\n", name(o.user_fmt, user, who, sizeof(who))) &&
		pop_ok(&c, line, sizeof(line)) &&
		sendf(&c, "PASS %s\r\n", name(o.pw_fmt, user, who, sizeof(who))) &&
		pop_ok(&c, line, sizeof(line));
	t[PH_STAT] = now();
	ok = ok && sendf(&c, "STAT\r\n") && pop_ok(&c, line, sizeof(line));
	unsigned long count = 0;
	if (ok)
		count = strtoul(line + 4, NULL, 10);
	t[PH_RETR] = now();
	for (unsigned long i = 1; ok && i <= count; i++) {
		uint64_t bytes = 0;
		ok = sendf(&c, "RETR %lu\r\n", i) && pop_ok(&c, line, sizeof(line)) &&
			read_multiline(&c, &bytes);
		*bytes_r += bytes;
	}
	t[PH_DELE] = now();
	for (unsigned long i = 1; ok && i <= count; i++)
		ok = sendf(&c, "DELE %lu\r\n", i) && pop_ok(&c, line, sizeof(line));
	t[PH_QUIT] = now();
	ok = ok && sendf(&c, "QUIT\r\n") && pop_ok(&c, line, sizeof(line));
	t[PH_COUNT] = now();
	conn_close(&c);
	*msgs_r = count;
	if (ok) {
		pthread_mutex_lock(&phase_lock);
		for (int k = 0; k < PH_COUNT; k++)
			phase_sum[k] += t[k + 1] - t[k];
		pthread_mutex_unlock(&phase_lock);
	}
	return ok;
}

/* IMAP */

/* Bytes into nowhere (a literal's contents). */
static bool skip_bytes(struct conn *c, uint64_t n)
{
	while (n > 0) {
		if (c->start == c->end && !conn_fill(c))
			return false;
		size_t k = c->end - c->start < n ? c->end - c->start : (size_t)n;
		c->start += k;
		n -= k;
	}
	return true;
}

/* One response line's first octets (into line) and whether it ends with a
 * literal "{n}" (its size in *literal_r, else UINT64_MAX). */
static bool imap_line(struct conn *c, char *line, size_t size, uint64_t *literal_r)
{
	size_t n = 0;
	char tail[32];
	size_t tail_len = 0;
	for (;;) {
		while (c->start < c->end) {
			char ch = c->buf[c->start++];
			if (ch == '\n') {
				line[n < size ? n : size - 1] = '\0';
				*literal_r = UINT64_MAX;
				if (tail_len >= 4 && tail[tail_len - 1] == '\r' && tail[tail_len - 2] == '}') {
					size_t open = tail_len - 2;
					while (open > 0 && tail[open - 1] >= '0' && tail[open - 1] <= '9')
						open--;
					if (open > 0 && tail[open - 1] == '{')
						*literal_r = strtoull(tail + open, NULL, 10);
				}
				return true;
			}
			if (n < size - 1)
				line[n++] = ch;
			if (tail_len == sizeof(tail)) {
				memmove(tail, tail + 1, sizeof(tail) - 1);
				tail_len--;
			}
			tail[tail_len++] = ch;
		}
		if (!conn_fill(c))
			return false;
	}
}

/* Send "tag command", read to the tagged reply: true for OK (or for NO
 * when no_ok); *exists_r from an untagged EXISTS; literal octets counted. */
static atomic_ulong imap_tag;		/* the clients' threads share it */
static bool imap_cmd(struct conn *c, bool no_ok, unsigned long *exists_r, uint64_t *bytes_r,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static bool imap_cmd(struct conn *c, bool no_ok, unsigned long *exists_r, uint64_t *bytes_r,
		     const char *fmt, ...)
{
	char cmd[1024], tag[32], line[1024];
	snprintf(tag, sizeof(tag), "t%lu", atomic_fetch_add(&imap_tag, 1) + 1);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (!sendf(c, "%s %s\r\n", tag, cmd))
		return false;
	size_t tag_len = strlen(tag);
	for (;;) {
		uint64_t literal;
		if (!imap_line(c, line, sizeof(line), &literal))
			return false;
		while (literal != UINT64_MAX) {		/* the line goes on after it */
			if (!skip_bytes(c, literal))
				return false;
			if (bytes_r != NULL)
				*bytes_r += literal;
			if (!imap_line(c, line, sizeof(line), &literal))
				return false;
		}
		if (line[0] == '*') {
			char *end;
			unsigned long n = strtoul(line + 2, &end, 10);
			if (exists_r != NULL && end != line + 2 && strncmp(end, " EXISTS", 7) == 0)
				*exists_r = n;
			continue;
		}
		if (strncmp(line, tag, tag_len) == 0 && line[tag_len] == ' ')
			return strncmp(line + tag_len + 1, "OK", 2) == 0 ||
				(no_ok && strncmp(line + tag_len + 1, "NO", 2) == 0);
	}
}

static bool imap_open(struct conn *c, unsigned long user)
{
	char line[1024], who[256], pw[256];
	uint64_t literal;
	return conn_open(c) && imap_line(c, line, sizeof(line), &literal) &&
		strncmp(line, "* OK", 4) == 0 &&
		imap_cmd(c, false, NULL, NULL, "LOGIN \"%s\" \"%s\"",
			 name(o.user_fmt, user, who, sizeof(who)),
			 name(o.pw_fmt, user, pw, sizeof(pw)));
}

enum { IM_CONNECT, IM_SELECT, IM_HEADERS, IM_BODIES, IM_SEEN, IM_MOVE, IM_EXPUNGE,
       IM_LOGOUT, IM_COUNT };
static const char *const imap_phase_names[IM_COUNT] = {
	"login", "select", "headers", "bodies", "seen", "move", "expunge", "logout" };
static double imap_phase_sum[IM_COUNT];

static bool imap_session(unsigned long user, uint64_t *msgs_r, uint64_t *bytes_r)
{
	struct conn c = { .fd = -1 };
	double t[IM_COUNT + 1];
	unsigned long exists = 0;
	t[0] = now();
	bool ok = imap_open(&c, user);
	t[IM_SELECT] = now();
	ok = ok && imap_cmd(&c, false, &exists, NULL, "SELECT INBOX");
	t[IM_HEADERS] = now();
	ok = ok && (exists == 0 || imap_cmd(&c, false, NULL, NULL, "FETCH 1:* (FLAGS ENVELOPE)"));
	t[IM_BODIES] = now();
	ok = ok && (exists < 2 || imap_cmd(&c, false, NULL, bytes_r, "FETCH 1:2 BODY.PEEK[]"));
	t[IM_SEEN] = now();
	ok = ok && (exists < 2 || imap_cmd(&c, false, NULL, NULL, "STORE 1:2 +FLAGS.SILENT (\\Seen)"));
	t[IM_MOVE] = now();
	ok = ok && (exists < 2 || imap_cmd(&c, false, NULL, NULL, "MOVE 1 Archive"));
	t[IM_EXPUNGE] = now();
	ok = ok && (exists < 2 ||
		    (imap_cmd(&c, false, NULL, NULL, "STORE 1 +FLAGS.SILENT (\\Deleted)") &&
		     imap_cmd(&c, false, NULL, NULL, "EXPUNGE")));
	t[IM_LOGOUT] = now();
	ok = ok && imap_cmd(&c, false, NULL, NULL, "LOGOUT");
	t[IM_COUNT] = now();
	conn_close(&c);
	*msgs_r = exists;
	if (ok && exists >= 2) {
		pthread_mutex_lock(&phase_lock);
		for (int k = 0; k < IM_COUNT; k++)
			imap_phase_sum[k] += t[k + 1] - t[k];
		pthread_mutex_unlock(&phase_lock);
	}
	return ok && exists >= 2;
}

static bool imap_prep(unsigned long user, uint64_t *msgs_r, uint64_t *bytes_r)
{
	(void)msgs_r;
	(void)bytes_r;
	struct conn c = { .fd = -1 };
	bool ok = imap_open(&c, user) &&
		imap_cmd(&c, true, NULL, NULL, "CREATE Archive") &&
		imap_cmd(&c, false, NULL, NULL, "LOGOUT");
	conn_close(&c);
	return ok;
}

static void *session_worker(void *arg)
{
	bool (*session)(unsigned long, uint64_t *, uint64_t *) =
		o.mode == MODE_POP ? pop_session : o.mode == MODE_IMAP ? imap_session : imap_prep;
	(void)arg;
	while (now() < t_end) {
		unsigned long job = atomic_fetch_add(&next_job, 1);
		if (job >= o.count)
			break;
		uint64_t msgs = 0, bytes = 0;
		double t0 = now();
		if (session(o.first + job, &msgs, &bytes)) {
			atomic_fetch_add(&n_ok, 1);
			atomic_fetch_add(&n_msgs, msgs);
			atomic_fetch_add(&n_bytes, bytes);
			sample(now() - t0);
		} else
			atomic_fetch_add(&n_err, 1);
	}
	return NULL;
}

/* --conc sessions idle at once: the caller measures the server meanwhile. */
static void imap_idle(void)
{
	struct conn *conns = calloc(o.conc, sizeof(*conns));
	unsigned int open = 0;
	for (unsigned int i = 0; i < o.conc && now() < t_end; i++) {
		struct conn *c = &conns[open];
		c->fd = -1;
		char line[1024];
		uint64_t literal;
		if (imap_open(c, o.first + i % o.count) &&
		    imap_cmd(c, false, NULL, NULL, "SELECT INBOX") &&
		    sendf(c, "idle%u IDLE\r\n", i) && imap_line(c, line, sizeof(line), &literal) &&
		    line[0] == '+') {
			open++;
			atomic_fetch_add(&n_ok, 1);
		} else {
			conn_close(c);
			atomic_fetch_add(&n_err, 1);
		}
	}
	printf("idle=%u\n", open);
	fflush(stdout);
	struct timespec hold = { (time_t)o.duration, 0 };
	nanosleep(&hold, NULL);
	for (unsigned int i = 0; i < open; i++) {
		if (sendf(&conns[i], "DONE\r\n"))
			(void)imap_cmd(&conns[i], false, NULL, NULL, "LOGOUT");
		conn_close(&conns[i]);
	}
	free(conns);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void make_body(void)
{
	/* The header/body separator, then text lines of 76 octets plus CRLF
	 * (none starts with a dot), then the end of data. */
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t lines = o.size / 78 + 1;
	body = malloc(lines * 78 + 16);
	size_t n = 0;
	body[n++] = '\r';
	body[n++] = '\n';
	for (size_t l = 0; l < lines; l++) {
		for (size_t k = 0; k < 76; k++)
			body[n++] = chars[(l * 7 + k * 13) % (sizeof(chars) - 1)];
		body[n++] = '\r';
		body[n++] = '\n';
	}
	memcpy(body + n, ".\r\n", 3);
	body_len = n + 3;
}

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: popstore-load lmtp|pop|imap|imap-prep|imap-idle --port P [--host H] [--conc C] "
		"[--duration S] [--size B] [--first K] [--count N] [--per-user M] "
		"[--user-format FMT] [--password-format FMT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "host", required_argument, NULL, 'H' },
		{ "port", required_argument, NULL, 'p' },
		{ "conc", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "first", required_argument, NULL, 'f' },
		{ "count", required_argument, NULL, 'n' },
		{ "user-format", required_argument, NULL, 'U' },
		{ "password-format", required_argument, NULL, 'W' },
		{ "per-user", required_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 },
	};
	if (argc < 2)
		usage();
	bool known = false;
	for (int m = 0; m < (int)(sizeof(mode_names) / sizeof(mode_names[0])); m++)
		if (strcmp(argv[1], mode_names[m]) == 0) {
			o.mode = (enum mode)m;
			known = true;
		}
	if (!known)
		usage();
	optind = 2;
	int opt;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'H': o.host = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'c': o.conc = (unsigned int)atoi(optarg); break;
		case 'd': o.duration = atof(optarg); break;
		case 's': o.size = (size_t)atol(optarg); break;
		case 'f': o.first = strtoul(optarg, NULL, 10); break;
		case 'n': o.count = strtoul(optarg, NULL, 10); break;
		case 'U': o.user_fmt = optarg; break;
		case 'W': o.pw_fmt = optarg; break;
		case 'u': o.per_user = (unsigned int)atoi(optarg); break;
		default: usage();
		}
	}
	if (o.port <= 0 || o.conc == 0 || o.count == 0)
		usage();
	make_body();
	struct rlimit nofile = { o.conc + 256, o.conc + 256 };
	if (o.conc + 256 > 1024)
		(void)setrlimit(RLIMIT_NOFILE, &nofile);
	samples = calloc(MAX_SAMPLES, sizeof(double));
	double t0 = now();
	t_end = t0 + o.duration;
	if (o.mode == MODE_IMAP_IDLE) {
		t_end = t0 + 3600;	/* the set-up's bound; then --duration idle */
		imap_idle();
		printf("mode=imap-idle conc=%u ok=%lu errors=%lu\n", o.conc, atomic_load(&n_ok),
		       atomic_load(&n_err));
		free(samples);
		free(body);
		return atomic_load(&n_ok) > 0 ? 0 : 1;
	}
	pthread_t *threads = calloc(o.conc, sizeof(*threads));
	for (unsigned int i = 0; i < o.conc; i++)
		pthread_create(&threads[i], NULL, o.mode == MODE_LMTP ? lmtp_worker : session_worker,
			       NULL);
	for (unsigned int i = 0; i < o.conc; i++)
		pthread_join(threads[i], NULL);
	double elapsed = now() - t0;
	unsigned long ns = atomic_load(&n_samples);
	if (ns > MAX_SAMPLES)
		ns = MAX_SAMPLES;
	qsort(samples, ns, sizeof(double), cmp_double);
	double p50 = ns ? samples[ns / 2] * 1000 : 0, p95 = ns ? samples[ns * 95 / 100] * 1000 : 0;
	printf("mode=%s conc=%u elapsed_s=%.2f ok=%lu errors=%lu per_s=%.1f p50_ms=%.2f p95_ms=%.2f",
	       mode_names[o.mode], o.conc, elapsed, atomic_load(&n_ok),
	       atomic_load(&n_err), (double)atomic_load(&n_ok) / elapsed, p50, p95);
	if (o.mode == MODE_IMAP) {
		unsigned long sessions = atomic_load(&n_ok);
		printf(" bytes=%lu", atomic_load(&n_bytes));
		for (int k = 0; k < IM_COUNT; k++)
			printf(" %s_ms=%.2f", imap_phase_names[k],
			       sessions ? imap_phase_sum[k] * 1000 / (double)sessions : 0);
	} else if (o.mode == MODE_POP) {
		unsigned long sessions = atomic_load(&n_ok);
		printf(" msgs=%lu msgs_per_session=%.2f bytes=%lu", atomic_load(&n_msgs),
		       sessions ? (double)atomic_load(&n_msgs) / (double)sessions : 0,
		       atomic_load(&n_bytes));
		for (int k = 0; k < PH_COUNT; k++)
			printf(" %s_ms=%.2f", phase_names[k],
			       sessions ? phase_sum[k] * 1000 / (double)sessions : 0);
	}
	else
		printf(" message_bytes=%zu", body_len + 60);
	printf("\n");
	free(samples);
	free(threads);
	free(body);
	return atomic_load(&n_ok) > 0 ? 0 : 1;
}
