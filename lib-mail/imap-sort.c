/* imap-sort.c — SORT's program, keys and order, the base subject and the
 * i;unicode-casemap collation (see imap-sort.h for what is implemented).
 *
 * Trust boundary: the client's sort program; ENVELOPE strings carry any
 * sender's header values, read within the record's length.
 * RFCs: 5256 2.1 (base subject), 3 (SORT keys), 4 (the SORT response);
 * 5267 3 (ESORT); 5957 (DISPLAYFROM, DISPLAYTO); 5051 (i;unicode-casemap);
 * 5322 3.3 (date-time); 2047 (encoded words). */
#include "imap-sort.h"
#include "alloc.h"
#include "imap-date.h"
#include "imap-search.h"
#include "mime-decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const sort_key_names[MT_IMAP_SORT_KEY_COUNT] = {
	[MT_IMAP_SORT_ARRIVAL] = "ARRIVAL", [MT_IMAP_SORT_CC] = "CC",
	[MT_IMAP_SORT_DATE] = "DATE", [MT_IMAP_SORT_FROM] = "FROM",
	[MT_IMAP_SORT_SIZE] = "SIZE", [MT_IMAP_SORT_SUBJECT] = "SUBJECT",
	[MT_IMAP_SORT_TO] = "TO", [MT_IMAP_SORT_DISPLAYFROM] = "DISPLAYFROM",
	[MT_IMAP_SORT_DISPLAYTO] = "DISPLAYTO",
};

bool mt_imap_sort_parse(struct mt_imap_sort_program *program,
			const struct mt_imap_arg *list, const char **error_r)
{
	memset(program, 0, sizeof(*program));
	if (list->type != MT_IMAP_ARG_LIST || list->len == 0) {
		*error_r = "the sort criteria are a parenthesised list";
		return false;
	}
	bool reverse = false;
	for (size_t i = 0; i < list->len; i++) {
		const struct mt_imap_arg *a = &list->list[i];
		if (!reverse && mt_imap_arg_atom_is(a, "REVERSE")) {
			reverse = true;
			continue;
		}
		unsigned int k = 0;
		while (k < MT_IMAP_SORT_KEY_COUNT && !mt_imap_arg_atom_is(a, sort_key_names[k]))
			k++;
		if (k == MT_IMAP_SORT_KEY_COUNT) {
			*error_r = "unknown sort key";
			return false;
		}
		if (program->count == MT_IMAP_SORT_CRITERIA_MAX) {
			*error_r = "too many sort criteria";
			return false;
		}
		program->criteria[program->count].key = k;
		program->criteria[program->count++].reverse = reverse;
		program->keys |= 1u << k;
		reverse = false;
	}
	if (reverse) {
		*error_r = "REVERSE without a key";
		return false;
	}
	return true;
}

/* ENVELOPE reading (RFC 9051 7.5.2's grammar, as imap-bodystructure writes it). */

struct env_reader {
	const char *p;
	size_t len, pos;
	struct mt_buf *text;
};

static void env_space(struct env_reader *r)
{
	while (r->pos < r->len && r->p[r->pos] == ' ')
		r->pos++;
}

/* An nstring into r->text; false if none at pos. */
static bool env_nstring(struct env_reader *r, struct mt_imap_envelope_str *out)
{
	env_space(r);
	*out = (struct mt_imap_envelope_str){ .off = r->text->len, .nil = true };
	if (r->len - r->pos >= 3 && strncasecmp(r->p + r->pos, "NIL", 3) == 0) {
		r->pos += 3;
		return true;
	}
	out->nil = false;
	if (r->pos < r->len && r->p[r->pos] == '"') {
		for (r->pos++; r->pos < r->len && r->p[r->pos] != '"'; r->pos++) {
			if (r->p[r->pos] == '\\' && r->pos + 1 < r->len)
				r->pos++;
			mt_buf_append_char(r->text, r->p[r->pos]);
		}
		if (r->pos >= r->len)
			return false;
		r->pos++;
	} else if (r->pos < r->len && (r->p[r->pos] == '{' ||
				       (r->p[r->pos] == '~' && r->pos + 1 < r->len &&
					r->p[r->pos + 1] == '{'))) {
		if (r->p[r->pos] == '~')
			r->pos++;	/* a literal8 */
		uint64_t n = 0;
		for (r->pos++; r->pos < r->len && r->p[r->pos] >= '0' && r->p[r->pos] <= '9'; r->pos++)
			if ((n = n * 10 + (uint64_t)(r->p[r->pos] - '0')) > r->len)
				return false;
		if (r->len - r->pos < 3 || memcmp(r->p + r->pos, "}\r\n", 3) != 0)
			return false;
		r->pos += 3;
		if (r->len - r->pos < n)
			return false;
		mt_buf_append(r->text, r->p + r->pos, (size_t)n);
		r->pos += (size_t)n;
	} else
		return false;
	out->len = r->text->len - out->off;
	return true;
}

static bool env_char(struct env_reader *r, char c)
{
	env_space(r);
	if (r->pos < r->len && r->p[r->pos] == c) {
		r->pos++;
		return true;
	}
	return false;
}

/* An address list (or NIL): its first address kept. */
static bool env_addresses(struct env_reader *r, struct mt_imap_envelope_addr *first)
{
	struct mt_imap_envelope_str none = { .nil = true };
	*first = (struct mt_imap_envelope_addr){ none, none, none };
	if (!env_char(r, '(')) {
		struct mt_imap_envelope_str nil;
		return env_nstring(r, &nil) && nil.nil;
	}
	for (unsigned int n = 0; !env_char(r, ')'); n++) {
		struct mt_imap_envelope_addr a;
		struct mt_imap_envelope_str adl;
		if (!env_char(r, '(') || !env_nstring(r, &a.name) || !env_nstring(r, &adl) ||
		    !env_nstring(r, &a.mailbox) || !env_nstring(r, &a.host) || !env_char(r, ')'))
			return false;
		if (n == 0)
			*first = a;
	}
	return true;
}

bool mt_imap_envelope_read(struct mt_imap_envelope *e, const char *env, size_t len)
{
	mt_buf_reset(&e->text);
	struct env_reader r = { .p = env, .len = len, .text = &e->text };
	struct mt_imap_envelope_addr skip;	/* sender, reply-to, bcc */
	return env_char(&r, '(') && env_nstring(&r, &e->date) && env_nstring(&r, &e->subject) &&
	       env_addresses(&r, &e->from) && env_addresses(&r, &skip) &&
	       env_addresses(&r, &skip) && env_addresses(&r, &e->to) &&
	       env_addresses(&r, &e->cc) && env_addresses(&r, &skip) &&
	       env_nstring(&r, &e->in_reply_to) && env_nstring(&r, &e->message_id) &&
	       env_char(&r, ')');
}

void mt_imap_envelope_free(struct mt_imap_envelope *e)
{
	mt_buf_free(&e->text);
}

const char *mt_imap_envelope_get(const struct mt_imap_envelope *e,
				 const struct mt_imap_envelope_str *str, size_t *len_r)
{
	*len_r = str->nil ? 0 : str->len;
	if (str->nil || e->text.data == NULL)
		return "";
	return e->text.data + str->off;
}

/* RFC 5322 3.3 date-time, with the obsolete zones of 4.3. */

static const char *skip_cfws(const char *p, const char *end)
{
	int depth = 0;
	for (; p < end; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth > 0)
			depth--;
		else if (depth == 0 && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			break;
	}
	return p;
}

static bool read_number(const char **p, const char *end, unsigned int digits_max, int *n_r)
{
	unsigned int digits = 0;
	int n = 0;
	while (*p < end && **p >= '0' && **p <= '9' && digits < digits_max) {
		n = n * 10 + (**p - '0');
		(*p)++;
		digits++;
	}
	*n_r = n;
	return digits > 0;
}

static int zone_minutes(const char *p, const char *end)
{
	static const struct { const char *name; int minutes; } zones[] = {
		{ "UT", 0 }, { "GMT", 0 }, { "Z", 0 }, { "EST", -300 }, { "EDT", -240 },
		{ "CST", -360 }, { "CDT", -300 }, { "MST", -420 }, { "MDT", -360 },
		{ "PST", -480 }, { "PDT", -420 },
	};
	if (p < end && (*p == '+' || *p == '-')) {
		const char *q = p + 1;
		int hhmm;
		if (!read_number(&q, end, 4, &hhmm) || q - p != 5)
			return 0;
		int m = hhmm / 100 * 60 + hhmm % 100;
		return *p == '-' ? -m : m;
	}
	size_t n = 0;
	while (p + n < end && ((p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= 'a' && p[n] <= 'z')))
		n++;
	for (size_t i = 0; i < sizeof(zones) / sizeof(zones[0]); i++)
		if (strlen(zones[i].name) == n && strncasecmp(p, zones[i].name, n) == 0)
			return zones[i].minutes;
	return 0;	/* RFC 5322 4.3: others are "-0000" */
}

bool mt_imap_sort_date_parse(const char *text, size_t len, int64_t *time_r)
{
	const char *p = skip_cfws(text, text + len), *end = text + len;
	const char *comma = memchr(p, ',', (size_t)(end - p));
	if (comma != NULL && comma - p <= 9)
		p = skip_cfws(comma + 1, end);
	int day, year, hour, minute, second = 0;
	if (!read_number(&p, end, 2, &day))
		return false;
	p = skip_cfws(p, end);
	if (end - p < 3)
		return false;
	char mon[4] = { p[0], p[1], p[2], 0 };
	p = skip_cfws(p + 3, end);
	const char *y = p;
	if (!read_number(&p, end, 4, &year))
		return false;
	if (p - y == 2)
		year += year < 50 ? 2000 : 1900;	/* RFC 5322 4.3 */
	else if (p - y == 3)
		year += 1900;
	p = skip_cfws(p, end);
	if (!read_number(&p, end, 2, &hour) || p >= end || *p++ != ':' ||
	    !read_number(&p, end, 2, &minute))
		return false;
	if (p < end && *p == ':') {
		p++;
		if (!read_number(&p, end, 2, &second))
			return false;
	}
	if (hour > 23 || minute > 59 || second > 60)
		return false;
	char dmy[24];
	int n = snprintf(dmy, sizeof(dmy), "%d-%s-%04d", day, mon, year);
	int32_t days;
	if (n <= 0 || (size_t)n >= sizeof(dmy) || !mt_imap_date_parse(dmy, (size_t)n, &days))
		return false;
	p = skip_cfws(p, end);
	*time_r = (int64_t)days * 86400 + hour * 3600 + minute * 60 + second -
		  (int64_t)zone_minutes(p, end) * 60;
	return true;
}

/* RFC 2047 encoded words. */

static void append_utf8(struct mt_buf *out, uint32_t c)
{
	if (c < 0x80) {
		mt_buf_append_char(out, (char)c);
	} else if (c < 0x800) {
		mt_buf_append_char(out, (char)(0xc0 | c >> 6));
		mt_buf_append_char(out, (char)(0x80 | (c & 0x3f)));
	} else if (c < 0x10000) {
		mt_buf_append_char(out, (char)(0xe0 | c >> 12));
		mt_buf_append_char(out, (char)(0x80 | (c >> 6 & 0x3f)));
		mt_buf_append_char(out, (char)(0x80 | (c & 0x3f)));
	} else {
		mt_buf_append_char(out, (char)(0xf0 | c >> 18));
		mt_buf_append_char(out, (char)(0x80 | (c >> 12 & 0x3f)));
		mt_buf_append_char(out, (char)(0x80 | (c >> 6 & 0x3f)));
		mt_buf_append_char(out, (char)(0x80 | (c & 0x3f)));
	}
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 :
	       c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One encoded word at p ("=?cs?e?text?="): decoded into out and its
 * length, or 0 if there is none (or its charset is not read here). */
static size_t decode_word(struct mt_buf *out, const char *p, const char *end)
{
	if (end - p < 8 || p[0] != '=' || p[1] != '?')
		return 0;
	const char *cs = p + 2, *q1 = memchr(cs, '?', (size_t)(end - cs));
	if (q1 == NULL || end - q1 < 4 || q1[2] != '?')
		return 0;
	const char *text = q1 + 3, *stop = text;
	while (stop + 1 < end && !(stop[0] == '?' && stop[1] == '='))
		stop++;
	if (stop + 1 >= end)
		return 0;
	size_t cs_len = (size_t)(q1 - cs);
	const char *star = memchr(cs, '*', cs_len);	/* RFC 2231 language */
	if (star != NULL)
		cs_len = (size_t)(star - cs);
	bool latin1 = (cs_len == 10 && strncasecmp(cs, "iso-8859-1", 10) == 0) ||
		      (cs_len == 12 && strncasecmp(cs, "windows-1252", 12) == 0);
	if (!latin1 && !(cs_len == 5 && strncasecmp(cs, "utf-8", 5) == 0) &&
	    !(cs_len == 8 && strncasecmp(cs, "us-ascii", 8) == 0))
		return 0;
	struct mt_buf raw = MT_BUF_INIT;
	if (q1[1] == 'B' || q1[1] == 'b') {
		mt_mime_decode_base64(&raw, text, (size_t)(stop - text));
	} else if (q1[1] == 'Q' || q1[1] == 'q') {
		for (const char *c = text; c < stop; c++) {
			int h, l;
			if (*c == '_')
				mt_buf_append_char(&raw, ' ');
			else if (*c == '=' && stop - c > 2 && (h = hexval(c[1])) >= 0 &&
				 (l = hexval(c[2])) >= 0) {
				mt_buf_append_char(&raw, (char)(h << 4 | l));
				c += 2;
			} else
				mt_buf_append_char(&raw, *c);
		}
	} else
		return 0;
	for (size_t i = 0; i < raw.len; i++) {
		if (latin1)
			append_utf8(out, (unsigned char)raw.data[i]);
		else
			mt_buf_append_char(out, raw.data[i]);
	}
	mt_buf_free(&raw);
	return (size_t)(stop + 2 - p);
}

void mt_imap_sort_decode_words(struct mt_buf *out, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	bool after_word = false;
	while (p < end) {
		size_t n = decode_word(out, p, end);
		if (n > 0) {
			p += n;
			after_word = true;
			continue;
		}
		if (after_word && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
			/* RFC 2047 6.2: white space between encoded words is dropped. */
			const char *q = p;
			while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
				q++;
			struct mt_buf probe = MT_BUF_INIT;
			bool word_follows = decode_word(&probe, q, end) > 0;
			mt_buf_free(&probe);
			if (word_follows) {
				p = q;
				continue;
			}
		}
		after_word = false;
		mt_buf_append_char(out, *p++);
	}
}

/* RFC 5256 2.1: the base subject. Works on a normalised copy (step 1). */

static bool is_wsp(char c)
{
	return c == ' ' || c == '\t';
}

/* subj-blob at s: "[" *BLOBCHAR "]" *WSP; its length or 0. */
static size_t blob_len(const char *s, size_t len)
{
	if (len == 0 || s[0] != '[')
		return 0;
	size_t i = 1;
	while (i < len && s[i] != '[' && s[i] != ']')
		i++;
	if (i >= len || s[i] != ']')
		return 0;
	for (i++; i < len && is_wsp(s[i]); i++)
		;
	return i;
}

/* subj-leader at s: (*subj-blob subj-refwd) / WSP; its length or 0. */
static size_t leader_len(const char *s, size_t len)
{
	if (len > 0 && is_wsp(s[0]))
		return 1;
	size_t i = 0, b;
	while ((b = blob_len(s + i, len - i)) > 0)
		i += b;
	if (len - i >= 3 && strncasecmp(s + i, "fwd", 3) == 0)
		i += 3;
	else if (len - i >= 2 && (strncasecmp(s + i, "fw", 2) == 0 || strncasecmp(s + i, "re", 2) == 0))
		i += 2;
	else
		return 0;
	while (i < len && is_wsp(s[i]))
		i++;
	i += blob_len(s + i, len - i);
	return i < len && s[i] == ':' ? i + 1 : 0;
}

/* Whether s holds a subj-base: a non-white-space octet. */
static bool has_base(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!is_wsp(s[i]))
			return true;
	return false;
}

void mt_imap_base_subject(struct mt_buf *out, const char *subject, size_t len,
			  bool *is_reply_r)
{
	struct mt_buf d = MT_BUF_INIT;
	mt_imap_sort_decode_words(&d, subject, len);
	/* Step 1: tabs and line ends are spaces, runs of them one. */
	size_t n = 0;
	for (size_t i = 0; i < d.len; i++) {
		char c = d.data[i] == '\t' || d.data[i] == '\r' || d.data[i] == '\n' ? ' ' : d.data[i];
		if (c == ' ' && n > 0 && d.data[n - 1] == ' ')
			continue;
		d.data[n++] = c;
	}
	const char *s = d.data != NULL ? d.data : "";
	size_t start = 0, end = n;
	bool reply = false;
	for (;;) {
		/* Step 2: trailing subj-trailer, "(fwd)" / WSP. */
		for (;;) {
			if (end > start && is_wsp(s[end - 1]))
				end--;
			else if (end - start >= 5 && strncasecmp(s + end - 5, "(fwd)", 5) == 0) {
				end -= 5;
				reply = true;
			} else
				break;
		}
		/* Steps 3-5: leaders and blobs off the front until none is. */
		for (bool changed = true; changed;) {
			changed = false;
			size_t l;
			while ((l = leader_len(s + start, end - start)) > 0) {
				if (l > 1 || !is_wsp(s[start]))
					reply = true;
				start += l;
				changed = true;
			}
			size_t b = blob_len(s + start, end - start);
			if (b > 0 && has_base(s + start + b, end - start - b)) {
				start += b;
				changed = true;
			}
		}
		/* Step 6: "[fwd:" subject "]" unwrapped, then again from step 2. */
		if (end - start >= 6 && strncasecmp(s + start, "[fwd:", 5) == 0 && s[end - 1] == ']') {
			start += 5;
			end--;
			reply = true;
			continue;
		}
		break;
	}
	mt_buf_append(out, s + start, end - start);
	mt_buf_free(&d);
	if (is_reply_r != NULL)
		*is_reply_r = reply;
}

/* RFC 5051: titlecase, then canonical decomposition. For U+00C0..U+017F:
 * the titlecase letter's base (ASCII) and combining mark, or the
 * titlecase character itself when it has no decomposition. */
struct casemap_entry {
	uint16_t base;	/* ASCII base letter, or the character (no mark) */
	uint16_t mark;	/* combining mark, 0 for none */
};

#define G 0x0300
#define A 0x0301
#define C 0x0302
#define T 0x0303
#define M 0x0304
#define B 0x0306
#define D 0x0307
#define U 0x0308
#define R 0x030A
#define W 0x030B
#define V 0x030C
#define E 0x0327
#define O 0x0328
static const struct casemap_entry casemap_latin[0x180 - 0xc0] = {
	/* U+00C0 */
	{ 'A', G }, { 'A', A }, { 'A', C }, { 'A', T }, { 'A', U }, { 'A', R }, { 0xc6, 0 },
	{ 'C', E }, { 'E', G }, { 'E', A }, { 'E', C }, { 'E', U }, { 'I', G }, { 'I', A },
	{ 'I', C }, { 'I', U }, { 0xd0, 0 }, { 'N', T }, { 'O', G }, { 'O', A }, { 'O', C },
	{ 'O', T }, { 'O', U }, { 0xd7, 0 }, { 0xd8, 0 }, { 'U', G }, { 'U', A }, { 'U', C },
	{ 'U', U }, { 'Y', A }, { 0xde, 0 }, { 0xdf, 0 },
	/* U+00E0: the lower case letters' titlecase */
	{ 'A', G }, { 'A', A }, { 'A', C }, { 'A', T }, { 'A', U }, { 'A', R }, { 0xc6, 0 },
	{ 'C', E }, { 'E', G }, { 'E', A }, { 'E', C }, { 'E', U }, { 'I', G }, { 'I', A },
	{ 'I', C }, { 'I', U }, { 0xd0, 0 }, { 'N', T }, { 'O', G }, { 'O', A }, { 'O', C },
	{ 'O', T }, { 'O', U }, { 0xf7, 0 }, { 0xd8, 0 }, { 'U', G }, { 'U', A }, { 'U', C },
	{ 'U', U }, { 'Y', A }, { 0xde, 0 }, { 'Y', U },
	/* U+0100: upper and lower in pairs */
	{ 'A', M }, { 'A', M }, { 'A', B }, { 'A', B }, { 'A', O }, { 'A', O }, { 'C', A },
	{ 'C', A }, { 'C', C }, { 'C', C }, { 'C', D }, { 'C', D }, { 'C', V }, { 'C', V },
	{ 'D', V }, { 'D', V }, { 0x110, 0 }, { 0x110, 0 }, { 'E', M }, { 'E', M }, { 'E', B },
	{ 'E', B }, { 'E', D }, { 'E', D }, { 'E', O }, { 'E', O }, { 'E', V }, { 'E', V },
	{ 'G', C }, { 'G', C }, { 'G', B }, { 'G', B }, { 'G', D }, { 'G', D }, { 'G', E },
	{ 'G', E }, { 'H', C }, { 'H', C }, { 0x126, 0 }, { 0x126, 0 }, { 'I', T }, { 'I', T },
	{ 'I', M }, { 'I', M }, { 'I', B }, { 'I', B }, { 'I', O }, { 'I', O },
	{ 'I', D }, { 'I', 0 },			/* U+0130 İ, U+0131 ı */
	{ 0x132, 0 }, { 0x132, 0 }, { 'J', C }, { 'J', C }, { 'K', E }, { 'K', E },
	{ 0x138, 0 },				/* ĸ */
	{ 'L', A }, { 'L', A }, { 'L', E }, { 'L', E }, { 'L', V }, { 'L', V }, { 0x13f, 0 },
	{ 0x13f, 0 }, { 0x141, 0 }, { 0x141, 0 }, { 'N', A }, { 'N', A }, { 'N', E }, { 'N', E },
	{ 'N', V }, { 'N', V }, { 0x149, 0 },	/* ŉ */
	{ 0x14a, 0 }, { 0x14a, 0 }, { 'O', M }, { 'O', M }, { 'O', B }, { 'O', B }, { 'O', W },
	{ 'O', W }, { 0x152, 0 }, { 0x152, 0 }, { 'R', A }, { 'R', A }, { 'R', E }, { 'R', E },
	{ 'R', V }, { 'R', V }, { 'S', A }, { 'S', A }, { 'S', C }, { 'S', C }, { 'S', E },
	{ 'S', E }, { 'S', V }, { 'S', V }, { 'T', E }, { 'T', E }, { 'T', V }, { 'T', V },
	{ 0x166, 0 }, { 0x166, 0 }, { 'U', T }, { 'U', T }, { 'U', M }, { 'U', M }, { 'U', B },
	{ 'U', B }, { 'U', R }, { 'U', R }, { 'U', W }, { 'U', W }, { 'U', O }, { 'U', O },
	{ 'W', C }, { 'W', C }, { 'Y', C }, { 'Y', C }, { 'Y', U },
	{ 'Z', A }, { 'Z', A }, { 'Z', D }, { 'Z', D }, { 'Z', V }, { 'Z', V },
	{ 'S', 0 },				/* U+017F ſ */
};
#undef G
#undef A
#undef C
#undef T
#undef M
#undef B
#undef D
#undef U
#undef R
#undef W
#undef V
#undef E
#undef O

/* One UTF-8 character at s: its code point and length, or 0 if the
 * octets are not one (then the octet is taken as it is). */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *c_r)
{
	size_t n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 :
		   (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (n == 0 || n > len)
		return 0;
	uint32_t c = n == 1 ? s[0] : s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*c_r = c;
	return n;
}

void mt_imap_casemap(struct mt_buf *out, const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0;
	while (i < len) {
		uint32_t c;
		size_t n = utf8_decode(s + i, len - i, &c);
		if (n == 0) {
			mt_buf_append_char(out, (char)s[i++]);
			continue;
		}
		i += n;
		if (c >= 'a' && c <= 'z')
			c -= 'a' - 'A';
		if (c >= 0xc0 && c < 0x180) {
			const struct casemap_entry *e = &casemap_latin[c - 0xc0];
			append_utf8(out, e->base);
			if (e->mark != 0)
				append_utf8(out, e->mark);
		} else
			append_utf8(out, c);
	}
}

/* The keys. */

static char *casemapped(const char *text, size_t len)
{
	struct mt_buf b = MT_BUF_INIT;
	mt_imap_casemap(&b, text, len);
	if (b.len > MT_IMAP_SORT_KEY_MAX) {
		b.len = MT_IMAP_SORT_KEY_MAX;
		b.data[b.len] = '\0';
	}
	return mt_buf_steal(&b);
}

/* RFC 5957: the display-name (decoded), or "mailbox@host" if it is empty. */
static char *display_key(const struct mt_imap_envelope *e, const struct mt_imap_envelope_addr *a)
{
	size_t len;
	const char *name = mt_imap_envelope_get(e, &a->name, &len);
	struct mt_buf b = MT_BUF_INIT;
	mt_imap_sort_decode_words(&b, name, len);
	if (!has_base(mt_buf_cstr(&b), b.len)) {
		mt_buf_reset(&b);
		const char *mbox = mt_imap_envelope_get(e, &a->mailbox, &len);
		mt_buf_append(&b, mbox, len);
		const char *host = mt_imap_envelope_get(e, &a->host, &len);
		if (!a->host.nil) {
			mt_buf_append_char(&b, '@');
			mt_buf_append(&b, host, len);
		}
	}
	char *key = casemapped(mt_buf_cstr(&b), b.len);
	mt_buf_free(&b);
	return key;
}

static char *mailbox_key(const struct mt_imap_envelope *e, const struct mt_imap_envelope_addr *a)
{
	size_t len;
	const char *mbox = mt_imap_envelope_get(e, &a->mailbox, &len);
	return casemapped(mbox, len);
}

void mt_imap_sort_msg_fill(struct mt_imap_sort_msg *m,
			   const struct mt_imap_sort_program *program,
			   const struct mt_imap_envelope *env)
{
	m->date = m->arrival;
	for (unsigned int k = 0; k < MT_IMAP_SORT_KEY_COUNT; k++) {
		free(m->str[k]);
		m->str[k] = NULL;
		if (!(program->keys & 1u << k) || k == MT_IMAP_SORT_ARRIVAL ||
		    k == MT_IMAP_SORT_SIZE || k == MT_IMAP_SORT_DATE)
			continue;
		if (env == NULL) {
			m->str[k] = mt_xstrdup("");
			continue;
		}
		size_t len;
		switch ((enum mt_imap_sort_key)k) {
		case MT_IMAP_SORT_SUBJECT: {
			const char *subj = mt_imap_envelope_get(env, &env->subject, &len);
			struct mt_buf base = MT_BUF_INIT;
			mt_imap_base_subject(&base, subj, len, NULL);
			m->str[k] = casemapped(mt_buf_cstr(&base), base.len);
			mt_buf_free(&base);
			break;
		}
		case MT_IMAP_SORT_FROM:
			m->str[k] = mailbox_key(env, &env->from);
			break;
		case MT_IMAP_SORT_TO:
			m->str[k] = mailbox_key(env, &env->to);
			break;
		case MT_IMAP_SORT_CC:
			m->str[k] = mailbox_key(env, &env->cc);
			break;
		case MT_IMAP_SORT_DISPLAYFROM:
			m->str[k] = display_key(env, &env->from);
			break;
		case MT_IMAP_SORT_DISPLAYTO:
			m->str[k] = display_key(env, &env->to);
			break;
		default:
			break;
		}
	}
	if ((program->keys & 1u << MT_IMAP_SORT_DATE) && env != NULL) {
		/* RFC 5256 3: no readable Date: sorts by the INTERNALDATE. */
		size_t len;
		const char *date = mt_imap_envelope_get(env, &env->date, &len);
		int64_t t;
		if (mt_imap_sort_date_parse(date, len, &t))
			m->date = t;
	}
}

void mt_imap_sort_msg_free(struct mt_imap_sort_msg *m)
{
	for (unsigned int k = 0; k < MT_IMAP_SORT_KEY_COUNT; k++) {
		free(m->str[k]);
		m->str[k] = NULL;
	}
}

static int cmp_int(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

int mt_imap_sort_compare(const struct mt_imap_sort_program *program,
			 const struct mt_imap_sort_msg *a, const struct mt_imap_sort_msg *b)
{
	for (unsigned int i = 0; i < program->count; i++) {
		enum mt_imap_sort_key k = program->criteria[i].key;
		int r;
		if (k == MT_IMAP_SORT_ARRIVAL)
			r = cmp_int(a->arrival, b->arrival);
		else if (k == MT_IMAP_SORT_DATE)
			r = cmp_int(a->date, b->date);
		else if (k == MT_IMAP_SORT_SIZE)
			r = a->size < b->size ? -1 : a->size > b->size;
		else
			r = strcmp(a->str[k] != NULL ? a->str[k] : "", b->str[k] != NULL ? b->str[k] : "");
		if (r != 0)
			return program->criteria[i].reverse ? -r : r;
	}
	return cmp_int(a->order, b->order);
}

/* A merge sort: stable and with the program as its context. */
static void merge_sort(const struct mt_imap_sort_program *program,
		       struct mt_imap_sort_msg *msgs, struct mt_imap_sort_msg *tmp, size_t count)
{
	if (count < 2)
		return;
	size_t half = count / 2;
	merge_sort(program, msgs, tmp, half);
	merge_sort(program, msgs + half, tmp, count - half);
	size_t i = 0, j = half, k = 0;
	while (i < half && j < count)
		tmp[k++] = mt_imap_sort_compare(program, &msgs[j], &msgs[i]) < 0 ? msgs[j++] : msgs[i++];
	while (i < half)
		tmp[k++] = msgs[i++];
	while (j < count)
		tmp[k++] = msgs[j++];
	memcpy(msgs, tmp, count * sizeof(*msgs));
}

void mt_imap_sort(const struct mt_imap_sort_program *program,
		  struct mt_imap_sort_msg *msgs, size_t count)
{
	if (count < 2)
		return;
	struct mt_imap_sort_msg *tmp = mt_xcalloc(count, sizeof(*tmp));
	merge_sort(program, msgs, tmp, count);
	free(tmp);
}

void mt_imap_sort_write(struct mt_buf *out, const uint32_t *ids, size_t count)
{
	mt_buf_append_str(out, "* SORT");
	for (size_t i = 0; i < count; i++)
		mt_buf_appendf(out, " %u", ids[i]);
}

void mt_imap_esort_write(struct mt_buf *out, unsigned int returns,
			 const uint32_t *ids, size_t count)
{
	if ((returns & MT_IMAP_SEARCH_RETURN_MIN) && count > 0)
		mt_buf_appendf(out, " MIN %u", ids[0]);
	if ((returns & MT_IMAP_SEARCH_RETURN_MAX) && count > 0)
		mt_buf_appendf(out, " MAX %u", ids[count - 1]);
	if (returns & MT_IMAP_SEARCH_RETURN_COUNT)
		mt_buf_appendf(out, " COUNT %zu", count);
	if (!(returns & MT_IMAP_SEARCH_RETURN_ALL) || count == 0)
		return;
	mt_buf_append_str(out, " ALL ");
	for (size_t i = 0; i < count;) {
		size_t j = i;
		while (j + 1 < count && ids[j + 1] == ids[j] + 1)
			j++;
		mt_buf_appendf(out, i > 0 ? ",%u" : "%u", ids[i]);
		if (j > i)
			mt_buf_appendf(out, ":%u", ids[j]);
		i = j + 1;
	}
}
