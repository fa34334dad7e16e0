/* message.c — generated test messages (see message.h).
 * RFC 5322 3.6 (header fields), RFC 5321 4.5.2 and 4.5.3.1.6.
 * Trust boundary: none (generated here). */
#include "message.h"

#include "log.h"
#include "tracker.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#define BODY_LINE 80	/* octets per body line, CRLF included */

static const char text[] =
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
#define TEXT_PERIOD 62	/* the pattern repeats every 62 octets */

void lg_message_begin(struct mt_buf *headers, struct lg_body_gen *gen,
		      const struct lg_workload *wl,
		      const struct lg_message_plan *plan, const char *id)
{
	char from[320], to[320], date[64];
	time_t now = time(NULL);
	struct tm tm;

	lg_format_address(from, sizeof(from), wl, plan->from_remote, plan->sender);
	if (plan->n_rcpts > 0)
		lg_format_address(to, sizeof(to), wl, plan->rcpts[0].remote,
				  plan->rcpts[0].user);
	else
		snprintf(to, sizeof(to), "undisclosed-recipients:;");
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S +0000", &tm);
	mt_buf_reset(headers);
	mt_buf_appendf(headers,
		"Message-ID: <%s@mailtier-load>\r\n"
		"Date: %s\r\n"
		"From: <%s>\r\n"
		"To: <%s>\r\n"
		"Subject: %smailtier-load %s %s\r\n"
		LG_ID_HEADER ": %s\r\n"
		"MIME-Version: 1.0\r\n"
		"Content-Type: text/plain; charset=us-ascii\r\n"
		"\r\n", id, date, from, to, plan->reply ? "Re: " : "",
		plan->probe ? "delivery probe" : "test message", id, id);
	gen->remaining = plan->size > headers->len ? plan->size - headers->len : 0;
	/* A body line needs at least one octet and its CRLF. */
	if (gen->remaining > 0 && gen->remaining < 3)
		gen->remaining = 3;
	gen->line_no = 0;
	gen->tap = NULL;
	gen->tap_context = NULL;
}

size_t lg_message_fill(struct lg_body_gen *gen, struct evbuffer *out,
		       size_t max)
{
	char chunk[16384];
	size_t used = 0;

	while (gen->remaining > 0 && used < max &&
	       used + BODY_LINE <= sizeof(chunk)) {
		size_t n = gen->remaining <= BODY_LINE ? (size_t)gen->remaining
						       : BODY_LINE;
		/* Leave at least 3 octets for the last line. */
		if (gen->remaining - n > 0 && gen->remaining - n < 3)
			n -= 3;
		size_t start = (size_t)(gen->line_no++ % TEXT_PERIOD);
		memcpy(chunk + used, text + start, n - 2);
		chunk[used + n - 2] = '\r';
		chunk[used + n - 1] = '\n';
		used += n;
		gen->remaining -= n;
	}
	if (used > 0 && evbuffer_add(out, chunk, used) < 0)
		mt_panic("out of memory queueing %zu octets", used);
	if (used > 0 && gen->tap != NULL)
		gen->tap(gen->tap_context, chunk, used);
	return used;
}
