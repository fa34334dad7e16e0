/* loglimit.c — at most one line per interval per client address (see
 * loglimit.h). */
#include "loglimit.h"

#include <stdio.h>
#include <string.h>

void mt_loglimit_init(struct mt_loglimit *limit, uint64_t interval_ms)
{
	memset(limit, 0, sizeof(*limit));
	limit->interval_ms = interval_ms;
}

/* key's slot, or the least recently written one (taken for key). */
static struct mt_loglimit_slot *slot_for(struct mt_loglimit *limit, const char *key,
					 bool *fresh_r)
{
	struct mt_loglimit_slot *oldest = &limit->slots[0];
	for (size_t i = 0; i < MT_LOGLIMIT_SLOTS; i++) {
		struct mt_loglimit_slot *slot = &limit->slots[i];
		if (slot->key[0] != '\0' && strcmp(slot->key, key) == 0) {
			*fresh_r = false;
			return slot;
		}
		if (slot->key[0] == '\0' || slot->last_ms < oldest->last_ms)
			oldest = slot;
		if (slot->key[0] == '\0')
			break;
	}
	snprintf(oldest->key, sizeof(oldest->key), "%s", key);
	oldest->suppressed = 0;
	*fresh_r = true;
	return oldest;
}

bool mt_loglimit_allow(struct mt_loglimit *limit, const char *key, uint64_t now_ms,
		       uint64_t *suppressed_r)
{
	bool fresh;
	struct mt_loglimit_slot *slot = slot_for(limit, key[0] != '\0' ? key : "-", &fresh);
	if (!fresh && now_ms - slot->last_ms < limit->interval_ms) {
		slot->suppressed++;
		return false;
	}
	*suppressed_r = slot->suppressed;
	slot->suppressed = 0;
	slot->last_ms = now_ms;
	return true;
}
