/* fuzz-bounce.c — libFuzzer target for the MTA's DSN text
 * (mta/bounce-text.c) built from hostile envelopes, reply texts, host names
 * and original messages.
 *
 * Properties, beyond "no crash, no over-read, no leak":
 *  - a report is made exactly when the sender is not null and some
 *    recipient wants one (reference: NOTIFY and state rules of RFC 3461);
 *    the postmaster's copy (bounce_compose_postmaster) exactly when the
 *    sender is null and some recipient that wants a report bounced, with
 *    the whole original, addressed to the postmaster;
 *  - every generated line (the header section, the notification, the
 *    delivery-status fields, the MIME part headers) ends with CRLF, is at
 *    most 998 octets and holds no NUL, bare CR/LF or other control octet
 *    but HTAB; every line of the header section and of the
 *    delivery-status part is one of the fields we write (nothing quoted
 *    starts a line of its own);
 *  - the boundary line "--B" appears exactly once per part plus the
 *    closing "--B--", all of them outside the quoted original, and B
 *    occurs nowhere in the quoted original (RFC 2046 5.1.1);
 *  - the quoted original is exactly the header section (RET=HDRS or no
 *    RET, or a head without all of the message) or the whole message
 *    (RET=FULL);
 *  - Original-Envelope-Id is the ENVID xtext decoded (RFC 3464 2.2.1)
 *    when that is printable US-ASCII, else the xtext as queued (so a
 *    decoded CR LF cannot start a line), and absent without ENVID.
 *
 * Input: [flags][rcpt bytes x3] then NUL-separated texts: sender, ENVID,
 * and per recipient address, ORCPT, last error, remote MTA; the rest is the
 * original message. flags bit 0: RET=FULL; bit 1: no stored body; bit 2:
 * ENVID given; bits 3-4: 1-3 recipients; bit 5: the original's boundary
 * guess uses the report's id; bit 6: the postmaster's copy; bit 7: the
 * stored body is only the head the queue loaded (more follows: never
 * quoted whole, cut after its last whole line). Recipient byte: bits 0-1 state (bounced,
 * delivered, deferred, pending), bits 2-5 NOTIFY, bit 6 relayed, bit 7
 * ORCPT given.
 * Trust boundary: data from SMTP clients and servers (RFC 3464, 3461,
 * 6522, 2046 5.1.1, 5322 2.1.1). */
#include "fuzz.h"

#include <string.h>

#include "mta/bounce-text.h"

#define REPORT_ID "0000018C2F3A4B5C"
#define MSG_ID "0000018C2F3A0000"
#define HOST "mx.example.test"
#define POSTMASTER "postmaster@example.test"

/* The next NUL-terminated text of the input (all of it if no NUL). */
static char *next_text(struct fuzz_input *in)
{
	const uint8_t *nul = memchr(in->data, '\0', in->len);
	size_t len = nul != NULL ? (size_t)(nul - in->data) : in->len;
	char *s = malloc(len + 1);
	FUZZ_CHECK(s != NULL, "malloc");
	if (len > 0)
		memcpy(s, in->data, len);
	s[len] = '\0';
	in->data += nul != NULL ? len + 1 : len;
	in->len -= nul != NULL ? len + 1 : len;
	return s;
}

static bool ref_wants(const struct queue_rcpt *r)
{
	if (r->notify & QUEUE_NOTIFY_NEVER)
		return false;
	switch (r->state) {
	case QUEUE_RCPT_DELIVERED:
		return r->notify & QUEUE_NOTIFY_SUCCESS;
	case QUEUE_RCPT_BOUNCED:
		return r->notify == 0 || (r->notify & QUEUE_NOTIFY_FAILURE);
	default:
		return false;
	}
}

/* Reference for a DSN's Original-Envelope-Id value (RFC 3464 2.2.1):
 * the ENVID's xtext decoded ("+XX", either case) when all of that is
 * printable US-ASCII, else the xtext as stored; at most max octets, any
 * control octet as a space. */
static void ref_envid_shown(const char *xtext, size_t max, struct mt_buf *out)
{
	static const char hex[] = "0123456789ABCDEF0123456789abcdef";
	struct mt_buf dec = MT_BUF_INIT;
	bool printable = true;
	for (const char *p = xtext; *p != '\0'; p++) {
		const char *h = p[0] == '+' && p[1] != '\0' ? strchr(hex, p[1]) : NULL;
		const char *l = h != NULL && p[2] != '\0' ? strchr(hex, p[2]) : NULL;
		unsigned char c = (unsigned char)*p;
		if (l != NULL) {
			c = (unsigned char)(((h - hex) % 16) * 16 + (l - hex) % 16);
			p += 2;
		}
		printable = printable && c >= 0x20 && c <= 0x7e;
		mt_buf_append_char(&dec, (char)c);
	}
	const char *shown = printable ? mt_buf_cstr(&dec) : xtext;
	for (size_t i = 0; shown[i] != '\0' && i < max; i++) {
		unsigned char c = (unsigned char)shown[i];
		mt_buf_append_char(out, c < 0x20 || c == 0x7f ? ' ' : (char)c);
	}
	mt_buf_free(&dec);
}

/* Check the generated lines of p[0..len). */
static void check_lines(const char *p, size_t len, const char *what)
{
	size_t start = 0;
	while (start < len) {
		const char *cr = memchr(p + start, '\r', len - start);
		FUZZ_CHECK(cr != NULL && (size_t)(cr - p) + 1 < len && cr[1] == '\n',
			   "%s: line at %zu does not end with CRLF", what, start);
		size_t l = (size_t)(cr - (p + start));
		FUZZ_CHECK(l <= 998, "%s: line of %zu octets", what, l);
		for (size_t i = 0; i < l; i++) {
			unsigned char c = (unsigned char)p[start + i];
			FUZZ_CHECK(c >= 0x20 ? c != 0x7f : c == '\t',
				   "%s: control octet 0x%02x", what, c);
		}
		start += l + 2;
	}
}

/* Every line of the delivery-status fields p[0..len) (blank lines apart)
 * is one of the fields we write: nothing quoted can start a line. */
static void check_fields(const char *p, size_t len)
{
	static const char *const names[] = {
		"Reporting-MTA: ", "X-Mailtier-Queue-ID: ", "Original-Envelope-Id: ",
		"Arrival-Date: ", "Final-Recipient: ", "Original-Recipient: ",
		"Action: ", "Status: ", "Remote-MTA: ", "Diagnostic-Code: ",
	};
	const char *end = p + len;
	while (p < end) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t l = eol != NULL ? (size_t)(eol - p) : (size_t)(end - p);
		bool known = l == 0;
		for (size_t i = 0; !known && i < sizeof(names) / sizeof(names[0]); i++)
			known = l >= strlen(names[i]) &&
				memcmp(p, names[i], strlen(names[i])) == 0;
		FUZZ_CHECK(known, "delivery-status line '%.*s'", (int)(l < 60 ? l : 60), p);
		p += l + 2;
	}
}

/* The header section of the DSN: our fields and one folded line. */
static void check_header(const char *p, size_t len)
{
	static const char *const names[] = {
		"Received: ", "Date: ", "From: ", "To: <", "Subject: ",
		"Message-ID: ", "Auto-Submitted: ", "MIME-Version: ",
		"Content-Type: ", "\tboundary=",
	};
	const char *end = p + len;
	while (p < end) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t l = eol != NULL ? (size_t)(eol - p) : (size_t)(end - p);
		bool known = false;
		for (size_t i = 0; !known && i < sizeof(names) / sizeof(names[0]); i++)
			known = l >= strlen(names[i]) &&
				memcmp(p, names[i], strlen(names[i])) == 0;
		FUZZ_CHECK(known, "header line '%.*s'", (int)(l < 60 ? l : 60), p);
		p += l + 2;
	}
}

static size_t count_occurrences(const char *hay, size_t hay_len, const char *needle)
{
	size_t n = 0, nl = strlen(needle);
	const char *p = hay, *end = hay + hay_len;
	while (p < end) {
		const char *q = memmem(p, (size_t)(end - p), needle, nl);
		if (q == NULL)
			break;
		n++;
		p = q + 1;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size };
	uint8_t flags = fuzz_byte(&in);
	uint8_t rbytes[3] = { fuzz_byte(&in), fuzz_byte(&in), fuzz_byte(&in) };
	unsigned int count = 1 + ((flags >> 3) & 3) % 3;
	struct queue_rcpt rcpts[3];
	struct dsn_rcpt dsn[3];
	struct queue_msg msg;
	struct queue_body body;
	char *texts[2 + 4 * 3] = { NULL };
	size_t n_texts = 0;

	memset(&msg, 0, sizeof(msg));
	memset(rcpts, 0, sizeof(rcpts));
	memcpy(msg.id, MSG_ID, sizeof(msg.id));
	msg.arrival = 1700000000000;
	msg.ret = (flags & 1) ? QUEUE_RET_FULL : QUEUE_RET_DEFAULT;
	msg.sender = texts[n_texts++] = next_text(&in);
	char *envid = texts[n_texts++] = next_text(&in);
	msg.envid = (flags & 4) ? envid : NULL;
	bool want_report = msg.sender[0] != '\0';
	bool any = false, any_failed = false;
	for (unsigned int i = 0; i < count; i++) {
		struct queue_rcpt *r = &rcpts[i];
		r->address = texts[n_texts++] = next_text(&in);
		char *orcpt = texts[n_texts++] = next_text(&in);
		r->orcpt = (rbytes[i] & 0x80) ? orcpt : NULL;
		char *error = texts[n_texts++] = next_text(&in);
		r->last_error = error[0] != '\0' ? error : NULL;
		static const enum queue_rcpt_state states[4] = {
			QUEUE_RCPT_BOUNCED, QUEUE_RCPT_DELIVERED,
			QUEUE_RCPT_DEFERRED, QUEUE_RCPT_PENDING };
		r->state = states[rbytes[i] & 3];
		r->notify = (rbytes[i] >> 2) & 0xf;
		dsn[i].index = i;
		dsn[i].remote_mta = texts[n_texts++] = next_text(&in);
		dsn[i].relayed = rbytes[i] & 0x40;
		any = any || ref_wants(r);
		any_failed = any_failed || (ref_wants(r) && r->state == QUEUE_RCPT_BOUNCED);
	}
	bool pm = (flags & 0x40) != 0;
	want_report = pm ? msg.sender[0] == '\0' && any_failed : want_report && any;
	msg.rcpts = rcpts;
	msg.rcpt_count = count;
	/* The original, possibly guessing our boundary. */
	struct mt_buf original = MT_BUF_INIT;
	if (flags & 0x20)
		mt_buf_appendf(&original, "X: y\r\n\r\n--%s.%s/%s--\r\n",
			       REPORT_ID, MSG_ID, HOST);
	mt_buf_append(&original, in.data, in.len);
	memset(&body, 0, sizeof(body));
	body.refs = 1;
	body.data = original.data != NULL ? original.data : (char *)"";
	body.size = original.len;
	body.complete = (flags & 0x80) == 0;
	msg.body = (flags & 2) ? NULL : &body;
	msg.size = body.size;

	struct mt_buf out = MT_BUF_INIT;
	bool report_failed = false;
	bool made = pm ? bounce_compose_postmaster(&out, HOST, REPORT_ID, 1700000001000,
						   POSTMASTER, &msg, dsn, count) :
		bounce_compose(&out, HOST, REPORT_ID, 1700000001000, &msg, dsn, count,
			       &report_failed);
	FUZZ_CHECK(made == want_report, "report %d, reference %d", made, want_report);
	FUZZ_CHECK(made || out.len == 0, "text appended without a report");
	if (made) {
		const char *field = strstr(out.data, "\r\nOriginal-Envelope-Id: ");
		FUZZ_CHECK((field != NULL) == (msg.envid != NULL) || msg.body != NULL,
			   "Original-Envelope-Id present %d, ENVID %d", field != NULL,
			   msg.envid != NULL);
		if (msg.envid != NULL) {
			struct mt_buf want = MT_BUF_INIT;
			ref_envid_shown(msg.envid, 100, &want);
			FUZZ_CHECK(field != NULL, "no Original-Envelope-Id");
			field += strlen("\r\nOriginal-Envelope-Id: ");
			FUZZ_CHECK(strncmp(field, mt_buf_cstr(&want), want.len) == 0 &&
				   field[want.len] == '\r',
				   "Original-Envelope-Id '%.40s', reference '%.40s'", field,
				   mt_buf_cstr(&want));
			mt_buf_free(&want);
		}
		/* The boundary, from the Content-Type parameter. */
		const char *b = strstr(out.data, "\tboundary=\"");
		FUZZ_CHECK(b != NULL, "no boundary parameter");
		b += strlen("\tboundary=\"");
		const char *q = strchr(b, '"');
		FUZZ_CHECK(q != NULL && q > b, "bad boundary parameter");
		char boundary[512];
		size_t blen = (size_t)(q - b);
		FUZZ_CHECK(blen + 3 < sizeof(boundary), "boundary too long");
		memcpy(boundary, b, blen);
		boundary[blen] = '\0';
		char delim[520], close[520];
		snprintf(delim, sizeof(delim), "\r\n--%s\r\n", boundary);
		snprintf(close, sizeof(close), "\r\n--%s--\r\n", boundary);

		/* Split: everything up to the original part is generated. */
		const char *quoted = NULL;
		size_t gen_len = out.len, quoted_len = 0;
		if (msg.body != NULL) {
			const char *third = NULL, *p = out.data;
			for (int k = 0; k < 3; k++) {
				third = memmem(p, out.len - (size_t)(p - out.data),
					       delim, strlen(delim));
				FUZZ_CHECK(third != NULL, "part %d missing", k);
				p = third + 1;
			}
			const char *hdr_end = strstr(third + strlen(delim), "\r\n\r\n");
			FUZZ_CHECK(hdr_end != NULL, "original part header");
			quoted = hdr_end + 4;
			gen_len = (size_t)(quoted - out.data);
			const char *end = out.data + out.len - strlen(close);
			FUZZ_CHECK(end >= quoted && memcmp(end, close, strlen(close)) == 0,
				   "no closing boundary at the end");
			quoted_len = (size_t)(end - quoted);
			/* The original, exactly, plus CRLF if it lacked a line end. */
			bool full = (msg.ret == QUEUE_RET_FULL || pm) && body.complete;
			size_t want = body.size;
			if (!full) {
				const char *e1 = memmem(body.data, body.size, "\n\n", 2);
				const char *e2 = memmem(body.data, body.size, "\n\r\n", 3);
				const char *e = e1 == NULL ? e2 : e2 == NULL ? e1 :
					e1 < e2 ? e1 : e2;
				if (e != NULL) {
					want = (size_t)(e - body.data) + 1;
				} else if (!body.complete) {
					want = 0;	/* through the head's last line end */
					for (size_t k = 0; k < body.size; k++)
						if (body.data[k] == '\n')
							want = k + 1;
				}
			}
			bool crlf = want > 0 && body.data[want - 1] != '\n';
			FUZZ_CHECK(quoted_len == want + (crlf ? 2 : 0) &&
				   memcmp(quoted, body.data, want) == 0,
				   "quoted original differs (%zu, want %zu)", quoted_len, want);
			FUZZ_CHECK(count_occurrences(quoted, quoted_len, boundary) == 0,
				   "the boundary occurs in the quoted original");
			check_lines(out.data + out.len - strlen(close) + 2,
				    strlen(close) - 2, "closing boundary");
		} else {
			FUZZ_CHECK(out.len >= strlen(close) &&
				   memcmp(out.data + out.len - strlen(close), close,
					  strlen(close)) == 0, "no closing boundary");
		}
		check_lines(out.data, gen_len, "generated text");
		const char *hdr_end = memmem(out.data, out.len, "\r\n\r\n", 4);
		FUZZ_CHECK(hdr_end != NULL, "no header section");
		check_header(out.data, (size_t)(hdr_end - out.data));
		if (pm)
			FUZZ_CHECK(memmem(out.data, (size_t)(hdr_end - out.data),
					  "\r\nTo: <" POSTMASTER ">\r\n",
					  strlen("\r\nTo: <" POSTMASTER ">\r\n")) != NULL,
				   "the postmaster's copy is not addressed to the postmaster");
		/* The delivery-status part: after the second delimiter and its
		 * part header, up to the next delimiter or the close. */
		const char *d1 = memmem(out.data, out.len, delim, strlen(delim));
		const char *d2 = memmem(d1 + 1, out.len - (size_t)(d1 + 1 - out.data),
					delim, strlen(delim));
		FUZZ_CHECK(d2 != NULL, "no delivery-status part");
		const char *f = strstr(d2, "message/delivery-status\r\n\r\n");
		FUZZ_CHECK(f != NULL, "no delivery-status header");
		f += strlen("message/delivery-status\r\n\r\n");
		const char *fend = memmem(f, out.len - (size_t)(f - out.data), "\r\n--", 4);
		FUZZ_CHECK(fend != NULL, "delivery-status part not closed");
		check_fields(f, (size_t)(fend - f) + 2);
		FUZZ_CHECK(count_occurrences(out.data, gen_len, delim) ==
			   (msg.body != NULL ? 3u : 2u), "boundary lines in the text");
	}
	mt_buf_free(&out);
	mt_buf_free(&original);
	for (size_t i = 0; i < n_texts; i++)
		free(texts[i]);
	return 0;
}
