/* fuzz-daemon.h — shared by the session-level fuzz targets that run a
 * daemon's real session code (fuzz-mta-session, fuzz-popstore-session):
 * the fixture's temporary directory (removed at exit), its mailtier.conf
 * loaded through the settings registry, one turn of the event loop, the
 * client's side of one session (feed, wait for the daemon's threads,
 * close, wait until no session is left) and the check of the lines a
 * session sends (fuzz-mmp-session uses that too). Header-only, as fuzz.h.
 *
 * Trust boundary: none of its own; the input is the fuzzer's, handed to
 * the session under test. */
#ifndef MT_FUZZ_DAEMON_H
#define MT_FUZZ_DAEMON_H

#include "fuzz.h"
#include "buf.h"
#include "config.h"
#include "log.h"
#include "loop.h"
#include "mailtier-settings.h"
#include "tests/unit/test-peer.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <event2/event.h>

/* Replies and lines a session sends are at most this long (RFC 5321
 * 4.5.3.1.5: 512 octets with CRLF). */
#define FUZZ_REPLY_MAX 512

static char fuzz_daemon_dir_path[64];

static void fuzz_daemon_dir_remove(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz_daemon_dir_path);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", fuzz_daemon_dir_path);
}

/* A new directory /tmp/PREFIX.XXXXXX, removed at exit after everything
 * registered with atexit() later (the fixture's own closing) has run.
 * Also what every daemon does first: SIGPIPE ignored, errors only. */
static inline const char *fuzz_daemon_dir(const char *prefix)
{
	mt_log_set_min_level(MT_LOG_ERROR);
	signal(SIGPIPE, SIG_IGN);	/* as the daemons (mt_loop_handle_signals) */
	snprintf(fuzz_daemon_dir_path, sizeof(fuzz_daemon_dir_path), "/tmp/%s.XXXXXX",
		 prefix);
	FUZZ_CHECK(mkdtemp(fuzz_daemon_dir_path) != NULL, "mkdtemp: %s", strerror(errno));
	atexit(fuzz_daemon_dir_remove);
	return fuzz_daemon_dir_path;
}

/* dir/mailtier.conf with text, loaded as a daemon loads it. */
static inline struct mt_config *fuzz_daemon_config(const char *dir, const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/mailtier.conf", dir);
	FILE *fp = fopen(path, "w");
	FUZZ_CHECK(fp != NULL && fputs(text, fp) >= 0 && fclose(fp) == 0, "config");
	char *errors = NULL;
	struct mt_config *config = mt_mailtier_config_load(path, &errors);
	FUZZ_CHECK(config != NULL, "config: %s", errors);
	return config;
}

/* Run what is ready on loop (a few rounds: callbacks post more). */
static inline void fuzz_daemon_spin(struct mt_loop *loop)
{
	for (int i = 0; i < 8; i++)
		event_base_loop(mt_loop_base(loop), EVLOOP_NONBLOCK);
}

struct fuzz_daemon_session {
	struct mt_loop *loop;
	/* The daemon's count of the sessions that are still there. */
	unsigned int (*sessions)(void *context);
	void *context;
};

/* 20,000 rounds of 0.5 ms and a loop turn: over 10 s. */
#define FUZZ_DAEMON_BUSY_ROUNDS 20000

static inline void fuzz_daemon_spin_cb(void *context)
{
	fuzz_daemon_spin(((struct fuzz_daemon_session *)context)->loop);
}

/* The client of one session on fd (the peer end of test_peer_pair): send
 * data (whole, or a byte per write), wait a little for what the daemon's
 * threads answer (the directory, the store, the queue), collect all of it
 * in got, close, and wait until the daemon has no session left. busy
 * (NULL: none) is true while a session still works on what it read (a
 * request to the store or the directory in flight, whose answer goes on
 * with the pipelined input): such rounds do not count among the 20 quiet
 * ones the client waits, up to FUZZ_DAEMON_BUSY_ROUNDS of them. */
static inline void fuzz_daemon_client_busy(struct fuzz_daemon_session *fs,
					   bool (*busy)(void *context), int fd,
					   const uint8_t *data, size_t size, bool bytewise,
					   struct mt_buf *got)
{
	fuzz_daemon_spin(fs->loop);
	bool eof = test_peer_feed(fd, data, size, bytewise, fuzz_daemon_spin_cb, fs, got);
	unsigned int busy_rounds = 0;
	for (int quiet = 0; quiet < 20 && !eof;) {
		usleep(500);
		fuzz_daemon_spin(fs->loop);
		eof = test_peer_read(fd, got);
		if (busy != NULL && busy_rounds < FUZZ_DAEMON_BUSY_ROUNDS &&
		    busy(fs->context)) {
			busy_rounds++;
			quiet = 0;
		} else
			quiet++;
	}
	close(fd);
	for (int i = 0; i < 100 && fs->sessions(fs->context) > 0; i++) {
		fuzz_daemon_spin(fs->loop);
		if (fs->sessions(fs->context) > 0)
			usleep(1000);
	}
	FUZZ_CHECK(fs->sessions(fs->context) == 0, "%u sessions left",
		   fs->sessions(fs->context));
}

static inline void fuzz_daemon_client(struct fuzz_daemon_session *fs, int fd,
				      const uint8_t *data, size_t size, bool bytewise,
				      struct mt_buf *got)
{
	fuzz_daemon_client_busy(fs, NULL, fd, data, size, bytewise, got);
}

/* "DDD " or "DDD-" with a code from 2xx to 5xx (RFC 5321 4.2). */
static inline bool fuzz_smtp_reply_line(const char *p, size_t len)
{
	return len >= 4 && p[0] >= '2' && p[0] <= '5' && p[1] >= '0' && p[1] <= '9' &&
		p[2] >= '0' && p[2] <= '9' && (p[3] == ' ' || p[3] == '-');
}

/* got starts with greeting and holds CRLF lines only, none over
 * FUZZ_REPLY_MAX octets, each an SMTP/LMTP reply when smtp; a last line
 * without its LF may still have been on its way. */
static inline void fuzz_check_lines(const struct mt_buf *got, const char *greeting,
				    bool smtp)
{
	const char *p = got->data, *end = got->data + got->len;
	size_t glen = strlen(greeting);
	FUZZ_CHECK(got->len >= glen && memcmp(p, greeting, glen) == 0, "no greeting");
	while (p < end) {
		const char *lf = memchr(p, '\n', (size_t)(end - p));
		if (lf == NULL)
			break;
		size_t len = (size_t)(lf - p) + 1;
		FUZZ_CHECK(lf > p && lf[-1] == '\r', "bare LF in a reply");
		FUZZ_CHECK(len <= FUZZ_REPLY_MAX, "reply of %zu octets", len);
		if (smtp)
			FUZZ_CHECK(fuzz_smtp_reply_line(p, len - 2), "not a reply: %.*s",
				   (int)(len - 2), p);
		p = lf + 1;
	}
}

#endif
