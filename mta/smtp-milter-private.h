/* smtp-milter-private.h — what smtp-milter.c (the filters of a session,
 * the stages and the walk that asks them in order) and
 * smtp-milter-content.c (the message content and the end of message)
 * share. Not installed; see smtp-milter.h. */
#ifndef MT_MTA_SMTP_MILTER_PRIVATE_H
#define MT_MTA_SMTP_MILTER_PRIVATE_H

#include "buf.h"
#include "milter-headers.h"
#include "milter-settings.h"
#include "smtp-milter.h"

/* One configured filter. */
struct mta_milter_filter {
	char *name;
	char *address;
	struct mt_milter_client_settings client;
	enum mt_milter_action default_action;
};

struct mta_milters {
	unsigned int refs;
	struct mta_milter_filter *filters;
	unsigned int count;
	/* Per listener kind ([0] smtp, [1] submission): indexes in filters. */
	unsigned int *lists[2];
	unsigned int list_len[2];
};

/* One filter in a session. */
struct smtp_milter {
	const struct mta_milter_filter *filter;
	struct mt_milter_client *client;
	bool opened;		/* connected and negotiated */
	bool off_session;	/* accepted the session, or failed with accept */
	bool off_message;	/* accepted this message */
	bool skip_body;		/* SKIP: no more body for this message */
};

/* What a walk hands to the filters: one command each, the header
 * section, body chunks, or the end of message. */
enum walk_kind { WALK_STAGE, WALK_HEAD, WALK_BODY, WALK_EOM };

struct smtp_milters;
typedef void walk_then_t(struct smtp_milters *ms);

struct smtp_milters {
	struct smtp_session *s;
	struct mta_milters *conf;
	struct smtp_milter *m;
	unsigned int n;

	/* The walk in progress: filter cur, its item-th packet. */
	bool walking;
	enum walk_kind kind;
	enum mt_milter_cmd stage_cmd;	/* WALK_STAGE */
	struct mt_buf stage_packet;
	struct mt_buf packet;		/* scratch */
	unsigned int cur;
	size_t item;
	walk_then_t *then;		/* after the last filter */
	smtp_milter_done_t *done;	/* the stage's caller */
	/* The first verdict other than CONTINUE, if any. */
	struct smtp_milter_verdict verdict;
	char *verdict_text;
	const char *verdict_by;		/* the filter's name */

	/* Macro values of the stage being sent (strings kept until the next). */
	const char *rcpt_addr;
	char *scratch[8];
	unsigned int n_scratch;

	/* The message (smtp-milter-content.c). */
	struct mt_buf head;		/* the client's fields, until their end */
	bool head_found, head_too_big, head_sent;
	size_t head_sep;		/* octets of the empty line (0 or 2) */
	struct milter_headers headers;	/* ours and the client's */
	struct mt_buf feed;		/* body octets being handed over */
	struct mt_buf tail;		/* body octets for the queue's tail */
	bool feeding, feed_final, ending;
	smtp_milter_done_t *end_done;
	struct mt_buf newbody;		/* REPLBODY octets not yet written */
	int replaced_by;		/* the filter that replaced the body, or -1 */
	bool body_nul;			/* ... and wrote a NUL into it */
	struct smtp_milter *held;	/* its modification waits for the spool */
	bool discard;
};

/* The session's filter state (NULL when its listener has none). */
struct smtp_milters *smtp_milters_of(struct smtp_session *s);

/* Walks (smtp-milter.c) */
void milter_walk(struct smtp_milters *ms, enum walk_kind kind, walk_then_t *then);
/* A message-level verdict stops every later walk of the message. */
bool milter_message_refused(const struct smtp_milters *ms);
void milter_set_verdict(struct smtp_milters *ms, enum mt_milter_status status,
			const char *text, const char *by);
/* The macro callback for every stage. */
const char *milter_macro(const char *name, void *context);

/* Content (smtp-milter-content.c) */
size_t milter_walk_count(struct smtp_milters *ms, struct smtp_milter *m);
void milter_walk_packet(struct smtp_milters *ms, enum mt_milter_cmd *cmd_r);
bool milter_mod(const struct mt_milter_reply *mod, void *context);
void milter_message_reset(struct smtp_milters *ms);

#endif
