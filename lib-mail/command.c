/* command.c — the command-table engine (see command.h).
 *
 * Trust boundary: the client's command line; the lookup reads it in
 * place and allocates nothing. RFC 5321 4.1.1, RFC 2033 4, RFC 1939 3. */
#include "command.h"
#include "alloc.h"
#include "buf.h"
#include "command-find.h"

#include <stdlib.h>
#include <string.h>

const struct mt_command_def *mt_command_table_def(const struct mt_command_table *t,
						 size_t i)
{
	return (const struct mt_command_def *)(const void *)
		((const char *)t->first + i * t->stride);
}



void mt_commands_init(struct mt_commands *c, const struct mt_command_table *table)
{
	/* One allocation for both counter rows (a session's only one here). */
	c->count = table->count;
	c->total = mt_xcalloc(2 * (table->count + 1), sizeof(*c->total));
	c->ok = c->total + table->count + 1;
	c->current = -1;
	c->flags = 0;
	c->junk = 0;
	memset(c->replies, 0, sizeof(c->replies));
}

void mt_commands_free(struct mt_commands *c)
{
	free(c->total);
	c->total = c->ok = NULL;
}

enum mt_command_verdict mt_command_check(const struct mt_command_table *table,
					 struct mt_commands *c,
					 const struct mt_command_gate *gate,
					 const char *line, struct mt_command_call *call_r)
{
	unsigned int index;
	*call_r = (struct mt_command_call){ .index = (unsigned int)table->count };
	if (!mt_command_find(line, &table->first->name, table->count, table->stride,
			     &index, &call_r->arg)) {
		c->total[c->count]++;
		c->current = (int)c->count;
		c->flags = 0;
		return MT_COMMAND_UNKNOWN;
	}
	const struct mt_command_def *def = mt_command_table_def(table, index);
	call_r->index = index;
	call_r->def = def;
	c->total[index]++;
	c->current = (int)index;
	c->flags = def->flags;
	if ((def->flags & MT_CMD_JUNK) != 0 && ++c->junk > gate->max_junk &&
	    gate->max_junk != 0)
		return MT_COMMAND_TOO_MUCH_JUNK;
	if ((def->flags & MT_CMD_PRE_TLS) == 0 && gate->tls_required)
		return MT_COMMAND_NEEDS_TLS;
	if ((def->flags & MT_CMD_PRE_AUTH) == 0 && gate->auth_required)
		return MT_COMMAND_NEEDS_AUTH;
	if ((def->flags & MT_CMD_STATE_MASK) != 0 && gate->state != 0 &&
	    (def->flags & gate->state) == 0)
		return MT_COMMAND_BAD_STATE;
	return MT_COMMAND_RUN;
}

void mt_commands_forget(struct mt_commands *c)
{
	c->current = -1;
}

void mt_commands_unknown(struct mt_commands *c)
{
	c->total[c->count]++;
	c->current = (int)c->count;
}

void mt_commands_reply_class(struct mt_commands *c, enum mt_reply_class cls)
{
	if (c->current < 0)
		return;
	if (cls == MT_REPLY_SUCCESS)
		c->ok[c->current]++;
	if ((unsigned int)cls < MT_REPLY_CLASSES)
		c->replies[cls]++;
	mt_commands_forget(c);
}

void mt_commands_reply(struct mt_commands *c, bool ok)
{
	mt_commands_reply_class(c, ok ? MT_REPLY_SUCCESS : MT_REPLY_FAILURE);
}

enum mt_reply_class mt_reply_class_smtp(int code)
{
	return code < 400 ? MT_REPLY_SUCCESS : code < 500 ? MT_REPLY_TEMPFAIL : MT_REPLY_FAILURE;
}

enum mt_reply_class mt_reply_class_imap(const char *status, size_t len)
{
	if (len >= 2 && strncmp(status, "OK", 2) == 0 && (len == 2 || status[2] == ' '))
		return MT_REPLY_SUCCESS;
	if (len >= 2 && strncmp(status, "NO", 2) == 0 && (len == 2 || status[2] == ' '))
		return MT_REPLY_FAILURE;
	return MT_REPLY_BAD;
}

const char *mt_commands_current_name(const struct mt_command_table *table,
				     const struct mt_commands *c)
{
	if (c->current < 0)
		return "-";
	if ((size_t)c->current == c->count)
		return "unknown";
	return mt_command_table_def(table, (size_t)c->current)->name;
}

unsigned int mt_commands_total(const struct mt_commands *c)
{
	unsigned int total = 0;
	for (size_t i = 0; i <= c->count; i++)
		total += c->total[i];
	return total;
}

static void append_count(struct mt_buf *out, unsigned int ok, unsigned int total)
{
	if (ok == total)
		mt_buf_appendf(out, "=%u", total);
	else
		mt_buf_appendf(out, "=%u/%u", ok, total);
}

void mt_commands_summary(const struct mt_command_table *table,
			 const struct mt_commands *c, const char *prefix,
			 struct mt_buf *out)
{
	unsigned int total = 0, ok = 0;
	for (size_t i = 0; i <= c->count; i++) {
		if (c->total[i] == 0)
			continue;
		const char *name = i == c->count ? "unknown" : mt_command_table_def(table, i)->name;
		mt_buf_append_char(out, ' ');
		mt_buf_append_str(out, prefix);
		for (const char *p = name; *p != '\0'; p++)
			mt_buf_append_char(out, (char)(*p >= 'A' && *p <= 'Z' ? *p | 0x20 : *p));
		append_count(out, c->ok[i], c->total[i]);
		total += c->total[i];
		ok += c->ok[i];
	}
	mt_buf_append_str(out, " commands");
	append_count(out, ok, total);
}
