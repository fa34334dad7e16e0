/* fuzz-imap-search.c — libFuzzer target for lib-mail/imap-search.c, the
 * SEARCH criteria reader and matcher, fed by the real imap-parse.
 *
 * Properties, beyond "no crash, no over-read, no UB, no unbounded
 * recursion":
 *  - criteria that read are matched against a message built from the
 *    input: asked without a header or body, the matcher answers only NO,
 *    YES or what it needs (a header never "needed" when the criteria need
 *    none, a body only when they need one); given everything it answers
 *    NO or YES;
 *  - a NO or YES given without the header or body stays the same when
 *    they are given (three-valued logic decides only what it can).
 *
 * Input: the criteria line; after a NUL, the message (header, an empty
 * line, body) the match reads.
 * Trust boundary: IMAP client octets (RFC 9051 6.4.4 search-key), and
 * message octets. */
#include "fuzz.h"

#include "buf.h"
#include "imap-parse.h"
#include "imap-search.h"

#include <string.h>
#include <strings.h>

static bool keyword(void *context, const char *name)
{
	(void)context;
	return strcasecmp(name, "$Work") == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	const size_t line_len = nul != NULL ? (size_t)(nul - data) : size;
	const char *message = nul != NULL ? (const char *)nul + 1 : "";
	const size_t message_len = nul != NULL ? size - line_len - 1 : 0;

	struct mt_buf cmd = MT_BUF_INIT;
	mt_buf_append_str(&cmd, "a SEARCH ");
	mt_buf_append(&cmd, data, line_len);
	mt_buf_append_str(&cmd, "\r\n");
	const struct mt_imap_limits limits = {
		.line_max = 4096, .literal_max = 4096, .command_max = 65536,
		.depth_max = 64, .args_max = 512, .literal_plus = true,
	};
	struct mt_imap_parser parser;
	mt_imap_parser_init(&parser, &limits);
	size_t used;
	enum mt_imap_parse st = mt_imap_parser_feed(&parser, cmd.data, cmd.len, &used);
	if (st == MT_IMAP_PARSE_DONE) {
		const struct mt_imap_search_limits sl = { .depth_max = 16, .ranges_max = 64 };
		struct mt_imap_search s;
		bool badcharset;
		const char *error;
		if (mt_imap_search_parse(&s, parser.command.args, parser.command.count, &sl,
					 &badcharset, &error)) {
			const char *sep = memmem(message, message_len, "\r\n\r\n", 4);
			size_t head = sep != NULL ? (size_t)(sep - message) + 4 : message_len;
			struct mt_imap_search_msg m = {
				.seq = 2, .uid = 7, .largest_seq = 3, .largest_uid = 9,
				.flags = message_len & 0x1f, .size = message_len,
				.internaldate = (int64_t)message_len * 86400 - INT64_C(40000) * 86400,
				.keyword = keyword,
			};
			enum mt_imap_search_match bare = mt_imap_search_match(&s, &m);
			FUZZ_CHECK(bare != MT_IMAP_SEARCH_NEED_HEADER || s.needs_header,
				   "a header needed by criteria that need none");
			FUZZ_CHECK(bare != MT_IMAP_SEARCH_NEED_BODY || s.needs_body,
				   "a body needed by criteria that need none");
			m.header = message;
			m.header_len = head;
			m.body = message + head;
			m.body_len = message_len - head;
			enum mt_imap_search_match full = mt_imap_search_match(&s, &m);
			FUZZ_CHECK(full == MT_IMAP_SEARCH_NO || full == MT_IMAP_SEARCH_YES,
				   "undecided with the whole message");
			FUZZ_CHECK(bare == MT_IMAP_SEARCH_NEED_HEADER ||
				   bare == MT_IMAP_SEARCH_NEED_BODY || bare == full,
				   "decided otherwise once the text was given");
			mt_imap_search_free(&s);
		}
	}
	mt_imap_parser_free(&parser);
	mt_buf_free(&cmd);
	return 0;
}
