/* milter-client.c — one connection to one mail filter (see
 * milter-client.h): the socket on a bufferevent, the negotiation, one
 * command in flight at a time with its stage's macros, the answers and
 * the end-of-message modifications read packet by packet, the timers.
 *
 * Trust boundary: the filter's bytes. A packet is taken only once it is
 * whole and at most MT_MILTER_PACKET_MAX long (the input watermark stops
 * reading beyond one), its shape is checked by milter-proto.c, and here
 * only what the moment allows is taken: OPTNEG while negotiating, an
 * answer while one is awaited, modifications only after BODYEOB and only
 * those negotiated. Anything else fails the client (the caller's default
 * action applies), as Postfix's milter8 does.
 *
 * Latency (#37 item 19): a filter built on libmilter writes each reply
 * packet with its own write(2) and Nagle on, so after a modification
 * (ADDHEADER, REPLBODY, ...) its final answer waited for our ACK, which
 * Linux delays up to 40 ms on a connection where we have just written
 * (delayed-ACK "pingpong" mode): ~42 ms more per message modified. Over
 * TCP, once each command of ours is written the socket is set to
 * TCP_QUICKACK (lib-mail/conn.h), so the filter's packets are ACKed as
 * they are read; our own packets go out with TCP_NODELAY (each is whole,
 * macros and command in one write). UNIX sockets have neither.
 * References: Sendmail libmilter (mfdef.h, engine.c), Postfix milter8.c. */
#include "milter-client.h"
#include "alloc.h"
#include "buf.h"
#include "conn.h"
#include "log.h"
#include "loop.h"

#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

enum client_state {
	CLIENT_NEW,
	CLIENT_NEGOTIATING,	/* connecting, then OPTNEG sent */
	CLIENT_READY,		/* idle between commands */
	CLIENT_WAITING,		/* a command's answer awaited */
	CLIENT_EOM,		/* modifications, then the final answer */
	CLIENT_FAILED,
};

struct mt_milter_client {
	struct mt_loop *loop;
	const struct mt_milter_client_settings *set;
	const struct mt_logctx *log;
	struct bufferevent *bev;
	struct event *timer;
	struct event *soon;		/* delivers an answer from the loop */
	enum client_state state;
	uint64_t wait_msecs;		/* the current wait's bound */
	uint32_t version, actions, protocol;	/* negotiated */
	char *symlist[MT_MILTER_STAGE_COUNT];	/* the filter's macro lists */
	bool in_message;		/* MAIL sent, no end or ABORT yet */
	bool abort_after;		/* ABORT once the awaited answer is in */
	bool held;			/* mod_cb held a modification back */
	enum mt_milter_cmd waiting_for;
	mt_milter_answer_cb_t *cb;
	void *context;
	mt_milter_mod_cb_t *mod_cb;
	/* The answer the soon event delivers. */
	struct mt_milter_answer answer;
	char *answer_text;
	char *error;			/* why the client failed */
	struct mt_buf out;
	bool tcp;			/* not a UNIX socket: NODELAY, QUICKACK */
};

static void read_cb(struct bufferevent *bev, void *arg);
static void write_cb(struct bufferevent *bev, void *arg);
static void event_cb(struct bufferevent *bev, short what, void *arg);

/* Addresses */

static __thread char address_error[160];

static bool parse_unix(const char *path, struct mt_milter_client_settings *set,
		       const char **error_r)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)&set->sockaddr;
	if (*path == '\0' || strlen(path) >= sizeof(sun->sun_path)) {
		*error_r = "unix: needs a socket path shorter than 108 octets";
		return false;
	}
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	strcpy(sun->sun_path, path);
	set->sockaddr_len = (socklen_t)sizeof(*sun);
	return true;
}

static bool parse_inet(const char *hostport, struct mt_milter_client_settings *set,
		       const char **error_r)
{
	char host[256];
	const char *colon = strrchr(hostport, ':');
	const char *h = hostport;
	size_t hlen = colon != NULL ? (size_t)(colon - hostport) : 0;
	if (colon == NULL || colon[1] == '\0' || hlen == 0) {
		*error_r = "inet: needs HOST:PORT";
		return false;
	}
	if (h[0] == '[' && hlen > 2 && h[hlen - 1] == ']') {
		h++;
		hlen -= 2;
	}
	if (hlen >= sizeof(host)) {
		*error_r = "inet: host name too long";
		return false;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG };
	struct addrinfo *res = NULL;
	int ret = getaddrinfo(host, colon + 1, &hints, &res);
	if (ret != 0) {
		snprintf(address_error, sizeof(address_error), "inet:%s: %s",
			 hostport, gai_strerror(ret));
		*error_r = address_error;
		return false;
	}
	memcpy(&set->sockaddr, res->ai_addr, res->ai_addrlen);
	set->sockaddr_len = res->ai_addrlen;
	freeaddrinfo(res);
	return true;
}

bool mt_milter_address_parse(const char *address,
			     struct mt_milter_client_settings *set,
			     const char **error_r)
{
	if (strncmp(address, "inet:", 5) == 0)
		return parse_inet(address + 5, set, error_r);
	if (strncmp(address, "inet6:", 6) == 0)
		return parse_inet(address + 6, set, error_r);
	if (strncmp(address, "unix:", 5) == 0)
		return parse_unix(address + 5, set, error_r);
	if (strncmp(address, "local:", 6) == 0)
		return parse_unix(address + 6, set, error_r);
	*error_r = "a milter address is inet:HOST:PORT or unix:PATH";
	return false;
}

/* Steps */

/* The filter's NO* bit for cmd (0: always sent). */
static uint32_t no_step(enum mt_milter_cmd cmd)
{
	switch (cmd) {
	case MT_MILTER_CMD_CONNECT: return MT_MILTER_P_NOCONNECT;
	case MT_MILTER_CMD_HELO: return MT_MILTER_P_NOHELO;
	case MT_MILTER_CMD_MAIL: return MT_MILTER_P_NOMAIL;
	case MT_MILTER_CMD_RCPT: return MT_MILTER_P_NORCPT;
	case MT_MILTER_CMD_DATA: return MT_MILTER_P_NODATA;
	case MT_MILTER_CMD_HEADER: return MT_MILTER_P_NOHDRS;
	case MT_MILTER_CMD_EOH: return MT_MILTER_P_NOEOH;
	case MT_MILTER_CMD_BODY: return MT_MILTER_P_NOBODY;
	case MT_MILTER_CMD_UNKNOWN: return MT_MILTER_P_NOUNKNOWN;
	default: return 0;
	}
}

/* The filter's NR_* bit for cmd: it will not answer. */
static uint32_t no_reply(enum mt_milter_cmd cmd)
{
	switch (cmd) {
	case MT_MILTER_CMD_CONNECT: return MT_MILTER_P_NR_CONN;
	case MT_MILTER_CMD_HELO: return MT_MILTER_P_NR_HELO;
	case MT_MILTER_CMD_MAIL: return MT_MILTER_P_NR_MAIL;
	case MT_MILTER_CMD_RCPT: return MT_MILTER_P_NR_RCPT;
	case MT_MILTER_CMD_DATA: return MT_MILTER_P_NR_DATA;
	case MT_MILTER_CMD_HEADER: return MT_MILTER_P_NR_HDR;
	case MT_MILTER_CMD_EOH: return MT_MILTER_P_NR_EOH;
	case MT_MILTER_CMD_BODY: return MT_MILTER_P_NR_BODY;
	case MT_MILTER_CMD_UNKNOWN: return MT_MILTER_P_NR_UNKN;
	default: return 0;
	}
}

/* The macro stage of cmd, or -1 when it carries none. */
static int macro_stage(enum mt_milter_cmd cmd)
{
	switch (cmd) {
	case MT_MILTER_CMD_CONNECT: return MT_MILTER_STAGE_CONNECT;
	case MT_MILTER_CMD_HELO: return MT_MILTER_STAGE_HELO;
	case MT_MILTER_CMD_MAIL: return MT_MILTER_STAGE_MAIL;
	case MT_MILTER_CMD_RCPT: return MT_MILTER_STAGE_RCPT;
	case MT_MILTER_CMD_DATA: return MT_MILTER_STAGE_DATA;
	case MT_MILTER_CMD_EOH: return MT_MILTER_STAGE_EOH;
	case MT_MILTER_CMD_BODYEOB: return MT_MILTER_STAGE_EOM;
	default: return -1;
	}
}

bool mt_milter_client_wants(const struct mt_milter_client *c, enum mt_milter_cmd cmd)
{
	if (c->state == CLIENT_FAILED)
		return true;	/* its default action is the caller's to apply */
	if (cmd == MT_MILTER_CMD_DATA && c->version < 4)
		return false;	/* DATA came with version 4 */
	return (c->protocol & no_step(cmd)) == 0;
}

bool mt_milter_client_leadspc(const struct mt_milter_client *c)
{
	return (c->protocol & MT_MILTER_P_HDR_LEADSPC) != 0;
}

bool mt_milter_client_failed(const struct mt_milter_client *c)
{
	return c->state == CLIENT_FAILED;
}

const char *mt_milter_client_name(const struct mt_milter_client *c)
{
	return c->set->name;
}

/* Answers: always from the loop (the soon event) */

static void soon_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mt_milter_client *c = arg;
	(void)fd;
	(void)what;
	mt_milter_answer_cb_t *cb = c->cb;
	c->cb = NULL;
	c->mod_cb = NULL;
	if (cb != NULL)
		cb(&c->answer, c->context);
}

static void answer_later(struct mt_milter_client *c, enum mt_milter_status status,
			 const char *text)
{
	free(c->answer_text);
	c->answer_text = text != NULL ? mt_xstrdup(text) : NULL;
	c->answer.status = status;
	c->answer.text = c->answer_text;
	c->answer.error = c->error;
	event_active(c->soon, EV_TIMEOUT, 0);
}

static void set_timer(struct mt_milter_client *c, uint64_t msecs)
{
	c->wait_msecs = msecs;
	struct timeval tv = { (time_t)(msecs / 1000), (suseconds_t)(msecs % 1000) * 1000 };
	evtimer_add(c->timer, &tv);
}

/* Give up on the filter: the pending caller (and every later one) gets
 * FAILED with why. */
static void fail(struct mt_milter_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail(struct mt_milter_client *c, const char *fmt, ...)
{
	if (c->state == CLIENT_FAILED)
		return;
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	mt_slog(MT_LOG_WARNING, c->log, "milter=%s address=%s failed: %s",
		c->set->name, c->set->address, why);
	free(c->error);
	c->error = mt_xstrdup(why);
	c->state = CLIENT_FAILED;
	c->in_message = false;
	evtimer_del(c->timer);
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	c->bev = NULL;
	if (c->cb != NULL)
		answer_later(c, MT_MILTER_FAILED, NULL);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mt_milter_client *c = arg;
	(void)fd;
	(void)what;
	if (c->state == CLIENT_NEGOTIATING)
		fail(c, "no connection or negotiation within %llu ms",
		     (unsigned long long)c->wait_msecs);
	else
		fail(c, "no answer within %llu ms", (unsigned long long)c->wait_msecs);
}

/* Life */

struct mt_milter_client *mt_milter_client_new(struct mt_loop *loop,
					      const struct mt_milter_client_settings *set,
					      const struct mt_logctx *log)
{
	struct mt_milter_client *c = mt_xcalloc(1, sizeof(*c));
	c->loop = loop;
	c->set = set;
	c->log = log;
	c->timer = evtimer_new(mt_loop_base(loop), timer_cb, c);
	c->soon = event_new(mt_loop_base(loop), -1, 0, soon_cb, c);
	if (c->timer == NULL || c->soon == NULL)
		mt_panic("event_new failed");
	return c;
}

void mt_milter_client_free(struct mt_milter_client **client_p)
{
	struct mt_milter_client *c = *client_p;
	if (c == NULL)
		return;
	*client_p = NULL;
	if (c->bev != NULL && c->state == CLIENT_READY &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		/* A courtesy QUIT: 5 octets into an empty socket buffer. */
		unsigned char quit[5] = { 0, 0, 0, 1, MT_MILTER_CMD_QUIT };
		ssize_t n = send(bufferevent_getfd(c->bev), quit, sizeof(quit),
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)n;
	}
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	event_free(c->timer);
	event_free(c->soon);
	for (unsigned int i = 0; i < MT_MILTER_STAGE_COUNT; i++)
		free(c->symlist[i]);
	free(c->answer_text);
	free(c->error);
	mt_buf_free(&c->out);
	free(c);
}

static void send_out(struct mt_milter_client *c)
{
	bufferevent_write(c->bev, c->out.data, c->out.len);
	mt_buf_reset(&c->out);
}

void mt_milter_client_open(struct mt_milter_client *c, mt_milter_answer_cb_t *cb,
			   void *context)
{
	c->cb = cb;
	c->context = context;
	if (c->state != CLIENT_NEW) {
		if (c->state == CLIENT_FAILED)
			answer_later(c, MT_MILTER_FAILED, NULL);
		else
			answer_later(c, MT_MILTER_CONTINUE, NULL);
		return;
	}
	c->state = CLIENT_NEGOTIATING;
	set_timer(c, c->set->connect_timeout);
	c->bev = bufferevent_socket_new(mt_loop_base(c->loop), -1,
					BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL)
		mt_panic("bufferevent_socket_new failed");
	bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
	/* One packet at most waits in the input (then reading pauses). */
	bufferevent_setwatermark(c->bev, EV_READ, 0, MT_MILTER_PACKET_MAX + 5);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&c->set->sockaddr,
				       (int)c->set->sockaddr_len) != 0) {
		fail(c, "connect: %s", strerror(errno));
		return;
	}
	c->tcp = c->set->sockaddr.ss_family != AF_UNIX;
	if (c->tcp) {
		int one = 1;
		(void)setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP, TCP_NODELAY,
				 &one, sizeof(one));
	}
	mt_milter_put_optneg(&c->out, MT_MILTER_VERSION, c->set->actions,
			     c->set->protocol);
	send_out(c);
}

/* Our packet is on the wire: the filter's answer, in as many packets as it
 * writes, is ACKed as it is read (see the header). */
static void write_cb(struct bufferevent *bev, void *arg)
{
	struct mt_milter_client *c = arg;
	if (c->tcp && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		(void)mt_conn_quickack_fd(bufferevent_getfd(bev));
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct mt_milter_client *c = arg;
	(void)bev;
	if ((what & BEV_EVENT_CONNECTED) != 0)
		return;
	if ((what & BEV_EVENT_EOF) != 0)
		fail(c, "the filter closed the connection");
	else
		fail(c, "%s", evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

/* Commands */

/* The MACRO packet for stage: the filter's names, or our defaults. */
static void put_macros(struct mt_milter_client *c, enum mt_milter_cmd cmd,
		       mt_milter_macro_cb_t *macro_cb, void *macro_context)
{
	int stage = macro_stage(cmd);
	if (stage < 0 || macro_cb == NULL)
		return;
	const char *list = c->symlist[stage] != NULL ? c->symlist[stage] :
		c->set->macros[stage];
	if (list == NULL)
		return;
	char *copy = mt_xstrdup(list), *save = NULL;
	const char *names[32], *values[32];
	size_t n = 0;
	for (char *name = strtok_r(copy, " ", &save); name != NULL && n < 32;
	     name = strtok_r(NULL, " ", &save)) {
		const char *value = macro_cb(name, macro_context);
		if (value == NULL)
			continue;
		names[n] = name;
		values[n++] = value;
	}
	if (n > 0)
		mt_milter_put_macros(&c->out, cmd, names, values, n);
	free(copy);
}

static bool content_cmd(enum mt_milter_cmd cmd)
{
	return cmd == MT_MILTER_CMD_BODY || cmd == MT_MILTER_CMD_BODYEOB;
}

void mt_milter_client_command(struct mt_milter_client *c, enum mt_milter_cmd cmd,
			      const struct mt_buf *packet,
			      mt_milter_macro_cb_t *macro_cb, void *macro_context,
			      mt_milter_answer_cb_t *cb, void *context)
{
	c->cb = cb;
	c->context = context;
	if (c->state == CLIENT_FAILED) {
		answer_later(c, MT_MILTER_FAILED, NULL);
		return;
	}
	if (c->state != CLIENT_READY)
		mt_panic("milter=%s: a command while another is in flight", c->set->name);
	if (!mt_milter_client_wants(c, cmd)) {
		answer_later(c, MT_MILTER_CONTINUE, NULL);
		return;
	}
	put_macros(c, cmd, macro_cb, macro_context);
	mt_buf_append(&c->out, packet->data, packet->len);
	send_out(c);
	if (cmd == MT_MILTER_CMD_MAIL || cmd == MT_MILTER_CMD_RCPT ||
	    cmd == MT_MILTER_CMD_DATA || cmd == MT_MILTER_CMD_HEADER ||
	    cmd == MT_MILTER_CMD_EOH || cmd == MT_MILTER_CMD_BODY)
		c->in_message = true;	/* (a NOMAIL filter's message starts later) */
	if ((c->protocol & no_reply(cmd)) != 0) {
		answer_later(c, MT_MILTER_CONTINUE, NULL);
		return;
	}
	c->state = CLIENT_WAITING;
	c->waiting_for = cmd;
	set_timer(c, content_cmd(cmd) ? c->set->content_timeout : c->set->command_timeout);
}

void mt_milter_client_eom(struct mt_milter_client *c,
			  mt_milter_macro_cb_t *macro_cb, void *macro_context,
			  mt_milter_mod_cb_t *mod_cb, mt_milter_answer_cb_t *cb,
			  void *context)
{
	c->cb = cb;
	c->context = context;
	c->mod_cb = mod_cb;
	if (c->state == CLIENT_FAILED) {
		answer_later(c, MT_MILTER_FAILED, NULL);
		return;
	}
	if (c->state != CLIENT_READY)
		mt_panic("milter=%s: end of message while a command is in flight",
			 c->set->name);
	put_macros(c, MT_MILTER_CMD_BODYEOB, macro_cb, macro_context);
	mt_milter_put_command(&c->out, MT_MILTER_CMD_BODYEOB);
	send_out(c);
	c->state = CLIENT_EOM;
	c->waiting_for = MT_MILTER_CMD_BODYEOB;
	set_timer(c, c->set->content_timeout);
}

void mt_milter_client_abort(struct mt_milter_client *c)
{
	c->cb = NULL;
	c->mod_cb = NULL;
	event_del(c->soon);
	if (c->state == CLIENT_WAITING || c->state == CLIENT_EOM) {
		/* The answer still comes: ABORT after it (nobody is told). */
		c->abort_after = c->in_message;
		if (c->held) {
			c->held = false;
			bufferevent_enable(c->bev, EV_READ);
			set_timer(c, c->set->content_timeout);
			read_cb(c->bev, c);
		}
		return;
	}
	if (c->state == CLIENT_READY && c->in_message) {
		mt_milter_put_command(&c->out, MT_MILTER_CMD_ABORT);
		send_out(c);
	}
	c->in_message = false;
}

void mt_milter_client_resume(struct mt_milter_client *c)
{
	if (!c->held || c->state != CLIENT_EOM)
		return;
	c->held = false;
	bufferevent_enable(c->bev, EV_READ);
	set_timer(c, c->set->content_timeout);
	read_cb(c->bev, c);
}

/* Reading */

static void negotiated(struct mt_milter_client *c, const struct mt_milter_reply *r)
{
	const struct mt_milter_optneg *o = &r->optneg;
	if (o->version < 2 || o->version > MT_MILTER_VERSION) {
		fail(c, "it speaks milter protocol version %u (2 to %u here)",
		     (unsigned int)o->version, MT_MILTER_VERSION);
		return;
	}
	/* What it asks beyond our offer it does not get (MDS_*: our body
	 * chunks are 64 KiB whatever it could take). */
	c->version = o->version;
	c->actions = o->actions & c->set->actions;
	c->protocol = o->protocol & c->set->protocol;
	for (unsigned int i = 0; i < MT_MILTER_STAGE_COUNT; i++)
		if (o->symlist[i] != NULL && (c->actions & MT_MILTER_ACT_SETSYMLIST) != 0)
			c->symlist[i] = mt_xstrdup(o->symlist[i]);
	c->state = CLIENT_READY;
	evtimer_del(c->timer);
	mt_slog(MT_LOG_DEBUG, c->log, "milter=%s negotiated version=%u actions=0x%x "
		"protocol=0x%x", c->set->name, (unsigned int)c->version,
		(unsigned int)c->actions, (unsigned int)c->protocol);
	answer_later(c, MT_MILTER_CONTINUE, NULL);
}

/* A final answer to the command in flight (or to BODYEOB). */
static void answered(struct mt_milter_client *c, const struct mt_milter_reply *r)
{
	enum mt_milter_status status;
	const char *text = NULL;
	switch (r->code) {
	case MT_MILTER_R_CONTINUE: status = MT_MILTER_CONTINUE; break;
	case MT_MILTER_R_ACCEPT: status = MT_MILTER_ACCEPT; break;
	case MT_MILTER_R_REJECT: status = MT_MILTER_REJECT; break;
	case MT_MILTER_R_TEMPFAIL: status = MT_MILTER_TEMPFAIL; break;
	case MT_MILTER_R_DISCARD: status = MT_MILTER_DISCARD; break;
	case MT_MILTER_R_REPLYCODE:
		status = r->reply_code >= 500 ? MT_MILTER_REJECT : MT_MILTER_TEMPFAIL;
		text = r->name;
		break;
	case MT_MILTER_R_SKIP:
		if (c->waiting_for != MT_MILTER_CMD_BODY ||
		    (c->protocol & MT_MILTER_P_SKIP) == 0) {
			fail(c, "SKIP where it is not allowed");
			return;
		}
		status = MT_MILTER_SKIP;
		break;
	default:
		fail(c, "unexpected %s answering %c", mt_milter_reply_name((char)r->code),
		     (char)c->waiting_for);
		return;
	}
	evtimer_del(c->timer);
	c->state = CLIENT_READY;
	bool message_over = c->waiting_for == MT_MILTER_CMD_BODYEOB ||
		(status != MT_MILTER_CONTINUE && status != MT_MILTER_SKIP &&
		 c->waiting_for != MT_MILTER_CMD_CONNECT &&
		 c->waiting_for != MT_MILTER_CMD_HELO &&
		 c->waiting_for != MT_MILTER_CMD_RCPT);
	if (c->abort_after) {
		c->abort_after = false;
		if (!message_over) {
			mt_milter_put_command(&c->out, MT_MILTER_CMD_ABORT);
			send_out(c);
		}
		c->in_message = false;
		return;
	}
	if (message_over)
		c->in_message = false;	/* the filter is done with it: no ABORT */
	answer_later(c, status, text);
}

/* Which action a modification needs negotiated. */
static uint32_t mod_action(char code)
{
	switch (code) {
	case MT_MILTER_R_ADDHEADER: return MT_MILTER_ACT_ADDHDRS;
	case MT_MILTER_R_INSHEADER: return MT_MILTER_ACT_ADDHDRS;
	case MT_MILTER_R_CHGHEADER: return MT_MILTER_ACT_CHGHDRS;
	case MT_MILTER_R_ADDRCPT: return MT_MILTER_ACT_ADDRCPT;
	case MT_MILTER_R_ADDRCPT_PAR: return MT_MILTER_ACT_ADDRCPT_PAR;
	case MT_MILTER_R_DELRCPT: return MT_MILTER_ACT_DELRCPT;
	case MT_MILTER_R_CHGFROM: return MT_MILTER_ACT_CHGFROM;
	case MT_MILTER_R_REPLBODY: return MT_MILTER_ACT_CHGBODY;
	case MT_MILTER_R_QUARANTINE: return MT_MILTER_ACT_QUARANTINE;
	default: return 0;
	}
}

/* One packet. Afterwards the client may have failed, or be holding the
 * packet back (c->held): then reading stops. */
static void take_packet(struct mt_milter_client *c, const struct mt_milter_packet *p)
{
	struct mt_milter_reply r;
	const char *error;
	if (!mt_milter_reply_decode(p, &r, &error)) {
		fail(c, "%s (reply '%c')", error, p->code >= 0x20 && p->code < 0x7f ?
		     p->code : '?');
		return;
	}
	/* PROGRESS restarts the clock of an answer awaited; when nothing is
	 * awaited it is a packet nobody asked for (restarting the clock then
	 * would fail an idle client later with "no answer"). */
	if (r.code == MT_MILTER_R_PROGRESS &&
	    (c->state == CLIENT_WAITING || c->state == CLIENT_EOM)) {
		set_timer(c, c->wait_msecs);
		return;
	}
	switch (c->state) {
	case CLIENT_NEGOTIATING:
		if (r.code == MT_MILTER_R_OPTNEG)
			negotiated(c, &r);
		else if (r.code == MT_MILTER_R_REJECT || r.code == MT_MILTER_R_TEMPFAIL)
			fail(c, "it refused the negotiation");
		else
			fail(c, "%s instead of OPTNEG", mt_milter_reply_name((char)r.code));
		return;
	case CLIENT_WAITING:
		answered(c, &r);
		return;
	case CLIENT_EOM: {
		uint32_t action = mod_action((char)r.code);
		if (action == 0) {
			answered(c, &r);
			return;
		}
		if ((c->actions & action) == 0) {
			fail(c, "%s without having negotiated it",
			     mt_milter_reply_name((char)r.code));
			return;
		}
		/* Dropped after an abort; held back when mod_cb says so. */
		if (!c->abort_after && c->mod_cb != NULL && !c->mod_cb(&r, c->context)) {
			c->held = true;
			evtimer_del(c->timer);
			bufferevent_disable(c->bev, EV_READ);
		}
		return;
	}
	default:
		fail(c, "%s when nothing was asked", mt_milter_reply_name((char)r.code));
	}
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct mt_milter_client *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	while (c->state != CLIENT_FAILED && !c->held) {
		size_t len = evbuffer_get_length(in);
		if (len < 4)
			return;
		unsigned char *head = evbuffer_pullup(in, 4);
		uint32_t plen = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 |
			(uint32_t)head[2] << 8 | head[3];
		if (plen == 0 || plen > MT_MILTER_PACKET_MAX) {
			fail(c, "a packet of %u octets", (unsigned int)plen);
			return;
		}
		if (len < (size_t)plen + 4)
			return;
		unsigned char *data = evbuffer_pullup(in, (ssize_t)plen + 4);
		struct mt_milter_packet p;
		size_t used;
		if (mt_milter_take(data, (size_t)plen + 4, MT_MILTER_PACKET_MAX, &p,
				   &used) != MT_MILTER_TAKE_PACKET) {
			fail(c, "an unreadable packet");
			return;
		}
		take_packet(c, &p);
		if (c->held)
			return;		/* the same packet again at resume */
		if (c->state != CLIENT_FAILED)
			evbuffer_drain(in, used);
		/* Go on after an answer too: a packet behind it was sent when
		 * nothing was asked and fails the client now, rather than wait
		 * in the buffer to be taken as the next command's answer. */
	}
}
