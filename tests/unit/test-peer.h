/* test-peer.h — the client side of a session under test on a socketpair
 * (unit tests and session-level fuzz targets): read what the session has
 * sent so far, feed it input. Header-only. Trust boundary: none (our own socket). */
#ifndef TEST_PEER_H
#define TEST_PEER_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"

/* Append what fd (non-blocking) can read now to got; true at EOF. */
static inline bool test_peer_read(int fd, struct mt_buf *got)
{
	char buf[4096];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			mt_buf_append(got, buf, (size_t)n);
			continue;
		}
		return n == 0;
	}
}

/* A non-blocking socketpair: sv[0] for the session, sv[1] the peer's.
 * false if it cannot be made. */
static inline bool test_peer_pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return false;
	(void)fcntl(sv[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(sv[1], F_SETFL, O_NONBLOCK);
	return true;
}

/* Send data to the session (whole, or a byte per write), letting its loop
 * run (spin) after each write, and collect what it answers in got. A
 * failed write (the session stopped reading or left) is not an error.
 * true once the session has closed. */
static inline bool test_peer_feed(int fd, const uint8_t *data, size_t size,
				  bool bytewise, void (*spin)(void *context),
				  void *context, struct mt_buf *got)
{
	bool eof = false;
	size_t step = bytewise ? 1 : (size > 0 ? size : 1);
	for (size_t i = 0; i < size && !eof; i += step) {
		size_t n = size - i < step ? size - i : step;
		ssize_t w = write(fd, data + i, n);
		(void)w;
		spin(context);
		eof = test_peer_read(fd, got);
	}
	return eof;
}

#endif
