/* test-peer.h — the client side of a session under test on a socketpair
 * (unit tests and session-level fuzz targets): read what the session has
 * sent so far. Header-only. Trust boundary: none (our own socket). */
#ifndef TEST_PEER_H
#define TEST_PEER_H

#include <stdbool.h>
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

#endif
