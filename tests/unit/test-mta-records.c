/* test-mta-records.c — unit tests for mta/queue-records.c: envelope records
 * round-trip with every field (absent and empty strings kept apart, all
 * recipient states), and a damaged record — every truncation, every single
 * bit flip, a wrong version, trailing bytes, an absurd recipient count — is
 * refused with a reason or decoded into something well-formed, never read
 * past its end (each input is an exact-size heap copy, so ASan sees it). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mta/queue-records.h"

static struct queue_msg *sample(void)
{
	struct queue_msg *msg = queue_msg_new();
	memcpy(msg->id, "0123456789ABCDEF", QUEUE_ID_LEN + 1);
	msg->arrival = 1700000000123;
	msg->flags = QUEUE_MSG_8BIT | QUEUE_MSG_HELD;
	msg->size = 24576;
	msg->sender = strdup("sender@example.org");
	msg->envid = strdup("QQ314159");
	msg->ret = QUEUE_RET_HDRS;
	msg->client = strdup("helo=client.test addr=192.0.2.1");
	struct queue_rcpt *r = queue_msg_add_rcpt(msg, "a@example.test");
	r->notify = QUEUE_NOTIFY_SUCCESS | QUEUE_NOTIFY_FAILURE;
	r->orcpt = strdup("rfc822;a@example.test");
	r = queue_msg_add_rcpt(msg, "b@example.test");
	r->state = QUEUE_RCPT_DEFERRED;
	r->attempts = 3;
	r->next_try = 1700000060000;
	r->last_error = strdup("451 4.4.2 lost connection");
	r = queue_msg_add_rcpt(msg, "c@remote.test");
	r->state = QUEUE_RCPT_DELIVERED;
	r->last_error = strdup("");
	r = queue_msg_add_rcpt(msg, "d@remote.test");
	r->state = QUEUE_RCPT_BOUNCED;
	r->notify = QUEUE_NOTIFY_NEVER;
	return msg;
}

static bool str_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void assert_same(const struct queue_msg *a, const struct queue_msg *b)
{
	assert_int_equal(a->arrival, b->arrival);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->size, b->size);
	assert_true(str_eq(a->sender, b->sender));
	assert_true(str_eq(a->envid, b->envid));
	assert_int_equal(a->ret, b->ret);
	assert_true(str_eq(a->client, b->client));
	assert_int_equal(a->rcpt_count, b->rcpt_count);
	for (unsigned int i = 0; i < a->rcpt_count; i++) {
		const struct queue_rcpt *x = &a->rcpts[i], *y = &b->rcpts[i];
		assert_true(str_eq(x->address, y->address));
		assert_true(str_eq(x->orcpt, y->orcpt));
		assert_int_equal(x->notify, y->notify);
		assert_int_equal(x->state, y->state);
		assert_int_equal(x->attempts, y->attempts);
		assert_int_equal(x->next_try, y->next_try);
		assert_true(str_eq(x->last_error, y->last_error));
	}
}

/* Decode from an exact-size heap copy. */
static bool decode_copy(const void *data, size_t size, struct queue_msg **msg_r,
			const char **error_r)
{
	void *copy = malloc(size == 0 ? 1 : size);
	memcpy(copy, data, size);
	struct queue_msg *msg = queue_msg_new();
	bool ok = queue_record_decode(copy, size, msg, error_r);
	free(copy);
	*msg_r = msg;
	return ok;
}

static void test_roundtrip(void **state)
{
	struct queue_msg *msg = sample(), *back;
	struct mt_buf rec = MT_BUF_INIT;
	const char *error;
	queue_record_encode(msg, &rec);
	assert_true(decode_copy(rec.data, rec.len, &back, &error));
	assert_same(msg, back);
	assert_null(back->rcpts[1].orcpt);		/* absent stays absent */
	assert_string_equal(back->rcpts[2].last_error, "");	/* empty stays empty */
	queue_msg_unref(&back);
	/* The null sender and no optional strings. */
	free(msg->sender);
	msg->sender = strdup("");
	free(msg->envid);
	msg->envid = NULL;
	mt_buf_reset(&rec);
	queue_record_encode(msg, &rec);
	assert_true(decode_copy(rec.data, rec.len, &back, &error));
	assert_same(msg, back);
	assert_string_equal(back->sender, "");
	assert_null(back->envid);
	queue_msg_unref(&back);
	queue_msg_unref(&msg);
	mt_buf_free(&rec);
}

static void test_truncations_and_trailers(void **state)
{
	struct queue_msg *msg = sample(), *back;
	struct mt_buf rec = MT_BUF_INIT;
	const char *error;
	queue_record_encode(msg, &rec);
	for (size_t n = 0; n < rec.len; n++) {
		error = NULL;
		assert_false(decode_copy(rec.data, n, &back, &error));
		assert_non_null(error);
		queue_msg_unref(&back);
	}
	mt_buf_append(&rec, "x", 1);
	assert_false(decode_copy(rec.data, rec.len, &back, &error));
	queue_msg_unref(&back);
	queue_msg_unref(&msg);
	mt_buf_free(&rec);
}

static void test_bit_flips(void **state)
{
	struct queue_msg *msg = sample(), *back;
	struct mt_buf rec = MT_BUF_INIT;
	const char *error;
	queue_record_encode(msg, &rec);
	for (size_t i = 0; i < rec.len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			rec.data[i] ^= (char)(1 << bit);
			if (decode_copy(rec.data, rec.len, &back, &error)) {
				/* Accepted: then it must be well-formed. */
				assert_non_null(back->sender);
				assert_non_null(back->client);
				assert_true(back->rcpt_count > 0);
				for (unsigned int k = 0; k < back->rcpt_count; k++) {
					assert_non_null(back->rcpts[k].address);
					assert_true(back->rcpts[k].state <= QUEUE_RCPT_BOUNCED);
				}
			}
			queue_msg_unref(&back);
			rec.data[i] ^= (char)(1 << bit);
		}
	}
	queue_msg_unref(&msg);
	mt_buf_free(&rec);
}

static void test_bad_headers(void **state)
{
	struct queue_msg *msg = sample(), *back;
	struct mt_buf rec = MT_BUF_INIT;
	const char *error;
	queue_record_encode(msg, &rec);
	rec.data[3] = QUEUE_RECORD_VERSION + 1;
	assert_false(decode_copy(rec.data, rec.len, &back, &error));
	assert_string_equal(error, "unknown envelope record version");
	queue_msg_unref(&back);
	rec.data[0] = 'X';
	assert_false(decode_copy(rec.data, rec.len, &back, &error));
	assert_string_equal(error, "not an envelope record");
	queue_msg_unref(&back);
	/* A recipient count far beyond what the bytes can hold. */
	struct mt_buf tiny = MT_BUF_INIT;
	msg->rcpt_count = 1;
	queue_record_encode(msg, &tiny);
	/* Find the count: it is the u32 just before the first address. */
	char *addr = memmem(tiny.data, tiny.len, "a@example.test", 14);
	assert_non_null(addr);
	memcpy(addr - 8, "\xff\xff\xff\x7f", 4);
	assert_false(decode_copy(tiny.data, tiny.len, &back, &error));
	queue_msg_unref(&back);
	msg->rcpt_count = 4;
	queue_msg_unref(&msg);
	mt_buf_free(&rec);
	mt_buf_free(&tiny);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_truncations_and_trailers),
		cmocka_unit_test(test_bit_flips),
		cmocka_unit_test(test_bad_headers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
