/* test-mime-scan.c — unit tests for lib-mail/mime-scan.c and
 * imap-bodystructure.c: messages shaped as real mail is (plain text,
 * multipart/alternative with preamble and epilogue, a mixed message with
 * an attachment and a forwarded message/rfc822, multipart/digest,
 * LF-only lines) scanned into the exact BODYSTRUCTURE, BODY and ENVELOPE
 * strings RFC 9051 7.5.2 gives them, with part offsets that cut out the
 * right octets for each section number; the same result whatever the
 * pieces the message is fed in; and malformed MIME (a boundary never
 * closed, a header never ended, a multipart without a boundary or without
 * parts, nesting and part counts past the limits) given a defined
 * structure. Damaged structure records are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "imap-bodystructure.h"
#include "mime-scan.h"

/* Scan msg in pieces of step octets (0: all at once) into a record. */
static void record_of(struct mt_buf *record, const char *msg, size_t len, size_t step)
{
	struct mt_mime_scan *scan = mt_mime_scan_new();
	if (step == 0)
		mt_mime_scan_feed(scan, msg, len);
	else
		for (size_t i = 0; i < len; i += step)
			mt_mime_scan_feed(scan, msg + i, len - i < step ? len - i : step);
	mt_mime_scan_finish(scan);
	unsigned int count;
	const struct mt_mime_entity *e = mt_mime_scan_entities(scan, &count);
	mt_mime_record_write(record, e, count);
	mt_mime_scan_free(&scan);
	assert_null(scan);
}

struct scanned {
	struct mt_buf raw;
	struct mt_mime_record record;
	const char *msg;
};

static void scan(struct scanned *s, const char *msg)
{
	mt_buf_init(&s->raw);
	s->msg = msg;
	record_of(&s->raw, msg, strlen(msg), 0);
	assert_true(mt_mime_record_read(&s->record, s->raw.data, s->raw.len));
	/* Fed one octet, or seven, at a time: the same record. */
	for (size_t step = 1; step < 10; step += 6) {
		struct mt_buf again = MT_BUF_INIT;
		record_of(&again, msg, strlen(msg), step);
		assert_int_equal(again.len, s->raw.len);
		assert_memory_equal(again.data, s->raw.data, s->raw.len);
		mt_buf_free(&again);
	}
}

static void scanned_free(struct scanned *s)
{
	mt_buf_free(&s->raw);
}

static void bodystructure_is(const struct scanned *s, const char *expected)
{
	char *got = strndup(s->record.bodystructure, s->record.bodystructure_len);
	assert_string_equal(got, expected);
	free(got);
}

static void body_is(const struct scanned *s, const char *expected)
{
	char *got = strndup(s->record.body, s->record.body_len);
	assert_string_equal(got, expected);
	free(got);
}

static void envelope_is(const struct scanned *s, const char *expected)
{
	char *got = strndup(s->record.envelope, s->record.envelope_len);
	assert_string_equal(got, expected);
	free(got);
}

/* The part a section number ("1.2", "" for the message) names. */
static bool find_part(const struct scanned *s, const char *section, struct mt_mime_part *part)
{
	uint32_t path[16];
	unsigned int depth = 0;
	for (const char *p = section; *p != '\0'; depth++) {
		path[depth] = (uint32_t)strtoul(p, (char **)&p, 10);
		if (*p == '.')
			p++;
	}
	return mt_mime_record_find(&s->record, path, depth, part);
}

/* The body of the part a section number names, or NULL for none. */
static char *part_body(const struct scanned *s, const char *section)
{
	struct mt_mime_part part;
	if (!find_part(s, section, &part))
		return NULL;
	return strndup(s->msg + part.body_offset, part.end_offset - part.body_offset);
}

static char *part_header(const struct scanned *s, const char *section)
{
	struct mt_mime_part part;
	if (!find_part(s, section, &part))
		return NULL;
	return strndup(s->msg + part.header_offset, part.body_offset - part.header_offset);
}

static void part_is(const struct scanned *s, const char *section, const char *expected)
{
	char *got = part_body(s, section);
	if (expected == NULL) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, expected);
	free(got);
}

static void test_plain(void **state)
{
	(void)state;
	struct scanned s;
	scan(&s, "Date: Mon, 7 Feb 1994 21:52:25 -0800\r\n"
		 "From: Fred Foobar <foobar@Blurdybloop.example>\r\n"
		 "Subject: afternoon meeting\r\n"
		 "To: mooch@owatagu.example\r\n"
		 "Message-Id: <B27397-0100000@Blurdybloop.example>\r\n"
		 "\r\n"
		 "Hello Joe, do you think we can meet at 3:30 tomorrow?\r\n");
	bodystructure_is(&s, "(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 55 1 NIL NIL NIL NIL)");
	body_is(&s, "(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 55 1)");
	envelope_is(&s, "(\"Mon, 7 Feb 1994 21:52:25 -0800\" \"afternoon meeting\" "
		    "((\"Fred Foobar\" NIL \"foobar\" \"Blurdybloop.example\")) "
		    "((\"Fred Foobar\" NIL \"foobar\" \"Blurdybloop.example\")) "
		    "((\"Fred Foobar\" NIL \"foobar\" \"Blurdybloop.example\")) "
		    "((NIL NIL \"mooch\" \"owatagu.example\")) NIL NIL NIL "
		    "\"<B27397-0100000@Blurdybloop.example>\")");
	part_is(&s, "1", "Hello Joe, do you think we can meet at 3:30 tomorrow?\r\n");
	part_is(&s, "2", NULL);
	part_is(&s, "1.1", NULL);
	part_is(&s, "0", NULL);
	char *h = part_header(&s, "");
	assert_int_equal(strlen(h), strstr(s.msg, "\r\n\r\n") + 4 - s.msg);
	free(h);
	scanned_free(&s);
}

static const char alternative[] =
	"From: a@example.test\r\n"
	"Subject: =?utf-8?q?caf=C3=A9?=\r\n"
	"MIME-Version: 1.0\r\n"
	"Content-Type: multipart/alternative;\r\n"
	"\tboundary=\"==XX==\"\r\n"
	"\r\n"
	"This is a multi-part message in MIME format.\r\n"
	"--==XX==\r\n"
	"Content-Type: text/plain; charset=\"utf-8\"\r\n"
	"Content-Transfer-Encoding: 8bit\r\n"
	"\r\n"
	"plain\r\n"
	"text\r\n"
	"--==XX==  \r\n"
	"Content-Type: text/html; charset=utf-8\r\n"
	"Content-Transfer-Encoding: quoted-printable\r\n"
	"\r\n"
	"<p>caf=C3=A9</p>\r\n"
	"--==XX==--\r\n"
	"epilogue\r\n";

static void test_alternative(void **state)
{
	(void)state;
	struct scanned s;
	scan(&s, alternative);
	bodystructure_is(&s, "((\"text\" \"plain\" (\"charset\" \"utf-8\") NIL NIL \"8bit\" 11 2 NIL NIL NIL NIL)"
			 "(\"text\" \"html\" (\"charset\" \"utf-8\") NIL NIL \"quoted-printable\" 16 1 NIL NIL NIL NIL)"
			 " \"alternative\" (\"boundary\" \"==XX==\") NIL NIL NIL)");
	body_is(&s, "((\"text\" \"plain\" (\"charset\" \"utf-8\") NIL NIL \"8bit\" 11 2)"
		"(\"text\" \"html\" (\"charset\" \"utf-8\") NIL NIL \"quoted-printable\" 16 1) \"alternative\")");
	envelope_is(&s, "(NIL \"=?utf-8?q?caf=C3=A9?=\" ((NIL NIL \"a\" \"example.test\")) "
		    "((NIL NIL \"a\" \"example.test\")) ((NIL NIL \"a\" \"example.test\")) "
		    "NIL NIL NIL NIL NIL)");
	part_is(&s, "1", "plain\r\ntext");
	part_is(&s, "2", "<p>caf=C3=A9</p>");
	part_is(&s, "3", NULL);
	char *h = part_header(&s, "2");
	assert_string_equal(h, "Content-Type: text/html; charset=utf-8\r\n"
			    "Content-Transfer-Encoding: quoted-printable\r\n\r\n");
	free(h);
	struct mt_mime_part part;
	uint32_t two = 2;
	assert_true(mt_mime_record_find(&s.record, &two, 1, &part));
	assert_int_equal(part.encoding, MT_MIME_ENC_QUOTED_PRINTABLE);
	assert_int_equal(part.kind, MT_MIME_LEAF);
	scanned_free(&s);
}

static const char mixed[] =
	"From: \"Joe Q. Public\" <john.q.public@example.com>\r\n"
	"To: Mary Smith <mary@x.test>, jdoe@one.test\r\n"
	"Cc: Undisclosed recipients:;\r\n"
	"Content-Type: multipart/mixed; boundary=outer\r\n"
	"\r\n"
	"--outer\r\n"
	"\r\n"
	"see attached\r\n"
	"--outer\r\n"
	"Content-Type: application/pdf; name=\"report.pdf\"\r\n"
	"Content-Transfer-Encoding: base64\r\n"
	"Content-Disposition: attachment; filename=\"report.pdf\"\r\n"
	"Content-ID: <part2@x.test>\r\n"
	"Content-Description: the report\r\n"
	"Content-Language: en, de\r\n"
	"\r\n"
	"JVBERi0xLjQK\r\n"
	"--outer\r\n"
	"Content-Type: message/rfc822\r\n"
	"\r\n"
	"From: b@y.test\r\n"
	"Subject: inner\r\n"
	"Content-Type: multipart/alternative; boundary=inner\r\n"
	"\r\n"
	"--inner\r\n"
	"Content-Type: text/plain\r\n"
	"\r\n"
	"in plain\r\n"
	"--inner\r\n"
	"Content-Type: text/html\r\n"
	"\r\n"
	"<b>in</b>\r\n"
	"--inner--\r\n"
	"\r\n"
	"--outer--\r\n";

static void test_mixed(void **state)
{
	(void)state;
	struct scanned s;
	scan(&s, mixed);
	part_is(&s, "1", "see attached");
	part_is(&s, "2", "JVBERi0xLjQK");
	part_is(&s, "3.1", "in plain");
	part_is(&s, "3.2", "<b>in</b>");
	part_is(&s, "3.3", NULL);
	part_is(&s, "4", NULL);
	char *inner = part_body(&s, "3");
	assert_non_null(inner);
	assert_true(strncmp(inner, "From: b@y.test\r\n", 16) == 0);
	assert_true(strcmp(inner + strlen(inner) - 11, "--inner--\r\n") == 0);
	free(inner);
	/* 3.HEADER is the encapsulated message's header */
	uint32_t three = 3;
	struct mt_mime_part part, message;
	assert_true(mt_mime_record_find(&s.record, &three, 1, &part));
	assert_int_equal(part.kind, MT_MIME_MESSAGE);
	assert_true(mt_mime_record_message(&s.record, &part, &message));
	assert_int_equal(message.header_offset, part.body_offset);
	assert_true(strncmp(s.msg + message.body_offset, "--inner\r\n", 9) == 0);
	uint32_t two = 2;
	assert_true(mt_mime_record_find(&s.record, &two, 1, &part));
	assert_int_equal(part.encoding, MT_MIME_ENC_BASE64);
	assert_false(mt_mime_record_message(&s.record, &part, &message));

	bodystructure_is(&s,
		"((\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 12 1 NIL NIL NIL NIL)"
		"(\"application\" \"pdf\" (\"name\" \"report.pdf\") \"<part2@x.test>\" \"the report\" "
		"\"base64\" 12 NIL (\"attachment\" (\"filename\" \"report.pdf\")) (\"en\" \"de\") NIL)"
		"(\"message\" \"rfc822\" NIL NIL NIL \"7bit\" 192 "
		"(NIL \"inner\" ((NIL NIL \"b\" \"y.test\")) ((NIL NIL \"b\" \"y.test\")) "
		"((NIL NIL \"b\" \"y.test\")) NIL NIL NIL NIL NIL) "
		"((\"text\" \"plain\" NIL NIL NIL \"7bit\" 8 1 NIL NIL NIL NIL)"
		"(\"text\" \"html\" NIL NIL NIL \"7bit\" 9 1 NIL NIL NIL NIL) \"alternative\" "
		"(\"boundary\" \"inner\") NIL NIL NIL) 13 NIL NIL NIL NIL)"
		" \"mixed\" (\"boundary\" \"outer\") NIL NIL NIL)");
	envelope_is(&s, "(NIL NIL ((\"Joe Q. Public\" NIL \"john.q.public\" \"example.com\")) "
		    "((\"Joe Q. Public\" NIL \"john.q.public\" \"example.com\")) "
		    "((\"Joe Q. Public\" NIL \"john.q.public\" \"example.com\")) "
		    "((\"Mary Smith\" NIL \"mary\" \"x.test\")(NIL NIL \"jdoe\" \"one.test\")) "
		    "((NIL NIL \"Undisclosed recipients\" NIL)(NIL NIL NIL NIL)) NIL NIL NIL)");
	scanned_free(&s);
}

static void test_digest_and_lf(void **state)
{
	(void)state;
	struct scanned s;
	/* LF-only lines; a digest's parts default to message/rfc822 */
	scan(&s, "Content-Type: multipart/digest; boundary=d\n"
		 "\n"
		 "--d\n"
		 "\n"
		 "Subject: one\n"
		 "\n"
		 "body one\n"
		 "--d\n"
		 "Content-Type: text/plain\n"
		 "\n"
		 "not a message\n"
		 "--d--\n");
	part_is(&s, "1", "Subject: one\n\nbody one");
	part_is(&s, "1.1", "body one");
	part_is(&s, "2", "not a message");
	bodystructure_is(&s,
		"((\"message\" \"rfc822\" NIL NIL NIL \"7bit\" 22 "
		"(NIL \"one\" NIL NIL NIL NIL NIL NIL NIL NIL) "
		"(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 8 1 NIL NIL NIL NIL) 3 "
		"NIL NIL NIL NIL)"
		"(\"text\" \"plain\" NIL NIL NIL \"7bit\" 13 1 NIL NIL NIL NIL) \"digest\" "
		"(\"boundary\" \"d\") NIL NIL NIL)");
	scanned_free(&s);
}

static void test_malformed(void **state)
{
	(void)state;
	struct scanned s;
	/* a boundary never closed: the parts end with the message */
	scan(&s, "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nfirst\r\n--b\r\n\r\nlast");
	part_is(&s, "1", "first");
	part_is(&s, "2", "last");
	bodystructure_is(&s, "((\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 5 1 NIL NIL NIL NIL)"
			 "(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 4 1 NIL NIL NIL NIL)"
			 " \"mixed\" (\"boundary\" \"b\") NIL NIL NIL)");
	scanned_free(&s);

	/* a header that never ends: all header, an empty body */
	scan(&s, "Subject: x\r\nContent-Type: text/plain");
	bodystructure_is(&s, "(\"text\" \"plain\" NIL NIL NIL \"7bit\" 0 0 NIL NIL NIL NIL)");
	part_is(&s, "1", "");
	scanned_free(&s);

	/* no boundary: a leaf, shown as octets */
	scan(&s, "Content-Type: multipart/mixed\r\n\r\n--b\r\nx\r\n");
	bodystructure_is(&s, "(\"application\" \"octet-stream\" NIL NIL NIL \"7bit\" 8 NIL NIL NIL NIL)");
	scanned_free(&s);

	/* a multipart without parts: one empty one */
	scan(&s, "Content-Type: multipart/mixed; boundary=b\r\n\r\nno delimiter here\r\n");
	bodystructure_is(&s, "((\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 0 0 NIL NIL NIL NIL)"
			 " \"mixed\" (\"boundary\" \"b\") NIL NIL NIL)");
	part_is(&s, "1", NULL);
	scanned_free(&s);

	/* garbage Content-Type and a line without a colon in the header */
	scan(&s, "Content-Type: ;;;===\"\r\nno colon line\r\nContent-Transfer-Encoding: x-uuencode\r\n\r\nb\r\n");
	bodystructure_is(&s, "(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"x-uuencode\" 3 1 NIL NIL NIL NIL)");
	uint32_t one = 1;
	struct mt_mime_part part;
	assert_true(mt_mime_record_find(&s.record, &one, 1, &part));
	assert_int_equal(part.encoding, MT_MIME_ENC_UNKNOWN);
	scanned_free(&s);

	/* 8-bit and NUL octets in the header: a literal, never broken syntax */
	static const char eight[] = "Subject: caf\xc3\xa9 \x01\r\n\r\nx";
	scan(&s, eight);
	assert_non_null(strstr(s.record.envelope, "{7}\r\ncaf\xc3\xa9 \x01"));
	scanned_free(&s);

	/* a message/rfc822 part with nothing in it */
	scan(&s, "Content-Type: message/rfc822\r\n\r\n");
	bodystructure_is(&s, "(\"message\" \"rfc822\" NIL NIL NIL \"7bit\" 0 "
			 "(NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL) "
			 "(\"text\" \"plain\" (\"charset\" \"us-ascii\") NIL NIL \"7bit\" 0 0 NIL NIL NIL NIL) 0 "
			 "NIL NIL NIL NIL)");
	scanned_free(&s);
}

/* Nesting past MT_MIME_DEPTH_MAX and parts past MT_MIME_PARTS_MAX. */
static void test_limits(void **state)
{
	(void)state;
	struct mt_buf msg = MT_BUF_INIT;
	for (int i = 0; i < 40; i++)
		mt_buf_appendf(&msg, "Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n", i, i);
	mt_buf_append_str(&msg, "\r\ndeep\r\n");
	for (int i = 39; i >= 0; i--)
		mt_buf_appendf(&msg, "--b%d--\r\n", i);
	struct scanned s;
	scan(&s, mt_buf_cstr(&msg));
	assert_true(s.record.count <= MT_MIME_DEPTH_MAX);
	/* the innermost kept multipart holds the rest as one octet leaf */
	assert_non_null(strstr(s.record.bodystructure, "\"application\" \"octet-stream\""));
	scanned_free(&s);

	mt_buf_reset(&msg);
	mt_buf_append_str(&msg, "Content-Type: multipart/mixed; boundary=b\r\n\r\n");
	for (int i = 0; i < MT_MIME_PARTS_MAX + 50; i++)
		mt_buf_append_str(&msg, "--b\r\n\r\nx\r\n");
	mt_buf_append_str(&msg, "--b--\r\n");
	scan(&s, mt_buf_cstr(&msg));
	assert_int_equal(s.record.count, MT_MIME_PARTS_MAX);
	uint32_t last = MT_MIME_PARTS_MAX - 1;
	char *body = part_body(&s, "999");
	assert_non_null(body);
	assert_int_equal(strlen(body), 3 + 51 * strlen("--b\r\n\r\nx\r\n") - 2);
	free(body);
	struct mt_mime_part part;
	assert_false(mt_mime_record_find(&s.record, &(uint32_t){ last + 1 }, 1, &part));
	scanned_free(&s);
	mt_buf_free(&msg);
}

static void test_damaged_record(void **state)
{
	(void)state;
	struct mt_buf raw = MT_BUF_INIT;
	record_of(&raw, mixed, strlen(mixed), 0);
	struct mt_mime_record record;
	for (size_t len = 0; len < raw.len; len++)
		assert_false(mt_mime_record_read(&record, raw.data, len));
	assert_true(mt_mime_record_read(&record, raw.data, raw.len));
	/* a parent after its child */
	raw.data[6 + 32 + 7] = 9;
	assert_false(mt_mime_record_read(&record, raw.data, raw.len));
	raw.data[0] = 'X';
	assert_false(mt_mime_record_read(&record, raw.data, raw.len));
	mt_buf_free(&raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_alternative),
		cmocka_unit_test(test_mixed),
		cmocka_unit_test(test_digest_and_lf),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_damaged_record),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
