/* imap-message.c — mailtier-popstore's IMAP commands on messages, besides
 * FETCH (imap-fetch.c): STORE, COPY, MOVE, EXPUNGE, the UID forms of
 * them all, and APPEND; the session's view of the selected mailbox
 * (sequence numbers, EXPUNGE responses) and sequence / UID sets. The view
 * follows the mailbox: COPY and MOVE into it, and any of them on a view
 * another session made stale, read it again before their OK, as APPEND
 * does; EXPUNGE on a stale view reads it first, so it reports what was
 * expunged elsewhere and removes what was marked \Deleted elsewhere;
 * STORE answers each message's flags as they are.
 *
 * Trust boundary: the client's parsed arguments: sets are read by
 * lib-mail's seqset reader (at most SET_RANGES_MAX ranges), a sequence
 * number beyond the view is BAD (RFC 9051 6.4.8: UID sets may name uids
 * that do not exist), flags are checked to be system flags or
 * flag-keyword atoms of at most MT_STORE_KEYWORD_MAX octets, APPEND's
 * message is a literal within max_message_size (imap-parse's limit) and
 * not empty.
 * Every change is answered OK only once the store made it durable.
 *
 * RFC 9051 5.2 (the view follows the mailbox), 6.3.12 (APPEND), 6.4.3
 * (EXPUNGE), 6.4.6 (STORE and the FETCH FLAGS it answers with unless
 * .SILENT), 6.4.7 (COPY, [TRYCREATE]), 6.4.8 (MOVE: COPYUID untagged,
 * then EXPUNGEs), 6.4.9 (UID), 7.4.1 (EXISTS), 7.5.1 (EXPUNGE responses
 * renumber at once; none during FETCH, STORE, SEARCH); RFC 4315 (UIDPLUS:
 * APPENDUID, COPYUID, UID EXPUNGE); RFC 6851 (MOVE); RFC 7162 3.1 (UID
 * and MODSEQ in every FETCH a STORE causes once CONDSTORE is enabled). */
#include "imap-session.h"
#include "alloc.h"
#include "imap-date.h"
#include "imap-write.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SET_RANGES_MAX 1024

size_t imap_header_end(const char *p, size_t len)
{
	if (len >= 2 && p[0] == '\r' && p[1] == '\n')
		return 2;	/* no header fields */
	for (size_t i = 0; i + 3 < len; i++)
		if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n')
			return i + 4;
	return 0;
}

void imap_changed(struct imap_session *s, const char *folder)
{
	popstore_watch_changed(s->ps, s->user, folder, &s->watch);
}

const struct mt_store_msg *imap_view_msg(const struct imap_session *s,
					 unsigned int position)
{
	return mt_store_mailbox_msg(s->selected.mbox, s->selected.view[position]);
}

bool imap_set_arg(struct imap_session *s, const char *tag,
		  const struct mt_imap_arg *arg, bool uid,
		  unsigned int **positions_r, unsigned int *count_r)
{
	struct mt_imap_seq_range *ranges = mt_xmalloc(SET_RANGES_MAX * sizeof(*ranges));
	struct mt_imap_seqset set;
	const struct imap_selected *sel = &s->selected;
	*positions_r = NULL;
	*count_r = 0;
	if (arg->type != MT_IMAP_ARG_ATOM ||
	    !mt_imap_seqset_parse(arg->str, &set, ranges, SET_RANGES_MAX) || set.saved) {
		free(ranges);
		imap_error(s, tag, "BAD Invalid sequence set.");
		return false;
	}
	if (!uid) {
		/* RFC 9051 6.4.5: a number beyond the mailbox is an error ('*'
		 * of an empty mailbox too). */
		for (size_t i = 0; i < set.count; i++) {
			uint32_t high = set.ranges[i].high;
			if ((high != MT_IMAP_SEQ_STAR && high > sel->count) ||
			    (sel->count == 0)) {
				free(ranges);
				imap_error(s, tag, "BAD Invalid message sequence number.");
				return false;
			}
		}
	}
	const uint32_t largest = sel->count == 0 ? 0 : uid ?
		imap_view_msg(s, sel->count - 1)->uid : sel->count;
	unsigned int *positions = mt_xmalloc((sel->count + 1) * sizeof(*positions));
	unsigned int n = 0;
	for (unsigned int i = 0; i < sel->count; i++) {
		uint32_t key = uid ? imap_view_msg(s, i)->uid : i + 1;
		if (mt_imap_seqset_contains(&set, key, largest))
			positions[n++] = i;
	}
	free(ranges);
	*positions_r = positions;
	*count_r = n;
	return true;
}

void imap_flags_write(struct mt_buf *out, const struct mt_store_mailbox *mbox,
		      const struct mt_store_msg *msg)
{
	const char *sep = "";
	mt_buf_append_str(out, "FLAGS (");
	for (size_t i = 0; i < MT_STORE_FLAG_COUNT; i++) {
		if (msg->flags & mt_store_flag_names[i].bit) {
			mt_buf_appendf(out, "%s%s", sep, mt_store_flag_names[i].name);
			sep = " ";
		}
	}
	for (unsigned int i = 0; i < MT_STORE_KEYWORDS_MAX; i++) {
		const char *k;
		if ((msg->keywords & UINT64_C(1) << i) && (k = mt_store_mailbox_keyword(mbox, i))) {
			mt_buf_appendf(out, "%s%s", sep, k);
			sep = " ";
		}
	}
	mt_buf_append_str(out, ")");
}

/* A flag-keyword (RFC 9051 9: atom, not starting with '\'). */
static bool keyword_ok(const struct mt_imap_arg *a)
{
	if (a->type != MT_IMAP_ARG_ATOM || a->len == 0 || a->len > MT_STORE_KEYWORD_MAX ||
	    a->str[0] == '\\')
		return false;
	for (size_t i = 0; i < a->len; i++)
		if (!mt_imap_is_atom_char((unsigned char)a->str[i]) || a->str[i] == ']')
			return false;
	return true;
}

/* A flag list (or one flag, or several bare ones from args[first..]) into
 * system flags and keywords (pointers into the arguments). */
static bool flags_parse(const struct mt_imap_arg *args, size_t count,
			uint32_t *flags_r, const char **keywords, unsigned int *nkw_r)
{
	const struct mt_imap_arg *list = args;
	if (count == 1 && args[0].type == MT_IMAP_ARG_LIST) {
		list = args[0].list;
		count = args[0].len;
	}
	*flags_r = 0;
	*nkw_r = 0;
	for (size_t i = 0; i < count; i++) {
		const struct mt_imap_arg *a = &list[i];
		size_t k = 0;
		if (a->type != MT_IMAP_ARG_ATOM)
			return false;
		while (k < MT_STORE_FLAG_COUNT &&
		       strcasecmp(a->str, mt_store_flag_names[k].name) != 0)
			k++;
		if (k < MT_STORE_FLAG_COUNT) {
			*flags_r |= mt_store_flag_names[k].bit;
			continue;
		}
		if (!keyword_ok(a) || *nkw_r == MT_STORE_KEYWORDS_MAX)
			return false;	/* \Recent, other \ flags: not settable */
		keywords[(*nkw_r)++] = a->str;
	}
	return true;
}

void imap_vanished_line(struct imap_session *s, bool earlier, const uint32_t *uids,
			unsigned int count)
{
	if (count == 0)
		return;
	struct mt_buf line = MT_BUF_INIT;
	mt_buf_append_str(&line, earlier ? "* VANISHED (EARLIER) " : "* VANISHED ");
	mt_imap_write_seqset(&line, uids, count);
	imap_line(s, "%s", mt_buf_cstr(&line));
	mt_buf_free(&line);
}

void imap_view_expunge(struct imap_session *s,
		       bool (*gone)(uint32_t uid, const void *context),
		       const void *context)
{
	struct imap_selected *sel = &s->selected;
	uint32_t *uids = mt_xmalloc((sel->count + 1) * sizeof(*uids));
	unsigned int n = 0;
	for (unsigned int i = sel->count; i-- > 0;) {
		uint32_t uid = imap_view_msg(s, i)->uid;
		if (!gone(uid, context))
			continue;
		if (s->qresync)
			uids[n++] = uid;
		else
			imap_line(s, "* %u EXPUNGE", i + 1);
		memmove(&sel->view[i], &sel->view[i + 1],
			(sel->count - i - 1) * sizeof(*sel->view));
		sel->count--;
	}
	/* Found highest first: ascending for the set. */
	for (unsigned int i = 0; i < n / 2; i++) {
		uint32_t t = uids[i];
		uids[i] = uids[n - 1 - i];
		uids[n - 1 - i] = t;
	}
	imap_vanished_line(s, false, uids, n);
	free(uids);
}

struct uid_list {
	const uint32_t *uids;
	unsigned int count;
};

static bool in_list(uint32_t uid, const void *context)
{
	const struct uid_list *l = context;
	for (unsigned int k = 0; k < l->count; k++)
		if (l->uids[k] == uid)
			return true;
	return false;
}

/* Messages left the view (the store made it durable). */
static void view_remove(struct imap_session *s, const uint32_t *uids, unsigned int n)
{
	const struct uid_list l = { uids, n };
	imap_view_expunge(s, in_list, &l);
}

/* The request in flight and what its completion needs. */
struct message_op {
	struct imap_session *s;
	char tag[MT_IMAP_TAG_MAX + 1];
	bool uid, silent, move;
	bool all_modified;		/* STORE (UNCHANGEDSINCE 0) */
	unsigned int *positions;
	unsigned int count;
	uint32_t *uids;
	char *dest;
	/* STORE: what the client asked, and the flags its view showed, so
	 * that .SILENT still reports a result it could not foresee. */
	enum mt_store_flag_op flag_op;
	uint32_t flags;
	char *keywords[MT_STORE_KEYWORDS_MAX];
	unsigned int keyword_count;
	uint32_t *known_flags;
	uint64_t *known_keywords;
	/* UID EXPUNGE's set, read again once the view is up to date. */
	char *set;
	/* After the view's update (op_sync): what runs next, and the
	 * tagged OK's text for op_reply. */
	void (*next)(struct message_op *op);
	char *reply;
	bool synced;			/* it waited on op_sync */
};

static struct message_op *op_new(struct imap_session *s, const char *tag, bool uid,
				 unsigned int *positions, unsigned int count)
{
	struct message_op *op = mt_xcalloc(1, sizeof(*op));
	op->s = s;
	snprintf(op->tag, sizeof(op->tag), "%s", tag);
	op->uid = uid;
	op->positions = positions;
	op->count = count;
	op->uids = mt_xmalloc((count + 1) * sizeof(*op->uids));
	for (unsigned int i = 0; i < count; i++)
		op->uids[i] = imap_view_msg(s, positions[i])->uid;
	return op;
}

static void op_free(struct message_op *op)
{
	free(op->positions);
	free(op->uids);
	free(op->dest);
	for (unsigned int i = 0; i < op->keyword_count; i++)
		free(op->keywords[i]);
	free(op->known_flags);
	free(op->known_keywords);
	free(op->set);
	free(op->reply);
	free(op);
}

/* op's request finished: true if it succeeded, else its refusal is sent
 * (NOT_FOUND of a destination: [TRYCREATE]). */
static bool op_succeeded(struct mt_store_req *req, struct message_op *op)
{
	struct imap_session *s = op->s;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	if (status == MT_STORE_OK)
		return true;
	if (status == MT_STORE_NOT_FOUND && op->dest != NULL)
		imap_error(s, op->tag, "NO [TRYCREATE] Mailbox does not exist.");
	else
		imap_store_failed(s, op->tag, status, error);
	return false;
}

/* The command is over: the session goes on with pipelined input. */
static void op_free_any(void *op)
{
	op_free(op);
}

static void op_finish(struct message_op *op)
{
	struct imap_session *s = op->s;
	op_free(op);
	imap_resume(s);
}

/* The view is up to date: the tagged OK. */
static void op_reply(struct message_op *op)
{
	imap_tagged(op->s, op->tag, "OK %s", op->reply);
	op_finish(op);
}

static void sync_done(struct mt_store_req *req, void *context)
{
	struct message_op *op = context;
	struct imap_session *s = op->s;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	if (status == MT_STORE_FATAL) {
		imap_store_fatal(s, op->tag, error);
		op_finish(op);
		return;
	}
	if (status == MT_STORE_OK) {
		imap_view_update(s, mt_store_req_mailbox(req));
	} else {
		/* What the command changed is durable; the view catches up
		 * at the next NOOP. */
		mt_slog(MT_LOG_WARNING, &s->log, "imap user=%s refreshing %s: %s: %s",
			s->user, s->selected.name, mt_store_status_name(status), error);
		s->stale = true;
	}
	op->next(op);
}

/* Read the selected mailbox again and send what changed (RFC 9051 5.2:
 * the client learns of every change the command met, and of the
 * messages it added to the mailbox itself), then next(op). Not for
 * FETCH, STORE and SEARCH, where an EXPUNGE may not be sent (7.5.1). */
static void op_sync(struct message_op *op, void (*next)(struct message_op *op))
{
	struct imap_session *s = op->s;
	op->next = next;
	op->synced = true;
	s->stale = false;	/* a change from now on is seen again */
	imap_wait(s);
	s->store_req = mt_store_folder_open(s->ps->port, s->user, s->selected.name,
					    IMAP_STORE_CALL(s, sync_done, op, op_free_any));
}

/* STORE */

/* The flags the client expects message i of op to have after it: its
 * view's, changed as it asked (keywords as the mailbox names them now). */
static bool store_foreseen(const struct message_op *op, unsigned int i,
			   const struct mt_store_msg *now)
{
	const struct mt_store_mailbox *mbox = op->s->selected.mbox;
	uint64_t asked = 0;
	for (unsigned int k = 0; k < op->keyword_count; k++) {
		const char *name;
		for (unsigned int t = 0; (name = mt_store_mailbox_keyword(mbox, t)) != NULL; t++)
			if (strcasecmp(name, op->keywords[k]) == 0)
				asked |= UINT64_C(1) << t;
	}
	uint32_t flags = op->known_flags[i];
	uint64_t keywords = op->known_keywords[i];
	switch (op->flag_op) {
	case MT_STORE_FLAGS_ADD:
		flags |= op->flags;
		keywords |= asked;
		break;
	case MT_STORE_FLAGS_REMOVE:
		flags &= ~op->flags;
		keywords &= ~asked;
		break;
	case MT_STORE_FLAGS_REPLACE:
		flags = op->flags;
		keywords = asked;
		break;
	}
	return now->flags == flags && now->keywords == keywords;
}

/* "* n FETCH (...)" for message i of a STORE: its flags as they are now
 * (RFC 9051 6.4.6: also when another session had set them first), but
 * for .SILENT where they are what the client asked for; with CONDSTORE
 * its MODSEQ where it changed (RFC 7162 3.1.3), and the UID in every
 * one (3.1: once CONDSTORE is enabled, UID and MODSEQ in every untagged
 * FETCH). */
static void store_fetch_line(struct message_op *op, unsigned int i,
			     enum mt_store_flag_result result)
{
	struct imap_session *s = op->s;
	const struct mt_store_msg *m = imap_view_msg(s, op->positions[i]);
	const bool flags = !op->silent || !store_foreseen(op, i, m);
	if (!flags && !(s->condstore && result == MT_STORE_FLAG_CHANGED))
		return;
	struct mt_buf line = MT_BUF_INIT;
	mt_buf_appendf(&line, "* %u FETCH (", op->positions[i] + 1);
	const char *sep = "";
	if (flags) {
		imap_flags_write(&line, s->selected.mbox, m);
		sep = " ";
	}
	if (op->uid || s->condstore) {
		mt_buf_appendf(&line, "%sUID %u", sep, m->uid);
		sep = " ";
	}
	if (s->condstore)
		mt_buf_appendf(&line, "%sMODSEQ (%" PRIu64 ")", sep, m->modseq);
	mt_buf_append_str(&line, ")");
	imap_line(s, "%s", mt_buf_cstr(&line));
	mt_buf_free(&line);
}

static void store_done(struct mt_store_req *req, void *context)
{
	struct message_op *op = context;
	struct imap_session *s = op->s;
	if (op_succeeded(req, op)) {
		unsigned int n;
		const enum mt_store_flag_result *r = mt_store_req_flag_results(req, &n);
		uint32_t *modified = mt_xmalloc((op->count + 1) * sizeof(*modified));
		unsigned int n_modified = 0;
		for (unsigned int i = 0; i < op->count; i++) {
			const struct mt_store_msg *m = imap_view_msg(s, op->positions[i]);
			if (op->all_modified || (i < n && r[i] == MT_STORE_FLAG_MODIFIED)) {
				modified[n_modified++] = op->uid ? m->uid : op->positions[i] + 1;
				continue;
			}
			if (i < n && r[i] != MT_STORE_FLAG_GONE)
				store_fetch_line(op, i, r[i]);
		}
		if (n_modified > 0) {
			struct mt_buf set = MT_BUF_INIT;
			mt_imap_write_seqset(&set, modified, n_modified);
			imap_tagged(s, op->tag, "OK [MODIFIED %s] Conditional %sSTORE failed "
				    "for some messages.", mt_buf_cstr(&set), op->uid ? "UID " : "");
			mt_buf_free(&set);
		} else
			imap_tagged(s, op->tag, "OK %sSTORE completed.", op->uid ? "UID " : "");
		free(modified);
		imap_changed(s, s->selected.name);
	}
	op_finish(op);
}

void imap_cmd_store(struct imap_session *s, const struct mt_imap_command *cmd, bool uid)
{
	/* STORE set [(UNCHANGEDSINCE modseq)] item flags (RFC 7162 3.1.3). */
	uint64_t unchanged_since = 0;
	bool conditional = false;
	size_t at = 1;		/* the item's argument */
	if (cmd->count >= 4 && cmd->args[1].type == MT_IMAP_ARG_LIST) {
		const struct mt_imap_arg *mods = &cmd->args[1];
		char *end = NULL;
		if (mods->len == 2 && mt_imap_arg_atom_is(&mods->list[0], "UNCHANGEDSINCE") &&
		    mods->list[1].type == MT_IMAP_ARG_ATOM && mods->list[1].str[0] >= '0' &&
		    mods->list[1].str[0] <= '9')
			unchanged_since = strtoull(mods->list[1].str, &end, 10);
		if (end == NULL || *end != '\0') {
			imap_error(s, cmd->tag, "BAD STORE: invalid modifier.");
			return;
		}
		conditional = true;
		s->condstore = true;
		at = 2;
	}
	if (cmd->count < at + 2 || cmd->args[at].type != MT_IMAP_ARG_ATOM) {
		imap_error(s, cmd->tag, "BAD STORE takes a set, an item and flags.");
		return;
	}
	if (s->selected.read_only) {
		imap_error(s, cmd->tag, "NO [READ-ONLY] The mailbox is read-only.");
		return;
	}
	const char *item = cmd->args[at].str;
	enum mt_store_flag_op fop = MT_STORE_FLAGS_REPLACE;
	if (item[0] == '+' || item[0] == '-') {
		fop = item[0] == '+' ? MT_STORE_FLAGS_ADD : MT_STORE_FLAGS_REMOVE;
		item++;
	}
	bool silent = strcasecmp(item, "FLAGS.SILENT") == 0;
	uint32_t flags;
	const char *keywords[MT_STORE_KEYWORDS_MAX];
	unsigned int nkw;
	if ((!silent && strcasecmp(item, "FLAGS") != 0) ||
	    !flags_parse(&cmd->args[at + 1], cmd->count - at - 1, &flags, keywords, &nkw)) {
		imap_error(s, cmd->tag, "BAD STORE takes +FLAGS, -FLAGS or FLAGS and a "
			   "list of flags.");
		return;
	}
	unsigned int *positions, count;
	if (!imap_set_arg(s, cmd->tag, &cmd->args[0], uid, &positions, &count))
		return;
	struct message_op *op = op_new(s, cmd->tag, uid, positions, count);
	op->silent = silent;
	op->flag_op = fop;
	op->flags = flags;
	for (unsigned int k = 0; k < nkw; k++)
		op->keywords[k] = mt_xstrdup(keywords[k]);
	op->keyword_count = nkw;
	op->known_flags = mt_xmalloc((count + 1) * sizeof(*op->known_flags));
	op->known_keywords = mt_xmalloc((count + 1) * sizeof(*op->known_keywords));
	for (unsigned int i = 0; i < count; i++) {
		const struct mt_store_msg *m = imap_view_msg(s, positions[i]);
		op->known_flags[i] = m->flags;
		op->known_keywords[i] = m->keywords;
	}
	/* UNCHANGEDSINCE 0 fails for every message (MODSEQs start at 1); the
	 * store's 0 means "no condition", so that case is decided here. */
	op->all_modified = conditional && unchanged_since == 0;
	const struct mt_store_flag_args args = {
		.op = fop, .flags = flags, .keywords = keywords, .keyword_count = nkw,
		.unchanged_since = unchanged_since,
		.uids = op->uids, .uid_count = op->all_modified ? 0 : count,
	};
	imap_wait(s);
	s->store_req = mt_store_flags_store(s->ps->port, s->selected.mbox, &args,
					    IMAP_STORE_CALL(s, store_done, op, op_free_any));
}

/* COPY, MOVE */

static void copy_done(struct mt_store_req *req, void *context)
{
	struct message_op *op = context;
	struct imap_session *s = op->s;
	const char *verb = op->move ? "MOVE" : "COPY";
	if (op_succeeded(req, op)) {
		unsigned int n;
		uint32_t uidvalidity;
		const uint32_t *new_uids = mt_store_req_copy_uids(req, &n, &uidvalidity);
		uint32_t *src = mt_xmalloc((n + 1) * sizeof(*src));
		uint32_t *dst = mt_xmalloc((n + 1) * sizeof(*dst));
		unsigned int copied = 0;
		for (unsigned int i = 0; i < n; i++) {
			if (new_uids[i] != 0) {
				src[copied] = op->uids[i];
				dst[copied++] = new_uids[i];
			}
		}
		struct mt_buf code = MT_BUF_INIT;
		if (copied > 0) {
			mt_buf_appendf(&code, "[COPYUID %u ", uidvalidity);
			mt_imap_write_seqset(&code, src, copied);
			mt_buf_append_str(&code, " ");
			mt_imap_write_seqset(&code, dst, copied);
			mt_buf_append_str(&code, "] ");
		}
		struct mt_buf reply = MT_BUF_INIT;
		if (op->move) {
			/* RFC 6851 4.3: COPYUID first, then the EXPUNGEs. */
			if (copied > 0)
				imap_line(s, "* OK %sMoved.", mt_buf_cstr(&code));
			view_remove(s, src, copied);
			mt_buf_appendf(&reply, "%s%s completed.", op->uid ? "UID " : "", verb);
		} else {
			mt_buf_appendf(&reply, "%s%s%s completed.", mt_buf_cstr(&code),
				       op->uid ? "UID " : "", verb);
		}
		mt_buf_free(&code);
		free(src);
		free(dst);
		imap_changed(s, op->dest);
		if (op->move)
			imap_changed(s, s->selected.name);
		op->reply = mt_xstrdup(mt_buf_cstr(&reply));
		mt_buf_free(&reply);
		/* RFC 9051 7.4.1: copies into the selected mailbox are
		 * announced (EXISTS) before the OK, as an APPEND's are; so
		 * is what other sessions changed meanwhile. */
		if (strcmp(op->dest, s->selected.name) == 0 || s->stale) {
			op_sync(op, op_reply);
			return;
		}
		op_reply(op);
		return;
	}
	op_finish(op);
}

void imap_cmd_copy(struct imap_session *s, const struct mt_imap_command *cmd,
		   bool uid, bool move)
{
	const char *verb = move ? "MOVE" : "COPY";
	if (cmd->count != 2) {
		imap_error(s, cmd->tag, "BAD %s takes a set and a mailbox name.", verb);
		return;
	}
	if (move && s->selected.read_only) {
		imap_error(s, cmd->tag, "NO [READ-ONLY] The mailbox is read-only.");
		return;
	}
	struct mt_buf dest = MT_BUF_INIT;
	unsigned int *positions, count;
	if (!imap_mailbox_arg(s, cmd->tag, &cmd->args[1], &dest)) {
		mt_buf_free(&dest);
		return;
	}
	if (!imap_set_arg(s, cmd->tag, &cmd->args[0], uid, &positions, &count)) {
		mt_buf_free(&dest);
		return;
	}
	struct message_op *op = op_new(s, cmd->tag, uid, positions, count);
	op->move = move;
	op->dest = mt_xstrdup(mt_buf_cstr(&dest));
	mt_buf_free(&dest);
	const struct mt_store_copy_args args = {
		.uids = op->uids, .uid_count = count, .dest = op->dest, .move = move,
		.quota = s->quota,
	};
	imap_wait(s);
	s->store_req = mt_store_copy(s->ps->port, s->selected.mbox, &args,
				     IMAP_STORE_CALL(s, copy_done, op, op_free_any));
}

/* EXPUNGE, UID EXPUNGE */

static void expunge_done(struct mt_store_req *req, void *context)
{
	struct message_op *op = context;
	struct imap_session *s = op->s;
	if (op_succeeded(req, op)) {
		view_remove(s, op->uids, op->count);
		imap_tagged(s, op->tag, "OK %sEXPUNGE completed.", op->uid ? "UID " : "");
		imap_changed(s, s->selected.name);
	}
	op_finish(op);
}

/* EXPUNGE answered without the store: resume only if it waited. */
static void expunge_end(struct message_op *op)
{
	if (op->synced)
		op_finish(op);
	else
		op_free(op);
}

/* Expunge the messages of the view (of op->set for UID EXPUNGE) that
 * have \Deleted; the view is up to date (op_sync) if it was stale. */
static void expunge_start(struct message_op *op)
{
	struct imap_session *s = op->s;
	unsigned int *positions = NULL, count = s->selected.count;
	if (op->set != NULL) {
		const struct mt_imap_arg set = {
			.type = MT_IMAP_ARG_ATOM, .str = op->set, .len = strlen(op->set),
		};
		/* Checked before the update; a UID set stays valid. */
		if (!imap_set_arg(s, op->tag, &set, true, &positions, &count)) {
			expunge_end(op);
			return;
		}
	} else {
		positions = mt_xmalloc((count + 1) * sizeof(*positions));
		for (unsigned int i = 0; i < count; i++)
			positions[i] = i;
	}
	unsigned int deleted = 0;
	for (unsigned int i = 0; i < count; i++)
		if (imap_view_msg(s, positions[i])->flags & MT_STORE_FLAG_DELETED)
			positions[deleted++] = positions[i];
	free(op->positions);
	free(op->uids);
	op->positions = positions;
	op->count = deleted;
	op->uids = mt_xmalloc((deleted + 1) * sizeof(*op->uids));
	for (unsigned int i = 0; i < deleted; i++)
		op->uids[i] = imap_view_msg(s, positions[i])->uid;
	if (deleted == 0) {
		imap_tagged(s, op->tag, "OK %sEXPUNGE completed.", op->uid ? "UID " : "");
		expunge_end(op);
		return;
	}
	imap_wait(s);
	s->store_req = mt_store_expunge(s->ps->port, s->selected.mbox, op->uids, deleted,
					IMAP_STORE_CALL(s, expunge_done, op, op_free_any));
}

void imap_cmd_expunge(struct imap_session *s, const struct mt_imap_command *cmd, bool uid)
{
	if (cmd->count != (uid ? 1u : 0u)) {
		imap_error(s, cmd->tag, uid ? "BAD UID EXPUNGE takes a UID set." :
			   "BAD EXPUNGE takes no arguments.");
		return;
	}
	if (s->selected.read_only) {
		imap_error(s, cmd->tag, "NO [READ-ONLY] The mailbox is read-only.");
		return;
	}
	unsigned int *positions = NULL, count = 0;
	if (uid) {
		if (!imap_set_arg(s, cmd->tag, &cmd->args[0], true, &positions, &count))
			return;
		free(positions);
	}
	struct message_op *op = op_new(s, cmd->tag, uid, NULL, 0);
	if (uid)
		op->set = mt_xstrdup(cmd->args[0].str);
	/* RFC 9051 6.4.3: the messages that have \Deleted now, also where
	 * another session set it; and the client learns first of what that
	 * session expunged (5.2), so a stale view is read again. */
	if (s->stale)
		op_sync(op, expunge_start);
	else
		expunge_start(op);
}

/* UID */

void imap_cmd_uid(struct imap_session *s, const struct mt_imap_command *cmd)
{
	if (cmd->count < 1 || cmd->args[0].type != MT_IMAP_ARG_ATOM) {
		imap_error(s, cmd->tag, "BAD UID takes a command.");
		return;
	}
	const struct mt_imap_command sub = {
		.tag = cmd->tag, .name = cmd->args[0].str, .args = cmd->args + 1,
		.count = cmd->count - 1,
	};
	const char *n = sub.name;
	if (strcasecmp(n, "FETCH") == 0)
		imap_cmd_fetch(s, &sub, true);
	else if (strcasecmp(n, "STORE") == 0)
		imap_cmd_store(s, &sub, true);
	else if (strcasecmp(n, "COPY") == 0)
		imap_cmd_copy(s, &sub, true, false);
	else if (strcasecmp(n, "MOVE") == 0)
		imap_cmd_copy(s, &sub, true, true);
	else if (strcasecmp(n, "EXPUNGE") == 0)
		imap_cmd_expunge(s, &sub, true);
	else if (strcasecmp(n, "SEARCH") == 0)
		imap_cmd_search(s, &sub, true);
	else if (strcasecmp(n, "SORT") == 0)
		imap_cmd_sort(s, &sub, true);
	else if (strcasecmp(n, "THREAD") == 0)
		imap_cmd_thread(s, &sub, true);
	else
		imap_error(s, cmd->tag, "BAD Unknown UID command.");
}

/* APPEND */

struct append_op {
	struct imap_session *s;
	char tag[MT_IMAP_TAG_MAX + 1];
	char *folder;
};

static void append_op_free(void *context)
{
	struct append_op *op = context;
	free(op->folder);
	free(op);
}

static void append_done(struct mt_store_req *req, void *context)
{
	struct append_op *op = context;
	struct imap_session *s = op->s;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	unsigned int n;
	const struct mt_store_rcpt *r = mt_store_req_rcpts(req, &n);
	if (status == MT_STORE_NOT_FOUND)
		imap_error(s, op->tag, "NO [TRYCREATE] Mailbox does not exist.");
	else if (status != MT_STORE_OK)
		imap_store_failed(s, op->tag, status, error);
	else {
		popstore_watch_changed(s->ps, s->user, op->folder, NULL);
		if (s->selected.mbox != NULL && strcmp(s->selected.name, op->folder) == 0) {
			/* RFC 9051 6.3.12: appended to the selected mailbox, the
			 * EXISTS comes before the OK, and the new UID is in the
			 * view at once (a UID STORE right after finds it). */
			snprintf(s->tag, sizeof(s->tag), "%s", op->tag);
			snprintf(s->refresh_reply, sizeof(s->refresh_reply),
				 "[APPENDUID %u %u] APPEND completed.", r[0].uidvalidity,
				 r[0].uid);
			s->noop_pending = true;
			free(op->folder);
			free(op);
			imap_refresh(s);
			return;
		}
		imap_tagged(s, op->tag, "OK [APPENDUID %u %u] APPEND completed.",
			    r[0].uidvalidity, r[0].uid);
	}
	append_op_free(op);
	imap_resume(s);
}

void imap_cmd_append(struct imap_session *s, const struct mt_imap_command *cmd)
{
	/* mailbox [flag-list] [date-time] literal */
	const struct mt_imap_arg *a = cmd->args;
	size_t n = cmd->count;
	if (n < 2 || n > 4 || a[n - 1].type != MT_IMAP_ARG_LITERAL) {
		imap_error(s, cmd->tag, "BAD APPEND takes a mailbox name, optional flags "
			   "and date-time, and the message as a literal.");
		return;
	}
	uint32_t flags = 0;
	const char *keywords[MT_STORE_KEYWORDS_MAX];
	unsigned int nkw = 0;
	int64_t arrival = 0;
	int zone;
	size_t i = 1;
	if (i < n - 1 && a[i].type == MT_IMAP_ARG_LIST) {
		if (!flags_parse(&a[i], 1, &flags, keywords, &nkw)) {
			imap_error(s, cmd->tag, "BAD APPEND: invalid flags.");
			return;
		}
		i++;
	}
	if (i < n - 1) {
		if (a[i].type != MT_IMAP_ARG_QUOTED ||
		    !mt_imap_datetime_parse(a[i].str, a[i].len, &arrival, &zone) ||
		    arrival <= 0) {
			imap_error(s, cmd->tag, "BAD APPEND: invalid date-time.");
			return;
		}
		i++;
	}
	if (i != n - 1) {
		imap_error(s, cmd->tag, "BAD APPEND: invalid arguments.");
		return;
	}
	if (!a[n - 1].streamed && a[n - 1].len == 0) {
		/* Zero octets are no message: nothing a client could read
		 * back; Dovecot answers the same. */
		imap_error(s, cmd->tag, "NO [CANNOT] Can't save a zero byte message.");
		return;
	}
	struct mt_buf name = MT_BUF_INIT;
	if (!imap_mailbox_arg(s, cmd->tag, &a[0], &name)) {
		mt_buf_free(&name);
		return;
	}
	/* The message went into the store as it arrived (imap-session.c);
	 * one that did not stream (none does after login) is written now. */
	struct mt_store_body *body = imap_append_body_take(s);
	if (!a[n - 1].streamed) {
		if (body != NULL)
			mt_store_body_abort(&body);
		body = mt_store_body_begin(s->ps->port, NULL, NULL);
		mt_store_body_append(body, a[n - 1].str, a[n - 1].len);
	} else if (body == NULL) {
		mt_buf_free(&name);
		imap_error(s, cmd->tag, "BAD APPEND: the message was not kept.");
		return;
	}
	const struct mt_store_rcpt rcpt = {
		.mailbox = s->user, .folder = mt_buf_cstr(&name), .flags = flags,
		.keywords = keywords, .keyword_count = nkw, .arrival = arrival,
		.quota = s->quota,
	};
	struct append_op *op = mt_xcalloc(1, sizeof(*op));
	op->s = s;
	snprintf(op->tag, sizeof(op->tag), "%s", cmd->tag);
	op->folder = mt_xstrdup(mt_buf_cstr(&name));
	imap_wait(s);
	s->store_req = mt_store_body_deliver(&body, &rcpt, 1,
					     IMAP_STORE_CALL(s, append_done, op, append_op_free));
	mt_buf_free(&name);
}
