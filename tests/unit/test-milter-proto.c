/* test-milter-proto.c — unit tests for lib-mail/milter-proto.c, the
 * Sendmail milter protocol (v6), MTA side: the exact octets of every
 * packet written for a filter (OPTNEG, MACRO, CONNECT for each family,
 * HELO/MAIL/RCPT strings, HEADER, BODY, the commands without data);
 * packets taken from a stream fed whole, back to back and one octet at a
 * time, and the lengths that lose the stream (0, over the bound); every
 * reply code decoded in its valid shapes and refused in each malformed
 * one (a string without its NUL, data after the last field, a bad header
 * name, a value with a bare CR or an unfolded LF, a short index, OPTNEG
 * macro lists for a bad or repeated stage, REPLYCODE texts that are not a
 * 4xx/5xx reply); the reply text rule on its own; the reply names.
 *
 * Every packet is decoded from a heap copy of exactly its size, so a
 * read past a packet's end is an ASan error in the sanitizer build. */
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
#include "milter-proto.h"

#define S(literal) literal, sizeof(literal) - 1

/* The buffer holds exactly want[0..len). */
static void expect_bytes(const struct mt_buf *buf, const char *want, size_t len)
{
	assert_int_equal(buf->len, len);
	assert_memory_equal(buf->data, want, len);
}

#define EXPECT(buf, literal) expect_bytes(buf, literal, sizeof(literal) - 1)

/* ---- Writers ---- */

static void test_put_optneg(void **state)
{
	struct mt_buf out = MT_BUF_INIT;

	(void)state;
	mt_milter_put_optneg(&out, MT_MILTER_VERSION, MT_MILTER_ACT_ALL,
			     MT_MILTER_P_SKIP | MT_MILTER_P_RCPT_REJ |
			     MT_MILTER_P_HDR_LEADSPC);
	EXPECT(&out, "\0\0\0\x0d" "O" "\0\0\0\x06" "\0\0\x01\xff" "\0\x10\x0c\0");
	mt_buf_free(&out);
}

static void test_put_macros(void **state)
{
	struct mt_buf out = MT_BUF_INIT;
	const char *names[] = { "j", "{daemon_name}", "_", "{unset}" };
	const char *values[] = { "mx.example", "mailtier",
				 "client.example [192.0.2.1]", NULL };

	(void)state;
	/* The pair without a value is left out. */
	mt_milter_put_macros(&out, MT_MILTER_CMD_CONNECT, names, values, 4);
	EXPECT(&out, "\0\0\0\x43" "DC" "j\0mx.example\0{daemon_name}\0mailtier\0"
	       "_\0client.example [192.0.2.1]\0");
	mt_buf_reset(&out);
	mt_milter_put_macros(&out, MT_MILTER_CMD_MAIL, names, values, 0);
	EXPECT(&out, "\0\0\0\x02" "DM");
	mt_buf_free(&out);
}

static void test_put_connect(void **state)
{
	struct mt_buf out = MT_BUF_INIT;

	(void)state;
	mt_milter_put_connect(&out, "mail.example", '4', 25, "192.0.2.1");
	EXPECT(&out, "\0\0\0\x1b" "Cmail.example\0" "4" "\0\x19" "192.0.2.1\0");
	mt_buf_reset(&out);
	mt_milter_put_connect(&out, "[IPv6:2001:db8::1]", '6', 587, "2001:db8::1");
	EXPECT(&out, "\0\0\0\x23" "C[IPv6:2001:db8::1]\0" "6" "\x02\x4b" "2001:db8::1\0");
	mt_buf_reset(&out);
	mt_milter_put_connect(&out, "localhost", 'L', 0, "/run/mailtier/smtp.sock");
	EXPECT(&out, "\0\0\0\x26" "Clocalhost\0" "L" "\0\0" "/run/mailtier/smtp.sock\0");
	mt_buf_reset(&out);
	/* Unknown: nothing after the family, whatever the caller passed. */
	mt_milter_put_connect(&out, "unknown", 'U', 25, "192.0.2.1");
	EXPECT(&out, "\0\0\0\x0a" "Cunknown\0" "U");
	mt_buf_free(&out);
}

static void test_put_strings(void **state)
{
	struct mt_buf out = MT_BUF_INIT;
	const char *helo[] = { "client.example" };
	const char *mail[] = { "<a@example.org>", "SIZE=1000", "BODY=8BITMIME" };
	const char *rcpt[] = { "<b@example.net>" };

	(void)state;
	mt_milter_put_strings(&out, MT_MILTER_CMD_HELO, helo, 1);
	EXPECT(&out, "\0\0\0\x10" "Hclient.example\0");
	mt_buf_reset(&out);
	mt_milter_put_strings(&out, MT_MILTER_CMD_MAIL, mail, 3);
	EXPECT(&out, "\0\0\0\x29" "M<a@example.org>\0SIZE=1000\0BODY=8BITMIME\0");
	/* A second packet is appended after the first. */
	mt_milter_put_strings(&out, MT_MILTER_CMD_RCPT, rcpt, 1);
	EXPECT(&out, "\0\0\0\x29" "M<a@example.org>\0SIZE=1000\0BODY=8BITMIME\0"
	       "\0\0\0\x11" "R<b@example.net>\0");
	mt_buf_free(&out);
}

static void test_put_header_body(void **state)
{
	struct mt_buf out = MT_BUF_INIT;

	(void)state;
	mt_milter_put_header(&out, "Subject", "hello\n world");
	EXPECT(&out, "\0\0\0\x16" "LSubject\0hello\n world\0");
	mt_buf_reset(&out);
	mt_milter_put_header(&out, "X-Empty", "");
	EXPECT(&out, "\0\0\0\x0a" "LX-Empty\0\0");
	mt_buf_reset(&out);
	/* Body octets go as they are, NUL included, no terminator added. */
	mt_milter_put_body(&out, "line 1\r\n\0x", 10);
	EXPECT(&out, "\0\0\0\x0b" "Bline 1\r\n\0x");
	mt_buf_reset(&out);
	mt_milter_put_body(&out, NULL, 0);
	EXPECT(&out, "\0\0\0\x01" "B");
	mt_buf_reset(&out);
	/* The largest chunk: length 0x10000 (the 'B' and 65535 octets). */
	char *chunk = calloc(1, MT_MILTER_CHUNK_SIZE);
	assert_non_null(chunk);
	mt_milter_put_body(&out, chunk, MT_MILTER_CHUNK_SIZE);
	assert_int_equal(out.len, 5 + MT_MILTER_CHUNK_SIZE);
	assert_memory_equal(out.data, "\0\x01\0\0" "B", 5);
	free(chunk);
	mt_buf_free(&out);
}

static void test_put_command(void **state)
{
	static const enum mt_milter_cmd cmds[] = {
		MT_MILTER_CMD_DATA, MT_MILTER_CMD_EOH, MT_MILTER_CMD_BODYEOB,
		MT_MILTER_CMD_ABORT, MT_MILTER_CMD_QUIT, MT_MILTER_CMD_QUIT_NC,
	};
	struct mt_buf out = MT_BUF_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		mt_milter_put_command(&out, cmds[i]);
	EXPECT(&out, "\0\0\0\x01T" "\0\0\0\x01N" "\0\0\0\x01" "E"
	       "\0\0\0\x01" "A" "\0\0\0\x01Q" "\0\0\0\x01K");
	mt_buf_free(&out);
}

/* ---- Taking packets from a stream ---- */

/* take() over an exact-size heap copy of buf[0..len). */
static enum mt_milter_take take_copy(const void *buf, size_t len, size_t max,
				     struct mt_milter_packet *packet,
				     size_t *used, unsigned char **copy_r)
{
	unsigned char *copy = malloc(len > 0 ? len : 1);

	assert_non_null(copy);
	if (len > 0)
		memcpy(copy, buf, len);
	*copy_r = copy;
	return mt_milter_take(copy, len, max, packet, used);
}

static void test_take_octet_by_octet(void **state)
{
	static const char stream[] = "\0\0\0\x13" "y550 5.7.1 go away\0";
	const size_t len = sizeof(stream) - 1;
	struct mt_milter_packet packet;
	unsigned char *copy;
	size_t used = 0;

	(void)state;
	for (size_t have = 0; have < len; have++) {
		assert_int_equal(take_copy(stream, have, MT_MILTER_PACKET_MAX,
					   &packet, &used, &copy), MT_MILTER_TAKE_MORE);
		free(copy);
	}
	assert_int_equal(take_copy(stream, len, MT_MILTER_PACKET_MAX, &packet,
				   &used, &copy), MT_MILTER_TAKE_PACKET);
	assert_int_equal(used, len);
	assert_int_equal(packet.code, 'y');
	assert_int_equal(packet.len, 18);
	assert_ptr_equal(packet.data, copy + 5);
	assert_memory_equal(packet.data, "550 5.7.1 go away\0", 18);
	free(copy);
}

static void test_take_back_to_back(void **state)
{
	/* CONTINUE, ADDHEADER, then an ADDRCPT cut short: two packets and
	 * the start of a third. */
	static const char stream[] = "\0\0\0\x01" "c"
		"\0\0\0\x09" "hX-A\0val\0"
		"\0\0\0\x05" "+<a";
	const size_t len = sizeof(stream) - 1;
	struct mt_milter_packet packet;
	size_t used, at = 0;

	(void)state;
	assert_int_equal(mt_milter_take(stream, len, MT_MILTER_PACKET_MAX, &packet, &used),
			 MT_MILTER_TAKE_PACKET);
	assert_int_equal(packet.code, 'c');
	assert_int_equal(packet.len, 0);
	assert_int_equal(used, 5);
	at += used;
	assert_int_equal(mt_milter_take(stream + at, len - at, MT_MILTER_PACKET_MAX,
					&packet, &used), MT_MILTER_TAKE_PACKET);
	assert_int_equal(packet.code, 'h');
	assert_int_equal(packet.len, 8);
	assert_ptr_equal(packet.data, (const unsigned char *)stream + at + 5);
	assert_int_equal(used, 13);
	at += used;
	assert_int_equal(mt_milter_take(stream + at, len - at, MT_MILTER_PACKET_MAX,
					&packet, &used), MT_MILTER_TAKE_MORE);
}

static void test_take_bad_lengths(void **state)
{
	struct mt_milter_packet packet;
	size_t used;

	(void)state;
	/* Length 0 has no room for the code: lost as soon as it is read. */
	assert_int_equal(mt_milter_take("\0\0\0\0", 4, MT_MILTER_PACKET_MAX, &packet, &used),
			 MT_MILTER_TAKE_BAD);
	assert_int_equal(mt_milter_take("\0\0\0\0c", 5, MT_MILTER_PACKET_MAX, &packet, &used),
			 MT_MILTER_TAKE_BAD);
	/* Over the bound: BAD on the length alone, before the data comes. */
	assert_int_equal(mt_milter_take("\0\x11\0\x01", 4, MT_MILTER_PACKET_MAX, &packet, &used),
			 MT_MILTER_TAKE_BAD);
	assert_int_equal(mt_milter_take("\xff\xff\xff\xff", 4, MT_MILTER_PACKET_MAX,
					&packet, &used), MT_MILTER_TAKE_BAD);
	/* Fewer than 4 octets cannot be judged yet. */
	assert_int_equal(mt_milter_take("\xff\xff\xff", 3, MT_MILTER_PACKET_MAX, &packet, &used),
			 MT_MILTER_TAKE_MORE);
	/* The bound itself is allowed, one more is not. */
	assert_int_equal(mt_milter_take("\0\0\0\x03" "b12", 7, 3, &packet, &used),
			 MT_MILTER_TAKE_PACKET);
	assert_int_equal(used, 7);
	assert_int_equal(mt_milter_take("\0\0\0\x03" "b12", 7, 2, &packet, &used),
			 MT_MILTER_TAKE_BAD);
	/* MT_MILTER_PACKET_MAX itself waits for its data. */
	assert_int_equal(mt_milter_take("\0\x11\0\0", 4, MT_MILTER_PACKET_MAX, &packet, &used),
			 MT_MILTER_TAKE_MORE);
}

/* ---- Decoding replies ---- */

/* The heap copy the last decode() read from (the reply points into it). */
static unsigned char *decoded_copy;

static void release_copy(void)
{
	free(decoded_copy);
	decoded_copy = NULL;
}

/* Decode code + data[0..len) from an exact-size heap copy. */
static bool decode(char code, const char *data, size_t len,
		   struct mt_milter_reply *reply, const char **error)
{
	release_copy();
	decoded_copy = malloc(len > 0 ? len : 1);
	assert_non_null(decoded_copy);
	if (len > 0)
		memcpy(decoded_copy, data, len);
	struct mt_milter_packet packet = { code, decoded_copy, len };

	*error = NULL;
	return mt_milter_reply_decode(&packet, reply, error);
}

static void test_decode_no_data(void **state)
{
	static const char codes[] = {
		MT_MILTER_R_ACCEPT, MT_MILTER_R_CONTINUE, MT_MILTER_R_DISCARD,
		MT_MILTER_R_REJECT, MT_MILTER_R_TEMPFAIL, MT_MILTER_R_SKIP,
		MT_MILTER_R_PROGRESS, MT_MILTER_R_SHUTDOWN, MT_MILTER_R_CONN_FAIL,
	};
	struct mt_milter_reply reply;
	const char *error;

	(void)state;
	for (size_t i = 0; i < sizeof(codes); i++) {
		assert_true(decode(codes[i], "", 0, &reply, &error));
		assert_int_equal(reply.code, codes[i]);
		assert_null(reply.name);
		assert_false(decode(codes[i], S("\0"), &reply, &error));
		assert_string_equal(error, "data in a milter reply that takes none");
		assert_false(decode(codes[i], S("x"), &reply, &error));
	}
	release_copy();
}

static void test_decode_headers(void **state)
{
	struct mt_milter_reply reply;
	const char *error;

	(void)state;
	assert_true(decode('h', S("X-Spam-Flag\0YES\0"), &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_ADDHEADER);
	assert_string_equal(reply.name, "X-Spam-Flag");
	assert_string_equal(reply.value, "YES");
	assert_ptr_equal(reply.name, decoded_copy);
	/* Folded with LF (libmilter) or CRLF, and empty values. */
	assert_true(decode('h', S("Authentication-Results\0mx;\n\tdkim=pass\r\n spf=pass\0"),
			   &reply, &error));
	assert_string_equal(reply.value, "mx;\n\tdkim=pass\r\n spf=pass");
	assert_true(decode('h', S("X-A\0\0"), &reply, &error));
	assert_string_equal(reply.value, "");

	assert_true(decode('i', S("\0\0\0\x02X-Inserted\0v\0"), &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_INSHEADER);
	assert_int_equal(reply.index, 2);
	assert_string_equal(reply.name, "X-Inserted");
	assert_string_equal(reply.value, "v");
	/* CHGHEADER with an empty value: delete the first Subject. */
	assert_true(decode('m', S("\0\0\0\x01Subject\0\0"), &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_CHGHEADER);
	assert_int_equal(reply.index, 1);
	assert_string_equal(reply.name, "Subject");
	assert_string_equal(reply.value, "");
	assert_true(decode('m', S("\x01\x02\x03\x04X\0y\0"), &reply, &error));
	assert_int_equal(reply.index, 0x01020304);

	/* The longest name allowed, and one more. */
	char name[MT_MILTER_HEADER_NAME_MAX + 3];
	memset(name, 'N', MT_MILTER_HEADER_NAME_MAX);
	memcpy(name + MT_MILTER_HEADER_NAME_MAX, "\0\0", 2);
	assert_true(decode('h', name, MT_MILTER_HEADER_NAME_MAX + 2, &reply, &error));
	memset(name, 'N', MT_MILTER_HEADER_NAME_MAX + 1);
	memcpy(name + MT_MILTER_HEADER_NAME_MAX + 1, "\0\0", 2);
	assert_false(decode('h', name, MT_MILTER_HEADER_NAME_MAX + 3, &reply, &error));
	assert_string_equal(error, "invalid header field name from milter");
	release_copy();
}

static void test_decode_addresses(void **state)
{
	struct mt_milter_reply reply;
	const char *error;

	(void)state;
	assert_true(decode('+', S("<new@example.org>\0"), &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_ADDRCPT);
	assert_string_equal(reply.name, "<new@example.org>");
	assert_null(reply.value);
	assert_true(decode('-', S("<old@example.org>\0"), &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_DELRCPT);
	assert_string_equal(reply.name, "<old@example.org>");

	assert_true(decode('2', S("<b@example.net>\0NOTIFY=NEVER ORCPT=rfc822;b@example.net\0"),
			   &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_ADDRCPT_PAR);
	assert_string_equal(reply.name, "<b@example.net>");
	assert_string_equal(reply.value, "NOTIFY=NEVER ORCPT=rfc822;b@example.net");
	assert_true(decode('2', S("<b@example.net>\0"), &reply, &error));
	assert_null(reply.value);

	assert_true(decode('e', S("<>\0"), &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_CHGFROM);
	assert_string_equal(reply.name, "<>");
	assert_null(reply.value);
	assert_true(decode('e', S("<bounce@example.org>\0SIZE=100\0"), &reply, &error));
	assert_string_equal(reply.value, "SIZE=100");
	/* libmilter sends "" for args that are an empty string. */
	assert_true(decode('e', S("<a@example.org>\0\0"), &reply, &error));
	assert_string_equal(reply.value, "");

	assert_true(decode('q', S("virus: Eicar-Test-Signature\0"), &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_QUARANTINE);
	assert_string_equal(reply.name, "virus: Eicar-Test-Signature");

	/* The longest address allowed, and one more. */
	char addr[MT_MILTER_ADDRESS_MAX + 2];
	memset(addr, 'a', MT_MILTER_ADDRESS_MAX);
	addr[MT_MILTER_ADDRESS_MAX] = '\0';
	assert_true(decode('+', addr, MT_MILTER_ADDRESS_MAX + 1, &reply, &error));
	memset(addr, 'a', MT_MILTER_ADDRESS_MAX + 1);
	addr[MT_MILTER_ADDRESS_MAX + 1] = '\0';
	assert_false(decode('+', addr, MT_MILTER_ADDRESS_MAX + 2, &reply, &error));
	assert_string_equal(error, "invalid address from milter");
	release_copy();
}

static void test_decode_replycode(void **state)
{
	struct mt_milter_reply reply;
	const char *error;

	(void)state;
	assert_true(decode('y', S("550 5.7.1 Message rejected as spam\0"), &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_REPLYCODE);
	assert_int_equal(reply.reply_code, 550);
	assert_string_equal(reply.name, "550 5.7.1 Message rejected as spam");
	assert_true(decode('y', S("451-4.7.1 Greylisted\r\n451-4.7.1 please\r\n451 4.7.1 retry\0"),
			   &reply, &error));
	assert_int_equal(reply.reply_code, 451);
	assert_string_equal(reply.name, "451-4.7.1 Greylisted\r\n451-4.7.1 please\r\n451 4.7.1 retry");
	assert_true(decode('y', S("421\0"), &reply, &error));
	assert_int_equal(reply.reply_code, 421);
	release_copy();
}

static void test_decode_replbody_optneg(void **state)
{
	struct mt_milter_reply reply;
	const char *error;

	(void)state;
	assert_true(decode('b', S("new body\r\n\0with NUL"), &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_REPLBODY);
	assert_int_equal(reply.body_len, 19);
	assert_ptr_equal(reply.body, decoded_copy);
	assert_true(decode('b', "", 0, &reply, &error));
	assert_int_equal(reply.body_len, 0);

	assert_true(decode('O', S("\0\0\0\x06" "\0\0\x01\xff" "\0\x1f\xff\xff"), &reply, &error));
	assert_int_equal(reply.code, MT_MILTER_R_OPTNEG);
	assert_int_equal(reply.optneg.version, 6);
	assert_int_equal(reply.optneg.actions, 0x1ff);
	assert_int_equal(reply.optneg.protocol, 0x1fffff);
	for (int i = 0; i < MT_MILTER_STAGE_COUNT; i++)
		assert_null(reply.optneg.symlist[i]);

	/* Macro lists, in any stage order; EOH is the last stage. */
	assert_true(decode('O', S("\0\0\0\x06" "\0\0\0\x01" "\0\0\0\0"
				  "\0\0\0\x02{auth_authen} {mail_addr}\0"
				  "\0\0\0\0j {client_addr}\0"
				  "\0\0\0\x06\0"), &reply, &error));
	assert_int_equal(reply.optneg.actions, MT_MILTER_ACT_ADDHDRS);
	assert_string_equal(reply.optneg.symlist[MT_MILTER_STAGE_MAIL],
			    "{auth_authen} {mail_addr}");
	assert_string_equal(reply.optneg.symlist[MT_MILTER_STAGE_CONNECT], "j {client_addr}");
	assert_string_equal(reply.optneg.symlist[MT_MILTER_STAGE_EOH], "");
	assert_null(reply.optneg.symlist[MT_MILTER_STAGE_HELO]);
	assert_null(reply.optneg.symlist[MT_MILTER_STAGE_RCPT]);
	assert_null(reply.optneg.symlist[MT_MILTER_STAGE_DATA]);
	assert_null(reply.optneg.symlist[MT_MILTER_STAGE_EOM]);
	release_copy();
}

struct bad_case {
	char code;
	const char *data;
	size_t len;
	const char *error;
};

#define BAD(code, literal, error) { code, literal, sizeof(literal) - 1, error }
#define E_NONUL_HDR "milter header name or value not NUL-terminated"
#define E_TRAIL "data after the last field of a milter reply"
#define E_NAME "invalid header field name from milter"
#define E_VALUE "milter header value with a bare CR or an unfolded line break"
#define E_INDEX "milter header change without its index"
#define E_ADDR "invalid address from milter"
#define E_ARGS "invalid ESMTP parameters from milter"
#define E_REASON "invalid quarantine reason from milter"
#define E_TEXT "invalid reply text from milter"

static const struct bad_case bad_cases[] = {
	BAD('Z', "", "unknown milter reply code"),
	BAD('\0', "", "unknown milter reply code"),
	BAD('l', "\0\0\0\0j\0", "milter SETSYMLIST outside OPTNEG"),
	/* headers: missing NUL, trailing data */
	BAD('h', "X-A\0value", E_NONUL_HDR),
	BAD('h', "X-A\0", E_NONUL_HDR),
	BAD('h', "X-A", E_NONUL_HDR),
	BAD('h', "", E_NONUL_HDR),
	BAD('h', "X-A\0v\0x", E_TRAIL),
	BAD('h', "X-A\0v\0\0", E_TRAIL),
	/* header names: RFC 5322 2.2 */
	BAD('h', "\0v\0", E_NAME),
	BAD('h', "X A\0v\0", E_NAME),
	BAD('h', "X-A:\0v\0", E_NAME),
	BAD('h', "X\tA\0v\0", E_NAME),
	BAD('h', "X-\x7f\0v\0", E_NAME),
	BAD('h', "X-\xc3\xa9\0v\0", E_NAME),
	BAD('h', "X-A\r\nBcc\0v\0", E_NAME),
	/* header values: no bare CR, every line break a fold */
	BAD('h', "X-A\0a\rb\0", E_VALUE),
	BAD('h', "X-A\0a\r\0", E_VALUE),
	BAD('h', "X-A\0a\r\r\n b\0", E_VALUE),
	BAD('h', "X-A\0a\n\0", E_VALUE),
	BAD('h', "X-A\0a\nBcc: evil@example.org\0", E_VALUE),
	BAD('h', "X-A\0a\r\nBcc: evil@example.org\0", E_VALUE),
	BAD('h', "X-A\0a\r\n\r\nbody\0", E_VALUE),
	BAD('h', "X-A\0a\r\n\0", E_VALUE),
	/* INSHEADER / CHGHEADER: the 4-octet index first */
	BAD('i', "", E_INDEX),
	BAD('i', "\0\0\0", E_INDEX),
	BAD('m', "\0\0", E_INDEX),
	BAD('i', "\0\0\0\x01", E_NONUL_HDR),
	BAD('m', "\0\0\0\x01X-A\0v", E_NONUL_HDR),
	BAD('i', "\0\0\0\x01X:A\0v\0", E_NAME),
	BAD('m', "\0\0\0\x01X-A\0a\nb\0", E_VALUE),
	BAD('i', "\0\0\0\x01X-A\0v\0\0", E_TRAIL),
	/* addresses */
	BAD('+', "", E_ADDR),
	BAD('+', "\0", E_ADDR),
	BAD('+', "<a@example.org>", E_ADDR),
	BAD('+', "<a@example.org>\r\n\0", E_ADDR),
	BAD('-', "<a\t@example.org>\0", E_ADDR),
	BAD('-', "<a\x7f@example.org>\0", E_ADDR),
	BAD('+', "<a@example.org>\0NOTIFY=NEVER\0", E_TRAIL),
	BAD('-', "<a@example.org>\0\0", E_TRAIL),
	BAD('2', "\0", E_ADDR),
	BAD('2', "<a@example.org>", E_ADDR),
	BAD('2', "<a@example.org>\0NOTIFY=NEVER", E_ARGS),
	BAD('2', "<a@example.org>\0NOTIFY=\x01\0", E_ARGS),
	BAD('2', "<a@example.org>\0A\0B\0", E_TRAIL),
	BAD('e', "\0", E_ADDR),
	BAD('e', "", E_ADDR),
	BAD('e', "<a@example.org>\0SIZE=1\r\n\0", E_ARGS),
	BAD('e', "<a@example.org>\0SIZE=1\0\0", E_TRAIL),
	/* quarantine */
	BAD('q', "", E_REASON),
	BAD('q', "\0", E_REASON),
	BAD('q', "spam", E_REASON),
	BAD('q', "spam\nyes\0", E_REASON),
	BAD('q', "spam\0\0", E_TRAIL),
	/* REPLYCODE */
	BAD('y', "", E_TEXT),
	BAD('y', "\0", E_TEXT),
	BAD('y', "550 5.7.1 no NUL", E_TEXT),
	BAD('y', "550 5.7.1 x\0y", E_TRAIL),
	BAD('y', "250 2.0.0 ok\0", E_TEXT),
	BAD('y', "354 go ahead\0", E_TEXT),
	BAD('y', "650 x\0", E_TEXT),
	BAD('y', "550-first\r\n551 second\0", E_TEXT),
	BAD('y', "550-first\r\n450 second\0", E_TEXT),
	BAD('y', "550 4.7.1 x\0", E_TEXT),
	BAD('y', "451 5.7.1 x\0", E_TEXT),
	BAD('y', "550-5.7.1 a\r\n550 4.7.1 b\0", E_TEXT),
	BAD('y', "550 x\ny\0", E_TEXT),
	BAD('y', "550-x\n550 y\0", E_TEXT),
	BAD('y', "550 x\ry\0", E_TEXT),
	BAD('y', "550 x\r\0", E_TEXT),
	BAD('y', "550 x\r\n\0", E_TEXT),
	BAD('y', "550-x\0", E_TEXT),
	BAD('y', "550 a\r\n550 b\0", E_TEXT),
	BAD('y', "550\r\n550 b\0", E_TEXT),
	BAD('y', "55\0", E_TEXT),
	BAD('y', "5500 x\0", E_TEXT),
	BAD('y', "5x0 x\0", E_TEXT),
	BAD('y', "550 bell\x07\0", E_TEXT),
	/* OPTNEG */
	BAD('O', "", "milter OPTNEG shorter than 12 octets"),
	BAD('O', "\0\0\0\x06\0\0\0\0\0\0\0", "milter OPTNEG shorter than 12 octets"),
	BAD('O', "\0\0\0\x06\0\0\0\0\0\0\0\0\0\0\x01", "milter OPTNEG macro list without its stage"),
	BAD('O', "\0\0\0\x06\0\0\0\0\0\0\0\0\0\0\0\x07j\0",
	    "milter OPTNEG macro list for an unknown stage"),
	BAD('O', "\0\0\0\x06\0\0\0\0\0\0\0\0\xff\xff\xff\xffj\0",
	    "milter OPTNEG macro list for an unknown stage"),
	BAD('O', "\0\0\0\x06\0\0\0\0\0\0\0\0\0\0\0\x01j\0\0\0\0\x01{x}\0",
	    "milter OPTNEG macro list for one stage twice"),
	BAD('O', "\0\0\0\x06\0\0\0\0\0\0\0\0\0\0\0\x01j", "milter OPTNEG macro list not NUL-terminated"),
	BAD('O', "\0\0\0\x06\0\0\0\0\0\0\0\0\0\0\0\x01", "milter OPTNEG macro list not NUL-terminated"),
};

static void test_decode_malformed(void **state)
{
	struct mt_milter_reply reply;
	const char *error;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];

		if (decode(c->code, c->data, c->len, &reply, &error))
			fail_msg("case %zu ('%c'): accepted", i, c->code);
		if (error == NULL || strcmp(error, c->error) != 0)
			fail_msg("case %zu ('%c'): error '%s', want '%s'", i, c->code,
				 error != NULL ? error : "(null)", c->error);
		/* The code is kept even when the rest is refused. */
		assert_int_equal((char)reply.code, c->code);
	}
	release_copy();
}

/* ---- The reply text rule ---- */

static void test_reply_text(void **state)
{
	static const char *const valid[] = {
		"550 5.7.1 rejected",
		"421 4.3.2 shutting down",
		"550",
		"550 ",
		"552 5.3.4",
		"452 4.2.2\tmailbox full",
		"550-5.7.1 first\r\n550-5.7.1 second\r\n550 5.7.1 third",
		"550-a\r\n550",
		"550 caf\xc3\xa9 8-bit text",
		"550 tab\there",
		"550 4.7.1x not an enhanced code",
		"550 4.7.1000 not an enhanced code",
		"550 4.7 not an enhanced code",
	};
	static const char *const invalid[] = {
		"", "5", "55", "5x0", "250 ok", "199 x", "600 x", "050 x",
		"550x", "550_x", "550-x", "550 a\r\n550 b", "550-a\r\n551 b",
		"550 4.7.1 x", "550 2.0.0 x", "450 5.1.1 x", "550 3.1.1 x",
		"550-5.7.1 a\r\n550 4.7.1 b", "550 4.7.1", "550 4.7.1\tx",
		"550 x\n", "550 x\r", "550 x\r\n", "\r\n550 x", "550 x\ny",
		"550 \x01", "550 \x7f", "550 \x1b[31m", "499 9.9.9 class 9",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		if (!mt_milter_reply_text_valid(valid[i]))
			fail_msg("refused: '%s'", valid[i]);
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
		if (mt_milter_reply_text_valid(invalid[i]))
			fail_msg("accepted: '%s'", invalid[i]);
}

/* MT_MILTER_REPLY_LINES_MAX lines and MT_MILTER_REPLY_TEXT_MAX octets. */
static void test_reply_text_bounds(void **state)
{
	struct mt_buf text = MT_BUF_INIT;

	(void)state;
	for (unsigned int i = 1; i < MT_MILTER_REPLY_LINES_MAX; i++)
		mt_buf_append_str(&text, "451-4.7.1 line\r\n");
	mt_buf_append_str(&text, "451 4.7.1 last");
	assert_true(mt_milter_reply_text_valid(mt_buf_cstr(&text)));
	mt_buf_insert(&text, 0, "451-4.7.1 line\r\n", 16);
	assert_false(mt_milter_reply_text_valid(mt_buf_cstr(&text)));

	mt_buf_reset(&text);
	mt_buf_append_str(&text, "550 ");
	while (text.len < MT_MILTER_REPLY_TEXT_MAX)
		mt_buf_append_char(&text, 'x');
	assert_true(mt_milter_reply_text_valid(mt_buf_cstr(&text)));
	mt_buf_append_char(&text, 'x');
	assert_false(mt_milter_reply_text_valid(mt_buf_cstr(&text)));
	mt_buf_free(&text);
}

static void test_reply_names(void **state)
{
	static const struct { char code; const char *name; } names[] = {
		{ 'c', "continue" }, { 'a', "accept" }, { 'r', "reject" },
		{ 't', "tempfail" }, { 'd', "discard" }, { 'y', "replycode" },
		{ 's', "skip" }, { 'p', "progress" }, { 'h', "addheader" },
		{ 'i', "insheader" }, { 'm', "chgheader" }, { '+', "addrcpt" },
		{ '2', "addrcpt_par" }, { '-', "delrcpt" }, { 'e', "chgfrom" },
		{ 'b', "replbody" }, { 'q', "quarantine" }, { 'O', "optneg" },
		{ '4', "shutdown" }, { 'f', "conn_fail" }, { 'l', "setsymlist" },
	};
	int known = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_string_equal(mt_milter_reply_name(names[i].code), names[i].name);
	/* Exactly those 21 octets have a name. */
	for (int c = 0; c < 256; c++)
		if (strcmp(mt_milter_reply_name((char)c), "unknown") != 0)
			known++;
	assert_int_equal(known, 21);
	assert_string_equal(mt_milter_reply_name('Z'), "unknown");
	assert_string_equal(mt_milter_reply_name('\0'), "unknown");
}

/* What the writers make, the reader takes: framing is one format. */
static void test_written_packets_read_back(void **state)
{
	struct mt_buf out = MT_BUF_INIT;
	struct mt_milter_packet packet;
	size_t used;

	(void)state;
	mt_milter_put_header(&out, "X-A", "v");
	mt_milter_put_command(&out, MT_MILTER_CMD_EOH);
	assert_int_equal(mt_milter_take(out.data, out.len, MT_MILTER_PACKET_MAX, &packet, &used),
			 MT_MILTER_TAKE_PACKET);
	assert_int_equal(packet.code, 'L');
	assert_int_equal(packet.len, 6);
	assert_memory_equal(packet.data, "X-A\0v\0", 6);
	assert_int_equal(mt_milter_take(out.data + used, out.len - used, MT_MILTER_PACKET_MAX,
					&packet, &used), MT_MILTER_TAKE_PACKET);
	assert_int_equal(packet.code, 'N');
	assert_int_equal(packet.len, 0);
	mt_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_optneg),
		cmocka_unit_test(test_put_macros),
		cmocka_unit_test(test_put_connect),
		cmocka_unit_test(test_put_strings),
		cmocka_unit_test(test_put_header_body),
		cmocka_unit_test(test_put_command),
		cmocka_unit_test(test_take_octet_by_octet),
		cmocka_unit_test(test_take_back_to_back),
		cmocka_unit_test(test_take_bad_lengths),
		cmocka_unit_test(test_decode_no_data),
		cmocka_unit_test(test_decode_headers),
		cmocka_unit_test(test_decode_addresses),
		cmocka_unit_test(test_decode_replycode),
		cmocka_unit_test(test_decode_replbody_optneg),
		cmocka_unit_test(test_decode_malformed),
		cmocka_unit_test(test_reply_text),
		cmocka_unit_test(test_reply_text_bounds),
		cmocka_unit_test(test_reply_names),
		cmocka_unit_test(test_written_packets_read_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
