/* lmtp-headers.c — Return-Path: and Received: for each stored copy (see
 * lmtp-headers.h).
 *
 * Trust boundary: client-supplied strings (sender, recipient, LHLO name)
 * are copied only if printable ASCII or UTF-8 without controls; anything
 * else is replaced by '?', so no CR or LF can end a trace line early and
 * start a header of the client's choosing.
 * RFC 5321 4.4 (trace information), RFC 5322 3.3 (date-time) and 3.6.7
 * (trace fields), RFC 3848 ("with LMTP"), RFC 6531 3.7.3 ("with
 * UTF8LMTP"). */
#include "lmtp-headers.h"

#include <stdio.h>
#include <string.h>

/* Append s with every control octet and every space replaced by '?' (the
 * values here are addresses and domains, which hold neither). */
static void append_clean(struct mt_buf *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		unsigned char c = *p;
		mt_buf_append_char(out, (c <= 0x20 || c == 0x7f) ? '?' : (char)c);
	}
}

void lmtp_rfc5322_date(char *buf, size_t size, time_t t)
{
	static const char days[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	struct tm tm;
	if (localtime_r(&t, &tm) == NULL)
		gmtime_r(&t, &tm);
	long off = tm.tm_gmtoff / 60;
	char sign = off < 0 ? '-' : '+';
	if (off < 0)
		off = -off;
	/* Names by hand: strftime's %a/%b follow the locale. */
	snprintf(buf, size, "%s, %d %s %d %02d:%02d:%02d %c%02ld%02ld",
		 days[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12],
		 tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec, sign,
		 off / 60, off % 60);
}

void lmtp_trace_headers(struct mt_buf *out, const struct lmtp_trace *t)
{
	char date[64];
	lmtp_rfc5322_date(date, sizeof(date), t->when);

	mt_buf_append_str(out, "Return-Path: <");
	append_clean(out, t->sender);
	mt_buf_append_str(out, ">\r\nReceived: from ");
	append_clean(out, t->helo);
	mt_buf_append_str(out, " ([");
	append_clean(out, t->peer_ip);
	mt_buf_append_str(out, "])\r\n\tby ");
	append_clean(out, t->hostname);
	mt_buf_append_str(out, t->utf8 ? " (mailtier-popstore) with UTF8LMTP id " :
			  " (mailtier-popstore) with LMTP id ");
	append_clean(out, t->id);
	mt_buf_append_str(out, "\r\n\tfor <");
	append_clean(out, t->rcpt);
	mt_buf_append_str(out, ">; ");
	mt_buf_append_str(out, date);
	mt_buf_append_str(out, "\r\n");
}
