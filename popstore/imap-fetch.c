/* imap-fetch.c — mailtier-popstore's IMAP FETCH and UID FETCH: UID, FLAGS,
 * INTERNALDATE, RFC822.SIZE, the FAST macro, BODY[section]<partial> and
 * BODY.PEEK with the sections HEADER, TEXT, HEADER.FIELDS (...) and
 * HEADER.FIELDS.NOT (...) and the whole message, and IMAP4rev1's RFC822,
 * RFC822.HEADER and RFC822.TEXT. A body is streamed from the store in
 * 64 KiB reads, the next asked for only when the output has drained below
 * IMAP_OUTPUT_LOW, so a FETCH of large messages costs a few reads of
 * memory however slowly the client reads; a non-PEEK body section sets
 * \Seen first (one durable STORE) and the FETCH reports the new FLAGS.
 *
 * ENVELOPE, BODYSTRUCTURE, BODY, the part sections (BODY[1.2],
 * BODY[3.HEADER], BODY[3.TEXT], BODY[3.HEADER.FIELDS (...)], BODY[2.MIME])
 * and BINARY[part] / BINARY.SIZE[part] (RFC 3516) come from the message's
 * structure record, made by the store at delivery (store-structure.c,
 * lib-mail's imap-bodystructure): one small read per message, the body
 * never parsed again; a part's octets are then streamed as a whole
 * message's are. BINARY of a base64 or quoted-printable part is decoded in
 * memory (parts of at most BINARY_MAX octets: a larger one ends the FETCH
 * NO [LIMIT], its BODY[part] still served); an unknown encoding ends it
 * NO [UNKNOWN-CTE]. A part that is not there is NIL.
 *
 * The header is the message's lines up to the first empty one (the
 * store's own Return-Path:/Received: lines included); it is found by
 * reading the message's start, at most HEAD_MAX octets (a longer header is
 * taken as ending there).
 *
 * Trust boundary: the client's items (checked here: names, sections,
 * field lists of at most FIELDS_MAX names, partial ranges) and sets
 * (imap-message.c). The message bytes are the store's, sent as literals
 * of their exact size; they may hold NULs (an APPENDed literal8, a
 * "binary" part), which no literal may carry: in BODY[] and RFC822 a NUL
 * goes out as 0x80, the size unchanged (Dovecot's choice; imap-write.h),
 * in BINARY[] the literal is a literal8 when the octets hold a NUL (a
 * streamed BINARY part is read once first to know).
 *
 * RFC 9051 6.4.5 (FETCH and its items, section part numbers, \Seen on
 * BODY[] and BINARY[]), 7.5.2 (the FETCH response: ENVELOPE, BODY,
 * BODYSTRUCTURE, BODY[section]<origin>, BINARY, literals and literal8),
 * 4.3 and 4.3.1 (a NUL only in a BINARY literal8), 6.4.9 (UID FETCH
 * includes UID), 7.1 (UNKNOWN-CTE, EXPUNGEISSUED); RFC 3516 (BINARY;
 * 4.2-4.3 literal8 only for NULs); RFC 2683 3.2.1.5 (sets may be long). */
#include "imap-session.h"
#include "alloc.h"
#include "imap-bodystructure.h"
#include "imap-date.h"
#include "imap-write.h"
#include "mime-decode.h"

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
#define BINARY_MAX (8 * 1024 * 1024)

enum item_kind { ITEM_UID, ITEM_FLAGS, ITEM_INTERNALDATE, ITEM_SIZE, ITEM_MODSEQ,
		 ITEM_BODY, ITEM_BINARY_SIZE, ITEM_ENVELOPE, ITEM_BODYSTRUCTURE,
		 ITEM_BODY_BASIC };
enum section { SEC_ALL, SEC_HEADER, SEC_TEXT, SEC_FIELDS, SEC_FIELDS_NOT, SEC_MIME };

struct fetch_item {
	enum item_kind kind;
	enum section section;
	bool peek;
	bool partial;
	uint64_t origin, length;
	char *fields[FIELDS_MAX];
	unsigned int field_count;
	uint32_t path[MT_MIME_DEPTH_MAX];	/* part numbers: "3.1" */
	unsigned int depth;
	bool binary;		/* BINARY[]: decoded */
	char *label;		/* as the response names it: "BODY[HEADER]" */
};

struct imap_fetch {
	struct imap_session *s;
	char tag[MT_IMAP_TAG_MAX + 1];
	bool uid;
	struct fetch_item items[ITEMS_MAX];
	unsigned int item_count;
	bool needs_head, sets_seen, needs_structure;
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
	bool stream_binary;		/* as a literal8: its octets as they are */
	bool scanning;			/* BINARY: read once for a NUL first */
	uint64_t scan_from, scan_left;
	struct mt_store_req *req;	/* a read in flight */
	bool async;			/* it waited once: resume the session */
	char *uid_set;			/* VANISHED: the command's UID set */
	struct mt_buf prefix;		/* a literal's " BODY[] {n}" not yet sent */
	bool prefix_pending;
	bool expunge_issued;		/* a message went away meanwhile */
	/* This message's structure record (needs_structure). */
	struct mt_buf structure;
	struct mt_mime_record record;
	uint64_t shift;			/* its offsets + shift: the message's */
	bool structure_done;
	/* One item's part octets gathered (a part header's fields, a part
	 * BINARY decodes). */
	struct mt_buf gather;
	uint64_t gather_from, gather_to;
	bool gather_done;
	const char *failure;		/* NO code ending the FETCH: "UNKNOWN-CTE" */
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

/* Part numbers ("1.2.") at the start of a section: into item, *p past
 * them and their last '.'. */
static bool part_parse(const char **p, struct fetch_item *item)
{
	const char *s = *p;
	while (*s >= '1' && *s <= '9') {
		char *end;
		unsigned long n = strtoul(s, &end, 10);
		if (n > UINT32_MAX || item->depth == MT_MIME_DEPTH_MAX)
			return false;
		item->path[item->depth++] = (uint32_t)n;
		s = end;
		if (*s == '\0')
			break;
		if (*s != '.' || s[1] == '\0')
			return false;
		s++;
	}
	*p = s;
	return true;
}

/* A BODY[...], BODY.PEEK[...], BINARY[...], BINARY.PEEK[...] or
 * BINARY.SIZE[...] atom. */
static bool body_parse(const char *text, struct fetch_item *item)
{
	static const struct {
		const char *prefix;
		bool peek, binary, size;
	} forms[] = {
		{ "BODY.PEEK[", true, false, false }, { "BODY[", false, false, false },
		{ "BINARY.PEEK[", true, true, false }, { "BINARY.SIZE[", true, true, true },
		{ "BINARY[", false, true, false },
	};
	const char *p = NULL, *name = NULL;
	bool size_only = false;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]) && p == NULL; i++) {
		size_t n = strlen(forms[i].prefix);
		if (strncasecmp(text, forms[i].prefix, n) == 0) {
			p = text + n;
			item->peek = forms[i].peek;
			item->binary = forms[i].binary;
			size_only = forms[i].size;
			name = forms[i].size ? "BINARY.SIZE" : forms[i].binary ? "BINARY" : "BODY";
		}
	}
	if (p == NULL)
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
	const char *t = section;
	if (!part_parse(&t, item))
		return false;
	item->kind = size_only ? ITEM_BINARY_SIZE : ITEM_BODY;
	if (*t == '\0')
		item->section = SEC_ALL;
	else if (item->binary)
		return false;	/* RFC 3516: part numbers only */
	else if (strcasecmp(t, "HEADER") == 0)
		item->section = SEC_HEADER;
	else if (strcasecmp(t, "TEXT") == 0)
		item->section = SEC_TEXT;
	else if (strcasecmp(t, "MIME") == 0 && item->depth > 0)
		item->section = SEC_MIME;
	else if (strncasecmp(t, "HEADER.FIELDS.NOT", 17) == 0 &&
		 (t[17] == ' ' || t[17] == '(')) {
		item->section = SEC_FIELDS_NOT;
		if (!fields_parse(t + 17, item))
			return false;
	} else if (strncasecmp(t, "HEADER.FIELDS", 13) == 0 &&
		   (t[13] == ' ' || t[13] == '(')) {
		item->section = SEC_FIELDS;
		if (!fields_parse(t + 13, item))
			return false;
	} else
		return false;
	if (size_only ? close[1] != '\0' : !partial_parse(close + 1, item))
		return false;
	/* The response names the section as asked, without PEEK, with the
	 * partial's origin only (RFC 9051 7.5.2). */
	struct mt_buf label = MT_BUF_INIT;
	mt_buf_appendf(&label, "%s[%s]", name, section);
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
	else if (strcasecmp(t, "ENVELOPE") == 0)
		item->kind = ITEM_ENVELOPE;
	else if (strcasecmp(t, "BODYSTRUCTURE") == 0)
		item->kind = ITEM_BODYSTRUCTURE;
	else if (strcasecmp(t, "BODY") == 0)
		item->kind = ITEM_BODY_BASIC;
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
		f->needs_head |= item->section != SEC_ALL && item->depth == 0;
		f->sets_seen |= !item->peek;
	}
	f->needs_structure |= item->kind == ITEM_ENVELOPE || item->kind == ITEM_BODYSTRUCTURE ||
		item->kind == ITEM_BODY_BASIC ||
		((item->kind == ITEM_BODY || item->kind == ITEM_BINARY_SIZE) && item->depth > 0);
	return true;
}

/* FETCH's item argument: a macro, an item, or a list of items. */
static bool items_parse(struct imap_fetch *f, const struct mt_imap_arg *a)
{
	/* RFC 9051 6.4.5: FAST, ALL, FULL */
	static const char *const macro[] = { "FLAGS", "INTERNALDATE", "RFC822.SIZE",
					     "ENVELOPE", "BODY" };
	size_t n = mt_imap_arg_atom_is(a, "FAST") ? 3 : mt_imap_arg_atom_is(a, "ALL") ? 4 :
		mt_imap_arg_atom_is(a, "FULL") ? 5 : 0;
	if (n > 0) {
		for (size_t i = 0; i < n; i++) {
			const struct mt_imap_arg item = {
				.type = MT_IMAP_ARG_ATOM, .str = macro[i], .len = strlen(macro[i]),
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
	mt_buf_free(&f->structure);
	mt_buf_free(&f->gather);
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

/* HEADER.FIELDS (.NOT): the fields of the header in p[0..end) (with
 * their continuation lines) that are (not) listed, and the empty line. */
static void fields_filter(const char *p, size_t end, const struct fetch_item *item,
			  struct mt_buf *out)
{
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

/* The current message was expunged elsewhere before any of its items
 * were promised: the rest of them are left out and the FETCH ends NO
 * [EXPUNGEISSUED]. */
static void message_gone(struct imap_fetch *f)
{
	f->expunge_issued = true;
	f->item = f->item_count;
}

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

/* A read the session cannot go on from once the FETCH line is open (a
 * literal's size promised, or items already written): logged, and the
 * session ends. */
static void read_failed(struct imap_fetch *f, enum mt_store_status status, const char *error)
{
	struct imap_session *s = f->s;
	mt_slog(MT_LOG_WARNING, &s->log, "imap fetch read failed: %s: %s",
		mt_store_status_name(status), error);
	imap_fetch_free(s);
	imap_close_after(s, MT_OUTCOME_ERROR, "fetch-read-failed");
	if (status == MT_STORE_FATAL)
		popstore_store_fatal(s->ps, error);
}

/* A streamed literal's announcement, once known: literal8 for a BINARY
 * item whose octets hold a NUL, else an ordinary literal. */
static void scan_end(struct imap_fetch *f)
{
	f->scanning = false;
	mt_imap_write_literal_prefix(&f->prefix, f->send_left, f->stream_binary);
}

static void scan_read_done(struct mt_store_req *req, void *context)
{
	struct imap_fetch *f = context;
	f->req = NULL;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	size_t len;
	const void *data = mt_store_req_data(req, &len);
	if (status == MT_STORE_NOT_FOUND) {
		/* Expunged elsewhere; nothing of the item promised yet. */
		f->scanning = f->streaming = f->prefix_pending = false;
		message_gone(f);
		fetch_run(f);
		return;
	}
	if (status != MT_STORE_OK) {
		read_failed(f, status, error);
		return;
	}
	if (len > f->scan_left)
		len = (size_t)f->scan_left;
	f->stream_binary = memchr(data, '\0', len) != NULL;
	f->scan_from += len;
	f->scan_left -= len;
	if (f->stream_binary || f->scan_left == 0 || len == 0)
		scan_end(f);
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
		message_gone(f);
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
		read_failed(f, status, status != MT_STORE_OK ? error : "short");
		return;
	}
	if (len > f->send_left)
		len = (size_t)f->send_left;
	if (f->stream_binary || memchr(data, '\0', len) == NULL)
		evbuffer_add(imap_output(s), data, len);
	else {
		/* A literal's octets are CHAR8, %x01-FF (RFC 9051 4.3, 9): a
		 * NUL goes out as 0x80 (imap-write.h says why). */
		struct mt_buf octets = MT_BUF_INIT;
		mt_imap_write_literal_data(&octets, data, len);
		evbuffer_add(imap_output(s), octets.data, octets.len);
		mt_buf_free(&octets);
	}
	f->send_from += len;
	f->send_left -= len;
	if (f->send_left == 0)
		f->streaming = false;
	fetch_run(f);
}

/* A message's read failed in a way the FETCH cannot go on from. */
static void fetch_failed(struct imap_fetch *f, enum mt_store_status status, const char *error)
{
	struct imap_session *s = f->s;
	if (f->line_open) {
		/* Half a "* n FETCH (" response is out: no tagged reply (nor a
		 * BYE) can follow it and be read as one; the session ends. */
		mt_slog(MT_LOG_WARNING, &s->log, "imap fetch failed mid-response: %s: %s",
			mt_store_status_name(status), error);
		imap_fetch_free(s);
		imap_close_after(s, MT_OUTCOME_ERROR, "fetch-failed");
		if (status == MT_STORE_FATAL)
			popstore_store_fatal(s->ps, error);
		return;
	}
	imap_fetch_free(s);
	imap_store_failed(s, s->tag, status, error);
	imap_resume(s);
}

static void structure_read_done(struct mt_store_req *req, void *context)
{
	struct imap_fetch *f = context;
	f->req = NULL;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	size_t len = 0;
	const void *data = mt_store_req_structure(req, &len, &f->shift);
	mt_buf_reset(&f->structure);
	if (status == MT_STORE_NOT_FOUND) {
		message_gone(f);
	} else if (status != MT_STORE_OK) {
		fetch_failed(f, status, error);
		return;
	} else {
		mt_buf_append(&f->structure, data, len);
		if (!mt_mime_record_read(&f->record, f->structure.data, f->structure.len)) {
			fetch_failed(f, MT_STORE_FATAL, "a damaged structure record");
			return;
		}
	}
	f->structure_done = true;
	fetch_run(f);
}

static void gather_read_done(struct mt_store_req *req, void *context)
{
	struct imap_fetch *f = context;
	f->req = NULL;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	size_t len;
	const void *data = mt_store_req_data(req, &len);
	if (status == MT_STORE_NOT_FOUND) {
		message_gone(f);
		f->gather_done = true;
		fetch_run(f);
		return;
	}
	if (status != MT_STORE_OK) {
		fetch_failed(f, status, error);
		return;
	}
	mt_buf_append(&f->gather, data, len);
	if (len == 0 || f->gather_from + f->gather.len >= f->gather_to)
		f->gather_done = true;
	fetch_run(f);
}

/* The octets of the message an item with part numbers names, and the
 * part's transfer encoding: false if the part (or, for HEADER, TEXT and
 * HEADER.FIELDS, its encapsulated message) is not there. */
static bool part_range(const struct imap_fetch *f, const struct fetch_item *item,
		       const struct mt_store_msg *m, uint64_t *from_r, uint64_t *to_r,
		       enum mt_mime_encoding *encoding_r)
{
	struct mt_mime_part part, message;
	if (!mt_mime_record_find(&f->record, item->path, item->depth, &part))
		return false;
	*encoding_r = part.encoding;
	uint64_t from, to;
	const struct mt_mime_part *header = &part;
	switch (item->section) {
	case SEC_ALL:
		from = part.body_offset;
		to = part.end_offset;
		break;
	case SEC_MIME:
		from = part.header_offset;
		to = part.body_offset;
		break;
	default:
		if (!mt_mime_record_message(&f->record, &part, &message))
			return false;
		header = &message;
		from = item->section == SEC_TEXT ? message.body_offset : message.header_offset;
		to = item->section == SEC_TEXT ? message.end_offset : message.body_offset;
		break;
	}
	/* The top header begins the message (the store's own lines first). */
	from = header->index == 0 && from == header->header_offset ? 0 : from + f->shift;
	to += f->shift;
	*to_r = to > m->size ? m->size : to;
	*from_r = from > *to_r ? *to_r : from;
	return true;
}

/* What an item needs gathered in memory first: a part header's fields, or
 * a part BINARY decodes. */
static bool item_gathers(const struct fetch_item *item, const struct imap_fetch *f,
			 const struct mt_store_msg *m, uint64_t *from_r, uint64_t *to_r)
{
	enum mt_mime_encoding encoding;
	if (item->depth == 0 || (item->kind != ITEM_BODY && item->kind != ITEM_BINARY_SIZE) ||
	    !part_range(f, item, m, from_r, to_r, &encoding))
		return false;
	if (item->section == SEC_FIELDS || item->section == SEC_FIELDS_NOT) {
		if (*to_r - *from_r > HEAD_MAX)
			*to_r = *from_r + HEAD_MAX;
		return true;
	}
	return item->binary && (encoding == MT_MIME_ENC_BASE64 ||
				encoding == MT_MIME_ENC_QUOTED_PRINTABLE) &&
		*to_r - *from_r <= BINARY_MAX;
}

/* data[0..n) after the label: for BINARY a literal8 when it holds a NUL
 * (RFC 3516 4.3: a string when it holds none), else a literal, a NUL in it
 * sent as 0x80 (RFC 9051 4.3.1: no NUL outside a BINARY literal8;
 * imap-write.h). */
static void literal_write(struct imap_session *s, const char *sp, const char *label,
			  const char *data, size_t n, bool binary)
{
	struct mt_buf out = MT_BUF_INIT;
	mt_buf_appendf(&out, "%s%s ", sp, label);
	mt_imap_write_literal(&out, data, n, binary);
	evbuffer_add(imap_output(s), out.data, out.len);
	mt_buf_free(&out);
}

/* n octets of the message from offset from to stream after the label,
 * the literal's size promised at the first read that finds the message
 * still there. A BINARY item's octets are read once before (stopping at
 * a NUL) to know whether they need a literal8: the store keeps no NUL
 * mark, and a literal8 for NUL-free octets is what RFC 3516 4.3 says a
 * server SHOULD NOT send. Others go out as a literal, NULs as 0x80. */
static void stream_start(struct imap_fetch *f, const char *sp, const char *label,
			 uint64_t from, uint64_t n, bool binary)
{
	mt_buf_reset(&f->prefix);
	mt_buf_appendf(&f->prefix, "%s%s ", sp, label);
	f->prefix_pending = true;
	f->send_from = from;
	f->send_left = n;
	f->streaming = true;
	f->stream_binary = false;
	f->scanning = binary;
	f->scan_from = from;
	f->scan_left = n;
	if (!binary)
		scan_end(f);
}

/* An item with part numbers (or a part BINARY): written now (a literal,
 * NIL, a size), or set up to stream (f->send_*, the literal's size promised
 * at the first read), or left out with f->failure set. */
static void part_write(struct imap_fetch *f, const struct fetch_item *item,
		       const struct mt_store_msg *m, const char *sp)
{
	struct imap_session *s = f->s;
	uint64_t from, to;
	enum mt_mime_encoding encoding;
	if (!part_range(f, item, m, &from, &to, &encoding)) {
		if (item->kind == ITEM_BINARY_SIZE)
			evbuffer_add_printf(imap_output(s), "%s%s 0", sp, item->label);
		else
			evbuffer_add_printf(imap_output(s), "%s%s NIL", sp, item->label);
		return;
	}
	struct mt_buf decoded = MT_BUF_INIT;
	const char *data = NULL;
	uint64_t size = to - from;
	if (item->section == SEC_FIELDS || item->section == SEC_FIELDS_NOT) {
		fields_filter(f->gather.data != NULL ? f->gather.data : "", f->gather.len, item,
			      &decoded);
		data = decoded.data;
		size = decoded.len;
	} else if (item->binary && encoding == MT_MIME_ENC_UNKNOWN) {
		f->failure = "UNKNOWN-CTE";
		return;
	} else if (item->binary && encoding != MT_MIME_ENC_IDENTITY) {
		if (to - from > BINARY_MAX) {
			f->failure = "LIMIT";
			return;
		}
		const char *in = f->gather.data != NULL ? f->gather.data : "";
		if (encoding == MT_MIME_ENC_BASE64)
			mt_mime_decode_base64(&decoded, in, f->gather.len);
		else
			mt_mime_decode_qp(&decoded, in, f->gather.len);
		data = decoded.data != NULL ? decoded.data : "";
		size = decoded.len;
	}
	if (item->kind == ITEM_BINARY_SIZE) {
		evbuffer_add_printf(imap_output(s), "%s%s %" PRIu64, sp, item->label, size);
		mt_buf_free(&decoded);
		return;
	}
	uint64_t start = 0, n = size;
	if (item->partial) {
		start = item->origin < size ? item->origin : size;
		n = size - start < item->length ? size - start : item->length;
	}
	if (data != NULL || n == 0) {
		literal_write(s, sp, item->label, data != NULL ? data + start : "", (size_t)n,
			      item->binary);
		mt_buf_free(&decoded);
		return;
	}
	/* Streamed as a whole message is. */
	stream_start(f, sp, item->label, from + start, n, item->binary);
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
	case ITEM_ENVELOPE:
		mt_buf_appendf(&out, "%sENVELOPE ", sp);
		mt_buf_append(&out, f->record.envelope, f->record.envelope_len);
		break;
	case ITEM_BODYSTRUCTURE:
		mt_buf_appendf(&out, "%sBODYSTRUCTURE ", sp);
		mt_buf_append(&out, f->record.bodystructure, f->record.bodystructure_len);
		break;
	case ITEM_BODY_BASIC:
		mt_buf_appendf(&out, "%sBODY ", sp);
		mt_buf_append(&out, f->record.body, f->record.body_len);
		break;
	case ITEM_BINARY_SIZE:
		if (item->depth > 0) {
			part_write(f, item, m, sp);
			return true;
		}
		mt_buf_appendf(&out, "%s%s %" PRIu64, sp, item->label, m->size);
		break;
	case ITEM_BODY: {
		if (item->depth > 0) {
			part_write(f, item, m, sp);
			return true;
		}
		uint64_t base = 0, size = m->size;
		struct mt_buf filtered = MT_BUF_INIT;
		const bool fields = item->section == SEC_FIELDS ||
			item->section == SEC_FIELDS_NOT;
		if (item->section == SEC_HEADER)
			size = f->head_end;
		else if (item->section == SEC_TEXT) {
			base = f->head_end;
			size = m->size > f->head_end ? m->size - f->head_end : 0;
		} else if (fields) {
			fields_filter(f->head.data != NULL ? f->head.data : "",
				      (size_t)f->head_end > f->head.len ? f->head.len :
				      (size_t)f->head_end, item, &filtered);
			size = filtered.len;
		}
		uint64_t from = 0, n = size;
		if (item->partial) {
			from = item->origin < size ? item->origin : size;
			n = size - from < item->length ? size - from : item->length;
		}
		if (fields || n == 0)
			literal_write(s, sp, item->label, filtered.data != NULL ?
				      filtered.data + from : "", (size_t)n, item->binary);
		else
			stream_start(f, sp, item->label, base + from, n, item->binary);
		mt_buf_free(&filtered);
		mt_buf_free(&out);
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
		if (f->scanning) {
			uint64_t want = f->scan_left < READ_CHUNK ? f->scan_left : READ_CHUNK;
			f->req = mt_store_read(s->ps->port, s->selected.mbox, index,
					       f->scan_from, (size_t)want, scan_read_done, f);
			f->async = true;
			return;
		}
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
		if (f->needs_structure && !f->structure_done) {
			f->req = mt_store_structure(s->ps->port, s->selected.mbox, index,
						    structure_read_done, f);
			f->async = true;
			return;
		}
		uint64_t from, to;
		if (f->item < f->item_count && !f->gather_done &&
		    item_gathers(&f->items[f->item], f, m, &from, &to)) {
			if (f->gather.len == 0 && f->gather_to == 0) {
				f->gather_from = from;
				f->gather_to = to;
			}
			uint64_t at = f->gather_from + f->gather.len;
			if (at < f->gather_to) {
				uint64_t want = f->gather_to - at;
				f->req = mt_store_read(s->ps->port, s->selected.mbox, index, at,
						       want < READ_CHUNK ? (size_t)want : READ_CHUNK,
						       gather_read_done, f);
				f->async = true;
				return;
			}
			f->gather_done = true;
		}
		if (!f->line_open) {
			evbuffer_add_printf(imap_output(s), "* %u FETCH (", position + 1);
			f->line_open = true;
			f->item = 0;
		}
		if (f->item < f->item_count) {
			(void)item_write(f, &f->items[f->item], m, index);
			f->item++;
			mt_buf_reset(&f->gather);
			f->gather_to = 0;
			f->gather_done = false;
			continue;
		}
		evbuffer_add(imap_output(s), ")\r\n", 3);
		f->line_open = false;
		f->head_done = false;
		f->structure_done = false;
		f->pos++;
	}
	char tag[MT_IMAP_TAG_MAX + 1];
	snprintf(tag, sizeof(tag), "%s", f->tag);
	const bool uid = f->uid, async = f->async, issued = f->expunge_issued;
	const char *failure = f->failure;
	imap_fetch_free(s);
	if (failure != NULL && strcmp(failure, "UNKNOWN-CTE") == 0)
		imap_tagged(s, tag, "NO [UNKNOWN-CTE] A part's Content-Transfer-Encoding "
			    "is not one BINARY can decode.");
	else if (failure != NULL)
		imap_tagged(s, tag, "NO [LIMIT] BINARY decodes parts of at most %u octets: "
			    "fetch BODY[part] instead.", BINARY_MAX);
	else if (issued)
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
		imap_error(s, cmd->tag, "BAD FETCH: unknown item or invalid section.");
		return;
	}
	if (uid || s->qresync) {
		/* RFC 9051 6.4.9: UID FETCH answers UID too; with QRESYNC
		 * enabled every FETCH response does (RFC 7162 3.2.4), a
		 * FETCH that sets \Seen among them. */
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
		/* RFC 7162 3.1: once CONDSTORE is on, flags go with their
		 * MODSEQ (asked for, set by this FETCH, or CHANGEDSINCE's). */
		bool has_modseq = false, has_flags = false;
		for (unsigned int i = 0; i < f->item_count; i++) {
			has_modseq |= f->items[i].kind == ITEM_MODSEQ;
			has_flags |= f->items[i].kind == ITEM_FLAGS;
		}
		if (!has_modseq && f->item_count < ITEMS_MAX && (cmd->count == 3 ||
		    f->sets_seen || has_flags))
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
