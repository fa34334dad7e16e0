/* queue-records.c — encode and decode envelope records (see
 * queue-records.h for the format).
 *
 * Trust boundary: decoding reads bytes from the queue's database files,
 * which a crash, a full disk or an operator may have damaged: every read is
 * bounds-checked, every enum range-checked, and failure is reported, not
 * guessed around. No RFC applies (the DSN fields are carried as sent). */
#include "queue-records.h"
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ABSENT 0xffffffffu

static void put_u8(struct mt_buf *out, unsigned int v)
{
	unsigned char c = (unsigned char)v;
	mt_buf_append(out, &c, 1);
}

static void put_u32(struct mt_buf *out, uint32_t v)
{
	unsigned char b[4];
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	mt_buf_append(out, b, sizeof(b));
}

static void put_u64(struct mt_buf *out, uint64_t v)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	mt_buf_append(out, b, sizeof(b));
}

/* A string; NULL is "absent" (distinct from ""). */
static void put_str(struct mt_buf *out, const char *s)
{
	if (s == NULL) {
		put_u32(out, ABSENT);
		return;
	}
	size_t len = strlen(s);
	put_u32(out, (uint32_t)len);
	mt_buf_append(out, s, len);
}

void queue_record_encode(const struct queue_msg *msg, struct mt_buf *out)
{
	mt_buf_append(out, "MTQ", 3);
	put_u8(out, QUEUE_RECORD_VERSION);
	put_u64(out, (uint64_t)msg->arrival);
	put_u32(out, msg->flags);
	put_u64(out, msg->size);
	put_str(out, msg->sender != NULL ? msg->sender : "");
	put_str(out, msg->envid);
	put_u8(out, msg->ret);
	put_str(out, msg->client != NULL ? msg->client : "");
	put_u32(out, msg->rcpt_count);
	for (unsigned int i = 0; i < msg->rcpt_count; i++) {
		const struct queue_rcpt *r = &msg->rcpts[i];
		put_str(out, r->address);
		put_str(out, r->orcpt);
		put_u8(out, r->notify);
		put_u8(out, r->state);
		put_u32(out, r->attempts);
		put_u64(out, (uint64_t)r->next_try);
		put_str(out, r->last_error);
	}
}

struct cursor {
	const unsigned char *p;
	size_t left;
	bool bad;
};

static const unsigned char *take(struct cursor *c, size_t n)
{
	if (c->bad || n > c->left) {
		c->bad = true;
		return NULL;
	}
	const unsigned char *p = c->p;
	c->p += n;
	c->left -= n;
	return p;
}

static unsigned int get_u8(struct cursor *c)
{
	const unsigned char *p = take(c, 1);
	return p != NULL ? p[0] : 0;
}

static uint32_t get_u32(struct cursor *c)
{
	const unsigned char *p = take(c, 4);
	uint32_t v = 0;
	for (int i = 0; p != NULL && i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static uint64_t get_u64(struct cursor *c)
{
	const unsigned char *p = take(c, 8);
	uint64_t v = 0;
	for (int i = 0; p != NULL && i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* A string (NUL-terminated copy) or NULL when absent; a NUL inside makes
 * the record bad. */
static char *get_str(struct cursor *c)
{
	uint32_t len = get_u32(c);
	if (c->bad || len == ABSENT)
		return NULL;
	const unsigned char *p = take(c, len);
	if (p == NULL)
		return NULL;
	if (memchr(p, '\0', len) != NULL) {
		c->bad = true;
		return NULL;
	}
	return mt_xstrndup((const char *)p, len);
}

bool queue_record_decode(const void *data, size_t size, struct queue_msg *msg,
			 const char **error_r)
{
	struct cursor c = { data, size, false };
	const unsigned char *magic = take(&c, 3);
	if (magic == NULL || memcmp(magic, "MTQ", 3) != 0) {
		*error_r = "not an envelope record";
		return false;
	}
	unsigned int version = get_u8(&c);
	if (version != QUEUE_RECORD_VERSION) {
		*error_r = "unknown envelope record version";
		return false;
	}
	msg->arrival = (int64_t)get_u64(&c);
	msg->flags = get_u32(&c);
	msg->size = get_u64(&c);
	msg->sender = get_str(&c);
	msg->envid = get_str(&c);
	msg->ret = (enum queue_ret)get_u8(&c);
	msg->client = get_str(&c);
	uint32_t count = get_u32(&c);
	if (c.bad || msg->sender == NULL || msg->client == NULL ||
	    msg->ret > QUEUE_RET_HDRS || count == 0 ||
	    count > QUEUE_RECORD_MAX_RCPTS || count > c.left / 23) {
		*error_r = "damaged envelope record";
		return false;
	}
	for (uint32_t i = 0; i < count && !c.bad; i++) {
		char *address = get_str(&c);
		if (address == NULL) {
			c.bad = true;
			break;
		}
		struct queue_rcpt *r = queue_msg_add_rcpt(msg, address);
		free(address);
		r->orcpt = get_str(&c);
		r->notify = get_u8(&c);
		unsigned int state = get_u8(&c);
		if (state > QUEUE_RCPT_BOUNCED)
			c.bad = true;
		r->state = (enum queue_rcpt_state)state;
		r->attempts = get_u32(&c);
		r->next_try = (int64_t)get_u64(&c);
		r->last_error = get_str(&c);
	}
	if (c.bad || c.left != 0) {
		*error_r = "damaged envelope record";
		return false;
	}
	return true;
}
