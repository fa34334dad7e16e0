/* test-mta-queue.c — unit tests for the MTA's durable queue (mta/queue*.c
 * over lib-bdb/bdb-commit.c) with a real Berkeley DB environment in a temporary
 * directory: messages submitted together are made durable by fewer log
 * flushes than messages (group commit) and come back after a close and
 * reopen with every field and their bodies; state saves and removals
 * persist; lazy writes complete without a flush of their own; a flush
 * waits for company when asked to (commit_delay); ids increase
 * across restarts; a second opener of the same queue_dir is refused.
 * Bodies in pieces: a body written while it arrives (queue_spool) reads
 * back byte for byte, head then piece by piece; an aborted spool leaves
 * nothing; the pieces of a message whose writer died before its envelope
 * (a child process that exits) are deleted at the next open; a body
 * written whole by an older release (key: the id alone) still reads. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <db.h>

#include "log.h"
#include "loop.h"
#include "buf.h"
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
		(void)queue_submit(q, msg, NULL, NULL, true, done_cb, &c);
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

/* Spooled bodies */

struct spool_ctx {
	struct mt_loop *loop;
	bool ready;
};

static void spool_ready(void *context)
{
	struct spool_ctx *sc = context;
	sc->ready = true;
	mt_loop_exit(sc->loop);
}

/* Deterministic content of n octets (not all one byte: order matters). */
static void fill(struct mt_buf *out, uint64_t from, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t k = from + i;
		char c = (char)('A' + (k * 7 + k / 1000) % 26);
		mt_buf_append(out, &c, 1);
	}
}

#define PIECES 5
#define TAIL 1234u
static const char prefix_text[] = "Received: by test; Tue, 1 Dec 2026\r\n";

/* Write PIECES pieces and a tail for msg through a spool; submit. */
static void submit_spooled(struct queue *q, struct mt_loop *loop,
			   struct queue_msg *msg, struct ctx *c, bool abort_it)
{
	struct spool_ctx sc = { .loop = loop };
	struct queue_spool *spool = queue_spool_new(q, msg->id, spool_ready, &sc);
	struct mt_buf piece = MT_BUF_INIT;
	for (unsigned int i = 0; i < PIECES; i++) {
		assert_false(queue_spool_busy(spool));
		fill(&piece, (uint64_t)i * QUEUE_PIECE_SIZE, QUEUE_PIECE_SIZE);
		queue_spool_write(spool, &piece);
		assert_int_equal(piece.len, 0);
		assert_true(queue_spool_busy(spool));
		sc.ready = false;
		assert_int_equal(mt_loop_run(loop), 0);	/* until the piece is written */
		assert_true(sc.ready);
	}
	assert_false(queue_spool_failed(spool));
	assert_int_equal(queue_spool_size(spool), (uint64_t)PIECES * QUEUE_PIECE_SIZE);
	if (abort_it) {
		queue_spool_abort(&spool);
		assert_null(spool);
		queue_msg_unref(&msg);
		return;
	}
	fill(&piece, (uint64_t)PIECES * QUEUE_PIECE_SIZE, TAIL);
	msg->body = queue_body_new(strdup(prefix_text), strlen(prefix_text));
	msg->size = strlen(prefix_text) + (uint64_t)PIECES * QUEUE_PIECE_SIZE + TAIL;
	(void)queue_submit(q, msg, &spool, &piece, false, done_cb, c);
	assert_null(spool);
	mt_buf_free(&piece);
	assert_int_equal(mt_loop_run(loop), 0);
}

struct read_ctx {
	struct mt_loop *loop;
	struct queue_body *piece;
	bool called;
};

static void read_cb(struct queue_body *piece, void *context)
{
	struct read_ctx *rc = context;
	rc->called = true;
	if (piece != NULL)
		queue_body_ref(piece);
	rc->piece = piece;
	mt_loop_exit(rc->loop);
}

/* Read msg's whole body: the head, then each following piece. */
static void read_all(struct queue *q, struct mt_loop *loop,
		     struct queue_msg *msg, struct mt_buf *out, unsigned int *reads_r)
{
	struct ctx c = { .loop = loop, .wanted = 1 };
	queue_load_body(q, msg, done_cb, &c);
	assert_int_equal(mt_loop_run(loop), 0);
	assert_int_equal(c.ok, 1);
	assert_true(msg->body->size <= 2 * (size_t)QUEUE_HEAD_MAX);
	mt_buf_append(out, msg->body->data, msg->body->size);
	struct queue_body *at = msg->body;
	queue_body_ref(at);
	*reads_r = 0;
	while (!at->complete) {
		struct read_ctx rc = { .loop = loop };
		(void)queue_read_next(q, msg, at, read_cb, &rc);
		assert_int_equal(mt_loop_run(loop), 0);
		assert_true(rc.called);
		assert_non_null(rc.piece);
		assert_true(rc.piece->size <= 2 * (size_t)QUEUE_PIECE_SIZE);
		mt_buf_append(out, rc.piece->data, rc.piece->size);
		queue_body_unref(&at);
		at = rc.piece;
		(*reads_r)++;
	}
	queue_body_unref(&at);
}

static void test_spooled_body(void **state)
{
	const char *error;
	char *dir = tmpdir();
	struct ctx c = { .wanted = 1 };
	c.loop = mt_loop_new(&error);
	struct queue *q = queue_open(dir, c.loop, &error);
	assert_non_null(q);
	struct queue_msg *msg = make_msg(q, 0);
	queue_body_unref(&msg->body);
	char id[QUEUE_ID_LEN + 1];
	memcpy(id, msg->id, sizeof(id));
	submit_spooled(q, c.loop, msg, &c, false);
	assert_int_equal(c.ok, 1);
	struct queue_stats st;
	queue_get_stats(q, &st);
	assert_int_equal(st.spooled_pieces, PIECES);
	queue_close(&q);

	/* After a reopen: nothing taken for an orphan, the body intact. */
	q = queue_open(dir, c.loop, &error);
	assert_non_null(q);
	queue_get_stats(q, &st);
	assert_int_equal(st.orphans, 0);
	msg = queue_find(q, id);
	assert_non_null(msg);
	assert_int_equal(msg->size, strlen(prefix_text) +
			 (uint64_t)PIECES * QUEUE_PIECE_SIZE + TAIL);
	struct mt_buf got = MT_BUF_INIT, want = MT_BUF_INIT;
	unsigned int reads;
	read_all(q, c.loop, msg, &got, &reads);
	mt_buf_append(&want, prefix_text, strlen(prefix_text));
	fill(&want, 0, (size_t)PIECES * QUEUE_PIECE_SIZE + TAIL);
	assert_int_equal(got.len, want.len);
	assert_memory_equal(got.data, want.data, want.len);
	assert_true(reads >= PIECES - 1);
	printf("# %zu octets read back in a head and %u more reads\n", got.len, reads);

	/* Deleted: a read of a later piece fails instead of inventing one. */
	struct queue_body *head = msg->body;
	queue_body_ref(head);
	queue_remove(q, msg);
	struct read_ctx rc = { .loop = c.loop };
	(void)queue_read_next(q, msg, head, read_cb, &rc);
	assert_int_equal(mt_loop_run(c.loop), 0);
	assert_true(rc.called);
	assert_null(rc.piece);
	queue_body_unref(&head);
	mt_buf_free(&got);
	mt_buf_free(&want);
	queue_close(&q);
	mt_loop_free(&c.loop);
	rmrf(dir);
	free(dir);
}

/* The queue's body.db, opened directly (the queue closed), recovered. */
static void open_body_db(const char *dir, DB_ENV **env_r, DB **db_r)
{
	assert_int_equal(db_env_create(env_r, 0), 0);
	assert_int_equal((*env_r)->open(*env_r, dir, DB_CREATE | DB_INIT_TXN |
					DB_INIT_LOG | DB_INIT_LOCK | DB_INIT_MPOOL |
					DB_RECOVER, 0600), 0);
	assert_int_equal(db_create(db_r, *env_r, 0), 0);
	assert_int_equal((*db_r)->open(*db_r, NULL, "body.db", NULL, DB_BTREE,
				       DB_AUTO_COMMIT, 0), 0);
}

/* Pieces in body.db (any message's). */
static unsigned int count_body_records(const char *dir)
{
	DB_ENV *env;
	DB *db;
	open_body_db(dir, &env, &db);
	DBC *cursor;
	assert_int_equal(db->cursor(db, NULL, &cursor, 0), 0);
	DBT key, data;
	memset(&key, 0, sizeof(key));
	memset(&data, 0, sizeof(data));
	data.flags = DB_DBT_PARTIAL;
	unsigned int n = 0;
	while (cursor->get(cursor, &key, &data, DB_NEXT) == 0)
		n++;
	cursor->close(cursor);
	db->close(db, 0);
	env->close(env, 0);
	return n;
}

static void test_spool_abort_and_orphans(void **state)
{
	const char *error;
	char *dir = tmpdir();
	struct mt_loop *loop = mt_loop_new(&error);
	struct queue *q = queue_open(dir, loop, &error);
	assert_non_null(q);
	struct ctx c = { .loop = loop, .wanted = 1 };
	submit_spooled(q, loop, make_msg(q, 0), &c, true);
	queue_close(&q);	/* runs the lazy delete */
	assert_int_equal(count_body_records(dir), 0);

	/* A writer that dies between its pieces and its envelope: a child
	 * process writes the pieces, then another message whose flush makes
	 * the pieces durable too, and exits without closing. */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mt_loop *l = mt_loop_new(&error);
		struct queue *cq = queue_open(dir, l, &error);
		struct ctx cc = { .loop = l, .wanted = 1 };
		struct spool_ctx sc = { .loop = l };
		struct queue_msg *m = make_msg(cq, 1);
		struct queue_spool *spool = queue_spool_new(cq, m->id, spool_ready, &sc);
		struct mt_buf piece = MT_BUF_INIT;
		fill(&piece, 0, QUEUE_PIECE_SIZE);
		queue_spool_write(spool, &piece);
		(void)mt_loop_run(l);
		(void)queue_submit(cq, make_msg(cq, 2), NULL, NULL, false, done_cb, &cc);
		(void)mt_loop_run(l);
		_exit(cc.ok == 1 && sc.ready ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(count_body_records(dir), 2);	/* a piece, a body */
	q = queue_open(dir, loop, &error);
	assert_non_null(q);
	struct queue_stats st;
	queue_get_stats(q, &st);
	assert_int_equal(st.orphans, 1);
	assert_int_equal(queue_count(q), 1);
	queue_close(&q);
	assert_int_equal(count_body_records(dir), 1);
	mt_loop_free(&loop);
	rmrf(dir);
	free(dir);
}

/* A queue written by a release that stored each body whole under its id. */
static void test_old_whole_body(void **state)
{
	const char *error;
	char *dir = tmpdir();
	struct ctx c = { .wanted = 1 };
	c.loop = mt_loop_new(&error);
	struct queue *q = queue_open(dir, c.loop, &error);
	struct queue_msg *msg = make_msg(q, 7);
	char id[QUEUE_ID_LEN + 1];
	memcpy(id, msg->id, sizeof(id));
	(void)queue_submit(q, msg, NULL, NULL, false, done_cb, &c);
	assert_int_equal(mt_loop_run(c.loop), 0);
	queue_close(&q);

	/* Rewrite its body in the old layout. */
	DB_ENV *env;
	DB *db;
	open_body_db(dir, &env, &db);
	assert_int_equal(db->truncate(db, NULL, &(u_int32_t){ 0 }, DB_AUTO_COMMIT), 0);
	static const char old[] = "Subject: old\r\n\r\nwritten whole\r\n";
	DBT key, data;
	memset(&key, 0, sizeof(key));
	memset(&data, 0, sizeof(data));
	key.data = id;
	key.size = QUEUE_ID_LEN;
	data.data = (void *)old;
	data.size = sizeof(old) - 1;
	assert_int_equal(db->put(db, NULL, &key, &data, DB_AUTO_COMMIT), 0);
	db->close(db, 0);
	env->close(env, 0);

	q = queue_open(dir, c.loop, &error);
	assert_non_null(q);
	struct queue_stats st;
	queue_get_stats(q, &st);
	assert_int_equal(st.orphans, 0);
	msg = queue_find(q, id);
	assert_non_null(msg);
	struct mt_buf got = MT_BUF_INIT;
	unsigned int reads;
	read_all(q, c.loop, msg, &got, &reads);
	assert_int_equal(reads, 0);
	assert_int_equal(got.len, sizeof(old) - 1);
	assert_memory_equal(got.data, old, got.len);
	mt_buf_free(&got);
	queue_remove(q, msg);
	queue_close(&q);
	assert_int_equal(count_body_records(dir), 0);
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
		cmocka_unit_test(test_spooled_body),
		cmocka_unit_test(test_spool_abort_and_orphans),
		cmocka_unit_test(test_old_whole_body),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
