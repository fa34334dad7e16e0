/* test-imap-thread.c — lib-mail's THREAD (RFC 5256): table-driven cases
 * of REFERENCES (chains, branches, RFC 5256 4's example response,
 * missing parents as dummies kept or promoted, loops in References,
 * self-references, duplicate and missing Message-IDs, In-Reply-To when
 * References has no msg-id, a parent guessed from another's References
 * replaced by the message's own, threads joined by base subject, date
 * order with ties in sequence order) and ORDEREDSUBJECT; msg-id
 * extraction; and random References graphs (loops, duplicates) whose
 * answer names every message exactly once in balanced parentheses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "imap-thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tmsg {
	uint32_t id;
	const char *subject, *message_id, *references, *in_reply_to;
	int64_t date;		/* 0: the id */
};

#define END { 0, NULL, NULL, NULL, NULL, 0 }

static const struct {
	const char *name;
	enum mt_imap_thread_algorithm algorithm;
	struct tmsg msgs[10];
	const char *want;
} cases[] = {
	{ "chain", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "a", "<a@x>", NULL, NULL, 0 },
		{ 2, "Re: a", "<b@x>", "<a@x>", NULL, 0 },
		{ 3, "Re: a", "<c@x>", "<a@x> <b@x>", NULL, 0 }, END }, "(1 2 3)" },
	{ "branch", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "a", "<a@x>", NULL, NULL, 0 },
		{ 2, "Re: a", "<b@x>", "<a@x>", NULL, 0 },
		{ 3, "Re: a", "<c@x>", "<a@x>", NULL, 0 }, END }, "(1 (2)(3))" },
	{ "rfc5256 example", MT_IMAP_THREAD_REFERENCES, {
		{ 2, "other", "<2@x>", NULL, NULL, 0 },
		{ 3, "t", "<3@x>", NULL, NULL, 0 },
		{ 4, "Re: t", "<4@x>", "<3@x> <6@x>", NULL, 0 },
		{ 6, "Re: t", "<6@x>", "<3@x>", NULL, 0 },
		{ 7, "Re: t", "<7@x>", "<3@x> <6@x> <44@x>", NULL, 0 },
		{ 23, "Re: t", "<23@x>", "<3@x> <6@x> <4@x>", NULL, 0 },
		{ 44, "Re: t", "<44@x>", "<3@x> <6@x>", NULL, 0 },
		{ 96, "Re: t", "<96@x>", "<3@x>\r\n <6@x> <44@x> <7@x>", NULL, 0 }, END },
	  "(2)(3 6 (4 23)(44 7 96))" },
	{ "missing parent, two children", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "s1", "<b@x>", "<gone@x>", NULL, 0 },
		{ 2, "s2", "<c@x>", "<gone@x>", NULL, 0 }, END }, "((1)(2))" },
	{ "missing parent, one child", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "s1", "<b@x>", "<gone@x>", NULL, 0 }, END }, "(1)" },
	{ "missing middle", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "s", "<a@x>", NULL, NULL, 0 },
		{ 2, "Re: s", "<c@x>", "<a@x> <gone@x>", NULL, 0 },
		{ 3, "Re: s", "<d@x>", "<a@x> <gone@x>", NULL, 0 }, END }, "(1 (2)(3))" },
	{ "loop between two", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "s1", "<a@x>", "<b@x>", NULL, 0 },
		{ 2, "s2", "<b@x>", "<a@x>", NULL, 0 }, END }, "(2 1)" },
	{ "loop of three in one field", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "s1", "<a@x>", "<b@x> <c@x> <b@x> <a@x> <c@x>", NULL, 0 },
		{ 2, "s2", "<b@x>", NULL, NULL, 0 },
		{ 3, "s3", "<c@x>", NULL, NULL, 0 }, END }, "(2)(3 1)" },
	{ "self reference", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "s", "<a@x>", "<a@x>", "<a@x>", 0 }, END }, "(1)" },
	{ "duplicate message-id", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "s1", "<a@x>", NULL, NULL, 0 },
		{ 2, "s2", "<a@x>", NULL, NULL, 0 },
		{ 3, "s3", "<c@x>", "<a@x>", NULL, 0 }, END }, "(1 3)(2)" },
	{ "no message-id", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "s1", NULL, NULL, NULL, 0 },
		{ 2, "s2", "no brackets", NULL, NULL, 0 },
		{ 3, "s3", "<>", NULL, NULL, 0 }, END }, "(1)(2)(3)" },
	{ "in-reply-to", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "s1", "<a@x>", NULL, NULL, 0 },
		{ 2, "s2", "<b@x>", "garbage", "<a@x> (comment) <z@x>", 0 }, END }, "(1 2)" },
	{ "own parent replaces a guess", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "A", "<a@x>", NULL, NULL, 0 },
		{ 2, "C", "<c@x>", NULL, NULL, 0 },
		{ 3, "D", "<d@x>", "<a@x> <b@x>", NULL, 0 },
		{ 4, "B", "<b@x>", "<c@x>", NULL, 0 }, END }, "(1)(2 4 3)" },
	{ "subject: reply under original", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "Hello", "<a@x>", NULL, NULL, 0 },
		{ 2, "Re: hello", "<b@x>", NULL, NULL, 0 }, END }, "(1 2)" },
	{ "subject: reply first", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "Re: Hello", "<a@x>", NULL, NULL, 0 },
		{ 2, "Hello", "<b@x>", NULL, NULL, 0 }, END }, "(2 1)" },
	{ "subject: two originals", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "[list] Hello", "<a@x>", NULL, NULL, 0 },
		{ 2, "hello", "<b@x>", NULL, NULL, 0 }, END }, "((1)(2))" },
	{ "subject: empty not joined", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "", "<a@x>", NULL, NULL, 0 },
		{ 2, "Re:", "<b@x>", NULL, NULL, 0 }, END }, "(1)(2)" },
	{ "date order, ties by sequence", MT_IMAP_THREAD_REFERENCES, {
		{ 1, "s1", "<a@x>", NULL, NULL, 300 },
		{ 2, "s2", "<b@x>", NULL, NULL, 100 },
		{ 3, "s3", "<c@x>", NULL, NULL, 300 },
		{ 4, "Re: s2", "<d@x>", "<b@x>", NULL, 50 }, END }, "(2 4)(1)(3)" },
	{ "orderedsubject", MT_IMAP_THREAD_ORDEREDSUBJECT, {
		{ 1, "B", "<a@x>", NULL, NULL, 10 },
		{ 2, "a", NULL, NULL, NULL, 20 },
		{ 3, "Re: b", NULL, NULL, NULL, 5 },
		{ 4, "A", NULL, NULL, NULL, 30 },
		{ 5, "Fwd: a", NULL, NULL, NULL, 40 },
		{ 6, "c", NULL, "<a@x>", NULL, 1 }, END }, "(6)(3 1)(2 (4)(5))" },
	{ "empty", MT_IMAP_THREAD_REFERENCES, { END }, "" },
};

static char *run(enum mt_imap_thread_algorithm algorithm, const struct tmsg *t)
{
	struct mt_imap_thread_msg msgs[10];
	size_t n = 0;
	for (; t[n].id != 0; n++)
		msgs[n] = (struct mt_imap_thread_msg){
			.id = t[n].id, .order = (uint32_t)n,
			.date = t[n].date != 0 ? t[n].date : (int64_t)t[n].id,
			.subject = t[n].subject, .message_id = t[n].message_id,
			.references = t[n].references, .in_reply_to = t[n].in_reply_to,
		};
	struct mt_buf out = MT_BUF_INIT;
	mt_imap_thread(&out, algorithm, msgs, n);
	return mt_buf_steal(&out);
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = run(cases[i].algorithm, cases[i].msgs);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("%s: \"%s\", want \"%s\"", cases[i].name, got, cases[i].want);
		free(got);
	}
}

static void collect(const char *id, size_t len, void *context)
{
	struct mt_buf *b = context;
	mt_buf_append(b, id, len);
	mt_buf_append_char(b, '|');
}

static void test_msgids(void **state)
{
	(void)state;
	static const struct { const char *in, *want; } ids[] = {
		{ "<a@x> <b@y>", "a@x|b@y|" },
		{ "<a@x>\r\n\t<b\r\n @y>", "a@x|b@y|" },
		{ "junk <a@x> (c) <<b@x> <>", "a@x|b@x|" },
		{ "<unterminated", "" },
		{ NULL, "" },
	};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct mt_buf b = MT_BUF_INIT;
		mt_imap_thread_msgids(ids[i].in, collect, &b);
		assert_string_equal(mt_buf_cstr(&b), ids[i].want);
		mt_buf_free(&b);
	}
	struct mt_imap_arg arg = { .type = MT_IMAP_ARG_ATOM, .str = "references", .len = 10 };
	enum mt_imap_thread_algorithm a;
	assert_true(mt_imap_thread_algorithm_parse(&arg, &a));
	assert_int_equal(a, MT_IMAP_THREAD_REFERENCES);
	arg.str = "SUBJECT";
	arg.len = 7;
	assert_false(mt_imap_thread_algorithm_parse(&arg, &a));
}

/* Random graphs: every message once, parentheses balanced, never empty. */
static void test_random(void **state)
{
	(void)state;
	srand(5256);
	enum { N = 300 };
	static char ids[N][16], refs[N][256], subjects[N][16];
	struct mt_imap_thread_msg msgs[N];
	for (int round = 0; round < 40; round++) {
		for (int i = 0; i < N; i++) {
			snprintf(ids[i], sizeof(ids[i]), "<%d@x>", rand() % (N + N / 4));
			size_t used = 0;
			refs[i][0] = '\0';
			for (int k = rand() % 6; k > 0; k--)
				used += (size_t)snprintf(refs[i] + used, sizeof(refs[i]) - used,
							 "<%d@x> ", rand() % (N + N / 2));
			snprintf(subjects[i], sizeof(subjects[i]), "%sS%d",
				 rand() % 2 ? "Re: " : "", rand() % 20);
			msgs[i] = (struct mt_imap_thread_msg){
				.id = (uint32_t)i + 1, .order = (uint32_t)i, .date = rand() % 50,
				.subject = subjects[i], .message_id = rand() % 10 ? ids[i] : NULL,
				.references = refs[i], .in_reply_to = ids[rand() % N],
			};
		}
		for (int algorithm = 0; algorithm < 2; algorithm++) {
			struct mt_buf out = MT_BUF_INIT;
			mt_imap_thread(&out, algorithm, msgs, N);
			int seen[N + 1] = { 0 }, depth = 0;
			const char *p = mt_buf_cstr(&out);
			while (*p != '\0') {
				if (*p == '(') {
					depth++;
					assert_true(p[1] != ')');
					p++;
				} else if (*p == ')') {
					assert_true(--depth >= 0);
					p++;
				} else if (*p == ' ') {
					p++;
				} else {
					char *end;
					long v = strtol(p, &end, 10);
					assert_true(end > p && v >= 1 && v <= N);
					seen[v]++;
					p = end;
				}
			}
			assert_int_equal(depth, 0);
			for (int i = 1; i <= N; i++)
				if (seen[i] != 1)
					fail_msg("round %d: %d seen %d times", round, i, seen[i]);
			mt_buf_free(&out);
		}
	}
}

/* 100,000 messages in long reply chains (up to 256 references each, the
 * nearest ancestors last): answered, every message once. */
static void test_large(void **state)
{
	(void)state;
	enum { N = 100000 };
	struct mt_imap_thread_msg *msgs = calloc(N, sizeof(*msgs));
	char **strs = calloc(2 * N, sizeof(*strs));
	srand(100000);
	for (int i = 0; i < N; i++) {
		char id[32];
		snprintf(id, sizeof(id), "<%d@x>", i);
		strs[2 * i] = strdup(id);
		struct mt_buf refs = MT_BUF_INIT;
		/* A chain through every 10th message, 50 deep per thread. */
		for (int k = i % 500 >= 10 ? 50 : 0, a = i - 10 * k; k > 0; k--, a += 10)
			if (a >= 0)
				mt_buf_appendf(&refs, "<%d@x> ", a);
		strs[2 * i + 1] = mt_buf_steal(&refs);
		msgs[i] = (struct mt_imap_thread_msg){
			.id = (uint32_t)i + 1, .order = (uint32_t)i, .date = rand() % 100000,
			.subject = i % 3 ? "Re: topic" : "topic", .message_id = strs[2 * i],
			.references = strs[2 * i + 1],
		};
	}
	for (int algorithm = 0; algorithm < 2; algorithm++) {
		struct mt_buf out = MT_BUF_INIT;
		mt_imap_thread(&out, algorithm, msgs, N);
		size_t numbers = 0;
		for (const char *p = mt_buf_cstr(&out); *p != '\0'; p++)
			if (*p >= '0' && *p <= '9' && (p[1] < '0' || p[1] > '9'))
				numbers++;
		assert_int_equal(numbers, N);
		mt_buf_free(&out);
	}
	for (int i = 0; i < 2 * N; i++)
		free(strs[i]);
	free(strs);
	free(msgs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_msgids),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
