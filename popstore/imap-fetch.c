/* imap-fetch.c — mailtier-popstore's IMAP FETCH and UID FETCH: UID, FLAGS,
 * INTERNALDATE, RFC822.SIZE, the FAST macro, BODY[section]<partial> and
 * BODY.PEEK with the sections HEADER, TEXT, HEADER.FIELDS (...) and
 * HEADER.FIELDS.NOT (...) and the whole message, and IMAP4rev1's RFC822,
 * RFC822.HEADER and RFC822.TEXT. A body is streamed from the store in
 * 64 KiB reads, the next asked for only when the output has drained below
 * IMAP_OUTPUT_LOW, so a FETCH of large messages costs a few reads of
 * memory however slowly the client reads; a non-PEEK body section sets
 * \Seen first (one durable STORE) and the FETCH reports the new FLAGS.
 * ENVELOPE, BODYSTRUCTURE, BODY, MIME part sections and BINARY need the
 * message's MIME structure, which the store does not record yet: they are
 * answered BAD for now (issue 15's next slice).
 *
 * The header is the message's lines up to the first empty one (the
 * store's own Return-Path:/Received: lines included); it is found by
 * reading the message's start, at most HEAD_MAX octets (a longer header is
 * taken as ending there).
 *
 * Trust boundary: the client's items (checked here: names, sections,
 * field lists of at most FIELDS_MAX names, partial ranges) and sets
 * (imap-message.c). The message bytes are the store's, sent as literals
 * of their exact size.
 *
 * RFC 9051 6.4.5 (FETCH and its items, \Seen on BODY[]), 7.5.2 (the FETCH
 * response: BODY[section]<origin>, literals), 6.4.9 (UID FETCH includes
 * UID); RFC 2683 3.2.1.5 (sets may be long). */
#include "imap-session.h"
#include "alloc.h"
#include "imap-date.h"
#include "imap-write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#define READ_CHUNK (64 * 1024)
#define HEAD_MAX (1024 * 1024)
#define FIELDS_MAX 64
#define ITEMS_MAX 64

enum item_kind { ITEM_UID, ITEM_FLAGS, ITEM_INTERNALDATE, ITEM_SIZE, ITEM_MODSEQ,
		 ITEM_BODY };
enum section { SEC_ALL, SEC_HEADER, SEC_TEXT, SEC_FIELDS, SEC_FIELDS_NOT };

struct fetch_item {
	enum item_kind kind;
	enum section section;
	bool peek;
	bool partial;
	uint64_t origin, length;
	char *fields[FIELDS_MAX];
	unsigned int field_count;
	char *label;		/* as the response names it: "BODY[HEADER]" */
};

struct imap_fetch {
	struct imap_session *s;
	char tag[MT_IMAP_TAG_MAX + 1];
	bool uid;
	struct fetch_item items[ITEMS_MAX];
	unsigned int item_count;
	bool needs_head, sets_seen;
	unsigned int *positions;
	unsigned int count;
	/* Progress */
	unsigned int pos, item;		/* message, item within it */
	bool line_open;			/* "* n FETCH (" written */
	struct mt_buf head;		/* this message's header */
	bool head_done;
	uint64_t head_end;		/* offset after the empty line */
	uint64_t send_from, send_left;	/* a body range being streamed */
	bool streaming;
	struct mt_store_req *req;	/* a read in flight */
	bool async;			/* it waited once: resume the session */
	char *uid_set;			/* VANISHED: the command's UID set */
	struct mt_buf prefix;		/* a literal's " BODY[] {n}" not yet sent */
	bool prefix_pending;
	bool expunge_issued;		/* a message went away meanwhile */
};

/* Items */

/* "HEADER.FIELDS (From \"To\")": the names into item. */
static bool fields_parse(const char *p, struct fetch_item *item)
{
	while (*p == ' ')
		p++;
	if (*p++ != '(')
		return false;
	for (;;) {
		while (*p == ' ')
			p++;
		if (*p == ')')
			return p[1] == '\0' && item->field_count > 0;
		char name[256];
		size_t n = 0;
		if (*p == '"') {
			for (p++; *p != '"'; p++) {
				if (*p == '\0' || n + 1 >= sizeof(name))
					return false;
				if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
					p++;
				name[n++] = *p;
			}
			p++;
		} else {
			for (; *p != ' ' && *p != ')' && *p != '\0'; p++) {
				if (n + 1 >= sizeof(name) || (unsigned char)*p <= ' ' || *p == ':')
					return false;
				name[n++] = *p;
			}
		}
		if (n == 0 || item->field_count == FIELDS_MAX)
			return false;
		name[n] = '\0';
		item->fields[item->field_count++] = mt_xstrdup(name);
	}
}

/* "<origin.length>" at p (or nothing). */
static bool partial_parse(const char *p, struct fetch_item *item)
{
	if (*p == '\0')
		return true;
	char *end;
	if (*p != '<' || p[1] < '0' || p[1] > '9')
		return false;
	item->origin = strtoull(p + 1, &end, 10);
	if (*end != '.' || end[1] < '1' || end[1] > '9')
		return false;
	item->length = strtoull(end + 1, &end, 10);
	if (strcmp(end, ">") != 0 || item->origin > UINT32_MAX || item->length > UINT32_MAX)
		return false;
	item->partial = true;
	return true;
}

/* A BODY[...] / BODY.PEEK[...] atom. */
static bool body_parse(const char *text, struct fetch_item *item)
{
	const char *p;
	if (strncasecmp(text, "BODY.PEEK[", 10) == 0) {
		item->peek = true;
		p = text + 10;
	} else if (strncasecmp(text, "BODY[", 5) == 0)
		p = text + 5;
	else
		return false;
	const char *close = strrchr(p, ']');
	if (close == NULL)
		return false;
	size_t len = (size_t)(close - p);
	char section[1024];
	if (len >= sizeof(section))
		return false;
	memcpy(section, p, len);
	section[len] = '\0';
	item->kind = ITEM_BODY;
	if (len == 0)
		item->section = SEC_ALL;
	else if (strcasecmp(section, "HEADER") == 0)
		item->section = SEC_HEADER;
	else if (strcasecmp(section, "TEXT") == 0)
		item->section = SEC_TEXT;
	else if (strncasecmp(section, "HEADER.FIELDS.NOT", 17) == 0 &&
		 (section[17] == ' ' || section[17] == '(')) {
		item->section = SEC_FIELDS_NOT;
		if (!fields_parse(section + 17, item))
			return false;
	} else if (strncasecmp(section, "HEADER.FIELDS", 13) == 0 &&
		   (section[13] == ' ' || section[13] == '(')) {
		item->section = SEC_FIELDS;
		if (!fields_parse(section + 13, item))
			return false;
	} else
		return false;	/* part numbers, MIME: not yet */
	if (!partial_parse(close + 1, item))
		return false;
	/* The response names the section as asked, without PEEK, with the
	 * partial's origin only (RFC 9051 7.5.2). */
	struct mt_buf label = MT_BUF_INIT;
	mt_buf_appendf(&label, "BODY[%s]", section);
	if (item->partial)
		mt_buf_appendf(&label, "<%" PRIu64 ">", item->origin);
	item->label = mt_xstrdup(mt_buf_cstr(&label));
	mt_buf_free(&label);
	return true;
}

static bool item_parse(struct imap_fetch *f, const struct mt_imap_arg *a)
{
	if (a->type != MT_IMAP_ARG_ATOM || f->item_count == ITEMS_MAX)
		return false;
	struct fetch_item *item = &f->items[f->item_count];
	memset(item, 0, sizeof(*item));
	const char *t = a->str;
	if (strcasecmp(t, "UID") == 0)
		item->kind = ITEM_UID;
	else if (strcasecmp(t, "FLAGS") == 0)
		item->kind = ITEM_FLAGS;
	else if (strcasecmp(t, "INTERNALDATE") == 0)
		item->kind = ITEM_INTERNALDATE;
	else if (strcasecmp(t, "RFC822.SIZE") == 0)
		item->kind = ITEM_SIZE;
	else if (strcasecmp(t, "MODSEQ") == 0) {
		item->kind = ITEM_MODSEQ;
		f->s->condstore = true;	/* RFC 7162 3.1 */
	}
	else if (strcasecmp(t, "RFC822") == 0 || strcasecmp(t, "RFC822.HEADER") == 0 ||
		 strcasecmp(t, "RFC822.TEXT") == 0) {
		item->kind = ITEM_BODY;
		item->section = t[6] == '\0' ? SEC_ALL :
			strcasecmp(t + 6, ".HEADER") == 0 ? SEC_HEADER : SEC_TEXT;
		item->peek = item->section == SEC_HEADER;	/* RFC 9051 6.4.5 */
		item->label = mt_xstrdup(item->section == SEC_ALL ? "RFC822" :
					 item->section == SEC_HEADER ? "RFC822.HEADER" :
					 "RFC822.TEXT");
	} else if (!body_parse(t, item)) {
		for (unsigned int i = 0; i < item->field_count; i++)
			free(item->fields[i]);
		return false;
	}
	f->item_count++;
	if (item->kind == ITEM_BODY) {
		f->needs_head |= item->section != SEC_ALL;
		f->sets_seen |= !item->peek;
	}
	return true;
}

/* FETCH's item argument: a macro, an item, or a list of items. */
static bool items_parse(struct imap_fetch *f, const struct mt_imap_arg *a)
{
	static const char *const fast[] = { "FLAGS", "INTERNALDATE", "RFC822.SIZE" };
	if (mt_imap_arg_atom_is(a, "FAST")) {
		for (size_t i = 0; i < 3; i++) {
			const struct mt_imap_arg item = {
				.type = MT_IMAP_ARG_ATOM, .str = fast[i], .len = strlen(fast[i]),
			};
			(void)item_parse(f, &item);
		}
		return true;
	}
	if (a->type == MT_IMAP_ARG_LIST) {
		if (a->len == 0)
			return false;
		for (size_t i = 0; i < a->len; i++)
			if (!item_parse(f, &a->list[i]))
				return false;
		return true;
	}
	return item_parse(f, a);
}

static void fetch_destroy(struct imap_fetch *f)
{
	for (unsigned int i = 0; i < f->item_count; i++) {
		for (unsigned int k = 0; k < f->items[i].field_count; k++)
			free(f->items[i].fields[k]);
		free(f->items[i].label);
	}
	if (f->req != NULL)
		mt_store_req_cancel(f->req);
	mt_buf_free(&f->head);
	mt_buf_free(&f->prefix);
	free(f->positions);
	free(f->uid_set);
	free(f);
}

void imap_fetch_free(struct imap_session *s)
{
	if (s->fetch != NULL)
		fetch_destroy(s->fetch);
	s->fetch = NULL;
}

bool imap_fetch_busy(const struct imap_session *s)
{
	return s->fetch != NULL && s->fetch->req != NULL;
}

/* The header */

static bool field_listed(const struct fetch_item *item, const char *line, size_t len)
{
	const char *colon = memchr(line, ':', len);
	if (colon == NULL)
		return false;
	size_t name_len = (size_t)(colon - line);
	while (name_len > 0 && (line[name_len - 1] == ' ' || line[name_len - 1] == '\t'))
		name_len--;
	for (unsigned int i = 0; i < item->field_count; i++)
		if (strlen(item->fields[i]) == name_len &&
		    strncasecmp(item->fields[i], line, name_len) == 0)
			return true;
	return false;
}

/* HEADER.FIELDS (.NOT): the header's fields (with their continuation
 * lines) that are (not) listed, and the empty line. */
static void fields_filter(const struct imap_fetch *f, const struct fetch_item *item,
			  struct mt_buf *out)
{
	const char *p = f->head.data != NULL ? f->head.data : "";
	const size_t end = (size_t)f->head_end > f->head.len ? f->head.len : (size_t)f->head_end;
	bool keep = false;
	for (size_t i = 0; i < end;) {
		const char *nl = memchr(p + i, '\n', end - i);
		size_t line_end = nl != NULL ? (size_t)(nl - p) + 1 : end;
		size_t len = line_end - i;
		if (len <= 2 && (p[i] == '\r' || p[i] == '\n'))
			break;		/* the empty line */
		if (p[i] != ' ' && p[i] != '\t') {
			bool listed = field_listed(item, p + i, len);
			keep = item->section == SEC_FIELDS ? listed : !listed;
		}
		if (keep)
			mt_buf_append(out, p + i, len);
		i = line_end;
	}
	mt_buf_append(out, "\r\n", 2);
}

/* Streaming */

static void fetch_run(struct imap_fetch *f);

static void head_read_done(struct mt_store_req *req, void *context)
{
	struct imap_fetch *f = context;
	struct imap_session *s = f->s;
	f->req = NULL;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	size_t len;
	const void *data = mt_store_req_data(req, &len);
	const struct mt_store_msg *m = imap_view_msg(s, f->positions[f->pos]);
	if (status == MT_STORE_NOT_FOUND) {
		/* Expunged by another session's POP3 QUIT meanwhile: nothing to
		 * read; its header is empty. */
		len = 0;
	} else if (status != MT_STORE_OK) {
		imap_fetch_free(s);
		imap_store_failed(s, s->tag, status, error);
		imap_resume(s);
		return;
	}
	mt_buf_append(&f->head, data, len);
	size_t end = imap_header_end(f->head.data != NULL ? f->head.data : "", f->head.len);
	if (end == 0 && len > 0 && f->head.len < HEAD_MAX && f->head.len < m->size) {
		f->req = mt_store_read(s->ps->port, s->selected.mbox,
				       s->selected.view[f->positions[f->pos]], f->head.len,
				       READ_CHUNK, head_read_done, f);
		return;
	}
	f->head_end = end != 0 ? end : f->head.len;
	f->head_done = true;
	fetch_run(f);
}

static void body_read_done(struct mt_store_req *req, void *context)
{
	struct imap_fetch *f = context;
	struct imap_session *s = f->s;
	f->req = NULL;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	size_t len;
	const void *data = mt_store_req_data(req, &len);
	if (f->prefix_pending && status == MT_STORE_NOT_FOUND) {
		/* Expunged elsewhere before a byte was promised: the item is
		 * left out and the FETCH ends NO [EXPUNGEISSUED]. */
		f->prefix_pending = false;
		f->streaming = false;
		f->expunge_issued = true;
		f->item = f->item_count;
		fetch_run(f);
		return;
	}
	if (f->prefix_pending && status == MT_STORE_OK && len > 0) {
		evbuffer_add(imap_output(s), f->prefix.data, f->prefix.len);
		f->prefix_pending = false;
	}
	if (status != MT_STORE_OK || len == 0) {
		/* The literal's size is promised: a message that went away
		 * (or a failed read) cannot be finished; the session ends. */
		mt_slog(MT_LOG_WARNING, &s->log, "imap fetch read failed: %s: %s",
			mt_store_status_name(status), status != MT_STORE_OK ? error : "short");
		imap_fetch_free(s);
		imap_close_after(s, "fetch-read-failed");
		if (status == MT_STORE_FATAL)
			popstore_store_fatal(s->ps, error);
		return;
	}
	if (len > f->send_left)
		len = (size_t)f->send_left;
	evbuffer_add(imap_output(s), data, len);
	f->send_from += len;
	f->send_left -= len;
	if (f->send_left == 0)
		f->streaming = false;
	fetch_run(f);
}

/* Write item i of the current message; false if it waits (a read). */
static bool item_write(struct imap_fetch *f, const struct fetch_item *item,
		       const struct mt_store_msg *m, unsigned int index)
{
	struct imap_session *s = f->s;
	struct mt_buf out = MT_BUF_INIT;
	const char *sp = f->item > 0 ? " " : "";
	switch (item->kind) {
	case ITEM_UID:
		mt_buf_appendf(&out, "%sUID %u", sp, m->uid);
		break;
	case ITEM_FLAGS:
		mt_buf_append_str(&out, sp);
		imap_flags_write(&out, s->selected.mbox, m);
		break;
	case ITEM_INTERNALDATE:
		mt_buf_appendf(&out, "%sINTERNALDATE ", sp);
		mt_imap_datetime_write(&out, m->arrival, 0);
		break;
	case ITEM_SIZE:
		mt_buf_appendf(&out, "%sRFC822.SIZE %" PRIu64, sp, m->size);
		break;
	case ITEM_MODSEQ:
		mt_buf_appendf(&out, "%sMODSEQ (%" PRIu64 ")", sp, m->modseq);
		break;
	case ITEM_BODY: {
		uint64_t base = 0, size = m->size;
		struct mt_buf filtered = MT_BUF_INIT;
		if (item->section == SEC_HEADER)
			size = f->head_end;
		else if (item->section == SEC_TEXT) {
			base = f->head_end;
			size = m->size > f->head_end ? m->size - f->head_end : 0;
		} else if (item->section == SEC_FIELDS || item->section == SEC_FIELDS_NOT) {
			fields_filter(f, item, &filtered);
			size = filtered.len;
		}
		uint64_t from = 0, n = size;
		if (item->partial) {
			from = item->origin < size ? item->origin : size;
			n = size - from < item->length ? size - from : item->length;
		}
		mt_buf_appendf(&out, "%s%s ", sp, item->label);
		mt_imap_write_literal_prefix(&out, n, false);
		const bool streamed = !(filtered.data != NULL || item->section == SEC_FIELDS ||
					item->section == SEC_FIELDS_NOT) && n > 0;
		if (streamed) {
			/* The literal's size is a promise: made once the first
			 * read shows the message is still there. */
			mt_buf_reset(&f->prefix);
			mt_buf_append(&f->prefix, out.data, out.len);
			f->prefix_pending = true;
		} else
			evbuffer_add(imap_output(s), out.data, out.len);
		mt_buf_free(&out);
		if (filtered.data != NULL || item->section == SEC_FIELDS ||
		    item->section == SEC_FIELDS_NOT) {
			evbuffer_add(imap_output(s), filtered.data + from, (size_t)n);
			mt_buf_free(&filtered);
			return true;
		}
		f->send_from = base + from;
		f->send_left = n;
		f->streaming = n > 0;
		(void)index;
		return true;
	}
	}
	evbuffer_add(imap_output(s), out.data, out.len);
	mt_buf_free(&out);
	return true;
}

/* Go on until the output is full, a read is in flight, or all is sent. */
static void fetch_run(struct imap_fetch *f)
{
	struct imap_session *s = f->s;
	while (f->pos < f->count) {
		if (f->req != NULL || evbuffer_get_length(imap_output(s)) > IMAP_OUTPUT_LOW) {
			f->async = true;
			return;
		}
		const unsigned int position = f->positions[f->pos];
		const unsigned int index = s->selected.view[position];
		const struct mt_store_msg *m = imap_view_msg(s, position);
		if (f->streaming) {
			uint64_t want = f->send_left < READ_CHUNK ? f->send_left : READ_CHUNK;
			f->req = mt_store_read(s->ps->port, s->selected.mbox, index,
					       f->send_from, (size_t)want, body_read_done, f);
			f->async = true;
			return;
		}
		if (f->needs_head && !f->head_done) {
			mt_buf_reset(&f->head);
			f->req = mt_store_read(s->ps->port, s->selected.mbox, index, 0,
					       READ_CHUNK, head_read_done, f);
			f->async = true;
			return;
		}
		if (!f->line_open) {
			evbuffer_add_printf(imap_output(s), "* %u FETCH (", position + 1);
			f->line_open = true;
			f->item = 0;
		}
		if (f->item < f->item_count) {
			(void)item_write(f, &f->items[f->item], m, index);
			f->item++;
			continue;
		}
		evbuffer_add(imap_output(s), ")\r\n", 3);
		f->line_open = false;
		f->head_done = false;
		f->pos++;
	}
	char tag[MT_IMAP_TAG_MAX + 1];
	snprintf(tag, sizeof(tag), "%s", f->tag);
	const bool uid = f->uid, async = f->async, issued = f->expunge_issued;
	imap_fetch_free(s);
	if (issued)
		imap_tagged(s, tag, "NO [EXPUNGEISSUED] Some messages were expunged "
			    "meanwhile.");
	else
		imap_tagged(s, tag, "OK %sFETCH completed.", uid ? "UID " : "");
	/* Done inside the command's own dispatch: the session's loop goes
	 * on by itself; after a wait it must be resumed. */
	if (async)
		imap_resume(s);
	else
		imap_enter_state(s, s->resume_state);
}

void imap_fetch_continue(struct imap_session *s)
{
	if (s->fetch != NULL && s->fetch->req == NULL && s->store_req == NULL)
		fetch_run(s->fetch);
}

static void vanished_done(struct mt_store_req *req, void *context)
{
	struct imap_fetch *f = context;
	struct imap_session *s = f->s;
	f->req = NULL;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	if (status != MT_STORE_OK) {
		imap_fetch_free(s);
		imap_store_failed(s, s->tag, status, error);
		imap_resume(s);
		return;
	}
	unsigned int n;
	const uint32_t *uids = mt_store_req_vanished(req, &n);
	struct mt_imap_seq_range *ranges = mt_xmalloc(1024 * sizeof(*ranges));
	struct mt_imap_seqset set;
	uint32_t *out = mt_xmalloc((n + 1) * sizeof(*out));
	unsigned int k = 0;
	const uint32_t largest = s->selected.count > 0 ?
		imap_view_msg(s, s->selected.count - 1)->uid : 0;
	if (mt_imap_seqset_parse(f->uid_set, &set, ranges, 1024))
		for (unsigned int i = 0; i < n; i++)
			if (mt_imap_seqset_contains(&set, uids[i], largest > uids[i] ?
						    largest : uids[i]) &&
			    (k == 0 || out[k - 1] != uids[i]))
				out[k++] = uids[i];
	imap_vanished_line(s, true, out, k);
	free(out);
	free(ranges);
	fetch_run(f);
}

/* \Seen was set (for non-PEEK sections): fetch. */
static void seen_done(struct mt_store_req *req, void *context)
{
	struct imap_fetch *f = context;
	struct imap_session *s = f->s;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	if (status != MT_STORE_OK) {
		imap_fetch_free(s);
		imap_store_failed(s, s->tag, status, error);
		imap_resume(s);
		return;
	}
	imap_changed(s, s->selected.name);
	fetch_run(f);
}

void imap_cmd_fetch(struct imap_session *s, const struct mt_imap_command *cmd, bool uid)
{
	/* RFC 7162 3.1.4: FETCH set items (CHANGEDSINCE modseq); 3.2.6: UID
	 * FETCH ... (CHANGEDSINCE modseq VANISHED). */
	uint64_t changed_since = 0;
	bool vanished = false;
	if (cmd->count == 3) {
		const struct mt_imap_arg *mods = &cmd->args[2];
		char *end = NULL;
		if (mods->type == MT_IMAP_ARG_LIST && (mods->len == 2 || mods->len == 3) &&
		    mt_imap_arg_atom_is(&mods->list[0], "CHANGEDSINCE") &&
		    mods->list[1].type == MT_IMAP_ARG_ATOM && mods->list[1].str[0] >= '0' &&
		    mods->list[1].str[0] <= '9')
			changed_since = strtoull(mods->list[1].str, &end, 10);
		if (end != NULL && mods->len == 3) {
			vanished = mt_imap_arg_atom_is(&mods->list[2], "VANISHED");
			if (!vanished || !uid || !s->qresync)
				end = NULL;
		}
		if (end == NULL || *end != '\0') {
			imap_error(s, cmd->tag, "BAD FETCH: invalid modifier.");
			return;
		}
		s->condstore = true;
	} else if (cmd->count != 2) {
		imap_error(s, cmd->tag, "BAD FETCH takes a set and items.");
		return;
	}
	struct imap_fetch *f = mt_xcalloc(1, sizeof(*f));
	f->s = s;
	snprintf(f->tag, sizeof(f->tag), "%s", cmd->tag);
	f->uid = uid;
	if (!items_parse(f, &cmd->args[1])) {
		fetch_destroy(f);
		imap_error(s, cmd->tag, "BAD FETCH: unknown or unsupported item "
			   "(ENVELOPE, BODYSTRUCTURE and MIME parts are not served yet).");
		return;
	}
	if (uid) {
		/* RFC 9051 6.4.9: UID FETCH answers UID too. */
		bool has_uid = false;
		for (unsigned int i = 0; i < f->item_count; i++)
			has_uid |= f->items[i].kind == ITEM_UID;
		if (!has_uid && f->item_count < ITEMS_MAX)
			f->items[f->item_count++] = (struct fetch_item){ .kind = ITEM_UID };
	}
	if (!imap_set_arg(s, cmd->tag, &cmd->args[0], uid, &f->positions, &f->count)) {
		fetch_destroy(f);
		return;
	}
	if (cmd->count == 3) {
		/* Only what changed since, and its MODSEQ said. */
		unsigned int n = 0;
		for (unsigned int i = 0; i < f->count; i++)
			if (imap_view_msg(s, f->positions[i])->modseq > changed_since)
				f->positions[n++] = f->positions[i];
		f->count = n;
	}
	if (s->condstore) {
		bool has_modseq = false;
		for (unsigned int i = 0; i < f->item_count; i++)
			has_modseq |= f->items[i].kind == ITEM_MODSEQ;
		if (!has_modseq && f->item_count < ITEMS_MAX && (cmd->count == 3 ||
		    f->sets_seen))
			f->items[f->item_count++] = (struct fetch_item){ .kind = ITEM_MODSEQ };
	}
	snprintf(s->tag, sizeof(s->tag), "%s", cmd->tag);
	s->fetch = f;
	imap_wait(s);
	if (vanished) {
		/* The set's uids expunged since, first (VANISHED (EARLIER)). */
		f->uid_set = mt_xstrdup(cmd->args[0].str);
		f->async = true;
		f->req = mt_store_vanished(s->ps->port, s->selected.mbox, changed_since,
					   vanished_done, f);
		return;
	}
	if (f->sets_seen && !s->selected.read_only) {
		/* RFC 9051 6.4.5: \Seen set, then the FETCH says so. */
		uint32_t *uids = mt_xmalloc((f->count + 1) * sizeof(*uids));
		unsigned int n = 0;
		for (unsigned int i = 0; i < f->count; i++) {
			const struct mt_store_msg *m = imap_view_msg(s, f->positions[i]);
			if ((m->flags & MT_STORE_FLAG_SEEN) == 0)
				uids[n++] = m->uid;
		}
		if (n > 0) {
			bool has_flags = false;
			for (unsigned int i = 0; i < f->item_count; i++)
				has_flags |= f->items[i].kind == ITEM_FLAGS;
			if (!has_flags && f->item_count < ITEMS_MAX)
				f->items[f->item_count++] = (struct fetch_item){ .kind = ITEM_FLAGS };
			const struct mt_store_flag_args args = {
				.op = MT_STORE_FLAGS_ADD, .flags = MT_STORE_FLAG_SEEN,
				.uids = uids, .uid_count = n,
			};
			s->store_req = mt_store_flags_store(s->ps->port, s->selected.mbox,
							    &args, seen_done, f);
			f->async = true;
			free(uids);
			return;
		}
		free(uids);
	}
	fetch_run(f);
}
