/* fuzz-imap-response.c — libFuzzer target for loadgen/imap-response.c,
 * mailtier-load's framing of IMAP server responses, and the helpers that
 * read numbers and words out of a response's text.
 *
 * Properties, beyond "no crash, no leak":
 *  - splitting the stream differently (whole, octet by octet, random
 *    chunks) gives the same responses: kind, tag, status, kept text,
 *    literal octets, and the same end (input used up, or the same error);
 *  - the octets handed to the tap are exactly the literals' octets;
 *  - a DONE response's kept text is at most LG_IMAP_TEXT_MAX octets and
 *    holds no CR, LF or NUL; a tag is 1-63 tag characters;
 *  - a response counts at most LG_IMAP_LITERALS_MAX literals;
 *  - after MORE, all input has been taken (a literal's octets are skipped
 *    as they come) or only an unfinished line waits (bounded memory).
 *
 * Input: [mode][seed] stream...; mode bits 0-1: the chunk strategy of the
 * second pass. Trust boundary: the stream is what an IMAP server sends
 * (RFC 9051 2.2.2, 4.3, 9). */
#include "fuzz.h"

#include <event2/buffer.h>

#include "imap-response.h"

#define MAX_RESPONSES 4096

struct outcome {
	uint64_t digest;	/* of every response's fields, in order */
	unsigned int responses;
	bool error;
	char error_text[128];
	uint64_t tapped, literal_octets;
};

static void mix(uint64_t *d, const void *data, size_t len)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < len; i++)
		*d = (*d ^ p[i]) * 0x100000001b3ull;
}

static void tap(void *context, const void *data, size_t len)
{
	(void)data;
	*(uint64_t *)context += len;
}

static void check_response(const struct lg_imap_reader *r)
{
	FUZZ_CHECK(r->text.len <= LG_IMAP_TEXT_MAX, "text %zu", r->text.len);
	FUZZ_CHECK(r->n_literals <= LG_IMAP_LITERALS_MAX, "%u literals", r->n_literals);
	for (size_t i = 0; i < r->text.len; i++) {
		char c = r->text.data[i];
		FUZZ_CHECK(c != '\r' && c != '\n' && c != '\0', "control in text at %zu", i);
	}
	if (r->kind == LG_IMAP_TAGGED) {
		size_t n = strlen(r->tag);
		FUZZ_CHECK(n >= 1 && n < sizeof(r->tag_buf), "tag length %zu", n);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(r->tag[i] > 0x20 && r->tag[i] < 0x7f && r->tag[i] != '+',
				   "tag char %02x", (unsigned char)r->tag[i]);
	}
	/* The helpers over the text: bounded, no crash. */
	uint32_t n32;
	uint64_t n64;
	(void)lg_imap_number_then(r->rest, "EXISTS", &n32);
	(void)lg_imap_find_number(r->text.data, "UID", &n64);
	(void)lg_imap_has_word(r->text.data, "\\Seen");
	(void)lg_imap_starts_with(r->rest, "BYE");
}

static void run(const uint8_t *data, size_t len, unsigned int strategy,
		uint32_t seed, struct outcome *o)
{
	struct lg_imap_reader r;
	struct evbuffer *in = evbuffer_new();
	size_t pos = 0;
	const char *error;

	FUZZ_CHECK(in != NULL, "evbuffer_new");
	memset(o, 0, sizeof(*o));
	o->digest = 0xcbf29ce484222325ull;
	lg_imap_reader_init(&r);
	r.tap = tap;
	r.tap_context = &o->tapped;
	while (!o->error && o->responses < MAX_RESPONSES) {
		enum lg_imap_read status = lg_imap_read(&r, in, &error);
		if (status == LG_IMAP_READ_ERROR) {
			o->error = true;
			snprintf(o->error_text, sizeof(o->error_text), "%s", error);
			break;
		}
		if (status == LG_IMAP_READ_DONE) {
			check_response(&r);
			o->responses++;
			o->literal_octets += r.literal_octets;
			mix(&o->digest, &r.kind, sizeof(r.kind));
			mix(&o->digest, r.text.data, r.text.len);
			mix(&o->digest, &r.literal_octets, sizeof(r.literal_octets));
			if (r.kind == LG_IMAP_TAGGED) {
				mix(&o->digest, r.tag, strlen(r.tag));
				mix(&o->digest, &r.status, sizeof(r.status));
			}
			continue;
		}
		/* MORE: a literal's octets never wait in the buffer. */
		if (r.literal_left > 0)
			FUZZ_CHECK(evbuffer_get_length(in) == 0, "literal octets left waiting");
		if (pos == len)
			break;
		size_t n = fuzz_chunk(strategy, &seed, len - pos, 64);
		evbuffer_add(in, data + pos, n);
		pos += n;
	}
	/* Literal octets of an unfinished response are tapped too. */
	uint64_t pending = r.complete ? 0 : r.literal_octets;
	FUZZ_CHECK(o->error || o->tapped == o->literal_octets + pending,
		   "tapped %llu, literals %llu + %llu", (unsigned long long)o->tapped,
		   (unsigned long long)o->literal_octets, (unsigned long long)pending);
	lg_imap_reader_free(&r);
	evbuffer_free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input input = { data, size };
	unsigned int mode = fuzz_byte(&input);
	uint32_t seed = fuzz_byte(&input);
	struct outcome whole, split;

	run(input.data, input.len, 0, seed, &whole);
	run(input.data, input.len, mode & 3, seed, &split);
	FUZZ_CHECK(whole.responses == split.responses, "%u responses, %u split",
		   whole.responses, split.responses);
	FUZZ_CHECK(whole.digest == split.digest, "responses differ when split");
	FUZZ_CHECK(whole.error == split.error && strcmp(whole.error_text, split.error_text) == 0,
		   "end '%s' vs '%s'", whole.error_text, split.error_text);
	return 0;
}
