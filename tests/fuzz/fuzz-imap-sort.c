/* fuzz-imap-sort.c — libFuzzer target for lib-mail/imap-sort.c: the base
 * subject (RFC 5256 2.1), the i;unicode-casemap form (RFC 5051), the
 * ENVELOPE reader and the RFC 5322 date reader, which all read any
 * sender's header values; and lib-mail/imap-thread.c, THREAD's
 * REFERENCES and ORDEREDSUBJECT over records made from the input.
 *
 * Properties, beyond "no crash, no over-read, no UB":
 *  - a base subject has no tab, CR or LF, no leading or trailing space, no
 *    two spaces in a row, no trailing "(fwd)", does not begin with a
 *    "Re:" / "Fw:" / "Fwd:" leader, and, for a subject without encoded
 *    words, is its own base subject (the algorithm reached its fixpoint);
 *  - the casemap form is idempotent and ignores ASCII case;
 *  - an ENVELOPE read keeps every string inside the text it unescaped;
 *  - a date read is within the years 0..9999 give or take a day;
 *  - THREAD (both algorithms) over the input's lines as records
 *    ("subject|message-id|references|in-reply-to|date" each) names every
 *    message exactly once, in balanced parentheses with no empty list.
 *
 * Input: the text itself (and its lines as thread records).
 * Trust boundary: message header octets (any sender). */
#include "fuzz.h"

#include "buf.h"
#include "imap-sort.h"
#include "imap-thread.h"

#include <stdlib.h>

#include <ctype.h>
#include <string.h>
#include <strings.h>

static void check_base(const char *text, size_t size)
{
	struct mt_buf base = MT_BUF_INIT, again = MT_BUF_INIT;
	bool reply;
	mt_imap_base_subject(&base, text, size, &reply);
	const char *b = mt_buf_cstr(&base);
	for (size_t i = 0; i < base.len; i++) {
		FUZZ_CHECK(b[i] != '\t' && b[i] != '\r' && b[i] != '\n', "white space kept");
		FUZZ_CHECK(!(b[i] == ' ' && (i == 0 || i + 1 == base.len || b[i + 1] == ' ')),
			   "a space at an end or doubled: \"%s\"", b);
	}
	FUZZ_CHECK(base.len < 5 || strncasecmp(b + base.len - 5, "(fwd)", 5) != 0,
		   "a trailing (fwd): \"%s\"", b);
	FUZZ_CHECK(!(base.len >= 3 && strncasecmp(b, "re:", 3) == 0) &&
		   !(base.len >= 3 && strncasecmp(b, "fw:", 3) == 0) &&
		   !(base.len >= 4 && strncasecmp(b, "fwd:", 4) == 0),
		   "a leader left: \"%s\"", b);
	if (memmem(text, size, "=?", 2) == NULL && memchr(text, '\0', size) == NULL) {
		bool reply2;
		mt_imap_base_subject(&again, base.data != NULL ? base.data : "", base.len, &reply2);
		FUZZ_CHECK(again.len == base.len && memcmp(mt_buf_cstr(&again), b, base.len) == 0,
			   "not a fixpoint: \"%s\" -> \"%s\"", b, mt_buf_cstr(&again));
		FUZZ_CHECK(!reply2, "the base subject reads as a reply: \"%s\"", b);
	}
	mt_buf_free(&base);
	mt_buf_free(&again);
}

static void check_casemap(const char *text, size_t size)
{
	struct mt_buf a = MT_BUF_INIT, b = MT_BUF_INIT, upper = MT_BUF_INIT, c = MT_BUF_INIT;
	mt_imap_casemap(&a, text, size);
	mt_imap_casemap(&b, a.data != NULL ? a.data : "", a.len);
	FUZZ_CHECK(a.len == b.len && memcmp(mt_buf_cstr(&a), mt_buf_cstr(&b), a.len) == 0,
		   "casemap is not idempotent");
	for (size_t i = 0; i < size; i++)
		mt_buf_append_char(&upper, (char)toupper((unsigned char)text[i]));
	mt_imap_casemap(&c, upper.data != NULL ? upper.data : "", upper.len);
	FUZZ_CHECK(a.len == c.len && memcmp(mt_buf_cstr(&a), mt_buf_cstr(&c), a.len) == 0,
		   "ASCII case changes the form");
	mt_buf_free(&a);
	mt_buf_free(&b);
	mt_buf_free(&upper);
	mt_buf_free(&c);
}

static void check_str(const struct mt_imap_envelope *e, const struct mt_imap_envelope_str *s)
{
	FUZZ_CHECK(s->nil || s->off + s->len <= e->text.len, "a string outside the text");
}

static void check_envelope(const char *text, size_t size)
{
	struct mt_imap_envelope e = { 0 };
	if (mt_imap_envelope_read(&e, text, size)) {
		FUZZ_CHECK(e.text.len <= size, "more text than input");
		check_str(&e, &e.date);
		check_str(&e, &e.subject);
		check_str(&e, &e.message_id);
		check_str(&e, &e.in_reply_to);
		const struct mt_imap_envelope_addr *addrs[] = { &e.from, &e.to, &e.cc };
		for (size_t i = 0; i < 3; i++) {
			check_str(&e, &addrs[i]->name);
			check_str(&e, &addrs[i]->mailbox);
			check_str(&e, &addrs[i]->host);
		}
	}
	mt_imap_envelope_free(&e);
}

#define THREAD_MSGS_MAX 64

/* Split s at c (in place): the pieces, at most max. */
static size_t split(char *s, char c, char **pieces, size_t max)
{
	size_t n = 0;
	while (n < max) {
		pieces[n++] = s;
		char *e = strchr(s, c);
		if (e == NULL)
			break;
		*e = '\0';
		s = e + 1;
	}
	return n;
}

static void check_thread(const char *text, size_t size)
{
	char *copy = malloc(size + 1);
	memcpy(copy, text, size);
	copy[size] = '\0';
	char *lines[THREAD_MSGS_MAX];
	size_t n = split(copy, '\n', lines, THREAD_MSGS_MAX);
	struct mt_imap_thread_msg msgs[THREAD_MSGS_MAX];
	for (size_t i = 0; i < n; i++) {
		char *f[5] = { NULL, NULL, NULL, NULL, NULL };
		split(lines[i], '|', f, 5);
		msgs[i] = (struct mt_imap_thread_msg){
			.id = (uint32_t)i + 1, .order = (uint32_t)i,
			.date = f[4] != NULL ? strtol(f[4], NULL, 10) : 0,
			.subject = f[0], .message_id = f[1], .references = f[2],
			.in_reply_to = f[3],
		};
	}
	for (int algorithm = 0; algorithm < 2; algorithm++) {
		struct mt_buf out = MT_BUF_INIT;
		mt_imap_thread(&out, (enum mt_imap_thread_algorithm)algorithm, msgs, n);
		unsigned int seen[THREAD_MSGS_MAX + 1] = { 0 };
		int depth = 0;
		for (const char *p = mt_buf_cstr(&out); *p != '\0';) {
			if (*p == '(') {
				FUZZ_CHECK(p[1] != ')', "an empty thread list");
				depth++;
				p++;
			} else if (*p == ')') {
				FUZZ_CHECK(--depth >= 0, "unbalanced");
				p++;
			} else if (*p == ' ') {
				p++;
			} else {
				char *end;
				long v = strtol(p, &end, 10);
				FUZZ_CHECK(end > p && v >= 1 && (size_t)v <= n, "a bad number");
				seen[v]++;
				p = end;
			}
		}
		FUZZ_CHECK(depth == 0, "unbalanced at the end");
		for (size_t i = 1; i <= n; i++)
			FUZZ_CHECK(seen[i] == 1, "message %zu seen %u times", i, seen[i]);
		mt_buf_free(&out);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	check_base(text, size);
	check_casemap(text, size);
	check_envelope(text, size);
	check_thread(text, size);
	int64_t t;
	if (mt_imap_sort_date_parse(text, size, &t))
		FUZZ_CHECK(t >= -62167305600 - 86400 && t <= 253402300800 + 86400,
			   "a date out of range: %lld", (long long)t);
	return 0;
}
