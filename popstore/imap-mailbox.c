/* imap-mailbox.c — mailtier-popstore's IMAP mailbox commands over the
 * store's folders (store.h, format 5): SELECT, EXAMINE, CREATE, DELETE,
 * RENAME, SUBSCRIBE, UNSUBSCRIBE, LIST (with LIST-EXTENDED's selection and
 * return options, SPECIAL-USE and LIST-STATUS), LSUB for IMAP4rev1
 * clients, STATUS, CLOSE and UNSELECT.
 *
 * Names: a client names mailboxes in modified UTF-7 (IMAP4rev1), or in
 * UTF-8 once it enabled IMAP4rev2 or UTF8=ACCEPT; either is turned into
 * UTF-8 and checked and put in normal form by lib-mail/imap-mailbox.h
 * (INBOX in any case, no control characters or empty levels, the
 * configured length and depth) before the store sees it, and written back
 * the way the client reads them.
 *
 * Trust boundary: the client's parsed arguments; a refused name is a
 * tagged NO [CANNOT] (or BAD for a malformed argument) and counts towards
 * max_errors. Every change is answered OK only once the store made it
 * durable (its completion follows the group commit's flush).
 *
 * RFC 9051 6.3.2 (SELECT: EXISTS, FLAGS, PERMANENTFLAGS, UIDVALIDITY,
 * UIDNEXT, LIST; READ-WRITE), 6.3.3 (EXAMINE: READ-ONLY), 6.3.4-6.3.8
 * (CREATE, DELETE, RENAME with the INBOX rule, SUBSCRIBE, UNSUBSCRIBE),
 * 6.3.9 (LIST, its attributes and the empty-pattern delimiter query),
 * 6.3.11 (STATUS: MESSAGES, UIDNEXT, UIDVALIDITY, UNSEEN, DELETED, SIZE),
 * 6.4.1 (CLOSE expunges \Deleted messages silently), 7.1 (ALREADYEXISTS,
 * NONEXISTENT, HASCHILDREN, INUSE, LIMIT, CANNOT, TRYCREATE, UNAVAILABLE),
 * Appendix E (LSUB, RECENT for IMAP4rev1 clients); RFC 5258
 * (LIST-EXTENDED, RECURSIVEMATCH's CHILDINFO), RFC 6154 (SPECIAL-USE),
 * RFC 5819 (LIST-STATUS), RFC 3501 6.3.9 (LSUB: unsubscribed superiors
 * of subscribed mailboxes as \Noselect), RFC 3502 modified UTF-7 names
 * (RFC 3501 5.1.3), RFC 6855 (UTF8=ACCEPT). */
#include "imap-session.h"
#include "alloc.h"
#include "imap-mailbox.h"
#include "imap-utf7.h"
#include "imap-write.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define STATUS_MESSAGES 0x01u
#define STATUS_UIDNEXT 0x02u
#define STATUS_UIDVALIDITY 0x04u
#define STATUS_UNSEEN 0x08u
#define STATUS_DELETED 0x10u
#define STATUS_SIZE 0x20u
#define STATUS_RECENT 0x40u
#define STATUS_HIGHESTMODSEQ 0x80u

/* LIST options (RFC 5258 3.1, 3.2). */
#define LIST_SEL_SUBSCRIBED 0x01u
#define LIST_SEL_RECURSIVE 0x02u
#define LIST_SEL_SPECIAL_USE 0x04u
#define LIST_RET_SUBSCRIBED 0x10u
#define LIST_RET_CHILDREN 0x20u
#define LIST_RET_SPECIAL_USE 0x40u
#define LIST_RET_STATUS 0x80u
#define LIST_LSUB 0x100u
#define LIST_PATTERNS_MAX 16


/* Names */

void imap_write_name(struct mt_buf *out, const struct imap_session *s,
		     const char *name)
{
	if (s->utf8) {
		mt_imap_write_astring(out, name, strlen(name), MT_IMAP_WRITE_UTF8);
		return;
	}
	struct mt_buf utf7 = MT_BUF_INIT;
	if (!mt_imap_utf7_encode(&utf7, name, strlen(name)))
		mt_buf_append_str(&utf7, name);	/* stored names are UTF-8 */
	mt_imap_write_astring(out, utf7.data != NULL ? utf7.data : "", utf7.len, 0);
	mt_buf_free(&utf7);
}

/* The client's name (or LIST pattern) in UTF-8 into out; false if it is
 * not valid modified UTF-7 / UTF-8 for this client. */
static bool name_to_utf8(const struct imap_session *s, const char *str, size_t len,
			 struct mt_buf *out)
{
	if (s->utf8) {
		mt_buf_append(out, str, len);
		return true;
	}
	const char *error;
	return mt_imap_utf7_decode(out, str, len, &error);
}

/* The mailbox name argument in normal form into out (NUL-terminated);
 * false, and the refusal sent, if it is not one. */
bool imap_mailbox_arg(struct imap_session *s, const char *tag,
		      const struct mt_imap_arg *arg, struct mt_buf *out)
{
	const char *str, *error;
	size_t len;
	if (!mt_imap_arg_astring(arg, &str, &len) || memchr(str, '\0', len) != NULL) {
		imap_error(s, tag, "BAD Mailbox name expected.");
		return false;
	}
	struct mt_buf utf8 = MT_BUF_INIT;
	const struct mt_imap_name_limits limits = {
		.length_max = s->ps->set->max_folder_name,
		.depth_max = (unsigned int)s->ps->set->max_folder_depth,
	};
	bool ok = name_to_utf8(s, str, len, &utf8);
	if (!ok)
		error = s->utf8 ? "not UTF-8" : "not valid modified UTF-7";
	else
		ok = mt_imap_name_check(out, utf8.data != NULL ? utf8.data : "", utf8.len,
					&limits, &error);
	mt_buf_free(&utf8);
	if (!ok) {
		imap_error(s, tag, "NO [CANNOT] Invalid mailbox name: %s.", error);
		return false;
	}
	mt_buf_append(out, "", 1);
	out->len--;
	return true;
}

/* Folder changes */

static void change_done(struct mt_store_req *req, void *context)
{
	struct imap_session *s = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	if (status == MT_STORE_OK)
		imap_tagged(s, s->tag, "OK %s completed.", s->arg_name);
	else
		imap_store_failed(s, s->tag, status, error);
	MT_FREE(&s->arg_name);
	imap_resume(s);
}

/* Start args on the store; the reply comes with change_done. */
static void change_start(struct imap_session *s, const char *tag, const char *verb,
			 const struct mt_store_folder_args *args)
{
	snprintf(s->tag, sizeof(s->tag), "%s", tag);
	free(s->arg_name);
	s->arg_name = mt_xstrdup(verb);
	imap_wait(s);
	s->store_req = mt_store_folder_change(s->ps->port, args, change_done, s);
}

static bool one_name(struct imap_session *s, const struct mt_imap_command *cmd,
		     const char *verb, struct mt_buf *name)
{
	if (cmd->count != 1) {
		imap_error(s, cmd->tag, "BAD %s takes a mailbox name.", verb);
		return false;
	}
	return imap_mailbox_arg(s, cmd->tag, &cmd->args[0], name);
}

static void folder_command(struct imap_session *s, const struct mt_imap_command *cmd,
			   const char *verb, enum mt_store_folder_change change)
{
	struct mt_buf name = MT_BUF_INIT;
	if (!one_name(s, cmd, verb, &name)) {
		mt_buf_free(&name);
		return;
	}
	const char *n = mt_buf_cstr(&name);
	if (change == MT_STORE_FOLDER_DELETE && strcmp(n, "INBOX") == 0) {
		imap_error(s, cmd->tag, "NO [CANNOT] INBOX cannot be deleted.");
	} else if (change == MT_STORE_FOLDER_DELETE && s->selected.mbox != NULL &&
		   strcmp(s->selected.name, n) == 0) {
		imap_error(s, cmd->tag, "NO [INUSE] The mailbox is selected.");
	} else {
		const struct mt_store_folder_args args = {
			.change = change, .user = s->user, .name = n,
			.folder_max = (unsigned int)s->ps->set->max_folders,
		};
		change_start(s, cmd->tag, verb, &args);
	}
	mt_buf_free(&name);
}

void imap_cmd_create(struct imap_session *s, const struct mt_imap_command *cmd)
{
	/* RFC 9051 6.3.4: a trailing delimiter declares that names will be
	 * created under this one; the name made is without it. */
	const char *str;
	size_t len;
	if (cmd->count == 1 && mt_imap_arg_astring(&cmd->args[0], &str, &len) && len > 1 &&
	    str[len - 1] == '/') {
		struct mt_imap_arg name = cmd->args[0];
		name.len = len - 1;
		struct mt_imap_command trimmed = *cmd;
		trimmed.args = &name;
		folder_command(s, &trimmed, "CREATE", MT_STORE_FOLDER_CREATE);
		return;
	}
	folder_command(s, cmd, "CREATE", MT_STORE_FOLDER_CREATE);
}

void imap_cmd_delete(struct imap_session *s, const struct mt_imap_command *cmd)
{
	folder_command(s, cmd, "DELETE", MT_STORE_FOLDER_DELETE);
}

void imap_cmd_subscribe(struct imap_session *s, const struct mt_imap_command *cmd)
{
	folder_command(s, cmd, "SUBSCRIBE", MT_STORE_FOLDER_SUBSCRIBE);
}

void imap_cmd_unsubscribe(struct imap_session *s, const struct mt_imap_command *cmd)
{
	folder_command(s, cmd, "UNSUBSCRIBE", MT_STORE_FOLDER_UNSUBSCRIBE);
}

void imap_cmd_rename(struct imap_session *s, const struct mt_imap_command *cmd)
{
	if (cmd->count != 2) {
		imap_error(s, cmd->tag, "BAD RENAME takes two mailbox names.");
		return;
	}
	struct mt_buf from = MT_BUF_INIT, to = MT_BUF_INIT;
	if (imap_mailbox_arg(s, cmd->tag, &cmd->args[0], &from) &&
	    imap_mailbox_arg(s, cmd->tag, &cmd->args[1], &to)) {
		if (s->selected.mbox != NULL &&
		    strcmp(s->selected.name, mt_buf_cstr(&from)) == 0) {
			imap_error(s, cmd->tag, "NO [INUSE] The mailbox is selected.");
		} else {
			const struct mt_store_folder_args args = {
				.change = MT_STORE_FOLDER_RENAME, .user = s->user,
				.name = mt_buf_cstr(&from), .new_name = mt_buf_cstr(&to),
				.folder_max = (unsigned int)s->ps->set->max_folders,
			};
			change_start(s, cmd->tag, "RENAME", &args);
		}
	}
	mt_buf_free(&from);
	mt_buf_free(&to);
}

void imap_store_failed(struct imap_session *s, const char *tag,
		       enum mt_store_status status, const char *error)
{
	switch (status) {
	case MT_STORE_NOT_FOUND:
		imap_error(s, tag, "NO [NONEXISTENT] No such mailbox.");
		break;
	case MT_STORE_EXISTS:
		imap_error(s, tag, "NO [ALREADYEXISTS] Mailbox already exists.");
		break;
	case MT_STORE_HAS_CHILDREN:
		imap_error(s, tag, "NO [HASCHILDREN] Mailbox has inferior mailboxes; "
			   "delete them first.");
		break;
	case MT_STORE_IN_USE:
		imap_error(s, tag, "NO [INUSE] Mailbox is in use by another session.");
		break;
	case MT_STORE_LIMIT:
		imap_error(s, tag, "NO [LIMIT] A limit of the mailbox or the account is "
			   "reached (messages, folders or keywords).");
		break;
	case MT_STORE_INVALID:
		imap_error(s, tag, "NO [CANNOT] Not allowed for this mailbox.");
		break;
	case MT_STORE_OVER_QUOTA:
		imap_error(s, tag, "NO [OVERQUOTA] Quota exceeded.");
		break;
	case MT_STORE_NO_SPACE:
		imap_tagged(s, tag, "NO [SERVERBUG] Server out of disk space; try later.");
		break;
	case MT_STORE_FATAL:
		imap_store_fatal(s, tag, error);
		break;
	default:
		mt_slog(MT_LOG_WARNING, &s->log, "imap user=%s store: %s: %s", s->user,
			mt_store_status_name(status), error);
		imap_tagged(s, tag, "NO [UNAVAILABLE] Temporary failure; try later.");
		break;
	}
}

/* LIST, LSUB, STATUS: over the user's folder list */

struct list_args {
	unsigned int options;
	unsigned int status_items;
	char *patterns[LIST_PATTERNS_MAX];	/* joined with the reference, UTF-8 */
	unsigned int pattern_count;
	bool delimiter_query;			/* LIST "" "" */
};

static void list_args_free(struct list_args *a)
{
	for (unsigned int i = 0; i < a->pattern_count; i++)
		free(a->patterns[i]);
	free(a);
}

/* STATUS's item list into *items_r; false if malformed. */
static bool status_items_parse(const struct mt_imap_arg *arg, unsigned int *items_r)
{
	static const struct { const char *name; unsigned int bit; } items[] = {
		{ "MESSAGES", STATUS_MESSAGES }, { "UIDNEXT", STATUS_UIDNEXT },
		{ "UIDVALIDITY", STATUS_UIDVALIDITY }, { "UNSEEN", STATUS_UNSEEN },
		{ "DELETED", STATUS_DELETED }, { "SIZE", STATUS_SIZE },
		{ "RECENT", STATUS_RECENT }, { "HIGHESTMODSEQ", STATUS_HIGHESTMODSEQ },
	};
	*items_r = 0;
	if (arg->type != MT_IMAP_ARG_LIST || arg->len == 0)
		return false;
	for (size_t i = 0; i < arg->len; i++) {
		const struct mt_imap_arg *a = &arg->list[i];
		size_t k = 0;
		while (k < sizeof(items) / sizeof(items[0]) &&
		       !mt_imap_arg_atom_is(a, items[k].name))
			k++;
		if (k == sizeof(items) / sizeof(items[0]))
			return false;
		*items_r |= items[k].bit;
	}
	return true;
}

/* "* STATUS name (...)" for f. */
static void status_line(struct imap_session *s, const struct mt_store_folder *f,
			unsigned int items)
{
	struct mt_buf line = MT_BUF_INIT;
	mt_buf_append_str(&line, "* STATUS ");
	imap_write_name(&line, s, f->name);
	const char *sep = " (";
	if (items & STATUS_MESSAGES) {
		mt_buf_appendf(&line, "%sMESSAGES %u", sep, f->messages);
		sep = " ";
	}
	if (items & STATUS_RECENT) {
		mt_buf_appendf(&line, "%sRECENT 0", sep);
		sep = " ";
	}
	if (items & STATUS_UIDNEXT) {
		mt_buf_appendf(&line, "%sUIDNEXT %u", sep, f->uidnext);
		sep = " ";
	}
	if (items & STATUS_UIDVALIDITY) {
		mt_buf_appendf(&line, "%sUIDVALIDITY %u", sep, f->uidvalidity);
		sep = " ";
	}
	if (items & STATUS_UNSEEN) {
		mt_buf_appendf(&line, "%sUNSEEN %u", sep, f->messages - f->seen);
		sep = " ";
	}
	if (items & STATUS_DELETED) {
		mt_buf_appendf(&line, "%sDELETED %u", sep, f->deleted);
		sep = " ";
	}
	if (items & STATUS_SIZE) {
		mt_buf_appendf(&line, "%sSIZE %" PRIu64, sep, f->bytes);
		sep = " ";
	}
	if (items & STATUS_HIGHESTMODSEQ)
		mt_buf_appendf(&line, "%sHIGHESTMODSEQ %" PRIu64, sep, f->highest_modseq);
	mt_buf_append_str(&line, ")");
	imap_line(s, "%s", mt_buf_cstr(&line));
	mt_buf_free(&line);
}

/* Does any folder (existing, or with subscribed true: subscribed) lie
 * below name? */
static bool has_below(const struct mt_store_folder *folders, unsigned int count,
		      const char *name, bool subscribed)
{
	size_t len = strlen(name);
	for (unsigned int i = 0; i < count; i++) {
		const struct mt_store_folder *f = &folders[i];
		if ((subscribed ? f->subscribed : f->exists) &&
		    strncmp(f->name, name, len) == 0 && f->name[len] == MT_IMAP_DELIMITER)
			return true;
	}
	return false;
}

static bool matches(const struct list_args *a, const char *name)
{
	for (unsigned int i = 0; i < a->pattern_count; i++)
		if (mt_imap_pattern_match(a->patterns[i], strlen(a->patterns[i]), name,
					  strlen(name)))
			return true;
	return false;
}

/* One LIST (or LSUB) line for f, if the options want it. */
static void list_one(struct imap_session *s, const struct list_args *a,
		     const struct mt_store_folder *folders, unsigned int count,
		     const struct mt_store_folder *f)
{
	const unsigned int o = a->options;
	bool childinfo = false;
	if (!matches(a, f->name))
		return;
	if (o & (LIST_SEL_SUBSCRIBED | LIST_LSUB)) {
		if (!f->subscribed) {
			/* RFC 5258 3.5: a parent of a subscribed one. */
			if (!(o & LIST_SEL_RECURSIVE) || !has_below(folders, count, f->name, true))
				return;
			childinfo = true;
		}
	} else if (!f->exists) {
		return;		/* a subscription only: LIST shows what exists */
	}
	if ((o & LIST_SEL_SPECIAL_USE) && f->special_use == MT_STORE_USE_NONE)
		return;
	struct mt_buf line = MT_BUF_INIT;
	mt_buf_append_str(&line, (o & LIST_LSUB) ? "* LSUB (" : "* LIST (");
	const char *sep = "";
	if (!f->exists) {
		mt_buf_append_str(&line, (o & LIST_LSUB) ? "\\Noselect" : "\\NonExistent");
		sep = " ";
	} else if (!(o & LIST_LSUB)) {
		mt_buf_appendf(&line, "%s%s", sep, has_below(folders, count, f->name, false) ?
			       "\\HasChildren" : "\\HasNoChildren");
		sep = " ";
	}
	if (f->subscribed && (o & (LIST_SEL_SUBSCRIBED | LIST_RET_SUBSCRIBED)) &&
	    !(o & LIST_LSUB)) {
		mt_buf_appendf(&line, "%s\\Subscribed", sep);
		sep = " ";
	}
	const char *use = mt_store_special_use_name(f->special_use);
	if (use != NULL && f->exists && !(o & LIST_LSUB))
		mt_buf_appendf(&line, "%s%s", sep, use);
	mt_buf_append_str(&line, ") \"/\" ");
	imap_write_name(&line, s, f->name);
	if (childinfo)
		mt_buf_append_str(&line, " (\"CHILDINFO\" (\"SUBSCRIBED\"))");
	imap_line(s, "%s", mt_buf_cstr(&line));
	mt_buf_free(&line);
	if ((o & LIST_RET_STATUS) && f->exists)
		status_line(s, f, a->status_items);
}

/* Is name a subscribed one? */
static bool is_subscribed(const struct mt_store_folder *folders, unsigned int count,
			  const char *name)
{
	for (unsigned int i = 0; i < count; i++)
		if (folders[i].subscribed && strcmp(folders[i].name, name) == 0)
			return true;
	return false;
}

/* LSUB's superiors of subscribed mailboxes. RFC 3501 6.3.9: "Consider what
 * happens if "foo/bar" (with a hierarchy delimiter of "/") is subscribed
 * but "foo" is not. A "%" wildcard to LSUB must return foo, not foo/bar,
 * in the LSUB response, and it MUST be flagged with the \Noselect
 * attribute." So each superior the pattern matches, not subscribed
 * itself, of a subscribed mailbox the pattern does not match, once
 * (created or not: what LSUB says is that it is not subscribed). */
static void lsub_superiors(struct imap_session *s, const struct list_args *a,
			   const struct mt_store_folder *folders, unsigned int count)
{
	char **sent = NULL;
	unsigned int sent_count = 0;
	for (unsigned int i = 0; i < count; i++) {
		const char *name = folders[i].name;
		if (!folders[i].subscribed || matches(a, name))
			continue;
		for (const char *d = strchr(name, MT_IMAP_DELIMITER); d != NULL;
		     d = strchr(d + 1, MT_IMAP_DELIMITER)) {
			char *superior = mt_xstrndup(name, (size_t)(d - name));
			bool known = !matches(a, superior) ||
				is_subscribed(folders, count, superior);
			for (unsigned int k = 0; k < sent_count && !known; k++)
				known = strcmp(sent[k], superior) == 0;
			if (known) {
				free(superior);
				continue;
			}
			struct mt_buf line = MT_BUF_INIT;
			mt_buf_append_str(&line, "* LSUB (\\Noselect) \"/\" ");
			imap_write_name(&line, s, superior);
			imap_line(s, "%s", mt_buf_cstr(&line));
			mt_buf_free(&line);
			sent = mt_xrealloc(sent, (sent_count + 1) * sizeof(*sent));
			sent[sent_count++] = superior;
		}
	}
	for (unsigned int k = 0; k < sent_count; k++)
		free(sent[k]);
	free(sent);
}

struct list_ctx {
	struct imap_session *s;
	struct list_args *args;
	const char *verb;
	bool status;		/* STATUS: of args->patterns[0] exactly */
};

static void list_ctx_free(void *context)
{
	struct list_ctx *ctx = context;
	list_args_free(ctx->args);
	free(ctx);
}

static void list_done(struct mt_store_req *req, void *context)
{
	struct list_ctx *ctx = context;
	struct imap_session *s = ctx->s;
	const struct list_args *a = ctx->args;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	unsigned int count;
	const struct mt_store_folder *folders = mt_store_req_folders(req, &count);
	if (status != MT_STORE_OK) {
		imap_store_failed(s, s->tag, status, error);
	} else if (ctx->status) {
		const struct mt_store_folder *f = NULL;
		for (unsigned int i = 0; i < count && f == NULL; i++)
			if (folders[i].exists && strcmp(folders[i].name, a->patterns[0]) == 0)
				f = &folders[i];
		if (f == NULL)
			imap_error(s, s->tag, "NO [NONEXISTENT] No such mailbox.");
		else {
			status_line(s, f, a->status_items);
			imap_tagged(s, s->tag, "OK STATUS completed.");
		}
	} else {
		for (unsigned int i = 0; i < count; i++)
			list_one(s, a, folders, count, &folders[i]);
		if (a->options & LIST_LSUB)
			lsub_superiors(s, a, folders, count);
		imap_tagged(s, s->tag, "OK %s completed.", ctx->verb);
	}
	list_ctx_free(ctx);
	imap_resume(s);
}

static void list_start(struct imap_session *s, const char *tag, const char *verb,
		       struct list_args *a, bool status)
{
	snprintf(s->tag, sizeof(s->tag), "%s", tag);
	struct list_ctx *ctx = mt_xcalloc(1, sizeof(*ctx));
	*ctx = (struct list_ctx){ .s = s, .args = a, .verb = verb, .status = status };
	imap_wait(s);
	s->store_req = mt_store_folders_list(s->ps->port, s->user,
					     IMAP_STORE_CALL(s, list_done, ctx, list_ctx_free));
}

/* A list-mailbox (atom with wildcards) or string. */
static bool pattern_arg(const struct mt_imap_arg *arg, const char **str_r, size_t *len_r)
{
	if (arg->type == MT_IMAP_ARG_LIST)
		return false;
	*str_r = arg->str;
	*len_r = arg->len;
	return memchr(arg->str, '\0', arg->len) == NULL;
}

/* The reference and a pattern, joined, in UTF-8 into a. */
static bool add_pattern(struct imap_session *s, struct list_args *a,
			const char *ref, size_t ref_len, const struct mt_imap_arg *arg)
{
	const char *pat;
	size_t pat_len;
	if (a->pattern_count == LIST_PATTERNS_MAX || !pattern_arg(arg, &pat, &pat_len))
		return false;
	struct mt_buf r = MT_BUF_INIT, p = MT_BUF_INIT, joined = MT_BUF_INIT;
	bool ok = name_to_utf8(s, ref, ref_len, &r) && name_to_utf8(s, pat, pat_len, &p) &&
		mt_imap_pattern_join(&joined, r.data != NULL ? r.data : "", r.len,
				     p.data != NULL ? p.data : "", p.len);
	if (ok) {
		if (p.len == 0)
			a->delimiter_query = true;
		else
			a->patterns[a->pattern_count++] = mt_xstrdup(mt_buf_cstr(&joined));
	}
	mt_buf_free(&r);
	mt_buf_free(&p);
	mt_buf_free(&joined);
	return ok;
}

static bool list_options(const struct mt_imap_arg *arg, bool selection,
			 struct list_args *a)
{
	if (arg->type != MT_IMAP_ARG_LIST)
		return false;
	for (size_t i = 0; i < arg->len; i++) {
		const struct mt_imap_arg *o = &arg->list[i];
		if (selection && mt_imap_arg_atom_is(o, "SUBSCRIBED"))
			a->options |= LIST_SEL_SUBSCRIBED;
		else if (selection && mt_imap_arg_atom_is(o, "REMOTE"))
			continue;	/* no remote mailboxes here */
		else if (selection && mt_imap_arg_atom_is(o, "RECURSIVEMATCH"))
			a->options |= LIST_SEL_RECURSIVE;
		else if (selection && mt_imap_arg_atom_is(o, "SPECIAL-USE"))
			a->options |= LIST_SEL_SPECIAL_USE;
		else if (!selection && mt_imap_arg_atom_is(o, "SUBSCRIBED"))
			a->options |= LIST_RET_SUBSCRIBED;
		else if (!selection && mt_imap_arg_atom_is(o, "CHILDREN"))
			a->options |= LIST_RET_CHILDREN;
		else if (!selection && mt_imap_arg_atom_is(o, "SPECIAL-USE"))
			a->options |= LIST_RET_SPECIAL_USE;
		else if (!selection && mt_imap_arg_atom_is(o, "STATUS") && i + 1 < arg->len &&
			 status_items_parse(&arg->list[i + 1], &a->status_items)) {
			a->options |= LIST_RET_STATUS;
			i++;
		} else
			return false;
	}
	/* RFC 5258 3.1: RECURSIVEMATCH needs another selection option. */
	return !(a->options & LIST_SEL_RECURSIVE) ||
		(a->options & (LIST_SEL_SUBSCRIBED | LIST_SEL_SPECIAL_USE));
}

static void list_command(struct imap_session *s, const struct mt_imap_command *cmd,
			 bool lsub)
{
	const char *verb = lsub ? "LSUB" : "LIST";
	struct list_args *a = mt_xcalloc(1, sizeof(*a));
	if (lsub)
		a->options = LIST_LSUB;
	size_t i = 0;
	bool ok = true;
	if (!lsub && cmd->count > 0 && cmd->args[0].type == MT_IMAP_ARG_LIST)
		ok = list_options(&cmd->args[i++], true, a);
	const char *ref;
	size_t ref_len;
	ok = ok && i + 2 <= cmd->count && mt_imap_arg_astring(&cmd->args[i], &ref, &ref_len);
	if (ok) {
		const struct mt_imap_arg *p = &cmd->args[i + 1];
		if (p->type == MT_IMAP_ARG_LIST && !lsub) {
			ok = p->len > 0;
			for (size_t k = 0; ok && k < p->len; k++)
				ok = add_pattern(s, a, ref, ref_len, &p->list[k]);
		} else
			ok = add_pattern(s, a, ref, ref_len, p);
		i += 2;
	}
	if (ok && i < cmd->count) {
		ok = !lsub && i + 2 == cmd->count && mt_imap_arg_atom_is(&cmd->args[i], "RETURN") &&
			list_options(&cmd->args[i + 1], false, a);
	}
	if (!ok) {
		list_args_free(a);
		imap_error(s, cmd->tag, "BAD %s: invalid arguments.", verb);
		return;
	}
	if (a->delimiter_query && a->pattern_count == 0) {
		/* RFC 9051 6.3.9: the hierarchy delimiter and root. */
		if (!lsub)
			imap_line(s, "* LIST (\\Noselect) \"/\" \"\"");
		list_args_free(a);
		imap_tagged(s, cmd->tag, "OK %s completed.", verb);
		return;
	}
	list_start(s, cmd->tag, verb, a, false);
}

void imap_cmd_list(struct imap_session *s, const struct mt_imap_command *cmd)
{
	list_command(s, cmd, false);
}

void imap_cmd_lsub(struct imap_session *s, const struct mt_imap_command *cmd)
{
	list_command(s, cmd, true);
}

void imap_cmd_status(struct imap_session *s, const struct mt_imap_command *cmd)
{
	struct mt_buf name = MT_BUF_INIT;
	unsigned int items;
	if (cmd->count != 2 || !status_items_parse(&cmd->args[1], &items)) {
		imap_error(s, cmd->tag, "BAD STATUS takes a mailbox name and a list "
			   "of status items.");
		return;
	}
	if (!imap_mailbox_arg(s, cmd->tag, &cmd->args[0], &name)) {
		mt_buf_free(&name);
		return;
	}
	struct list_args *a = mt_xcalloc(1, sizeof(*a));
	a->status_items = items;
	a->patterns[a->pattern_count++] = mt_xstrdup(mt_buf_cstr(&name));
	mt_buf_free(&name);
	list_start(s, cmd->tag, "STATUS", a, true);
}

/* SELECT, EXAMINE, CLOSE, UNSELECT */

void imap_selected_reset(struct imap_session *s)
{
	imap_watch_stop(s);
	if (s->selected.mbox != NULL)
		mt_store_mailbox_close(&s->selected.mbox);
	MT_FREE(&s->selected.name);
	MT_FREE(&s->selected.view);
	s->selected.count = 0;
	s->selected.read_only = false;
}

/* "* FLAGS" and PERMANENTFLAGS: the system flags and the mailbox's
 * keywords, and "\*" while it can name more. */
void imap_flags_announce(struct imap_session *s, const struct mt_store_mailbox *mbox)
{
	struct mt_buf kw = MT_BUF_INIT;
	unsigned int n = 0;
	for (const char *k; (k = mt_store_mailbox_keyword(mbox, n)) != NULL; n++) {
		mt_buf_append_str(&kw, " ");
		mt_buf_append_str(&kw, k);
	}
	imap_line(s, "* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft%s)",
		  mt_buf_cstr(&kw));
	if (s->selected.read_only)
		imap_line(s, "* OK [PERMANENTFLAGS ()] Read-only mailbox.");
	else
		imap_line(s, "* OK [PERMANENTFLAGS (\\Answered \\Flagged \\Deleted \\Seen "
			  "\\Draft%s%s)] Flags permitted.", mt_buf_cstr(&kw),
			  n < MT_STORE_KEYWORDS_MAX ? " \\*" : "");
	mt_buf_free(&kw);
}

static void select_ok(struct imap_session *s)
{
	const struct imap_selected *sel = &s->selected;
	imap_tagged(s, s->tag, "OK [%s] %s completed.",
		    sel->read_only ? "READ-ONLY" : "READ-WRITE",
		    sel->read_only ? "EXAMINE" : "SELECT");
	imap_resume_in(s, IMAP_STATE_SELECTED);
}

static void qresync_done(struct mt_store_req *req, void *context)
{
	struct imap_session *s = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	if (status != MT_STORE_OK) {
		imap_store_failed(s, s->tag, status, error);
		imap_selected_reset(s);
		imap_resume_in(s, IMAP_STATE_AUTH);
		return;
	}
	unsigned int n;
	const uint32_t *vanished = mt_store_req_vanished(req, &n);
	/* Only those the client knows of, if it said (known-uids). */
	struct mt_imap_seq_range *ranges = mt_xmalloc(1024 * sizeof(*ranges));
	struct mt_imap_seqset known;
	bool filter = s->qresync_known != NULL &&
		mt_imap_seqset_parse(s->qresync_known, &known, ranges, 1024) && !known.saved;
	uint32_t *out = mt_xmalloc((n + 1) * sizeof(*out));
	unsigned int k = 0;
	for (unsigned int i = 0; i < n; i++)
		if ((!filter || mt_imap_seqset_contains(&known, vanished[i], UINT32_MAX)) &&
		    (k == 0 || out[k - 1] != vanished[i]))
			out[k++] = vanished[i];
	imap_vanished_line(s, true, out, k);
	free(out);
	free(ranges);
	const struct imap_selected *sel = &s->selected;
	for (unsigned int i = 0; i < sel->count; i++) {
		const struct mt_store_msg *m = imap_view_msg(s, i);
		if (m->modseq <= s->qresync_modseq)
			continue;
		struct mt_buf line = MT_BUF_INIT;
		mt_buf_appendf(&line, "* %u FETCH (UID %u ", i + 1, m->uid);
		imap_flags_write(&line, sel->mbox, m);
		mt_buf_appendf(&line, " MODSEQ (%" PRIu64 "))", m->modseq);
		imap_line(s, "%s", mt_buf_cstr(&line));
		mt_buf_free(&line);
	}
	select_ok(s);
}

static void select_done(struct mt_store_req *req, void *context)
{
	struct imap_session *s = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	if (status != MT_STORE_OK) {
		MT_FREE(&s->arg_name);
		imap_store_failed(s, s->tag, status, error);
		/* RFC 9051 6.3.2: a failed SELECT leaves no mailbox selected. */
		imap_resume_in(s, IMAP_STATE_AUTH);
		return;
	}
	struct imap_selected *sel = &s->selected;
	sel->mbox = mt_store_req_mailbox(req);
	sel->name = s->arg_name;
	s->arg_name = NULL;
	sel->read_only = s->examine;
	const struct mt_store_mailbox *mbox = sel->mbox;
	const unsigned int count = mt_store_mailbox_count(mbox);
	sel->view = mt_xmalloc((count + 1) * sizeof(*sel->view));
	for (unsigned int i = 0; i < count; i++)
		sel->view[i] = i;
	sel->count = count;
	imap_line(s, "* %u EXISTS", count);
	if (!s->rev2)
		imap_line(s, "* 0 RECENT");
	imap_flags_announce(s, mbox);
	if (!s->rev2) {
		/* IMAP4rev1's UNSEEN: the first message without \Seen. */
		for (unsigned int i = 0; i < count; i++) {
			if ((imap_view_msg(s, i)->flags & MT_STORE_FLAG_SEEN) == 0) {
				imap_line(s, "* OK [UNSEEN %u] First unseen.", i + 1);
				break;
			}
		}
	}
	imap_line(s, "* OK [UIDVALIDITY %u] UIDs valid.", mt_store_mailbox_uidvalidity(mbox));
	imap_line(s, "* OK [UIDNEXT %u] Predicted next UID.", mt_store_mailbox_uidnext(mbox));
	/* RFC 7162 3.1.2.1: sent to every client of a CONDSTORE server. */
	imap_line(s, "* OK [HIGHESTMODSEQ %" PRIu64 "] Highest.",
		  mt_store_mailbox_highest_modseq(mbox));
	if (s->rev2) {
		struct mt_buf line = MT_BUF_INIT;
		mt_buf_append_str(&line, "* LIST () \"/\" ");
		imap_write_name(&line, s, sel->name);
		imap_line(s, "%s", mt_buf_cstr(&line));
		mt_buf_free(&line);
	}
	imap_watch_start(s);
	if (s->qresync_select && s->qresync_uidvalidity == mt_store_mailbox_uidvalidity(mbox)) {
		/* RFC 7162 3.2.5.2: what vanished and changed since, first. */
		s->store_req = mt_store_vanished(s->ps->port, sel->mbox, s->qresync_modseq,
						 qresync_done, s);
		return;
	}
	select_ok(s);
}

static void select_command(struct imap_session *s, const struct mt_imap_command *cmd,
			   bool examine)
{
	struct mt_buf name = MT_BUF_INIT;
	/* RFC 7162 3.1.8: SELECT name (CONDSTORE); 3.2.5: SELECT name
	 * (QRESYNC (uidvalidity modseq [known-uids])). */
	struct mt_imap_command plain = *cmd;
	s->qresync_select = false;
	MT_FREE(&s->qresync_known);
	if (cmd->count == 2 && cmd->args[1].type == MT_IMAP_ARG_LIST) {
		const struct mt_imap_arg *p = &cmd->args[1];
		bool ok = p->len == 1 && mt_imap_arg_atom_is(&p->list[0], "CONDSTORE");
		if (ok)
			s->condstore = true;
		else if (p->len == 2 && mt_imap_arg_atom_is(&p->list[0], "QRESYNC") &&
			 p->list[1].type == MT_IMAP_ARG_LIST && p->list[1].len >= 2 &&
			 p->list[1].len <= 4 && s->qresync) {
			const struct mt_imap_arg *q = p->list[1].list;
			char *end1 = NULL, *end2 = NULL;
			unsigned long long v = 0, m = 0;
			if (q[0].type == MT_IMAP_ARG_ATOM && q[1].type == MT_IMAP_ARG_ATOM &&
			    q[0].str[0] >= '1' && q[0].str[0] <= '9' && q[1].str[0] >= '1' &&
			    q[1].str[0] <= '9') {
				v = strtoull(q[0].str, &end1, 10);
				m = strtoull(q[1].str, &end2, 10);
			}
			ok = end1 != NULL && *end1 == '\0' && *end2 == '\0' && v <= UINT32_MAX &&
				(p->list[1].len < 3 || q[2].type == MT_IMAP_ARG_ATOM);
			if (ok) {
				s->qresync_select = true;
				s->qresync_uidvalidity = (uint32_t)v;
				s->qresync_modseq = m;
				if (p->list[1].len >= 3)
					s->qresync_known = mt_xstrdup(q[2].str);
			}
		}
		if (!ok) {
			imap_error(s, cmd->tag, "BAD %s: invalid parameters%s.",
				   examine ? "EXAMINE" : "SELECT",
				   s->qresync ? "" : " (QRESYNC needs ENABLE QRESYNC)");
			return;
		}
		plain.count = 1;
	}
	if (!one_name(s, &plain, examine ? "EXAMINE" : "SELECT", &name)) {
		mt_buf_free(&name);
		return;
	}
	/* RFC 9051 6.3.2: a SELECT first deselects (without expunging). */
	if (s->selected.mbox != NULL) {
		imap_selected_reset(s);
		imap_line(s, "* OK [CLOSED] Previous mailbox closed.");
		imap_enter_state(s, IMAP_STATE_AUTH);
	}
	snprintf(s->tag, sizeof(s->tag), "%s", cmd->tag);
	free(s->arg_name);
	s->arg_name = mt_xstrdup(mt_buf_cstr(&name));
	s->examine = examine;
	mt_buf_free(&name);
	imap_wait(s);
	s->store_req = mt_store_folder_open(s->ps->port, s->user, s->arg_name,
					    select_done, s);
}

void imap_cmd_select(struct imap_session *s, const struct mt_imap_command *cmd)
{
	select_command(s, cmd, false);
}

void imap_cmd_examine(struct imap_session *s, const struct mt_imap_command *cmd)
{
	select_command(s, cmd, true);
}

static void close_done(struct mt_store_req *req, void *context)
{
	struct imap_session *s = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	if (status == MT_STORE_OK)
		imap_changed(s, s->selected.name);
	imap_selected_reset(s);
	if (status == MT_STORE_OK)
		imap_tagged(s, s->tag, "OK CLOSE completed.");
	else
		imap_store_failed(s, s->tag, status, error);
	imap_resume_in(s, IMAP_STATE_AUTH);
}

/* CLOSE's expunge: every message of the selected mailbox that has
 * \Deleted now (all of the snapshot: the view is about to go). */
static void close_expunge(struct imap_session *s)
{
	const struct mt_store_mailbox *mbox = s->selected.mbox;
	unsigned int count = mt_store_mailbox_count(mbox), deleted = 0;
	uint32_t *uids = mt_xmalloc((count + 1) * sizeof(*uids));
	for (unsigned int i = 0; i < count && !s->selected.read_only; i++) {
		const struct mt_store_msg *m = mt_store_mailbox_msg(mbox, i);
		if (m->flags & MT_STORE_FLAG_DELETED)
			uids[deleted++] = m->uid;
	}
	if (deleted == 0) {
		free(uids);
		imap_selected_reset(s);
		imap_tagged(s, s->tag, "OK CLOSE completed.");
		imap_resume_in(s, IMAP_STATE_AUTH);
		return;
	}
	/* RFC 9051 6.4.1: expunged silently, answered once durable. */
	imap_wait(s);
	s->store_req = mt_store_expunge(s->ps->port, s->selected.mbox, uids, deleted,
					close_done, s);
	free(uids);
}

/* The mailbox as it is now (another session changed it): CLOSE expunges
 * what has \Deleted in it, not in this session's older snapshot. */
static void close_reread(struct mt_store_req *req, void *context)
{
	struct imap_session *s = context;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	if (status != MT_STORE_OK) {
		imap_selected_reset(s);
		imap_store_failed(s, s->tag, status, error);
		imap_resume_in(s, IMAP_STATE_AUTH);
		return;
	}
	mt_store_mailbox_close(&s->selected.mbox);
	s->selected.mbox = mt_store_req_mailbox(req);
	close_expunge(s);
}

void imap_cmd_close(struct imap_session *s, const struct mt_imap_command *cmd)
{
	if (cmd->count != 0) {
		imap_error(s, cmd->tag, "BAD CLOSE takes no arguments.");
		return;
	}
	snprintf(s->tag, sizeof(s->tag), "%s", cmd->tag);
	if (s->stale && !s->selected.read_only) {
		s->stale = false;
		imap_wait(s);
		s->store_req = mt_store_folder_open(s->ps->port, s->user, s->selected.name,
						    close_reread, s);
		return;
	}
	imap_wait(s);
	close_expunge(s);
}

void imap_cmd_unselect(struct imap_session *s, const struct mt_imap_command *cmd)
{
	if (cmd->count != 0) {
		imap_error(s, cmd->tag, "BAD UNSELECT takes no arguments.");
		return;
	}
	imap_selected_reset(s);
	imap_tagged(s, cmd->tag, "OK UNSELECT completed.");
	imap_enter_state(s, IMAP_STATE_AUTH);
}
