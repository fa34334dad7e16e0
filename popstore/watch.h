/* watch.h — which IMAP sessions have which mailbox selected, so that a
 * change made anywhere in the daemon (an LMTP delivery, a POP3 QUIT's
 * expunge, another IMAP session's APPEND, COPY, MOVE, STORE or EXPUNGE)
 * reaches each of them: RFC 9051 7's untagged EXISTS, EXPUNGE and FETCH
 * FLAGS, and IDLE's push (RFC 9051 6.3.13). A watcher is told only that
 * its mailbox changed; it reads the store again to see how.
 *
 * Trust boundary: none (names come from the directory and from the IMAP
 * layer's name check). Everything runs on the daemon's one loop thread.
 * Cost: a change looks up one hash bucket by user name, whatever the
 * number of sessions. */
#ifndef MT_POPSTORE_WATCH_H
#define MT_POPSTORE_WATCH_H

#include "popstore.h"

struct popstore_watch {
	struct popstore_watch *next, **prev;
	char *user;
	char *folder;			/* "INBOX" or the folder's name */
	void (*changed)(struct popstore_watch *watch);
};

#define POPSTORE_WATCH_BUCKETS 4096

/* Watch user's folder; w stays the caller's (its fields set here). */
void popstore_watch_add(struct popstore *ps, struct popstore_watch *w,
			const char *user, const char *folder);
/* Stop watching (no-op if w does not watch). */
void popstore_watch_remove(struct popstore_watch *w);
/* user's folder ("INBOX" for NULL) changed: every watcher of it but
 * except (the session that made the change, or NULL) is told. */
void popstore_watch_changed(struct popstore *ps, const char *user,
			    const char *folder, const struct popstore_watch *except);

#endif
