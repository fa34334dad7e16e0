/* test-mta-queue.c — unit tests for the MTA's durable queue (mta/queue*.c
 * over lib/bdb-commit.c) with a real Berkeley DB environment in a temporary
 * directory: messages submitted together are made durable by fewer log
 * flushes than messages (group commit) and come back after a close and
 * reopen with every field and their bodies; state saves and removals
 * persist; lazy writes complete without a flush of their own; a flush
 * waits for company when asked to (commit_delay); ids increase
 * across restarts; a second opener of the same queue_dir is refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "mta/queue.h"

#define MESSAGES 50

struct ctx {
	struct mt_loop *loop;
	unsigned int done, ok, wanted;
};

static void done_cb(bool ok, const char *error, void *context)
{
	struct ctx *c = context;
	c->done++;
	if (ok)
		c->ok++;
	if (c->done == c->wanted)
		mt_loop_exit(c->loop);
}

static struct queue_msg *make_msg(struct queue *q, unsigned int i)
{
	struct queue_msg *msg = queue_msg_new();
	queue_new_id(q, msg->id);
	msg->arrival = 1700000000000 + i;
	msg->sender = strdup("sender@example.org");
	msg->client = strdup("helo=t addr=127.0.0.1");
	queue_msg_add_rcpt(msg, "a@example.test");
	queue_msg_add_rcpt(msg, "b@example.test");
	char *data = NULL;
	int n = asprintf(&data, "Subject: message %u\r\n\r\nbody %u\r\n", i, i);
	assert_true(n > 0);
	msg->size = (uint64_t)n;
	msg->body = queue_body_new(data, (size_t)n);
	return msg;
}

static char *tmpdir(void)
{
	char *dir = strdup("/tmp/test-mta-queue.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void rmrf(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_group_commit_and_reopen(void **state)
{
	const char *error;
	char *dir = tmpdir();
	struct ctx c = { .wanted = MESSAGES };
	c.loop = mt_loop_new(&error);
	struct queue *q = queue_open(dir, c.loop, &error);
	assert_non_null(q);
	assert_null(queue_open(dir, c.loop, &error));	/* one owner */
	assert_non_null(strstr(error, "in use"));

	queue_set_commit_delay(q, 2000);	/* flushes wait for company */
	char ids[MESSAGES][QUEUE_ID_LEN + 1];
	for (unsigned int i = 0; i < MESSAGES; i++) {
		struct queue_msg *msg = make_msg(q, i);
		memcpy(ids[i], msg->id, sizeof(ids[i]));
		if (i > 0)
			assert_true(strcmp(ids[i - 1], ids[i]) < 0);
		(void)queue_submit(q, msg, true, done_cb, &c);
	}
	assert_int_equal(mt_loop_run(c.loop), 0);
	assert_int_equal(c.ok, MESSAGES);
	assert_int_equal(queue_count(q), MESSAGES);
	struct queue_stats st;
	queue_get_stats(q, &st);
	assert_int_equal(st.submitted, MESSAGES);
	assert_true(st.flushes >= 1 && st.flushes < MESSAGES);
	assert_true(st.company_waits >= 1);
	printf("# %u messages made durable by %llu log flushes (largest batch %llu)\n",
	       MESSAGES, (unsigned long long)st.flushes, (unsigned long long)st.max_batch);

	/* Mark one delivered and one partly deferred: lazy saves. */
	struct queue_msg *m0 = queue_find(q, ids[0]), *m1 = queue_find(q, ids[1]);
	assert_non_null(m0);
	m0->rcpts[0].state = m0->rcpts[1].state = QUEUE_RCPT_DELIVERED;
	m1->rcpts[0].state = QUEUE_RCPT_DEFERRED;
	m1->rcpts[0].attempts = 2;
	m1->rcpts[0].next_try = 123456;
	m1->rcpts[0].last_error = strdup("451 4.4.2 try later");
	m1->flags |= QUEUE_MSG_HELD;
	queue_save(q, m0, NULL);	/* done: removed */
	queue_save(q, m1, NULL);
	assert_null(queue_find(q, ids[0]));
	queue_close(&q);

	q = queue_open(dir, c.loop, &error);
	assert_non_null(q);
	assert_int_equal(queue_count(q), MESSAGES - 1);
	assert_null(queue_find(q, ids[0]));
	m1 = queue_find(q, ids[1]);
	assert_non_null(m1);
	assert_int_equal(m1->rcpts[0].state, QUEUE_RCPT_DEFERRED);
	assert_int_equal(m1->rcpts[0].attempts, 2);
	assert_int_equal(m1->rcpts[0].next_try, 123456);
	assert_string_equal(m1->rcpts[0].last_error, "451 4.4.2 try later");
	assert_true((m1->flags & QUEUE_MSG_HELD) != 0);
	assert_null(m1->body);

	/* Bodies come back byte for byte. */
	struct ctx c2 = { .loop = c.loop, .wanted = 1 };
	queue_load_body(q, m1, done_cb, &c2);
	assert_int_equal(mt_loop_run(c.loop), 0);
	assert_int_equal(c2.ok, 1);
	assert_non_null(m1->body);
	assert_int_equal(m1->body->size, strlen("Subject: message 1\r\n\r\nbody 1\r\n"));
	assert_memory_equal(m1->body->data, "Subject: message 1\r\n\r\nbody 1\r\n",
			    m1->body->size);

	/* New ids sort after every loaded one. */
	char id[QUEUE_ID_LEN + 1];
	queue_new_id(q, id);
	assert_true(strcmp(id, ids[MESSAGES - 1]) > 0);
	queue_remove(q, m1);
	queue_close(&q);
	q = queue_open(dir, c.loop, &error);
	assert_int_equal(queue_count(q), MESSAGES - 2);
	queue_close(&q);
	mt_loop_free(&c.loop);
	rmrf(dir);
	free(dir);
}

int main(void)
{
	mt_log_init("test-mta-queue", MT_LOG_TARGET_STDERR);
	mt_log_set_min_level(MT_LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_commit_and_reopen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
