/* watch.c — the selected-mailbox registry of watch.h: a hash of user
 * names to the watchers of that user's mailboxes, chained and unlinked in
 * O(1). Trust boundary: as watch.h. */
#include "watch.h"
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

static unsigned int user_bucket(const char *user)
{
	uint32_t h = 2166136261u;	/* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)user; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	return h % POPSTORE_WATCH_BUCKETS;
}

void popstore_watch_add(struct popstore *ps, struct popstore_watch *w,
			const char *user, const char *folder)
{
	popstore_watch_remove(w);
	if (ps->watches == NULL)
		ps->watches = mt_xcalloc(POPSTORE_WATCH_BUCKETS, sizeof(*ps->watches));
	w->user = mt_xstrdup(user);
	w->folder = mt_xstrdup(folder);
	struct popstore_watch **head = &ps->watches[user_bucket(user)];
	w->next = *head;
	if (*head != NULL)
		(*head)->prev = &w->next;
	w->prev = head;
	*head = w;
}

void popstore_watch_remove(struct popstore_watch *w)
{
	if (w->prev == NULL)
		return;
	*w->prev = w->next;
	if (w->next != NULL)
		w->next->prev = w->prev;
	w->next = NULL;
	w->prev = NULL;
	MT_FREE(&w->user);
	MT_FREE(&w->folder);
}

void popstore_watch_changed(struct popstore *ps, const char *user,
			    const char *folder, const struct popstore_watch *except)
{
	if (ps->watches == NULL)
		return;
	if (folder == NULL)
		folder = "INBOX";
	/* A watcher's callback only marks its session (and may start a read
	 * of the store, which completes later), so the chain is not changed
	 * under this walk. */
	for (struct popstore_watch *w = ps->watches[user_bucket(user)], *next; w != NULL;
	     w = next) {
		next = w->next;
		if (w != except && strcmp(w->user, user) == 0 &&
		    strcmp(w->folder, folder) == 0)
			w->changed(w);
	}
}
