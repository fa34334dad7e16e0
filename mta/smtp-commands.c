/* smtp-commands.c — the SMTP command table and the handlers of the
 * connection and envelope commands: EHLO/HELO, MAIL, RCPT (with the relay
 * policy and the directory lookup), RSET, NOOP, QUIT, VRFY, HELP, STARTTLS.
 * AUTH is in smtp-auth.c, DATA/BDAT in smtp-data.c.
 *
 * Trust boundary: command arguments are the client's. Paths and ESMTP
 * parameters are parsed by lib/address (RFC 5321 4.1.2 grammar and length
 * limits); a recipient is accepted only if its domain is local and the
 * directory knows it, or the client may relay (authenticated, or in
 * mynetworks). Source routes are dropped by the parser (RFC 5321 C), and a
 * local part holding '%', '!' or '@' is never looked up or relayed as an
 * address of ours, so no form of the %-hack, bang path or quoted address
 * reaches another domain through us (no open relay). An unknown local
 * user's 550 waits rcpt_fail_delay * 2^(n-1) for the client address's
 * n-th within rcpt_fail_window (a timer: smtp_reply_delayed), and from
 * rcpt_fail_limit on its RCPTs get 450 4.7.1 unlooked-up, across
 * connections (smtp-server.c, lib/authfail), so the directory cannot be
 * enumerated at full speed; known users never wait, mynetworks is exempt.
 * A '%'/'!'/quoted local part is refused by its syntax and not counted:
 * it tells nothing about our users.
 * RFCs: 5321 4.1.1 (commands), 4.1.4 (order), 4.5.3.1.8 (recipient
 * limit: 452), 3.3 (MAIL/RCPT), 7.3 (VRFY 252); 1870 (SIZE); 6152
 * (8BITMIME); 3461 (DSN parameters); 6531 (SMTPUTF8); 3207 (STARTTLS);
 * 2034 + 3463 (enhanced status codes). */
#include "clock.h"
#include "smtp-session.h"
#include "address.h"
#include "alloc.h"
#include "authfail.h"
#include "dirsvc.h"
#include "mta-metrics.h"
#include "mta-policy.h"
#include "mta.h"
#include "smtp-milter.h"
#include "smtp-parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PRE_TLS MT_CMD_PRE_TLS
#define PRE_AUTH MT_CMD_PRE_AUTH
#define GROUP_END MT_CMD_GROUP_END
#define JUNK MT_CMD_JUNK

const struct smtp_command smtp_commands[] = {
	{ { "EHLO", PRE_TLS | PRE_AUTH | GROUP_END }, smtp_cmd_ehlo },
	{ { "HELO", PRE_TLS | PRE_AUTH | GROUP_END }, smtp_cmd_helo },
	{ { "STARTTLS", PRE_TLS | PRE_AUTH | GROUP_END }, smtp_cmd_starttls },
	{ { "AUTH", PRE_AUTH | GROUP_END | MT_CMD_SECRET }, smtp_cmd_auth },
	{ { "MAIL", 0 }, smtp_cmd_mail },
	{ { "RCPT", 0 }, smtp_cmd_rcpt },
	{ { "DATA", GROUP_END }, smtp_cmd_data },
	{ { "BDAT", 0 }, smtp_cmd_bdat },
	{ { "RSET", PRE_TLS | PRE_AUTH | JUNK }, smtp_cmd_rset },
	{ { "NOOP", PRE_TLS | PRE_AUTH | JUNK | GROUP_END }, smtp_cmd_noop },
	{ { "QUIT", PRE_TLS | PRE_AUTH | GROUP_END }, smtp_cmd_quit },
	{ { "VRFY", PRE_AUTH | JUNK }, smtp_cmd_vrfy },
	{ { "HELP", PRE_TLS | PRE_AUTH | JUNK }, smtp_cmd_help },
	{ { "EXPN", PRE_AUTH | JUNK }, smtp_cmd_not_implemented },
	{ { "ETRN", JUNK }, smtp_cmd_not_implemented },
};
const struct mt_command_table smtp_command_table = MT_COMMAND_TABLE(smtp_commands);

/* Transaction */

void smtp_tx_reset(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	for (unsigned int i = 0; i < tx->rcpt_count; i++) {
		free(tx->rcpts[i].address);
		free(tx->rcpts[i].orcpt);
	}
	free(tx->rcpts);
	free(tx->sender);
	free(tx->envid);
	free(tx->mail_params);
	mt_buf_free(&tx->prefix);
	smtp_milter_abort(s);
	mt_smtpd_content_reset(&s->smtpd);
	queue_spool_abort(&tx->spool);
	memset(tx, 0, sizeof(*tx));
	s->log.queue_id[0] = '\0';
}

static bool tx_has_rcpt(const struct smtp_tx *tx, const char *address);
static void pending_clear(struct smtp_pending_rcpt *pending);

void smtp_tx_add_rcpt(struct smtp_session *s, struct smtp_pending_rcpt *pending)
{
	struct smtp_tx *tx = &s->tx;
	if (tx_has_rcpt(tx, pending->address)) {
		pending_clear(pending);
		return;
	}
	unsigned int n = tx->rcpt_count;
	if (n == 0 || (n & (n - 1)) == 0)
		tx->rcpts = mt_xrealloc(tx->rcpts, (n == 0 ? 1 : 2 * (size_t)n) *
					sizeof(*tx->rcpts));
	struct smtp_rcpt *r = &tx->rcpts[tx->rcpt_count++];
	r->address = pending->address;
	r->orcpt = pending->orcpt;
	r->notify = pending->notify;
	free(pending->params);
	memset(pending, 0, sizeof(*pending));
}

unsigned int smtp_tx_del_rcpt(struct smtp_session *s, const char *address)
{
	struct smtp_tx *tx = &s->tx;
	unsigned int kept = 0, removed = 0;
	for (unsigned int i = 0; i < tx->rcpt_count; i++) {
		if (strcasecmp(tx->rcpts[i].address, address) == 0) {
			free(tx->rcpts[i].address);
			free(tx->rcpts[i].orcpt);
			removed++;
			continue;
		}
		tx->rcpts[kept++] = tx->rcpts[i];
	}
	tx->rcpt_count = kept;
	return removed;
}

/* The ESMTP parameters as the client gave them ("SIZE=10 BODY=8BITMIME"). */
static char *params_string(const struct mt_esmtp_params *params)
{
	struct mt_buf out = MT_BUF_INIT;
	for (size_t i = 0; i < params->count; i++) {
		if (i > 0)
			mt_buf_append_char(&out, ' ');
		mt_buf_append_str(&out, params->param[i].key);
		if (params->param[i].value != NULL) {
			mt_buf_append_char(&out, '=');
			mt_buf_append_str(&out, params->param[i].value);
		}
	}
	mt_buf_append(&out, "", 0);
	return mt_buf_steal(&out);
}

static bool tx_has_rcpt(const struct smtp_tx *tx, const char *address)
{
	for (unsigned int i = 0; i < tx->rcpt_count; i++)
		if (strcasecmp(tx->rcpts[i].address, address) == 0)
			return true;
	return false;
}

static void pending_clear(struct smtp_pending_rcpt *pending)
{
	free(pending->address);
	free(pending->orcpt);
	free(pending->params);
	memset(pending, 0, sizeof(*pending));
}

/* Greeting commands */

static void set_helo(struct smtp_session *s, const char *args, size_t len,
		     bool esmtp)
{
	smtp_tx_reset(s);	/* RFC 5321 4.1.4: EHLO resets like RSET */
	free(s->helo);
	s->helo = mt_xstrndup(args, len);
	s->esmtp = esmtp;
}

/* The answer to EHLO (the extensions we offer) or HELO. */
static void helo_answer(struct smtp_session *s)
{
	if (!s->esmtp) {
		mt_smtpd_reply(&s->smtpd, 250, "%s", s->mta->hostname);
		return;
	}
	const struct mt_mta_settings *set = s->mta->set;
	mt_smtpd_reply_more(&s->smtpd, 250, "%s", s->mta->hostname);
	mt_smtpd_reply_more(&s->smtpd, 250, "PIPELINING");
	mt_smtpd_reply_more(&s->smtpd, 250, "SIZE %llu", (unsigned long long)set->max_message_size);
	if (!s->smtpd.tls && s->mta->tls_server != NULL)
		mt_smtpd_reply_more(&s->smtpd, 250, "STARTTLS");
	if (smtp_auth_offered(s))
		mt_smtpd_reply_more(&s->smtpd, 250, "AUTH PLAIN LOGIN");
	mt_smtpd_reply_more(&s->smtpd, 250, "ENHANCEDSTATUSCODES");
	mt_smtpd_reply_more(&s->smtpd, 250, "8BITMIME");
	mt_smtpd_reply_more(&s->smtpd, 250, "DSN");
	mt_smtpd_reply_more(&s->smtpd, 250, "SMTPUTF8");
	mt_smtpd_reply(&s->smtpd, 250, "CHUNKING");
}

/* The filters' word on HELO/EHLO: a refusal leaves the session without
 * a greeting name (MAIL then needs another HELO/EHLO). */
static void helo_milter_done(struct smtp_session *s, const struct smtp_milter_verdict *v)
{
	if (v->status == MT_MILTER_REJECT || v->status == MT_MILTER_TEMPFAIL) {
		smtp_milter_reply(s, v);
		MT_FREE(&s->helo);
	} else {
		helo_answer(s);
	}
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
	mt_smtpd_resume(&s->smtpd);
}

static void greeting_command(struct smtp_session *s, const char *args, size_t len,
			     bool esmtp)
{
	set_helo(s, args, len, esmtp);
	if (!smtp_milter_active(s)) {
		helo_answer(s);
		return;
	}
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_WAIT);
	smtp_milter_helo(s, helo_milter_done);
}

void smtp_cmd_ehlo(struct smtp_session *s, const char *args)
{
	size_t len;
	if (!smtp_parse_helo(args, &len)) {
		mt_smtpd_reply(&s->smtpd, 501, "5.5.4 Syntax: EHLO hostname");
		return;
	}
	greeting_command(s, args, len, true);
}

void smtp_cmd_helo(struct smtp_session *s, const char *args)
{
	size_t len;
	if (!smtp_parse_helo(args, &len)) {
		mt_smtpd_reply(&s->smtpd, 501, "5.5.4 Syntax: HELO hostname");
		return;
	}
	greeting_command(s, args, len, false);
}

void smtp_cmd_starttls(struct smtp_session *s, const char *args)
{
	if (s->smtpd.tls) {
		mt_smtpd_reply(&s->smtpd, 503, "5.5.1 Error: TLS already active");
		return;
	}
	if (s->mta->tls_server == NULL) {
		mt_smtpd_reply(&s->smtpd, 454, "4.7.0 TLS not available");
		return;
	}
	if (*args != '\0') {
		mt_smtpd_reply(&s->smtpd, 501, "5.5.4 Syntax: STARTTLS");
		return;
	}
	mt_smtpd_reply(&s->smtpd, 220, "2.0.0 Ready to start TLS");
	/* RFC 3207 4.2: forget what the client told us in plaintext. */
	smtp_tx_reset(s);
	MT_FREE(&s->helo);
	s->esmtp = false;
	s->authenticated = false;
	MT_FREE(&s->auth_user);
	mt_smtpd_starttls(&s->smtpd);
}

/* MAIL and RCPT: lib-mail/smtp-params.c parses, the handlers decide. */

static void reply_parse_error(struct smtp_session *s,
			      const struct mt_smtp_param_error *e)
{
	mt_smtpd_reply(&s->smtpd, e->code, "%s%s", e->text, e->detail);
}

void smtp_cmd_mail(struct smtp_session *s, const char *args)
{
	struct mt_smtp_mail_args mail;
	struct mt_smtp_param_error error;

	if (s->helo == NULL) {
		mt_smtpd_reply(&s->smtpd, 503, "5.5.1 Error: send HELO/EHLO first");
		return;
	}
	if (s->tx.active) {
		mt_smtpd_reply(&s->smtpd, 503, "5.5.1 Error: nested MAIL command");
		return;
	}
	if (!mt_smtp_parse_mail(args, s->esmtp ? SMTP_OFFERED : 0,
				SMTP_MAIL_ADDR_FLAGS, s->mta->set->max_message_size,
				&mail, &error)) {
		smtp_tx_reset(s);
		reply_parse_error(s, &error);
		return;
	}
	struct smtp_tx *tx = &s->tx;
	tx->sender = mt_xstrdup(mail.addr.addr);
	tx->declared_size = mail.size;
	tx->body_8bit = mail.body_8bit;
	tx->smtputf8 = mail.smtputf8;
	tx->ret = (enum queue_ret)mail.ret;
	tx->envid = mail.envid != NULL ? mt_xstrdup(mail.envid) : NULL;
	tx->mail_params = params_string(&mail.params);
	/* After AUTH the sender must be the login's (smtp-auth.c). */
	smtp_auth_check_sender(s);
}

static void mail_milter_done(struct smtp_session *s, const struct smtp_milter_verdict *v)
{
	if (v->status == MT_MILTER_REJECT || v->status == MT_MILTER_TEMPFAIL) {
		smtp_milter_reply(s, v);
		smtp_tx_reset(s);
	} else {
		mt_smtpd_reply(&s->smtpd, 250, "2.1.0 Ok");
	}
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
	mt_smtpd_resume(&s->smtpd);
}

bool smtp_mail_accept(struct smtp_session *s)
{
	struct smtp_tx *tx = &s->tx;
	tx->active = true;
	queue_new_id(s->mta->queue, tx->queue_id);
	snprintf(s->log.queue_id, sizeof(s->log.queue_id), "%s", tx->queue_id);
	mt_slog(MT_LOG_INFO, &s->log, "mail from=<%s> size=%llu client=%s%s%s",
		tx->sender, (unsigned long long)tx->declared_size, s->peer_name,
		s->authenticated ? " auth=" : "",
		s->authenticated ? s->auth_user : "");
	if (smtp_milter_active(s)) {
		mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_WAIT);
		smtp_milter_mail(s, tx->mail_params, mail_milter_done);
		return true;
	}
	mt_smtpd_reply(&s->smtpd, 250, "2.1.0 Ok");
	return false;
}

/* RCPT */

/* Is this client's address held to the unknown-recipient penalties
 * (rcpt_fail_delay, rcpt_fail_limit)? Not in mynetworks: those are the
 * operator's own hosts (Postfix's smtpd_client_event_limit_exceptions
 * default). An authenticated client is: one stolen password must not open
 * the directory to enumeration. */
static bool rcpt_penalized(const struct smtp_session *s)
{
	return !s->trusted;
}

/* An unknown local recipient: 550, after the client address's penalty
 * delay for its n-th one within rcpt_fail_window, counted from the RCPT
 * (so the directory's time shows no more than the reply does). True if
 * the reply is delayed (it resumes the session). */
static bool rcpt_unknown(struct smtp_session *s, const char *address)
{
	const struct mt_mta_settings *set = s->mta->set;
	uint64_t delay = 0;
	s->unknown_rcpts++;
	mta_metrics_rcpt_refused(s->mta, MTA_RCPT_UNKNOWN_USER);
	if (rcpt_penalized(s)) {
		bool reached = false;
		delay = smtp_server_rcpt_failed(s->mta->server, s->peer_ip, &reached);
		if (reached)
			mt_slog(MT_LOG_WARNING, &s->log, "client %s reached rcpt_fail_limit=%llu "
				"unknown recipients: its RCPTs get 450 4.7.1 until %llus "
				"after its last one", s->peer_ip,
				(unsigned long long)set->rcpt_fail_limit,
				(unsigned long long)(set->rcpt_fail_window / 1000));
		delay = mt_authfail_wait_ms(s->rcpt_started_ms, delay, mt_clock_ms());
	}
	return mt_smtpd_reply_delayed(&s->smtpd, delay, 550, "5.1.1 <%s>: Recipient address "
				  "rejected: User unknown", address);
}

/* rcpt_fail_limit reached: every RCPT to a local domain from this address
 * gets a temporary refusal without a lookup, so neither a known nor an
 * unknown user can be told apart, and a real sender retries after the
 * window (450 4.7.1 as Postfix's anvil recipient rate limit: a 421 would
 * also drop the recipients this transaction already has). It counts
 * toward max_errors like a 5xx, so a prober is disconnected. */
static bool rcpt_limited(struct smtp_session *s, const char *address)
{
	if (!rcpt_penalized(s) || !smtp_server_rcpt_limited(s->mta->server, s->peer_ip))
		return false;
	s->limited_rcpts++;
	s->smtpd.errors++;
	mta_metrics_rcpt_refused(s->mta, MTA_RCPT_LIMITED);
	mt_smtpd_reply(&s->smtpd, 450, "4.7.1 <%s>: Recipient address rejected: too many "
		   "unknown recipients from your address, try again later", address);
	return true;
}

/* RCPT's 250: the pending recipient joins the transaction and is counted
 * by where it goes (a user of the local domains, found in the directory:
 * its store shard; another domain: relayed). */
static void rcpt_ok(struct smtp_session *s)
{
	struct smtp_pending_rcpt *pending = &s->pending_rcpt;
	enum mta_destination destination = s->pending_rcpt_local ? MTA_DEST_LOCAL :
		MTA_DEST_REMOTE;
	unsigned int before = s->tx.rcpt_count;
	smtp_tx_add_rcpt(s, pending);
	if (s->tx.rcpt_count > before)
		mta_metrics_rcpt_accepted(s->mta, destination);
	mt_smtpd_reply(&s->smtpd, 250, "2.1.5 Ok");
}

static void rcpt_milter_done(struct smtp_session *s, const struct smtp_milter_verdict *v)
{
	struct smtp_pending_rcpt *pending = &s->pending_rcpt;
	if (v->status == MT_MILTER_REJECT || v->status == MT_MILTER_TEMPFAIL) {
		smtp_milter_reply(s, v);
		pending_clear(pending);
	} else {
		rcpt_ok(s);
	}
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
	mt_smtpd_resume(&s->smtpd);
}

/* s->pending_rcpt passed our checks: to the filters, or added at once
 * (250). True when the filters answer later. */
static bool rcpt_accept(struct smtp_session *s)
{
	struct smtp_pending_rcpt *pending = &s->pending_rcpt;
	if (!smtp_milter_active(s)) {
		rcpt_ok(s);
		return false;
	}
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_WAIT);
	smtp_milter_rcpt(s, pending->address, pending->params, rcpt_milter_done);
	return true;
}

static void rcpt_lookup_done(const struct mt_dirsvc_recipient *result,
			     void *context)
{
	struct smtp_session *s = context;
	struct smtp_pending_rcpt *pending = &s->pending_rcpt;
	s->dir_req = NULL;
	switch (result->status) {
	case MT_DIRSVC_FOUND:
		if (result->account == MT_DIRSVC_DISABLED) {
			mt_smtpd_reply(&s->smtpd, 550, "5.2.1 <%s>: Recipient address rejected: "
				   "mailbox disabled", pending->address);
			break;
		}
		mt_slog(MT_LOG_DEBUG, &s->log, "rcpt to=<%s> shard=%s%s",
			pending->address, result->shard,
			result->cached ? " cached=yes" : "");
		if (rcpt_accept(s))
			return;		/* the filters answer */
		break;
	case MT_DIRSVC_NOT_FOUND:
	case MT_DIRSVC_INVALID:
		if (rcpt_unknown(s, pending->address)) {
			pending_clear(pending);
			return;		/* the delayed reply resumes */
		}
		break;
	case MT_DIRSVC_TEMPFAIL:
		mt_slog(MT_LOG_WARNING, &s->log, "directory lookup of <%s> failed: %s",
			pending->address, result->reason != NULL ? result->reason : "");
		mta_metrics_rcpt_refused(s->mta, MTA_RCPT_DIRECTORY);
		mt_smtpd_reply(&s->smtpd, 451, "4.4.3 <%s>: Directory temporarily unavailable, "
			   "try again later", pending->address);
		break;
	}
	pending_clear(pending);
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_COMMAND);
	mt_smtpd_resume(&s->smtpd);
}

/* A local part that would route elsewhere on a lenient system. */
static bool local_part_routes(const char *local)
{
	return strpbrk(local, "%!@") != NULL;
}

void smtp_cmd_rcpt(struct smtp_session *s, const char *args)
{
	struct mt_smtp_rcpt_args rcpt;
	struct mt_smtp_param_error error;
	struct smtp_pending_rcpt pending = { NULL, NULL, 0, NULL };

	if (!s->tx.active) {
		mt_smtpd_reply(&s->smtpd, 503, "5.5.1 Error: need MAIL command");
		return;
	}
	s->rcpt_started_ms = mt_clock_ms();
	if (strncasecmp(args, "TO:", 3) == 0 &&
	    s->tx.rcpt_count >= s->mta->set->max_recipients) {
		mta_metrics_rcpt_refused(s->mta, MTA_RCPT_TOO_MANY);
		mt_smtpd_reply(&s->smtpd, 452, "4.5.3 Error: too many recipients");
		return;
	}
	if (!mt_smtp_parse_rcpt(args, s->esmtp ? SMTP_OFFERED : 0,
				SMTP_RCPT_ADDR_FLAGS, s->tx.smtputf8, &rcpt, &error)) {
		reply_parse_error(s, &error);
		return;
	}
	const struct mt_address *addr = &rcpt.addr;
	pending.notify = rcpt.notify;
	pending.orcpt = rcpt.orcpt != NULL ? mt_xstrdup(rcpt.orcpt) : NULL;
	pending.params = params_string(&rcpt.params);
	/* <Postmaster>, postmaster@, MAILER-DAEMON@, abuse@ (RFC 5321
	 * 4.5.1, RFC 2142): the configured mailbox, from anyone. */
	const char *role = mta_policy_role_mailbox(s->mta->policy,
						   s->mta->hostname, addr);
	const char *domain = addr->domain;
	pending.address = mt_xstrdup(role != NULL ? role : addr->addr);
	if (role != NULL)
		domain = strchr(pending.address, '@') != NULL ?
			strrchr(pending.address, '@') + 1 : "";
	if (tx_has_rcpt(&s->tx, pending.address)) {
		pending_clear(&pending);
		mt_smtpd_reply(&s->smtpd, 250, "2.1.5 Ok (duplicate recipient)");
		return;
	}
	bool local = (role != NULL || !addr->is_literal) &&
		mta_policy_is_local_domain(s->mta->policy, domain);
	s->pending_rcpt_local = local;
	if (local && role == NULL && rcpt_limited(s, pending.address)) {
		pending_clear(&pending);
		return;
	}
	if (local && role == NULL &&
	    (local_part_routes(addr->local) || addr->local[0] == '"')) {
		mta_metrics_rcpt_refused(s->mta, MTA_RCPT_UNKNOWN_USER);
		mt_smtpd_reply(&s->smtpd, 550, "5.1.1 <%s>: Recipient address rejected: "
			   "User unknown", pending.address);
		pending_clear(&pending);
		return;
	}
	if (!local) {
		if (role == NULL && !s->authenticated && !s->trusted) {
			mta_metrics_rcpt_refused(s->mta, MTA_RCPT_RELAY_DENIED);
			mt_smtpd_reply(&s->smtpd, 554, "5.7.1 <%s>: Relay access denied",
				   pending.address);
			pending_clear(&pending);
			return;
		}
		s->pending_rcpt = pending;
		rcpt_accept(s);
		return;
	}
	if (s->mta->dir == NULL) {
		mt_smtpd_reply(&s->smtpd, 451, "4.4.3 Directory not configured");
		pending_clear(&pending);
		return;
	}
	/* Check half done; rcpt_lookup_done() is the proceed half. */
	s->pending_rcpt = pending;
	mt_smtpd_enter_state(&s->smtpd, MT_SMTPD_WAIT);
	s->dir_req = mt_dirsvc_lookup_recipient(s->mta->dir, &s->log,
						s->pending_rcpt.address,
						rcpt_lookup_done, s);
}

/* Other commands */

void smtp_cmd_rset(struct smtp_session *s, const char *args)
{
	smtp_tx_reset(s);
	mt_smtpd_reply(&s->smtpd, 250, "2.0.0 Ok");
}

void smtp_cmd_noop(struct smtp_session *s, const char *args)
{
	mt_smtpd_reply(&s->smtpd, 250, "2.0.0 Ok");
}

void smtp_cmd_quit(struct smtp_session *s, const char *args)
{
	mt_smtpd_finish(&s->smtpd, MT_OUTCOME_QUIT, 221, "2.0.0 Bye");
}

void smtp_cmd_vrfy(struct smtp_session *s, const char *args)
{
	/* RFC 5321 7.3: we do not confirm addresses to strangers. */
	mt_smtpd_reply(&s->smtpd, 252, "2.0.0 Cannot VRFY user, but will accept message "
		   "and attempt delivery");
}

void smtp_cmd_help(struct smtp_session *s, const char *args)
{
	mt_smtpd_reply(&s->smtpd, 214, "2.0.0 Commands: EHLO HELO MAIL RCPT DATA BDAT RSET "
		   "NOOP QUIT VRFY HELP STARTTLS AUTH");
}

void smtp_cmd_not_implemented(struct smtp_session *s, const char *args)
{
	mt_smtpd_reply(&s->smtpd, 502, "5.5.1 Error: command not implemented");
}
