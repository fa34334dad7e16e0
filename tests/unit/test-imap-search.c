/* test-imap-search.c — lib-mail's SEARCH criteria: read from commands the
 * real imap-parse reads, matched against messages made here: every key,
 * AND / OR / NOT and lists, the three-valued answers (a criterion decided
 * without reading a header or body says so), header fields folded over
 * lines, the Date: field's day, INTERNALDATE days, CHARSET, and the
 * errors (unknown keys, bad dates, nesting beyond the limit); FROM / TO /
 * CC / BCC over the envelope's addresses (comments, folding, groups); the
 * SEARCH and ESEARCH answers with the MODSEQ of what they return (RFC
 * 4731 3.2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "imap-parse.h"
#include "imap-search.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static struct mt_imap_parser parser;
static const struct mt_imap_search_limits limits = { .depth_max = 8, .ranges_max = 64 };

static int setup(void **state)
{
	(void)state;
	const struct mt_imap_limits l = {
		.line_max = 8192, .literal_max = 65536, .command_max = 1 << 20,
		.depth_max = 32, .args_max = 1024, .literal_plus = true,
	};
	mt_imap_parser_init(&parser, &l);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mt_imap_parser_free(&parser);
	return 0;
}

/* "a SEARCH <criteria>" read into s; false as the reader says. */
static bool parse(const char *criteria, struct mt_imap_search *s, bool *badcharset,
		  const char **error)
{
	char text[4096];
	snprintf(text, sizeof(text), "a SEARCH %s\r\n", criteria);
	size_t used;
	mt_imap_parser_reset(&parser);
	assert_int_equal(mt_imap_parser_feed(&parser, text, strlen(text), &used),
			 MT_IMAP_PARSE_DONE);
	return mt_imap_search_parse(s, parser.command.args, parser.command.count, &limits,
				    badcharset, error);
}

static bool has_keyword(void *context, const char *name)
{
	const char *const *kw = context;
	for (; *kw != NULL; kw++)
		if (strcasecmp(*kw, name) == 0)
			return true;
	return false;
}

static const char *const KEYWORDS[] = { "$Work", "urgent", NULL };
static const char HEADER[] =
	"Return-Path: <a@x>\r\n"
	"Date: Thu, 3 Dec 2026 11:43:33 +0100\r\n"
	"From: Alice Example <alice@example.org>\r\n"
	"To: bob@example.net,\r\n"
	"\tcarol@Example.COM\r\n"
	"Subject: Quarterly report\r\n"
	"X-Spam: no\r\n"
	"\r\n";
static const char BODY[] = "Hello Bob,\r\nthe numbers are in. Revenue UP.\r\n";

/* Message 3 of 5, uid 30 of 50: \Seen \Flagged, 2000 octets, arrived
 * 2026-12-02 23:30 UTC. */
static struct mt_imap_search_msg msg(bool header, bool body)
{
	return (struct mt_imap_search_msg){
		.seq = 3, .uid = 30, .largest_seq = 5, .largest_uid = 50,
		.flags = MT_IMAP_SEARCH_SEEN | MT_IMAP_SEARCH_FLAGGED, .size = 2000,
		.internaldate = 1796254200,	/* 2026-12-02T23:30:00Z */
		.modseq = 620,
		.keyword = has_keyword, .context = (void *)KEYWORDS,
		.header = header ? HEADER : NULL, .header_len = header ? strlen(HEADER) : 0,
		.body = body ? BODY : NULL, .body_len = body ? strlen(BODY) : 0,
	};
}

/* The answer with everything given; and with nothing, what it needs. */
static enum mt_imap_search_match match(const char *criteria, bool header, bool body)
{
	struct mt_imap_search s;
	bool bad;
	const char *error;
	if (!parse(criteria, &s, &bad, &error))
		fail_msg("%s: %s", criteria, error);
	struct mt_imap_search_msg m = msg(header, body);
	enum mt_imap_search_match r = mt_imap_search_match(&s, &m);
	mt_imap_search_free(&s);
	return r;
}

static bool yes(const char *criteria)
{
	enum mt_imap_search_match r = match(criteria, true, true);
	assert_true(r == MT_IMAP_SEARCH_YES || r == MT_IMAP_SEARCH_NO);
	return r == MT_IMAP_SEARCH_YES;
}

static void test_flags_sizes_sets(void **state)
{
	(void)state;
	assert_true(yes("ALL"));
	assert_true(yes("SEEN") && yes("FLAGGED") && yes("UNANSWERED") && yes("UNDELETED"));
	assert_false(yes("UNSEEN") || yes("DELETED") || yes("DRAFT") || yes("ANSWERED"));
	assert_true(yes("OLD") && !yes("NEW") && !yes("RECENT"));
	assert_true(yes("KEYWORD $work") && yes("UNKEYWORD $Junk"));
	assert_false(yes("KEYWORD $Junk") || yes("UNKEYWORD urgent"));
	assert_true(yes("LARGER 1999") && !yes("LARGER 2000"));
	assert_true(yes("SMALLER 2001") && !yes("SMALLER 2000"));
	assert_true(yes("3") && yes("1:3") && yes("2,4:*,3") && !yes("4:*") && yes("*:3"));
	assert_true(yes("UID 30") && yes("UID 1:30") && !yes("UID 31:*"));
	assert_true(yes("UID *:30") && !yes("UID 31"));
	/* RFC 7162 3.1.5, with and without an entry. */
	assert_true(yes("MODSEQ 620") && !yes("MODSEQ 621"));
	assert_true(yes("MODSEQ \"/flags/\\\\draft\" all 600"));
}

static void test_logic(void **state)
{
	(void)state;
	assert_true(yes("SEEN FLAGGED LARGER 10"));
	assert_false(yes("SEEN DELETED"));
	assert_true(yes("OR DELETED SEEN") && !yes("OR DELETED DRAFT"));
	assert_true(yes("NOT DELETED") && !yes("NOT SEEN"));
	assert_true(yes("(SEEN (FLAGGED LARGER 1)) NOT (OR DELETED DRAFT)"));
	assert_true(yes("OR (DELETED SEEN) (UID 30 NOT DRAFT)"));
	assert_false(yes("NOT (SEEN FLAGGED)"));
}

static void test_dates(void **state)
{
	(void)state;
	/* INTERNALDATE: 2026-12-02 in UTC. */
	assert_true(yes("ON 2-Dec-2026") && !yes("ON 3-Dec-2026"));
	assert_true(yes("SINCE 2-Dec-2026") && !yes("SINCE 3-Dec-2026"));
	assert_true(yes("BEFORE 3-Dec-2026") && !yes("BEFORE 2-Dec-2026"));
	assert_true(yes("SINCE \"01-Jan-1970\""));
	/* Date: Thu, 3 Dec 2026 (its own day, the zone disregarded). */
	assert_true(yes("SENTON 3-Dec-2026") && !yes("SENTON 2-Dec-2026"));
	assert_true(yes("SENTSINCE 3-Dec-2026") && !yes("SENTSINCE 4-Dec-2026"));
	assert_true(yes("SENTBEFORE 4-Dec-2026") && !yes("SENTBEFORE 3-Dec-2026"));
}

static void test_text(void **state)
{
	(void)state;
	assert_true(yes("FROM alice") && yes("FROM EXAMPLE.ORG") && !yes("FROM bob"));
	/* A folded To: is one value. */
	assert_true(yes("TO carol@example.com") && yes("TO \"net,\tcarol\""));
	assert_true(yes("SUBJECT quarterly") && !yes("SUBJECT annual"));
	assert_false(yes("CC bob") || yes("BCC bob"));
	assert_true(yes("HEADER X-Spam no") && yes("HEADER x-spam \"\"") &&
		    !yes("HEADER X-Other \"\""));
	assert_true(yes("BODY revenue") && !yes("BODY quarterly"));
	assert_true(yes("TEXT quarterly") && yes("TEXT revenue") && !yes("TEXT missing"));
	/* A literal string, an 8-bit one. */
	assert_true(yes("BODY {7+}\r\nNUMBERS"));
	assert_true(yes("CHARSET UTF-8 SUBJECT report"));
}

/* criteria against a message whose header is header (no body). */
static bool header_yes(const char *criteria, const char *header)
{
	struct mt_imap_search s;
	bool bad;
	const char *error;
	if (!parse(criteria, &s, &bad, &error))
		fail_msg("%s: %s", criteria, error);
	struct mt_imap_search_msg m = msg(false, false);
	m.header = header;
	m.header_len = strlen(header);
	m.body = "";
	enum mt_imap_search_match r = mt_imap_search_match(&s, &m);
	mt_imap_search_free(&s);
	assert_true(r == MT_IMAP_SEARCH_YES || r == MT_IMAP_SEARCH_NO);
	return r == MT_IMAP_SEARCH_YES;
}

static void test_addresses(void **state)
{
	(void)state;
	/* RFC 9051 6.4.4: FROM is the envelope's From, whose addr-spec has
	 * no comments or folding whitespace (RFC 5322 3.4.1's CFWS). */
	const char *commented = "From: <user (c)@ (c) domain.org>\r\n\r\n";
	assert_true(header_yes("FROM user@domain.org", commented));
	assert_true(header_yes("FROM USER@Domain.ORG", commented));
	assert_true(header_yes("FROM domain.org", commented));
	assert_false(header_yes("FROM other@domain.org", commented));
	/* The raw text still: a comment, and "user (c)@" as written. */
	assert_true(header_yes("FROM \"(c)@\"", commented));
	/* Folded, quoted local part, dots with CFWS, a display name as a
	 * quoted string with escapes; To, Cc and Bcc alike. */
	const char *h =
		"From: \"Smith, \\\"J\\\"\" <john . smith@example.org>\r\n"
		"To: a@x.test,\r\n"
		"\t\"b c\"@y.test\r\n"
		"Cc: Team: d@z.test (Dee), e@z.test;\r\n"
		"Bcc: f @ (at) w.test\r\n"
		"\r\n";
	assert_true(header_yes("FROM john.smith@example.org", h));
	assert_true(header_yes("FROM \"Smith, \\\"J\\\"\"", h));	/* the name */
	assert_true(header_yes("FROM smith", h));
	assert_true(header_yes("TO \"\\\"b c\\\"@y.test\"", h));
	assert_true(header_yes("CC d@z.test", h) && header_yes("CC dee", h));
	assert_true(header_yes("BCC f@w.test", h));
	assert_false(header_yes("TO d@z.test", h) || header_yes("FROM f@w.test", h));
	/* HEADER From stays a substring of the field as written. */
	assert_false(header_yes("HEADER From user@domain.org", commented));
	/* A needle over two addresses is not found in the joined list. */
	assert_false(header_yes("CC d@z.teste@z.test", h));
}

/* The answers' MODSEQ: of the messages returned (RFC 4731 3.2). */
static void test_answers(void **state)
{
	(void)state;
	const uint32_t ids[] = { 2, 5, 9 };
	const uint64_t modseqs[] = { 40, 700, 12 };
	static const struct {
		unsigned int returns;
		const char *want;
	} cases[] = {
		{ MT_IMAP_SEARCH_RETURN_MIN, " MIN 2 MODSEQ 40" },
		{ MT_IMAP_SEARCH_RETURN_MAX, " MAX 9 MODSEQ 12" },
		{ MT_IMAP_SEARCH_RETURN_MIN | MT_IMAP_SEARCH_RETURN_MAX,
		  " MIN 2 MAX 9 MODSEQ 40" },
		{ MT_IMAP_SEARCH_RETURN_COUNT, " COUNT 3 MODSEQ 700" },
		{ MT_IMAP_SEARCH_RETURN_MIN | MT_IMAP_SEARCH_RETURN_COUNT,
		  " MIN 2 COUNT 3 MODSEQ 700" },
		{ MT_IMAP_SEARCH_RETURN_ALL, " ALL 2,5,9 MODSEQ 700" },
		{ MT_IMAP_SEARCH_RETURN_MIN | MT_IMAP_SEARCH_RETURN_MAX |
		  MT_IMAP_SEARCH_RETURN_COUNT | MT_IMAP_SEARCH_RETURN_ALL,
		  " MIN 2 MAX 9 COUNT 3 ALL 2,5,9 MODSEQ 700" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mt_buf out = MT_BUF_INIT;
		mt_imap_search_write_esearch(&out, cases[i].returns, ids, modseqs, 3);
		assert_string_equal(mt_buf_cstr(&out), cases[i].want);
		mt_buf_free(&out);
	}
	struct mt_buf out = MT_BUF_INIT;
	/* No MODSEQ key searched; no hits. */
	mt_imap_search_write_esearch(&out, MT_IMAP_SEARCH_RETURN_MIN, ids, NULL, 3);
	assert_string_equal(mt_buf_cstr(&out), " MIN 2");
	mt_buf_reset(&out);
	mt_imap_search_write_esearch(&out, MT_IMAP_SEARCH_RETURN_MIN |
				     MT_IMAP_SEARCH_RETURN_COUNT, ids, modseqs, 0);
	assert_string_equal(mt_buf_cstr(&out), " COUNT 0");
	mt_buf_reset(&out);
	/* One hit: MIN and MAX name the same message. */
	mt_imap_search_write_esearch(&out, MT_IMAP_SEARCH_RETURN_MIN |
				     MT_IMAP_SEARCH_RETURN_MAX, ids + 1, modseqs + 1, 1);
	assert_string_equal(mt_buf_cstr(&out), " MIN 5 MAX 5 MODSEQ 700");
	mt_buf_reset(&out);
	/* IMAP4rev1's SEARCH returns every hit. */
	mt_imap_search_write_search(&out, ids, modseqs, 3);
	assert_string_equal(mt_buf_cstr(&out), "* SEARCH 2 5 9 (MODSEQ 700)");
	mt_buf_reset(&out);
	mt_imap_search_write_search(&out, ids, modseqs, 0);
	assert_string_equal(mt_buf_cstr(&out), "* SEARCH");
	mt_buf_free(&out);
}

static void test_needs(void **state)
{
	(void)state;
	/* Decided from flags alone: no header read. */
	assert_int_equal(match("SEEN", false, false), MT_IMAP_SEARCH_YES);
	assert_int_equal(match("DELETED FROM alice", false, false), MT_IMAP_SEARCH_NO);
	assert_int_equal(match("OR SEEN BODY x", false, false), MT_IMAP_SEARCH_YES);
	/* Else what it needs, the least first. */
	assert_int_equal(match("FROM alice", false, false), MT_IMAP_SEARCH_NEED_HEADER);
	assert_int_equal(match("FROM alice BODY x", false, false), MT_IMAP_SEARCH_NEED_BODY);
	assert_int_equal(match("FROM alice BODY revenue", true, false),
			 MT_IMAP_SEARCH_NEED_BODY);
	assert_int_equal(match("FROM bob BODY revenue", true, false), MT_IMAP_SEARCH_NO);
	assert_int_equal(match("TEXT quarterly", true, false), MT_IMAP_SEARCH_YES);
	assert_int_equal(match("TEXT revenue", true, false), MT_IMAP_SEARCH_NEED_BODY);
	assert_int_equal(match("NOT BODY x", false, false), MT_IMAP_SEARCH_NEED_BODY);
}

static void test_errors(void **state)
{
	(void)state;
	struct mt_imap_search s;
	bool bad;
	const char *error;
	const char *refused[] = {
		"FROBNICATE", "FROM", "LARGER x", "LARGER", "BEFORE 32-Jan-2026",
		"ON 2026-01-01", "NOT", "OR SEEN", "()", "UID", "HEADER X", "KEYWORD",
		"((((((((((SEEN))))))))))", "NOT NOT NOT NOT NOT NOT NOT NOT NOT SEEN",
		"MODSEQ", "MODSEQ x", "MODSEQ \"/flags/x\" other 5",
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_false(parse(refused[i], &s, &bad, &error));
		assert_false(bad);
		assert_non_null(error);
	}
	assert_false(parse("CHARSET KOI8-R FROM x", &s, &bad, &error));
	assert_true(bad);
	/* "$" (SEARCHRES) is read, and marked for the tier to refuse. */
	assert_true(parse("$", &s, &bad, &error));
	assert_true(s.uses_saved);
	mt_imap_search_free(&s);
	/* Needs flags for the tier. */
	assert_true(parse("SEEN", &s, &bad, &error));
	assert_false(s.needs_header || s.needs_body);
	mt_imap_search_free(&s);
	assert_true(parse("OR SEEN SENTON 1-Jan-2020", &s, &bad, &error));
	assert_true(s.needs_header && !s.needs_body);
	mt_imap_search_free(&s);
	assert_true(parse("BODY x", &s, &bad, &error));
	assert_true(s.needs_body && !s.uses_modseq);
	mt_imap_search_free(&s);
	assert_true(parse("OR MODSEQ 5 SEEN", &s, &bad, &error));
	assert_true(s.uses_modseq);
	mt_imap_search_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_flags_sizes_sets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_logic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addresses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_needs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
