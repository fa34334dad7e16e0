/* smtp-milter.h — the MTA's mail filters (milters: rspamd, OpenDKIM,
 * ...) in an SMTP session: every stage of the session told to each
 * filter of the listener in order ([mta] smtpd_milters for port 25,
 * submission_milters for 587/465), their verdicts turned into replies,
 * the message content handed to them as it arrives, and at the end of
 * the message their modifications applied before it is made durable.
 *
 *   connect ─► before the 220       HELO/EHLO ─► its reply
 *   MAIL ─► its 250 (after our own checks)   RCPT ─► each 250
 *   content ─► DATA, each header, EOH, body chunks as pieces arrive
 *   end of content ─► each filter's end of message, in order: its
 *       modifications (headers, recipients, sender, body, quarantine)
 *       applied, then its verdict; the queue write and the 250 only
 *       after every filter accepted
 *   RSET, a refused message, the session's end ─► ABORT / QUIT
 *
 * Every filter sees the message as the client sent it (as in Sendmail:
 * not the earlier filters' changes); their changes are applied in the
 * order of the list, so a later filter's index counts the fields an
 * earlier one added. The first filter (in order) that rejects, tempfails
 * or discards decides; one that accepts is asked nothing more about the
 * message (at connect or HELO: about the session). A filter that fails
 * gets its default action (milter-settings.h) for the rest of the
 * session: accept skips it, tempfail/reject answer 451 4.7.1 / 550 5.7.1.
 *
 * Trust boundary: the filters' answers (lib-mail/milter-client.c and
 * milter-proto.c check their shape; here: a reply text is used only if
 * its class is the verdict's, added recipients and a changed sender are
 * parsed like the client's own RCPT/MAIL and an unparsable one fails the
 * filter, a header edit can only produce well-formed fields). The
 * client's content reaches a filter exactly as it will be stored.
 * References: Sendmail libmilter, Postfix MILTER_README. */
#ifndef MT_MTA_SMTP_MILTER_H
#define MT_MTA_SMTP_MILTER_H

#include <stdbool.h>

#include "milter-client.h"

struct mt_buf;
struct mt_config;
struct mt_mta_settings;
struct smtp_session;

/* The configured filters, built from the config at start-up and at each
 * reload; a session keeps the set it started with. */
struct mta_milters;
/* NULL and an error (thread-local) if a filter's address cannot be used. */
struct mta_milters *mta_milters_new(const struct mt_config *config,
				    const struct mt_mta_settings *set,
				    const char **error_r);
void mta_milters_unref(struct mta_milters **milters_p);

/* What the filters said, for the session to answer. */
struct smtp_milter_verdict {
	enum mt_milter_status status;	/* CONTINUE, REJECT, TEMPFAIL, DISCARD */
	const char *text;		/* a filter's own reply, or NULL */
};
typedef void smtp_milter_done_t(struct smtp_session *s,
				const struct smtp_milter_verdict *verdict);

/* The session's filters (none for its listener: nothing happens). */
void smtp_milter_session_start(struct smtp_session *s);
void smtp_milter_session_end(struct smtp_session *s);
bool smtp_milter_active(const struct smtp_session *s);

/* Write the reply for a REJECT or TEMPFAIL verdict (the filter's own
 * text, or 550 5.7.1 / 451 4.7.1). */
void smtp_milter_reply(struct smtp_session *s, const struct smtp_milter_verdict *v);

/* The stages: done runs from the loop once every filter has answered. */
void smtp_milter_connect(struct smtp_session *s, smtp_milter_done_t *done);
void smtp_milter_helo(struct smtp_session *s, smtp_milter_done_t *done);
/* params: the ESMTP parameters as the client sent them (after the path). */
void smtp_milter_mail(struct smtp_session *s, const char *params,
		      smtp_milter_done_t *done);
void smtp_milter_rcpt(struct smtp_session *s, const char *address,
		      const char *params, smtp_milter_done_t *done);
/* The transaction is over without an end of message (RSET, refused). */
void smtp_milter_abort(struct smtp_session *s);

/* Content (smtp-milter-content.c). The engine's content hook while the
 * session has filters: take a piece (false: not yet, resumed later). */
bool smtp_milter_piece(struct smtp_session *s);
/* The content ended well (DATA's dot, BDAT LAST): hand over the rest,
 * ask each filter's end of message and apply the changes; done with the
 * verdict. The message is then queued by smtp-data.c from
 * smtp_milter_head() (our lines and the header section as the filters
 * left them) and the body in s->tx. */
void smtp_milter_end(struct smtp_session *s, smtp_milter_done_t *done);
/* The rendered header section (with the empty line) for the queue,
 * taken: *len_r octets. */
char *smtp_milter_head(struct smtp_session *s, size_t *len_r);
/* The body octets after the spool's pieces, for the queue's tail. */
struct mt_buf *smtp_milter_tail(struct smtp_session *s);
/* A filter's new body (REPLBODY) holds a NUL octet: refused like a
 * client's (RFC 5322 3.5), not queued for a store to bounce. */
bool smtp_milter_body_nul(const struct smtp_session *s);
/* Busy with the filters (the session's content waits). */
bool smtp_milter_busy(const struct smtp_session *s);
/* The spool finished a write: a filter's new body may go on. */
void smtp_milter_spool_ready(struct smtp_session *s);

#endif
