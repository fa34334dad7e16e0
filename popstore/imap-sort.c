/* imap-sort.c — mailtier-popstore's SORT and UID SORT (RFC 5256 3, with
 * ESORT's RETURN options, RFC 5267 3, and SORT=DISPLAY's keys, RFC 5957),
 * THREAD and UID THREAD (RFC 5256 2.2, 2.3: below).
 *
 * A SORT runs in two halves: the search criteria after the charset are
 * matched by imap-search.c (imap_search_filter: the SEARCH code, reading
 * headers and bodies only where the criteria need them), then the keys
 * of each match are made from the message's structure record, whose
 * ENVELOPE the store rendered once at delivery (mt_store_structure: one
 * small read per message, never the body), and lib-mail's imap-sort
 * orders them. A program of only ARRIVAL and SIZE reads nothing: the
 * snapshot has both.
 *
 * Limits: the criteria's (imap-search.c), one sort's time
 * (SORT_TIME_MAX_MS from its start, then NO [LIMIT]), the octets of a
 * string key compared (MT_IMAP_SORT_KEY_MAX), so the memory of a sort is
 * bounded by the messages selected times the keys' size.
 *
 * Trust boundary: the client's program and criteria (lib-mail reads
 * them); the ENVELOPE holds any sender's header values and is read by
 * lib-mail within the record's length. */
#include "imap-session.h"
#include "alloc.h"
#include "clock.h"
#include "imap-bodystructure.h"
#include "imap-search.h"
#include "imap-sort.h"
#include "imap-thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SORT_TIME_MAX_MS 30000

/* The ENVELOPE-free keys. */
#define SORT_SNAPSHOT_KEYS (1u << MT_IMAP_SORT_ARRIVAL | 1u << MT_IMAP_SORT_SIZE)

struct imap_sort_run {
	struct imap_session *s;
	char tag[MT_IMAP_TAG_MAX + 1];
	bool uid, esort;
	unsigned int returns;
	struct mt_imap_sort_program program;
	unsigned int *positions;	/* the matches, view positions */
	struct mt_imap_sort_msg *msgs;
	unsigned int count, next;
	struct mt_imap_envelope env;
	uint64_t started_ms;
};

static void sort_run_free(void *op)
{
	struct imap_sort_run *r = op;
	for (unsigned int i = 0; i < r->count; i++)
		mt_imap_sort_msg_free(&r->msgs[i]);
	free(r->msgs);
	free(r->positions);
	mt_imap_envelope_free(&r->env);
	free(r);
}

static void sort_finish(struct imap_sort_run *r, const char *failure)
{
	struct imap_session *s = r->s;
	if (failure != NULL) {
		imap_tagged(s, r->tag, "%s", failure);
	} else {
		mt_imap_sort(&r->program, r->msgs, r->count);
		uint32_t *ids = mt_xcalloc(r->count + 1, sizeof(*ids));
		for (unsigned int i = 0; i < r->count; i++)
			ids[i] = r->msgs[i].id;
		struct mt_buf line = MT_BUF_INIT;
		if (r->esort) {
			mt_buf_appendf(&line, "* ESEARCH (TAG \"%s\")%s", r->tag, r->uid ? " UID" : "");
			mt_imap_esort_write(&line, r->returns, ids, r->count);
		} else
			mt_imap_sort_write(&line, ids, r->count);
		imap_line(s, "%s", mt_buf_cstr(&line));
		mt_buf_free(&line);
		free(ids);
		imap_tagged(s, r->tag, "OK %sSORT completed.", r->uid ? "UID " : "");
	}
	sort_run_free(r);
	imap_resume(s);
}

static void sort_gather(struct imap_sort_run *r);

/* The ENVELOPE of a structure-record answer into env (SORT's and
 * THREAD's keys); false for a damaged record. */
static bool structure_envelope(struct mt_store_req *req, struct mt_imap_envelope *env)
{
	size_t len = 0;
	uint64_t shift;
	const void *data = mt_store_req_structure(req, &len, &shift);
	struct mt_mime_record record;
	return mt_mime_record_read(&record, data, len) &&
		mt_imap_envelope_read(env, record.envelope, record.envelope_len);
}

static void structure_done(struct mt_store_req *req, void *op)
{
	struct imap_sort_run *r = op;
	struct imap_session *s = r->s;
	s->store_req = NULL;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	struct mt_imap_sort_msg *m = &r->msgs[r->next];
	bool have_envelope = false;
	if (status == MT_STORE_OK) {
		have_envelope = structure_envelope(req, &r->env);
		if (!have_envelope)
			mt_slog(MT_LOG_WARNING, &s->log, "imap sort: uid=%u: a damaged structure "
				"record, sorted with empty keys", r->msgs[r->next].id);
	} else if (status != MT_STORE_NOT_FOUND) {
		/* NOT_FOUND: expunged meanwhile, sorted with empty keys. */
		mt_slog(MT_LOG_WARNING, &s->log, "imap sort structure: %s: %s",
			mt_store_status_name(status), error);
		if (status == MT_STORE_FATAL) {
			imap_store_fatal(s, r->tag, error);
			sort_run_free(r);
			return;
		}
		sort_finish(r, "NO [UNAVAILABLE] Temporary failure; try later.");
		return;
	}
	mt_imap_sort_msg_fill(m, &r->program, have_envelope ? &r->env : NULL);
	r->next++;
	sort_gather(r);
}

/* The next match's structure record, or the answer once all are in. */
static void sort_gather(struct imap_sort_run *r)
{
	struct imap_session *s = r->s;
	if ((r->program.keys & ~SORT_SNAPSHOT_KEYS) == 0) {
		for (; r->next < r->count; r->next++)
			mt_imap_sort_msg_fill(&r->msgs[r->next], &r->program, NULL);
	}
	if (r->next == r->count) {
		sort_finish(r, NULL);
		return;
	}
	if (mt_clock_ms() - r->started_ms > SORT_TIME_MAX_MS) {
		sort_finish(r, "NO [LIMIT] Sort takes too long; narrow it down.");
		return;
	}
	const unsigned int index = s->selected.view[r->positions[r->next]];
	s->store_req = mt_store_structure(s->ps->port, s->selected.mbox, index,
					  IMAP_STORE_CALL(s, structure_done, r, sort_run_free));
}

/* The criteria matched: positions[0..count) (taken). */
static void sort_matched(struct imap_session *s, void *context, uint32_t *positions,
			 unsigned int count, const char *failure, bool async)
{
	struct imap_sort_run *r = context;
	(void)async;
	if (failure != NULL) {
		free(positions);
		sort_finish(r, failure);
		return;
	}
	r->positions = positions;
	r->count = count;
	r->msgs = mt_xcalloc(count + 1, sizeof(*r->msgs));
	for (unsigned int i = 0; i < count; i++) {
		const struct mt_store_msg *m = imap_view_msg(s, positions[i]);
		r->msgs[i] = (struct mt_imap_sort_msg){
			.id = r->uid ? m->uid : positions[i] + 1, .order = positions[i],
			.size = m->size, .arrival = m->arrival,
		};
	}
	imap_wait(s);
	sort_gather(r);
}

/* RETURN (...) of ESORT (RFC 5267 3.1, the RFC 4731 options): false and
 * BAD sent if an option is unknown. */
static bool sort_returns(struct imap_session *s, const char *tag,
			 const struct mt_imap_arg *opts, unsigned int *returns_r)
{
	static const struct { const char *name; unsigned int bit; } options[] = {
		{ "MIN", MT_IMAP_SEARCH_RETURN_MIN }, { "MAX", MT_IMAP_SEARCH_RETURN_MAX },
		{ "COUNT", MT_IMAP_SEARCH_RETURN_COUNT }, { "ALL", MT_IMAP_SEARCH_RETURN_ALL },
	};
	*returns_r = opts->len == 0 ? MT_IMAP_SEARCH_RETURN_ALL : 0;
	for (size_t k = 0; k < opts->len; k++) {
		size_t o = 0;
		while (o < sizeof(options) / sizeof(options[0]) &&
		       !mt_imap_arg_atom_is(&opts->list[k], options[o].name))
			o++;
		if (o == sizeof(options) / sizeof(options[0])) {
			imap_error(s, tag, "BAD SORT: unknown RETURN option.");
			return false;
		}
		*returns_r |= options[o].bit;
	}
	return true;
}

/* RFC 5256 3: a charset argument is required; this store reads UTF-8 and
 * US-ASCII (a subset). false and the refusal sent otherwise. */
bool imap_sort_charset(struct imap_session *s, const char *tag, const struct mt_imap_arg *arg)
{
	const char *cs;
	size_t len;
	if (!mt_imap_arg_astring(arg, &cs, &len)) {
		imap_error(s, tag, "BAD A charset is required.");
		return false;
	}
	if (strcasecmp(cs, "UTF-8") != 0 && strcasecmp(cs, "US-ASCII") != 0) {
		imap_error(s, tag, "NO [BADCHARSET (US-ASCII UTF-8)] Unsupported charset.");
		return false;
	}
	return true;
}

void imap_cmd_sort(struct imap_session *s, const struct mt_imap_command *cmd, bool uid)
{
	struct imap_sort_run *r = mt_xcalloc(1, sizeof(*r));
	r->s = s;
	snprintf(r->tag, sizeof(r->tag), "%s", cmd->tag);
	r->uid = uid;
	size_t i = 0;
	if (cmd->count >= 1 && mt_imap_arg_atom_is(&cmd->args[0], "RETURN")) {
		if (cmd->count < 2 || cmd->args[1].type != MT_IMAP_ARG_LIST) {
			imap_error(s, cmd->tag, "BAD SORT: RETURN takes a list.");
			sort_run_free(r);
			return;
		}
		if (!sort_returns(s, cmd->tag, &cmd->args[1], &r->returns)) {
			sort_run_free(r);
			return;
		}
		r->esort = true;
		i = 2;
	}
	const char *error;
	if (cmd->count < i + 3) {
		imap_error(s, cmd->tag, "BAD SORT takes a program, a charset and criteria.");
		sort_run_free(r);
		return;
	}
	if (!mt_imap_sort_parse(&r->program, &cmd->args[i], &error)) {
		imap_error(s, cmd->tag, "BAD SORT: %s.", error);
		sort_run_free(r);
		return;
	}
	if (!imap_sort_charset(s, cmd->tag, &cmd->args[i + 1])) {
		sort_run_free(r);
		return;
	}
	r->started_ms = mt_clock_ms();
	(void)imap_search_filter(s, cmd->tag, cmd->args + i + 2, cmd->count - i - 2,
				 sort_matched, r, sort_run_free);
}

/* THREAD and UID THREAD (RFC 5256 2.2, 2.3, 4): the criteria matched as
 * SORT's, then per match the ENVELOPE (subject, Date:, Message-ID,
 * In-Reply-To) from its structure record and, for REFERENCES, the
 * References: field from the header read from the store (THREAD_READ_CHUNK
 * at a time, at most THREAD_HEAD_MAX octets: a References field beyond
 * that is not seen), threaded by lib-mail's imap-thread. */

#define THREAD_READ_CHUNK (64 * 1024)
#define THREAD_HEAD_MAX (256 * 1024)
/* The References value kept per message (its last octets: the nearest
 * ancestors). */
#define THREAD_REFS_OCTETS (32 * 1024)

struct imap_thread_run {
	struct imap_session *s;
	char tag[MT_IMAP_TAG_MAX + 1];
	bool uid;
	enum mt_imap_thread_algorithm algorithm;
	unsigned int *positions;
	struct mt_imap_thread_msg *msgs;
	unsigned int count, next;
	struct mt_imap_envelope env;
	struct mt_buf head;		/* the current message's header read so far */
	uint64_t started_ms;
};

static void thread_run_free(void *op)
{
	struct imap_thread_run *r = op;
	for (unsigned int i = 0; i < r->count; i++) {
		free((char *)r->msgs[i].subject);
		free((char *)r->msgs[i].message_id);
		free((char *)r->msgs[i].in_reply_to);
		free((char *)r->msgs[i].references);
	}
	free(r->msgs);
	free(r->positions);
	mt_imap_envelope_free(&r->env);
	mt_buf_free(&r->head);
	free(r);
}

static void thread_finish(struct imap_thread_run *r, const char *failure)
{
	struct imap_session *s = r->s;
	if (failure != NULL) {
		imap_tagged(s, r->tag, "%s", failure);
	} else {
		struct mt_buf out = MT_BUF_INIT;
		mt_imap_thread(&out, r->algorithm, r->msgs, r->count);
		imap_line(s, "* THREAD%s%s", out.len > 0 ? " " : "", mt_buf_cstr(&out));
		mt_buf_free(&out);
		imap_tagged(s, r->tag, "OK %sTHREAD completed.", r->uid ? "UID " : "");
	}
	thread_run_free(r);
	imap_resume(s);
}

static void thread_gather(struct imap_thread_run *r);

static char *env_dup(const struct mt_imap_envelope *e, const struct mt_imap_envelope_str *str)
{
	if (str->nil)
		return NULL;
	size_t len;
	const char *p = mt_imap_envelope_get(e, str, &len);
	return mt_xstrndup(p, len);
}

/* The store failed (not NOT_FOUND): true if the run is over. */
static bool thread_store_failed(struct imap_thread_run *r, enum mt_store_status status,
				const char *error)
{
	struct imap_session *s = r->s;
	mt_slog(MT_LOG_WARNING, &s->log, "imap thread read: %s: %s",
		mt_store_status_name(status), error);
	if (status == MT_STORE_FATAL) {
		imap_store_fatal(s, r->tag, error);
		thread_run_free(r);
	} else
		thread_finish(r, "NO [UNAVAILABLE] Temporary failure; try later.");
	return true;
}

static void thread_next(struct imap_thread_run *r)
{
	mt_buf_reset(&r->head);
	r->next++;
	thread_gather(r);
}

static void thread_head_read(struct imap_thread_run *r);

static void thread_head_done(struct mt_store_req *req, void *op)
{
	struct imap_thread_run *r = op;
	r->s->store_req = NULL;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	if (status == MT_STORE_NOT_FOUND) {
		thread_next(r);
		return;
	}
	if (status != MT_STORE_OK) {
		thread_store_failed(r, status, error);
		return;
	}
	size_t len;
	const void *data = mt_store_req_data(req, &len);
	mt_buf_append(&r->head, data, len);
	size_t end = imap_header_end(mt_buf_cstr(&r->head), r->head.len);
	if (end == 0 && len > 0 && r->head.len < THREAD_HEAD_MAX) {
		thread_head_read(r);
		return;
	}
	struct mt_buf refs = MT_BUF_INIT;
	if (mt_imap_thread_header_field(mt_buf_cstr(&r->head), end > 0 ? end : r->head.len,
					"References", &refs)) {
		size_t cut = refs.len > THREAD_REFS_OCTETS ? refs.len - THREAD_REFS_OCTETS : 0;
		r->msgs[r->next].references = mt_xstrndup(mt_buf_cstr(&refs) + cut,
							   refs.len - cut);
	}
	mt_buf_free(&refs);
	thread_next(r);
}

static void thread_head_read(struct imap_thread_run *r)
{
	struct imap_session *s = r->s;
	const unsigned int index = s->selected.view[r->positions[r->next]];
	s->store_req = mt_store_read(s->ps->port, s->selected.mbox, index, r->head.len,
				     THREAD_READ_CHUNK,
				     IMAP_STORE_CALL(s, thread_head_done, r, thread_run_free));
}

static void thread_structure_done(struct mt_store_req *req, void *op)
{
	struct imap_thread_run *r = op;
	struct imap_session *s = r->s;
	s->store_req = NULL;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	if (status == MT_STORE_NOT_FOUND) {
		thread_next(r);
		return;
	}
	if (status != MT_STORE_OK) {
		thread_store_failed(r, status, error);
		return;
	}
	struct mt_imap_thread_msg *m = &r->msgs[r->next];
	if (structure_envelope(req, &r->env)) {
		m->subject = env_dup(&r->env, &r->env.subject);
		m->message_id = env_dup(&r->env, &r->env.message_id);
		m->in_reply_to = env_dup(&r->env, &r->env.in_reply_to);
		size_t dlen;
		const char *date = mt_imap_envelope_get(&r->env, &r->env.date, &dlen);
		int64_t t;
		if (mt_imap_sort_date_parse(date, dlen, &t))
			m->date = t;
	} else
		mt_slog(MT_LOG_WARNING, &s->log, "imap thread: a damaged structure record");
	if (r->algorithm == MT_IMAP_THREAD_REFERENCES)
		thread_head_read(r);
	else
		thread_next(r);
}

static void thread_gather(struct imap_thread_run *r)
{
	struct imap_session *s = r->s;
	if (r->next == r->count) {
		thread_finish(r, NULL);
		return;
	}
	if (mt_clock_ms() - r->started_ms > SORT_TIME_MAX_MS) {
		thread_finish(r, "NO [LIMIT] Thread takes too long; narrow it down.");
		return;
	}
	const unsigned int index = s->selected.view[r->positions[r->next]];
	s->store_req = mt_store_structure(s->ps->port, s->selected.mbox, index,
					  IMAP_STORE_CALL(s, thread_structure_done, r,
							  thread_run_free));
}

static void thread_matched(struct imap_session *s, void *context, uint32_t *positions,
			   unsigned int count, const char *failure, bool async)
{
	struct imap_thread_run *r = context;
	(void)async;
	if (failure != NULL) {
		free(positions);
		thread_finish(r, failure);
		return;
	}
	r->positions = positions;
	r->count = count;
	r->msgs = mt_xcalloc(count + 1, sizeof(*r->msgs));
	for (unsigned int i = 0; i < count; i++) {
		const struct mt_store_msg *m = imap_view_msg(s, positions[i]);
		r->msgs[i] = (struct mt_imap_thread_msg){
			.id = r->uid ? m->uid : positions[i] + 1, .order = positions[i],
			.date = m->arrival,	/* until a Date: is read */
		};
	}
	imap_wait(s);
	thread_gather(r);
}

void imap_cmd_thread(struct imap_session *s, const struct mt_imap_command *cmd, bool uid)
{
	if (cmd->count < 3) {
		imap_error(s, cmd->tag, "BAD THREAD takes an algorithm, a charset and criteria.");
		return;
	}
	struct imap_thread_run *r = mt_xcalloc(1, sizeof(*r));
	r->s = s;
	snprintf(r->tag, sizeof(r->tag), "%s", cmd->tag);
	r->uid = uid;
	if (!mt_imap_thread_algorithm_parse(&cmd->args[0], &r->algorithm)) {
		imap_error(s, cmd->tag, "BAD THREAD: unknown algorithm.");
		thread_run_free(r);
		return;
	}
	if (!imap_sort_charset(s, cmd->tag, &cmd->args[1])) {
		thread_run_free(r);
		return;
	}
	r->started_ms = mt_clock_ms();
	(void)imap_search_filter(s, cmd->tag, cmd->args + 2, cmd->count - 2,
				 thread_matched, r, thread_run_free);
}
