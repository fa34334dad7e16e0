/* smtp-milter.c — the MTA's mail filters in an SMTP session (see
 * smtp-milter.h): the configured set, the session's clients, the walk
 * that asks each filter in order and keeps the first verdict, the stages
 * before the content (connect, HELO, MAIL, RCPT), the macros, and the
 * replies a verdict becomes.
 *
 * Trust boundary: the filters' answers, already checked for shape by
 * lib-mail/milter-client.c; a reply text whose class is not the
 * verdict's is replaced by our default text. Macro values are the
 * session's own (client address, HELO name, sender, ...), written as
 * NUL-terminated strings.
 * References: Sendmail libmilter; Postfix MILTER_README (the macros each
 * stage carries by default, the default replies). */
#include "smtp-milter-private.h"
#include "alloc.h"
#include "mta-metrics.h"
#include "mta-policy.h"
#include "mta.h"
#include "smtp-session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define DEFAULT_REJECT "550 5.7.1 Command rejected"
#define DEFAULT_TEMPFAIL "451 4.7.1 Service unavailable - try again later"

/* Every action; every step the filter may leave out or leave unanswered,
 * SKIP and header values with their leading space. Not RCPT_REJ (refused
 * recipients are not sent) nor larger body chunks. */
#define OFFERED_PROTOCOL (MT_MILTER_P_NOCONNECT | MT_MILTER_P_NOHELO | \
	MT_MILTER_P_NOMAIL | MT_MILTER_P_NORCPT | MT_MILTER_P_NOBODY | \
	MT_MILTER_P_NOHDRS | MT_MILTER_P_NOEOH | MT_MILTER_P_NR_HDR | \
	MT_MILTER_P_NOUNKNOWN | MT_MILTER_P_NODATA | MT_MILTER_P_SKIP | \
	MT_MILTER_P_NR_CONN | MT_MILTER_P_NR_HELO | MT_MILTER_P_NR_MAIL | \
	MT_MILTER_P_NR_RCPT | MT_MILTER_P_NR_DATA | MT_MILTER_P_NR_UNKN | \
	MT_MILTER_P_NR_EOH | MT_MILTER_P_NR_BODY | MT_MILTER_P_HDR_LEADSPC)

/* The macros each stage carries unless the filter names its own
 * (Postfix's milter_*_macros, with the client's address and port too). */
static const char *const default_macros[MT_MILTER_STAGE_COUNT] = {
	[MT_MILTER_STAGE_CONNECT] = "j {daemon_name} {daemon_addr} v _ "
		"{client_addr} {client_name} {client_port}",
	[MT_MILTER_STAGE_HELO] = "{tls_version} {cipher} {cipher_bits} "
		"{cert_subject} {cert_issuer}",
	[MT_MILTER_STAGE_MAIL] = "i {auth_type} {auth_authen} {auth_author} "
		"{mail_addr} {mail_host} {mail_mailer}",
	[MT_MILTER_STAGE_RCPT] = "i {rcpt_addr} {rcpt_host} {rcpt_mailer}",
	[MT_MILTER_STAGE_DATA] = "i",
	[MT_MILTER_STAGE_EOM] = "i",
	[MT_MILTER_STAGE_EOH] = "i",
};

/* The configured set */

static void filters_free(struct mta_milters *ms)
{
	for (unsigned int i = 0; i < ms->count; i++) {
		free(ms->filters[i].name);
		free(ms->filters[i].address);
	}
	free(ms->filters);
	free(ms->lists[0]);
	free(ms->lists[1]);
	free(ms);
}

void mta_milters_unref(struct mta_milters **milters_p)
{
	struct mta_milters *ms = *milters_p;
	*milters_p = NULL;
	if (ms != NULL && --ms->refs == 0)
		filters_free(ms);
}

static __thread char milters_error[256];

/* The filter named name, added to ms once. */
static int filter_index(struct mta_milters *ms, const struct mt_config *config,
			const struct mt_mta_settings *mta, const char *name,
			const char **error_r)
{
	for (unsigned int i = 0; i < ms->count; i++)
		if (strcmp(ms->filters[i].name, name) == 0)
			return (int)i;
	const struct mt_milter_settings *set = mt_config_get(config, "milter", name);
	if (set == NULL) {
		snprintf(milters_error, sizeof(milters_error), "no [milter.%s] section", name);
		*error_r = milters_error;
		return -1;
	}
	ms->filters = mt_xrealloc(ms->filters, (ms->count + 1) * sizeof(*ms->filters));
	struct mta_milter_filter *f = &ms->filters[ms->count];
	memset(f, 0, sizeof(*f));
	f->name = mt_xstrdup(name);
	f->address = mt_xstrdup(set->address);
	ms->count++;
	struct mt_milter_client_settings *c = &f->client;
	c->name = f->name;
	c->address = f->address;
	const char *error;
	if (!mt_milter_address_parse(set->address, c, &error)) {
		snprintf(milters_error, sizeof(milters_error), "[milter.%s] address %s: %s",
			 name, set->address, error);
		*error_r = milters_error;
		return -1;
	}
	c->connect_timeout = set->connect_timeout != 0 ? set->connect_timeout :
		mta->milter_connect_timeout;
	c->command_timeout = set->command_timeout != 0 ? set->command_timeout :
		mta->milter_command_timeout;
	c->content_timeout = set->content_timeout != 0 ? set->content_timeout :
		mta->milter_content_timeout;
	c->actions = MT_MILTER_ACT_ALL;
	c->protocol = OFFERED_PROTOCOL;
	for (unsigned int i = 0; i < MT_MILTER_STAGE_COUNT; i++)
		c->macros[i] = default_macros[i];
	f->default_action = set->default_action == MT_MILTER_ACTION_INHERIT ?
		(enum mt_milter_action)mta->milter_default_action :
		(enum mt_milter_action)set->default_action;
	return (int)(ms->count - 1);
}

struct mta_milters *mta_milters_new(const struct mt_config *config,
				    const struct mt_mta_settings *set,
				    const char **error_r)
{
	struct mta_milters *ms = mt_xcalloc(1, sizeof(*ms));
	ms->refs = 1;
	const struct mt_strlist *lists[2] = { &set->smtpd_milters, &set->submission_milters };
	for (unsigned int l = 0; l < 2; l++) {
		ms->lists[l] = mt_xcalloc(lists[l]->count + 1, sizeof(unsigned int));
		for (size_t i = 0; i < lists[l]->count; i++) {
			int index = filter_index(ms, config, set, lists[l]->items[i], error_r);
			if (index < 0) {
				filters_free(ms);
				return NULL;
			}
			ms->lists[l][ms->list_len[l]++] = (unsigned int)index;
		}
	}
	return ms;
}

/* The session's filters */

struct smtp_milters *smtp_milters_of(struct smtp_session *s)
{
	return s->milter;
}

bool smtp_milter_active(const struct smtp_session *s)
{
	return s->milter != NULL;
}

void smtp_milter_session_start(struct smtp_session *s)
{
	struct mta_milters *conf = s->mta->milters;
	unsigned int kind = s->service == SMTP_SERVICE_SMTP ? 0 : 1;
	if (conf == NULL || conf->list_len[kind] == 0)
		return;
	struct smtp_milters *ms = mt_xcalloc(1, sizeof(*ms));
	ms->s = s;
	ms->conf = conf;
	conf->refs++;
	ms->n = conf->list_len[kind];
	ms->m = mt_xcalloc(ms->n, sizeof(*ms->m));
	for (unsigned int i = 0; i < ms->n; i++) {
		ms->m[i].filter = &conf->filters[conf->lists[kind][i]];
		ms->m[i].client = mt_milter_client_new(s->mta->loop,
						       &ms->m[i].filter->client, &s->log);
	}
	ms->replaced_by = -1;
	s->milter = ms;
}

static void scratch_free(struct smtp_milters *ms)
{
	for (unsigned int i = 0; i < ms->n_scratch; i++)
		free(ms->scratch[i]);
	ms->n_scratch = 0;
}

void smtp_milter_session_end(struct smtp_session *s)
{
	struct smtp_milters *ms = s->milter;
	if (ms == NULL)
		return;
	s->milter = NULL;
	for (unsigned int i = 0; i < ms->n; i++)
		mt_milter_client_free(&ms->m[i].client);
	free(ms->m);
	milter_message_reset(ms);
	mt_buf_free(&ms->stage_packet);
	mt_buf_free(&ms->packet);
	free(ms->verdict_text);
	scratch_free(ms);
	mta_milters_unref(&ms->conf);
	free(ms);
}

/* Verdicts */

void milter_set_verdict(struct smtp_milters *ms, enum mt_milter_status status,
			const char *text, const char *by)
{
	free(ms->verdict_text);
	ms->verdict_text = text != NULL ? mt_xstrdup(text) : NULL;
	ms->verdict.status = status;
	ms->verdict.text = ms->verdict_text;
	ms->verdict_by = by;
}

bool milter_message_refused(const struct smtp_milters *ms)
{
	return ms->verdict.status != MT_MILTER_CONTINUE;
}

void smtp_milter_reply(struct smtp_session *s, const struct smtp_milter_verdict *v)
{
	bool reject = v->status == MT_MILTER_REJECT;
	const char *text = v->text;
	/* The filter's text only when its class is the verdict's. */
	if (text == NULL || text[0] != (reject ? '5' : '4'))
		text = reject ? DEFAULT_REJECT : DEFAULT_TEMPFAIL;
	int code = atoi(text);
	/* Lines "DDD-text" CRLF ... "DDD text". */
	for (const char *line = text; *line != '\0';) {
		const char *eol = strstr(line, "\r\n");
		size_t len = eol != NULL ? (size_t)(eol - line) : strlen(line);
		const char *body = len > 4 ? line + 4 : "";
		int body_len = len > 4 ? (int)(len - 4) : 0;
		if (eol != NULL && eol[2] != '\0')
			mt_smtpd_reply_more(&s->smtpd, code, "%.*s", body_len, body);
		else
			mt_smtpd_reply(&s->smtpd, code, "%.*s", body_len, body);
		if (eol == NULL)
			break;
		line = eol + 2;
	}
}

/* The walk: each filter in order, each of its packets in order */

static bool session_stage(enum walk_kind kind, enum mt_milter_cmd cmd)
{
	return kind == WALK_STAGE &&
		(cmd == MT_MILTER_CMD_CONNECT || cmd == MT_MILTER_CMD_HELO);
}

static bool skipped(const struct smtp_milters *ms, const struct smtp_milter *m)
{
	if (m->off_session)
		return true;
	if (session_stage(ms->kind, ms->stage_cmd))
		return false;
	return m->off_message || (ms->kind == WALK_BODY && m->skip_body);
}

static void walk_next(struct smtp_milters *ms);

static void walk_end(struct smtp_milters *ms)
{
	ms->walking = false;
	scratch_free(ms);
	ms->then(ms);
}

static void open_done(const struct mt_milter_answer *answer, void *context);
static void walk_answer(const struct mt_milter_answer *answer, void *context);

/* A failed filter: its default action. False when that ends the walk. */
static bool filter_failed(struct smtp_milters *ms, struct smtp_milter *m)
{
	mta_metrics_milter(ms->s->mta, m->filter->name, "failed");
	switch (m->filter->default_action) {
	case MT_MILTER_ACTION_ACCEPT:
		mt_slog(MT_LOG_INFO, &ms->s->log, "milter=%s default_action=accept: "
			"going on without it for this session", m->filter->name);
		m->off_session = true;
		return true;
	case MT_MILTER_ACTION_REJECT:
		milter_set_verdict(ms, MT_MILTER_REJECT, NULL, m->filter->name);
		return false;
	default:
		milter_set_verdict(ms, MT_MILTER_TEMPFAIL, NULL, m->filter->name);
		return false;
	}
}

static void walk_next(struct smtp_milters *ms)
{
	for (; ms->cur < ms->n; ms->cur++, ms->item = 0) {
		struct smtp_milter *m = &ms->m[ms->cur];
		if (skipped(ms, m))
			continue;
		if (!m->opened) {
			mt_milter_client_open(m->client, open_done, ms);
			return;
		}
		if (ms->item >= milter_walk_count(ms, m))
			continue;
		if (ms->kind == WALK_EOM) {
			mt_milter_client_eom(m->client, milter_macro, ms, milter_mod,
					     walk_answer, ms);
			return;
		}
		enum mt_milter_cmd cmd = ms->stage_cmd;
		const struct mt_buf *packet = &ms->stage_packet;
		if (ms->kind != WALK_STAGE) {
			mt_buf_reset(&ms->packet);
			milter_walk_packet(ms, &cmd);
			packet = &ms->packet;
		}
		mt_milter_client_command(m->client, cmd, packet, milter_macro, ms,
					 walk_answer, ms);
		return;
	}
	walk_end(ms);
}

static void open_done(const struct mt_milter_answer *answer, void *context)
{
	struct smtp_milters *ms = context;
	struct smtp_milter *m = &ms->m[ms->cur];
	m->opened = true;
	if (answer->status == MT_MILTER_CONTINUE) {
		walk_next(ms);
		return;
	}
	/* Not reachable (its client says why in the log). */
	if (filter_failed(ms, m)) {
		walk_next(ms);
		return;
	}
	walk_end(ms);
}

static void walk_answer(const struct mt_milter_answer *answer, void *context)
{
	struct smtp_milters *ms = context;
	struct smtp_milter *m = &ms->m[ms->cur];
	const char *name = m->filter->name;
	switch (answer->status) {
	case MT_MILTER_CONTINUE:
		if (ms->kind == WALK_EOM)
			mta_metrics_milter(ms->s->mta, name, "accept");
		ms->item++;
		break;
	case MT_MILTER_SKIP:
		m->skip_body = true;
		ms->item = SIZE_MAX;
		break;
	case MT_MILTER_ACCEPT:
		if (session_stage(ms->kind, ms->stage_cmd))
			m->off_session = true;
		else
			m->off_message = true;
		mt_slog(MT_LOG_DEBUG, &ms->s->log, "milter=%s accept", name);
		if (!session_stage(ms->kind, ms->stage_cmd))
			mta_metrics_milter(ms->s->mta, name, "accept");
		ms->item = SIZE_MAX;
		break;
	case MT_MILTER_REJECT:
	case MT_MILTER_TEMPFAIL:
	case MT_MILTER_DISCARD:
		mta_metrics_milter(ms->s->mta, name, answer->status == MT_MILTER_REJECT ?
				   "reject" : answer->status == MT_MILTER_TEMPFAIL ?
				   "tempfail" : "discard");
		milter_set_verdict(ms, answer->status, answer->text, name);
		walk_end(ms);
		return;
	case MT_MILTER_FAILED:
		if (!filter_failed(ms, m)) {
			walk_end(ms);
			return;
		}
		break;
	}
	walk_next(ms);
}

void milter_walk(struct smtp_milters *ms, enum walk_kind kind, walk_then_t *then)
{
	if (ms->walking)
		mt_panic("milter: a walk while another is in progress");
	ms->walking = true;
	ms->kind = kind;
	ms->then = then;
	ms->cur = 0;
	ms->item = 0;
	walk_next(ms);
}

/* The stages before the content */

static const char *stage_name(enum mt_milter_cmd cmd)
{
	switch (cmd) {
	case MT_MILTER_CMD_CONNECT: return "connect";
	case MT_MILTER_CMD_HELO: return "helo";
	case MT_MILTER_CMD_MAIL: return "mail";
	case MT_MILTER_CMD_RCPT: return "rcpt";
	default: return "?";
	}
}

static void stage_then(struct smtp_milters *ms)
{
	struct smtp_milter_verdict v = ms->verdict;
	ms->verdict.status = MT_MILTER_CONTINUE;	/* a stage's verdict is its own */
	/* DISCARD at MAIL or RCPT drops the whole message, answered as if
	 * accepted (libmilter); at connect and HELO it means nothing. */
	if (v.status == MT_MILTER_DISCARD && !session_stage(WALK_STAGE, ms->stage_cmd))
		ms->discard = true;
	if (v.status != MT_MILTER_CONTINUE)
		mt_slog(MT_LOG_INFO, &ms->s->log, "milter=%s %s at %s%s%s", ms->verdict_by,
			v.status == MT_MILTER_REJECT ? "reject" :
			v.status == MT_MILTER_TEMPFAIL ? "tempfail" : "discard",
			stage_name(ms->stage_cmd), v.text != NULL ? ": " : "",
			v.text != NULL ? v.text : "");
	ms->done(ms->s, &v);
}

static void stage(struct smtp_session *s, enum mt_milter_cmd cmd,
		  smtp_milter_done_t *done)
{
	struct smtp_milters *ms = s->milter;
	ms->stage_cmd = cmd;
	ms->done = done;
	milter_walk(ms, WALK_STAGE, stage_then);
}

void smtp_milter_connect(struct smtp_session *s, smtp_milter_done_t *done)
{
	struct smtp_milters *ms = s->milter;
	char family = s->peer.ss_family == AF_INET6 ? '6' : '4';
	const char *colon = strrchr(s->peer_name, ':');
	uint16_t port = colon != NULL ? (uint16_t)atoi(colon + 1) : 0;
	char host[MT_SOCKADDR_STRLEN + 2];
	/* No reverse lookup here: the host name is the address literal. */
	snprintf(host, sizeof(host), "[%s]", s->peer_ip);
	mt_buf_reset(&ms->stage_packet);
	mt_milter_put_connect(&ms->stage_packet, host, family, port, s->peer_ip);
	stage(s, MT_MILTER_CMD_CONNECT, done);
}

void smtp_milter_helo(struct smtp_session *s, smtp_milter_done_t *done)
{
	struct smtp_milters *ms = s->milter;
	const char *helo = s->helo;
	mt_buf_reset(&ms->stage_packet);
	mt_milter_put_strings(&ms->stage_packet, MT_MILTER_CMD_HELO, &helo, 1);
	stage(s, MT_MILTER_CMD_HELO, done);
}

/* "<path>" and each parameter as the client wrote it. */
static void put_path_params(struct mt_buf *out, enum mt_milter_cmd cmd,
			    const char *address, const char *params)
{
	const char *strings[64];
	size_t n = 0;
	char *path = mt_xasprintf("<%s>", address);
	char *copy = mt_xstrdup(params != NULL ? params : ""), *save = NULL;
	strings[n++] = path;
	for (char *p = strtok_r(copy, " ", &save); p != NULL && n < 64;
	     p = strtok_r(NULL, " ", &save))
		strings[n++] = p;
	mt_milter_put_strings(out, cmd, strings, n);
	free(path);
	free(copy);
}

void smtp_milter_mail(struct smtp_session *s, const char *params,
		      smtp_milter_done_t *done)
{
	struct smtp_milters *ms = s->milter;
	milter_message_reset(ms);
	for (unsigned int i = 0; i < ms->n; i++) {
		ms->m[i].off_message = false;
		ms->m[i].skip_body = false;
	}
	mt_buf_reset(&ms->stage_packet);
	put_path_params(&ms->stage_packet, MT_MILTER_CMD_MAIL, s->tx.sender, params);
	stage(s, MT_MILTER_CMD_MAIL, done);
}

void smtp_milter_rcpt(struct smtp_session *s, const char *address,
		      const char *params, smtp_milter_done_t *done)
{
	struct smtp_milters *ms = s->milter;
	ms->rcpt_addr = address;
	mt_buf_reset(&ms->stage_packet);
	put_path_params(&ms->stage_packet, MT_MILTER_CMD_RCPT, address, params);
	stage(s, MT_MILTER_CMD_RCPT, done);
}

void smtp_milter_abort(struct smtp_session *s)
{
	struct smtp_milters *ms = s->milter;
	if (ms == NULL)
		return;
	for (unsigned int i = 0; i < ms->n; i++)
		mt_milter_client_abort(ms->m[i].client);
	ms->walking = false;
	milter_message_reset(ms);
}

/* Macros */

static const char *keep(struct smtp_milters *ms, char *value)
{
	if (ms->n_scratch == sizeof(ms->scratch) / sizeof(ms->scratch[0])) {
		free(value);
		return NULL;
	}
	ms->scratch[ms->n_scratch++] = value;
	return value;
}

static const char *tls_macro(struct smtp_milters *ms, const char *name)
{
	struct smtp_session *s = ms->s;
	SSL *ssl = s->smtpd.tls && s->smtpd.conn.bev != NULL ?
		bufferevent_openssl_get_ssl(s->smtpd.conn.bev) : NULL;
	if (ssl == NULL)
		return NULL;
	if (strcmp(name, "tls_version") == 0)
		return SSL_get_version(ssl);
	if (strcmp(name, "cipher") == 0)
		return SSL_get_cipher_name(ssl);
	if (strcmp(name, "cipher_bits") == 0)
		return keep(ms, mt_xasprintf("%d", SSL_get_cipher_bits(ssl, NULL)));
	return NULL;
}

static const char *domain_of(const char *address)
{
	const char *at = address != NULL ? strrchr(address, '@') : NULL;
	return at != NULL ? at + 1 : NULL;
}

/* name: "j" or "{daemon_name}" (braces optional). */
const char *milter_macro(const char *name, void *context)
{
	struct smtp_milters *ms = context;
	struct smtp_session *s = ms->s;
	char bare[64];
	size_t len = strlen(name);
	if (len >= 2 && name[0] == '{' && name[len - 1] == '}') {
		name++;
		len -= 2;
	}
	if (len >= sizeof(bare))
		return NULL;
	memcpy(bare, name, len);
	bare[len] = '\0';
	name = bare;

	if (strcmp(name, "j") == 0)
		return s->mta->hostname;
	if (strcmp(name, "v") == 0)
		return MTA_NAME " " PACKAGE_VERSION;
	if (strcmp(name, "daemon_name") == 0)
		/* As Postfix's milter_macro_daemon_name: the host name (rspamd
		 * makes it the authserv-id of its Authentication-Results,
		 * RFC 8601 2.5), and on the submission listeners the word
		 * sites give it there (-o milter_macro_daemon_name=ORIGINATING:
		 * OpenDKIM's "MTA ORIGINATING" signs all of it). */
		return s->service == SMTP_SERVICE_SMTP ? s->mta->hostname : "ORIGINATING";
	if (strcmp(name, "daemon_addr") == 0) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char buf[MT_SOCKADDR_STRLEN];
		if (s->smtpd.conn.bev == NULL ||
		    getsockname(bufferevent_getfd(s->smtpd.conn.bev),
				(struct sockaddr *)&ss, &sl) != 0)
			return NULL;
		smtp_format_peer_ip((struct sockaddr *)&ss, buf, sizeof(buf));
		return keep(ms, mt_xstrdup(buf));
	}
	if (strcmp(name, "_") == 0)
		return keep(ms, mt_xasprintf("unknown [%s]", s->peer_ip));
	if (strcmp(name, "client_addr") == 0)
		return s->peer_ip;
	if (strcmp(name, "client_name") == 0)
		return "unknown";
	if (strcmp(name, "client_port") == 0) {
		const char *colon = strrchr(s->peer_name, ':');
		return colon != NULL ? colon + 1 : NULL;
	}
	if (strcmp(name, "i") == 0)
		return s->tx.active ? s->tx.queue_id : NULL;
	if (strcmp(name, "auth_type") == 0)
		return s->authenticated ? s->auth_type : NULL;
	if (strcmp(name, "auth_authen") == 0)
		return s->authenticated ? s->auth_user : NULL;
	if (strcmp(name, "mail_addr") == 0)
		return s->tx.active ? s->tx.sender : NULL;
	if (strcmp(name, "mail_host") == 0)
		return s->tx.active ? domain_of(s->tx.sender) : NULL;
	if (strcmp(name, "mail_mailer") == 0)
		return s->tx.active ? "smtp" : NULL;
	if (strcmp(name, "rcpt_addr") == 0)
		return ms->rcpt_addr;
	if (strcmp(name, "rcpt_host") == 0)
		return domain_of(ms->rcpt_addr);
	if (strcmp(name, "rcpt_mailer") == 0)
		return ms->rcpt_addr == NULL ? NULL :
			mta_policy_is_local_domain(s->mta->policy,
				domain_of(ms->rcpt_addr) != NULL ?
				domain_of(ms->rcpt_addr) : "") ? "lmtp" : "smtp";
	return tls_macro(ms, name);
}
