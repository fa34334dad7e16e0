/* test-store-crash.c — the crash test's driver (test-store-crash.sh runs it
 * and kills it with SIGKILL at random moments).
 *
 *   test-store-crash run HOME ACKS ROUND   deliver and expunge until killed
 *   test-store-crash verify HOME ACKS      reopen (recovery) and check
 *   test-store-crash stat HOME             join the live store as mailtierctl
 *
 * run: 16 clients on one event loop (as LMTP sessions share the daemon's
 * loop) deliver messages of 1 KB to 300 KB into four shared mailboxes
 * through the async API, each carrying a unique token (round, client,
 * sequence) and bytes derived from it. Only after a delivery's completion
 * says MT_STORE_OK does the client append "D mailbox uid token size" to
 * ACKS, with one write(2), as an LMTP session would send its 250. Every
 * 20th operation a client opens its mailbox and expunges all but its newest
 * 30 messages: it appends "X mailbox uid" lines (the intent, like DELE)
 * before the request and "E mailbox uid" lines after its completion (like
 * the +OK to QUIT).
 *
 * Expunges are lazy (the bodies are purged later by the store's purger):
 * in even rounds the purger waits an hour, so the kill always finds
 * acknowledged expunges whose bodies are still queued; in odd rounds it
 * runs as in the daemon, so kills land in the middle of purges too.
 *
 * verify: opened with the purger held back, every acknowledged delivery is
 * in its mailbox exactly once, under its uid, byte for byte — unless an
 * expunge of it was acknowledged (then it must be gone, even with its body
 * still queued) or was in flight at the kill (then either is right); no
 * token appears twice; the mailbox records' totals match the messages.
 * Unacknowledged deliveries may or may not be there. Then the store is
 * reopened with its purger running, which must empty the purge queue by
 * itself; after that every body in body.db belongs to a listed message (no
 * orphan) and every listed message has its body. Messages of several
 * chunks are streamed bodies (store-body.c), so a kill also lands between
 * a body's chunk writes and its delivery: the reopen's sweep must queue
 * such half-written bodies (half_written=N) and the purger delete them.
 *
 * Trust boundary: test code; ACKS is ours. */
#include "store.h"
#include "store-private.h"	/* verify: body.db and purge.db themselves */
#include "buf.h"
#include "log.h"
#include "loop.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CLIENTS 16
#define MAILBOXES 4
#define KEEP_NEWEST 30
#define MAX_ACKS 1000000
/* A purger held back: it waits this long before its first round. */
#define PURGE_HELD_MSECS (3600u * 1000u)
#define PURGE_WAIT_SECS 60

static uint64_t rng_state;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

/* The message for a token: a header naming it, then bytes derived from it. */
static char *make_message(const char *token, size_t size)
{
	char *p = malloc(size + 1);
	if (p == NULL)
		abort();
	int n = snprintf(p, size + 1, "X-Token: %s\r\n\r\n", token);
	uint32_t x = 2166136261u;
	for (const char *t = token; *t != '\0'; t++)
		x = (x ^ (unsigned char)*t) * 16777619u;
	for (size_t i = (size_t)n; i < size; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (i % 80 == 78) ? '\r' : (i % 80 == 79) ? '\n' :
			(char)('!' + (x >> 16) % 90);
	}
	p[size] = '\0';
	return p;
}

static size_t pick_size(void)
{
	uint32_t r = rng();
	if (r % 50 == 0)
		return 200000 + r % 100000;	/* several chunks */
	return 1024 + r % 40000;
}

/* run */

struct client {
	struct driver *driver;
	unsigned int id, seq, ops;
	char mailbox[16];
	char token[64];
	size_t size;
	struct mt_store_mailbox *mbox;
	struct event *timer;
};

struct driver {
	struct mt_loop *loop;
	struct event_base *base;
	struct mt_store_port *port;
	int acks_fd;
	unsigned int round;
	struct client clients[CLIENTS];
};

static void client_next(struct client *c);

static void ack_write(struct driver *d, const char *line, size_t len)
{
	if (write(d->acks_fd, line, len) != (ssize_t)len) {
		fprintf(stderr, "ack write: %s\n", strerror(errno));
		exit(3);
	}
}

static void client_later(struct client *c)
{
	struct timeval tv = { 0, (suseconds_t)(rng() % 5000) };
	evtimer_add(c->timer, &tv);
}

static void deliver_cb(struct mt_store_req *req, void *context)
{
	struct client *c = context;
	unsigned int count;
	const struct mt_store_rcpt *r = mt_store_req_rcpts(req, &count);
	if (r[0].status == MT_STORE_OK) {
		char line[160];
		int n = snprintf(line, sizeof(line), "D %s %u %s %zu\n", c->mailbox,
				 r[0].uid, c->token, c->size);
		ack_write(c->driver, line, (size_t)n);
	} else {
		const char *error;
		(void)mt_store_req_status(req, &error);
		fprintf(stderr, "delivery failed: %s\n", error);
		exit(3);
	}
	client_later(c);
}

static void expunge_cb(struct mt_store_req *req, void *context)
{
	struct client *c = context;
	const char *error;
	if (mt_store_req_status(req, &error) != MT_STORE_OK) {
		fprintf(stderr, "expunge failed: %s\n", error);
		exit(3);
	}
	unsigned int count = mt_store_mailbox_count(c->mbox);
	struct mt_buf lines = MT_BUF_INIT;
	for (unsigned int i = 0; i + KEEP_NEWEST < count; i++)
		mt_buf_appendf(&lines, "E %s %u\n", c->mailbox,
			       mt_store_mailbox_msg(c->mbox, i)->uid);
	ack_write(c->driver, lines.data, lines.len);
	mt_buf_free(&lines);
	mt_store_mailbox_close(&c->mbox);
	client_later(c);
}

static void open_cb(struct mt_store_req *req, void *context)
{
	struct client *c = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	if (status == MT_STORE_IN_USE) {
		client_later(c);	/* another client is expunging it */
		return;
	}
	if (status != MT_STORE_OK) {
		fprintf(stderr, "open failed: %s\n", error);
		exit(3);
	}
	c->mbox = mt_store_req_mailbox(req);
	unsigned int count = mt_store_mailbox_count(c->mbox);
	if (count <= KEEP_NEWEST) {
		mt_store_mailbox_close(&c->mbox);
		client_later(c);
		return;
	}
	/* The intent first: if killed before the completion, these may or may
	 * not be gone (a POP3 session cut before +OK to QUIT). */
	uint32_t *uids = malloc((count - KEEP_NEWEST) * sizeof(*uids));
	struct mt_buf lines = MT_BUF_INIT;
	for (unsigned int i = 0; i + KEEP_NEWEST < count; i++) {
		uids[i] = mt_store_mailbox_msg(c->mbox, i)->uid;
		mt_buf_appendf(&lines, "X %s %u\n", c->mailbox, uids[i]);
	}
	ack_write(c->driver, lines.data, lines.len);
	mt_buf_free(&lines);
	(void)mt_store_expunge(c->driver->port, c->mbox, uids, count - KEEP_NEWEST,
			       expunge_cb, c);
	free(uids);
}

static void client_next(struct client *c)
{
	struct driver *d = c->driver;
	snprintf(c->mailbox, sizeof(c->mailbox), "box%u", (c->id + c->ops) % MAILBOXES);
	if (++c->ops % 20 == 0) {
		(void)mt_store_mailbox_open(d->port, c->mailbox, open_cb, c);
		return;
	}
	snprintf(c->token, sizeof(c->token), "r%u-c%u-s%u", d->round, c->id, c->seq++);
	c->size = pick_size();
	char *data = make_message(c->token, c->size);
	struct mt_buf body = MT_BUF_INIT;
	mt_buf_append(&body, data, c->size);
	free(data);
	struct mt_store_rcpt rcpt = { .mailbox = c->mailbox };
	(void)mt_store_deliver(d->port, &rcpt, 1, &body, deliver_cb, c);
}

static void client_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	client_next(arg);
}

static struct mt_store *open_store(const char *home, enum mt_store_mode mode,
				   unsigned int purge_delay_msecs)
{
	struct mt_store_settings set = {
		.home = home, .mode = mode, .create = true,
		.cache_size = 16u << 20, .checkpoint_secs = 1,
		.log_file_size = 1u << 20, .purge_delay_msecs = purge_delay_msecs,
	};
	struct mt_store *store;
	const char *error;
	enum mt_store_status status = mt_store_open(&set, &store, &error);
	if (status != MT_STORE_OK) {
		fprintf(stderr, "open %s: %s: %s\n", home,
			mt_store_status_name(status), error);
		exit(2);
	}
	return store;
}

static int cmd_run(const char *home, const char *acks, unsigned int round)
{
	struct driver d = { .round = round };
	d.acks_fd = open(acks, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (d.acks_fd < 0) {
		perror(acks);
		return 2;
	}
	/* Even rounds: bodies stay queued until the kill. */
	struct mt_store *store = open_store(home, MT_STORE_MODE_SERVE,
					    round % 2 == 0 ? PURGE_HELD_MSECS : 0);
	const char *error;
	d.loop = mt_loop_new(&error);
	if (d.loop == NULL)
		mt_fatal("%s", error);
	d.base = mt_loop_base(d.loop);
	d.port = mt_store_port_new(store, d.loop, &error);
	if (d.port == NULL) {
		fprintf(stderr, "%s\n", error);
		return 2;
	}
	for (unsigned int i = 0; i < CLIENTS; i++) {
		struct client *c = &d.clients[i];
		c->driver = &d;
		c->id = i;
		c->timer = evtimer_new(d.base, client_timer_cb, c);
		client_next(c);
	}
	/* Killed long before this; a bound in case nobody does. */
	struct timeval tv = { 120, 0 };
	event_base_loopexit(d.base, &tv);
	event_base_dispatch(d.base);
	fprintf(stderr, "run: not killed\n");
	return 2;
}

/* verify */

struct ack {
	char mailbox[16];
	uint32_t uid;
	char token[64];
	size_t size;
	bool expunged;
	unsigned int seen;
};

static struct ack *acks;
static unsigned int ack_count;

/* Per mailbox and uid (uids are dense): the ack's index + 1, and whether an
 * expunge of it was acknowledged (also for unacknowledged deliveries). */
static struct uid_slot {
	unsigned int ack;
	bool doomed;		/* an expunge of it was requested */
	bool gone;		/* ... and acknowledged */
} *slots[MAILBOXES];
static uint32_t slot_cap[MAILBOXES];

static struct uid_slot *slot_get(const char *mailbox, uint32_t uid)
{
	unsigned int m;
	if (sscanf(mailbox, "box%u", &m) != 1 || m >= MAILBOXES || uid == 0 ||
	    uid > 100000000)
		return NULL;
	if (uid >= slot_cap[m]) {
		uint32_t cap = slot_cap[m] == 0 ? 1024 : slot_cap[m];
		while (cap <= uid)
			cap *= 2;
		slots[m] = realloc(slots[m], cap * sizeof(*slots[m]));
		memset(slots[m] + slot_cap[m], 0,
		       (cap - slot_cap[m]) * sizeof(*slots[m]));
		slot_cap[m] = cap;
	}
	return &slots[m][uid];
}

static struct ack *ack_find_uid(const char *mailbox, uint32_t uid)
{
	struct uid_slot *slot = slot_get(mailbox, uid);
	return slot != NULL && slot->ack != 0 ? &acks[slot->ack - 1] : NULL;
}

static bool is_gone(const char *mailbox, uint32_t uid)
{
	struct uid_slot *slot = slot_get(mailbox, uid);
	return slot != NULL && slot->gone;
}

static int read_acks(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		perror(path);
		return -1;
	}
	acks = calloc(MAX_ACKS, sizeof(*acks));
	char line[256];
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strchr(line, '\n') == NULL) {
			fprintf(stderr, "torn ack line: %s\n", line);
			return -1;
		}
		struct ack a = { .seen = 0 };
		struct uid_slot *slot;
		if (line[0] == 'D' && ack_count < MAX_ACKS &&
		    sscanf(line, "D %15s %" SCNu32 " %63s %zu", a.mailbox, &a.uid,
			   a.token, &a.size) == 4 &&
		    (slot = slot_get(a.mailbox, a.uid)) != NULL) {
			if (slot->ack != 0) {
				fprintf(stderr, "uid %s/%u acknowledged twice\n",
					a.mailbox, a.uid);
				return -1;
			}
			a.expunged = slot->gone;
			acks[ack_count++] = a;
			slot->ack = ack_count;
		} else if (line[0] == 'X' &&
			   sscanf(line, "X %15s %" SCNu32, a.mailbox, &a.uid) == 2 &&
			   (slot = slot_get(a.mailbox, a.uid)) != NULL) {
			slot->doomed = true;
		} else if (line[0] == 'E' &&
			   sscanf(line, "E %15s %" SCNu32, a.mailbox, &a.uid) == 2 &&
			   (slot = slot_get(a.mailbox, a.uid)) != NULL) {
			slot->gone = true;
			if (slot->ack != 0)
				acks[slot->ack - 1].expunged = true;
		} else {
			fprintf(stderr, "bad ack line: %s", line);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

/* One mailbox: every message is intact, not expunged, and seen once. */
static int verify_mailbox(struct mt_store *store, const char *name,
			  unsigned int *present_r, unsigned int *unacked_r,
			  uint64_t *messages_r, uint64_t *bytes_r)
{
	struct mt_store_mailbox *mbox;
	const char *error;
	if (mt_store_mailbox_open_sync(store, name, &mbox, &error) != MT_STORE_OK) {
		fprintf(stderr, "open %s: %s\n", name, error);
		return -1;
	}
	int ret = 0;
	for (unsigned int i = 0; i < mt_store_mailbox_count(mbox) && ret == 0; i++) {
		const struct mt_store_msg *msg = mt_store_mailbox_msg(mbox, i);
		char *body = malloc(msg->size + 1);
		size_t got = 0, n;
		while (got < msg->size &&
		       mt_store_read_sync(mbox, i, got, body + got, 65536, &n,
					  &error) == MT_STORE_OK && n > 0)
			got += n;
		body[got] = '\0';
		char token[64];
		if (got != msg->size || sscanf(body, "X-Token: %63s", token) != 1) {
			fprintf(stderr, "%s uid %u: unreadable (%zu of %" PRIu64 ")\n",
				name, msg->uid, got, msg->size);
			ret = -1;
		} else {
			char *want = make_message(token, msg->size);
			if (memcmp(want, body, msg->size) != 0) {
				fprintf(stderr, "%s uid %u: bytes differ\n", name, msg->uid);
				ret = -1;
			}
			free(want);
		}
		struct ack *a = ack_find_uid(name, msg->uid);
		if (ret == 0 && is_gone(name, msg->uid)) {
			fprintf(stderr, "%s uid %u: expunge acknowledged, but it is back\n",
				name, msg->uid);
			ret = -1;
		} else if (ret == 0 && a != NULL) {
			if (strcmp(a->token, token) != 0 || a->size != msg->size) {
				fprintf(stderr, "%s uid %u: holds %s, acknowledged %s\n",
					name, msg->uid, token, a->token);
				ret = -1;
			}
			a->seen++;
			(*present_r)++;
		} else if (ret == 0) {
			/* Unacknowledged: allowed, once. */
			for (unsigned int k = 0; k < ack_count; k++)
				if (strcmp(acks[k].token, token) == 0) {
					fprintf(stderr, "%s uid %u: token %s again\n",
						name, msg->uid, token);
					ret = -1;
				}
			(*unacked_r)++;
		}
		free(body);
	}
	*messages_r += mt_store_mailbox_count(mbox);
	*bytes_r += mt_store_mailbox_bytes(mbox);
	mt_store_mailbox_close(&mbox);
	return ret;
}

/* Does message.db hold (id, uid)? */
static bool message_exists(struct mt_store *store, const unsigned char *key12)
{
	DBT key = { .data = (void *)key12, .size = 12 };
	unsigned char buf[8];
	DBT data = { .data = buf, .ulen = sizeof(buf),
		     .flags = DB_DBT_USERMEM | DB_DBT_PARTIAL };
	return store->messages->get(store->messages, NULL, &key, &data, 0) == 0;
}

/* refs.db holds the shared body whose chunk key is at key. */
static bool body_referenced(struct mt_store *store, const unsigned char *key)
{
	unsigned char id[8], buf[16];
	memcpy(id, key, 8);
	DBT k = { .data = id, .size = 8 };
	DBT data = { .data = buf, .ulen = sizeof(buf), .flags = DB_DBT_USERMEM };
	return store->refs->get(store->refs, NULL, &k, &data, 0) == 0;
}

/* Records in db. */
static unsigned int db_count(DB *db)
{
	DBC *c;
	unsigned char buf[64];
	DBT key = { .data = buf, .ulen = sizeof(buf), .flags = DB_DBT_USERMEM };
	DBT data = { .flags = DB_DBT_PARTIAL | DB_DBT_USERMEM, .data = buf, .ulen = 0 };
	unsigned int n = 0;
	if (db->cursor(db, NULL, &c, 0) != 0)
		return UINT_MAX;
	while (c->get(c, &key, &data, DB_NEXT) == 0)
		n++;
	(void)c->close(c);
	return n;
}

/* Reopen with the purger running: it must empty purge.db by itself; then
 * no body without its message, no message without its body, and nothing
 * a kill mid-delivery left half-written (the open's sweep queued it). */
static int verify_purge(const char *home, struct mt_store_stat *st)
{
	struct mt_store *store = open_store(home, MT_STORE_MODE_SERVE, 0);
	const char *error;
	int ret = 0;
	for (unsigned int i = 0; i < PURGE_WAIT_SECS * 20; i++) {
		if (mt_store_stat_get(store, st, &error) != MT_STORE_OK) {
			fprintf(stderr, "stat: %s\n", error);
			ret = -1;
			break;
		}
		if (st->purge_messages == 0 && st->purge_bytes == 0)
			break;
		usleep(50000);
	}
	if (ret == 0 && (st->purge_messages != 0 || st->purge_bytes != 0)) {
		fprintf(stderr, "the purger left %" PRIu64 " queued messages (%"
			PRIu64 " bytes) after %u s\n", st->purge_messages,
			st->purge_bytes, PURGE_WAIT_SECS);
		ret = -1;
	}
	/* The bodies: each chunk either a listed message's own (none here: no
	 * prefix) or a shared body's that refs.db holds; one body per message
	 * (one recipient each); nothing left half-written (partial.db). */
	DBC *c;
	unsigned char kbuf[32];
	DBT key = { .data = kbuf, .ulen = sizeof(kbuf), .flags = DB_DBT_USERMEM };
	DBT data = { .flags = DB_DBT_PARTIAL | DB_DBT_USERMEM, .data = kbuf, .ulen = 0 };
	uint64_t firsts = 0;
	if (ret == 0 && store->bodies->cursor(store->bodies, NULL, &c, 0) == 0) {
		int r;
		while ((r = c->get(c, &key, &data, DB_NEXT)) == 0) {
			bool shared = (store_get_be64(kbuf) & STORE_BODY_ID_BIT) != 0;
			if (key.size != 16 || (shared ? !body_referenced(store, kbuf) :
					       !message_exists(store, kbuf))) {
				fprintf(stderr, "orphaned chunk: id %" PRIx64
					" uid %u chunk %u\n", store_get_be64(kbuf),
					store_get_be32(kbuf + 8), store_get_be32(kbuf + 12));
				ret = -1;
				break;
			}
			firsts += shared && store_get_be32(kbuf + 12) == 0;
		}
		(void)c->close(c);
		if (ret == 0 && r != DB_NOTFOUND) {
			fprintf(stderr, "reading body.db: %s\n", db_strerror(r));
			ret = -1;
		}
	}
	/* Empty messages have no chunk; the test's are never empty. */
	if (ret == 0 && (firsts != st->messages || db_count(store->refs) != firsts)) {
		fprintf(stderr, "%" PRIu64 " messages but %" PRIu64 " bodies and %u "
			"references\n", st->messages, firsts, db_count(store->refs));
		ret = -1;
	}
	if (ret == 0 && (st->partial_bodies != 0 || db_count(store->partial) != 0)) {
		fprintf(stderr, "%" PRIu64 " bodies left half-written\n",
			st->partial_bodies);
		ret = -1;
	}
	mt_store_close(&store);
	return ret;
}

static int cmd_verify(const char *home, const char *acks_path)
{
	if (read_acks(acks_path) < 0)
		return 1;
	struct mt_store *store = open_store(home, MT_STORE_MODE_SERVE, PURGE_HELD_MSECS);
	unsigned int present = 0, unacked = 0;
	uint64_t messages = 0, bytes = 0;
	int ret = 0;
	for (unsigned int m = 0; m < MAILBOXES && ret == 0; m++) {
		char name[16];
		snprintf(name, sizeof(name), "box%u", m);
		ret = verify_mailbox(store, name, &present, &unacked, &messages, &bytes);
	}
	unsigned int live = 0, expunged = 0;
	for (unsigned int i = 0; i < ack_count && ret == 0; i++) {
		if (acks[i].expunged) {
			expunged++;
			continue;
		}
		live++;
		const struct uid_slot *slot = slot_get(acks[i].mailbox, acks[i].uid);
		if (acks[i].seen > 1 || (acks[i].seen == 0 && !slot->doomed)) {
			fprintf(stderr, "acknowledged %s (%s uid %u) seen %u times\n",
				acks[i].token, acks[i].mailbox, acks[i].uid,
				acks[i].seen);
			ret = -1;
		}
	}
	struct mt_store_stat st;
	const char *error;
	if (ret == 0 && mt_store_stat_get(store, &st, &error) != MT_STORE_OK) {
		fprintf(stderr, "stat: %s\n", error);
		ret = -1;
	}
	if (ret == 0 && (st.messages != messages || st.bytes != bytes)) {
		fprintf(stderr, "totals: records say %" PRIu64 "/%" PRIu64
			", messages are %" PRIu64 "/%" PRIu64 "\n",
			st.messages, st.bytes, messages, bytes);
		ret = -1;
	}
	/* Bodies whose chunks the kill caught before their delivery. */
	struct mt_store_counters counters;
	mt_store_counters_get(store, &counters);
	mt_store_close(&store);
	if (ret != 0)
		return 1;
	uint64_t backlog = st.purge_messages;
	if (verify_purge(home, &st) != 0)
		return 1;
	printf("acked=%u present=%u expunged=%u unacked_present=%u log_files=%u "
	       "half_written=%" PRIu64 " purge_backlog=%" PRIu64 "\n", ack_count,
	       live, expunged, unacked, st.log_files, counters.swept, backlog);
	return 0;
}

static int cmd_stat(const char *home)
{
	struct mt_store *store = open_store(home, MT_STORE_MODE_ADMIN, 0);
	struct mt_store_stat st;
	const char *error;
	if (mt_store_stat_get(store, &st, &error) != MT_STORE_OK) {
		fprintf(stderr, "stat: %s\n", error);
		return 1;
	}
	printf("mailboxes=%" PRIu64 " messages=%" PRIu64 " bytes=%" PRIu64
	       " log_files=%u log=%u/%u checkpoint=%u/%u purge_messages=%" PRIu64
	       "\n", st.mailboxes, st.messages, st.bytes, st.log_files, st.log_file,
	       st.log_offset, st.ckp_file, st.ckp_offset, st.purge_messages);
	mt_store_close(&store);
	return 0;
}

int main(int argc, char **argv)
{
	mt_log_init("test-store-crash", MT_LOG_TARGET_STDERR);
	rng_state = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL) ^ 0x9e3779b97f4a7c15ull;
	if (argc == 5 && strcmp(argv[1], "run") == 0)
		return cmd_run(argv[2], argv[3], (unsigned int)atoi(argv[4]));
	if (argc == 4 && strcmp(argv[1], "verify") == 0)
		return cmd_verify(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "stat") == 0)
		return cmd_stat(argv[2]);
	fprintf(stderr, "usage: %s run HOME ACKS ROUND | verify HOME ACKS | stat HOME\n",
		argv[0]);
	return 2;
}
