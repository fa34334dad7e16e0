/* milter-proto.h — the Sendmail mail filter ("milter") protocol, version
 * 6, MTA side: the packets an MTA sends to a filter (rspamd, OpenDKIM,
 * OpenDMARC, ClamAV's clamav-milter ...) and the reader of the filter's
 * answers. Pure functions: no sockets, no state; lib-mail/milter-client.c
 * runs a connection on them, the MTA decides what the answers mean.
 *
 * Wire format (Sendmail's libmilter, mfdef.h; Postfix's milter8.c is the
 * other MTA side): every packet is a 4-octet big-endian length of what
 * follows, one command or reply octet, then its data. Strings are
 * NUL-terminated; integers big-endian.
 *
 *   MTA → filter: OPTNEG, MACRO (before a stage), CONNECT, HELO, MAIL,
 *                 RCPT, DATA, HEADER..., EOH, BODY..., BODYEOB, ABORT,
 *                 QUIT (QUIT_NC: another connection's session follows)
 *   filter → MTA: OPTNEG (its version, actions, steps, macro lists);
 *                 CONTINUE, ACCEPT, REJECT, TEMPFAIL, DISCARD, REPLYCODE,
 *                 SKIP (body), PROGRESS (still working); at end of
 *                 message the modifications (ADDHEADER, INSHEADER,
 *                 CHGHEADER, ADDRCPT, ADDRCPT_PAR, DELRCPT, CHGFROM,
 *                 REPLBODY, QUARANTINE) before the final answer.
 *
 * Trust boundary: everything the filter sends is untrusted input: a
 * length is checked against a bound before anything is buffered, every
 * string must be NUL-terminated inside its packet, a reply code must be
 * 4xx or 5xx with text that holds no bare CR or LF (a multi-line reply is
 * CRLF-separated lines, each with the same code), a header name must be a
 * field name (RFC 5322 2.2: printable ASCII but ':'), a header value may
 * not hold NUL or bare CR, and only what the negotiated actions allow is
 * accepted (the caller checks the actions; this file checks shapes).
 * Fuzzed by tests/fuzz/fuzz-milter-reply.c.
 *
 * References: Sendmail 8.14+ libmilter (include/libmilter/mfdef.h,
 * libmilter/engine.c), draft-adams-milter-protocol-00. */
#ifndef MT_MILTER_PROTO_H
#define MT_MILTER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_buf;

#define MT_MILTER_VERSION 6u
/* Body data per BODY packet (libmilter's MILTER_CHUNK_SIZE). */
#define MT_MILTER_CHUNK_SIZE 65535u
/* The largest packet read from a filter: REPLBODY chunks of up to 1 MiB
 * (SMFIP_MDS_1M, which we do not offer, would be the most) plus a header
 * or a reply text; anything longer is a protocol error. */
#define MT_MILTER_PACKET_MAX (1024u * 1024u + 64u * 1024u)

/* Bounds on the fields of a filter's answer (libmilter sets none; these
 * are this reader's): longer is a protocol error. A header value is
 * bounded only by the packet. */
#define MT_MILTER_HEADER_NAME_MAX 255u	/* ADDHEADER, INSHEADER, CHGHEADER */
#define MT_MILTER_ADDRESS_MAX 1024u	/* ADDRCPT(_PAR), DELRCPT, CHGFROM */
#define MT_MILTER_ARGS_MAX 1024u	/* ADDRCPT_PAR, CHGFROM: ESMTP parameters */
#define MT_MILTER_REASON_MAX 1024u	/* QUARANTINE */
#define MT_MILTER_REPLY_TEXT_MAX 4096u	/* REPLYCODE: all lines and their CRLFs */
#define MT_MILTER_REPLY_LINES_MAX 32u	/* as libmilter's smfi_setmlreply() */

/* Commands, MTA → filter (SMFIC_*). */
enum mt_milter_cmd {
	MT_MILTER_CMD_ABORT = 'A',
	MT_MILTER_CMD_BODY = 'B',
	MT_MILTER_CMD_CONNECT = 'C',
	MT_MILTER_CMD_MACRO = 'D',
	MT_MILTER_CMD_BODYEOB = 'E',
	MT_MILTER_CMD_HELO = 'H',
	MT_MILTER_CMD_QUIT_NC = 'K',
	MT_MILTER_CMD_HEADER = 'L',
	MT_MILTER_CMD_MAIL = 'M',
	MT_MILTER_CMD_EOH = 'N',
	MT_MILTER_CMD_OPTNEG = 'O',
	MT_MILTER_CMD_QUIT = 'Q',
	MT_MILTER_CMD_RCPT = 'R',
	MT_MILTER_CMD_DATA = 'T',
	MT_MILTER_CMD_UNKNOWN = 'U',
};

/* Replies and modifications, filter → MTA (SMFIR_*). */
enum mt_milter_reply_code {
	MT_MILTER_R_ADDRCPT = '+',
	MT_MILTER_R_DELRCPT = '-',
	MT_MILTER_R_ADDRCPT_PAR = '2',
	MT_MILTER_R_SHUTDOWN = '4',
	MT_MILTER_R_ACCEPT = 'a',
	MT_MILTER_R_REPLBODY = 'b',
	MT_MILTER_R_CONTINUE = 'c',
	MT_MILTER_R_DISCARD = 'd',
	MT_MILTER_R_CHGFROM = 'e',
	MT_MILTER_R_CONN_FAIL = 'f',
	MT_MILTER_R_ADDHEADER = 'h',
	MT_MILTER_R_INSHEADER = 'i',
	MT_MILTER_R_SETSYMLIST = 'l',
	MT_MILTER_R_CHGHEADER = 'm',
	MT_MILTER_R_PROGRESS = 'p',
	MT_MILTER_R_QUARANTINE = 'q',
	MT_MILTER_R_REJECT = 'r',
	MT_MILTER_R_SKIP = 's',
	MT_MILTER_R_TEMPFAIL = 't',
	MT_MILTER_R_REPLYCODE = 'y',
	MT_MILTER_R_OPTNEG = 'O',
};

/* Actions a filter may take (SMFIF_*), offered in OPTNEG. */
#define MT_MILTER_ACT_ADDHDRS 0x01u
#define MT_MILTER_ACT_CHGBODY 0x02u
#define MT_MILTER_ACT_ADDRCPT 0x04u
#define MT_MILTER_ACT_DELRCPT 0x08u
#define MT_MILTER_ACT_CHGHDRS 0x10u
#define MT_MILTER_ACT_QUARANTINE 0x20u
#define MT_MILTER_ACT_CHGFROM 0x40u
#define MT_MILTER_ACT_ADDRCPT_PAR 0x80u
#define MT_MILTER_ACT_SETSYMLIST 0x100u
#define MT_MILTER_ACT_ALL 0x1ffu

/* Protocol steps (SMFIP_*): what the filter does not want (NO*), the
 * steps it will not answer (NR_*), and options. */
#define MT_MILTER_P_NOCONNECT 0x1u
#define MT_MILTER_P_NOHELO 0x2u
#define MT_MILTER_P_NOMAIL 0x4u
#define MT_MILTER_P_NORCPT 0x8u
#define MT_MILTER_P_NOBODY 0x10u
#define MT_MILTER_P_NOHDRS 0x20u
#define MT_MILTER_P_NOEOH 0x40u
#define MT_MILTER_P_NR_HDR 0x80u
#define MT_MILTER_P_NOUNKNOWN 0x100u
#define MT_MILTER_P_NODATA 0x200u
#define MT_MILTER_P_SKIP 0x400u		/* the MTA understands SKIP */
#define MT_MILTER_P_RCPT_REJ 0x800u	/* also send rejected RCPTs */
#define MT_MILTER_P_NR_CONN 0x1000u
#define MT_MILTER_P_NR_HELO 0x2000u
#define MT_MILTER_P_NR_MAIL 0x4000u
#define MT_MILTER_P_NR_RCPT 0x8000u
#define MT_MILTER_P_NR_DATA 0x10000u
#define MT_MILTER_P_NR_UNKN 0x20000u
#define MT_MILTER_P_NR_EOH 0x40000u
#define MT_MILTER_P_NR_BODY 0x80000u
#define MT_MILTER_P_HDR_LEADSPC 0x100000u	/* header values keep their leading space */
#define MT_MILTER_P_MDS_256K 0x10000000u
#define MT_MILTER_P_MDS_1M 0x20000000u

/* Macro stages (SMFIM_*): the index of a SETSYMLIST list. */
enum mt_milter_stage {
	MT_MILTER_STAGE_CONNECT = 0,
	MT_MILTER_STAGE_HELO = 1,
	MT_MILTER_STAGE_MAIL = 2,
	MT_MILTER_STAGE_RCPT = 3,
	MT_MILTER_STAGE_DATA = 4,
	MT_MILTER_STAGE_EOM = 5,
	MT_MILTER_STAGE_EOH = 6,
	MT_MILTER_STAGE_COUNT
};

/* Writing packets: each appends one whole packet to out. */

/* OPTNEG: our version, the actions and protocol steps we offer. */
void mt_milter_put_optneg(struct mt_buf *out, uint32_t version,
			  uint32_t actions, uint32_t protocol);
/* MACRO for the command cmd: n name/value pairs, names[i] as the filter
 * knows them ("j", "{daemon_name}"). A value holding NUL cannot be sent
 * (the caller's values are its own strings); a pair whose value is NULL
 * (a macro without a value) is left out, as Postfix does. */
void mt_milter_put_macros(struct mt_buf *out, enum mt_milter_cmd cmd,
			  const char *const *names, const char *const *values,
			  size_t n);
/* CONNECT: the client's host name ("[192.0.2.1]" when it has none),
 * family '4', '6', 'L' (a Unix socket) or 'U' (unknown: no port and no
 * address follow), port and address text. */
void mt_milter_put_connect(struct mt_buf *out, const char *hostname,
			   char family, uint16_t port, const char *address);
/* A command whose data is NUL-terminated strings: HELO (its name), MAIL
 * and RCPT ("<address>" then each ESMTP parameter), UNKNOWN. */
void mt_milter_put_strings(struct mt_buf *out, enum mt_milter_cmd cmd,
			   const char *const *strings, size_t n);
/* HEADER: field name and value (unfolded or folded with LF, as the
 * caller prepared it). */
void mt_milter_put_header(struct mt_buf *out, const char *name,
			  const char *value);
/* BODY: len octets (at most MT_MILTER_CHUNK_SIZE: more is a bug, and
 * panics) of the message body. */
void mt_milter_put_body(struct mt_buf *out, const void *data, size_t len);
/* A command without data: DATA, EOH, BODYEOB, ABORT, QUIT, QUIT_NC. */
void mt_milter_put_command(struct mt_buf *out, enum mt_milter_cmd cmd);

/* Reading packets */

enum mt_milter_take {
	MT_MILTER_TAKE_MORE,	/* not a whole packet yet */
	MT_MILTER_TAKE_PACKET,	/* *packet_r is one */
	MT_MILTER_TAKE_BAD,	/* length 0 or over max: the stream is lost */
};

struct mt_milter_packet {
	char code;			/* the reply octet */
	const unsigned char *data;	/* inside the caller's buffer */
	size_t len;			/* of data (the length field minus 1) */
};

/* The first packet of buf[0..len): *used_r is its size on the wire (4 +
 * its length) when MT_MILTER_TAKE_PACKET. max bounds the length field
 * (MT_MILTER_PACKET_MAX normally). */
enum mt_milter_take mt_milter_take(const void *buf, size_t len, size_t max,
				   struct mt_milter_packet *packet_r,
				   size_t *used_r);

/* A filter's OPTNEG answer. */
struct mt_milter_optneg {
	uint32_t version, actions, protocol;
	/* SETSYMLIST: the macro names the filter wants per stage, space
	 * separated, or NULL (then the MTA's defaults). Point into the
	 * packet. */
	const char *symlist[MT_MILTER_STAGE_COUNT];
};

/* One reply or modification read from a packet. */
struct mt_milter_reply {
	enum mt_milter_reply_code code;
	/* INSHEADER: the position among all header fields (0: first);
	 * CHGHEADER: the n-th field (1: first) of that name. */
	uint32_t index;
	/* ADDHEADER, INSHEADER, CHGHEADER: field name and value (CHGHEADER
	 * with an empty value deletes the field); ADDRCPT, DELRCPT: the
	 * address in name; ADDRCPT_PAR, CHGFROM: the address in name and the
	 * ESMTP parameters in value (NULL when none); QUARANTINE: the reason
	 * in name; REPLYCODE: the whole reply text in name ("550 5.7.1
	 * text", lines CRLF-separated), its code in reply_code. Point into
	 * the packet. */
	const char *name;
	const char *value;
	int reply_code;			/* REPLYCODE: 400-599 */
	/* REPLBODY: a chunk of the new body. */
	const unsigned char *body;
	size_t body_len;
	struct mt_milter_optneg optneg;	/* OPTNEG */
};

/* Decode packet into *reply_r. False with *error_r (static text) when the
 * code is unknown or the data is not of its code's shape (reply_r->code
 * is the packet's code even then, for the log line):
 *  - CONTINUE, ACCEPT, REJECT, TEMPFAIL, DISCARD, SKIP, PROGRESS,
 *    SHUTDOWN, CONN_FAIL: no data at all;
 *  - every string NUL-terminated inside the packet, nothing after the
 *    last one;
 *  - a header name 1..MT_MILTER_HEADER_NAME_MAX octets of 33..126 but
 *    ':' (RFC 5322 2.2); a header value (may be empty) with every CR
 *    followed by LF and every LF by SP or HTAB (a fold: a filter cannot
 *    start a header line of its own); INSHEADER and CHGHEADER with their
 *    4-octet index first;
 *  - an address non-empty, a reason (QUARANTINE) non-empty, ESMTP
 *    parameters possibly empty; none holds a control octet (< 0x20,
 *    0x7f), each within its bound above;
 *  - REPLYCODE: the text as mt_milter_reply_text_valid() wants it;
 *  - REPLBODY: any octets, possibly none;
 *  - OPTNEG: version, actions, protocol (12 octets), then (4-octet
 *    stage < MT_MILTER_STAGE_COUNT, macro list: any NUL-terminated
 *    string) pairs, a stage at most once;
 *  - SETSYMLIST is refused: libmilter sends the lists inside OPTNEG. */
bool mt_milter_reply_decode(const struct mt_milter_packet *packet,
			    struct mt_milter_reply *reply_r, const char **error_r);

/* Is text a valid REPLYCODE text? CRLF-separated lines (no CRLF after
 * the last), at most MT_MILTER_REPLY_LINES_MAX of them and
 * MT_MILTER_REPLY_TEXT_MAX octets in all; each line is "DDD" with first
 * digit 4 or 5, the same code on every line, then '-' and text on all
 * but the last, ' ' and text (or nothing) on the last; the text holds no
 * control octet but HTAB. A line's text that starts with an enhanced
 * status code (RFC 3463 2: class "." 1*3digit "." 1*3digit, then SP,
 * HTAB or the line's end) must have the reply code's class. */
bool mt_milter_reply_text_valid(const char *text);

/* The name of a reply code for logs ("reject", "addheader", ...). */
const char *mt_milter_reply_name(char code);

#endif
