/* imap-quota.c — mailtier-popstore's IMAP QUOTA (RFC 9208): one quota
 * root per user, named "", holding all the user's mailboxes, with the
 * STORAGE resource: the directory's mailtierQuota (or default_quota), the
 * same limit LMTP deliveries, APPEND and COPY keep to (NO [OVERQUOTA]).
 * GETQUOTAROOT, GETQUOTA; SETQUOTA is the directory administrator's
 * (`mailtierctl users`), so it is refused.
 *
 * Trust boundary: the client's mailbox name (imap-mailbox's check) and
 * root name; usage is read from the store's mailbox records.
 * RFC 9208 4.2 (GETQUOTA), 4.3 (GETQUOTAROOT), 4.1 (SETQUOTA), 5.1
 * (STORAGE in units of 1024 octets), 7.1 (QUOTA, QUOTAROOT responses). */
#include "imap-session.h"
#include "alloc.h"
#include "imap-write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct quota_op {
	struct imap_session *s;
	char tag[MT_IMAP_TAG_MAX + 1];
	char *root_of;		/* GETQUOTAROOT's mailbox, else NULL */
};

/* "* QUOTA "" (STORAGE used limit)" from the user's folders. */
static void quota_line(struct imap_session *s, const struct mt_store_folder *folders,
		       unsigned int count)
{
	uint64_t bytes = 0;
	for (unsigned int i = 0; i < count; i++)
		bytes += folders[i].bytes;
	if (s->quota == 0)
		imap_line(s, "* QUOTA \"\" ()");
	else
		imap_line(s, "* QUOTA \"\" (STORAGE %" PRIu64 " %" PRIu64 ")",
			  (bytes + 1023) / 1024, s->quota / 1024);
}

static void quota_op_free(void *context)
{
	struct quota_op *op = context;
	free(op->root_of);
	free(op);
}

static void folders_done(struct mt_store_req *req, void *context)
{
	struct quota_op *op = context;
	struct imap_session *s = op->s;
	const char *error;
	enum mt_store_status status = mt_store_req_status(req, &error);
	s->store_req = NULL;
	unsigned int count;
	const struct mt_store_folder *folders = mt_store_req_folders(req, &count);
	if (status != MT_STORE_OK)
		imap_store_failed(s, op->tag, status, error);
	else if (op->root_of != NULL) {
		bool exists = false;
		for (unsigned int i = 0; i < count && !exists; i++)
			exists = folders[i].exists && strcmp(folders[i].name, op->root_of) == 0;
		if (!exists)
			imap_error(s, op->tag, "NO [NONEXISTENT] No such mailbox.");
		else {
			struct mt_buf line = MT_BUF_INIT;
			mt_buf_append_str(&line, "* QUOTAROOT ");
			imap_write_name(&line, s, op->root_of);
			mt_buf_append_str(&line, " \"\"");
			imap_line(s, "%s", mt_buf_cstr(&line));
			mt_buf_free(&line);
			quota_line(s, folders, count);
			imap_tagged(s, op->tag, "OK GETQUOTAROOT completed.");
		}
	} else {
		quota_line(s, folders, count);
		imap_tagged(s, op->tag, "OK GETQUOTA completed.");
	}
	quota_op_free(op);
	imap_resume(s);
}

static void quota_start(struct imap_session *s, const char *tag, char *root_of)
{
	struct quota_op *op = mt_xcalloc(1, sizeof(*op));
	op->s = s;
	snprintf(op->tag, sizeof(op->tag), "%s", tag);
	op->root_of = root_of;
	imap_wait(s);
	s->store_req = mt_store_folders_list(s->ps->port, s->user,
					     IMAP_STORE_CALL(s, folders_done, op, quota_op_free));
}

void imap_cmd_getquotaroot(struct imap_session *s, const struct mt_imap_command *cmd)
{
	struct mt_buf name = MT_BUF_INIT;
	if (cmd->count != 1) {
		imap_error(s, cmd->tag, "BAD GETQUOTAROOT takes a mailbox name.");
		return;
	}
	if (imap_mailbox_arg(s, cmd->tag, &cmd->args[0], &name))
		quota_start(s, cmd->tag, mt_xstrdup(mt_buf_cstr(&name)));
	mt_buf_free(&name);
}

void imap_cmd_getquota(struct imap_session *s, const struct mt_imap_command *cmd)
{
	const char *root;
	size_t len;
	if (cmd->count != 1 || !mt_imap_arg_astring(&cmd->args[0], &root, &len)) {
		imap_error(s, cmd->tag, "BAD GETQUOTA takes a quota root.");
		return;
	}
	if (len != 0) {
		imap_error(s, cmd->tag, "NO [NONEXISTENT] No such quota root.");
		return;
	}
	quota_start(s, cmd->tag, NULL);
}

void imap_cmd_setquota(struct imap_session *s, const struct mt_imap_command *cmd)
{
	imap_error(s, cmd->tag, "NO [NOPERM] Quotas are set in the directory.");
}
