/* mime-parse.c — the figure behind lib-mail/mime-scan.c (issue 15): the
 * store's streaming MIME scanner against GMime 3's parser on the same
 * messages, in CPU time per message. (Memory is not compared: GMime's
 * parser pulls from a stream, so the store would have to hold the whole
 * message or read it back; the scanner keeps a header and a line head.)
 *
 *   mailtier: mt_mime_scan fed in 64 KiB pieces (as the store's body
 *             writer is fed by LMTP), then the structure record written
 *             (ENVELOPE, BODY, BODYSTRUCTURE rendered, part table);
 *   GMime:    g_mime_parser_construct_message() over a memory stream of
 *             the whole message (what a pull parser needs: the message
 *             there to read), then a walk of every part and the envelope
 *             headers — less than the record's work, no rendering.
 *
 * Messages (synthesised, the shapes mail has): a 24 KB text/plain, a 12 KB
 * multipart/alternative, a 2 MB multipart/mixed with a base64 attachment,
 * a forward nesting message/rfc822 three deep. Each is parsed --iterations
 * times by each parser in turn; the median of --runs runs is printed with
 * the ratio.
 *
 *   cc -O2 -o mime-parse bench/mime-parse.c -Ilib -Ilib-mail -Ibuild \
 *      build/lib-mail/libmtmail.a build/lib/libmailtier.a \
 *      $(pkg-config --cflags --libs gmime-3.0)
 *   ./mime-parse [--runs 5] [--iterations 200]
 *
 * Trust boundary: none (synthesised input, a benchmark). */
#include <gmime/gmime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "imap-bodystructure.h"
#include "mime-scan.h"

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void text_lines(struct mt_buf *m, size_t bytes, unsigned int seed)
{
	static const char chars[] = "abcdefghij klmnopqrst uvwxyzABCD EFGHIJKLMN 0123456789";
	for (size_t n = 0; n < bytes; n += 78) {
		for (int k = 0; k < 76; k++)
			mt_buf_append_char(m, chars[(n / 78 * 7 + (size_t)k * 13 + seed) % (sizeof(chars) - 1)]);
		mt_buf_append_str(m, "\r\n");
	}
}

static void header(struct mt_buf *m, const char *subject)
{
	mt_buf_appendf(m, "Return-Path: <a@example.test>\r\nReceived: from mx.example.test by "
		       "store; Tue, 1 Dec 2026 10:00:00 +0000\r\nFrom: \"Ann Example\" "
		       "<ann@example.test>\r\nTo: Bob <bob@example.test>, carl@example.test\r\n"
		       "Subject: %s\r\nDate: Tue, 1 Dec 2026 10:00:00 +0000\r\n"
		       "Message-ID: <%s@example.test>\r\nMIME-Version: 1.0\r\n", subject, subject);
}

static void make_messages(struct mt_buf *msgs, const char **names)
{
	names[0] = "text-24k";
	header(&msgs[0], "plain");
	mt_buf_append_str(&msgs[0], "Content-Type: text/plain; charset=utf-8\r\n\r\n");
	text_lines(&msgs[0], 24 * 1024, 1);

	names[1] = "alternative-12k";
	header(&msgs[1], "alt");
	mt_buf_append_str(&msgs[1], "Content-Type: multipart/alternative; boundary=\"=_a\"\r\n\r\n"
			  "--=_a\r\nContent-Type: text/plain; charset=utf-8\r\n"
			  "Content-Transfer-Encoding: quoted-printable\r\n\r\n");
	text_lines(&msgs[1], 4 * 1024, 2);
	mt_buf_append_str(&msgs[1], "--=_a\r\nContent-Type: text/html; charset=utf-8\r\n"
			  "Content-Transfer-Encoding: quoted-printable\r\n\r\n");
	text_lines(&msgs[1], 8 * 1024, 3);
	mt_buf_append_str(&msgs[1], "--=_a--\r\n");

	names[2] = "attachment-2m";
	header(&msgs[2], "attach");
	mt_buf_append_str(&msgs[2], "Content-Type: multipart/mixed; boundary=\"=_m\"\r\n\r\n"
			  "--=_m\r\nContent-Type: text/plain\r\n\r\n");
	text_lines(&msgs[2], 2048, 4);
	mt_buf_append_str(&msgs[2], "--=_m\r\nContent-Type: application/pdf; name=\"r.pdf\"\r\n"
			  "Content-Disposition: attachment; filename=\"r.pdf\"\r\n"
			  "Content-Transfer-Encoding: base64\r\n\r\n");
	text_lines(&msgs[2], 2 * 1024 * 1024, 5);
	mt_buf_append_str(&msgs[2], "--=_m--\r\n");

	names[3] = "forward-nested";
	header(&msgs[3], "fwd");
	mt_buf_append_str(&msgs[3], "Content-Type: multipart/mixed; boundary=b0\r\n\r\n"
			  "--b0\r\nContent-Type: text/plain\r\n\r\nsee below\r\n");
	for (int d = 1; d <= 3; d++)
		mt_buf_appendf(&msgs[3], "--b%d\r\nContent-Type: message/rfc822\r\n\r\n"
			       "From: f%d@example.test\r\nSubject: level %d\r\n"
			       "Content-Type: multipart/mixed; boundary=b%d\r\n\r\n"
			       "--b%d\r\nContent-Type: text/plain\r\n\r\nlevel %d text\r\n",
			       d - 1, d, d, d, d, d);
	for (int d = 3; d >= 0; d--)
		mt_buf_appendf(&msgs[3], "--b%d--\r\n", d);
}

static size_t mailtier_parse(const struct mt_buf *m)
{
	struct mt_mime_scan *scan = mt_mime_scan_new();
	for (size_t at = 0; at < m->len; at += 65536)
		mt_mime_scan_feed(scan, m->data + at, m->len - at < 65536 ? m->len - at : 65536);
	mt_mime_scan_finish(scan);
	unsigned int count;
	const struct mt_mime_entity *e = mt_mime_scan_entities(scan, &count);
	struct mt_buf record = MT_BUF_INIT;
	mt_mime_record_write(&record, e, count);
	size_t len = record.len;
	mt_buf_free(&record);
	mt_mime_scan_free(&scan);
	return len;
}

static void gmime_part(GMimeObject *parent, GMimeObject *part, gpointer data)
{
	(void)parent;
	size_t *n = data;
	GMimeContentType *ct = g_mime_object_get_content_type(part);
	*n += strlen(g_mime_content_type_get_media_type(ct)) +
	      (g_mime_object_get_content_id(part) != NULL);
}

static size_t gmime_parse(const struct mt_buf *m)
{
	GMimeStream *stream = g_mime_stream_mem_new_with_buffer(m->data, m->len);
	GMimeParser *parser = g_mime_parser_new_with_stream(stream);
	GMimeMessage *msg = g_mime_parser_construct_message(parser, NULL);
	size_t n = 0;
	if (msg != NULL) {
		const char *s = g_mime_message_get_subject(msg);
		n += s != NULL ? strlen(s) : 0;
		n += (size_t)internet_address_list_length(g_mime_message_get_from(msg));
		n += (size_t)internet_address_list_length(g_mime_message_get_to(msg));
		g_mime_message_foreach(msg, gmime_part, &n);
		g_object_unref(msg);
	}
	g_object_unref(parser);
	g_object_unref(stream);
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int runs = 5, iterations = 200;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--runs") == 0)
			runs = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--iterations") == 0)
			iterations = atoi(argv[i + 1]);
	}
	if (runs < 1 || runs > 99 || iterations < 1)
		return 2;
	g_mime_init();
	struct mt_buf msgs[4] = { MT_BUF_INIT, MT_BUF_INIT, MT_BUF_INIT, MT_BUF_INIT };
	const char *names[4];
	make_messages(msgs, names);
	printf("%-16s %9s %12s %12s %8s\n", "message", "octets", "mailtier_us", "gmime_us", "ratio");
	volatile size_t sink = 0;
	for (int k = 0; k < 4; k++) {
		double mt[99], gm[99];
		for (int r = 0; r < runs; r++) {
			double t0 = cpu_now();
			for (int i = 0; i < iterations; i++)
				sink += mailtier_parse(&msgs[k]);
			double t1 = cpu_now();
			for (int i = 0; i < iterations; i++)
				sink += gmime_parse(&msgs[k]);
			double t2 = cpu_now();
			mt[r] = (t1 - t0) / iterations * 1e6;
			gm[r] = (t2 - t1) / iterations * 1e6;
		}
		qsort(mt, (size_t)runs, sizeof(double), cmp_double);
		qsort(gm, (size_t)runs, sizeof(double), cmp_double);
		printf("%-16s %9zu %12.1f %12.1f %7.2fx\n", names[k], msgs[k].len, mt[runs / 2],
		       gm[runs / 2], gm[runs / 2] / mt[runs / 2]);
	}
	for (int k = 0; k < 4; k++)
		mt_buf_free(&msgs[k]);
	return sink == 0;
}
