/* fuzz-lineio.c — libFuzzer target for lib/lineio.c: the CRLF line reader
 * under both policies and several line limits, fed in chunks of every
 * shape (whole, octet by octet, random) through evbuffers made of one or
 * many chains; and the reply writer.
 *
 * Properties, beyond "no crash, no leak":
 *  - the statuses and lines read equal those of a simple reference reader
 *    over the same stream (lineio.h's rules, written again);
 *  - this still holds when, after NEED_MORE, the caller takes part or all
 *    of the unfinished input out of the evbuffer and resets the reader (as
 *    an SMTP session does when it hands the input to the DATA decoder);
 *  - after NEED_MORE the evbuffer holds exactly the unfinished line, or
 *    nothing while an overlong line is being dropped (bounded memory);
 *  - an OK line holds no CR, LF or NUL and at most max_len - 2 octets;
 *  - mt_line_write() of any text produces exactly one CRLF-terminated line
 *    with no other control octet.
 *
 * Input: [mode][chunk seed] stream...; mode bit 0 = policy, bits 1-3 = limit,
 * bits 4-5 = chunk strategy, bit 6 = add by reference (one chain per chunk),
 * bit 7 = sometimes take input out behind the reader after NEED_MORE.
 * Trust boundary: the stream is what a network peer sends (RFC 5321 2.3.8,
 * 4.5.3.1.4; RFC 1939 3). */
#include "fuzz.h"

#include <event2/buffer.h>
#include <string.h>

#include "buf.h"
#include "lineio.h"

struct expect {
	enum mt_line_status status;
	const uint8_t *line;	/* content without terminator */
	size_t len;
};

/* The stream as the reader should see it: what was fed, less what the
 * caller took out behind its back; pos is where the next line starts. */
struct model {
	uint8_t *data;
	size_t len, pos;
};

/* Reference reader: the next complete line at m->pos, classified as
 * lineio.h says; false when no LF has arrived yet. */
static bool reference_next(struct model *m, size_t max_len,
			   enum mt_line_policy policy, struct expect *e)
{
	const uint8_t *p = m->data + m->pos;
	const uint8_t *lf = memchr(p, '\n', m->len - m->pos);

	if (lf == NULL)
		return false;
	size_t total = (size_t)(lf - p) + 1;	/* with the LF */
	bool crlf = total >= 2 && lf[-1] == '\r';
	size_t clen = total - 1 - (crlf ? 1 : 0);

	e->line = p;
	e->len = clen;
	if (total > max_len || clen > max_len - 2) {
		e->status = MT_LINE_TOO_LONG;
		e->len = 0;
	} else if (!crlf && policy == MT_LINE_STRICT_CRLF) {
		e->status = MT_LINE_BARE_LF;
	} else if (memchr(p, '\r', clen) != NULL) {
		e->status = MT_LINE_BARE_CR;
	} else if (memchr(p, '\0', clen) != NULL) {
		e->status = MT_LINE_NUL;
	} else {
		e->status = MT_LINE_OK;
	}
	m->pos += total;
	return true;
}

static void check_line(const struct mt_buf *line, enum mt_line_status st,
		       const char *error, const struct expect *e,
		       size_t max_len, size_t k)
{
	FUZZ_CHECK(st == e->status, "line %zu: status %d, reference %d", k,
		   st, e->status);
	FUZZ_CHECK(st == MT_LINE_OK || (error != NULL && *error != '\0'),
		   "line %zu: status %d without a reason", k, st);
	FUZZ_CHECK(line->len == e->len &&
		   (line->len == 0 || memcmp(line->data, e->line, line->len) == 0),
		   "line %zu: content differs (%zu vs %zu octets)", k,
		   line->len, e->len);
	FUZZ_CHECK(line->data == NULL || line->data[line->len] == '\0',
		   "line %zu not NUL-terminated", k);
	if (st != MT_LINE_OK)
		return;
	FUZZ_CHECK(line->len <= max_len - 2, "OK line of %zu octets",
		   line->len);
	for (size_t i = 0; i < line->len; i++)
		FUZZ_CHECK(line->data[i] != '\r' && line->data[i] != '\n' &&
			   line->data[i] != '\0', "CR, LF or NUL in an OK line");
}

static void check_write(const uint8_t *data, size_t size)
{
	struct evbuffer *out = evbuffer_new();
	char text[1024];
	size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;

	memcpy(text, data, n);
	text[n] = '\0';
	n = strlen(text);
	mt_line_write(out, "%s", text);
	mt_line_reply(out, 250, data[0] & 1, "x%sx", text);

	size_t olen = evbuffer_get_length(out);
	const unsigned char *o = evbuffer_pullup(out, -1);

	FUZZ_CHECK(olen == n + 2 + 4 + n + 2 + 2, "write length %zu", olen);
	FUZZ_CHECK(memcmp(o + n, "\r\n", 2) == 0 &&
		   memcmp(o + olen - 2, "\r\n", 2) == 0, "lines end in CRLF");
	for (size_t i = 0; i < olen; i++) {
		bool term = i == n || i == n + 1 || i >= olen - 2;

		FUZZ_CHECK(term || ((o[i] >= 0x20 || o[i] == '\t') &&
				    o[i] != 0x7f),
			   "control octet 0x%02x at %zu in a written line",
			   o[i], i);
	}
	evbuffer_free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t limits[] = { 3, 4, 5, 8, 16, 80, 512, 1000 };
	struct fuzz_input in = { data, size };
	uint8_t mode = fuzz_byte(&in);
	uint32_t seed = fuzz_byte(&in);
	enum mt_line_policy policy = (mode & 1) != 0 ?
		MT_LINE_ACCEPT_LF : MT_LINE_STRICT_CRLF;
	size_t max_len = limits[(mode >> 1) & 7];
	unsigned int strategy = (mode >> 4) & 3;
	bool by_ref = (mode & 0x40) != 0;
	bool take = (mode & 0x80) != 0;
	struct model m = { malloc(in.len + 1), 0, 0 };
	struct mt_line_reader reader;
	struct evbuffer *buf = evbuffer_new();
	struct mt_buf line = MT_BUF_INIT;
	size_t fed = 0, k = 0;

	mt_line_reader_init(&reader, max_len, policy);
	while (fed < in.len) {
		size_t n = fuzz_chunk(strategy, &seed, in.len - fed,
				      2 * max_len);

		if (by_ref)
			evbuffer_add_reference(buf, in.data + fed, n, NULL,
					       NULL);
		else
			evbuffer_add(buf, in.data + fed, n);
		memcpy(m.data + m.len, in.data + fed, n);
		m.len += n;
		fed += n;
		for (;;) {
			const char *error = NULL;
			enum mt_line_status st =
				mt_line_read(&reader, buf, &line, &error);
			struct expect e;

			if (st != MT_LINE_NEED_MORE) {
				FUZZ_CHECK(reference_next(&m, max_len, policy,
							  &e),
					   "line %zu read, the reference has "
					   "no complete line", k);
				check_line(&line, st, error, &e, max_len, k++);
				continue;
			}
			size_t pending = m.len - m.pos;
			/* An overlong line is dropped as it arrives. */
			bool dropping = pending >= max_len;

			FUZZ_CHECK(evbuffer_get_length(buf) ==
				   (dropping ? 0 : pending),
				   "after NEED_MORE %zu left, want %zu",
				   evbuffer_get_length(buf),
				   dropping ? 0 : pending);
			FUZZ_CHECK(memchr(m.data + m.pos, '\n', pending) == NULL,
				   "NEED_MORE with a complete line waiting");
			if (!take || dropping || pending == 0 ||
			    fuzz_rand(&seed) % 4 != 0)
				break;
			/* Hand some input to someone else, then reset (when
			 * all of it went, the reader copes without). */
			size_t d = 1 + fuzz_rand(&seed) % pending;

			evbuffer_drain(buf, d);
			memmove(m.data + m.pos, m.data + m.pos + d, pending - d);
			m.len -= d;
			if (d < pending || (fuzz_rand(&seed) & 1) != 0)
				mt_line_reader_reset(&reader);
		}
	}
	FUZZ_CHECK(memchr(m.data + m.pos, '\n', m.len - m.pos) == NULL,
		   "a complete line was never read");
	free(m.data);
	mt_buf_free(&line);
	evbuffer_free(buf);
	if (size > 0)
		check_write(data, size);
	return 0;
}
