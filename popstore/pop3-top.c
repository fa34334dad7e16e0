/* pop3-top.c — where a TOP reply ends, found chunk by chunk (see
 * pop3-top.h).
 *
 * Trust boundary: stored message bytes of any shape; O(1) state, each
 * octet looked at once. RFC 1939 7 (TOP: "the headers of the message, the
 * blank line separating the headers from the body, and then the number of
 * lines of the indicated message's body"). */
#include "pop3-top.h"

void pop3_top_init(struct pop3_top_limit *t, uint64_t lines)
{
	t->lines_left = lines;
	t->in_body = false;
	t->line_empty = true;
	t->done = false;
}

size_t pop3_top_scan(struct pop3_top_limit *t, const void *data, size_t len)
{
	const unsigned char *p = data;
	if (t->done)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\n') {
			if (!t->in_body) {
				if (t->line_empty) {
					t->in_body = true;
					if (t->lines_left == 0) {
						t->done = true;
						return i + 1;
					}
				}
			} else if (--t->lines_left == 0) {
				t->done = true;
				return i + 1;
			}
			t->line_empty = true;
		} else if (p[i] != '\r')
			t->line_empty = false;
	}
	return len;
}
