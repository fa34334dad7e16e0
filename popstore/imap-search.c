/* imap-search.c — mailtier-popstore's IMAP SEARCH and UID SEARCH over the
 * selected mailbox's view: the criteria are lib-mail's (imap-search.h),
 * matched against each message with what the snapshot has (flags,
 * keywords, size, INTERNALDATE); a message whose answer needs its header
 * or body has that much read from the store, 64 KiB at a time, and only
 * for as long as the criteria need it. Results as IMAP4rev1's "* SEARCH",
 * or as ESEARCH (RFC 4731: MIN, MAX, COUNT, ALL) when the client asked
 * with RETURN or enabled IMAP4rev2 (RFC 9051 6.4.4, 7.3.4), written by
 * lib-mail with the MODSEQ of the messages returned when a MODSEQ key was
 * searched (RFC 4731 3.2, RFC 7162 3.1.5).
 *
 * SORT and THREAD (imap-sort.c) run the same matching through
 * imap_search_filter: the matches' view positions are handed to their
 * callback instead of answered.
 *
 * Limits (the client's to push on): the criteria's nesting and set ranges
 * (imap-search's limits), the header read (1 MiB), the text searched of a
 * message (its first SEARCH_BODY_MAX octets), and the time one SEARCH may
 * take (SEARCH_TIME_MAX: then NO [LIMIT]).
 *
 * Trust boundary: the client's criteria (lib-mail); message bytes are the
 * store's, searched within the lengths read. */
#include "imap-session.h"
#include "alloc.h"
#include "clock.h"
#include "imap-search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SEARCH_READ_CHUNK (64 * 1024)
#define SEARCH_HEAD_MAX (1024 * 1024)
#define SEARCH_BODY_MAX (4 * 1024 * 1024)
#define SEARCH_TIME_MAX_MS 30000
#define SEARCH_DEPTH_MAX 16
#define SEARCH_RANGES_MAX 1024

struct imap_search_run {
	struct imap_session *s;
	char tag[MT_IMAP_TAG_MAX + 1];
	bool uid, esearch;
	unsigned int returns;
	struct mt_imap_search criteria;
	unsigned int pos;		/* the view position being matched */
	uint32_t *hits;			/* seq or uid numbers */
	uint64_t *hit_modseqs;		/* their MODSEQs (RFC 7162 3.1.5) */
	unsigned int hit_count;
	/* The current message's bytes read so far. */
	struct mt_buf data;
	size_t head_end;
	bool head_known;		/* head_end found (or all read) */
	uint64_t want;			/* read up to here */
	uint64_t started_ms;
	struct mt_store_req *req;
	bool async;
	/* imap_search_filter's: hits are positions, handed to done. */
	imap_search_done_t *done;
	void *done_context;
	void (*done_free)(void *context);
};

static void run_free(struct imap_search_run *r)
{
	if (r->req != NULL)
		mt_store_req_cancel(r->req);
	mt_imap_search_free(&r->criteria);
	mt_buf_free(&r->data);
	if (r->done_context != NULL && r->done_free != NULL)
		r->done_free(r->done_context);
	free(r->hits);
	free(r->hit_modseqs);
	free(r);
}

static bool has_keyword(void *context, const char *name)
{
	struct imap_session *s = ((struct imap_search_run *)context)->s;
	const struct mt_store_msg *m = imap_view_msg(s, ((struct imap_search_run *)context)->pos);
	for (unsigned int i = 0; i < MT_STORE_KEYWORDS_MAX; i++) {
		const char *k = mt_store_mailbox_keyword(s->selected.mbox, i);
		if (k == NULL)
			break;
		if ((m->keywords & UINT64_C(1) << i) && strcasecmp(k, name) == 0)
			return true;
	}
	return false;
}

static void search_finish(struct imap_search_run *r, const char *failure)
{
	struct imap_session *s = r->s;
	if (r->done != NULL) {
		imap_search_done_t *done = r->done;
		void *context = r->done_context;
		uint32_t *hits = r->hits;
		const unsigned int count = r->hit_count;
		const bool async = r->async;
		r->hits = NULL;
		r->done_context = NULL;
		s->search = NULL;
		run_free(r);
		done(s, context, hits, count, failure, async);
		return;
	}
	if (failure == NULL) {
		struct mt_buf line = MT_BUF_INIT;
		const uint64_t *modseqs = r->criteria.uses_modseq ? r->hit_modseqs : NULL;
		if (r->esearch) {
			mt_buf_appendf(&line, "* ESEARCH (TAG \"%s\")%s", r->tag, r->uid ? " UID" : "");
			mt_imap_search_write_esearch(&line, r->returns, r->hits, modseqs,
						     r->hit_count);
		} else
			mt_imap_search_write_search(&line, r->hits, modseqs, r->hit_count);
		imap_line(s, "%s", mt_buf_cstr(&line));
		mt_buf_free(&line);
		imap_tagged(s, r->tag, "OK %sSEARCH completed.", r->uid ? "UID " : "");
	} else
		imap_tagged(s, r->tag, "%s", failure);
	const bool async = r->async;
	s->search = NULL;
	run_free(r);
	if (async)
		imap_resume(s);
	else
		imap_enter_state(s, s->resume_state);
}

static void search_run(struct imap_search_run *r);
static bool search_start(struct imap_search_run *r, const struct mt_imap_arg *args,
			 size_t count);

static void read_done(struct mt_store_req *req, void *context)
{
	struct imap_search_run *r = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	r->req = NULL;
	size_t len;
	const void *data = mt_store_req_data(req, &len);
	if (status == MT_STORE_NOT_FOUND) {
		/* Expunged meanwhile (POP3): no match; the next one. */
		r->pos++;
		mt_buf_reset(&r->data);
		r->head_end = 0;
		r->head_known = false;
		r->want = 0;
		search_run(r);
		return;
	}
	if (status != MT_STORE_OK) {
		mt_slog(MT_LOG_WARNING, &r->s->log, "imap search read: %s: %s",
			mt_store_status_name(status), error);
		if (status == MT_STORE_FATAL)
			popstore_store_fatal(r->s->ps, error);
		search_finish(r, "NO [UNAVAILABLE] Temporary failure; try later.");
		return;
	}
	mt_buf_append(&r->data, data, len);
	if (len == 0)
		r->want = r->data.len;	/* the message ended: read_more stops */
	search_run(r);
}

/* Read more of message pos (up to r->want); false if nothing more to read. */
static bool read_more(struct imap_search_run *r, unsigned int index)
{
	if (r->data.len >= r->want)
		return false;
	uint64_t left = r->want - r->data.len;
	r->req = mt_store_read(r->s->ps->port, r->s->selected.mbox, index, r->data.len,
			       left < SEARCH_READ_CHUNK ? (size_t)left : SEARCH_READ_CHUNK,
			       read_done, r);
	r->async = true;
	return true;
}

static void search_run(struct imap_search_run *r)
{
	struct imap_session *s = r->s;
	while (r->pos < s->selected.count) {
		if (mt_clock_ms() - r->started_ms > SEARCH_TIME_MAX_MS) {
			search_finish(r, "NO [LIMIT] Search takes too long; narrow it down.");
			return;
		}
		const unsigned int index = s->selected.view[r->pos];
		const struct mt_store_msg *m = imap_view_msg(s, r->pos);
		const struct imap_selected *sel = &s->selected;
		struct mt_imap_search_msg sm = {
			.seq = r->pos + 1, .uid = m->uid, .largest_seq = sel->count,
			.largest_uid = imap_view_msg(s, sel->count - 1)->uid,
			.flags = m->flags, .size = m->size, .internaldate = m->arrival,
			.modseq = m->modseq,
			.keyword = has_keyword, .context = r,
		};
		const uint64_t head_cap = m->size < SEARCH_HEAD_MAX ? m->size : SEARCH_HEAD_MAX;
		const uint64_t body_cap = m->size < SEARCH_BODY_MAX ? m->size : SEARCH_BODY_MAX;
		if (!r->head_known) {
			r->head_end = imap_header_end(r->data.data != NULL ? r->data.data : "",
						    r->data.len);
			/* No empty line within what a header may be: all header. */
			r->head_known = r->head_end > 0 || r->data.len >= head_cap;
			if (r->head_known && r->head_end == 0)
				r->head_end = r->data.len;
		}
		if (r->head_known) {
			sm.header = r->data.data != NULL ? r->data.data : "";
			sm.header_len = r->head_end;
		}
		if (r->head_known && r->data.len >= body_cap) {
			sm.body = sm.header + r->head_end;
			sm.body_len = r->data.len > r->head_end ? r->data.len - r->head_end : 0;
		}
		enum mt_imap_search_match answer = mt_imap_search_match(&r->criteria, &sm);
		if (answer == MT_IMAP_SEARCH_NEED_HEADER || answer == MT_IMAP_SEARCH_NEED_BODY) {
			r->want = answer == MT_IMAP_SEARCH_NEED_BODY ? body_cap :
				r->data.len + SEARCH_READ_CHUNK < head_cap ?
				r->data.len + SEARCH_READ_CHUNK : head_cap;
			if (read_more(r, index))
				return;
			/* Nothing more to read (the message ended early): what
			 * was read is all of it. */
			r->head_known = true;
			if (r->head_end == 0)
				r->head_end = r->data.len;
			if (answer == MT_IMAP_SEARCH_NEED_BODY || r->data.len >= body_cap) {
				sm.header = r->data.data != NULL ? r->data.data : "";
				sm.header_len = r->head_end;
				sm.body = sm.header + r->head_end;
				sm.body_len = r->data.len - r->head_end;
				answer = mt_imap_search_match(&r->criteria, &sm);
				if (answer != MT_IMAP_SEARCH_YES)
					answer = MT_IMAP_SEARCH_NO;
			} else
				continue;
		}
		if (answer == MT_IMAP_SEARCH_YES) {
			r->hits = mt_xrealloc(r->hits, (r->hit_count + 1) * sizeof(*r->hits));
			r->hit_modseqs = mt_xrealloc(r->hit_modseqs, (r->hit_count + 1) *
						     sizeof(*r->hit_modseqs));
			r->hits[r->hit_count] = r->done != NULL ? r->pos :
						r->uid ? m->uid : r->pos + 1;
			r->hit_modseqs[r->hit_count++] = m->modseq;
		}
		r->pos++;
		mt_buf_reset(&r->data);
		r->head_end = 0;
		r->head_known = false;
		r->want = 0;
	}
	search_finish(r, NULL);
}

void imap_cmd_search(struct imap_session *s, const struct mt_imap_command *cmd, bool uid)
{
	struct imap_search_run *r = mt_xcalloc(1, sizeof(*r));
	r->s = s;
	snprintf(r->tag, sizeof(r->tag), "%s", cmd->tag);
	r->uid = uid;
	r->esearch = s->rev2;
	r->returns = MT_IMAP_SEARCH_RETURN_ALL;
	size_t i = 0;
	if (cmd->count >= 2 && mt_imap_arg_atom_is(&cmd->args[0], "RETURN") &&
	    cmd->args[1].type == MT_IMAP_ARG_LIST) {
		const struct mt_imap_arg *opts = &cmd->args[1];
		r->esearch = true;
		r->returns = opts->len == 0 ? MT_IMAP_SEARCH_RETURN_ALL : 0;
		for (size_t k = 0; k < opts->len; k++) {
			const struct mt_imap_arg *o = &opts->list[k];
			if (mt_imap_arg_atom_is(o, "MIN"))
				r->returns |= MT_IMAP_SEARCH_RETURN_MIN;
			else if (mt_imap_arg_atom_is(o, "MAX"))
				r->returns |= MT_IMAP_SEARCH_RETURN_MAX;
			else if (mt_imap_arg_atom_is(o, "COUNT"))
				r->returns |= MT_IMAP_SEARCH_RETURN_COUNT;
			else if (mt_imap_arg_atom_is(o, "ALL"))
				r->returns |= MT_IMAP_SEARCH_RETURN_ALL;
			else {
				run_free(r);
				imap_error(s, cmd->tag, "BAD SEARCH: unknown RETURN option.");
				return;
			}
		}
		i = 2;
	}
	if (search_start(r, cmd->args + i, cmd->count - i))
		search_run(r);
}

/* Read the criteria into r and make it the session's search; false (and
 * r freed, the refusal sent) if they are not criteria. */
static bool search_start(struct imap_search_run *r, const struct mt_imap_arg *args,
			 size_t count)
{
	struct imap_session *s = r->s;
	const struct mt_imap_search_limits limits = {
		.depth_max = SEARCH_DEPTH_MAX, .ranges_max = SEARCH_RANGES_MAX,
	};
	bool badcharset;
	const char *error;
	if (!mt_imap_search_parse(&r->criteria, args, count, &limits, &badcharset, &error)) {
		if (badcharset)
			imap_error(s, r->tag, "NO [BADCHARSET (US-ASCII UTF-8)] "
				   "Unsupported charset.");
		else
			imap_error(s, r->tag, "BAD %s: %s.", r->done != NULL ? "Criteria" : "SEARCH",
				   error);
		run_free(r);
		return false;
	}
	if (r->criteria.uses_saved) {
		imap_error(s, r->tag, "BAD $ (SEARCHRES) is not supported.");
		run_free(r);
		return false;
	}
	if (r->criteria.uses_modseq)
		s->condstore = true;	/* RFC 7162 3.1 */
	r->started_ms = mt_clock_ms();
	s->search = r;
	imap_wait(s);
	return true;
}

bool imap_search_filter(struct imap_session *s, const char *tag,
			const struct mt_imap_arg *args, size_t count,
			imap_search_done_t *done, void *context,
			void (*context_free)(void *context))
{
	struct imap_search_run *r = mt_xcalloc(1, sizeof(*r));
	r->s = s;
	snprintf(r->tag, sizeof(r->tag), "%s", tag);
	r->done = done;
	r->done_context = context;
	r->done_free = context_free;
	if (!search_start(r, args, count))
		return false;
	search_run(r);
	return true;
}

void imap_search_free(struct imap_session *s)
{
	if (s->search != NULL)
		run_free(s->search);
	s->search = NULL;
}
