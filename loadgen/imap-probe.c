/* imap-probe.c — the delivery probe watcher's reading of what arrives in
 * the probe mailbox (WORKLOAD.md: "delivery (LMTP 250 to EXISTS seen by an
 * IDLE-ing client) within 60 s"): each EXISTS that raises the count is
 * noted with the time it was seen; a round fetches the id header of every
 * message above the highest UID handled (the literal read through the
 * response reader's tap, at most LG_IMAP_PROBE_HEADER_MAX octets kept);
 * each id goes to the tracker, timed at the first EXISTS whose count
 * covers the message's sequence number (the time runs from the SMTP 250
 * the generator read, so it is an upper bound of "LMTP 250 to EXISTS");
 * the messages that carry an id of this run (probes, and this run's other
 * mail to the probe user) go on the list to \Deleted and expunge, so the
 * mailbox does not grow. Which command follows is imap-script.c's.
 * Trust boundary: the server's responses (untrusted): sequence numbers and
 * UIDs only index our own bounded tables, the header is bounded and its id
 * parsed strictly by the tracker (a foreign or malformed id is counted,
 * and that message left alone).
 * RFC 9051 6.4.5 (FETCH BODY.PEEK[HEADER.FIELDS]), 7.3.1 (EXISTS), 7.4.1
 * (EXPUNGE: the sequence numbers above move down). */
#include "imap-private.h"

#include <string.h>

static void probe_tap(void *context, const void *data, size_t len)
{
	struct lg_imap_session *s = context;
	size_t room = LG_IMAP_PROBE_HEADER_MAX - s->probe_header.len;

	mt_buf_append(&s->probe_header, data, len < room ? len : room);
}

void lg_imap_probe_attach(struct lg_imap_session *s)
{
	if (s->profile != LG_IMAP_PROFILE_PROBE)
		return;
	s->reader.tap = probe_tap;
	s->reader.tap_context = s;
}

void lg_imap_probe_response_done(struct lg_imap_session *s)
{
	if (s->probe_header.len > 0)
		mt_buf_reset(&s->probe_header);
}

void lg_imap_probe_exists(struct lg_imap_session *s, uint32_t old, uint32_t n)
{
	unsigned int last = LG_IMAP_EXISTS_TIMES - 1;

	if (s->profile != LG_IMAP_PROFILE_PROBE || n <= old)
		return;
	s->exists_since_fetch = true;
	/* Full: the last entry moves to this later EXISTS, so its messages
	 * are timed later, never earlier, than they were announced. */
	if (s->n_exists_at < LG_IMAP_EXISTS_TIMES)
		last = s->n_exists_at++;
	s->exists_at[last].count = n;
	s->exists_at[last].us = lg_now_us();
}

void lg_imap_probe_expunge(struct lg_imap_session *s, uint32_t seq)
{
	for (unsigned int i = 0; i < s->n_exists_at; i++)
		if (s->exists_at[i].count >= seq && s->exists_at[i].count > 0)
			s->exists_at[i].count--;
}

/* When message seq was announced: the first EXISTS that covered it (now,
 * when none is known: an upper bound still). */
static uint64_t announced_us(const struct lg_imap_session *s, uint32_t seq)
{
	for (unsigned int i = 0; i < s->n_exists_at; i++)
		if (s->exists_at[i].count >= seq)
			return s->exists_at[i].us;
	return lg_now_us();
}

/* The id header in the kept header octets, or NULL. */
static const char *header_id(const struct lg_imap_session *s, size_t *len_r)
{
	const char *p = s->probe_header.data, *end = p + s->probe_header.len;

	while (p != NULL && p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((eol != NULL ? eol : end) - p);
		if (len > 0 && p[len - 1] == '\r')
			len--;
		const char *value = lg_id_header_value(p, len, len_r);
		if (value != NULL)
			return value;
		p = eol != NULL ? eol + 1 : NULL;
	}
	return NULL;
}

void lg_imap_probe_round_begin(struct lg_imap_session *s)
{
	s->exists_since_fetch = false;
	s->probe_more = false;
	s->probe_max_seq = 0;
	s->n_uids = 0;
	s->fetch_max_uid = s->known_max_uid;
}

/* "* seq FETCH (UID u BODY[HEADER.FIELDS (...)] {n})": a message above
 * those handled. In UID order; once the list is full the rest wait for
 * the next round (not reported now, so never twice). */
void lg_imap_probe_fetch(struct lg_imap_session *s, uint32_t seq, const char *rest)
{
	struct lg_tracker *tracker = s->base.env->tracker;
	uint64_t uid;
	size_t len;

	/* Without the header item it is another session's flag change. */
	if (!lg_imap_find_number(rest, "UID", &uid) || uid <= s->known_max_uid ||
	    s->probe_more || strcasestr(rest, "BODY[") == NULL)
		return;
	if (s->n_uids == LG_IMAP_MAX_NEW) {
		s->probe_more = true;
		return;
	}
	if (uid > s->fetch_max_uid)
		s->fetch_max_uid = uid;
	if (seq > s->probe_max_seq)
		s->probe_max_seq = seq;
	const char *id = header_id(s, &len);
	if (id != NULL && tracker != NULL &&
	    lg_tracker_seen(tracker, id, len, 1, announced_us(s, seq)) != LG_SEEN_FOREIGN)
		s->uids[s->n_uids++] = uid;
}

/* The round's FETCH completed: what it handled is known, and the EXISTS
 * times of those messages are spent. */
void lg_imap_probe_round_end(struct lg_imap_session *s)
{
	unsigned int kept = 0;

	if (s->fetch_max_uid > s->known_max_uid)
		s->known_max_uid = s->fetch_max_uid;
	for (unsigned int i = 0; i < s->n_exists_at; i++)
		if (s->probe_max_seq > 0 && s->exists_at[i].count > s->probe_max_seq)
			s->exists_at[kept++] = s->exists_at[i];
	s->n_exists_at = kept;
}
