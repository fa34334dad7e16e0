/* loglimit.h — a log line that a client can make the daemon write as
 * often as it likes (a refused credential, a guess) is written at most
 * once per interval per client address; the lines held back are counted
 * and said on the next one ("suppressed=N"), so the log keeps the news
 * and loses only the repetition.
 *
 * A small table of the most recent addresses (MT_LOGLIMIT_SLOTS; the
 * oldest is forgotten first): an attacker with more addresses than slots
 * gets each of its lines through at most once per interval per slot it
 * holds, never more lines than before. Not thread-safe: one per loop.
 * Trust boundary: the key is a peer address's text (lib/authfail.h
 * mt_authfail_key); times are the caller's monotonic milliseconds. No
 * RFC. */
#ifndef MT_LOGLIMIT_H
#define MT_LOGLIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "authfail.h"

#define MT_LOGLIMIT_SLOTS 32

struct mt_loglimit {
	uint64_t interval_ms;
	struct mt_loglimit_slot {
		char key[MT_AUTHFAIL_KEY_MAX];
		uint64_t last_ms;	/* the last line written for key */
		uint64_t suppressed;	/* lines held back since */
	} slots[MT_LOGLIMIT_SLOTS];
};

void mt_loglimit_init(struct mt_loglimit *limit, uint64_t interval_ms);
/* May a line for key be written at now_ms? true: write it, with
 * *suppressed_r lines held back since the last one; false: hold it back
 * (counted). */
bool mt_loglimit_allow(struct mt_loglimit *limit, const char *key, uint64_t now_ms,
		       uint64_t *suppressed_r);

#endif
