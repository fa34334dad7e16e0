/* lmtp-headers.h — the trace lines mailtier-popstore prepends to each
 * stored copy of a message: Return-Path: (RFC 5321 4.4: the final
 * delivery records the reverse-path) and Received: (RFC 5321 4.4, RFC 5322
 * 3.6.7; "with LMTP" per RFC 3848), one pair per recipient.
 *
 * Trust boundary: sender, recipient and the LHLO name come from the LMTP
 * client; they were parsed and bounded before, and are re-checked here so a
 * value can never add a header line of its own. */
#ifndef MT_LMTP_HEADERS_H
#define MT_LMTP_HEADERS_H

#include "buf.h"

#include <stdbool.h>
#include <time.h>

struct lmtp_trace {
	const char *sender;	/* normal form, "" for the null sender */
	const char *helo;	/* LHLO argument */
	const char *peer_ip;	/* "192.0.2.1" or "IPv6:2001:db8::1" */
	const char *hostname;	/* ours */
	const char *id;		/* the MTA's queue id, or ours */
	const char *rcpt;	/* the recipient as given in RCPT TO */
	time_t when;
	bool utf8;		/* SMTPUTF8 transaction: "with UTF8LMTP" */
};

/* Append the Return-Path: and Received: lines, each ending in CRLF. */
void lmtp_trace_headers(struct mt_buf *out, const struct lmtp_trace *trace);

/* RFC 5322 3.3 date-time for t in local time: "Tue, 1 Jul 2025 09:05:00 +0200". */
void lmtp_rfc5322_date(char *buf, size_t size, time_t t);

#endif
